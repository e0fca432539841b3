//! "Your cluster": the paste box, the file input and drop target, and
//! what the reader made of the text (the CLI's errors and warnings).
//!
//! The pasted text is view state (`Player::pasted`); the page's Web
//! Worker reads it with the CLI's reader and builds the scenario
//! (`crate::worker`), and its newest answer is `Player::cluster`. While it
//! works the panel says so and the page stays usable. Reading errors never
//! touch the text: it stays in the box as the user left it. Nothing is
//! sent off the machine; the page says so before anything is pasted.

use crate::room::Ctx;
use kubehops_core::scenarios::{self, your_cluster, ParamSpec};
use crate::worker::Status;
use kubehops_core::scenarios::Scenario;
use kubehops_core::worker::{Cluster, Counts};
use leptos::prelude::*;
use std::sync::Arc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// The longest text the paste box shows. Chromium takes seconds to lay
/// out a text box holding megabytes (about 4 s for 1.2 MB and 18 s for
/// 10 MB on the project's machine, with no script running), so a larger
/// paste or file is kept and read but not put in the box.
pub const SHOW_MAX: usize = 256 << 10;

/// What the reader made of the pasted text: nothing pasted yet, the
/// cluster read and built, or the error as the CLI prints it.
pub type ClusterRead = Option<Result<Arc<Pasted>, String>>;

/// A pasted cluster as the page keeps it: the worker's [`Cluster`], its
/// scenario in an `Arc` of its own, so that showing it copies nothing and
/// the player tells one build from another by identity.
pub struct Pasted {
    pub counts: Counts,
    pub warnings: Vec<String>,
    pub specs: Vec<ParamSpec>,
    pub scenario: Arc<Scenario>,
}

impl From<Cluster> for Pasted {
    fn from(c: Cluster) -> Pasted {
        let Cluster { counts, warnings, specs, scenario } = c;
        Pasted { counts, warnings, specs, scenario: Arc::new(scenario) }
    }
}

/// The parameters offered for a scenario: the registry's, or for "Your
/// cluster" with objects read, those of the cluster (its Services and clients).
pub fn specs_for(id: &str, cluster: &ClusterRead) -> Vec<ParamSpec> {
    match cluster {
        Some(Ok(c)) if id == your_cluster::ID => c.specs.clone(),
        _ => scenarios::about(id).map(|e| (e.params)()).unwrap_or_default(),
    }
}

/// The sample cluster: the CLI's fixture (three nodes, two Pods, five
/// Services), the nodes and Pods, then the Services and slices.
const SAMPLE: &str = concat!(
    include_str!("../crates/kubehops-cli/tests/fixtures/cluster/cluster.yaml"),
    "\n---\n",
    include_str!("../crates/kubehops-cli/tests/fixtures/cluster/shop.json")
);
const SAMPLE_NAME: &str = "sample-cluster.yaml";

/// The paste box and what was read, shown on the scenario "Your cluster".
#[component]
pub fn PastePanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let area = NodeRef::<leptos::html::Textarea>::new();
    // The box keeps its own text; it is set from the state only when it
    // appears and when a file replaces it.
    let initial = p.pasted.get_untracked();
    let initial = if initial.len() > SHOW_MAX { String::new() } else { initial };
    // Once a paste, a drop or a file has been read, the box folds to a
    // line saying what was read, so the canvas comes into the first
    // screen; "Edit the paste" opens it again with the text as it was
    // (the box stays in the page, hidden, and keeps its text). Typing in
    // the open box never folds it. The panel opens folded on a cluster
    // read before (coming back from another scenario).
    let folded = RwSignal::new(p.cluster.with_untracked(|c| matches!(c, Some(Ok(_)))));
    // Set by a paste, a drop or a file; the next text read decides.
    let fold_when_read = RwSignal::new(false);
    let line = NodeRef::<leptos::html::Div>::new();
    // The worker's answer decides (the paste is read off this thread).
    Effect::new(move |_| {
        let ok = p.cluster.with(|c| matches!(c, Some(Ok(_))));
        if !fold_when_read.get_untracked() {
            return;
        }
        fold_when_read.set(false);
        if ok {
            folded.set(true);
            // Focus moves from the box to the line that replaced it (no tab
            // stop of its own, so the shortcuts work from there).
            // A frame later the panel may be gone (a switch of scenario).
            request_animation_frame(move || {
                if let Some(el) = line.try_get_untracked().flatten() {
                    let _ = el.focus();
                }
            });
        }
    });
    let unfold = move |_| {
        folded.set(false);
        request_animation_frame(move || {
            if let Some(t) = area.try_get_untracked().flatten() {
                let _ = t.focus();
            }
        });
    };
    let take = move |name: String, text: String| {
        if let Some(t) = area.try_get_untracked().flatten() {
            t.set_value(if text.len() > SHOW_MAX { "" } else { &text });
        }
        p.pasted_name.set(name);
        p.pasted.set(text);
    };
    // A large paste goes to the state only, never into the box; a small
    // one goes in as the browser puts it, and the input event reads it.
    let on_paste = move |ev: leptos::ev::ClipboardEvent| {
        let Some(text) = ev.clipboard_data().and_then(|d| d.get_data("text/plain").ok()) else { return };
        fold_when_read.set(true);
        if text.len() > SHOW_MAX {
            ev.prevent_default();
            take("STDIN".into(), text);
        }
    };
    let on_input = move |ev: leptos::ev::Event| {
        use wasm_bindgen::JsCast;
        // Typing (an InputEvent that is not a paste or a drop) never folds.
        if let Some(ie) = ev.dyn_ref::<web_sys::InputEvent>() {
            if !matches!(ie.input_type().as_str(), "insertFromPaste" | "insertFromDrop" | "insertFromPasteAsQuotation") {
                fold_when_read.set(false);
            }
        }
        p.pasted_name.set("STDIN".into());
        p.pasted.set(event_target_value(&ev));
    };
    let hidden = Memo::new(move |_| p.pasted.with(|t| (t.len() > SHOW_MAX).then(|| t.len())));
    let clear = move |_| take("STDIN".into(), String::new());
    // The CLI's own test cluster, one click away for a reader with no
    // cluster at hand: read and played as a paste would be.
    let sample = move |_| {
        fold_when_read.set(true);
        take(SAMPLE_NAME.into(), SAMPLE.into());
    };
    let read_file = move |file: web_sys::File| {
        let Ok(reader) = web_sys::FileReader::new() else { return };
        let name = file.name();
        let r2 = reader.clone();
        let onload = Closure::once_into_js(move || {
            let text = r2.result().ok().and_then(|v| v.as_string()).unwrap_or_default();
            // The file may be read after the panel is gone: the paste is the player's, and kept.
            let _ = fold_when_read.try_set(true);
            take(name, text);
        });
        reader.set_onload(Some(onload.unchecked_ref()));
        // A file the browser cannot read (a folder dropped, a file moved
        // away since it was chosen) is said, not silently left out.
        let r3 = reader.clone();
        let failed_name = file.name();
        let onerror = Closure::once_into_js(move || {
            let why = r3.error().map(|e| e.message()).unwrap_or_default();
            crate::browser::tell(p.notices, format!("The browser could not read {failed_name}{}{why}", if why.is_empty() { "." } else { ": " }));
        });
        reader.set_onerror(Some(onerror.unchecked_ref()));
        if reader.read_as_text(&file).is_err() {
            crate::browser::tell(p.notices, format!("The browser could not read {}.", file.name()));
        }
    };
    let on_file = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(f) = input.files().and_then(|l| l.get(0)) {
            read_file(f);
        }
        input.set_value("");
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        let file = ev.data_transfer().and_then(|d| d.files()).and_then(|l| l.get(0));
        if let Some(f) = file {
            ev.prevent_default();
            read_file(f);
        }
    };
    // Before a read, or what went wrong: under the box.
    let problem = move || {
        p.cluster.with(|c| match c {
            None if p.reader.with(|r| *r == Status::Idle) => Some(view! { <p class="kh-paste-note">"Nothing read yet."</p> }.into_any()),
            None => None,
            Some(Err(e)) => Some(
                view! {
                    <div class="kh-paste-error" role="alert">
                        <p>"kubehops could not read it (the text is kept as you left it):"</p>
                        <pre data-testid="paste-error">{e.clone()}</pre>
                    </div>
                }
                .into_any(),
            ),
            Some(Ok(_)) => None,
        })
    };
    // What was read: under the box, or, folded, in its place.
    let result = move || {
        p.cluster.with(|c| {
            let Some(Ok(r)) = c else { return None };
            let summary = r.counts.summary();
            let warnings = r.warnings.clone();
            Some(view! {
                <div class="kh-paste-ok" role="status" tabindex="-1" node_ref=line>
                    <p data-testid="paste-summary">{summary}</p>
                    {(!warnings.is_empty()).then(|| view! {
                        <details class="kh-paste-warnings">
                            <summary>{format!("{} warnings, as kubehops prints them", warnings.len())}</summary>
                            <pre>{warnings.join("\n")}</pre>
                        </details>
                    })}
                    {move || if folded.get() {
                        view! { <button type="button" class="kh-btn kh-btn-small" aria-controls="kh-paste-body" on:click=unfold>"Edit the paste"</button> }.into_any()
                    } else {
                        view! { <button type="button" class="kh-btn kh-btn-small" aria-controls="kh-paste-body" on:click=move |_| folded.set(true)>"Hide the paste"</button> }.into_any()
                    }}
                </div>
            })
        })
    };
    view! {
        <section class="kh-paste" class:kh-paste-folded=move || folded.get() aria-labelledby="kh-paste-title">
            <h2 id="kh-paste-title">"Bring your cluster"</h2>
            <div id="kh-paste-body" class="kh-paste-body" hidden=move || folded.get()>
                <p class="kh-paste-privacy">
                    <strong>"Nothing leaves your browser."</strong>
                    " What you paste is read and played on this page; no request is made with it, and it is not put in the link."
                </p>
                <label for="kh-paste-text">
                    "Paste the output of " <code>"kubectl get nodes,pods,services,endpointslices -A -o yaml"</code> " (YAML or JSON), or drop the file here"
                </label>
                <textarea
                    id="kh-paste-text"
                    node_ref=area
                    spellcheck="false"
                    autocomplete="off"
                    rows="8"
                    prop:value=initial
                    on:input=on_input
                    on:paste=on_paste
                    on:dragover=move |ev: leptos::ev::DragEvent| ev.prevent_default()
                    on:drop=on_drop
                ></textarea>
                {move || hidden.get().map(|n| view! {
                    <p class="kh-paste-kept" data-testid="paste-kept">
                        {format!("Your {} of text is kept and read, but not shown in the box: a text box that large would freeze the page. Typing or pasting in the box replaces it. ", kubehops_core::worker::size_text(n))}
                        <button type="button" class="kh-seg-btn" on:click=clear>"Clear it"</button>
                    </p>
                })}
                <div class="kh-paste-row">
                    <label class="kh-file">
                        "Open a file… "
                        <input type="file" accept=".yaml,.yml,.json,application/json,text/yaml" on:change=on_file/>
                    </label>
                    <span class="kh-muted">{format!("Up to {} MB.", kubehops_core::worker::MAX_PASTE_BYTES >> 20)}</span>
                    <button type="button" class="kh-btn kh-btn-small" data-testid="paste-sample" on:click=sample>"Try a sample cluster"</button>
                </div>
                {problem}
            </div>
            <ReaderStatus/>
            {result}
        </section>
    }
}

/// What the worker is doing while it reads or builds, or why it stopped.
/// The page stays usable meanwhile; the text is never lost.
#[component]
fn ReaderStatus() -> impl IntoView {
    let p = expect_context::<Ctx>().player;
    let size = move || p.pasted.with(|t| kubehops_core::worker::size_text(t.len()));
    let retry = move |_| p.pasted.update(|_| ());
    move || match p.reader.get() {
        Status::Idle => None,
        Status::Starting => Some(view! {
            <p class="kh-paste-status" role="status" data-testid="paste-status">"Loading kubehops's reader (a part of the page fetched after the page itself)…"</p>
        }.into_any()),
        Status::Working => Some(view! {
            <p class="kh-paste-status" role="status" data-testid="paste-status">
                {move || if p.cluster.with(|c| matches!(c, Some(Ok(_)))) { "Building your cluster for the choice made… ".to_string() } else { format!("Reading {}… ", size()) }}
                "The page stays usable meanwhile."
            </p>
        }.into_any()),
        Status::Failed(why) => Some(view! {
            <div class="kh-paste-error" role="alert">
                <p>{format!("kubehops's reader stopped: {why}. The text is kept as you left it. ")}
                    <button type="button" class="kh-btn kh-btn-small" on:click=retry>"Try again"</button>
                </p>
            </div>
        }.into_any()),
    }
}

/// The paste panel, on the scenario "Your cluster" only.
#[component]
pub fn IfYourCluster() -> impl IntoView {
    let p = expect_context::<Ctx>().player;
    let here = Memo::new(move |_| p.scenario_id.get() == your_cluster::ID);
    move || here.get().then(|| view! { <PastePanel/> })
}
