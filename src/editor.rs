//! The manifest editor: the user's own Service, typed in place of the
//! scenario's. The text is view state (what the user typed, never lost);
//! reading, admitting and building it is the worker's work
//! (`crate::worker`, with kubehops-objects's reader and the core), and the
//! refusal comes back as rows with their lines.

use crate::room::Ctx;
use crate::worker::Status;
use kubehops_core::compact;
use kubehops_core::scenarios::starting_text;
use kubehops_core::worker::Refusal;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Two spaces: what Tab inserts, as YAML wants spaces.
const INDENT: &str = "  ";

/// The editor's text area with its line numbers, the refusal if any, and
/// its buttons. `editing` is cleared by "Done" and by Esc.
#[component]
pub fn ManifestEditor(editing: RwSignal<bool>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let player = ctx.player;
    let start = player.params.with_untracked(|p| starting_text(&player.scenario_id.get_untracked(), p));
    let draft = RwSignal::new(start);
    let area = NodeRef::<leptos::html::Textarea>::new();
    Effect::new(move |_| {
        if let Some(a) = area.get() {
            let _ = a.focus();
        }
    });
    let typed = move |text: String| {
        draft.set(text.clone());
        player.set_manifest(text);
    };
    let on_input = move |ev: leptos::ev::Event| {
        if let Some(t) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlTextAreaElement>().ok()) {
            typed(t.value());
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Escape" => {
            ev.prevent_default();
            editing.set(false);
        }
        "Tab" if !ev.shift_key() && !ev.ctrl_key() && !ev.alt_key() && !ev.meta_key() => {
            ev.prevent_default();
            if let Some(a) = area.get_untracked() {
                let _ = a.set_range_text(INDENT);
                let at = a.selection_end().ok().flatten().unwrap_or(0) + INDENT.len() as u32;
                let _ = a.set_selection_range(at, at);
                typed(a.value());
            }
        }
        _ => {}
    };
    let reset = move |_| {
        player.set_manifest(String::new());
        let own = player.params.with_untracked(|p| starting_text(&player.scenario_id.get_untracked(), p));
        draft.set(own.clone());
        if let Some(a) = area.get_untracked() {
            a.set_value(&own);
            let _ = a.focus();
        }
    };
    let said = said(player);
    // The lines of the refusal the status shows (kept while a check runs).
    let refused_lines = Memo::new(move |_| said.with(|s| if let Said::Refused(r) = s { r.lines() } else { Vec::new() }));
    // The draft's lines, and whether it ends in a new one: a keystroke
    // that adds no line redraws no number.
    let lines = Memo::new(move |_| draft.with(|d| (d.lines().count(), d.ends_with('\n'))));
    let gutter = move || {
        let (count, open) = lines.get();
        let n = count.max(1) + usize::from(open);
        let bad = refused_lines.get();
        (1..=n).map(|i| {
            let marked = bad.contains(&i);
            view! { <span class="kh-ln" class:bad=marked>{if marked { format!("! {i}") } else { i.to_string() }}"\n"</span> }
        }).collect_view()
    };
    let rows = move || lines.get().0 + 2;
    view! {
        <div class="kh-editor">
            <p class="kh-sub" id="kh-editor-help">
                "Type a Service: it is checked as the API server would and played at once. Tab indents; Esc leaves the editor."
            </p>
            <div class="kh-editor-box">
                <pre class="kh-gutter-lines" aria-hidden="true">{gutter}</pre>
                <textarea
                    node_ref=area
                    class="kh-editor-text"
                    aria-label="Service manifest (YAML or JSON)"
                    aria-describedby="kh-editor-help kh-editor-status"
                    aria-invalid=move || said.with(|s| matches!(s, Said::Refused(_))).to_string()
                    spellcheck="false"
                    autocomplete="off"
                    autocapitalize="off"
                    rows=rows
                    // The text area holds what is typed; the draft follows
                    // it (`typed`), and only Reset writes it back.
                    prop:value=draft.get_untracked()
                    on:input=on_input
                    on:keydown=on_key
                ></textarea>
            </div>
            <EditStatus draft=draft said=said/>
            <div class="kh-editor-actions">
                <button type="button" class="kh-btn" on:click=reset>"Reset"</button>
                <button type="button" class="kh-btn" on:click=move |_| editing.set(false)>"Done"</button>
            </div>
        </div>
    }
}

/// What the status line says about the typed Service.
#[derive(Clone, PartialEq)]
enum Said {
    Accepted,
    Refused(Refusal),
    Checking,
    Starting,
    Stopped(String),
}

/// How long a check runs before the status line says so. A keystroke's
/// check takes the worker about 20 to 40 ms: saying "Checking…" for it
/// would flash a line between every two keys (and lay the page out again
/// each time), so until then the last result stays, marked busy.
const SAY_CHECKING_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// What the status says now: the worker's result, or while it checks,
/// the last result until the check has taken [`SAY_CHECKING_AFTER`].
fn said(player: crate::player::Player) -> Memo<Said> {
    let slow = RwSignal::new(false);
    Effect::new(move |_| {
        if player.checking.get() {
            // The editor may be gone by then (a switch of scenario).
            set_timeout(move || { let _ = slow.try_set(player.checking.get_untracked()); }, SAY_CHECKING_AFTER);
        } else {
            slow.set(false);
        }
    });
    Memo::new(move |prev: Option<&Said>| {
        if !player.checking.get() {
            return player.refusal.get().map_or(Said::Accepted, Said::Refused);
        }
        let now = match player.builder.get() {
            Status::Failed(why) => return Said::Stopped(why),
            Status::Starting => Said::Starting,
            _ => Said::Checking,
        };
        match prev {
            Some(last) if !slow.get() => last.clone(),
            _ => now,
        }
    })
}

/// Whether the typed Service plays, or why not (at its lines), and whether
/// the link can carry it. While the worker checks, the line is
/// `aria-busy`, and says so once the check takes a while.
#[component]
fn EditStatus(draft: RwSignal<String>, said: Memo<Said>) -> impl IntoView {
    let player = expect_context::<Ctx>().player;
    let link_note = Memo::new(move |_| draft.with(|d| compact::pack(d).err().map(|e| format!("{e} It is kept on this page only; the link shows the last state that fits."))));
    let status = move || match said.get() {
        Said::Stopped(why) => view! {
            <div class="kh-refusal" role="alert">
                <p>{format!("kubehops's model stopped: {why}. Your text is kept; type again to retry.")}</p>
            </div>
        }.into_any(),
        Said::Starting => view! { <p class="kh-checking">"Loading kubehops's model (a part of the page fetched after the page itself)…"</p> }.into_any(),
        Said::Checking => view! { <p class="kh-checking">"Checking it as the API server would…"</p> }.into_any(),
        Said::Refused(r) => view! {
            <div class="kh-refusal" role="alert">
                <p><strong>"Not applied. "</strong>{r.headline.clone()}</p>
                <ul>
                    {r.problems.iter().map(|p| {
                        let at = p.line.map(|l| format!("Line {l}: ")).unwrap_or_default();
                        view! { <li><span class="kh-refusal-line">{at}</span><code>{p.message.clone()}</code></li> }
                    }).collect_view()}
                </ul>
                <p class="kh-sub">"The canvas keeps the last Service that was accepted."</p>
            </div>
        }.into_any(),
        Said::Accepted => view! { <p class="kh-accepted">"✓ Accepted and playing."</p> }.into_any(),
    };
    view! {
        <div id="kh-editor-status" aria-live="polite" aria-busy=move || player.checking.get().then_some("true")>
            {status}
            {move || link_note.get().map(|n| view! { <p class="kh-sub kh-link-note">{n}</p> })}
        </div>
    }
}
