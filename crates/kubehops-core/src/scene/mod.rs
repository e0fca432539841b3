//! Where things are drawn and where a packet is at a given moment.
//!
//! Architecture Invariant: the picture is a pure function of
//! (scenario, step, progress). `progress` counts hops in beats: 0.0 is
//! the step's start, 2.5 is halfway along its third hop, `hops.len()` is
//! the end. The renderer calls [`frame`] and draws what it returns; it never
//! keeps its own idea of where a packet is.

pub mod describe;
pub mod layout;
pub mod panels;
pub mod transcript;

pub use layout::{pt, GroupBox, Layout, Point, Rect, Side, WIDTH};

use crate::scenarios::Scenario;
use crate::sim::HopKind;
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

/// How far a token stays from the ends of its route: it leaves from beside
/// the box it starts at and comes to rest beside the box it reaches, so it
/// never covers their text. Short routes keep a third of their length.
const TOKEN_INSET: f64 = 30.0;

/// The point a token is at, at fraction `t` of its hop: along the route,
/// inset from both ends.
pub fn token_point(path: &[Point], t: f64) -> Point {
    let len: f64 = path.windows(2).map(|w| ((w[1].x - w[0].x).powi(2) + (w[1].y - w[0].y).powi(2)).sqrt()).sum();
    if len <= 0.0 {
        return point_along(path, t);
    }
    let inset = TOKEN_INSET.min(len / 3.0);
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    point_along(path, (inset + t * (len - 2.0 * inset)) / len)
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
pub fn frame(s: &Scenario, layout: &Layout, step: usize, progress: f64) -> Frame {
    let step = step.min(s.steps.len().saturating_sub(1));
    let Some(st) = s.steps.get(step) else {
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
    let token = current.and_then(|i| st.hops.get(i)).map(|h| {
        let route = layout.hop_route(h);
        // A hop on one actor (a drop) has a one-point route: the token sits
        // just under the actor, where it hides none of its text.
        let at = if route.len() < 2 { layout.target(h.from).map_or(pt(0.0, 0.0), |r| pt(r.center().x, r.bottom() + 14.0)) } else { token_point(&route, ease(t)) };
        (at, h.kind)
    });
    Frame { step, progress, done, current, token, view: done.min(st.views.len().saturating_sub(1)) }
}

#[cfg(test)]
mod tests;
