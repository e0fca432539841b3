//! A short, seeded run of the fuzzer in `examples/fuzz.rs`: 3,000 cases of
//! mutated manifests and command lines, none of which may panic, hang
//! (5 s each) or fail without an error message. The README gives the long run.

#[path = "../examples/fuzz.rs"]
mod fuzz;

use std::time::Duration;

#[test]
fn three_thousand_fuzzed_cases_fail_cleanly_or_succeed() {
    let report = fuzz::campaign(12, 3000, Duration::from_secs(5), |_, _| {});
    assert_eq!(report.cases, 3000);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    // The cases reach both sides of the reader and every exit code, so the
    // run is not stuck on one error.
    assert!(report.reader.iter().all(|n| *n > 100), "{:?}", report.reader);
    assert!(report.exits.iter().all(|n| *n > 100), "{:?}", report.exits);
}

#[test]
fn the_same_seed_gives_the_same_cases() {
    let a = fuzz::case(7, 41);
    let b = fuzz::case(7, 41);
    assert_eq!((a.text, a.args, a.program), (b.text, b.args, b.program));
    assert_ne!(fuzz::case(7, 41).text, fuzz::case(8, 41).text);
}

#[path = "../examples/fuzz_cluster.rs"]
#[allow(dead_code)]
mod fuzz_cluster;

#[test]
fn three_hundred_fuzzed_pastes_read_build_and_lay_out_without_a_panic() {
    let seeds = fuzz_cluster_seeds();
    let mut read = 0;
    for i in 0..300 {
        let t = fuzz_cluster::text(3, i, &seeds);
        if fuzz_cluster::run(3, i, &t) {
            read += 1;
        }
    }
    // Some pastes survive their mutations and play, so the build is reached.
    assert!(read > 30, "{read} of 300 read");
}

fn fuzz_cluster_seeds() -> Vec<String> {
    vec![
        format!("{}\n---\n{}", include_str!("fixtures/cluster/cluster.yaml"), include_str!("fixtures/cluster/shop.json")),
        kubehops_objects::cluster::example_yaml(4, 12, 5),
    ]
}
