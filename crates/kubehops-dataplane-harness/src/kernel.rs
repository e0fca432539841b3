//! One node's netfilter, through the kernel's own tools: loading the rules
//! as kube-proxy does, reading back the rule counters (`iptables-save -c`)
//! and the connection table (`conntrack -L`), and clearing both between
//! decisions.
//!
//! Loading follows kube-proxy's start on a fresh node: the nfacct
//! counters and the `KUBE-PROXY-CANARY` chains first, then the jumps from
//! the built-in chains (kube-proxy ensures its chains and inserts those
//! with `iptables -I`), then the payload of its first sync with
//! `iptables-restore --noflush`. Afterwards the kernel's `iptables-save`
//! must print exactly [`NodeRules::save_kernel`], so every later
//! comparison runs on the model's rules and nothing else.
//!
//! In nftables mode a node gets kube-proxy's `ip kube-proxy` table
//! instead, from `Ruleset::transaction` with `nft -f`, and `nft list
//! ruleset` must then print exactly `Ruleset::list` (no other table, no
//! iptables rule). A scenario's node in nftables mode holds the network
//! plugin's iptables rules as well: those are loaded first, as above,
//! and kube-proxy's table after them; then `nft list table ip
//! kube-proxy` must print exactly `Ruleset::list`, and no table but
//! iptables-nft's own may sit beside it. Between decisions its affinity
//! sets are flushed with the connection table, and after one their
//! members are read back (`nft list set`).

use crate::netns::Netns;
use kubehops_core::dataplane::conntrack::Tuple;
use kubehops_core::dataplane::iptables::TableName;
use kubehops_core::dataplane::kubeproxy::{restore_payload, NodeFeatures, NodeRules, SyncMode, CANARY_CHAIN, CT_STATE_INVALID_COUNTER, LOCALHOST_NODE_PORT_COUNTER};
use kubehops_core::dataplane::nftables::{Ruleset, SetFlag, TABLE};
use kubehops_core::net::{Protocol, SockAddr};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// Which iptables a node uses: Debian ships both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Legacy,
    Nft,
}

impl Backend {
    pub const ALL: [Backend; 2] = [Backend::Nft, Backend::Legacy];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Legacy => "legacy",
            Backend::Nft => "nft",
        }
    }

    fn tool(self, suffix: &str) -> String {
        format!("iptables-{}{suffix}", self.name())
    }

    /// The tools a node needs with this backend.
    pub fn tools(self) -> Vec<String> {
        vec![self.tool(""), self.tool("-save"), self.tool("-restore")]
    }
}

/// The jumps kube-proxy inserts into the built-in chains, as one restore
/// text of `-I CHAIN 1` lines (inserted last first, so they end up in the
/// model's order), with the chains they jump to declared first.
fn jumps(rules: &NodeRules) -> String {
    let mut out = String::new();
    for table in [&rules.filter, &rules.nat] {
        out.push_str(&format!("*{}\n", table.name.as_str()));
        let builtin: Vec<_> = table.chains.iter().filter(|c| c.is_builtin()).collect();
        let mut targets: Vec<&str> = Vec::new();
        for c in &builtin {
            for r in &c.rules {
                if let kubehops_core::dataplane::iptables::Target::Jump(t) = &r.target {
                    if !targets.contains(&t.as_str()) {
                        targets.push(t);
                    }
                }
            }
        }
        for t in targets {
            out.push_str(&format!(":{t} - [0:0]\n"));
        }
        for c in &builtin {
            for r in c.rules.iter().rev() {
                let line = r.render(&c.name);
                let args = line.strip_prefix(&format!("-A {}", c.name)).unwrap_or(&line);
                out.push_str(&format!("-I {} 1{args}\n", c.name));
            }
        }
        out.push_str("COMMIT\n");
    }
    out
}

/// Loads the model's rules for one node into `ns`, as kube-proxy would,
/// and checks the kernel then holds exactly them.
pub fn load_rules(ns: &Netns, backend: Backend, rules: &NodeRules, features: NodeFeatures) -> Result<(), String> {
    if features.nfacct {
        for c in [CT_STATE_INVALID_COUNTER, LOCALHOST_NODE_PORT_COUNTER] {
            ns.exec("nfacct", &["add", c], None)?;
        }
    }
    let ipt = backend.tool("");
    for t in ["mangle", "filter", "nat"] {
        ns.exec(&ipt, &["-w", "-t", t, "-N", CANARY_CHAIN], None)?;
    }
    let restore = backend.tool("-restore");
    ns.exec(&restore, &["-w", "--noflush"], Some(&jumps(rules)))?;
    let payload: String = restore_payload(rules, SyncMode::First).iter().map(|l| format!("{l}\n")).collect();
    ns.exec(&restore, &["-w", "--noflush"], Some(&payload))?;
    let held = ns.exec(&backend.tool("-save"), &[], None)?;
    let want: Vec<String> = rules.save_kernel();
    let got: Vec<String> = rules_only(&held);
    let want: Vec<String> = rules_only(&want.join("\n"));
    if want != got {
        let at = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
        return Err(format!(
            "after loading, the kernel's rules are not the model's (line {}):\n  model:  {:?}\n  kernel: {:?}",
            at + 1,
            want.get(at),
            got.get(at)
        ));
    }
    Ok(())
}

/// Loads a host's own tables (Docker's, on the lab's laptop) with one
/// `iptables-restore`, every chain as written, and checks the kernel's
/// nat table then prints exactly `lines`, the host's rules as the
/// scenario numbers them (the kernel's `iptables-save` form).
pub fn load_host_rules(ns: &Netns, backend: Backend, rules: &NodeRules, lines: &[String]) -> Result<(), String> {
    let mut text = String::new();
    for table in [&rules.filter, &rules.nat] {
        text.push_str(&format!("*{}\n", table.name.as_str()));
        for c in table.chains.iter().filter(|c| !c.is_builtin()) {
            text.push_str(&format!(":{} - [0:0]\n", c.name));
        }
        for c in &table.chains {
            for r in &c.rules {
                text.push_str(&r.render(&c.name));
                text.push('\n');
            }
        }
        text.push_str("COMMIT\n");
    }
    let restore = backend.tool("-restore");
    ns.exec(&restore, &["-w"], Some(&text))?;
    let held = ns.exec(&backend.tool("-save"), &["-t", "nat"], None)?;
    let (want, got) = (rules_only(&lines.join("\n")), rules_only(&held));
    if want != got {
        let at = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
        return Err(format!("after loading, the kernel's nat table is not the host's (line {}):\n  model:  {:?}\n  kernel: {:?}", at + 1, want.get(at), got.get(at)));
    }
    Ok(())
}

/// An iptables-save dump without comments, tables sorted by name.
fn rules_only(text: &str) -> Vec<String> {
    let mut tables: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        if let Some(t) = line.strip_prefix('*') {
            current = t.to_string();
        }
        // A built-in chain's policy line carries its counters; they are not rules.
        let line = match line.strip_prefix(':').and_then(|l| l.rsplit_once(" [")) {
            Some((head, _)) => format!(":{head} [0:0]"),
            None => line.to_string(),
        };
        tables.entry(current.clone()).or_default().push(line);
    }
    tables.into_values().flatten().collect()
}

/// Zeroes the rule counters, empties the connection table and forgets
/// every `-m recent` source, so the next decision starts from a node
/// that has seen nothing.
pub fn reset(ns: &Netns, backend: Backend) -> Result<(), String> {
    let ipt = backend.tool("");
    let script = format!(
        "{ipt} -w -t filter -Z && {ipt} -w -t nat -Z && conntrack -F >/dev/null 2>&1; \
         for f in /proc/net/xt_recent/*; do [ -e \"$f\" ] && echo / > \"$f\"; done; true"
    );
    ns.exec("sh", &["-c", &script], None).map(|_| ())
}

/// Packet counts of every rule, by table and chain, in rule order.
pub type Counters = std::collections::HashMap<(TableName, String), Vec<u64>>;

/// What a node's kernel shows after a decision: every rule's packet count
/// (`iptables-save -c`) and its connection table (`conntrack -L`), read
/// in one go; in nftables mode, the connection table and the members of
/// kube-proxy's affinity sets instead (its rules have no counters).
pub struct NodeState {
    pub counters: Counters,
    pub conntrack: Vec<KernelEntry>,
    /// Each dynamic set's members, by set name (nftables mode).
    pub sets: BTreeMap<String, Vec<SetMember>>,
}

/// One member of a dynamic set, as `nft list set` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetMember {
    pub addr: Ipv4Addr,
    /// Whole seconds before it expires (`expires 2h59m59s996ms`: 10799).
    pub expires: Option<u64>,
}

/// The sets kube-proxy's nftables rules fill as packets pass (ClientIP
/// affinity's `affinity-…` sets).
pub fn dynamic_sets(rs: &Ruleset) -> Vec<String> {
    rs.sets.iter().filter(|s| s.flags.contains(&SetFlag::Dynamic)).map(|s| s.name.clone()).collect()
}

/// The tables iptables-nft keeps in nftables, which may sit beside
/// kube-proxy's when the node's iptables rules are loaded with it.
const IPTABLES_NFT_TABLES: [&str; 3] = ["table ip filter", "table ip nat", "table ip mangle"];

/// Loads kube-proxy's `ip kube-proxy` table into `ns` with `nft -f`, as
/// its first sync on a fresh node does, and checks that the kernel's
/// whole nftables ruleset is then exactly the model's listing; with
/// `beside_iptables` (the node's iptables rules are loaded already), that
/// its table is, and that every other table is iptables-nft's.
pub fn load_nft(ns: &Netns, rs: &Ruleset, beside_iptables: bool) -> Result<(), String> {
    let text: String = rs.transaction().iter().map(|l| format!("{l}\n")).collect();
    ns.exec("nft", &["-f", "-"], Some(&text))?;
    let held = if beside_iptables {
        let tables = ns.exec("nft", &["list", "tables"], None)?;
        let own = format!("table ip {TABLE}");
        let others: Vec<&str> = tables.lines().map(str::trim).filter(|t| !t.is_empty() && *t != own && !IPTABLES_NFT_TABLES.contains(t)).collect();
        if !others.is_empty() {
            return Err(format!("after nft -f, the kernel holds tables the model has not: {}", others.join(", ")));
        }
        ns.exec("nft", &["list", "table", "ip", TABLE], None)?
    } else {
        ns.exec("nft", &["list", "ruleset"], None)?
    };
    // A listed element block wraps over lines within one entry.
    let listing = rs.list().join("\n");
    let want: Vec<&str> = listing.lines().collect();
    let got: Vec<&str> = held.lines().collect();
    if got != want {
        let at = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
        return Err(format!(
            "after nft -f, the kernel's ruleset is not the model's listing (line {}):\n  model:  {:?}\n  kernel: {:?}",
            at + 1,
            want.get(at),
            got.get(at)
        ));
    }
    Ok(())
}

/// `nft list set` of each set, one shell.
fn list_sets_script(sets: &[String]) -> String {
    sets.iter().map(|s| format!("nft list set ip {TABLE} '{s}'")).collect::<Vec<_>>().join(" && ")
}

/// Empties the connection table and kube-proxy's affinity sets, so the
/// next decision starts from a node that has seen nothing; with
/// `iptables` (the network plugin's rules beside kube-proxy's table),
/// zeroes their counters too.
pub fn reset_nft(ns: &Netns, sets: &[String], iptables: Option<Backend>) -> Result<(), String> {
    let flush: String = sets.iter().map(|s| format!("flush set ip {TABLE} {s}\n")).collect();
    let mut script = match iptables {
        Some(b) => format!("{ipt} -w -t filter -Z && {ipt} -w -t nat -Z && ", ipt = b.tool("")),
        None => String::new(),
    };
    script += if flush.is_empty() { "conntrack -F >/dev/null 2>&1; true" } else { "conntrack -F >/dev/null 2>&1; nft -f -" };
    ns.exec("sh", &["-c", &script], Some(&flush)).map(|_| ())
}

/// The connection table and the members of `sets`, in one go; with
/// `iptables` (the network plugin's rules beside kube-proxy's table),
/// its rule counters too.
pub fn read_nft(ns: &Netns, sets: &[String], iptables: Option<Backend>) -> Result<NodeState, String> {
    let mut script = match iptables {
        Some(b) => format!("{} -c && echo '{COUNTERS_END}' && conntrack -L 2>/dev/null", b.tool("-save")),
        None => "conntrack -L 2>/dev/null".to_string(),
    };
    if !sets.is_empty() {
        script += &format!("; echo '{STATE_MARK}' && {}", list_sets_script(sets));
    }
    let out = ns.exec("sh", &["-c", &script], None)?;
    let (save, out) = match iptables {
        Some(_) => out.split_once(COUNTERS_END).ok_or_else(|| format!("{}: no conntrack table in {out:?}", ns.name()))?,
        None => ("", out.as_str()),
    };
    let (table, listed) = out.split_once(STATE_MARK).unwrap_or((out, ""));
    Ok(NodeState { counters: parse_counters(save)?, conntrack: table.lines().filter_map(parse_entry).collect(), sets: parse_sets(listed)? })
}

/// Every set of an `nft list set` (or `list table`) output, with its
/// members: `set NAME {` … `elements = { 10.0.0.5 expires 2h59m59s996ms,
/// … }` (elements may wrap over lines). A set without elements has none.
pub fn parse_sets(text: &str) -> Result<BTreeMap<String, Vec<SetMember>>, String> {
    let mut out: BTreeMap<String, Vec<SetMember>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut elements: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(e) = elements.as_mut() {
            e.push(' ');
            e.push_str(line);
        } else if let Some(name) = line.strip_prefix("set ").and_then(|l| l.strip_suffix(" {")) {
            current = Some(name.to_string());
            out.entry(name.to_string()).or_default();
            continue;
        } else if let Some(rest) = line.strip_prefix("elements = {") {
            elements = Some(rest.to_string());
        }
        let Some(e) = elements.as_ref().filter(|e| e.contains('}')) else { continue };
        let Some(set) = current.clone() else { return Err(format!("elements outside a set: {line:?}")) };
        let items = e.split('}').next().unwrap_or_default();
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let words: Vec<&str> = item.split_whitespace().collect();
            let addr = words[0].parse().map_err(|_| format!("{set}: not an address: {item:?}"))?;
            let expires = match words.iter().position(|w| *w == "expires") {
                Some(i) => Some(words.get(i + 1).and_then(|d| duration_secs(d)).ok_or_else(|| format!("{set}: bad expiry in {item:?}"))?),
                None => None,
            };
            out.entry(set.clone()).or_default().push(SetMember { addr, expires });
        }
        elements = None;
    }
    Ok(out)
}

/// nft's durations (`3h`, `2h59m59s996ms`, `1d`), in whole seconds.
fn duration_secs(text: &str) -> Option<u64> {
    let (mut total_ms, mut num, mut rest) = (0u64, String::new(), text);
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_digit() {
            num.push(c);
            rest = &rest[1..];
            continue;
        }
        let (unit_ms, len) = if rest.starts_with("ms") {
            (1, 2)
        } else {
            match c {
                'd' => (86_400_000, 1),
                'h' => (3_600_000, 1),
                'm' => (60_000, 1),
                's' => (1_000, 1),
                _ => return None,
            }
        };
        total_ms += num.parse::<u64>().ok()? * unit_ms;
        num.clear();
        rest = &rest[len..];
    }
    num.is_empty().then_some(total_ms / 1000)
}

const STATE_MARK: &str = "@@@ conntrack";
const COUNTERS_END: &str = "@@@ counted";

pub fn read(ns: &Netns, backend: Backend) -> Result<NodeState, String> {
    let script = format!("{} -c && echo '{STATE_MARK}' && conntrack -L 2>/dev/null", backend.tool("-save"));
    let out = ns.exec("sh", &["-c", &script], None)?;
    let (save, table) = out.split_once(STATE_MARK).ok_or_else(|| format!("{}: no conntrack table in {out:?}", ns.name()))?;
    Ok(NodeState { counters: parse_counters(save)?, conntrack: table.lines().filter_map(parse_entry).collect(), sets: BTreeMap::new() })
}

fn table_name(name: &str) -> Option<TableName> {
    match name {
        "filter" => Some(TableName::Filter),
        "nat" => Some(TableName::Nat),
        "mangle" => Some(TableName::Mangle),
        _ => None,
    }
}

fn parse_counters(text: &str) -> Result<Counters, String> {
    let mut out = Counters::new();
    let mut table = None;
    for line in text.lines() {
        if let Some(t) = line.strip_prefix('*') {
            table = table_name(t);
            continue;
        }
        let Some(rest) = line.strip_prefix('[') else { continue };
        let bad = || format!("not a counted rule: {line:?}");
        let (counts, rule) = rest.split_once("] ").ok_or_else(bad)?;
        let packets: u64 = counts.split(':').next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let chain = rule.strip_prefix("-A ").and_then(|r| r.split_whitespace().next()).ok_or_else(bad)?;
        let Some(t) = table else { return Err(bad()) };
        out.entry((t, chain.to_string())).or_default().push(packets);
    }
    Ok(out)
}

/// One entry of the kernel's connection table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelEntry {
    pub proto: Protocol,
    /// Seconds left before it expires.
    pub timeout: u64,
    /// The TCP state (`ESTABLISHED`); none for UDP.
    pub state: Option<String>,
    pub original: Tuple,
    pub reply: Tuple,
    /// `[UNREPLIED]`: no packet has come back yet.
    pub unreplied: bool,
    /// `[ASSURED]`.
    pub assured: bool,
}

/// Reads `conntrack -L` in `ns` (TCP and UDP entries).
pub fn conntrack(ns: &Netns) -> Result<Vec<KernelEntry>, String> {
    let text = ns.exec("conntrack", &["-L"], None)?;
    Ok(text.lines().filter_map(parse_entry).collect())
}

/// One `conntrack -L` line: `tcp 6 86399 ESTABLISHED src=… dst=… sport=…
/// dport=… src=… … [ASSURED] mark=0 use=1`.
pub fn parse_entry(line: &str) -> Option<KernelEntry> {
    let mut words = line.split_whitespace();
    let proto = match words.next()? {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        _ => return None,
    };
    words.next()?;
    let timeout: u64 = words.next()?.parse().ok()?;
    let (mut state, mut unreplied, mut assured) = (None, false, false);
    let mut fields: Vec<(&str, &str)> = Vec::new();
    for w in words {
        match w {
            "[UNREPLIED]" => unreplied = true,
            "[ASSURED]" => assured = true,
            _ => match w.split_once('=') {
                Some((k, v)) => fields.push((k, v)),
                None if fields.is_empty() => state = Some(w.to_string()),
                None => {}
            },
        }
    }
    let get = |key: &str, nth: usize| fields.iter().filter(|(k, _)| *k == key).nth(nth).map(|(_, v)| *v);
    let addr = |ip_key: &str, port_key: &str, nth: usize| -> Option<SockAddr> { Some(SockAddr::new(get(ip_key, nth)?.parse().ok()?, get(port_key, nth)?.parse().ok()?)) };
    let original = Tuple { src: addr("src", "sport", 0)?, dst: addr("dst", "dport", 0)? };
    let reply = Tuple { src: addr("src", "sport", 1)?, dst: addr("dst", "dport", 1)? };
    Some(KernelEntry { proto, timeout, state, original, reply, unreplied, assured })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubehops_core::net::ip;

    #[test]
    fn reads_conntrack_lines() {
        let tcp = parse_entry("tcp      6 86398 ESTABLISHED src=198.51.100.23 dst=10.0.0.12 sport=51000 dport=31000 src=10.244.3.9 dst=10.0.0.12 sport=8080 dport=36632 [ASSURED] mark=0 use=1").unwrap();
        assert_eq!(tcp.proto, Protocol::Tcp);
        assert_eq!((tcp.timeout, tcp.state.as_deref(), tcp.assured, tcp.unreplied), (86398, Some("ESTABLISHED"), true, false));
        assert_eq!(tcp.original, Tuple { src: SockAddr::new(ip(198, 51, 100, 23), 51000), dst: SockAddr::new(ip(10, 0, 0, 12), 31000) });
        assert_eq!(tcp.reply, Tuple { src: SockAddr::new(ip(10, 244, 3, 9), 8080), dst: SockAddr::new(ip(10, 0, 0, 12), 36632) });
        let udp = parse_entry("udp      17 29 src=10.0.0.5 dst=172.30.0.41 sport=40000 dport=53 [UNREPLIED] src=10.180.0.1 dst=10.0.0.5 sport=53 dport=40000 mark=0 use=1").unwrap();
        assert_eq!((udp.proto, udp.state, udp.unreplied, udp.assured), (Protocol::Udp, None, true, false));
        assert_eq!(udp.reply.src, SockAddr::new(ip(10, 180, 0, 1), 53));
        assert_eq!(parse_entry("icmp     1 29 src=10.0.0.5 dst=10.0.0.6 type=8 code=0 id=1 src=10.0.0.6 dst=10.0.0.5 type=0 code=0 id=1 mark=0 use=1"), None);
        assert_eq!(parse_entry("conntrack v1.4.7 (conntrack-tools): 2 flow entries have been shown."), None);
    }

    #[test]
    fn reads_set_members_and_their_expiry() {
        let text = "table ip kube-proxy {\n\tset affinity-A {\n\t\ttype ipv4_addr\n\t\tsize 65535\n\t\tflags dynamic,timeout\n\t\ttimeout 3h\n\t\telements = { 10.0.0.5 expires 2h59m59s996ms, 10.0.0.6 expires 1d1s,\n\t\t\t     10.0.0.7 }\n\t}\n}\ntable ip kube-proxy {\n\tset affinity-B {\n\t\ttype ipv4_addr\n\t\tflags dynamic,timeout\n\t\ttimeout 3h\n\t}\n}\n";
        let sets = parse_sets(text).unwrap();
        let a = &sets["affinity-A"];
        assert_eq!(a.iter().map(|m| (m.addr, m.expires)).collect::<Vec<_>>(), [(ip(10, 0, 0, 5), Some(10799)), (ip(10, 0, 0, 6), Some(86401)), (ip(10, 0, 0, 7), None)]);
        assert!(sets["affinity-B"].is_empty(), "a set without elements is listed empty");
        assert_eq!(duration_secs("3h"), Some(10800));
        assert_eq!(duration_secs("59s999ms"), Some(59));
        assert_eq!(duration_secs("2x"), None);
        assert!(parse_sets("elements = { 10.0.0.5 }").is_err());
    }

    #[test]
    fn reads_counters_by_chain() {
        let c = parse_counters("# c\n*nat\n:PREROUTING ACCEPT [3:180]\n[3:180] -A PREROUTING -m comment --comment x -j KUBE-SERVICES\n[0:0] -A KUBE-SERVICES -j KUBE-NODEPORTS\n[1:60] -A KUBE-SERVICES -j KUBE-MARK-MASQ\nCOMMIT\n*filter\n[2:120] -A INPUT -j KUBE-FIREWALL\nCOMMIT\n").unwrap();
        assert_eq!(c[&(TableName::Nat, "PREROUTING".into())], [3]);
        assert_eq!(c[&(TableName::Nat, "KUBE-SERVICES".into())], [0, 1]);
        assert_eq!(c[&(TableName::Filter, "INPUT".into())], [2]);
        assert!(parse_counters("*nat\n[x] -A A -j B\n").is_err());
    }
}
