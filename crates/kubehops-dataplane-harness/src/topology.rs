//! A [`Plan`] built as network namespaces, joined only to each other.
//!
//! ```text
//!   out (outside clients)          fabric (a router: node, Pod, client and
//!      eth0 ── out ─┐              Service routes; nothing else)
//!                   ├── n0 ── eth0  node 0 ── p0 ── eth0  Pod 0
//!                   │                        └─ p1 ── eth0  Pod 1
//!                   └── n1 ── eth0  node 1 ── p2 ── eth0  Pod 2
//! ```
//!
//! A host with rules of its own (the lab's laptop) gets a namespace of
//! its own, with one veth to the fabric per interface its routes name,
//! under that interface's name (`wlan0`, `br-…`, which its rules match
//! with `-o`), its addresses on them, its routes through the fabric, and
//! `route_localnet` where its snapshot says.
//!
//! The fabric is the network between the nodes: it routes each node's
//! InternalIP to it, each Pod address to its node (host-gw), each outside
//! address to the client namespace, and, per decision, a Service address
//! (cluster, external or load balancer IP) to the node under test, as a
//! router with a static route or a balancer that keeps the destination
//! would. It has no default route: an address nobody holds is
//! unreachable. Nodes have `ip_forward`, `route_localnet` when localhost
//! node ports are on (iptables mode only: the nftables mode has none), and
//! the conntrack timeouts kube-proxy sets; IPv6 is off everywhere so
//! nothing but the probes' packets meets the rules.
//!
//! A node's rules are kube-proxy's iptables rules, loaded with the
//! topology's iptables backend, or in nftables mode its `ip kube-proxy`
//! table, loaded with `nft`, after the network plugin's iptables rules
//! where the node has any (with the backend, so at the nat hooks, where
//! both sit at the same priority, the kernel asks kube-proxy's chains
//! first, as the model does). Hosts' own tables always use the backend.
//!
//! Under a VXLAN Pod network (a scenario built with `network=vxlan`),
//! each node with a Pod range also holds flannel's `flannel.1` with its
//! neighbours, FDB entries and routes for the other nodes' Pod ranges, its
//! UDP socket in an underlay namespace of the node's own (`u<i>`, the
//! node's address again, on a link the fabric sends only the VXLAN port's
//! datagrams to), so Pod packets between nodes cross the fabric wrapped;
//! see `Topology::overlay`.
//!
//! Dropping a [`Topology`] stops its servers, then deletes every
//! namespace (which removes the veths with them).

use crate::kernel::{self, Backend};
use crate::netns::Netns;
use crate::plan::{Machine, Plan, ProxyMode};
use crate::sys;
use crate::wire::{self, Server};
use kubehops_core::dataplane::overlay::PodNetwork;
use kubehops_core::net::{Protocol, SockAddr};
use std::net::Ipv4Addr;

/// The fabric's address on every link, the next hop of nodes and clients.
const FABRIC_HOP: &str = "169.254.0.1";
/// The fabric's marker link (overlay runs only): datagrams from this
/// address to `MARK_TO` go out of `mark0`, seen only by the capture.
pub const MARK_FROM: Ipv4Addr = Ipv4Addr::new(169, 254, 9, 1);
pub const MARK_TO: Ipv4Addr = Ipv4Addr::new(169, 254, 9, 2);
/// The fabric's routing table for the overlay's outer packets.
const UNDERLAY_TABLE: u32 = 100;

pub struct Topology {
    // Field order is drop order: servers first, then the namespaces.
    servers: Vec<Server>,
    pub nodes: Vec<Netns>,
    pub pods: Vec<Netns>,
    pub hosts: Vec<Netns>,
    /// Under a VXLAN overlay, each node's underlay namespace (see `overlay`).
    pub underlay: Vec<Netns>,
    pub outside: Netns,
    pub fabric: Netns,
    pub plan: Plan,
    pub backend: Backend,
}

/// Sysctls every namespace gets: no IPv6, no reverse-path filter.
fn base_sysctls() -> Vec<String> {
    ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
        .map(String::from)
        .to_vec()
}

/// What kube-proxy sets on a node (with its default configuration).
fn node_sysctls(localhost_node_ports: bool, tcp_be_liberal: bool) -> Vec<String> {
    let mut s = base_sysctls();
    s.push("net.ipv4.ip_forward=1".into());
    s.push("net.netfilter.nf_conntrack_tcp_timeout_established=86400".into());
    s.push("net.netfilter.nf_conntrack_tcp_timeout_close_wait=3600".into());
    if localhost_node_ports {
        s.push("net.ipv4.conf.all.route_localnet=1".into());
    }
    if tcp_be_liberal {
        s.push("net.netfilter.nf_conntrack_tcp_be_liberal=1".into());
    }
    s
}

impl Topology {
    pub fn build(plan: Plan, backend: Backend) -> Result<Topology, String> {
        let fabric = Netns::create("net")?;
        let outside = Netns::create("out")?;
        let mut nodes = Vec::new();
        for i in 0..plan.nodes.len() {
            nodes.push(Netns::create(&format!("n{i}"))?);
        }
        let mut pods = Vec::new();
        for j in 0..plan.pods.len() {
            pods.push(Netns::create(&format!("p{j}"))?);
        }
        let mut hosts = Vec::new();
        for h in 0..plan.hosts.len() {
            hosts.push(Netns::create(&format!("h{h}"))?);
        }
        let mut t = Topology { servers: Vec::new(), nodes, pods, hosts, underlay: Vec::new(), outside, fabric, plan, backend };
        t.wire()?;
        t.load_rules()?;
        t.overlay()?;
        t.start_servers()?;
        Ok(t)
    }

    /// Under a VXLAN Pod network (`plan.network`), flannel's state on every
    /// node with a Pod range, from the model's own rendered commands
    /// (`PodNetwork::node_state`): `flannel.1` over `eth0`, and per peer
    /// its neighbour, FDB entry and route, so a Pod packet for another
    /// node leaves wrapped, through the fabric, which then carries the
    /// outer packets between node addresses (its Pod routes stay, for
    /// hosts and outside clients; a bare Pod packet between two nodes on
    /// it is a failure of the overlay check).
    ///
    /// One thing differs from a real node, on purpose: the device's UDP
    /// socket. `flannel.1` is created (by the model's `ip link add`) in an
    /// underlay namespace of the node's own (`u<i>`: the node's address on
    /// an `eth0` into the fabric) and then moved into the node's namespace,
    /// as Docker's overlay driver does; a VXLAN device keeps its socket in
    /// the namespace it was made in. So the Pod packets go through the
    /// node's stack, rules and `flannel.1` exactly as on a node, and the
    /// outer packets, same addresses and ports on the wire, never meet the
    /// node's netfilter: on a real node kube-proxy's INPUT and OUTPUT
    /// chains and conntrack see the VXLAN datagrams too, which is the
    /// underlay's traffic, not a decision of the scenario's, and would
    /// count on rules no Pod packet meets. The fabric hands UDP to the
    /// VXLAN port for a node's address to its underlay namespace (a policy
    /// rule and table `UNDERLAY_TABLE`), everything else to the node.
    ///
    /// The fabric gets a veth pair `mark0`, `mark1` (no module needed,
    /// unlike a dummy device) that the capture uses to mark where each
    /// attempt starts and ends: a datagram out of `mark0` to a permanent
    /// neighbour no one is, dropped at `mark1`.
    fn overlay(&mut self) -> Result<(), String> {
        let PodNetwork::Vxlan(cfg) = &self.plan.network else { return Ok(()) };
        let nodes = self.plan.overlay_nodes();
        let mut fabric = vec![format!("rule add ipproto udp dport {} lookup {UNDERLAY_TABLE} pref 100", cfg.port)];
        for (i, n) in self.plan.nodes.iter().enumerate() {
            let Some(o) = nodes.iter().find(|o| o.name == n.node.name) else { continue };
            let under = Netns::create(&format!("u{i}"))?;
            self.fabric.ip_batch(&[format!("link add v{i} type veth peer name eth0 netns {}", under.name())])?;
            under.sysctl(&base_sysctls())?;
            under.ip_batch(&[
                format!("addr add {}/32 dev eth0", n.node.internal_ip),
                "link set eth0 up".into(),
                format!("route add {FABRIC_HOP} dev eth0 scope link"),
                format!("route add default via {FABRIC_HOP} dev eth0"),
            ])?;
            fabric.push(format!("addr add {FABRIC_HOP}/32 dev v{i}"));
            fabric.push(format!("link set v{i} up"));
            fabric.push(format!("route add {}/32 dev v{i} table {UNDERLAY_TABLE}", n.node.internal_ip));
            let node_ns = self.nodes[i].name().to_string();
            for cmd in self.plan.network.node_state(o, &nodes).commands() {
                let mut words = cmd.split_whitespace();
                let tool = words.next().unwrap_or_default();
                // The device is made in the underlay namespace, then moved.
                let create = cmd.starts_with(&format!("ip link add {} ", cfg.device));
                let mut args = vec!["-n", if create { under.name() } else { node_ns.as_str() }];
                args.extend(words);
                sys::run(tool, &args, None).map_err(|e| format!("node {}: the overlay's `{cmd}`: {e}", n.node.name))?;
                if create {
                    under.ip(&["link", "set", &cfg.device, "netns", &node_ns])?;
                }
            }
            // The device as the kernel holds it: the model's settings.
            let link = self.nodes[i].ip(&["-d", "-o", "link", "show", &cfg.device])?;
            let learning = if cfg.learning { "learning" } else { "nolearning" };
            let want = [format!(" mtu {} ", cfg.mtu), format!("vxlan id {} ", cfg.vni), format!("local {} ", n.node.internal_ip), format!("dstport {} ", cfg.port), format!(" {learning} ")];
            if let Some(w) = want.iter().find(|w| !link.contains(w.as_str())) {
                return Err(format!("node {}: {} does not show `{}`, as the model set it: {link}", n.node.name, cfg.device, w.trim()));
            }
            self.underlay.push(under);
        }
        fabric.extend([
            "link add mark0 type veth peer name mark1".into(),
            format!("addr add {MARK_FROM}/32 dev mark0"),
            "link set mark0 up".into(),
            "link set mark1 up".into(),
            format!("route add {MARK_TO}/32 dev mark0"),
            format!("neigh add {MARK_TO} lladdr 02:00:00:00:00:09 dev mark0 nud permanent"),
        ]);
        self.fabric.ip_batch(&fabric)
    }

    /// Links, addresses and routes, one `ip -batch` per namespace and phase.
    fn wire(&mut self) -> Result<(), String> {
        let mut fabric = Vec::new();
        fabric.push(format!("link add out type veth peer name eth0 netns {}", self.outside.name()));
        for (i, ns) in self.nodes.iter().enumerate() {
            fabric.push(format!("link add n{i} type veth peer name eth0 netns {}", ns.name()));
        }
        for (h, host) in self.plan.hosts.iter().enumerate() {
            for (k, iface) in host.interfaces().iter().enumerate() {
                fabric.push(format!("link add h{h}i{k} type veth peer name {iface} netns {}", self.hosts[h].name()));
            }
        }
        self.fabric.ip_batch(&fabric)?;
        for i in 0..self.plan.nodes.len() {
            let links: Vec<String> =
                self.plan.pods.iter().enumerate().filter(|(_, p)| p.node == i).map(|(j, _)| format!("link add p{j} type veth peer name eth0 netns {}", self.pods[j].name())).collect();
            self.nodes[i].ip_batch(&links)?;
        }
        self.fabric.sysctl(&[base_sysctls(), vec!["net.ipv4.ip_forward=1".to_string()]].concat())?;
        self.outside.sysctl(&base_sysctls())?;
        self.fabric.ip_batch(&self.fabric_commands())?;
        self.outside.ip_batch(&self.outside_commands())?;
        for i in 0..self.nodes.len() {
            let n = &self.plan.nodes[i];
            let localhost_node_ports = n.cfg.localhost_node_ports && n.nft.is_none();
            self.nodes[i].sysctl(&node_sysctls(localhost_node_ports, n.cfg.tcp_be_liberal))?;
            self.nodes[i].ip_batch(&self.node_commands(i))?;
        }
        for j in 0..self.pods.len() {
            self.pods[j].sysctl(&base_sysctls())?;
            self.pods[j].ip_batch(&self.pod_commands(j))?;
        }
        for h in 0..self.hosts.len() {
            self.hosts[h].ip_batch(&self.host_commands(h))?;
            let mut sysctls = base_sysctls();
            // After the links exist: their own settings.
            for iface in self.plan.hosts[h].route_localnet.iter().filter(|i| self.plan.hosts[h].interfaces().contains(i)) {
                sysctls.push(format!("net.ipv4.conf.{iface}.route_localnet=1"));
            }
            self.hosts[h].sysctl(&sysctls)?;
        }
        Ok(())
    }

    /// A host's side: its addresses on its interfaces, and its routes,
    /// each through the fabric.
    fn host_commands(&self, h: usize) -> Vec<String> {
        let host = &self.plan.hosts[h];
        let mut c = Vec::new();
        for iface in host.interfaces() {
            c.push(format!("link set {iface} up"));
        }
        for (a, iface) in host.addrs.iter().filter(|(a, _)| !a.is_loopback()) {
            c.push(format!("addr add {a}/32 dev {iface}"));
        }
        for (dst, iface) in host.routes.iter().filter(|(_, i)| i != "lo") {
            c.push(format!("route add {dst} via {FABRIC_HOP} dev {iface} onlink"));
        }
        c
    }

    fn fabric_commands(&self) -> Vec<String> {
        let mut c = vec![format!("addr add {FABRIC_HOP}/32 dev out"), "link set out up".into()];
        for a in &self.plan.outside {
            c.push(format!("route add {a}/32 dev out"));
        }
        for (i, n) in self.plan.nodes.iter().enumerate() {
            c.push(format!("addr add {FABRIC_HOP}/32 dev n{i}"));
            c.push(format!("link set n{i} up"));
            c.push(format!("route add {}/32 dev n{i}", n.node.internal_ip));
        }
        for p in &self.plan.pods {
            c.push(format!("route add {}/32 via {} dev n{}", p.ip, self.plan.nodes[p.node].node.internal_ip, p.node));
        }
        for (h, host) in self.plan.hosts.iter().enumerate() {
            let ifaces = host.interfaces();
            for k in 0..ifaces.len() {
                c.push(format!("addr add {FABRIC_HOP}/32 dev h{h}i{k}"));
                c.push(format!("link set h{h}i{k} up"));
            }
            for (a, iface) in host.addrs.iter().filter(|(a, _)| !a.is_loopback()) {
                if let Some(k) = ifaces.iter().position(|i| i == iface) {
                    c.push(format!("route add {a}/32 dev h{h}i{k}"));
                }
            }
        }
        c
    }

    fn outside_commands(&self) -> Vec<String> {
        let mut c: Vec<String> = self.plan.outside.iter().map(|a| format!("addr add {a}/32 dev eth0")).collect();
        c.push("link set eth0 up".into());
        c.push(format!("route add {FABRIC_HOP} dev eth0 scope link"));
        c.push(format!("route add default via {FABRIC_HOP} dev eth0"));
        c
    }

    fn node_commands(&self, i: usize) -> Vec<String> {
        let n = &self.plan.nodes[i];
        let mut c = vec![format!("addr add {}/32 dev eth0", n.node.internal_ip), "link set eth0 up".into()];
        c.push(format!("route add {FABRIC_HOP} dev eth0 scope link"));
        c.push(format!("route add default via {FABRIC_HOP} dev eth0"));
        let scope = if n.gateway_link_scope { " scope link" } else { "" };
        for (j, p) in self.plan.pods.iter().enumerate().filter(|(_, p)| p.node == i) {
            c.push(format!("addr add {}/32 dev p{j}{scope}", n.gateway));
            c.push(format!("link set p{j} up"));
            c.push(format!("route add {}/32 dev p{j} scope link", p.ip));
        }
        c
    }

    fn pod_commands(&self, j: usize) -> Vec<String> {
        let p = &self.plan.pods[j];
        let gw = self.plan.nodes[p.node].gateway;
        vec![
            format!("addr add {}/32 dev eth0", p.ip),
            "link set eth0 up".into(),
            format!("route add {gw} dev eth0 scope link"),
            format!("route add default via {gw} dev eth0"),
        ]
    }

    fn load_rules(&self) -> Result<(), String> {
        for (i, n) in self.plan.nodes.iter().enumerate() {
            // Of nat chains at one hook and priority, the kernel asks the
            // one registered last first, and stops at the first that sets
            // up the connection's NAT: kube-proxy's table goes in after the
            // network plugin's iptables rules, so its masquerade comes
            // first, as in `NodeTables::decide`. A cluster's node in
            // nftables mode holds no iptables rule at all.
            let iptables = n.uses_iptables();
            let loaded = (|| {
                if iptables {
                    kernel::load_rules(&self.nodes[i], self.backend, &n.rules, n.features())?;
                }
                match &n.nft {
                    Some(rs) => kernel::load_nft(&self.nodes[i], rs, iptables),
                    None => Ok(()),
                }
            })();
            loaded.map_err(|e| format!("node {}: {e}", n.node.name))?;
        }
        for (h, host) in self.plan.hosts.iter().enumerate() {
            kernel::load_host_rules(&self.hosts[h], self.backend, &host.rules, &host.lines).map_err(|e| format!("host {}: {e}", host.name))?;
        }
        Ok(())
    }

    fn start_servers(&mut self) -> Result<(), String> {
        for (j, p) in self.plan.pods.iter().enumerate() {
            let listen: Vec<(Protocol, std::net::SocketAddrV4)> =
                p.listen.iter().filter(|(proto, _)| *proto != Protocol::Sctp).map(|(proto, port)| (*proto, sys::v4(p.ip, *port))).collect();
            if !listen.is_empty() {
                self.servers.push(wire::serve(&self.pods[j], &listen)?);
            }
        }
        let outside: Vec<(Protocol, std::net::SocketAddrV4)> = self.plan.outside_listen.iter().map(|(proto, a)| (*proto, sys::v4(a.ip, a.port))).collect();
        if !outside.is_empty() {
            self.servers.push(wire::serve(&self.outside, &outside)?);
        }
        for (i, n) in self.plan.nodes.iter().enumerate() {
            // kube-proxy's health check server listens on every address.
            let listen: Vec<(Protocol, std::net::SocketAddrV4)> = n.health_ports.iter().map(|p| (Protocol::Tcp, sys::v4(Ipv4Addr::UNSPECIFIED, *p))).collect();
            if !listen.is_empty() {
                self.servers.push(wire::serve(&self.nodes[i], &listen)?);
            }
        }
        Ok(())
    }

    /// Routes `vip` to node `n` in the fabric (`None`: removes the route).
    pub fn route_vip(&self, vip: Ipv4Addr, n: Option<usize>) -> Result<(), String> {
        let dst = format!("{vip}/32");
        match n {
            Some(n) => {
                let via = self.plan.nodes[n].node.internal_ip.to_string();
                self.fabric.ip(&["route", "replace", &dst, "via", &via, "dev", &format!("n{n}")]).map(|_| ())
            }
            None => self.fabric.ip(&["route", "del", &dst]).map(|_| ()),
        }
    }

    /// The namespace a decision's source runs in.
    pub fn source_ns(&self, source: crate::decisions::Source, node: usize, src: Ipv4Addr) -> Result<&Netns, String> {
        use crate::decisions::Source;
        match source {
            Source::Outside => Ok(&self.outside),
            Source::Node => Ok(&self.nodes[node]),
            Source::Pod => self.plan.pod_of(src).map(|j| &self.pods[j]).ok_or_else(|| format!("no Pod with address {src}")),
            Source::Host => self.plan.host_of(src).map(|h| &self.hosts[h]).ok_or_else(|| format!("no host with address {src}")),
        }
    }

    /// The namespace of a node or host.
    pub fn machine_ns(&self, m: Machine) -> &Netns {
        match m {
            Machine::Node(i) => &self.nodes[i],
            Machine::Host(h) => &self.hosts[h],
        }
    }

    /// Whether an address is one the fabric routes for good (a node, Pod
    /// or outside address), so it needs no per-decision route.
    pub fn is_routed(&self, a: Ipv4Addr) -> bool {
        self.plan.nodes.iter().any(|n| n.node.internal_ip == a) || self.plan.pod_of(a).is_some() || self.plan.outside.contains(&a) || self.plan.host_of(a).is_some()
    }

    /// What decides packets here, for messages: `iptables-nft`,
    /// `iptables-legacy`, or `nftables` (kube-proxy's nftables mode;
    /// `nftables, plugin with iptables-nft` where a node holds the network
    /// plugin's iptables rules too).
    pub fn label(&self) -> String {
        match self.plan.mode {
            ProxyMode::Iptables => format!("iptables-{}", self.backend.name()),
            ProxyMode::Nftables if self.plan.nodes.iter().any(|n| n.plugin_rules().is_some()) => format!("nftables, plugin with iptables-{}", self.backend.name()),
            ProxyMode::Nftables => "nftables".into(),
        }
    }

    /// Clears counters, connections and recent lists (in nftables mode,
    /// connections and affinity sets) on every node and host.
    pub fn reset(&self) -> Result<(), String> {
        for (i, ns) in self.nodes.iter().enumerate() {
            let n = &self.plan.nodes[i];
            match &n.nft {
                Some(rs) => kernel::reset_nft(ns, &kernel::dynamic_sets(rs), n.uses_iptables().then_some(self.backend))?,
                None => kernel::reset(ns, self.backend)?,
            }
        }
        for ns in &self.hosts {
            kernel::reset(ns, self.backend)?;
        }
        Ok(())
    }

    /// Counters and connections of one node or host (in nftables mode,
    /// connections and affinity sets).
    pub fn read_machine(&self, m: Machine) -> Result<kernel::NodeState, String> {
        match m {
            Machine::Node(i) => self.read_node(i),
            Machine::Host(_) => kernel::read(self.machine_ns(m), self.backend),
        }
    }

    fn read_node(&self, i: usize) -> Result<kernel::NodeState, String> {
        let n = &self.plan.nodes[i];
        match &n.nft {
            Some(rs) => kernel::read_nft(&self.nodes[i], &kernel::dynamic_sets(rs), n.uses_iptables().then_some(self.backend)),
            None => kernel::read(&self.nodes[i], self.backend),
        }
    }

    /// Every node's counters and connections.
    pub fn read(&self) -> Result<Vec<kernel::NodeState>, String> {
        (0..self.nodes.len()).map(|i| self.read_node(i)).collect()
    }

    /// The node, if any, whose Pod holds `addr`.
    pub fn node_of_pod(&self, addr: SockAddr) -> Option<usize> {
        self.plan.pod_of(addr.ip).map(|j| self.plan.pods[j].node)
    }
}
