//! The drawing's geometry over every build: every scenario with every
//! combination of its parameters, every step, every hop at rest and in
//! flight, at the frame sizes readers use. A failure names the state, the
//! rule and the two shapes.

#[path = "support/par.rs"]
mod par;

use kubehops_core::scenarios::{combinations, Scenario, REGISTRY};
use kubehops_core::scene::camera::Viewport;
use kubehops_core::scene::drawing;
use kubehops_core::scene::geometry::{check_legible, check_world, tally, Rule, Violation};
use kubehops_core::scene::layout::Detail;
use kubehops_core::scene::{frame, Layout};

/// The frames readers meet the canvas in (`camera::reader_frames`).
fn viewports() -> Vec<(&'static str, Viewport)> {
    kubehops_core::scene::camera::reader_frames()
}

fn builds() -> Vec<Scenario> {
    REGISTRY.iter().flat_map(|e| combinations(&(e.params)(), &[None]).into_iter().map(move |p| (e.build)(&p))).collect()
}

/// Every violation of `s`: each hop at rest, and each hop halfway (the
/// moving token may pass over things; the resting one may not). The
/// collision rules are checked once; legibility at each frame size.
fn violations(s: &Scenario, vps: &[(&'static str, Viewport)]) -> Vec<(String, Violation)> {
    Detail::ALL.iter().flat_map(|d| violations_at(s, vps, *d)).collect()
}

/// The violations of `s` at one level of detail, at the frames that show
/// that level (`Detail::for_frame`).
fn violations_at(s: &Scenario, vps: &[(&'static str, Viewport)], detail: Detail) -> Vec<(String, Violation)> {
    let full = Layout::for_scenario(s).world();
    let vps: Vec<(&'static str, Viewport)> = vps.iter().copied().filter(|(_, vp)| Detail::for_frame(full, *vp) == detail).collect();
    let Some(first) = vps.first().map(|v| v.1) else {
        return Vec::new();
    };
    let l = Layout::for_scenario_at(s, detail);
    let world = l.world();
    let mut out = Vec::new();
    for (k, st) in s.steps.iter().enumerate() {
        // Each hop's plan once (the costly part), as the app's memos keep it.
        let plans: Vec<Option<drawing::HopPlan>> = (0..st.hops.len()).map(|i| drawing::plan(s, &l, k, i)).collect();
        for p in 0..=st.hops.len() {
            let mut at = vec![p as f64];
            if p < st.hops.len() {
                at.push(p as f64 + 0.5);
            }
            for q in at {
                let f = frame(s, k, q);
                let (before, now) = match f.current {
                    None => (None, plans.first().and_then(|x| x.as_ref())),
                    Some(i) => (plans.get(i.saturating_sub(1)).and_then(|x| x.as_ref()), plans.get(i).and_then(|x| x.as_ref())),
                };
                let t = if q.fract() == 0.0 { 1.0 } else { q.fract() };
                let token = f.current.and(now).map(|p| p.token(t));
                let d = drawing::Drawing { world, camera: drawing::camera_with(world, first, &f, before, now), groups: drawing::groups(s, &l, &f), trails: drawing::trails(s, &l, &f), token };
                let state = format!("{} ({}) {} step {} at {q}", s.id, detail.name(), link(s), k + 1);
                out.extend(check_world(s, &l, &f, &d).into_iter().map(|v| (state.clone(), v)));
                let texts = d.texts();
                for (name, vp) in &vps {
                    let cam = drawing::camera_with(world, *vp, &f, before, now);
                    out.extend(check_legible(&texts, &cam, *vp).into_iter().map(|v| (format!("{name}: {state}"), v)));
                }
            }
        }
    }
    out
}

/// The scenario's parameters as a link's query, to name a state.
fn link(s: &Scenario) -> String {
    let specs = REGISTRY.iter().find(|e| e.id == s.id).map(|e| (e.params)()).unwrap_or_default();
    s.params.link_pairs(&specs).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
}

// Thousands of states: run in release (`scripts/test` does), skipped by a
// debug `cargo test`, where it would take many minutes.
#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn every_state_draws_legibly_and_without_collisions() {
    let all = builds();
    let vps = viewports();
    // Both levels of detail over every build: split over the machine's
    // cores, each build checked on its own.
    let total: Vec<(String, Violation)> = par::chunks(&all, |part| part.iter().flat_map(|s| violations(s, &vps)).collect::<Vec<_>>()).into_iter().flatten().collect();
    // Each distinct failure once, with the first state it was seen in.
    let mut seen = std::collections::BTreeSet::new();
    for (w, v) in &total {
        let scenario = w.split(' ').next().unwrap_or("");
        let step = w.split(" step ").nth(1).unwrap_or("");
        if seen.insert((v.rule, scenario.to_string(), step.to_string(), v.what.clone())) && seen.len() <= 60 {
            println!("  {w}: {} — {}", v.rule.name(), v.what);
        }
    }
    let by_rule = tally(&total.iter().map(|x| x.1.clone()).collect::<Vec<_>>());
    println!("builds: {}; violations by rule: {:?}", all.len(), by_rule.iter().map(|(r, n)| (r.name(), *n)).collect::<Vec<_>>());
    assert!(total.is_empty(), "{} geometry violations (first: {:?})", total.len(), total.first());
    let _ = Rule::ALL;
}
