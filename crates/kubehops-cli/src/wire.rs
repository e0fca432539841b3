//! `trace --network vxlan` and `trace --handshake`: the wire form of a
//! decision. The rules' verdict says where a packet goes; this says how it
//! travels there: wrapped in flannel's VXLAN overlay when it crosses to
//! another node's Pod, and as the real packets of a TCP connection, each
//! with the node's conntrack entry after it.
//!
//! Everything here is read off the model: [`PodNetwork::route`] decides
//! what is wrapped and [`standard_connection`] the conntrack states; this
//! module only picks the packets to ask about and words the answers.

use crate::objects::Cluster;
use kubehops_core::api::Node;
use kubehops_core::dataplane::kubeproxy::NodeFeatures;
use kubehops_core::dataplane::overlay::{owner, Delivery, OuterHeader, OverlayNode, PodNetwork, VxlanConfig, INNER_ETHERNET_HEADER, OUTER_IPV4_HEADER, UDP_HEADER, UNDERLAY_MTU, VXLAN_HEADER};
use kubehops_core::dataplane::tcp::{standard_connection, Dir, TcpTimeouts};
use kubehops_core::dataplane::trace::{TraceResult, TraceVerdict};
use kubehops_core::net::{Packet, SockAddr};
use serde::Serialize;
use std::net::Ipv4Addr;

/// The model gives every node one underlay interface; its name only shows
/// in the commands that program the overlay, never in a trace.
const UNDERLAY_INTERFACE: &str = "eth0";

/// What a trace asks of the wire: the packet as it came, the node it is
/// at, the trace's answer and the node's NAT options.
pub struct Traced<'a> {
    pub node: &'a Node,
    pub packet: Packet,
    pub result: &'a TraceResult,
    pub features: NodeFeatures,
}

/// The source of a packet as it leaves: `port` is `None` when MASQUERADE
/// `--random-fully` draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Source {
    ip: Ipv4Addr,
    port: Option<u16>,
}

impl Source {
    fn render(self) -> String {
        match self.port {
            Some(p) => SockAddr::new(self.ip, p).to_string(),
            None => format!("{}:random", self.ip),
        }
    }
}

/// One packet on the wire, as JSON writes it.
#[derive(Serialize, Clone, Debug)]
pub struct WirePacket {
    pub proto: &'static str,
    /// `ip:port`; the port reads `random` when MASQUERADE --random-fully
    /// draws it.
    pub src: String,
    pub dst: String,
}

/// The `overlay` object of `trace -o json --network vxlan`.
#[derive(Serialize, Debug)]
pub struct OverlayJson {
    pub network: &'static str,
    pub device: String,
    pub vni: u32,
    pub udp_dst: u16,
    pub mtu: u16,
    pub overhead: u16,
    /// Why nothing could be worked out, or why nothing leaves the node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// One per packet the rules may send on: one per target after DNAT.
    pub packets: Vec<Leg>,
}

/// What the Pod network does with one packet leaving a node.
#[derive(Serialize, Clone, Debug)]
pub struct Leg {
    /// The packet as it leaves the node, after the rules' NAT.
    pub packet: WirePacket,
    /// The node it leaves.
    pub from: String,
    /// `wrapped`, `local` (a Pod of the same node: not wrapped) or
    /// `not-pod-network` (the destination is in no node's Pod range).
    pub delivery: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outer: Option<OuterHeader>,
    /// The device that wraps it, on `from`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrapped_by: Option<String>,
    /// The node that unwraps it: the owner of the inner destination's
    /// Pod range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unwrapped_at: Option<String>,
    /// The inner frame's Ethernet addresses: the two VTEP MACs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner_src_mac: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner_dst_mac: Option<String>,
}

/// One packet of `--handshake`.
#[derive(Serialize, Clone, Debug)]
pub struct HandshakePacket {
    /// `SYN`, `SYN-ACK`, `ACK`, `request`, …
    pub packet: &'static str,
    /// `original` (client to server) or `reply`.
    pub direction: &'static str,
    pub src: String,
    pub dst: String,
    /// As tcpdump writes them: `S`, `S.`, `.`, `P.` (data), `F.`.
    pub flags: String,
    /// The node's conntrack entry after the packet, as the kernel names
    /// its state.
    pub state: &'static str,
    /// Seconds, with kube-proxy's conntrack timeouts.
    pub timeout: u32,
    pub assured: bool,
    pub unreplied: bool,
    /// `rules` for the first packet, `conntrack` for the others.
    pub decided_by: &'static str,
    /// With --network vxlan: what the Pod network does with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlay: Option<Leg>,
}

/// The Pod network's view of the nodes, or why there is none.
fn overlay_nodes(c: &Cluster) -> Result<Vec<OverlayNode>, String> {
    let mut out = Vec::new();
    for n in &c.nodes {
        let Some(cidr) = n.pod_cidr else {
            return Err(format!(
                "the overlay cannot be worked out: node {} has no spec.podCIDR, and flannel wraps packets by the Pod range each node owns",
                n.name
            ));
        };
        out.push(OverlayNode::new(&n.name, n.internal_ip, UNDERLAY_INTERFACE, cidr));
    }
    Ok(out)
}

/// Where a connection the trace decided goes: the endpoint the matched
/// rules lead to (the first DNAT they show, else the first target), or the
/// destination as it came when no rule rewrote it. `None` when the rules
/// refuse it.
fn destination(t: &Traced) -> Option<SockAddr> {
    match t.result.verdict {
        TraceVerdict::Dnat => {
            let shown = t.result.targets.iter().find(|a| {
                let a = a.to_string();
                t.result.matched.iter().any(|m| m.contains(&format!("--to-destination {a}")) || m.contains(&format!("dnat to {a}")))
            });
            shown.or(t.result.targets.first()).copied()
        }
        TraceVerdict::None | TraceVerdict::Accept => Some(t.packet.dst),
        TraceVerdict::Reject | TraceVerdict::Drop => None,
    }
}

/// Every destination the packet may leave with: each target after DNAT,
/// or the destination as it came.
fn destinations(t: &Traced) -> Vec<SockAddr> {
    match t.result.verdict {
        TraceVerdict::Dnat => t.result.targets.clone(),
        TraceVerdict::None | TraceVerdict::Accept => vec![t.packet.dst],
        TraceVerdict::Reject | TraceVerdict::Drop => vec![],
    }
}

fn verdict_word(v: TraceVerdict) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// The source a packet leaves `here` with for `dst`: as it came, or
/// masqueraded to the address of the device it goes out of (the kernel's
/// MASQUERADE takes the out device's address): flannel.1's (the first
/// address of the node's Pod range) for a wrapped packet, the bridge's
/// (the Pod range's gateway) for a local Pod, else the node's own.
fn source(t: &Traced, net: &PodNetwork, nodes: &[OverlayNode], dst: Ipv4Addr) -> Source {
    if !t.result.masquerade {
        return Source { ip: t.packet.src.ip, port: Some(t.packet.src.port) };
    }
    let here = nodes.iter().find(|n| n.name == t.node.name);
    let probe = Packet::new(t.packet.proto, t.packet.src, SockAddr::new(dst, 0));
    let ip = match (net.route(nodes, &t.node.name, probe), here) {
        (Some(Delivery::Wrapped(_)), Some(h)) => h.vtep_address(),
        (Some(Delivery::Local), Some(h)) => h.pod_cidr.nth(1).unwrap_or(t.node.internal_ip),
        _ => t.node.internal_ip,
    };
    let port = (!t.features.random_fully).then_some(t.packet.src.port);
    Source { ip, port }
}

fn wire(proto: &'static str, src: String, dst: String) -> WirePacket {
    WirePacket { proto, src, dst }
}

/// What the network does with a packet `from` sends: `src` as rendered
/// (the port may be drawn), the packet with a stand-in port for the model.
fn leg(net: &PodNetwork, nodes: &[OverlayNode], from: &str, pkt: Packet, shown: WirePacket) -> Leg {
    let mut l = Leg { packet: shown, from: from.to_string(), delivery: "not-pod-network", outer: None, wrapped_by: None, unwrapped_at: None, inner_src_mac: None, inner_dst_mac: None };
    match net.route(nodes, from, pkt) {
        Some(Delivery::Wrapped(w)) => {
            l.delivery = "wrapped";
            l.outer = Some(w.outer);
            l.wrapped_by = match net {
                PodNetwork::Vxlan(cfg) => Some(cfg.device.clone()),
                PodNetwork::Routed => None,
            };
            l.unwrapped_at = net.unwrapped_at(nodes, &w).map(|n| n.name.clone());
            l.inner_src_mac = Some(w.inner_src_mac.to_string());
            l.inner_dst_mac = Some(w.inner_dst_mac.to_string());
        }
        Some(Delivery::Local) => l.delivery = "local",
        Some(Delivery::Routed { .. }) | None => {}
    }
    l
}

/// The overlay of a trace in vxlan mode.
pub fn overlay(t: &Traced, c: &Cluster, net: &PodNetwork) -> OverlayJson {
    let cfg = match net {
        PodNetwork::Vxlan(cfg) => cfg.clone(),
        PodNetwork::Routed => VxlanConfig::default(),
    };
    let mut o = OverlayJson {
        network: "vxlan",
        device: cfg.device.clone(),
        vni: cfg.vni,
        udp_dst: cfg.port,
        mtu: cfg.mtu,
        overhead: UNDERLAY_MTU.saturating_sub(cfg.mtu),
        note: None,
        packets: Vec::new(),
    };
    let nodes = match overlay_nodes(c) {
        Ok(n) => n,
        Err(note) => {
            o.note = Some(note);
            return o;
        }
    };
    let proto = t.packet.proto.lower();
    for dst in destinations(t) {
        let src = source(t, net, &nodes, dst.ip);
        let pkt = Packet::new(t.packet.proto, SockAddr::new(src.ip, src.port.unwrap_or(t.packet.src.port)), dst);
        o.packets.push(leg(net, &nodes, &t.node.name, pkt, wire(proto, src.render(), dst.to_string())));
    }
    if o.packets.is_empty() {
        o.note = Some(format!("the packet does not leave {} ({}): nothing is wrapped", t.node.name, verdict_word(t.result.verdict)));
    }
    o
}

/// The connection's packets, or why there are none.
pub fn handshake(t: &Traced, c: &Cluster, net: &PodNetwork) -> Result<Vec<HandshakePacket>, String> {
    let Some(server) = destination(t) else {
        return Err(format!("the rules {} the SYN: no connection is made, so conntrack has nothing to follow", verdict_word(t.result.verdict)));
    };
    let vxlan = matches!(net, PodNetwork::Vxlan(_));
    // Without Pod ranges the overlay cannot be worked out; the handshake
    // still can, and the overlay's note says why it is missing.
    let nodes = if vxlan { overlay_nodes(c).ok() } else { None };
    let client = match &nodes {
        Some(n) => source(t, net, n, server.ip),
        None if t.result.masquerade => Source { ip: t.node.internal_ip, port: (!t.features.random_fully).then_some(t.packet.src.port) },
        None => Source { ip: t.packet.src.ip, port: Some(t.packet.src.port) },
    };
    let client_addr = SockAddr::new(client.ip, client.port.unwrap_or(t.packet.src.port));
    let proto = t.packet.proto.lower();
    let steps = standard_connection(TcpTimeouts::kube_proxy());
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let (direction, src, dst, pkt, from) = match step.segment.dir {
            Dir::Original => ("original", client.render(), server.to_string(), Packet::new(t.packet.proto, client_addr, server), Some(t.node.name.clone())),
            Dir::Reply => {
                // The server's node sends the reply, as it is: the traced
                // node undoes its NAT when the reply comes back.
                let from = nodes.as_deref().and_then(|n| owner(n, server.ip)).map(|n| n.name.clone());
                ("reply", server.to_string(), client.render(), Packet::new(t.packet.proto, server, client_addr), from)
            }
        };
        let flags = if step.segment.data { format!("P{}", step.segment.flags.render()) } else { step.segment.flags.render() };
        let overlay = match (&nodes, from) {
            (Some(n), Some(from)) => Some(leg(net, n, &from, pkt, wire(proto, src.clone(), dst.clone()))),
            (Some(_), None) => Some(Leg {
                packet: wire(proto, src.clone(), dst.clone()),
                from: String::new(),
                delivery: "not-pod-network",
                outer: None,
                wrapped_by: None,
                unwrapped_at: None,
                inner_src_mac: None,
                inner_dst_mac: None,
            }),
            (None, _) => None,
        };
        out.push(HandshakePacket {
            packet: step.label,
            direction,
            src,
            dst,
            flags,
            state: step.track.state.name(),
            timeout: step.track.timeout,
            assured: step.track.assured,
            unreplied: step.track.unreplied(),
            decided_by: if i == 0 { "rules" } else { "conntrack" },
            overlay,
        });
    }
    Ok(out)
}

// ------------------------------------------------------------ text

/// `1500-byte underlay: 20 + 8 + 8 + 14 = 50 bytes`.
fn cost_line(o: &OverlayJson) -> String {
    format!(
        "cost: {} bytes of headers (outer IPv4 {OUTER_IPV4_HEADER}, UDP {UDP_HEADER}, VXLAN {VXLAN_HEADER}, inner Ethernet {INNER_ETHERNET_HEADER}): {}'s MTU is {} on a {UNDERLAY_MTU}-byte underlay",
        o.overhead, o.device, o.mtu
    )
}

fn outer_text(h: &OuterHeader) -> String {
    format!(
        "{} → {} udp, source port chosen by the kernel in {}–{}, destination port {}, VXLAN VNI {}",
        h.src, h.dst, h.udp_src.lo, h.udp_src.hi, h.udp_dst, h.vni
    )
}

fn packet_text(p: &WirePacket) -> String {
    format!("{} → {} {}", p.src, p.dst, p.proto)
}

/// A handshake packet's overlay, on one line.
fn leg_line(l: &Leg, pad: &str) -> String {
    match (l.delivery, &l.outer) {
        ("wrapped", Some(h)) => format!(
            "{pad}wrapped by {} on {}: outer {} → {} udp, source port in {}–{}, destination port {}, VNI {}; unwrapped on {}",
            l.wrapped_by.as_deref().unwrap_or("flannel.1"),
            l.from,
            h.src,
            h.dst,
            h.udp_src.lo,
            h.udp_src.hi,
            h.udp_dst,
            h.vni,
            l.unwrapped_at.as_deref().unwrap_or("<no node>")
        ),
        ("local", _) => format!("{pad}not wrapped: from a Pod to a Pod on {}", l.from),
        _ if l.from.is_empty() => format!("{pad}not wrapped: the sender is not a Pod on a known node"),
        _ => format!("{pad}not wrapped: the destination is in no node's Pod range"),
    }
}

/// The lines of one leg, indented by `pad`.
fn leg_lines(l: &Leg, nodes: &[OverlayNode], pad: &str) -> Vec<String> {
    let dst_ip = l.packet.dst.rsplit_once(':').and_then(|(ip, _)| ip.parse::<Ipv4Addr>().ok());
    let owner_of = dst_ip.and_then(|ip| owner(nodes, ip));
    match (l.delivery, &l.outer) {
        ("wrapped", Some(h)) => {
            let there = owner_of.map(|n| format!(" ({}'s Pod range {})", n.name, n.pod_cidr)).unwrap_or_default();
            let macs = match (&l.inner_src_mac, &l.inner_dst_mac) {
                (Some(s), Some(d)) => format!(", in an inner Ethernet frame {s} → {d} (the VTEP MACs: flannel draws them at random, the model derives them from the node names)"),
                _ => String::new(),
            };
            vec![
                format!("{pad}wrapped by {} on {}: the destination is a Pod on another node{there}", l.wrapped_by.as_deref().unwrap_or("flannel.1"), l.from),
                format!("{pad}  outer: {}", outer_text(h)),
                format!("{pad}  inner: {}, carried unchanged{macs}", packet_text(&l.packet)),
                format!("{pad}  unwrapped on {} ({}), which owns the inner destination's Pod range", l.unwrapped_at.as_deref().unwrap_or("<no node>"), h.dst),
            ]
        }
        ("local", _) => {
            let range = owner_of.map(|n| format!(" (its Pod range {})", n.pod_cidr)).unwrap_or_default();
            vec![format!("{pad}not wrapped: the destination is a Pod on {} itself{range}", l.from)]
        }
        _ if l.from.is_empty() => vec![format!("{pad}not wrapped: the sender is not a Pod on a known node")],
        _ => vec![format!("{pad}not wrapped: {} is in no node's Pod range, so the overlay does not carry it", dst_ip.map_or(l.packet.dst.clone(), |ip| ip.to_string()))],
    }
}

/// The overlay, as text after the trace's summary.
pub fn overlay_text(o: &OverlayJson, c: &Cluster) -> String {
    let nodes = overlay_nodes(c).unwrap_or_default();
    let mut s = format!("network: vxlan (flannel's defaults: device {}, VNI {}, UDP port {}, MTU {})\n", o.device, o.vni, o.udp_dst, o.mtu);
    if let Some(note) = &o.note {
        s.push_str(&format!("note: {note}\n"));
    }
    let wrapped = o.packets.iter().any(|l| l.delivery == "wrapped");
    for l in &o.packets {
        s.push_str(&format!("to {}:\n", l.packet.dst));
        for line in leg_lines(l, &nodes, "  ") {
            s.push_str(&format!("{line}\n"));
        }
        if l.packet.src.ends_with(":random") {
            s.push_str("  (the source is masqueraded: its port is drawn by MASQUERADE --random-fully)\n");
        }
    }
    if wrapped {
        s.push_str(&format!("{}\n", cost_line(o)));
    }
    s
}

/// The handshake, as text after the trace's summary (and the overlay).
pub fn handshake_text(t: &Traced, hs: &Result<Vec<HandshakePacket>, String>) -> String {
    let steps = match hs {
        Ok(steps) => steps,
        Err(note) => return format!("handshake: {note}\n"),
    };
    let server = steps.first().map(|p| p.dst.clone()).unwrap_or_default();
    let reaches = if server == t.packet.dst.to_string() { String::new() } else { format!(", which reaches {server}") };
    let mut s = format!(
        "handshake: the TCP connection {}{reaches}; its packets as they travel after {}'s NAT, each with {}'s conntrack entry after it (kube-proxy's timeouts)\n",
        t.packet, t.node.name, t.node.name
    );
    let matched = t.result.matched.len();
    let width = steps.iter().map(|p| format!("{} → {}", p.src, p.dst).chars().count()).max().unwrap_or(0);
    for (i, p) in steps.iter().enumerate() {
        let mut marks = String::new();
        if p.unreplied {
            marks.push_str(" [UNREPLIED]");
        }
        if p.assured {
            marks.push_str(" [ASSURED]");
        }
        let addrs = format!("{} → {}", p.src, p.dst);
        let pad = " ".repeat(width.saturating_sub(addrs.chars().count()));
        s.push_str(&format!(
            "{:>2}. {:<13} {:<8} {addrs}{pad} {:<5} {:<11} timeout {}s{marks}\n",
            i + 1,
            p.packet,
            p.direction,
            format!("[{}]", p.flags),
            p.state,
            p.timeout
        ));
        if p.decided_by == "rules" {
            let what = match t.result.verdict {
                TraceVerdict::Dnat => format!("DNAT to {}", p.dst),
                v => format!("verdict {}", verdict_word(v)),
            };
            s.push_str(&format!("    the rules decided it: the {matched} matched rule{} above ({what})\n", if matched == 1 { "" } else { "s" }));
        } else {
            // Only the nat table is skipped: it sees a connection's first
            // packet alone. Filter rules still see every packet.
            s.push_str("    no NAT rule walked: conntrack knows this connection and rewrites it as it did the first packet\n");
        }
        if let Some(l) = &p.overlay {
            s.push_str(&format!("{}\n", leg_line(l, "    ")));
        }
    }
    s
}
