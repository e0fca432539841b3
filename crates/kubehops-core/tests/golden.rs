//! Golden traces: each walkthrough's full hop-by-hop account is kept in
//! `tests/golden/<id>.txt`. Run with `UPDATE_EXPECT=1` to rewrite them
//! after an intended change, then review the diff.

use kubehops_core::scenarios::{build, render_text, Options, WALKTHROUGHS};
use std::path::PathBuf;

fn check(name: &str, actual: &str) {
    kubehops_core::golden::check(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.txt")), actual);
}

#[test]
fn walkthrough_traces_match_golden_files() {
    for id in WALKTHROUGHS {
        let w = build(id, Options::default()).expect("known id");
        check(id, &render_text(&w));
    }
}
