//! The node tables under the canvas: one node's kube-proxy rules for the
//! Service as `iptables-save` lines, and every node's `conntrack -L`.
//!
//! Both draw the view the frame points at and mark what the current hop
//! matched, created or used. They choose what to show and compare two
//! views the core computed; they never decide where a packet goes.

use crate::app::Ctx;
use crate::panels::table_tag;
use kubehops_core::dataplane::iptables::TableName;
use kubehops_core::sim::{ConntrackLine, Hop, HopKind, PacketHop, Place};
use kubehops_core::scenarios::{Step, Walkthrough};
use leptos::either::Either;
use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

fn node_index(p: Place) -> Option<usize> {
    match p {
        Place::Node(i) => Some(i),
        _ => None,
    }
}

/// The node a hop is about: the one whose rules or conntrack decided it,
/// else the node it arrives at, else the node it leaves.
fn node_of_hop(h: &Hop) -> Option<usize> {
    h.packet.as_ref().and_then(|p| p.decided_on).or_else(|| node_index(h.to)).or_else(|| node_index(h.from))
}

/// The node whose rules are shown unless the user picked one: the node
/// that decided the current hop, otherwise the last node a hop of this
/// step touched, otherwise the first node.
pub fn default_node(st: &Step, current: Option<usize>) -> usize {
    let Some(cur) = current else { return 0 };
    st.hops.iter().take(cur + 1).rev().find_map(node_of_hop).unwrap_or(0)
}

/// Node labels and addresses, in node order.
fn node_names(w: &Walkthrough) -> Vec<(String, String)> {
    // Actors list nodes in order, as the canvas draws them.
    w.actors.iter().filter(|a| node_index(a.place).is_some()).map(|a| (a.label.clone(), a.sublabel.clone())).collect()
}

/// The current hop, with its index.
fn current_hop(st: &Step, current: Option<usize>) -> Option<(usize, &Hop)> {
    current.and_then(|i| st.hops.get(i).map(|h| (i, h)))
}

/// The current hop's packet, if this node's rules or conntrack decided it.
fn decided_here(hop: Option<(usize, &Hop)>, node: usize) -> Option<&PacketHop> {
    hop.and_then(|(_, h)| h.packet.as_ref()).filter(|p| p.decided_on == Some(node))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[derive(Clone, Debug, PartialEq)]
struct RuleLine {
    line: usize,
    text: String,
    /// Matched by the current hop.
    hit: bool,
    /// Not in the node's rules one view earlier.
    added: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct RulesModel {
    node: usize,
    name: String,
    lines: Vec<RuleLine>,
    /// Rules the current hop matched on this node outside the Service's
    /// own lines (PREROUTING, KUBE-MARK-MASQ, FORWARD, …), in walk order,
    /// with the table each is in.
    shared: Vec<(usize, TableName, String)>,
    note: String,
    /// Which hop's changes the `added` marks show (1-based).
    added_by: usize,
}

fn rules_model(ctx: Ctx, pinned: Option<usize>) -> RulesModel {
    let f = ctx.frame.get();
    let names = ctx.player.walkthrough.with(node_names);
    ctx.with_step(|st| {
        let count = names.len().max(1);
        let node = pinned.unwrap_or_else(|| default_node(st, f.current)).min(count - 1);
        let name = names.get(node).map_or_else(|| format!("node {}", node + 1), |n| n.0.clone());
        let hop = current_hop(st, f.current);
        let rules = st.views.get(f.view).and_then(|v| v.nodes.get(node)).map(|n| n.iptables.clone()).unwrap_or_default();
        let before: Option<Vec<String>> =
            f.view.checked_sub(1).and_then(|v| st.views.get(v)).and_then(|v| v.nodes.get(node)).map(|n| n.iptables.iter().map(|(_, t)| t.clone()).collect());
        let pk = decided_here(hop, node);
        let matched: Vec<usize> = pk.map(|p| p.matched.iter().map(|m| m.line).collect()).unwrap_or_default();
        let lines: Vec<RuleLine> = rules
            .iter()
            .map(|(line, text)| RuleLine {
                line: *line,
                text: text.clone(),
                hit: matched.contains(line),
                // Rules are compared by text: adding a rule renumbers the lines after it.
                added: before.as_ref().is_some_and(|b| !b.contains(text)),
            })
            .collect();
        let shared: Vec<(usize, TableName, String)> = pk
            .map(|p| p.matched.iter().filter(|m| !rules.iter().any(|(l, _)| *l == m.line)).map(|m| (m.line, m.table, m.text.clone())).collect())
            .unwrap_or_default();
        let hits = lines.iter().filter(|l| l.hit).count();
        let added = lines.iter().filter(|l| l.added).count();
        let note = match hop {
            None => format!("Before the first hop of this step: the rules kube-proxy wrote on {name} for Service web."),
            Some((i, h)) => {
                let n = i + 1;
                let what_if = if h.what_if { " (what if)" } else { "" };
                let kind = match h.kind {
                    HopKind::Reply => "reply",
                    HopKind::ControlPlane => "message",
                    _ => "packet",
                };
                if let Some(p) = pk {
                    if p.by_conntrack {
                        format!("Hop {n}{what_if}: {name}'s conntrack entry rewrote the {kind}; no rule was consulted.")
                    } else if p.matched.is_empty() {
                        format!("Hop {n}{what_if}: no rule on {name} matched the {kind}.")
                    } else {
                        let also = if shared.is_empty() { String::new() } else { format!("; {} more matched in shared chains (below)", shared.len()) };
                        format!("Hop {n}{what_if}: the {kind} walked {name}'s rules. ▶ marks the {} for web it matched{also}.", plural(hits, "line", "lines"))
                    }
                } else if h.kind == HopKind::ControlPlane && h.to == Place::Node(node) {
                    if f.view == n && added > 0 {
                        format!("Hop {n}: kube-proxy on {name} rewrote its rules for web. + marks the {} it added.", plural(added, "line", "lines"))
                    } else if f.view == n {
                        format!("Hop {n}: kube-proxy on {name} rewrote its rules for web; they are unchanged.")
                    } else {
                        format!("Hop {n}: the change is on its way to kube-proxy on {name}.")
                    }
                } else if h.to == Place::Node(node) {
                    format!("Hop {n}{what_if}: the {kind} travels to {name}, whose rules decide what happens next.")
                } else if h.from == Place::Node(node) {
                    format!("Hop {n}{what_if}: the {kind} leaves {name}; no rule here changed it.")
                } else {
                    match node_of_hop(h).and_then(|k| names.get(k)) {
                        Some(other) => format!("Hop {n}{what_if} does not pass {name}; it is on {}.", other.0),
                        None if pinned.is_none() && st.hops.iter().take(n).any(|h| node_of_hop(h).is_some()) => {
                            format!("Hop {n}{what_if} passes no node; these are the rules of {name}, the last node this step passed.")
                        }
                        None => format!("Hop {n}{what_if} passes no node."),
                    }
                }
            }
        };
        RulesModel { node, name, lines, shared, note, added_by: f.view }
    })
    .unwrap_or_default()
}

/// Moves a scrollable list so that its first marked line is visible,
/// without scrolling the page.
fn reveal_first_mark(list: &web_sys::HtmlElement) {
    let Ok(Some(mark)) = list.query_selector(".hit, .added") else { return };
    let Ok(mark) = mark.dyn_into::<web_sys::HtmlElement>() else { return };
    let (top, bottom) = (mark.offset_top(), mark.offset_top() + mark.offset_height());
    let (view_top, view_h) = (list.scroll_top(), list.client_height());
    if top < view_top || bottom > view_top + view_h {
        list.set_scroll_top((top - 8).max(0));
    }
}

/// One `iptables-save` line, with its line number, marks and, where the
/// list mixes tables, the table it is in.
fn save_line(line: usize, table: Option<TableName>, text: String, hit: bool, added: bool, added_by: usize) -> impl IntoView {
    let mark = if hit { "▶" } else if added { "+" } else { "" };
    let sr = match (hit, added) {
        (true, true) => format!(" (matched by this hop; added at hop {added_by})"),
        (true, false) => " (matched by this hop)".to_string(),
        (false, true) => format!(" (added at hop {added_by})"),
        (false, false) => String::new(),
    };
    view! {
        <li class="kh-save-line" class:hit=hit class:added=added data-line=line>
            <span class="kh-ln">{line}</span>
            <span class="kh-mark" aria-hidden="true">{mark}</span>
            {table.map(table_tag)}
            <code>{text}</code>
            <span class="kh-sr">{sr}</span>
        </li>
    }
}

/// "Rules on Node-2": the node's `iptables-save` lines for Service web,
/// with the lines the current hop matched marked.
#[component]
pub fn RulesPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    // A node the user picked; `None` follows the hop.
    let pinned = RwSignal::new(None::<usize>);
    let model = Memo::new(move |_| rules_model(ctx, pinned.get()));
    let names = ctx.player.walkthrough.with_untracked(node_names);
    let list = NodeRef::<html::Ol>::new();
    Effect::new(move |_| {
        model.track();
        if let Some(el) = list.get() {
            reveal_first_mark(&el);
        }
    });
    let selector = names
        .into_iter()
        .enumerate()
        .map(|(i, (label, _))| {
            let shown = move || model.with(|m| m.node == i);
            view! {
                <button type="button" class="kh-seg-btn" aria-pressed=move || shown().to_string() on:click=move |_| pinned.set(Some(i))>
                    {label}
                </button>
            }
        })
        .collect_view();
    // Shown once a node is picked: the panel no longer moves with the hop.
    let follow = move || {
        pinned.get().is_some().then(|| {
            view! {
                <button type="button" class="kh-btn kh-btn-small" title="Show the node the current hop is on" on:click=move |_| pinned.set(None)>
                    "Follow the hop"
                </button>
            }
        })
    };
    // Everything that changes with the hop, in one reactive view.
    let body = move || {
        let m = model.get();
        let by = m.added_by;
        let empty = m.lines.is_empty().then(|| format!("No rules for Service web on {}.", m.name));
        let shared = (!m.shared.is_empty()).then(|| {
            let summary = format!("Also matched: {} in chains every Service shares, in the order they matched", plural(m.shared.len(), "rule", "rules"));
            view! {
                <details class="kh-save-shared">
                    <summary>{summary}</summary>
                    <ol class="kh-code kh-save">
                        {m.shared.into_iter().map(|(line, table, text)| save_line(line, Some(table), text, true, false, by)).collect_view()}
                    </ol>
                </details>
            }
        });
        view! {
            <p class="kh-note kh-rules-note">{m.note}</p>
            <ol class="kh-code kh-save kh-save-main" node_ref=list tabindex="0" aria-label=format!("iptables-save lines for Service web on {}", m.name)>
                {empty.map(|e| view! { <li class="kh-save-empty">{e}</li> })}
                {m.lines.into_iter().map(|l| save_line(l.line, None, l.text, l.hit, l.added, by)).collect_view()}
            </ol>
            {shared}
        }
    };
    view! {
        <section class="kh-card kh-rulespanel" aria-labelledby="kh-rules-title" data-testid="rules">
            <div class="kh-card-head">
                <h2 id="kh-rules-title">
                    {move || model.with(|m| format!("Rules on {}", m.name))}
                    " "
                    <span class="kh-sub">"iptables-save · Service web"</span>
                </h2>
                <div class="kh-seg" role="group" aria-label="Show the rules of">
                    {selector}
                </div>
                {follow}
            </div>
            {body}
        </section>
    }
}

#[derive(Clone, Debug, PartialEq)]
struct CtEntry {
    text: String,
    /// Not in the table one view earlier.
    new: bool,
    /// The same connection as an earlier entry, in a new state.
    updated: bool,
    /// The entry the current hop was rewritten by.
    used: bool,
}

#[derive(Clone, Debug, PartialEq)]
struct CtNode {
    name: String,
    ip: String,
    entries: Vec<CtEntry>,
    /// The current hop is about this node.
    here: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct CtModel {
    nodes: Vec<CtNode>,
    /// The hop whose changes `new` and `updated` show (1-based).
    changed_by: usize,
}

fn conntrack_model(ctx: Ctx) -> CtModel {
    let f = ctx.frame.get();
    let names = ctx.player.walkthrough.with(node_names);
    ctx.with_step(|st| {
        let hop = current_hop(st, f.current);
        let here = hop.and_then(|(_, h)| node_of_hop(h));
        let prev = f.view.checked_sub(1).and_then(|v| st.views.get(v));
        let nodes = names
            .iter()
            .enumerate()
            .map(|(i, (name, ip))| {
                let now: &[ConntrackLine] = st.views.get(f.view).and_then(|v| v.nodes.get(i)).map_or(&[], |n| &n.conntrack);
                let before: Option<&[ConntrackLine]> = prev.and_then(|v| v.nodes.get(i)).map(|n| n.conntrack.as_slice());
                // The entry conntrack rewrote this hop's packet by, as the core recorded it.
                let used = decided_here(hop, i).filter(|p| p.by_conntrack).and_then(|p| p.conntrack_entry);
                let entries = now
                    .iter()
                    .enumerate()
                    .map(|(k, e)| {
                        // The core names each entry's connection and state; a ticking timeout is no change.
                        let known = before.is_some_and(|b| b.iter().any(|o| o.original == e.original));
                        let changed = before.is_some_and(|b| !b.iter().any(|o| o.original == e.original && o.state == e.state));
                        CtEntry {
                            text: e.text.clone(),
                            new: changed && !known,
                            updated: changed && known,
                            used: used == Some(k),
                        }
                    })
                    .collect();
                CtNode { name: name.clone(), ip: ip.clone(), entries, here: here == Some(i) }
            })
            .collect();
        CtModel { nodes, changed_by: f.view }
    })
    .unwrap_or_default()
}

/// Every node's `conntrack -L`, newest entry last, with the entry the
/// current hop created, updated or was rewritten by marked.
#[component]
pub fn ConntrackPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let model = Memo::new(move |_| conntrack_model(ctx));
    let entry = move |e: CtEntry, by: usize| {
        let mark = if e.used { "▶" } else if e.new { "+" } else if e.updated { "↻" } else { "" };
        let tags: Vec<String> = [
            e.used.then(|| "used by this hop".to_string()),
            e.new.then(|| format!("new at hop {by}")),
            e.updated.then(|| format!("updated at hop {by}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        view! {
            <li class="kh-ct-entry" class:hit=e.used class:new=e.new class:updated=e.updated>
                <span class="kh-mark" aria-hidden="true">{mark}</span>
                <span class="kh-ct-text">
                    <code>{e.text}</code>
                    {tags.into_iter().map(|t| view! { <span class="kh-ct-tag">{t}</span> }).collect_view()}
                </span>
            </li>
        }
    };
    let body = move || {
        let m = model.get();
        let by = m.changed_by;
        m.nodes
            .into_iter()
            .map(|n| {
                let count = plural(n.entries.len(), "entry", "entries");
                let list = if n.entries.is_empty() {
                    Either::Left(view! { <p class="kh-ct-empty">{format!("conntrack -L: no entries on {}", n.name)}</p> })
                } else {
                    Either::Right(view! {
                        <ol class="kh-code kh-ct-list" aria-label=format!("conntrack -L on {}", n.name)>
                            {n.entries.into_iter().map(|e| entry(e, by)).collect_view()}
                        </ol>
                    })
                };
                let name = n.name.clone();
                view! {
                    <div class="kh-ct-node" class:here=n.here data-node=name>
                        <h3>
                            <span class="kh-ct-name">{n.name}</span>
                            <span class="kh-mono-html">{n.ip}</span>
                            <span class="kh-sub">{count}</span>
                            {n.here.then(|| view! { <span class="kh-ct-here">"this hop"</span> })}
                        </h3>
                        {list}
                    </div>
                }
            })
            .collect_view()
    };
    view! {
        <section class="kh-card kh-conntrack" aria-labelledby="kh-ct-title" data-testid="conntrack">
            <h2 id="kh-ct-title">"conntrack " <span class="kh-sub">"conntrack -L on each node, newest last"</span></h2>
            <div class="kh-ct-nodes">{body}</div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubehops_core::scenarios::{build, Options};
    use wasm_bindgen_test::*;

    #[wasm_bindgen_test]
    fn the_default_node_follows_the_hop() {
        let w = build("nodeport-loadbalancer", Options::default()).expect("walkthrough");
        let st = &w.steps[1];
        assert_eq!(default_node(st, None), 0, "no hop yet: Node-1");
        assert_eq!(default_node(st, Some(0)), 1, "laptop → Node-2: Node-2");
        assert_eq!(default_node(st, Some(1)), 1, "Node-2 decided the DNAT");
        assert_eq!(default_node(st, Some(5)), 1, "Node-2's conntrack undid it");
        // Step 3's control-plane hops to the balancer touch no node yet.
        assert_eq!(default_node(&w.steps[2], Some(2)), 0);
        assert_eq!(default_node(&w.steps[2], Some(99)), 2, "out of range: the last node the step passed");
    }
}
