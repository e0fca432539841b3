//! What the model says about one connection, from the core's own
//! functions: every way the node's walk can go (one branch per outcome
//! of the `-m statistic` matches in iptables mode, per arm of `numgen
//! random` in nftables mode, with its probability), the filter rules the
//! connection's later packets meet, and the conntrack entry the model
//! would hold.
//!
//! Branches come from `netfilter::traverse` or `nftables::traverse` with
//! scripted random draws, as `netfilter::reachable_dnat_targets` and
//! `nftables::reachable` try them, and the harness checks that their
//! targets are exactly `trace`'s (or `trace_nftables`'s).
//!
//! A node in nftables mode may hold the network plugin's iptables rules
//! beside kube-proxy's table (a scenario's node): as `NodeTables::decide`
//! does, a packet kube-proxy's table neither refused nor masqueraded then
//! walks those too (`netfilter::traverse`, as kube-proxy's DNAT left it),
//! and `trace` there takes masquerade and refusals from `decide` itself.

use kubehops_core::dataplane::conntrack::{ConntrackEntry, ConntrackTable, Direction};
use kubehops_core::dataplane::iptables::RuleRef;
use kubehops_core::dataplane::kubeproxy::NodeRules;
use kubehops_core::dataplane::netfilter::{traverse, walk, Dice, Entry, FixedDraws, NodeContext, Traversal, Verdict};
use crate::plan::PlannedNode;
use kubehops_core::api::Node;
use kubehops_core::dataplane::nftables::{self, Hook, Ruleset};
use kubehops_core::dataplane::proxy::NodeTables;
use kubehops_core::dataplane::trace::{node_addresses, trace, trace_nftables, TraceResult, TraceVerdict};
use kubehops_core::net::{Packet, SockAddr};
use std::net::Ipv4Addr;

/// A connection's first packet through one node, as the model walked it
/// in the node's proxy mode.
#[derive(Clone, Debug)]
pub enum Walk {
    /// Through kube-proxy's iptables rules (`netfilter::traverse`).
    Iptables(Box<Traversal>),
    /// Through its `ip kube-proxy` table (`nftables::traverse`), then,
    /// where the table neither refused nor masqueraded it, through the
    /// network plugin's iptables rules the node holds beside it.
    Nftables(nftables::Traversal, Option<Box<Traversal>>),
}

/// How a walk ended a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Drop,
    Reject,
}

/// One way the walk can go.
#[derive(Clone, Debug)]
pub struct Branch {
    pub probability: f64,
    pub walk: Walk,
}

impl Branch {
    /// Where a nat rule sent the packet.
    pub fn target(&self) -> Option<SockAddr> {
        match &self.walk {
            Walk::Iptables(t) => match t.nat.verdict {
                Verdict::Dnat(a) => Some(a),
                _ => None,
            },
            Walk::Nftables(t, _) => t.dnat(),
        }
    }

    pub fn masquerade(&self) -> bool {
        match &self.walk {
            Walk::Iptables(t) => t.masquerade(),
            Walk::Nftables(t, plugin) => t.masquerade() || plugin.as_ref().is_some_and(|p| p.masquerade()),
        }
    }

    /// Whether a rule dropped or rejected the packet, and which.
    pub fn refused(&self) -> Option<Refusal> {
        match &self.walk {
            Walk::Iptables(t) => t.refused().map(|v| if *v == Verdict::Drop { Refusal::Drop } else { Refusal::Reject }),
            Walk::Nftables(t, plugin) => match t.refused() {
                Some(o) => Some(if o == nftables::Outcome::Drop { Refusal::Drop } else { Refusal::Reject }),
                None => plugin.as_ref().and_then(|p| p.refused()).map(|v| if *v == Verdict::Drop { Refusal::Drop } else { Refusal::Reject }),
            },
        }
    }

    /// Whether a packet the node sends itself was refused on its way
    /// out, in the output hook's filter (a UDP sender then hears EPERM).
    pub fn refused_on_output(&self) -> bool {
        match &self.walk {
            Walk::Iptables(t) => t.filter_hook == "OUTPUT" && !matches!(t.filter.verdict, Verdict::Accept),
            Walk::Nftables(t, plugin) => {
                t.hooks.first().is_some_and(|h| h.hook == Hook::Output && h.chains.iter().any(|c| c.outcome.refuses()))
                    || plugin.as_ref().is_some_and(|p| p.filter_hook == "OUTPUT" && matches!(p.filter.verdict, Verdict::Drop | Verdict::Reject))
            }
        }
    }

    /// Whether the packet passed postrouting, where conntrack confirms
    /// the connection (so a refusal after it, on the way back in over
    /// loopback, leaves an entry).
    pub fn confirmed(&self) -> bool {
        match &self.walk {
            Walk::Iptables(t) => t.post.is_some(),
            Walk::Nftables(t, plugin) => t.hooks.iter().any(|h| h.hook == Hook::Postrouting) && plugin.as_ref().is_none_or(|p| p.post.is_some()),
        }
    }

    /// The packet after DNAT.
    pub fn routed(&self) -> Packet {
        match &self.walk {
            Walk::Iptables(t) => t.routed,
            Walk::Nftables(t, _) => t.routed,
        }
    }

    /// Client addresses the walk recorded for session affinity: the
    /// `-m recent` lists it set (with the packet's source), or the
    /// dynamic sets it updated.
    pub fn remembered(&self, pkt: &Packet) -> Vec<(String, Ipv4Addr)> {
        match &self.walk {
            Walk::Iptables(t) => t.nat.recent_set.iter().map(|l| (l.clone(), pkt.src.ip)).collect(),
            Walk::Nftables(t, _) => t.carried.updates.clone(),
        }
    }

    /// The walk through the node's iptables rules: kube-proxy's in
    /// iptables mode; in nftables mode the network plugin's, where the
    /// packet met them.
    pub fn iptables(&self) -> Option<&Traversal> {
        match &self.walk {
            Walk::Iptables(t) => Some(t.as_ref()),
            Walk::Nftables(_, plugin) => plugin.as_deref(),
        }
    }
}

/// One node's model, in the node's proxy mode, with what a decision's
/// earlier connections taught it: the clients session affinity
/// remembers (`-m recent` lists, or the dynamic sets' members).
#[derive(Clone, Debug)]
pub enum NodeModel<'a> {
    Iptables { rules: &'a NodeRules, node: &'a Node, ctx: NodeContext },
    /// kube-proxy's table, and the network plugin's iptables rules where
    /// the node holds any.
    Nftables { rs: &'a Ruleset, plugin: Option<&'a NodeRules>, ctx: nftables::Context },
}

impl<'a> NodeModel<'a> {
    /// A node that has seen no connection yet, with the addresses the
    /// walk counts as its own (`trace::node_addresses`) in either mode.
    pub fn of(pn: &'a PlannedNode) -> NodeModel<'a> {
        let local = node_addresses(&pn.node);
        match &pn.nft {
            Some(rs) => NodeModel::Nftables { rs, plugin: pn.plugin_rules(), ctx: nftables::Context::new(local) },
            None => NodeModel::Iptables { rules: &pn.rules, node: &pn.node, ctx: NodeContext::new(local) },
        }
    }

    /// Every branch of a connection's first packet, from what the node
    /// holds now.
    pub fn branches(&self, entry: Entry, pkt: &Packet) -> Vec<Branch> {
        match self {
            NodeModel::Iptables { rules, ctx, .. } => branches(rules, entry, pkt, ctx),
            NodeModel::Nftables { rs, plugin, ctx } => nft_branches(rs, *plugin, entry, pkt, ctx),
        }
    }

    /// What `kubehops trace` says of the packet on a fresh node. Beside
    /// the network plugin's rules, the masquerade and a refusal are
    /// `NodeTables::decide`'s (the simulator's), which walks both.
    pub fn trace(&self, pkt: &Packet, from_node: bool) -> TraceResult {
        match self {
            NodeModel::Iptables { rules, node, .. } => trace(rules, node, pkt, from_node),
            NodeModel::Nftables { rs, plugin: None, ctx } => trace_nftables(rs, ctx.local_addrs.clone(), pkt, from_node),
            NodeModel::Nftables { rs, plugin: Some(rules), ctx } => {
                let mut t = trace_nftables(rs, ctx.local_addrs.clone(), pkt, from_node);
                let tables = NodeTables { iptables: (*rules).clone(), nftables: Some((*rs).clone()) };
                let entry = if from_node { Entry::Local } else { Entry::Arriving };
                let d = tables.decide(entry, pkt, ctx.local_addrs.clone(), &mut FixedDraws::new(vec![]));
                t.masquerade = d.masquerade.is_some();
                let refused = matches!(t.verdict, TraceVerdict::Reject | TraceVerdict::Drop);
                if let (false, Some(r)) = (refused, &d.refused) {
                    t.verdict = if r.rejected { TraceVerdict::Reject } else { TraceVerdict::Drop };
                    t.targets.clear();
                }
                t
            }
        }
    }

    /// Records the clients the branch the kernel took remembered.
    pub fn remember(&mut self, b: &Branch, pkt: &Packet) {
        for (name, addr) in b.remembered(pkt) {
            match self {
                NodeModel::Iptables { ctx, .. } => ctx.recent.entry(name).or_default().insert(addr),
                NodeModel::Nftables { ctx, .. } => ctx.dynamic.entry(name).or_default().insert(addr),
            };
        }
    }
}

/// Answers random matches from a script, then `true`, remembering each
/// match's probability.
struct Scripted {
    script: Vec<bool>,
    asked: Vec<f64>,
}

impl Dice for Scripted {
    fn roll(&mut self, p: f64) -> bool {
        let i = self.asked.len();
        self.asked.push(p);
        if i >= self.script.len() {
            self.script.push(true);
        }
        self.script[i]
    }
}

/// At most this many branches are tried (a Service has far fewer).
const MAX_BRANCHES: usize = 4096;

/// Every branch of a new connection's first packet through a node in
/// iptables mode, the all-matches-succeed branch (the one `trace`
/// follows) first.
pub fn branches(rules: &NodeRules, entry: Entry, pkt: &Packet, ctx: &NodeContext) -> Vec<Branch> {
    explore(|dice| Walk::Iptables(Box::new(traverse(&rules.filter, &rules.nat, entry, pkt, ctx, dice))))
}

/// The same in nftables mode: each arm of each `numgen random mod N` is
/// asked of the dice as iptables' chain of matches asks it (`Dice::pick`),
/// so the first branch is arm 0 everywhere, the one `trace_nftables`
/// follows, and each arm's probability is 1/N. A packet the table neither
/// refused nor masqueraded then walks the network plugin's iptables rules
/// (`plugin`), as kube-proxy's DNAT left it (`NodeTables::decide`).
pub fn nft_branches(rs: &Ruleset, plugin: Option<&NodeRules>, entry: Entry, pkt: &Packet, ctx: &nftables::Context) -> Vec<Branch> {
    explore(|dice| {
        let t = nftables::traverse(rs, entry, pkt, ctx, dice);
        let p = plugin.filter(|_| t.refused().is_none() && !t.masquerade()).map(|rules| {
            let plugin_ctx = NodeContext::new(ctx.local_addrs.clone());
            Box::new(traverse(&rules.filter, &rules.nat, entry, &t.routed, &plugin_ctx, dice))
        });
        Walk::Nftables(t, p)
    })
}

/// Every way `run` can go, trying each free choice of the dice both ways.
fn explore(mut run: impl FnMut(&mut dyn Dice) -> Walk) -> Vec<Branch> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<bool>> = vec![Vec::new()];
    while let Some(prefix) = todo.pop() {
        if out.len() >= MAX_BRANCHES {
            break;
        }
        let fixed = prefix.len();
        let mut dice = Scripted { script: prefix, asked: Vec::new() };
        let walk = run(&mut dice);
        let probability = dice.asked.iter().zip(&dice.script).map(|(p, took)| if *took { *p } else { 1.0 - p }).product();
        // Each free choice could have gone the other way; the deepest
        // alternative is tried last, so the first branch stays first.
        for j in (fixed..dice.asked.len()).rev() {
            let mut alt = dice.script[..j].to_vec();
            alt.push(false);
            todo.push(alt);
        }
        out.push(Branch { probability, walk });
    }
    out
}

/// The filter rules a packet of an established connection meets in `hook`
/// (conntrack state ESTABLISHED, no mark: marks live in one packet).
pub fn established(rules: &NodeRules, hook: &str, pkt: &Packet, ctx: &NodeContext, dnat: bool) -> Vec<RuleRef> {
    let mut c = ctx.clone();
    c.ct_new = false;
    c.ct_dnat = dnat;
    walk(&rules.filter, hook, pkt, 0, &c, &mut FixedDraws::new(vec![])).matched
}

/// The entry the model's conntrack holds for the connection that arrived
/// as `before` and left as `after`, once answered (or not).
pub fn conntrack_entry(before: &Packet, after: &Packet, answered: bool) -> ConntrackEntry {
    let mut table = ConntrackTable::default();
    let i = table.insert(before, after, 0);
    if answered {
        table.translate(i, Direction::Reply, &after.reversed(), 0);
    }
    table.entries[i].clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubehops_core::api::{Endpoint, EndpointPort, EndpointSlice, Node, Service, ServicePort, ServiceSpec};
    use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig};
    use kubehops_core::dataplane::trace::{node_addresses, trace};
    use kubehops_core::net::{ip, Protocol};

    fn three_endpoints() -> (Node, NodeRules) {
        let (node, svc, slice) = three_endpoint_objects();
        let rules = sync_node(&node, &[svc], &[slice], &KubeProxyConfig::default());
        (node, rules)
    }

    fn three_endpoint_objects() -> (Node, Service, EndpointSlice) {
        let node = Node { name: "n".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
        let port = ServicePort { name: None, protocol: Protocol::Tcp, port: 80, target_port: 80, node_port: None };
        let svc = Service {
            annotations: Default::default(),
            name: "s".into(),
            namespace: "ns".into(),
            spec: ServiceSpec { ports: vec![port], cluster_ip: Some(ip(172, 30, 0, 1)), ..Default::default() },
            status: Default::default(),
            created: None,
        };
        let ep = |d| Endpoint { ip: ip(10, 180, 0, d), node_name: "n".into(), ready: true, serving: true, terminating: false, target_ref: String::new(), hostname: None };
        let slice = EndpointSlice {
            name: "s-1".into(),
            namespace: "ns".into(),
            service_name: "s".into(),
            endpoints: vec![ep(1), ep(2), ep(3)],
            ports: vec![EndpointPort { name: None, protocol: Protocol::Tcp, port: 80 }],
        };
        (node, svc, slice)
    }

    #[test]
    fn branches_are_the_endpoints_with_even_odds() {
        let (node, rules) = three_endpoints();
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(ip(172, 30, 0, 1), 80));
        let b = branches(&rules, Entry::Arriving, &pkt, &NodeContext::new(node_addresses(&node)));
        let targets: Vec<SockAddr> = b.iter().filter_map(Branch::target).collect();
        assert_eq!(targets.len(), 3);
        for (t, want) in targets.iter().zip([1, 2, 3]) {
            assert_eq!(t.ip, ip(10, 180, 0, want), "the first branch is the one every match takes");
        }
        for br in &b {
            assert!((br.probability - 1.0 / 3.0).abs() < 1e-9, "{}", br.probability);
        }
        let mut sorted = targets.clone();
        sorted.sort();
        assert_eq!(sorted, trace(&rules, &node, &pkt, false).targets, "the same set as trace's");
    }

    #[test]
    fn nftables_branches_are_the_numgen_arms_with_even_odds() {
        let (node, svc, slice) = three_endpoint_objects();
        let cfg = nftables::NftablesConfig { service_cidrs: vec!["172.30.0.0/16".parse().unwrap()], ..Default::default() };
        let rs = nftables::sync_node(&node, &[svc], &[slice], &cfg);
        let ctx = nftables::Context::new(node_addresses(&node));
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(ip(172, 30, 0, 1), 80));
        let b = nft_branches(&rs, None, Entry::Arriving, &pkt, &ctx);
        let targets: Vec<SockAddr> = b.iter().filter_map(Branch::target).collect();
        assert_eq!(targets.iter().map(|t| t.ip).collect::<Vec<_>>(), [ip(10, 180, 0, 1), ip(10, 180, 0, 2), ip(10, 180, 0, 3)], "arm 0 first, as trace_nftables walks");
        for br in &b {
            assert!((br.probability - 1.0 / 3.0).abs() < 1e-9, "{}", br.probability);
            assert!(br.refused().is_none() && br.confirmed() && br.iptables().is_none());
        }
        let mut sorted = targets.clone();
        sorted.sort();
        assert_eq!(sorted, trace_nftables(&rs, ctx.local_addrs.clone(), &pkt, false).targets);
        // Another port of the cluster IP is rejected after routing, and an
        // unallocated address of the range dropped: on the way out, for
        // the node's own packets.
        let other = Packet::new(Protocol::Tcp, pkt.src, SockAddr::new(ip(172, 30, 0, 1), 81));
        let b = nft_branches(&rs, None, Entry::Arriving, &other, &ctx);
        assert_eq!((b.len(), b[0].refused(), b[0].target()), (1, Some(Refusal::Reject), None));
        let unallocated = Packet::new(Protocol::Tcp, SockAddr::new(node.internal_ip, 40000), SockAddr::new(ip(172, 30, 0, 200), 80));
        let b = nft_branches(&rs, None, Entry::Local, &unallocated, &ctx);
        assert_eq!(b[0].refused(), Some(Refusal::Drop));
        assert!(b[0].refused_on_output() && !b[0].confirmed());
    }

    #[test]
    fn a_model_remembers_affinity_in_its_mode() {
        let (node, mut svc, slice) = three_endpoint_objects();
        svc.spec.session_affinity = kubehops_core::api::SessionAffinity::ClientIP { timeout_seconds: 10800 };
        let pn = |rules: NodeRules, nft: Option<Ruleset>| PlannedNode {
            node: node.clone(),
            implicit: false,
            cfg: KubeProxyConfig::default(),
            rules,
            nft,
            gateway: ip(169, 254, 1, 1),
            gateway_link_scope: true,
            health_ports: Vec::new(),
        };
        let iptables = pn(sync_node(&node, std::slice::from_ref(&svc), std::slice::from_ref(&slice), &KubeProxyConfig::default()), None);
        let rs = nftables::sync_node(&node, &[svc], &[slice], &nftables::NftablesConfig::default());
        let nftables = pn(NodeRules::empty("n"), Some(rs));
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(ip(172, 30, 0, 1), 80));
        for planned in [&iptables, &nftables] {
            let mut model = NodeModel::of(planned);
            let first = model.branches(Entry::Arriving, &pkt);
            assert_eq!(first.len(), 3);
            // The kernel took the second endpoint: the client sticks to it.
            model.remember(&first[1], &pkt);
            let next: Vec<SockAddr> = model.branches(Entry::Arriving, &pkt).iter().filter_map(Branch::target).collect();
            assert_eq!(next, [first[1].target().unwrap()], "{:?}", planned.nft.is_some());
        }
    }

    #[test]
    fn the_conntrack_entry_is_the_rewrite_reversed() {
        let before = Packet::new(Protocol::Tcp, SockAddr::new(ip(198, 51, 100, 7), 51000), SockAddr::new(ip(10, 0, 0, 12), 31000));
        let after = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 12), 4242), SockAddr::new(ip(10, 244, 3, 9), 8080));
        let e = conntrack_entry(&before, &after, true);
        assert_eq!((e.original.src, e.original.dst), (before.src, before.dst));
        assert_eq!((e.reply.src, e.reply.dst), (after.dst, after.src));
    }
}
