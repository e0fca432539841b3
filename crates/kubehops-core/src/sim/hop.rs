//! Hops: one message or packet moving from one actor to the next, with
//! everything the model decided about it.
//!
//! A hop is data. What it carries ([`Payload`]), what was rewritten
//! ([`Rewrite`]), which rules matched ([`MatchedRule`]) and why a packet
//! was dropped ([`DropReason`]) are typed values; the caption and detail
//! are text written from those values for people, and nothing reads them
//! back.

// A matched rule is the data plane's (either mode writes them); hops carry them.
pub use crate::dataplane::rules::{Field, MatchedRule};
use crate::dataplane::overlay::Wrapped;
use crate::dataplane::tcp::Segment;
use crate::dns::{QType, Rcode, Response};
use crate::net::{Cidr, Packet, SockAddr};
use crate::sim::actor::{ActorId, Actors};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HopKind {
    Dns,
    Request,
    Reply,
    ControlPlane,
    Dropped,
}

/// Which way along a connection a hop goes. A reply leg retraces its
/// request leg, and is drawn beside it, not on top of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Leg {
    #[default]
    Out,
    Back,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RewriteKind {
    /// A rule's DNAT: kube-proxy's to an endpoint, Docker's to a container.
    Dnat,
    /// A rule's masquerade.
    Snat,
    /// conntrack undoing a DNAT on a reply.
    UnDnat,
    /// conntrack undoing a SNAT on a reply.
    UnSnat,
    /// A cloud balancer's own rewrite.
    Balancer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    pub kind: RewriteKind,
    pub field: Field,
    pub from: SockAddr,
    pub to: SockAddr,
}

/// What a packet carries, where the story needs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Payload {
    DnsQuery { name: String, qtype: QType },
    DnsAnswer(Response),
    HttpRequest { host: String, path: String },
    HttpResponse { status: u16, reason: String },
}

impl Payload {
    /// A one-line summary for captions: `A? api.default.svc.cluster.local`.
    pub fn summary(&self) -> String {
        match self {
            Payload::DnsQuery { name, qtype } => format!("{qtype}? {name}"),
            Payload::DnsAnswer(r) if r.rcode == Rcode::NxDomain => format!("NXDOMAIN {}", r.name),
            Payload::DnsAnswer(r) if r.answer.is_empty() => format!("no {} records for {}", r.qtype, r.name),
            Payload::DnsAnswer(r) => r.answer.iter().map(crate::dns::Record::short).collect::<Vec<_>>().join(", "),
            Payload::HttpRequest { host, path } => format!("GET {path} Host: {host}"),
            Payload::HttpResponse { status, reason } => format!("HTTP {status} {reason}"),
        }
    }
}

/// `text` ended as a sentence: with a full stop, unless it ends with one
/// already, as a fully-qualified name does (`NXDOMAIN
/// api.default.svc.cluster.local.`): a sentence ends with one stop.
pub fn ended(text: &str) -> String {
    if text.ends_with('.') {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArpOp {
    /// Broadcast: who has this address?
    Request,
    /// Unicast back: this address is at this Ethernet address.
    Reply,
}

/// An ARP message on a bridge: address resolution before the first packet
/// of a connection can leave, drawn with the DNS colour (it is a lookup,
/// of an Ethernet address for an IP address).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArpFrame {
    pub op: ArpOp,
    /// The bridge it travels on.
    pub iface: String,
    pub sender_ip: Ipv4Addr,
    pub sender_mac: crate::dataplane::docker::Mac,
    /// The address asked about (request) or the asker (reply).
    pub target_ip: Ipv4Addr,
    pub target_mac: Option<crate::dataplane::docker::Mac>,
}

impl ArpFrame {
    /// As tcpdump prints it: `Request who-has 172.18.0.50 tell 172.18.0.1`,
    /// `Reply 172.18.0.50 is-at 02:42:ac:12:00:03`.
    pub fn summary(&self) -> String {
        match self.op {
            ArpOp::Request => format!("Request who-has {} tell {}", self.target_ip, self.sender_ip),
            ArpOp::Reply => format!("Reply {} is-at {}", self.sender_ip, self.sender_mac),
        }
    }
}

/// What happened to a packet on one hop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PacketHop {
    /// As it arrived at the hop's start.
    pub before: Packet,
    /// As it travels on this hop.
    pub after: Packet,
    pub rewrites: Vec<Rewrite>,
    /// The node whose rules or conntrack decided the rewrites.
    pub decided_on: Option<ActorId>,
    pub matched: Vec<MatchedRule>,
    /// True when conntrack, not the rules, made the rewrite.
    pub by_conntrack: bool,
    /// Every endpoint the rules could have picked (when they chose).
    pub could_reach: Vec<SockAddr>,
    /// The entry of `decided_on`'s conntrack table this hop created or was
    /// rewritten by, as an index into that table's entries.
    pub conntrack_entry: Option<usize>,
    pub payload: Option<Payload>,
    /// Set when the Pod network carries this hop's packet (`after`) inside
    /// another one: a VXLAN overlay between two nodes.
    #[serde(default)]
    pub tunnel: Option<Tunnel>,
    /// The TCP segment this packet is, when the story follows a connection
    /// packet by packet (`handshake=1`): its flags, whether it carries
    /// data, and which way it goes (original: from the client). `None`:
    /// the packet stands for the whole connection's way there or back.
    #[serde(default)]
    pub segment: Option<Segment>,
}

impl PacketHop {
    /// A packet that travels unchanged, decided by no rule.
    pub fn plain(p: Packet, payload: Option<Payload>) -> PacketHop {
        PacketHop { before: p, after: p, rewrites: vec![], decided_on: None, matched: vec![], by_conntrack: false, could_reach: vec![], conntrack_entry: None, payload, tunnel: None, segment: None }
    }
}

/// A hop inside another packet: the sending node's VXLAN device wraps the
/// hop's packet in outer headers between the two nodes' addresses, and the
/// receiving node's device takes it out again. The packet inside is the
/// hop's `after`, unchanged: a tunnel rewrites nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tunnel {
    /// The outer headers, the inner frame's Ethernet addresses and the
    /// packet inside, as the overlay wrapped them.
    pub wrapped: Wrapped,
    /// The VXLAN device on both nodes (`flannel.1`).
    pub device: String,
    /// The node whose device wraps the packet (the hop's start).
    pub wrapped_by: ActorId,
    /// The node whose device unwraps it (the hop's end).
    pub unwrapped_by: ActorId,
}

/// Why an address cannot be reached from where the packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unroutable {
    /// A Service's virtual range: it exists only in kube-proxy's rules on the nodes.
    ServiceRange(Cidr),
    /// The Pod network: routed between the nodes, not announced outside.
    PodNetwork(Cidr),
    /// Nothing this network knows of.
    Unknown,
}

/// Why a packet went no further: data, so tests and panels can tell one
/// reason from another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DropReason {
    /// No route from where the packet is to its destination.
    NoRoute { dst: Ipv4Addr, why: Unroutable },
    /// A node's filter table dropped (or rejected) the packet.
    Filtered { node: ActorId, rejected: bool, rule: Option<MatchedRule>, comment: Option<String> },
    /// Nothing listens on the port: the connection is refused.
    Refused { at: ActorId, port: u16 },
    /// A balancer has no listener for the address and port.
    NoListener { dst: SockAddr },
    /// A balancer has no target to send to.
    NoTargets,
    /// The client's resolver could not turn the name into an address.
    Unresolved { name: String },
    /// The walk did not end (a loop in the rules).
    TooManyHops,
    /// Nobody answered ARP for the address on the bridge it is on.
    NoNeighbour { ip: Ipv4Addr, iface: String },
    /// The answer reached the client from another address than the one it
    /// dialled (a DNAT undone nowhere on the way back): no socket of the
    /// client expects it.
    ReplyFromWrongSource { expected: SockAddr, got: SockAddr },
}

impl DropReason {
    /// A sentence for people, naming actors by their labels.
    pub fn describe(&self, actors: &Actors) -> String {
        match self {
            DropReason::NoRoute { dst, why: Unroutable::ServiceRange(r) } => {
                format!("No router outside the cluster knows {r}: {dst} exists only in kube-proxy's rules on the nodes, so the packet never arrives.")
            }
            DropReason::NoRoute { dst, why: Unroutable::PodNetwork(r) } => {
                format!("The Pod network {r} is routed between the nodes only; from here there is no route to {dst}.")
            }
            DropReason::NoRoute { dst, why: Unroutable::Unknown } => format!("No route leads to {dst} from here."),
            DropReason::Filtered { node, rejected, comment, .. } => {
                let what = if *rejected { "rejects" } else { "drops" };
                let why = comment.clone().unwrap_or_else(|| "no rule accepts it".into());
                format!("{}'s filter table {what} the packet: {why}.", actors.short(*node))
            }
            DropReason::Refused { at, port } => format!("Nothing in {} listens on port {port}; the connection is refused.", actors.short(*at)),
            DropReason::NoListener { dst } => format!("The balancer has no listener on {dst}."),
            DropReason::NoTargets => "The balancer has no healthy target to send to.".into(),
            DropReason::Unresolved { name } => format!("{name} does not resolve, so there is no address to send to."),
            DropReason::TooManyHops => "The packet went round in circles and was given up.".into(),
            DropReason::ReplyFromWrongSource { expected, got } => format!(
                "The answer arrives from {got}, but the client sent its request to {expected}: no socket of the client is connected to {got}, so its kernel answers with a reset (a UDP answer is dropped), and the client never hears back. The reply did not come back through the node whose conntrack could have undone the DNAT."
            ),
            DropReason::NoNeighbour { ip, iface } => format!(
                "Nobody on {iface} answers ARP for {ip}, so the kernel marks the neighbour FAILED and the connection fails with \"No route to host\"; the packet never leaves."
            ),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hop {
    pub from: ActorId,
    pub to: ActorId,
    pub kind: HopKind,
    pub leg: Leg,
    /// Drawn as an alternative ("what a VIP balancer would do"), not as
    /// part of the main story.
    pub what_if: bool,
    /// A short caption for the canvas.
    pub caption: String,
    /// One or two sentences for the hop list.
    pub detail: String,
    pub packet: Option<PacketHop>,
    /// Set on a dropped hop.
    pub dropped: Option<DropReason>,
    /// The connection a packet hop belongs to, numbered in the world: a
    /// connection's hops share it, whatever else happens in between.
    pub conn: Option<u32>,
    /// Set on an ARP hop (which carries no IP packet).
    #[serde(default)]
    pub arp: Option<ArpFrame>,
}

impl Hop {
    /// A control-plane message: a watch event, an API call, a cloud call.
    pub fn message(from: ActorId, to: ActorId, caption: String, detail: String) -> Hop {
        Hop { from, to, kind: HopKind::ControlPlane, leg: Leg::Out, what_if: false, caption, detail, packet: None, dropped: None, conn: None, arp: None }
    }

    /// A control-plane message that failed (a refused apply, a cloud out of addresses).
    pub fn failed_message(from: ActorId, to: ActorId, caption: String, detail: String) -> Hop {
        Hop { kind: HopKind::Dropped, ..Hop::message(from, to, caption, detail) }
    }
}

/// The TCP segments of one connection's hops, in order, each with the
/// place (`A`: however the caller finds a hop again) of its last hop: a
/// segment takes every hop from the client to where it ends, and the
/// next one starts anew. Empty for a connection not followed packet by
/// packet (`handshake=1`).
pub fn segments<'h, A: Copy>(hops: impl IntoIterator<Item = (A, &'h Hop)>) -> Vec<(Segment, A)> {
    let mut out: Vec<(Segment, A)> = Vec::new();
    for (at, hop) in hops {
        let Some(seg) = hop.packet.as_ref().and_then(|p| p.segment) else { continue };
        match out.last_mut() {
            Some((x, last)) if *x == seg => *last = at,
            _ => out.push((seg, at)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_that_ends_with_a_full_name_ends_with_one_stop() {
        assert_eq!(ended("CoreDNS answers NXDOMAIN api.default.svc.cluster.local."), "CoreDNS answers NXDOMAIN api.default.svc.cluster.local.");
        assert_eq!(ended("The resolver answers A 10.96.0.50"), "The resolver answers A 10.96.0.50.");
    }
}
