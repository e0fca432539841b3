//! The fuzzer of "Your cluster": what the browser does with a paste, on
//! random and mutated manifests, natively. Each case, drawn from a seed,
//! is one of the seeds below (the CLI's fixture cluster, a generated
//! cluster, kube-dns, the bad fixtures) mutated by `fuzz.rs`'s mutator, or
//! random bytes and tokens; it goes through `kubehops_objects::cluster::read`,
//! and when that reads, through the scenario's parameters, `build` with a
//! Service and a client drawn from the options (or a value no option has),
//! the layout and a frame. A case fails when any of it panics; a case
//! slower than the timeout is counted and listed.
//!
//! `cargo run --release -p kubehops-cli --example fuzz_cluster -- [--cases N] [--seed S] [--timeout SECONDS]`
//! (`tests/fuzz.rs` runs 300 cases.)

#[path = "fuzz.rs"]
#[allow(dead_code)]
mod fuzz;

use fuzz::{mutate, Rng};
use kubehops_core::scenarios::{your_cluster, ParamKind, Params, Value};
use kubehops_core::scene::{frame, Layout};
use kubehops_objects::cluster;
use std::time::{Duration, Instant};

const DNS: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: kube-dns, namespace: kube-system}\nspec:\n  clusterIP: 10.96.0.10\n  selector: {k8s-app: kube-dns}\n  ports:\n  - {name: dns, protocol: UDP, port: 53, targetPort: 53}\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: kube-dns-x, namespace: kube-system, labels: {kubernetes.io/service-name: kube-dns}}\nendpoints:\n- addresses: [10.244.2.3]\n  conditions: {ready: true}\n  nodeName: node-2\nports:\n- {name: dns, protocol: UDP, port: 53}\n";

fn seeds() -> Vec<String> {
    let fixture = format!("{}\n---\n{}", include_str!("../tests/fixtures/cluster/cluster.yaml"), include_str!("../tests/fixtures/cluster/shop.json"));
    vec![
        format!("{fixture}\n---\n{DNS}"),
        fixture,
        include_str!("../tests/fixtures/cluster/shop.json").to_string(),
        cluster::example_yaml(4, 12, 5),
        include_str!("../tests/fixtures/with-deployment.yaml").to_string(),
        include_str!("../tests/fixtures/bad/port-conflict.yaml").to_string(),
        include_str!("../tests/fixtures/bad/unresolved-named-port.yaml").to_string(),
    ]
}

/// One case's text.
pub fn text(seed: u64, index: u64, seeds: &[String]) -> String {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0x2545_f491_4f6c_dd1d));
    match rng.below(10) {
        // Random bytes (as text) now and then.
        0 => (0..rng.below(400)).map(|_| char::from_u32(rng.below(0x250) as u32).unwrap_or('?')).collect(),
        // The seeds unchanged sometimes, so the whole path is reached.
        1 => rng.pick(seeds).clone(),
        _ => {
            let base = rng.pick(seeds).clone();
            mutate(&mut rng, &base)
        }
    }
}

/// Runs one case: read, and where it reads, build, lay out and draw a
/// frame. Returns whether the text was read.
pub fn run(seed: u64, index: u64, text: &str) -> bool {
    let Ok(read) = cluster::read(&[("paste", text)]) else { return false };
    let mut rng = Rng::new(seed.rotate_left(17) ^ index);
    let specs = your_cluster::params(&read.input);
    let mut p = Params::default();
    for s in &specs {
        if let ParamKind::Choice { options, .. } = &s.kind {
            let v = if options.is_empty() || rng.below(8) == 0 { "no/such".to_string() } else { rng.pick(options).value.clone() };
            p.insert(&s.key, Value::Choice(v));
        }
    }
    if rng.below(2) == 0 {
        p.insert("seed", Value::Seed(Some(rng.next_u64())));
    }
    let s = your_cluster::build(&read.input, &p);
    // Both levels of detail lay out any cluster without a panic.
    let _ = Layout::for_scenario(&s);
    let _ = Layout::for_scenario_at(&s, kubehops_core::scene::layout::Detail::Compact);
    let step = rng.below(s.steps.len() + 1);
    let _ = frame(&s, step, rng.below(12) as f64 / 2.0);
    true
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: u64| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default);
    let (cases, seed, timeout) = (flag("--cases", 100_000), flag("--seed", 1), Duration::from_secs(flag("--timeout", 5)));
    let seeds = seeds();
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let (mut read, mut panics, mut slow) = (0u64, Vec::new(), Vec::new());
    for i in 0..cases {
        let t = text(seed, i, &seeds);
        let began = Instant::now();
        match std::panic::catch_unwind(|| run(seed, i, &t)) {
            Ok(true) => read += 1,
            Ok(false) => {}
            Err(_) => panics.push(i),
        }
        if began.elapsed() > timeout {
            slow.push(i);
        }
        if (i + 1) % 20_000 == 0 {
            eprintln!("fuzz-cluster: {} cases, {read} read, {} panics", i + 1, panics.len());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "fuzz-cluster: seed {seed}: {cases} cases in {secs:.0} s, {read} read and played, {} failures ({} panics, {} over {} s)",
        panics.len() + slow.len(),
        panics.len(),
        slow.len(),
        timeout.as_secs()
    );
    for i in panics.iter().chain(&slow).take(20) {
        println!("fuzz-cluster: failing case: --seed {seed} index {i}");
    }
    if !panics.is_empty() || !slow.is_empty() {
        std::process::exit(1);
    }
}
