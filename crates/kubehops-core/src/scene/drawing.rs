//! The picture as plain data: every box, every text with its size, every
//! trail, the token with its card, and the camera, for one moment of a
//! scenario at one frame size.
//!
//! The web canvas maps a [`Drawing`] to SVG element by element; export,
//! the transcript's pictures, the static first frame and the geometry
//! checks read the same drawing. Nothing is decided later: the words,
//! their sizes and their places are all here.
//!
//! The drawing is built in layers that change at different rates, so a
//! renderer can keep each in its own memo: [`groups`] (boxes and their
//! text: change with the view and the hop), [`trails`] (with the hop),
//! [`token`] (with every tick) and [`camera`] (with every tick).

use super::camera::{self, Camera, Viewport};
use super::layout::{Dims, Layout, NodeCard, Port};
use super::metrics;
use super::style::{hop_style, KindStyle};
use super::text::{balancer_lines, component_lines, pod_lines, Line, Role};
use super::{ease, point_along, pt, Frame, Point, Rect};
use crate::net::SockAddr;
use crate::scenarios::{Scenario, Step};
use crate::sim::{Actor, ActorId, ActorKind, BalancerView, Field, Hop, HopKind, Leg, NodeView, RuleSummary, View};

/// How a text is placed on its `x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    /// SVG's `text-anchor`.
    pub fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A run of text in one role; `class` adds a look (struck through, a
/// rewrite's colour) to the role's.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub text: String,
    pub role: Role,
    pub class: Option<&'static str>,
}

impl Span {
    pub fn new(text: impl Into<String>, role: Role) -> Span {
        Span { text: text.into(), role, class: None }
    }

    pub fn with(mut self, class: &'static str) -> Span {
        self.class = Some(class);
        self
    }

    pub fn width(&self) -> f64 {
        self.role.width(&self.text)
    }
}

/// One line of text at a baseline, and the box it must stay inside.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    pub x: f64,
    /// The baseline.
    pub y: f64,
    pub anchor: Anchor,
    pub spans: Vec<Span>,
    /// The box the text belongs to, which it must not leave.
    pub within: Rect,
}

impl Text {
    pub fn new(x: f64, y: f64, anchor: Anchor, spans: Vec<Span>, within: Rect) -> Text {
        Text { x, y, anchor, spans, within }
    }

    /// The largest size among its spans.
    pub fn size(&self) -> f64 {
        self.spans.iter().map(|s| s.role.size()).fold(0.0, f64::max)
    }

    /// The smallest size among its spans.
    pub fn min_size(&self) -> f64 {
        self.spans.iter().map(|s| s.role.size()).fold(f64::INFINITY, f64::min)
    }

    pub fn width(&self) -> f64 {
        self.spans.iter().map(Span::width).sum()
    }

    /// All of its text.
    pub fn content(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }

    /// The box its ink can take: from its start to its end, from the
    /// ascenders to the descenders.
    pub fn bounds(&self) -> Rect {
        let w = self.width();
        let x = match self.anchor {
            Anchor::Start => self.x,
            Anchor::Middle => self.x - w / 2.0,
            Anchor::End => self.x - w,
        };
        let s = self.size();
        Rect { x, y: self.y - metrics::ascent(s), w, h: metrics::ascent(s) + metrics::descent(s) }
    }

    /// The class of its first span's role, for a one-span text.
    pub fn class(&self) -> &'static str {
        self.spans.first().map_or("", |s| s.role.class())
    }

    /// Moved by (dx, dy).
    pub fn moved(mut self, dx: f64, dy: f64) -> Text {
        self.x += dx;
        self.y += dy;
        self.within = shift(self.within, dx, dy);
        self
    }
}

/// A rounded box.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    pub rect: Rect,
    pub rx: f64,
    pub class: String,
}

impl Shape {
    pub fn new(rect: Rect, rx: f64, class: impl Into<String>) -> Shape {
        Shape { rect, rx, class: class.into() }
    }
}

/// What a group stands for, so checks can tell an actor's box from a
/// decoration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    Zone,
    Actor(ActorId),
    /// A node's kube-proxy panel.
    Panel(ActorId),
    /// A group box of actors drawn without their own.
    Group,
    /// Part of another group (a rule row).
    Part,
}

/// An SVG group: its shapes, then its texts, then its child groups.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Stable across frames: the same thing has the same key.
    pub key: String,
    pub class: String,
    pub owner: Owner,
    /// A `data-` attribute (name without the prefix, value) for tests.
    pub data: Option<(&'static str, String)>,
    /// A tooltip (`<title>`).
    pub title: Option<String>,
    pub shapes: Vec<Shape>,
    pub texts: Vec<Text>,
    pub children: Vec<Group>,
}

impl Group {
    fn new(key: impl Into<String>, class: impl Into<String>, owner: Owner) -> Group {
        Group { key: key.into(), class: class.into(), owner, data: None, title: None, shapes: Vec::new(), texts: Vec::new(), children: Vec::new() }
    }

    /// Every text in it and its children.
    pub fn all_texts(&self) -> Vec<&Text> {
        let mut out: Vec<&Text> = self.texts.iter().collect();
        for c in &self.children {
            out.extend(c.all_texts());
        }
        out
    }

    /// Every group in it, itself first.
    pub fn all_groups(&self) -> Vec<&Group> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.all_groups());
        }
        out
    }
}

/// The arrowhead at a trail's end: its length along the trail and its width.
pub const ARROW_LEN: f64 = 13.0;
pub const ARROW_W: f64 = 12.0;

/// A finished hop (or the one in flight) as a line with an arrowhead.
#[derive(Clone, Debug, PartialEq)]
pub struct Trail {
    /// The hop's index in its step.
    pub hop: usize,
    pub points: Vec<Point>,
    pub style: KindStyle,
    pub back: bool,
    pub what_if: bool,
    pub current: bool,
}

impl Trail {
    /// Its classes: `kh-trail kh-request back current`.
    pub fn class(&self) -> String {
        let mut c = format!("kh-trail kh-{}", self.style.class);
        for (on, name) in [(self.back, " back"), (self.what_if, " whatif"), (self.current, " current")] {
            if on {
                c.push_str(name);
            }
        }
        c
    }

    /// The box its arrowhead covers.
    pub fn arrowhead(&self) -> Option<Rect> {
        arrowhead(&self.points)
    }
}

/// The box the arrowhead at the end of `path` covers.
pub fn arrowhead(path: &[Point]) -> Option<Rect> {
    let n = path.len();
    if n < 2 {
        return None;
    }
    let (a, b) = (path[n - 2], path[n - 1]);
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let len = (dx * dx + dy * dy).sqrt().max(1e-9);
    let tail = pt(b.x - dx / len * ARROW_LEN, b.y - dy / len * ARROW_LEN);
    let (x0, x1) = (b.x.min(tail.x), b.x.max(tail.x));
    let (y0, y1) = (b.y.min(tail.y), b.y.max(tail.y));
    let half = ARROW_W / 2.0;
    Some(if dx.abs() > dy.abs() { Rect { x: x0, y: b.y - half, w: x1 - x0, h: ARROW_W } } else { Rect { x: b.x - half, y: y0, w: ARROW_W, h: y1 - y0 } })
}

/// The packet (or message) in flight: a pill with its kind's label on
/// the route, and a card beside it with what the reader needs at this
/// hop (its addresses and payload, each rewrite with the old value struck
/// through).
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub hop: usize,
    /// Where the pill's centre is, on the route.
    pub at: Point,
    pub style: KindStyle,
    pub what_if: bool,
    pub pill: Pill,
    pub card: Card,
}

impl Token {
    /// The pill's box, in drawing coordinates.
    pub fn pill_rect(&self) -> Rect {
        Rect { x: self.at.x - self.pill.w / 2.0, y: self.at.y - self.pill.h / 2.0, w: self.pill.w, h: self.pill.h }
    }

    /// The card's box, in drawing coordinates.
    pub fn card_rect(&self) -> Rect {
        Rect { x: self.at.x + self.card.offset.x, y: self.at.y + self.card.offset.y, w: self.card.w, h: self.card.h }
    }

    /// The card's texts, in drawing coordinates.
    pub fn card_texts(&self) -> Vec<Text> {
        let r = self.card_rect();
        self.card.texts.iter().cloned().map(|t| t.moved(r.x, r.y)).collect()
    }

    /// Its classes: `kh-token kh-request whatif`.
    pub fn class(&self) -> String {
        format!("kh-token kh-{}{}", self.style.class, if self.what_if { " whatif" } else { "" })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pill {
    pub w: f64,
    pub h: f64,
    pub label: &'static str,
}

/// A token's card. Its texts are placed relative to its top-left corner,
/// which is `offset` from the pill's centre, so the card travels with the
/// pill without being rebuilt.
#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    pub offset: Point,
    pub w: f64,
    pub h: f64,
    pub texts: Vec<Text>,
    /// A look beyond the kind's: a failed answer (`bad`), an answer (`good`).
    pub tone: Option<&'static str>,
}

impl Card {
    /// A line from the card's nearest edge to the pill, relative to the
    /// pill's centre, when the card sits apart from it.
    pub fn leader(&self, pill: &Pill) -> Option<(Point, Point)> {
        let r = Rect { x: self.offset.x, y: self.offset.y, w: self.w, h: self.h };
        let near = pt(0.0_f64.clamp(r.x, r.right()), 0.0_f64.clamp(r.y, r.bottom()));
        let gap_x = (near.x.abs() - pill.w / 2.0).max(0.0);
        let gap_y = (near.y.abs() - pill.h / 2.0).max(0.0);
        (gap_x.max(gap_y) > 14.0).then_some((near, pt(0.0, 0.0)))
    }
}

/// Everything drawn at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawing {
    pub world: Rect,
    pub camera: Camera,
    pub groups: Vec<Group>,
    pub trails: Vec<Trail>,
    pub token: Option<Token>,
}

impl Drawing {
    /// Every text drawn, the token's included.
    pub fn texts(&self) -> Vec<Text> {
        let mut out: Vec<Text> = self.groups.iter().flat_map(|g| g.all_texts()).cloned().collect();
        if let Some(t) = &self.token {
            out.extend(t.card_texts());
        }
        out
    }
}

/// The whole drawing of (`frame`) at this frame size.
pub fn draw(s: &Scenario, layout: &Layout, frame: &Frame, vp: Viewport) -> Drawing {
    let groups = groups(s, layout, frame);
    let trails = trails(s, layout, frame);
    let token = token(s, layout, frame);
    let camera = camera(s, layout, frame, vp);
    Drawing { world: layout.world(), camera, groups, trails, token }
}

// ---------------------------------------------------------------- ports

/// The hop a packet continues on after hop `i`: the next hop of its
/// connection leaving the actor hop `i` reached.
fn next_of(st: &Step, i: usize) -> Option<&Hop> {
    let h = st.hops.get(i)?;
    st.hops[i + 1..].iter().find(|n| n.conn.is_some() && n.conn == h.conn && n.from == h.to && n.leg == h.leg)
}

/// Whether a node's rules or conntrack act on the packet of `h`, which
/// leaves `node`: it rewrites the packet there, or a rule that kube-proxy
/// wrote for a Service matched. Otherwise the node only routes it.
fn decided_here(h: &Hop, node: ActorId) -> bool {
    match &h.packet {
        Some(p) if p.decided_on == Some(node) => !p.rewrites.is_empty() || p.matched.iter().any(|m| m.purpose.is_some()) || h.dropped.is_some(),
        _ => h.packet.is_none(),
    }
}

/// The ports hop `i` of a step meets its ends at: a node's panel where
/// its rules act (the row of the address the packet aims at, when the
/// panel shows one), its junction where it only routes.
pub fn ports(st: &Step, layout: &Layout, i: usize) -> (Port, Port) {
    let Some(h) = st.hops.get(i) else { return (Port::Panel, Port::Panel) };
    let view = st.views.get(i + 1).or(st.views.last());
    let from = match layout.node_card(h.from) {
        Some(_) if h.packet.is_some() && !decided_here(h, h.from) => Port::Route,
        _ => Port::Panel,
    };
    let to = match layout.node_card(h.to) {
        Some(card) if h.packet.is_some() => match next_of(st, i) {
            Some(n) if !decided_here(n, h.to) => Port::Route,
            next => {
                let dst = h.packet.as_ref().map(|p| p.after.dst);
                let node = view.and_then(|v| v.node(h.to));
                // The rows as the panel shows them when the node's rules act.
                let hit: Vec<usize> = next.and_then(|n| n.packet.as_ref()).filter(|p| p.decided_on == Some(h.to)).map(|p| p.matched.iter().filter_map(|m| m.card_line()).collect()).unwrap_or_default();
                dst.and_then(|d| node.and_then(|n| row_of_address(n, d, card, &hit))).map_or(Port::Panel, Port::Row)
            }
        },
        _ => Port::Panel,
    };
    (from, to)
}

/// The row of a node's panel that shows the virtual address `dst`.
fn row_of_address(n: &NodeView, dst: SockAddr, card: &NodeCard, hit: &[usize]) -> Option<usize> {
    let rows = panel_rows(Some(n), None, hit);
    let room = card.rows();
    let (rows, shown) = if rows.len() > room { (lit_first(rows), room - 1) } else { let k = rows.len(); (rows, k) };
    let i = rows.iter().position(|r| r.aims == Some(Aim::Addr(dst)) || r.aims == Some(Aim::Port(dst.port)))?;
    (i < shown).then_some(i)
}

/// The route hop `i` is drawn on.
pub fn hop_path(st: &Step, layout: &Layout, i: usize) -> Vec<Point> {
    step_paths(st, layout).into_iter().nth(i).unwrap_or_default()
}

/// The routes of every hop of a step. Where two arrive at the same place
/// on a box (their arrowheads would meet), the later one is moved along
/// the edge it arrives at, its last segment with it, until the two
/// arrowheads are apart; identical routes (a retry, a second query) stay
/// identical and are drawn once.
pub fn step_paths(st: &Step, layout: &Layout) -> Vec<Vec<Point>> {
    let mut paths: Vec<Vec<Point>> = Vec::with_capacity(st.hops.len());
    // Each hop's route before it was moved aside: a hop whose route is an
    // earlier one's (a retry, a second query, the later packets of a
    // connection followed packet by packet) takes that hop's final path.
    let mut routes: Vec<(ActorId, ActorId, Vec<Point>)> = Vec::with_capacity(st.hops.len());
    for (i, h) in st.hops.iter().enumerate() {
        let (fp, tp) = ports(st, layout, i);
        let mut p = layout.hop_route_at(h, fp, tp);
        if let Some(k) = routes.iter().position(|(f, t, r)| *f == h.from && *t == h.to && *r == p) {
            routes.push((h.from, h.to, p));
            paths.push(paths[k].clone());
            continue;
        }
        routes.push((h.from, h.to, p.clone()));
        if !paths.contains(&p) {
            separate_shared(&mut p, &paths, layout);
        }
        let target = layout.target_at(h.to, tp);
        let source = layout.target_at(h.from, fp);
        if let (Some(t), Some(src), true) = (target, source, p.len() >= 2 && h.from != h.to) {
            let clash = |q: &[Point]| paths.iter().any(|o: &Vec<Point>| o.as_slice() != q && o.len() >= 2 && (arrowhead(o).zip(arrowhead(q)).is_some_and(|(a, b)| a.intersects(&b)) || opposite_run(o, q) >= 2.0));
            // An arrowhead's width at a time first, then finer moves
            // (on a small box, half a width can be all the room there is).
            let step = ARROW_W + 2.0;
            for d in [step, -step, 2.0 * step, -2.0 * step, 3.0 * step, -3.0 * step, 6.0, -6.0, 8.0, -8.0, 10.0, -10.0, 20.0, -20.0] {
                if !clash(&p) {
                    break;
                }
                if let Some(q) = nudge_end(&p, d, &t, &src) {
                    if !clash(&q) {
                        p = q;
                        break;
                    }
                }
            }
            // Still on another route where it leaves (a reply leaving the
            // row a request came in at): its first segment moves instead.
            for d in [6.0, -6.0, 10.0, -10.0, step, -step] {
                if !clash(&p) {
                    break;
                }
                let back: Vec<Point> = p.iter().rev().copied().collect();
                if let Some(mut q) = nudge_end(&back, d, &src, &t) {
                    q.reverse();
                    if !clash(&q) {
                        p = q;
                        break;
                    }
                }
            }
        }
        paths.push(p);
    }
    paths
}

/// How far a route's inner segments move aside when they would run on
/// another route's line.
const LANE_STEP: f64 = 7.0;

/// Moves each inner segment of `p` (not the first or last, which meet
/// boxes) aside, a few units at a time, while it runs on a segment of one
/// of `others` for more than a short stretch, as long as it then crosses
/// no box and stays in the drawing: routes that share a gutter run side by
/// side instead of on top of each other.
fn separate_shared(p: &mut [Point], others: &[Vec<Point>], layout: &Layout) {
    let n = p.len();
    if n < 4 {
        return;
    }
    let world = layout.world();
    let runs_on = |a: Point, b: Point| others.iter().any(|o| o.windows(2).any(|w| shared(a, b, w[0], w[1]) > 12.0));
    let (first, last) = (p[0], p[n - 1]);
    let ends_in = |r: &Rect| r.contains(first) || r.contains(last);
    for j in 1..n - 2 {
        if !runs_on(p[j], p[j + 1]) {
            continue;
        }
        let vertical = (p[j].x - p[j + 1].x).abs() < 0.5;
        // Whole lane steps first; in a crowded gutter, half steps and
        // farther ones.
        for k in [1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 1.5, -1.5, 2.5, -2.5, 4.0, -4.0] {
            let d = k * LANE_STEP;
            let mut q = p.to_vec();
            if vertical {
                q[j].x += d;
                q[j + 1].x += d;
            } else {
                q[j].y += d;
                q[j + 1].y += d;
            }
            let touched = [(q[j - 1], q[j]), (q[j], q[j + 1]), (q[j + 1], q[j + 2])];
            // The boxes the route ends in (a node's card around its panel) do not count.
            let clear = touched.iter().all(|(a, b)| world.contains(*a) && world.contains(*b) && !layout.boxes.iter().any(|(_, r)| !ends_in(r) && r.crossed_by(*a, *b)) && !layout.groups.iter().any(|g| g.rect.crossed_by(*a, *b)));
            if clear && !runs_on(q[j], q[j + 1]) {
                p.copy_from_slice(&q);
                break;
            }
        }
    }
}

/// How long two routes run on one line in opposite directions.
pub fn opposite_run(a: &[Point], b: &[Point]) -> f64 {
    let mut longest: f64 = 0.0;
    for s in a.windows(2) {
        for t in b.windows(2) {
            let (da, db) = (direction(s[0], s[1]), direction(t[0], t[1]));
            if da.0 * db.0 + da.1 * db.1 > -0.5 {
                continue;
            }
            longest = longest.max(shared(s[0], s[1], t[0], t[1]));
        }
    }
    longest
}

fn direction(a: Point, b: Point) -> (f64, f64) {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let l = (dx * dx + dy * dy).sqrt().max(1e-9);
    (dx / l, dy / l)
}

/// How long two axis-parallel segments lie on each other (within 1.5 units).
fn shared(a0: Point, a1: Point, b0: Point, b1: Point) -> f64 {
    let span = |p0: f64, p1: f64, q0: f64, q1: f64| (p0.max(p1).min(q0.max(q1)) - p0.min(p1).max(q0.min(q1))).max(0.0);
    let horiz = |p: Point, q: Point| (p.y - q.y).abs() < 0.5;
    let vert = |p: Point, q: Point| (p.x - q.x).abs() < 0.5;
    if horiz(a0, a1) && horiz(b0, b1) && (a0.y - b0.y).abs() < 1.5 {
        span(a0.x, a1.x, b0.x, b1.x)
    } else if vert(a0, a1) && vert(b0, b1) && (a0.x - b0.x).abs() < 1.5 {
        span(a0.y, a1.y, b0.y, b1.y)
    } else {
        0.0
    }
}

/// `path` with its end moved by `d` along the edge of `target` it
/// arrives at (its last segment moves with it, and a straight route's
/// start slides along the edge of `source`), if both ends stay on their
/// edges.
fn nudge_end(path: &[Point], d: f64, target: &Rect, source: &Rect) -> Option<Vec<Point>> {
    let n = path.len();
    let (a, b) = (path[n - 2], path[n - 1]);
    let horizontal = (a.y - b.y).abs() < 0.5;
    let mut q = path.to_vec();
    let on = |v: f64, lo: f64, hi: f64| v >= lo + 4.0 && v <= hi - 4.0;
    if horizontal {
        let y = b.y + d;
        if !on(y, target.y, target.bottom()) || (n == 2 && !on(y, source.y, source.bottom())) {
            return None;
        }
        q[n - 1].y = y;
        q[n - 2].y = y;
    } else {
        let x = b.x + d;
        if !on(x, target.x, target.right()) || (n == 2 && !on(x, source.x, source.right())) {
            return None;
        }
        q[n - 1].x = x;
        q[n - 2].x = x;
    }
    Some(q)
}

// ---------------------------------------------------------------- groups

fn shift(r: Rect, dx: f64, dy: f64) -> Rect {
    Rect { x: r.x + dx, y: r.y + dy, ..r }
}

/// Whether `id` is an end of the hop on screen.
fn is_active(st: Option<&Step>, f: &Frame, id: ActorId) -> bool {
    f.current.and_then(|i| st.and_then(|s| s.hops.get(i))).is_some_and(|h| h.from == id || h.to == id)
}

/// The boxes and their texts at `frame`: zones, actors, node cards with
/// their panels and Pods, group boxes.
pub fn groups(s: &Scenario, layout: &Layout, f: &Frame) -> Vec<Group> {
    let st = s.steps.get(f.step);
    let view = st.and_then(|st| st.views.get(f.view));
    let mut out: Vec<Group> = layout.columns.iter().map(|c| zone(c, layout.dims())).collect();
    for a in s.actors.iter().filter(|a| a.parent.is_none()) {
        let active = is_active(st, f, a.id);
        match a.kind {
            ActorKind::Node => out.extend(node_card(s, layout, f, a, active)),
            ActorKind::LoadBalancer => out.extend(balancer(layout, a, view.map_or(BalancerView::Absent, |v| v.balancer(a.id)), active)),
            _ => out.extend(component(layout, a, active)),
        }
    }
    out.extend(layout.groups.iter().filter(|g| g.node.is_none()).map(|g| group_box(s, g)));
    out
}

fn zone(c: &super::layout::Column, d: &Dims) -> Group {
    let r = c.rect;
    let mut g = Group::new(format!("zone-{}", c.zone.label()), "kh-zone", Owner::Zone);
    g.shapes.push(Shape::new(r, 14.0, ""));
    g.texts.push(Text::new(r.x + d.zone_pad, r.y + d.zone_baseline, Anchor::Start, vec![Span::new(c.zone.label(), Role::Zone)], r));
    g
}

/// Lines stacked from the top of `r`, centred.
fn stack(lines: &[Line], r: Rect) -> Vec<Text> {
    let mut y = r.y;
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        y += if i == 0 { metrics::ascent(l.role.size()) } else { l.role.leading() };
        out.push(Text::new(r.center().x, y, Anchor::Middle, vec![Span::new(l.text.clone(), l.role)], r));
    }
    out
}

/// Lines centred in `r` as a block.
fn stack_centred(lines: &[Line], r: Rect) -> Vec<Text> {
    let h = super::text::stack_height(lines);
    let top = r.y + (r.h - h) / 2.0;
    stack(lines, Rect { y: top, ..r }).into_iter().map(|t| Text { within: r, ..t }).collect()
}

/// Laptop, hosts, the API server and controllers: a labelled box.
fn component(layout: &Layout, a: &Actor, active: bool) -> Option<Group> {
    let r = layout.rect(a.id)?;
    let mut g = Group::new(format!("actor-{}", a.id.0), format!("kh-actor kh-kind-{}{}", a.kind.css_name(), if active { " active" } else { "" }), Owner::Actor(a.id));
    g.data = Some(("actor", a.short.clone()));
    g.title = Some(a.label.clone());
    g.shapes.push(Shape::new(r, 10.0, ""));
    let lines = component_lines(a, super::layout::label_room(r.w, layout.dims()));
    g.texts = stack_centred(&lines, r);
    Some(g)
}

fn balancer(layout: &Layout, a: &Actor, state: BalancerView, active: bool) -> Option<Group> {
    let r = layout.rect(a.id)?;
    let st = match state {
        BalancerView::Absent => " absent",
        BalancerView::Provisioning => " provisioning",
        BalancerView::Active { .. } => "",
    };
    let mut g = Group::new(format!("actor-{}", a.id.0), format!("kh-actor kh-lb{st}{}", if active { " active" } else { "" }), Owner::Actor(a.id));
    g.data = Some(("actor", a.short.clone()));
    g.title = Some(a.label.clone());
    g.shapes.push(Shape::new(r, 10.0, ""));
    g.texts = stack_centred(&balancer_lines(a, state), r);
    Some(g)
}

/// A group box: the Pods of a node, or the nodes, drawn without a box
/// of their own ("+37 Pods", "+42 nodes"); its title lists who is in it.
fn group_box(s: &Scenario, gb: &super::GroupBox) -> Group {
    let r = gb.rect;
    let label = gb.label();
    let names: Vec<String> = gb.members.iter().filter_map(|m| s.actor(*m)).filter(|a| a.kind == gb.kind || (gb.kind != ActorKind::Node && a.kind.is_pod())).take(40).map(|a| a.label.clone()).collect();
    let more = gb.members.len() > names.len() && gb.kind != ActorKind::Node;
    let mut g = Group::new(format!("group-{label}-{}", gb.node.map_or(0, |n| n.0)), "kh-group", Owner::Group);
    g.data = Some(("group", label.clone()));
    g.title = Some(format!("{label}: {}{}", names.join(", "), if more { ", …" } else { "" }));
    g.shapes.push(Shape::new(r, 8.0, ""));
    let mut lines = vec![Line::new(label, Role::Label)];
    if r.h >= 52.0 {
        lines.push(Line::new("not in this story", Role::Muted));
    }
    g.texts = stack_centred(&lines, r);
    g
}

fn node_card(s: &Scenario, layout: &Layout, f: &Frame, node: &Actor, active: bool) -> Option<Group> {
    let card = *layout.node_card(node.id)?;
    let st = s.steps.get(f.step);
    let c = card.card;
    let mut g = Group::new(format!("node-{}", node.id.0), format!("kh-node{}", if active { " active" } else { "" }), Owner::Actor(node.id));
    g.data = Some(("node", node.short.clone()));
    g.shapes.push(Shape::new(c, 12.0, "kh-node-card"));
    let d = layout.dims();
    let pad = d.box_pad + 2.0;
    if d.head_over_pods {
        let x = card.lane_x + super::layout::HEAD_INSET;
        g.texts.push(Text::new(x, c.y + d.node_baseline, Anchor::Start, vec![Span::new(node.short.clone(), Role::NodeName)], c));
        g.texts.push(Text::new(x, c.y + d.node_baseline + Role::Mono.leading() + 1.0, Anchor::Start, vec![Span::new(node.sublabel.clone(), Role::Mono)], c));
    } else {
        g.texts.push(Text::new(c.x + pad, c.y + d.node_baseline, Anchor::Start, vec![Span::new(node.short.clone(), Role::NodeName)], c));
        g.texts.push(Text::new(c.right() - pad, c.y + d.node_baseline, Anchor::End, vec![Span::new(node.sublabel.clone(), Role::Mono)], c));
    }
    g.children.push(panel(s, f, &card));
    if st.is_some_and(|st| routes_through(st, layout, f, node.id)) {
        let mut junction = Group::new(format!("junction-{}", node.id.0), "kh-junction", Owner::Part);
        junction.title = Some(format!("{} routes the packet: no rule of its kube-proxy rewrites it", node.short));
        let j = card.junction();
        junction.shapes.push(Shape::new(j, j.h / 2.0, ""));
        g.children.push(junction);
    }
    let pods: Vec<&Actor> = s.actors.iter().filter(|a| a.parent == Some(node.id) && layout.has_box(a.id)).collect();
    let view = st.and_then(|st| st.views.get(f.view));
    if pods.is_empty() {
        let text = match view.and_then(|v| v.services.first()) {
            Some(svc) => format!("no {} Pod", svc.name),
            None => "no Pods".to_string(),
        };
        let mut e = Group::new(format!("nopods-{}", node.id.0), "kh-pod empty", Owner::Part);
        e.shapes.push(Shape::new(card.pods, 8.0, ""));
        e.texts = stack_centred(&[Line::new(text, Role::Muted)], card.pods);
        g.children.push(e);
    }
    for p in pods {
        let ready = view.is_none_or(|v| !v.not_ready.contains(&p.id));
        g.children.extend(pod_box(layout, p, ready, is_active(st, f, p.id)));
    }
    g.children.extend(layout.groups.iter().filter(|gb| gb.node == Some(node.id)).map(|gb| group_box(s, gb)));
    Some(g)
}

/// Whether a hop of the step up to the one on screen passes `node`'s
/// junction (the node only routes its packet).
fn routes_through(st: &Step, layout: &Layout, f: &Frame, node: ActorId) -> bool {
    let upto = f.current.map_or(0, |c| c + 1);
    st.hops.iter().enumerate().take(upto).any(|(i, h)| {
        let (fp, tp) = ports(st, layout, i);
        (h.from == node && fp == Port::Route) || (h.to == node && tp == Port::Route)
    })
}

fn pod_box(layout: &Layout, p: &Actor, ready: bool, active: bool) -> Option<Group> {
    let r = layout.rect(p.id)?;
    let dns = p.kind == ActorKind::CoreDns;
    let class = format!("kh-pod{}{}{}", if active { " active" } else { "" }, if ready { "" } else { " notready" }, if dns { " coredns" } else { "" });
    let mut g = Group::new(format!("pod-{}", p.id.0), class, Owner::Actor(p.id));
    g.data = Some(("pod", p.short.clone()));
    g.title = Some(format!("Pod {}{}", p.label, if ready { "" } else { ": not Ready" }));
    g.shapes.push(Shape::new(r, 8.0, ""));
    g.texts = stack_centred(&pod_lines(p, ready, layout.detail), r);
    Some(g)
}

/// What a row of a kube-proxy panel aims at, for the routes that meet it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aim {
    /// A virtual address: cluster IP, balancer IP, external IP.
    Addr(SockAddr),
    /// A node port, on every address of the node.
    Port(u16),
}

/// One row of a kube-proxy panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub spans: Vec<Span>,
    /// A virtual address of the Service (drawn dashed: it exists only as rules).
    pub aims: Option<Aim>,
    /// The rule lines it stands for.
    pub lines: Vec<usize>,
    pub hit: bool,
    pub added: bool,
    pub removed: bool,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A summary's row: a virtual address the rules catch, or what they do.
fn summary_row(r: &RuleSummary) -> Row {
    let vip = |addr: String, what: &str| vec![Span::new(addr, Role::Rule), Span::new(format!("  {what}"), Role::Muted)];
    let (spans, aims) = match r {
        RuleSummary::ClusterIp { addr, .. } => (vip(addr.to_string(), "cluster IP"), Some(Aim::Addr(*addr))),
        RuleSummary::NodePort { port, .. } => (vip(format!(":{port}"), "node port"), Some(Aim::Port(*port))),
        RuleSummary::LoadBalancerIp { addr, .. } => (vip(addr.to_string(), "balancer IP"), Some(Aim::Addr(*addr))),
        RuleSummary::ExternalIp { addr, .. } => (vip(addr.to_string(), "external IP"), Some(Aim::Addr(*addr))),
        RuleSummary::Endpoints { targets, .. } => {
            let text = match targets.len() {
                0 => "no endpoints".to_string(),
                1 => "DNAT to its 1 Pod".to_string(),
                n => format!("DNAT to 1 of {}, at random", plural(n, "Pod", "Pods")),
            };
            (vec![Span::new(text, Role::Muted)], None)
        }
        RuleSummary::Reject { addr, .. } => (vec![Span::new(addr.to_string(), Role::Rule), Span::new("  REJECT", Role::Muted)], None),
    };
    Row { spans, aims, lines: r.lines().to_vec(), hit: false, added: false, removed: false }
}

/// A panel's rows in a view: each summary of the node's rules, those the
/// current hop matched marked hit, and, when `before` is given (the view
/// before a hop that changed the rules), the rows added and removed.
pub fn panel_rows(now: Option<&NodeView>, before: Option<&NodeView>, hit_lines: &[usize]) -> Vec<Row> {
    let now_rules: &[RuleSummary] = now.map_or(&[], |n| n.rules.as_slice());
    let mut rows: Vec<Row> = now_rules
        .iter()
        .map(|r| {
            let mut row = summary_row(r);
            row.hit = r.lines().iter().any(|l| hit_lines.contains(l));
            row.added = before.is_some_and(|b| !b.rules.iter().any(|x| same_summary(x, r)));
            row
        })
        .collect();
    if let Some(b) = before {
        for r in b.rules.iter().filter(|r| !now_rules.iter().any(|x| same_summary(x, r))) {
            let mut row = summary_row(r);
            row.removed = true;
            rows.push(row);
        }
    }
    rows
}

/// Two summaries stand for the same rule whatever their line numbers.
fn same_summary(a: &RuleSummary, b: &RuleSummary) -> bool {
    use RuleSummary::*;
    match (a, b) {
        (ClusterIp { addr: x, .. }, ClusterIp { addr: y, .. }) | (LoadBalancerIp { addr: x, .. }, LoadBalancerIp { addr: y, .. }) | (ExternalIp { addr: x, .. }, ExternalIp { addr: y, .. }) | (Reject { addr: x, .. }, Reject { addr: y, .. }) => x == y,
        (NodePort { port: x, .. }, NodePort { port: y, .. }) => x == y,
        (Endpoints { targets: x, .. }, Endpoints { targets: y, .. }) => x == y,
        _ => false,
    }
}

/// The view before the hop on screen, when that hop is a control-plane
/// message that reached `node` (kube-proxy rewrote its rules).
fn before_update<'a>(st: Option<&'a Step>, f: &Frame, node: ActorId) -> Option<&'a NodeView> {
    let st = st?;
    let i = f.current?;
    let h = st.hops.get(i)?;
    (h.kind == HopKind::ControlPlane && h.to == node && f.view == i + 1).then(|| st.views.get(i).and_then(|v| v.node(node))).flatten()
}

fn panel(s: &Scenario, f: &Frame, card: &NodeCard) -> Group {
    let id = card.node;
    let st = s.steps.get(f.step);
    let view: Option<&View> = st.and_then(|st| st.views.get(f.view));
    let now = view.and_then(|v| v.node(id));
    let hit: Vec<usize> = f
        .current
        .and_then(|i| st.and_then(|st| st.hops.get(i)))
        .and_then(|h| h.packet.as_ref())
        .filter(|p| p.decided_on == Some(id))
        .map(|p| p.matched.iter().filter_map(|m| m.card_line()).collect())
        .unwrap_or_default();
    let before = before_update(st, f, id);
    let rows = panel_rows(now, before, &hit);
    let p = card.panel;
    let mut g = Group::new(format!("panel-{}", id.0), format!("kh-proxy{}", if before.is_some() { " updated" } else { "" }), Owner::Panel(id));
    g.shapes.push(Shape::new(p, 8.0, ""));
    // The node's rules, not a stop of their own: kube-proxy writes them and
    // the kernel applies them to the packet as it crosses the node.
    let mode = s.params.proxy_mode().as_str();
    g.title = Some(format!("{}'s {mode} rules: kube-proxy writes them, the node's kernel applies them to each packet", s.actor(id).map_or("The node", |a| a.short.as_str())));
    let d = card.detail.dims();
    g.texts.push(Text::new(p.x + 10.0, p.y + d.panel_baseline, Anchor::Start, vec![Span::new(format!("{mode} rules, by kube-proxy"), Role::PanelTitle)], p));
    if rows.is_empty() {
        let inner = Rect { x: p.x + 10.0, w: p.w - 20.0, ..p };
        let mut y = p.y + d.panel_title + d.row_baseline;
        for line in no_rules(view, now).iter().flat_map(|t| super::text::wrap(t, Role::Muted, inner.w)) {
            g.texts.push(Text::new(inner.x, y, Anchor::Start, vec![Span::new(line, Role::Muted)], p));
            y += Role::Muted.leading();
        }
        return g;
    }
    let room = card.rows();
    let shown = if rows.len() > room { room - 1 } else { rows.len() };
    // Where not every row fits, the rows the hop on screen matched (and
    // those it changed) come first, so the lit rule is always on screen.
    let rows = if rows.len() > room { lit_first(rows) } else { rows };
    for (i, row) in rows.iter().take(shown).enumerate() {
        g.children.push(row_group(id, i, row, card.row(i), d.row_baseline));
    }
    if rows.len() > shown {
        let more = rows.len() - shown;
        let r = card.row(shown);
        let mut m = Group::new(format!("row-{}-more", id.0), "kh-rule more", Owner::Part);
        m.texts.push(Text::new(r.x + 6.0, r.y + d.row_baseline, Anchor::Start, vec![Span::new(format!("+{more} more in the Rules panel"), Role::Muted)], r));
        g.children.push(m);
    }
    g
}

/// The rows that are lit (hit, added, removed) first, each group in its
/// own order.
fn lit_first(rows: Vec<Row>) -> Vec<Row> {
    let (mut lit, rest): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.hit || r.added || r.removed);
    lit.extend(rest);
    lit
}

/// Why a panel shows no rule: its node's rules are not computed yet, or
/// the Service in focus has no virtual address (headless, ExternalName),
/// or kube-proxy writes nothing for it here.
fn no_rules(view: Option<&View>, node: Option<&NodeView>) -> Vec<String> {
    use crate::sim::ServiceShape;
    if node.is_some_and(|n| !n.synced) {
        return vec!["rules not computed yet: no packet has reached this node".into()];
    }
    let services = view.map_or(&[][..], |v| v.services.as_slice());
    if services.is_empty() {
        return vec!["no rules".into()];
    }
    services
        .iter()
        .map(|s| match &s.shape {
            ServiceShape::Headless => format!("no rules for {}: headless, no virtual IP", s.name),
            ServiceShape::ExternalName(to) => format!("no rules for {}: only a DNS name for {to}", s.name),
            ServiceShape::Virtual => format!("no rules for {}", s.name),
        })
        .collect()
}

fn row_group(node: ActorId, i: usize, row: &Row, r: Rect, baseline: f64) -> Group {
    let mut class = String::from("kh-rule");
    for (on, name) in [(row.hit, " hit"), (row.added, " added"), (row.removed, " removed"), (row.aims.is_some(), " vip")] {
        if on {
            class.push_str(name);
        }
    }
    let mut g = Group::new(format!("row-{}-{i}", node.0), class, Owner::Part);
    if row.aims.is_some() {
        g.title = Some("A virtual address: no machine has it; it exists only as kube-proxy's rules".into());
    }
    g.shapes.push(Shape::new(r, 4.0, ""));
    let mark = match (row.hit, row.added, row.removed) {
        (_, _, true) => "− ",
        (_, true, _) => "+ ",
        (true, _, _) => "▶ ",
        _ => "",
    };
    let mut spans = Vec::new();
    if !mark.is_empty() {
        spans.push(Span::new(mark, Role::Rule));
    }
    spans.extend(row.spans.iter().cloned().map(|s| if row.removed { s.with("kh-struck") } else { s }));
    // Cut to the row, keeping the address whole.
    let room = r.w - 12.0;
    let mut used = 0.0;
    let mut fitted = Vec::new();
    for sp in spans {
        let w = sp.width();
        if used + w <= room {
            used += w;
            fitted.push(sp);
        } else {
            let cut = metrics::fit(&sp.text, sp.role.size(), sp.role.face(), room - used);
            if cut.chars().count() > 1 {
                fitted.push(Span { text: cut, ..sp });
            }
            break;
        }
    }
    g.texts.push(Text::new(r.x + 6.0, r.y + baseline, Anchor::Start, fitted, r));
    g
}

// ---------------------------------------------------------------- trails

/// The finished hops of the step on screen and the hop in flight. A hop
/// that takes exactly the path of a later one (a second query of the
/// search path, a retry) is drawn once, as the later one.
pub fn trails(s: &Scenario, layout: &Layout, f: &Frame) -> Vec<Trail> {
    let Some(st) = s.steps.get(f.step) else { return Vec::new() };
    let upto = f.current.map_or(0, |c| c + 1);
    let paths = step_paths(st, layout);
    let all: Vec<Trail> = st
        .hops
        .iter()
        .zip(paths)
        .enumerate()
        .take(upto)
        .filter(|(_, (h, _))| h.from != h.to)
        .map(|(i, (h, points))| Trail { hop: i, points, style: hop_style(h), back: h.leg == Leg::Back, what_if: h.what_if, current: Some(i) == f.current })
        .collect();
    all.iter().enumerate().filter(|(i, t)| !all[i + 1..].iter().any(|u| u.points == t.points)).map(|(_, t)| t.clone()).collect()
}

// ---------------------------------------------------------------- token

const PILL_H: f64 = 24.0;
const CARD_PAD: f64 = 9.0;
const CARD_MAX_W: f64 = 280.0;
/// How much farther than a place on idle things a clear place for a
/// card may be and still be chosen.
const NEAR: f64 = 160.0;

fn pill(style: KindStyle, dropped: bool) -> Pill {
    let label = if dropped { "✕ DROP" } else { style.label };
    Pill { w: (Role::CardHead.width(label) + 18.0).ceil(), h: PILL_H, label }
}

/// A rewrite's tag on the card and the class that colours it.
fn tag(kind: crate::sim::RewriteKind) -> (&'static str, &'static str) {
    use crate::sim::RewriteKind::*;
    let class = match kind {
        Dnat => "kh-rw-dnat",
        Snat => "kh-rw-snat",
        UnDnat | UnSnat => "kh-rw-undo",
        Balancer => "kh-rw-lb",
    };
    (super::transcript::rewrite_tag(kind), class)
}

/// A short phrase for why a packet went no further.
fn drop_phrase(d: &crate::sim::DropReason) -> String {
    use crate::sim::DropReason::*;
    match d {
        NoRoute { dst, .. } => format!("no route to {dst}"),
        Filtered { rejected: true, .. } => "rejected by a rule".into(),
        Filtered { .. } => "dropped by a rule".into(),
        Refused { port, .. } => format!("refused: nothing on :{port}"),
        NoListener { dst } => format!("no listener on {dst}"),
        NoTargets => "no healthy target".into(),
        Unresolved { .. } => "the name does not resolve".into(),
        TooManyHops => "caught in a loop".into(),
        NoNeighbour { ip, .. } => format!("no ARP answer for {ip}"),
        ReplyFromWrongSource { got, .. } => format!("answer from {got}: unexpected"),
    }
}

/// The lines of a hop's card and its tone.
fn card_lines(h: &Hop, style: KindStyle) -> (Vec<Vec<Span>>, Option<&'static str>) {
    use crate::sim::Payload;
    let mut lines: Vec<Vec<Span>> = Vec::new();
    let mut tone = None;
    let head_kind = if h.dropped.is_some() { "✕ DROP".to_string() } else { style.label.to_string() };
    let what_if = if h.what_if { "WHAT IF · " } else { "" };
    if let Some(a) = &h.arp {
        lines.push(vec![Span::new(format!("{what_if}{head_kind} · {}", a.iface), Role::CardHead)]);
        let text = match a.op {
            crate::sim::ArpOp::Request => format!("who-has {}?", a.target_ip),
            crate::sim::ArpOp::Reply => format!("{} is-at", a.sender_ip),
        };
        lines.push(vec![Span::new(text, Role::CardLine)]);
        if a.op == crate::sim::ArpOp::Reply {
            lines.push(vec![Span::new(a.sender_mac.to_string(), Role::CardLine)]);
        }
        return (lines, tone);
    }
    let Some(p) = &h.packet else {
        lines.push(vec![Span::new(format!("{what_if}{head_kind}"), Role::CardHead)]);
        lines.push(vec![Span::new(h.caption.clone(), Role::Muted)]);
        if let Some(d) = &h.dropped {
            lines.push(vec![Span::new(drop_phrase(d), Role::Muted).with("kh-card-bad")]);
            tone = Some("bad");
        }
        return (lines, tone);
    };
    // A connection followed packet by packet: the segment's name after
    // the protocol (a data segment's payload line says what it carries).
    let flags = p.segment.filter(|s| !s.data).map_or(String::new(), |s| format!(" {}", s.name()));
    lines.push(vec![Span::new(format!("{what_if}{head_kind} · {}{flags}", p.after.proto.api_name()), Role::CardHead)]);
    if let Some(pl) = &p.payload {
        let (text, t) = match pl {
            Payload::DnsQuery { name, qtype } => (format!("{qtype}? {name}"), None),
            Payload::DnsAnswer(r) if r.rcode == crate::dns::Rcode::NxDomain => ("✕ NXDOMAIN".to_string(), Some("bad")),
            Payload::DnsAnswer(r) if r.answer.is_empty() => (format!("✕ no {} record", r.qtype), Some("bad")),
            Payload::DnsAnswer(r) => (format!("✓ {}", r.answer.iter().map(crate::dns::Record::short).collect::<Vec<_>>().join(", ")), Some("good")),
            Payload::HttpRequest { host, path } => (format!("GET {path} · Host {host}"), None),
            Payload::HttpResponse { status, reason } if *status >= 400 => (format!("✕ {status} {reason}"), Some("bad")),
            Payload::HttpResponse { status, reason } => (format!("✓ {status} {reason}"), Some("good")),
        };
        tone = t;
        let span = Span::new(text, Role::CardLine);
        // A failed answer keeps its line; otherwise, where the hop
        // rewrites the packet, the rewrite is the news and takes the room.
        if p.rewrites.is_empty() || t == Some("bad") {
            lines.push(vec![match t {
                Some("bad") => span.with("kh-card-bad"),
                Some(_) => span.with("kh-card-good"),
                None => span,
            }]);
        }
    }
    for (field, name, before, after) in [(Field::Source, "src ", p.before.src, p.after.src), (Field::Destination, "dst ", p.before.dst, p.after.dst)] {
        match p.rewrites.iter().find(|r| r.field == field) {
            Some(r) => {
                let (t, class) = tag(r.kind);
                lines.push(vec![Span::new(name, Role::CardLine), Span::new(before.to_string(), Role::CardLine).with("kh-struck")]);
                lines.push(vec![Span::new(" →  ", Role::CardLine), Span::new(after.to_string(), Role::CardLine).with(class), Span::new(format!("  {t}"), Role::Tag).with(class)]);
            }
            None => lines.push(vec![Span::new(name, Role::CardLine), Span::new(after.to_string(), Role::CardLine)]),
        }
    }
    // A later packet of a connection: its node's conntrack, not the
    // rules, decided it.
    if p.segment.is_some() && p.by_conntrack {
        lines.push(vec![Span::new("no rule walked:", Role::Muted)]);
        lines.push(vec![Span::new("conntrack knows this connection", Role::Muted)]);
    }
    // A hop inside another packet: the outer header it travels in.
    if let Some(t) = &p.tunnel {
        let o = &t.wrapped.outer;
        lines.push(vec![Span::new(format!("VXLAN {} → {} · VNI {}", o.src, o.dst, o.vni), Role::Muted)]);
    }
    if let Some(d) = &h.dropped {
        lines.push(vec![Span::new(drop_phrase(d), Role::Muted).with("kh-card-bad")]);
        tone = Some("bad");
    }
    (lines, tone)
}

/// A hop's card, with its texts placed from its top-left corner.
fn card_for(h: &Hop, style: KindStyle) -> Card {
    let (lines, tone) = card_lines(h, style);
    let w_of = |l: &Vec<Span>| l.iter().map(Span::width).sum::<f64>();
    // A line too wide for the card goes on over the next line, its last
    // span (a rewrite's tag) whole, indented under the address.
    let mut wrapped: Vec<Vec<Span>> = Vec::with_capacity(lines.len());
    for mut l in lines {
        let mut tail: Vec<Span> = Vec::new();
        while l.len() > 1 && w_of(&l) > CARD_MAX_W - 2.0 * CARD_PAD {
            tail.insert(0, l.pop().unwrap_or_else(|| Span::new("", Role::CardLine)));
        }
        wrapped.push(l);
        if !tail.is_empty() {
            let indent = Span::new("  ", Role::CardLine);
            if let Some(first) = tail.first_mut() {
                first.text = first.text.trim_start().to_string();
            }
            wrapped.push(std::iter::once(indent).chain(tail).collect());
        }
    }
    let lines = wrapped;
    let inner = lines.iter().map(w_of).fold(0.0, f64::max).min(CARD_MAX_W - 2.0 * CARD_PAD);
    let w = (inner + 2.0 * CARD_PAD).ceil();
    let mut y = CARD_PAD - 2.0;
    let mut texts = Vec::new();
    let whole = Rect { x: 0.0, y: 0.0, w, h: 0.0 };
    for (i, l) in lines.into_iter().enumerate() {
        let size = l.iter().map(|s| s.role.size()).fold(0.0, f64::max);
        y += if i == 0 { metrics::ascent(size) + 2.0 } else { (size * 1.36).round() };
        // A line too wide for the card is cut, its last span first.
        let mut spans = l;
        while spans.iter().map(Span::width).sum::<f64>() > inner && !spans.is_empty() {
            let used: f64 = spans[..spans.len() - 1].iter().map(Span::width).sum();
            let last = spans.pop().unwrap_or_else(|| Span::new("", Role::CardLine));
            let cut = metrics::fit(&last.text, last.role.size(), last.role.face(), inner - used);
            if cut.chars().count() > 1 {
                spans.push(Span { text: cut, ..last });
                break;
            }
        }
        texts.push(Text::new(CARD_PAD, y, Anchor::Start, spans, whole));
    }
    let h = (y + CARD_PAD).ceil();
    for t in &mut texts {
        t.within.h = h;
    }
    Card { offset: pt(0.0, 0.0), w, h, texts, tone }
}

/// What a token must not rest on: every text, every arrowhead (but its
/// own hop's, which it points along), and the boxes of actors it does
/// not go between.
///
/// Its card may, where no clear place is near, lie over what the step
/// does not involve (`soft`): a zone's name, an idle actor, a rule row
/// that is not lit. It never covers what the reader follows (`texts`,
/// `boxes`): the step's actors, their names, and the lit rows.
pub struct Obstacles {
    pub texts: Vec<Rect>,
    pub arrows: Vec<Rect>,
    /// Boxes it must not touch; the ends of the hop and their nodes' cards are left out.
    pub boxes: Vec<Rect>,
    /// Texts and boxes the card only avoids.
    pub soft: Vec<Rect>,
    pub world: Rect,
}

/// The actors a step's hops go from or to.
pub fn step_actors(st: Option<&Step>) -> Vec<ActorId> {
    let mut out: Vec<ActorId> = st.map_or(Vec::new(), |st| st.hops.iter().flat_map(|h| [h.from, h.to]).collect());
    out.sort_by_key(|a| a.0);
    out.dedup();
    out
}

/// The boxes a resting card may lie over: those of actors the step does
/// not involve, and the group boxes ("+37 Pods").
pub fn idle_boxes(layout: &Layout, involved: &[ActorId]) -> Vec<Rect> {
    layout.boxes.iter().filter(|(id, _)| !involved.contains(id)).map(|(_, r)| *r).chain(layout.groups.iter().map(|g| g.rect)).collect()
}

/// A drawing's texts, split into those a token's card must never cover
/// (the step's actors' names and addresses, lit rule rows) and the rest
/// (zone names, idle actors, rows that are not lit, notes).
pub fn guarded_texts<'a>(groups: &'a [Group], involved: &[ActorId]) -> (Vec<&'a Text>, Vec<&'a Text>) {
    fn walk<'a>(g: &'a Group, involved: &[ActorId], hard: &mut Vec<&'a Text>, soft: &mut Vec<&'a Text>) {
        let lit = [" hit", " added", " removed"].iter().any(|c| g.class.contains(c));
        let guarded = match g.owner {
            Owner::Actor(id) => involved.contains(&id),
            Owner::Part => lit,
            Owner::Zone | Owner::Panel(_) | Owner::Group => false,
        };
        if guarded {
            hard.extend(g.texts.iter())
        } else {
            soft.extend(g.texts.iter())
        }
        for c in &g.children {
            walk(c, involved, hard, soft);
        }
    }
    let (mut hard, mut soft) = (Vec::new(), Vec::new());
    for g in groups {
        walk(g, involved, &mut hard, &mut soft);
    }
    (hard, soft)
}

impl Obstacles {
    /// The obstacles of hop `i` at the end of its flight.
    pub fn at_rest(s: &Scenario, layout: &Layout, step: usize, i: usize) -> Obstacles {
        let f = super::frame_at(s, step, i, 1.0);
        let gs = groups(s, layout, &f);
        let st = s.steps.get(step);
        let involved = step_actors(st);
        let (hard, soft) = guarded_texts(&gs, &involved);
        let texts: Vec<Rect> = hard.into_iter().map(Text::bounds).collect();
        let mut soft: Vec<Rect> = soft.into_iter().map(Text::bounds).collect();
        let arrows: Vec<Rect> = trails(s, layout, &f).iter().filter_map(Trail::arrowhead).collect();
        let ends: Vec<ActorId> = st.and_then(|st| st.hops.get(i)).map_or(Vec::new(), |h| vec![h.from, h.to]);
        let mut skip: Vec<ActorId> = ends.clone();
        skip.extend(ends.iter().filter_map(|e| s.actor(*e).and_then(|a| a.parent)));
        let idle = idle_boxes(layout, &involved);
        let (idle, mut boxes): (Vec<Rect>, Vec<Rect>) = layout.boxes.iter().filter(|(id, _)| !skip.contains(id)).map(|(_, r)| *r).partition(|r| idle.contains(r));
        soft.extend(idle);
        // Inside a node it goes to, the other Pods and the panel still count.
        for n in layout.nodes.iter().filter(|n| skip.contains(&n.node)) {
            if !ends.contains(&n.node) {
                boxes.push(n.panel);
            }
        }
        soft.extend(layout.groups.iter().filter(|g| !ends.iter().any(|e| g.members.contains(e))).map(|g| g.rect));
        Obstacles { texts, arrows, boxes, soft, world: layout.world() }
    }

    /// How badly `r` sits: 0 when it is clear of everything (a pill's
    /// measure: it never rests on anything).
    pub fn cost(&self, r: &Rect) -> f64 {
        let (guarded, soft) = self.card_cost(r);
        guarded + soft * 4.0
    }

    /// How badly a card at `r` sits: what it covers that the reader
    /// follows (or outside the drawing), and what it covers that the step
    /// does not involve.
    pub fn card_cost(&self, r: &Rect) -> (f64, f64) {
        let over = |o: &Rect| if r.intersects(o) { overlap(r, o) } else { 0.0 };
        let inside = r.x >= self.world.x && r.y >= self.world.y && r.right() <= self.world.right() && r.bottom() <= self.world.bottom();
        let guarded = self.texts.iter().map(over).sum::<f64>() * 4.0 + self.arrows.iter().map(over).sum::<f64>() * 4.0 + self.boxes.iter().map(over).sum::<f64>();
        (guarded + if inside { 0.0 } else { 1e6 }, self.soft.iter().map(over).sum::<f64>())
    }
}

fn overlap(a: &Rect, b: &Rect) -> f64 {
    let w = a.right().min(b.right()) - a.x.max(b.x);
    let h = a.bottom().min(b.bottom()) - a.y.max(b.y);
    if w > 0.0 && h > 0.0 {
        w * h + 100.0
    } else {
        0.0
    }
}

fn route_len(p: &[Point]) -> f64 {
    p.windows(2).map(|w| ((w[1].x - w[0].x).powi(2) + (w[1].y - w[0].y).powi(2)).sqrt()).sum()
}

/// Where hop `i`'s pill rests at the end of its flight (the fraction of
/// its route) and where its card sits, clear of `obs` where there is
/// room: the pill as near the end as it can be without touching the
/// arrowhead or anything else, the card beside it, else at the nearest
/// clear place.
fn rest(route: &[Point], pill: &Pill, card: &Card, obs: &Obstacles) -> (f64, Point) {
    let len = route_len(route).max(1e-9);
    let pill_at = |t: f64| {
        let c = point_along(route, t);
        Rect { x: c.x - pill.w / 2.0, y: c.y - pill.h / 2.0, w: pill.w, h: pill.h }
    };
    let own_arrow = arrowhead(route);
    let on_arrow = |r: &Rect| own_arrow.map_or(0.0, |a| if r.intersects(&a) { overlap(r, &a) * 4.0 } else { 0.0 });
    let clear = |r: &Rect| obs.cost(r) + on_arrow(r);
    // The pill: from the end backwards, in steps of 4 units.
    let mut best = (f64::INFINITY, 0.5);
    // Far enough from the end that another hop's arrowhead at the same
    // edge, a row above or below, stays clear too.
    let mut d = ARROW_LEN + pill.w.max(pill.h) / 2.0 + 4.0;
    while d < len {
        let t = 1.0 - d / len;
        let c = clear(&pill_at(t));
        if c < best.0 {
            best = (c, t);
        }
        if c == 0.0 {
            break;
        }
        d += 4.0;
    }
    let t = best.1;
    let p = pill_at(t);
    let at = p.center();
    let (w, h) = (card.w, card.h);
    let gap = 6.0;
    // A clear place scores its distance; one that covers only what the
    // step does not involve, a little more (so a clear place up to
    // `NEAR` farther wins); one on what the reader follows, far more.
    let score = |o: Point| {
        let r = Rect { x: o.x, y: o.y, w, h };
        let (guarded, soft) = obs.card_cost(&r);
        let c = guarded + on_arrow(&r) + if route.windows(2).any(|s| seg_hits(s[0], s[1], &r)) { 50.0 } else { 0.0 } + if r.intersects(&p) { 1e5 } else { 0.0 };
        let dist = ((r.center().x - at.x).powi(2) + (r.center().y - at.y).powi(2)).sqrt();
        match (c == 0.0, soft == 0.0) {
            (true, true) => dist,
            (true, false) => NEAR + soft * 2e-3 + dist,
            _ => 1e4 + c + dist,
        }
    };
    // Beside the pill first, then rings farther out, then anywhere near.
    let mut best = (f64::INFINITY, pt(p.right() + gap, at.y - h / 2.0));
    let consider = |o: Point, best: &mut (f64, Point)| {
        let sc = score(o);
        if sc < best.0 {
            *best = (sc, o);
        }
    };
    for ring in 0..6 {
        let r = ring as f64 * 20.0;
        for o in [
            pt(p.right() + gap + r, at.y - h / 2.0),
            pt(p.x - gap - w - r, at.y - h / 2.0),
            pt(at.x - w / 2.0, p.y - gap - h - r),
            pt(at.x - w / 2.0, p.bottom() + gap + r),
            pt(p.right() + gap + r, p.y - h - r),
            pt(p.right() + gap + r, p.bottom() + r),
            pt(p.x - gap - w - r, p.y - h - r),
            pt(p.x - gap - w - r, p.bottom() + r),
        ] {
            consider(o, &mut best);
        }
    }
    if best.0 >= NEAR {
        let mut y = at.y - 320.0;
        while y <= at.y + 320.0 {
            let mut x = at.x - 420.0;
            while x <= at.x + 420.0 {
                consider(pt(x, y), &mut best);
                x += 16.0;
            }
            y += 16.0;
        }
    }
    if best.0 >= 1e4 {
        // Nothing near is clear: anywhere in the drawing.
        let w = obs.world;
        let mut y = w.y;
        while y + h <= w.bottom() {
            let mut x = w.x;
            while x + card.w <= w.right() {
                consider(pt(x, y), &mut best);
                x += 12.0;
            }
            y += 12.0;
        }
    }
    (t, pt(best.1.x - at.x, best.1.y - at.y))
}

/// Whether the segment a–b passes through `r`.
fn seg_hits(a: Point, b: Point, r: &Rect) -> bool {
    let (x0, x1) = (a.x.min(b.x), a.x.max(b.x));
    let (y0, y1) = (a.y.min(b.y), a.y.max(b.y));
    x1 >= r.x && x0 <= r.right() && y1 >= r.y && y0 <= r.bottom()
}

/// Everything about one hop that does not change while it plays: its
/// route, where its token comes to rest, its pill and its card. Worth
/// keeping between frames: finding the card's place is the costly part.
#[derive(Clone, Debug, PartialEq)]
pub struct HopPlan {
    pub step: usize,
    pub hop: usize,
    pub route: Vec<Point>,
    /// The fraction of the route where the pill rests.
    pub rest: f64,
    pub pill: Pill,
    pub card: Card,
    pub style: KindStyle,
    pub what_if: bool,
    /// The boxes at the hop's ends, together.
    pub ends: Rect,
    /// The box it goes to.
    pub target: Rect,
}

/// The plan of hop `i` of `step`.
pub fn plan(s: &Scenario, layout: &Layout, step: usize, i: usize) -> Option<HopPlan> {
    let st = s.steps.get(step)?;
    let h = st.hops.get(i)?;
    let style = hop_style(h);
    let pill = pill(style, h.dropped.is_some() && h.packet.is_none());
    let mut card = card_for(h, style);
    let obs = Obstacles::at_rest(s, layout, step, i);
    let mut route = hop_path(st, layout, i);
    if route.len() < 2 {
        // A hop on one actor (a drop where it starts): beside its box,
        // below, left, right or above, wherever the pill is clear.
        let r = layout.target(h.from)?;
        let (hw, hh) = (pill.w / 2.0 + 6.0, PILL_H / 2.0 + 6.0);
        let spots = [pt(r.center().x, r.bottom() + hh), pt(r.x - hw, r.center().y), pt(r.right() + hw, r.center().y), pt(r.center().x, r.y - hh)];
        let pill_at = |c: Point| Rect { x: c.x - pill.w / 2.0, y: c.y - PILL_H / 2.0, w: pill.w, h: PILL_H };
        let at = spots.iter().copied().find(|c| obs.cost(&pill_at(*c)) == 0.0).unwrap_or(spots[0]);
        route = vec![pt(at.x, at.y - 0.5), at];
    }
    let (t, off) = if route_len(&route) < 1.0 { (1.0, rest(&route, &pill, &card, &obs).1) } else { rest(&route, &pill, &card, &obs) };
    card.offset = off;
    let ends = [h.from, h.to].iter().filter_map(|e| layout.rect(*e)).fold(None, |acc: Option<Rect>, r| Some(acc.map_or(r, |a| union(a, r)))).unwrap_or(Rect::ZERO);
    let target = layout.target_at(h.to, ports(st, layout, i).1).unwrap_or(ends);
    Some(HopPlan { step, hop: i, route, rest: t, pill, card, style, what_if: h.what_if, ends, target })
}

impl HopPlan {
    /// The token at fraction `t` (0..=1) of the hop: from the start of
    /// its route to its resting place, eased.
    pub fn token(&self, t: f64) -> Token {
        Token { hop: self.hop, at: self.at(t), style: self.style, what_if: self.what_if, pill: self.pill.clone(), card: self.card.clone() }
    }

    /// Where the token's pill is at fraction `t` of the hop: all that
    /// changes while it moves (its look is the plan's).
    pub fn at(&self, t: f64) -> Point {
        let len = route_len(&self.route).max(1e-9);
        let start = ((self.pill.w.max(self.pill.h) / 2.0 + 2.0) / len).min(self.rest);
        if len < 1.0 {
            point_along(&self.route, 1.0)
        } else {
            point_along(&self.route, start + (self.rest - start) * ease(t))
        }
    }

    /// What the camera keeps in view at fraction `t`: the hop's ends, its
    /// route and its token; and what it must keep if not all of that fits
    /// (the token with its card, and the box the hop goes to).
    fn focus(&self, t: f64) -> (Rect, Rect) {
        let tok = self.token(t);
        let token = union(tok.card_rect(), tok.pill_rect());
        let mut r = union(self.ends, token);
        for p in &self.route {
            r = union(r, Rect { x: p.x, y: p.y, w: 0.0, h: 0.0 });
        }
        (r, union(token, self.target))
    }
}

/// The token at `frame`.
pub fn token(s: &Scenario, layout: &Layout, f: &Frame) -> Option<Token> {
    let p = plan(s, layout, f.step, f.current?)?;
    Some(p.token(fraction(f)))
}

/// How far along the hop on screen is (1 at rest).
pub fn fraction(f: &Frame) -> f64 {
    if f.progress.fract() == 0.0 {
        1.0
    } else {
        f.progress.fract()
    }
}

// ---------------------------------------------------------------- camera

fn union(a: Rect, b: Rect) -> Rect {
    let x = a.x.min(b.x);
    let y = a.y.min(b.y);
    Rect { x, y, w: a.right().max(b.right()) - x, h: a.bottom().max(b.bottom()) - y }
}

/// The camera at `frame`, from the plans of the hop on screen and of the
/// one before it (or, before the step plays, of its first hop).
pub fn camera(s: &Scenario, layout: &Layout, f: &Frame, vp: Viewport) -> Camera {
    let (before, now) = match f.current {
        None => (None, plan(s, layout, f.step, 0)),
        Some(0) => (plan(s, layout, f.step, 0), plan(s, layout, f.step, 0)),
        Some(i) => (plan(s, layout, f.step, i - 1), plan(s, layout, f.step, i)),
    };
    camera_with(layout.world(), vp, f, before.as_ref(), now.as_ref())
}

/// The camera: the whole drawing where it is legible at this size; else
/// as close as legibility asks, on the hop in flight, moving there from
/// the last hop's framing as the hop starts.
pub fn camera_with(world: Rect, vp: Viewport, f: &Frame, before: Option<&HopPlan>, now: Option<&HopPlan>) -> Camera {
    let whole = camera::whole(world, vp);
    if whole.scale >= camera::legible_scale(vp) {
        return whole;
    }
    let center = |p: &HopPlan, t: f64| {
        let (r, keep) = p.focus(t);
        camera::center_on(vp, r, keep)
    };
    let target = match (f.current, now) {
        (None, Some(p)) => Some(center(p, 0.0)),
        (Some(_), Some(p)) => {
            let t = fraction(f);
            let here = center(p, t);
            let from = before.map(|b| if b.hop == p.hop { center(b, 0.0) } else { center(b, 1.0) });
            match from {
                Some(b) if t < 1.0 => {
                    let k = ease((t / 0.35).min(1.0));
                    Some(pt(b.x + (here.x - b.x) * k, b.y + (here.y - b.y) * k))
                }
                _ => Some(here),
            }
        }
        _ => None,
    };
    camera::at(world, vp, target.unwrap_or(world.center()))
}

// ---------------------------------------------------------------- keys

/// FNV-1a over what a renderer draws, for keyed lists: two groups with
/// the same key and fingerprint draw the same.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, b: &[u8]) {
        for x in b {
            self.0 ^= u64::from(*x);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }

    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
        self.bytes(&[0xff]);
    }

    fn num(&mut self, v: f64) {
        self.bytes(&v.to_bits().to_le_bytes());
    }

    fn rect(&mut self, r: &Rect) {
        for v in [r.x, r.y, r.w, r.h] {
            self.num(v);
        }
    }
}

fn hash_group(h: &mut Fnv, g: &Group) {
    h.str(&g.key);
    h.str(&g.class);
    if let Some((k, v)) = &g.data {
        h.str(k);
        h.str(v);
    }
    h.str(g.title.as_deref().unwrap_or(""));
    for s in &g.shapes {
        h.rect(&s.rect);
        h.num(s.rx);
        h.str(&s.class);
    }
    for t in &g.texts {
        h.num(t.x);
        h.num(t.y);
        h.str(t.anchor.as_str());
        for s in &t.spans {
            h.str(&s.text);
            h.str(s.role.class());
            h.str(s.class.unwrap_or(""));
        }
    }
    for c in &g.children {
        hash_group(h, c);
    }
}

/// A group's fingerprint.
pub fn fingerprint(g: &Group) -> u64 {
    let mut h = Fnv::new();
    hash_group(&mut h, g);
    h.0
}

/// A trail's fingerprint: its path and look.
pub fn trail_key(t: &Trail) -> u64 {
    let mut h = Fnv::new();
    for p in &t.points {
        h.num(p.x);
        h.num(p.y);
    }
    h.str(&t.class());
    h.0
}
