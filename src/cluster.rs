//! "Your cluster": the paste box, the file input and drop target, and
//! what the reader made of the text (the CLI's errors and warnings).
//!
//! The pasted text is view state (`Player::pasted`); what was read is a
//! memo of it (`Player::cluster`, through `kubehops_objects::cluster`, the
//! CLI's reader), and the scenario a memo of that. Reading errors never
//! touch the text: it stays in the box as the user left it. Nothing is
//! sent anywhere; the page says so before anything is pasted.

use crate::app::Ctx;
use kubehops_core::scenarios::{self, your_cluster, ParamSpec};
use kubehops_objects::cluster::{read, Read};
use kubehops_objects::ReadError;
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
/// objects with the warnings, or the error as the CLI prints it.
pub type ClusterRead = Option<Result<Arc<Read>, String>>;

/// Reads the pasted text (named as the CLI names stdin, or the file's
/// name) as the CLI reads `-f`.
pub fn read_pasted(name: &str, text: &str) -> ClusterRead {
    if text.trim().is_empty() {
        return None;
    }
    Some(read(&[(name, text)]).map(Arc::new).map_err(|e| match e {
        // The CLI prints a rejected object as kubectl does, anything else after `error: `.
        ReadError::Invalid(_) => e.to_string(),
        ReadError::Other(m) | ReadError::Syntax { message: m, .. } => format!("error: {m}"),
    }))
}

/// The parameters offered for a scenario: the registry's, or for "Your
/// cluster" with objects read, those of the cluster (its Services and clients).
pub fn specs_for(id: &str, cluster: &ClusterRead) -> Vec<ParamSpec> {
    match cluster {
        Some(Ok(r)) if id == your_cluster::ENTRY.id => your_cluster::params(&r.input),
        _ => scenarios::entry(id).map(|e| (e.params)()).unwrap_or_default(),
    }
}

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
    let take = move |name: String, text: String| {
        if let Some(t) = area.get_untracked() {
            t.set_value(if text.len() > SHOW_MAX { "" } else { &text });
        }
        p.pasted_name.set(name);
        p.pasted.set(text);
    };
    // A large paste goes to the state only, never into the box.
    let on_paste = move |ev: leptos::ev::ClipboardEvent| {
        let Some(text) = ev.clipboard_data().and_then(|d| d.get_data("text/plain").ok()) else { return };
        if text.len() > SHOW_MAX {
            ev.prevent_default();
            take("STDIN".into(), text);
        }
    };
    let hidden = Memo::new(move |_| p.pasted.with(|t| (t.len() > SHOW_MAX).then(|| t.len())));
    let clear = move |_| take("STDIN".into(), String::new());
    let read_file = move |file: web_sys::File| {
        let Ok(reader) = web_sys::FileReader::new() else { return };
        let name = file.name();
        let r2 = reader.clone();
        let onload = Closure::once_into_js(move || {
            let text = r2.result().ok().and_then(|v| v.as_string()).unwrap_or_default();
            take(name, text);
        });
        reader.set_onload(Some(onload.unchecked_ref()));
        let _ = reader.read_as_text(&file);
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
    let status = move || {
        p.cluster.with(|c| match c {
            None => view! { <p class="kh-paste-note">"Nothing read yet."</p> }.into_any(),
            Some(Err(e)) => view! {
                <div class="kh-paste-error" role="alert">
                    <p>"kubehops could not read it (the text is kept as you left it):"</p>
                    <pre data-testid="paste-error">{e.clone()}</pre>
                </div>
            }
            .into_any(),
            Some(Ok(r)) => {
                let i = &r.input;
                let summary = format!("Read {} nodes, {} Pods, {} Services and {} EndpointSlices.", i.nodes.len(), i.pods.len(), i.services.len(), i.slices.len());
                let warnings = r.warnings.clone();
                view! {
                    <div class="kh-paste-ok" role="status">
                        <p data-testid="paste-summary">{summary}</p>
                        {(!warnings.is_empty()).then(|| view! {
                            <details class="kh-paste-warnings">
                                <summary>{format!("{} warnings, as kubehops prints them", warnings.len())}</summary>
                                <pre>{warnings.join("\n")}</pre>
                            </details>
                        })}
                    </div>
                }
                .into_any()
            }
        })
    };
    view! {
        <section class="kh-paste" aria-labelledby="kh-paste-title">
            <h2 id="kh-paste-title">"Bring your cluster"</h2>
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
                on:input=move |ev| {
                    p.pasted_name.set("STDIN".into());
                    p.pasted.set(event_target_value(&ev));
                }
                on:paste=on_paste
                on:dragover=move |ev: leptos::ev::DragEvent| ev.prevent_default()
                on:drop=on_drop
            ></textarea>
            {move || hidden.get().map(|n| view! {
                <p class="kh-paste-kept" data-testid="paste-kept">
                    {format!("Your {} of text is kept and read, but not shown in the box: a text box that large would freeze the page. Typing or pasting in the box replaces it. ", kubehops_objects::cluster::size_text(n))}
                    <button type="button" class="kh-seg-btn" on:click=clear>"Clear it"</button>
                </p>
            })}
            <div class="kh-paste-row">
                <label class="kh-file">
                    "Open a file… "
                    <input type="file" accept=".yaml,.yml,.json,application/json,text/yaml" on:change=on_file/>
                </label>
                <span class="kh-muted">{format!("Up to {} MB.", kubehops_objects::cluster::MAX_BYTES >> 20)}</span>
            </div>
            {status}
        </section>
    }
}

/// The paste panel, on the scenario "Your cluster" only.
#[component]
pub fn IfYourCluster() -> impl IntoView {
    let p = expect_context::<Ctx>().player;
    let here = Memo::new(move |_| p.scenario_id.get() == your_cluster::ENTRY.id);
    move || here.get().then(|| view! { <PastePanel/> })
}
