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

// Found while replaying the scenarios' hops (the explorer's and the local
// lab's) through the harness.

mod explorer {
    use kubehops_core::api::{Service, ServicePort, ServiceSpec, ServiceType, TrafficPolicy};
    use kubehops_core::dataplane::kubeproxy::NodeFeatures;
    use kubehops_core::dataplane::netfilter::FixedDraws;
    use kubehops_core::net::{ip, Protocol, SockAddr};
    use kubehops_core::scenarios::service_types::cluster;
    use kubehops_core::sim::{ActorKind, Dial, DropReason, Outcome, RewriteKind, World};

    /// Service api of the explorer as a NodePort on 30080.
    fn node_port(policy: TrafficPolicy) -> Service {
        let port = ServicePort { name: None, protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: Some(30080) };
        let spec = ServiceSpec { type_: ServiceType::NodePort, selector: [("app".to_string(), "api".to_string())].into(), ports: vec![port], external_traffic_policy: policy, ..Default::default() };
        Service { name: "api".into(), namespace: "default".into(), annotations: Default::default(), spec, status: Default::default(), created: None }
    }

    fn with_node_port(policy: TrafficPolicy) -> World {
        let mut w = cluster();
        w.kubectl_apply(node_port(policy)).expect("valid");
        w.take_trace();
        w
    }

    #[test]
    fn a_reply_from_another_address_than_the_one_dialled_is_not_an_answer() {
        // The walkthrough's cluster has no egress masquerade. Pod
        // web-x2klp on node-1 dials node-2's node port under Local: node-2
        // sends Pod traffic on to any endpoint, without masquerade, here
        // web-q7rtm on node-3. Its answer goes to node-1 straight from
        // 10.244.3.9:8080, and node-1 has nothing to undo; the client's
        // socket waits for 10.0.0.12:31000, so its kernel resets the stray
        // SYN-ACK. The model said "answered".
        let mut w = kubehops_core::scenarios::nodeport_loadbalancer::cluster();
        let mut svc = w.api.service("default", "web").cloned().expect("web");
        svc.spec.type_ = ServiceType::NodePort;
        svc.spec.external_traffic_policy = TrafficPolicy::Local;
        svc.spec.ports[0].node_port = Some(31000);
        w.kubectl_apply(svc).expect("valid");
        w.take_trace();
        let client = w.actors.of_object(ActorKind::Pod, "default", "web-6b8f9c7d5-x2klp").expect("web-x2klp");
        let dst = SockAddr::new(ip(10, 0, 0, 12), 31000);
        let out = w.dial(Dial::tcp(client, dst), &mut FixedDraws::new(vec![0.9]));
        let got = SockAddr::new(ip(10, 244, 3, 9), 8080);
        assert_eq!(out, Outcome::Dropped { at: client, reason: DropReason::ReplyFromWrongSource { expected: dst, got } });
        let last = w.take_trace().pop().expect("hops").0;
        assert_eq!((last.from, last.to, last.dropped.is_some()), (client, client, true), "the drop is on the client");
        // With the cluster's egress masquerade, the node port sees the
        // node's address instead, and the answer finds its way back.
        let mut w = with_node_port(TrafficPolicy::Local);
        let web = w.actors.of_object(ActorKind::Pod, "default", "web").expect("web");
        let out = w.dial(Dial::tcp(web, SockAddr::new(ip(10, 0, 0, 12), 30080)), &mut FixedDraws::new(vec![]));
        assert!(matches!(out, Outcome::Answered { server, .. } if server == SockAddr::new(ip(10, 0, 0, 12), 30080)), "{out:?}");
    }

    #[test]
    fn a_rejection_on_the_way_back_in_names_the_input_rule() {
        // With no ready endpoint the node port is rejected by
        // KUBE-EXTERNAL-SERVICES, which INPUT and FORWARD jump to. A node
        // dialling its own node port meets it in INPUT over loopback; the
        // drop named the last rule of filter OUTPUT instead.
        let mut w = with_node_port(TrafficPolicy::Cluster);
        for p in ["api-7c9d8f5b6-x4k2p", "api-7c9d8f5b6-r8t6w", "api-7c9d8f5b6-m3n9q"] {
            w.set_ready("default", p, false);
        }
        let node1 = w.node_actor(0).expect("node-1");
        let out = w.dial(Dial::tcp(node1, SockAddr::new(ip(10, 0, 0, 11), 30080)), &mut FixedDraws::new(vec![]));
        let Outcome::Dropped { reason: DropReason::Filtered { rejected, rule: Some(rule), comment: Some(comment), .. }, .. } = out else { panic!("{out:?}") };
        assert!(rejected);
        assert!(rule.text.starts_with("-A KUBE-EXTERNAL-SERVICES") && rule.text.ends_with("-j REJECT"), "{}", rule.text);
        assert_eq!(comment, "default/api has no endpoints");
    }

    #[test]
    fn masquerade_keeps_the_port_without_random_fully() {
        // kube-proxy's MASQUERADE has --random-fully only where iptables
        // supports it; without it the kernel keeps the client's port when
        // no other connection uses it. The model drew a port either way.
        let snat = |features: NodeFeatures| {
            let mut w = cluster();
            w.proxy.node_features = features;
            w.kubectl_apply(node_port(TrafficPolicy::Cluster)).expect("valid");
            let laptop = w.first(ActorKind::Laptop).expect("laptop");
            w.take_trace();
            w.dial(Dial::tcp(laptop, SockAddr::new(ip(10, 0, 0, 11), 30080)), &mut FixedDraws::new(vec![0.9, 0.9]));
            let hops = w.take_trace();
            let r = hops.iter().filter_map(|(h, _)| h.packet.as_ref()).flat_map(|p| p.rewrites.iter()).find(|r| r.kind == RewriteKind::Snat).copied();
            r.expect("masqueraded")
        };
        let old = snat(NodeFeatures::NONE);
        assert_eq!((old.to.ip, old.to.port), (ip(10, 0, 0, 11), old.from.port), "{old:?}");
        let modern = snat(NodeFeatures::MODERN);
        assert_eq!(modern.to.ip, ip(10, 0, 0, 11));
        assert_ne!(modern.to.port, modern.from.port, "--random-fully draws a port");
    }
}
