//! What the browser may refuse the page: the clipboard, full screen and a
//! second window. A documentation site frames KubeHops in an `<iframe>`
//! that may not allow them, a page served over plain HTTP has no
//! clipboard, and a pop-up blocker may close the presenter view's window.
//!
//! Each call here answers whether it was done, and a refusal is a value
//! (`Refused`, with a sentence for the reader), never a thrown error or
//! an unhandled rejection: no control claims a success it did not have.

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Why the browser did not do what was asked, in words for the reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub &'static str);

/// Writes `text` to the clipboard, and says whether it was written.
pub async fn copy_text(text: &str) -> Result<(), Refused> {
    const NONE: Refused = Refused("This page has no clipboard here");
    const BLOCKED: Refused = Refused("The browser refused the clipboard here");
    // Outside a secure context `navigator.clipboard` is undefined, and
    // calling a method on it would throw.
    let clip = js_sys::Reflect::get(&window().navigator(), &"clipboard".into()).map_err(|_| NONE)?;
    let clip: web_sys::Clipboard = clip.dyn_into().map_err(|_| NONE)?;
    match wasm_bindgen_futures::JsFuture::from(clip.write_text(text)).await {
        Ok(_) => Ok(()),
        Err(_) => Err(BLOCKED),
    }
}

/// Selects the text inside `node`, so that the reader can copy it by hand
/// (Ctrl+C or ⌘C) where the clipboard was refused.
pub fn select_contents(node: &web_sys::Node) {
    if let Some(el) = node.dyn_ref::<web_sys::HtmlTextAreaElement>() {
        el.select();
        return;
    }
    if let Ok(Some(sel)) = window().get_selection() {
        let _ = sel.select_all_children(node);
    }
}

/// The sentence that goes with a refused copy: what happened, and the way on.
pub fn copy_by_hand(why: &Refused) -> String {
    format!("{}. The text is selected: press Ctrl+C (⌘C on a Mac) to copy it.", why.0)
}

/// Asks for `el` to fill the screen. Answers once the browser has granted
/// or refused it (a frame without `allow="fullscreen"` refuses).
pub async fn fullscreen(el: &web_sys::Element) -> Result<(), Refused> {
    const NO: Refused = Refused("Full screen was refused here, so KubeHops presents inside its frame");
    let promise = call(el, "requestFullscreen").ok_or(NO)?;
    match promise.dyn_into::<js_sys::Promise>() {
        Ok(p) => wasm_bindgen_futures::JsFuture::from(p).await.map(|_| ()).map_err(|_| NO),
        // An engine whose method returns nothing answers by events only.
        Err(_) => Ok(()),
    }
}

/// Leaves full screen; a refusal (nothing was full screen) needs no word.
pub fn exit_fullscreen() {
    if let Some(r) = call(&document(), "exitFullscreen") {
        if let Ok(p) = r.dyn_into::<js_sys::Promise>() {
            // Handled, so that a rejection is never reported as unhandled.
            wasm_bindgen_futures::spawn_local(async move {
                let _ = wasm_bindgen_futures::JsFuture::from(p).await;
            });
        }
    }
}

/// Opens `url` in a window named `target`, and says whether one opened
/// (a pop-up blocker or a sandboxed frame answers with none).
pub fn open_window(url: &str, target: &str, features: &str) -> Result<(), Refused> {
    const NO: Refused = Refused("The browser did not open the presenter view's window (pop-ups are blocked here)");
    match window().open_with_url_and_target_and_features(url, target, features) {
        Ok(Some(_)) => Ok(()),
        _ => Err(NO),
    }
}

/// Calls `target.name()` if the engine has that method; a synchronous
/// throw is caught and counts as none.
fn call(target: &JsValue, name: &str) -> Option<JsValue> {
    let f = js_sys::Reflect::get(target, &JsValue::from_str(name)).ok()?;
    let f = f.dyn_ref::<js_sys::Function>()?;
    f.call0(target).ok()
}

/// Adds `text` to the page's notices, once: a refusal met again (P pressed
/// twice in a frame that refuses full screen) is not said twice.
pub fn tell(notices: RwSignal<Vec<String>>, text: String) {
    notices.update(|n| {
        if !n.contains(&text) {
            n.push(text);
        }
    });
}

/// On a bug (a Rust panic), says so on the page before the wasm stops:
/// the message and where, in the console for a report, and a notice on
/// top of the page, since nothing on it answers any more. Without it the
/// page would freeze with no word (found by tests/e2e/monkey.mjs).
pub fn say_panics() {
    std::panic::set_hook(Box::new(|info| {
        let text = format!("kubehops stopped on a bug: {info}");
        web_sys::console::error_1(&text.as_str().into());
        let Some(doc) = window().document() else { return };
        let Ok(note) = doc.create_element("div") else { return };
        note.set_class_name("kh-stopped");
        let _ = note.set_attribute("role", "alert");
        note.set_text_content(Some(&format!(
            "KubeHops stopped on a bug, and this page no longer answers. Reload the page to go on; the link keeps the step you were at. ({text})"
        )));
        if let Some(body) = doc.body() {
            let _ = body.prepend_with_node_1(&note);
        }
    }));
}
