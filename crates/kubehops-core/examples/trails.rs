//! Prints the trails of one state, to look into a geometry failure:
//! `cargo run --example trails -- <scenario> <step> <progress> [key=value …] [--compact]`
//! (`--compact`: the compact level of detail's layout).
use kubehops_core::scenarios::{Params, REGISTRY};
use kubehops_core::scene::{drawing, frame, Layout};
fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    let compact = all.iter().any(|x| x == "--compact");
    let a: Vec<String> = all.into_iter().filter(|x| x != "--compact").collect();
    let e = REGISTRY.iter().find(|e| e.id == a[0]).expect("scenario");
    let specs = (e.params)();
    let mut p = Params::defaults(&specs);
    for kv in &a[3..] {
        let (k, v) = kv.split_once('=').expect("key=value");
        let spec = specs.iter().find(|s| s.key == k).expect("key");
        p.insert(k, spec.parse(v).expect("value"));
    }
    let s = (e.build)(&p);
    let l = if compact { Layout::for_scenario_at(&s, kubehops_core::scene::layout::Detail::Compact) } else { Layout::for_scenario(&s) };
    let step: usize = a[1].parse::<usize>().unwrap() - 1;
    let f = frame(&s, step, a[2].parse().unwrap());
    let st = &s.steps[step];
    for t in drawing::trails(&s, &l, &f) {
        let h = &st.hops[t.hop];
        let (fp, tp) = drawing::ports(st, &l, t.hop);
        println!("hop {} {:?} {} -> {} {:?}->{:?} what_if={} {:?}", t.hop + 1, h.kind, s.actors[h.from.index()].short, s.actors[h.to.index()].short, fp, tp, h.what_if, t.points.iter().map(|p| (p.x.round(), p.y.round())).collect::<Vec<_>>());
    }
}
