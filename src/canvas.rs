//! The SVG canvas: zones, actors, node cards with their kube-proxy rules,
//! the trails of finished hops and the moving token. It draws the layout
//! and the frame the core computed, and the view that frame points at.

use crate::app::Ctx;
use kubehops_core::decimal::{fixed, trimmed};
use kubehops_core::scene::{Point, Rect};
use kubehops_core::sim::{Actor, ActorId, ActorKind, BalancerView, HopKind, Leg, RuleSummary};
use leptos::prelude::*;

/// A kind's CSS class, token label and name, so colour is never the only cue.
pub fn kind_info(k: HopKind) -> (&'static str, &'static str, &'static str) {
    match k {
        HopKind::Dns => ("dns", "DNS", "DNS"),
        HopKind::Request => ("request", "REQ", "request"),
        HopKind::Reply => ("reply", "REPLY", "reply"),
        HopKind::ControlPlane => ("control", "CTRL", "control plane"),
        HopKind::Dropped => ("dropped", "DROP", "dropped"),
    }
}

/// A hop's class, label and name: its kind's, but an ARP frame says ARP
/// (it is a lookup, drawn in the DNS colour).
pub fn hop_info(h: &kubehops_core::sim::Hop) -> (&'static str, &'static str, &'static str) {
    if h.arp.is_some() {
        ("dns", "ARP", "ARP")
    } else {
        kind_info(h.kind)
    }
}

pub const KINDS: [HopKind; 5] = [HopKind::Dns, HopKind::Request, HopKind::Reply, HopKind::ControlPlane, HopKind::Dropped];

fn points(path: &[Point]) -> String {
    path.iter().map(|p| format!("{},{}", fixed(p.x, 1), fixed(p.y, 1))).collect::<Vec<_>>().join(" ")
}

/// A coordinate or length as SVG attribute text (`112.5`), printed by the
/// core's integer formatting: `f64`'s own would add its float code to the
/// wasm.
fn n(v: f64) -> String {
    trimmed(v, 2)
}

#[component]
pub fn Canvas() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    // What the frame shows, in words the core computed from it.
    let description = move || ctx.with_scenario(|s| kubehops_core::scene::describe::frame_label(s, &ctx.frame.get()));
    let view_box = move || ctx.layout.with(|l| format!("0 0 {} {}", n(l.width), fixed(l.height, 0)));
    // Actors change only with the scenario, not with its parameters.
    let actors = Memo::new(move |_| ctx.with_scenario(|s| s.actors.clone()));
    view! {
        <figure class="kh-canvas">
            <svg viewBox=view_box role="img" aria-label=description preserveAspectRatio="xMidYMid meet">
                <defs>
                    {KINDS
                        .iter()
                        .map(|k| {
                            let (class, _, _) = kind_info(*k);
                            view! {
                                <marker id=marker_id(ctx, class) class=format!("kh-arrow kh-{class}") viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                                    <path d="M0,0 L10,5 L0,10 z"></path>
                                </marker>
                            }
                        })
                        .collect_view()}
                </defs>
                {move || {
                    // Redrawn only when the actors (and so the layout) change.
                    let actors = actors.get();
                    view! {
                        <Zones/>
                        {actors.into_iter().filter(|a| a.parent.is_none()).map(|a| view! { <ActorBox actor=a/> }).collect_view()}
                        {ctx.layout.with_untracked(|l| l.groups.iter().filter(|g| g.node.is_none()).cloned().collect::<Vec<_>>()).into_iter().map(|g| view! { <Group group=g/> }).collect_view()}
                    }
                }}
                <Trails/>
                <Token/>
            </svg>
            {(ctx.figure == 0).then(|| view! { <figcaption class="kh-status" aria-hidden="true">{move || status_line(ctx)}</figcaption> })}
        </figure>
    }
}

/// The id of a kind's arrowhead, unique to the figure: the transcript
/// draws one figure per step on the same page.
fn marker_id(ctx: Ctx, class: &str) -> String {
    if ctx.figure == 0 {
        format!("kh-arrow-{class}")
    } else {
        format!("kh-arrow-{}-{class}", ctx.figure)
    }
}

fn status_line(ctx: Ctx) -> String {
    let f = ctx.frame.get();
    let what_if = ctx.with_scenario(|s| s.what_if.clone());
    ctx.with_step(|st| match f.current.and_then(|i| st.hops.get(i).map(|h| (i, h))) {
        Some((i, h)) => {
            let wire = h.packet.as_ref().map(|p| format!("  ·  {}", p.after)).unwrap_or_default();
            let alt = if h.what_if { format!("  ·  what if: {}", what_if.clone().unwrap_or_default()) } else { String::new() };
            format!("{}/{}  ·  {}{}{}", i + 1, st.hops.len(), h.caption, wire, alt)
        }
        None => format!("Ready: {} hops. Press Play or Space.", st.hops.len()),
    })
    .unwrap_or_default()
}

#[component]
fn Zones() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let columns = ctx.layout.with_untracked(|l| l.columns.clone());
    columns
        .into_iter()
        .map(|c| {
            let r = c.rect;
            view! {
                <g class="kh-zone">
                    <rect x=n(r.x) y=n(r.y) width=n(r.w) height=n(r.h) rx="14"></rect>
                    <text x=n(r.x + 12.0) y=n(r.y + 22.0) class="kh-zone-label">{c.zone.label()}</text>
                </g>
            }
        })
        .collect_view()
}

fn is_active(ctx: Ctx, id: ActorId) -> bool {
    let f = ctx.frame.get();
    ctx.with_step(|st| f.current.and_then(|i| st.hops.get(i)).is_some_and(|h| h.from == id || h.to == id)).unwrap_or(false)
}

/// The box of a top-level actor: a node's card, a balancer, or a labelled box.
#[component]
fn ActorBox(actor: Actor) -> impl IntoView {
    match actor.kind {
        ActorKind::Node => view! { <NodeCard node=actor/> }.into_any(),
        ActorKind::LoadBalancer => view! { <Balancer actor=actor/> }.into_any(),
        _ => view! { <Component actor=actor/> }.into_any(),
    }
}

/// What a component does, under its name.
fn role_of(kind: ActorKind) -> &'static str {
    match kind {
        ActorKind::Laptop => "kubectl · client",
        ActorKind::Resolver => "upstream DNS",
        ActorKind::OutsideHost => "outside host",
        _ => "",
    }
}

/// Splits a long label over two lines: a host name after its first label
/// (`mydb.` / `example.com`), other names at their last hyphen
/// (`cloud-controller-` / `manager`).
fn label_lines(label: &str) -> (String, Option<String>) {
    if label.chars().count() <= 14 {
        return (label.to_string(), None);
    }
    // Before a parenthesis, after a host name's first label, at the last hyphen.
    if let Some(i) = label.find(" (") {
        return (label[..i].to_string(), Some(label[i + 1..].to_string()));
    }
    match label.find('.').or_else(|| label.rfind('-')) {
        Some(i) if i > 2 => (label[..=i].to_string(), Some(label[i + 1..].to_string())),
        _ => (label.to_string(), None),
    }
}

/// Laptop, hosts, the API server and controllers: a labelled box.
#[component]
fn Component(actor: Actor) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let id = actor.id;
    let r = ctx.layout.with_untracked(|l| l.rect(id)).unwrap_or(Rect::ZERO);
    let (line1, line2) = label_lines(&actor.label);
    let two = line2.is_some();
    let role = if two { "" } else { role_of(actor.kind) };
    // A name on two lines leaves room for the address only in a tall box.
    let fits = |t: &str| t.chars().count() as f64 * 7.4 <= r.w - 12.0;
    let sub = if (two && r.h < 76.0) || !fits(&actor.sublabel) { String::new() } else { actor.sublabel.clone() };
    let sub_y = if two { r.y + 66.0 } else { r.y + 46.0 };
    let cx = r.x + r.w / 2.0;
    let kind = actor.kind.css_name();
    view! {
        <g class=format!("kh-actor kh-kind-{kind}") class:active=move || is_active(ctx, id) data-actor=actor.short.clone()>
            <title>{actor.label.clone()}</title>
            <rect x=n(r.x) y=n(r.y) width=n(r.w) height=n(r.h) rx="10"></rect>
            <text x=n(cx) y=n(r.y + 25.0) class="kh-label" text-anchor="middle">{line1}</text>
            {line2.map(|l| view! { <text x=n(cx) y=n(r.y + 46.0) class="kh-label" text-anchor="middle">{l}</text> })}
            {(!sub.is_empty()).then(|| view! { <text x=n(cx) y=n(sub_y) class="kh-mono" text-anchor="middle">{sub.clone()}</text> })}
            {(!role.is_empty() && r.h >= 80.0).then(|| view! { <text x=n(cx) y=n(r.bottom() - 12.0) class="kh-muted" text-anchor="middle">{role}</text> })}
        </g>
    }
}

#[component]
fn Balancer(actor: Actor) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let id = actor.id;
    let r = ctx.layout.with_untracked(|l| l.rect(id)).unwrap_or(Rect::ZERO);
    let state = Memo::new(move |_| {
        let f = ctx.frame.get();
        ctx.with_step(|st| st.views.get(f.view).map(|v| v.balancer(id))).flatten().unwrap_or(BalancerView::Absent)
    });
    let cx = r.x + r.w / 2.0;
    view! {
        <g
            class="kh-actor kh-lb"
            class:absent=move || state.get() == BalancerView::Absent
            class:provisioning=move || state.get() == BalancerView::Provisioning
            class:active=move || is_active(ctx, id)
        >
            <rect x=n(r.x) y=n(r.y) width=n(r.w) height=n(r.h) rx="10"></rect>
            <text x=n(cx) y=n(r.y + 26.0) class="kh-label" text-anchor="middle">{actor.short.clone()}</text>
            <text x=n(cx) y=n(r.y + 50.0) class="kh-mono" text-anchor="middle">
                {move || match state.get() {
                    BalancerView::Absent => "none yet".to_string(),
                    BalancerView::Provisioning => "provisioning…".to_string(),
                    BalancerView::Active { ip } => ip.to_string(),
                }}
            </text>
            <text x=n(cx) y=n(r.bottom() - 12.0) class="kh-muted" text-anchor="middle">
                {move || match state.get() {
                    BalancerView::Absent => "for type: LoadBalancer",
                    BalancerView::Provisioning => "IP <pending>",
                    BalancerView::Active { .. } => "forwards to node ports",
                }}
            </text>
        </g>
    }
}

fn summary_text(r: &RuleSummary) -> String {
    match r {
        RuleSummary::ClusterIp { addr, .. } => format!("{addr} → SVC"),
        RuleSummary::NodePort { port, .. } => format!("NodePort :{port} → EXT"),
        RuleSummary::LoadBalancerIp { addr, .. } => format!("LB {addr} → EXT"),
        RuleSummary::ExternalIp { addr, .. } => format!("external {addr} → EXT"),
        RuleSummary::Endpoints { targets, .. } => format!("SVC → {} Pods, random", targets.len()),
        RuleSummary::Reject { addr, .. } => format!("{addr}: REJECT, no endpoints"),
    }
}

#[component]
fn NodeCard(node: Actor) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let id = node.id;
    let Some(card) = ctx.layout.with_untracked(|l| l.node_card(id).copied()) else { return ().into_any() };
    // Pods with a box of their own; the others are in the node's group box.
    let pods: Vec<Actor> = ctx.layout.with_untracked(|l| ctx.player.scenario.with_untracked(|s| s.actors.iter().filter(|a| a.parent == Some(id) && l.has_box(a.id)).cloned().collect()));
    let group = ctx.layout.with_untracked(|l| l.groups.iter().find(|g| g.node == Some(id)).cloned());
    // The node's rule summary in the current view, and which lines the
    // current hop matched here.
    let rules = Memo::new(move |_| {
        let f = ctx.frame.get();
        ctx.with_step(|st| {
            let hit: Vec<usize> = f
                .current
                .and_then(|i| st.hops.get(i))
                .and_then(|h| h.packet.as_ref())
                .filter(|p| p.decided_on == Some(id))
                .map(|p| p.matched.iter().map(|m| m.line).collect())
                .unwrap_or_default();
            st.views
                .get(f.view)
                .and_then(|v| v.node(id))
                .map(|n| n.rules.iter().map(|r| (summary_text(r), r.lines().iter().any(|l| hit.contains(l)))).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .unwrap_or_default()
    });
    let service = Memo::new(move |_| ctx.with_step(|st| st.views.first().and_then(|v| v.kubectl.rows.get(1)).and_then(|r| r.first().cloned())).flatten().unwrap_or_default());
    let updated = move || {
        let f = ctx.frame.get();
        ctx.with_step(|st| f.current.and_then(|i| st.hops.get(i)).is_some_and(|h| h.kind == HopKind::ControlPlane && h.to == id)).unwrap_or(false)
    };
    let (c, panel, area) = (card.card, card.panel, card.pods);
    let empty = pods.is_empty();
    let no_pods = move || {
        let svc = service.get();
        if svc.is_empty() { "no Pods".to_string() } else { format!("no {svc} Pod") }
    };
    let lines_fit = ((panel.h - 30.0) / 21.0).floor().max(1.0) as usize;
    view! {
        <g class="kh-node" class:active=move || is_active(ctx, id) data-node=node.short.clone()>
            <rect class="kh-node-card" x=n(c.x) y=n(c.y) width=n(c.w) height=n(c.h) rx="12"></rect>
            <text x=n(c.x + 14.0) y=n(c.y + 25.0) class="kh-node-name">{node.short.clone()}</text>
            <text x=n(c.right() - 14.0) y=n(c.y + 25.0) class="kh-mono" text-anchor="end">{node.sublabel.clone()}</text>
            <g class="kh-proxy" class:updated=updated>
                <rect x=n(panel.x) y=n(panel.y) width=n(panel.w) height=n(panel.h) rx="8"></rect>
                <text x=n(panel.x + 10.0) y=n(panel.y + 19.0) class="kh-panel-title">"kube-proxy · iptables"</text>
                {move || {
                    let rs = rules.get();
                    if rs.is_empty() {
                        let svc = service.get();
                        let text = if svc.is_empty() { "no rules".to_string() } else { format!("no rules for {svc}") };
                        return view! { <text x=n(panel.x + 10.0) y=n(panel.y + 44.0) class="kh-muted">{text}</text> }.into_any();
                    }
                    rs.into_iter()
                        .take(lines_fit)
                        .enumerate()
                        .map(|(i, (t, hit))| {
                            let y = panel.y + 28.0 + i as f64 * 21.0;
                            view! {
                                <g class="kh-rule" class:hit=hit>
                                    <rect x=n(panel.x + 4.0) y=n(y) width=n(panel.w - 8.0) height="20" rx="4"></rect>
                                    <text x=n(panel.x + 10.0) y=n(y + 15.0) class="kh-rule-text">{if hit { format!("▶ {t}") } else { t }}</text>
                                </g>
                            }
                        })
                        .collect_view()
                        .into_any()
                }}
            </g>
            {empty.then(|| view! {
                <g class="kh-pod empty">
                    <rect x=n(area.x) y=n(area.y) width=n(area.w) height=n(area.h) rx="8"></rect>
                    <text x=n(area.x + area.w / 2.0) y=n(area.y + area.h / 2.0 + 5.0) class="kh-muted" text-anchor="middle">{no_pods}</text>
                </g>
            })}
            {pods.into_iter().map(|p| view! { <PodBox pod=p/> }).collect_view()}
            {group.map(|g| view! { <Group group=g/> })}
        </g>
    }
    .into_any()
}

/// A group box: the Pods of a node, or the nodes, drawn without a box
/// of their own ("+37 Pods", "+42 nodes"); its title lists who is in it.
#[component]
fn Group(group: kubehops_core::scene::GroupBox) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let r = group.rect;
    let label = group.label();
    let names: Vec<String> = ctx.player.scenario.with_untracked(|s| {
        group.members.iter().filter_map(|m| s.actor(*m)).filter(|a| a.kind == group.kind || (group.kind != ActorKind::Node && a.kind.is_pod())).take(40).map(|a| a.label.clone()).collect()
    });
    let more = group.members.len().saturating_sub(names.len());
    let title = if more > 0 && group.kind != ActorKind::Node { format!("{label}: {}, …", names.join(", ")) } else { format!("{label}: {}", names.join(", ")) };
    let sub = if group.kind == ActorKind::Node { "not in this story" } else { "not in this story" };
    let cx = r.x + r.w / 2.0;
    let data = label.clone();
    view! {
        <g class="kh-group" data-group=data>
            <title>{title}</title>
            <rect x=r.x y=r.y width=r.w height=r.h rx="8"></rect>
            <text x=cx y=r.y + r.h / 2.0 - 2.0 class="kh-label" text-anchor="middle">{label}</text>
            {(r.h >= 44.0).then(|| view! { <text x=cx y=r.y + r.h / 2.0 + 16.0 class="kh-muted" text-anchor="middle">{sub}</text> })}
        </g>
    }
}

#[component]
fn PodBox(pod: Actor) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let id = pod.id;
    let r = ctx.layout.with_untracked(|l| l.rect(id)).unwrap_or(Rect::ZERO);
    let ready = Memo::new(move |_| {
        let f = ctx.frame.get();
        ctx.with_step(|st| st.views.get(f.view).is_none_or(|v| !v.not_ready.contains(&id))).unwrap_or(true)
    });
    let cx = r.x + r.w / 2.0;
    let dns = pod.kind == ActorKind::CoreDns;
    let label = if dns { "CoreDNS".to_string() } else { pod.short.clone() };
    view! {
        <g class="kh-pod" class:active=move || is_active(ctx, id) class:notready=move || !ready.get() class:coredns=dns data-pod=pod.short.clone()>
            <title>{format!("Pod {}", pod.label)}</title>
            <rect x=n(r.x) y=n(r.y) width=n(r.w) height=n(r.h) rx="8"></rect>
            <text x=n(cx) y=n(r.y + 21.0) class="kh-label" text-anchor="middle">{label}</text>
            <text x=n(cx) y=n(r.y + 41.0) class="kh-mono" text-anchor="middle">{fit(&pod.sublabel, r.w)}</text>
            <text x=n(cx) y=n(r.y + 60.0) class="kh-ready" text-anchor="middle">
                {move || match (ready.get(), dns) {
                    (true, true) => "✓ Ready · kube-dns",
                    (true, false) => "✓ Ready",
                    (false, _) => "✕ not Ready",
                }}
            </text>
        </g>
    }
}

/// A monospace line cut to what fits in `width` (about 9.7 units a
/// character at the canvas's mono size), with an ellipsis.
fn fit(text: &str, width: f64) -> String {
    let room = ((width - 10.0) / 9.7).floor().max(4.0) as usize;
    if text.chars().count() <= room {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(room - 1).collect();
        t.push('…');
        t
    }
}

/// Finished hops of this step, as arrows; what-if hops are dashed grey-blue.
#[component]
fn Trails() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let trails = Memo::new(move |_| {
        let f = ctx.frame.get();
        let upto = f.current.map_or(0, |c| c + 1);
        ctx.with_step(|st| {
            st.hops
                .iter()
                .take(upto)
                .enumerate()
                .filter(|(_, h)| h.from != h.to)
                .map(|(i, h)| {
                    let path = ctx.layout.with(|l| l.hop_route(h));
                    (points(&path), h.kind, h.leg == Leg::Back, h.what_if, Some(i) == f.current)
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
    });
    view! {
        <g class="kh-trails">
            {move || {
                trails
                    .get()
                    .into_iter()
                    .map(|(pts, kind, back, what_if, current)| {
                        let (class, _, _) = kind_info(kind);
                        view! {
                            <polyline
                                class=format!("kh-trail kh-{class}")
                                class:back=back
                                class:whatif=what_if
                                class:current=current
                                points=pts
                                marker-end=format!("url(#{})", marker_id(ctx, class))
                            ></polyline>
                        }
                    })
                    .collect_view()
            }}
        </g>
    }
}

/// The packet or message in flight, labelled with its kind.
#[component]
fn Token() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let token = Memo::new(move |_| {
        let f = ctx.frame.get();
        let (what_if, arp) = ctx.with_step(|st| f.current.and_then(|i| st.hops.get(i)).map_or((false, false), |h| (h.what_if, h.arp.is_some()))).unwrap_or((false, false));
        f.token.map(|(p, k)| (p, k, what_if, arp))
    });
    move || {
        token.get().map(|(p, kind, what_if, arp)| {
            let (class, label, _) = if arp { ("dns", "ARP", "ARP") } else { kind_info(kind) };
            let label = if kind == HopKind::Dropped { "✕ DROP" } else { label };
            let w = 14.0 + 9.5 * label.chars().count() as f64;
            view! {
                <g
                    class=format!("kh-token kh-{class}")
                    class:whatif=what_if
                    data-testid=(ctx.figure == 0).then_some("packet")
                    data-x=fixed(p.x, 1)
                    data-y=fixed(p.y, 1)
                    transform=format!("translate({} {})", fixed(p.x, 1), fixed(p.y, 1))
                >
                    <rect x=n(-w / 2.0) y="-13" width=n(w) height="26" rx="13"></rect>
                    <text y="5" text-anchor="middle">{label}</text>
                </g>
            }
        })
    }
}
