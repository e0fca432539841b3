//! Geometry violations of the default builds at one level of detail
//! (a quick look while tuning a level; tests/geometry.rs checks all).
//!   cargo run --release -p kubehops-core --example geom_detail [compact|full] [all]
use kubehops_core::scenarios::{combinations, Params, Scenario, REGISTRY};
use kubehops_core::scene::geometry::{check_world, tally};
use kubehops_core::scene::layout::Detail;
use kubehops_core::scene::{drawing, frame, Layout};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let detail = if args.get(1).map(|s| s.as_str()) == Some("full") { Detail::Full } else { Detail::Compact };
    let all = args.get(2).map(|s| s.as_str()) == Some("all");
    let builds: Vec<Scenario> = REGISTRY
        .iter()
        .flat_map(|e| {
            let specs = (e.params)();
            if all {
                combinations(&specs, &[None]).into_iter().map(|p| (e.build)(&p)).collect::<Vec<_>>()
            } else {
                vec![(e.build)(&Params::defaults(&specs))]
            }
        })
        .collect();
    let mut vs = Vec::new();
    let mut shown = 0;
    let mut seen = std::collections::BTreeSet::new();
    for s in &builds {
        let l = Layout::for_scenario_at(s, detail);
        let vp = kubehops_core::scene::camera::Viewport::new(4000.0, 4000.0);
        for (k, st) in s.steps.iter().enumerate() {
            for p in 0..=st.hops.len() {
                let f = frame(s, k, p as f64);
                let d = drawing::draw(s, &l, &f, vp);
                for v in check_world(s, &l, &f, &d) {
                    let q = s.params.link_pairs(&REGISTRY.iter().find(|e| e.id == s.id).map(|e| (e.params)()).unwrap_or_default()).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
                    if seen.insert((v.rule, s.id.clone(), k)) && shown < 60 {
                        println!("  {} {q} step {} at {p}: {} — {}", s.id, k + 1, v.rule.name(), v.what);
                        shown += 1;
                    }
                    vs.push(v);
                }
            }
        }
    }
    println!("builds {}: {:?}", builds.len(), tally(&vs).iter().map(|(r, n)| (r.name(), *n)).collect::<Vec<_>>());
}
