//! The Pod network between nodes: routed, or a VXLAN overlay as flannel's
//! `vxlan` backend (its default) programs it.
//!
//! A Pod address is only meaningful inside the cluster, so a packet from a
//! Pod on one node to a Pod on another must reach the right node somehow.
//! Two ways are modelled, as a [`PodNetwork`]:
//!
//! - [`PodNetwork::Routed`]: each node routes every other node's Pod range
//!   via that node's address on the underlay. Nothing is wrapped; the
//!   underlay sees Pod addresses. This is what the rest of the model
//!   assumes.
//! - [`PodNetwork::Vxlan`]: flannel's overlay. Every node has one VXLAN
//!   device, `flannel.<VNI>` (`flannel.1`), and for every peer node three
//!   entries, written in this order (flannel's `handleSubnetEvents`):
//!   1. a permanent neighbour entry on `flannel.1`: the peer's VTEP address
//!      (the first address of the peer's Pod range, e.g. `10.244.2.0`) is
//!      at the peer's VTEP MAC;
//!   2. a permanent forwarding-database entry on `flannel.1`: that MAC is
//!      reached by sending VXLAN to the peer's node address;
//!   3. a route: the peer's Pod range via its VTEP address, `onlink`, on
//!      `flannel.1`.
//!
//!   The kernel then wraps each Pod packet for a peer in an outer IPv4/UDP
//!   header from this node to the peer's node address, UDP destination
//!   port 8472, VXLAN header with VNI 1, inner Ethernet header from this
//!   node's VTEP MAC to the peer's. The packet inside is left as it was.
//!
//! What the types guarantee: [`PodNetwork::route`] answers, for a packet
//! leaving a node, [`Delivery::Local`] when the destination Pod is on that
//! node (never wrapped, under either network), [`Delivery::Routed`] or
//! [`Delivery::Wrapped`] when it is on a peer, and `None` when the
//! destination is in no node's Pod range (not the Pod network's business).
//! A [`Wrapped`] packet is unwrapped by the node whose address is the
//! outer destination, which is the node whose Pod range holds the inner
//! destination ([`PodNetwork::unwrapped_at`]).
//!
//! Numbers, from flannel and the Linux `vxlan` driver:
//!
//! - [`ENCAP_OVERHEAD`] = 50 bytes: flannel's `encapOverhead`, the same
//!   figure as the kernel's `VXLAN_HEADROOM` for an IPv4 underlay, which
//!   counts outer IPv4 (20) + UDP (8) + VXLAN (8) + the *inner* Ethernet
//!   header (14). The outer Ethernet header is not counted: an MTU is a
//!   layer-3 size, and the inner frame's Ethernet header is what the
//!   device adds on top of the IP packet it is given. flannel sets the
//!   device's MTU to the underlay interface's MTU minus 50
//!   ([`VXLAN_MTU`] = 1450 on a 1500-byte underlay); the kernel picks the
//!   same number itself when a VXLAN device with a lower device is created
//!   without an MTU.
//! - UDP destination port [`LINUX_VXLAN_PORT`] = 8472: flannel passes no
//!   port by default (`Port` 0), so the kernel uses its own default, the
//!   `vxlan` module's `udp_port`, 8472 (a pre-standard value; IANA's is
//!   [`IANA_VXLAN_PORT`] 4789).
//! - UDP source port: chosen per packet by the kernel
//!   (`udp_flow_src_port`), from the inner packet's flow hash, scaled into
//!   the device's source-port range. flannel and `ip link add … type
//!   vxlan` without `srcport` leave that range unset, so the kernel falls
//!   back to the namespace's `net.ipv4.ip_local_port_range`, by default
//!   `32768 60999`. The scaling is `lo + (h * (hi - lo)) >> 32`, which
//!   never reaches `hi` itself: the port lies in 32768..=60998
//!   ([`KERNEL_SOURCE_PORTS`]). The hash is seeded at boot, so the model
//!   names the range, not the port. Seen on a real kernel
//!   (`tests/overlay_kernel.rs`): one port per flow and direction; a UDP
//!   request and its reply share it (the flow dissector's hash is the same
//!   both ways), while the two ends of a TCP connection each use their
//!   socket's own random hash, so its two directions differ.
//! - VTEP MAC: flannel creates `flannel.1` with a random locally
//!   administered MAC and publishes it in the node's lease. The model
//!   derives one from the node's name instead ([`vtep_mac`]), shaped the
//!   same way, so a story repeats.
//!
//! Text appears only at the edge: each piece of state renders as the `ip`
//! or `bridge` command that would create it ([`NodeState::commands`]).

use crate::dataplane::docker::Mac;
use crate::net::{Cidr, Packet};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::Ipv4Addr;

/// The kernel's default VXLAN UDP port (the `vxlan` module's `udp_port`),
/// which flannel uses when its `Port` is left at 0.
pub const LINUX_VXLAN_PORT: u16 = 8472;
/// The port IANA assigned to VXLAN (RFC 7348); not flannel's default.
pub const IANA_VXLAN_PORT: u16 = 4789;
/// flannel's default VNI (`defaultVNI`).
pub const DEFAULT_VNI: u32 = 1;

/// The outer IPv4 header, without options.
pub const OUTER_IPV4_HEADER: u16 = 20;
/// The outer UDP header.
pub const UDP_HEADER: u16 = 8;
/// The VXLAN header: flags, reserved bits, 24-bit VNI, reserved byte.
pub const VXLAN_HEADER: u16 = 8;
/// The inner frame's Ethernet header, which the VXLAN device adds.
pub const INNER_ETHERNET_HEADER: u16 = 14;
/// What wrapping adds to a Pod's IP packet on an IPv4 underlay: flannel's
/// `encapOverhead`, the kernel's `VXLAN_HEADROOM`.
pub const ENCAP_OVERHEAD: u16 = OUTER_IPV4_HEADER + UDP_HEADER + VXLAN_HEADER + INNER_ETHERNET_HEADER;
/// The usual underlay MTU.
pub const UNDERLAY_MTU: u16 = 1500;
/// `flannel.1`'s MTU on a 1500-byte underlay.
pub const VXLAN_MTU: u16 = UNDERLAY_MTU - ENCAP_OVERHEAD;

/// The source ports the kernel picks from when the device has no
/// `srcport` range: `ip_local_port_range`'s default, its top excluded.
pub const KERNEL_SOURCE_PORTS: PortRange = PortRange { lo: 32768, hi: 60998 };

/// An inclusive range of UDP ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

impl PortRange {
    pub fn contains(&self, port: u16) -> bool {
        (self.lo..=self.hi).contains(&port)
    }

    /// The range the kernel scales a flow hash into, given the namespace's
    /// `ip_local_port_range` (`low`, `high`): `low..=high - 1`.
    pub fn from_local_port_range(low: u16, high: u16) -> PortRange {
        PortRange { lo: low, hi: high.saturating_sub(1).max(low) }
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.lo, self.hi)
    }
}

/// How Pod traffic crosses between nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PodNetwork {
    /// Each node routes the other nodes' Pod ranges via their node
    /// addresses; nothing is wrapped.
    #[default]
    Routed,
    /// flannel's VXLAN backend.
    Vxlan(VxlanConfig),
}

/// flannel's `vxlan` backend settings, and what follows from them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VxlanConfig {
    /// The device: `flannel.<vni>`.
    pub device: String,
    pub vni: u32,
    /// The UDP destination port.
    pub port: u16,
    /// The device's MTU: the underlay's minus [`ENCAP_OVERHEAD`].
    pub mtu: u16,
    /// flannel's `Learning`, off by default: the forwarding database is
    /// only what flannel writes.
    pub learning: bool,
    /// Where the kernel picks each packet's UDP source port.
    pub source_ports: PortRange,
}

impl Default for VxlanConfig {
    fn default() -> VxlanConfig {
        VxlanConfig::new(DEFAULT_VNI, UNDERLAY_MTU)
    }
}

impl VxlanConfig {
    /// flannel's defaults for `vni` on an underlay interface of MTU
    /// `underlay_mtu`.
    pub fn new(vni: u32, underlay_mtu: u16) -> VxlanConfig {
        VxlanConfig {
            device: format!("flannel.{vni}"),
            vni,
            port: LINUX_VXLAN_PORT,
            mtu: underlay_mtu.saturating_sub(ENCAP_OVERHEAD),
            learning: false,
            source_ports: KERNEL_SOURCE_PORTS,
        }
    }
}

/// A node as the Pod network sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlayNode {
    pub name: String,
    /// The node's address on the underlay (its InternalIP; flannel's
    /// `PublicIP`).
    pub address: Ipv4Addr,
    /// The underlay interface holding `address` (flannel's external
    /// interface).
    pub interface: String,
    /// `spec.podCIDR`: flannel's lease subnet.
    pub pod_cidr: Cidr,
}

impl OverlayNode {
    pub fn new(name: &str, address: Ipv4Addr, interface: &str, pod_cidr: Cidr) -> OverlayNode {
        OverlayNode { name: name.into(), address, interface: interface.into(), pod_cidr }
    }

    /// The node's VTEP address: the first address of its Pod range (the
    /// lease subnet's own address, `10.244.1.0`), which flannel puts on
    /// `flannel.1` as a /32 and peers route to.
    pub fn vtep_address(&self) -> Ipv4Addr {
        self.pod_cidr.addr
    }

    pub fn vtep_mac(&self) -> Mac {
        vtep_mac(&self.name)
    }
}

/// The model's MAC for a node's `flannel.1`: locally administered unicast,
/// from the SHA-256 of `flannel.1/<node name>` ([`Mac::derived`]).
pub fn vtep_mac(node: &str) -> Mac {
    Mac::derived(&format!("flannel.1/{node}"))
}

/// The VXLAN device flannel creates on a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VxlanDevice {
    pub name: String,
    pub vni: u32,
    pub mac: Mac,
    /// The outer source address: the node's address.
    pub local: Ipv4Addr,
    /// The underlay interface the device sends through.
    pub underlay: String,
    pub dst_port: u16,
    pub mtu: u16,
    pub learning: bool,
    /// The device's own address, a /32 so that no broadcast routes appear.
    pub address: Cidr,
}

/// A route to a peer's Pod range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodRoute {
    pub dst: Cidr,
    /// The peer's VTEP address (overlay) or node address (routed).
    pub via: Ipv4Addr,
    pub dev: String,
    /// The gateway is taken as on the link though no address of the
    /// device covers it (the overlay's routes).
    pub onlink: bool,
}

/// A permanent neighbour entry: a peer's VTEP address is at its VTEP MAC.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VtepNeighbour {
    pub ip: Ipv4Addr,
    pub mac: Mac,
    pub dev: String,
}

/// A permanent forwarding-database entry on the VXLAN device: frames for
/// `mac` go, wrapped, to the node address `dst`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FdbEntry {
    pub mac: Mac,
    pub dst: Ipv4Addr,
    pub dev: String,
}

/// Everything the Pod network programs on one node for its peers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    /// `None` for a routed network.
    pub device: Option<VxlanDevice>,
    pub neighbours: Vec<VtepNeighbour>,
    pub fdb: Vec<FdbEntry>,
    pub routes: Vec<PodRoute>,
}

impl VxlanDevice {
    /// The commands that create and raise the device.
    pub fn commands(&self) -> Vec<String> {
        let learning = if self.learning { "learning" } else { "nolearning" };
        vec![
            format!(
                "ip link add {} address {} mtu {} type vxlan id {} local {} dev {} dstport {} {learning}",
                self.name, self.mac, self.mtu, self.vni, self.local, self.underlay, self.dst_port
            ),
            format!("ip addr add {} dev {}", self.address, self.name),
            format!("ip link set {} up", self.name),
        ]
    }
}

impl PodRoute {
    /// flannel replaces rather than adds (`RouteReplace`).
    pub fn command(&self) -> String {
        let onlink = if self.onlink { " onlink" } else { "" };
        format!("ip route replace {} via {} dev {}{onlink}", self.dst, self.via, self.dev)
    }
}

impl VtepNeighbour {
    /// flannel's `NeighSet` creates or replaces.
    pub fn command(&self) -> String {
        format!("ip neigh replace {} lladdr {} dev {} nud permanent", self.ip, self.mac, self.dev)
    }
}

impl FdbEntry {
    /// flannel's `NeighSet` on the bridge family, `NTF_SELF`: the VXLAN
    /// device's own table.
    pub fn command(&self) -> String {
        format!("bridge fdb replace {} dev {} dst {} self permanent", self.mac, self.dev, self.dst)
    }
}

impl NodeState {
    /// The state as commands, in flannel's order: the device, then per
    /// peer its neighbour, its FDB entry and last its route (so the kernel
    /// never has to resolve the gateway itself).
    pub fn commands(&self) -> Vec<String> {
        let mut out = self.device.as_ref().map(VxlanDevice::commands).unwrap_or_default();
        for (i, route) in self.routes.iter().enumerate() {
            if let Some(n) = self.neighbours.get(i) {
                out.push(n.command());
            }
            if let Some(f) = self.fdb.get(i) {
                out.push(f.command());
            }
            out.push(route.command());
        }
        out
    }
}

/// The outer headers the VXLAN device puts around a Pod's packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OuterHeader {
    /// The sending node's address.
    pub src: Ipv4Addr,
    /// The receiving node's address.
    pub dst: Ipv4Addr,
    /// Chosen by the kernel per flow, somewhere in this range.
    pub udp_src: PortRange,
    pub udp_dst: u16,
    pub vni: u32,
}

/// A Pod packet in flight on the underlay, wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Wrapped {
    pub outer: OuterHeader,
    /// The inner frame's Ethernet source: the sender's VTEP MAC.
    pub inner_src_mac: Mac,
    /// The inner frame's Ethernet destination: the receiver's VTEP MAC.
    pub inner_dst_mac: Mac,
    /// The Pod's packet, unchanged.
    pub inner: Packet,
}

/// What the Pod network does with a packet leaving a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delivery {
    /// The destination Pod is on this node: bridged or routed locally,
    /// never wrapped.
    Local,
    /// Sent as it is to the node at this address.
    Routed { via: Ipv4Addr },
    /// Wrapped in VXLAN for the peer node.
    Wrapped(Wrapped),
}

impl PodNetwork {
    /// The state the network plugin programs on `node` for its `peers`
    /// (the node itself among them is skipped).
    pub fn node_state(&self, node: &OverlayNode, peers: &[OverlayNode]) -> NodeState {
        let peers = peers.iter().filter(|p| p.name != node.name);
        match self {
            PodNetwork::Routed => NodeState {
                routes: peers
                    .map(|p| PodRoute { dst: p.pod_cidr, via: p.address, dev: node.interface.clone(), onlink: false })
                    .collect(),
                ..NodeState::default()
            },
            PodNetwork::Vxlan(cfg) => {
                let dev = cfg.device.clone();
                let mut state = NodeState {
                    device: Some(VxlanDevice {
                        name: dev.clone(),
                        vni: cfg.vni,
                        mac: node.vtep_mac(),
                        local: node.address,
                        underlay: node.interface.clone(),
                        dst_port: cfg.port,
                        mtu: cfg.mtu,
                        learning: cfg.learning,
                        address: Cidr::new(node.vtep_address(), 32),
                    }),
                    ..NodeState::default()
                };
                for p in peers {
                    state.neighbours.push(VtepNeighbour { ip: p.vtep_address(), mac: p.vtep_mac(), dev: dev.clone() });
                    state.fdb.push(FdbEntry { mac: p.vtep_mac(), dst: p.address, dev: dev.clone() });
                    state.routes.push(PodRoute { dst: p.pod_cidr, via: p.vtep_address(), dev: dev.clone(), onlink: true });
                }
                state
            }
        }
    }

    /// What happens to `packet` leaving the node named `from` for its
    /// destination: `None` when `from` is not among `nodes` or the
    /// destination is in no node's Pod range.
    pub fn route(&self, nodes: &[OverlayNode], from: &str, packet: Packet) -> Option<Delivery> {
        let here = nodes.iter().find(|n| n.name == from)?;
        let there = owner(nodes, packet.dst.ip)?;
        if there.name == here.name {
            return Some(Delivery::Local);
        }
        Some(match self {
            PodNetwork::Routed => Delivery::Routed { via: there.address },
            PodNetwork::Vxlan(cfg) => Delivery::Wrapped(Wrapped {
                outer: OuterHeader { src: here.address, dst: there.address, udp_src: cfg.source_ports, udp_dst: cfg.port, vni: cfg.vni },
                inner_src_mac: here.vtep_mac(),
                inner_dst_mac: there.vtep_mac(),
                inner: packet,
            }),
        })
    }

    /// The node that takes a wrapped packet apart: the one at the outer
    /// destination, provided it owns the inner destination (else the
    /// packet is not one this network sent).
    pub fn unwrapped_at<'a>(&self, nodes: &'a [OverlayNode], w: &Wrapped) -> Option<&'a OverlayNode> {
        let PodNetwork::Vxlan(cfg) = self else { return None };
        if w.outer.vni != cfg.vni || w.outer.udp_dst != cfg.port {
            return None;
        }
        nodes.iter().find(|n| n.address == w.outer.dst && n.pod_cidr.contains(w.inner.dst.ip))
    }
}

/// The node whose Pod range holds `ip`.
pub fn owner(nodes: &[OverlayNode], ip: Ipv4Addr) -> Option<&OverlayNode> {
    nodes.iter().find(|n| n.pod_cidr.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{ip, Protocol, SockAddr};

    fn nodes() -> Vec<OverlayNode> {
        (1..=3u8).map(|i| OverlayNode::new(&format!("node-{i}"), ip(192, 168, 0, 10 + i), "eth0", Cidr::new(ip(10, 244, i, 0), 24))).collect()
    }

    fn pkt(src: Ipv4Addr, dst: Ipv4Addr) -> Packet {
        Packet::new(Protocol::Udp, SockAddr::new(src, 40000), SockAddr::new(dst, 7000))
    }

    #[test]
    fn flannel_defaults() {
        let c = VxlanConfig::default();
        assert_eq!((c.device.as_str(), c.vni, c.port, c.mtu, c.learning), ("flannel.1", 1, 8472, 1450, false));
        assert_eq!(ENCAP_OVERHEAD, 50);
        assert_eq!(VXLAN_MTU, 1450);
        assert_eq!(VxlanConfig::new(4, 9001).mtu, 8951);
        assert_eq!(VxlanConfig::new(4, 9001).device, "flannel.4");
        assert_eq!(PodNetwork::default(), PodNetwork::Routed);
        assert_eq!(PortRange::from_local_port_range(32768, 60999), KERNEL_SOURCE_PORTS);
        assert!(KERNEL_SOURCE_PORTS.contains(32768) && KERNEL_SOURCE_PORTS.contains(60998) && !KERNEL_SOURCE_PORTS.contains(60999));
    }

    #[test]
    fn vxlan_state_renders_as_flannel_programs_it() {
        let ns = nodes();
        let net = PodNetwork::Vxlan(VxlanConfig::default());
        let st = net.node_state(&ns[0], &ns);
        let dev = st.device.as_ref().unwrap();
        assert_eq!(dev.address.to_string(), "10.244.1.0/32");
        assert_eq!((st.routes.len(), st.neighbours.len(), st.fdb.len()), (2, 2, 2));
        let m1 = vtep_mac("node-1");
        let m2 = vtep_mac("node-2");
        assert_ne!(m1, m2);
        assert_eq!(m1.0[0] & 0x03, 0x02, "locally administered unicast");
        let cmds = st.commands();
        assert_eq!(cmds[0], format!("ip link add flannel.1 address {m1} mtu 1450 type vxlan id 1 local 192.168.0.11 dev eth0 dstport 8472 nolearning"));
        assert_eq!(cmds[1], "ip addr add 10.244.1.0/32 dev flannel.1");
        assert_eq!(cmds[2], "ip link set flannel.1 up");
        assert_eq!(cmds[3], format!("ip neigh replace 10.244.2.0 lladdr {m2} dev flannel.1 nud permanent"));
        assert_eq!(cmds[4], format!("bridge fdb replace {m2} dev flannel.1 dst 192.168.0.12 self permanent"));
        assert_eq!(cmds[5], "ip route replace 10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink");
        assert_eq!(cmds.len(), 3 + 2 * 3);
    }

    #[test]
    fn routed_state_is_one_route_per_peer() {
        let ns = nodes();
        let st = PodNetwork::Routed.node_state(&ns[1], &ns);
        assert!(st.device.is_none() && st.fdb.is_empty() && st.neighbours.is_empty());
        assert_eq!(st.commands(), ["ip route replace 10.244.1.0/24 via 192.168.0.11 dev eth0", "ip route replace 10.244.3.0/24 via 192.168.0.13 dev eth0"]);
    }

    #[test]
    fn cross_node_traffic_is_wrapped_and_unwrapped_at_the_owner() {
        let ns = nodes();
        let net = PodNetwork::Vxlan(VxlanConfig::default());
        let p = pkt(ip(10, 244, 1, 2), ip(10, 244, 2, 2));
        let Some(Delivery::Wrapped(w)) = net.route(&ns, "node-1", p) else { panic!("wrapped") };
        assert_eq!(w.outer, OuterHeader { src: ip(192, 168, 0, 11), dst: ip(192, 168, 0, 12), udp_src: KERNEL_SOURCE_PORTS, udp_dst: 8472, vni: 1 });
        assert_eq!(w.inner, p);
        assert_eq!((w.inner_src_mac, w.inner_dst_mac), (vtep_mac("node-1"), vtep_mac("node-2")));
        assert_eq!(net.unwrapped_at(&ns, &w).map(|n| n.name.as_str()), Some("node-2"));
        // The reply wraps the same way back.
        let Some(Delivery::Wrapped(r)) = net.route(&ns, "node-2", p.reversed()) else { panic!("wrapped") };
        assert_eq!((r.outer.src, r.outer.dst), (w.outer.dst, w.outer.src));
        assert_eq!(net.unwrapped_at(&ns, &r).map(|n| n.name.as_str()), Some("node-1"));
        // A routed network sends it as it is.
        assert_eq!(PodNetwork::Routed.route(&ns, "node-1", p), Some(Delivery::Routed { via: ip(192, 168, 0, 12) }));
    }

    #[test]
    fn same_node_is_never_wrapped_and_outside_is_not_ours() {
        let ns = nodes();
        for net in [PodNetwork::Routed, PodNetwork::Vxlan(VxlanConfig::default())] {
            assert_eq!(net.route(&ns, "node-3", pkt(ip(10, 244, 3, 2), ip(10, 244, 3, 3))), Some(Delivery::Local));
            assert_eq!(net.route(&ns, "node-3", pkt(ip(10, 244, 3, 2), ip(8, 8, 8, 8))), None);
            assert_eq!(net.route(&ns, "node-9", pkt(ip(10, 244, 3, 2), ip(10, 244, 1, 2))), None);
        }
        // A packet claiming the wrong node is not unwrapped.
        let net = PodNetwork::Vxlan(VxlanConfig::default());
        let Some(Delivery::Wrapped(mut w)) = net.route(&ns, "node-1", pkt(ip(10, 244, 1, 2), ip(10, 244, 2, 2))) else { panic!() };
        w.outer.dst = ip(192, 168, 0, 13);
        assert_eq!(net.unwrapped_at(&ns, &w), None);
        assert_eq!(PodNetwork::Routed.unwrapped_at(&ns, &w), None);
    }

    #[test]
    fn serde_round_trip() {
        let ns = nodes();
        let net = PodNetwork::Vxlan(VxlanConfig::default());
        let back: PodNetwork = postcard::from_bytes(&postcard::to_allocvec(&net).unwrap()).unwrap();
        assert_eq!(back, net);
        let st = net.node_state(&ns[2], &ns);
        let back: NodeState = postcard::from_bytes(&postcard::to_allocvec(&st).unwrap()).unwrap();
        assert_eq!(back, st);
        let d = net.route(&ns, "node-1", pkt(ip(10, 244, 1, 2), ip(10, 244, 3, 2))).unwrap();
        let back: Delivery = postcard::from_bytes(&postcard::to_allocvec(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }
}
