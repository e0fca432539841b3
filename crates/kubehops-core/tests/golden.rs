//! Golden traces: each walkthrough's full hop-by-hop account is kept in
//! `tests/golden/<id>.txt`. Run with `UPDATE_EXPECT=1` to rewrite them
//! after an intended change, then review the diff.

use kubehops_core::walkthrough::{build, render_text, Options, WALKTHROUGHS};
use std::path::PathBuf;

fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("missing {}; run with UPDATE_EXPECT=1", path.display()));
    if expected != actual {
        let first = expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from {} at line {}:\n  expected: {:?}\n  actual:   {:?}\n(run with UPDATE_EXPECT=1 to accept)",
            path.display(),
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

#[test]
fn walkthrough_traces_match_golden_files() {
    for id in WALKTHROUGHS {
        let w = build(id, Options::default()).expect("known id");
        check(id, &render_text(&w));
    }
}
