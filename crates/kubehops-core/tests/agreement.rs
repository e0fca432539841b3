//! The canvas and the narration agree (issue 18): over every scenario and
//! every combination of its parameters, what a node's card summarises is
//! what its rules panel lists, the rule a hop matched is on the card of the
//! node that decided it while the hop plays, a step ends where the real
//! packet is, and the words read as sentences.

use kubehops_core::dataplane::rules::{Purpose, RuleTable};
use kubehops_core::scenarios::{combinations, Scenario, REGISTRY};
use kubehops_core::sim::{ActorKind, NodeView};
use std::sync::OnceLock;

/// Every scenario with every combination of its parameters, built once
/// for all the tests of this file, on both cores.
fn all() -> &'static [Scenario] {
    static ALL: OnceLock<Vec<Scenario>> = OnceLock::new();
    ALL.get_or_init(|| {
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
    })
}

/// What kube-proxy writes for a Service port's addresses and endpoints in
/// nat: the rules a node's card summarises (a DNAT, or a jump to one of
/// the port's chains).
fn summarised(purpose: Option<Purpose>) -> bool {
    matches!(purpose, Some(Purpose::ClusterIp | Purpose::NodePort | Purpose::LoadBalancerIp | Purpose::ExternalIp | Purpose::EndpointPick | Purpose::EndpointDnat))
}

fn summary_lines(n: &NodeView) -> Vec<usize> {
    n.rules.iter().flat_map(|r| r.lines().iter().copied()).collect()
}

fn params_of(s: &Scenario) -> String {
    format!("{} {:?}", s.id, s.params)
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn the_rule_a_hop_matched_is_on_its_nodes_card_while_the_hop_plays() {
    let mut checked = 0;
    for s in all() {
        for (k, st) in s.steps.iter().enumerate() {
            for (i, h) in st.hops.iter().enumerate() {
                let Some(p) = h.packet.as_ref().filter(|p| !p.by_conntrack) else { continue };
                let Some(node) = p.decided_on.filter(|n| s.actor(*n).is_some_and(|a| a.kind == ActorKind::Node)) else { continue };
                // While hop i plays, scene::frame shows views[i] (i hops
                // done); when it has arrived, views[i + 1]. Both mark its
                // matched lines.
                for v in [i, i + 1].map(|v| v.min(st.views.len() - 1)) {
                    let nv = st.views[v].node(node).unwrap_or_else(|| panic!("{}: step {}: no view of {node:?}", params_of(s), k + 1));
                    let lines = summary_lines(nv);
                    for m in p.matched.iter().filter(|m| m.table == RuleTable::Nat && summarised(m.purpose)) {
                        assert!(
                            lines.contains(&m.line),
                            "{}: step {} hop {} ({}), view {v}: {}'s card has no summary for the rule it matched: {}\ncard: {:?}",
                            params_of(s),
                            k + 1,
                            i + 1,
                            h.caption,
                            s.actor(node).map_or("?", |a| a.short.as_str()),
                            m.text,
                            nv.rules
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked} matched rules checked");
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn a_nodes_card_summarises_exactly_the_service_lines_of_its_rules_panel() {
    for s in all() {
        for (k, st) in s.steps.iter().enumerate() {
            for (v, view) in st.views.iter().enumerate() {
                for nv in &view.nodes {
                    let name = s.actor(nv.node).map_or("?", |a| a.short.as_str());
                    let panel: Vec<usize> = nv.iptables.iter().map(|l| l.line).collect();
                    let card = summary_lines(nv);
                    for l in &card {
                        assert!(panel.contains(l), "{}: step {} view {v}: {name}'s card summarises line {l}, which its rules panel does not list", params_of(s), k + 1);
                    }
                    for l in nv.iptables.iter().filter(|l| l.table == RuleTable::Nat && l.owner.is_some() && summarised(l.purpose)) {
                        assert!(card.contains(&l.line), "{}: step {} view {v}: {name}'s rules panel lists line {} that no summary on its card covers: {}", params_of(s), k + 1, l.line, l.text);
                    }
                }
            }
        }
    }
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn no_step_ends_on_a_what_if_hop() {
    for s in all() {
        for (k, st) in s.steps.iter().enumerate() {
            if let Some(last) = st.hops.last() {
                assert!(!last.what_if, "{}: step {} ({}) ends on a what-if hop: {}", params_of(s), k + 1, st.title, last.caption);
            }
        }
    }
}

/// Runs of full stops of length two: a sentence that ends twice.
fn doubled_stop(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'.' {
            let start = i;
            while i < b.len() && b[i] == b'.' {
                i += 1;
            }
            if i - start == 2 {
                return Some(start);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// The text around byte `at`, cut at character boundaries.
fn around(t: &str, at: usize) -> &str {
    let mut from = at.saturating_sub(80);
    while !t.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (at + 20).min(t.len());
    while !t.is_char_boundary(to) {
        to += 1;
    }
    &t[from..to]
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn every_sentence_ends_with_one_full_stop() {
    assert_eq!(doubled_stop("A? web.default.svc.cluster.local."), None);
    assert_eq!(doubled_stop("wait... and … go"), None);
    assert_eq!(doubled_stop("NXDOMAIN api.default.svc.cluster.local.."), Some(38));
    for s in all() {
        let mut texts: Vec<(String, &str)> = Vec::new();
        for (k, st) in s.steps.iter().enumerate() {
            texts.push((format!("step {} narration", k + 1), &st.narration));
            for (i, h) in st.hops.iter().enumerate() {
                texts.push((format!("step {} hop {} caption", k + 1, i + 1), &h.caption));
                texts.push((format!("step {} hop {} detail", k + 1, i + 1), &h.detail));
            }
        }
        for d in &s.demos {
            texts.push((format!("demo {}", d.id), &d.narration));
        }
        let transcript = kubehops_core::scene::transcript::transcript(s).render();
        texts.push(("transcript".into(), &transcript));
        for (what, t) in texts {
            if let Some(at) = doubled_stop(t) {
                panic!("{}: {what} has \"..\": …{}…", params_of(s), around(t, at));
            }
        }
    }
}
