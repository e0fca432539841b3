//! Play/Pause, Previous, Next, Restart, the step indicator and the random
//! pick switch.

use crate::app::Ctx;
use crate::player::{next_seed, SPEEDS};
use leptos::prelude::*;

#[component]
pub fn Controls() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let at_first = move || p.step.get() == 0;
    let at_last = move || p.step.get() + 1 >= p.steps();
    let play_label = move || if p.playing.get() { "Pause" } else { "Play" };
    view! {
        <div class="kh-controls" role="group" aria-label="Playback">
            <button type="button" class="kh-btn" aria-label="Restart" aria-keyshortcuts="Home" title="Restart from step 1 (Home)" on:click=move |_| p.restart()>
                <Icon d="M6 5v14M19 5 9 12l10 7z"/><span class="kh-btn-text">"Restart"</span>
            </button>
            <button type="button" class="kh-btn" aria-label="Previous step" aria-keyshortcuts="ArrowLeft PageUp" title="Previous step (← or Page Up)" disabled=at_first on:click=move |_| p.previous()>
                <Icon d="M15 5 8 12l7 7"/><span class="kh-btn-text">"Previous"</span>
            </button>
            <button type="button" class="kh-btn kh-btn-primary" aria-label=play_label aria-keyshortcuts="Space" title="Play or pause (Space)" on:click=move |_| p.toggle()>
                {move || if p.playing.get() { view! { <Icon d="M7 5h3v14H7zM14 5h3v14h-3z"/> } } else { view! { <Icon d="M7 4.5v15L19.5 12z"/> } }}
                <span class="kh-btn-text">{play_label}</span>
            </button>
            <button type="button" class="kh-btn" aria-label="Next step" aria-keyshortcuts="ArrowRight PageDown" title="Next step (→ or Page Down)" disabled=at_last on:click=move |_| p.next()>
                <span class="kh-btn-text">"Next"</span><Icon d="M9 5l7 7-7 7"/>
            </button>
            <Speed/>
            <span
                class="kh-keys"
                aria-hidden="true"
                title="Space: play or pause · ← → or Page Up/Down: previous or next step · , . or [ ]: previous or next hop · Home: restart · End: end of the step"
            >
                <span><kbd>"Space"</kbd>" play"</span>
                <span><kbd>"←"</kbd><kbd>"→"</kbd>" step"</span>
                <span><kbd>","</kbd><kbd>"."</kbd>" hop"</span>
            </span>
        </div>
    }
}

/// Playback speed: a real select, named "Speed". It scales how fast the
/// hops play and how long a finished step holds; the picture at any
/// moment is the same at every speed.
#[component]
fn Speed() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    // Options are identified by their index in SPEEDS.
    let chosen = move || SPEEDS.iter().position(|(s, _)| *s == p.speed.get()).unwrap_or(1).to_string();
    let on_change = move |ev: leptos::ev::Event| {
        if let Some((s, _)) = event_target_value(&ev).parse::<usize>().ok().and_then(|i| SPEEDS.get(i)) {
            p.set_speed(*s);
        }
    };
    view! {
        <label class="kh-speed">
            <span>"Speed"</span>
            <select on:change=on_change prop:value=chosen>
                {SPEEDS
                    .iter()
                    .enumerate()
                    .map(|(i, (s, label))| view! { <option value=i.to_string() selected=*s == 1.0>{*label}</option> })
                    .collect_view()}
            </select>
        </label>
    }
}

/// A 24×24 stroke-and-fill icon; glyph fonts vary too much to rely on.
#[component]
fn Icon(d: &'static str) -> impl IntoView {
    view! {
        <svg class="kh-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
            <path d=d></path>
        </svg>
    }
}

#[component]
pub fn StepIndicator() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    // Titles come from the walkthrough, which a new seed replaces.
    let titles = Memo::new(move |_| p.walkthrough.with(|w| w.steps.iter().map(|s| s.title.clone()).collect::<Vec<String>>()));
    view! {
        <nav class="kh-steps" aria-label="Steps">
            <ol>
                {move || {
                    let titles = titles.get();
                    let n = titles.len();
                    titles
                        .into_iter()
                        .enumerate()
                        .map(|(i, t)| {
                            let label = format!("Step {} of {n}: {t}", i + 1);
                            view! {
                                <li>
                                    <button
                                        type="button"
                                        class="kh-step"
                                        class:current=move || p.step.get() == i
                                        class:past=move || { p.step.get() > i }
                                        aria-current=move || (p.step.get() == i).then_some("step")
                                        aria-label=label
                                        on:click=move |_| p.go_to(i)
                                    >
                                        <span class="kh-step-num">{i + 1}</span>
                                        <span class="kh-step-title">{t}</span>
                                    </button>
                                </li>
                            }
                        })
                        .collect_view()
                }}
            </ol>
        </nav>
    }
}

/// A seed from the clock: good enough to vary a demo, and shown to the
/// user so any run can be shared and repeated.
fn draw_seed(prev: Option<u64>) -> u64 {
    let now = window().performance().map_or(0.0, |p| p.now());
    next_seed((now * 1000.0) as u64, prev)
}

/// The "Random pick (seeded)" switch: rebuilds the walkthrough with
/// kube-proxy's random choices drawn from a seed, or with the fixed picks.
#[component]
pub fn RandomPick() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    // The last seed used, so switching off and on again repeats it.
    let last = RwSignal::new(None::<u64>);
    Effect::new(move |_| {
        if let Some(s) = p.seed.get() {
            last.set(Some(s));
        }
    });
    let on = move || p.seed.get().is_some();
    let toggle = move |ev: leptos::ev::Event| {
        let checked = event_target_checked(&ev);
        p.set_seed(if checked { Some(last.get_untracked().unwrap_or_else(|| draw_seed(None))) } else { None });
    };
    view! {
        <div class="kh-options" role="group" aria-label="Random picks">
            <label class="kh-switch">
                <input type="checkbox" role="switch" prop:checked=on on:change=toggle aria-describedby="kh-pick-note"/>
                <span class="kh-switch-track" aria-hidden="true"><span class="kh-switch-thumb"></span></span>
                <span class="kh-switch-label">"Random pick (seeded)"</span>
            </label>
            {move || {
                p.seed.get().map(|s| {
                    view! {
                        <span class="kh-seed" data-testid="seed">"seed " <strong>{s.to_string()}</strong></span>
                        <button
                            type="button"
                            class="kh-btn kh-btn-small"
                            title="Draw another seed and replay this step"
                            on:click=move |_| p.set_seed(Some(draw_seed(p.seed.get_untracked())))
                        >
                            "New seed"
                        </button>
                    }
                })
            }}
            <span class="kh-pick-note" id="kh-pick-note">
                {move || {
                    if on() {
                        "kube-proxy's random rules pick from this seed; the link repeats it."
                    } else {
                        "Off: fixed picks, so the story repeats."
                    }
                }}
            </span>
        </div>
    }
}
