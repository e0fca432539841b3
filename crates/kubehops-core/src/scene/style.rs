//! How each kind of hop looks: the one table the canvas, the hop panel,
//! the hop list, the legend, the transcript and the presenter view read,
//! so a kind's colour class, its label and its line pattern are written
//! once.
//!
//! Colour is never the only cue: every kind also has its own label on the
//! token and in the lists, and its own line pattern on the canvas.

use crate::sim::{Hop, HopKind};
use serde::{Deserialize, Serialize};

/// A trail's line pattern, as SVG's `stroke-dasharray` in drawing units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dash {
    Solid,
    /// Long dashes: a reply.
    Dashed,
    /// Dots: a control-plane message.
    Dotted,
    /// Dash and dot: a lookup (DNS, ARP).
    DashDot,
    /// Dash and two dots: a drop.
    DashDotDot,
}

impl Dash {
    /// The `stroke-dasharray` value; `None` for a solid line.
    pub fn dasharray(self) -> Option<&'static str> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some("9 6"),
            Dash::Dotted => Some("2 6"),
            Dash::DashDot => Some("12 4 2 4"),
            Dash::DashDotDot => Some("14 4 2 4 2 4"),
        }
    }
}

/// What a kind of hop looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KindStyle {
    /// The CSS class naming its colour (`kh-{class}`).
    pub class: &'static str,
    /// The label on its token and in the hop list (`REQ`).
    pub label: &'static str,
    /// The kind as a word (`request`).
    pub name: &'static str,
    pub dash: Dash,
}

/// Every kind, in the legend's order.
pub const KINDS: [HopKind; 5] = [HopKind::Dns, HopKind::Request, HopKind::Reply, HopKind::ControlPlane, HopKind::Dropped];

/// A kind's style.
pub const fn kind_style(k: HopKind) -> KindStyle {
    match k {
        HopKind::Dns => KindStyle { class: "dns", label: "DNS", name: "DNS", dash: Dash::DashDot },
        HopKind::Request => KindStyle { class: "request", label: "REQ", name: "request", dash: Dash::Solid },
        HopKind::Reply => KindStyle { class: "reply", label: "REPLY", name: "reply", dash: Dash::Dashed },
        HopKind::ControlPlane => KindStyle { class: "control", label: "CTRL", name: "control plane", dash: Dash::Dotted },
        HopKind::Dropped => KindStyle { class: "dropped", label: "DROP", name: "dropped", dash: Dash::DashDotDot },
    }
}

/// A hop's style: its kind's, but an ARP frame says ARP (a lookup, drawn
/// in the DNS colour and pattern).
pub fn hop_style(h: &Hop) -> KindStyle {
    if h.arp.is_some() {
        KindStyle { class: "dns", label: "ARP", name: "ARP", dash: Dash::DashDot }
    } else {
        kind_style(h.kind)
    }
}

/// The pattern of a what-if hop (an alternative not taken), whatever its kind.
pub const WHAT_IF_DASH: &str = "5 5";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_label_and_pattern() {
        for (i, a) in KINDS.iter().enumerate() {
            for b in &KINDS[i + 1..] {
                let (sa, sb) = (kind_style(*a), kind_style(*b));
                assert_ne!(sa.label, sb.label);
                assert_ne!(sa.dash, sb.dash, "{a:?} and {b:?} share a line pattern");
                assert_ne!(sa.class, sb.class);
            }
        }
    }
}
