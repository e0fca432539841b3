//! What the model says about one connection, from the core's own
//! functions: every way the netfilter walk can go (one branch per
//! outcome of the `-m statistic` matches, with its probability), the
//! filter rules the connection's later packets meet, and the conntrack
//! entry the model would hold.
//!
//! Branches come from `netfilter::traverse` with scripted random draws,
//! as `netfilter::reachable_dnat_targets` tries them, and the harness
//! checks that their targets are exactly `trace`'s.

use kubehops_core::dataplane::conntrack::{ConntrackEntry, ConntrackTable, Direction};
use kubehops_core::dataplane::iptables::RuleRef;
use kubehops_core::dataplane::kubeproxy::NodeRules;
use kubehops_core::dataplane::netfilter::{traverse, walk, Dice, Entry, FixedDraws, NodeContext, Traversal, Verdict};
use kubehops_core::net::{Packet, SockAddr};

/// One way the walk can go.
#[derive(Clone, Debug)]
pub struct Branch {
    pub probability: f64,
    pub t: Traversal,
}

impl Branch {
    pub fn target(&self) -> Option<SockAddr> {
        match self.t.nat.verdict {
            Verdict::Dnat(a) => Some(a),
            _ => None,
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

/// Every branch of a new connection's first packet through a node, the
/// all-matches-succeed branch (the one `trace` follows) first.
pub fn branches(rules: &NodeRules, entry: Entry, pkt: &Packet, ctx: &NodeContext) -> Vec<Branch> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<bool>> = vec![Vec::new()];
    while let Some(prefix) = todo.pop() {
        if out.len() >= MAX_BRANCHES {
            break;
        }
        let fixed = prefix.len();
        let mut dice = Scripted { script: prefix, asked: Vec::new() };
        let t = traverse(&rules.filter, &rules.nat, entry, pkt, ctx, &mut dice);
        let probability = dice.asked.iter().zip(&dice.script).map(|(p, took)| if *took { *p } else { 1.0 - p }).product();
        // Each free choice could have gone the other way; the deepest
        // alternative is tried last, so the first branch stays first.
        for j in (fixed..dice.asked.len()).rev() {
            let mut alt = dice.script[..j].to_vec();
            alt.push(false);
            todo.push(alt);
        }
        out.push(Branch { probability, t });
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
        let rules = sync_node(&node, &[svc], &[slice], &KubeProxyConfig::default());
        (node, rules)
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
    fn the_conntrack_entry_is_the_rewrite_reversed() {
        let before = Packet::new(Protocol::Tcp, SockAddr::new(ip(198, 51, 100, 7), 51000), SockAddr::new(ip(10, 0, 0, 12), 31000));
        let after = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 12), 4242), SockAddr::new(ip(10, 244, 3, 9), 8080));
        let e = conntrack_entry(&before, &after, true);
        assert_eq!((e.original.src, e.original.dst), (before.src, before.dst));
        assert_eq!((e.reply.src, e.reply.dst), (after.dst, after.src));
    }
}
