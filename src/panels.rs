//! The panels beside the canvas: narration, the current hop, the manifest,
//! kubectl's output, the legend and URL notices.

use crate::app::Ctx;
use crate::canvas::kind_info;
use kubehops_core::dataplane::iptables::TableName;
use kubehops_core::net::Packet;
use kubehops_core::sim::{Field, HopKind, Place, RewriteKind};
use leptos::prelude::*;

#[component]
pub fn Narration() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let heading = move || ctx.with_step(|st| format!("Step {} of {} · {}", ctx.frame.get().step + 1, p.steps(), st.title)).unwrap_or_default();
    let text = move || ctx.with_step(|st| st.narration.clone()).unwrap_or_default();
    view! {
        <section class="kh-card kh-narration" aria-live="polite">
            <h2>{heading}</h2>
            <p>{text}</p>
        </section>
    }
}

/// The tag naming the table a matched rule is in (`nat`, `filter`).
pub fn table_tag(t: TableName) -> impl IntoView {
    let name = t.as_str();
    view! {
        <span class=format!("kh-table kh-table-{name}") title=format!("in the {name} table")>{name}</span>
        <span class="kh-sr">" table: "</span>
    }
}

/// What a what-if hop shows instead of happening: this walkthrough's
/// alternative is a balancer with ipMode VIP.
pub const WHAT_IF: &str = "what if: ipMode VIP";

/// An actor's short label (`Pod web-x2klp`, `Node-2`).
pub fn short_label(ctx: Ctx, place: Place) -> String {
    ctx.player.walkthrough.with(|w| w.actor(place).map(|a| a.short.clone()).unwrap_or_default())
}

fn rewrite_tag(k: RewriteKind) -> &'static str {
    match k {
        RewriteKind::Dnat => "DNAT",
        RewriteKind::Snat => "SNAT",
        RewriteKind::UnDnat => "un-DNAT",
        RewriteKind::UnSnat => "un-SNAT",
        RewriteKind::Balancer => "balancer",
    }
}

/// An address that may wrap after its colon in a narrow column
/// (`198.51.100.23:` / `51000`), never inside a number.
fn address(a: String) -> impl IntoView {
    let (host, port) = a.split_at(a.rfind(':').map_or(a.len(), |i| i + 1));
    view! { <span class="kh-addr">{host.to_string()}<wbr/>{port.to_string()}</span> }
}

/// One row of the before/after table.
fn packet_row(label: &'static str, field: Field, before: &Packet, after: &Packet, tags: Vec<&'static str>) -> impl IntoView {
    let (b, a) = match field {
        Field::Source => (before.src, after.src),
        Field::Destination => (before.dst, after.dst),
    };
    let changed = a != b;
    view! {
        <tr class:changed=changed>
            <th scope="row">{label}</th>
            <td class="kh-mono-html">{address(b.to_string())}</td>
            <td class="kh-mono-html">
                {address(a.to_string())}
                {tags.into_iter().map(|t| view! { <span class="kh-tag">{t}</span> }).collect_view()}
            </td>
        </tr>
    }
}

#[component]
pub fn HopDetail() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let body = move || {
        let f = ctx.frame.get();
        ctx.with_step(|st| {
            let n = st.hops.len();
            let Some((i, h)) = f.current.and_then(|i| st.hops.get(i).map(|h| (i, h))) else {
                return view! { <p class="kh-muted-html">{format!("{n} hops. Press Play, or choose a hop below.")}</p> }.into_any();
            };
            let (class, _, kind_name) = kind_info(h.kind);
            let (from, to) = (short_label(ctx, h.from), short_label(ctx, h.to));
            let packet = h.packet.clone().map(|pk| {
                let tags = |field: Field| pk.rewrites.iter().filter(|r| r.field == field).map(|r| rewrite_tag(r.kind)).collect::<Vec<_>>();
                let node = pk.decided_on.and_then(|n| p.walkthrough.with(|w| w.actor(kubehops_core::sim::Place::Node(n)).map(|a| a.label.clone())));
                let rules_title = format!("{} rule{} matched on {}", pk.matched.len(), if pk.matched.len() == 1 { "" } else { "s" }, node.clone().unwrap_or_default());
                let reach = (!pk.could_reach.is_empty()).then(|| {
                    format!("The rules could have sent it to: {}.", pk.could_reach.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "))
                });
                view! {
                    <table class="kh-packet">
                        <caption class="kh-sr">"Packet addresses before and after this hop"</caption>
                        <thead><tr><th></th><th scope="col">"arrived"</th><th scope="col">"leaves as"</th></tr></thead>
                        <tbody>
                            {packet_row("source", Field::Source, &pk.before, &pk.after, tags(Field::Source))}
                            {packet_row("destination", Field::Destination, &pk.before, &pk.after, tags(Field::Destination))}
                        </tbody>
                    </table>
                    {pk.by_conntrack.then(|| view! { <p class="kh-note">"Rewritten by conntrack, not by the rules: the connection is already known."</p> })}
                    {reach.map(|r| view! { <p class="kh-note">{r}</p> })}
                    {(!pk.matched.is_empty()).then(|| view! {
                        <details class="kh-rules">
                            <summary>{rules_title}</summary>
                            <ol>{pk.matched.iter().map(|m| view! { <li>{table_tag(m.table)}<code>{m.text.clone()}</code></li> }).collect_view()}</ol>
                        </details>
                    })}
                }
            });
            view! {
                <div class=format!("kh-hop kh-{class}")>
                    <p class="kh-hop-head">
                        <span class="kh-kind">{kind_name}</span>
                        {h.what_if.then(|| view! { <span class="kh-kind kh-whatif-tag">{WHAT_IF}</span> })}
                        <strong>{format!("Hop {} of {n}:", i + 1)}</strong>
                        {(h.from != h.to).then(|| view! {
                            <span class="kh-hop-route">
                                <span>{from.clone()}</span>
                                <span aria-hidden="true">"→"</span>
                                <span class="kh-sr">" to "</span>
                                <span>{to.clone()}</span>
                            </span>
                        })}
                        {(h.from == h.to).then(|| view! { <span class="kh-hop-route"><span>{format!("on {from}")}</span></span> })}
                    </p>
                    <p>{h.detail.clone()}</p>
                    {packet}
                </div>
            }
            .into_any()
        })
    };
    let hop_list = move || {
        let f = ctx.frame.get();
        ctx.with_step(|st| {
            st.hops
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let (class, label, _) = kind_info(h.kind);
                    let current = f.current == Some(i);
                    let (from, to) = (short_label(ctx, h.from), short_label(ctx, h.to));
                    let route = if h.from == h.to { format!("on {from}") } else { format!("{from} → {to}") };
                    let spoken_route = if h.from == h.to { format!("on {from}") } else { format!("from {from} to {to}") };
                    let what_if = if h.what_if { format!(" ({WHAT_IF})") } else { String::new() };
                    view! {
                        <li>
                            <button
                                type="button"
                                class=format!("kh-hopbtn kh-{class}")
                                class:current=current
                                class:done={ i < f.done }
                                class:whatif=h.what_if
                                aria-current=current.then_some("true")
                                aria-label=format!("Show hop {}{what_if}: {}, {spoken_route}", i + 1, h.caption)
                                on:click=move |_| p.show_hop(i)
                            >
                                <span class="kh-hopnum">{i + 1}</span>
                                <span class="kh-hopkind">{label}</span>
                                <span class="kh-hopcap">
                                    {h.what_if.then(|| view! { <span class="kh-whatif-chip">"WHAT IF"</span> })}
                                    {h.caption.clone()}
                                </span>
                                <span class="kh-hoproute">{route}</span>
                            </button>
                        </li>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <section class="kh-card">
            <h2>"This hop"</h2>
            {body}
            <ol class="kh-hoplist" aria-label="Hops of this step">{hop_list}</ol>
        </section>
    }
}

#[component]
pub fn ManifestPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let lines = move || {
        ctx.with_step(|st| {
            st.manifest
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let changed = st.changed.contains(&i);
                    view! {
                        <span class="kh-line" class:changed=changed>
                            <span class="kh-gutter" aria-hidden="true">{if changed { "+" } else { " " }}</span>
                            {l.clone()}
                            {changed.then(|| view! { <span class="kh-sr">" (changed in this step)"</span> })}
                            "\n"
                        </span>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <section class="kh-card">
            <h2>"Service manifest " <span class="kh-sub">"web.yaml, as applied"</span></h2>
            <pre class="kh-code">{lines}</pre>
        </section>
    }
}

#[component]
pub fn KubectlPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let out = move || {
        let f = ctx.frame.get();
        ctx.with_step(|st| st.views.get(f.view).map(|v| v.kubectl.clone())).flatten().unwrap_or_default()
    };
    view! {
        <section class="kh-card">
            <h2>"kubectl"</h2>
            <pre class="kh-code kh-term" data-testid="kubectl"><span class="kh-prompt">"$ kubectl get svc web\n"</span>{out}</pre>
        </section>
    }
}

#[component]
pub fn Legend() -> impl IntoView {
    let kinds = [HopKind::Dns, HopKind::Request, HopKind::Reply, HopKind::ControlPlane, HopKind::Dropped];
    view! {
        <ul class="kh-legend" aria-label="Legend">
            {kinds
                .into_iter()
                .map(|k| {
                    let (class, label, name) = kind_info(k);
                    view! {
                        <li class=format!("kh-{class}")>
                            // The same classes as the canvas trail, so the same dash pattern.
                            <svg viewBox="0 0 40 12" width="40" height="12" aria-hidden="true">
                                <line class=format!("kh-trail kh-{class}") x1="2" y1="6" x2="38" y2="6"></line>
                            </svg>
                            <span class="kh-chip">{label}</span>
                            <span>{name}</span>
                        </li>
                    }
                })
                .collect_view()}
            <li class="kh-whatif-key">
                <svg viewBox="0 0 40 12" width="40" height="12" aria-hidden="true">
                    <line class="kh-trail kh-request whatif" x1="2" y1="6" x2="38" y2="6"></line>
                </svg>
                <span>"what if (not taken)"</span>
            </li>
        </ul>
    }
}

#[component]
pub fn Notices() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let notices = ctx.player.notices;
    move || {
        let n = notices.get();
        (!n.is_empty()).then(|| {
            view! {
                <div class="kh-notice" role="status">
                    <ul>{n.into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}</ul>
                    <button type="button" class="kh-btn" on:click=move |_| notices.set(Vec::new())>"Dismiss"</button>
                </div>
            }
        })
    }
}
