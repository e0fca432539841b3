//! Where things are drawn and where a packet is at a given moment.
//!
//! Architecture Invariant: the picture is a pure function of
//! (walkthrough, step, progress). `progress` counts hops in beats: 0.0 is
//! the step's start, 2.5 is halfway along its third hop, `hops.len()` is
//! the end. The renderer calls [`frame`] and draws what it returns; it never
//! keeps its own idea of where a packet is.

use crate::sim::{HopKind, Place};
use crate::scenarios::Walkthrough;
use serde::{Deserialize, Serialize};

/// The canvas' user-space size (the SVG viewBox).
pub const WIDTH: f64 = 936.0;
pub const HEIGHT: f64 = 610.0;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

const fn pt(x: f64, y: f64) -> Point {
    Point { x, y }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    pub fn center(&self) -> Point {
        pt(self.x + self.w / 2.0, self.y + self.h / 2.0)
    }

    pub fn intersects(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// Corridors that routes run along, between the columns.
const OUTSIDE_TO_CONTROL_X: f64 = 188.0;
const CONTROL_TO_CLUSTER_X: f64 = 386.0;
const CLUSTER_BUS_X: f64 = 717.0;
/// Just right of the control-plane boxes.
const CONTROL_CORRIDOR_X: f64 = 380.0;
/// Above the API server, for kubectl's messages.
const TOP_LANE_Y: f64 = 46.0;

/// Boxes for every actor of a walkthrough.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub boxes: Vec<(Place, Rect)>,
    /// Each node's kube-proxy panel.
    pub proxy_panels: Vec<Rect>,
    /// Each node's Pod area.
    pub pod_areas: Vec<Rect>,
}

impl Layout {
    pub fn new(w: &Walkthrough) -> Layout {
        let mut boxes = vec![
            (Place::LoadBalancer, Rect { x: 16.0, y: 300.0, w: 160.0, h: 90.0 }),
            (Place::Laptop, Rect { x: 16.0, y: 480.0, w: 160.0, h: 100.0 }),
            (Place::ApiServer, Rect { x: 200.0, y: 60.0, w: 172.0, h: 76.0 }),
            (Place::CloudControllerManager, Rect { x: 200.0, y: 190.0, w: 172.0, h: 76.0 }),
        ];
        let mut proxy_panels = Vec::new();
        let mut pod_areas = Vec::new();
        let nodes = w.actors.iter().filter(|a| matches!(a.place, Place::Node(_))).count();
        for i in 0..nodes {
            let y = 40.0 + i as f64 * 190.0;
            boxes.push((Place::Node(i), Rect { x: 400.0, y, w: 520.0, h: 170.0 }));
            proxy_panels.push(Rect { x: 412.0, y: y + 40.0, w: 290.0, h: 118.0 });
            pod_areas.push(Rect { x: 732.0, y: y + 40.0, w: 176.0, h: 118.0 });
        }
        // Pods share their node's Pod area, stacked.
        for (n, area) in pod_areas.iter().enumerate() {
            let pods: Vec<Place> = w.actors.iter().filter(|a| a.node == Some(n)).map(|a| a.place).collect();
            let k = pods.len().max(1) as f64;
            for (j, p) in pods.into_iter().enumerate() {
                let h = (area.h - 6.0 * (k - 1.0)) / k;
                boxes.push((p, Rect { x: area.x, y: area.y + j as f64 * (h + 6.0), w: area.w, h }));
            }
        }
        Layout { boxes, proxy_panels, pod_areas }
    }

    pub fn rect(&self, p: Place) -> Option<Rect> {
        self.boxes.iter().find(|(q, _)| *q == p).map(|(_, r)| *r)
    }

    /// Where a packet rests at a place. Anchors sit on box edges or in
    /// gaps, so trails drawn over the boxes do not cross their text.
    pub fn anchor(&self, p: Place) -> Point {
        match p {
            Place::Node(i) => self.proxy_panels.get(i).map_or(pt(0.0, 0.0), |r| pt(CLUSTER_BUS_X, r.y + r.h / 2.0)),
            Place::Pod(_) => self.rect(p).map_or(pt(0.0, 0.0), |r| pt(r.x + r.w / 2.0, r.y + r.h - 16.0)),
            // High on the laptop's edge, low on the balancer's, so a resting
            // token leaves their addresses and states readable.
            Place::Laptop => self.rect(p).map_or(pt(0.0, 0.0), |r| pt(r.x + r.w, r.y + 22.0)),
            Place::LoadBalancer => self.rect(p).map_or(pt(0.0, 0.0), |r| pt(r.x + r.w, r.y + r.h - 6.0)),
            _ => self.rect(p).map_or(pt(0.0, 0.0), |r| pt(r.x + r.w, r.y + r.h / 2.0)),
        }
    }

    /// The strip under a node's kube-proxy panel where wires enter the node.
    fn node_entry_y(&self, i: usize) -> f64 {
        self.rect(Place::Node(i)).map_or(0.0, |r| r.y + r.h - 6.0)
    }

    /// The polyline a hop follows, along the corridors between columns.
    pub fn route(&self, from: Place, to: Place) -> Vec<Point> {
        use Place::*;
        let (a, b) = (self.anchor(from), self.anchor(to));
        let path = match (from, to) {
            _ if from == to => vec![a],
            (Node(_) | Pod(_), Node(_) | Pod(_)) => vec![a, pt(CLUSTER_BUS_X, a.y), pt(CLUSTER_BUS_X, b.y), b],
            // Into a node: along the corridor, then under its panel to the bus.
            (Laptop | LoadBalancer | ApiServer, Node(i)) => {
                let x = if from == ApiServer { CONTROL_CORRIDOR_X } else { CONTROL_TO_CLUSTER_X };
                let e = self.node_entry_y(i);
                vec![a, pt(x, a.y), pt(x, e), pt(CLUSTER_BUS_X, e), b]
            }
            (Node(_), Laptop | LoadBalancer | ApiServer) => {
                let mut r = self.route(to, from);
                r.reverse();
                return r;
            }
            (Laptop, LoadBalancer) | (LoadBalancer, Laptop) => vec![a, pt(OUTSIDE_TO_CONTROL_X, a.y), pt(OUTSIDE_TO_CONTROL_X, b.y), b],
            (Laptop, ApiServer) => vec![a, pt(OUTSIDE_TO_CONTROL_X, a.y), pt(OUTSIDE_TO_CONTROL_X, TOP_LANE_Y), pt(CONTROL_CORRIDOR_X, TOP_LANE_Y), pt(CONTROL_CORRIDOR_X, b.y), b],
            (ApiServer, CloudControllerManager) | (CloudControllerManager, ApiServer) => vec![a, pt(CONTROL_CORRIDOR_X, a.y), pt(CONTROL_CORRIDOR_X, b.y), b],
            (CloudControllerManager, LoadBalancer) => vec![a, pt(CONTROL_CORRIDOR_X, a.y), pt(CONTROL_CORRIDOR_X, b.y), b],
            (ApiServer, Laptop) | (LoadBalancer, CloudControllerManager) => {
                let mut r = self.route(to, from);
                r.reverse();
                return r;
            }
            _ => vec![a, b],
        };
        path
    }
}

/// The point at fraction `t` (0..=1) of a polyline's length.
pub fn point_along(path: &[Point], t: f64) -> Point {
    let Some(first) = path.first() else { return pt(0.0, 0.0) };
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let seg = |i: usize| ((path[i + 1].x - path[i].x).powi(2) + (path[i + 1].y - path[i].y).powi(2)).sqrt();
    let total: f64 = (0..path.len().saturating_sub(1)).map(seg).sum();
    if total == 0.0 {
        return *first;
    }
    let mut left = t * total;
    for i in 0..path.len() - 1 {
        let l = seg(i);
        if left <= l && l > 0.0 {
            let f = left / l;
            return pt(path[i].x + (path[i + 1].x - path[i].x) * f, path[i].y + (path[i + 1].y - path[i].y) * f);
        }
        left -= l;
    }
    *path.last().unwrap_or(first)
}

/// Slow start and end, so a packet visibly leaves and arrives.
pub fn ease(t: f64) -> f64 {
    let t = t.clamp(0.0, 1.0);
    if t < 0.5 {
        4.0 * t * t * t
    } else {
        1.0 - (-2.0 * t + 2.0).powi(3) / 2.0
    }
}

/// Everything that moves, at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// The step shown (clamped into range).
    pub step: usize,
    pub progress: f64,
    /// Hops finished.
    pub done: usize,
    /// The hop in flight, or the last one when the step has ended.
    pub current: Option<usize>,
    /// Where the packet (or message) token is, and its kind.
    pub token: Option<(Point, HopKind)>,
    /// Index into the step's `views`.
    pub view: usize,
}

/// The frame at (`step`, `progress`). Out-of-range input is clamped, so
/// any URL or click sequence yields a drawable frame.
pub fn frame(w: &Walkthrough, layout: &Layout, step: usize, progress: f64) -> Frame {
    let step = step.min(w.steps.len().saturating_sub(1));
    let Some(st) = w.steps.get(step) else {
        return Frame { step: 0, progress: 0.0, done: 0, current: None, token: None, view: 0 };
    };
    let n = st.hops.len();
    let progress = if progress.is_finite() { progress.clamp(0.0, n as f64) } else { 0.0 };
    let done = (progress.floor() as usize).min(n);
    // At a whole number of beats the last finished hop is shown at its end,
    // which is also what reduced motion shows.
    let (current, t) = if progress == 0.0 {
        (None, 0.0)
    } else if progress.fract() == 0.0 {
        (Some(done - 1), 1.0)
    } else {
        (Some(done), progress.fract())
    };
    let token = current.and_then(|i| st.hops.get(i)).map(|h| (point_along(&layout.route(h.from, h.to), ease(t)), h.kind));
    Frame { step, progress, done, current, token, view: done.min(st.views.len().saturating_sub(1)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::{build, Options};

    fn walkthrough() -> Walkthrough {
        build("nodeport-loadbalancer", Options::default()).unwrap()
    }

    #[test]
    fn boxes_do_not_overlap_and_fit_the_canvas() {
        let w = walkthrough();
        let l = Layout::new(&w);
        let canvas = Rect { x: 0.0, y: 0.0, w: WIDTH, h: HEIGHT };
        for (p, r) in &l.boxes {
            assert!(r.x >= canvas.x && r.y >= canvas.y && r.x + r.w <= WIDTH && r.y + r.h <= HEIGHT, "{p:?} leaves the canvas");
        }
        // Only a Pod may sit inside its own node's box.
        for (i, (p, a)) in l.boxes.iter().enumerate() {
            for (q, b) in &l.boxes[i + 1..] {
                let nested = matches!((p, q), (Place::Node(_), Place::Pod(_)) | (Place::Pod(_), Place::Node(_)));
                assert!(nested || !a.intersects(b), "{p:?} overlaps {q:?}");
            }
        }
    }

    #[test]
    fn every_hop_has_a_route_between_its_anchors() {
        let w = walkthrough();
        let l = Layout::new(&w);
        for st in &w.steps {
            for h in &st.hops {
                let r = l.route(h.from, h.to);
                assert_eq!(r.first(), Some(&l.anchor(h.from)));
                assert_eq!(r.last(), Some(&l.anchor(h.to)));
            }
        }
    }

    #[test]
    fn token_moves_along_the_hop_and_views_follow_hops() {
        let w = walkthrough();
        let l = Layout::new(&w);
        let f0 = frame(&w, 1, 0.0);
        assert_eq!((f0.token, f0.view, f0.done), (None, 0, 0));
        let st = &w.steps[1];
        let h = &st.hops[0];
        let start = frame(&w, 1, 0.001).token.unwrap().0;
        let mid = frame(&w, 1, 0.5).token.unwrap().0;
        let end = frame(&w, 1, 0.999).token.unwrap().0;
        assert_ne!(start, mid);
        assert!((end.x - l.anchor(h.to).x).abs() < 2.0 && (end.y - l.anchor(h.to).y).abs() < 2.0);
        let last = frame(&w, 1, st.hops.len() as f64);
        assert_eq!(last.view, st.hops.len());
        assert_eq!(last.current, Some(st.hops.len() - 1));
        // Same inputs, same frame.
        assert_eq!(frame(&w, 1, 2.25), frame(&w, 1, 2.25));
    }

    #[test]
    fn bad_input_is_clamped_not_a_panic() {
        let w = walkthrough();
        for (s, p) in [(99, 1.0), (0, -5.0), (0, f64::NAN), (0, f64::INFINITY), (usize::MAX, 1e300)] {
            let f = frame(&w, s, p);
            assert!(f.step < w.steps.len());
            assert!(f.view < w.steps[f.step].views.len());
        }
        assert_eq!(point_along(&[], 0.5), pt(0.0, 0.0));
    }

    fn frame(w: &Walkthrough, step: usize, p: f64) -> Frame {
        super::frame(w, &Layout::new(w), step, p)
    }
}
