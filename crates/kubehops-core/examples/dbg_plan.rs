//! The routes and resting places of a step's hops at a level of detail.
//!   cargo run --release -p kubehops-core --example dbg_plan '#/service-types/1/end?tab=loadbalancer' [full]
use kubehops_core::scene::layout::Detail;
use kubehops_core::scene::{drawing, Layout};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let parsed = kubehops_core::link::parse(&a[1]);
    let l = parsed.link;
    let s = kubehops_core::scenarios::build(&l.scenario, &l.params).unwrap();
    let step = l.step;
    let detail = if a.get(2).map(|s| s.as_str()) == Some("full") { Detail::Full } else { Detail::Compact };
    let lay = Layout::for_scenario_at(&s, detail);
    let st = &s.steps[step];
    for (i, h) in st.hops.iter().enumerate() {
        let p = drawing::plan(&s, &lay, step, i).unwrap();
        println!("hop {} {:?}->{:?} {:?} route {:?} rest {:.3}", i + 1, s.actor(h.from).map(|a| &a.short), s.actor(h.to).map(|a| &a.short), h.leg, p.route.iter().map(|q| (q.x.round(), q.y.round())).collect::<Vec<_>>(), p.rest);
    }
}
