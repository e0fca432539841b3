//! The node tables under the canvas: one node's kube-proxy rules for the
//! Services in focus as `iptables-save` lines, and every node's
//! `conntrack -L`. The core computes what each shows
//! (`scene::panels`); these only render it.

use crate::room::Ctx;
use crate::panels::table_tag;
use kubehops_core::dataplane::rules::RuleTable;
use kubehops_core::scene::panels::{conntrack_panel, rules_panel, CtEntry, PanelLine};
use kubehops_core::sim::{ActorId, ActorKind};
use leptos::either::Either;
use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Moves a scrollable list so that its first marked line is visible,
/// without scrolling the page.
fn reveal_first_mark(list: &web_sys::HtmlElement) {
    let Ok(Some(mark)) = list.query_selector(".hit, .added, .removed") else { return };
    let Ok(mark) = mark.dyn_into::<web_sys::HtmlElement>() else { return };
    let (top, bottom) = (mark.offset_top(), mark.offset_top() + mark.offset_height());
    let (view_top, view_h) = (list.scroll_top(), list.client_height());
    if top < view_top || bottom > view_top + view_h {
        list.set_scroll_top((top - 8).max(0));
    }
}

/// What a line's mark means, for the eye and for a screen reader.
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    None,
    Hit,
    Removed,
}

/// One `iptables-save` line, with its line number, marks and, where the
/// list mixes tables, the table it is in.
fn save_line(l: PanelLine, table: Option<RuleTable>, mark: Mark, by: usize) -> impl IntoView {
    let (sign, sr) = match (mark, l.added) {
        (Mark::Removed, _) => ("−", format!(" (removed at hop {by})")),
        (Mark::Hit, true) => ("▶", format!(" (matched by this hop; added at hop {by})")),
        (Mark::Hit, false) => ("▶", " (matched by this hop)".to_string()),
        (_, true) => ("+", format!(" (added at hop {by})")),
        _ => ("", String::new()),
    };
    view! {
        <li
            class="kh-save-line"
            class:hit=mark == Mark::Hit
            class:added=l.added && mark != Mark::Removed
            class:removed=mark == Mark::Removed
            data-line=l.line
        >
            <span class="kh-ln">{l.line}</span>
            <span class="kh-mark" aria-hidden="true">{sign}</span>
            {table.map(table_tag)}
            <code>{l.text}</code>
            <span class="kh-sr">{sr}</span>
        </li>
    }
}

/// "Rules on Node-2": the node's kube-proxy lines (`iptables-save`, or
/// its nftables transaction) for the Services
/// in focus, with what the current hop matched, added or removed marked.
#[component]
pub fn RulesPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    // A node the user picked; `None` follows the hop.
    let pinned = RwSignal::new(None::<ActorId>);
    // A pin from another scenario means nothing here.
    Effect::new(move |_| {
        ctx.player.scenario_id.track();
        pinned.set(None);
    });
    let model = Memo::new(move |_| {
        let f = ctx.moment.get();
        ctx.with_scenario(|s| rules_panel(s, &f, pinned.get()))
    });
    // The nodes with a card on the canvas (in a big cluster, the others are a group).
    let nodes = Memo::new(move |_| ctx.layout.with(|l| ctx.with_scenario(|s| s.actors.iter().filter(|a| a.kind == ActorKind::Node && l.has_box(a.id)).map(|a| (a.id, a.short.clone())).collect::<Vec<_>>())));
    let list = NodeRef::<html::Ol>::new();
    Effect::new(move |_| {
        model.track();
        // Measured in the next frame, before it is drawn, where the
        // browser lays the page out anyway: measured now, in the middle
        // of the change, it forced a layout of its own (49 ms of the
        // 144 ms task that draws a pasted 50-node cluster).
        request_animation_frame(move || {
            if let Some(el) = list.try_get_untracked().flatten() {
                reveal_first_mark(&el);
            }
        });
    });
    let selector = move || {
        nodes
            .get()
            .into_iter()
            .map(|(id, label)| {
                let shown = move || model.with(|m| m.node == Some(id));
                view! {
                    <button type="button" class="kh-seg-btn" aria-pressed=move || shown().to_string() on:click=move |_| pinned.set(Some(id))>
                        {label}
                    </button>
                }
            })
            .collect_view()
    };
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
        let by = m.changed_by;
        let services = if m.services.is_empty() { "the Service".to_string() } else { format!("Service {}", m.services) };
        let empty = (m.lines.is_empty() && m.removed.is_empty()).then(|| format!("No rules for {services} on {}.", m.name));
        let shared = (!m.shared.is_empty()).then(|| {
            let summary = format!("Also matched: {} in chains every Service shares, in the order they matched", plural(m.shared.len(), "rule", "rules"));
            view! {
                <details class="kh-save-shared">
                    <summary>{summary}</summary>
                    <ol class="kh-code kh-save">
                        {m.shared.into_iter().map(|l| { let t = Some(l.table); save_line(l, t, Mark::Hit, by) }).collect_view()}
                    </ol>
                </details>
            }
        });
        view! {
            <p class="kh-note kh-rules-note">{m.note}</p>
            <ol class="kh-code kh-save kh-save-main" node_ref=list tabindex="0" aria-label=format!("{} lines for {services} on {}", m.printout, m.name)>
                {empty.map(|e| view! { <li class="kh-save-empty">{e}</li> })}
                {m.lines.into_iter().map(|l| { let mark = if l.hit { Mark::Hit } else { Mark::None }; save_line(l, None, mark, by) }).collect_view()}
                {m.removed.into_iter().map(|l| save_line(l, None, Mark::Removed, by)).collect_view()}
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
                    <span class="kh-sub">{move || model.with(|m| if m.services.is_empty() { m.printout.clone() } else { format!("{} · Service {}", m.printout, m.services) })}</span>
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

/// Every node's `conntrack -L`, newest entry last, with the entry the
/// current hop created, updated or was rewritten by marked.
#[component]
pub fn ConntrackPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let model = Memo::new(move |_| {
        let f = ctx.moment.get();
        ctx.with_scenario(|s| conntrack_panel(s, &f))
    });
    let entry = move |e: CtEntry, by: usize| {
        let mark = if e.used { "▶" } else if e.new { "+" } else if e.updated { "↻" } else { "" };
        let tags: Vec<String> = [e.used.then(|| "used by this hop".to_string()), e.new.then(|| format!("new at hop {by}")), e.updated.then(|| format!("updated at hop {by}"))]
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
            {move || model.with(|m| (m.not_listed > 0).then(|| format!("{} without entries not listed.", plural(m.not_listed, "node", "nodes")))).map(|t| view! { <p class="kh-ct-empty">{t}</p> })}
        </section>
    }
}

/// Hosts with a network stack of their own (the lab's laptop, running
/// Docker): their nat table as `iptables-save` prints it, with the lines
/// the current hop matched, their conntrack table and their neighbours.
#[component]
pub fn HostPanels() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let model = Memo::new(move |_| {
        let f = ctx.moment.get();
        ctx.with_scenario(|s| {
            let Some(st) = s.steps.get(f.step) else { return Vec::new() };
            let hop = f.current.and_then(|i| st.hops.get(i));
            st.views
                .get(f.view)
                .map(|v| {
                    v.hosts
                        .iter()
                        .map(|h| {
                            let matched: Vec<usize> =
                                hop.and_then(|x| x.packet.as_ref()).filter(|p| p.decided_on == Some(h.host)).map(|p| p.matched.iter().map(|m| m.line).collect()).unwrap_or_default();
                            let name = s.actor(h.host).map_or_else(String::new, |a| a.label.clone());
                            let lines: Vec<(usize, String, bool)> = h.iptables.iter().map(|l| (l.line, l.text.clone(), matched.contains(&l.line))).collect();
                            (name, lines, h.conntrack.iter().map(|c| c.text.clone()).collect::<Vec<_>>(), h.neighbours.clone())
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    move || {
        model
            .get()
            .into_iter()
            .map(|(name, lines, conntrack, neighbours)| {
                view! {
                    <section class="kh-card kh-hostpanel" data-testid="host">
                        <h2>{format!("Rules on {name} ")} <span class="kh-sub">"iptables-save -t nat · Docker's rules"</span></h2>
                        <ol class="kh-code kh-save" tabindex="0" aria-label=format!("nat rules on {name}")>
                            {lines
                                .into_iter()
                                .map(|(line, text, hit)| {
                                    view! {
                                        <li class="kh-save-line" class:hit=hit data-line=line>
                                            <span class="kh-ln">{line}</span>
                                            <span class="kh-mark" aria-hidden="true">{if hit { "▶" } else { "" }}</span>
                                            <code>{text}</code>
                                            <span class="kh-sr">{if hit { " (matched by this hop)" } else { "" }}</span>
                                        </li>
                                    }
                                })
                                .collect_view()}
                        </ol>
                        <h3>"conntrack -L"</h3>
                        {if conntrack.is_empty() {
                            view! { <p class="kh-ct-empty">"no entries"</p> }.into_any()
                        } else {
                            view! { <ol class="kh-code kh-ct-list">{conntrack.into_iter().map(|c| view! { <li><code>{c}</code></li> }).collect_view()}</ol> }.into_any()
                        }}
                        <h3>"ip neigh show"</h3>
                        <pre class="kh-code">{if neighbours.is_empty() { "(no neighbours yet)".to_string() } else { neighbours.join("\n") }}</pre>
                    </section>
                }
            })
            .collect_view()
    }
}
