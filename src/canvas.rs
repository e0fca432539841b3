//! The SVG canvas: the core's drawing (`scene::drawing`), element by
//! element. Nothing is laid out or worded here: boxes, texts and their
//! sizes, trails, the token's card and the camera all come from the core.
//! Each layer is a narrow memo, so an animation tick only moves the token
//! and the camera.

use crate::room::Ctx;
use crate::stages::Stage;
use kubehops_core::decimal::{fixed, trimmed};
use kubehops_core::scene::camera::Viewport;
use kubehops_core::scene::drawing::{self, Group, HopPlan, Trail, ARROW_LEN, ARROW_W};
use kubehops_core::scene::svg;
use kubehops_core::scene::style::{kind_style, KINDS};
use kubehops_core::scene::{Frame, Point};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// A coordinate or length as SVG attribute text (`112.5`), printed by the
/// core's integer formatting: `f64`'s own would add its float code to the
/// wasm.
fn n(v: f64) -> String {
    trimmed(v, 2)
}

fn points(path: &[kubehops_core::scene::Point]) -> String {
    path.iter().map(|p| format!("{},{}", fixed(p.x, 1), fixed(p.y, 1))).collect::<Vec<_>>().join(" ")
}

thread_local! {
    /// The size of the first frame's canvas (`crates/kubehops-firstframe`),
    /// read before the app mounts: the app's canvas has the same layout, so
    /// its first drawing needs no layout of its own to be measured.
    static FIRST_SIZE: std::cell::Cell<Option<(f64, f64)>> = const { std::cell::Cell::new(None) };
}

/// Reads the size of the first frame's canvas while the page still shows
/// it. Its layout is done (it was painted), so this forces no layout;
/// measuring the app's own canvas while it is being built would.
pub fn remember_first_frame_size() {
    let Ok(list) = document().query_selector_all("#kh-first svg") else { return };
    let size = (0..list.length())
        .filter_map(|i| list.item(i)?.dyn_into::<web_sys::Element>().ok())
        .map(|e| e.get_bounding_client_rect())
        .map(|r| (r.width().round(), r.height().round()))
        .find(|&(w, h)| w > 0.0 && h > 0.0);
    FIRST_SIZE.with(|c| c.set(size));
}

/// The size of the canvas's drawing area in CSS pixels, kept up to date
/// by a ResizeObserver. The first canvas starts at the first frame's size
/// (its observer corrects it on the next frame if the two differ); any
/// later one measures itself once.
fn observe_size(el: NodeRef<leptos::svg::Svg>, size: RwSignal<(f64, f64)>) {
    if let Some(first) = FIRST_SIZE.with(|c| c.take()) {
        size.set(first);
    }
    Effect::new(move |_| {
        let Some(svg) = el.get() else { return };
        let svg: web_sys::Element = svg.unchecked_into();
        if size.get_untracked().0 == 0.0 {
            let r = svg.get_bounding_client_rect();
            if r.width() > 0.0 {
                size.set((r.width().round(), r.height().round()));
            }
        }
        // The new size is read off the observer's entry (measuring the
        // element again would force a layout, when the page is often in
        // the middle of changing), and set on the next frame, not in the
        // callback: a change made there that moved layout again would end
        // the browser's observation loop with an error event.
        let cb = Closure::<dyn Fn(js_sys::Array)>::new(move |entries: js_sys::Array| {
            let Some(e) = entries.iter().last().and_then(|e| e.dyn_into::<web_sys::ResizeObserverEntry>().ok()) else { return };
            let r = e.content_rect();
            let now = (r.width().round(), r.height().round());
            request_animation_frame(move || {
                // The observer outlives a canvas that is taken down (a
                // transcript still, a scenario switch): its signal may be gone.
                if now.0 > 0.0 && size.try_get_untracked().is_some_and(|was| was != now) {
                    let _ = size.try_set(now);
                }
            });
        });
        if let Ok(ro) = web_sys::ResizeObserver::new(cb.as_ref().unchecked_ref()) {
            ro.observe(&svg);
            std::mem::forget(ro);
        }
        cb.forget();
    });
}

#[component]
pub fn Canvas() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let svg_ref = NodeRef::<leptos::svg::Svg>::new();
    let size = RwSignal::new((0.0, 0.0));
    observe_size(svg_ref, size);
    let present = use_context::<crate::present::Present>();
    let vp = Memo::new(move |_| {
        let (w, h) = size.get();
        let (w, h) = if w > 0.0 { (w, h) } else { (960.0, 600.0) };
        if present.is_some_and(|p| p.on.get()) {
            let screen = window().inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(1080.0);
            Viewport::presenting(w, h, screen)
        } else {
            Viewport::new(w, h)
        }
    });
    // The animation's canvas tells the room its frame, which picks the
    // level of detail (a transcript still shows the same picture).
    if ctx.figure == 0 {
        Effect::new(move |_| {
            let v = vp.get();
            if ctx.viewport.try_get_untracked().is_some_and(|was| was != v) {
                ctx.viewport.set(v);
            }
        });
    }
    // What the boxes depend on: the step, the view and the hop on screen.
    let at = Memo::new(move |_| {
        let f = ctx.frame.get();
        (f.step, f.view, f.current, f.done)
    });
    let still = move || {
        let (step, view, current, done) = at.get();
        Frame { step, progress: done as f64, done, current, view }
    };
    let groups = Memo::new(move |_| {
        let f = still();
        ctx.with_scenario(|s| ctx.layout.with(|l| drawing::groups(s, l, &f)))
    });
    let trails = Memo::new(move |_| {
        let f = still();
        ctx.with_scenario(|s| ctx.layout.with(|l| drawing::trails(s, l, &f)))
    });
    let plan_of = move |i: Option<usize>| {
        let (step, ..) = at.get();
        i.and_then(|i| ctx.with_scenario(|s| ctx.layout.with(|l| drawing::plan(s, l, step, i))))
    };
    let plan_now: Memo<Option<HopPlan>> = Memo::new(move |_| plan_of(Some(at.get().2.unwrap_or(0))));
    let plan_before: Memo<Option<HopPlan>> = Memo::new(move |_| plan_of(at.get().2.map(|i| i.saturating_sub(1))));
    // The token as two memos: where it is (every frame) and what it looks
    // like (the hop's plan: a new hop, a new card), so a frame only moves it.
    let token_at = Memo::new(move |_| {
        let f = ctx.frame.get();
        f.current?;
        plan_now.with(|p| p.as_ref().map(|p| p.at(drawing::fraction(&f))))
    });
    let token_shown = Memo::new(move |_| ctx.frame.with(|f| f.current.is_some()));
    let token_look = Memo::new(move |_| token_shown.get().then(|| plan_now.with(|p| p.as_ref().map(|p| drawing::Token { at: Point::default(), ..p.token(1.0) }))).flatten());
    let cam = Memo::new(move |_| {
        let f = ctx.frame.get();
        let world = ctx.layout.with(|l| l.world());
        plan_before.with(|b| plan_now.with(|p| drawing::camera_with(world, vp.get(), &f, b.as_ref(), p.as_ref())))
    });
    let description = move || ctx.with_scenario(|s| kubehops_core::scene::describe::frame_label(s, &ctx.frame.get()));
    view! {
        <figure class="kh-canvas">
            <svg
                node_ref=svg_ref
                viewBox=move || cam.get().view_box()
                role="img"
                aria-label=description
                preserveAspectRatio="xMidYMid meet"
                data-scale=move || fixed(cam.get().scale, 3)
            >
                <defs>
                    {KINDS
                        .iter()
                        .map(|k| {
                            let class = kind_style(*k).class;
                            view! {
                                <marker
                                    id=marker_id(ctx, class)
                                    class=format!("kh-arrow kh-{class}")
                                    viewBox="0 0 10 10"
                                    refX="10"
                                    refY="5"
                                    markerUnits="userSpaceOnUse"
                                    markerWidth=n(ARROW_LEN)
                                    markerHeight=n(ARROW_W)
                                    orient="auto-start-reverse"
                                >
                                    <path d="M0,0 L10,5 L0,10 z"></path>
                                </marker>
                            }
                        })
                        .collect_view()}
                </defs>
                // Behind the first frame, the boxes and the trails are each
                // drawn in a task of their own (`Stage`).
                <Stage>
                    <For each=move || groups.get() key=|g| (g.key.clone(), drawing::fingerprint(g)) children=|g| view! { <GroupView group=g/> }/>
                </Stage>
                <Stage>
                    <g class="kh-trails">
                        <For each=move || trails.get() key=|t| (t.hop, t.current, drawing::trail_key(t)) children=move |t| view! { <TrailView trail=t ctx=ctx/> }/>
                    </g>
                    {move || token_look.get().map(|t| view! { <TokenView token=t at=token_at ctx=ctx/> })}
                </Stage>
            </svg>
            {(ctx.figure == 0).then(|| view! { <Caption/> })}
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

/// The hop's caption under the canvas: the core's sentence for the hop on
/// screen, in step with the token.
#[component]
fn Caption() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let at = Memo::new(move |_| {
        let f = ctx.frame.get();
        (f.step, f.current, f.done)
    });
    let caption = Memo::new(move |_| {
        let (step, current, _) = at.get();
        ctx.with_scenario(|s| kubehops_core::scene::describe::caption(s, step, current))
    });
    // The hop on screen as `3/6` (`0/6` before the step plays), for tests
    // and scripts; the words are the caption's.
    let hop = move || {
        let (step, current, _) = at.get();
        let n = ctx.with_scenario(|s| s.steps.get(step).map_or(0, |st| st.hops.len()));
        format!("{}/{n}", current.map_or(0, |i| i + 1))
    };
    view! {
        <figcaption class="kh-status" aria-hidden="true" data-hop=hop>
            <span class="kh-status-head">{move || caption.with(|c| c.head.clone())}</span>
            " "
            <span class="kh-status-text">{move || caption.with(|c| c.text.clone())}</span>
        </figcaption>
    }
}

/// A group of the drawing: its element, which the keyed list keeps or
/// replaces, and its insides as the core writes them (`scene::svg`).
#[component]
fn GroupView(group: Group) -> impl IntoView {
    let inner = svg::group_inner(&group);
    let Group { class, data, .. } = group;
    let (data_name, data_value) = data.map_or((None, None), |(k, v)| (Some(k), Some(v)));
    view! {
        <g
            class=class
            data-actor=(data_name == Some("actor")).then(|| data_value.clone()).flatten()
            data-node=(data_name == Some("node")).then(|| data_value.clone()).flatten()
            data-pod=(data_name == Some("pod")).then(|| data_value.clone()).flatten()
            data-group=(data_name == Some("group")).then(|| data_value.clone()).flatten()
            inner_html=inner
        ></g>
    }
}

#[component]
fn TrailView(trail: Trail, ctx: Ctx) -> impl IntoView {
    let dash = if trail.what_if { Some(kubehops_core::scene::style::WHAT_IF_DASH) } else { trail.style.dash.dasharray() };
    view! {
        <polyline
            class=trail.class()
            points=points(&trail.points)
            stroke-dasharray=dash
            marker-end=format!("url(#{})", marker_id(ctx, trail.style.class))
        ></polyline>
    }
}

/// The token: its pill on the route and its card beside it, drawn once
/// per look; a frame only moves it to `at`.
#[component]
fn TokenView(token: drawing::Token, at: Memo<Option<Point>>, ctx: Ctx) -> impl IntoView {
    let p = move || at.get().unwrap_or_default();
    view! {
        <g
            class=token.class()
            data-testid=(ctx.figure == 0).then_some("packet")
            data-x=move || fixed(p().x, 1)
            data-y=move || fixed(p().y, 1)
            transform=move || format!("translate({} {})", fixed(p().x, 1), fixed(p().y, 1))
            inner_html=svg::token_inner(&token)
        ></g>
    }
}
