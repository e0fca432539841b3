//! KubeHops in the browser: renders what `kubehops-core` computed.

mod app;
mod canvas;
mod cluster;
mod controls;
mod editor;
mod embed;
mod export;
mod nodes;
mod panels;
mod player;
mod present;
mod read;

fn main() {
    leptos::mount::mount_to_body(app::App);
    take_over_the_first_frame();
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
