//! How long an edit takes to re-simulate: for each scenario, its own
//! Service typed back with another node port, read and admitted
//! (`edit::read_service`), then the whole scenario built with it
//! (`edit::build`). Prints medians; asserts nothing about time.
//!
//!     cargo run --release -p kubehops-objects --example edit_bench

use kubehops_core::scenarios::{Params, Value, REGISTRY};
use kubehops_objects::edit;
use std::time::Instant;

const RUNS: usize = 40;

fn median_ms(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    println!("edit re-simulation, median of {RUNS} (native, release):");
    for e in REGISTRY {
        let Some(hooks) = e.edit else { continue };
        let p = Params::default();
        let own = edit::starting_text(e.id, &p);
        let texts: Vec<String> = (0..RUNS)
            .map(|i| {
                let kept: Vec<&str> = own.lines().filter(|l| !l.trim_start().starts_with("nodePort:")).map(|l| if l.trim_start().starts_with("type:") { "  type: NodePort" } else { l }).collect();
                format!("{}\n    nodePort: {}\n", kept.join("\n"), 31000 + i)
            })
            .collect();
        let world = (hooks.cluster)(&p);
        let (mut read, mut whole) = (Vec::new(), Vec::new());
        for t in &texts {
            let t0 = Instant::now();
            edit::read_service(t, (e.editor.expect("an editor beside the edit").file)(&p), &world).expect("admitted");
            read.push(t0.elapsed().as_secs_f64() * 1e3);
            let t0 = Instant::now();
            let b = edit::build(e.id, &p.clone().with("manifest", Value::Manifest(t.clone()))).expect("known");
            assert!(b.refusal.is_none() && b.scenario.is_some());
            whole.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        println!("  {:<24} read + dry run {:>7.3} ms   read + build the scenario {:>7.3} ms", e.id, median_ms(read), median_ms(whole));
    }
}
