//! Embedding: the page as another page's `<iframe>` shows it (canvas,
//! controls, narration), the theme, the host page's `postMessage`
//! protocol and the height message, and the "Embed" button that gives the
//! `<iframe>` snippet. What messages mean is decided in
//! `kubehops_core::embed::protocol`; here they are only converted.

use crate::room::Ctx;
use crate::stages::Stage;
use crate::canvas::Canvas;
use crate::controls::{Controls, StepIndicator};
use crate::panels::{Narration, Notices};
use crate::player::Player;
use kubehops_core::embed::protocol::{self, Command, Data, Event, State};
use kubehops_core::embed::{self, ControlsMode, Display};
use kubehops_core::link;
use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

/// Converts a message's data, refusing anything big or deep: a message
/// of the protocol is a few fields.
pub fn to_data(v: &JsValue) -> Option<Data> {
    let mut budget = 200u32;
    convert(v, 4, &mut budget)
}

fn convert(v: &JsValue, depth: u32, budget: &mut u32) -> Option<Data> {
    *budget = budget.checked_sub(1)?;
    if v.is_null() || v.is_undefined() {
        return Some(Data::Null);
    }
    if let Some(b) = v.as_bool() {
        return Some(Data::Bool(b));
    }
    if let Some(n) = v.as_f64() {
        return Some(Data::Num(n));
    }
    if let Some(s) = v.as_string() {
        return (s.len() <= 4096).then_some(Data::Text(s));
    }
    if depth == 0 || !v.is_object() || v.is_function() {
        return None;
    }
    if js_sys::Array::is_array(v) {
        let a: &js_sys::Array = v.unchecked_ref();
        if a.length() > 32 {
            return None;
        }
        return a.iter().map(|x| convert(&x, depth - 1, budget)).collect::<Option<Vec<_>>>().map(Data::List);
    }
    let entries = js_sys::Object::entries(v.unchecked_ref());
    if entries.length() > 32 {
        return None;
    }
    let mut out = Vec::new();
    for e in entries.iter() {
        let pair: js_sys::Array = e.unchecked_into();
        let key = pair.get(0).as_string()?;
        out.push((key, convert(&pair.get(1), depth - 1, budget)?));
    }
    Some(Data::Map(out))
}

/// The JavaScript value of data the core wrote.
pub fn to_js(d: &Data) -> JsValue {
    match d {
        Data::Null => JsValue::NULL,
        Data::Bool(b) => JsValue::from_bool(*b),
        Data::Num(n) => JsValue::from_f64(*n),
        Data::Text(s) => JsValue::from_str(s),
        Data::List(l) => l.iter().map(to_js).collect::<js_sys::Array>().into(),
        Data::Map(m) => {
            let o = js_sys::Object::new();
            for (k, v) in m {
                let _ = js_sys::Reflect::set(&o, &JsValue::from_str(k), &to_js(v));
            }
            o.into()
        }
    }
}

/// Applies `theme=` and `embed=1` to the root element: `data-theme`
/// (`light`, `dark`, or none for auto) and `data-embed`.
pub fn apply_display(player: Player) {
    Effect::new(move |_| {
        let d = player.display.get();
        let Some(root) = document().document_element() else { return };
        match d.theme.data_theme() {
            Some(t) => _ = root.set_attribute("data-theme", t),
            None => _ = root.remove_attribute("data-theme"),
        }
        if d.embed {
            let _ = root.set_attribute("data-embed", "1");
        } else {
            let _ = root.remove_attribute("data-embed");
        }
    });
}

/// Autoplay: an embedded page moves only when asked (`autoplay=1`), and
/// never under reduced motion; a full page plays a linked step once, as
/// before.
pub fn start(player: Player) {
    let d = player.display.get_untracked();
    if d.should_autoplay(player.reduced_motion.get_untracked()) {
        player.continuous.set(true);
        if !player.playing.get_untracked() {
            player.toggle();
        }
    } else if d.embed || d.notes {
        player.playing.set(false);
    }
}

/// The parent window, when this page is framed.
fn parent() -> Option<web_sys::Window> {
    let w = window();
    let p = w.parent().ok().flatten()?;
    (!js_sys::Object::is(&p, &w)).then_some(p)
}

fn state(player: Player) -> State {
    let link = player.link_hash();
    let (step, progress, playing) = (player.step.get(), player.progress.get(), player.playing.get());
    player.scenario.with(|s| State::of(s, step, progress, playing, link))
}

/// Sends an event to the parent, only to the listed origins (the height
/// also to any parent when none is listed: it tells nothing).
fn send(parent: &web_sys::Window, display: &Display, event: &Event) {
    let data = to_js(&event.data());
    if display.origins.is_empty() {
        if matches!(event, Event::Height(_)) {
            let _ = parent.post_message(&data, "*");
        }
        return;
    }
    // Where the browser says which origin the parent has, only to it (if
    // listed): a message to a listed origin that is not the parent's is
    // dropped by the browser with an error in the console, one for every
    // other origin listed, on every change.
    match parent_origin() {
        Some(p) if display.allows(&p) => {
            let _ = parent.post_message(&data, &p);
        }
        Some(_) => {}
        None => {
            for o in &display.origins {
                let _ = parent.post_message(&data, o.as_str());
            }
        }
    }
}

/// The parent's origin, where the browser tells it: the first of
/// `location.ancestorOrigins` (Chromium, WebKit); else (Firefox) the
/// referrer's, when it is another origin than this page's: the page that
/// put this one in its frame (a navigation inside the frame would give
/// this page's own). `None` when neither tells.
fn parent_origin() -> Option<String> {
    let w = window();
    let location = w.location();
    if let Ok(list) = js_sys::Reflect::get(&location, &JsValue::from_str("ancestorOrigins")) {
        if !list.is_undefined() && !list.is_null() {
            return js_sys::Reflect::get(&list, &JsValue::from_f64(0.0)).ok().and_then(|o| o.as_string());
        }
    }
    let own = location.origin().ok()?;
    let referrer = w.document()?.referrer();
    let (scheme, rest) = referrer.split_once("://")?;
    let origin = format!("{scheme}://{}", rest.split(['/', '?', '#']).next().unwrap_or(""));
    (!rest.is_empty() && origin != own).then_some(origin)
}

/// The error a `kubehops:set` gets when its state is not shown: another
/// command, a link or a choice asked for another one before it was built,
/// or the page's worker stopped.
const SUPERSEDED: &str = "The state asked for was not shown: a newer change took its place before it was ready, or the page could not build it.";

/// Opens the state a `kubehops:set` resolved to, and plays on from there
/// or pauses, as it asked.
fn apply_set(player: Player, target: &link::Link, play: Option<bool>) {
    player.apply_link(&link::format(target));
    match play {
        Some(true) => {
            player.continuous.set(true);
            if !player.playing.get_untracked() {
                player.toggle();
            }
        }
        Some(false) => player.playing.set(false),
        None => {}
    }
}

/// The host protocol and the height message, when framed.
pub fn connect_host(player: Player) {
    let Some(parent) = parent() else { return };
    let p2 = parent.clone();
    let _ = window_event_listener(ev::message, move |e: web_sys::MessageEvent| {
        let display = player.display.get_untracked();
        // Only the parent, from a listed origin.
        let from_parent = e.source().is_some_and(|s| js_sys::Object::is(&s, &p2));
        if !from_parent || !display.allows(&e.origin()) {
            return;
        }
        let Some(req) = to_data(&e.data()).and_then(|d| protocol::parse(&d)) else { return };
        let reply = match req.command {
            Command::Get => None,
            Command::Next => {
                player.next();
                None
            }
            Command::Previous => {
                player.previous();
                None
            }
            Command::Set(set) => {
                // Applied once the page has the scenario it asks for (the
                // worker may build it first), and answered then.
                // From what was last asked for (a choice still being built
                // included), not only what is shown.
                let mut current = untrack(|| player.link());
                current.scenario = player.scenario_id.get_untracked();
                current.params = player.params.get_untracked();
                match protocol::resolve(&set, &current, |_, _| usize::MAX) {
                    Err(msg) => Some(Event::Error(req.id.clone(), msg)),
                    Ok((target, _)) => {
                        let reply = {
                            let (origin, parent) = (e.origin(), p2.clone());
                            move |event: Event| {
                                let _ = parent.post_message(&to_js(&event.data()), &origin);
                            }
                        };
                        let (id, id2, reply2) = (req.id.clone(), req.id.clone(), reply.clone());
                        let ready = move || {
                            reply(match protocol::resolve(&set, &current, |id, p| player.known_steps(id, p).unwrap_or(usize::MAX)) {
                                Err(msg) => Event::Error(id, msg),
                                Ok((target, play)) => {
                                    apply_set(player, &target, play);
                                    Event::State(id, untrack(|| state(player)))
                                }
                            })
                        };
                        // Every command is answered once: one whose state is
                        // overtaken before it is built says so.
                        let dropped = move || reply2(Event::Error(id2, SUPERSEDED.to_string()));
                        player.when_built_or(target.scenario, target.params, ready, dropped);
                        return;
                    }
                }
            }
        };
        let event = reply.unwrap_or_else(|| Event::State(req.id.clone(), untrack(|| state(player))));
        let _ = p2.post_message(&to_js(&event.data()), &e.origin());
    });
    // Ready once, then every change of what is shown (not every frame).
    let shown = Memo::new(move |_| state(player));
    let first = StoredValue::new(true);
    let p3 = parent.clone();
    Effect::new(move |_| {
        let s = shown.get();
        let display = player.display.get_untracked();
        let e = if first.get_value() {
            first.set_value(false);
            Event::Ready(s)
        } else {
            Event::Change(s)
        };
        send(&p3, &display, &e);
    });
    watch_height(player, parent);
}

/// Measures the height the page wants at its width and tells the parent
/// when it changes: on resize, and after each change of step or scenario.
fn watch_height(player: Player, parent: web_sys::Window) {
    let last = StoredValue::new(0u32);
    let layout = expect_context::<Ctx>().layout;
    let measure = move || {
        let Some(h) = preferred_height(layout) else { return };
        if last.try_get_value().is_some_and(|was| was != h) {
            last.set_value(h);
            send(&parent, &player.display.get_untracked(), &Event::Height(h));
        }
    };
    let m2 = measure.clone();
    let _ = window_event_listener(ev::resize, move |_| m2());
    // Behind the first frame the page has no size yet: measured once shown.
    let shown = crate::stages::shown();
    Effect::new(move |_| {
        let _ = (player.step.get(), player.scenario_id.get(), player.params.get(), player.notices.get());
        if !shown.get() {
            return;
        }
        let m = measure.clone();
        request_animation_frame(move || m());
    });
}

/// The canvas the drawing wants at the frame's width, plus what is around
/// it now, plus the narration that does not fit.
fn preferred_height(layout: Memo<kubehops_core::scene::Layout>) -> Option<u32> {
    let doc = document();
    let svg = doc.query_selector(".kh-canvas svg").ok().flatten()?;
    let world = layout.try_with_untracked(|l| l.world())?;
    let r = svg.get_bounding_client_rect();
    let frame_h = window().inner_height().ok()?.as_f64()?;
    let overflow = doc.query_selector(".kh-narration").ok().flatten().map_or(0, |n| (n.scroll_height() - n.client_height()).max(0)) as f64;
    Some(embed::preferred_height(r.width(), world, frame_h - r.height() + overflow))
}

/// The embedded page: canvas, controls (as many as `controls=` says) and
/// narration, filling the frame.
#[component]
pub fn EmbedPage() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let p = ctx.player;
    let mode = move || p.display.get().controls;
    view! {
        <div
            class="kh kh-embed"
            class:kh-controls-none=move || mode() == ControlsMode::None
            data-step=crate::stages::shown_step(p)
            data-playing=move || p.playing.get().to_string()
            data-controls=move || mode().as_str()
            aria-busy=move || p.busy().then_some("true")
        >
            <Notices/>
            <section class="kh-stage kh-embed-stage" aria-label="Animation">
                <Stage><Canvas/></Stage>
            </section>
            <div class="kh-embed-bar">
                <Stage>
                    {move || match mode() {
                        ControlsMode::Full => view! { <Controls/><StepIndicator/> }.into_any(),
                        ControlsMode::Minimal => view! { <MiniControls/> }.into_any(),
                        ControlsMode::None => ().into_any(),
                    }}
                </Stage>
            </div>
            <Stage><Narration folded=true/></Stage>
        </div>
    }
}

/// Previous, Play/Pause, Next and the step count.
#[component]
fn MiniControls() -> impl IntoView {
    let p = expect_context::<Ctx>().player;
    let label = move || if p.playing.get() { "Pause" } else { "Play" };
    view! {
        <div class="kh-controls kh-mini" role="group" aria-label="Playback">
            <button type="button" class="kh-btn" aria-label="Previous step" disabled=move || p.step.get() == 0 on:click=move |_| p.previous()>"←"</button>
            <button type="button" class="kh-btn kh-btn-primary" aria-label=label on:click=move |_| p.toggle()>{label}</button>
            <button type="button" class="kh-btn" aria-label="Next step" disabled=move || { p.step.get() + 1 >= p.steps() } on:click=move |_| p.next()>"→"</button>
            <span class="kh-mini-count">{move || format!("Step {} of {}", p.step.get() + 1, p.steps())}</span>
        </div>
    }
}

/// The "Embed" button: copies the `<iframe>` for what is shown now, and
/// shows it in a dialog to copy by hand where the clipboard is refused.
#[component]
pub fn EmbedButton() -> impl IntoView {
    let p = expect_context::<Ctx>().player;
    let dialog = NodeRef::<leptos::html::Dialog>::new();
    let snippet = RwSignal::new(String::new());
    let status = RwSignal::new(String::new());
    let area = NodeRef::<leptos::html::Textarea>::new();
    let open = move |_| {
        let mut l = untrack(|| p.link());
        l.display = p.display.get_untracked().for_embed();
        let page = window().location().href().unwrap_or_default();
        let title = p.scenario.with_untracked(|s| s.title.clone());
        let text = embed::snippet(&page, &link::format(&l), &title);
        snippet.set(text.clone());
        status.set("Copying…".into());
        if let Some(d) = dialog.get() {
            let _ = d.show_modal();
        }
        // The clipboard answers later, when the button may be gone (a
        // new scenario drawn meanwhile): then nobody is waiting to hear it.
        leptos::task::spawn_local(async move {
            match crate::browser::copy_text(&text).await {
                Ok(()) => { let _ = status.try_set("Copied to the clipboard.".into()); }
                Err(why) => {
                    if let Some(a) = area.try_get_untracked().flatten() {
                        crate::browser::select_contents(&a);
                    }
                    let _ = status.try_set(crate::browser::copy_by_hand(&why));
                }
            }
        });
    };
    view! {
        <button type="button" class="kh-btn kh-btn-small" title="Copy an <iframe> that shows this state" on:click=open>"Embed"</button>
        <dialog class="kh-dialog" node_ref=dialog aria-labelledby="kh-embed-title">
            <h2 id="kh-embed-title">"Embed this state"</h2>
            <p class="kh-note" role="status" data-testid="embed-status">{move || status.get()}</p>
            <textarea class="kh-snippet" node_ref=area readonly rows="4" aria-label="The iframe snippet" data-testid="embed-snippet" prop:value=move || snippet.get()></textarea>
            <p class="kh-note">"Add "<code>"&origins=https://your.site"</code>" to the link to let your page drive it; see the README for the messages."</p>
            <form method="dialog"><button type="submit" class="kh-btn kh-btn-small">"Close"</button></form>
        </dialog>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn js(text: &str) -> JsValue {
        js_sys::JSON::parse(text).unwrap()
    }

    #[wasm_bindgen_test]
    fn a_command_converts_and_is_read() {
        let d = to_data(&js(r#"{"type":"kubehops:set","version":1,"step":3,"hop":"end","playing":false}"#)).unwrap();
        let req = protocol::parse(&d).unwrap();
        assert!(matches!(req.command, Command::Set(ref s) if s.step == Some(3) && s.playing == Some(false)));
        // And back: what the core writes reads the same.
        let e = Event::Height(480).data();
        assert_eq!(to_data(&to_js(&e)), Some(e));
    }

    #[wasm_bindgen_test]
    fn big_deep_or_odd_data_is_refused() {
        let deep = format!("{}1{}", "[".repeat(6), "]".repeat(6));
        assert_eq!(to_data(&js(&deep)), None);
        let wide = format!("[{}]", vec!["0"; 40].join(","));
        assert_eq!(to_data(&js(&wide)), None);
        assert_eq!(to_data(&js(&format!("\"{}\"", "x".repeat(5000)))), None);
        let f = js_sys::Function::new_no_args("return 1");
        assert_eq!(to_data(&f.into()), None);
        assert_eq!(to_data(&JsValue::UNDEFINED), Some(Data::Null));
    }
}
