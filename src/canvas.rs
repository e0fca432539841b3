//! The SVG canvas: actors, node cards with their kube-proxy rules, the
//! trails of finished hops and the moving token. It draws the frame the
//! core computed and the view that frame points at.

use crate::app::Ctx;
use kubehops_core::scene::{Point, Rect, HEIGHT, WIDTH};
use kubehops_core::sim::{BalancerView, HopKind, Place, RuleSummary};
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

const KINDS: [HopKind; 5] = [HopKind::Dns, HopKind::Request, HopKind::Reply, HopKind::ControlPlane, HopKind::Dropped];

fn points(path: &[Point], offset: f64) -> String {
    path.iter().map(|p| format!("{:.1},{:.1}", p.x + offset, p.y + offset)).collect::<Vec<_>>().join(" ")
}

#[component]
pub fn Canvas() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let description = move || {
        ctx.with_step(|st| match ctx.frame.get().current.and_then(|i| st.hops.get(i).map(|h| (i, h))) {
            Some((i, h)) => {
                let what_if = if h.what_if { format!(" ({})", crate::panels::WHAT_IF) } else { String::new() };
                format!("Hop {} of {}{what_if}: {}. {}", i + 1, st.hops.len(), h.caption, h.detail)
            }
            None => format!("{} hops in this step. Press Play to start.", st.hops.len()),
        })
        .unwrap_or_default()
    };
    view! {
        <figure class="kh-canvas">
            <svg
                viewBox=format!("0 0 {WIDTH} {HEIGHT}")
                role="img"
                aria-label=description
                preserveAspectRatio="xMidYMid meet"
            >
                <defs>
                    {KINDS
                        .iter()
                        .map(|k| {
                            let (class, _, _) = kind_info(*k);
                            view! {
                                <marker id=format!("kh-arrow-{class}") class=format!("kh-arrow kh-{class}") viewBox="0 0 10 10" refX="8" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                                    <path d="M0,0 L10,5 L0,10 z"></path>
                                </marker>
                            }
                        })
                        .collect_view()}
                </defs>
                <Zones/>
                <Actor place=Place::Laptop/>
                <Actor place=Place::ApiServer/>
                <Actor place=Place::CloudControllerManager/>
                <Balancer/>
                {(0..ctx.layout.with_value(|l| l.proxy_panels.len())).map(|i| view! { <NodeCard index=i/> }).collect_view()}
                <Trails/>
                <Token/>
            </svg>
            <figcaption class="kh-status" aria-hidden="true">{move || status_line(ctx)}</figcaption>
        </figure>
    }
}

fn status_line(ctx: Ctx) -> String {
    let f = ctx.frame.get();
    ctx.with_step(|st| match f.current.and_then(|i| st.hops.get(i).map(|h| (i, h))) {
        Some((i, h)) => {
            let wire = h.packet.as_ref().map(|p| format!("  ·  {}", p.after)).unwrap_or_default();
            let alt = if h.what_if { format!("  ·  {}", crate::panels::WHAT_IF) } else { String::new() };
            format!("{}/{}  ·  {}{}{}", i + 1, st.hops.len(), h.caption, wire, alt)
        }
        None => format!("Ready: {} hops. Press Play or Space.", st.hops.len()),
    })
    .unwrap_or_default()
}

#[component]
fn Zones() -> impl IntoView {
    let zone = |x: f64, w: f64, label: &'static str| {
        view! {
            <g class="kh-zone">
                <rect x=x y="4" width=w height=HEIGHT - 8.0 rx="14"></rect>
                <text x=x + 12.0 y="28" class="kh-zone-label">{label}</text>
            </g>
        }
    };
    view! {
        {zone(6.0, 178.0, "OUTSIDE")}
        {zone(192.0, 188.0, "CONTROL PLANE")}
        {zone(392.0, WIDTH - 398.0, "CLUSTER")}
    }
}

fn is_active(ctx: Ctx, place: Place) -> bool {
    let f = ctx.frame.get();
    ctx.with_step(|st| f.current.and_then(|i| st.hops.get(i)).is_some_and(|h| h.from == place || h.to == place)).unwrap_or(false)
}

/// Laptop, API server or cloud-controller-manager: a labelled box.
#[component]
fn Actor(place: Place) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let r = ctx.layout.with_value(|l| l.rect(place)).unwrap_or(Rect { x: 0.0, y: 0.0, w: 0.0, h: 0.0 });
    let (label, sub) = ctx.player.walkthrough.with_untracked(|w| w.actor(place).map(|a| (a.label.clone(), a.sublabel.clone())).unwrap_or_default());
    let (label, extra) = match place {
        Place::CloudControllerManager => ("cloud-controller-".to_string(), Some("manager".to_string())),
        _ => (label, None),
    };
    let role = match place {
        Place::Laptop => "kubectl · client",
        _ => "",
    };
    let sub = if place == Place::CloudControllerManager { String::new() } else { sub };
    let cx = r.x + r.w / 2.0;
    view! {
        <g class="kh-actor" class:active=move || is_active(ctx, place)>
            <rect x=r.x y=r.y width=r.w height=r.h rx="10"></rect>
            <text x=cx y=r.y + 28.0 class="kh-label" text-anchor="middle">{label}</text>
            {extra.map(|e| view! { <text x=cx y=r.y + 48.0 class="kh-label" text-anchor="middle">{e}</text> })}
            {(!sub.is_empty()).then(|| view! { <text x=cx y=r.y + 50.0 class="kh-mono" text-anchor="middle">{sub.clone()}</text> })}
            {(!role.is_empty()).then(|| view! { <text x=cx y=r.y + r.h - 14.0 class="kh-muted" text-anchor="middle">{role}</text> })}
        </g>
    }
}

#[component]
fn Balancer() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let r = ctx.layout.with_value(|l| l.rect(Place::LoadBalancer)).unwrap_or(Rect { x: 0.0, y: 0.0, w: 0.0, h: 0.0 });
    let state = Memo::new(move |_| {
        let f = ctx.frame.get();
        ctx.with_step(|st| st.views.get(f.view).map(|v| v.balancer.clone())).flatten().unwrap_or(BalancerView::Absent)
    });
    let cx = r.x + r.w / 2.0;
    view! {
        <g
            class="kh-actor kh-lb"
            class:absent=move || state.get() == BalancerView::Absent
            class:provisioning=move || state.get() == BalancerView::Provisioning
            class:active=move || is_active(ctx, Place::LoadBalancer)
        >
            <rect x=r.x y=r.y width=r.w height=r.h rx="10"></rect>
            <text x=cx y=r.y + 28.0 class="kh-label" text-anchor="middle">"Load balancer"</text>
            <text x=cx y=r.y + 52.0 class="kh-mono" text-anchor="middle">
                {move || match state.get() {
                    BalancerView::Absent => "none yet".to_string(),
                    BalancerView::Provisioning => "provisioning…".to_string(),
                    BalancerView::Active { ip } => ip.to_string(),
                }}
            </text>
            <text x=cx y=r.y + r.h - 12.0 class="kh-muted" text-anchor="middle">
                {move || match state.get() {
                    BalancerView::Absent => "type: LoadBalancer",
                    BalancerView::Provisioning => "IP <pending>",
                    BalancerView::Active { .. } => ":80 → :31000",
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
        RuleSummary::Endpoints { targets, .. } => format!("SVC → {} Pods, random", targets.len()),
    }
}

#[component]
fn NodeCard(index: usize) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let (card, panel, pods_area) = ctx.layout.with_value(|l| {
        (l.rect(Place::Node(index)).unwrap_or(Rect { x: 0.0, y: 0.0, w: 0.0, h: 0.0 }), l.proxy_panels[index], l.pod_areas[index])
    });
    let (name, ip, pods) = ctx.player.walkthrough.with_untracked(|w| {
        let a = w.actor(Place::Node(index));
        let pods: Vec<(Place, String, String, String)> =
            w.actors.iter().filter(|a| a.node == Some(index)).map(|a| (a.place, a.label.clone(), a.short.clone(), a.sublabel.clone())).collect();
        (a.map(|a| a.label.clone()).unwrap_or_default(), a.map(|a| a.sublabel.clone()).unwrap_or_default(), pods)
    });
    // The node's rule summary in the current view, and which lines the
    // current hop matched here.
    let rules = Memo::new(move |_| {
        let f = ctx.frame.get();
        ctx.with_step(|st| {
            let hit: Vec<usize> = f
                .current
                .and_then(|i| st.hops.get(i))
                .and_then(|h| h.packet.as_ref())
                .filter(|p| p.decided_on == Some(index))
                .map(|p| p.matched.iter().map(|m| m.line).collect())
                .unwrap_or_default();
            st.views
                .get(f.view)
                .and_then(|v| v.nodes.get(index))
                .map(|n| n.rules.iter().map(|r| (summary_text(r), r.lines().iter().any(|l| hit.contains(l)))).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .unwrap_or_default()
    });
    let updated = move || {
        let f = ctx.frame.get();
        ctx.with_step(|st| f.current.and_then(|i| st.hops.get(i)).is_some_and(|h| h.kind == HopKind::ControlPlane && h.to == Place::Node(index))).unwrap_or(false)
    };
    let empty = pods.is_empty();
    view! {
        <g class="kh-node" class:active=move || is_active(ctx, Place::Node(index))>
            <rect class="kh-node-card" x=card.x y=card.y width=card.w height=card.h rx="12"></rect>
            <text x=card.x + 14.0 y=card.y + 28.0 class="kh-node-name">{name}</text>
            <text x=card.x + 96.0 y=card.y + 28.0 class="kh-mono">{ip}</text>
            <g class="kh-proxy" class:updated=updated>
                <rect x=panel.x y=panel.y width=panel.w height=panel.h rx="8"></rect>
                <text x=panel.x + 10.0 y=panel.y + 20.0 class="kh-panel-title">"kube-proxy · iptables nat"</text>
                {move || {
                    let rs = rules.get();
                    if rs.is_empty() {
                        return view! { <text x=panel.x + 10.0 y=panel.y + 46.0 class="kh-muted">"no rules for web"</text> }.into_any();
                    }
                    rs.into_iter()
                        .take(4)
                        .enumerate()
                        .map(|(i, (t, hit))| {
                            let y = panel.y + 32.0 + i as f64 * 21.0;
                            view! {
                                <g class="kh-rule" class:hit=hit>
                                    <rect x=panel.x + 4.0 y=y width=panel.w - 8.0 height="20" rx="4"></rect>
                                    <text x=panel.x + 10.0 y=y + 15.0 class="kh-rule-text">{if hit { format!("▶ {t}") } else { t }}</text>
                                </g>
                            }
                        })
                        .collect_view()
                        .into_any()
                }}
            </g>
            {empty.then(|| view! {
                <g class="kh-pod empty">
                    <rect x=pods_area.x y=pods_area.y width=pods_area.w height=pods_area.h rx="8"></rect>
                    <text x=pods_area.x + pods_area.w / 2.0 y=pods_area.y + pods_area.h / 2.0 + 5.0 class="kh-muted" text-anchor="middle">"no web Pod"</text>
                </g>
            })}
            {pods.into_iter().map(|(place, label, short, sub)| view! { <PodBox place=place label=label short=short sub=sub/> }).collect_view()}
        </g>
    }
}

#[component]
fn PodBox(place: Place, label: String, short: String, sub: String) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let r = ctx.layout.with_value(|l| l.rect(place)).unwrap_or(Rect { x: 0.0, y: 0.0, w: 0.0, h: 0.0 });
    let cx = r.x + r.w / 2.0;
    view! {
        <g class="kh-pod" class:active=move || is_active(ctx, place)>
            <title>{format!("Pod {label}")}</title>
            <rect x=r.x y=r.y width=r.w height=r.h rx="8"></rect>
            // The core's short label (`Pod web-x2klp`); the full name is in the title.
            <text x=cx y=r.y + 30.0 class="kh-label" text-anchor="middle">{short}</text>
            <text x=cx y=r.y + 56.0 class="kh-mono" text-anchor="middle">{sub}</text>
            <text x=cx y=r.y + 84.0 class="kh-ready" text-anchor="middle">"✓ Ready"</text>
        </g>
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
                    let path = ctx.layout.with_value(|l| l.route(h.from, h.to));
                    // Replies run beside requests, not on top of them.
                    let off = if h.kind == HopKind::Reply { 6.0 } else { 0.0 };
                    (i, points(&path, off), h.kind, h.what_if, Some(i) == f.current)
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
                    .map(|(_, pts, kind, what_if, current)| {
                        let (class, _, _) = kind_info(kind);
                        view! {
                            <polyline
                                class=format!("kh-trail kh-{class}")
                                class:whatif=what_if
                                class:current=current
                                points=pts
                                marker-end=format!("url(#kh-arrow-{class})")
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
        let what_if = ctx.with_step(|st| f.current.and_then(|i| st.hops.get(i)).is_some_and(|h| h.what_if)).unwrap_or(false);
        f.token.map(|(p, k)| (p, k, what_if))
    });
    move || {
        token.get().map(|(p, kind, what_if)| {
            let (class, label, _) = kind_info(kind);
            let w = 14.0 + 9.5 * label.len() as f64;
            view! {
                <g
                    class=format!("kh-token kh-{class}")
                    class:whatif=what_if
                    data-testid="packet"
                    data-x=format!("{:.1}", p.x)
                    data-y=format!("{:.1}", p.y)
                    transform=format!("translate({:.1} {:.1})", p.x, p.y)
                >
                    <rect x=-w / 2.0 y="-13" width=w height="26" rx="13"></rect>
                    <text y="5" text-anchor="middle">{if kind == HopKind::Dropped { "✕ DROP" } else { label }}</text>
                </g>
            }
        })
    }
}
