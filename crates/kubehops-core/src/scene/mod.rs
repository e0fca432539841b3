//! What is drawn, and where, at a given moment.
//!
//! Architecture Invariant: the picture is a pure function of
//! (scenario, step, progress, frame size). `progress` counts hops in
//! beats: 0.0 is the step's start, 2.5 is halfway along its third hop,
//! `hops.len()` is the end. [`frame`] says which hop is on screen;
//! [`drawing::draw`] turns that into boxes, texts, trails, the token and
//! the camera. Renderers draw what it returns; they never keep their own
//! idea of where a packet is or what a box says.

pub mod camera;
pub mod describe;
pub mod drawing;
pub mod geometry;
pub mod metrics;
pub mod style;
pub mod svg;
pub mod text;
pub mod layout;
pub mod panels;
pub mod terms;
pub mod transcript;

pub use layout::{pt, GroupBox, Layout, NodeCard, Point, Port, Rect, Side};

use crate::scenarios::Scenario;
use serde::{Deserialize, Serialize};

/// The actors a scenario's story touches, most important first: those
/// its hops go between or decide on, then the endpoints its DNATs could
/// pick and the endpoints its rules name (the Service's Pods). A layout
/// keeps them out of groups.
pub fn featured(s: &Scenario) -> Vec<crate::sim::ActorId> {
    use crate::sim::{ActorId, RuleSummary};
    let mut out: Vec<ActorId> = Vec::new();
    let mut addrs: Vec<std::net::Ipv4Addr> = Vec::new();
    for st in &s.steps {
        for h in &st.hops {
            out.push(h.from);
            out.push(h.to);
            if let Some(p) = &h.packet {
                out.extend(p.decided_on);
                addrs.extend(p.could_reach.iter().map(|a| a.ip));
            }
        }
    }
    for st in &s.steps {
        for n in st.views.last().iter().flat_map(|v| v.nodes.iter()) {
            for r in &n.rules {
                if let RuleSummary::Endpoints { targets, .. } = r {
                    addrs.extend(targets.iter().map(|t| t.ip));
                }
            }
        }
    }
    // Endpoints by address, Pods only (capped: the layout shows a few per node anyway).
    let mut seen = std::collections::BTreeSet::new();
    for ip in addrs {
        if seen.len() >= 64 || !seen.insert(ip) {
            continue;
        }
        out.extend(s.actors.iter().find(|a| a.kind.is_pod() && a.ip == Some(ip)).map(|a| a.id));
    }
    let mut kept = std::collections::BTreeSet::new();
    out.retain(|a| kept.insert(*a));
    out
}

impl Layout {
    /// The layout of a scenario, with the actors its story touches kept
    /// out of groups (see [`featured`]).
    pub fn for_scenario(s: &Scenario) -> Layout {
        Layout::with_featured(&s.actors, &featured(s))
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

/// Which hop is on screen, and how far along, at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// The step shown (clamped into range).
    pub step: usize,
    pub progress: f64,
    /// Hops finished.
    pub done: usize,
    /// The hop in flight, or the last one when the step has ended.
    pub current: Option<usize>,
    /// Index into the step's `views`.
    pub view: usize,
}

/// The frame at (`step`, `progress`). Out-of-range input is clamped, so
/// any URL or click sequence yields a drawable frame.
pub fn frame(s: &Scenario, step: usize, progress: f64) -> Frame {
    let step = step.min(s.steps.len().saturating_sub(1));
    let Some(st) = s.steps.get(step) else {
        return Frame { step: 0, progress: 0.0, done: 0, current: None, view: 0 };
    };
    let n = st.hops.len();
    let progress = if progress.is_finite() { progress.clamp(0.0, n as f64) } else { 0.0 };
    let done = (progress.floor() as usize).min(n);
    // At a whole number of beats the last finished hop is shown at its end,
    // which is also what reduced motion shows.
    let current = if progress == 0.0 {
        None
    } else if progress.fract() == 0.0 {
        Some(done - 1)
    } else {
        Some(done)
    };
    Frame { step, progress, done, current, view: done.min(st.views.len().saturating_sub(1)) }
}

/// Where a step stands, without how far the token has moved between two
/// hop boundaries: what the panels beside the canvas show depends only on
/// this, so a frame's [`Frame::moment`] changes when a hop starts or ends,
/// not on every frame of a flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moment {
    pub step: usize,
    /// Hops finished.
    pub done: usize,
    /// The hop in flight, or the last one when the step has ended.
    pub current: Option<usize>,
    /// Index into the step's `views`.
    pub view: usize,
}

impl Frame {
    /// This frame without its progress.
    pub fn moment(&self) -> Moment {
        Moment { step: self.step, done: self.done, current: self.current, view: self.view }
    }
}

/// The frame of hop `i` of `step` at fraction `t` of its flight (1.0: at rest).
pub fn frame_at(s: &Scenario, step: usize, i: usize, t: f64) -> Frame {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 1.0 };
    let p = if t >= 1.0 { (i + 1) as f64 } else { i as f64 + t.max(1e-6) };
    frame(s, step, p)
}

#[cfg(test)]
mod tests;
