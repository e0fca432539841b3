//! Invariants over every scenario and every combination of its
//! parameters: the hops a scenario records obey the rules of the model,
//! and the canvas can draw them. (With `handshake=1`, as in the other
//! sweeps, with fixed picks only: a seed changes which endpoint answers,
//! not how a connection's packets go.)
//!
//! - A packet changes only by a rewrite the hop records, made by a node's
//!   rules, its conntrack entry, or a balancer.
//! - Consecutive hops of a connection hand the packet on unchanged, and a
//!   server's reply starts as its request turned around.
//! - Every reply retraces its request, actor by actor; a packet stays on
//!   one machine only on the client's (loopback, or its conntrack handing
//!   the reply to its socket).
//! - ARP answers a question of the machine it goes to, and that machine's
//!   packets to the address then go to the node that answered.
//! - Every route starts and ends on the edge of its boxes, crosses no box
//!   it does not connect, and a reply leg never lies on its request leg.

use kubehops_core::net::Packet;
use kubehops_core::scenarios::{combinations, Scenario, REGISTRY};
use kubehops_core::scene::layout::{side_of, Layout, Point, Rect};
use kubehops_core::sim::{ActorId, ActorKind, Field, Hop, Leg, PacketHop, RewriteKind};
use std::collections::BTreeMap;

/// Every scenario with every combination of its parameters, built on both
/// cores at once.
fn all_scenarios() -> Vec<Scenario> {
    let jobs: Vec<(usize, kubehops_core::scenarios::Params)> =
        REGISTRY.iter().enumerate().flat_map(|(i, e)| combinations(&(e.params)(), &[None, Some(7)]).into_iter().filter(|p| !(p.handshake() && p.seed().is_some())).map(move |p| (i, p))).collect();
    let half = jobs.len() / 2;
    let (a, b) = jobs.split_at(half);
    let run = |part: &[(usize, kubehops_core::scenarios::Params)]| part.iter().map(|(i, p)| (REGISTRY[*i].build)(p)).collect::<Vec<_>>();
    std::thread::scope(|s| {
        let h = s.spawn(|| run(a));
        let mut out = run(b);
        out.extend(h.join().expect("builder thread"));
        out
    })
}

/// `before` with the hop's rewrites applied, in order.
fn rewritten(p: &PacketHop) -> Packet {
    let mut pkt = p.before;
    for r in &p.rewrites {
        match r.field {
            Field::Source => {
                assert_eq!(pkt.src, r.from, "a source rewrite starts from the source it had: {p:?}");
                pkt.src = r.to;
            }
            Field::Destination => {
                assert_eq!(pkt.dst, r.from, "a destination rewrite starts from the destination it had: {p:?}");
                pkt.dst = r.to;
            }
        }
    }
    pkt
}

fn check_rewrites(s: &Scenario, h: &Hop) {
    let Some(p) = &h.packet else { return };
    assert_eq!(rewritten(p), p.after, "{}: the rewrites explain every change: {h:?}", s.id);
    if p.rewrites.is_empty() {
        return;
    }
    let balancer = s.actor(h.from).is_some_and(|a| a.kind == ActorKind::LoadBalancer);
    for r in &p.rewrites {
        match r.kind {
            RewriteKind::Balancer => assert!(balancer, "only a balancer makes a balancer rewrite: {h:?}"),
            RewriteKind::UnDnat | RewriteKind::UnSnat => assert!(p.by_conntrack, "undoing NAT is conntrack's: {h:?}"),
            RewriteKind::Dnat | RewriteKind::Snat => {
                assert!(p.decided_on.is_some(), "a NAT is decided on a node: {h:?}");
                assert!(p.by_conntrack || !p.matched.is_empty(), "a NAT comes from rules that matched or from conntrack: {h:?}");
            }
        }
    }
}

/// Hops of each connection, in order, across steps (a story may cut one
/// connection into two steps).
fn connections<'a>(hops: impl Iterator<Item = &'a Hop>) -> BTreeMap<u32, Vec<&'a Hop>> {
    let mut m: BTreeMap<u32, Vec<&Hop>> = BTreeMap::new();
    for h in hops.filter(|h| !h.what_if) {
        if let Some(c) = h.conn {
            m.entry(c).or_default().push(h);
        }
    }
    m
}

fn check_connection(s: &Scenario, conn: &[&Hop]) {
    // A connection followed packet by packet is one walk per packet (and
    // its answer): each walk obeys what a whole connection does otherwise.
    let seg = |h: &Hop| h.packet.as_ref().and_then(|p| p.segment);
    if conn.iter().any(|h| seg(h).is_some()) {
        let mut start = 0;
        for i in 1..=conn.len() {
            let split = i == conn.len() || (seg(conn[i - 1]) != seg(conn[i]) && !(conn[i - 1].leg == Leg::Out && conn[i].leg == Leg::Back));
            if split {
                check_walk(s, &conn[start..i]);
                start = i;
            }
        }
        return;
    }
    check_walk(s, conn);
}

/// One walk: from the client to the server and, if it answers, back.
fn check_walk(s: &Scenario, conn: &[&Hop]) {
    for w in conn.windows(2) {
        let (a, b) = (w[0], w[1]);
        assert_eq!(a.to, b.from, "{}: a connection moves from actor to actor: {a:?} then {b:?}", s.id);
        let (Some(pa), Some(pb)) = (&a.packet, &b.packet) else { continue };
        if a.leg == b.leg {
            assert_eq!(pa.after, pb.before, "{}: the next hop gets the packet as it left: {a:?} then {b:?}", s.id);
        } else {
            assert_eq!((a.leg, b.leg), (Leg::Out, Leg::Back), "{}: a reply follows a request", s.id);
            assert_eq!(pa.after.reversed(), pb.before, "{}: the server answers the packet it got", s.id);
        }
    }
    let out: Vec<_> = conn.iter().filter(|h| h.leg == Leg::Out && h.from != h.to).map(|h| (h.from, h.to)).collect();
    let back: Vec<_> = conn.iter().filter(|h| h.leg == Leg::Back && h.from != h.to).map(|h| (h.to, h.from)).collect();
    // A hop from an actor to itself is a drop, loopback on the client's
    // machine, or the client's conntrack handing the reply to its socket.
    for (i, h) in conn.iter().enumerate().filter(|(_, h)| h.from == h.to && h.dropped.is_none()) {
        // A walk that starts on the way back (a server's FIN) ends at the client.
        let client = match conn.first() {
            Some(f) if f.leg == Leg::Back => conn.last().map(|l| l.to),
            f => f.map(|f| f.from),
        };
        assert_eq!(Some(h.from), client, "{}: a packet stays on one machine only on the client's: {h:?}", s.id);
        if let Some(p) = h.packet.as_ref().filter(|p| !p.rewrites.is_empty()) {
            assert!(i + 1 == conn.len() && h.leg == Leg::Back && p.by_conntrack && p.decided_on == Some(h.from), "{}: only the client's conntrack rewrites a packet it keeps: {h:?}", s.id);
        }
    }
    let moving: Vec<&&Hop> = conn.iter().filter(|h| h.from != h.to).collect();
    let delivered = conn.last().is_some_and(|h| h.dropped.is_none());
    let answered = delivered && moving.last().is_some_and(|h| h.leg == Leg::Back && moving.first().is_some_and(|f| f.from == h.to));
    if answered {
        let mut rev = back.clone();
        rev.reverse();
        assert_eq!(out, rev, "{}: the reply retraces its request", s.id);
    }
}

/// How long two axis-parallel segments run on top of each other.
fn shared_run(a: (Point, Point), b: (Point, Point)) -> f64 {
    let horiz = |s: (Point, Point)| (s.0.y - s.1.y).abs() < 0.5;
    let vert = |s: (Point, Point)| (s.0.x - s.1.x).abs() < 0.5;
    let span = |x0: f64, x1: f64, y0: f64, y1: f64| (x0.max(x1).min(y0.max(y1)) - x0.min(x1).max(y0.min(y1))).max(0.0);
    if horiz(a) && horiz(b) && (a.0.y - b.0.y).abs() < 1.5 {
        span(a.0.x, a.1.x, b.0.x, b.1.x)
    } else if vert(a) && vert(b) && (a.0.x - b.0.x).abs() < 1.5 {
        span(a.0.y, a.1.y, b.0.y, b.1.y)
    } else {
        0.0
    }
}

fn segments(p: &[Point]) -> Vec<(Point, Point)> {
    p.windows(2).map(|w| (w[0], w[1])).collect()
}

fn check_routes(s: &Scenario, l: &Layout) {
    // The node card a Pod's box sits in is part of what its routes connect.
    let card_of = |a| l.nodes.iter().find(|n| l.rect(a).is_some_and(|r| n.pods.contains(r.center()))).map(|n| n.node);
    for st in &s.steps {
        let mut legs: Vec<(Leg, Vec<Point>, String)> = Vec::new();
        for h in st.hops.iter().filter(|h| h.from != h.to) {
            let route = l.hop_route(h);
            assert!(route.len() >= 2, "{}: no route for {h:?}", s.id);
            let canvas = Rect { x: 0.0, y: 0.0, w: l.width, h: l.height };
            assert!(route.iter().all(|p| canvas.contains(*p)), "{}: route {:?} leaves the canvas: {route:?}", s.id, h.caption);
            let (from, to) = (l.target(h.from).expect("from box"), l.target(h.to).expect("to box"));
            assert!(side_of(&from, route[0]).is_some(), "{}: route {:?} starts off its box {from:?}", s.id, h.caption);
            let end = *route.last().unwrap();
            let side = side_of(&to, end).unwrap_or_else(|| panic!("{}: route {:?} ends off its box {to:?} at {end:?}", s.id, h.caption));
            // The last segment comes from outside the box, at a right angle to that edge.
            let prev = route[route.len() - 2];
            use kubehops_core::scene::Side::*;
            let ok = match side {
                Left => prev.x < end.x && (prev.y - end.y).abs() < 0.5,
                Right => prev.x > end.x && (prev.y - end.y).abs() < 0.5,
                Top => prev.y < end.y && (prev.x - end.x).abs() < 0.5,
                Bottom => prev.y > end.y && (prev.x - end.x).abs() < 0.5,
            };
            assert!(ok, "{}: the arrow into {to:?} does not meet the edge it comes from ({side:?}): {route:?}", s.id);
            let own: Vec<_> = [h.from, h.to].into_iter().flat_map(|a| [Some(a), card_of(a)]).flatten().collect();
            for (id, r) in &l.boxes {
                if own.contains(id) {
                    continue;
                }
                for (a, b) in segments(&route) {
                    assert!(!r.crossed_by(a, b), "{}: hop {:?} crosses the box of {:?} ({r:?}): {route:?}", s.id, h.caption, s.actor(*id).map(|x| &x.label));
                }
            }
            // Group boxes ("+37 Pods", "+42 nodes") are crossed only by
            // routes to or from one of their members.
            for g in &l.groups {
                if own.iter().any(|a| g.members.contains(a)) {
                    continue;
                }
                for (a, b) in segments(&route) {
                    assert!(!g.rect.crossed_by(a, b), "{}: hop {:?} crosses the group box {:?}: {route:?}", s.id, h.caption, g.label());
                }
            }
            legs.push((h.leg, route, h.caption.clone()));
        }
        for (la, ra, ca) in legs.iter().filter(|l| l.0 == Leg::Out) {
            for (_, rb, cb) in legs.iter().filter(|l| l.0 == Leg::Back) {
                for sa in segments(ra) {
                    for sb in segments(rb) {
                        let run = shared_run(sa, sb);
                        assert!(run < 2.0, "{}: reply {cb:?} lies on request {ca:?} ({la:?}) for {run:.1} units", s.id);
                    }
                }
            }
        }
    }
}

fn check_boxes(s: &Scenario, l: &Layout) {
    let canvas = Rect { x: 0.0, y: 0.0, w: l.width, h: l.height };
    for (id, r) in &l.boxes {
        assert!(r.x >= canvas.x && r.y >= canvas.y && r.right() <= canvas.right() && r.bottom() <= canvas.bottom(), "{}: {id:?} leaves the canvas", s.id);
    }
    for (i, (a, ra)) in l.boxes.iter().enumerate() {
        for (b, rb) in &l.boxes[i + 1..] {
            let nested = [(a, b), (b, a)].iter().any(|(p, n)| l.node_card(**n).is_some_and(|c| c.pods.contains(l.rect(**p).unwrap().center())));
            assert!(nested || !ra.intersects(rb), "{}: {a:?} overlaps {b:?}", s.id);
        }
    }
    // A group box lies inside the canvas, inside its node's Pod area if it
    // is one of Pods, and overlaps no box but its node's card.
    for g in &l.groups {
        let r = g.rect;
        assert!(r.x >= 0.0 && r.y >= 0.0 && r.right() <= canvas.right() && r.bottom() <= canvas.bottom(), "{}: {} leaves the canvas", s.id, g.label());
        if let Some(n) = g.node {
            assert!(l.node_card(n).is_some_and(|c| c.pods.contains(r.center())), "{}: {} is in its node", s.id, g.label());
        }
        for (id, b) in &l.boxes {
            if Some(*id) == g.node {
                continue;
            }
            assert!(!r.intersects(b), "{}: {} overlaps {:?}", s.id, g.label(), s.actor(*id).map(|x| &x.label));
        }
        assert!(g.members.iter().all(|m| !l.has_box(*m)), "{}: a member of {} has a box of its own", s.id, g.label());
    }
}

/// A cluster of `nodes` nodes, `pods` Pods and `services` Services (every
/// fifth a NodePort), each Service with `pods / services` endpoints, built
/// from typed objects as the reader would give them.
fn big_cluster(nodes: usize, pods: usize, services: usize) -> kubehops_core::scenarios::your_cluster::ClusterInput {
    use kubehops_core::api::*;
    use kubehops_core::net::{Cidr, Protocol};
    use std::net::Ipv4Addr;
    let node_ip = |i: usize| Ipv4Addr::new(10, 0, (i / 250) as u8, (10 + i % 250) as u8);
    let pod_ip = |p: usize| Ipv4Addr::new(10, 100 + ((p % nodes) / 250) as u8, ((p % nodes) % 250) as u8, (2 + p / nodes % 250) as u8);
    let mut input = kubehops_core::scenarios::your_cluster::ClusterInput::default();
    input.nodes = (0..nodes).map(|n| Node { name: format!("node-{}", n + 1), internal_ip: node_ip(n), pod_cidr: Some(Cidr::new(Ipv4Addr::new(10, 100 + (n / 250) as u8, (n % 250) as u8, 0), 24)) }).collect();
    input.pods = (0..pods)
        .map(|p| Pod {
            name: format!("app{}-7c9d8f5b6-p{p:05}", p % services),
            namespace: format!("ns{}", p % services % 10),
            labels: [("app".to_string(), format!("app{}", p % services))].into(),
            node_name: format!("node-{}", p % nodes + 1),
            ip: pod_ip(p),
            container_port: 8080,
            port_name: None,
            ready: true,
        })
        .collect();
    for sv in 0..services {
        let np = sv % 5 == 0;
        input.services.push(Service {
            name: format!("app{sv}"),
            namespace: format!("ns{}", sv % 10),
            annotations: Default::default(),
            spec: ServiceSpec {
                type_: if np { ServiceType::NodePort } else { ServiceType::ClusterIP },
                selector: [("app".to_string(), format!("app{sv}"))].into(),
                ports: vec![ServicePort { name: Some("http".into()), protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: np.then_some(30000 + sv as u16) }],
                cluster_ip: Some(Ipv4Addr::new(10, 96, (1 + sv / 250) as u8, (1 + sv % 250) as u8)),
                ..Default::default()
            },
            status: Default::default(),
            created: None,
        });
        input.slices.push(EndpointSlice {
            name: format!("app{sv}-abcde"),
            namespace: format!("ns{}", sv % 10),
            service_name: format!("app{sv}"),
            endpoints: (sv..pods)
                .step_by(services)
                .map(|p| Endpoint { ip: pod_ip(p), node_name: format!("node-{}", p % nodes + 1), ready: true, serving: true, terminating: false, target_ref: format!("Pod/app{sv}-7c9d8f5b6-p{p:05}"), hostname: None })
                .collect(),
            ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
        });
    }
    input
}

#[test]
fn a_big_pasted_cluster_groups_what_does_not_fit_and_keeps_every_invariant() {
    use kubehops_core::scenarios::your_cluster;
    let input = big_cluster(50, 2000, 500);
    for (service, client) in [("ns0/app0", "outside"), ("ns3/app13", "pod:ns7/app7-7c9d8f5b6-p00007"), ("ns5/app5", "node:node-40")] {
        let mut p = kubehops_core::scenarios::Params::default();
        p.insert("service", kubehops_core::scenarios::Value::Choice(service.into()));
        p.insert("client", kubehops_core::scenarios::Value::Choice(client.into()));
        let s = your_cluster::build(&input, &p);
        assert_eq!(s.params.choice("service"), Some(service));
        let st = &s.steps[2];
        assert!(st.hops.len() >= 3 && st.hops.iter().all(|h| h.kind != kubehops_core::sim::HopKind::Dropped), "{service} from {client}: {}", st.narration);
        for st in &s.steps {
            for h in &st.hops {
                check_rewrites(&s, h);
            }
        }
        for conn in connections(s.steps.iter().flat_map(|st| st.hops.iter())).values() {
            check_connection(&s, conn);
        }
        check_snapshots(&s);
        let l = Layout::for_scenario(&s);
        assert!(l.nodes.len() <= kubehops_core::scene::layout::MAX_NODES_SHOWN, "{} node cards", l.nodes.len());
        let labels: Vec<String> = l.groups.iter().map(|g| g.label()).collect();
        assert!(labels.iter().any(|g| g.ends_with(" nodes")), "{labels:?}");
        assert!(labels.iter().any(|g| g.ends_with(" Pods")), "{labels:?}");
        // Every actor is drawn: in a box of its own or in exactly one group.
        for a in s.actors.iter().filter(|a| a.zone == kubehops_core::sim::Zone::Cluster) {
            let groups = l.groups.iter().filter(|g| g.members.contains(&a.id)).count();
            assert_eq!(usize::from(l.has_box(a.id)) + groups, 1, "{}", a.label);
        }
        // Everything the hops touch has a box of its own.
        for h in s.steps.iter().flat_map(|st| st.hops.iter()) {
            assert!(l.has_box(h.from) && l.has_box(h.to), "{}", h.caption);
        }
        // Every node with a card has its rules from the first view on.
        for c in &l.nodes {
            assert!(s.steps.iter().flat_map(|st| st.views.iter()).all(|v| v.node(c.node).is_some_and(|n| n.synced)), "{service} from {client}: {:?} has a card but no rules computed", s.actor(c.node).map(|a| &a.label));
        }
        assert!(l.height < 4000.0, "legible: {} units tall", l.height);
        check_boxes(&s, &l);
        check_routes(&s, &l);
    }
}

/// ARP: an answer follows a question about the same address from the
/// same machine and goes back to it, and once it is answered, that
/// machine's packets to the address go to the node of whoever answered.
fn check_arp(s: &Scenario) {
    use kubehops_core::sim::ArpOp;
    // (asker, address) → the node the answer names.
    let mut learned: Vec<(ActorId, std::net::Ipv4Addr, ActorId)> = Vec::new();
    for st in &s.steps {
        for (i, h) in st.hops.iter().enumerate() {
            if let Some(a) = &h.arp {
                assert!(h.packet.is_none() && h.conn.is_none() && h.kind == kubehops_core::sim::HopKind::Dns, "{}: an ARP hop is a frame, not a packet: {h:?}", s.id);
                if a.op == ArpOp::Reply {
                    let asked = st.hops[..i].iter().any(|q| q.arp.as_ref().is_some_and(|r| r.op == ArpOp::Request && r.target_ip == a.sender_ip && r.sender_ip == a.target_ip) && q.from == h.to);
                    assert!(asked && h.leg == Leg::Back, "{}: an is-at answers a who-has of the machine it goes to: {h:?}", s.id);
                    let node = s.actor(h.from).map(|x| if x.kind.is_pod() { x.parent.unwrap_or(x.id) } else { x.id });
                    learned.push((h.to, a.sender_ip, node.expect("responder")));
                } else {
                    assert_eq!(h.leg, Leg::Out, "{}: a who-has goes out", s.id);
                }
                continue;
            }
            let Some(p) = &h.packet else { continue };
            if let Some((_, _, node)) = learned.iter().find(|(asker, ip, _)| *asker == h.from && *ip == p.after.dst.ip) {
                assert_eq!(h.to, *node, "{}: a packet to {} goes where ARP said: {h:?}", s.id, p.after.dst.ip);
            }
        }
    }
}

/// Each step's snapshot is the data plane its packets met: a step with
/// packets has one; every rule a hop (or a drop) names is that line of
/// the snapshot's tables on the machine that decided; kube-proxy rewrites
/// no node's rules after the step's first packet; and a connection cut
/// into two steps has the same snapshot in both.
fn check_snapshots(s: &Scenario) {
    use kubehops_core::sim::{DropReason, MatchedRule};
    let mut first_step: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, st) in s.steps.iter().enumerate() {
        let packets = st.hops.iter().any(|h| h.packet.is_some());
        assert_eq!(st.snapshot.is_some(), packets, "{}: step {} has a snapshot exactly when it carries packets", s.id, i + 1);
        let Some(snap) = &st.snapshot else { continue };
        // Each machine's printed rules: iptables-save, and in nftables
        // mode kube-proxy's transaction, which its ip kube-proxy lines index.
        let lines: Vec<(ActorId, Vec<String>, Vec<String>)> = snap
            .nodes
            .iter()
            .map(|n| (n.actor, n.rules.save(), n.nftables.as_ref().map(|t| t.transaction()).unwrap_or_default()))
            .chain(snap.hosts.iter().map(|h| (h.net.actor, h.net.save(), Vec::new())))
            .collect();
        let check = |machine: ActorId, m: &MatchedRule| {
            let (_, save, nft) = lines.iter().find(|(a, _, _)| *a == machine).unwrap_or_else(|| panic!("{}: no machine {machine:?} in the snapshot", s.id));
            let printed = if m.table == kubehops_core::dataplane::rules::RuleTable::KubeProxy { nft } else { save };
            assert_eq!(printed.get(m.line), Some(&m.text), "{}: step {}: line {} of {machine:?}'s snapshot", s.id, i + 1, m.line);
        };
        for h in &st.hops {
            if let Some(p) = h.packet.as_ref().filter(|p| !p.by_conntrack) {
                for m in p.matched.iter() {
                    check(p.decided_on.expect("rules match on a machine"), m);
                }
            }
            if let Some(DropReason::Filtered { node, rule: Some(m), .. }) = &h.dropped {
                check(*node, m);
            }
        }
        let first_packet = st.hops.iter().position(|h| h.packet.is_some()).expect("packets");
        let resync = st.hops[first_packet..].iter().find(|h| h.packet.is_none() && h.arp.is_none() && snap.nodes.iter().any(|n| n.actor == h.to));
        assert!(resync.is_none(), "{}: step {}: kube-proxy rewrites rules after the step's first packet: {resync:?}", s.id, i + 1);
        for c in st.hops.iter().filter_map(|h| h.conn) {
            let at = *first_step.entry(c).or_insert(i);
            assert_eq!(s.steps[at].snapshot.as_ref(), Some(snap), "{}: connection {c} runs on one data plane", s.id);
        }
    }
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn every_scenario_and_parameter_combination_obeys_the_model_and_draws_cleanly() {
    let all = all_scenarios();
    // One layout per scenario and set of actors: parameters may move a
    // Pod to another node.
    let mut layouts: Vec<(String, Vec<kubehops_core::sim::Actor>, Layout)> = Vec::new();
    let mut hops = 0;
    for s in &all {
        assert!(!s.steps.is_empty(), "{} has steps", s.id);
        for st in &s.steps {
            assert_eq!(st.views.len(), st.hops.len() + 1, "{}: one view before the hops and one after each", s.id);
            for h in &st.hops {
                check_rewrites(s, h);
            }
            hops += st.hops.len();
        }
        for conn in connections(s.steps.iter().flat_map(|st| st.hops.iter())).values() {
            check_connection(s, conn);
        }
        check_arp(s);
        check_snapshots(s);
        let known = layouts.iter().position(|(id, actors, _)| *id == s.id && *actors == s.actors);
        let i = known.unwrap_or_else(|| {
            layouts.push((s.id.clone(), s.actors.clone(), Layout::new(&s.actors)));
            layouts.len() - 1
        });
        let l = &layouts[i].2;
        check_boxes(s, l);
        check_routes(s, l);
    }
    assert!(hops > 1000, "the combinations recorded {hops} hops");
}
