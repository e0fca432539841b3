//! kube-proxy's nftables mode, walked by packets, against upstream's own
//! packet-flow expectations: every test of kubernetes/kubernetes
//! `pkg/proxy/nftables/proxier_test.go` (at [`COMMIT`]) that calls
//! `runPacketFlowTests`, every sub-case and every flow. The inputs
//! (Services, EndpointSlices, the fake proxier's settings) are rebuilt with
//! this crate's types, the node's `ip kube-proxy` table is synced, and each
//! flow is walked by `trace_nftables`; its verdict, endpoints and
//! masquerade must be what upstream expects. Upstream's expected values are
//! kept here as data (facts from its test, in this file's own structure).
//!
//! How the two walks compare. Upstream's tracer (helpers_test.go) runs
//! filter-prerouting-pre-dnat, nat-prerouting, filter-forward and
//! filter-input, always in that order, for every packet, including those
//! whose source is a node address; it never runs the output or
//! postrouting chains, and it calls a packet masqueraded when some path hit
//! `jump mark-for-masquerade`. The model walks as the kernel does: the
//! prerouting hook by priority, then input (local destination) or forward
//! and nat-postrouting, where `masquerading` masquerades only if the mark is
//! still set. Every flow here starts as upstream's does, arriving from the
//! network (`from_node` false). For a flow whose source is one of the
//! node's addresses the golden also shows the walk of a connection the node
//! opens itself (output hook), which upstream's tracer does not run.
//! "Local" (`fib … type local`) is testNodeIPs' IPv4 half here, as in
//! upstream's tracer (plus loopback, which the kernel always counts).
//! Upstream follows every `numgen` arm; the model's `targets` are every
//! endpoint reachable through them, and its masquerade is checked on every
//! arm (the kernel decides per connection, for the arm taken).
//!
//! Goldens: `tests/golden/nftables/flows/<Test>.txt`, one per upstream
//! test (each flow's packet, the rules it matched, the model's result and
//! upstream's), and `flows/summary.txt` (the counts).
//! `UPDATE_EXPECT=1 cargo test -p kubehops-core --test nftables_flows`
//! rewrites them.

#[path = "support/nft.rs"]
mod nft;

use kubehops_core::api::*;
use kubehops_core::dataplane::kubeproxy::KubeProxyConfig;
use kubehops_core::dataplane::nftables::{self, sync_node, NftablesConfig, Ruleset};
use kubehops_core::dataplane::path::{Entry, FixedDraws};
use kubehops_core::dataplane::trace::{trace_nftables, TraceResult, TraceVerdict};
use kubehops_core::net::{ip, Packet, Protocol, SockAddr};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

/// The kubernetes/kubernetes commit whose proxier_test.go the flows are from.
const COMMIT: &str = "81810de635aa13aa0a32992f6def3aa9d6025ebc";

const HOST: &str = "test-node";

/// testNodeIPs' IPv4 addresses: what upstream's tracer calls local, and
/// the fake proxier's eth0 (192.168.0.2 is the node's own IP).
const NODE_IPS: [Ipv4Addr; 3] = [ip(192, 168, 0, 2), ip(192, 168, 1, 2), ip(192, 168, 99, 11)];

// Upstream's test addresses.
const POD: &str = "10.0.0.2";
const NODE: &str = "192.168.0.2";
const EXT: &str = "203.0.113.2";
const EXT_BLOCKED: &str = "203.0.113.130";

/// Flows where the model, walking as the kernel does, does not give
/// upstream's expected result: (test, run, flow, the model's result as
/// `"output" masq=BOOL`, why). Each must differ exactly so; a difference
/// not listed fails the test, and so does one listed that disappears.
const KNOWN_DIFFERENCES: &[(&str, &str, &str, &str, &str)] = &[];

/// One `packetFlowTest`: what upstream sends and what it expects back.
#[derive(Clone, Debug)]
struct Flow {
    name: &'static str,
    src: &'static str,
    proto: Protocol,
    dst: &'static str,
    port: u16,
    /// `""`, `"DROP"`, `"REJECT"` or the endpoints, `"ip:port, …"`.
    output: String,
    masq: bool,
}

fn flow(name: &'static str, src: &'static str, dst: &'static str, port: u16, output: &str, masq: bool) -> Flow {
    Flow { name, src, proto: Protocol::Tcp, dst, port, output: output.into(), masq }
}

fn flow_proto(proto: Protocol, name: &'static str, src: &'static str, dst: &'static str, port: u16, output: &str, masq: bool) -> Flow {
    Flow { proto, ..flow(name, src, dst, port, output, masq) }
}

/// What one sync is made of.
struct World {
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
    cfg: NftablesConfig,
}

/// One sync and the flows upstream runs against it.
struct Run {
    /// Upstream's sub-case (`t.Run` name), if the test is table-driven.
    case: Option<&'static str>,
    /// What happened since the case's first sync, if anything.
    phase: Option<&'static str>,
    /// The inputs, or why the model cannot run this sync.
    world: Result<World, &'static str>,
    flows: Vec<Flow>,
}

impl Run {
    fn label(&self) -> String {
        match (self.case, self.phase) {
            (None, None) => "the test".into(),
            (None, Some(p)) => p.into(),
            (Some(c), None) => format!("case {c:?}"),
            (Some(c), Some(p)) => format!("case {c:?}, {p}"),
        }
    }
}

/// One upstream test.
struct UpstreamTest {
    name: &'static str,
    /// Its table-driven sub-cases (0: not table-driven).
    cases: usize,
    runs: Vec<Run>,
}

// ------------------------------------------------------------ inputs

fn node() -> Node {
    Node { name: HOST.into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None }
}

/// NewFakeProxier(IPv4): Pods in 10.0.0.0/8 (DetectLocalByCIDR), Services
/// in 172.30.0.0/16, `nodePortAddresses` 192.168.0.2/32 (the IPv6 entry is
/// another family's), the mark 0x4000, the fake eth0's other addresses and
/// lo's.
fn cfg() -> NftablesConfig {
    let proxy = KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().unwrap()), ..Default::default() };
    NftablesConfig {
        node_port_addresses: vec!["192.168.0.2/32".parse().unwrap()],
        service_cidrs: vec!["172.30.0.0/16".parse().unwrap()],
        local_addresses: vec![ip(127, 0, 0, 1), ip(192, 168, 1, 2), ip(192, 168, 99, 11)],
        masquerade_mark: 0x4000,
        ..NftablesConfig::new(proxy)
    }
}

/// A port; upstream's name "" is no name.
fn port(name: &str, protocol: Protocol, port: u16, target_port: u16, node_port: Option<u16>) -> ServicePort {
    let name = (!name.is_empty()).then(|| name.to_string());
    ServicePort { name, protocol, port, target_port, node_port }
}

fn p80(node_port: Option<u16>) -> ServicePort {
    port("p80", Protocol::Tcp, 80, 80, node_port)
}

fn service(ns: &str, name: &str, type_: ServiceType, cluster_ip: Ipv4Addr, ports: Vec<ServicePort>, edit: impl FnOnce(&mut Service)) -> Service {
    let mut s = Service {
        name: name.into(),
        namespace: ns.into(),
        annotations: Default::default(),
        spec: ServiceSpec { type_, ports, cluster_ip: Some(cluster_ip), ..Default::default() },
        status: Default::default(),
        created: None,
    };
    edit(&mut s);
    s
}

fn balancer(s: &mut Service, ips: &[Ipv4Addr]) {
    s.status.load_balancer_ingress = ips.iter().map(|a| LoadBalancerIngress::with_ip(*a, None)).collect();
}

/// An endpoint without conditions (ready); node "" is NodeName nil.
fn ep(a: Ipv4Addr, node: &str) -> Endpoint {
    ep_rst(a, node, true, true, false)
}

/// An endpoint with conditions ready, serving, terminating.
fn ep_rst(a: Ipv4Addr, node: &str, ready: bool, serving: bool, terminating: bool) -> Endpoint {
    Endpoint { ip: a, node_name: node.into(), ready, serving, terminating, target_ref: String::new(), hostname: None }
}

fn eport(name: &str, protocol: Protocol, port: u16) -> EndpointPort {
    EndpointPort { name: (!name.is_empty()).then(|| name.to_string()), protocol, port }
}

/// makeTestEndpointSlice(ns, svc, 1, …).
fn slice(ns: &str, svc: &str, endpoints: Vec<Endpoint>, ports: Vec<EndpointPort>) -> EndpointSlice {
    EndpointSlice { name: format!("{svc}-1"), namespace: ns.into(), service_name: svc.into(), endpoints, ports }
}

fn world(services: Vec<Service>, slices: Vec<EndpointSlice>, cfg: NftablesConfig) -> Result<World, &'static str> {
    Ok(World { services, slices, cfg })
}

fn single(world: Result<World, &'static str>, flows: Vec<Flow>) -> Vec<Run> {
    vec![Run { case: None, phase: None, world, flows }]
}

// ------------------------------------------------------------ the tests

fn no_endpoints_reject() -> UpstreamTest {
    let svc1 = service("ns1", "svc1", ServiceType::LoadBalancer, ip(172, 30, 0, 41), vec![p80(Some(3001))], |s| {
        s.spec.external_ips = vec![ip(192, 168, 99, 11)];
        balancer(s, &[ip(1, 2, 3, 4)]);
    });
    let flows = vec![
        flow("pod to cluster IP with no endpoints", POD, "172.30.0.41", 80, "REJECT", false),
        flow("external to external IP with no endpoints", EXT, "192.168.99.11", 80, "REJECT", false),
        flow("pod to NodePort with no endpoints", POD, NODE, 3001, "REJECT", false),
        flow("external to NodePort with no endpoints", EXT, NODE, 3001, "REJECT", false),
        flow("pod to LoadBalancer IP with no endpoints", POD, "1.2.3.4", 80, "REJECT", false),
        flow("external to LoadBalancer IP with no endpoints", EXT, "1.2.3.4", 80, "REJECT", false),
    ];
    UpstreamTest { name: "TestNoEndpointsReject", cases: 0, runs: single(world(vec![svc1], vec![], cfg()), flows) }
}

fn cluster_ip_general() -> UpstreamTest {
    use Protocol::{Sctp, Tcp, Udp};
    let svc1 = service("ns1", "svc1", ServiceType::ClusterIP, ip(172, 30, 0, 41), vec![port("http", Tcp, 80, 80, None)], |_| {});
    let svc2 = service(
        "ns2",
        "svc2",
        ServiceType::ClusterIP,
        ip(172, 30, 0, 42),
        vec![port("http", Tcp, 80, 80, None), port("https", Tcp, 443, 8443, None), port("dns-udp", Udp, 53, 53, None), port("dns-tcp", Tcp, 53, 5353, None), port("dns-sctp", Sctp, 53, 53, None)],
        |_| {},
    );
    let slices = vec![
        slice("ns1", "svc1", vec![ep(ip(10, 180, 0, 1), HOST)], vec![eport("http", Tcp, 80)]),
        slice(
            "ns2",
            "svc2",
            vec![ep(ip(10, 180, 0, 1), HOST), ep(ip(10, 180, 2, 1), "node2")],
            vec![eport("http", Tcp, 80), eport("https", Tcp, 8443), eport("dns-udp", Udp, 53), eport("dns-tcp", Tcp, 5353), eport("dns-sctp", Sctp, 53)],
        ),
    ];
    let src = "10.180.0.2";
    let flows = vec![
        flow("simple clusterIP", src, "172.30.0.41", 80, "10.180.0.1:80", false),
        flow("hairpin to cluster IP", "10.180.0.1", "172.30.0.41", 80, "10.180.0.1:80", true),
        flow("clusterIP with multiple endpoints", src, "172.30.0.42", 80, "10.180.0.1:80, 10.180.2.1:80", false),
        flow("clusterIP with TargetPort", src, "172.30.0.42", 443, "10.180.0.1:8443, 10.180.2.1:8443", false),
        flow_proto(Tcp, "clusterIP with TCP, UDP, and SCTP on same port (TCP)", src, "172.30.0.42", 53, "10.180.0.1:5353, 10.180.2.1:5353", false),
        // Upstream's name says TCP; the protocol is UDP.
        flow_proto(Udp, "clusterIP with TCP, UDP, and SCTP on same port (TCP)", src, "172.30.0.42", 53, "10.180.0.1:53, 10.180.2.1:53", false),
        flow_proto(Sctp, "clusterIP with TCP, UDP, and SCTP on same port (SCTP)", src, "172.30.0.42", 53, "10.180.0.1:53, 10.180.2.1:53", false),
        flow_proto(Udp, "TCP-only port does not match UDP traffic", src, "172.30.0.42", 80, "REJECT", false),
        flow("svc1 does not accept svc2's ports", src, "172.30.0.41", 443, "REJECT", false),
        flow("packet to unallocated cluster ip", src, "172.30.0.50", 80, "DROP", false),
    ];
    UpstreamTest { name: "TestClusterIPGeneral", cases: 0, runs: single(world(vec![svc1, svc2], slices, cfg()), flows) }
}

fn load_balancer() -> UpstreamTest {
    let svc1 = service("ns1", "svc1", ServiceType::LoadBalancer, ip(172, 30, 0, 41), vec![p80(Some(3001))], |s| {
        balancer(s, &[ip(1, 2, 3, 4), ip(5, 6, 7, 8)]);
        // Upstream writes the second as " 203.0.113.0/25" (kube-proxy
        // trims it); a Cidr here has no room for the space.
        s.spec.load_balancer_source_ranges = vec!["192.168.0.0/24".parse().unwrap(), "203.0.113.0/25".parse().unwrap()];
    });
    let slices = vec![slice("ns1", "svc1", vec![ep(ip(10, 180, 0, 1), "")], vec![eport("p80", Protocol::Tcp, 80)])];
    let e = "10.180.0.1:80";
    let flows = vec![
        flow("pod to cluster IP", POD, "172.30.0.41", 80, e, false),
        flow("external to nodePort", EXT, NODE, 3001, e, true),
        flow("nodePort bypasses LoadBalancerSourceRanges", EXT_BLOCKED, NODE, 3001, e, true),
        flow("accepted external to LB1", EXT, "1.2.3.4", 80, e, true),
        flow("accepted external to LB2", EXT, "5.6.7.8", 80, e, true),
        flow("blocked external to LB1", EXT_BLOCKED, "1.2.3.4", 80, "DROP", false),
        flow("blocked external to LB2", EXT_BLOCKED, "5.6.7.8", 80, "DROP", false),
        flow("pod to LB1 (blocked by LoadBalancerSourceRanges)", POD, "1.2.3.4", 80, "DROP", false),
        flow("pod to LB2 (blocked by LoadBalancerSourceRanges)", POD, "5.6.7.8", 80, "DROP", false),
        flow("node to LB1 (allowed by LoadBalancerSourceRanges)", NODE, "1.2.3.4", 80, e, true),
        flow("node to LB2 (allowed by LoadBalancerSourceRanges)", NODE, "5.6.7.8", 80, e, true),
        flow("same node to LB1, SNATted to LB1 (implicitly allowed)", "1.2.3.4", "1.2.3.4", 80, e, true),
        flow("same node to LB2, SNATted to LB2 (implicitly allowed)", "5.6.7.8", "5.6.7.8", 80, e, true),
    ];
    UpstreamTest { name: "TestLoadBalancer", cases: 0, runs: single(world(vec![svc1], slices, cfg()), flows) }
}

fn node_ports() -> UpstreamTest {
    // (case, IPv6, nodePortAddresses replaced, allowAltNodeIP)
    let cases: [(&'static str, bool, Option<&[&str]>, bool); 4] = [
        ("ipv4", false, None, false),
        ("ipv4, multiple nodeport-addresses", false, Some(&["192.168.0.0/24", "192.168.1.0/24", "2001:db8::/64"]), true),
        ("ipv6", true, None, false),
        ("ipv6, multiple nodeport-addresses", true, Some(&["192.168.0.0/24", "192.168.1.0/24", "2001:db8::/64", "2001:db8:1::2/128"]), true),
    ];
    let mut runs = Vec::new();
    for (case, v6, npa, alt) in cases {
        let (svc_ip, ep1, ep2, node_ip, pod, ext, alt_ip) = if v6 {
            ("fd00:172:30::41", "fd00:10:180::1", "fd00:10:180::2:1", "2001:db8::1", "fd00:10::2", "2600:5200::1", "2001:db8:1::2")
        } else {
            ("172.30.0.41", "10.180.0.1", "10.180.2.1", "192.168.0.2", "10.0.0.2", "203.0.113.2", "192.168.1.2")
        };
        let host_port = |a: &str| if v6 { format!("[{a}]:80") } else { format!("{a}:80") };
        let out = format!("{}, {}", host_port(ep1), host_port(ep2));
        let mut flows = vec![
            flow("pod to cluster IP", pod, svc_ip, 80, &out, false),
            flow("external to nodePort", ext, node_ip, 3001, &out, true),
            flow("node to nodePort", node_ip, node_ip, 3001, &out, true),
        ];
        flows.push(if alt {
            flow("external to nodePort on secondary IP", ext, alt_ip, 3001, &out, true)
        } else {
            flow("secondary nodeIP ignores NodePorts", ext, alt_ip, 3001, "", false)
        });
        let world = if v6 {
            Err("IPv6: the model carries IPv4 addresses only (net::SockAddr, the ip family's table); upstream runs this case with NewFakeProxier(IPv6)")
        } else {
            let mut c = cfg();
            if let Some(npa) = npa {
                // The IPv4 proxier keeps its own family's prefixes.
                c.node_port_addresses = npa.iter().filter(|p| !p.contains(':')).map(|p| p.parse().unwrap()).collect();
            }
            let svc1 = service("ns1", "svc1", ServiceType::NodePort, svc_ip.parse().unwrap(), vec![p80(Some(3001))], |_| {});
            let eps = vec![ep(ep1.parse().unwrap(), ""), ep(ep2.parse().unwrap(), HOST)];
            world(vec![svc1], vec![slice("ns1", "svc1", eps, vec![eport("p80", Protocol::Tcp, 80)])], c)
        };
        runs.push(Run { case: Some(case), phase: None, world, flows });
    }
    UpstreamTest { name: "TestNodePorts", cases: 4, runs }
}

/// TestExternalTrafficPolicyLocal and …Cluster: one LoadBalancer with an
/// external IP, a remote endpoint and a local one.
fn external_traffic_policy(local: bool) -> UpstreamTest {
    let svc1 = service("ns1", "svc1", ServiceType::LoadBalancer, ip(172, 30, 0, 41), vec![p80(Some(3001))], |s| {
        s.spec.external_ips = vec![ip(192, 168, 99, 11)];
        balancer(s, &[ip(1, 2, 3, 4)]);
        if local {
            s.spec.external_traffic_policy = TrafficPolicy::Local;
            s.spec.health_check_node_port = Some(30000);
        }
    });
    let slices = vec![slice("ns1", "svc1", vec![ep(ip(10, 180, 0, 1), ""), ep(ip(10, 180, 2, 1), HOST)], vec![eport("p80", Protocol::Tcp, 80)])];
    let both = "10.180.0.1:80, 10.180.2.1:80";
    let local_only = "10.180.2.1:80";
    let (name, flows) = if local {
        ("TestExternalTrafficPolicyLocal", vec![
            flow("pod to cluster IP hits both endpoints, unmasqueraded", POD, "172.30.0.41", 80, both, false),
            flow("pod to external IP hits both endpoints, unmasqueraded", POD, "192.168.99.11", 80, both, false),
            flow("external to external IP hits only local endpoint, unmasqueraded", EXT, "192.168.99.11", 80, local_only, false),
            flow("pod to LB IP hits only both endpoints, unmasqueraded", POD, "1.2.3.4", 80, both, false),
            flow("external to LB IP hits only local endpoint, unmasqueraded", EXT, "1.2.3.4", 80, local_only, false),
            flow("pod to NodePort hits both endpoints, unmasqueraded", POD, NODE, 3001, both, false),
            flow("external to NodePort hits only local endpoint, unmasqueraded", EXT, NODE, 3001, local_only, false),
        ])
    } else {
        ("TestExternalTrafficPolicyCluster", vec![
            flow("pod to cluster IP hits both endpoints, unmasqueraded", POD, "172.30.0.41", 80, both, false),
            flow("pod to external IP hits both endpoints, masqueraded", POD, "192.168.99.11", 80, both, true),
            flow("external to external IP hits both endpoints, masqueraded", EXT, "192.168.99.11", 80, both, true),
            flow("pod to LB IP hits both endpoints, masqueraded", POD, "1.2.3.4", 80, both, true),
            flow("external to LB IP hits both endpoints, masqueraded", EXT, "1.2.3.4", 80, both, true),
            flow("pod to NodePort hits both endpoints, masqueraded", POD, NODE, 3001, both, true),
            flow("external to NodePort hits both endpoints, masqueraded", EXT, NODE, 3001, both, true),
        ])
    };
    UpstreamTest { name, cases: 0, runs: single(world(vec![svc1], slices, cfg()), flows) }
}

fn internal_traffic_policy() -> UpstreamTest {
    let svc1 = |itp: TrafficPolicy| {
        service("ns1", "svc1", ServiceType::ClusterIP, ip(172, 30, 1, 1), vec![port("", Protocol::Tcp, 80, 80, None)], |s| s.spec.internal_traffic_policy = itp)
    };
    let eps = |nodes: [&str; 3]| {
        let eps = (0..3u8).map(|i| ep(ip(10, 0, 1, i + 1), nodes[i as usize])).collect();
        vec![slice("ns1", "svc1", eps, vec![eport("", Protocol::Tcp, 80)])]
    };
    let cases: [(&'static str, TrafficPolicy, [&str; 3], Flow); 4] = [
        ("internalTrafficPolicy is cluster", TrafficPolicy::Cluster, [HOST, "node1", "node2"],
            flow("pod to ClusterIP hits all endpoints", POD, "172.30.1.1", 80, "10.0.1.1:80, 10.0.1.2:80, 10.0.1.3:80", false)),
        ("internalTrafficPolicy is local and there is one local endpoint", TrafficPolicy::Local, [HOST, "node1", "node2"],
            flow("pod to ClusterIP hits only local endpoint", POD, "172.30.1.1", 80, "10.0.1.1:80", false)),
        ("internalTrafficPolicy is local and there are multiple local endpoints", TrafficPolicy::Local, [HOST, HOST, "node2"],
            flow("pod to ClusterIP hits all local endpoints", POD, "172.30.1.1", 80, "10.0.1.1:80, 10.0.1.2:80", false)),
        ("internalTrafficPolicy is local and there are no local endpoints", TrafficPolicy::Local, ["node0", "node1", "node2"],
            flow("no endpoints", POD, "172.30.1.1", 80, "DROP", false)),
    ];
    let mut runs = Vec::new();
    for (case, itp, nodes, f) in cases {
        runs.push(Run { case: Some(case), phase: None, world: world(vec![svc1(itp)], eps(nodes), cfg()), flows: vec![f] });
        runs.push(Run {
            case: Some(case),
            phase: Some("after the slice is deleted"),
            world: world(vec![svc1(itp)], vec![], cfg()),
            flows: vec![flow("endpoints deleted", POD, "172.30.1.1", 80, "REJECT", false)],
        });
    }
    UpstreamTest { name: "TestInternalTrafficPolicy", cases: 4, runs }
}

/// TestTerminatingEndpointsTrafficPolicyLocal and …Cluster: a
/// LoadBalancer without a node port, and endpoints (address, node, ready,
/// serving, terminating) per case.
fn terminating_endpoints(local: bool) -> UpstreamTest {
    let svc1 = || {
        service("ns1", "svc1", ServiceType::LoadBalancer, ip(172, 30, 1, 1), vec![port("", Protocol::Tcp, 80, 80, None)], |s| {
            s.spec.health_check_node_port = Some(30000);
            balancer(s, &[ip(1, 2, 3, 4)]);
            if local {
                s.spec.external_traffic_policy = TrafficPolicy::Local;
            }
        })
    };
    type Eps = &'static [(u8, &'static str, bool, bool, bool)];
    // Constants, so the tables are promoted to 'static.
    const T: bool = true;
    const F: bool = false;
    let cases: Vec<(&'static str, Eps, Vec<Flow>)> = if local {
        vec![
            ("ready endpoints exist", &[(1, HOST, T, T, F), (2, HOST, T, T, F), (3, HOST, F, T, T), (4, HOST, F, F, T), (5, "node-1", T, T, F)], vec![
                flow("pod to clusterIP", POD, "172.30.1.1", 80, "10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80", false),
                flow("external to LB", EXT, "1.2.3.4", 80, "10.0.1.1:80, 10.0.1.2:80", false),
            ]),
            ("only terminating endpoints exist", &[(2, HOST, F, T, T), (3, HOST, F, T, T), (4, HOST, F, F, T), (5, "node-1", T, T, F)], vec![
                flow("pod to clusterIP", POD, "172.30.1.1", 80, "10.0.1.5:80", false),
                flow("external to LB", EXT, "1.2.3.4", 80, "10.0.1.2:80, 10.0.1.3:80", false),
            ]),
            ("terminating endpoints on remote node", &[(5, "node-1", F, T, T)], vec![
                flow("pod to clusterIP", POD, "172.30.1.1", 80, "10.0.1.5:80", false),
                flow("external to LB, no locally-usable endpoints", EXT, "1.2.3.4", 80, "DROP", false),
            ]),
            ("no usable endpoints on any node", &[(5, HOST, F, F, T), (5, "node-1", F, F, T)], vec![
                flow("pod to clusterIP, no usable endpoints", POD, "172.30.1.1", 80, "REJECT", false),
                flow("external to LB, no usable endpoints", EXT, "1.2.3.4", 80, "REJECT", false),
            ]),
        ]
    } else {
        vec![
            ("ready endpoints exist", &[(1, HOST, T, T, F), (2, HOST, T, T, F), (3, "another-node", F, T, T), (4, "another-node", F, F, T), (5, "another-node", T, T, F)], vec![
                flow("pod to clusterIP", POD, "172.30.1.1", 80, "10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80", false),
                flow("external to LB", EXT, "1.2.3.4", 80, "10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80", true),
            ]),
            ("only terminating endpoints exist", &[(2, HOST, F, T, T), (3, HOST, F, T, T), (4, "another-node", F, F, T), (5, "another-node", F, T, T)], vec![
                flow("pod to clusterIP", POD, "172.30.1.1", 80, "10.0.1.2:80, 10.0.1.3:80, 10.0.1.5:80", false),
                flow("external to LB", EXT, "1.2.3.4", 80, "10.0.1.2:80, 10.0.1.3:80, 10.0.1.5:80", true),
            ]),
            ("terminating endpoints on remote node", &[(5, "node-1", F, T, T)], vec![
                flow("pod to clusterIP", POD, "172.30.1.1", 80, "10.0.1.5:80", false),
                flow("external to LB", EXT, "1.2.3.4", 80, "10.0.1.5:80", true),
            ]),
            ("no usable endpoints on any node", &[(5, HOST, F, F, T), (5, "node-1", F, F, T)], vec![
                flow("pod to clusterIP", POD, "172.30.1.1", 80, "REJECT", false),
                flow("external to LB", EXT, "1.2.3.4", 80, "REJECT", false),
            ]),
        ]
    };
    let mut runs = Vec::new();
    for (case, eps, flows) in cases {
        let eps = eps.iter().map(|(d, n, r, s, t)| ep_rst(ip(10, 0, 1, *d), n, *r, *s, *t)).collect();
        let slices = vec![slice("ns1", "svc1", eps, vec![eport("", Protocol::Tcp, 80)])];
        runs.push(Run { case: Some(case), phase: None, world: world(vec![svc1()], slices, cfg()), flows });
        runs.push(Run {
            case: Some(case),
            phase: Some("after the slice is deleted"),
            world: world(vec![svc1()], vec![], cfg()),
            flows: vec![
                flow("pod to clusterIP after endpoints deleted", POD, "172.30.1.1", 80, "REJECT", false),
                flow("external to LB after endpoints deleted", EXT, "1.2.3.4", 80, "REJECT", false),
            ],
        });
    }
    let name = if local { "TestTerminatingEndpointsTrafficPolicyLocal" } else { "TestTerminatingEndpointsTrafficPolicyCluster" };
    UpstreamTest { name, cases: 4, runs }
}

/// What one case of TestInternalExternalMasquerade changes in the base
/// flows: (flow, output, masq), each `None` when unchanged.
type Overrides = &'static [(&'static str, Option<&'static str>, Option<bool>)];

fn internal_external_masquerade() -> UpstreamTest {
    let services = || {
        let lb = |n: u8, edit: fn(&mut Service)| {
            service(&format!("ns{n}"), &format!("svc{n}"), ServiceType::LoadBalancer, ip(172, 30, 0, 40 + n), vec![p80(Some(3000 + n as u16))], |s| {
                s.spec.health_check_node_port = Some(30000 + n as u16);
                balancer(s, &[[ip(1, 2, 3, 4), ip(5, 6, 7, 8), ip(9, 10, 11, 12)][n as usize - 1]]);
                edit(s);
            })
        };
        vec![
            lb(1, |_| {}),
            lb(2, |s| s.spec.external_traffic_policy = TrafficPolicy::Local),
            lb(3, |s| s.spec.internal_traffic_policy = TrafficPolicy::Local),
        ]
    };
    let slices = || {
        (1..=3u8)
            .map(|n| {
                let eps = vec![ep(ip(10, 180, 0, n), HOST), ep(ip(10, 180, 1, n), "remote")];
                slice(&format!("ns{n}"), &format!("svc{n}"), eps, vec![eport("p80", Protocol::Tcp, 80)])
            })
            .collect::<Vec<_>>()
    };
    let (e1, e2, e2l, e3, e3l) = ("10.180.0.1:80, 10.180.1.1:80", "10.180.0.2:80, 10.180.1.2:80", "10.180.0.2:80", "10.180.0.3:80, 10.180.1.3:80", "10.180.0.3:80");
    let base = vec![
        flow("pod to ClusterIP", POD, "172.30.0.41", 80, e1, false),
        flow("pod to NodePort", POD, NODE, 3001, e1, true),
        flow("pod to LB", POD, "1.2.3.4", 80, e1, true),
        flow("node to ClusterIP", NODE, "172.30.0.41", 80, e1, true),
        flow("node to NodePort", NODE, NODE, 3001, e1, true),
        flow("node to LB", NODE, "1.2.3.4", 80, e1, true),
        flow("external to ClusterIP", EXT, "172.30.0.41", 80, e1, true),
        flow("external to NodePort", EXT, NODE, 3001, e1, true),
        flow("external to LB", EXT, "1.2.3.4", 80, e1, true),
        flow("pod to ClusterIP with eTP:Local", POD, "172.30.0.42", 80, e2, false),
        flow("pod to NodePort with eTP:Local", POD, NODE, 3002, e2, false),
        flow("pod to LB with eTP:Local", POD, "5.6.7.8", 80, e2, false),
        flow("node to ClusterIP with eTP:Local", NODE, "172.30.0.42", 80, e2, true),
        // Upstream's flow goes to svc1's node port, 3001, and expects svc1's endpoints.
        flow("node to NodePort with eTP:Local", NODE, NODE, 3001, e1, true),
        flow("node to LB with eTP:Local", NODE, "5.6.7.8", 80, e2, true),
        flow("external to ClusterIP with eTP:Local", EXT, "172.30.0.42", 80, e2, true),
        flow("external to NodePort with eTP:Local", EXT, NODE, 3002, e2l, false),
        flow("external to LB with eTP:Local", EXT, "5.6.7.8", 80, e2l, false),
        flow("pod to ClusterIP with iTP:Local", POD, "172.30.0.43", 80, e3l, false),
        flow("pod to NodePort with iTP:Local", POD, NODE, 3003, e3, true),
        flow("pod to LB with iTP:Local", POD, "9.10.11.12", 80, e3, true),
        flow("node to ClusterIP with iTP:Local", NODE, "172.30.0.43", 80, e3l, true),
        flow("node to NodePort with iTP:Local", NODE, NODE, 3003, e3, true),
        flow("node to LB with iTP:Local", NODE, "9.10.11.12", 80, e3, true),
        flow("external to ClusterIP with iTP:Local", EXT, "172.30.0.43", 80, e3l, true),
        flow("external to NodePort with iTP:Local", EXT, NODE, 3003, e3, true),
        flow("external to LB with iTP:Local", EXT, "9.10.11.12", 80, e3, true),
    ];
    let no_detector: Overrides = &[
        ("node to ClusterIP", None, Some(false)),
        ("node to ClusterIP with eTP:Local", None, Some(false)),
        ("node to ClusterIP with iTP:Local", None, Some(false)),
        ("external to ClusterIP", None, Some(false)),
        ("external to ClusterIP with eTP:Local", None, Some(false)),
        ("external to ClusterIP with iTP:Local", None, Some(false)),
        ("pod to NodePort with eTP:Local", Some("10.180.0.2:80"), None),
        ("pod to LB with eTP:Local", Some("10.180.0.2:80"), None),
    ];
    let masquerade_all: Overrides = &[
        ("pod to ClusterIP", None, Some(true)),
        ("pod to ClusterIP with eTP:Local", None, Some(true)),
        ("pod to ClusterIP with iTP:Local", None, Some(true)),
    ];
    let both: Overrides = &[
        ("pod to ClusterIP", None, Some(true)),
        ("pod to ClusterIP with eTP:Local", None, Some(true)),
        ("pod to ClusterIP with iTP:Local", None, Some(true)),
        ("pod to NodePort with eTP:Local", Some("10.180.0.2:80"), None),
        ("pod to LB with eTP:Local", Some("10.180.0.2:80"), None),
    ];
    // (case, masqueradeAll, a local traffic detector, overrides)
    let cases: [(&'static str, bool, bool, Overrides); 4] = [
        ("base", false, true, &[]),
        ("no LocalTrafficDetector", false, false, no_detector),
        ("masqueradeAll", true, true, masquerade_all),
        ("masqueradeAll, no LocalTrafficDetector", true, false, both),
    ];
    let mut runs = Vec::new();
    for (case, masq_all, detector, overrides) in cases {
        let mut flows = base.clone();
        for (name, output, masq) in overrides {
            let f = flows.iter_mut().find(|f| f.name == *name).unwrap_or_else(|| panic!("{case}: override of an unknown flow {name:?}"));
            if let Some(o) = output {
                assert_ne!(f.output, *o, "{case}: {name}: the override equals the base");
                f.output = o.to_string();
            }
            if let Some(m) = masq {
                assert_ne!(f.masq, *m, "{case}: {name}: the override equals the base");
                f.masq = *m;
            }
        }
        let mut c = cfg();
        c.proxy.masquerade_all = masq_all;
        if !detector {
            // NewNoOpLocalDetector: no clusterCIDR to tell Pods by.
            c.proxy.cluster_cidr = None;
        }
        runs.push(Run { case: Some(case), phase: None, world: world(services(), slices(), c), flows });
    }
    UpstreamTest { name: "TestInternalExternalMasquerade", cases: 4, runs }
}

/// Every upstream test that calls runPacketFlowTests, in file order.
fn upstream_tests() -> Vec<UpstreamTest> {
    vec![
        no_endpoints_reject(),
        cluster_ip_general(),
        load_balancer(),
        node_ports(),
        external_traffic_policy(true),
        external_traffic_policy(false),
        internal_traffic_policy(),
        terminating_endpoints(true),
        terminating_endpoints(false),
        internal_external_masquerade(),
    ]
}

// ------------------------------------------------------------ the walk

/// Upstream's output for the model's trace: the endpoints in upstream's
/// order (by `ip:port` text), or the verdict.
fn output_of(t: &TraceResult) -> String {
    match t.verdict {
        TraceVerdict::Dnat => {
            let mut eps: Vec<String> = t.targets.iter().map(SockAddr::to_string).collect();
            eps.sort();
            eps.join(", ")
        }
        TraceVerdict::Drop => "DROP".into(),
        TraceVerdict::Reject => "REJECT".into(),
        TraceVerdict::Accept | TraceVerdict::None => String::new(),
    }
}

/// Upstream's output with its endpoints in text order (they are already).
fn normalized(output: &str) -> String {
    let mut parts: Vec<&str> = output.split(", ").collect();
    parts.sort();
    parts.join(", ")
}

fn result(output: &str, masq: bool) -> String {
    format!("{output:?} masq={masq}")
}

/// Draws that make `numgen random mod N` take arm `k` (see `Dice::pick`).
fn draws_for(k: usize) -> Vec<f64> {
    let mut d = vec![0.99; k];
    d.push(0.0);
    d
}

/// Each arm's (endpoint, masqueraded), walking the packet once per arm of
/// the first `numgen` it meets (kube-proxy writes one per path).
fn arms(rs: &Ruleset, pkt: &Packet, entry: Entry, n: usize) -> Vec<(Option<SockAddr>, bool)> {
    let ctx = nftables::Context::new(NODE_IPS.to_vec());
    (0..n.max(1))
        .map(|k| {
            let t = nftables::traverse(rs, entry, pkt, &ctx, &mut FixedDraws::new(draws_for(k)));
            (t.dnat(), t.masquerade())
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    tests: usize,
    cases: usize,
    syncs: usize,
    flows: usize,
    walked: usize,
    agreed: usize,
    known: usize,
    not_modelled: usize,
    node_sourced: usize,
}

/// One walk's result line, and (verdict-or-endpoints, masquerade on some arm).
fn walk(rs: &Ruleset, pkt: &Packet, from_node: bool, out: &mut String, failures: &mut Vec<String>, what: &str) -> (String, bool) {
    let t = trace_nftables(rs, NODE_IPS.to_vec(), pkt, from_node);
    for m in &t.matched {
        let _ = writeln!(out, "    {m}");
    }
    if !t.targets_complete {
        failures.push(format!("{what}: the search of the numgen arms stopped early"));
    }
    let entry = if from_node { Entry::Local } else { Entry::Arriving };
    let arms = arms(rs, pkt, entry, t.targets.len());
    let masq = arms.iter().any(|(_, m)| *m);
    if arms.iter().any(|(_, m)| *m != masq) {
        let each: Vec<String> = arms.iter().map(|(e, m)| format!("{}: {m}", e.map_or("-".into(), |e| e.to_string()))).collect();
        let _ = writeln!(out, "    masquerade differs by arm: {}", each.join(", "));
    }
    if t.verdict == TraceVerdict::Dnat && arms.iter().any(|(e, _)| e.is_none_or(|e| !t.targets.contains(&e))) {
        failures.push(format!("{what}: an arm's endpoint is not among the trace's targets"));
    }
    let targets: Vec<String> = t.targets.iter().map(SockAddr::to_string).collect();
    let _ = writeln!(out, "    => {:?} targets=[{}] masquerade={masq}", t.verdict, targets.join(", "));
    (output_of(&t), masq)
}

fn run_test(test: &UpstreamTest, tally: &mut Tally, seen: &mut Vec<(String, String, String, String)>, failures: &mut Vec<String>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} (kubernetes/kubernetes pkg/proxy/nftables/proxier_test.go at {COMMIT})", test.name);
    let _ = writeln!(out, "# Each flow arrives at node {NODE} from the network, as upstream's tracer runs it; local: {NODE_IPS:?}.");
    tally.tests += 1;
    tally.cases += test.cases;
    for run in &test.runs {
        let label = run.label();
        let _ = writeln!(out, "\n## {label}");
        let world = match &run.world {
            Ok(w) => w,
            Err(why) => {
                let _ = writeln!(out, "not run: {why}");
                for f in &run.flows {
                    let dst = if f.dst.contains(':') { format!("[{}]:{}", f.dst, f.port) } else { format!("{}:{}", f.dst, f.port) };
                    let _ = writeln!(out, "\nflow: {}\n    {} -> {dst} {}\n    upstream: {}", f.name, f.src, f.proto.lower(), result(&f.output, f.masq));
                    tally.flows += 1;
                    tally.not_modelled += 1;
                }
                continue;
            }
        };
        tally.syncs += 1;
        let rs = sync_node(&node(), &world.services, &world.slices, &world.cfg);
        for f in &run.flows {
            tally.flows += 1;
            tally.walked += 1;
            let what = format!("{} / {label} / {}", test.name, f.name);
            let (src, dst): (Ipv4Addr, Ipv4Addr) = match (f.src.parse::<IpAddr>(), f.dst.parse::<IpAddr>()) {
                (Ok(IpAddr::V4(s)), Ok(IpAddr::V4(d))) => (s, d),
                _ => panic!("{what}: not an IPv4 flow"),
            };
            let pkt = Packet::new(f.proto, SockAddr::new(src, 40000), SockAddr::new(dst, f.port));
            let _ = writeln!(out, "\nflow: {}\n    {src} -> {dst}:{} {}", f.name, f.port, f.proto.lower());
            let (output, masq) = walk(&rs, &pkt, false, &mut out, failures, &what);
            let (model, upstream) = (result(&output, masq), result(&normalized(&f.output), f.masq));
            let known = KNOWN_DIFFERENCES.iter().find(|(t, r, n, _, _)| *t == test.name && *r == label && *n == f.name);
            if model == upstream {
                tally.agreed += 1;
                let _ = writeln!(out, "    upstream: {upstream}: agrees");
            } else {
                let _ = writeln!(out, "    upstream: {upstream}: DIFFERS, the model gives {model}");
                match known {
                    Some((_, _, _, recorded, why)) if *recorded == model => {
                        tally.known += 1;
                        let _ = writeln!(out, "    known difference: {why}");
                    }
                    Some((_, _, _, recorded, _)) => failures.push(format!("{what}: upstream {upstream}, model {model}; recorded as {recorded}")),
                    None => failures.push(format!("{what}: upstream {upstream}, model {model}")),
                }
            }
            if known.is_some() {
                seen.push((test.name.into(), label.clone(), f.name.into(), model.clone()));
            }
            // A node opens this connection itself: the output hook, which
            // upstream's tracer does not run. Shown, and it must give what
            // the arriving walk gives.
            if NODE_IPS.contains(&src) {
                tally.node_sourced += 1;
                let _ = writeln!(out, "  the same connection opened by the node itself (output hook):");
                let (o, m) = walk(&rs, &pkt, true, &mut out, failures, &what);
                if (o.as_str(), m) != (output.as_str(), masq) {
                    failures.push(format!("{what}: from the node itself {}, arriving {model}", result(&o, m)));
                }
            }
        }
    }
    out
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/nftables/flows")
}

#[test]
fn upstream_packet_flows() {
    let tests = upstream_tests();
    let (mut tally, mut seen, mut failures) = (Tally::default(), Vec::new(), Vec::new());
    let texts: Vec<(&str, String)> = tests.iter().map(|t| (t.name, run_test(t, &mut tally, &mut seen, &mut failures))).collect();
    for (t, r, n, m, _) in KNOWN_DIFFERENCES {
        if !seen.iter().any(|s| (s.0.as_str(), s.1.as_str(), s.2.as_str()) == (*t, *r, *n)) {
            failures.push(format!("known difference not met: {t} / {r} / {n} (no such flow)"));
        } else if !seen.iter().any(|s| (s.0.as_str(), s.1.as_str(), s.2.as_str(), s.3.as_str()) == (*t, *r, *n, *m)) {
            failures.push(format!("known difference not met: {t} / {r} / {n}: the model no longer gives {m}"));
        }
    }
    let mut summary = format!("kube-proxy nftables packet flows: kubernetes/kubernetes pkg/proxy/nftables/proxier_test.go at {COMMIT}\n");
    let _ = writeln!(summary, "upstream tests: {}", tally.tests);
    let _ = writeln!(summary, "sub-cases: {} (in {} table-driven tests)", tally.cases, tests.iter().filter(|t| t.cases > 0).count());
    let _ = writeln!(summary, "syncs walked: {}", tally.syncs);
    let _ = writeln!(summary, "flows: {}", tally.flows);
    let _ = writeln!(summary, "walked: {}", tally.walked);
    let _ = writeln!(summary, "agreeing with upstream: {}", tally.agreed);
    let _ = writeln!(summary, "known differences: {}", tally.known);
    let _ = writeln!(summary, "not modelled (IPv6): {}", tally.not_modelled);
    let _ = writeln!(summary, "flows from a node address also walked through the output hook: {}", tally.node_sourced);
    for (t, r, n, m, why) in KNOWN_DIFFERENCES {
        let _ = writeln!(summary, "difference: {t} / {r} / {n}: the model gives {m}: {why}");
    }
    print!("{summary}");
    assert!(failures.is_empty(), "{} problems (flows that disagree with upstream, or known differences not met):\n{}", failures.len(), failures.join("\n"));
    assert_eq!((tally.tests, tally.cases, tally.flows), (10, 20, 207), "upstream has 10 such tests, 20 sub-cases and 207 flow runs");
    assert_eq!(tally.agreed + tally.known + tally.not_modelled, tally.flows);
    // The flows first, then how they went: a golden's diff says less.
    for (name, text) in texts {
        kubehops_core::golden::check(&golden_dir().join(format!("{name}.txt")), &text);
    }
    kubehops_core::golden::check(&golden_dir().join("summary.txt"), &summary);
}

/// Every ruleset these flows walk loads into a real kernel (`unshare
/// --net`, Debian's `nftables`), which lists it back as `Ruleset::list`
/// says. Without the tools it says "skipped"; `KUBEHOPS_REQUIRE_KERNEL_TEST=1`
/// turns that into a failure.
#[test]
fn the_kernel_loads_every_ruleset_the_flows_walk() {
    use std::process::Command;
    let required = std::env::var_os("KUBEHOPS_REQUIRE_KERNEL_TEST").is_some_and(|v| v == "1");
    let tools = Command::new("unshare").args(["--net", "nft", "--version"]).output();
    if !tools.as_ref().is_ok_and(|o| o.status.success()) {
        assert!(!required, "KUBEHOPS_REQUIRE_KERNEL_TEST=1, but `unshare --net nft` cannot run");
        println!("nftables flows kernel check: skipped: `unshare --net nft` cannot run");
        return;
    }
    let mut count = 0;
    for t in upstream_tests() {
        for run in &t.runs {
            let Ok(w) = &run.world else { continue };
            let rs = sync_node(&node(), &w.services, &w.slices, &w.cfg);
            let out = nft::load_and_list(&(rs.transaction().join("\n") + "\n"));
            let what = format!("{} / {}", t.name, run.label());
            assert!(out.status.success(), "{what}: nft -f refused the model's transaction:\n{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stdout), rs.list().join("\n") + "\n", "{what}: nft list differs from Ruleset::list");
            count += 1;
        }
    }
    println!("nftables flows kernel check: {count} rulesets loaded and listed back as the model says");
}
