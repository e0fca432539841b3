//! Disagreements between the model and a real kernel, found by the
//! dataplane harness (`crates/kubehops-dataplane-harness`), each fixed in
//! the model and kept here as a test of what the kernel did.

use kubehops_core::api::{Endpoint, EndpointPort, EndpointSlice, Node, Service, ServicePort, ServiceSpec, ServiceType};
use kubehops_core::dataplane::conntrack::{ConntrackState, ConntrackTable, Direction};
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig, NodeRules};
use kubehops_core::dataplane::trace::{trace, TraceVerdict};
use kubehops_core::net::{ip, Packet, Protocol, SockAddr};

fn node() -> Node {
    Node { name: "n".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None }
}

/// A NodePort Service on 3001 with one endpoint, ready or not.
fn node_port(ready: bool) -> NodeRules {
    let port = ServicePort { name: None, protocol: Protocol::Tcp, port: 80, target_port: 80, node_port: Some(3001) };
    let spec = ServiceSpec { type_: ServiceType::NodePort, ports: vec![port], cluster_ip: Some(ip(172, 30, 0, 1)), ..Default::default() };
    let svc = Service { name: "s".into(), namespace: "ns".into(), annotations: Default::default(), spec, status: Default::default(), created: None };
    let ep = Endpoint { ip: ip(10, 180, 0, 1), node_name: "n".into(), ready, serving: ready, terminating: false, target_ref: String::new(), hostname: None };
    let slice = EndpointSlice {
        name: "s-1".into(),
        namespace: "ns".into(),
        service_name: "s".into(),
        endpoints: vec![ep],
        ports: vec![EndpointPort { name: None, protocol: Protocol::Tcp, port: 80 }],
    };
    sync_node(&node(), &[svc], &[slice], &KubeProxyConfig::default())
}

fn from_node(src: [u8; 4], dst: [u8; 4]) -> Packet {
    Packet::new(Protocol::Tcp, SockAddr::new(src.into(), 40000), SockAddr::new(dst.into(), 3001))
}

#[test]
fn a_packet_the_node_sends_itself_meets_input_on_the_way_back_in() {
    // Without endpoints, KUBE-EXTERNAL-SERVICES rejects the node port; it
    // is jumped to from INPUT and FORWARD, not OUTPUT. The kernel rejected
    // the node's own connection to it when it came back in over loopback.
    let t = trace(&node_port(false), &node(), &from_node([192, 168, 0, 2], [192, 168, 0, 2]), true);
    assert_eq!(t.verdict, TraceVerdict::Reject);
    assert!(t.matched.last().is_some_and(|m| m.starts_with("filter: -A KUBE-EXTERNAL-SERVICES") && m.ends_with("-j REJECT")), "{:?}", t.matched);
    assert!(t.matched.iter().any(|m| m.starts_with("filter: -A INPUT")));
}

#[test]
fn every_loopback_address_is_the_nodes_own() {
    // The kernel's local table routes all of 127.0.0.0/8 to lo, so
    // `addrtype LOCAL` matches 127.0.0.2 and the localhost node port rule
    // (-d 127.0.0.0/8) takes it: the kernel DNATed it to the endpoint.
    let rules = node_port(true);
    for dst in [[127, 0, 0, 1], [127, 0, 0, 2], [127, 1, 2, 3]] {
        let t = trace(&rules, &node(), &from_node([127, 0, 0, 1], dst), true);
        assert_eq!(t.verdict, TraceVerdict::Dnat, "to {dst:?}");
        assert_eq!(t.targets, [SockAddr::new(ip(10, 180, 0, 1), 80)]);
    }
    let elsewhere = trace(&rules, &node(), &from_node([127, 0, 0, 1], [10, 9, 9, 9]), true);
    assert_eq!(elsewhere.verdict, TraceVerdict::None, "an address that is not the node's is no node port");
}

#[test]
fn one_udp_answer_makes_an_entry_replied_not_assured() {
    // The kernel after one request and one answer: no [UNREPLIED], no
    // [ASSURED], 30 s; the model used to show an assured 120 s entry.
    let mut ct = ConntrackTable::default();
    let q = Packet::new(Protocol::Udp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(ip(10, 96, 0, 10), 53));
    let a = Packet::new(Protocol::Udp, q.src, SockAddr::new(ip(10, 244, 1, 10), 5353));
    let i = ct.insert(&q, &a, 0);
    ct.translate(i, Direction::Reply, &a.reversed(), 0);
    let e = &ct.entries[i];
    assert_eq!((e.state, e.timeout()), (ConntrackState::Replied, 30));
    assert!(!e.render(0).contains("[ASSURED]") && !e.render(0).contains("[UNREPLIED]"));
    // TCP, answered, is assured at once (the model's request and reply
    // stand for the handshake).
    let t = Packet { proto: Protocol::Tcp, ..q };
    let j = ct.insert(&t, &t, 0);
    ct.translate(j, Direction::Reply, &t.reversed(), 0);
    assert_eq!((ct.entries[j].state, ct.entries[j].timeout()), (ConntrackState::Assured, 86400));
}
