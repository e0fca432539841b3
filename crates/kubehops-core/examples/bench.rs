//! How long the model takes on a large cluster: one node's full rule set
//! for 1,000 and 10,000 Services with 3 endpoints each, and one packet's
//! trace through it; then one Service with 10,000 and 100,000 endpoints
//! (iptables-save, trace, and dig A and SRV on it as a headless Service),
//! side by side with the ratio, which is about 10 when the cost is linear.
//! Prints figures; asserts nothing about time.
//!
//! `cargo run --release -p kubehops-core --example bench`
//!
//! `bench <case> <n>` (case: `save`, `trace`, `dig-a` or `dig-srv`) runs one
//! operation once on one Service with `n` endpoints, inside the function
//! `measured`, so that an instruction counter can be pointed at that alone:
//! `valgrind --tool=callgrind --toggle-collect='*measured*' target/release/examples/bench trace 100000`.

use kubehops_core::api::*;
use kubehops_core::dns::{ClusterDns, DnsConfig, QType};
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig, NodeRules};
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

/// What [`measured`] runs on: one Service with its endpoints, its rules,
/// and the same Service headless in CoreDNS's view.
struct Setup {
    node: Node,
    cfg: KubeProxyConfig,
    svc: Service,
    slices: Vec<EndpointSlice>,
    rules: NodeRules,
    dns: ClusterDns,
    pkt: Packet,
}

/// One operation of the table above, run once (`save` is the rule set and
/// its text, as in the table); how many results it gave. Kept out of line
/// so that a profiler can count it alone.
#[inline(never)]
fn measured(case: &str, s: &Setup) -> usize {
    match case {
        "save" => sync_node(&s.node, std::slice::from_ref(&s.svc), &s.slices, &s.cfg).save().len(),
        "trace" => trace(&s.rules, &s.node, &s.pkt, false).targets.len(),
        "dig-a" => s.dns.query("web.bench.svc.cluster.local.", QType::A).map_or(0, |r| r.answer.len()),
        _ => s.dns.query("_http._tcp.web.bench.svc.cluster.local.", QType::Srv).map_or(0, |r| r.answer.len()),
    }
}

/// `bench <case> <n>`: sets up, then runs [`measured`] once.
fn one_case(case: &str, n: usize, node: Node, cfg: KubeProxyConfig) {
    let (svc, slices) = one_big_service(n, false);
    let rules = sync_node(&node, std::slice::from_ref(&svc), &slices, &cfg);
    let (headless, hslices) = one_big_service(n, true);
    let dns = ClusterDns::new(DnsConfig::default(), std::slice::from_ref(&headless), &hslices);
    let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(ip(10, 96, 0, 50), 80));
    let setup = Setup { node, cfg, svc, slices, rules, dns, pkt };
    let (f0, t) = (minor_faults(), Instant::now());
    let count = measured(case, &setup);
    let el = t.elapsed();
    let faults = minor_faults().zip(f0).map_or("unknown".to_string(), |(a, b)| (a - b).to_string());
    println!("bench: {case} on {n} endpoints: {count} results in {:.1} ms, {faults} page faults", el.as_secs_f64() * 1e3);
}

/// The process's minor page faults so far (Linux only: `/proc/self/stat`).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; minflt is the 10th field.
    stat.rsplit_once(')')?.1.split_whitespace().nth(7)?.parse().ok()
}

fn main() {
    let node = Node { name: "node-0".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
    let cfg = KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().expect("valid")), ..Default::default() };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [case, n] = args.as_slice() {
        let cases = ["save", "trace", "dig-a", "dig-srv"];
        match n.parse() {
            Ok(n) if cases.contains(&case.as_str()) => return one_case(case, n, node, cfg),
            _ => {
                eprintln!("usage: bench [<case> <n>], case one of {cases:?}, n a count of endpoints");
                std::process::exit(2);
            }
        }
    }
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
}
