//! Presenting: the presenter mode (Fullscreen, the canvas filling the
//! screen, the narration as a caption, panels on a key) and the
//! presenter view, a second window with the notes that
//! `kubehops_core::embed::presenter` computes from the scenario, kept in
//! step with the main window over a `BroadcastChannel`.
//!
//! Keys: `P` presents (and leaves), `Esc` leaves, `H` shows or hides the
//! panels while presenting, `N` opens the presenter view; Page Up and
//! Page Down step, as everywhere.

use crate::keys::Target;
use crate::room::Ctx;
use kubehops_core::scene::style::hop_style;
use crate::embed::{to_data, to_js};
use crate::player::Player;
use kubehops_core::embed::presenter::{self, HopState, Sync, CHANNEL};
use kubehops_core::link;
use kubehops_core::scenarios::CATALOG;
use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Presenter mode's view state.
#[derive(Clone, Copy)]
pub struct Present {
    pub on: RwSignal<bool>,
    pub panels: RwSignal<bool>,
    /// Where a refusal (full screen, the presenter view's window) is said.
    notices: RwSignal<Vec<String>>,
    /// Nothing to present: a scenario with no hop (Your cluster before a
    /// paste), whose stage is empty and whose panels hold the paste box.
    pub empty: Signal<bool>,
}

fn fullscreen_element() -> Option<JsValue> {
    js_sys::Reflect::get(&document(), &JsValue::from_str("fullscreenElement")).ok().filter(|v| !v.is_null() && !v.is_undefined())
}

impl Present {
    pub fn new(player: Player) -> Present {
        Present { on: RwSignal::new(false), panels: RwSignal::new(false), notices: player.notices, empty: Signal::derive(move || player.nothing_to_play()) }
    }

    pub fn enter(&self) {
        // Presenting an empty stage would hide the panels (the paste box)
        // and leave a blank screen.
        if self.on.get_untracked() || self.empty.get_untracked() {
            return;
        }
        self.on.set(true);
        self.panels.set(false);
        let Some(root) = document().document_element() else { return };
        let (on, notices) = (self.on, self.notices);
        leptos::task::spawn_local(async move {
            // Refused, presenting goes on inside the frame; the reader hears why.
            if let Err(why) = crate::browser::fullscreen(&root).await {
                if on.try_get_untracked() == Some(true) {
                    crate::browser::tell(notices, format!("{}. Esc or P leaves.", why.0));
                }
            }
        });
    }

    pub fn leave(&self) {
        if !self.on.get_untracked() {
            return;
        }
        self.on.set(false);
        if fullscreen_element().is_some() {
            crate::browser::exit_fullscreen();
        }
    }

    pub fn toggle(&self) {
        if self.on.get_untracked() {
            self.leave()
        } else {
            self.enter()
        }
    }
}

/// Provides presenter mode: its keys, leaving when fullscreen ends, and
/// the canvas's text floor.
pub fn provide_present(player: Player) -> Present {
    let pr = Present::new(player);
    provide_context(pr);
    // A link to a scenario with nothing to present, opened while
    // presenting, ends presenting.
    Effect::new(move |_| {
        if pr.empty.get() && pr.on.get_untracked() {
            pr.leave();
        }
    });
    // Esc in fullscreen is the browser's: it ends fullscreen, and so the mode.
    let on_change = Closure::<dyn Fn()>::new(move || {
        if fullscreen_element().is_none() && pr.on.get_untracked() {
            pr.on.set(false);
        }
    });
    let _ = document().add_event_listener_with_callback("fullscreenchange", on_change.as_ref().unchecked_ref());
    on_change.forget();
    let _ = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() || e.default_prevented() || matches!(Target::of(&e), Target::Input | Target::Select) {
            return;
        }
        let handled = match e.key().as_str() {
            "p" | "P" => {
                pr.toggle();
                true
            }
            "Escape" if pr.on.get_untracked() => {
                pr.leave();
                true
            }
            "h" | "H" if pr.on.get_untracked() => {
                pr.panels.update(|v| *v = !*v);
                true
            }
            "n" | "N" if !player.display.get_untracked().embed => {
                open_notes(player);
                true
            }
            _ => false,
        };
        if handled {
            e.prevent_default();
        }
    });
    pr
}


/// "Present" and "Presenter view", for the full page.
#[component]
pub fn PresentButtons() -> impl IntoView {
    let pr = expect_context::<Present>();
    let p = expect_context::<Ctx>().player;
    view! {
        <button type="button" class="kh-btn kh-btn-small" aria-keyshortcuts="P" title="Present full screen (P; Esc leaves, H toggles the panels)" disabled=move || pr.empty.get() on:click=move |_| pr.enter()>"Present"</button>
        <button type="button" class="kh-btn kh-btn-small" aria-keyshortcuts="N" title="Open the presenter view in a second window (N)" on:click=move |_| open_notes(p)>"Presenter view"</button>
    }
}

/// Opens the presenter view on what is shown now.
fn open_notes(player: Player) {
    let mut l = untrack(|| player.link());
    l.display = player.display.get_untracked().for_notes();
    let href = window().location().href().unwrap_or_default();
    let page = href.split('#').next().unwrap_or_default().to_string();
    let url = format!("{page}{}", link::format(&l));
    if let Err(why) = crate::browser::open_window(&url, "kubehops-notes", "popup=yes,width=1100,height=760") {
        crate::browser::tell(player.notices, format!("{}. Allow pop-ups for this page, or open this link in a second window: {url}", why.0));
    }
}

fn channel() -> Option<web_sys::BroadcastChannel> {
    web_sys::BroadcastChannel::new(CHANNEL).ok()
}

fn post(ch: &web_sys::BroadcastChannel, m: &Sync) {
    let _ = ch.post_message(&to_js(&m.data()));
}

/// The hops finished in the step shown.
fn done(player: Player) -> usize {
    let p = player.progress.get();
    if p.is_finite() {
        p.max(0.0).floor() as usize
    } else {
        0
    }
}

/// The main window's side: tells the presenter views every change, and
/// follows the steps they take.
pub fn sync_main(player: Player) {
    let Some(ch) = channel() else { return };
    let shown = Memo::new(move |_| (player.link_hash(), done(player)));
    let c2 = ch.clone();
    Effect::new(move |_| {
        let (link, done) = shown.get();
        post(&c2, &Sync::State { from_notes: false, link, done });
    });
    let c3 = ch.clone();
    let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| match to_data(&e.data()).and_then(|d| Sync::parse(&d)) {
        Some(Sync::Hello) => {
            let (link, done) = shown.get_untracked();
            post(&c3, &Sync::State { from_notes: false, link, done });
        }
        Some(Sync::State { from_notes: true, link, .. }) => {
            let mine = presenter::adopt(&link, &player.display.get_untracked());
            if mine != untrack(|| player.link_hash()) {
                player.open_link(&mine);
            }
        }
        _ => {}
    });
    ch.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
}

/// The presenter view: the current and next step's narration, a clock,
/// the hop list, and buttons (and keys) that step both windows.
#[component]
pub fn NotesPage() -> impl IntoView {
    let p = expect_context::<Ctx>().player;
    let ch = channel();
    let notes = Memo::new(move |_| {
        let (s, pr) = (p.step.get(), p.progress.get());
        p.scenario.with(|sc| presenter::notes(sc, s, pr))
    });
    // This window does not play: it shows where the main window is.
    if let Some(ch) = &ch {
        let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(Sync::State { from_notes: false, link, done }) = to_data(&e.data()).and_then(|d| Sync::parse(&d)) {
                // Rebuild only for another scenario or other parameters; a
                // step is a step. Shown once the page has its scenario.
                let got = link::parse_with(&link, CATALOG, |_, _| usize::MAX).link;
                let same = p.scenario_id.get_untracked() == got.scenario && p.params.with_untracked(|ps| *ps == got.params);
                let adopted = presenter::adopt(&link, &p.display.get_untracked());
                p.when_built(got.scenario, got.params, move || {
                    if !same {
                        p.apply_link(&adopted);
                    }
                    if p.step.get_untracked() != got.step {
                        p.step.set(got.step);
                    }
                    p.playing.set(false);
                    p.progress.set(done as f64);
                });
            }
        });
        ch.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();
        post(ch, &Sync::Hello);
    }
    let ch = StoredValue::new_local(ch);
    let step = move |forward: bool| {
        let s = p.step.get_untracked();
        let n = p.scenario.with_untracked(|sc| sc.steps.len());
        let to = if forward { (s + 1).min(n.saturating_sub(1)) } else { s.saturating_sub(1) };
        if to == s {
            return;
        }
        p.step.set(to);
        p.progress.set(0.0);
        p.playing.set(false);
        // The link without a hop: the main window plays the step once.
        let mut l = untrack(|| p.link());
        l.hop = None;
        ch.with_value(|c| {
            if let Some(c) = c {
                post(c, &Sync::State { from_notes: true, link: link::format(&l), done: 0 });
            }
        });
    };
    let _ = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() || matches!(Target::of(&e), Target::Input | Target::Select) {
            return;
        }
        match e.key().as_str() {
            "ArrowRight" | "PageDown" | " " => step(true),
            "ArrowLeft" | "PageUp" => step(false),
            _ => return,
        }
        e.prevent_default();
    });
    let started = js_sys::Date::now();
    let now = RwSignal::new(started);
    if let Ok(h) = set_interval_with_handle(move || now.set(js_sys::Date::now()), std::time::Duration::from_millis(1000)) {
        on_cleanup(move || h.clear());
    }
    let wall = move || {
        let d = js_sys::Date::new(&JsValue::from_f64(now.get()));
        presenter::clock(d.get_hours() as f64 * 3600.0 + d.get_minutes() as f64 * 60.0 + d.get_seconds() as f64)
    };
    let elapsed = move || presenter::clock((now.get() - started) / 1000.0);
    view! {
        <div class="kh kh-notes" data-step=move || p.step.get() + 1>
            <header class="kh-notes-head">
                <h1>{move || notes.with(|n| format!("{} · step {} of {}", n.title, n.current.number, n.steps))}</h1>
                <p class="kh-clock" aria-label="Clock">
                    <span data-testid="clock">{wall}</span>
                    <span class="kh-sub">" · elapsed "<span data-testid="elapsed">{elapsed}</span></span>
                </p>
                <div class="kh-controls" role="group" aria-label="Steps">
                    <button type="button" class="kh-btn" aria-label="Previous step" on:click=move |_| step(false)>"← Previous"</button>
                    <button type="button" class="kh-btn kh-btn-primary" aria-label="Next step" on:click=move |_| step(true)>"Next →"</button>
                </div>
            </header>
            <div class="kh-notes-grid">
                <section class="kh-card kh-notes-now" data-testid="notes-current">
                    <h2>{move || notes.with(|n| format!("Now · {}. {}", n.current.number, n.current.title))}</h2>
                    <p>{move || notes.with(|n| n.current.narration.clone())}</p>
                </section>
                <section class="kh-card kh-notes-next" data-testid="notes-next">
                    {move || notes.with(|n| match &n.next {
                        Some(x) => view! { <h2>{format!("Next · {}. {}", x.number, x.title)}</h2><p>{x.narration.clone()}</p> }.into_any(),
                        None => view! { <h2>"Next"</h2><p class="kh-muted-html">"This is the last step."</p> }.into_any(),
                    })}
                </section>
                <section class="kh-card kh-notes-hops">
                    <h2>"Hops"</h2>
                    <ol class="kh-notes-hoplist" data-testid="notes-hops">
                        {move || {
                            let sc_hops = p.scenario.with(|sc| sc.steps.get(p.step.get()).map(|st| st.hops.clone()).unwrap_or_default());
                            notes.with(|n| {
                                n.hops
                                    .iter()
                                    .map(|h| {
                                        let (class, label) = sc_hops.get(h.number - 1).map(hop_style).map_or(("request", "REQ"), |s| (s.class, s.label));
                                        let state = match h.state {
                                            HopState::Done => "done",
                                            HopState::Current => "current",
                                            HopState::Coming => "coming",
                                        };
                                        view! {
                                            <li class=format!("kh-notes-hop kh-{class} {state}") aria-current=(h.state == HopState::Current).then_some("step")>
                                                <span class="kh-hopnum">{h.number}</span>
                                                <span class="kh-hopkind">{if h.what_if { format!("{label} (what if)") } else { label.to_string() }}</span>
                                                <span>{format!("{} → {}: {}", h.from, h.to, h.caption)}</span>
                                            </li>
                                        }
                                    })
                                    .collect_view()
                            })
                        }}
                    </ol>
                </section>
            </div>
        </div>
    }
}
