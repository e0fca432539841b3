//! What the node panels show at a frame: one node's kube-proxy lines for
//! the Services in focus, with the lines the current hop matched, added or
//! removed, and every node's conntrack table with the entry the hop
//! created, updated or used.
//!
//! These compare two views the core computed and read the hop's typed
//! fields; they never decide where a packet goes. The app renders them.

use crate::dataplane::rules::RuleTable;
use crate::scenarios::{Scenario, Step};
use crate::scene::Moment;
use crate::sim::{ActorId, Hop, HopKind, PacketHop, RuleLine};
use serde::{Deserialize, Serialize};

/// One line of the rules panel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelLine {
    pub line: usize,
    pub table: RuleTable,
    pub text: String,
    /// Matched by the current hop.
    pub hit: bool,
    /// Not in the node's rules one view earlier.
    pub added: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulesPanel {
    pub node: Option<ActorId>,
    pub name: String,
    /// The Services the lines are for (`web`, `api`).
    pub services: String,
    pub lines: Vec<PanelLine>,
    /// Lines the current hop's rewrite removed (shown struck through).
    pub removed: Vec<PanelLine>,
    /// Rules the hop matched outside the Services' own lines (PREROUTING,
    /// KUBE-MARK-MASQ, FORWARD, …), in walk order.
    pub shared: Vec<PanelLine>,
    pub note: String,
    /// Which hop's changes the `added` and `removed` marks show (1-based).
    pub changed_by: usize,
    /// What prints the lines on the node, for the panel's heading:
    /// `iptables-save`, or `nft` for kube-proxy's nftables transaction.
    pub printout: String,
}

/// What prints a node's kube-proxy lines in `mode`.
pub fn printout(mode: crate::dataplane::kubeproxy::ProxyMode) -> &'static str {
    match mode {
        crate::dataplane::kubeproxy::ProxyMode::Iptables => "iptables-save",
        crate::dataplane::kubeproxy::ProxyMode::Nftables => "nft",
    }
}

/// The node a hop is about: the node whose rules or conntrack decided it,
/// else the node it arrives at, else the node it leaves. A host's own
/// decisions (the lab's laptop) are not a node's.
fn node_of(h: &Hop, s: &Scenario) -> Option<ActorId> {
    let is_node = |a: &ActorId| s.actor(*a).is_some_and(|x| x.kind == crate::sim::ActorKind::Node);
    h.packet.as_ref().and_then(|p| p.decided_on).filter(is_node).or_else(|| Some(h.to).filter(is_node)).or_else(|| Some(h.from).filter(is_node))
}

/// The node whose rules are shown unless the user picked one: the node
/// that decided the current hop, otherwise the last node a hop of this
/// step touched, otherwise the first node.
pub fn default_node(s: &Scenario, st: &Step, current: Option<usize>) -> Option<ActorId> {
    let first = s.nodes().next().map(|a| a.id);
    let Some(cur) = current else { return first };
    st.hops.iter().take(cur + 1).rev().find_map(|h| node_of(h, s)).or(first)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn decided_here(hop: Option<&Hop>, node: ActorId) -> Option<&PacketHop> {
    hop.and_then(|h| h.packet.as_ref()).filter(|p| p.decided_on == Some(node))
}

fn lines_at(st: &Step, view: usize, node: ActorId) -> Option<&[RuleLine]> {
    st.views.get(view).and_then(|v| v.node(node)).map(|n| n.iptables.as_slice())
}

pub fn rules_panel(s: &Scenario, f: &Moment, pinned: Option<ActorId>) -> RulesPanel {
    let Some(st) = s.steps.get(f.step) else { return RulesPanel::default() };
    let Some(node) = pinned.filter(|p| s.nodes().any(|n| n.id == *p)).or_else(|| default_node(s, st, f.current)) else { return RulesPanel::default() };
    let name = s.actor(node).map_or_else(String::new, |a| a.short.clone());
    // The Services in focus, then those whose rules a hop matched here (kube-dns).
    let services = st
        .views
        .get(f.view)
        .map(|v| {
            let mut names: Vec<String> = v.kubectl.rows.iter().skip(1).filter_map(|r| r.first().cloned()).collect();
            for m in v.node(node).map_or(&[][..], |n| &n.matched[..]) {
                if !names.contains(&m.name) {
                    names.push(m.name.clone());
                }
            }
            names.join(", ")
        })
        .unwrap_or_default();
    let hop = f.current.and_then(|i| st.hops.get(i));
    let now = lines_at(st, f.view, node).unwrap_or(&[]);
    let before = f.view.checked_sub(1).and_then(|v| lines_at(st, v, node));
    let pk = decided_here(hop, node);
    let matched: &[crate::sim::MatchedRule] = pk.map_or(&[], |p| &p.matched);
    let to_panel = |l: &RuleLine, hit: bool, added: bool| PanelLine { line: l.line, table: l.table, text: l.text.clone(), hit, added };
    let lines: Vec<PanelLine> = now.iter().map(|l| to_panel(l, matched.iter().any(|m| m.is(l)), before.is_some_and(|b| !b.iter().any(|o| o.same_rule(l))))).collect();
    let removed: Vec<PanelLine> = before.map(|b| b.iter().filter(|o| !now.iter().any(|l| l.same_rule(o))).map(|o| to_panel(o, false, false)).collect()).unwrap_or_default();
    let shared: Vec<PanelLine> = pk
        .map(|p| p.matched.iter().filter(|m| !now.iter().any(|l| m.is(l))).map(|m| PanelLine { line: m.line, table: m.table, text: m.text.clone(), hit: true, added: false }).collect())
        .unwrap_or_default();
    let note = rules_note(s, st, f, node, &name, &services, pinned.is_some(), &lines, &removed, &shared);
    RulesPanel { node: Some(node), name, services, lines, removed, shared, note, changed_by: f.view, printout: printout(s.params.proxy_mode()).into() }
}

#[allow(clippy::too_many_arguments)]
fn rules_note(s: &Scenario, st: &Step, f: &Moment, node: ActorId, name: &str, services: &str, pinned: bool, lines: &[PanelLine], removed: &[PanelLine], shared: &[PanelLine]) -> String {
    let Some(i) = f.current else {
        return format!("Before the first hop of this step: the rules kube-proxy wrote on {name} for {}.", for_services(services));
    };
    let Some(h) = st.hops.get(i) else { return String::new() };
    let n = i + 1;
    let what_if = if h.what_if { " (what if)" } else { "" };
    let kind = match h.kind {
        HopKind::Reply => "reply",
        HopKind::ControlPlane => "message",
        HopKind::Dns if h.arp.is_some() => "ARP frame",
        HopKind::Dns => "DNS packet",
        _ => "packet",
    };
    let hits = lines.iter().filter(|l| l.hit).count();
    let added = lines.iter().filter(|l| l.added).count();
    if let Some(p) = decided_here(Some(h), node) {
        return if p.by_conntrack {
            format!("Hop {n}{what_if}: {name}'s conntrack entry rewrote the {kind}; no rule was consulted.")
        } else if p.matched.is_empty() {
            format!("Hop {n}{what_if}: no rule on {name} matched the {kind}.")
        } else {
            let also = if shared.is_empty() { String::new() } else { format!("; {} more matched in shared chains (below)", shared.len()) };
            format!("Hop {n}{what_if}: the {kind} walked {name}'s rules. ▶ marks the {} for {} it matched{also}.", plural(hits, "line", "lines"), services_short(services))
        };
    }
    if h.kind == HopKind::ControlPlane && h.to == node {
        let gone = removed.len();
        return match (f.view == n, added, gone) {
            (true, 0, 0) => format!("Hop {n}: kube-proxy on {name} rewrote its rules; for {} they are unchanged.", services_short(services)),
            (true, a, g) => format!("Hop {n}: kube-proxy on {name} rewrote its rules for {}: + marks the {} it added, − the {} it removed.", services_short(services), plural(a, "line", "lines"), plural(g, "line", "lines")),
            (false, _, _) => format!("Hop {n}: the change is on its way to kube-proxy on {name}."),
        };
    }
    if h.to == node {
        return format!("Hop {n}{what_if}: the {kind} travels to {name}, whose rules decide what happens next.");
    }
    if h.from == node {
        return format!("Hop {n}{what_if}: the {kind} leaves {name}; no rule here changed it.");
    }
    match node_of(h, s).and_then(|k| s.actor(k)) {
        Some(other) => format!("Hop {n}{what_if} does not pass {name}; it is on {}.", other.short),
        None if !pinned && st.hops.iter().take(n).any(|h| node_of(h, s).is_some()) => {
            format!("Hop {n}{what_if} passes no node; these are the rules of {name}, the last node this step passed.")
        }
        None => format!("Hop {n}{what_if} passes no node."),
    }
}

fn for_services(services: &str) -> String {
    if services.is_empty() {
        "the Service".into()
    } else {
        format!("Service {services}")
    }
}

fn services_short(services: &str) -> &str {
    if services.is_empty() {
        "the Service"
    } else {
        services
    }
}

/// One conntrack entry as the panel shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtEntry {
    pub text: String,
    /// Not in the table one view earlier.
    pub new: bool,
    /// The same connection as an earlier entry, in a new state.
    pub updated: bool,
    /// The entry the current hop was rewritten by.
    pub used: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtNode {
    pub node: ActorId,
    pub name: String,
    pub ip: String,
    pub entries: Vec<CtEntry>,
    /// The current hop is about this node.
    pub here: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConntrackPanel {
    pub nodes: Vec<CtNode>,
    /// Nodes left out: in a cluster of more nodes than the canvas shows,
    /// those without entries (and not the current hop's) are not listed.
    #[serde(default)]
    pub not_listed: usize,
    /// The hop whose changes `new` and `updated` show (1-based).
    pub changed_by: usize,
}

pub fn conntrack_panel(s: &Scenario, f: &Moment) -> ConntrackPanel {
    let Some(st) = s.steps.get(f.step) else { return ConntrackPanel::default() };
    let hop = f.current.and_then(|i| st.hops.get(i));
    let here = hop.and_then(|h| node_of(h, s));
    let prev = f.view.checked_sub(1).and_then(|v| st.views.get(v));
    let nodes = s
        .nodes()
        .map(|a| {
            let now = st.views.get(f.view).and_then(|v| v.node(a.id)).map_or(&[][..], |n| &n.conntrack[..]);
            let before = prev.and_then(|v| v.node(a.id)).map(|n| n.conntrack.as_slice());
            // The entry conntrack rewrote this hop's packet by, as the core recorded it.
            let used = decided_here(hop, a.id).filter(|p| p.by_conntrack).and_then(|p| p.conntrack_entry);
            let entries = now
                .iter()
                .enumerate()
                .map(|(k, e)| {
                    // The core names each entry's connection and state; a ticking timeout is no change.
                    let known = before.is_some_and(|b| b.iter().any(|o| o.original == e.original));
                    let changed = before.is_some_and(|b| !b.iter().any(|o| o.original == e.original && o.state == e.state));
                    CtEntry { text: e.text.clone(), new: changed && !known, updated: changed && known, used: used == Some(k) }
                })
                .collect();
            CtNode { node: a.id, name: a.short.clone(), ip: a.sublabel.clone(), entries, here: here == Some(a.id) }
        })
        .collect::<Vec<CtNode>>();
    let all = nodes.len();
    let nodes: Vec<CtNode> = if all > crate::scene::layout::MAX_NODES_SHOWN { nodes.into_iter().filter(|n| !n.entries.is_empty() || n.here).collect() } else { nodes };
    ConntrackPanel { not_listed: all - nodes.len(), nodes, changed_by: f.view }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::build_default;
    use crate::scene::Frame;

    #[test]
    fn the_default_node_follows_the_hop() {
        let s = build_default("nodeport-loadbalancer").unwrap();
        let node = |i: usize| s.nodes().nth(i).map(|a| a.id);
        let st = &s.steps[1];
        assert_eq!(default_node(&s, st, None), node(0), "no hop yet: Node-1");
        assert_eq!(default_node(&s, st, Some(0)), node(1), "laptop → Node-2: Node-2");
        assert_eq!(default_node(&s, st, Some(1)), node(1), "Node-2 decided the DNAT");
        assert_eq!(default_node(&s, st, Some(5)), node(1), "Node-2's conntrack undid it");
        // Step 3's control-plane hops to the balancer touch no node yet.
        assert_eq!(default_node(&s, &s.steps[2], Some(2)), node(0));
        assert_eq!(default_node(&s, &s.steps[2], Some(99)), node(2), "out of range: the last node the step passed");
    }

    #[test]
    fn a_lookup_shows_the_kube_dns_rules_it_matched_among_the_nodes_lines() {
        let s = build_default("service-types").unwrap();
        let k = s.steps.iter().position(|st| st.title == "DNS Lookup").expect("a lookup step");
        let (i, h) = s.steps[k].hops.iter().enumerate().find(|(_, h)| h.packet.as_ref().is_some_and(|p| !p.could_reach.is_empty())).expect("the query is DNATed");
        let node = h.packet.as_ref().and_then(|p| p.decided_on).unwrap();
        // While the hop plays (i hops done) and when it has arrived.
        for (progress, done) in [(i as f64 + 0.5, i), ((i + 1) as f64, i + 1)] {
            let f = Frame { step: k, progress, done, current: Some(i), view: done };
            let panel = rules_panel(&s, &f.moment(), Some(node));
            assert!(panel.services.ends_with("kube-dns"), "{}", panel.services);
            assert!(panel.lines.iter().any(|l| l.hit && l.text.contains("kube-system/kube-dns:dns cluster IP")), "{:?}", panel.lines);
            assert!(!panel.shared.iter().any(|l| l.text.contains("kube-dns")), "kube-dns's lines are the node's own, not shared: {:?}", panel.shared);
        }
    }

    #[test]
    fn a_host_deciding_a_hop_is_not_taken_for_a_node() {
        let s = build_default("local-lab").unwrap();
        let st = &s.steps[0];
        let d = default_node(&s, st, Some(0)).and_then(|a| s.actor(a)).map(|a| a.kind);
        assert_eq!(d, Some(crate::sim::ActorKind::Node));
    }

    #[test]
    fn removed_lines_are_those_the_rewrite_took_away() {
        let p = crate::scenarios::Params::defaults(&(crate::scenarios::entry("service-types").unwrap().params)())
            .with("notready", crate::scenarios::Value::Set(["api-m3n9q".to_string()].into()));
        let s = crate::scenarios::build("service-types", &p).unwrap();
        let st = &s.steps[0];
        let node2 = s.nodes().nth(1).unwrap().id;
        // The last hop is kube-proxy on Node-2 rewriting its rules after the readiness change.
        let last = st.hops.len() - 1;
        assert_eq!(st.hops[last].to, node2);
        let f = Frame { step: 0, progress: st.hops.len() as f64, done: st.hops.len(), current: Some(last), view: st.hops.len() };
        let panel = rules_panel(&s, &f.moment(), Some(node2));
        assert!(panel.removed.iter().any(|l| l.text.contains("--to-destination 10.244.2.8:8080")), "{:?}", panel.removed);
        assert!(!panel.lines.iter().any(|l| l.text.contains("10.244.2.8")), "the Pod's lines are gone");
        assert!(panel.note.contains("removed"), "{}", panel.note);
    }
}
