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

/// How much of each actor a layout draws: all of it, or, for a frame
/// that cannot hold the full picture legibly, less of it, never fewer
/// actors (see [`Layout::fitting`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Detail {
    /// Side zones in columns of their own, node cards with their full
    /// header and four rule rows, Pods with their readiness on a line.
    #[default]
    Full,
    /// The outside and the control plane share one column, one above the
    /// other; node cards have a one-line header and three rule rows; a Pod
    /// is a chip with its name and address (readiness marked on the name);
    /// padding and gaps are tighter.
    Compact,
}

impl Detail {
    /// Every level, richest first.
    pub const ALL: [Detail; 2] = [Detail::Full, Detail::Compact];

    /// The sizes this level lays boxes out with.
    pub fn dims(self) -> &'static Dims {
        match self {
            Detail::Full => &FULL,
            Detail::Compact => &COMPACT,
        }
    }

    /// The level a frame shows: the full picture (whose extent is
    /// `full_world`) where the frame holds it whole at a legible scale,
    /// else the compact one.
    pub fn for_frame(full_world: Rect, vp: super::camera::Viewport) -> Detail {
        if super::camera::whole(full_world, vp).scale >= super::camera::legible_scale(vp) {
            Detail::Full
        } else {
            Detail::Compact
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Detail::Full => "full",
            Detail::Compact => "compact",
        }
    }
}

/// The sizes of a level of detail, in drawing units.
#[derive(Debug)]
pub struct Dims {
    pub margin: f64,
    /// The gap between zone columns, where routes run: wide enough that a
    /// hop between neighbouring columns is longer than its token.
    pub gutter: f64,
    /// Height of a zone's label strip, and its label's baseline in it.
    pub zone_label: f64,
    pub zone_baseline: f64,
    pub zone_pad: f64,
    /// The gap between two zones stacked in one column.
    pub zone_gap: f64,
    /// Padding inside a box, left and right of its text, and above and
    /// below it.
    pub box_pad: f64,
    pub box_pad_v: f64,
    /// The narrowest and the widest side column (outside, control plane):
    /// longer names and phrases wrap.
    pub side_min_w: f64,
    pub side_max_w: f64,
    /// Whether the outside and the control plane share one column.
    pub stacked_sides: bool,
    /// Space at the left of the cluster zone for the cluster network's bus.
    pub bus_w: f64,
    /// A node card's header: its name and address (at `node_baseline`),
    /// then the strip where a packet the node only routes runs, which is
    /// `strip_above_panel` above the panel.
    pub node_header: f64,
    pub node_baseline: f64,
    /// Whether the node's name and address stand on two lines above its
    /// Pods, right of the Pod lane, clear of the strip (where routed
    /// packets run), rather than across the header.
    pub head_over_pods: bool,
    pub strip_above_panel: f64,
    /// The size of a node's junction, where it routes.
    pub junction_w: f64,
    pub junction_h: f64,
    pub node_gap: f64,
    pub pod_gap: f64,
    /// The rules panel: title (its baseline), then rows (a row's text
    /// baseline from the row's top).
    pub panel_title: f64,
    pub panel_baseline: f64,
    pub panel_row: f64,
    pub row_baseline: f64,
    pub panel_rows_min: usize,
    /// The panel's width: a rule row's longest text.
    pub panel_w: f64,
    /// The gap between a node's panel and its Pods, where a packet
    /// crosses the Pod's veth: longer than a token.
    pub pod_lane: f64,
    pub pod_min_w: f64,
    /// Whether a Pod's box says its readiness on a line of its own.
    pub pod_ready_line: bool,
    pub box_gap_min: f64,
    /// The smallest height of a side column's box, and of a control
    /// plane's (the API server meets a route from every component).
    pub box_min_h: f64,
    pub control_min_h: f64,
    /// How much of a box's edge, top and bottom together, routes do not
    /// leave from (they are spread 14 units apart over the rest).
    pub port_margin: f64,
    /// Height of the group card of nodes without a card of their own.
    pub node_group_h: f64,
}

/// The full picture's sizes.
pub const FULL: Dims = Dims {
    margin: 8.0,
    gutter: 76.0,
    zone_label: 36.0,
    zone_baseline: 23.0,
    zone_pad: 12.0,
    zone_gap: 14.0,
    box_pad: 12.0,
    box_pad_v: 12.0,
    side_min_w: 176.0,
    side_max_w: 212.0,
    stacked_sides: false,
    bus_w: 34.0,
    node_header: 76.0,
    node_baseline: 28.0,
    head_over_pods: false,
    strip_above_panel: 24.0,
    junction_w: 28.0,
    junction_h: 40.0,
    node_gap: 22.0,
    pod_gap: 10.0,
    panel_title: 26.0,
    panel_baseline: 18.0,
    panel_row: 23.0,
    row_baseline: 15.5,
    panel_rows_min: 4,
    panel_w: 290.0,
    pod_lane: 104.0,
    pod_min_w: 160.0,
    pod_ready_line: true,
    box_gap_min: 30.0,
    box_min_h: 56.0,
    control_min_h: 56.0,
    port_margin: 24.0,
    node_group_h: 60.0,
};

/// The compact picture's sizes: the same text, less room around it.
pub const COMPACT: Dims = Dims {
    margin: 4.0,
    gutter: 58.0,
    zone_label: 24.0,
    zone_baseline: 17.0,
    zone_pad: 6.0,
    zone_gap: 10.0,
    box_pad: 8.0,
    box_pad_v: 6.0,
    side_min_w: 140.0,
    side_max_w: 176.0,
    stacked_sides: true,
    bus_w: 24.0,
    node_header: 44.0,
    node_baseline: 18.0,
    head_over_pods: true,
    strip_above_panel: 24.0,
    junction_w: 24.0,
    junction_h: 36.0,
    node_gap: 8.0,
    pod_gap: 6.0,
    panel_title: 22.0,
    panel_baseline: 16.0,
    panel_row: 20.0,
    row_baseline: 14.0,
    panel_rows_min: 3,
    panel_w: 250.0,
    pod_lane: 100.0,
    pod_min_w: 120.0,
    pod_ready_line: false,
    box_gap_min: 14.0,
    box_min_h: 52.0,
    control_min_h: 80.0,
    port_margin: 24.0,
    node_group_h: 44.0,
};

/// How far right of the Pod lane a node's name starts where it stands
/// over its Pods (`Dims::head_over_pods`): clear of a token that rests
/// in the lane.
pub const HEAD_INSET: f64 = 38.0;

/// The most a box of stacked zones grows into room to spare.
const BOX_GROW_MAX: f64 = 44.0;

/// Above this many nodes, only featured ones get a card; the rest share
/// one group card ("+42 nodes").
pub const MAX_NODES_SHOWN: usize = 6;
/// Above this many Pods on a node, only featured ones get a box; the rest
/// share one group box ("+37 Pods").
pub const MAX_PODS_SHOWN: usize = 5;

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
    /// Which column of the picture, left to right: zones stacked one
    /// above the other share one.
    #[serde(default)]
    pub band: usize,
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
    #[serde(default)]
    pub detail: Detail,
}

impl NodeCard {
    /// The node's junction: where a packet the node only routes (no rule
    /// rewrites it) passes, on the strip above the middle of its panel,
    /// so that routes to it from the bus and from the Pods are long
    /// enough to see a token move.
    pub fn junction(&self) -> Rect {
        let d = self.detail.dims();
        let x = self.panel.x + self.panel.w * 0.55;
        Rect { x: x - d.junction_w / 2.0, y: self.strip_y - d.junction_h / 2.0, w: d.junction_w, h: d.junction_h }
    }

    /// How many rule rows the panel holds.
    pub fn rows(&self) -> usize {
        let d = self.detail.dims();
        (((self.panel.h - d.panel_title - 6.0) / d.panel_row).floor().max(1.0)) as usize
    }

    /// The box of row `i` of the panel.
    pub fn row(&self, i: usize) -> Rect {
        let d = self.detail.dims();
        Rect { x: self.panel.x + 4.0, y: self.panel.y + d.panel_title + i as f64 * d.panel_row, w: self.panel.w - 8.0, h: d.panel_row - 2.0 }
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
    #[serde(default)]
    pub detail: Detail,
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
        Layout::at_detail(actors, featured, Detail::Full)
    }

    /// [`Layout::with_featured`] at a level of detail.
    pub fn at_detail(actors: &[Actor], featured: &[ActorId], detail: Detail) -> Layout {
        let d = detail.dims();
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
        let sizes = Sizes::measure(actors, &shown_nodes, &shown_pods, detail);
        let boxes_in = |n: ActorId| shown_pods.get(&n).map_or(0, |(s, h)| s.len() + usize::from(!h.is_empty()));
        let card_h = |n: ActorId| d.node_header + pod_area_h(boxes_in(n), sizes.pod_h, d) + d.zone_pad;
        let group_h = if hidden_nodes.is_empty() { 0.0 } else { d.node_group_h + d.node_gap };
        let cluster_h = d.zone_label + shown_nodes.iter().map(|n| card_h(*n)).sum::<f64>() + d.node_gap * shown_nodes.len().saturating_sub(1) as f64 + group_h + d.zone_pad;
        let side_members = |z: Zone| actors.iter().filter(move |a| a.zone == z && a.parent.is_none() && a.kind != ActorKind::Node);
        let column_need = |z: Zone| {
            let hs: Vec<f64> = side_members(z).map(|a| sizes.box_h(a)).collect();
            d.zone_label + hs.iter().sum::<f64>() + d.box_gap_min * (hs.len() + 1) as f64
        };
        // The picture's columns, left to right: each a list of zones, one
        // above the other.
        let bands: Vec<Vec<Zone>> = if d.stacked_sides {
            let sides: Vec<Zone> = zones.iter().copied().filter(|z| *z != Zone::Cluster).collect();
            let mut b: Vec<Vec<Zone>> = Vec::new();
            if !sides.is_empty() {
                b.push(sides);
            }
            if zones.contains(&Zone::Cluster) {
                b.push(vec![Zone::Cluster]);
            }
            b
        } else {
            zones.iter().map(|z| vec![*z]).collect()
        };
        let band_need = |b: &[Zone]| {
            b.iter().map(|z| if *z == Zone::Cluster { cluster_h } else { column_need(*z) }).sum::<f64>() + d.zone_gap * b.len().saturating_sub(1) as f64
        };
        let inner_h = bands.iter().map(|b| band_need(b)).fold(0.0, f64::max).max(if d.stacked_sides { 240.0 } else { 320.0 });
        let height = inner_h + 2.0 * d.margin;

        let mut x = d.margin;
        let mut columns = Vec::new();
        let mut boxes = Vec::new();
        let mut nodes = Vec::new();
        let mut groups = Vec::new();
        let mut bus_x = 0.0;
        for (band, zs) in bands.iter().enumerate() {
            let w = zs
                .iter()
                .map(|z| match z {
                    Zone::Cluster => d.bus_w + 4.0 + sizes.card_w + d.zone_pad,
                    _ => sizes.side_w(*z),
                })
                .fold(0.0, f64::max);
            // Zones stacked in a column share its spare height evenly.
            let spare = (inner_h - band_need(zs)) / zs.len().max(1) as f64;
            let mut y = d.margin;
            for z in zs {
                let need = if *z == Zone::Cluster { cluster_h } else { column_need(*z) };
                let h = if zs.len() == 1 { inner_h } else { need + spare };
                let rect = Rect { x, y, w, h };
                y += h + d.zone_gap;
                let members: Vec<&Actor> = actors.iter().filter(|a| a.zone == *z && a.parent.is_none()).collect();
                if *z == Zone::Cluster {
                    bus_x = rect.x + d.bus_w / 2.0 + 2.0;
                    let mut y = rect.y + d.zone_label;
                    for n in members.iter().filter(|a| a.kind == ActorKind::Node && shown_nodes.contains(&a.id)) {
                        let card = Rect { x: rect.x + d.bus_w + 4.0, y, w: sizes.card_w, h: card_h(n.id) };
                        let area_h = card.h - d.node_header - d.zone_pad;
                        let panel = Rect { x: card.x + d.zone_pad, y: card.y + d.node_header, w: d.panel_w, h: area_h };
                        let pods = Rect { x: panel.right() + d.pod_lane, y: panel.y, w: sizes.pod_w, h: area_h };
                        boxes.push((n.id, card));
                        let (list, hidden) = shown_pods.get(&n.id).cloned().unwrap_or_default();
                        let ph = sizes.pod_h;
                        for (j, p) in list.iter().enumerate() {
                            boxes.push((*p, Rect { x: pods.x, y: pods.y + j as f64 * (ph + d.pod_gap), w: pods.w, h: ph }));
                        }
                        if !hidden.is_empty() {
                            let j = list.len();
                            groups.push(GroupBox { rect: Rect { x: pods.x, y: pods.y + j as f64 * (ph + d.pod_gap), w: pods.w, h: ph }, kind: ActorKind::Pod, node: Some(n.id), members: hidden });
                        }
                        let strip_y = panel.y - d.strip_above_panel;
                        nodes.push(NodeCard { node: n.id, card, panel, pods, strip_y, lane_x: panel.right() + d.pod_lane / 2.0, detail });
                        y += card.h + d.node_gap;
                    }
                    if !hidden_nodes.is_empty() {
                        let card = Rect { x: rect.x + d.bus_w + 4.0, y, w: sizes.card_w, h: d.node_group_h };
                        let mut members = hidden_nodes.clone();
                        // Their Pods are in the group too.
                        members.extend(hidden_nodes.iter().flat_map(|n| pods_by_node.get(n).cloned().unwrap_or_default()));
                        groups.push(GroupBox { rect: card, kind: ActorKind::Node, node: None, members });
                    }
                } else {
                    let mut hs: Vec<f64> = members.iter().map(|a| sizes.box_h(a)).collect();
                    // Stacked zones route everything through one edge of
                    // their boxes: the room to spare makes them taller, so
                    // routes meet them apart.
                    let spare = rect.h - d.zone_label - hs.iter().sum::<f64>() - d.box_gap_min * (hs.len() + 1) as f64;
                    if d.stacked_sides && spare > 0.0 && !hs.is_empty() {
                        let grow = (spare / hs.len() as f64).min(BOX_GROW_MAX).floor();
                        hs.iter_mut().for_each(|h| *h += grow);
                    }
                    let gap = ((rect.h - d.zone_label - hs.iter().sum::<f64>()) / (hs.len() + 1) as f64).max(d.box_gap_min);
                    let mut y = rect.y + d.zone_label + gap;
                    for (a, h) in members.iter().zip(&hs) {
                        boxes.push((a.id, Rect { x: rect.x + d.zone_pad, y, w: rect.w - 2.0 * d.zone_pad, h: *h }));
                        y += h + gap;
                    }
                }
                columns.push(Column { zone: *z, rect, actors: members.iter().map(|a| a.id).collect(), band });
            }
            x += w + d.gutter;
        }
        let width = (x - d.gutter + d.margin).max(320.0);
        Layout { width, height, columns, boxes, nodes, groups, bus_x, detail }
    }

    /// The layout a frame shows: the full picture where the frame holds
    /// it whole at a legible scale, else the compact one (which the
    /// camera then frames whole where it can, or follows the hops).
    pub fn fitting(s: &crate::scenarios::Scenario, vp: super::camera::Viewport) -> Layout {
        let full = Layout::for_scenario(s);
        match Detail::for_frame(full.world(), vp) {
            Detail::Full => full,
            d => Layout::for_scenario_at(s, d),
        }
    }

    /// The layout of a scenario at a level of detail, with the actors its
    /// story touches kept out of groups.
    pub fn for_scenario_at(s: &crate::scenarios::Scenario, detail: Detail) -> Layout {
        Layout::at_detail(&s.actors, &super::featured(s), detail)
    }

    /// The sizes this layout was made with.
    pub fn dims(&self) -> &'static Dims {
        self.detail.dims()
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
        self.columns[c].rect.right() + self.dims().gutter / 2.0
    }

    /// A y in a free gap of column `c`, as near `want` as the gaps allow.
    fn lane(&self, c: usize, want: f64) -> f64 {
        let col = &self.columns[c];
        let mut edges = vec![col.rect.y + self.dims().zone_label - 6.0];
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
        let (ba, bb) = (self.columns[ca].band, self.columns[cb].band);
        if ba == bb {
            // Two zones stacked in one column: around through the gutter
            // on its right.
            return self.around(a, b, ca);
        }
        if ba > bb {
            let mut p = self.request_path(b, a);
            p.reverse();
            return p;
        }
        // Left to right: out of the right edge, along the gutters, into the left edge.
        let (ya, yb) = (self.port_y(a, to), self.port_y(b, from));
        let in_band = |k: usize| self.columns.iter().position(|c| c.band == k).unwrap_or(ca);
        let x1 = self.gutter_after(ca);
        let x2 = self.gutter_after(in_band(bb - 1));
        let mut p = vec![pt(a.rect.right(), ya), pt(x1, ya)];
        if bb - ba == 1 {
            p.push(pt(x1, yb));
        } else {
            // Cross the columns between through their gaps.
            for k in ba + 1..bb {
                let c = in_band(k);
                let lane = self.lane(c, (ya + yb) / 2.0);
                p.push(pt(self.gutter_after(in_band(k - 1)), lane));
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
        self.around(a, b, c)
    }

    /// Out of `a`'s right edge into the gutter right of column `c`, along
    /// it, and into `b`'s right edge.
    fn around(&self, a: &End, b: &End, c: usize) -> Vec<Point> {
        let x = self.gutter_after(c);
        let (ya, yb) = (self.port_y(a, b.id), self.port_y(b, a.id));
        vec![pt(a.rect.right(), ya), pt(x, ya), pt(x, yb), pt(b.rect.right(), yb)]
    }

    /// The y at which a route to or from `other` meets an end: a row's
    /// middle, a node's strip, or a slot of the box's edge.
    fn port_y(&self, e: &End, other: ActorId) -> f64 {
        match (e.port, self.node_card(e.id)) {
            (Port::Route, Some(n)) => n.strip_y,
            (Port::Row(_), Some(_)) => e.rect.center().y,
            _ => port_y(&e.rect, other, self.dims().port_margin),
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
    dims: &'static Dims,
}

impl Sizes {
    fn measure(actors: &[Actor], shown_nodes: &[ActorId], shown_pods: &std::collections::BTreeMap<ActorId, (Vec<ActorId>, Vec<ActorId>)>, detail: Detail) -> Sizes {
        use super::text::{balancer_width, component_lines, pod_lines, Role};
        let d = detail.dims();
        let label_room = d.side_max_w - 2.0 * (d.zone_pad + d.box_pad);
        let need = |a: &Actor| match a.kind {
            ActorKind::LoadBalancer => balancer_width(a),
            _ => component_lines(a, label_room).iter().map(|l| l.width()).fold(0.0, f64::max),
        };
        let side = |z: Zone| actors.iter().filter(|a| a.zone == z && a.parent.is_none() && a.kind != ActorKind::Node).map(need).fold(0.0, f64::max);
        let side_w = |z: Zone| (side(z) + 2.0 * (d.zone_pad + d.box_pad)).clamp(d.side_min_w, d.side_max_w).ceil();
        let shown: Vec<&Actor> = shown_pods.values().flat_map(|(s, _)| s.iter()).filter_map(|p| actors.get(p.index())).collect();
        let pod_text = shown.iter().flat_map(|a| pod_lines(a, false, detail).into_iter().chain(pod_lines(a, true, detail))).map(|l| l.width()).fold(0.0, f64::max);
        let pod_w = (pod_text + 2.0 * d.box_pad).max(d.pod_min_w).ceil();
        let heads = shown_nodes.iter().filter_map(|n| actors.get(n.index()));
        let (head, pod_w) = if d.head_over_pods {
            // Name over address, from just right of the lane to the card's edge.
            let need = heads.map(|n| Role::NodeName.width(&n.short).max(Role::Mono.width(&n.sublabel))).fold(0.0, f64::max) + HEAD_INSET + d.box_pad + d.zone_pad;
            (0.0, pod_w.max((need - d.pod_lane / 2.0).ceil()))
        } else {
            (heads.map(|n| Role::NodeName.width(&n.short) + Role::Mono.width(&n.sublabel) + 3.0 * d.box_pad).fold(0.0, f64::max), pod_w)
        };
        let card_w = (2.0 * d.zone_pad + d.panel_w + d.pod_lane + pod_w).max(head).ceil();
        let pod_h = (super::text::stack_height(&pod_lines(&Actor::component(ActorKind::Pod, Zone::Cluster, "p", "p", "p"), true, detail)) + 2.0 * d.box_pad_v).ceil();
        Sizes { outside_w: side_w(Zone::Outside), control_w: side_w(Zone::ControlPlane), card_w, pod_w, pod_h, label_room, dims: d }
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
        let min = if a.zone == Zone::ControlPlane { self.dims.control_min_h } else { self.dims.box_min_h };
        (stack_height(&lines) + 2.0 * self.dims.box_pad_v).ceil().max(min)
    }
}

/// The room a component's name has on one line of a box `box_w` wide.
pub fn label_room(box_w: f64, d: &Dims) -> f64 {
    box_w - 2.0 * d.box_pad
}

fn pod_area_h(pods: usize, pod_h: f64, d: &Dims) -> f64 {
    let k = pods.max(1) as f64;
    (k * pod_h + (k - 1.0) * d.pod_gap).max(d.panel_title + d.panel_rows_min as f64 * d.panel_row + 8.0)
}

/// The y at which a route to or from `other` leaves or enters a box:
/// spread over the middle of the edge by the other end's id, so routes
/// from different actors do not share one point.
fn port_y(r: &Rect, other: ActorId, margin: f64) -> f64 {
    let slots = ((r.h - margin) / 14.0).floor().max(1.0);
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
