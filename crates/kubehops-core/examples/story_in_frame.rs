//! How much of the story each frame shows: for every scenario with every
//! choice of its story (settings at their defaults), every hop of every step, at the canvas
//! sizes readers meet, whether the hop's sender, its receiver and the
//! packet (its pill and card) are wholly in view at the hop's end, and
//! whether every actor a step's hops go from or to is in view at the
//! step's end. Figures only (issue 29's yardstick, to grow towards all of
//! them): it asserts nothing.
//!
//!   cargo run --release -p kubehops-core --example story_in_frame

use kubehops_core::scenarios::{combinations, Scenario, REGISTRY};
use kubehops_core::scene::camera::{Camera, Viewport};
use kubehops_core::scene::drawing;
use kubehops_core::scene::{frame, Layout, Rect};
use kubehops_core::sim::ActorId;

/// The canvas each frame gives (its SVG's box in CSS pixels, measured in
/// Chromium on the built page at `#/nodeport-loadbalancer/2/end`).
fn frames() -> Vec<(&'static str, Viewport)> {
    vec![
        ("embed 480×360", Viewport::new(462.0, 168.0)),
        ("embed 720×560", Viewport::new(702.0, 389.0)),
        ("embed 1280×720", Viewport::new(902.0, 601.0)),
        ("page 1280×800", Viewport::new(766.0, 455.0)),
        ("page 1920×1080", Viewport::new(1140.0, 677.0)),
        ("phone 390×844", Viewport::new(356.0, 280.0)),
        ("present 1920×1080", Viewport::presenting(1920.0, 931.0, 1080.0)),
    ]
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
    let l = Layout::for_scenario(s);
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

fn main() {
    let defaults: Vec<Scenario> = REGISTRY.iter().map(|e| (e.build)(&kubehops_core::scenarios::Params::defaults(&(e.params)()))).collect();
    // Every story a reader can choose (the explorer's tabs and clients,
    // the demos), with the settings at their defaults: the settings
    // change the detail, not who is in the story.
    let all: Vec<Scenario> = REGISTRY
        .iter()
        .flat_map(|e| {
            let specs = (e.params)();
            let stories: Vec<_> = combinations(&specs, &[None])
                .into_iter()
                .filter(|p| specs.iter().filter(|sp| sp.is_setting()).all(|sp| p.get(&sp.key).is_none_or(|v| *v == sp.default_value())))
                .collect();
            stories.into_iter().map(move |p| (e.build)(&p))
        })
        .collect();
    println!("story in frame: each hop's sender, receiver and packet wholly in view at its end; each step's actors at its end");
    for (name, vp) in frames() {
        let (mut d, mut a) = (Tally::default(), Tally::default());
        defaults.iter().for_each(|s| count(s, vp, &mut d));
        all.iter().for_each(|s| count(s, vp, &mut a));
        println!(
            "  {name:<18} defaults: hops {}/{}, step ends {}/{}   every story ({} builds): hops {}/{}, step ends {}/{}",
            d.hops_whole, d.hops, d.steps_whole, d.steps, all.len(), a.hops_whole, a.hops, a.steps_whole, a.steps
        );
    }
}
