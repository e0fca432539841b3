//! What the browser's main thread pays, natively, for each scenario's
//! default: its build, its layout, and one frame's drawing
//! (`scene::drawing::draw`) at a hop's start (a new hop: the card and the
//! trails are placed again) and in flight (the token moves). Median and
//! worst over every step and hop, at the page's two wider frame sizes.
//! The wasm in a browser is several times slower than this; the figures
//! say where the time goes and whether a change moved it. Prints figures;
//! asserts nothing about time.
//!
//! `cargo run --release -p kubehops-core --example scene_bench`

use kubehops_core::scenarios::{build_default, REGISTRY};
use kubehops_core::scene::camera::Viewport;
use kubehops_core::scene::{drawing, frame, Layout};
use std::time::{Duration, Instant};

/// The median and the worst.
fn spread(mut xs: Vec<Duration>) -> (Duration, Duration) {
    xs.sort();
    (xs.get(xs.len() / 2).copied().unwrap_or_default(), xs.last().copied().unwrap_or_default())
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    println!("scene_bench: {:<22} {:>9} {:>9}   {:>21}   {:>21}", "scenario", "build", "layout", "draw at a hop's start", "draw in flight");
    for e in REGISTRY.iter().filter(|e| e.id != "your-cluster") {
        let t = Instant::now();
        let Some(s) = build_default(e.id) else { continue };
        let build = t.elapsed();
        let t = Instant::now();
        let layout = Layout::for_scenario(&s);
        let lay = t.elapsed();
        let (mut start, mut flight) = (Vec::new(), Vec::new());
        for vp in [Viewport::new(700.0, 416.0), Viewport::new(1150.0, 683.0)] {
            for (i, st) in s.steps.iter().enumerate() {
                for h in 0..st.hops.len() {
                    for (p, into) in [(h as f64, &mut start), (h as f64 + 0.5, &mut flight)] {
                        let t = Instant::now();
                        std::hint::black_box(drawing::draw(&s, &layout, &frame(&s, i, p), vp));
                        into.push(t.elapsed());
                    }
                }
            }
        }
        let ((sm, sx), (fm, fx)) = (spread(start), spread(flight));
        println!("scene_bench: {:<22} {:>9} {:>9}   {:>9} / {:>9}   {:>9} / {:>9}", e.id, ms(build), ms(lay), ms(sm), ms(sx), ms(fm), ms(fx));
    }
    println!("scene_bench: (median / worst over every step and hop, at 700×416 and 1150×683)");
}
