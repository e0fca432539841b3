//! Play/Pause, Previous, Next, Restart, the step indicator (which is also
//! how a scenario's actions, "DNS Lookup" and "Send Request", are reached),
//! the scenario's parameters as controls (tabs, buttons, switches), its
//! demos and the random pick switch.

use crate::room::Ctx;
use crate::player::{next_seed, Chosen, SPEEDS};
use kubehops_core::scenarios::{Choice, ChoiceStyle, ParamKind, ParamSpec, Value};
use leptos::prelude::*;

#[component]
pub fn Controls() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let nothing = move || p.nothing_to_play();
    let at_first = move || p.step.get() == 0 || nothing();
    let at_last = move || p.step.get() + 1 >= p.steps() || nothing();
    let play_label = move || if p.playing.get() { "Pause" } else { "Play" };
    view! {
        <div class="kh-controls" role="group" aria-label="Playback">
            <button type="button" class="kh-btn" aria-label="Restart" aria-keyshortcuts="Home" title="Restart from step 1 (Home)" disabled=nothing on:click=move |_| p.restart()>
                <Icon d="M6 5v14M19 5 9 12l10 7z"/><span class="kh-btn-text">"Restart"</span>
            </button>
            <button type="button" class="kh-btn" aria-label="Previous step" aria-keyshortcuts="ArrowLeft PageUp" title="Previous step (← or Page Up)" disabled=at_first on:click=move |_| p.previous()>
                <Icon d="M15 5 8 12l7 7"/><span class="kh-btn-text">"Previous"</span>
            </button>
            <button type="button" class="kh-btn kh-btn-primary" aria-label=play_label aria-keyshortcuts="Space" title="Play or pause (Space)" disabled=nothing on:click=move |_| p.toggle()>
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

/// From this many steps the step indicator shows numbers, with the
/// current step's title only, on narrow screens (see style.css)…
const COMPACT_NARROW: usize = 4;
/// …and from this many at every width.
const COMPACT_ALWAYS: usize = 6;

#[component]
pub fn StepIndicator() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    // Titles come from the scenario, which new parameters rebuild.
    let titles = Memo::new(move |_| p.scenario.with(|s| s.steps.iter().map(|st| st.title.clone()).collect::<Vec<String>>()));
    // Many steps (the lab's ten) do not fit a row with their titles: the
    // pills are numbers, and only the current one shows its title (the
    // others show theirs on hover and focus). The title stays in every
    // button's name. Narrow screens do this from four steps on.
    let n = Memo::new(move |_| titles.with(Vec::len));
    let some = move || n.get() >= COMPACT_NARROW;
    let many = move || n.get() >= COMPACT_ALWAYS;
    view! {
        <nav class="kh-steps" class:kh-steps-some=some class:kh-steps-many=many aria-label="Steps">
            <ol>
                {move || {
                    let titles = titles.get();
                    let n = titles.len();
                    titles
                        .into_iter()
                        .enumerate()
                        .map(|(i, t)| {
                            // The name is the visible text with the rest for screen
                            // readers ("Step 3 of 5: Type LoadBalancer"), so it
                            // contains the label a speech user reads off the screen.
                            let of = format!(" of {n}: ");
                            // Where along the row a compact pill's tip sits: 0 (first,
                            // from the row's left) to 100 (last, to its right).
                            // Set through the CSSOM, which the page's CSP allows (a
                            // style attribute it refuses).
                            let along = (i * 100 / n.saturating_sub(1).max(1)).to_string();
                            view! {
                                <li style=("--along", along)>
                                    <button
                                        type="button"
                                        class="kh-step"
                                        class:current=move || p.step.get() == i
                                        class:past=move || { p.step.get() > i }
                                        aria-current=move || (p.step.get() == i).then_some("step")
                                        // Your cluster before a paste: no step has a hop to show.
                                        disabled=move || p.nothing_to_play() && p.step.get() != i
                                        on:click=move |_| p.go_to(i)
                                    >
                                        <span class="kh-sr">"Step "</span>
                                        <span class="kh-step-num">{i + 1}</span>
                                        <span class="kh-sr">{of}</span>
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

/// The "Random pick (seeded)" switch: rebuilds the scenario with
/// kube-proxy's random choices drawn from a seed, or with the fixed picks.
#[component]
pub fn RandomPick() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let seed = Memo::new(move |_| p.shown(|ps| ps.seed()));
    let has_seed = Memo::new(move |_| p.scenario.with(|s| s.params.get("seed").is_some()));
    // The last seed used, so switching off and on again repeats it.
    let last = RwSignal::new(None::<u64>);
    Effect::new(move |_| {
        if let Some(s) = seed.get() {
            last.set(Some(s));
        }
    });
    let on = move || seed.get().is_some();
    let toggle = move |ev: leptos::ev::Event| {
        let checked = event_target_checked(&ev);
        let s = if checked { Some(last.get_untracked().unwrap_or_else(|| draw_seed(None))) } else { None };
        p.choose(Chosen::Param("seed".into(), Value::Seed(s)));
    };
    move || {
        has_seed.get().then(|| {
            view! {
                <div class="kh-options" role="group" aria-label="Random picks">
                    <label class="kh-switch">
                        <input type="checkbox" role="switch" prop:checked=on on:change=toggle aria-describedby="kh-pick-note"/>
                        <span class="kh-switch-track" aria-hidden="true"><span class="kh-switch-thumb"></span></span>
                        <span class="kh-switch-label">"Random pick (seeded)"</span>
                    </label>
                    {move || {
                        seed.get().map(|s| {
                            view! {
                                <span class="kh-seed" data-testid="seed">"seed " <strong>{s.to_string()}</strong></span>
                                <button
                                    type="button"
                                    class="kh-btn kh-btn-small"
                                    title="Draw another seed and replay this step"
                                    on:click=move |_| p.choose(Chosen::Param("seed".into(), Value::Seed(Some(draw_seed(seed.get_untracked())))))
                                >
                                    "New seed"
                                </button>
                            }
                        })
                    }}
                    <span class="kh-pick-note" id="kh-pick-note">
                        {move || if on() { "kube-proxy's random rules pick from this seed; the link repeats it." } else { "Off: fixed picks, so the story repeats." }}
                    </span>
                </div>
            }
        })
    }
}

/// The scenario's parameters, each as the control its style asks for:
/// tabs, a group of toggle buttons, a switch, a switch per member of a
/// set. Demos, the seed and hidden parameters have their own places.
#[component]
pub fn ParamControls() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let specs = specs_memo(p);
    move || {
        let specs = specs.get();
        let shown: Vec<ParamSpec> = specs.into_iter().filter(|s| is_control(s) && !s.is_setting()).collect();
        (!shown.is_empty()).then(|| {
            view! {
                <div class="kh-params">{param_controls(&shown, &shown)}</div>
            }
        })
    }
}

/// The scenario's parameter specs (a pasted cluster's depend on it).
fn specs_memo(p: crate::player::Player) -> Memo<Vec<ParamSpec>> {
    Memo::new(move |_| {
        let id = p.scenario_id.get();
        p.cluster.with(|c| crate::cluster::specs_for(&id, c))
    })
}

/// A control for each of `shown`, each saying when it applies in the
/// words of the controls among `all` that decide it.
fn param_controls(shown: &[ParamSpec], all: &[ParamSpec]) -> impl IntoView {
    shown
        .iter()
        .map(|spec| {
            let only = only_for(spec, all);
            view! { <ParamControl spec=spec.clone() only=only/> }
        })
        .collect_view()
}

/// Whether the parameter is shown as a control of its own (demos, the
/// manifest and hidden parameters have other places).
fn is_control(s: &ParamSpec) -> bool {
    !matches!(s.kind, ParamKind::Seed | ParamKind::Manifest | ParamKind::Choice { style: ChoiceStyle::Demo | ChoiceStyle::Hidden, .. })
}

/// The choices that set how the cluster is built and shown (kube-proxy's
/// mode, the Pod network, TCP packet by packet, random picks), folded into
/// one disclosure under the canvas whose summary says what is set:
/// "Settings: iptables · routed · whole requests · fixed picks". The story's
/// own choices (a Service type, a client) stay above the canvas.
#[component]
pub fn Settings() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let specs = specs_memo(p);
    let summary = Memo::new(move |_| specs.with(|all| p.shown(|ps| ps.settings_summary(all))));
    // Kept here, not in the element, so a scenario's new controls do not
    // fold what the reader opened.
    let open = RwSignal::new(false);
    move || {
        let all = specs.get();
        let settings: Vec<ParamSpec> = all.iter().filter(|s| s.is_setting() && is_control(s)).cloned().collect();
        let has_seed = all.iter().any(|s| matches!(s.kind, ParamKind::Seed));
        (!settings.is_empty() || has_seed).then(|| {
            view! {
                <details class="kh-settings" prop:open=move || open.get() on:toggle=move |ev| open.set(event_target::<web_sys::Element>(&ev).has_attribute("open"))>
                    <summary>
                        <span class="kh-settings-name">"Settings"<span class="kh-sr">": "</span></span>
                        <span class="kh-settings-now" data-testid="settings-summary">{move || summary.get()}</span>
                    </summary>
                    <div class="kh-params kh-settings-body">{param_controls(&settings, &all)}</div>
                    <RandomPick/>
                </details>
            }
        })
    }
}

/// When a parameter applies, in the words of the controls that decide it:
/// "Only for NodePort or LoadBalancer", "Only for NodePort and Laptop".
fn only_for(spec: &ParamSpec, all: &[ParamSpec]) -> String {
    let conds: Vec<String> = spec
        .when
        .iter()
        .map(|(key, values)| {
            let options = all.iter().find(|s| &s.key == key).and_then(|s| match &s.kind {
                ParamKind::Choice { options, .. } | ParamKind::Set { options } => Some(options.as_slice()),
                _ => None,
            });
            let labels: Vec<&str> = values.iter().map(|v| options.and_then(|o| o.iter().find(|c| &c.value == v)).map_or(v.as_str(), |c| c.label.as_str())).collect();
            match labels.split_last() {
                Some((last, [])) => last.to_string(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => String::new(),
            }
        })
        .collect();
    if conds.is_empty() {
        String::new()
    } else {
        format!("Only for {}", conds.join(" and "))
    }
}

/// A parameter that does not apply to the current choice (the explorer's
/// externalTrafficPolicy on ClusterIP) stays in its place, disabled, with
/// a tip that says when it applies: the toolbar is as tall on every tab,
/// so the canvas does not jump.
#[component]
fn ParamControl(spec: ParamSpec, only: String) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let applies = {
        let spec = spec.clone();
        Memo::new(move |_| p.scenario.with(|s| spec.applies(&s.params)))
    };
    let body = match spec.kind.clone() {
        ParamKind::Choice { options, style: ChoiceStyle::Tabs, .. } => view! { <Tabs key=spec.key.clone() label=spec.label.clone() options=options/> }.into_any(),
        ParamKind::Choice { options, style: ChoiceStyle::Menu, .. } if options.is_empty() => ().into_any(),
        ParamKind::Choice { options, style: ChoiceStyle::Menu, .. } => view! { <Menu key=spec.key.clone() label=spec.label.clone() options=options/> }.into_any(),
        ParamKind::Choice { options, .. } => view! { <Segmented key=spec.key.clone() label=spec.label.clone() options=options/> }.into_any(),
        ParamKind::Toggle { .. } => view! { <Toggle key=spec.key.clone() label=spec.label.clone()/> }.into_any(),
        ParamKind::Set { options } => view! { <ReadySet key=spec.key.clone() label=spec.label.clone() options=options/> }.into_any(),
        ParamKind::Seed | ParamKind::Manifest => ().into_any(),
    };
    // One line beside the control where it needs one (why the mode
    // choice has no IPVS), as small text the control's group describes.
    let hint = spec.hint.clone().map(|h| view! { <span class="kh-param-hint">{h}</span> });
    if spec.when.is_empty() {
        return view! { <div class="kh-param">{body}{hint}</div> }.into_any();
    }
    let off = move || !applies.get();
    // A fieldset disables every control in it; while it does, its tip
    // (also its name, for a screen reader) says when the controls apply.
    view! {
        <fieldset class="kh-param" disabled=off title=move || off().then(|| only.clone())>
            {body}
        </fieldset>
    }
    .into_any()
}

/// A tab list: one tab per value, arrow keys move between them.
#[component]
fn Tabs(key: String, label: String, options: Vec<Choice>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let k = key.clone();
    let current = Memo::new(move |_| p.shown(|ps| ps.choice(&k).unwrap_or_default().to_string()));
    let values: Vec<String> = options.iter().map(|c| c.value.clone()).collect();
    let pick = {
        let key = key.clone();
        move |v: String| p.choose(Chosen::Param(key.clone(), Value::Choice(v)))
    };
    let on_key = {
        let values = values.clone();
        let pick = pick.clone();
        let key = key.clone();
        move |e: leptos::ev::KeyboardEvent| {
            let n = values.len();
            let i = values.iter().position(|v| *v == current.get_untracked()).unwrap_or(0);
            let to = match e.key().as_str() {
                "ArrowRight" => (i + 1) % n,
                "ArrowLeft" => (i + n - 1) % n,
                "Home" => 0,
                "End" => n - 1,
                _ => return,
            };
            e.prevent_default();
            e.stop_propagation();
            pick(values[to].clone());
            focus_tab(&key, &values[to]);
        }
    };
    view! {
        <div class="kh-tabs" role="tablist" aria-label=label on:keydown=on_key>
            {options
                .into_iter()
                .map(|c| {
                    let v = c.value.clone();
                    let selected = move || current.get() == v;
                    let selected2 = selected.clone();
                    let pick = pick.clone();
                    let value = c.value.clone();
                    view! {
                        <button
                            type="button"
                            role="tab"
                            class="kh-tab"
                            id=format!("kh-tab-{}-{}", key, c.value)
                            aria-selected=move || selected().to_string()
                            aria-controls="kh-main"
                            tabindex=move || if selected2() { "0" } else { "-1" }
                            on:click=move |_| pick(value.clone())
                        >
                            {c.label}
                        </button>
                    }
                })
                .collect_view()}
        </div>
    }
}

fn focus_tab(key: &str, value: &str) {
    use wasm_bindgen::JsCast;
    if let Some(el) = document().get_element_by_id(&format!("kh-tab-{key}-{value}")).and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = el.focus();
    }
}

/// A menu (`<select>`) for a choice with many options: a pasted
/// cluster's Services and clients.
#[component]
fn Menu(key: String, label: String, options: Vec<Choice>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let k = key.clone();
    let current = Memo::new(move |_| p.scenario.with(|s| s.params.choice(&k).unwrap_or_default().to_string()));
    let id = format!("kh-menu-{key}");
    // A long menu holds only the chosen option until it is first used
    // (focused or pressed), then all of them: the browser's style and
    // layout of a 50-node cluster's 2,500 options took about 100 ms of the
    // paste's longest task, for a menu the reader may never open.
    let many = options.len() > MENU_AT_ONCE;
    let filled = StoredValue::new(!many);
    let options = StoredValue::new(options);
    let only = move |v: &str| options.with_value(|o| o.iter().find(|c| c.value == v).map(|c| options_html(std::slice::from_ref(c))).unwrap_or_default());
    let initial = if many { only(&current.get_untracked()) } else { options.with_value(|o| options_html(o)) };
    // The choice is set on the select once its options are there (an
    // effect runs after the render), not by one reactive `selected` per
    // option: a cluster's menu of clients has thousands.
    let select = NodeRef::<leptos::html::Select>::new();
    Effect::new(move |_| {
        let v = current.get();
        if let Some(el) = select.get() {
            if !filled.get_value() {
                el.set_inner_html(&only(&v));
            }
            el.set_value(&v);
        }
    });
    let fill = move || {
        if filled.get_value() {
            return;
        }
        filled.set_value(true);
        if let Some(el) = select.get_untracked() {
            let v = el.value();
            options.with_value(|o| el.set_inner_html(&options_html(o)));
            el.set_value(&v);
        }
    };
    view! {
        <div class="kh-menu-param">
            <label class="kh-param-label" for=id.clone()>{label}</label>
            <select
                id=id
                class="kh-menu"
                class:kh-menu-many=many
                node_ref=select
                inner_html=initial
                on:focus=move |_| fill()
                on:pointerdown=move |_| fill()
                on:change=move |ev| p.choose(Chosen::Param(key.clone(), Value::Choice(event_target_value(&ev))))
            ></select>
        </div>
    }
}

/// The most options a menu is drawn with at once (see `Menu`).
const MENU_AT_ONCE: usize = 300;

/// The options of a menu as markup, set on the `<select>` at once: the
/// browser parses thousands of options (a 50-node cluster's clients) in a
/// few milliseconds, where an element, an attribute and a text each made
/// through the DOM took most of a 100 ms task.
fn options_html(options: &[Choice]) -> String {
    use kubehops_core::scene::svg::escape;
    options.iter().map(|c| format!("<option value=\"{}\">{}</option>", escape(&c.value), escape(&c.label))).collect()
}

/// A group of toggle buttons for a choice (the client).
#[component]
fn Segmented(key: String, label: String, options: Vec<Choice>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let k = key.clone();
    let current = Memo::new(move |_| p.shown(|ps| ps.choice(&k).unwrap_or_default().to_string()));
    let name = label.clone();
    view! {
        <div class="kh-seg-param" role="group" aria-label=name>
            <span class="kh-param-label" aria-hidden="true">{label}</span>
            <div class="kh-seg">
                {options
                    .into_iter()
                    .map(|c| {
                        let v = c.value.clone();
                        let key = key.clone();
                        let pressed = move || (current.get() == v).to_string();
                        let value = c.value.clone();
                        view! {
                            <button type="button" class="kh-seg-btn" aria-pressed=pressed on:click=move |_| p.choose(Chosen::Param(key.clone(), Value::Choice(value.clone())))>
                                {c.label}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
        </div>
    }
}

/// A switch for a toggle parameter.
#[component]
fn Toggle(key: String, label: String) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let k = key.clone();
    let on = Memo::new(move |_| p.shown(|ps| ps.toggle(&k)));
    view! {
        <label class="kh-switch">
            <input type="checkbox" role="switch" prop:checked=move || on.get() on:change=move |ev| p.choose(Chosen::Param(key.clone(), Value::Toggle(event_target_checked(&ev))))/>
            <span class="kh-switch-track" aria-hidden="true"><span class="kh-switch-thumb"></span></span>
            <span class="kh-switch-label">{label}</span>
        </label>
    }
}

/// One switch per member of a set, named "<member> Ready": on means the
/// member is not in the set (the set lists the Pods made not Ready).
#[component]
fn ReadySet(key: String, label: String, options: Vec<Choice>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let _ = label;
    view! {
        <div class="kh-ready-set" role="group" aria-label="Readiness of the Pods">
            {options
                .into_iter()
                .map(|c| {
                    let (k1, k2, v1, v2) = (key.clone(), key.clone(), c.value.clone(), c.value.clone());
                    let ready = Memo::new(move |_| p.shown(|ps| !ps.set_contains(&k1, &v1)));
                    let flip = move |ev: leptos::ev::Event| {
                        let want_ready = event_target_checked(&ev);
                        // Built on a choice not applied yet, if there is one.
                        let mut set: std::collections::BTreeSet<String> = match p.chosen_value(&k2) {
                            Some(Value::Set(s)) => s,
                            _ => p.params.with_untracked(|ps| match ps.get(&k2) {
                                Some(Value::Set(s)) => s.clone(),
                                _ => Default::default(),
                            }),
                        };
                        if want_ready {
                            set.remove(&v2);
                        } else {
                            set.insert(v2.clone());
                        }
                        p.choose(Chosen::Param(k2.clone(), Value::Set(set)));
                    };
                    view! {
                        <label class="kh-switch kh-switch-small">
                            <input type="checkbox" role="switch" prop:checked=move || ready.get() on:change=flip/>
                            <span class="kh-switch-track" aria-hidden="true"><span class="kh-switch-thumb"></span></span>
                            <span class="kh-switch-label">{format!("{} Ready", c.label)}</span>
                        </label>
                    }
                })
                .collect_view()}
        </div>
    }
}

/// The scenario's demos: presets one click away.
#[component]
pub fn Demos() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let demos = Memo::new(move |_| p.scenario.with(|s| s.demos.iter().map(|d| (d.id.clone(), d.label.clone())).collect::<Vec<_>>()));
    let active = Memo::new(move |_| p.chosen_demo().or_else(|| p.scenario.with(|s| s.demo().map(|d| d.id.clone()))));
    move || {
        let list = demos.get();
        (!list.is_empty()).then(|| {
            view! {
                <div class="kh-demos" role="group" aria-label="Demos">
                    <span class="kh-param-label">"Demos"</span>
                    {list
                        .into_iter()
                        .map(|(id, label)| {
                            let i2 = id.clone();
                            let pressed = move || (active.get().as_deref() == Some(i2.as_str())).to_string();
                            view! {
                                <button type="button" class="kh-btn kh-btn-small kh-demo" aria-pressed=pressed on:click=move |_| p.choose(Chosen::Demo(id.clone()))>
                                    {format!("Demo: {label}")}
                                </button>
                            }
                        })
                        .collect_view()}
                </div>
            }
        })
    }
}
