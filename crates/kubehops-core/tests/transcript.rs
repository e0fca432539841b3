//! The transcript tells the same story as the animation: over every
//! scenario and every combination of its parameters, one section per step
//! and one entry per hop, with the hop's actors, every rewrite and the
//! rule (or conntrack entry, or balancer) that made it, and every rule
//! that matched. One scenario's transcript is a golden file.

use kubehops_core::scenarios::{build_default, combinations, Scenario, REGISTRY};
use kubehops_core::scene::describe::{announcement, frame_label};
use kubehops_core::scene::transcript::{transcript, RowKind};
use kubehops_core::scene::{frame, Layout};
use kubehops_core::sim::RewriteKind;
use std::path::PathBuf;

fn all_scenarios() -> Vec<Scenario> {
    let jobs: Vec<(usize, kubehops_core::scenarios::Params)> =
        REGISTRY.iter().enumerate().flat_map(|(i, e)| combinations(&(e.params)(), &[None, Some(7)]).into_iter().filter(|p| !(p.handshake() && p.seed().is_some())).map(move |p| (i, p))).collect();
    let (a, b) = jobs.split_at(jobs.len() / 2);
    let run = |part: &[(usize, kubehops_core::scenarios::Params)]| part.iter().map(|(i, p)| (REGISTRY[*i].build)(p)).collect::<Vec<_>>();
    std::thread::scope(|s| {
        let h = s.spawn(|| run(a));
        let mut out = run(b);
        out.extend(h.join().expect("builder thread"));
        out
    })
}

fn check_transcript(s: &Scenario) {
    let t = transcript(s);
    let ctx = |i: usize| format!("{} {:?} step {}", s.id, s.params, i + 1);
    assert_eq!(t.steps.len(), s.steps.len(), "{}: one section per step", s.id);
    for (i, (st, tx)) in s.steps.iter().zip(&t.steps).enumerate() {
        assert_eq!((tx.number, &tx.title, &tx.narration), (i + 1, &st.title, &st.narration), "{}", ctx(i));
        assert_eq!(tx.hops.len(), st.hops.len(), "{}: one entry per hop", ctx(i));
        // kubectl's output at the step's end comes first, then each piece of evidence.
        let last = st.views.last().expect("a step has views");
        assert_eq!(tx.terminals[0].command, last.kubectl.command, "{}", ctx(i));
        assert_eq!(tx.terminals[0].output, last.kubectl.render(), "{}", ctx(i));
        assert_eq!(tx.terminals.len(), 1 + st.evidence.len(), "{}", ctx(i));
        assert_eq!(tx.manifest.is_some(), !st.manifest.changed.is_empty(), "{}", ctx(i));
        for (j, (h, ht)) in st.hops.iter().zip(&tx.hops).enumerate() {
            let at = format!("{} hop {}", ctx(i), j + 1);
            let from = s.actor(h.from).expect("known actor").short.clone();
            let to = s.actor(h.to).expect("known actor").short.clone();
            assert_eq!((ht.number, ht.from, ht.to, ht.kind, ht.what_if), (j + 1, h.from, h.to, h.kind, h.what_if), "{at}");
            assert_eq!((&ht.from_name, &ht.to_name), (&from, &to), "{at}");
            assert!(ht.summary.contains(&from) && ht.summary.contains(&to), "{at}: the summary names both actors: {}", ht.summary);
            let rows = |k: RowKind| ht.rows.iter().filter(move |r| r.kind == k);
            let Some(p) = &h.packet else {
                assert_eq!(rows(RowKind::Wire).count(), 0, "{at}: no packet, no wire row");
                continue;
            };
            assert!(ht.summary.contains(&p.after.to_string()), "{at}: the summary shows the packet: {}", ht.summary);
            assert_eq!(rows(RowKind::Wire).count(), 1, "{at}");
            assert_eq!(rows(RowKind::Arrived).count(), usize::from(p.before != p.after), "{at}");
            // One row per rewrite, naming the new address and who made it.
            let rewrites: Vec<_> = rows(RowKind::Rewrite).collect();
            assert_eq!(rewrites.len(), p.rewrites.len() + usize::from(p.by_conntrack && p.rewrites.is_empty()), "{at}");
            for (r, row) in p.rewrites.iter().zip(&rewrites) {
                assert!(row.text.contains(&r.to.to_string()) && row.text.contains(&r.from.to_string()), "{at}: {}", row.text);
                match (r.kind, p.by_conntrack) {
                    (RewriteKind::Balancer, _) => {
                        // Named once, as the balancer calls itself: not "the balancer Load balancer".
                        let name = s.actor(h.from).map(|a| a.short.to_lowercase()).unwrap_or_default();
                        assert!(row.text.ends_with(&format!("by the {name}")) && !row.text.contains("balancer L"), "{at}: {}", row.text);
                    }
                    (_, true) | (RewriteKind::UnDnat | RewriteKind::UnSnat, _) => assert!(row.text.contains("conntrack"), "{at}: {}", row.text),
                    _ => {
                        // A rule's NAT names the very rule: the matched rule whose target rewrites this field.
                        let rule = p.matched.iter().rev().find(|m| m.rewrites == Some(r.field)).unwrap_or_else(|| panic!("{at}: no matched rule rewrites {:?}", r.field));
                        assert!(row.text.contains(&format!("by rule {} ", rule.line)) && row.text.ends_with(&rule.text), "{at}: {}", row.text);
                    }
                }
            }
            // Every matched rule, in walk order, with its line number.
            let matched: Vec<_> = rows(RowKind::Rules).collect();
            assert_eq!(matched.len(), usize::from(!p.matched.is_empty()), "{at}");
            if let Some(m) = matched.first() {
                assert_eq!(m.items.len(), p.matched.len(), "{at}");
                for (item, rule) in m.items.iter().zip(&p.matched) {
                    assert_eq!(item, &format!("{} {}: {}", rule.table.as_str(), rule.line, rule.text), "{at}");
                }
            }
            assert_eq!(rows(RowKind::Dropped).count(), usize::from(h.dropped.is_some()), "{at}");
        }
    }
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn the_transcript_matches_every_scenario_in_every_combination() {
    let all = all_scenarios();
    assert!(all.len() > REGISTRY.len(), "combinations were built");
    for s in &all {
        check_transcript(s);
    }
    println!("transcripts checked: {} scenario builds", all.len());
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn every_frame_has_a_label_and_every_hop_an_announcement() {
    for e in REGISTRY {
        let s = build_default(e.id).expect("builds");
        let l = Layout::new(&s.actors);
        for (i, st) in s.steps.iter().enumerate() {
            assert!(announcement(&s, i, None).contains(&st.narration), "{} step {}", e.id, i + 1);
            for j in 0..st.hops.len() {
                let f = frame(&s, i, j as f64 + 0.5);
                let label = frame_label(&s, &f);
                assert!(label.starts_with(&format!("Step {} of {}, ", i + 1, s.steps.len())), "{label}");
                assert!(label.contains(&format!("hop {} of {}", j + 1, st.hops.len())), "{label}");
                let a = announcement(&s, i, Some(j));
                assert!(a.contains(&format!("Hop {} of {}", j + 1, st.hops.len())) && a.contains(&st.hops[j].detail), "{a}");
            }
        }
    }
}

#[test]
fn the_walkthrough_transcript_matches_its_golden_file() {
    let s = build_default("nodeport-loadbalancer").expect("builds");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/transcript/nodeport-loadbalancer.txt");
    kubehops_core::golden::check(&path, &transcript(&s).render());
}

/// Both modes side by side: every hop a node's rules decided gets the
/// other mode's rules beside its own, from the same hop of the story told
/// in the other mode, and they send the packet the same way.
#[test]
fn a_transcript_of_both_modes_puts_each_hop_s_rules_side_by_side() {
    use kubehops_core::scene::transcript::{transcript_both, RowKind};
    use kubehops_core::scenarios::{build, Value, REGISTRY};
    let mut pairs = 0;
    for e in REGISTRY.iter().filter(|e| e.id != "your-cluster") {
        let p = kubehops_core::scenarios::Params::defaults(&(e.params)());
        let ipt = build(e.id, &p).unwrap();
        let nft = build(e.id, &p.clone().with("mode", Value::Choice("nftables".into()))).unwrap();
        let t = transcript_both(&ipt, &nft);
        for (st, s) in t.steps.iter().zip(&ipt.steps) {
            for (h, hop) in st.hops.iter().zip(&s.hops) {
                let rules = h.rows.iter().position(|r| r.kind == RowKind::Rules);
                let other = h.rows.iter().position(|r| r.kind == RowKind::OtherMode);
                let decided = hop.packet.as_ref().is_some_and(|p| !p.by_conntrack && !p.matched.is_empty());
                assert_eq!(other.is_some(), decided, "{} step {} hop {}: {:?}", e.id, st.number, h.number, h.rows);
                if let (Some(r), Some(o)) = (rules, other) {
                    assert_eq!(o, r + 1, "the other mode's rules sit right after this mode's");
                    assert!(h.rows[r].text.starts_with("In iptables mode, "), "{}", h.rows[r].text);
                    let row = &h.rows[o];
                    assert!(row.text.starts_with("In nftables mode, ") && row.text.ends_with("and the packet leaves the same way"), "{}", row.text);
                    assert!(!row.items.is_empty() && row.items.iter().all(|i| i.starts_with("nft ") || i.starts_with("nat ") || i.starts_with("filter ")), "{:?}", row.items);
                    assert!(row.items.iter().any(|i| i.starts_with("nft ")), "{:?}", row.items);
                    pairs += 1;
                }
            }
        }
    }
    assert!(pairs >= 10, "{pairs} hops shown in both modes");
}
