//! The page: wires the player to the URL, the title and the clock, and
//! lays out the navigation, the canvas and the panels. The shared state is
//! in `room`, the keys in `keys`, the stage scheduler in `stages`.

use crate::canvas::Canvas;
use crate::controls::{Controls, Demos, ParamControls, Settings, StepIndicator};
use crate::embed::{EmbedButton, EmbedPage};
use crate::present::{NotesPage, Present, PresentButtons};
use crate::nodes::{ConntrackPanel, HostPanels, RulesPanel};
use crate::panels::{Comparison, Evidence, HopDetail, KubectlPanel, Legend, ManifestPanel, Narration, Notices};
use crate::player::Player;
use crate::read::{LiveRegion, PrintTranscript, ReadTools, TranscriptPage};
use crate::room::{provide_ctx, Ctx};
use crate::stages::{staged_here, shown_step, Later, Stage};
use kubehops_core::link::Mode;
use kubehops_core::scenarios::CATALOG;
use kubehops_core::scene::Frame;
use leptos::ev;
use leptos::prelude::*;

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
    let (id, params) = crate::player::named_by(&window().location().hash().unwrap_or_default());
    let player = Player::new(&id, params, prefers_reduced_motion());
    let ctx = provide_ctx(player);
    player.use_worker();
    crate::read::provide_reading();
    sync_link(player);
    sync_title(player);
    crate::embed::apply_display(player);
    crate::embed::start(player);
    let display = player.display.get_untracked();
    if display.notes {
        // The presenter view shows the main window's state; it has no clock.
        return view! { <NotesPage/> }.into_any();
    }
    crate::present::provide_present(player);
    // What the first render does not need waits for a task of its own
    // behind the first frame; the layout is worked out in one before the
    // canvas is drawn.
    staged_here(move || {
        drive_clock(player);
        crate::keys::listen_to_keys(player);
    });
    crate::stages::staged(move || ctx.layout.with_untracked(|_| ()));
    if display.embed {
        crate::embed::connect_host(player);
        return view! { <EmbedPage/> }.into_any();
    }
    staged_here(move || crate::present::sync_main(player));
    view! { <Page frame=ctx.frame/> }.into_any()
}

fn prefers_reduced_motion() -> bool {
    window().match_media("(prefers-reduced-motion: reduce)").ok().flatten().is_some_and(|m| m.matches())
}

/// The URL opens a scenario and a state, and later changes to the hash do
/// too; what is shown goes back into the URL without adding history
/// entries. replaceState fires no hashchange, and the listener ignores a
/// hash that already matches, so the two never fight.
fn sync_link(player: Player) {
    let hash = window().location().hash().unwrap_or_default();
    player.open_link(&hash);
    if hash.is_empty() {
        player.playing.set(false);
        player.progress.set(0.0);
    }
    // The address as the page last wrote or saw it. When the address is
    // not that at the time of a write, someone else (the reader, a host
    // page, a test) has put a hash there whose hashchange may not have
    // run yet: the write leaves it, and the state follows it.
    let known = StoredValue::new(hash.clone());
    // A write is waiting (see below).
    let queued = StoredValue::new(false);
    let _ = window_event_listener(ev::hashchange, move |_| {
        let h = window().location().hash().unwrap_or_default();
        known.set_value(h.clone());
        // The new address leads: a write queued for the state before it
        // is dropped (the state it opens may take a build to show, and
        // until then the link is still the old one).
        queued.set_value(false);
        if h != player.link_hash() {
            player.open_link(&h);
        }
    });
    let link = Memo::new(move |_| player.link_hash());
    // Written after the frame that shows the change is painted, once for
    // however many changes came before it: replaceState takes Chromium
    // several milliseconds (with the packed manifest of an edit, 3 to 6),
    // which a keystroke's next frame would otherwise wait for.
    // A page that draws no frames (a hidden tab, a cross-origin frame
    // Chromium throttles, a busy machine) still gets its link: a timer
    // writes it if no frame came first. Whichever runs second finds the
    // address written and leaves it.
    let write = move || {
        // Written already (by the other of the two), dropped for a new
        // address, or the app is gone (the wasm tests unmount it).
        if queued.try_get_value() != Some(true) {
            return;
        }
        queued.set_value(false);
        let (Some(h), Some(last)) = (link.try_get_untracked(), known.try_get_value()) else { return };
        let now = window().location().hash().unwrap_or_default();
        if now == last && now != h {
            write_link(&h);
            known.set_value(h);
        }
    };
    Effect::new(move |_| {
        link.track();
        if !queued.get_value() {
            queued.set_value(true);
            request_animation_frame(move || set_timeout(write, std::time::Duration::ZERO));
            set_timeout(write, LINK_WRITE_AT_MOST);
        }
    });
}

/// How long the link waits for the next frame before it is written anyway.
const LINK_WRITE_AT_MOST: std::time::Duration = std::time::Duration::from_millis(250);

/// Puts `hash` in the address bar.
fn write_link(hash: &str) {
    if let Ok(hist) = window().history() {
        let _ = hist.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(hash));
    }
}

fn sync_title(player: Player) {
    let title = Memo::new(move |_| player.scenario.with(|s| s.title.clone()));
    Effect::new(move |_| document().set_title(&format!("KubeHops · {}", title.get())));
}

/// Runs the requestAnimationFrame clock while playing.
fn drive_clock(player: Player) {
    let running = RwSignal::new(false);
    Effect::new(move |_| {
        if player.playing.get() && !running.get_untracked() {
            running.set(true);
            run_clock(player, running, now_ms());
        }
    });
}

/// The page: navigation, title and steps, parameters, then the main grid.
#[component]
fn Page(frame: Memo<Frame>) -> impl IntoView {
    let player = expect_context::<Ctx>().player;
    let present = expect_context::<Present>();
    let title = Memo::new(move |_| player.scenario.with(|s| s.title.clone()));
    view! {
        <div
            class="kh"
            class:kh-presenting=move || present.on.get()
            class:kh-panels=move || present.panels.get()
            data-step=shown_step(player)
            data-progress=move || {
                // Two decimals, formatted as integers: float formatting would add to the wasm.
                let c = (frame.get().progress * 100.0).round() as u64;
                format!("{}.{:02}", c / 100, c % 100)
            }
            data-playing=move || player.playing.get().to_string()
            data-view=move || player.view.get().as_str()
            // A control's choice is shown at once and applied a frame later
            // (`Player::choose`), and a new scenario comes from the worker:
            // until then the page is being updated.
            aria-busy=move || player.busy().then_some("true")
        >
            <header class="kh-head">
                <p class="kh-brand">"KubeHops"</p>
                <ScenarioNav/>
            </header>
            <div class="kh-titlebar">
                <h1>{move || title.get()}</h1>
                <Stage>
                    {move || (player.view.get() == Mode::Animation).then(|| view! { <StepIndicator/> })}
                    <Tools/>
                </Stage>
            </div>
            <Notices/>
            <crate::cluster::IfYourCluster/>
            <Stage><ParamControls/></Stage>
            {move || (player.view.get() == Mode::Transcript).then(|| view! { <TranscriptPage/> })}
            {move || (player.view.get() == Mode::Animation).then(|| view! { <Animation/> })}
        </div>
    }
}

/// Embed, Present and Presenter view. On a narrow screen they fold behind
/// one "Share and present" button, so the steps and the canvas come first;
/// wide, the button is not shown and they stand in a row.
#[component]
fn Tools() -> impl IntoView {
    let open = RwSignal::new(false);
    view! {
        <div class="kh-tools" class:open=move || open.get() role="group" aria-label="Share and present">
            <button
                type="button"
                class="kh-btn kh-btn-small kh-tools-toggle"
                aria-expanded=move || open.get().to_string()
                aria-controls="kh-tools-items"
                on:click=move |_| open.update(|o| *o = !*o)
            >
                "Share and present"
                <span class="kh-chevron" aria-hidden="true">{move || if open.get() { " ▴" } else { " ▾" }}</span>
            </button>
            <div class="kh-tools-items" id="kh-tools-items">
                <EmbedButton/>
                <PresentButtons/>
            </div>
        </div>
    }
}

/// The animation: the canvas and its controls, the narration and the panels.
#[component]
fn Animation() -> impl IntoView {
    let player = expect_context::<Ctx>().player;
    view! {
            // Reading order is the narrow layout's order: the animation,
            // what the step is about, the options and legend, then the
            // details. Wide, the grid moves the narration beside the canvas.
            // A scenario with nothing to draw (Your cluster before a paste) shows no stage.
            <main class="kh-main" id="kh-main" class:kh-nothing=move || player.scenario.with(|s| s.actors.is_empty())>
                <section class="kh-stage" aria-label="Animation">
                    <Stage><Canvas/></Stage>
                    <Stage>
                        <LiveRegion/>
                        <Controls/>
                        <ReadTools/>
                        <Legend/>
                        <Settings/>
                    </Stage>
                </section>
                <Stage><Narration/></Stage>
                // Each drawn in a task of its own after the canvas, so no
                // start-up task is long (what is beside and below the canvas
                // can wait a frame; the first frame never showed it).
                <Later>
                    <div class="kh-extras">
                        <Demos/>
                    </div>
                </Later>
                <Later>
                    <aside class="kh-side">
                        <HopDetail/>
                        <ManifestPanel/>
                        <KubectlPanel/>
                        <Evidence/>
                        <ConntrackPanel/>
                    </aside>
                </Later>
                <Later>
                    <div class="kh-tables">
                        <RulesPanel/>
                        <HostPanels/>
                        <Comparison/>
                    </div>
                </Later>
            </main>
            <PrintTranscript/>
    }
}

/// One entry per scenario of the registry: real links, so the keyboard,
/// a middle click and a copied address all work.
#[component]
fn ScenarioNav() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let current = move || ctx.player.scenario_id.get();
    view! {
        <nav class="kh-nav" aria-label="Scenarios">
            <ul>
                {CATALOG
                    .iter()
                    .map(|e| {
                        let id = e.id;
                        let here = move || current() == id;
                        view! {
                            <li>
                                <a
                                    href=format!("#/{id}/1")
                                    class="kh-nav-link"
                                    class:current=here
                                    aria-current=move || here().then_some("page")
                                    title=e.blurb
                                >
                                    {e.title}
                                </a>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </nav>
    }
}
