//! A TCP connection packet by packet (`handshake=1`) in every scenario,
//! with every combination of its parameters.
//!
//! - Each connection the story opens over TCP is its real packets, in
//!   order: SYN, SYN-ACK, ACK, the request, the response, the client's
//!   FIN, the server's ACK, the server's FIN, the client's ACK; or a first
//!   part of them, ended by a drop.
//! - Only the SYN walks rules: every later packet a node or host rewrites
//!   is rewritten by its conntrack entry, and no rule matches it.
//! - After each packet, the entry of every node the connection crosses is
//!   in the state the kernel's TCP tracker gives for the same packets
//!   (`dataplane::tcp::replay`), and its line says so as `conntrack -L`
//!   does, with `[ASSURED]` from the handshake's last ACK on.
//! - The request and the response are the story's own: the packets the
//!   one-request story shows, between the same actors; the handshake
//!   only adds packets around them.
//! - UDP (DNS) keeps its one query and one answer.

use kubehops_core::dataplane::tcp::{replay, standard_segments, Segment, TcpState, TcpTimeouts};
use kubehops_core::net::{Packet, Protocol};
use kubehops_core::scenarios::params::HANDSHAKE;
use kubehops_core::scenarios::{combinations, Entry, Params, Scenario, Value, REGISTRY};
use kubehops_core::sim::{ActorId, Hop};

/// A hop of a scenario: its step and its index there.
type At = (usize, usize);

/// The hops of each connection, in order, across the steps (a story may
/// end a step in the middle of a connection); what-if hops aside.
fn connections(s: &Scenario) -> Vec<(u32, Vec<At>)> {
    let mut out: Vec<(u32, Vec<At>)> = Vec::new();
    for (k, st) in s.steps.iter().enumerate() {
        for (i, h) in st.hops.iter().enumerate() {
            let Some(c) = h.conn.filter(|_| !h.what_if) else { continue };
            match out.iter_mut().find(|(x, _)| *x == c) {
                Some((_, v)) => v.push((k, i)),
                None => out.push((c, vec![(k, i)])),
            }
        }
    }
    out
}

fn hop(s: &Scenario, (k, i): At) -> &Hop {
    &s.steps[k].hops[i]
}

/// The segments of a connection, each with its last hop.
fn segments(s: &Scenario, hops: &[At]) -> Vec<(Segment, At)> {
    kubehops_core::sim::hop::segments(hops.iter().map(|&at| (at, hop(s, at))))
}

/// Where the SYN created an entry: each node or host, with the packet as
/// it arrived there (the entry's original tuple).
fn entries_of(s: &Scenario, syn_hops: &[At]) -> Vec<(ActorId, Packet)> {
    syn_hops
        .iter()
        .filter_map(|&at| {
            let p = hop(s, at).packet.as_ref()?;
            Some((p.decided_on?, p.before)).filter(|_| p.conntrack_entry.is_some() && !p.by_conntrack)
        })
        .collect()
}

/// The TCP state of `node`'s entry for `pkt` in the view after hop `at`.
fn state_at(s: &Scenario, (k, i): At, node: ActorId, pkt: &Packet) -> Option<(TcpState, String)> {
    let v = s.steps[k].views.get(i + 1)?;
    let lines = v.nodes.iter().find(|n| n.node == node).map(|n| &n.conntrack).or_else(|| v.hosts.iter().find(|h| h.host == node).map(|h| &h.conntrack))?;
    let l = lines.iter().find(|l| l.original.src == pkt.src && l.original.dst == pkt.dst)?;
    Some((l.tcp?, l.text.clone()))
}

#[derive(Default)]
struct Counts {
    builds: usize,
    connections: usize,
    /// Opened by a server while it answered: one request and one reply.
    nested: usize,
    whole: usize,
    segments: usize,
    states_checked: usize,
}

fn check(id: &str, p: &Params, s: &Scenario, plain: &Scenario, counts: &mut Counts) {
    let names: Vec<&str> = standard_segments().iter().map(|(_, seg)| seg.name()).collect();
    let want: Vec<(TcpState, bool)> = replay(&standard_segments(), TcpTimeouts::kube_proxy()).iter().map(|s| (s.track.state, s.track.assured)).collect();
    let kube_proxy_timeouts = replay(&standard_segments(), TcpTimeouts::kube_proxy());
    let host_timeouts = replay(&standard_segments(), TcpTimeouts::kernel_default());
    let at = format!("{id} {p:?}");
    let conns = connections(s);
    // While a server answers a request, the connections it opens itself
    // (Envoy's, docker-proxy's) stay one request and one reply.
    let answering: Vec<(At, At)> = conns
        .iter()
        .filter_map(|(_, hops)| {
            let data: Vec<At> = hops.iter().copied().filter(|&h| hop(s, h).packet.as_ref().and_then(|p| p.segment).is_some_and(|g| g.data)).collect();
            Some((*data.first()?, *data.last()?))
        })
        .collect();
    for (conn, hops) in &conns {
        let conn = *conn;
        let Some(first) = hops.iter().find_map(|&h| hop(s, h).packet.as_ref()) else { continue };
        let segs = segments(s, hops);
        if first.before.proto != Protocol::Tcp {
            assert!(segs.is_empty(), "{at}: a {:?} connection has TCP segments", first.before.proto);
            continue;
        }
        counts.connections += 1;
        if segs.is_empty() && answering.iter().any(|(a, b)| *a < hops[0] && hops[hops.len() - 1] < *b) {
            counts.nested += 1;
            continue;
        }
        let got: Vec<&str> = segs.iter().map(|(seg, _)| seg.name()).collect();
        assert!(!got.is_empty(), "{at}: TCP connection {conn} shown without its segments");
        assert_eq!(got, names[..got.len().min(names.len())], "{at}: connection {conn}'s packets");
        let dropped = hop(s, *hops.last().unwrap()).dropped.is_some();
        assert!(got.len() == names.len() || dropped, "{at}: connection {conn} stops after {got:?} without a drop");
        counts.whole += usize::from(got.len() == names.len());
        counts.segments += got.len();
        // Only the SYN walks rules.
        let syn_end = segs[0].1;
        for &h in hops.iter().filter(|&&h| h > syn_end) {
            let Some(p) = &hop(s, h).packet else { continue };
            if p.decided_on.is_some() && !p.rewrites.is_empty() {
                assert!(p.by_conntrack, "{at}: hop {h:?} of connection {conn} ({}) is rewritten by rules, not conntrack", hop(s, h).caption);
            }
            assert!(p.matched.is_empty() || p.by_conntrack, "{at}: hop {h:?} ({}) after the SYN matched rules", hop(s, h).caption);
        }
        // Every entry follows the kernel's TCP state machine.
        let syn_hops: Vec<At> = hops.iter().copied().filter(|&h| h <= syn_end).collect();
        for (node, pkt) in entries_of(s, &syn_hops) {
            let is_host = s.steps[0].views[0].hosts.iter().any(|h| h.host == node);
            let expected = if is_host { &host_timeouts } else { &kube_proxy_timeouts };
            for (j, (_, last)) in segs.iter().enumerate() {
                let Some((state, text)) = state_at(s, *last, node, &pkt) else { continue };
                assert_eq!((state, text.contains("[ASSURED]")), want[j], "{at}: {node:?}'s entry after the {} ({text})", names[j]);
                // The seconds left: the state's timeout, less the seconds
                // the story's clock ran since the packet.
                let left: u32 = text.split_whitespace().nth(2).and_then(|t| t.parse().ok()).unwrap_or(u32::MAX);
                let full = expected[j].track.timeout;
                assert!(left < full && left + 30 >= full, "{at}: after the {}, {left} s left of {full}: {text}", names[j]);
                assert_eq!(text.contains("[UNREPLIED]"), expected[j].track.unreplied(), "{at}: after the {}: {text}", names[j]);
                counts.states_checked += 1;
            }
        }
    }
    // The request and the response are the one-request story's, for every
    // connection that got as far; one that did not was dropped there too.
    let all = |s: &Scenario| -> Vec<Hop> { s.steps.iter().flat_map(|st| st.hops.iter()).filter(|h| !h.what_if).cloned().collect() };
    let (ours, theirs) = (all(s), all(plain));
    let data = |h: &Hop| h.packet.as_ref().is_some_and(|p| p.segment.is_none_or(|s| s.data) && p.before.proto == Protocol::Tcp);
    let reached: Vec<u32> = ours.iter().filter(|h| data(h)).filter_map(|h| h.conn).collect();
    let of = |hops: &[Hop]| -> Vec<(ActorId, ActorId, Packet)> { hops.iter().filter(|h| data(h) && h.conn.is_some_and(|c| reached.contains(&c))).map(|h| (h.from, h.to, h.packet.as_ref().unwrap().after)).collect() };
    assert_eq!(of(&ours), of(&theirs), "{at}: the request and response differ from the one-request story's");
    for h in ours.iter().filter(|h| h.dropped.is_some() && h.conn.is_some_and(|c| !reached.contains(&c))) {
        let dropped_too = theirs.iter().any(|t| t.conn == h.conn && t.dropped == h.dropped);
        assert!(dropped_too, "{at}: connection {:?} is dropped at its SYN ({}), but its request was not", h.conn, h.detail);
    }
    counts.builds += 1;
}

#[test]
#[cfg_attr(debug_assertions, ignore = "a sweep over every scenario and parameter set: run it optimised (--profile sweep)")]
fn every_scenario_follows_its_connections_packet_by_packet() {
    let mut counts = Counts::default();
    for e in REGISTRY.iter() {
        assert!((e.params)().iter().any(|s| s.key == HANDSHAKE), "{} offers no handshake", e.id);
        for p in combinations(&(e.params)(), &[None]).into_iter().filter(|p| p.toggle(HANDSHAKE)) {
            let s = (e.build)(&p);
            let plain = (e.build)(&p.clone().with(HANDSHAKE, Value::Toggle(false)));
            check(e.id, &p, &s, &plain, &mut counts);
        }
    }
    println!(
        "handshake: {} builds, {} TCP connections ({} whole, {} opened by a proxy while it answered, the rest ended by a drop), {} segments, {} entry states checked against the kernel's tracker",
        counts.builds, counts.connections, counts.whole, counts.nested, counts.segments, counts.states_checked
    );
    assert!(counts.whole > 0 && counts.states_checked > 0);
}

#[test]
fn the_walkthrough_shows_the_handshake_and_the_close() {
    let e: &Entry = REGISTRY.iter().find(|e| e.id == "nodeport-loadbalancer").expect("registered");
    let p = Params::defaults(&(e.params)()).with(HANDSHAKE, Value::Toggle(true));
    let s = (e.build)(&p);
    let st = s.steps.iter().find(|st| st.hops.iter().any(|h| h.packet.as_ref().is_some_and(|p| p.segment.is_some()))).expect("a step with a TCP connection");
    let mut counts = Counts::default();
    let plain = (e.build)(&Params::defaults(&(e.params)()));
    check(e.id, &p, &s, &plain, &mut counts);
    assert!(counts.whole >= 1 && counts.states_checked >= 9, "{} whole, {} states", counts.whole, counts.states_checked);
    let later = st.hops.iter().filter(|h| h.packet.as_ref().is_some_and(|p| p.by_conntrack && p.segment.is_some_and(|s| s.dir == kubehops_core::dataplane::tcp::Dir::Original))).count();
    assert!(later > 0, "no later packet of the client's followed conntrack");
    assert!(st.hops.iter().any(|h| h.detail.contains("No rule walked: conntrack on")), "no hop says conntrack carried it");
    let hash = "#/nodeport-loadbalancer/2?handshake=1";
    let parsed = kubehops_core::link::parse(hash);
    assert!(parsed.link.params.handshake(), "a link sets the handshake");
    assert_eq!(kubehops_core::link::format(&parsed.link), hash, "and carries it");
}
