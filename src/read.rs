//! Reading the scenario: the transcript (a page of its own at
//! `view=transcript`, and what printing gives), the live region that
//! announces the narration and each hop, and the toolbar with the
//! transcript link, print and the downloads. The words all come from the
//! core (`scene::transcript`, `scene::describe`).

use crate::room::Ctx;
use crate::canvas::Canvas;
use kubehops_core::link::{self, Link, Mode};
use kubehops_core::scenarios::Params;
use kubehops_core::scene::describe::announcement;
use kubehops_core::scene::transcript::{transcript, transcript_both, HopText, RowKind, StepText, Transcript};
use kubehops_core::scene::{frame, Frame};
use kubehops_core::sim::HopKind;
use leptos::context::Provider;
use leptos::prelude::*;

/// View state of the reading tools: whether a print is being prepared (the
/// transcript is then drawn under the animation, for the print stylesheet).
#[derive(Clone, Copy)]
pub struct Reading {
    pub printing: RwSignal<bool>,
}

/// Listens for the browser's print events, so Ctrl+P on the animation also
/// prints the transcript.
pub fn provide_reading() -> Reading {
    let r = Reading { printing: RwSignal::new(false) };
    let _ = window_event_listener(leptos::ev::beforeprint, move |_| r.printing.set(true));
    let _ = window_event_listener(leptos::ev::afterprint, move |_| r.printing.set(false));
    provide_context(r);
    r
}

/// The hash of what is shown, in another mode.
fn link_in(ctx: Ctx, view: Mode) -> String {
    let (scenario, params) = ctx.with_scenario(|s| (s.id.clone(), s.params.clone()));
    link::format(&Link { scenario, step: ctx.player.step.get(), hop: None, params, display: ctx.player.display.get(), view })
}

/// Transcript, Print, Download SVG, Download PNG.
#[component]
pub fn ReadTools() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let reading = expect_context::<Reading>();
    let print = move |_| {
        reading.printing.set(true);
        // Let the transcript render before the print dialog takes its picture.
        set_timeout(|| { let _ = window().print(); }, std::time::Duration::from_millis(80));
    };
    view! {
        <div class="kh-readtools" role="group" aria-label="Read and export">
            <a class="kh-btn kh-btn-small" href=move || link_in(ctx, Mode::Transcript)>"Transcript"</a>
            <button type="button" class="kh-btn kh-btn-small" on:click=print>"Print"</button>
            <button type="button" class="kh-btn kh-btn-small" on:click=move |_| crate::export::download(ctx, crate::export::Format::Svg)>"Download SVG"</button>
            <button type="button" class="kh-btn kh-btn-small" on:click=move |_| crate::export::download(ctx, crate::export::Format::Png)>"Download PNG"</button>
        </div>
    }
}

/// A polite live region: the step's narration as it starts, then each hop
/// as it plays.
#[component]
pub fn LiveRegion() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let at = Memo::new(move |_| {
        let f = ctx.moment.get();
        (f.step, f.current)
    });
    let text = Memo::new(move |_| {
        let (step, current) = at.get();
        ctx.with_scenario(|s| announcement(s, step, current))
    });
    view! { <div class="kh-sr" role="status" aria-live="polite" aria-atomic="true" data-testid="live">{move || text.get()}</div> }
}

/// The transcript page (`view=transcript`): a link back, then the
/// transcript; "Both kube-proxy modes" sets each hop's rules beside those
/// the other mode walked for it.
#[component]
pub fn TranscriptPage() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let both = RwSignal::new(false);
    // Your cluster is built by the worker from the paste: its other mode is not at hand here.
    let can = Memo::new(move |_| ctx.player.scenario_id.get() != "your-cluster");
    view! {
        <main class="kh-main-transcript" id="kh-main">
            <p class="kh-transcript-nav">
                <a class="kh-btn kh-btn-small" href=move || link_in(ctx, Mode::Animation)>"Back to the animation"</a>
                <button type="button" class="kh-btn kh-btn-small" on:click=move |_| { let _ = window().print(); }>"Print"</button>
                {move || can.get().then(|| view! {
                    <button type="button" class="kh-btn kh-btn-small" aria-pressed=move || both.get().to_string() on:click=move |_| both.update(|b| *b = !*b)>
                        "Both kube-proxy modes"
                    </button>
                })}
            </p>
            <TranscriptDoc both=Signal::derive(move || both.get() && can.get())/>
        </main>
    }
}

/// The parameters of the same scenario with kube-proxy in its other mode.
fn other_mode(s: &kubehops_core::scenarios::Scenario) -> Params {
    use kubehops_core::dataplane::kubeproxy::ProxyMode;
    use kubehops_core::scenarios::{params::PROXY_MODE, Value};
    let other = if s.params.proxy_mode() == ProxyMode::Iptables { ProxyMode::Nftables } else { ProxyMode::Iptables };
    s.params.clone().with(PROXY_MODE, Value::Choice(other.as_str().into()))
}

/// The transcript under the animation while a print is prepared; the
/// print stylesheet shows only it.
#[component]
pub fn PrintTranscript() -> impl IntoView {
    let reading = expect_context::<Reading>();
    move || reading.printing.get().then(|| view! { <div class="kh-print-only"><TranscriptDoc/></div> })
}

/// Every step: narration, a picture of its end, the manifest it applied,
/// its hops and kubectl's output.
#[component]
fn TranscriptDoc(#[prop(optional, into)] both: Option<Signal<bool>>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let both = move || both.is_some_and(|b| b.get());
    // The other mode is built by the worker (the page builds no
    // scenario): the transcript shows one mode until it is here.
    let other = move || {
        ctx.with_scenario(|s| {
            let p = other_mode(s);
            ctx.player.other_mode.with(|o| o.as_ref().filter(|a| a.is_for(&s.id, &p)).and_then(|a| a.scenario.clone()))
        })
    };
    Effect::new(move |_| {
        if both() {
            let (id, p) = ctx.with_scenario(|s| (s.id.clone(), other_mode(s)));
            ctx.player.request_other_mode(id, p);
        }
    });
    let t = Memo::new(move |_| match if both() { other() } else { None } {
        Some(o) => ctx.with_scenario(|s| transcript_both(s, &o)),
        None => ctx.with_scenario(transcript),
    });
    move || {
        let t: Transcript = t.get();
        view! {
            <article class="kh-transcript" aria-labelledby="kh-transcript-title" data-testid="transcript">
                <h2 id="kh-transcript-title" class="kh-transcript-title">{format!("Transcript: {}", t.title)}</h2>
                {t.demo.map(|(label, text)| view! { <p class="kh-demo-note"><strong>{format!("Demo · {label}: ")}</strong>{text}</p> })}
                {t.steps.into_iter().map(|st| view! { <StepSection st=st/> }).collect_view()}
                <crate::words::Glossary terms=t.glossary/>
            </article>
        }
    }
}

#[component]
fn StepSection(st: StepText) -> impl IntoView {
    let id = format!("kh-t-step-{}", st.number);
    let heading_id = id.clone();
    let n = st.number;
    view! {
        <section class="kh-tstep" aria-labelledby=id data-step=n>
            <h3 id=heading_id>{format!("Step {}: {}", st.number, st.title)}</h3>
            <p class="kh-tnarration">{st.narration}</p>
            <StillFigure step=n - 1/>
            {st.manifest.map(|m| view! {
                <h4>{format!("Manifest {}", m.file)}<span class="kh-sub">" (+ marks the lines this step changed)"</span></h4>
                <pre class="kh-code">
                    {m.lines.into_iter().map(|(l, changed)| view! {
                        <span class="kh-line" class:changed=changed>
                            <span class="kh-gutter" aria-hidden="true">{if changed { "+" } else { " " }}</span>
                            {l}
                            {changed.then(|| view! { <span class="kh-sr">" (changed)"</span> })}
                            "\n"
                        </span>
                    }).collect_view()}
                </pre>
            })}
            <h4>{format!("Hops ({})", st.hops.len())}</h4>
            <ol class="kh-thops">{st.hops.into_iter().map(|h| view! { <HopItem h=h/> }).collect_view()}</ol>
            {crate::words::step_words(&st.terms)}
            <h4>"kubectl"</h4>
            {st.terminals.into_iter().map(|t| view! {
                {t.purpose.map(|p| view! { <p class="kh-note">{p}</p> })}
                // Focusable, so a keyboard can scroll a wide table.
                <pre class="kh-code kh-term" tabindex="0"><span class="kh-prompt">{format!("$ {}\n", t.command)}</span>{t.output}</pre>
            }).collect_view()}
        </section>
    }
}

fn kind_class(h: &HopText) -> &'static str {
    if h.kind_name == "ARP" {
        return "dns";
    }
    match h.kind {
        HopKind::Dns => "dns",
        HopKind::Request => "request",
        HopKind::Reply => "reply",
        HopKind::ControlPlane => "control",
        HopKind::Dropped => "dropped",
    }
}

#[component]
fn HopItem(h: HopText) -> impl IntoView {
    let class = kind_class(&h);
    view! {
        <li class=format!("kh-thop kh-{class}") data-from=h.from_name.clone() data-to=h.to_name.clone()>
            // The chip repeats the summary's first word in colour; read once.
            <p class="kh-thop-head"><span class="kh-kind" aria-hidden="true">{h.kind_name.clone()}</span>" "{format!("{}.", h.summary)}</p>
            <p>{h.detail}</p>
            {(!h.rows.is_empty()).then(|| view! {
                <ul class="kh-trows">
                    {h.rows.into_iter().map(|r| {
                        let rules = r.kind == RowKind::Rules;
                        let other = r.kind == RowKind::OtherMode;
                        view! {
                            <li class:kh-trow-rules=rules class:kh-trow-other=other>
                                {r.text}
                                {(!r.items.is_empty()).then(|| view! {
                                    <ol class="kh-titems">{r.items.into_iter().map(|i| view! { <li><code>{i}</code></li> }).collect_view()}</ol>
                                })}
                            </li>
                        }
                    }).collect_view()}
                </ul>
            })}
        </li>
    }
}

/// The canvas at the end of `step`, drawn with its own frame.
#[component]
fn StillFigure(step: usize) -> impl IntoView {
    let base = expect_context::<Ctx>();
    let frame: Memo<Frame> = Memo::new(move |_| {
        base.player.scenario.with(|sc| {
            let n = sc.steps.get(step).map_or(0, |s| s.hops.len());
            frame(sc, step, n as f64)
        })
    });
    // A child owner, so the figure's context stays with its canvas.
    view! { <Provider value=Ctx { frame, moment: crate::room::moment_of(frame), figure: step + 1, ..base }><div class="kh-still"><Canvas/></div></Provider> }
}
