//! What `nft list table ip kube-proxy` prints back on the node, as nft
//! 1.0 (Debian 12's `nftables`) writes it: the table's comment, then its
//! sets and maps, then its chains, each in the order they were created,
//! tab-indented and separated by a blank line.
//!
//! nft does not echo the transaction. It prints priorities by their
//! standard names where one is close (`dstnat - 10`), marks as 32-bit hex
//! (`meta mark & 0x00004000`), an anonymous set of one as the bare value,
//! a dynamic set's kernel-given size, timeouts in units (`3h`), and set
//! elements in its own order: single values by value, concatenations by
//! their key bytes read as one host-endian (little-endian) number, which
//! puts the last byte first. `tests/nftables_upstream.rs` compares this
//! with a real kernel's listing byte for byte.

use super::*;

impl Ruleset {
    /// `nft list table ip kube-proxy`, one line per entry.
    pub fn list(&self) -> Vec<String> {
        let mut blocks: Vec<Vec<String>> = self.sets.iter().map(list_set).collect();
        blocks.extend(self.chains.iter().map(list_chain));
        let mut out = vec![format!("table ip {TABLE} {{"), format!("\tcomment {}", quote(&self.comment))];
        for (i, b) in blocks.into_iter().enumerate() {
            if i > 0 {
                out.push(String::new());
            }
            out.extend(b);
        }
        out.push("}".into());
        out
    }
}

fn list_set(s: &Set) -> Vec<String> {
    let kind = if s.verdict_map { "map" } else { "set" };
    let mut ty = s.key.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(" . ");
    if s.verdict_map {
        ty.push_str(" : verdict");
    }
    let mut out = vec![format!("\t{kind} {} {{", s.name), format!("\t\ttype {ty}")];
    if s.flags.contains(&SetFlag::Dynamic) {
        // The kernel's default size for a set the ruleset sizes not.
        out.push("\t\tsize 65535".into());
    }
    if !s.flags.is_empty() {
        let f: Vec<&str> = s.flags.iter().map(|f| f.as_str()).collect();
        out.push(format!("\t\tflags {}", f.join(",")));
    }
    if let Some(t) = s.timeout {
        out.push(format!("\t\ttimeout {}", duration(t)));
    }
    if let Some(c) = &s.comment {
        out.push(format!("\t\tcomment {}", quote(c)));
    }
    if !s.elements.is_empty() {
        out.push(format!("\t\telements = {{ {} }}", listed_elements(s)));
    }
    out.push("\t}".into());
    out
}

/// The elements in nft's order, two addresses to a line for a set of
/// addresses, one to a line for concatenations.
fn listed_elements(s: &Set) -> String {
    let mut elements: Vec<&Element> = s.elements.iter().collect();
    elements.sort_by(|a, b| sort_key(&a.key).cmp(&sort_key(&b.key)));
    let per_line = if s.key.len() == 1 && s.key[0] == KeyType::Ipv4Addr { 2 } else { 1 };
    let mut out = String::new();
    for (i, e) in elements.iter().enumerate() {
        if i > 0 {
            out.push_str(if i % per_line == 0 { ",\n\t\t\t     " } else { ", " });
        }
        out.push_str(&e.render());
    }
    out
}

/// The order nft prints elements in. A single value sorts by its value.
/// A concatenation is laid out in 32-bit registers (an address in one,
/// a protocol or a port in the first bytes of one, the rest zero), and
/// these bytes are compared as one little-endian number: last byte first.
fn sort_key(key: &[KeyPart]) -> Vec<u8> {
    if let [one] = key {
        return match one {
            KeyPart::Ip(ip) => ip.octets().to_vec(),
            KeyPart::Proto(p) => vec![p.number()],
            KeyPart::Port(p) => p.to_be_bytes().to_vec(),
        };
    }
    let mut bytes = Vec::new();
    for part in key {
        let mut reg = [0u8; 4];
        match part {
            KeyPart::Ip(ip) => reg = ip.octets(),
            KeyPart::Proto(p) => reg[0] = p.number(),
            KeyPart::Port(p) => reg[..2].copy_from_slice(&p.to_be_bytes()),
        }
        bytes.extend(reg);
    }
    bytes.reverse();
    bytes
}

/// A duration as nft prints it: `3h`, `1d2h`, `90s` → `1m30s`.
fn duration(seconds: u32) -> String {
    let units = [(86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")];
    let mut left = seconds;
    let mut out = String::new();
    for (size, unit) in units {
        if left >= size {
            out.push_str(&format!("{}{unit}", left / size));
            left %= size;
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

fn list_chain(c: &Chain) -> Vec<String> {
    let mut out = vec![format!("\tchain {} {{", c.name)];
    if let Some(cm) = &c.comment {
        out.push(format!("\t\tcomment {}", quote(cm)));
    }
    if let Some(b) = c.base {
        out.push(format!("\t\ttype {} hook {} priority {}; policy accept;", b.type_.as_str(), b.hook.as_str(), priority(b.hook, b.priority.value())));
    }
    out.extend(c.rules.iter().map(|r| format!("\t\t{}", r.listed())));
    out.push("\t}".into());
    out
}

/// A priority by the standard name nft knows for the hook, when it is
/// within 10 of it (`dstnat - 10`), else the number: `dstnat` only on
/// prerouting and `srcnat` only on postrouting, `filter` on every hook.
fn priority(hook: Hook, value: i32) -> String {
    let names: &[(&str, i32)] = match hook {
        Hook::Prerouting => &[("dstnat", -100), ("filter", 0)],
        Hook::Postrouting => &[("filter", 0), ("srcnat", 100)],
        _ => &[("filter", 0)],
    };
    for (name, base) in names {
        let off = value - base;
        if off == 0 {
            return name.to_string();
        }
        if off.abs() <= 10 {
            return format!("{name} {} {}", if off < 0 { "-" } else { "+" }, off.abs());
        }
    }
    value.to_string()
}

/// A mark as nft prints a 32-bit value: `0x` and eight hex digits.
fn mark32(m: u32) -> String {
    format!("0x{m:08x}")
}

impl Rule {
    /// The rule as `nft list` prints it.
    pub fn listed(&self) -> String {
        self.text(Match::listed, Action::listed)
    }
}

impl Match {
    fn listed(&self) -> String {
        match self {
            Match::Ip { dir, negate, what: AddrMatch::InAnon { items, .. } } => {
                let op = if *negate { "!= " } else { "" };
                let mut items = items.clone();
                items.sort_by_key(|a| match a {
                    Addr::Ip(ip) => (u32::from(*ip), 32),
                    Addr::Net(c) => (u32::from(c.addr), c.prefix),
                });
                let value = match items.as_slice() {
                    [one] => one.render(),
                    _ => format!("{{ {} }}", items.iter().map(Addr::render).collect::<Vec<_>>().join(", ")),
                };
                format!("ip {} {op}{value}", dir.as_str())
            }
            Match::MarkClear(m) => format!("meta mark & {} == {}", mark32(*m), mark32(0)),
            other => other.render(),
        }
    }
}

impl Action {
    fn listed(&self) -> String {
        match self {
            Action::RandomGoto(chains) => random_goto(chains, ", "),
            Action::MarkOr(m) => format!("meta mark set meta mark | {}", mark32(*m)),
            Action::MarkXor(m) => format!("meta mark set meta mark ^ {}", mark32(*m)),
            other => other.render(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_priorities_read_as_nft_prints_them() {
        assert_eq!(duration(10_800), "3h");
        assert_eq!(duration(93_784), "1d2h3m4s");
        assert_eq!(duration(0), "0s");
        assert_eq!(priority(Hook::Prerouting, -110), "dstnat - 10");
        assert_eq!(priority(Hook::Output, -110), "-110");
        assert_eq!(priority(Hook::Postrouting, 100), "srcnat");
        assert_eq!(priority(Hook::Forward, 0), "filter");
        assert_eq!(priority(Hook::Input, 5), "filter + 5");
    }

    #[test]
    fn concatenated_keys_sort_by_their_last_bytes_first() {
        // As nft 1.0.6 listed these five in a real kernel.
        let k = |p: Protocol, port: u16| sort_key(&[KeyPart::Proto(p), KeyPart::Port(port)]);
        let mut keys = vec![k(Protocol::Tcp, 30000), k(Protocol::Tcp, 3001), k(Protocol::Udp, 53), k(Protocol::Tcp, 53), k(Protocol::Tcp, 256)];
        keys.sort();
        assert_eq!(keys, vec![k(Protocol::Tcp, 256), k(Protocol::Tcp, 30000), k(Protocol::Tcp, 53), k(Protocol::Udp, 53), k(Protocol::Tcp, 3001)]);
    }
}
