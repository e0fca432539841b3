//! KubeHops in the browser: renders what `kubehops-core` computed.

mod app;
mod browser;
mod canvas;
mod cluster;
mod controls;
mod editor;
mod embed;
mod export;
mod keys;
mod nodes;
mod opening;
mod panels;
mod player;
mod present;
mod read;
mod room;
mod stages;
mod worker;
mod words;

use stages::{next_stage, then};

fn main() {
    browser::say_panics();
    // Start-up in tasks of their own, so none blocks the page for long:
    // the wasm's instantiation ends this one; the next reads the canvas
    // size off the first frame and the scenario the link names;
    // the next mounts the page's frame, hidden behind the first frame;
    // each part of the page the first frame shows is then drawn in a task
    // of its own (`staged`), and the first frame gives way to the whole
    // in the task after the last (`show`); the panels beside and below
    // the canvas come after that (`after_shown`).
    // The page builds no scenario: the opening state it fetched as data
    // (`opening`; its fetch started before the wasm's) is read, and any
    // other state the link names is built by the worker first.
    wasm_bindgen_futures::spawn_local(async {
        let opening = opening::fetched().await;
        then(move || {
            canvas::remember_first_frame_size();
            let (id, params) = player::named_by(&leptos::prelude::window().location().hash().unwrap_or_default());
            match opening.and_then(|o| o.scenario_for(&id, &params)) {
                Some(s) => {
                    player::open_with(player::Answered::of(&id, &params, s));
                    then(mount);
                }
                // Without it (the worker did not start) the page opens
                // with nothing to show, and says why.
                None => worker::build_first(id, params, |built| {
                    if let Some(b) = built {
                        player::open_with(player::Answered::from_worker(b));
                    }
                    then(mount);
                }),
            }
        });
    });
}

/// Draws the page behind the first frame, part by part.
fn mount() {
    leptos::mount::mount_to_body(app::App);
    then(next_stage);
}
