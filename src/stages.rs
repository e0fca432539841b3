//! The stage scheduler: how the page is drawn behind its first frame in
//! tasks of its own (`staged`), shown (`show`), and what waits for it
//! (`after_shown`); `Stage` and `Later`, the components that draw their
//! children in those tasks; `then` and `after_paint`, a task of its own
//! now or after the next paint. No start-up task is long.

use crate::player::Player;
use leptos::prelude::*;

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
pub(crate) fn next_stage() {
    let next = STAGES.with(|s| s.borrow_mut().as_mut().and_then(|q| q.pop_front()));
    match next {
        Some(f) => {
            // Marked for the metrics (a stage's own work; what it sets off
            // runs in the same task, after it).
            crate::player::measured("kh-stage", f);
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

/// `staged`, run under the reactive owner of the caller, so what
/// `f` sets up (effects, listeners) lives and ends with it.
pub(crate) fn staged_here(f: impl FnOnce() + 'static) {
    let owner = Owner::current();
    staged(move || match owner {
        Some(o) => o.with(f),
        None => f(),
    });
}

/// Its children, drawn in a task of their own after the page is shown
/// and painted: a timeout per `Later`, so two of them are two tasks, not
/// one.
#[component]
pub fn Later(children: ChildrenFn) -> impl IntoView {
    drawn_when(after_shown, children)
}

/// Its children, drawn in a task of their own while the page is built
/// behind the first frame (`staged`), or at once after that: a part
/// of what the first frame shows, so none of the start-up tasks is long.
#[component]
pub fn Stage(children: ChildrenFn) -> impl IntoView {
    drawn_when(staged, children)
}

/// `children`, drawn when `schedule` runs the work it is handed.
fn drawn_when(schedule: fn(Box<dyn FnOnce()>), children: ChildrenFn) -> impl IntoView {
    let ready = RwSignal::new(false);
    schedule(Box::new(move || { let _ = ready.try_set(true); }));
    move || ready.get().then(|| children())
}

/// The page's step for its `data-step`, once the page is shown: the
/// attribute says what is on screen, and before that the first frame is.
pub fn shown_step(player: Player) -> impl Fn() -> Option<usize> + Clone {
    let shown = shown();
    move || shown.get().then(|| player.step.get() + 1)
}
