//! Times the work the app does before its first frame, natively, piece
//! by piece: the build of each scenario's first link, its layout, and the
//! drawing of step 1 before it plays (`cargo run --release --example
//! firstpaint`). The browser's are a few times these.
use kubehops_core::scenarios::{build_default, REGISTRY};
use kubehops_core::scene::camera::Viewport;
use kubehops_core::scene::{drawing, frame, Layout};
use std::time::Instant;

fn ms<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let v = f();
    (t.elapsed().as_secs_f64() * 1000.0, v)
}

fn main() {
    for e in REGISTRY.iter().filter(|e| e.id != "your-cluster") {
        let (tb, s) = ms(|| build_default(e.id).unwrap());
        let (tl, l) = ms(|| Layout::for_scenario(&s));
        let f = frame(&s, 0, 0.0);
        let (tg, _) = ms(|| drawing::groups(&s, &l, &f));
        let (tt, _) = ms(|| drawing::trails(&s, &l, &f));
        let (tp, _) = ms(|| drawing::plan(&s, &l, 0, 0));
        let (td, _) = ms(|| drawing::draw(&s, &l, &f, Viewport::new(412.0, 280.0)));
        println!("{}: build {tb:.1} ms, layout {tl:.1}, groups {tg:.2}, trails {tt:.2}, plan {tp:.2}, draw {td:.2}", e.id);
    }
}
