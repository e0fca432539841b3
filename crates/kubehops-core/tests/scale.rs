//! One Service with tens of thousands of endpoints: every answer lists
//! each endpoint once, none is cut. (How long it takes is printed by the
//! benchmark, `examples/bench.rs`, not asserted here.)

use kubehops_core::api::*;
use kubehops_core::dns::{ClusterDns, DnsConfig, QType, RData};
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig};
use kubehops_core::net::{ip, Packet, Protocol, SockAddr};
use kubehops_core::dataplane::trace::{trace, TraceVerdict};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

const N: usize = 30_000;

fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(ip(10, 100, 0, 0)) + i as u32)
}

fn service(headless: bool) -> Service {
    Service {
        name: "web".into(),
        namespace: "default".into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            ports: vec![ServicePort { name: Some("http".into()), protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: None }],
            cluster_ip: (!headless).then_some(ip(10, 96, 0, 50)),
            headless,
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

/// N endpoints in slices of 1,000, plus a slice that repeats the first
/// 1,000 addresses (as during a rollout, when two slices list a Pod).
fn slices() -> Vec<EndpointSlice> {
    let slice = |k: usize, range: std::ops::Range<usize>| EndpointSlice {
        name: format!("web-{k}"),
        namespace: "default".into(),
        service_name: "web".into(),
        endpoints: range
            .map(|i| Endpoint { ip: addr(i), node_name: format!("node-{}", i % 3), ready: true, serving: true, terminating: false, target_ref: String::new(), hostname: None })
            .collect(),
        ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
    };
    let mut out: Vec<EndpointSlice> = (0..N / 1000).map(|k| slice(k, k * 1000..(k + 1) * 1000)).collect();
    out.push(slice(N / 1000, 0..1000));
    out
}

#[test]
fn trace_lists_every_endpoint_once() {
    let node = Node { name: "node-0".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
    let cfg = KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().unwrap()), ..Default::default() };
    let rules = sync_node(&node, &[service(false)], &slices(), &cfg);
    let seps = rules.nat.chains.iter().filter(|c| c.name.starts_with("KUBE-SEP-")).count();
    assert_eq!(seps, N, "one KUBE-SEP chain per distinct endpoint");
    let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 1, 2, 3), 40000), SockAddr::new(ip(10, 96, 0, 50), 80));
    let t = trace(&rules, &node, &pkt, false);
    assert_eq!(t.verdict, TraceVerdict::Dnat);
    assert!(t.targets_complete);
    let want: Vec<SockAddr> = {
        let mut v: Vec<SockAddr> = (0..N).map(|i| SockAddr::new(addr(i), 8080)).collect();
        v.sort();
        v
    };
    assert_eq!(t.targets, want);
}

#[test]
fn headless_a_and_srv_answer_every_endpoint_once() {
    let dns = ClusterDns::new(DnsConfig::default(), &[service(true)], &slices());
    let a = dns.query("web.default.svc.cluster.local.", QType::A).unwrap();
    let ips: Vec<Ipv4Addr> = a.answer.iter().map(|r| if let RData::A(ip) = r.data { ip } else { panic!("{r}") }).collect();
    assert_eq!(ips.len(), N);
    assert_eq!(ips.iter().collect::<BTreeSet<_>>().len(), N, "no address twice");
    // In the order the slices list them.
    assert_eq!((ips[0], ips[N - 1]), (addr(0), addr(N - 1)));

    let srv = dns.query("_http._tcp.web.default.svc.cluster.local.", QType::Srv).unwrap();
    assert_eq!(srv.answer.len(), N);
    assert_eq!(srv.additional.len(), N);
    let targets: BTreeSet<String> = srv.answer.iter().map(|r| if let RData::Srv { target, .. } = &r.data { target.clone() } else { panic!("{r}") }).collect();
    assert_eq!(targets.len(), N);
    assert!(targets.contains("10-100-117-47.web.default.svc.cluster.local."), "29,999th endpoint: 10.100.117.47");
}
