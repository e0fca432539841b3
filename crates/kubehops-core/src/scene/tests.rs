use super::*;
use crate::scenarios::build_default;

fn walkthrough() -> Scenario {
    build_default("nodeport-loadbalancer").unwrap()
}

fn frame_of(s: &Scenario, step: usize, p: f64) -> Frame {
    super::frame(s, step, p)
}

fn token_at(s: &Scenario, step: usize, p: f64) -> Option<drawing::Token> {
    drawing::token(s, &Layout::for_scenario(s), &frame_of(s, step, p))
}

#[test]
fn token_moves_along_the_hop_and_views_follow_hops() {
    let s = walkthrough();
    let l = Layout::for_scenario(&s);
    let f0 = frame_of(&s, 1, 0.0);
    assert_eq!((f0.current, f0.view, f0.done), (None, 0, 0));
    assert!(token_at(&s, 1, 0.0).is_none(), "no token before the step plays");
    let st = &s.steps[1];
    let h = &st.hops[0];
    let start = token_at(&s, 1, 0.001).unwrap().at;
    let mid = token_at(&s, 1, 0.5).unwrap().at;
    let end = token_at(&s, 1, 0.999).unwrap().at;
    assert_ne!(start, mid);
    let plan = drawing::plan(&s, &l, 1, 0).unwrap();
    let rest = point_along(&plan.route, plan.rest);
    assert!((end.x - rest.x).abs() < 2.0 && (end.y - rest.y).abs() < 2.0, "the token comes to rest where its plan says");
    let target = l.target(h.to).unwrap();
    assert!(!target.contains(rest), "and not on its target");
    let fin = frame_of(&s, 1, st.hops.len() as f64);
    assert_eq!(fin.view, st.hops.len());
    assert_eq!(fin.current, Some(st.hops.len() - 1));
    // Same inputs, same frame.
    assert_eq!(frame_of(&s, 1, 2.25), frame_of(&s, 1, 2.25));
}

#[test]
fn bad_input_is_clamped_not_a_panic() {
    let s = walkthrough();
    for (st, p) in [(99, 1.0), (0, -5.0), (0, f64::NAN), (0, f64::INFINITY), (usize::MAX, 1e300)] {
        let f = frame_of(&s, st, p);
        assert!(f.step < s.steps.len());
        assert!(f.view < s.steps[f.step].views.len());
    }
    assert_eq!(point_along(&[], 0.5), pt(0.0, 0.0));
}

#[test]
fn a_reply_runs_beside_its_request_with_its_ends_on_the_same_edges() {
    let s = walkthrough();
    let l = Layout::new(&s.actors);
    let st = &s.steps[1];
    let req = st.hops.iter().find(|h| h.leg == crate::sim::Leg::Out && h.from != h.to).unwrap();
    let out = l.route(req.from, req.to, crate::sim::Leg::Out);
    let mut back = l.route(req.to, req.from, crate::sim::Leg::Back);
    back.reverse();
    assert_eq!(out.len(), back.len());
    for (a, b) in out.iter().zip(&back) {
        let d = ((a.x - b.x).powi(2) + (a.y - b.y).powi(2)).sqrt();
        assert!(d > 1.0 && d <= 2.0 * (layout::SIDE_OFFSET + layout::REPLY_OFFSET) + 1e-9, "{a:?} vs {b:?}");
    }
    let (from, to) = (l.target(req.from).unwrap(), l.target(req.to).unwrap());
    assert_eq!(layout::side_of(&from, out[0]), layout::side_of(&from, back[0]));
    assert_eq!(layout::side_of(&to, *out.last().unwrap()), layout::side_of(&to, *back.last().unwrap()));
}

#[test]
fn layouts_grow_with_their_nodes_and_pods() {
    let small = Layout::new(&walkthrough().actors);
    let big = Layout::new(&build_default("service-types").unwrap().actors);
    assert_eq!(small.nodes.len(), 3);
    assert_eq!(big.nodes.len(), 2);
    // Three Pods on Node-2 of the explorer need a taller card than one.
    let card = |l: &Layout, i: usize| l.nodes[i].card.h;
    assert!(card(&big, 1) > card(&big, 0));
}
