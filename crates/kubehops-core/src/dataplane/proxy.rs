//! One node's packet rules, whichever mode its kube-proxy runs, behind one
//! interface: what the simulator asks of a node ([`NodeTables::decide`]
//! for a connection's first packet) and what the views show
//! ([`NodeTables::service_lines`], [`NodeTables::summarise`]), in the
//! mode-neutral shapes of [`crate::dataplane::rules`].
//!
//! A node holds iptables tables in both modes: in iptables mode they hold
//! kube-proxy's rules and the network plugin's masquerade; in nftables
//! mode only the network plugin's, beside kube-proxy's `ip kube-proxy`
//! table. This module is the one place that knows both modes; the layers
//! above ask it and print the mode's name, nothing more.
//!
//! In nftables mode the two rule sets share hooks: kube-proxy's table
//! decides DNAT and refusals; the network plugin's nat POSTROUTING
//! masquerades what kube-proxy's did not (both run at srcnat priority,
//! and the first chain to set up a connection's source NAT wins).

use crate::api::{EndpointSlice, Node, Service};
use crate::dataplane::cni::{egress_masquerade_by, MasqAgent};
use crate::dataplane::iptables::Target;
use crate::dataplane::kubeproxy::{self, KubeProxyConfig, NodeRules, ProxyMode};
use crate::dataplane::netfilter::{self, NodeContext, Verdict};
use crate::dataplane::nftables::{self, NftablesConfig, Outcome, Ruleset};
use crate::dataplane::path::{Dice, Entry};
use crate::dataplane::rules::{Lookup, MatchedRule, RuleLine, RuleSummary};
use crate::net::{Cidr, Packet, SockAddr};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The network plugin's egress masquerade, when the story has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EgressMasquerade {
    pub pods: Cidr,
    pub agent: MasqAgent,
}

/// One node's rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeTables {
    /// iptables' filter and nat: kube-proxy's in iptables mode, and the
    /// network plugin's in either mode.
    pub iptables: NodeRules,
    /// kube-proxy's table in nftables mode.
    pub nftables: Option<Ruleset>,
}

/// Why a node refused a packet: the verdict and the rule that gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub rejected: bool,
    pub rule: Option<MatchedRule>,
    /// The rule's comment, where it has one.
    pub comment: Option<String>,
}

/// What a node's rules did with a connection's first packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The packet after DNAT; its source is not masqueraded yet.
    pub routed: Packet,
    pub dnat: Option<SockAddr>,
    /// Every endpoint the random picks could have led to (with a DNAT).
    pub could_reach: Vec<SockAddr>,
    pub refused: Option<Refusal>,
    /// Masqueraded, and whether the source port is drawn at random
    /// (`--random-fully`, `masquerade fully-random`).
    pub masquerade: Option<bool>,
    /// Every rule (and map element) that matched, in order.
    pub matched: Vec<MatchedRule>,
    /// The verdict-map look-ups that sent it on (nftables mode).
    pub lookups: Vec<Lookup>,
}

impl NodeTables {
    /// No rules (a node whose kube-proxy has not synced).
    pub fn empty(node: &str) -> NodeTables {
        NodeTables { iptables: NodeRules::empty(node), nftables: None }
    }

    /// The rules `node` holds after its kube-proxy (in `cfg.mode`) and the
    /// network plugin synced. `service_cidr` is the API server's Service
    /// range (nftables mode drops traffic to its unallocated addresses).
    pub fn sync(node: &Node, services: &[Service], slices: &[EndpointSlice], cfg: &KubeProxyConfig, service_cidr: Option<Cidr>, masq: Option<EgressMasquerade>) -> NodeTables {
        let (mut iptables, nftables) = match cfg.mode {
            ProxyMode::Iptables => (kubeproxy::sync_node(node, services, slices, cfg), None),
            ProxyMode::Nftables => {
                let nft = NftablesConfig { service_cidrs: service_cidr.into_iter().collect(), ..NftablesConfig::for_node(cfg.clone(), node) };
                (NodeRules::empty(&node.name), Some(nftables::sync_node(node, services, slices, &nft)))
            }
        };
        if let Some(m) = masq {
            egress_masquerade_by(&mut iptables.nat, m.pods, m.agent, cfg.node_features.random_fully);
        }
        NodeTables { iptables, nftables }
    }

    pub fn mode(&self) -> ProxyMode {
        if self.nftables.is_some() { ProxyMode::Nftables } else { ProxyMode::Iptables }
    }

    /// Runs a connection's first packet through the node's rules.
    pub fn decide(&self, entry: Entry, pkt: &Packet, local: Vec<Ipv4Addr>, dice: &mut dyn Dice) -> Decision {
        match &self.nftables {
            None => self.decide_iptables(entry, pkt, local, dice),
            Some(rs) => self.decide_nftables(rs, entry, pkt, local, dice),
        }
    }

    fn decide_iptables(&self, entry: Entry, pkt: &Packet, local: Vec<Ipv4Addr>, dice: &mut dyn Dice) -> Decision {
        let rules = &self.iptables;
        let ctx = NodeContext::new(local);
        let t = netfilter::traverse(&rules.filter, &rules.nat, entry, pkt, &ctx, dice);
        let shown = |r: &crate::dataplane::iptables::RuleRef| {
            let rule = rules.rule(r)?;
            Some(MatchedRule { table: r.table.into(), line: rules.line_of(r)?, text: rule.render(&r.chain), purpose: rule.purpose, owner: rule.owner.clone(), rewrites: rule.target.rewrites(), chain: kubeproxy::chain_kind(&r.chain) })
        };
        let matched: Vec<MatchedRule> = t.matched().filter_map(shown).collect();
        let refused = t.refused().map(|v| {
            let last = t.refusing_rule();
            Refusal { rejected: *v == Verdict::Reject, rule: last.and_then(shown), comment: last.and_then(|r| rules.rule(r)).and_then(|r| r.comment().map(str::to_string)) }
        });
        let dnat = if let Verdict::Dnat(to) = t.nat.verdict { Some(to) } else { None };
        let could_reach = match dnat {
            Some(_) => netfilter::reachable_dnat_targets(&rules.nat, if entry == Entry::Local { "OUTPUT" } else { "PREROUTING" }, pkt, &ctx),
            None => Vec::new(),
        };
        let masquerade = t.masquerade_rule().map(|r| rules.rule(r).is_some_and(|r| matches!(r.target, Target::Masquerade { random_fully: true })));
        Decision { routed: t.routed, dnat, could_reach, refused, masquerade, matched, lookups: Vec::new() }
    }

    fn decide_nftables(&self, rs: &Ruleset, entry: Entry, pkt: &Packet, local: Vec<Ipv4Addr>, dice: &mut dyn Dice) -> Decision {
        let ctx = nftables::Context::new(local.clone());
        let t = nftables::traverse(rs, entry, pkt, &ctx, dice);
        let mut matched: Vec<MatchedRule> = t.hits().flat_map(|h| rs.matched(h)).collect();
        let refusal = |outcome: Outcome| {
            let rule = t.refusing_hit().and_then(|h| rs.matched(h).into_iter().next());
            let comment = t.refusing_hit().and_then(|h| rs.chain(&h.chain)?.rules.get(h.rule)?.comment.clone());
            Refusal { rejected: outcome == Outcome::Reject, rule, comment }
        };
        let dnat = t.dnat();
        let could_reach = if dnat.is_some() { nftables::reachable(rs, entry, pkt, &ctx).0 } else { Vec::new() };
        let mut masquerade = t.masquerade().then_some(true);
        let mut refused = t.refused().map(refusal);
        if refused.is_none() && masquerade.is_none() {
            // The network plugin's iptables rules see the packet as
            // kube-proxy's DNAT left it; had kube-proxy masqueraded it,
            // its nat chain would not be consulted (the connection's
            // source NAT is set), and the plugin writes no filter rules.
            let plugin = self.decide_iptables(entry, &t.routed, local, dice);
            matched.extend(plugin.matched);
            refused = plugin.refused;
            masquerade = plugin.masquerade;
        }
        let lookups = t.hits().filter_map(|h| rs.lookup(h)).collect();
        Decision { routed: t.routed, dnat, could_reach, refused, masquerade, matched, lookups }
    }

    /// Service `namespace/name`'s lines in kube-proxy's rules.
    pub fn service_lines(&self, namespace: &str, name: &str) -> Vec<RuleLine> {
        match &self.nftables {
            Some(rs) => rs.service_lines(namespace, name),
            None => self.iptables.service_rule_lines(namespace, name),
        }
    }

    /// What kube-proxy's rules do for Service `namespace/name`, for a card.
    pub fn summarise(&self, namespace: &str, name: &str) -> Vec<RuleSummary> {
        match &self.nftables {
            Some(rs) => rs.summarise(namespace, name),
            None => kubeproxy::summarise(&self.iptables, namespace, name),
        }
    }

    /// Whether kube-proxy wrote rules for service port `owner` (`ns/name:port`).
    pub fn has_port(&self, owner: &str) -> bool {
        match &self.nftables {
            Some(rs) => rs.services.iter().any(|s| s.port_name == owner),
            None => self.iptables.services.iter().any(|s| s.port_name == owner),
        }
    }

    /// The chains a packet to the Service takes before its endpoint is
    /// picked: the external chain when it came from outside, then the
    /// Service's own.
    pub fn port_chains(&self, namespace: &str, name: &str, external: bool) -> Vec<String> {
        match &self.nftables {
            Some(rs) => rs.port_chains(namespace, name, external),
            None => {
                let Some(sp) = self.iptables.services.iter().find(|sp| sp.is_port_of(namespace, name)) else { return Vec::new() };
                sp.ext_chain.iter().filter(|_| external).cloned().chain(std::iter::once(sp.svc_chain.clone())).collect()
            }
        }
    }

    /// How many rule lines were added and removed from `self` to `next`.
    pub fn changes(&self, next: &NodeTables) -> (usize, usize) {
        let lines = |t: &NodeTables| -> std::collections::BTreeSet<String> {
            let mut l: std::collections::BTreeSet<String> = t.iptables.nat.save().into_iter().chain(t.iptables.filter.save()).filter(|l| l.starts_with("-A")).collect();
            if let Some(rs) = &t.nftables {
                l.extend(rs.transaction().into_iter().filter(|l| l.starts_with("add rule") || l.starts_with("add element")));
            }
            l
        };
        let (before, after) = (lines(self), lines(next));
        (after.difference(&before).count(), before.difference(&after).count())
    }
}
