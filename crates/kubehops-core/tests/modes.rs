//! Both of kube-proxy's modes over every scenario and parameter
//! combination: the same story, told once with kube-proxy in iptables
//! mode and once in nftables mode, must send every packet the same way:
//! the same hops between the same actors, each packet arriving as the
//! same addresses, dropped or refused (rejected or not) at the same
//! place. Only the rules that decided differ. (Upstream's proxiers do
//! differ on purpose for a new connection to another port of a cluster
//! IP, which nftables mode rejects: no story sends one; `kubehops-cli`'s
//! tests/nft.rs checks that case.)

use kubehops_core::scenarios::{combinations, Params, Value, REGISTRY};
use kubehops_core::sim::{DropReason, Hop, HopKind};
use kubehops_core::dataplane::rules::RuleTable;

/// What a hop does, leaving out which rules decided it and the words.
fn path(h: &Hop) -> String {
    let packet = h.packet.as_ref().map(|p| format!("{} -> {} as {} -> {}", p.before.src, p.before.dst, p.after.src.ip, p.after.dst));
    let dropped = h.dropped.as_ref().map(|d| match d {
        DropReason::Filtered { node, rejected, .. } => format!("filtered at {node:?}, rejected {rejected}"),
        other => format!("{:?}", std::mem::discriminant(other)),
    });
    format!("{:?} {:?}->{:?} {:?} dropped={:?}", h.kind, h.from, h.to, packet, dropped)
}

/// Counts of one share of the work: builds, packet hops, nftables lines.
type Counts = (usize, usize, usize);

/// Tells every combination of `jobs` in both modes and checks them.
fn check(jobs: &[(&kubehops_core::scenarios::Entry, Params)]) -> Counts {
    let (mut builds, mut hops, mut nft_lines) = (0, 0, 0);
    for (e, p) in jobs {
        let nft: Params = p.clone().with("mode", Value::Choice("nftables".into()));
        let (a, b) = ((e.build)(p), (e.build)(&nft));
        builds += 2;
        assert_eq!(a.steps.len(), b.steps.len(), "{}: {p:?}", e.id);
        for (i, (sa, sb)) in a.steps.iter().zip(&b.steps).enumerate() {
            let pa: Vec<String> = sa.hops.iter().map(path).collect();
            let pb: Vec<String> = sb.hops.iter().map(path).collect();
            if pa != pb {
                let at = pa.iter().zip(&pb).position(|(x, y)| x != y).unwrap_or(pa.len().min(pb.len()));
                panic!("{} step {} ({p:?}): the modes part at hop {at}:\n  iptables: {:?}\n  nftables: {:?}", e.id, i + 1, pa.get(at), pb.get(at));
            }
            hops += sa.hops.iter().filter(|h| h.kind != HopKind::ControlPlane).count();
            // The words follow the mode: no iptables chain is named in nftables mode.
            for text in std::iter::once(&sb.narration).chain(sb.hops.iter().flat_map(|h| [&h.caption, &h.detail])) {
                assert!(!text.contains("KUBE-") && !text.contains("iptables"), "{} step {} ({nft:?}): {text}", e.id, i + 1);
            }
            // The nftables build shows nftables lines, and only those of kube-proxy's.
            for v in &sb.views {
                for n in &v.nodes {
                    assert!(n.iptables.iter().all(|l| l.table == RuleTable::KubeProxy), "{}: {:?}", e.id, n.iptables);
                    nft_lines += n.iptables.len();
                }
            }
        }
    }
    (builds, hops, nft_lines)
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn both_modes_send_every_packet_the_same_way() {
    let jobs: Vec<(&kubehops_core::scenarios::Entry, Params)> = REGISTRY
        .iter()
        .flat_map(|e| combinations(&(e.params)(), &[None, Some(7)]).into_iter().filter(|p| !(p.handshake() && p.seed().is_some())).filter(|p| p.choice("mode") == Some("iptables")).map(move |p| (e, p)))
        .collect();
    // Two halves on two threads: a build is single-threaded.
    let (first, second) = jobs.split_at(jobs.len() / 2);
    let (a, b) = std::thread::scope(|s| {
        let h = s.spawn(|| check(first));
        (check(second), h.join().expect("the other half"))
    });
    let (builds, hops, nft_lines) = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
    println!("both modes: {builds} builds, {hops} packet hops sent the same way, {nft_lines} nftables lines shown");
    assert!(builds > 100 && hops > 1000 && nft_lines > 1000, "{builds} {hops} {nft_lines}");
}
