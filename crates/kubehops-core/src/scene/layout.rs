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

/// How far every route runs to the right of the line between its boxes:
/// a hop from A to B and one from B to A run on either side of it, never
/// on each other.
pub const SIDE_OFFSET: f64 = 4.0;
/// How much farther a reply leg runs beside its request leg.
pub const REPLY_OFFSET: f64 = 8.0;
/// How much farther a what-if hop runs beside the hop that happened.
pub const WHAT_IF_OFFSET: f64 = 16.0;

const MARGIN: f64 = 8.0;
/// The gap between zone columns, where routes run: wide enough that a
/// hop between neighbouring columns is longer than its token.
const GUTTER: f64 = 76.0;
/// Height of a zone's label strip.
const ZONE_LABEL: f64 = 36.0;
const ZONE_PAD: f64 = 12.0;
/// Padding inside a box, left and right of its text.
const BOX_PAD: f64 = 12.0;
/// Padding above and below a box's text.
const BOX_PAD_V: f64 = 12.0;
/// The narrowest and the widest side column (outside, control plane):
/// longer names and phrases wrap.
const SIDE_MIN_W: f64 = 176.0;
const SIDE_MAX_W: f64 = 212.0;
/// Space at the left of the cluster zone for the cluster network's bus.
const BUS_W: f64 = 34.0;
/// A node card's header: its name and address, then the strip where a
/// packet the node only routes runs.
const NODE_HEADER: f64 = 76.0;
/// How far above the panel a routed packet runs.
const STRIP_ABOVE_PANEL: f64 = 24.0;
/// The size of a node's junction, where it routes.
const JUNCTION_W: f64 = 28.0;
const JUNCTION_H: f64 = 40.0;
const NODE_GAP: f64 = 22.0;
const POD_GAP: f64 = 10.0;
/// The kube-proxy panel: title, then rows.
pub const PANEL_TITLE: f64 = 26.0;
pub const PANEL_ROW: f64 = 23.0;
const PANEL_ROWS_MIN: usize = 4;
/// The panel's width: a rule row's longest usual text.
const PANEL_W: f64 = 290.0;
/// The gap between a node's kube-proxy panel and its Pods, where a packet
/// crosses the Pod's veth: longer than a token.
const POD_LANE: f64 = 104.0;
const POD_MIN_W: f64 = 160.0;
const BOX_GAP_MIN: f64 = 30.0;
/// Above this many nodes, only featured ones get a card; the rest share
/// one group card ("+42 nodes").
pub const MAX_NODES_SHOWN: usize = 6;
/// Above this many Pods on a node, only featured ones get a box; the rest
/// share one group box ("+37 Pods").
pub const MAX_PODS_SHOWN: usize = 5;
/// Height of the group card of nodes without a card of their own.
const NODE_GROUP_H: f64 = 60.0;

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
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

/// One node card: its header (name and address), the strip under it
/// where a packet the node only routes runs, its kube-proxy panel and its
/// Pod area, with the lane between them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeCard {
    pub node: ActorId,
    pub card: Rect,
    pub panel: Rect,
    pub pods: Rect,
    /// The y of the strip between the header and the panel.
    pub strip_y: f64,
    /// The x of the Pod lane, between the panel and the Pods.
    pub lane_x: f64,
}

impl NodeCard {
    /// The node's junction: where a packet the node only routes (no rule
    /// rewrites it) passes, on the strip above the middle of its panel,
    /// so that routes to it from the bus and from the Pods are long
    /// enough to see a token move.
    pub fn junction(&self) -> Rect {
        let x = self.panel.x + self.panel.w * 0.55;
        Rect { x: x - JUNCTION_W / 2.0, y: self.strip_y - JUNCTION_H / 2.0, w: JUNCTION_W, h: JUNCTION_H }
    }

    /// How many rule rows the panel holds.
    pub fn rows(&self) -> usize {
        (((self.panel.h - PANEL_TITLE - 6.0) / PANEL_ROW).floor().max(1.0)) as usize
    }

    /// The box of row `i` of the panel.
    pub fn row(&self, i: usize) -> Rect {
        Rect { x: self.panel.x + 4.0, y: self.panel.y + PANEL_TITLE + i as f64 * PANEL_ROW, w: self.panel.w - 8.0, h: PANEL_ROW - 2.0 }
    }
}

/// Where a route meets a node: its kube-proxy panel (the node's rules or
/// conntrack decide what happens to the packet), one row of that panel
/// (the rule for the address the packet aims at), or its junction at the
/// head of the Pod lane (the node only routes the packet: no rule
/// rewrites it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Port {
    Panel,
    Row(usize),
    Route,
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
    ///
    /// Every box is as wide and as tall as the text the drawing writes in
    /// it (measured with `metrics`), so nothing the drawing writes
    /// overflows.
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
        let sizes = Sizes::measure(actors, &shown_nodes, &shown_pods);
        let boxes_in = |n: ActorId| shown_pods.get(&n).map_or(0, |(s, h)| s.len() + usize::from(!h.is_empty()));
        let card_h = |n: ActorId| NODE_HEADER + pod_area_h(boxes_in(n), sizes.pod_h) + ZONE_PAD;
        let group_h = if hidden_nodes.is_empty() { 0.0 } else { NODE_GROUP_H + NODE_GAP };
        let cluster_h = ZONE_LABEL + shown_nodes.iter().map(|n| card_h(*n)).sum::<f64>() + NODE_GAP * shown_nodes.len().saturating_sub(1) as f64 + group_h + ZONE_PAD;
        let column_need = |z: Zone| {
            let hs: Vec<f64> = actors.iter().filter(|a| a.zone == z && a.parent.is_none() && a.kind != ActorKind::Node).map(|a| sizes.box_h(a)).collect();
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
        for z in &zones {
            let w = match z {
                Zone::Cluster => BUS_W + 4.0 + sizes.card_w + ZONE_PAD,
                _ => sizes.side_w(*z),
            };
            let rect = Rect { x, y: MARGIN, w, h: inner_h };
            let members: Vec<&Actor> = actors.iter().filter(|a| a.zone == *z && a.parent.is_none()).collect();
            if *z == Zone::Cluster {
                bus_x = rect.x + BUS_W / 2.0 + 2.0;
                let mut y = rect.y + ZONE_LABEL;
                for n in members.iter().filter(|a| a.kind == ActorKind::Node && shown_nodes.contains(&a.id)) {
                    let card = Rect { x: rect.x + BUS_W + 4.0, y, w: sizes.card_w, h: card_h(n.id) };
                    let area_h = card.h - NODE_HEADER - ZONE_PAD;
                    let panel = Rect { x: card.x + ZONE_PAD, y: card.y + NODE_HEADER, w: PANEL_W, h: area_h };
                    let pods = Rect { x: panel.right() + POD_LANE, y: panel.y, w: sizes.pod_w, h: area_h };
                    boxes.push((n.id, card));
                    let (list, hidden) = shown_pods.get(&n.id).cloned().unwrap_or_default();
                    let ph = sizes.pod_h;
                    for (j, p) in list.iter().enumerate() {
                        boxes.push((*p, Rect { x: pods.x, y: pods.y + j as f64 * (ph + POD_GAP), w: pods.w, h: ph }));
                    }
                    if !hidden.is_empty() {
                        let j = list.len();
                        groups.push(GroupBox { rect: Rect { x: pods.x, y: pods.y + j as f64 * (ph + POD_GAP), w: pods.w, h: ph }, kind: ActorKind::Pod, node: Some(n.id), members: hidden });
                    }
                    let strip_y = panel.y - STRIP_ABOVE_PANEL;
                    nodes.push(NodeCard { node: n.id, card, panel, pods, strip_y, lane_x: panel.right() + POD_LANE / 2.0 });
                    y += card.h + NODE_GAP;
                }
                if !hidden_nodes.is_empty() {
                    let card = Rect { x: rect.x + BUS_W + 4.0, y, w: sizes.card_w, h: NODE_GROUP_H };
                    let mut members = hidden_nodes.clone();
                    // Their Pods are in the group too.
                    members.extend(hidden_nodes.iter().flat_map(|n| pods_by_node.get(n).cloned().unwrap_or_default()));
                    groups.push(GroupBox { rect: card, kind: ActorKind::Node, node: None, members });
                }
            } else {
                let hs: Vec<f64> = members.iter().map(|a| sizes.box_h(a)).collect();
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
        let width = (x - GUTTER + MARGIN).max(320.0);
        Layout { width, height, columns, boxes, nodes, groups, bus_x }
    }

    /// The whole drawing's extent.
    pub fn world(&self) -> Rect {
        Rect { x: 0.0, y: 0.0, w: self.width, h: self.height }
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

    /// The box a route ends on at this port: for a node, its panel (or
    /// the row's box) or, for a packet it only routes, its whole card;
    /// anything else's own box.
    pub fn target_at(&self, id: ActorId, port: Port) -> Option<Rect> {
        match (self.node_card(id), port) {
            (Some(n), Port::Route) => Some(n.junction()),
            (Some(n), Port::Row(i)) if i < n.rows() => Some(n.row(i)),
            (Some(n), _) => Some(n.panel),
            (None, _) => self.rect(id),
        }
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
            .filter(|(a, b)| b - a > 2.0 * (SIDE_OFFSET + REPLY_OFFSET) + 4.0)
            .map(|(a, b)| (a + b) / 2.0)
            .min_by(|a, b| (a - want).abs().total_cmp(&(b - want).abs()))
            .unwrap_or(want)
    }

    /// The polyline a hop follows from `from` to `to`, meeting nodes at
    /// their panels; a reply leg runs beside the request leg. Empty when
    /// either actor has no box.
    pub fn route(&self, from: ActorId, to: ActorId, leg: Leg) -> Vec<Point> {
        self.route_at(from, Port::Panel, to, Port::Panel, leg)
    }

    /// The polyline from `from` (at port `fp`) to `to` (at port `tp`).
    pub fn route_at(&self, from: ActorId, fp: Port, to: ActorId, tp: Port, leg: Leg) -> Vec<Point> {
        let (Some(a), Some(b)) = (self.end(from, fp), self.end(to, tp)) else { return Vec::new() };
        if from == to {
            return vec![a.rect.center()];
        }
        let path = self.request_path(&a, &b);
        match leg {
            Leg::Out => offset(&path, SIDE_OFFSET),
            Leg::Back => offset(&path, SIDE_OFFSET + REPLY_OFFSET),
        }
    }

    /// The route a hop is drawn on when both its ends are at panels: its
    /// leg's route, and for a what-if hop (an alternative not taken) the
    /// same moved aside once more, so it never hides the hop that did
    /// happen. The drawing picks the ports (`scene::ports`).
    pub fn hop_route(&self, h: &Hop) -> Vec<Point> {
        self.hop_route_at(h, Port::Panel, Port::Panel)
    }

    /// A hop's route with its ends at these ports.
    pub fn hop_route_at(&self, h: &Hop, fp: Port, tp: Port) -> Vec<Point> {
        let r = self.route_at(h.from, fp, h.to, tp, h.leg);
        let mut r = if h.what_if { offset(&r, WHAT_IF_OFFSET) } else { r };
        // A route into a row arrives inside the row, whatever its offset.
        if let (Port::Row(_), Some(row), n) = (tp, self.target_at(h.to, tp), r.len()) {
            if n >= 2 && (r[n - 1].y - r[n - 2].y).abs() < 0.5 {
                let y = r[n - 1].y.clamp(row.y + 6.0, row.bottom() - 6.0);
                r[n - 1].y = y;
                r[n - 2].y = y;
            }
        }
        r
    }

    fn end(&self, id: ActorId, port: Port) -> Option<End> {
        let rect = self.target_at(id, port)?;
        let port = if self.node_card(id).is_some() { port } else { Port::Panel };
        Some(End { id, rect, port })
    }

    fn request_path(&self, a: &End, b: &End) -> Vec<Point> {
        let (from, to) = (a.id, b.id);
        // A Pod and its own node: across the lane.
        if let Some(n) = self.node_of_pod(from).filter(|n| n.node == to).copied() {
            return self.pod_to_own_node(&n, a.rect, b);
        }
        if let Some(n) = self.node_of_pod(to).filter(|n| n.node == from).copied() {
            let mut p = self.pod_to_own_node(&n, b.rect, a);
            p.reverse();
            return p;
        }
        // A Pod reached from outside its node: to the node's strip, then
        // along it to the Pod lane and down, so the route crosses neither
        // the panel nor the other Pods.
        if let Some(card) = self.node_of_pod(to).copied() {
            if card.node != from && self.node_of_pod(from).map(|c| c.node) != Some(card.node) {
                let node = End { id: card.node, rect: card.junction(), port: Port::Route };
                let via = self.request_path(a, &node);
                return self.down_the_lane(via, &card, b.rect);
            }
        }
        if let Some(card) = self.node_of_pod(from).copied() {
            if card.node != to && self.node_of_pod(to).map(|c| c.node) != Some(card.node) {
                let mut p = self.request_path(b, a);
                p.reverse();
                return p;
            }
        }
        let (Some(ca), Some(cb)) = (self.column_of(from), self.column_of(to)) else { return vec![a.rect.center(), b.rect.center()] };
        let both_nodes = self.node_card(from).is_some() && self.node_card(to).is_some();
        if both_nodes {
            // Node to node: over the cluster network's bus.
            let (ya, yb) = (self.port_y(a, to), self.port_y(b, from));
            return dedup(vec![pt(a.rect.x, ya), pt(self.bus_x, ya), pt(self.bus_x, yb), pt(b.rect.x, yb)]);
        }
        if ca == cb {
            return self.same_column(a, b, ca);
        }
        if ca > cb {
            let mut p = self.request_path(b, a);
            p.reverse();
            return p;
        }
        // Left to right: out of the right edge, along the gutters, into the left edge.
        let (ya, yb) = (self.port_y(a, to), self.port_y(b, from));
        let x1 = self.gutter_after(ca);
        let x2 = self.gutter_after(cb - 1);
        let mut p = vec![pt(a.rect.right(), ya), pt(x1, ya)];
        if cb - ca == 1 {
            p.push(pt(x1, yb));
        } else {
            // Cross the columns between through their gaps.
            for c in ca + 1..cb {
                let lane = self.lane(c, (ya + yb) / 2.0);
                p.push(pt(self.gutter_after(c - 1), lane));
                p.push(pt(self.gutter_after(c), lane));
            }
            p.push(pt(x2, yb));
        }
        p.push(pt(b.rect.x, yb));
        dedup(p)
    }

    /// A Pod and its own node: straight across the lane into the panel
    /// (at the Pod's height, or jogging in the lane to a row's), or, when
    /// the node only routes, up the lane and along the strip to its
    /// junction.
    fn pod_to_own_node(&self, n: &NodeCard, pod: Rect, node: &End) -> Vec<Point> {
        let py = pod.center().y;
        match node.port {
            Port::Route => dedup(vec![pt(pod.x, py), pt(n.lane_x, py), pt(n.lane_x, n.strip_y), pt(node.rect.right(), n.strip_y)]),
            Port::Row(_) if node.rect != n.panel => {
                let y = node.rect.center().y;
                dedup(vec![pt(pod.x, py), pt(n.lane_x, py), pt(n.lane_x, y), pt(node.rect.right(), y)])
            }
            _ => {
                let y = py.clamp(n.panel.y + 8.0, n.panel.bottom() - 8.0);
                dedup(vec![pt(pod.x, y), pt(n.panel.right(), y)])
            }
        }
    }

    /// Turns a route that ends at a node's junction into one that ends
    /// on a Pod of that node: through the junction, along the strip and
    /// down the lane.
    fn down_the_lane(&self, mut path: Vec<Point>, card: &NodeCard, pod: Rect) -> Vec<Point> {
        if path.len() < 2 {
            return path;
        }
        let y = pod.center().y;
        let n = path.len();
        path[n - 1] = pt(card.lane_x, card.strip_y);
        path.push(pt(card.lane_x, y));
        path.push(pt(pod.x, y));
        dedup(path)
    }

    /// Two boxes of one column: straight up or down between neighbours
    /// when they are far enough apart for a token to travel, else around
    /// through the gutter on the column's right.
    fn same_column(&self, a: &End, b: &End, c: usize) -> Vec<Point> {
        let col = &self.columns[c];
        let (ra, rb) = (a.rect, b.rect);
        let between = col.actors.iter().filter(|x| **x != a.id && **x != b.id).filter_map(|x| self.rect(*x)).any(|r| {
            let (top, bottom) = if ra.y < rb.y { (ra.bottom(), rb.y) } else { (rb.bottom(), ra.y) };
            r.y < bottom && r.bottom() > top
        });
        let gap = if ra.y < rb.y { rb.y - ra.bottom() } else { ra.y - rb.bottom() };
        if !between && gap >= MIN_HOP {
            let x = (ra.x.max(rb.x) + ra.right().min(rb.right())) / 2.0 + (ra.w.min(rb.w) / 5.0);
            return if ra.y < rb.y { vec![pt(x, ra.bottom()), pt(x, rb.y)] } else { vec![pt(x, ra.y), pt(x, rb.bottom())] };
        }
        let x = self.gutter_after(c);
        let (ya, yb) = (self.port_y(a, b.id), self.port_y(b, a.id));
        vec![pt(ra.right(), ya), pt(x, ya), pt(x, yb), pt(rb.right(), yb)]
    }

    /// The y at which a route to or from `other` meets an end: a row's
    /// middle, a node's strip, or a slot of the box's edge.
    fn port_y(&self, e: &End, other: ActorId) -> f64 {
        match (e.port, self.node_card(e.id)) {
            (Port::Route, Some(n)) => n.strip_y,
            (Port::Row(_), Some(_)) => e.rect.center().y,
            _ => port_y(&e.rect, other),
        }
    }
}

/// One end of a route: the actor, the box it ends on, and the port.
struct End {
    id: ActorId,
    rect: Rect,
    port: Port,
}

/// The shortest a hop may be drawn: longer than the widest token (a
/// `REPLY` pill and its arrowhead).
pub const MIN_HOP: f64 = 76.0;

/// How big each kind of box is: side columns as wide as their widest
/// text, node cards as wide as their panel, lane and widest Pod.
struct Sizes {
    outside_w: f64,
    control_w: f64,
    card_w: f64,
    pod_w: f64,
    pod_h: f64,
    /// The room a component's name has on one line.
    label_room: f64,
}

impl Sizes {
    fn measure(actors: &[Actor], shown_nodes: &[ActorId], shown_pods: &std::collections::BTreeMap<ActorId, (Vec<ActorId>, Vec<ActorId>)>) -> Sizes {
        use super::text::{balancer_width, component_lines, pod_lines, Role};
        let label_room = SIDE_MAX_W - 2.0 * (ZONE_PAD + BOX_PAD);
        let need = |a: &Actor| match a.kind {
            ActorKind::LoadBalancer => balancer_width(a),
            _ => component_lines(a, label_room).iter().map(|l| l.width()).fold(0.0, f64::max),
        };
        let side = |z: Zone| actors.iter().filter(|a| a.zone == z && a.parent.is_none() && a.kind != ActorKind::Node).map(need).fold(0.0, f64::max);
        let side_w = |z: Zone| (side(z) + 2.0 * (ZONE_PAD + BOX_PAD)).clamp(SIDE_MIN_W, SIDE_MAX_W).ceil();
        let shown: Vec<&Actor> = shown_pods.values().flat_map(|(s, _)| s.iter()).filter_map(|p| actors.get(p.index())).collect();
        let pod_text = shown.iter().flat_map(|a| pod_lines(a, false).into_iter().chain(pod_lines(a, true))).map(|l| l.width()).fold(0.0, f64::max);
        let pod_w = (pod_text + 2.0 * BOX_PAD).max(POD_MIN_W).ceil();
        let head = shown_nodes.iter().filter_map(|n| actors.get(n.index())).map(|n| Role::NodeName.width(&n.short) + Role::Mono.width(&n.sublabel) + 3.0 * BOX_PAD).fold(0.0, f64::max);
        let card_w = (2.0 * ZONE_PAD + PANEL_W + POD_LANE + pod_w).max(head).ceil();
        let pod_h = (super::text::stack_height(&pod_lines(&Actor::component(ActorKind::Pod, Zone::Cluster, "p", "p", "p"), true)) + 2.0 * BOX_PAD_V).ceil();
        Sizes { outside_w: side_w(Zone::Outside), control_w: side_w(Zone::ControlPlane), card_w, pod_w, pod_h, label_room }
    }

    fn side_w(&self, z: Zone) -> f64 {
        match z {
            Zone::Outside => self.outside_w,
            _ => self.control_w,
        }
    }

    /// A component's box height: its lines and padding; never shorter
    /// than a token's card needs beside it.
    fn box_h(&self, a: &Actor) -> f64 {
        use super::text::{balancer_lines, component_lines, stack_height};
        let lines = match a.kind {
            ActorKind::LoadBalancer => balancer_lines(a, crate::sim::BalancerView::Absent),
            _ => component_lines(a, self.label_room),
        };
        (stack_height(&lines) + 2.0 * BOX_PAD_V).ceil().max(56.0)
    }
}

/// The room a component's name has on one line of its box.
pub fn label_room(column_w: f64) -> f64 {
    column_w - 2.0 * (ZONE_PAD + BOX_PAD)
}

/// Padding inside a box, for the drawing.
pub const PAD: f64 = BOX_PAD;
/// Padding above a box's first line, for the drawing.
pub const PAD_V: f64 = BOX_PAD_V;

fn pod_area_h(pods: usize, pod_h: f64) -> f64 {
    let k = pods.max(1) as f64;
    (k * pod_h + (k - 1.0) * POD_GAP).max(PANEL_TITLE + PANEL_ROWS_MIN as f64 * PANEL_ROW + 8.0)
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
