//! Tracing one packet through one node's rules, as `kubehops trace` reports it.
//!
//! The trace runs the packet through the nat table (PREROUTING, or OUTPUT
//! for a packet the node sends itself), the filter hook it takes, nat
//! POSTROUTING and, for a packet the node sends to one of its own
//! addresses, filter INPUT on the way back in; then it lists every rule
//! that matched and every endpoint the random matches could have led to.
//! [`trace_nftables`] does the same through the `ip kube-proxy` table of
//! the nftables mode, in the same shape.

use crate::api::Node;
use crate::dataplane::iptables::{TableName, Target};
use crate::dataplane::kubeproxy::NodeRules;
use crate::net::{Packet, SockAddr};
use crate::dataplane::netfilter::{reachable, traverse, Reachable, Entry, FixedDraws, NodeContext, Verdict};
use crate::dataplane::nftables::{self, Outcome, Ruleset};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TraceVerdict {
    /// The nat table rewrote the destination.
    Dnat,
    Reject,
    Drop,
    /// A kube-proxy rule accepted the packet (a health check node port).
    Accept,
    /// No rule of kube-proxy's decided anything about the packet.
    None,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceResult {
    pub verdict: TraceVerdict,
    /// Every endpoint the packet could be DNATed to, sorted.
    pub targets: Vec<SockAddr>,
    /// False when the search of the branches stopped early, so `targets`
    /// may miss some (only for tables that call chains over and over).
    pub targets_complete: bool,
    /// Whether kube-proxy masquerades the packet.
    pub masquerade: bool,
    /// The rules that matched, in the order they matched: in iptables
    /// mode as `iptables-save` lines prefixed by their table (`nat: -A
    /// KUBE-SERVICES ...`); in nftables mode as `chain: rule`, each
    /// verdict-map look-up followed by the element it found
    /// (`@service-ips: 172.30.0.41 . tcp . 80 : goto service-…`).
    pub matched: Vec<String>,
}

/// The addresses `-m addrtype LOCAL` sees on a node: its InternalIP, the
/// gateway of its Pod range, and loopback (all of 127.0.0.0/8 counts: see
/// `NodeContext::is_local`).
pub fn node_addresses(node: &Node) -> Vec<Ipv4Addr> {
    let mut a = vec![node.internal_ip];
    if let Some(gw) = node.pod_cidr.and_then(|c| c.nth(1)) {
        a.push(gw);
    }
    a.push(Ipv4Addr::LOCALHOST);
    a
}

/// Traces `pkt` arriving at `node` (or sent by it when `from_node` is set).
pub fn trace(rules: &NodeRules, node: &Node, pkt: &Packet, from_node: bool) -> TraceResult {
    let ctx = NodeContext::new(node_addresses(node));
    let entry = if from_node { Entry::Local } else { Entry::Arriving };
    let t = traverse(&rules.filter, &rules.nat, entry, pkt, &ctx, &mut FixedDraws::new(vec![]));
    let table = |n: TableName| if n == TableName::Nat { &rules.nat } else { &rules.filter };
    let matched: Vec<String> =
        t.matched().filter_map(|r| table(r.table).rule(r).map(|rule| format!("{}: {}", r.table.as_str(), rule.render(&r.chain)))).collect();
    let accepted = t.filter.matched.iter().chain(t.input.iter().flat_map(|w| w.matched.iter())).any(|r| {
        r.chain.starts_with("KUBE-") && table(r.table).rule(r).is_some_and(|rule| rule.target == Target::Accept && rule.comment().is_some_and(|c| c.ends_with("health check node port")))
    });
    let none = || Reachable { targets: vec![], complete: true };
    let (verdict, reach) = match (t.refused(), &t.nat.verdict) {
        (Some(Verdict::Drop), _) => (TraceVerdict::Drop, none()),
        (Some(_), _) => (TraceVerdict::Reject, none()),
        (None, Verdict::Dnat(_)) => {
            let hook = if from_node { "OUTPUT" } else { "PREROUTING" };
            (TraceVerdict::Dnat, reachable(&rules.nat, hook, pkt, &ctx))
        }
        (None, _) if accepted => (TraceVerdict::Accept, none()),
        (None, _) => (TraceVerdict::None, none()),
    };
    TraceResult { verdict, targets: reach.targets, targets_complete: reach.complete, masquerade: t.masquerade(), matched }
}

/// Traces `pkt` through a node's `ip kube-proxy` table (nftables mode).
/// `local` are the node's addresses for `fib … type local`.
pub fn trace_nftables(rs: &Ruleset, local: Vec<Ipv4Addr>, pkt: &Packet, from_node: bool) -> TraceResult {
    let ctx = nftables::Context::new(local);
    let entry = if from_node { Entry::Local } else { Entry::Arriving };
    let t = nftables::traverse(rs, entry, pkt, &ctx, &mut FixedDraws::new(vec![]));
    let mut matched = Vec::new();
    for hit in t.hits() {
        let Some(rule) = rs.chain(&hit.chain).and_then(|c| c.rules.get(hit.rule)) else { continue };
        matched.push(format!("{}: {}", hit.chain, rule.render()));
        if let Some(e) = &hit.element {
            if let Some(el) = rs.set(&e.set).and_then(|s| s.elements.get(e.index)) {
                matched.push(format!("@{}: {}", e.set, el.render()));
            }
        }
    }
    let (verdict, targets, complete) = match (t.refused(), t.dnat()) {
        (Some(Outcome::Drop), _) => (TraceVerdict::Drop, vec![], true),
        (Some(_), _) => (TraceVerdict::Reject, vec![], true),
        (None, Some(_)) => {
            let (targets, complete) = nftables::reachable(rs, entry, pkt, &ctx);
            (TraceVerdict::Dnat, targets, complete)
        }
        (None, None) => (TraceVerdict::None, vec![], true),
    };
    TraceResult { verdict, targets, targets_complete: complete, masquerade: t.masquerade(), matched }
}
