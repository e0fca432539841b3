//! KubeHops in the browser: renders what `kubehops-core` computed.

mod app;
mod canvas;
mod cluster;
mod controls;
mod editor;
mod embed;
mod export;
mod nodes;
mod opening;
mod panels;
mod player;
mod present;
mod read;
mod worker;

fn main() {
    // Start-up in tasks of their own, so none blocks the page for long:
    // the wasm's instantiation ends this one; the next reads the canvas
    // size off the first frame and builds the scenario the link names;
    // the next draws the page around it (and the first frame gives way in
    // that same task); the panels beside and below the canvas come after
    // (`app::Later`).
    // The opening state the page fetched as data, if it did, is read
    // instead of built (`opening`); its fetch started before the wasm's.
    wasm_bindgen_futures::spawn_local(async {
        let opening = opening::fetched().await;
        then(move || {
            canvas::remember_first_frame_size();
            player::prebuild(&leptos::prelude::window().location().hash().unwrap_or_default(), opening);
            then(|| {
                leptos::mount::mount_to_body(app::App);
                take_over_the_first_frame();
            });
        });
    });
}

/// Runs `f` in a task of its own.
pub(crate) fn then(f: impl FnOnce() + 'static) {
    leptos::prelude::set_timeout(f, std::time::Duration::ZERO);
}

/// Runs `f` in a task of its own after the next frame is painted: the
/// timeout is set from that frame's animation callback, which comes
/// before its paint.
pub(crate) fn after_paint(f: impl FnOnce() + 'static) {
    leptos::prelude::request_animation_frame(move || then(f));
}

/// The page's first frame (the opening states the build wrote into the
/// page, `crates/kubehops-firstframe`) gives way to the app, in the same
/// task as the app's first render, so no frame shows neither.
fn take_over_the_first_frame() {
    let doc = leptos::prelude::document();
    if let Some(first) = doc.get_element_by_id("kh-first") {
        first.remove();
    }
    if let Some(root) = doc.document_element() {
        let _ = root.remove_attribute("data-first");
    }
}
