//! How much of the story each frame shows: for every scenario with every
//! choice of its story (settings at their defaults), every hop of every
//! step, at the canvases readers meet (`camera::reader_frames`), with the
//! layout each frame picks (`Layout::fitting`): whether the hop's sender,
//! its receiver and the packet (its pill and card) are wholly in view at
//! the hop's end, and whether every actor a step's hops go from or to is
//! in view at the step's end (issue 29's yardstick). It prints every
//! frame's figures and fails where a frame that holds the whole story
//! (`HELD`) loses any of it.
//!
//!   cargo test --profile sweep -p kubehops-core --test story -- --nocapture

use kubehops_core::scenarios::{combinations, Scenario, REGISTRY};
use kubehops_core::scene::camera::{Camera, Viewport};
use kubehops_core::scene::drawing;
use kubehops_core::scene::{frame, Layout, Rect};
use kubehops_core::sim::ActorId;

fn frames() -> Vec<(&'static str, Viewport)> {
    kubehops_core::scene::camera::reader_frames()
}

fn inside(r: &Rect, cam: &Camera) -> bool {
    let v = cam.view;
    r.x >= v.x - 0.5 && r.y >= v.y - 0.5 && r.right() <= v.right() + 0.5 && r.bottom() <= v.bottom() + 0.5
}

/// An actor's box, where it has one (a Pod or node, a balancer, a host).
fn shows(l: &Layout, cam: &Camera, id: ActorId) -> bool {
    l.rect(id).is_none_or(|r| inside(&r, cam))
}

#[derive(Default)]
struct Tally {
    hops: usize,
    hops_whole: usize,
    steps: usize,
    steps_whole: usize,
}

fn count(s: &Scenario, vp: Viewport, t: &mut Tally) {
    let l = Layout::fitting(s, vp);
    for (k, st) in s.steps.iter().enumerate() {
        for (i, h) in st.hops.iter().enumerate() {
            let f = frame(s, k, (i + 1) as f64);
            let cam = drawing::camera(s, &l, &f, vp);
            let packet = drawing::token(s, &l, &f).is_none_or(|tk| inside(&tk.pill_rect(), &cam) && inside(&tk.card_rect(), &cam));
            t.hops += 1;
            t.hops_whole += usize::from(shows(&l, &cam, h.from) && shows(&l, &cam, h.to) && packet);
        }
        if st.hops.is_empty() {
            continue;
        }
        let end = frame(s, k, st.hops.len() as f64);
        let cam = drawing::camera(s, &l, &end, vp);
        t.steps += 1;
        t.steps_whole += usize::from(st.hops.iter().all(|h| shows(&l, &cam, h.from) && shows(&l, &cam, h.to)));
    }
}

/// The frames that hold every story whole: the compact picture fits them
/// at a legible scale. The smaller ones (a 720×560 or 480×360 embed, a
/// phone, the page at 1280×800 for the larger scenarios) still follow the
/// hops with the camera; their figures are printed.
const HELD: [&str; 2] = ["embed 1280×720", "page 1920×1080"];

// Thousands of builds: run in release (`scripts/test` does).
#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: scripts/test runs it optimised (--profile sweep)")]
fn every_story_in_frame() {
    let defaults: Vec<Scenario> = REGISTRY.iter().map(|e| (e.build)(&kubehops_core::scenarios::Params::defaults(&(e.params)()))).collect();
    // Every story a reader can choose (the explorer's tabs and clients,
    // the demos), with the settings at their defaults: the settings
    // change the detail, not who is in the story.
    let all: Vec<Scenario> = REGISTRY
        .iter()
        .flat_map(|e| {
            let specs = (e.params)();
            let stories: Vec<_> = combinations(&specs, &[None]).into_iter().filter(|p| specs.iter().filter(|sp| sp.is_setting()).all(|sp| p.get(&sp.key).is_none_or(|v| *v == sp.default_value()))).collect();
            stories.into_iter().map(move |p| (e.build)(&p))
        })
        .collect();
    println!("story in frame: each hop's sender, receiver and packet wholly in view at its end; each step's actors at its end");
    let mut lost = Vec::new();
    for (name, vp) in frames() {
        let (mut d, mut a) = (Tally::default(), Tally::default());
        defaults.iter().for_each(|s| count(s, vp, &mut d));
        all.iter().for_each(|s| count(s, vp, &mut a));
        println!("  {name:<18} defaults: hops {}/{}, step ends {}/{}   every story ({} builds): hops {}/{}, step ends {}/{}", d.hops_whole, d.hops, d.steps_whole, d.steps, all.len(), a.hops_whole, a.hops, a.steps_whole, a.steps);
        if HELD.contains(&name) && (a.hops_whole < a.hops || a.steps_whole < a.steps) {
            lost.push(name);
        }
    }
    assert!(lost.is_empty(), "frames that should hold every story whole lose some of it: {lost:?}");
}
