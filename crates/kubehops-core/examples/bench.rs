//! How long the model takes on a large cluster: one node's full rule set
//! for 1,000 and 10,000 Services with 3 endpoints each, and one packet's
//! trace through it. Prints figures; asserts nothing about time.
//!
//! `cargo run --release -p kubehops-core --example bench`

use kubehops_core::api::*;
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig};
use kubehops_core::net::{ip, Packet, Protocol, SockAddr};
use kubehops_core::dataplane::trace::trace;
use std::time::Instant;

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
}
