//! How long the model takes on a large cluster: one node's full rule set
//! for 1,000 and 10,000 Services with 3 endpoints each, and one packet's
//! trace through it; then one Service with 10,000 and 100,000 endpoints
//! (iptables-save, trace, and dig A and SRV on it as a headless Service),
//! side by side with the ratio, which is about 10 when the cost is linear.
//! Prints figures; asserts nothing about time.
//!
//! `cargo run --release -p kubehops-core --example bench`

use kubehops_core::api::*;
use kubehops_core::dns::{ClusterDns, DnsConfig, QType};
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig};
use kubehops_core::net::{ip, Packet, Protocol, SockAddr};
use kubehops_core::dataplane::trace::trace;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

fn cluster(n: usize) -> (Vec<Service>, Vec<EndpointSlice>) {
    let mut services = Vec::with_capacity(n);
    let mut slices = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("svc{i}");
        let cip = ip(172, 30, (i / 250) as u8, (i % 250) as u8 + 1);
        services.push(Service {
            name: name.clone(),
            namespace: "bench".into(),
            annotations: Default::default(),
            spec: ServiceSpec {
                type_: if i % 2 == 0 { ServiceType::NodePort } else { ServiceType::ClusterIP },
                ports: vec![ServicePort { name: Some("http".into()), protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: (i % 2 == 0).then_some(30000 + (i / 2 % 2768) as u16) }],
                cluster_ip: Some(cip),
                ..Default::default()
            },
            status: Default::default(),
            created: None,
        });
        slices.push(EndpointSlice {
            name: format!("{name}-x"),
            namespace: "bench".into(),
            service_name: name,
            endpoints: (0..3)
                .map(|k| Endpoint {
                    ip: ip(10, (i / 65536) as u8 + 100, (i / 256 % 256) as u8, (i % 256) as u8).to_bits().wrapping_add(k << 24).into(),
                    node_name: format!("node-{k}"),
                    ready: true,
                    serving: true,
                    terminating: false,
                    target_ref: String::new(),
                    hostname: None,
                })
                .collect(),
            ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
        });
    }
    (services, slices)
}

/// One Service `web` (cluster IP 10.96.0.50, or headless) with `n`
/// endpoints on three nodes, in slices of 1,000 as the controller writes them.
fn one_big_service(n: usize, headless: bool) -> (Service, Vec<EndpointSlice>) {
    let svc = Service {
        name: "web".into(),
        namespace: "bench".into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            ports: vec![ServicePort { name: Some("http".into()), protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: None }],
            cluster_ip: (!headless).then_some(ip(10, 96, 0, 50)),
            headless,
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    };
    let slices = (0..n.div_ceil(1000))
        .map(|k| EndpointSlice {
            name: format!("web-{k}"),
            namespace: "bench".into(),
            service_name: "web".into(),
            endpoints: (k * 1000..n.min((k + 1) * 1000))
                .map(|i| Endpoint {
                    ip: Ipv4Addr::from(u32::from(ip(10, 100, 0, 0)) + i as u32),
                    node_name: format!("node-{}", i % 3),
                    ready: true,
                    serving: true,
                    terminating: false,
                    target_ref: String::new(),
                    hostname: None,
                })
                .collect(),
            ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
        })
        .collect();
    (svc, slices)
}

/// The best time of three runs of `f` (the others met a busier machine or
/// allocator), and what it returned.
fn timed<T>(f: impl Fn() -> T) -> (Duration, T) {
    let mut best = (Duration::MAX, None);
    for _ in 0..3 {
        let t = Instant::now();
        let r = f();
        best = (best.0.min(t.elapsed()), Some(r));
    }
    (best.0, best.1.expect("ran"))
}

/// Times each operation on one Service with 10,000 and with 100,000
/// endpoints and prints them with the ratio.
fn endpoints_scale(node: &Node, cfg: &KubeProxyConfig) {
    let sizes = [10_000usize, 100_000];
    let mut rows: Vec<(&str, Vec<(Duration, usize)>)> = ["iptables-save", "trace", "dig A (headless)", "dig SRV (headless)"].into_iter().map(|n| (n, Vec::new())).collect();
    for n in sizes {
        let (svc, slices) = one_big_service(n, false);
        let (t, rules) = timed(|| sync_node(node, std::slice::from_ref(&svc), &slices, cfg));
        let (t2, lines) = timed(|| rules.save());
        rows[0].1.push((t + t2, lines.len()));
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(ip(10, 96, 0, 50), 80));
        let (t, r) = timed(|| trace(&rules, node, &pkt, false));
        assert!(r.targets_complete);
        rows[1].1.push((t, r.targets.len()));
        let (svc, slices) = one_big_service(n, true);
        let dns = ClusterDns::new(DnsConfig::default(), std::slice::from_ref(&svc), &slices);
        let (t, a) = timed(|| dns.query("web.bench.svc.cluster.local.", QType::A).map_or(0, |r| r.answer.len()));
        rows[2].1.push((t, a));
        let (t, srv) = timed(|| dns.query("_http._tcp.web.bench.svc.cluster.local.", QType::Srv).map_or(0, |r| r.answer.len()));
        rows[3].1.push((t, srv));
    }
    println!("bench: one Service with N endpoints   {:>24} {:>24}   ratio", format!("N = {}", sizes[0]), format!("N = {}", sizes[1]));
    for (name, runs) in rows {
        let cell = |(t, count): (Duration, usize)| format!("{:>9.1} ms ({count:>6})", t.as_secs_f64() * 1e3);
        let ratio = runs[1].0.as_secs_f64() / runs[0].0.as_secs_f64().max(1e-9);
        println!("bench:   {name:<28} {:>24} {:>24}   {ratio:>5.1}x", cell(runs[0]), cell(runs[1]));
    }
}

fn main() {
    let node = Node { name: "node-0".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
    let cfg = KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().expect("valid")), ..Default::default() };
    for n in [1_000usize, 10_000] {
        let (services, slices) = cluster(n);
        let t0 = Instant::now();
        let rules = sync_node(&node, &services, &slices, &cfg);
        let gen = t0.elapsed();
        let lines = rules.save().len();
        // The last Service's cluster IP: the walk passes every KUBE-SERVICES rule before it.
        let last = services.last().and_then(|s| s.spec.cluster_ip).expect("cluster IP");
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(last, 80));
        let t1 = Instant::now();
        let r = trace(&rules, &node, &pkt, false);
        let tr = t1.elapsed();
        println!(
            "bench: {n:>6} services x 3 endpoints: rule set {:>8.1} ms ({lines} lines), trace {:>7.2} ms ({:?}, {} targets)",
            gen.as_secs_f64() * 1e3,
            tr.as_secs_f64() * 1e3,
            r.verdict,
            r.targets.len()
        );
    }
    endpoints_scale(&node, &cfg);
    scenarios_scale();
}

/// Every scenario built with every combination of its parameters (fixed
/// picks and one seed), as the invariant tests build them: the time per
/// build is what a change of tab, toggle or readiness costs.
fn scenarios_scale() {
    use kubehops_core::scenarios::{combinations, REGISTRY};
    for e in REGISTRY {
        let all = combinations(&(e.params)(), &[None, Some(7)]);
        let t = Instant::now();
        let hops: usize = all.iter().map(|p| (e.build)(p).steps.iter().map(|s| s.hops.len()).sum::<usize>()).sum();
        let took = t.elapsed().as_secs_f64();
        println!(
            "bench: scenario {:<22} {:>5} parameter combinations, {:>6} hops: {:>7.1} ms in all, {:.2} ms per build",
            e.id,
            all.len(),
            hops,
            took * 1e3,
            took * 1e3 / all.len() as f64
        );
        snapshot_cost(e, &all[..all.len().min(200)]);
    }
}

/// What the steps' data-plane snapshots add to a build: each step that
/// carries packets copies the nodes' and hosts' tables once, which costs
/// what cloning them costs.
fn snapshot_cost(e: &kubehops_core::scenarios::Entry, some: &[kubehops_core::scenarios::Params]) {
    let built: Vec<_> = some.iter().map(|p| (e.build)(p)).collect();
    let t = Instant::now();
    let copies: usize = built.iter().map(|s| s.steps.iter().filter_map(|st| st.snapshot.clone()).count()).sum();
    let took = t.elapsed().as_secs_f64();
    println!(
        "bench: scenario {:<22} {:.1} data-plane snapshots per build, {:.3} ms per build to copy them",
        e.id,
        copies as f64 / built.len() as f64,
        took * 1e3 / built.len() as f64
    );
}
