//! The packet path: one connection, hop by hop, from a client actor to a
//! server and back.
//!
//! Each actor kind handles a packet its own way: a host outside hands it
//! to the outside network, a Pod to its node over its veth, a balancer to
//! a node, a node to its conntrack table or its rules and then to its
//! routing table. A server turns the packet into a reply, and the reply
//! walks back the same way until it reaches the client.
//!
//! Architecture Invariant: a packet is rewritten only here, and only by
//! [`traverse`] over the node's rules, by the node's conntrack entry, or by
//! a balancer (whose rewrite is its own, recorded as `RewriteKind::Balancer`).

use super::hop::{ended, DropReason, Field, Hop, HopKind, Leg, PacketHop, Payload, Rewrite, RewriteKind, Tunnel, Unroutable};
use super::{ActorId, ActorKind, World};
use crate::controllers::cloud::{Delivery, LbFlow, LbState};
use crate::dataplane::conntrack::{ConntrackTable, Direction};
use crate::dataplane::netfilter::{Dice, Entry};
use crate::dataplane::overlay::{self, PodNetwork};
use crate::dataplane::tcp::{Dir, Segment, TcpFlags, TcpTimeouts};
use crate::dataplane::trace::node_addresses;
use crate::dns::{ClusterDns, DnsConfig, QType, RData, Rcode, Response};
use crate::net::{Packet, Protocol, SockAddr};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The most hops one connection may take before it is given up.
const MAX_HOPS: usize = 48;
/// How deep a server may open connections of its own while answering
/// (CoreDNS asking upstream).
pub(super) const MAX_NESTING: u8 = 2;

/// One connection to open: who opens it, to where, carrying what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dial {
    pub from: ActorId,
    pub dst: SockAddr,
    pub proto: Protocol,
    pub payload: Option<Payload>,
    /// Which of a balancer's targets it sends the connection to.
    pub lb_target: usize,
    /// How a balancer hands the connection to the node.
    pub delivery: Delivery,
}

impl Dial {
    pub fn tcp(from: ActorId, dst: SockAddr) -> Dial {
        Dial { from, dst, proto: Protocol::Tcp, payload: None, lb_target: 0, delivery: Delivery::NodePort }
    }

    /// An HTTP GET with a Host header, as curl sends it.
    pub fn http(from: ActorId, dst: SockAddr, host: &str) -> Dial {
        Dial { payload: Some(Payload::HttpRequest { host: host.into(), path: "/".into() }), ..Dial::tcp(from, dst) }
    }

    pub fn dns(from: ActorId, server: SockAddr, name: &str, qtype: QType) -> Dial {
        Dial { proto: Protocol::Udp, payload: Some(Payload::DnsQuery { name: name.into(), qtype }), ..Dial::tcp(from, server) }
    }
}

/// How a connection ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// The reply reached the client, from `server` as the client sees it.
    Answered { server: SockAddr, payload: Option<Payload> },
    Dropped { at: ActorId, reason: DropReason },
}

pub(super) enum Step {
    /// The packet moves on to `to`.
    Next { to: ActorId, packet: PacketHop, caption: String, detail: String },
    /// The reply is back at the client's machine, and its conntrack
    /// rewrites it once more on the way to the client's socket: a last
    /// hop from the machine to itself.
    Deliver { packet: PacketHop, caption: String, detail: String },
    /// This actor is the server; its answer leaves for `to`.
    Answer { to: ActorId, packet: PacketHop, caption: String, detail: String },
    /// The reply is back at the client.
    Arrived,
    /// The server's kernel took a segment that needs no answer (an ACK).
    Taken,
    Drop(DropReason),
}

/// Where a walk starts: at the client, or at the server, which sends a
/// packet of its own (its FIN) with `to` as the first hop, as its answers
/// went.
#[derive(Clone, Copy)]
enum Start {
    Client,
    Server { at: ActorId, to: ActorId },
}

/// The server of a connection as its answer showed it: who answered,
/// the first hop of the answer, and the packet it answered with.
#[derive(Clone, Copy)]
struct Served {
    at: ActorId,
    to: ActorId,
    sent: Packet,
}

/// How one walk ended, and the server, if one answered.
struct Walked {
    outcome: Outcome,
    server: Option<Served>,
}

impl Walked {
    fn answered(&self) -> bool {
        matches!(self.outcome, Outcome::Answered { .. })
    }
}

/// What a conntrack entry did to a packet going `dir`: on a reply it
/// undoes the NAT (the source's DNAT, the destination's SNAT); on a later
/// packet of the original direction it applies the same NAT again.
pub(super) fn conntrack_rewrites(before: &Packet, after: &Packet, dir: Direction) -> Vec<Rewrite> {
    let reply = dir == Direction::Reply;
    let mut out = Vec::new();
    if after.src != before.src {
        let kind = if reply { RewriteKind::UnDnat } else { RewriteKind::Snat };
        out.push(Rewrite { kind, field: Field::Source, from: before.src, to: after.src });
    }
    if after.dst != before.dst {
        let kind = if reply { RewriteKind::UnSnat } else { RewriteKind::Dnat };
        out.push(Rewrite { kind, field: Field::Destination, from: before.dst, to: after.dst });
    }
    out
}

/// A conntrack direction as the TCP tracker names it.
pub(super) fn entry_dir(dir: Direction) -> Dir {
    match dir {
        Direction::Original => Dir::Original,
        Direction::Reply => Dir::Reply,
    }
}

/// The segment that answers `seg`: SYN-ACK for a SYN, data for data, an
/// ACK for anything else (a FIN); going the other way.
fn answer_to(seg: Segment) -> Segment {
    let dir = seg.dir.other();
    if seg.data {
        Segment::data(dir)
    } else if seg.flags.syn {
        Segment::new(dir, TcpFlags::SYN_ACK)
    } else {
        Segment::new(dir, TcpFlags::ACK)
    }
}

pub(super) fn next(to: ActorId, packet: PacketHop, caption: String, detail: String) -> Step {
    Step::Next { to, packet, caption, detail }
}

fn hop_kind(payload: &Option<Payload>, leg: Leg) -> HopKind {
    match (payload, leg) {
        (Some(Payload::DnsQuery { .. } | Payload::DnsAnswer(_)), _) => HopKind::Dns,
        (_, Leg::Out) => HopKind::Request,
        (_, Leg::Back) => HopKind::Reply,
    }
}

pub(super) fn packet_text(p: &Packet) -> String {
    format!("{} → {}", p.src, p.dst)
}

impl World {
    /// Opens one connection and walks it to its end. Random rule matches
    /// are decided by `dice`. With [`World::handshake`], a TCP connection
    /// the story opens (not one a server opens while answering) is
    /// followed packet by packet ([`World::dial_handshake`]).
    pub fn dial(&mut self, d: Dial, dice: &mut dyn Dice) -> Outcome {
        let client = d.from;
        let Some(client_ip) = self.host_of(client).and_then(|h| self.hosts[h].source_for(d.dst.ip)).or_else(|| self.actors.get(client).and_then(|a| a.ip)) else {
            return Outcome::Dropped { at: client, reason: DropReason::NoRoute { dst: d.dst.ip, why: Unroutable::Unknown } };
        };
        let conn = Some(u32::from(self.next_client_port));
        let src = SockAddr::new(client_ip, self.next_client_port);
        self.next_client_port = self.next_client_port.wrapping_add(1).max(1024);
        let pkt = Packet::new(d.proto, src, d.dst);
        if self.handshake && d.proto == Protocol::Tcp && self.nesting == 0 {
            return self.dial_handshake(&d, pkt, conn, dice);
        }
        self.walk(&d, Start::Client, pkt, d.payload.clone(), None, conn, dice).outcome
    }

    /// A TCP connection packet by packet: the SYN walks the rules as any
    /// first packet does, and the SYN-ACK comes back; then the ACK, the
    /// request and its response, the client's FIN and the server's ACK,
    /// the server's FIN and the client's ACK each follow the conntrack
    /// entries the SYN made. The connection's outcome is the request's.
    fn dial_handshake(&mut self, d: &Dial, pkt: Packet, conn: Option<u32>, dice: &mut dyn Dice) -> Outcome {
        let from_client = |flags| Some(Segment::new(Dir::Original, flags));
        let syn = self.walk(d, Start::Client, pkt, None, from_client(TcpFlags::SYN), conn, dice);
        if !syn.answered() {
            return syn.outcome;
        }
        let ack = self.walk(d, Start::Client, pkt, None, from_client(TcpFlags::ACK), conn, dice);
        if !ack.answered() {
            return ack.outcome;
        }
        let request = self.walk(d, Start::Client, pkt, d.payload.clone(), Some(Segment::data(Dir::Original)), conn, dice);
        let (true, Some(server)) = (request.answered(), request.server) else { return request.outcome };
        let fin = self.walk(d, Start::Client, pkt, None, from_client(TcpFlags::FIN_ACK), conn, dice);
        if !fin.answered() {
            return fin.outcome;
        }
        let start = Start::Server { at: server.at, to: server.to };
        let server_fin = self.walk(d, start, server.sent, None, Some(Segment::new(Dir::Reply, TcpFlags::FIN_ACK)), conn, dice);
        if !server_fin.answered() {
            return server_fin.outcome;
        }
        let last = self.walk(d, Start::Client, pkt, None, from_client(TcpFlags::ACK), conn, dice);
        if !last.answered() {
            return last.outcome;
        }
        request.outcome
    }

    /// Walks one packet from `start` to its end: to the server and, if it
    /// answers, back to the client. `seg` is the TCP segment it is, when
    /// the connection is followed packet by packet.
    #[allow(clippy::too_many_arguments)]
    fn walk(&mut self, d: &Dial, start: Start, first: Packet, payload: Option<Payload>, seg: Option<Segment>, conn: Option<u32>, dice: &mut dyn Dice) -> Walked {
        let client = d.from;
        let mut pkt = first;
        let mut payload = payload;
        let (mut at, mut leg) = match start {
            Start::Client => (client, Leg::Out),
            Start::Server { at, .. } => (at, Leg::Back),
        };
        // A walk may run inside another's (a proxy's own connection, while
        // it answers): the outer walk's segment comes back after it.
        let outer = std::mem::replace(&mut self.segment, seg);
        let mut server = None;
        let out = 'walk: {
            for i in 0..MAX_HOPS {
                let step = match (i, start) {
                    (0, Start::Client) => self.originate(client, &pkt, &payload, dice),
                    (0, Start::Server { to, .. }) => {
                        let (caption, detail) = self.server_sends(at, &pkt);
                        Step::Next { to, packet: PacketHop::plain(pkt, None), caption, detail }
                    }
                    _ => self.arrive(at, client, leg, &pkt, &payload, d, dice),
                };
                match step {
                    Step::Next { to, mut packet, caption, mut detail } => {
                        self.through_pod_network(at, to, &mut packet, &mut detail);
                        packet.segment = self.segment;
                        (pkt, payload) = (packet.after, packet.payload.clone());
                        self.push(Hop { from: at, to, kind: hop_kind(&payload, leg), leg, what_if: false, caption, detail, packet: Some(packet), dropped: None, conn, arp: None });
                        at = to;
                    }
                    Step::Answer { to, mut packet, caption, mut detail } => {
                        self.through_pod_network(at, to, &mut packet, &mut detail);
                        leg = Leg::Back;
                        self.segment = self.segment.map(answer_to);
                        packet.segment = self.segment;
                        server = Some(Served { at, to, sent: packet.before });
                        (pkt, payload) = (packet.after, packet.payload.clone());
                        self.push(Hop { from: at, to, kind: hop_kind(&payload, leg), leg, what_if: false, caption, detail, packet: Some(packet), dropped: None, conn, arp: None });
                        at = to;
                    }
                    Step::Taken => break 'walk Outcome::Answered { server: pkt.dst, payload: None },
                    Step::Deliver { mut packet, caption, detail } => {
                        packet.segment = self.segment;
                        (pkt, payload) = (packet.after, packet.payload.clone());
                        self.push(Hop { from: at, to: at, kind: hop_kind(&payload, leg), leg, what_if: false, caption, detail, packet: Some(packet), dropped: None, conn, arp: None });
                        if pkt.src != d.dst {
                            break 'walk self.wrong_source(at, leg, conn, d.dst, pkt, payload);
                        }
                        break 'walk Outcome::Answered { server: pkt.src, payload };
                    }
                    Step::Arrived if pkt.src != d.dst => break 'walk self.wrong_source(at, leg, conn, d.dst, pkt, payload),
                    Step::Arrived => {
                        // A host's conntrack saw the reply arrive: the view after
                        // the last hop shows that.
                        if self.host_of(client).is_some() {
                            let v = self.view();
                            if let Some(last) = self.trace.last_mut() {
                                last.1 = v;
                            }
                        }
                        break 'walk Outcome::Answered { server: pkt.src, payload };
                    }
                    Step::Drop(reason) => {
                        let detail = reason.describe(&self.actors);
                        let mut packet = PacketHop::plain(pkt, payload);
                        packet.segment = self.segment;
                        let hop = Hop { from: at, to: at, kind: HopKind::Dropped, leg, what_if: false, caption: "dropped".into(), detail, packet: Some(packet), dropped: Some(reason.clone()), conn, arp: None };
                        self.push(hop);
                        break 'walk Outcome::Dropped { at, reason };
                    }
                }
            }
            Outcome::Dropped { at, reason: DropReason::TooManyHops }
        };
        self.segment = outer;
        Walked { outcome: out, server }
    }

    /// The caption and detail of a packet a server sends of its own accord
    /// (its FIN), to the address it has been answering.
    fn server_sends(&self, at: ActorId, pkt: &Packet) -> (String, String) {
        let what = self.segment.map_or_else(|| "packet".to_string(), |s| s.name().to_string());
        let who = self.actors.short(at).to_string();
        (format!("{what} → {}", pkt.dst), format!("{who} closes its side of the connection: its kernel sends {what} {}, to the address it has been answering.", packet_text(pkt)))
    }

    /// A TCP segment without data reaches the server: its kernel answers,
    /// not the program behind the socket. A SYN is answered by SYN-ACK
    /// when something listens on the port (else the connection is
    /// refused, as the program would refuse it); a FIN by an ACK; an ACK
    /// is taken without answer. `None`: `at` is no server this knows.
    fn tcp_stack_answers(&self, at: ActorId, pkt: &Packet, seg: Segment) -> Option<Step> {
        let a = self.actors.get(at)?;
        let to = match a.kind {
            k if k.is_pod() => {
                let pod = a.object.as_ref().and_then(|o| self.api.pods.iter().find(|p| p.namespace == o.namespace && p.name == o.name))?;
                let port = if k == ActorKind::Gateway {
                    let gw = self.gateway.gateway_of(&pod.labels)?;
                    gw.listeners.iter().map(|l| crate::controllers::gateway::container_port(l.port)).find(|p| *p == pkt.dst.port)
                } else {
                    Some(pod.container_port).filter(|p| *p == pkt.dst.port)
                };
                if pkt.dst.ip != pod.ip || port.is_none() {
                    return Some(Step::Drop(DropReason::Refused { at, port: pkt.dst.port }));
                }
                a.parent?
            }
            ActorKind::Laptop | ActorKind::OutsideHost | ActorKind::Resolver => {
                if self.internet.site(pkt.dst.ip, pkt.dst.port).is_none() && !(a.kind == ActorKind::Resolver && pkt.dst.port == 53) {
                    return Some(Step::Drop(DropReason::Refused { at, port: pkt.dst.port }));
                }
                match self.outside_route(pkt.src.ip) {
                    Ok(to) => to,
                    Err(r) => return Some(Step::Drop(r)),
                }
            }
            _ => return None,
        };
        Some(self.kernel_answer(at, to, pkt, seg))
    }

    /// The server's kernel's answer to a segment without data, sent to
    /// `to` (or none, for an ACK).
    pub(super) fn kernel_answer(&self, at: ActorId, to: ActorId, pkt: &Packet, seg: Segment) -> Step {
        let who = self.actors.short(at).to_string();
        if !seg.flags.syn && !seg.flags.fin {
            return Step::Taken;
        }
        let answer = answer_to(seg);
        let reply = pkt.reversed();
        let why = if seg.flags.syn { format!("something listens on port {}", pkt.dst.port) } else { "the client closes its side".to_string() };
        let caption = format!("{} → {}", answer.name(), reply.dst);
        let detail = format!("{who}'s kernel answers the {} with {}: {why}. It saw the packet come from {}, so it replies there.", seg.name(), answer.name(), pkt.src);
        Step::Answer { to, packet: PacketHop::plain(reply, None), caption, detail }
    }

    /// The Pod network's part in a hop from `from` to `to`. Under a VXLAN
    /// overlay, a packet from one node to another whose destination is in
    /// the receiving node's Pod range travels wrapped: the hop gets its
    /// [`Tunnel`] and its detail says who wraps it, in what, and who
    /// unwraps it; the first wrapped hop of a step (since the trace was
    /// last taken) also says what wrapping costs. The packet itself is
    /// left as the walk made it.
    fn through_pod_network(&self, from: ActorId, to: ActorId, packet: &mut PacketHop, detail: &mut String) {
        let Some(tunnel) = self.tunnel(from, to, &packet.after) else { return };
        let PodNetwork::Vxlan(cfg) = &self.pod_network else { return };
        let (here, there) = (self.actors.short(from), self.actors.short(to));
        let (o, dev) = (&tunnel.wrapped.outer, &tunnel.device);
        detail.push_str(&format!(" {dev} on {here} wraps it in VXLAN, in an outer packet {} → {} (UDP port {}, VNI {}), and {dev} on {there} unwraps it as it was sent.", o.src, o.dst, o.udp_dst, o.vni));
        let told = self.trace.iter().any(|(h, _)| h.packet.as_ref().is_some_and(|p| p.tunnel.is_some()));
        if !told {
            detail.push_str(&format!(
                " Wrapping adds {} bytes of headers (outer IPv4 {}, UDP {}, VXLAN {}, inner Ethernet {}), so {dev}'s MTU is {}, not the {} of the nodes' network.",
                overlay::ENCAP_OVERHEAD,
                overlay::OUTER_IPV4_HEADER,
                overlay::UDP_HEADER,
                overlay::VXLAN_HEADER,
                overlay::INNER_ETHERNET_HEADER,
                cfg.mtu,
                cfg.mtu + overlay::ENCAP_OVERHEAD
            ));
        }
        packet.tunnel = Some(tunnel);
    }

    /// The tunnel a packet from node actor `from` to node actor `to`
    /// travels in, if the Pod network wraps it: never on one node, never
    /// for an address outside every node's Pod range (a node's own, the
    /// laptop's), and only to the node the overlay would unwrap it at.
    fn tunnel(&self, from: ActorId, to: ActorId, pkt: &Packet) -> Option<Tunnel> {
        let PodNetwork::Vxlan(cfg) = &self.pod_network else { return None };
        let (n, m) = (self.node_index(from)?, self.node_index(to)?);
        if n == m {
            return None;
        }
        let nodes = self.overlay_nodes();
        let overlay::Delivery::Wrapped(wrapped) = self.pod_network.route(&nodes, &self.api.nodes[n].name, *pkt)? else { return None };
        let at = self.pod_network.unwrapped_at(&nodes, &wrapped)?;
        (at.name == self.api.nodes[m].name).then(|| Tunnel { wrapped, device: cfg.device.clone(), wrapped_by: from, unwrapped_by: to })
    }

    /// The answer reached the client from an address it did not dial:
    /// its kernel has no socket for it, and the connection fails there.
    fn wrong_source(&mut self, at: ActorId, leg: Leg, conn: Option<u32>, expected: SockAddr, pkt: Packet, payload: Option<Payload>) -> Outcome {
        let reason = DropReason::ReplyFromWrongSource { expected, got: pkt.src };
        let detail = reason.describe(&self.actors);
        let hop = Hop { from: at, to: at, kind: HopKind::Dropped, leg, what_if: false, caption: "dropped".into(), detail, packet: Some(PacketHop::plain(pkt, payload)), dropped: Some(reason.clone()), conn, arp: None };
        self.push(hop);
        Outcome::Dropped { at, reason }
    }

    /// The first hop: the client sends.
    fn originate(&mut self, client: ActorId, pkt: &Packet, payload: &Option<Payload>, dice: &mut dyn Dice) -> Step {
        let Some(a) = self.actors.get(client).cloned() else { return Step::Drop(DropReason::TooManyHops) };
        let what = payload.as_ref().map_or_else(|| packet_text(pkt), |p| format!("{} ({})", packet_text(pkt), p.summary()));
        // A segment without data is named by its flags.
        let flags = self.segment.filter(|s| !s.data).map(Segment::name);
        let what = flags.map_or(what.clone(), |f| format!("{f} {what}"));
        let request = flags.unwrap_or("request");
        if let Some(h) = self.host_of(client) {
            return self.at_host(h, pkt, payload, Entry::Local, dice);
        }
        match a.kind {
            ActorKind::Laptop | ActorKind::OutsideHost | ActorKind::Resolver => match self.outside_route(pkt.dst.ip) {
                Ok(to) => {
                    let caption = match payload {
                        Some(Payload::DnsQuery { name, qtype }) => format!("{qtype}? {name}"),
                        _ => format!("{request} → {}", pkt.dst),
                    };
                    next(to, PacketHop::plain(*pkt, payload.clone()), caption, format!("{} sends {what} to {}.", a.short, self.place_name(to)))
                }
                Err(r) => Step::Drop(r),
            },
            k if k.is_pod() => {
                let Some(node) = a.parent else { return Step::Drop(DropReason::NoRoute { dst: pkt.dst.ip, why: Unroutable::Unknown }) };
                let caption = match payload {
                    Some(Payload::DnsQuery { name, qtype }) => format!("{qtype}? {name}"),
                    _ => format!("{request} → {}", pkt.dst),
                };
                let detail = format!("{} sends {what}. The packet leaves the Pod through its veth and arrives at {}, its node.", a.short, self.actors.short(node));
                next(node, PacketHop::plain(*pkt, payload.clone()), caption, detail)
            }
            ActorKind::Node => match self.node_index(client) {
                Some(n) => self.at_node(n, pkt, payload, Entry::Local, dice),
                None => Step::Drop(DropReason::TooManyHops),
            },
            _ => Step::Drop(DropReason::NoRoute { dst: pkt.dst.ip, why: Unroutable::Unknown }),
        }
    }

    /// A packet arrives at `at`.
    #[allow(clippy::too_many_arguments)]
    fn arrive(&mut self, at: ActorId, client: ActorId, leg: Leg, pkt: &Packet, payload: &Option<Payload>, d: &Dial, dice: &mut dyn Dice) -> Step {
        if let Some(h) = self.host_of(at) {
            return self.host_receive(h, at == client && leg == Leg::Back, pkt, payload, dice);
        }
        let Some(kind) = self.actors.get(at).map(|a| a.kind) else { return Step::Drop(DropReason::TooManyHops) };
        if at == client && leg == Leg::Back {
            // A node that dialled: its conntrack undoes its own DNAT
            // before the reply reaches the socket.
            if let (ActorKind::Node, Some(n)) = (kind, self.node_index(at)) {
                if let Some((i, dir)) = self.conntrack[n].lookup(pkt) {
                    if let Step::Next { packet, caption, detail, .. } = self.by_conntrack_local(n, i, dir, pkt, payload) {
                        return Step::Deliver { packet, caption, detail };
                    }
                }
            }
            return Step::Arrived;
        }
        // A segment without data is the server's kernel's business, not
        // its program's (which would answer a request).
        if let Some(seg) = self.segment.filter(|s| !s.data) {
            if let Some(step) = self.tcp_stack_answers(at, pkt, seg) {
                return step;
            }
        }
        match kind {
            ActorKind::Gateway => self.serve_gateway(at, pkt, payload, dice),
            ActorKind::Laptop | ActorKind::OutsideHost | ActorKind::Resolver => self.serve_outside(at, pkt, payload),
            ActorKind::LoadBalancer => self.at_balancer(pkt, payload, d.lb_target, d.delivery),
            ActorKind::Node => match self.node_index(at) {
                Some(n) => self.at_node(n, pkt, payload, Entry::Arriving, dice),
                None => Step::Drop(DropReason::TooManyHops),
            },
            k if k.is_pod() => self.serve_pod(at, pkt, payload, dice),
            _ => Step::Drop(DropReason::NoRoute { dst: pkt.dst.ip, why: Unroutable::Unknown }),
        }
    }

    /// Where the network outside the cluster delivers a packet to `dst`.
    pub(crate) fn outside_route(&self, dst: Ipv4Addr) -> Result<ActorId, DropReason> {
        if self.internet.reaches_nodes {
            if let Some(n) = self.api.nodes.iter().position(|n| n.internal_ip == dst) {
                return Ok(self.node_actors[n]);
            }
        }
        if let Some(lb) = self.balancer_actor_at(dst) {
            return Ok(lb);
        }
        if let Some(a) = self.actors.iter().find(|a| a.ip == Some(dst) && matches!(a.kind, ActorKind::Laptop | ActorKind::OutsideHost | ActorKind::Resolver)) {
            return Ok(a.id);
        }
        let why = if self.api.config.service_cidr.contains(dst) {
            Unroutable::ServiceRange(self.api.config.service_cidr)
        } else if let Some(c) = self.proxy.cluster_cidr.filter(|c| c.contains(dst)) {
            Unroutable::PodNetwork(c)
        } else {
            Unroutable::Unknown
        };
        Err(DropReason::NoRoute { dst, why })
    }

    fn balancer_actor_at(&self, ip: Ipv4Addr) -> Option<ActorId> {
        self.lb.cloud()?.balancer_at(ip)?;
        self.first(ActorKind::LoadBalancer)
    }

    /// An outside host is the server: a resolver answers DNS, a host
    /// serves its sites.
    fn serve_outside(&mut self, at: ActorId, pkt: &Packet, payload: &Option<Payload>) -> Step {
        let Some(a) = self.actors.get(at).cloned() else { return Step::Drop(DropReason::TooManyHops) };
        let answer = match (a.kind, payload) {
            (ActorKind::Resolver, Some(Payload::DnsQuery { name, qtype })) if pkt.dst.port == 53 => Payload::DnsAnswer(self.internet.resolve(name, *qtype)),
            (_, _) => match self.internet.site(pkt.dst.ip, pkt.dst.port) {
                Some(site) => {
                    let host = match payload {
                        Some(Payload::HttpRequest { host, .. }) => host.clone(),
                        _ => String::new(),
                    };
                    if site.hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) {
                        Payload::HttpResponse { status: 200, reason: "OK".into() }
                    } else {
                        Payload::HttpResponse { status: 404, reason: "Not Found".into() }
                    }
                }
                None => return Step::Drop(DropReason::Refused { at, port: pkt.dst.port }),
            },
        };
        let reply = pkt.reversed();
        let to = match self.outside_route(reply.dst.ip) {
            Ok(to) => to,
            Err(r) => return Step::Drop(r),
        };
        let summary = answer.summary();
        let detail = match &answer {
            Payload::HttpResponse { status: 404, .. } => format!("{} answers {summary}: it serves no site called \"{}\". The reply goes back to {}.", a.short, request_host(payload), reply.dst),
            _ => format!("{} The reply goes back to {}, the address the request came from.", ended(&format!("{} answers {summary}", a.short)), reply.dst),
        };
        Step::Answer { to, packet: PacketHop::plain(reply, Some(answer)), caption: summary, detail }
    }

    /// A Pod is the server (or CoreDNS is): it answers, and the reply goes
    /// to its node.
    fn serve_pod(&mut self, at: ActorId, pkt: &Packet, payload: &Option<Payload>, dice: &mut dyn Dice) -> Step {
        let Some(a) = self.actors.get(at).cloned() else { return Step::Drop(DropReason::TooManyHops) };
        let Some(pod) = a.object.as_ref().and_then(|o| self.api.pods.iter().find(|p| p.namespace == o.namespace && p.name == o.name)).cloned() else {
            return Step::Drop(DropReason::TooManyHops);
        };
        let Some(node) = a.parent else { return Step::Drop(DropReason::TooManyHops) };
        if pkt.dst.ip != pod.ip || pkt.dst.port != pod.container_port {
            return Step::Drop(DropReason::Refused { at, port: pkt.dst.port });
        }
        let answer = match (a.kind, payload) {
            (ActorKind::CoreDns, Some(Payload::DnsQuery { name, qtype })) => Some(Payload::DnsAnswer(self.coredns_answer(at, name, *qtype, dice))),
            (_, Some(Payload::HttpRequest { .. })) => Some(Payload::HttpResponse { status: 200, reason: "OK".into() }),
            _ => None,
        };
        let reply = pkt.reversed();
        let (caption, detail) = match &answer {
            Some(p @ Payload::DnsAnswer(_)) => (p.summary(), format!("{} It saw the query come from {}, so it replies there.", ended(&format!("{} answers {}", a.short, p.summary())), pkt.src)),
            _ => (format!("reply → {}", reply.dst), format!("Pod {} answers. It saw the request come from {}, so it replies there.", pod.name, pkt.src)),
        };
        Step::Answer { to: node, packet: PacketHop::plain(reply, answer), caption, detail }
    }

    /// CoreDNS answers a name: the `kubernetes` plugin for the cluster
    /// domain, with the target of an external CNAME (and any name outside
    /// the domain) looked up upstream, as its `forward` plugin does.
    fn coredns_answer(&mut self, coredns: ActorId, name: &str, qtype: QType, dice: &mut dyn Dice) -> Response {
        let services: Vec<crate::api::Service> = self.api.services().cloned().collect();
        let dns = ClusterDns::new(DnsConfig::default(), &services, &self.api.endpoint_slices());
        let local = dns.query(name, qtype);
        let upstream_name = match &local {
            None => Some(name.to_string()),
            Some(r) if qtype == QType::A => r.answer.iter().find_map(|rec| match &rec.data {
                RData::Cname(t) if dns.query(t, QType::A).is_none() => Some(t.clone()),
                _ => None,
            }),
            Some(_) => None,
        };
        let mut resp = local.unwrap_or_else(|| Response { name: name.to_string(), qtype, rcode: Rcode::NoError, answer: vec![], additional: vec![], warnings: vec![] });
        let Some(target) = upstream_name else { return resp };
        let Some(resolver) = self.first(ActorKind::Resolver).and_then(|r| self.actors.get(r)).and_then(|r| r.ip) else { return resp };
        if self.nesting >= MAX_NESTING {
            return resp;
        }
        self.nesting += 1;
        let out = self.dial(Dial::dns(coredns, SockAddr::new(resolver, 53), &target, qtype), dice);
        self.nesting -= 1;
        if let Outcome::Answered { payload: Some(Payload::DnsAnswer(up)), .. } = out {
            if resp.answer.is_empty() {
                resp.rcode = up.rcode;
            }
            resp.answer.extend(up.answer);
        }
        resp
    }

    /// A node receives a packet: conntrack, then the nat and filter
    /// tables, then routing.
    fn at_node(&mut self, n: usize, pkt: &Packet, payload: &Option<Payload>, entry: Entry, dice: &mut dyn Dice) -> Step {
        let me = self.node_actors[n];
        self.sync_node_rules(n);
        if let Some((i, dir)) = self.conntrack[n].lookup(pkt) {
            return self.by_conntrack(n, i, dir, pkt, payload);
        }
        let node = self.api.nodes[n].clone();
        let name = self.actors.short(me).to_string();
        let local = node_addresses(&node);
        let d = self.rules[n].decide(entry, pkt, local.clone(), dice);
        if let Some(r) = d.refused {
            return Step::Drop(DropReason::Filtered { node: me, rejected: r.rejected, rule: r.rule, comment: r.comment });
        }
        let matched = d.matched;
        let mut after = d.routed;
        let mut rewrites = Vec::new();
        let could_reach = d.could_reach;
        if let Some(to) = d.dnat {
            rewrites.push(Rewrite { kind: RewriteKind::Dnat, field: Field::Destination, from: pkt.dst, to });
        }
        if entry == Entry::Arriving && local.contains(&after.dst.ip) {
            // Addressed to the node itself and not rewritten: nothing of the
            // model listens on a node.
            return Step::Drop(DropReason::Refused { at: me, port: after.dst.port });
        }
        let (to, out_addr) = match self.route(n, after.dst.ip) {
            Ok(r) => r,
            Err(e) => return Step::Drop(e),
        };
        if let Some(random_fully) = d.masquerade {
            let from = after.src;
            after.src = masquerade(&self.conntrack[n], n, pkt, &after, out_addr, random_fully);
            // A masquerade that keeps both address and port changes nothing.
            if after.src != from {
                rewrites.push(Rewrite { kind: RewriteKind::Snat, field: Field::Source, from, to: after.src });
            }
        }
        let entry_index = self.conntrack[n].insert(pkt, &after, self.clock);
        self.track_segment(n, entry_index, Direction::Original);
        let to_name = self.place_name(to);
        let walk = match d.lookups.as_slice() {
            [] => "walks its nat table".to_string(),
            looks => format!("walks its ip kube-proxy table ({})", looks.iter().map(|l| l.sentence()).collect::<Vec<_>>().join("; ")),
        };
        let (caption, detail) = node_caption(&name, &to_name, pkt, &after, &rewrites, &walk);
        let packet = PacketHop { before: *pkt, after, rewrites, decided_on: Some(me), matched, by_conntrack: false, could_reach, conntrack_entry: Some(entry_index), payload: payload.clone(), tunnel: None, segment: None };
        next(to, packet, caption, detail)
    }

    /// A packet of a known connection, rewritten from its conntrack entry.
    fn by_conntrack(&mut self, n: usize, i: usize, dir: Direction, pkt: &Packet, payload: &Option<Payload>) -> Step {
        let me = self.node_actors[n];
        let name = self.actors.short(me).to_string();
        let after = self.conntrack[n].translate(i, dir, pkt, self.clock);
        self.track_segment(n, i, dir);
        let rewrites = conntrack_rewrites(pkt, &after, dir);
        let to = match self.route(n, after.dst.ip) {
            Ok((to, _)) => to,
            Err(e) => return Step::Drop(e),
        };
        let mut detail = match (dir, rewrites.is_empty()) {
            (_, true) => format!("{name} forwards the packet unchanged; conntrack knows the connection but made no rewrite on it."),
            (Direction::Reply, false) => format!("conntrack on {name} matches the reply to its entry and undoes the NAT: the packet now runs {}.", packet_text(&after)),
            (Direction::Original, false) => format!("No rule walked: conntrack on {name} knows this connection and rewrites the packet as the rules rewrote its first one; it now runs {}.", packet_text(&after)),
        };
        let caption = match (dir, after == *pkt) {
            (_, true) => format!("forward → {}", after.dst),
            (Direction::Reply, false) => "conntrack undoes the NAT".to_string(),
            (Direction::Original, false) => "conntrack: same NAT".to_string(),
        };
        if let Some(e) = self.segment.and_then(|_| self.conntrack[n].entries.get(i)).and_then(|e| e.tcp.map(|t| (e, t))) {
            detail.push_str(&format!(" The entry is now {}{}.", e.1.state.name(), if e.1.assured { " [ASSURED]" } else { "" }));
        }
        let packet = PacketHop { before: *pkt, after, rewrites, decided_on: Some(me), matched: vec![], by_conntrack: true, could_reach: vec![], conntrack_entry: Some(i), payload: payload.clone(), tunnel: None, segment: None };
        next(to, packet, caption, detail)
    }

    /// A reply to the node's own connection, rewritten from its conntrack
    /// entry: the same as [`World::by_conntrack`], but it stays on the node.
    fn by_conntrack_local(&mut self, n: usize, i: usize, dir: Direction, pkt: &Packet, payload: &Option<Payload>) -> Step {
        let me = self.node_actors[n];
        let name = self.actors.short(me).to_string();
        let after = self.conntrack[n].translate(i, dir, pkt, self.clock);
        self.track_segment(n, i, dir);
        let rewrites = conntrack_rewrites(pkt, &after, Direction::Reply);
        let detail = format!("conntrack on {name} matches the reply to its own connection's entry and undoes the NAT before the reply reaches the socket: it now runs {}.", packet_text(&after));
        let packet = PacketHop { before: *pkt, after, rewrites, decided_on: Some(me), matched: vec![], by_conntrack: true, could_reach: vec![], conntrack_entry: Some(i), payload: payload.clone(), tunnel: None, segment: None };
        next(me, packet, "conntrack undoes the NAT".into(), detail)
    }

    /// Node `n`'s entry `i` takes the segment in flight, going `dir`
    /// relative to the entry, with the timeouts kube-proxy sets.
    fn track_segment(&mut self, n: usize, i: usize, dir: Direction) {
        if let Some(seg) = self.segment {
            self.conntrack[n].track_tcp(i, Segment { dir: entry_dir(dir), ..seg }, TcpTimeouts::kube_proxy());
        }
    }

    /// The address a packet for another node leaves node `n` from (what
    /// masquerade puts as its source): the node's own, or, for a Pod of
    /// another node under a VXLAN overlay, the address of the device it
    /// leaves by, `flannel.1` (the first of the node's Pod range), as
    /// MASQUERADE takes the outgoing device's address.
    fn leaving_address(&self, n: usize, to_pods: bool) -> Ipv4Addr {
        let node = &self.api.nodes[n];
        match (&self.pod_network, node.pod_cidr) {
            (PodNetwork::Vxlan(_), Some(c)) if to_pods => c.nth(0).unwrap_or(node.internal_ip),
            _ => node.internal_ip,
        }
    }

    /// Routing on node `n`: where a packet to `dst` goes next, and which
    /// of the node's addresses it leaves from (used by masquerade).
    fn route(&self, n: usize, dst: Ipv4Addr) -> Result<(ActorId, Ipv4Addr), DropReason> {
        let node = &self.api.nodes[n];
        let no_route = |why| DropReason::NoRoute { dst, why };
        if node.pod_cidr.is_some_and(|c| c.contains(dst)) {
            let pod = self.actors.pods_on(self.node_actors[n]).find(|p| p.ip == Some(dst)).map(|p| p.id);
            let gateway = node.pod_cidr.and_then(|c| c.nth(1)).unwrap_or(node.internal_ip);
            return pod.map(|p| (p, gateway)).ok_or(no_route(Unroutable::Unknown));
        }
        if let Some(m) = self.api.nodes.iter().position(|o| o.pod_cidr.is_some_and(|c| c.contains(dst)) || (o.internal_ip == dst && o.name != node.name)) {
            let to_pods = self.api.nodes[m].pod_cidr.is_some_and(|c| c.contains(dst));
            return Ok((self.node_actors[m], self.leaving_address(n, to_pods)));
        }
        // A Pod of a node whose Pod range is not known (no spec.podCIDR,
        // as with some network plugins): the network plugin's routes
        // reach it where it runs.
        if let Some(p) = self.actors.iter().find(|a| a.kind.is_pod() && a.ip == Some(dst) && a.parent.is_some()) {
            let on = p.parent.and_then(|pn| self.node_index(pn));
            if on == Some(n) {
                return Ok((p.id, node.internal_ip));
            }
            if let Some(m) = on.filter(|m| self.api.nodes[*m].pod_cidr.is_none()) {
                return Ok((self.node_actors[m], node.internal_ip));
            }
        }
        if self.api.config.service_cidr.contains(dst) {
            return Err(no_route(Unroutable::ServiceRange(self.api.config.service_cidr)));
        }
        // Outside: back through the balancer if it carries this flow.
        let via_balancer = self.lb.cloud().is_some_and(|c| c.balancers.iter().any(|b| b.flows.iter().any(|f| f.client.ip == dst)));
        if via_balancer {
            if let Some(lb) = self.first(ActorKind::LoadBalancer) {
                return Ok((lb, node.internal_ip));
            }
        }
        let outside = self.actors.iter().find(|a| a.ip == Some(dst) && matches!(a.kind, ActorKind::Laptop | ActorKind::OutsideHost | ActorKind::Resolver));
        outside.map(|a| (a.id, node.internal_ip)).ok_or(no_route(Unroutable::Unknown))
    }

    fn at_balancer(&mut self, pkt: &Packet, payload: &Option<Payload>, target: usize, delivery: Delivery) -> Step {
        let outside_dst = self.outside_route(pkt.dst.ip).ok();
        let Some(cloud) = self.lb.cloud_mut() else { return Step::Drop(DropReason::NoListener { dst: pkt.dst }) };
        let Some(lb) = cloud.balancers.iter_mut().find(|b| b.ip == pkt.dst.ip || b.flows.iter().any(|f| f.backend == pkt.src)) else {
            return Step::Drop(DropReason::NoListener { dst: pkt.dst });
        };
        // A reply from a node on a flow the balancer remembers.
        if let Some(flow) = lb.reply_flow(pkt).cloned() {
            let Some(to) = outside_dst else { return Step::Drop(DropReason::NoRoute { dst: pkt.dst.ip, why: Unroutable::Unknown }) };
            let after = Packet { src: flow.frontend, ..*pkt };
            let rewrites = vec![Rewrite { kind: RewriteKind::Balancer, field: Field::Source, from: pkt.src, to: after.src }];
            let packet = PacketHop { rewrites, ..PacketHop::plain(*pkt, payload.clone()) };
            return next(
                to,
                PacketHop { after, ..packet },
                format!("reply from {}", after.src),
                format!("The balancer puts its own address back as the source, so the client sees a reply from {}.", after.src),
            );
        }
        let Some(listener) = lb.listener(pkt.dst, pkt.proto).cloned() else { return Step::Drop(DropReason::NoListener { dst: pkt.dst }) };
        if lb.state != LbState::Active {
            return Step::Drop(DropReason::NoListener { dst: pkt.dst });
        }
        let Some((node_name, node_ip)) = lb.targets.get(target).or(lb.targets.first()).cloned() else { return Step::Drop(DropReason::NoTargets) };
        let backend = match delivery {
            Delivery::NodePort => SockAddr::new(node_ip, listener.node_port),
            Delivery::Vip => pkt.dst,
        };
        lb.flows.push(LbFlow { client: pkt.src, frontend: pkt.dst, backend });
        let after = Packet { dst: backend, ..*pkt };
        let Some(node) = self.actors.node(&node_name) else { return Step::Drop(DropReason::NoTargets) };
        let name = self.actors.short(node).to_string();
        let (rewrites, caption, detail) = match delivery {
            Delivery::NodePort => (
                vec![Rewrite { kind: RewriteKind::Balancer, field: Field::Destination, from: pkt.dst, to: backend }],
                format!("forward to {name}:{}", listener.node_port),
                format!("The balancer picks {name} and forwards to its node port {}, keeping the client's address as source.", listener.node_port),
            ),
            Delivery::Vip => (vec![], format!("VIP: to {name}, still {}", pkt.dst), format!("A balancer with ipMode VIP delivers the packet to {name} still addressed to {}.", pkt.dst)),
        };
        next(node, PacketHop { after, rewrites, ..PacketHop::plain(*pkt, payload.clone()) }, caption, detail)
    }
}

fn request_host(payload: &Option<Payload>) -> String {
    match payload {
        Some(Payload::HttpRequest { host, .. }) => host.clone(),
        _ => String::new(),
    }
}

/// The caption and detail of a packet a node's rules passed on.
/// A node's hop in words; `walk` says what it did (`walks its nat table`).
pub(super) fn node_caption(name: &str, to_name: &str, before: &Packet, after: &Packet, rewrites: &[Rewrite], walk: &str) -> (String, String) {
    if rewrites.is_empty() {
        return (format!("forward → {to_name}"), format!("{name}'s rules pass {} on unchanged (none of them rewrites it), and it is routed on to {to_name}.", packet_text(before)));
    }
    let parts: Vec<String> = rewrites
        .iter()
        .filter_map(|r| match r.kind {
            RewriteKind::Dnat => Some(format!("DNAT to {}", r.to)),
            RewriteKind::Snat => Some(format!("SNAT to {}", r.to.ip)),
            _ => None,
        })
        .collect();
    let detail = format!(
        "{name} {walk}: {}. The packet leaves for {to_name} as {}; conntrack records the connection.",
        parts.join(", then "),
        packet_text(after)
    );
    (parts.join(", "), detail)
}

/// The source MASQUERADE gives a new connection that leaves from address
/// `addr`. With `--random-fully` the kernel draws the port; here it is a
/// hash of the machine and connection (`salt`, `pkt`), so the story
/// repeats. Without it the kernel keeps the client's port unless a
/// connection it tracks already uses that address and port towards the
/// same destination (`routed` is the packet after DNAT), and only then
/// looks for another one.
pub(super) fn masquerade(table: &ConntrackTable, salt: usize, pkt: &Packet, routed: &Packet, addr: Ipv4Addr, random_fully: bool) -> SockAddr {
    let kept = SockAddr::new(addr, pkt.src.port);
    let taken = table.lookup(&Packet { proto: pkt.proto, src: routed.dst, dst: kept }).is_some();
    if !random_fully && !taken {
        return kept;
    }
    let h = crate::hash::fnv1a(format!("{salt}|{}|{}", pkt.src, pkt.dst).as_bytes());
    SockAddr::new(addr, 1024 + (h % 64512) as u16)
}

impl World {
    /// A client's resolver looks up `name`, with one query per name it
    /// tries: a Pod asks the kube-dns Service through its search path, any
    /// other client asks the resolver outside. Returns the answer the
    /// resolver settles on, or `None` when no query got an answer.
    pub fn lookup(&mut self, from: ActorId, name: &str, qtype: QType, dice: &mut dyn Dice) -> Option<Response> {
        let (server, names) = self.resolver_of(from, name)?;
        let mut last = None;
        for n in names {
            match self.dial(Dial::dns(from, server, &n, qtype), dice) {
                Outcome::Answered { payload: Some(Payload::DnsAnswer(r)), .. } => {
                    if r.rcode == Rcode::NoError && !r.answer.is_empty() {
                        return Some(r);
                    }
                    last = Some(r);
                }
                _ => return last,
            }
        }
        last
    }

    /// The addresses `name` resolves to for `from`, as its resolver would
    /// find them, without recording hops (a lookup the story has already
    /// shown, or that the client's cache answers).
    pub fn resolve_quietly(&self, from: ActorId, name: &str) -> Vec<Ipv4Addr> {
        let Some(a) = self.actors.get(from) else { return Vec::new() };
        let addrs = |r: &Response| r.answer.iter().filter_map(|x| if let RData::A(ip) = x.data { Some(ip) } else { None }).collect::<Vec<_>>();
        if !a.kind.is_pod() {
            return addrs(&self.internet.resolve(name, QType::A));
        }
        let services: Vec<crate::api::Service> = self.api.services().cloned().collect();
        let dns = ClusterDns::new(DnsConfig::default(), &services, &self.api.endpoint_slices());
        let ns = a.object.as_ref().map_or("default", |o| o.namespace.as_str());
        let Some(r) = dns.search(name, QType::A, ns).response else { return addrs(&self.internet.resolve(name, QType::A)) };
        let mut out = addrs(&r);
        if out.is_empty() {
            // An ExternalName: the CNAME's target comes from outside.
            if let Some(target) = r.answer.iter().find_map(|x| if let RData::Cname(t) = &x.data { Some(t.clone()) } else { None }) {
                out = addrs(&self.internet.resolve(&target, QType::A));
            }
        }
        out
    }

    /// Which server a client's resolver asks, and the names it tries.
    fn resolver_of(&self, from: ActorId, name: &str) -> Option<(SockAddr, Vec<String>)> {
        let a = self.actors.get(from)?;
        if a.kind.is_pod() {
            let ns = a.object.as_ref().map_or("default", |o| o.namespace.as_str());
            let services: Vec<crate::api::Service> = self.api.services().cloned().collect();
            let dns = ClusterDns::new(DnsConfig::default(), &services, &self.api.endpoint_slices());
            return Some((self.cluster_dns?, dns.candidates(name, ns)));
        }
        let resolver = self.actors.iter().find(|r| r.kind == ActorKind::Resolver)?.ip?;
        let fqdn = if name.ends_with('.') { name.to_string() } else { format!("{name}.") };
        Some((SockAddr::new(resolver, 53), vec![fqdn]))
    }

    /// The client gives up before sending anything (it has no address to
    /// send to): a dropped hop on the client itself.
    pub fn give_up(&mut self, at: ActorId, reason: DropReason) -> Outcome {
        let detail = reason.describe(&self.actors);
        self.push(Hop { from: at, to: at, kind: HopKind::Dropped, leg: Leg::Out, what_if: false, caption: "dropped".into(), detail, packet: None, dropped: Some(reason.clone()), conn: None, arp: None });
        Outcome::Dropped { at, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    #[test]
    fn masquerade_keeps_a_free_port_unless_random_fully() {
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 244, 1, 4), 51000), SockAddr::new(ip(10, 96, 0, 50), 80));
        let routed = Packet { dst: SockAddr::new(ip(10, 244, 2, 7), 8080), ..pkt };
        let node = ip(10, 0, 0, 11);
        let mut table = ConntrackTable::default();
        assert_eq!(masquerade(&table, 0, &pkt, &routed, node, false), SockAddr::new(node, 51000), "the client's port, free");
        let drawn = masquerade(&table, 0, &pkt, &routed, node, true);
        assert_eq!(drawn.ip, node);
        assert_ne!(drawn.port, 51000, "--random-fully draws one");
        // Another client already holds node:51000 towards the same Pod: the
        // kernel must find another port for this one.
        let other = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 244, 1, 9), 51000), routed.dst);
        table.insert(&other, &Packet { src: SockAddr::new(node, 51000), ..other }, 0);
        let moved = masquerade(&table, 0, &pkt, &routed, node, false);
        assert_eq!(moved.ip, node);
        assert_ne!(moved.port, 51000);
        // Towards another destination the same port is free again.
        let elsewhere = Packet { dst: SockAddr::new(ip(10, 244, 2, 8), 8080), ..routed };
        assert_eq!(masquerade(&table, 0, &pkt, &elsewhere, node, false).port, 51000);
    }
}
