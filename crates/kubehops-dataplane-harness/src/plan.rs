//! What to build for one cluster, decided before anything is built: its
//! nodes with the rules the model wrote for each, its Pods, and the
//! outside sources. Pure data, so it can be checked without a kernel.
//!
//! Nodes are the Node objects, plus one node for every `nodeName` an
//! EndpointSlice names that no Node object has (kube-proxy's tests put
//! endpoints on `other`, or on no node at all): such a node gets an
//! address of the harness's own (100.64.0.0/10) and the rules kube-proxy
//! would write there. Pods are the endpoints, by address, on the node
//! their endpoint names, listening on every port their slices give;
//! and the client Pods the decisions send from.
//!
//! A Pod is attached to its node as CNI plugins of the point-to-point
//! kind do: the node's side of the Pod's veth holds the gateway address,
//! the first address of the node's Pod range (`podCIDR`), which is also
//! what the model counts as a node address (`trace::node_addresses`).
//! A node without a Pod range gets the link-local gateway 169.254.1.1
//! instead, which the kernel never picks as a source, so a masqueraded
//! packet to one of its Pods leaves from its InternalIP, as the model's
//! routing says.
//!
//! A cluster is planned in one of kube-proxy's two modes ([`ProxyMode`]):
//! in iptables mode each node holds the `filter` and `nat` rules of
//! `kubeproxy::sync_node`; in nftables mode it holds the `ip kube-proxy`
//! table of `nftables::sync_node` instead, and no iptables rules at all
//! (kube-proxy writes none in that mode). A scenario's data plane in
//! nftables mode holds both: kube-proxy's table, and in iptables the
//! network plugin's masquerade (ip-masq-agent's or kindnet's chain), as a
//! real node does.

use crate::decisions::{Decision, Source};
use kubehops_core::api::{EndpointSlice, Node, Service, ServiceType, TrafficPolicy};
use kubehops_core::dataplane::iptables::{RuleRef, TableName};
pub use kubehops_core::dataplane::kubeproxy::ProxyMode;
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig, NodeFeatures, NodeRules};
use kubehops_core::dataplane::netfilter::NodeContext;
use kubehops_core::dataplane::nftables::{self, NftablesConfig, Ruleset};
use kubehops_core::dataplane::overlay::{OverlayNode, PodNetwork};
use kubehops_core::dataplane::trace::node_addresses;
use kubehops_core::net::{ip, Cidr, Protocol, SockAddr};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// The objects one cluster is built from: what kube-proxy sees.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    pub name: String,
    pub nodes: Vec<Node>,
    pub services: Vec<Service>,
    pub slices: Vec<EndpointSlice>,
    /// Every node's kube-proxy configuration; `hostnameOverride` is set
    /// per node.
    pub proxy: KubeProxyConfig,
    /// The Service ranges (the API server's ServiceCIDRs): in nftables
    /// mode, kube-proxy drops new connections to addresses inside them
    /// that no Service holds. Empty: unknown, no such rule.
    pub service_cidrs: Vec<Cidr>,
}

#[derive(Clone, Debug)]
pub struct PlannedNode {
    pub node: Node,
    /// Named by an endpoint only, with no Node object.
    pub implicit: bool,
    pub cfg: KubeProxyConfig,
    /// The node's iptables rules: kube-proxy's in iptables mode (or a
    /// data plane's full tables); in nftables mode none for a cluster,
    /// the network plugin's for a scenario's data plane.
    pub rules: NodeRules,
    /// kube-proxy's `ip kube-proxy` table, in nftables mode.
    pub nft: Option<Ruleset>,
    /// The address on the node's side of every Pod veth.
    pub gateway: Ipv4Addr,
    pub gateway_link_scope: bool,
    /// The health check node ports kube-proxy's health server answers on.
    pub health_ports: Vec<u16>,
}

impl PlannedNode {
    pub fn features(&self) -> NodeFeatures {
        self.cfg.node_features
    }

    /// Whether the node's iptables are loaded: always in iptables mode; in
    /// nftables mode where something besides kube-proxy wrote rules (the
    /// network plugin on a scenario's node).
    pub fn uses_iptables(&self) -> bool {
        self.nft.is_none() || self.rules.filter.chains.iter().chain(&self.rules.nat.chains).any(|c| !c.rules.is_empty())
    }

    /// The network plugin's iptables rules beside kube-proxy's nftables
    /// table, if the node holds any.
    pub fn plugin_rules(&self) -> Option<&NodeRules> {
        self.nft.as_ref().and(self.uses_iptables().then_some(&self.rules))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedPod {
    pub ip: Ipv4Addr,
    pub node: usize,
    pub listen: Vec<(Protocol, u16)>,
}

/// A machine outside the cluster with rules of its own (the lab's
/// laptop running Docker): its addresses on its interfaces, its routes,
/// and its tables with the lines its hops name.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedHost {
    pub name: String,
    /// Every address, with the interface that holds it (`lo` for loopback).
    pub addrs: Vec<(Ipv4Addr, String)>,
    /// Where packets to each destination leave.
    pub routes: Vec<(Cidr, String)>,
    /// Its filter and nat tables (no kube-proxy Service chains).
    pub rules: NodeRules,
    /// Its rules as the scenario numbers them, and the rule at each line.
    pub lines: Vec<String>,
    pub rule_lines: Vec<(RuleRef, usize)>,
    /// Interfaces that route loopback addresses (`route_localnet`).
    pub route_localnet: Vec<String>,
}

impl PlannedHost {
    /// The interfaces the host has besides loopback, in a fixed order.
    pub fn interfaces(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for i in self.addrs.iter().map(|(_, i)| i).chain(self.routes.iter().map(|(_, i)| i)) {
            if i != "lo" && !out.contains(i) {
                out.push(i.clone());
            }
        }
        out
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub name: String,
    /// The mode every node's kube-proxy runs in.
    pub mode: ProxyMode,
    pub nodes: Vec<PlannedNode>,
    pub pods: Vec<PlannedPod>,
    pub outside: Vec<Ipv4Addr>,
    /// Servers in the outside namespace (a resolver, a site).
    pub outside_listen: Vec<(Protocol, SockAddr)>,
    pub hosts: Vec<PlannedHost>,
    /// How Pod traffic crosses between nodes: routed through the fabric
    /// (every cluster, and a scenario built with `network=routed`), or
    /// flannel's VXLAN overlay (a scenario built with `network=vxlan`).
    pub network: PodNetwork,
}

/// One machine whose rules decide packets: a node or a host, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Machine {
    Node(usize),
    Host(usize),
}

/// A data plane given as it is (a scenario's snapshot): every node with
/// the full tables it holds (its iptables rules, and in nftables mode
/// kube-proxy's `ip kube-proxy` table), the Pods, the hosts.
#[derive(Clone, Debug, PartialEq)]
pub struct DataplaneSpec {
    pub name: String,
    pub proxy: KubeProxyConfig,
    pub nodes: Vec<(Node, NodeRules, Option<Ruleset>)>,
    /// Address, node name, the port it serves.
    pub pods: Vec<(Ipv4Addr, String, u16)>,
    pub hosts: Vec<PlannedHost>,
}


/// The gateway of a node without a Pod range (as Calico uses).
pub const LINK_GATEWAY: Ipv4Addr = ip(169, 254, 1, 1);

impl Plan {
    pub fn new(spec: &ClusterSpec, decisions: &[Decision], mode: ProxyMode) -> Result<Plan, String> {
        let mut nodes: Vec<(Node, bool)> = spec.nodes.iter().map(|n| (n.clone(), false)).collect();
        let mut taken: BTreeSet<Ipv4Addr> = spec.nodes.iter().map(|n| n.internal_ip).collect();
        for s in &spec.slices {
            for e in &s.endpoints {
                taken.insert(e.ip);
            }
        }
        let mut next_implicit = 1u32;
        for s in &spec.slices {
            for e in &s.endpoints {
                if nodes.iter().all(|(n, _)| n.name != e.node_name) {
                    let addr = loop {
                        let a = Ipv4Addr::from(u32::from(ip(100, 64, 0, 0)) + next_implicit);
                        next_implicit += 1;
                        if taken.insert(a) {
                            break a;
                        }
                    };
                    nodes.push((Node { name: e.node_name.clone(), internal_ip: addr, pod_cidr: None }, true));
                }
            }
        }
        let planned: Vec<PlannedNode> = nodes.into_iter().map(|(n, implicit)| plan_node(spec, n, implicit, mode)).collect();
        let mut plan = Plan { name: spec.name.clone(), mode, nodes: planned, pods: Vec::new(), outside: Vec::new(), outside_listen: Vec::new(), hosts: Vec::new(), network: PodNetwork::Routed };
        plan.add_endpoint_pods(spec);
        for d in decisions {
            plan.add_source(d)?;
        }
        plan.check_addresses()?;
        Ok(plan)
    }

    fn add_endpoint_pods(&mut self, spec: &ClusterSpec) {
        for s in &spec.slices {
            for e in &s.endpoints {
                let Some(node) = self.node_index(&e.node_name) else { continue };
                let listen: Vec<(Protocol, u16)> = s.ports.iter().map(|p| (p.protocol, p.port)).collect();
                match self.pods.iter_mut().find(|p| p.ip == e.ip) {
                    Some(p) => {
                        for l in listen {
                            if !p.listen.contains(&l) {
                                p.listen.push(l);
                            }
                        }
                    }
                    None => self.pods.push(PlannedPod { ip: e.ip, node, listen }),
                }
            }
        }
    }

    /// A data plane as a scenario recorded it: the nodes keep the tables
    /// they held (nothing is synced again), every Pod listens on its port
    /// (TCP and UDP), and the outside namespace holds `outside` with
    /// servers on `listen`. Health check node ports are not served: no
    /// scenario dials one. Nodes that hold kube-proxy's nftables table
    /// make the plan's mode nftables.
    pub fn from_dataplane(spec: &DataplaneSpec, outside: Vec<Ipv4Addr>, listen: Vec<(Protocol, SockAddr)>) -> Result<Plan, String> {
        let nodes: Vec<PlannedNode> = spec
            .nodes
            .iter()
            .map(|(n, rules, nft)| {
                let mut cfg = spec.proxy.clone();
                cfg.hostname_override = Some(n.name.clone());
                if nft.is_some() {
                    cfg.mode = ProxyMode::Nftables;
                }
                let (gateway, gateway_link_scope) = gateway_of(n);
                PlannedNode { node: n.clone(), implicit: false, cfg, rules: rules.clone(), nft: nft.clone(), gateway, gateway_link_scope, health_ports: Vec::new() }
            })
            .collect();
        let mode = if nodes.iter().any(|n| n.nft.is_some()) { ProxyMode::Nftables } else { ProxyMode::Iptables };
        let mut plan = Plan { name: spec.name.clone(), mode, nodes, pods: Vec::new(), outside, outside_listen: listen, hosts: spec.hosts.clone(), network: PodNetwork::Routed };
        for (addr, node, port) in &spec.pods {
            let n = plan.node_index(node).ok_or_else(|| format!("{}: Pod {addr} on unknown node {node}", spec.name))?;
            plan.pods.push(PlannedPod { ip: *addr, node: n, listen: vec![(Protocol::Tcp, *port), (Protocol::Udp, *port)] });
        }
        plan.check_addresses()?;
        Ok(plan)
    }

    /// Makes sure the decision's source exists: an outside address, or a
    /// client Pod on the decision's node (a host's address is its own).
    pub fn add_source(&mut self, d: &Decision) -> Result<(), String> {
        let node = self.node_index(&d.node).ok_or_else(|| format!("{}: no node {}", d.what, d.node))?;
        match d.source {
            Source::Outside if !self.outside.contains(&d.src) => self.outside.push(d.src),
            Source::Pod if self.pod_of(d.src).is_none() => self.pods.push(PlannedPod { ip: d.src, node, listen: Vec::new() }),
            Source::Host if self.host_of(d.src).is_none() => return Err(format!("{}: no host holds {}", d.what, d.src)),
            _ => {}
        }
        Ok(())
    }

    /// Every address is held once: a clash would route packets somewhere
    /// the model does not think they go.
    fn check_addresses(&self) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        let node_addrs = self.nodes.iter().map(|n| n.node.internal_ip);
        let gateways = self.nodes.iter().filter(|n| !n.gateway_link_scope).map(|n| n.gateway);
        let hosts = self.hosts.iter().flat_map(|h| h.addrs.iter().map(|(a, _)| *a)).filter(|a| !a.is_loopback());
        let all = node_addrs.chain(gateways).chain(self.pods.iter().map(|p| p.ip)).chain(self.outside.iter().copied()).chain(hosts);
        for a in all {
            if !seen.insert(a) {
                return Err(format!("{}: address {a} is used twice in the cluster", self.name));
            }
        }
        Ok(())
    }

    /// The nodes as the Pod network sees them (as `World::overlay_nodes`
    /// does): those with a Pod range, their InternalIP on `eth0`.
    pub fn overlay_nodes(&self) -> Vec<OverlayNode> {
        self.nodes.iter().filter_map(|n| Some(OverlayNode::new(&n.node.name, n.node.internal_ip, "eth0", n.node.pod_cidr?))).collect()
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.node.name == name)
    }

    /// The node or host of that name.
    pub fn machine(&self, name: &str) -> Option<Machine> {
        self.node_index(name).map(Machine::Node).or_else(|| self.hosts.iter().position(|h| h.name == name).map(Machine::Host))
    }

    /// Every machine: the nodes, then the hosts.
    pub fn machines(&self) -> Vec<Machine> {
        (0..self.nodes.len()).map(Machine::Node).chain((0..self.hosts.len()).map(Machine::Host)).collect()
    }

    pub fn machine_name(&self, m: Machine) -> &str {
        match m {
            Machine::Node(i) => &self.nodes[i].node.name,
            Machine::Host(h) => &self.hosts[h].name,
        }
    }

    pub fn machine_rules(&self, m: Machine) -> &NodeRules {
        match m {
            Machine::Node(i) => &self.nodes[i].rules,
            Machine::Host(h) => &self.hosts[h].rules,
        }
    }

    /// A machine's iptables rules as the scenario's hops number them.
    pub fn machine_lines(&self, m: Machine) -> Vec<String> {
        match m {
            Machine::Node(i) => self.nodes[i].rules.save(),
            Machine::Host(h) => self.hosts[h].lines.clone(),
        }
    }

    /// kube-proxy's nftables table on a node, in nftables mode.
    pub fn machine_nft(&self, m: Machine) -> Option<&Ruleset> {
        match m {
            Machine::Node(i) => self.nodes[i].nft.as_ref(),
            Machine::Host(_) => None,
        }
    }

    /// The rule of kube-proxy's nftables table at a line of its
    /// transaction (`None` for a map element's line, or another line).
    pub fn nft_rule_at(&self, m: Machine, line: usize) -> Option<&nftables::Rule> {
        let rs = self.machine_nft(m)?;
        rs.chains.iter().find_map(|c| c.rules.iter().enumerate().find(|(k, _)| rs.rule_line(&c.name, *k) == Some(line)).map(|(_, r)| r))
    }

    /// The rule at a line of [`Plan::machine_lines`].
    pub fn rule_at(&self, m: Machine, table: TableName, line: usize) -> Option<RuleRef> {
        match m {
            Machine::Node(i) => {
                let rules = &self.nodes[i].rules;
                let t = if table == TableName::Nat { &rules.nat } else { &rules.filter };
                t.chains.iter().flat_map(|c| (0..c.rules.len()).map(move |k| RuleRef { table, chain: c.name.clone(), index: k })).find(|r| rules.line_of(r) == Some(line))
            }
            Machine::Host(h) => self.hosts[h].rule_lines.iter().find(|(r, l)| *l == line && r.table == table).map(|(r, _)| r.clone()),
        }
    }

    /// What the netfilter walk on a machine needs to know of it: its
    /// addresses, and a host's routes (its rules name interfaces).
    pub fn machine_ctx(&self, m: Machine) -> NodeContext {
        match m {
            Machine::Node(i) => NodeContext::new(node_addresses(&self.nodes[i].node)),
            Machine::Host(h) => {
                let host = &self.hosts[h];
                let mut ctx = NodeContext::new(host.addrs.iter().map(|(a, _)| *a).collect());
                ctx.routes = host.routes.clone();
                ctx
            }
        }
    }

    /// The host that holds an address, if any.
    pub fn host_of(&self, a: Ipv4Addr) -> Option<usize> {
        self.hosts.iter().position(|h| h.addrs.iter().any(|(x, _)| *x == a))
    }

    pub fn pod_of(&self, ip: Ipv4Addr) -> Option<usize> {
        self.pods.iter().position(|p| p.ip == ip)
    }

    /// The source MASQUERADE gives a packet that node `n` sends to `dst`:
    /// the address of the interface it leaves by. Towards one of its own
    /// Pods that is the Pod gateway (when it is a real address), towards
    /// anything else the node's InternalIP; under a VXLAN overlay, towards
    /// another node's Pod range, `flannel.1`'s address (the first of the
    /// node's own Pod range), as `World::leaving_address` has it.
    pub fn masquerade_source(&self, n: usize, dst: Ipv4Addr) -> Ipv4Addr {
        let node = &self.nodes[n];
        let local_pod = self.pods.iter().any(|p| p.ip == dst && p.node == n);
        let overlay = self.overlay_nodes();
        let peer_pods = overlay.iter().any(|o| o.name != node.node.name && o.pod_cidr.contains(dst));
        match (&self.network, overlay.iter().find(|o| o.name == node.node.name)) {
            (PodNetwork::Vxlan(_), Some(me)) if peer_pods => me.vtep_address(),
            _ if local_pod && !node.gateway_link_scope => node.gateway,
            _ => node.node.internal_ip,
        }
    }
}

fn plan_node(spec: &ClusterSpec, node: Node, implicit: bool, mode: ProxyMode) -> PlannedNode {
    let mut cfg = spec.proxy.clone();
    cfg.hostname_override = Some(node.name.clone());
    cfg.mode = mode;
    let (rules, nft) = match mode {
        ProxyMode::Iptables => (sync_node(&node, &spec.services, &spec.slices, &cfg), None),
        ProxyMode::Nftables => {
            // The node's other addresses (its Pod gateway, loopback), for
            // nodePortAddresses, as kube-proxy reads them off its interfaces.
            let local_addresses = node_addresses(&node).into_iter().filter(|a| *a != node.internal_ip).collect();
            let nft_cfg = NftablesConfig { service_cidrs: spec.service_cidrs.clone(), local_addresses, ..NftablesConfig::for_node(cfg.clone(), &node) };
            (NodeRules::empty(&node.name), Some(nftables::sync_node(&node, &spec.services, &spec.slices, &nft_cfg)))
        }
    };
    let (gateway, gateway_link_scope) = gateway_of(&node);
    // kube-proxy's health check server answers in both modes.
    let health_ports = if implicit { Vec::new() } else { health_ports(&spec.services) };
    PlannedNode { node, implicit, cfg, rules, nft, gateway, gateway_link_scope, health_ports }
}

/// The address on the node's side of its Pods' veths, and whether it is
/// link-local (no Pod range).
fn gateway_of(node: &Node) -> (Ipv4Addr, bool) {
    match node.pod_cidr.and_then(|c| c.nth(1)) {
        Some(g) => (g, false),
        None => (LINK_GATEWAY, true),
    }
}

/// Health check node ports: LoadBalancer Services with
/// `externalTrafficPolicy: Local` have one, served on every node.
pub fn health_ports(services: &[Service]) -> Vec<u16> {
    let mut out: Vec<u16> = services
        .iter()
        .filter(|s| s.spec.type_ == ServiceType::LoadBalancer && s.spec.external_traffic_policy == TrafficPolicy::Local)
        .filter_map(|s| s.spec.health_check_node_port)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources;

    fn cluster(name: &str) -> sources::Cluster {
        let all = sources::golden_cases().into_iter().chain(sources::fixtures().expect("fixtures load"));
        all.into_iter().find(|c| c.spec.name.ends_with(name)).expect("cluster exists")
    }

    #[test]
    fn endpoints_without_a_node_object_get_a_node_of_their_own() {
        let c = cluster("kube-proxy/cluster-ip");
        let plan = Plan::new(&c.spec, &c.decisions, ProxyMode::Iptables).unwrap();
        let names: Vec<&str> = plan.nodes.iter().map(|n| n.node.name.as_str()).collect();
        assert_eq!(names, ["test-node", "other"]);
        assert!(plan.nodes[1].implicit && plan.nodes[1].node.internal_ip == ip(100, 64, 0, 1));
        let pod = |a| plan.pods[plan.pod_of(a).unwrap()].node;
        assert_eq!((pod(ip(10, 180, 0, 1)), pod(ip(10, 180, 0, 2))), (0, 1), "each endpoint on the node it names");
        // No Pod range: the gateway is link-local, masquerade uses the InternalIP.
        assert!(plan.nodes[0].gateway_link_scope);
        assert_eq!(plan.masquerade_source(0, ip(10, 180, 0, 1)), ip(192, 168, 0, 2));
        // The golden's Pod source is a client Pod on the node.
        assert_eq!(plan.pod_of(ip(10, 0, 0, 5)).map(|j| plan.pods[j].node), Some(0));
    }

    #[test]
    fn in_nftables_mode_nodes_hold_kube_proxys_table_and_no_iptables_rules() {
        let c = cluster("CLI fixtures/cluster");
        let plan = Plan::new(&c.spec, &c.decisions, ProxyMode::Nftables).unwrap();
        assert_eq!(plan.mode, ProxyMode::Nftables);
        for n in &plan.nodes {
            assert!(n.rules.filter.chains.iter().chain(&n.rules.nat.chains).all(|c| c.rules.is_empty()), "{}: no iptables rules", n.node.name);
            assert_eq!(n.cfg.mode, ProxyMode::Nftables);
            let rs = n.nft.as_ref().expect("an ip kube-proxy table");
            // The Service range is known: unallocated cluster IPs are dropped.
            let check = rs.chain(nftables::CLUSTER_IPS_CHECK).unwrap();
            assert_eq!(check.rules.len(), 2, "{}", n.node.name);
            assert!(rs.transaction().iter().any(|l| l.contains("10.96.0.0/12")));
        }
        // The same Pods and sources as in iptables mode.
        let ipt = Plan::new(&c.spec, &c.decisions, ProxyMode::Iptables).unwrap();
        assert_eq!(ipt.pods, plan.pods);
        assert!(ipt.nodes.iter().all(|n| n.nft.is_none() && !n.rules.nat.chains.is_empty()));
    }

    #[test]
    fn a_pod_range_gives_the_gateway_masquerade_uses_towards_local_pods() {
        let c = cluster("CLI fixtures/cluster");
        let plan = Plan::new(&c.spec, &c.decisions, ProxyMode::Iptables).unwrap();
        let n1 = plan.node_index("node-1").unwrap();
        assert_eq!((plan.nodes[n1].gateway, plan.nodes[n1].gateway_link_scope), (ip(10, 244, 1, 1), false));
        assert_eq!(plan.masquerade_source(n1, ip(10, 244, 1, 5)), ip(10, 244, 1, 1), "a Pod on node-1");
        assert_eq!(plan.masquerade_source(n1, ip(10, 244, 3, 9)), ip(10, 0, 0, 11), "a Pod on node-3");
        // shop is an externalTrafficPolicy: Local balancer: every node serves its health check port.
        assert!(plan.nodes.iter().all(|n| !n.health_ports.is_empty()));
        // Every Pod listens on its endpoint port.
        let web = plan.pod_of(ip(10, 244, 3, 9)).unwrap();
        assert_eq!(plan.pods[web].listen, [(Protocol::Tcp, 8080)]);
    }
}
