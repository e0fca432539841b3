//! kube-proxy fidelity: for each feature, one node's full rule set and the
//! trace of a few packets, kept in `tests/golden/kube-proxy/<case>.txt`.
//! The cases themselves are in `tests/support/kube_proxy_cases.rs`, which
//! the real-kernel dataplane harness reads too.
//! Next to each, `kernel/<case>.txt` holds what the kernel's iptables-save
//! gives back for the same rules (the CLI's `kernel_round_trip` test loads
//! both into a real kernel).
//! `UPDATE_EXPECT=1 cargo test -p kubehops-core --test kube_proxy` rewrites them.

#[path = "support/kube_proxy_cases.rs"]
mod cases;

use cases::{cfg, node, ready, slice, svc, Case, HOST};
use kubehops_core::api::*;
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig, NodeFeatures};
use kubehops_core::dataplane::trace::trace;
use kubehops_core::net::{Packet, Protocol, SockAddr};
use std::fmt::Write as _;
use std::path::PathBuf;

fn run(case: &Case) {
    let rules = sync_node(&node(), &case.services, &case.slices, &case.cfg);
    let mut out = String::new();
    for l in rules.save() {
        let _ = writeln!(out, "{l}");
    }
    for (what, src, dst, from_node, want) in &case.packets {
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(*src, 40000), *dst);
        let t = trace(&rules, &node(), &pkt, *from_node);
        let _ = writeln!(out, "\n# trace: {what}: {} -> {}{}", src, dst, if *from_node { " (from the node)" } else { "" });
        for m in &t.matched {
            let _ = writeln!(out, "{m}");
        }
        let targets: Vec<String> = t.targets.iter().map(|a| a.to_string()).collect();
        let _ = writeln!(out, "=> {:?} targets=[{}] masquerade={}", t.verdict, targets.join(", "), t.masquerade);
        assert_eq!(t.verdict, *want, "{}: {what}", case.name);
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/kube-proxy");
    kubehops_core::golden::check(&dir.join(format!("{}.txt", case.name)), &out);
    let kernel: String = rules.save_kernel().iter().map(|l| format!("{l}\n")).collect();
    kubehops_core::golden::check(&dir.join("kernel").join(format!("{}.txt", case.name)), &kernel);
}

#[test]
fn cluster_ip_with_two_endpoints() {
    run(&cases::cluster_ip_with_two_endpoints());
}

#[test]
fn cluster_ip_with_six_endpoints() {
    run(&cases::cluster_ip_with_six_endpoints());
}

#[test]
fn node_port_with_cluster_policy() {
    run(&cases::node_port_with_cluster_policy());
}

#[test]
fn external_traffic_policy_local() {
    run(&cases::external_traffic_policy_local());
}

#[test]
fn internal_traffic_policy_local() {
    run(&cases::internal_traffic_policy_local());
}

#[test]
fn session_affinity_client_ip() {
    run(&cases::session_affinity_client_ip());
}

#[test]
fn load_balancer_ip_modes_and_source_ranges() {
    run(&cases::load_balancer_ip_modes_and_source_ranges());
}

#[test]
fn no_endpoints_reject() {
    run(&cases::no_endpoints_reject());
}

#[test]
fn terminating_endpoints_are_a_fallback() {
    run(&cases::terminating_endpoints_are_a_fallback());
}

#[test]
fn masquerade_all_and_no_localhost_node_ports() {
    run(&cases::masquerade_all_and_no_localhost_node_ports());
}

#[test]
fn known_upstream_lines_are_reproduced() {
    // Lines copied from kube-proxy's expectations for the same inputs, on
    // the node its unit tests fake.
    let cfg = KubeProxyConfig { node_features: NodeFeatures::UPSTREAM_TEST_FAKE, ..cfg() };
    let rules = sync_node(
        &node(),
        &[svc("ns1", "svc1", ServiceType::ClusterIP, [172, 30, 0, 41], 80, None)],
        &[slice("ns1", "svc1", &[ready([10, 180, 0, 1], HOST)])],
        &cfg,
    );
    let all = rules.save();
    for want in [
        "-A KUBE-SERVICES -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O",
        "-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ",
        "-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -j KUBE-SEP-SXIVWICOYRO3J4NJ",
        "-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ",
        "-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80",
        "-A KUBE-FIREWALL -m comment --comment \"block incoming localnet connections\" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP",
        "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP",
        "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT",
        "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
        "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE",
        "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS",
    ] {
        assert!(all.iter().any(|l| l == want), "missing: {want}");
    }
    assert_eq!(all.first().map(String::as_str), Some("*filter"));
    assert_eq!(all.iter().filter(|l| *l == "COMMIT").count(), 2);
}
