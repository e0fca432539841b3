//! An edited manifest as it travels in a link: short, URL-safe, bounded.
//!
//! A manifest is packed as one version byte, an LZ4 block compressed
//! against a dictionary of the words Service manifests are made of, and
//! the whole in unpadded base64url, so it can sit in a `?manifest=` value
//! without escaping. LZ4 was chosen for its size in the wasm (a few KB of
//! code, where a DEFLATE decoder costs about 20 KB gzip): a manifest is a
//! few hundred bytes, and the dictionary does most of the work.
//!
//! Guarantees: `unpack(pack(t)) == t` for every text `pack` accepts; a
//! text is at most [`MAX_TEXT_BYTES`] and a packed value at most
//! [`MAX_PACKED_CHARS`]; `unpack` refuses anything else with a
//! [`PackError`] and never allocates more than the text limit, whatever
//! the link says.

use data_encoding::BASE64URL_NOPAD;
use std::fmt;

/// The longest manifest text a link carries, in bytes.
pub const MAX_TEXT_BYTES: usize = 4096;
/// The longest packed value a link carries, in characters: links of a
/// few thousand characters still open everywhere and paste whole.
pub const MAX_PACKED_CHARS: usize = 1800;

/// The first byte of a packed value: the format, so it can change.
const VERSION: u8 = 1;

/// What Service manifests are made of. LZ4 finds matches up to 64 KB
/// back, nearer ones cost the same, so the order only needs to put the
/// skeleton of a manifest together.
const DICTIONARY: &[u8] = b"  protocol: UDP\n  sessionAffinity: ClientIP\n  sessionAffinityConfig:\n    clientIP:\n      timeoutSeconds: \n  internalTrafficPolicy: Local\n  allocateLoadBalancerNodePorts: false\n  loadBalancerSourceRanges:\n  - 0.0.0.0/0\n  externalIPs:\n  - \n  externalName: \n  clusterIP: None\n  externalTrafficPolicy: Local\n  type: ExternalName\n  type: LoadBalancer\n  type: NodePort\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: default\nspec:\n  type: ClusterIP\n  selector:\n    app: api\n  ports:\n  - name: http\n    protocol: TCP\n    port: 80\n    targetPort: 8080\n    nodePort: 30080\n";

/// Why a text cannot be packed, or a link's value unpacked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackError {
    /// The text is longer than [`MAX_TEXT_BYTES`].
    TextTooLong { bytes: usize },
    /// The packed text is longer than [`MAX_PACKED_CHARS`].
    LinkTooLong { chars: usize },
    /// The value is not one `pack` wrote (or it was cut or altered).
    Corrupt,
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PackError::TextTooLong { bytes } => write!(f, "The manifest is {bytes} bytes; a link carries at most {MAX_TEXT_BYTES}."),
            PackError::LinkTooLong { chars } => write!(f, "The manifest packs to {chars} characters; a link carries at most {MAX_PACKED_CHARS}."),
            PackError::Corrupt => f.write_str("The manifest in the link is damaged (cut short or altered); showing the scenario's own."),
        }
    }
}

/// Packs a manifest for a link.
pub fn pack(text: &str) -> Result<String, PackError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(PackError::TextTooLong { bytes: text.len() });
    }
    let mut bytes = vec![VERSION];
    bytes.extend(lz4_flex::block::compress_with_dict(text.as_bytes(), DICTIONARY));
    let packed = BASE64URL_NOPAD.encode(&bytes);
    match packed.len() {
        n if n > MAX_PACKED_CHARS => Err(PackError::LinkTooLong { chars: n }),
        _ => Ok(packed),
    }
}

/// Reads a manifest back from a link's value.
pub fn unpack(packed: &str) -> Result<String, PackError> {
    if packed.len() > MAX_PACKED_CHARS {
        return Err(PackError::LinkTooLong { chars: packed.len() });
    }
    let bytes = BASE64URL_NOPAD.decode(packed.as_bytes()).map_err(|_| PackError::Corrupt)?;
    let Some((&VERSION, block)) = bytes.split_first() else { return Err(PackError::Corrupt) };
    // A fixed buffer: the block cannot make the decoder allocate more.
    let mut out = vec![0u8; MAX_TEXT_BYTES];
    let n = lz4_flex::block::decompress_into_with_dict(block, &mut out, DICTIONARY).map_err(|_| PackError::Corrupt)?;
    out.truncate(n);
    String::from_utf8(out).map_err(|_| PackError::Corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  type: NodePort\n  selector:\n    app: api\n  ports:\n  - port: 80\n    targetPort: 8080\n    nodePort: 30080\n  externalTrafficPolicy: Local\n";

    #[test]
    fn round_trips_and_is_short() {
        let packed = pack(MANIFEST).unwrap();
        assert_eq!(unpack(&packed).unwrap(), MANIFEST);
        assert!(packed.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{packed}");
        // The dictionary is what makes it short: base64 alone would be 4/3 of the text.
        assert!(packed.len() * 3 < MANIFEST.len(), "{} chars for {} bytes", packed.len(), MANIFEST.len());
        for text in ["", "x", "é ünïcode ✓\n", &"a: b\n".repeat(300)] {
            assert_eq!(unpack(&pack(text).unwrap()).unwrap(), text);
        }
    }

    #[test]
    fn limits_are_stated_and_checked() {
        let long = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(pack(&long), Err(PackError::TextTooLong { bytes: MAX_TEXT_BYTES + 1 }));
        // Text that does not compress overflows the link before the text limit.
        let noisy: String = (0..MAX_TEXT_BYTES as u32).map(|i| char::from(b'!' + (i.wrapping_mul(2_654_435_761) >> 25) as u8 % 90)).collect();
        assert!(matches!(pack(&noisy), Err(PackError::LinkTooLong { .. })));
        assert!(matches!(unpack(&"A".repeat(MAX_PACKED_CHARS + 1)), Err(PackError::LinkTooLong { .. })));
        assert!(PackError::TextTooLong { bytes: 5000 }.to_string().contains("at most 4096"));
    }

    #[test]
    fn damaged_values_are_refused_never_panic() {
        let packed = pack(MANIFEST).unwrap();
        for cut in 0..packed.len() {
            let _ = unpack(&packed[..cut]);
        }
        assert_eq!(unpack("!!"), Err(PackError::Corrupt));
        assert_eq!(unpack(""), Err(PackError::Corrupt));
        assert_eq!(unpack(&BASE64URL_NOPAD.encode(&[2, 0x10, b'a'])), Err(PackError::Corrupt), "unknown version");
        // A block that claims a long match past the buffer, and random bytes.
        let mut state = 0x9e37_79b9u32;
        for len in 0..400usize {
            let mut bytes = vec![VERSION];
            bytes.extend((0..len).map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state as u8
            }));
            let _ = unpack(&BASE64URL_NOPAD.encode(&bytes));
        }
        let bomb = [VERSION, 0x1f, b'a', 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00];
        assert_eq!(unpack(&BASE64URL_NOPAD.encode(&bomb)), Err(PackError::Corrupt), "a match longer than the limit is refused");
    }
}
