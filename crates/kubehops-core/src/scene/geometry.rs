//! The drawing's geometry, checked: the rules a reader's eye applies,
//! made data so tests can apply them to every state of every scenario at
//! every frame size.
//!
//! Each rule is a [`Rule`]; a failure is a [`Violation`] naming the rule
//! and the two shapes involved. Callers add the state (scenario, link,
//! frame size) when they report it.

use super::camera::{Camera, Viewport};
use super::drawing::{draw, Drawing, Text, Token, Trail, ARROW_LEN};
use super::{Frame, Layout, Point, Rect};
use crate::scenarios::Scenario;
use crate::sim::ActorId;

/// What a reader would see go wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// A text runs out of the box it belongs to.
    TextOutOfBox,
    /// A text in view is smaller than the frame's minimum.
    TextTooSmall,
    /// A resting token covers a text.
    TokenOnText,
    /// A resting token covers an arrowhead.
    TokenOnArrow,
    /// A resting token covers a box of an actor its hop does not go between.
    TokenOnBox,
    /// A trail runs through a text.
    TrailOnText,
    /// Two trails going opposite ways lie on each other.
    OppositeTrails,
    /// Two arrowheads arrive at the same point.
    ArrowheadsMeet,
    /// A hop is too short for its token to be seen moving.
    HopTooShort,
}

impl Rule {
    pub const ALL: [Rule; 9] = [Rule::TextOutOfBox, Rule::TextTooSmall, Rule::TokenOnText, Rule::TokenOnArrow, Rule::TokenOnBox, Rule::TrailOnText, Rule::OppositeTrails, Rule::ArrowheadsMeet, Rule::HopTooShort];

    pub fn name(self) -> &'static str {
        match self {
            Rule::TextOutOfBox => "text out of its box",
            Rule::TextTooSmall => "text too small",
            Rule::TokenOnText => "token on a text",
            Rule::TokenOnArrow => "token on an arrowhead",
            Rule::TokenOnBox => "token on another actor's box",
            Rule::TrailOnText => "trail through a text",
            Rule::OppositeTrails => "opposite trails coincide",
            Rule::ArrowheadsMeet => "arrowheads meet",
            Rule::HopTooShort => "hop shorter than its token",
        }
    }
}

/// One failure: the rule and what broke it, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub rule: Rule,
    pub what: String,
}

fn v(rule: Rule, what: String) -> Violation {
    Violation { rule, what }
}

fn r(r: &Rect) -> String {
    format!("({:.0},{:.0} {:.0}×{:.0})", r.x, r.y, r.w, r.h)
}

/// Tolerance for touching, in drawing units.
const EPS: f64 = 0.75;

fn strictly_inside(inner: &Rect, outer: &Rect) -> bool {
    inner.x >= outer.x - EPS && inner.y >= outer.y - EPS && inner.right() <= outer.right() + EPS && inner.bottom() <= outer.bottom() + EPS
}

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a.x < b.right() - EPS && b.x < a.right() - EPS && a.y < b.bottom() - EPS && b.y < a.bottom() - EPS
}

/// Draws `f` at `vp` and checks it.
pub fn check_frame(s: &Scenario, layout: &Layout, f: &Frame, vp: Viewport) -> Vec<Violation> {
    let d = draw(s, layout, f, vp);
    let mut out = check_world(s, layout, f, &d);
    out.extend(check_legible(&d.texts(), &d.camera, vp));
    out
}

/// The rules that do not depend on the frame size (all but legibility),
/// on a drawing of `f`.
pub fn check_world(s: &Scenario, layout: &Layout, f: &Frame, d: &Drawing) -> Vec<Violation> {
    let at_rest = f.progress.fract() == 0.0;
    let mut out = check_drawing(d);
    if at_rest {
        if let Some(t) = &d.token {
            let st = s.steps.get(f.step);
            let ends: Vec<ActorId> = st.and_then(|st| st.hops.get(t.hop)).map_or(Vec::new(), |h| vec![h.from, h.to]);
            out.extend(check_token(s, layout, d, t, &ends, &super::drawing::step_actors(st)));
        }
    }
    out
}

/// Every text the camera shows is at least the frame's minimum size.
pub fn check_legible(texts: &[Text], cam: &Camera, vp: Viewport) -> Vec<Violation> {
    texts
        .iter()
        .filter(|t| cam.shows(&t.bounds()) && t.min_size() * cam.scale < vp.min_px - 1e-6)
        .map(|t| v(Rule::TextTooSmall, format!("{:?} shows at {:.1} px, under {} px", t.content(), t.min_size() * cam.scale, vp.min_px)))
        .collect()
}

/// The rules that hold at any moment: texts in their boxes, trails clear
/// of texts and of each other, hops long enough.
pub fn check_drawing(d: &Drawing) -> Vec<Violation> {
    let mut out = Vec::new();
    for t in &d.texts() {
        let b = t.bounds();
        if !strictly_inside(&b, &t.within) {
            out.push(v(Rule::TextOutOfBox, format!("{:?} {} leaves its box {}", t.content(), r(&b), r(&t.within))));
        }
    }
    let group_texts: Vec<&Text> = d.groups.iter().flat_map(|g| g.all_texts()).collect();
    for tr in &d.trails {
        for t in &group_texts {
            if let Some(p) = runs_through(&tr.points, &t.bounds()) {
                out.push(v(Rule::TrailOnText, format!("hop {} runs through {:?} at ({:.0},{:.0})", tr.hop + 1, t.content(), p.x, p.y)));
            }
        }
        let len = length(&tr.points);
        if len < super::layout::MIN_HOP.min(ARROW_LEN * 2.0 + 30.0) {
            out.push(v(Rule::HopTooShort, format!("hop {} is {len:.0} units long", tr.hop + 1)));
        }
    }
    for (i, a) in d.trails.iter().enumerate() {
        for b in &d.trails[i + 1..] {
            if let Some(run) = opposite_run(a, b) {
                out.push(v(Rule::OppositeTrails, format!("hops {} and {} share {run:.0} units going opposite ways", a.hop + 1, b.hop + 1)));
            }
            if let (Some(x), Some(y)) = (a.arrowhead(), b.arrowhead()) {
                if overlaps(&x, &y) && a.points.last() != b.points.first() {
                    out.push(v(Rule::ArrowheadsMeet, format!("hops {} and {} arrive at {} and {}", a.hop + 1, b.hop + 1, r(&x), r(&y))));
                }
            }
        }
    }
    if let Some(t) = &d.token {
        if let Some(tr) = d.trails.iter().find(|tr| tr.hop == t.hop) {
            let len = length(&tr.points);
            if len < t.pill.w + ARROW_LEN {
                out.push(v(Rule::HopTooShort, format!("hop {} is {len:.0} units long, its token {:.0}", tr.hop + 1, t.pill.w)));
            }
        }
    }
    out
}

/// A resting token: its pill covers nothing, and its card nothing the
/// reader follows (the step's actors, their names, the lit rows; see
/// `drawing::Obstacles`).
fn check_token(s: &Scenario, layout: &Layout, d: &Drawing, t: &Token, ends: &[ActorId], involved: &[ActorId]) -> Vec<Violation> {
    let mut out = Vec::new();
    let parts = [("pill", t.pill_rect()), ("card", t.card_rect())];
    let (guarded, _) = super::drawing::guarded_texts(&d.groups, involved);
    for tx in d.groups.iter().flat_map(|g| g.all_texts()) {
        for (name, p) in &parts {
            let counts = *name == "pill" || guarded.contains(&tx);
            if counts && overlaps(p, &tx.bounds()) {
                out.push(v(Rule::TokenOnText, format!("the token's {name} {} covers {:?}", r(p), tx.content())));
            }
        }
    }
    for tr in &d.trails {
        if let Some(a) = tr.arrowhead() {
            for (name, p) in &parts {
                if overlaps(p, &a) {
                    out.push(v(Rule::TokenOnArrow, format!("the token's {name} {} covers hop {}'s arrowhead {}", r(p), tr.hop + 1, r(&a))));
                }
            }
        }
    }
    let mut allowed: Vec<ActorId> = ends.to_vec();
    allowed.extend(ends.iter().filter_map(|e| s.actor(*e).and_then(|a| a.parent)));
    let mut boxes: Vec<(String, Rect)> = layout.boxes.iter().filter(|(id, _)| !allowed.contains(id)).map(|(id, b)| (s.actor(*id).map_or_else(String::new, |a| a.short.clone()), *b)).collect();
    for n in layout.nodes.iter().filter(|n| allowed.contains(&n.node) && !ends.contains(&n.node)) {
        boxes.push((format!("{}'s kube-proxy panel", s.actor(n.node).map_or("", |a| a.short.as_str())), n.panel));
    }
    boxes.extend(layout.groups.iter().filter(|g| !ends.iter().any(|e| g.members.contains(e))).map(|g| (g.label(), g.rect)));
    let idle = super::drawing::idle_boxes(layout, involved);
    for (name_b, b) in &boxes {
        for (name, p) in &parts {
            let counts = *name == "pill" || !idle.contains(b);
            if counts && overlaps(p, b) {
                out.push(v(Rule::TokenOnBox, format!("the token's {name} {} covers {name_b} {}", r(p), r(b))));
            }
        }
    }
    out
}

fn length(p: &[Point]) -> f64 {
    p.windows(2).map(|w| ((w[1].x - w[0].x).powi(2) + (w[1].y - w[0].y).powi(2)).sqrt()).sum()
}

/// Where a route runs through a text's box along its line (a horizontal
/// segment inside the text's height) or across it, if it does.
fn runs_through(path: &[Point], b: &Rect) -> Option<Point> {
    for w in path.windows(2) {
        let (a, c) = (w[0], w[1]);
        let horizontal = (a.y - c.y).abs() < 0.5;
        let (x0, x1) = (a.x.min(c.x), a.x.max(c.x));
        let (y0, y1) = (a.y.min(c.y), a.y.max(c.y));
        let inside_y = |y: f64| y > b.y + 1.0 && y < b.bottom() - 1.0;
        let inside_x = |x: f64| x > b.x + 1.0 && x < b.right() - 1.0;
        if horizontal && inside_y(a.y) && x1.min(b.right()) - x0.max(b.x) > 3.0 {
            return Some(pt_(x0.max(b.x), a.y));
        }
        if !horizontal && inside_x(a.x) && y1.min(b.bottom()) - y0.max(b.y) > 3.0 {
            return Some(pt_(a.x, y0.max(b.y)));
        }
    }
    None
}

fn pt_(x: f64, y: f64) -> Point {
    super::pt(x, y)
}

/// How long two trails run on one line in opposite directions, when they
/// do for 2 units or more.
fn opposite_run(a: &Trail, b: &Trail) -> Option<f64> {
    let run = super::drawing::opposite_run(&a.points, &b.points);
    (run >= 2.0).then_some(run)
}

/// Counts of violations by rule.
pub fn tally(vs: &[Violation]) -> Vec<(Rule, usize)> {
    Rule::ALL.iter().map(|r| (*r, vs.iter().filter(|v| v.rule == *r).count())).collect()
}

