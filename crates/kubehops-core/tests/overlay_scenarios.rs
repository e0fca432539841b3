//! The Pod network as a choice in every scenario: each story, with every
//! combination of its parameters, told once routed (the default) and once
//! over flannel's VXLAN overlay (`network=vxlan`).
//!
//! - A wrapped hop goes from one node to another; its outer header runs
//!   between the two nodes' addresses, to UDP port 8472 with VNI 1, and
//!   it is unwrapped at the node where the packet's destination Pod runs.
//! - No hop on one node, and no hop to or from anything but a node (the
//!   laptop, a balancer, a Pod and its own node), is wrapped; nor is a
//!   packet between nodes addressed to a node itself. Every packet from
//!   one node to a Pod on another is.
//! - The overlay changes no packet but one way: a packet a node
//!   masquerades for a Pod on another node leaves by `flannel.1`, so its
//!   source is `flannel.1`'s address (the first of the node's Pod range),
//!   as MASQUERADE takes the outgoing device's address, and its reply
//!   comes back wrapped to that address. Otherwise every hop carries the
//!   same packet, between the same actors, as the routed story's; only
//!   the words say more. The routed story has no tunnel anywhere.

use kubehops_core::dataplane::overlay::{vtep_mac, ENCAP_OVERHEAD, KERNEL_SOURCE_PORTS, VXLAN_MTU};
use kubehops_core::link;
use kubehops_core::scenarios::params::{OVERLAY_HINT, POD_NETWORK};
use kubehops_core::scenarios::{combinations, Entry, Params, Scenario, Value, REGISTRY};
use kubehops_core::scene::drawing;
use kubehops_core::scene::Layout;
use kubehops_core::net::SockAddr;
use kubehops_core::sim::{Actor, ActorKind, Hop, Leg, RewriteKind};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// What one share of the builds found.
#[derive(Default)]
struct Counts {
    builds: usize,
    wrapped: usize,
    requests: usize,
    replies: usize,
    same_node: usize,
    /// Hops between two nodes left bare: addressed to a node, not a Pod.
    bare_between_nodes: usize,
    /// Masqueraded addresses that are flannel.1's over the overlay.
    masquerades: usize,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.builds += o.builds;
        self.wrapped += o.wrapped;
        self.requests += o.requests;
        self.replies += o.replies;
        self.same_node += o.same_node;
        self.bare_between_nodes += o.bare_between_nodes;
        self.masquerades += o.masquerades;
    }
}

/// The addresses masquerade gave out in the routed story, each with the
/// one it gave out for the same hop over the overlay (`flannel.1`'s).
type Masquerades = BTreeMap<SockAddr, SockAddr>;

fn snat(h: &Hop) -> Option<SockAddr> {
    h.packet.as_ref()?.rewrites.iter().find(|r| r.kind == RewriteKind::Snat).map(|r| r.to)
}

/// The masquerades that differ between the two stories, hop by hop.
fn masquerades(routed: &Scenario, overlay: &Scenario) -> Masquerades {
    let hops = |s: &Scenario| s.steps.iter().flat_map(|st| st.hops.iter().map(snat)).collect::<Vec<_>>();
    hops(routed).into_iter().zip(hops(overlay)).filter_map(|(a, b)| Some((a?, b?))).filter(|(a, b)| a != b).collect()
}

/// A routed hop as the overlay's would be: each masqueraded address
/// swapped for the overlay's, in the packet, its rewrites and its caption.
fn as_over_overlay(h: &Hop, m: &Masquerades) -> Hop {
    let mut h = h.clone();
    let swap = |a: &mut SockAddr| {
        if let Some(b) = m.get(a) {
            *a = *b;
        }
    };
    if let Some(p) = &mut h.packet {
        for a in [&mut p.before.src, &mut p.before.dst, &mut p.after.src, &mut p.after.dst] {
            swap(a);
        }
        for r in &mut p.rewrites {
            swap(&mut r.from);
            swap(&mut r.to);
        }
    }
    for (a, b) in m {
        h.caption = h.caption.replace(&a.to_string(), &b.to_string()).replace(&format!("SNAT to {}", a.ip), &format!("SNAT to {}", b.ip));
    }
    h
}

/// The hop without what the overlay adds: its tunnel and its words.
fn bare(h: &Hop) -> Hop {
    let mut h = h.clone();
    h.detail.clear();
    if let Some(p) = &mut h.packet {
        p.tunnel = None;
    }
    h
}

/// Whether `ip` is `flannel.1`'s address on node actor `node`: the first
/// address of a Pod range (it ends in .0 in every story), which the node
/// itself sends from, wrapped (the masquerade that picked it).
fn vtep_of(s: &Scenario, node: kubehops_core::sim::ActorId, ip: Ipv4Addr) -> bool {
    let sends_from = s.steps.iter().flat_map(|st| &st.hops).filter_map(|h| h.packet.as_ref()?.tunnel.as_ref()).any(|t| t.wrapped_by == node && t.wrapped.inner.src.ip == ip);
    ip.octets()[3] == 0 && sends_from
}

/// The node an actor is on: itself for a node, its parent for a Pod.
fn node_of(s: &Scenario, a: &Actor) -> Option<kubehops_core::sim::ActorId> {
    match a.kind {
        ActorKind::Node => Some(a.id),
        _ => a.parent.filter(|p| s.actor(*p).is_some_and(|n| n.kind == ActorKind::Node)),
    }
}

/// The Pod at `ip`, if a Pod of the story has that address.
fn pod_at(s: &Scenario, ip: Ipv4Addr) -> Option<&Actor> {
    s.actors.iter().find(|a| a.kind.is_pod() && a.ip == Some(ip))
}

/// Checks one hop of the overlay's story, and counts it.
fn check_hop(s: &Scenario, at: &str, h: &Hop, c: &mut Counts) {
    let Some(p) = &h.packet else { return };
    let (Some(from), Some(to)) = (s.actor(h.from), s.actor(h.to)) else { return };
    let between_nodes = from.kind == ActorKind::Node && to.kind == ActorKind::Node && h.from != h.to;
    let to_pod_there = pod_at(s, p.after.dst.ip).is_some_and(|pod| pod.parent == Some(h.to));
    let Some(t) = &p.tunnel else {
        if between_nodes {
            assert!(!to_pod_there, "{at}: a packet from one node to a Pod on another is wrapped: {h:?}");
            c.bare_between_nodes += 1;
        }
        return;
    };
    c.wrapped += 1;
    match h.leg {
        Leg::Out => c.requests += 1,
        Leg::Back => c.replies += 1,
    }
    if node_of(s, from).is_some() && node_of(s, from) == node_of(s, to) {
        c.same_node += 1;
    }
    assert!(between_nodes, "{at}: only a hop from one node to another is wrapped: {h:?}");
    assert!(h.dropped.is_none(), "{at}: a dropped packet travels in no tunnel: {h:?}");
    let o = &t.wrapped.outer;
    assert_eq!((t.wrapped_by, t.unwrapped_by), (h.from, h.to), "{at}: the hop's ends wrap and unwrap it");
    assert_eq!((Some(o.src), Some(o.dst)), (from.ip, to.ip), "{at}: the outer header runs between the nodes' addresses: {h:?}");
    assert_eq!((o.vni, o.udp_dst, o.udp_src), (1, 8472, KERNEL_SOURCE_PORTS), "{at}: flannel's VNI and the kernel's port: {h:?}");
    assert_eq!(t.device, "flannel.1");
    assert_eq!(t.wrapped.inner, p.after, "{at}: the tunnel carries the packet as it is: {h:?}");
    let name = |a: &Actor| a.object.as_ref().map(|o| o.name.clone()).unwrap_or_default();
    assert_eq!((t.wrapped.inner_src_mac, t.wrapped.inner_dst_mac), (vtep_mac(&name(from)), vtep_mac(&name(to))), "{at}: VTEP to VTEP");
    // Unwrapped where the destination runs (the node whose Pod range holds
    // it): a Pod there, or that node's flannel.1 (a reply to a masquerade).
    match pod_at(s, p.after.dst.ip) {
        Some(pod) => assert_eq!(pod.parent, Some(h.to), "{at}: unwrapped at the destination Pod's node: {h:?}"),
        None => assert!(vtep_of(s, h.to, p.after.dst.ip), "{at}: a wrapped packet goes to a Pod or to flannel.1 on the node that unwraps it: {h:?}"),
    }
    for said in [format!("flannel.1 on {} wraps it", from.short), format!("{} → {}", o.src, o.dst), format!("VNI {}", o.vni), format!("flannel.1 on {} unwraps it", to.short)] {
        assert!(h.detail.contains(&said), "{at}: the detail says {said:?}: {}", h.detail);
    }
}

/// Tells every job both ways and checks them.
fn check(jobs: &[(&Entry, Params)]) -> Counts {
    let mut c = Counts::default();
    for (e, p) in jobs {
        let vx = p.clone().with(POD_NETWORK, Value::Choice("vxlan".into()));
        let (routed, overlay) = ((e.build)(p), (e.build)(&vx));
        c.builds += 2;
        assert_eq!(routed.params.choice(POD_NETWORK), Some("routed"), "{}: routed by default", e.id);
        assert_eq!(overlay.params.choice(POD_NETWORK), Some("vxlan"), "{}: {p:?}", e.id);
        assert_eq!(routed.steps.len(), overlay.steps.len(), "{}: {p:?}", e.id);
        let m = masquerades(&routed, &overlay);
        for (a, b) in &m {
            let node = routed.actors.iter().find(|n| n.kind == ActorKind::Node && n.ip == Some(a.ip));
            assert!(node.is_some_and(|n| vtep_of(&overlay, n.id, b.ip)), "{} ({p:?}): only a node's masquerade changes, to its flannel.1 address: {a} → {b}", e.id);
        }
        c.masquerades += m.len();
        let mut cost_told = 0;
        for (i, (ra, ob)) in routed.steps.iter().zip(&overlay.steps).enumerate() {
            let at = format!("{} step {} ({p:?}, vxlan)", e.id, i + 1);
            assert!(ra.hops.iter().all(|h| h.packet.as_ref().is_none_or(|p| p.tunnel.is_none())), "{at}: the routed story wraps nothing");
            assert_eq!(ra.hops.len(), ob.hops.len(), "{at}: the same hops");
            for (k, (a, b)) in ra.hops.iter().zip(&ob.hops).enumerate() {
                assert_eq!(bare(&as_over_overlay(a, &m)), bare(b), "{at} hop {}: the overlay changes no packet and no path but flannel.1's masquerade", k + 1);
                if m.is_empty() && b.packet.as_ref().is_none_or(|p| p.tunnel.is_none()) {
                    assert_eq!(a.detail, b.detail, "{at} hop {}: an unwrapped hop reads the same", k + 1);
                }
                check_hop(&overlay, &at, b, &mut c);
            }
            // Where a masquerade differs, the tables and words show the other
            // address; elsewhere the state and the narration are the same.
            if m.is_empty() {
                assert_eq!(ra.views, ob.views, "{at}: the same state after every hop");
                assert_eq!(ra.narration, ob.narration, "{at}: the same narration");
            }
            let told = ob.hops.iter().filter(|h| h.detail.contains(&format!("adds {ENCAP_OVERHEAD} bytes of headers")) && h.detail.contains(&format!("MTU is {VXLAN_MTU}"))).count();
            assert!(told <= 1, "{at}: the cost is told once in a step, not {told} times");
            cost_told += told;
        }
        let wrapped = overlay.steps.iter().flat_map(|s| &s.hops).any(|h| h.packet.as_ref().is_some_and(|p| p.tunnel.is_some()));
        assert_eq!(cost_told > 0, wrapped, "{} ({p:?}): a story that wraps a packet says what wrapping costs", e.id);
    }
    c
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn the_overlay_wraps_only_pod_traffic_between_nodes_and_changes_no_packet() {
    let jobs: Vec<(&Entry, Params)> = REGISTRY
        .iter()
        .flat_map(|e| combinations(&(e.params)(), &[None, Some(7)]).into_iter().filter(|p| !(p.handshake() && p.seed().is_some())).filter(|p| p.choice(POD_NETWORK) == Some("routed")).map(move |p| (e, p)))
        .collect();
    assert!(REGISTRY.iter().all(|e| (e.params)().iter().any(|s| s.key == POD_NETWORK)), "every scenario offers the Pod network");
    // Two halves on two threads: a build is single-threaded.
    let (first, second) = jobs.split_at(jobs.len() / 2);
    let c = std::thread::scope(|s| {
        let h = s.spawn(|| check(first));
        let mut c = check(second);
        c.add(h.join().expect("the other half"));
        c
    });
    println!("overlay: {} builds, {} wrapped hops (requests {}, replies {}), {} same-node", c.builds, c.wrapped, c.requests, c.replies, c.same_node);
    println!("overlay: {} hops between nodes left bare (addressed to a node)", c.bare_between_nodes);
    println!("overlay: {} masqueraded addresses that are flannel.1's over the overlay", c.masquerades);
    assert_eq!(c.same_node, 0);
    assert!(c.wrapped > 0 && c.requests > 0 && c.replies > 0, "the overlay wraps requests and replies somewhere");
    assert!(c.masquerades > 0, "some story masquerades a packet for a Pod on another node");
}

#[test]
fn a_sample_of_each_way_reads_as_it_should() {
    // The laptop dials Node-2's node port; Node-2 runs no web Pod, so it
    // sends the packet on to one, on another node, and the reply comes back.
    let e = REGISTRY.iter().find(|e| e.id == "nodeport-loadbalancer").expect("registered");
    let p = Params::defaults(&(e.params)()).with(POD_NETWORK, Value::Choice("vxlan".into()));
    let s = (e.build)(&p);
    let st = s.steps.iter().find(|st| st.title == "Dial Node-2").expect("the step");
    let wrapped: Vec<&Hop> = st.hops.iter().filter(|h| h.packet.as_ref().is_some_and(|p| p.tunnel.is_some())).collect();
    // Node-2 masquerades the request, which leaves by flannel.1: its
    // source is flannel.1's address, and the reply comes back wrapped to it.
    assert_eq!(wrapped.len(), 2, "the request to the Pod and the reply to flannel.1's address are wrapped: {wrapped:?}");
    let vtep = Ipv4Addr::new(10, 244, 2, 0);
    assert_eq!(wrapped[0].packet.as_ref().map(|p| p.after.src.ip), Some(vtep), "masqueraded to flannel.1's address: {:?}", wrapped[0]);
    assert_eq!(wrapped[1].packet.as_ref().map(|p| p.after.dst.ip), Some(vtep), "the reply goes back to it: {:?}", wrapped[1]);
    println!("request: {}", wrapped[0].detail);
    // A Pod asking a Pod on another node: the request and the reply both wrapped.
    let e = REGISTRY.iter().find(|e| e.id == "service-types").expect("registered");
    let p = Params::defaults(&(e.params)()).with(POD_NETWORK, Value::Choice("vxlan".into()));
    let s = (e.build)(&p);
    let hops: Vec<&Hop> = s.steps.iter().flat_map(|st| &st.hops).filter(|h| h.packet.as_ref().is_some_and(|p| p.tunnel.is_some())).collect();
    let reply = hops.iter().find(|h| h.leg == Leg::Back).expect("a wrapped reply");
    println!("reply: {}", reply.detail);
    // The token's card says what the hop travels in, on a line of its own.
    let l = Layout::for_scenario(&s);
    let (k, i) = s.steps.iter().enumerate().find_map(|(k, st)| st.hops.iter().position(|h| std::ptr::eq(h, *reply)).map(|i| (k, i))).expect("the hop");
    let card: Vec<String> = drawing::plan(&s, &l, k, i).expect("a plan").token(1.0).card.texts.iter().map(|x| x.content()).collect();
    println!("card: {card:?}");
    let o = &reply.packet.as_ref().and_then(|p| p.tunnel.as_ref()).expect("wrapped").wrapped.outer;
    assert!(card.iter().any(|l| *l == format!("VXLAN {} → {} · VNI {}", o.src, o.dst, o.vni)), "{card:?}");
}

#[test]
fn a_bad_network_in_a_link_is_refused_with_what_is_accepted() {
    for e in REGISTRY {
        let specs = (e.params)();
        let spec = specs.iter().find(|s| s.key == POD_NETWORK).expect("offered");
        assert_eq!(spec.parse("bogus").unwrap_err(), format!("\"bogus\" is not a value of network; it takes routed, vxlan. {OVERLAY_HINT}"), "{}", e.id);
        assert_eq!(spec.default_value(), Value::Choice("routed".into()), "{}: routed by default", e.id);
    }
    let parsed = link::parse("#/nodeport-loadbalancer/2?network=bogus");
    assert_eq!(parsed.problems, [format!("\"bogus\" is not a value of network; it takes routed, vxlan. {OVERLAY_HINT}")]);
    assert_eq!(parsed.link.params.choice(POD_NETWORK), Some("routed"), "the link falls back to the default");
    assert_eq!(parsed.link.params.pod_network(), kubehops_core::dataplane::overlay::PodNetwork::Routed);
    // A good one round-trips, and the default is left out of links.
    let parsed = link::parse("#/service-types/2?network=vxlan");
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    assert!(matches!(parsed.link.params.pod_network(), kubehops_core::dataplane::overlay::PodNetwork::Vxlan(_)));
    assert_eq!(link::format(&parsed.link), "#/service-types/2?network=vxlan");
    let routed = link::parse("#/service-types/2");
    assert_eq!(link::format(&routed.link), "#/service-types/2");
}
