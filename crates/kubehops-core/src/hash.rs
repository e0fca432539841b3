//! SHA-256 and RFC 4648 base32, to name chains as kube-proxy does
//! (`KUBE-SVC-` + the first 16 base32 characters of a SHA-256), from
//! RustCrypto's `sha2` and the `data-encoding` crate; and FNV-1a for the
//! model's stand-ins for randomness.
//!
//! Measured on the browser's release wasm (`trunk build --release`, then
//! `gzip -9 -c dist/*.wasm | wc -c`): 223,929 bytes with the hand-written
//! SHA-256 and base32 this module had before, 226,382 with `sha2` alone
//! (+2,453), 226,765 with both crates (+2,836 in all, +383 for
//! `data-encoding`): each within the 5 KB such a crate may cost there.

use sha2::{Digest, Sha256};

/// The SHA-256 digest of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// RFC 4648 base32 with the standard alphabet and `=` padding, as Go's
/// `base32.StdEncoding` writes it.
pub fn base32(data: &[u8]) -> String {
    data_encoding::BASE32.encode(data)
}

/// FNV-1a (64-bit): a small, stable hash for the model's deterministic
/// stand-ins for randomness (allocators, masquerade ports).
pub fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// `base32(sha256(data))`.
pub fn sha256_base32(data: &[u8]) -> String {
    base32(&sha256(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            hex(&sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // 1,000 bytes spans several blocks.
        assert_eq!(hex(&sha256(&[b'a'; 1000])), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
    }

    #[test]
    fn fnv1a_known_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn base32_rfc4648_vectors() {
        for (i, o) in [("", ""), ("f", "MY======"), ("fo", "MZXQ===="), ("foo", "MZXW6==="), ("foob", "MZXW6YQ="), ("fooba", "MZXW6YTB"), ("foobar", "MZXW6YTBOI======")] {
            assert_eq!(base32(i.as_bytes()), o);
        }
    }
}
