//! Where every actor is drawn, and the path a hop takes between two.
//!
//! The layout is computed from the actors alone: their zones (one column
//! each: outside, control plane, cluster), their kinds, and which node each
//! Pod runs on. Nodes are cards stacked in the cluster column, each with
//! its kube-proxy panel on the left and its Pods stacked on the right; the
//! canvas grows as tall as the tallest column needs.
//!
//! Routes are orthogonal and run in channels: the gaps between zone
//! columns, the gaps between boxes of a column (lanes), and the cluster
//! network's bus on the left of the node cards.
//!
//! Architecture Invariant: a route never crosses a box it does not
//! connect, ends on the edge of its target box that its last segment
//! comes from, and a reply leg runs beside its request leg, never on it.
//! The tests check these for every scenario and parameter value.

use crate::sim::{Actor, ActorId, ActorKind, Hop, Leg, Zone};
use serde::{Deserialize, Serialize};

/// The canvas width in user units (the SVG viewBox width).
pub const WIDTH: f64 = 960.0;

/// How far a reply leg runs beside its request leg.
pub const REPLY_OFFSET: f64 = 7.0;

const MARGIN: f64 = 6.0;
/// The gap between zone columns, where routes run.
const GUTTER: f64 = 22.0;
/// Height of a zone's label strip.
const ZONE_LABEL: f64 = 34.0;
const ZONE_PAD: f64 = 12.0;
const OUTSIDE_W: f64 = 176.0;
const CONTROL_W: f64 = 184.0;
/// Space at the left of the cluster zone for the cluster network's bus.
const BUS_W: f64 = 26.0;
const NODE_HEADER: f64 = 38.0;
const NODE_GAP: f64 = 16.0;
const POD_H: f64 = 68.0;
const POD_GAP: f64 = 8.0;
const PANEL_MIN_H: f64 = 118.0;
/// The gap between a node's kube-proxy panel and its Pods, where a packet
/// crosses the Pod's veth.
const POD_LANE: f64 = 44.0;
const BOX_GAP_MIN: f64 = 26.0;
/// Above this many nodes, only featured ones get a card; the rest share
/// one group card ("+42 nodes").
pub const MAX_NODES_SHOWN: usize = 6;
/// Above this many Pods on a node, only featured ones get a box; the rest
/// share one group box ("+37 Pods").
pub const MAX_PODS_SHOWN: usize = 5;
/// Height of the group card of nodes without a card of their own.
const NODE_GROUP_H: f64 = 58.0;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

pub const fn pt(x: f64, y: f64) -> Point {
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
    pub const ZERO: Rect = Rect { x: 0.0, y: 0.0, w: 0.0, h: 0.0 };

    pub fn center(&self) -> Point {
        pt(self.x + self.w / 2.0, self.y + self.h / 2.0)
    }

    pub fn right(&self) -> f64 {
        self.x + self.w
    }

    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }

    pub fn intersects(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }

    pub fn contains(&self, p: Point) -> bool {
        p.x >= self.x && p.x <= self.right() && p.y >= self.y && p.y <= self.bottom()
    }

    /// Whether the segment a–b (horizontal or vertical) passes through the
    /// inside of the box (touching its border does not count).
    pub fn crossed_by(&self, a: Point, b: Point) -> bool {
        let (x0, x1) = (a.x.min(b.x), a.x.max(b.x));
        let (y0, y1) = (a.y.min(b.y), a.y.max(b.y));
        x1 > self.x + 0.5 && x0 < self.right() - 0.5 && y1 > self.y + 0.5 && y0 < self.bottom() - 0.5
    }
}

/// Which edge of a box a route ends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    Left,
    Right,
    Top,
    Bottom,
}

/// A zone's column, with its boxes top to bottom.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    pub zone: Zone,
    pub rect: Rect,
    pub actors: Vec<ActorId>,
}

/// The kube-proxy panel and the Pod area of one node card.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeCard {
    pub node: ActorId,
    pub card: Rect,
    pub panel: Rect,
    pub pods: Rect,
}

/// A box standing for actors drawn without one of their own: the Pods
/// of a node beyond those shown, or the nodes beyond those shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupBox {
    pub rect: Rect,
    /// Pods (of `node`) or nodes.
    pub kind: ActorKind,
    /// The node whose Pods these are; `None` for a group of nodes.
    pub node: Option<ActorId>,
    pub members: Vec<ActorId>,
}

impl GroupBox {
    /// `+37 Pods`, `+42 nodes`, `+1 Pod`.
    pub fn label(&self) -> String {
        let n = self.members.len();
        let noun = match (self.kind, n) {
            (ActorKind::Node, 1) => "node",
            (ActorKind::Node, _) => "nodes",
            (_, 1) => "Pod",
            _ => "Pods",
        };
        format!("+{n} {noun}")
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    pub columns: Vec<Column>,
    /// Every actor's box; a node's box is its whole card.
    pub boxes: Vec<(ActorId, Rect)>,
    pub nodes: Vec<NodeCard>,
    /// Actors drawn together in one box (see [`MAX_NODES_SHOWN`],
    /// [`MAX_PODS_SHOWN`]); empty when everything fits.
    #[serde(default)]
    pub groups: Vec<GroupBox>,
    /// x of the cluster network's bus, left of the node cards.
    bus_x: f64,
}

/// Which of `all` get a box of their own: all when they fit in `max`,
/// else the featured ones (in `all`'s order) up to `max - 1`, and the
/// first ones when none is featured, leaving room for the group.
fn pick_shown(all: &[ActorId], featured: &[ActorId], max: usize, fill: usize) -> Vec<ActorId> {
    if all.len() <= max {
        return all.to_vec();
    }
    let room = max.saturating_sub(1).max(1);
    // Featured first, in the order given (most important first).
    let mut shown: Vec<ActorId> = Vec::new();
    for f in featured.iter().filter(|f| all.contains(f)) {
        if shown.len() < room && !shown.contains(f) {
            shown.push(*f);
        }
    }
    for a in all {
        if shown.len() >= fill.min(room) {
            break;
        }
        if !shown.contains(a) {
            shown.push(*a);
        }
    }
    // Drawn in the order of `all`.
    all.iter().filter(|a| shown.contains(a)).copied().collect()
}

impl Layout {
    /// The layout of these actors; where there are more nodes or Pods
    /// than fit, the first ones are drawn and the rest grouped.
    pub fn new(actors: &[Actor]) -> Layout {
        Layout::with_featured(actors, &[])
    }

    /// The layout of these actors, keeping the `featured` ones (the
    /// actors a story touches) out of groups: nodes beyond
    /// [`MAX_NODES_SHOWN`] and Pods of a node beyond [`MAX_PODS_SHOWN`]
    /// are drawn as one group box each, featured actors first.
    pub fn with_featured(actors: &[Actor], featured: &[ActorId]) -> Layout {
        let zones: Vec<Zone> = Zone::ALL.into_iter().filter(|z| actors.iter().any(|a| a.zone == *z && a.parent.is_none())).collect();
        // A featured Pod features its node.
        let mut featured_all: Vec<ActorId> = featured.to_vec();
        featured_all.extend(featured.iter().filter_map(|f| actors.get(f.index()).and_then(|a| a.parent)));
        let all_nodes: Vec<ActorId> = actors.iter().filter(|a| a.kind == ActorKind::Node).map(|a| a.id).collect();
        let shown_nodes = pick_shown(&all_nodes, &featured_all, MAX_NODES_SHOWN, 3);
        let hidden_nodes: Vec<ActorId> = all_nodes.iter().filter(|n| !shown_nodes.contains(n)).copied().collect();
        let mut pods_by_node: std::collections::BTreeMap<ActorId, Vec<ActorId>> = Default::default();
        for a in actors.iter().filter(|a| a.kind.is_pod()) {
            if let Some(p) = a.parent {
                pods_by_node.entry(p).or_default().push(a.id);
            }
        }
        let shown_pods: std::collections::BTreeMap<ActorId, (Vec<ActorId>, Vec<ActorId>)> = shown_nodes
            .iter()
            .map(|n| {
                let all = pods_by_node.get(n).cloned().unwrap_or_default();
                let shown = pick_shown(&all, featured, MAX_PODS_SHOWN, 1);
                let hidden = all.iter().filter(|p| !shown.contains(p)).copied().collect();
                (*n, (shown, hidden))
            })
            .collect();
        let boxes_in = |n: ActorId| shown_pods.get(&n).map_or(0, |(s, h)| s.len() + usize::from(!h.is_empty()));
        let card_h = |n: ActorId| NODE_HEADER + pod_area_h(boxes_in(n)) + ZONE_PAD;
        let group_h = if hidden_nodes.is_empty() { 0.0 } else { NODE_GROUP_H + NODE_GAP };
        let cluster_h = ZONE_LABEL + shown_nodes.iter().map(|n| card_h(*n)).sum::<f64>() + NODE_GAP * shown_nodes.len().saturating_sub(1) as f64 + group_h + ZONE_PAD;
        let column_need = |z: Zone| {
            let hs: Vec<f64> = actors.iter().filter(|a| a.zone == z && a.parent.is_none() && a.kind != ActorKind::Node).map(box_h).collect();
            ZONE_LABEL + hs.iter().sum::<f64>() + BOX_GAP_MIN * (hs.len() + 1) as f64
        };
        let inner_h = zones.iter().map(|z| if *z == Zone::Cluster { cluster_h } else { column_need(*z) }).fold(0.0, f64::max).max(320.0);
        let height = inner_h + 2.0 * MARGIN;

        let mut x = MARGIN;
        let mut columns = Vec::new();
        let mut boxes = Vec::new();
        let mut nodes = Vec::new();
        let mut groups = Vec::new();
        let mut bus_x = 0.0;
        for (i, z) in zones.iter().enumerate() {
            let last = i + 1 == zones.len();
            let w = match z {
                _ if last => WIDTH - MARGIN - x,
                Zone::Outside => OUTSIDE_W,
                Zone::ControlPlane => CONTROL_W,
                Zone::Cluster => WIDTH - MARGIN - x,
            };
            let rect = Rect { x, y: MARGIN, w, h: inner_h };
            let members: Vec<&Actor> = actors.iter().filter(|a| a.zone == *z && a.parent.is_none()).collect();
            if *z == Zone::Cluster {
                bus_x = rect.x + BUS_W / 2.0 + 2.0;
                let mut y = rect.y + ZONE_LABEL;
                for n in members.iter().filter(|a| a.kind == ActorKind::Node && shown_nodes.contains(&a.id)) {
                    let card = Rect { x: rect.x + BUS_W + 4.0, y, w: rect.w - BUS_W - 4.0 - ZONE_PAD, h: card_h(n.id) };
                    let area_h = card.h - NODE_HEADER - ZONE_PAD;
                    let panel_w = ((card.w - 2.0 * ZONE_PAD - POD_LANE) * 0.55).floor();
                    let panel = Rect { x: card.x + ZONE_PAD, y: card.y + NODE_HEADER, w: panel_w, h: area_h };
                    let pods = Rect { x: panel.right() + POD_LANE, y: panel.y, w: card.right() - ZONE_PAD - panel.right() - POD_LANE, h: area_h };
                    boxes.push((n.id, card));
                    let (list, hidden) = shown_pods.get(&n.id).cloned().unwrap_or_default();
                    let k = boxes_in(n.id).max(1) as f64;
                    let ph = ((pods.h - POD_GAP * (k - 1.0)) / k).min(POD_H * 1.4);
                    for (j, p) in list.iter().enumerate() {
                        boxes.push((*p, Rect { x: pods.x, y: pods.y + j as f64 * (ph + POD_GAP), w: pods.w, h: ph }));
                    }
                    if !hidden.is_empty() {
                        let j = list.len();
                        groups.push(GroupBox { rect: Rect { x: pods.x, y: pods.y + j as f64 * (ph + POD_GAP), w: pods.w, h: ph }, kind: ActorKind::Pod, node: Some(n.id), members: hidden });
                    }
                    nodes.push(NodeCard { node: n.id, card, panel, pods });
                    y += card.h + NODE_GAP;
                }
                if !hidden_nodes.is_empty() {
                    let card = Rect { x: rect.x + BUS_W + 4.0, y, w: rect.w - BUS_W - 4.0 - ZONE_PAD, h: NODE_GROUP_H };
                    let mut members = hidden_nodes.clone();
                    // Their Pods are in the group too.
                    members.extend(hidden_nodes.iter().flat_map(|n| pods_by_node.get(n).cloned().unwrap_or_default()));
                    groups.push(GroupBox { rect: card, kind: ActorKind::Node, node: None, members });
                }
            } else {
                let hs: Vec<f64> = members.iter().map(|a| box_h(a)).collect();
                let gap = ((rect.h - ZONE_LABEL - hs.iter().sum::<f64>()) / (hs.len() + 1) as f64).max(BOX_GAP_MIN);
                let mut y = rect.y + ZONE_LABEL + gap;
                for (a, h) in members.iter().zip(&hs) {
                    boxes.push((a.id, Rect { x: rect.x + ZONE_PAD, y, w: rect.w - 2.0 * ZONE_PAD, h: *h }));
                    y += h + gap;
                }
            }
            columns.push(Column { zone: *z, rect, actors: members.iter().map(|a| a.id).collect() });
            x += w + GUTTER;
        }
        Layout { width: WIDTH, height, columns, boxes, nodes, groups, bus_x }
    }

    /// Whether an actor has a box of its own (it is not in a group).
    pub fn has_box(&self, id: ActorId) -> bool {
        self.boxes.iter().any(|(a, _)| *a == id)
    }

    /// The group box an actor is drawn in, if it has no box of its own.
    pub fn group_of(&self, id: ActorId) -> Option<&GroupBox> {
        self.groups.iter().find(|g| g.members.contains(&id))
    }

    /// An actor's box, or the group box it is drawn in.
    pub fn rect(&self, id: ActorId) -> Option<Rect> {
        self.boxes.iter().find(|(a, _)| *a == id).map(|(_, r)| *r).or_else(|| self.group_of(id).map(|g| g.rect))
    }

    pub fn node_card(&self, id: ActorId) -> Option<&NodeCard> {
        self.nodes.iter().find(|n| n.node == id)
    }

    /// The box a route to or from an actor ends on: a node's kube-proxy
    /// panel (its rules decide), anything else's own box.
    pub fn target(&self, id: ActorId) -> Option<Rect> {
        self.node_card(id).map(|n| n.panel).or_else(|| self.rect(id))
    }

    fn column_of(&self, id: ActorId) -> Option<usize> {
        if let Some(c) = self.columns.iter().position(|c| c.actors.contains(&id)) {
            return Some(c);
        }
        // A Pod is in its node's column.
        if let Some(node) = self.nodes.iter().find(|n| self.rect(id).is_some_and(|r| n.card.contains(r.center()))) {
            return self.columns.iter().position(|c| c.actors.contains(&node.node));
        }
        // A grouped node (or its Pod): the cluster's column.
        self.group_of(id).and_then(|_| self.columns.iter().position(|c| c.zone == Zone::Cluster))
    }

    /// The node whose card holds a Pod's box.
    fn node_of_pod(&self, id: ActorId) -> Option<&NodeCard> {
        let r = self.rect(id)?;
        self.nodes.iter().find(|n| n.node != id && n.pods.contains(r.center()))
    }

    /// The x of the channel right of column `c` (the gutter after it).
    fn gutter_after(&self, c: usize) -> f64 {
        self.columns[c].rect.right() + GUTTER / 2.0
    }

    /// A y in a free gap of column `c`, as near `want` as the gaps allow.
    fn lane(&self, c: usize, want: f64) -> f64 {
        let col = &self.columns[c];
        let mut edges = vec![col.rect.y + ZONE_LABEL - 6.0];
        let mut rects: Vec<Rect> = col.actors.iter().filter_map(|a| self.rect(*a)).collect();
        crate::sort::by(&mut rects, |a, b| a.y.total_cmp(&b.y));
        let mut gaps = Vec::new();
        for r in &rects {
            let top = *edges.last().unwrap_or(&col.rect.y);
            gaps.push((top, r.y));
            edges.push(r.bottom());
        }
        gaps.push((*edges.last().unwrap_or(&col.rect.y), col.rect.bottom()));
        gaps.iter()
            .filter(|(a, b)| b - a > 2.0 * REPLY_OFFSET + 4.0)
            .map(|(a, b)| (a + b) / 2.0)
            .min_by(|a, b| (a - want).abs().total_cmp(&(b - want).abs()))
            .unwrap_or(want)
    }

    /// The polyline a hop follows from `from` to `to`; a reply leg runs
    /// beside the request leg. Empty when either actor has no box.
    pub fn route(&self, from: ActorId, to: ActorId, leg: Leg) -> Vec<Point> {
        let (Some(a), Some(b)) = (self.target(from), self.target(to)) else { return Vec::new() };
        if from == to {
            return vec![a.center()];
        }
        let path = self.request_path(from, to, a, b);
        match leg {
            Leg::Out => path,
            Leg::Back => offset(&path, REPLY_OFFSET),
        }
    }

    /// The route a hop is drawn on: its leg's route, and for a what-if
    /// hop (an alternative not taken) the same moved aside once more, so it
    /// never hides the hop that did happen.
    pub fn hop_route(&self, h: &Hop) -> Vec<Point> {
        let r = self.route(h.from, h.to, h.leg);
        match (h.what_if, h.leg) {
            (false, _) => r,
            (true, Leg::Out) => offset(&r, -REPLY_OFFSET),
            (true, Leg::Back) => offset(&r, REPLY_OFFSET),
        }
    }

    fn request_path(&self, from: ActorId, to: ActorId, a: Rect, b: Rect) -> Vec<Point> {
        // A Pod and its own node: straight across the card.
        if let Some(n) = self.node_of_pod(from).filter(|n| n.node == to) {
            let y = a.center().y.clamp(n.panel.y + 8.0, n.panel.bottom() - 8.0);
            return vec![pt(a.x, y), pt(n.panel.right(), y)];
        }
        if let Some(n) = self.node_of_pod(to).filter(|n| n.node == from) {
            let y = b.center().y.clamp(n.panel.y + 8.0, n.panel.bottom() - 8.0);
            return vec![pt(n.panel.right(), y), pt(b.x, y)];
        }
        // A Pod reached from outside its node: to the node, then over its
        // kube-proxy panel's top and down the Pod lane, so the route
        // crosses neither the panel nor the other Pods.
        if let Some(card) = self.node_of_pod(to).copied() {
            if card.node != from && self.node_of_pod(from).map(|c| c.node) != Some(card.node) {
                let via = self.request_path(from, card.node, a, card.panel);
                return self.down_the_lane(via, &card, b);
            }
        }
        if let Some(card) = self.node_of_pod(from).copied() {
            if card.node != to && self.node_of_pod(to).map(|c| c.node) != Some(card.node) {
                let mut p = self.request_path(to, from, b, a);
                p.reverse();
                return p;
            }
        }
        let (Some(ca), Some(cb)) = (self.column_of(from), self.column_of(to)) else { return vec![a.center(), b.center()] };
        let both_nodes = self.node_card(from).is_some() && self.node_card(to).is_some();
        if both_nodes {
            // Node to node: over the cluster network's bus.
            let (ya, yb) = (port_y(&a, to), port_y(&b, from));
            return vec![pt(a.x, ya), pt(self.bus_x, ya), pt(self.bus_x, yb), pt(b.x, yb)];
        }
        if ca == cb {
            return self.same_column(a, b, ca, from, to);
        }
        if ca > cb {
            let mut p = self.request_path(to, from, b, a);
            p.reverse();
            return p;
        }
        // Left to right: out of the right edge, along the gutters, into the left edge.
        let (ya, yb) = (port_y(&a, to), port_y(&b, from));
        let x1 = self.gutter_after(ca);
        let x2 = self.gutter_after(cb - 1);
        let mut p = vec![pt(a.right(), ya), pt(x1, ya)];
        if cb - ca == 1 {
            p.push(pt(x1, yb));
        } else {
            // Cross the columns between through their gaps.
            let mut y = ya;
            for c in ca + 1..cb {
                let lane = self.lane(c, (ya + yb) / 2.0);
                let xc = self.gutter_after(c);
                p.push(pt(self.gutter_after(c - 1), lane));
                p.push(pt(xc, lane));
                y = lane;
            }
            let _ = y;
            p.push(pt(x2, yb));
        }
        if self.node_card(to).is_some() {
            // Into a node: across the bus strip to the panel's left edge.
            p.push(pt(b.x, yb));
        } else {
            p.push(pt(b.x, yb));
        }
        dedup(p)
    }

    /// Turns a route that ends on a node's panel into one that ends on a
    /// Pod of that node: it arrives in the strip between the node's name
    /// and its panel, crosses to the Pod lane and goes down it.
    fn down_the_lane(&self, mut path: Vec<Point>, card: &NodeCard, pod: Rect) -> Vec<Point> {
        let n = path.len();
        if n < 2 {
            return path;
        }
        let strip = card.panel.y - 3.0;
        let lane = card.panel.right() + POD_LANE / 2.0;
        let y = pod.center().y;
        path[n - 2].y = strip;
        path[n - 1] = pt(lane, strip);
        path.push(pt(lane, y));
        path.push(pt(pod.x, y));
        dedup(path)
    }

    /// Two boxes of one column: straight up or down between neighbours,
    /// else around through the gutter on the column's right.
    fn same_column(&self, a: Rect, b: Rect, c: usize, from: ActorId, to: ActorId) -> Vec<Point> {
        let col = &self.columns[c];
        let between = col.actors.iter().filter(|x| **x != from && **x != to).filter_map(|x| self.rect(*x)).any(|r| {
            let (top, bottom) = if a.y < b.y { (a.bottom(), b.y) } else { (b.bottom(), a.y) };
            r.y < bottom && r.bottom() > top
        });
        if !between {
            let x = (a.x.max(b.x) + a.right().min(b.right())) / 2.0 + (a.w.min(b.w) / 5.0);
            return if a.y < b.y { vec![pt(x, a.bottom()), pt(x, b.y)] } else { vec![pt(x, a.y), pt(x, b.bottom())] };
        }
        let x = self.gutter_after(c);
        let (ya, yb) = (port_y(&a, to), port_y(&b, from));
        vec![pt(a.right(), ya), pt(x, ya), pt(x, yb), pt(b.right(), yb)]
    }
}

fn box_h(a: &Actor) -> f64 {
    match a.kind {
        ActorKind::Laptop => 96.0,
        ActorKind::LoadBalancer => 88.0,
        _ => 80.0,
    }
}

fn pod_area_h(pods: usize) -> f64 {
    let k = pods.max(1) as f64;
    (k * POD_H + (k - 1.0) * POD_GAP).max(PANEL_MIN_H)
}

/// The y at which a route to or from `other` leaves or enters a box:
/// spread over the middle of the edge by the other end's id, so routes
/// from different actors do not share one point.
fn port_y(r: &Rect, other: ActorId) -> f64 {
    let slots = ((r.h - 24.0) / 14.0).floor().max(1.0);
    let k = (other.0 as f64 * 3.0) % slots;
    let top = r.center().y - (slots - 1.0) * 7.0;
    (top + k * 14.0).clamp(r.y + 10.0, r.bottom() - 10.0)
}

fn dedup(p: Vec<Point>) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::with_capacity(p.len());
    for q in p {
        if out.last().is_none_or(|l| (l.x - q.x).abs() > 0.01 || (l.y - q.y).abs() > 0.01) {
            out.push(q);
        }
    }
    // Drop middle points of straight runs.
    let mut i = 1;
    while i + 1 < out.len() {
        let (a, b, c) = (out[i - 1], out[i], out[i + 1]);
        if ((a.x - b.x).abs() < 0.01 && (b.x - c.x).abs() < 0.01) || ((a.y - b.y).abs() < 0.01 && (b.y - c.y).abs() < 0.01) {
            out.remove(i);
        } else {
            i += 1;
        }
    }
    out
}

/// The same orthogonal polyline moved `d` to the right of its direction
/// of travel, segment by segment; its ends slide along the edges they sit
/// on, so they stay on their boxes.
pub fn offset(path: &[Point], d: f64) -> Vec<Point> {
    if path.len() < 2 {
        return path.to_vec();
    }
    // The normal of each segment (to the right of travel, in screen space).
    let normal = |a: Point, b: Point| {
        let (dx, dy) = (b.x - a.x, b.y - a.y);
        let len = (dx * dx + dy * dy).sqrt().max(1e-9);
        (-dy / len * d, dx / len * d)
    };
    let segs: Vec<(f64, f64)> = path.windows(2).map(|w| normal(w[0], w[1])).collect();
    let mut out = Vec::with_capacity(path.len());
    for (i, p) in path.iter().enumerate() {
        let (nx, ny) = match i {
            0 => segs[0],
            _ if i == path.len() - 1 => segs[i - 1],
            _ => {
                // A corner moves by both neighbouring normals.
                let (a, b) = (segs[i - 1], segs[i]);
                let nx = if a.0.abs() > b.0.abs() { a.0 } else { b.0 };
                let ny = if a.1.abs() > b.1.abs() { a.1 } else { b.1 };
                (nx, ny)
            }
        };
        out.push(pt(p.x + nx, p.y + ny));
    }
    out
}

/// The edge of `r` that point `p` (on its border) lies on.
pub fn side_of(r: &Rect, p: Point) -> Option<Side> {
    let near = |a: f64, b: f64| (a - b).abs() < 0.75;
    let within_x = p.x >= r.x - 0.75 && p.x <= r.right() + 0.75;
    let within_y = p.y >= r.y - 0.75 && p.y <= r.bottom() + 0.75;
    if near(p.x, r.x) && within_y {
        Some(Side::Left)
    } else if near(p.x, r.right()) && within_y {
        Some(Side::Right)
    } else if near(p.y, r.y) && within_x {
        Some(Side::Top)
    } else if near(p.y, r.bottom()) && within_x {
        Some(Side::Bottom)
    } else {
        None
    }
}
