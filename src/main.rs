//! KubeHops in the browser: renders what `kubehops-core` computed.

mod app;
mod browser;
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
mod words;

use leptos::prelude::{ArcRwSignal, GetUntracked, Set};

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

type Work = Box<dyn FnOnce()>;

thread_local! {
    /// The parts of the page still to draw behind the first frame, in
    /// order; `None` once the page is shown.
    static STAGES: std::cell::RefCell<Option<std::collections::VecDeque<Work>>> = std::cell::RefCell::new(Some(Default::default()));
    /// What waits for the page to be shown.
    static AFTER_SHOWN: std::cell::RefCell<Vec<Work>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Whether the page is shown (the first frame gave way to it):
    /// reference-counted, so no reactive owner's end disposes of it.
    static SHOWN: ArcRwSignal<bool> = ArcRwSignal::new(false);
}

/// Whether the app is shown yet: until then the first frame stands in for
/// it, and the app's state attributes (`data-step`) are left out.
pub(crate) fn shown() -> ArcRwSignal<bool> {
    SHOWN.with(|s| s.clone())
}

/// Runs `f` in a task of its own while the page is built behind the first
/// frame (after the parts queued before it), or at once once it is shown.
pub(crate) fn staged(f: impl FnOnce() + 'static) {
    let f: Work = Box::new(f);
    let now = STAGES.with(|s| match s.borrow_mut().as_mut() {
        Some(queue) => {
            queue.push_back(f);
            None
        }
        None => Some(f),
    });
    if let Some(f) = now {
        f();
    }
}

/// Runs `f` in a task of its own after the first frame the shown page is
/// painted in.
pub(crate) fn after_shown(f: impl FnOnce() + 'static) {
    if shown().get_untracked() {
        after_paint(f);
    } else {
        AFTER_SHOWN.with(|a| a.borrow_mut().push(Box::new(f)));
    }
}

/// Draws the next queued part of the page, or shows the page when none is
/// left.
fn next_stage() {
    let next = STAGES.with(|s| s.borrow_mut().as_mut().and_then(|q| q.pop_front()));
    match next {
        Some(f) => {
            // Marked for the metrics (a stage's own work; what it sets off
            // runs in the same task, after it).
            player::measured("kh-stage", f);
            then(next_stage);
        }
        None => show(),
    }
}

/// The first frame gives way to the page, drawn whole; what waited for it
/// is queued.
fn show() {
    STAGES.with(|s| s.borrow_mut().take());
    take_over_the_first_frame();
    shown().set(true);
    for f in AFTER_SHOWN.with(|a| std::mem::take(&mut *a.borrow_mut())) {
        after_paint(f);
    }
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
/// page, `crates/kubehops-firstframe`) gives way to the app, which the
/// stylesheet hid until now (`html[data-first]`), so no frame shows
/// neither, or both.
fn take_over_the_first_frame() {
    let doc = leptos::prelude::document();
    if let Some(first) = doc.get_element_by_id("kh-first") {
        first.remove();
    }
    if let Some(root) = doc.document_element() {
        let _ = root.remove_attribute("data-first");
    }
}
