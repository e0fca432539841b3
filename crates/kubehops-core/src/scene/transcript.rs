//! The transcript: a scenario told in text, for readers, screen readers
//! and paper. One section per step (its narration, each hop as text,
//! kubectl's output at the end of the step) built from the same steps and
//! hops the animation draws, so the two cannot disagree.
//!
//! Everything here reads typed fields of the hops (their rewrites, the
//! rules that matched and the field each rule's target rewrites, the
//! conntrack flag, the payload); none of it reads captions back. The web
//! renders the structure as headings, lists and `<pre>` blocks.

use crate::dataplane::rules::RuleTable;
use crate::scenarios::{Scenario, Step};
use crate::sim::{ActorId, Field, Hop, HopKind, MatchedRule, PacketHop, Rewrite, RewriteKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub scenario: String,
    pub title: String,
    /// The demo the parameters select: its label and narration.
    pub demo: Option<(String, String)>,
    pub steps: Vec<StepText>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepText {
    /// 1-based.
    pub number: usize,
    pub title: String,
    pub narration: String,
    /// The manifest the step applied, when it changed one: file and lines
    /// (the changed ones marked).
    pub manifest: Option<ManifestText>,
    pub hops: Vec<HopText>,
    /// kubectl's output at the end of the step, then the step's evidence.
    pub terminals: Vec<Terminal>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestText {
    pub file: String,
    /// Each line, and whether this step changed it.
    pub lines: Vec<(String, bool)>,
}

/// A command and what it prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Terminal {
    pub command: String,
    /// What it is for, where the step says.
    pub purpose: Option<String>,
    pub output: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HopText {
    /// 1-based.
    pub number: usize,
    pub kind: HopKind,
    /// The kind as a word: `request`, `reply`, `DNS`, `ARP`, `control plane`, `dropped`.
    pub kind_name: String,
    pub from: ActorId,
    pub to: ActorId,
    /// Short labels, as the canvas and the hop list name them.
    pub from_name: String,
    pub to_name: String,
    pub what_if: bool,
    /// One sentence: who sends what to whom.
    pub summary: String,
    /// The hop's own account (its detail).
    pub detail: String,
    pub rows: Vec<Row>,
}

/// One line under a hop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub kind: RowKind,
    pub text: String,
    /// The rule lines behind it (matched rules, with their table).
    pub items: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowKind {
    /// The packet as it arrived, when this hop changed it.
    Arrived,
    /// The packet as it travels on this hop.
    Wire,
    Carries,
    /// One rewrite, and what made it.
    Rewrite,
    /// The rules walked on a node.
    Rules,
    /// The rules kube-proxy's other mode walked for the same hop (a
    /// transcript of both modes, [`transcript_both`]).
    OtherMode,
    CouldReach,
    Dropped,
    Arp,
}

/// A hop's kind as a word; an ARP frame says ARP (drawn in the DNS colour).
pub fn kind_name(h: &Hop) -> &'static str {
    if h.arp.is_some() {
        return "ARP";
    }
    match h.kind {
        HopKind::Dns => "DNS",
        HopKind::Request => "request",
        HopKind::Reply => "reply",
        HopKind::ControlPlane => "control plane",
        HopKind::Dropped => "dropped",
    }
}

/// `DNAT`, `SNAT`, `un-DNAT`, …: a rewrite's kind as the panels name it.
pub fn rewrite_name(k: RewriteKind) -> &'static str {
    match k {
        RewriteKind::Dnat => "DNAT",
        RewriteKind::Snat => "SNAT",
        RewriteKind::UnDnat => "un-DNAT",
        RewriteKind::UnSnat => "un-SNAT",
        RewriteKind::Balancer => "balancer rewrite",
    }
}

/// A rewrite's short tag, beside an address (`DNAT`, `balancer`).
pub fn rewrite_tag(k: RewriteKind) -> &'static str {
    match k {
        RewriteKind::Dnat => "DNAT",
        RewriteKind::Snat => "SNAT",
        RewriteKind::UnDnat => "un-DNAT",
        RewriteKind::UnSnat => "un-SNAT",
        RewriteKind::Balancer => "balancer",
    }
}

fn field_name(f: Field) -> &'static str {
    match f {
        Field::Source => "source",
        Field::Destination => "destination",
    }
}

fn table_name(t: RuleTable) -> &'static str {
    t.name()
}

/// The short name of an actor, or its id when the scenario lacks it.
pub fn short(s: &Scenario, a: ActorId) -> String {
    s.actor(a).map_or_else(|| format!("actor {}", a.0), |x| x.short.clone())
}

/// Who sends what to whom, in one sentence without the final stop:
/// `Request from Laptop to Node-2: 198.51.100.23:51000 → 10.0.0.12:31000 tcp`.
pub fn hop_summary(s: &Scenario, h: &Hop) -> String {
    let kind = kind_name(h);
    let mut kind = kind.to_string();
    if let Some(c) = kind.get(0..1) {
        if kind != "ARP" && kind != "DNS" {
            kind = format!("{}{}", c.to_uppercase(), &kind[1..]);
        }
    }
    let route = if h.from == h.to { format!("on {}", short(s, h.from)) } else { format!("from {} to {}", short(s, h.from), short(s, h.to)) };
    let what = match (&h.packet, &h.arp) {
        (Some(p), _) => format!(": {}", p.after),
        (None, Some(a)) => format!(": {}", a.summary()),
        (None, None) => format!(": {}", h.caption),
    };
    let what_if = if h.what_if { s.what_if.as_ref().map_or_else(|| " (what if)".to_string(), |w| format!(" (what if: {w})")) } else { String::new() };
    format!("{kind}{what_if} {route}{what}")
}

/// The rule that made a rewrite: the matched rule whose target rewrites
/// that field (the DNAT, the MASQUERADE).
fn rule_for<'a>(p: &'a PacketHop, r: &Rewrite) -> Option<&'a MatchedRule> {
    match r.kind {
        RewriteKind::Dnat | RewriteKind::Snat => p.matched.iter().rev().find(|m| m.rewrites == Some(r.field)),
        _ => None,
    }
}

/// `DNAT of the destination 10.0.0.12:31000 to 10.244.3.9:8080, by rule
/// 58 (nat) on Node-2: -A KUBE-SEP-… -j DNAT …`.
pub fn rewrite_text(s: &Scenario, h: &Hop, p: &PacketHop, r: &Rewrite) -> String {
    let head = format!("{} of the {} {} to {}", rewrite_name(r.kind), field_name(r.field), r.from, r.to);
    let node = p.decided_on.map(|n| short(s, n));
    let on = node.as_ref().map(|n| format!(" on {n}")).unwrap_or_default();
    let by = match (r.kind, p.by_conntrack, rule_for(p, r)) {
        // The balancer's own name says what it is ("Load balancer").
        (RewriteKind::Balancer, _, _) => format!("by the {}", lower_first(&short(s, h.from))),
        (_, true, _) | (RewriteKind::UnDnat | RewriteKind::UnSnat, _, _) => format!("by the conntrack entry{on}"),
        (_, false, Some(m)) => format!("by rule {} ({}){on}: {}", m.line, table_name(m.table), m.text),
        (_, false, None) => format!("by the rules{on}"),
    };
    format!("{head}, {by}")
}

/// `Load balancer` → `load balancer`, for a name inside a sentence; a name
/// that starts with an acronym (`ELB`, `VIP`) keeps its capitals.
fn lower_first(name: &str) -> String {
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        (Some(a), Some(b)) if a.is_uppercase() && !b.is_uppercase() => a.to_lowercase().chain(name.chars().skip(1)).collect(),
        _ => name.to_string(),
    }
}

fn hop_rows(s: &Scenario, h: &Hop) -> Vec<Row> {
    let row = |kind, text: String| Row { kind, text, items: Vec::new() };
    let mut rows = Vec::new();
    if let Some(a) = &h.arp {
        rows.push(row(RowKind::Arp, format!("ARP on {}: {}", a.iface, a.summary())));
    }
    if let Some(p) = &h.packet {
        if p.before != p.after {
            rows.push(row(RowKind::Arrived, format!("Arrived as {}", p.before)));
        }
        rows.push(row(RowKind::Wire, format!("Travels as {}", p.after)));
        if let Some(pl) = &p.payload {
            rows.push(row(RowKind::Carries, format!("Carries {}", pl.summary())));
        }
        for r in &p.rewrites {
            rows.push(row(RowKind::Rewrite, rewrite_text(s, h, p, r)));
        }
        if p.by_conntrack && p.rewrites.is_empty() {
            rows.push(row(RowKind::Rewrite, "conntrack knows the connection: no rule is walked, and nothing is rewritten".into()));
        }
        if !p.matched.is_empty() {
            let n = p.matched.len();
            let on = p.decided_on.map(|a| format!(" on {}", short(s, a))).unwrap_or_default();
            rows.push(Row {
                kind: RowKind::Rules,
                text: format!("{n} rule{} matched{on}", if n == 1 { "" } else { "s" }),
                items: p.matched.iter().map(|m| format!("{} {}: {}", m.table.as_str(), m.line, m.text)).collect(),
            });
        }
        if !p.could_reach.is_empty() {
            let list: Vec<String> = p.could_reach.iter().map(|a| a.to_string()).collect();
            rows.push(row(RowKind::CouldReach, format!("The rules could have sent it to {}", list.join(", "))));
        }
    }
    if let Some(d) = &h.dropped {
        let mut actors = crate::sim::Actors::default();
        for a in &s.actors {
            actors.add(a.clone());
        }
        let why = d.describe(&actors);
        // Most drops already tell their reason in the detail.
        let text = if why == h.detail { "Goes no further".to_string() } else { format!("Goes no further: {why}") };
        rows.push(row(RowKind::Dropped, text));
    }
    rows
}

/// One hop as text.
pub fn hop_text(s: &Scenario, i: usize, h: &Hop) -> HopText {
    HopText {
        number: i + 1,
        kind: h.kind,
        kind_name: kind_name(h).into(),
        from: h.from,
        to: h.to,
        from_name: short(s, h.from),
        to_name: short(s, h.to),
        what_if: h.what_if,
        summary: hop_summary(s, h),
        detail: h.detail.clone(),
        rows: hop_rows(s, h),
    }
}

fn step_text(s: &Scenario, i: usize, st: &Step) -> StepText {
    let manifest = (!st.manifest.changed.is_empty()).then(|| ManifestText {
        file: st.manifest.file.clone(),
        lines: st.manifest.lines.iter().enumerate().map(|(j, l)| (l.clone(), st.manifest.changed.contains(&j))).collect(),
    });
    let mut terminals = Vec::new();
    if let Some(v) = st.views.last() {
        terminals.push(Terminal { command: v.kubectl.command.clone(), purpose: None, output: v.kubectl.render() });
    }
    for e in &st.evidence {
        let output = if e.stderr.is_empty() { e.stdout.clone() } else { format!("{}{}", e.stderr, e.stdout) };
        terminals.push(Terminal { command: e.command.clone(), purpose: Some(e.purpose.clone()), output });
    }
    StepText {
        number: i + 1,
        title: st.title.clone(),
        narration: st.narration.clone(),
        manifest,
        hops: st.hops.iter().enumerate().map(|(j, h)| hop_text(s, j, h)).collect(),
        terminals,
    }
}

/// The whole scenario as text.
pub fn transcript(s: &Scenario) -> Transcript {
    Transcript {
        scenario: s.id.clone(),
        title: s.title.clone(),
        demo: s.demo().map(|d| (d.label.clone(), d.narration.clone())),
        steps: s.steps.iter().enumerate().map(|(i, st)| step_text(s, i, st)).collect(),
    }
}

/// The transcript of `s`, each hop decided by a node's rules shown
/// beside the same hop of `other`, the same story with kube-proxy in its
/// other mode: which rules each mode walked, and whether the packet left
/// the same way. The two stories are built by the same steps, so their
/// hops correspond one to one (`tests/modes.rs` holds them to it).
pub fn transcript_both(s: &Scenario, other: &Scenario) -> Transcript {
    let (mode, other_mode) = (s.params.proxy_mode().as_str(), other.params.proxy_mode().as_str());
    let mut t = transcript(s);
    for (st, ost) in t.steps.iter_mut().zip(&other.steps) {
        for (h, oh) in st.hops.iter_mut().zip(&ost.hops) {
            let Some(at) = h.rows.iter().position(|r| r.kind == RowKind::Rules) else { continue };
            h.rows[at].text = format!("In {mode} mode, {}", h.rows[at].text);
            let Some(op) = oh.packet.as_ref().filter(|p| !p.by_conntrack && !p.matched.is_empty()) else { continue };
            let mine = s.steps.get(st.number - 1).and_then(|x| x.hops.get(h.number - 1)).and_then(|x| x.packet.as_ref());
            let same = mine.is_some_and(|p| p.after.src.ip == op.after.src.ip && p.after.dst == op.after.dst);
            let n = op.matched.len();
            let on = op.decided_on.map(|a| format!(" on {}", short(other, a))).unwrap_or_default();
            let leaves = if same { ", and the packet leaves the same way".to_string() } else { format!(", and the packet leaves as {}", op.after) };
            let text = format!("In {other_mode} mode, {n} rule{} matched{on}{leaves}", if n == 1 { "" } else { "s" });
            let items = op.matched.iter().map(|m| format!("{} {}: {}", m.table.as_str(), m.line, m.text)).collect();
            h.rows.insert(at + 1, Row { kind: RowKind::OtherMode, text, items });
        }
    }
    t
}

impl Transcript {
    /// The transcript as plain text (Markdown-like), as a reader would get
    /// it on paper; the golden file keeps one.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut out = format!("# {}\n", self.title);
        if let Some((label, text)) = &self.demo {
            let _ = writeln!(out, "\nDemo · {label}: {text}");
        }
        for st in &self.steps {
            let _ = writeln!(out, "\n## Step {}: {}\n\n{}", st.number, st.title, st.narration);
            if let Some(m) = &st.manifest {
                let _ = writeln!(out, "\n### {}", m.file);
                for (l, changed) in &m.lines {
                    let _ = writeln!(out, "{} {l}", if *changed { "+" } else { " " });
                }
            }
            let _ = writeln!(out, "\n### Hops\n");
            for h in &st.hops {
                let _ = writeln!(out, "{}. {}.", h.number, h.summary);
                let _ = writeln!(out, "   {}", h.detail);
                for r in &h.rows {
                    let _ = writeln!(out, "   - {}", r.text);
                    for it in &r.items {
                        let _ = writeln!(out, "     - {it}");
                    }
                }
            }
            for t in &st.terminals {
                let _ = writeln!(out);
                if let Some(p) = &t.purpose {
                    let _ = writeln!(out, "{p}:");
                }
                let _ = write!(out, "$ {}\n{}", t.command, t.output);
                if !t.output.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        out
    }
}
