//! The glossary (issue 29): every term is defined once, briefly; every
//! term is used by some step of some scenario; and the terms a hop or a
//! step lists follow from what the model did (a DNAT names DNAT, a
//! verdict-map look-up names the verdict map, a wrapped packet names
//! VXLAN), in the mode the story ran in.

use kubehops_core::dataplane::kubeproxy::ProxyMode;
use kubehops_core::dataplane::rules::{ChainKind, RuleTable};
use kubehops_core::glossary::Term;
use kubehops_core::scenarios::{combinations, Params, Scenario, REGISTRY};
use kubehops_core::scene::terms::{hop_terms, scenario_terms, step_terms};
use kubehops_core::scene::transcript::transcript;
use kubehops_core::sim::RewriteKind;
use std::collections::BTreeSet;

/// Terms no scenario uses yet, each with the reason. Empty is the aim.
const RESERVED: &[(Term, &str)] = &[];

fn all_scenarios() -> Vec<Scenario> {
    let jobs: Vec<(usize, Params)> =
        REGISTRY.iter().enumerate().flat_map(|(i, e)| combinations(&(e.params)(), &[None]).into_iter().map(move |p| (i, p))).collect();
    let (a, b) = jobs.split_at(jobs.len() / 2);
    let run = |part: &[(usize, Params)]| part.iter().map(|(i, p)| (REGISTRY[*i].build)(p)).collect::<Vec<_>>();
    std::thread::scope(|s| {
        let h = s.spawn(|| run(a));
        let mut out = run(b);
        out.extend(h.join().expect("builder thread"));
        out
    })
}

#[test]
fn every_term_has_a_short_plain_definition() {
    for t in Term::ALL {
        let (name, def) = (t.name(), t.definition());
        assert!(!name.trim().is_empty(), "{t:?} has a name");
        assert!(!def.trim().is_empty(), "{t:?} has a definition");
        assert!(def.ends_with('.'), "{t:?}'s definition ends with a full stop: {def}");
        assert!(def.chars().next().is_some_and(|c| !c.is_lowercase() || def.starts_with("kube-proxy") || def.starts_with("numgen")), "{t:?}'s definition starts as a sentence: {def}");
        let words = def.split_whitespace().count();
        assert!(words <= 45, "{t:?}'s definition has {words} words, more than 45: {def}");
        assert!(!t.see_also().contains(&t), "{t:?} is not its own see-also");
    }
}

#[test]
fn no_term_is_listed_named_or_defined_twice() {
    let all: BTreeSet<Term> = Term::ALL.into_iter().collect();
    assert_eq!(all.len(), Term::ALL.len(), "ALL lists each term once");
    let names: BTreeSet<&str> = Term::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(names.len(), Term::ALL.len(), "no name is shared");
    let defs: BTreeSet<&str> = Term::ALL.iter().map(|t| t.definition()).collect();
    assert_eq!(defs.len(), Term::ALL.len(), "no definition is shared");
    // Whole sentences are not shared between definitions either.
    let mut seen = BTreeSet::new();
    for t in Term::ALL {
        for sentence in t.definition().split(". ").map(str::trim).filter(|s| s.split_whitespace().count() > 4) {
            assert!(seen.insert(sentence.trim_end_matches('.')), "{t:?} repeats a sentence of another definition: {sentence}");
        }
    }
}

/// The one build test: over every scenario and parameter combination
/// (and the typed Services above), every term appears somewhere, and each
/// hop's terms follow from its data. The random picks' seed changes no
/// term, so one is enough.
#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn terms_follow_the_model_and_each_is_used() {
    let mut used: BTreeSet<Term> = BTreeSet::new();
    let (mut vmap_steps, mut svc_steps, mut wrapped) = (0, 0, 0);
    for s in all_scenarios().into_iter().chain(typed_services()) {
        let nft_mode = s.params.proxy_mode() == ProxyMode::Nftables;
        let scenario = scenario_terms(&s);
        let t = transcript(&s);
        assert_eq!(t.glossary, scenario, "{}: the transcript's glossary is the scenario's terms", s.id);
        for (i, st) in s.steps.iter().enumerate() {
            let at = format!("{} {:?} step {}", s.id, s.params, i + 1);
            let terms = step_terms(&s, st);
            assert_eq!(t.steps[i].terms, terms, "{at}: the transcript lists the step's terms");
            let unique: BTreeSet<Term> = terms.iter().copied().collect();
            assert_eq!(unique.len(), terms.len(), "{at}: each term once: {terms:?}");
            used.extend(terms.iter().copied());
            // First appearance: the step's terms are its hops' in order.
            let mut expected: Vec<Term> = Vec::new();
            for h in &st.hops {
                for term in hop_terms(&s, h) {
                    if !expected.contains(&term) {
                        expected.push(term);
                    }
                }
            }
            assert_eq!(terms, expected, "{at}: a step's terms are its hops', in first-appearance order");
            let mut step_vmap = false;
            let mut step_svc = false;
            for (j, h) in st.hops.iter().enumerate() {
                let at = format!("{at} hop {}", j + 1);
                let ht = hop_terms(&s, h);
                assert_eq!(t.steps[i].hops[j].terms, ht, "{at}: the transcript lists the hop's terms");
                let Some(p) = &h.packet else { continue };
                for r in &p.rewrites {
                    let want = match r.kind {
                        RewriteKind::Dnat => Term::Dnat,
                        RewriteKind::Snat => Term::Snat,
                        RewriteKind::UnDnat | RewriteKind::UnSnat => Term::ReverseNat,
                        RewriteKind::Balancer => Term::LoadBalancer,
                    };
                    assert!(ht.contains(&want), "{at}: a {:?} rewrite names {want:?}: {ht:?}", r.kind);
                }
                if p.conntrack_entry.is_some() || p.by_conntrack {
                    assert!(ht.contains(&Term::Conntrack), "{at}: a hop with a conntrack entry names conntrack: {ht:?}");
                }
                if p.tunnel.is_some() {
                    wrapped += 1;
                    assert!(ht.contains(&Term::Vxlan) && ht.contains(&Term::PodNetwork), "{at}: a wrapped packet names VXLAN and the Pod network: {ht:?}");
                } else {
                    assert!(!ht.contains(&Term::Vxlan), "{at}: only a wrapped packet names VXLAN: {ht:?}");
                }
                if p.segment.is_some() {
                    assert!(ht.contains(&Term::TcpHandshake), "{at}: a followed segment names the handshake");
                }
                let vmap = p.matched.iter().any(|m| m.chain == ChainKind::VerdictMap);
                let svc_chain = p.matched.iter().any(|m| m.table != RuleTable::KubeProxy && matches!(m.chain, ChainKind::Service | ChainKind::ServiceLocal));
                if vmap {
                    assert!(nft_mode, "{at}: only nftables mode has verdict maps");
                    assert!(ht.contains(&Term::VerdictMap), "{at}: a verdict-map element matched, so the hop names the verdict map: {ht:?}");
                    step_vmap = true;
                }
                if svc_chain {
                    assert!(!nft_mode, "{at}: kube-proxy's KUBE-SVC chains exist in iptables mode only");
                    assert!(ht.contains(&Term::KubeSvc), "{at}: a KUBE-SVC rule matched, so the hop names it: {ht:?}");
                    step_svc = true;
                }
            }
            // Each mode's own words, never the other's.
            let iptables_only = [Term::KubeServices, Term::KubeSvc, Term::KubeExt, Term::KubeSep];
            let nftables_only = [Term::NftServiceChain, Term::NftExternalChain, Term::NftEndpointChain, Term::VerdictMap, Term::Concatenation];
            let wrong: Vec<&Term> = if nft_mode { iptables_only.iter().filter(|x| terms.contains(x)).collect() } else { nftables_only.iter().filter(|x| terms.contains(x)).collect() };
            assert!(wrong.is_empty(), "{at}: names the other mode's rules: {wrong:?}");
            if step_vmap {
                assert!(terms.contains(&Term::VerdictMap), "{at}");
                vmap_steps += 1;
            }
            if step_svc {
                assert!(terms.contains(&Term::KubeSvc), "{at}");
                svc_steps += 1;
            }
        }
    }
    assert!(vmap_steps > 0 && svc_steps > 0 && wrapped > 0, "the checks saw verdict maps ({vmap_steps}), KUBE-SVC chains ({svc_steps}) and wrapped packets ({wrapped})");
    let reserved: BTreeSet<Term> = RESERVED.iter().map(|(t, _)| *t).collect();
    let unused: Vec<Term> = Term::ALL.into_iter().filter(|t| !used.contains(t) && !reserved.contains(t)).collect();
    assert!(unused.is_empty(), "terms no step of any scenario uses (use them, or list them in RESERVED with the reason): {unused:?}");
    let stale: Vec<Term> = reserved.iter().copied().filter(|t| used.contains(t)).collect();
    assert!(stale.is_empty(), "reserved terms that a step now uses (take them out of RESERVED): {stale:?}");
}

#[test]
fn the_transcript_defines_each_term_it_uses_once() {
    let s = kubehops_core::scenarios::build_default("nodeport-loadbalancer").expect("the walkthrough builds");
    let text = transcript(&s).render();
    let (_, glossary) = text.split_once("\n## Glossary\n").expect("the transcript ends with a glossary");
    let terms = scenario_terms(&s);
    assert!(terms.contains(&Term::Dnat) && terms.contains(&Term::NodePort), "{terms:?}");
    for t in Term::ALL {
        let n = glossary.matches(t.definition()).count();
        assert_eq!(n, usize::from(terms.contains(&t)), "{t:?} is defined once if used, else not at all");
    }
}

/// Two terms come only with a Service the reader types (the manifest
/// editor, a pasted cluster): the built-in stories have no `externalIPs`
/// and no `loadBalancerSourceRanges`. One typed Service of each, played
/// where its traffic arrives, in both of kube-proxy's modes.
fn typed_services() -> Vec<Scenario> {
    use kubehops_core::api::ServiceType;
    use kubehops_core::scenarios::params::{Value, PROXY_MODE};
    let build = |id: &str, change: &dyn Fn(&mut kubehops_core::api::Service)| {
        let e = kubehops_core::scenarios::entry(id).expect("a registered scenario");
        ["iptables", "nftables"].map(|mode| {
            let p = Params::defaults(&(e.params)()).with(PROXY_MODE, Value::Choice(mode.into()));
            let mut svc = (e.editor.expect("an editor").service)(&p);
            change(&mut svc);
            (e.edit.expect("an edit").build)(&p, svc)
        })
    };
    [
        build("nodeport-loadbalancer", &|s| s.spec.external_ips = vec![std::net::Ipv4Addr::new(10, 0, 0, 12)]),
        // A node's own address as an external IP: the outside network
        // delivers it to that node.
        build("nodeport-loadbalancer", &|s| s.spec.external_ips = vec![std::net::Ipv4Addr::new(10, 0, 0, 12)]),
        // MetalLB's address reaches the node as itself (ipMode VIP), so
        // the firewall chain sees it.
        build("local-lab", &|s| {
            s.spec.type_ = ServiceType::LoadBalancer;
            s.spec.load_balancer_source_ranges = vec!["0.0.0.0/0".parse().expect("a range")];
        }),
    ]
    .into_iter()
    .flatten()
    .collect()
}
