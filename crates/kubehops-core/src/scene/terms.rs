//! Which glossary terms a hop, a step and a scenario use, worked out from
//! the model's typed data: the rewrites a hop made, what each matched rule
//! was written for and the kind of chain (or map) it sits in, the
//! conntrack entry, the TCP segment, the tunnel, why a packet was dropped,
//! and the kinds of actor a hop goes between. Nothing here reads a
//! caption, a detail, a narration or a rule's text.
//!
//! Terms come in the order they first appear: a hop's in the order the
//! packet met them (the actors, then the rules walked, the rewrites, the
//! conntrack entry, the way between nodes), a step's hop after hop.

use crate::dataplane::rules::{ChainKind, Field, Purpose, RuleTable};
use crate::glossary::Term;
use crate::scenarios::{Scenario, Step};
use crate::sim::{ActorId, ActorKind, DropReason, Hop, MatchedRule, RewriteKind, Unroutable};

/// Terms in first-appearance order, each once.
#[derive(Default)]
struct Terms(Vec<Term>);

impl Terms {
    fn add(&mut self, t: Term) {
        if !self.0.contains(&t) {
            self.0.push(t);
        }
    }

    fn extend(&mut self, ts: impl IntoIterator<Item = Term>) {
        for t in ts {
            self.add(t);
        }
    }
}

fn kind(s: &Scenario, a: ActorId) -> Option<ActorKind> {
    s.actor(a).map(|x| x.kind)
}

/// The cluster machine an actor is or runs on: a node, or a Pod's node.
fn machine(s: &Scenario, a: ActorId) -> Option<ActorId> {
    let x = s.actor(a)?;
    match x.kind {
        ActorKind::Node => Some(a),
        k if k.is_pod() => x.parent,
        _ => None,
    }
}

/// The terms an actor's own kind brings, wherever a hop starts or ends.
fn actor_terms(k: ActorKind, out: &mut Terms) {
    match k {
        ActorKind::CoreDns => out.add(Term::CoreDns),
        ActorKind::ApiServer => out.add(Term::ApiServer),
        ActorKind::Controller => out.add(Term::Controller),
        ActorKind::LoadBalancer => out.add(Term::LoadBalancer),
        ActorKind::Speaker => out.add(Term::MetalLb),
        ActorKind::Gateway => out.add(Term::Gateway),
        ActorKind::Laptop | ActorKind::OutsideHost | ActorKind::Resolver | ActorKind::Node | ActorKind::Pod => {}
    }
}

/// The terms one matched rule (or map element) stands for: what
/// kube-proxy wrote it for, and the chain it sits in, named in the mode
/// whose table holds it.
fn rule_terms(m: &MatchedRule, out: &mut Terms) {
    let nft = m.table == RuleTable::KubeProxy;
    if m.owner.is_some() {
        out.add(Term::KubeProxy);
    }
    match m.chain {
        ChainKind::Services | ChainKind::NodePorts if !nft => out.add(Term::KubeServices),
        ChainKind::Service | ChainKind::ServiceLocal => out.add(if nft { Term::NftServiceChain } else { Term::KubeSvc }),
        ChainKind::External => out.add(if nft { Term::NftExternalChain } else { Term::KubeExt }),
        ChainKind::Endpoint => out.add(if nft { Term::NftEndpointChain } else { Term::KubeSep }),
        ChainKind::Firewall => out.add(Term::SourceRanges),
        ChainKind::MarkMasquerade => out.add(Term::Masquerade),
        // Every packet passes KUBE-POSTROUTING; only its MASQUERADE
        // rule masquerades.
        ChainKind::Masquerading if m.rewrites == Some(Field::Source) => out.add(Term::Masquerade),
        ChainKind::VerdictMap => out.extend([Term::VerdictMap, Term::Concatenation]),
        ChainKind::Services | ChainKind::NodePorts | ChainKind::Masquerading | ChainKind::Set | ChainKind::Other => {}
    }
    match m.purpose {
        Some(Purpose::ClusterIp) => out.add(Term::ClusterIp),
        Some(Purpose::NodePort | Purpose::HealthCheckNodePort) => out.add(Term::NodePort),
        // kube-proxy writes rules for a balancer's address only when its
        // ipMode is VIP: a packet that meets one came addressed to it.
        Some(Purpose::LoadBalancerIp) => out.extend([Term::LoadBalancer, Term::IpModeVip]),
        Some(Purpose::ExternalIp) => out.add(Term::ExternalIp),
        Some(Purpose::EndpointPick | Purpose::EndpointDnat) => out.add(Term::Endpoint),
        Some(Purpose::MarkMasquerade) => out.add(Term::Masquerade),
        Some(Purpose::NoEndpoints) => out.extend([Term::Reject, Term::Endpoint]),
        Some(Purpose::NoLocalEndpoints) => out.add(Term::ExternalTrafficPolicy),
        Some(Purpose::SourceRangeDrop) => out.add(Term::SourceRanges),
        None => {}
    }
    if m.chain == ChainKind::ServiceLocal {
        out.add(Term::ExternalTrafficPolicy);
    }
}

fn hop_terms_into(s: &Scenario, h: &Hop, out: &mut Terms) {
    let (from, to) = (kind(s, h.from), kind(s, h.to));
    for k in [from, to].into_iter().flatten() {
        actor_terms(k, out);
    }
    if h.packet.is_none() && h.arp.is_none() {
        // A control-plane message: kube-proxy's watch reaching a node,
        // the kubelet's readiness report leaving one.
        match (from, to) {
            (Some(ActorKind::ApiServer), Some(ActorKind::Node)) => out.extend([Term::KubeProxy, Term::Endpoint]),
            (Some(ActorKind::Node), Some(ActorKind::ApiServer)) => out.extend([Term::Readiness, Term::Endpoint]),
            _ => {}
        }
    }
    if h.arp.is_some() {
        out.add(Term::Arp);
    }
    if let Some(p) = &h.packet {
        if p.segment.is_some() {
            out.add(Term::TcpHandshake);
        }
        if !p.by_conntrack && p.matched.iter().any(|m| m.owner.is_some()) {
            out.add(Term::NetfilterHooks);
        }
        for m in &p.matched {
            rule_terms(m, out);
        }
        for r in &p.rewrites {
            match r.kind {
                RewriteKind::Dnat => out.add(Term::Dnat),
                RewriteKind::Snat => out.extend([Term::Snat, Term::Masquerade]),
                RewriteKind::UnDnat | RewriteKind::UnSnat => out.add(Term::ReverseNat),
                RewriteKind::Balancer => out.add(Term::LoadBalancer),
            }
        }
        if p.conntrack_entry.is_some() || p.by_conntrack {
            out.add(Term::Conntrack);
            // A later packet moves the entry's state: the handshake's, or
            // the answer that makes it ESTABLISHED and [ASSURED].
            if p.segment.is_some() || p.by_conntrack {
                out.add(Term::ConntrackStates);
            }
        }
        let crosses = matches!((machine(s, h.from), machine(s, h.to)), (Some(a), Some(b)) if a != b);
        if crosses || p.tunnel.is_some() {
            out.add(Term::PodNetwork);
        }
        if p.tunnel.is_some() {
            out.add(Term::Vxlan);
        }
    }
    match &h.dropped {
        Some(DropReason::NoRoute { why: Unroutable::ServiceRange(_), .. }) => out.add(Term::ClusterIp),
        Some(DropReason::NoRoute { why: Unroutable::PodNetwork(_), .. }) => out.add(Term::PodNetwork),
        Some(DropReason::Filtered { rule: Some(m), .. }) => rule_terms(m, out),
        Some(DropReason::NoNeighbour { .. }) => out.add(Term::Arp),
        Some(DropReason::ReplyFromWrongSource { .. }) => out.extend([Term::Dnat, Term::ReverseNat]),
        _ => {}
    }
}

/// The terms hop `h` of scenario `s` uses, in the order they appear.
pub fn hop_terms(s: &Scenario, h: &Hop) -> Vec<Term> {
    let mut out = Terms::default();
    hop_terms_into(s, h, &mut out);
    out.0
}

/// The terms a step uses: its hops', each once, in the order they first
/// appear.
pub fn step_terms(s: &Scenario, st: &Step) -> Vec<Term> {
    let mut out = Terms::default();
    for h in &st.hops {
        hop_terms_into(s, h, &mut out);
    }
    out.0
}

/// The terms the whole scenario uses, step after step.
pub fn scenario_terms(s: &Scenario) -> Vec<Term> {
    let mut out = Terms::default();
    for st in &s.steps {
        out.extend(step_terms(s, st));
    }
    out.0
}
