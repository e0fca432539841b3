//! Golden traces: a scenario's full hop-by-hop account, narration
//! included, is kept in `tests/golden/<id>.txt` (and, for the explorer, one
//! file per tab with both clients). Each file is reviewed against the seed
//! and upstream behaviour; run with `UPDATE_EXPECT=1` to rewrite them after
//! an intended change, then review the diff.

use kubehops_core::scenarios::{build, entry, render_text, Params};
use std::path::PathBuf;

fn check(name: &str, actual: &str) {
    kubehops_core::golden::check(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.txt")), actual);
}

fn params(id: &str, pairs: &[(&str, &str)]) -> Params {
    let specs = (entry(id).expect("known id").params)();
    let mut p = Params::defaults(&specs);
    for (k, v) in pairs {
        let spec = specs.iter().find(|s| s.key == *k).expect("known key");
        p.insert(k, spec.parse(v).expect("valid value"));
    }
    p
}

#[test]
fn the_walkthrough_matches_its_golden_file() {
    let s = build("nodeport-loadbalancer", &params("nodeport-loadbalancer", &[])).expect("builds");
    check("nodeport-loadbalancer", &render_text(&s));
}

#[test]
fn each_service_type_matches_its_golden_file_from_both_clients() {
    for tab in ["clusterip", "nodeport", "loadbalancer", "externalname", "headless"] {
        let mut text = String::new();
        for client in ["pod-web", "laptop"] {
            let s = build("service-types", &params("service-types", &[("tab", tab), ("client", client)])).expect("builds");
            text.push_str(&format!("=== client {client}\n"));
            text.push_str(&render_text(&s));
            text.push('\n');
        }
        check(&format!("service-types/{tab}"), &text);
    }
}

#[test]
fn changing_type_and_readiness_match_their_golden_file() {
    // Coming from NodePort, made headless (refused, then recreated), with
    // one Pod not Ready; and NodePort under externalTrafficPolicy Local.
    let cases: [&[(&str, &str)]; 2] = [
        &[("tab", "headless"), ("from", "nodeport"), ("notready", "api-r8t6w")],
        &[("tab", "nodeport"), ("client", "laptop"), ("local", "1"), ("via", "node-2")],
    ];
    let mut text = String::new();
    for pairs in cases {
        let s = build("service-types", &params("service-types", pairs)).expect("builds");
        text.push_str(&format!("=== {pairs:?}\n{}\n", render_text(&s)));
    }
    check("service-types/changes", &text);
}

#[test]
fn the_local_lab_matches_its_golden_files() {
    // Docker's default (userland proxy) and hairpin mode, then the other
    // placement under externalTrafficPolicy Local.
    let cases: [(&str, &[(&str, &str)]); 3] = [("default", &[]), ("hairpin", &[("hairpin", "1")]), ("spread-local", &[("placement", "spread"), ("local", "1")])];
    for (name, pairs) in cases {
        let s = build("local-lab", &params("local-lab", pairs)).expect("builds");
        check(&format!("local-lab/{name}"), &render_text(&s));
    }
}
