//! The kube-proxy feature cases of `tests/kube_proxy.rs`: for each, one
//! node's Services, EndpointSlices and configuration, and the packets
//! traced through its rules. Names and addresses follow kube-proxy's own
//! iptables tests (`ns1/svc1:p80`, cluster IP 172.30.0.41, endpoints
//! 10.180.0.x), so the lines can be compared with upstream's expectations.
//!
//! Shared as source: the golden test includes it as a module, and the
//! real-kernel dataplane harness (`crates/kubehops-dataplane-harness`)
//! includes the same file by path, so both check the same cases.

// Each includer uses its own part of this file.
#![allow(dead_code)]

use kubehops_core::api::*;
use kubehops_core::dataplane::kubeproxy::KubeProxyConfig;
use kubehops_core::dataplane::trace::TraceVerdict;
use kubehops_core::net::{ip, Protocol, SockAddr};
use std::net::Ipv4Addr;

pub const HOST: &str = "test-node";

pub fn node() -> Node {
    // kube-proxy never reads the Pod range; leaving it out keeps the
    // endpoints (10.180.0.x) from looking like node addresses.
    Node { name: HOST.into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None }
}

pub fn svc(ns: &str, name: &str, type_: ServiceType, cluster_ip: [u8; 4], port: u16, node_port: Option<u16>) -> Service {
    Service {
        name: name.into(),
        namespace: ns.into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            type_,
            ports: vec![ServicePort { name: Some("p80".into()), protocol: Protocol::Tcp, port, target_port: 80, node_port }],
            cluster_ip: Some(cluster_ip.into()),
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

/// (address, node, ready, serving, terminating)
pub fn slice(ns: &str, name: &str, eps: &[([u8; 4], &str, bool, bool, bool)]) -> EndpointSlice {
    EndpointSlice {
        name: format!("{name}-abcde"),
        namespace: ns.into(),
        service_name: name.into(),
        endpoints: eps
            .iter()
            .map(|(a, n, r, s, t)| Endpoint { ip: (*a).into(), node_name: n.to_string(), ready: *r, serving: *s, terminating: *t, target_ref: String::new(), hostname: None })
            .collect(),
        ports: vec![EndpointPort { name: Some("p80".into()), protocol: Protocol::Tcp, port: 80 }],
    }
}

pub fn ready(a: [u8; 4], n: &'static str) -> ([u8; 4], &'static str, bool, bool, bool) {
    (a, n, true, true, false)
}

pub fn cfg() -> KubeProxyConfig {
    KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().unwrap()), ..Default::default() }
}

pub struct Case {
    pub name: &'static str,
    pub services: Vec<Service>,
    pub slices: Vec<EndpointSlice>,
    pub cfg: KubeProxyConfig,
    /// (description, source, destination, from the node itself, expected verdict)
    pub packets: Vec<(&'static str, Ipv4Addr, SockAddr, bool, TraceVerdict)>,
}

pub const OUTSIDE: Ipv4Addr = ip(203, 0, 113, 9);
pub const POD: Ipv4Addr = ip(10, 0, 0, 5);

pub fn sa(a: [u8; 4], p: u16) -> SockAddr {
    SockAddr::new(a.into(), p)
}


pub fn cluster_ip_with_two_endpoints() -> Case {
    Case {
        name: "cluster-ip",
        services: vec![svc("ns1", "svc1", ServiceType::ClusterIP, [172, 30, 0, 41], 80, None)],
        slices: vec![slice("ns1", "svc1", &[ready([10, 180, 0, 1], HOST), ready([10, 180, 0, 2], "other")])],
        cfg: cfg(),
        packets: vec![
            ("pod to cluster IP", POD, sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat),
            ("outside source to cluster IP is masqueraded", OUTSIDE, sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat),
            ("hairpin: an endpoint reaching itself", ip(10, 180, 0, 1), sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat),
            ("wrong port", POD, sa([172, 30, 0, 41], 81), false, TraceVerdict::None),
        ],
    }
}

pub fn cluster_ip_with_six_endpoints() -> Case {
    // Probabilities 1/6 … 1/2: the kernel keeps each as a 31-bit fraction,
    // which kernel/six-endpoints.txt shows.
    let eps: Vec<([u8; 4], &str, bool, bool, bool)> = (1..=6).map(|i| ready([10, 180, 0, i], "other")).collect();
    Case {
        name: "six-endpoints",
        services: vec![svc("ns1", "svc1", ServiceType::ClusterIP, [172, 30, 0, 41], 80, None)],
        slices: vec![slice("ns1", "svc1", &eps)],
        cfg: cfg(),
        packets: vec![("pod to cluster IP reaches all six", POD, sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat)],
    }
}

pub fn node_port_with_cluster_policy() -> Case {
    Case {
        name: "node-port",
        services: vec![svc("ns2", "svc2", ServiceType::NodePort, [172, 30, 0, 42], 80, Some(3001))],
        slices: vec![slice("ns2", "svc2", &[ready([10, 180, 0, 1], HOST), ready([10, 180, 0, 2], "other"), ready([10, 180, 0, 3], "other")])],
        cfg: cfg(),
        packets: vec![
            ("outside to the node port", OUTSIDE, sa([192, 168, 0, 2], 3001), false, TraceVerdict::Dnat),
            ("the node to localhost:3001", ip(127, 0, 0, 1), sa([127, 0, 0, 1], 3001), true, TraceVerdict::Dnat),
        ],
    }
}

pub fn external_traffic_policy_local() -> Case {
    let mut s = svc("ns1", "svc1", ServiceType::LoadBalancer, [172, 30, 0, 41], 80, Some(3001));
    s.spec.external_traffic_policy = TrafficPolicy::Local;
    s.spec.health_check_node_port = Some(30000);
    s.spec.external_ips = vec![ip(192, 168, 99, 11)];
    s.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(ip(1, 2, 3, 4), Some(IpMode::VIP))];
    let mut remote_only = svc("ns2", "svc2", ServiceType::LoadBalancer, [172, 30, 0, 42], 80, Some(3002));
    remote_only.spec.external_traffic_policy = TrafficPolicy::Local;
    remote_only.spec.health_check_node_port = Some(30001);
    remote_only.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(ip(5, 6, 7, 8), Some(IpMode::VIP))];
    Case {
        name: "external-traffic-policy-local",
        services: vec![s, remote_only],
        slices: vec![
            slice("ns1", "svc1", &[ready([10, 180, 0, 1], HOST), ready([10, 180, 2, 1], "other")]),
            slice("ns2", "svc2", &[ready([10, 180, 2, 2], "other")]),
        ],
        cfg: cfg(),
        packets: vec![
            ("outside to the balancer IP: local endpoint only, client IP kept", OUTSIDE, sa([1, 2, 3, 4], 80), false, TraceVerdict::Dnat),
            ("outside to the node port", OUTSIDE, sa([192, 168, 0, 2], 3001), false, TraceVerdict::Dnat),
            ("a pod to the balancer IP is short-circuited to every endpoint", POD, sa([1, 2, 3, 4], 80), false, TraceVerdict::Dnat),
            ("the node itself to the external IP", ip(192, 168, 0, 2), sa([192, 168, 99, 11], 80), true, TraceVerdict::Dnat),
            ("no local endpoint: outside traffic is dropped", OUTSIDE, sa([192, 168, 0, 2], 3002), false, TraceVerdict::Drop),
            ("health check node port is accepted", OUTSIDE, sa([192, 168, 0, 2], 30000), false, TraceVerdict::Accept),
        ],
    }
}

pub fn internal_traffic_policy_local() -> Case {
    let mut s = svc("ns1", "svc1", ServiceType::ClusterIP, [172, 30, 0, 41], 80, None);
    s.spec.internal_traffic_policy = TrafficPolicy::Local;
    let mut none_here = svc("ns2", "svc2", ServiceType::ClusterIP, [172, 30, 0, 42], 80, None);
    none_here.spec.internal_traffic_policy = TrafficPolicy::Local;
    Case {
        name: "internal-traffic-policy-local",
        services: vec![s, none_here],
        slices: vec![
            slice("ns1", "svc1", &[ready([10, 180, 0, 1], HOST), ready([10, 180, 2, 1], "other")]),
            slice("ns2", "svc2", &[ready([10, 180, 2, 2], "other")]),
        ],
        cfg: cfg(),
        packets: vec![
            ("pod to cluster IP: local endpoint only", POD, sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat),
            ("no local endpoint: dropped", POD, sa([172, 30, 0, 42], 80), false, TraceVerdict::Drop),
        ],
    }
}

pub fn session_affinity_client_ip() -> Case {
    let mut s = svc("ns1", "svc1", ServiceType::ClusterIP, [172, 30, 0, 41], 80, None);
    s.spec.session_affinity = SessionAffinity::ClientIP { timeout_seconds: 10800 };
    Case {
        name: "session-affinity",
        services: vec![s],
        slices: vec![slice("ns1", "svc1", &[ready([10, 180, 0, 1], HOST), ready([10, 180, 0, 2], HOST)])],
        cfg: cfg(),
        packets: vec![("first connection: random, then remembered", POD, sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat)],
    }
}

pub fn load_balancer_ip_modes_and_source_ranges() -> Case {
    let mut vip = svc("ns1", "svc1", ServiceType::LoadBalancer, [172, 30, 0, 41], 80, Some(3001));
    vip.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(ip(1, 2, 3, 4), Some(IpMode::VIP))];
    let mut proxy = svc("ns2", "svc2", ServiceType::LoadBalancer, [172, 30, 0, 42], 80, Some(3002));
    proxy.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(ip(5, 6, 7, 9), Some(IpMode::Proxy))];
    let mut ranged = svc("ns5", "svc5", ServiceType::LoadBalancer, [172, 30, 0, 45], 80, Some(3005));
    ranged.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(ip(5, 6, 7, 8), Some(IpMode::VIP))];
    ranged.spec.load_balancer_source_ranges = vec!["203.0.113.0/25".parse().unwrap(), "192.168.0.0/24".parse().unwrap()];
    Case {
        name: "load-balancer",
        services: vec![vip, proxy, ranged],
        slices: vec![
            slice("ns1", "svc1", &[ready([10, 180, 0, 1], HOST)]),
            slice("ns2", "svc2", &[ready([10, 180, 0, 2], HOST)]),
            slice("ns5", "svc5", &[ready([10, 180, 0, 5], "other")]),
        ],
        cfg: cfg(),
        packets: vec![
            ("VIP balancer delivers to its IP", OUTSIDE, sa([1, 2, 3, 4], 80), false, TraceVerdict::Dnat),
            ("Proxy balancer IP has no rule", OUTSIDE, sa([5, 6, 7, 9], 80), false, TraceVerdict::None),
            ("allowed source range", OUTSIDE, sa([5, 6, 7, 8], 80), false, TraceVerdict::Dnat),
            ("source outside the ranges is dropped", ip(198, 51, 100, 1), sa([5, 6, 7, 8], 80), false, TraceVerdict::Drop),
        ],
    }
}

pub fn no_endpoints_reject() -> Case {
    Case {
        name: "no-endpoints",
        services: vec![svc("ns1", "svc1", ServiceType::NodePort, [172, 30, 0, 41], 80, Some(3001))],
        slices: vec![slice("ns1", "svc1", &[([10, 180, 0, 1], HOST, false, false, false)])],
        cfg: cfg(),
        packets: vec![
            ("pod to cluster IP is rejected", POD, sa([172, 30, 0, 41], 80), false, TraceVerdict::Reject),
            ("outside to the node port is rejected", OUTSIDE, sa([192, 168, 0, 2], 3001), false, TraceVerdict::Reject),
            // Sent to itself, the packet comes back in through INPUT, where
            // KUBE-EXTERNAL-SERVICES rejects it.
            ("the node to its own node port is rejected on the way in", ip(192, 168, 0, 2), sa([192, 168, 0, 2], 3001), true, TraceVerdict::Reject),
        ],
    }
}

pub fn terminating_endpoints_are_a_fallback() -> Case {
    Case {
        name: "terminating-fallback",
        services: vec![svc("ns1", "svc1", ServiceType::ClusterIP, [172, 30, 0, 41], 80, None)],
        slices: vec![slice("ns1", "svc1", &[([10, 180, 0, 1], HOST, false, true, true), ([10, 180, 0, 2], HOST, false, false, true)])],
        cfg: cfg(),
        packets: vec![("only the serving terminating endpoint", POD, sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat)],
    }
}

pub fn masquerade_all_and_no_localhost_node_ports() -> Case {
    Case {
        name: "masquerade-all",
        services: vec![svc("ns1", "svc1", ServiceType::NodePort, [172, 30, 0, 41], 80, Some(3001))],
        slices: vec![slice("ns1", "svc1", &[ready([10, 180, 0, 1], HOST)])],
        cfg: KubeProxyConfig { cluster_cidr: None, masquerade_all: true, localhost_node_ports: false, ..Default::default() },
        packets: vec![
            ("pod to cluster IP is masqueraded too", POD, sa([172, 30, 0, 41], 80), false, TraceVerdict::Dnat),
            ("localhost node port is not served", ip(127, 0, 0, 1), sa([127, 0, 0, 1], 3001), true, TraceVerdict::None),
        ],
    }
}


/// Every case, with the name of its golden file.
pub fn all() -> Vec<Case> {
    vec![cluster_ip_with_two_endpoints(), cluster_ip_with_six_endpoints(), node_port_with_cluster_policy(), external_traffic_policy_local(), internal_traffic_policy_local(), session_affinity_client_ip(), load_balancer_ip_modes_and_source_ranges(), no_endpoints_reject(), terminating_endpoints_are_a_fallback(), masquerade_all_and_no_localhost_node_ports()]
}
