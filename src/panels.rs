//! The panels beside the canvas: narration, the current hop, the manifest,
//! kubectl's output, the legend, the comparison table and URL notices.

use crate::room::Ctx;
use crate::player::Chosen;
use kubehops_core::scene::style::{hop_style, kind_style, KINDS, WHAT_IF_DASH};
use kubehops_core::dataplane::rules::RuleTable;
use kubehops_core::net::Packet;
use kubehops_core::scenarios::Value;
use kubehops_core::scene::transcript::{hop_text, rewrite_tag, RowKind};
use kubehops_core::sim::{ActorId, Field};
use leptos::prelude::*;

/// The step's narration under its heading. `folded`: in an embed, the
/// heading comes first and the narration opens with a button, so the
/// canvas and its hop caption keep the room (a wide embed shows it beside
/// the canvas, always open).
#[component]
pub fn Narration(#[prop(optional)] folded: bool) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let heading = move || ctx.with_step(|st| format!("Step {} of {} · {}", ctx.moment.get().step + 1, p.steps(), st.title)).unwrap_or_default();
    let text = move || ctx.with_step(|st| st.narration.clone()).unwrap_or_default();
    let demo = Memo::new(move |_| ctx.with_scenario(|s| s.demo().map(|d| (d.label.clone(), d.narration.clone()))));
    let open = RwSignal::new(false);
    view! {
        <section class="kh-card kh-narration" class:kh-folded=folded class:open=move || open.get()>
            <div class="kh-narr-head">
                <h2>{heading}</h2>
                {folded.then(|| view! {
                    <button type="button" class="kh-btn kh-btn-small kh-narr-toggle" aria-expanded=move || open.get().to_string() aria-controls="kh-narr-text" on:click=move |_| open.update(|o| *o = !*o)>
                        {move || if open.get() { "Hide the step" } else { "Read the step" }}
                    </button>
                })}
            </div>
            <div class="kh-narr-text" id=folded.then_some("kh-narr-text")>
                {move || demo.get().map(|(label, text)| view! { <p class="kh-demo-note"><strong>{format!("Demo · {label}: ")}</strong>{text}</p> })}
                <p>{text}</p>
            </div>
            <crate::words::Words/>
        </section>
    }
}

/// The tag naming the table a matched rule is in (`nat`, `filter`, `nft`).
pub fn table_tag(t: RuleTable) -> impl IntoView {
    let name = t.as_str();
    view! {
        <span class=format!("kh-table kh-table-{name}") title=format!("in the {} table", t.name())>{name}</span>
        <span class="kh-sr">" table: "</span>
    }
}

/// What a what-if hop stands for in this scenario (`what if: ipMode VIP`).
pub fn what_if_label(ctx: Ctx) -> String {
    ctx.with_scenario(|s| s.what_if.as_ref().map_or_else(|| "what if".to_string(), |w| format!("what if: {w}")))
}

/// An actor's short label (`Pod web-6b8f9c7d5-x2klp`, `Node-2`).
pub fn short_label(ctx: Ctx, id: ActorId) -> String {
    ctx.with_scenario(|s| s.actor(id).map(|a| a.short.clone()).unwrap_or_default())
}

/// An address that may wrap after its colon in a narrow column
/// (`198.51.100.23:` / `51000`), never inside a number.
fn address(a: String) -> impl IntoView {
    let (host, port) = a.split_at(a.rfind(':').map_or(a.len(), |i| i + 1));
    view! { <span class="kh-addr">{host.to_string()}<wbr/>{port.to_string()}</span> }
}

/// One row of the before/after table.
fn packet_row(label: &'static str, field: Field, before: &Packet, after: &Packet, tags: Vec<&'static str>) -> impl IntoView {
    let (b, a) = match field {
        Field::Source => (before.src, after.src),
        Field::Destination => (before.dst, after.dst),
    };
    let changed = a != b;
    view! {
        <tr class:changed=changed>
            <th scope="row">{label}</th>
            <td class="kh-mono-html">{address(b.to_string())}</td>
            <td class="kh-mono-html">
                {address(a.to_string())}
                {tags.into_iter().map(|t| view! { <span class="kh-tag">{t}</span> }).collect_view()}
            </td>
        </tr>
    }
}

/// The headers the overlay put around the packet on this hop (VXLAN), as
/// a second table under the packet's own: which node's device added
/// them, which removes them, and what they say.
fn outer_table(t: &kubehops_core::sim::Tunnel, from: &str, to: &str) -> impl IntoView {
    let o = t.wrapped.outer;
    let ports = format!("{} (the kernel picks it per flow in {}–{})", o.udp_dst, o.udp_src.lo, o.udp_src.hi);
    let rows = [
        ("source", o.src.to_string()),
        ("destination", o.dst.to_string()),
        ("UDP port", ports),
        ("VNI", o.vni.to_string()),
    ];
    view! {
        <table class="kh-packet kh-outer">
            <caption>{format!("Outer headers: added by {} on {from}, removed by {} on {to}; the packet above travels inside, unchanged", t.device, t.device)}</caption>
            <tbody>
                {rows.into_iter().map(|(k, v)| view! { <tr><th scope="row">{k}</th><td class="kh-mono-html">{v}</td></tr> }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
pub fn HopDetail() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    // The hop on screen told by the core (the transcript's words), and
    // its packet for the before/after table.
    let at = Memo::new(move |_| {
        let f = ctx.moment.get();
        (f.step, f.current)
    });
    let told = Memo::new(move |_| {
        let (step, current) = at.get();
        ctx.with_scenario(|s| {
            let st = s.steps.get(step)?;
            let i = current?;
            let h = st.hops.get(i)?;
            Some((hop_text(s, i, h), h.packet.clone(), hop_style(h).class, st.hops.len()))
        })
    });
    let body = move || {
        let Some((t, packet, class, n)) = told.get() else {
            let n = ctx.with_step(|st| st.hops.len()).unwrap_or(0);
            let text = match n {
                0 => "Nothing moves in this step.".to_string(),
                1 => "1 hop. Press Play to send it.".to_string(),
                n => format!("{n} hops. Press Play, or choose a hop below."),
            };
            return view! { <p class="kh-muted-html">{text}</p> }.into_any();
        };
        let what_if = what_if_label(ctx);
        let table = packet.clone().map(|pk| {
            let tags = |field: Field| pk.rewrites.iter().filter(|r| r.field == field).map(|r| rewrite_tag(r.kind)).collect::<Vec<_>>();
            view! {
                <table class="kh-packet">
                    <caption class="kh-sr">"Packet addresses before and after this hop"</caption>
                    <thead><tr><th></th><th scope="col">"arrived"</th><th scope="col">"leaves as"</th></tr></thead>
                    <tbody>
                        {packet_row("source", Field::Source, &pk.before, &pk.after, tags(Field::Source))}
                        {packet_row("destination", Field::Destination, &pk.before, &pk.after, tags(Field::Destination))}
                    </tbody>
                </table>
            }
        });
        let outer = packet.as_ref().and_then(|pk| pk.tunnel.as_ref()).map(|tn| outer_table(tn, &t.from_name, &t.to_name));
        let matched = packet.as_ref().map(|pk| pk.matched.clone()).unwrap_or_default();
        let rows = t.rows.into_iter().filter(|r| !matches!(r.kind, RowKind::Wire | RowKind::Arrived)).map(|r| match r.kind {
            RowKind::Rules => view! {
                <details class="kh-rules">
                    <summary>{r.text}</summary>
                    <ol>{matched.iter().map(|m| view! { <li>{table_tag(m.table)}<code>{m.text.clone()}</code></li> }).collect_view()}</ol>
                </details>
            }.into_any(),
            RowKind::Carries | RowKind::Arp => view! { <p class="kh-note kh-carries">{r.text}</p> }.into_any(),
            _ => view! { <p class="kh-note">{format!("{}.", r.text)}</p> }.into_any(),
        }).collect_view();
        view! {
            <div class=format!("kh-hop kh-{class}")>
                <p class="kh-hop-head">
                    <span class="kh-kind">{t.kind_name.clone()}</span>
                    {t.what_if.then(|| view! { <span class="kh-kind kh-whatif-tag">{what_if.clone()}</span> })}
                    <strong>{format!("Hop {} of {n}:", t.number)}</strong>
                    {(t.from != t.to).then(|| view! {
                        <span class="kh-hop-route">
                            <span>{t.from_name.clone()}</span>
                            <span aria-hidden="true">"→"</span>
                            <span class="kh-sr">" to "</span>
                            <span>{t.to_name.clone()}</span>
                        </span>
                    })}
                    {(t.from == t.to).then(|| view! { <span class="kh-hop-route"><span>{format!("on {}", t.from_name)}</span></span> })}
                </p>
                <p>{t.detail.clone()}</p>
                {table}
                {outer}
                {rows}
            </div>
        }
        .into_any()
    };
    let hop_list = move || {
        let f = ctx.moment.get();
        ctx.with_step(|st| {
            st.hops
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let st = hop_style(h);
                    let (class, label) = (st.class, st.label);
                    let current = f.current == Some(i);
                    let (from, to) = (short_label(ctx, h.from), short_label(ctx, h.to));
                    let route = if h.from == h.to { format!("on {from}") } else { format!("{from} → {to}") };
                    let spoken_route = if h.from == h.to { format!("on {from}") } else { format!("from {from} to {to}") };
                    let what_if = if h.what_if { format!(" ({})", what_if_label(ctx)) } else { String::new() };
                    view! {
                        <li>
                            <button
                                type="button"
                                class=format!("kh-hopbtn kh-{class}")
                                class:current=current
                                class:done={ i < f.done }
                                class:whatif=h.what_if
                                aria-current=current.then_some("true")
                                aria-label=format!("Show hop {}{what_if}: {}, {spoken_route}", i + 1, h.caption)
                                on:click=move |_| p.show_hop(i)
                            >
                                <span class="kh-hopnum">{i + 1}</span>
                                <span class="kh-hopkind">{label}</span>
                                <span class="kh-hopcap">
                                    {h.what_if.then(|| view! { <span class="kh-whatif-chip">"WHAT IF"</span> })}
                                    {h.caption.clone()}
                                </span>
                                <span class="kh-hoproute">{route}</span>
                            </button>
                        </li>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <section class="kh-card">
            <h2>"This hop"</h2>
            {body}
            <ol class="kh-hoplist" aria-label="Hops of this step">{hop_list}</ol>
        </section>
    }
}

#[component]
pub fn ManifestPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let file = move || ctx.with_step(|st| st.manifest.file.clone()).unwrap_or_default();
    let lines = move || {
        ctx.with_step(|st| {
            st.manifest
                .lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let changed = st.manifest.changed.contains(&i);
                    view! {
                        <span class="kh-line" class:changed=changed>
                            <span class="kh-gutter" aria-hidden="true">{if changed { "+" } else { " " }}</span>
                            {l.clone()}
                            {changed.then(|| view! { <span class="kh-sr">" (changed in this step)"</span> })}
                            "\n"
                        </span>
                    }
                })
                .collect_view()
        })
    };
    let editing = RwSignal::new(false);
    let editable = move || kubehops_core::scenarios::about(&ctx.player.scenario_id.get()).is_some_and(|e| e.editor.is_some());
    // The scenario shown, not the text typed: a refused edit leaves the last accepted one.
    let edited = move || ctx.player.scenario.with(|s| s.params.manifest().is_some());
    let toggle = NodeRef::<leptos::html::Button>::new();
    // Leaving the editor puts the focus back on its button, so the
    // keyboard shortcuts work again at once.
    Effect::new(move |was: Option<bool>| {
        let now = editing.get();
        if was == Some(true) && !now {
            if let Some(b) = toggle.get_untracked() {
                let _ = b.focus();
            }
        }
        now
    });
    let caption = move || {
        let how = if edited() { "your edit, as applied" } else { "as applied" };
        format!("{}, {how}; + marks the lines that changed", file())
    };
    view! {
        <section class="kh-card kh-manifest">
            <div class="kh-card-head">
                <h2>"Service manifest " <span class="kh-sub">{caption}</span></h2>
                <Show when=editable>
                    <button type="button" class="kh-btn" node_ref=toggle aria-pressed=move || editing.get().to_string() on:click=move |_| editing.update(|e| *e = !*e)>
                        {move || if editing.get() { "Close editor" } else { "Edit" }}
                    </button>
                </Show>
            </div>
            <Show when=move || editing.get() && editable() fallback=move || view! { <pre class="kh-code">{lines}</pre> }>
                <crate::editor::ManifestEditor editing=editing/>
            </Show>
        </section>
    }
}

#[component]
pub fn KubectlPanel() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let table = Memo::new(move |_| {
        let f = ctx.moment.get();
        ctx.with_step(|st| st.views.get(f.view).map(|v| v.kubectl.clone())).flatten().unwrap_or_default()
    });
    view! {
        <section class="kh-card">
            <h2>"kubectl"</h2>
            <pre class="kh-code kh-term" data-testid="kubectl" tabindex="0">
                <span class="kh-prompt">{move || format!("$ {}\n", table.with(|t| t.command.clone()))}</span>
                {move || table.with(|t| t.render())}
            </pre>
        </section>
    }
}

#[component]
pub fn Legend() -> impl IntoView {
    view! {
        <ul class="kh-legend" aria-label="Legend">
            {KINDS
                .into_iter()
                .map(|k| {
                    let ks = kind_style(k);
                    let (class, label, name) = (ks.class, ks.label, ks.name);
                    view! {
                        <li class=format!("kh-{class}")>
                            // The canvas trail's class and pattern, from the same table.
                            <svg viewBox="0 0 40 12" width="40" height="12" aria-hidden="true">
                                <line class=format!("kh-trail kh-{class}") stroke-dasharray=ks.dash.dasharray() x1="2" y1="6" x2="38" y2="6"></line>
                            </svg>
                            <span class="kh-chip">{label}</span>
                            <span>{name}</span>
                        </li>
                    }
                })
                .collect_view()}
            <li class="kh-whatif-key">
                <svg viewBox="0 0 40 12" width="40" height="12" aria-hidden="true">
                    <line class="kh-trail kh-request whatif" stroke-dasharray=WHAT_IF_DASH x1="2" y1="6" x2="38" y2="6"></line>
                </svg>
                <span>"what if (not taken)"</span>
            </li>
        </ul>
    }
}

#[component]
pub fn Notices() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let notices = ctx.player.notices;
    move || {
        let n = notices.get();
        (!n.is_empty()).then(|| {
            view! {
                <div class="kh-notice" role="status">
                    <ul>{n.into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}</ul>
                    <button type="button" class="kh-btn" on:click=move |_| notices.set(Vec::new())>"Dismiss"</button>
                </div>
            }
        })
    }
}

/// The scenario's side-by-side table, each row linked to its tab.
#[component]
pub fn Comparison() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let table = Memo::new(move |_| ctx.with_scenario(|s| s.comparison.clone()));
    move || {
        table.get().map(|t| {
            view! {
                <section class="kh-card kh-compare" aria-labelledby="kh-compare-title">
                    <h2 id="kh-compare-title">{t.caption.clone()}</h2>
                    <div class="kh-table-wrap">
                        <table class="kh-compare-table">
                            <thead><tr>{t.header.iter().map(|h| view! { <th scope="col">{h.clone()}</th> }).collect_view()}</tr></thead>
                            <tbody>
                                {t.rows.into_iter().map(|(tab, cells)| {
                                    let mut cells = cells.into_iter();
                                    let first = cells.next().unwrap_or_default();
                                    let head = match tab {
                                        Some(v) => view! {
                                            <th scope="row">
                                                <button type="button" class="kh-linkbtn" title=format!("Show the {first} tab") on:click=move |_| p.choose(Chosen::Param("tab".into(), Value::Choice(v.clone())))>{first.clone()}</button>
                                            </th>
                                        }.into_any(),
                                        None => view! { <th scope="row">{first}</th> }.into_any(),
                                    };
                                    view! { <tr>{head}{cells.map(|c| view! { <td>{c}</td> }).collect_view()}</tr> }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                    <p class="kh-note">{t.note.clone()}</p>
                </section>
            }
        })
    }
}

/// A Copy button's state: it says "Copied" only once the clipboard took
/// the text, and where it was refused, selects the text and says so.
#[derive(Clone, Copy)]
struct CopyState(RwSignal<Option<Result<(), crate::browser::Refused>>>);

impl CopyState {
    fn new() -> Self {
        CopyState(RwSignal::new(None))
    }

    fn copy(self, text: String, shown: NodeRef<leptos::html::Code>) {
        self.0.set(None);
        // The clipboard answers later, and "Copied" goes back to "Copy"
        // later still: by then the panel may be gone (another step).
        leptos::task::spawn_local(async move {
            let done = crate::browser::copy_text(&text).await;
            if done.is_err() {
                if let Some(el) = shown.try_get_untracked().flatten() {
                    crate::browser::select_contents(&el);
                }
            }
            let ok = done.is_ok();
            if self.0.try_set(Some(done)).is_some() {
                return;
            }
            // A refusal stays.
            if ok {
                set_timeout(move || { if matches!(self.0.try_get_untracked(), Some(Some(Ok(())))) { let _ = self.0.try_set(None); } }, std::time::Duration::from_secs(3));
            }
        });
    }

    fn label(self) -> &'static str {
        if matches!(self.0.get(), Some(Ok(()))) { "Copied" } else { "Copy" }
    }

    fn note(self) -> Option<String> {
        match self.0.get() {
            Some(Err(why)) => Some(crate::browser::copy_by_hand(&why)),
            _ => None,
        }
    }
}

/// The commands a reader would run against a real cluster at this step,
/// with the outputs the model predicts, each with a copy button.
#[component]
pub fn Evidence() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let evidence = Memo::new(move |_| ctx.with_step(|st| st.evidence.clone()).unwrap_or_default());
    move || {
        let list = evidence.get();
        (!list.is_empty()).then(|| {
            view! {
                <section class="kh-card kh-evidence" aria-labelledby="kh-evidence-title" data-testid="evidence">
                    <h2 id="kh-evidence-title">"Evidence " <span class="kh-sub">"what the real tools would print now"</span></h2>
                    {list
                        .into_iter()
                        .map(|e| {
                            let cmd = e.command.clone();
                            let code = NodeRef::<leptos::html::Code>::new();
                            let copy = CopyState::new();
                            let out = if e.stderr.is_empty() { e.stdout.clone() } else { format!("{}{}", e.stderr, e.stdout) };
                            view! {
                                <div class="kh-evidence-item">
                                    <p class="kh-evidence-purpose">{e.purpose.clone()}</p>
                                    <div class="kh-evidence-cmd">
                                        <code node_ref=code>{format!("$ {}", e.command)}</code>
                                        <button type="button" class="kh-btn kh-btn-small" aria-label=format!("Copy: {}", e.command)
                                            on:click=move |_| copy.copy(cmd.clone(), code)>
                                            {move || copy.label()}
                                        </button>
                                    </div>
                                    <p class="kh-note kh-copy-note" role="status">{move || copy.note()}</p>
                                    <pre class="kh-code kh-term" tabindex="0">{out}</pre>
                                </div>
                            }
                        })
                        .collect_view()}
                </section>
            }
        })
    }
}
