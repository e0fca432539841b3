//! The canvas's text: what role each line plays (and so its size, font
//! and class), and what a box says, measured before anything is placed.
//!
//! Sizes are in drawing units. The camera never shows the drawing smaller
//! than the reader's minimum size for [`MIN_SIZE`] (see `camera`), so
//! every text shown is at least that many CSS pixels.
//!
//! Architecture Invariant: the layout sizes boxes from the same lines
//! and the same metrics the drawing writes into them, so a text fits its
//! box by construction; `geometry::check` proves it for every state.

use super::metrics::{self, Face};
use crate::sim::{Actor, ActorKind, BalancerView};
use serde::{Deserialize, Serialize};

/// The smallest text size in the drawing, in drawing units.
pub const MIN_SIZE: f64 = 13.0;

/// The role a line of canvas text plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// A zone's name (`OUTSIDE`).
    Zone,
    /// An actor's name in its box.
    Label,
    /// A node's name on its card.
    NodeName,
    /// An address or another machine-written value.
    Mono,
    /// A quiet note (`kubectl · client`).
    Muted,
    /// A panel's title (`kube-proxy · iptables`).
    PanelTitle,
    /// One summarised rule in a kube-proxy panel.
    Rule,
    /// A Pod's readiness.
    Ready,
    /// The first line of a token's card (`REQ · TCP`).
    CardHead,
    /// An address or payload line of a token's card.
    CardLine,
    /// A small tag on a card (`DNAT`).
    Tag,
}

impl Role {
    pub const fn size(self) -> f64 {
        match self {
            Role::Zone => 13.0,
            Role::Label => 15.0,
            Role::NodeName => 17.0,
            Role::Mono => 13.5,
            Role::Muted => 13.0,
            Role::PanelTitle => 13.0,
            Role::Rule => 13.5,
            Role::Ready => 13.0,
            Role::CardHead => 13.0,
            Role::CardLine => 13.5,
            Role::Tag => 13.0,
        }
    }

    pub const fn face(self) -> Face {
        match self {
            Role::Zone | Role::Label | Role::NodeName | Role::PanelTitle | Role::Ready | Role::CardHead | Role::Tag => Face::SansBold,
            Role::Mono | Role::Rule | Role::CardLine => Face::Mono,
            Role::Muted => Face::Sans,
        }
    }

    /// The CSS class that colours it.
    pub const fn class(self) -> &'static str {
        match self {
            Role::Zone => "kh-zone-label",
            Role::Label => "kh-label",
            Role::NodeName => "kh-node-name",
            Role::Mono => "kh-mono",
            Role::Muted => "kh-muted",
            Role::PanelTitle => "kh-panel-title",
            Role::Rule => "kh-rule-text",
            Role::Ready => "kh-ready",
            Role::CardHead => "kh-card-head",
            Role::CardLine => "kh-card-line",
            Role::Tag => "kh-tag-text",
        }
    }

    /// The distance from one baseline to the next.
    pub fn leading(self) -> f64 {
        (self.size() * 1.32).round()
    }

    pub fn width(self, text: &str) -> f64 {
        metrics::width(text, self.size(), self.face())
    }
}

/// A line of text in a role.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub text: String,
    pub role: Role,
}

impl Line {
    pub fn new(text: impl Into<String>, role: Role) -> Line {
        Line { text: text.into(), role }
    }

    pub fn width(&self) -> f64 {
        self.role.width(&self.text)
    }
}

/// Splits a long name over two lines: before a parenthesis, after a host
/// name's first label (`mydb.` / `example.com`), or at its last hyphen
/// (`cloud-controller-` / `manager`), when it is longer than `room`.
pub fn label_lines(label: &str, room: f64) -> Vec<String> {
    if Role::Label.width(label) <= room {
        return vec![label.to_string()];
    }
    let cut = label.find(" (").map(|i| (i, i + 1)).or_else(|| label.find('.').or_else(|| label.rfind('-')).filter(|i| *i > 2).map(|i| (i + 1, i + 1)));
    match cut {
        Some((end, start)) => vec![label[..end].to_string(), label[start..].to_string()],
        None => vec![label.to_string()],
    }
}

/// `text` in `role` broken into lines no wider than `room`, at spaces
/// (a word too long for a line of its own is split as a name is).
pub fn wrap(text: &str, role: Role, room: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let joined = lines.last().map(|l| format!("{l} {word}"));
        match joined {
            Some(j) if role.width(&j) <= room => *lines.last_mut().unwrap_or(&mut String::new()) = j,
            _ if role.width(word) > room => lines.extend(label_lines(word, room)),
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// What a component's box says, top to bottom: its name (one or two
/// lines), its address (or what it is, in a few words) and what it does.
pub fn component_lines(a: &Actor, room: f64) -> Vec<Line> {
    let mut out: Vec<Line> = label_lines(&a.label, room).into_iter().map(|l| Line::new(l, Role::Label)).collect();
    if !a.sublabel.is_empty() {
        // An address in monospace; a phrase in the quiet face, wrapped.
        let role = if a.sublabel.contains(' ') { Role::Muted } else { Role::Mono };
        out.extend(wrap(&a.sublabel, role, room).into_iter().map(|l| Line::new(l, role)));
    }
    if let Some(r) = role_of(a.kind) {
        out.push(Line::new(r, Role::Muted));
    }
    out
}

/// What a component does, under its name, where the name does not say.
pub fn role_of(kind: ActorKind) -> Option<&'static str> {
    match kind {
        ActorKind::Laptop => Some("kubectl · client"),
        ActorKind::Resolver => Some("upstream DNS"),
        ActorKind::OutsideHost => Some("outside host"),
        _ => None,
    }
}

/// What a balancer's box says in each of its states: name, address, note.
pub fn balancer_lines(a: &Actor, state: BalancerView) -> Vec<Line> {
    let (addr, note) = match state {
        BalancerView::Absent => ("none yet".to_string(), "only for a LoadBalancer"),
        BalancerView::Provisioning => ("provisioning…".to_string(), "IP <pending>"),
        BalancerView::Active { ip } => (ip.to_string(), "to node ports"),
    };
    vec![Line::new(a.short.clone(), Role::Label), Line::new(addr, Role::Mono), Line::new(note, Role::Muted)]
}

/// The widest a balancer's box must be, over its states (the address
/// measured as the widest IPv4 address).
pub fn balancer_width(a: &Actor) -> f64 {
    let widest = crate::sim::BalancerView::Active { ip: std::net::Ipv4Addr::new(255, 255, 255, 255) };
    [BalancerView::Absent, BalancerView::Provisioning, widest].into_iter().flat_map(|s| balancer_lines(a, s)).map(|l| l.width()).fold(0.0, f64::max)
}

/// The height a stack of lines takes, from the first line's top to the
/// last line's descenders, without padding.
pub fn stack_height(lines: &[Line]) -> f64 {
    match lines {
        [] => 0.0,
        [first, rest @ ..] => metrics::ascent(first.role.size()) + rest.iter().map(|l| l.role.leading()).sum::<f64>() + lines.last().map_or(0.0, |l| metrics::descent(l.role.size())),
    }
}

/// What a Pod's box says: its name (CoreDNS by its role), its address
/// (or "host network"), and whether it is Ready: on a line of its own in
/// the full picture; in the compact one, a Pod that is not Ready has a
/// cross before its name (and its title says so).
pub fn pod_lines(a: &Actor, ready: bool, detail: super::layout::Detail) -> Vec<Line> {
    let dns = a.kind == ActorKind::CoreDns;
    let name = if dns { "CoreDNS".to_string() } else { a.short.clone() };
    if !detail.dims().pod_ready_line {
        // The chip stands in the node's Pods: its name needs no "Pod".
        let name = name.strip_prefix("Pod ").unwrap_or(&name);
        // Its name as kubectl prints it, in the machine face.
        let name = if ready { name.to_string() } else { format!("✕ {name}") };
        return vec![Line::new(name, Role::Mono), Line::new(a.sublabel.clone(), Role::Mono)];
    }
    let state = match (ready, dns) {
        (true, true) => "✓ Ready · kube-dns",
        (true, false) => "✓ Ready",
        (false, _) => "✕ not Ready",
    };
    vec![Line::new(name, Role::Label), Line::new(a.sublabel.clone(), Role::Mono), Line::new(state, Role::Ready)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_split_where_a_reader_expects() {
        assert_eq!(label_lines("cloud-controller-manager", 160.0), vec!["cloud-controller-", "manager"]);
        assert_eq!(label_lines("mydb.example.com", 100.0), vec!["mydb.", "example.com"]);
        assert_eq!(label_lines("Laptop (Docker Engine)", 120.0), vec!["Laptop", "(Docker Engine)"]);
        assert_eq!(label_lines("API server", 160.0), vec!["API server"]);
    }

    #[test]
    fn wrapping_keeps_every_word_and_each_line_fits() {
        let t = "metallb-system, watches LoadBalancer Services";
        let lines = wrap(t, Role::Muted, 150.0);
        assert!(lines.len() > 1);
        assert_eq!(lines.join(" "), t);
        assert!(lines.iter().all(|l| Role::Muted.width(l) <= 150.0), "{lines:?}");
    }

    #[test]
    fn no_role_is_smaller_than_the_minimum() {
        for r in [Role::Zone, Role::Label, Role::NodeName, Role::Mono, Role::Muted, Role::PanelTitle, Role::Rule, Role::Ready, Role::CardHead, Role::CardLine, Role::Tag] {
            assert!(r.size() >= MIN_SIZE, "{r:?}");
        }
    }
}
