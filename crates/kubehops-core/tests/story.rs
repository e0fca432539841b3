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

#[path = "support/par.rs"]
mod par;

use kubehops_core::scenarios::{combinations, Scenario, REGISTRY};
use kubehops_core::scene::camera::{Camera, Viewport};
use kubehops_core::scene::drawing::{self, HopPlan};
use kubehops_core::scene::layout::Detail;
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

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.hops += o.hops;
        self.hops_whole += o.hops_whole;
        self.steps += o.steps;
        self.steps_whole += o.steps_whole;
    }
}

/// Counts `s` at every frame into `tallies` (one per frame). Each level
/// of detail's layout and hop plans are worked out once and shared by the
/// frames that show that level.
fn count(s: &Scenario, frames: &[(&str, Viewport)], tallies: &mut [Tally]) {
    let full = Layout::for_scenario(s);
    let compact = Layout::for_scenario_at(s, Detail::Compact);
    let plans_of = |l: &Layout| -> Vec<Vec<Option<HopPlan>>> { (0..s.steps.len()).map(|k| (0..s.steps[k].hops.len()).map(|i| drawing::plan(s, l, k, i)).collect()).collect() };
    let mut cache: [Option<Vec<Vec<Option<HopPlan>>>>; 2] = [None, None];
    for ((_, vp), t) in frames.iter().zip(tallies.iter_mut()) {
        let detail = Detail::for_frame(full.world(), *vp);
        let (l, slot) = if detail == Detail::Full { (&full, 0) } else { (&compact, 1) };
        let plans = cache[slot].get_or_insert_with(|| plans_of(l));
        for (k, st) in s.steps.iter().enumerate() {
            let cam_at = |f: &kubehops_core::scene::Frame| {
                let p = |i: usize| plans[k].get(i).and_then(|x| x.as_ref());
                let (before, now) = match f.current {
                    None => (None, p(0)),
                    Some(0) => (p(0), p(0)),
                    Some(i) => (p(i - 1), p(i)),
                };
                (drawing::camera_with(l.world(), *vp, f, before, now), now)
            };
            for (i, h) in st.hops.iter().enumerate() {
                let f = frame(s, k, (i + 1) as f64);
                let (cam, now) = cam_at(&f);
                let packet = now.map(|p| p.token(drawing::fraction(&f))).is_none_or(|tk| inside(&tk.pill_rect(), &cam) && inside(&tk.card_rect(), &cam));
                t.hops += 1;
                t.hops_whole += usize::from(shows(l, &cam, h.from) && shows(l, &cam, h.to) && packet);
            }
            if st.hops.is_empty() {
                continue;
            }
            let (cam, _) = cam_at(&frame(s, k, st.hops.len() as f64));
            t.steps += 1;
            t.steps_whole += usize::from(st.hops.iter().all(|h| shows(l, &cam, h.from) && shows(l, &cam, h.to)));
        }
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
    // The stories in parallel, over the machine's cores; each story at
    // every frame.
    let frames = frames();
    let tally = |list: &[Scenario]| -> Vec<Tally> {
        let parts = par::chunks(list, |part| {
            let mut t: Vec<Tally> = frames.iter().map(|_| Tally::default()).collect();
            part.iter().for_each(|s| count(s, &frames, &mut t));
            t
        });
        let mut sum: Vec<Tally> = frames.iter().map(|_| Tally::default()).collect();
        for part in &parts {
            for (s, p) in sum.iter_mut().zip(part) {
                s.add(p);
            }
        }
        sum
    };
    let (d, a) = (tally(&defaults), tally(&all));
    let figures: Vec<(&str, &Tally, &Tally)> = frames.iter().zip(d.iter().zip(&a)).map(|((name, _), (d, a))| (*name, d, a)).collect();
    let mut lost = Vec::new();
    for (name, d, a) in &figures {
        println!("  {name:<18} defaults: hops {}/{}, step ends {}/{}   every story ({} builds): hops {}/{}, step ends {}/{}", d.hops_whole, d.hops, d.steps_whole, d.steps, all.len(), a.hops_whole, a.hops, a.steps_whole, a.steps);
        if HELD.contains(name) && (a.hops_whole < a.hops || a.steps_whole < a.steps) {
            lost.push(*name);
        }
    }
    assert!(lost.is_empty(), "frames that should hold every story whole lose some of it: {lost:?}");
}
