//! The page: wires the player to the URL, the keyboard and the clock, and
//! lays out the canvas and the panels.

use crate::canvas::Canvas;
use crate::controls::{Controls, RandomPick, StepIndicator};
use crate::nodes::{ConntrackPanel, RulesPanel};
use crate::panels::{HopDetail, KubectlPanel, Legend, ManifestPanel, Narration, Notices};
use crate::player::Player;
use kubehops_core::scene::{frame, Frame, Layout};
use kubehops_core::walkthrough::{build, Options, Walkthrough};
use leptos::ev;
use leptos::prelude::*;

/// Everything the components read: the player and the derived frame.
#[derive(Clone, Copy)]
pub struct Ctx {
    pub player: Player,
    pub layout: StoredValue<Layout>,
    pub frame: Memo<Frame>,
}

impl Ctx {
    /// Runs `f` on the current step of the walkthrough.
    pub fn with_step<T>(&self, f: impl FnOnce(&kubehops_core::walkthrough::Step) -> T) -> Option<T> {
        let s = self.frame.get().step;
        self.player.walkthrough.with(|w| w.steps.get(s).map(f))
    }
}

fn walkthrough() -> Walkthrough {
    build("nodeport-loadbalancer", Options::default()).unwrap_or_else(|| kubehops_core::walkthrough::nodeport_loadbalancer(Options::default()))
}

fn now_ms() -> f64 {
    window().performance().map_or(0.0, |p| p.now())
}

/// Drives the clock with requestAnimationFrame while playing.
fn run_clock(player: Player, running: RwSignal<bool>, last: f64) {
    request_animation_frame(move || {
        let t = now_ms();
        if player.tick(t - last) {
            run_clock(player, running, t);
        } else {
            running.set(false);
        }
    });
}

#[component]
pub fn App() -> impl IntoView {
    let w = walkthrough();
    // The layout depends only on the actors, which a rebuild with other
    // random picks keeps.
    let layout = StoredValue::new(Layout::new(&w));
    let title = w.title.clone();
    let reduced = window()
        .match_media("(prefers-reduced-motion: reduce)")
        .ok()
        .flatten()
        .is_some_and(|m| m.matches());
    let player = Player::new(w, None, reduced);
    let frame = Memo::new(move |_| {
        let (s, p) = (player.step.get(), player.shown_progress());
        player.walkthrough.with(|w| layout.with_value(|l| frame(w, l, s, p)))
    });
    let ctx = Ctx { player, layout, frame };
    provide_context(ctx);

    // The URL opens a step; later changes to the hash do too.
    let hash = window().location().hash().unwrap_or_default();
    if hash.is_empty() {
        player.go_to(0);
        player.playing.set(false);
        player.progress.set(0.0);
    } else {
        player.open_link(&hash);
    }
    let _ = window_event_listener(ev::hashchange, move |_| {
        let h = window().location().hash().unwrap_or_default();
        if h != player.link_hash() {
            player.open_link(&h);
        }
    });
    // The step lives in the URL without adding history entries.
    Effect::new(move |_| {
        let h = player.link_hash();
        if window().location().hash().unwrap_or_default() != h {
            if let Ok(hist) = window().history() {
                let _ = hist.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&h));
            }
        }
    });

    let running = RwSignal::new(false);
    Effect::new(move |_| {
        if player.playing.get() && !running.get_untracked() {
            running.set(true);
            run_clock(player, running, now_ms());
        }
    });

    let _ = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() {
            return;
        }
        let tag = e
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .map(|el| el.tag_name().to_ascii_lowercase())
            .unwrap_or_default();
        if matches!(tag.as_str(), "input" | "textarea" | "select") {
            return;
        }
        match e.key().as_str() {
            // On a focused button, Space already clicks it.
            " " | "Spacebar" if tag != "button" && tag != "a" => {
                e.prevent_default();
                player.toggle();
            }
            "ArrowRight" => {
                e.prevent_default();
                player.next();
            }
            "ArrowLeft" => {
                e.prevent_default();
                player.previous();
            }
            "Home" => {
                e.prevent_default();
                player.restart();
            }
            _ => {}
        }
    });

    view! {
        <div class="kh" data-step=move || player.step.get() + 1 data-playing=move || player.playing.get().to_string()>
            <header class="kh-head">
                <h1>{title}</h1>
                <StepIndicator/>
            </header>
            <Notices/>
            <main class="kh-main">
                <section class="kh-stage" aria-label="Animation">
                    <Canvas/>
                    <Controls/>
                    <RandomPick/>
                    <Legend/>
                </section>
                <aside class="kh-side">
                    <Narration/>
                    <HopDetail/>
                    <ManifestPanel/>
                    <KubectlPanel/>
                    <ConntrackPanel/>
                </aside>
                <div class="kh-tables">
                    <RulesPanel/>
                </div>
            </main>
        </div>
    }
}
