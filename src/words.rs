//! The glossary on the page: the terms the current step uses, as buttons
//! under the narration, each opening its definition from the core's
//! glossary (`kubehops_core::glossary`), and the transcript's glossary.
//! Which terms a step uses comes from the core (`scene::terms`), never
//! from the words on screen.

use crate::room::Ctx;
use kubehops_core::glossary::Term;
use kubehops_core::scene::terms::step_terms;
use leptos::prelude::*;

/// "Words in this step (N)": a disclosure holding one button per term (a
/// real button, for keys, touch and screen readers alike); pressing one
/// shows its definition below, pressing it again folds it. The list
/// follows the step, not the hop, so it does not move while the step plays.
#[component]
pub fn Words() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let step = Memo::new(move |_| ctx.moment.get().step);
    let terms = Memo::new(move |_| {
        let k = step.get();
        ctx.player.scenario.with(|s| s.steps.get(k).map(|st| step_terms(s, st)).unwrap_or_default())
    });
    let open = RwSignal::new(None::<Term>);
    let shown = RwSignal::new(false);
    // A new step's words start folded.
    Effect::new(move |_| {
        step.track();
        open.set(None);
    });
    move || {
        let list = terms.get();
        (!list.is_empty()).then(|| {
            let n = list.len();
            view! {
                // Folded to one line, so a step with many words does not
                // push what follows down; opened, it stays open across steps.
                <details class="kh-words" prop:open=move || shown.get() on:toggle=move |ev| shown.set(event_target::<web_sys::Element>(&ev).has_attribute("open"))>
                    <summary class="kh-words-head">"Words in this step " <span class="kh-words-n">{format!("({n})")}</span></summary>
                    <ul class="kh-words-list" aria-label="Words in this step">
                        {list.into_iter().map(|t| view! { <li><WordButton term=t open=open/></li> }).collect_view()}
                    </ul>
                    <Definition open=open/>
                </details>
            }
        })
    }
}

#[component]
fn WordButton(term: Term, open: RwSignal<Option<Term>>) -> impl IntoView {
    let on = move || open.get() == Some(term);
    view! {
        <button
            type="button"
            class="kh-word"
            class:on=on
            aria-expanded=move || on().to_string()
            aria-controls="kh-word-def"
            on:click=move |_| open.update(|o| *o = if *o == Some(term) { None } else { Some(term) })
        >
            {term.name()}
        </button>
    }
}

/// The open term's definition and the terms it leads to, right after the
/// buttons that control it (`aria-controls`); not a live region, since the
/// page has one already and two would talk over each other.
#[component]
fn Definition(open: RwSignal<Option<Term>>) -> impl IntoView {
    view! {
        <div class="kh-word-def" id="kh-word-def">
            {move || open.get().map(|t| view! {
                <p><dfn>{t.name()}</dfn>": "{t.definition()}</p>
                {(!t.see_also().is_empty()).then(|| view! {
                    <p class="kh-word-also">
                        "See also: "
                        {t.see_also().iter().map(|&a| view! {
                            <button type="button" class="kh-word kh-word-small" on:click=move |_| open.set(Some(a))>{a.name()}</button>
                        }).collect_view()}
                    </p>
                })}
            })}
        </div>
    }
}

/// The transcript's glossary: the terms the scenario uses, each defined
/// once, in the order they first appear.
#[component]
pub fn Glossary(terms: Vec<Term>) -> impl IntoView {
    (!terms.is_empty()).then(|| {
        view! {
            <section class="kh-tglossary" aria-labelledby="kh-t-glossary">
                <h3 id="kh-t-glossary">"Glossary"</h3>
                <dl>
                    {terms.into_iter().map(|t| view! { <dt><dfn>{t.name()}</dfn></dt><dd>{t.definition()}</dd> }).collect_view()}
                </dl>
            </section>
        }
    })
}

/// A step's terms in the transcript, named in one line.
pub fn step_words(terms: &[Term]) -> Option<impl IntoView> {
    (!terms.is_empty()).then(|| {
        let names: Vec<&str> = terms.iter().map(|t| t.name()).collect();
        view! { <p class="kh-twords"><strong>"Words in this step: "</strong>{names.join(", ")}</p> }
    })
}
