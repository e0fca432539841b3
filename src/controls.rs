//! Play/Pause, Previous, Next, Restart and the step indicator.

use crate::app::Ctx;
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
            <button type="button" class="kh-btn" aria-label="Restart" title="Restart (Home)" on:click=move |_| p.restart()>
                <span aria-hidden="true">"⏮"</span><span class="kh-btn-text">"Restart"</span>
            </button>
            <button type="button" class="kh-btn" aria-label="Previous step" title="Previous step (←)" disabled=at_first on:click=move |_| p.previous()>
                <span aria-hidden="true">"◀"</span><span class="kh-btn-text">"Previous"</span>
            </button>
            <button type="button" class="kh-btn kh-btn-primary" aria-label=play_label title="Play or pause (Space)" on:click=move |_| p.toggle()>
                <span aria-hidden="true">{move || if p.playing.get() { "❚❚" } else { "▶" }}</span>
                <span class="kh-btn-text">{play_label}</span>
            </button>
            <button type="button" class="kh-btn" aria-label="Next step" title="Next step (→)" disabled=at_last on:click=move |_| p.next()>
                <span class="kh-btn-text">"Next"</span><span aria-hidden="true">"▶"</span>
            </button>
            <span class="kh-keys" aria-hidden="true">"Space · ← → · Home"</span>
        </div>
    }
}

#[component]
pub fn StepIndicator() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let titles: Vec<String> = p.walkthrough.with_value(|w| w.steps.iter().map(|s| s.title.clone()).collect());
    let n = titles.len();
    view! {
        <nav class="kh-steps" aria-label="Steps">
            <ol>
                {titles
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
                    .collect_view()}
            </ol>
        </nav>
    }
}
