//! The page's end of its Web Worker (`crates/kubehops-worker`), which
//! builds every scenario the page shows after its opening state, reads a
//! pasted cluster and builds "Your cluster", and reads, admits and builds
//! the manifest editor's typed Service, off the page's thread.
//!
//! The worker is started once the page is shown (`warm`), or at once for
//! a link to a state the page has no opening data for (`build_first`):
//! its wasm (the model's builders, the object reader and the YAML parser)
//! is not on the page's critical path, and the page's own wasm has none
//! of them. Until the worker says it is ready, the newest request of each
//! kind waits here; after that each request goes at once, and only the
//! answer to the newest of its kind is taken. A worker that cannot start
//! (its script not loaded, or not run in [`LOADER_WAIT`]) is replaced by a
//! new one for the same requests, up to [`START_TRIES`] workers. If none
//! starts, or one stops, the page says so and the next request starts a
//! new one; what the user typed or pasted is never lost.

use kubehops_core::scenarios::Params;
use kubehops_core::worker::{Answer, Built, Job, Kind, Reply, Request};
use leptos::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

/// Where the worker stands, as the paste panel and the editor show it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Status {
    /// Nothing asked, or the newest requests answered.
    #[default]
    Idle,
    /// The worker's wasm is being fetched and compiled.
    Starting,
    /// A request is being read or built.
    Working,
    /// The worker could not start or stopped; why.
    Failed(String),
}

/// Where the worker's loader is: the build names it in the page (a
/// `<meta name="kubehops-worker">` written by `scripts/trunk-csp.mjs`,
/// with a hash of its content, so a cached worker never answers a newer
/// page), or Trunk's own name for it.
fn loader_url() -> String {
    document()
        .query_selector("meta[name=kubehops-worker]")
        .ok()
        .flatten()
        .and_then(|m| m.get_attribute("content"))
        .unwrap_or_else(|| "./kubehops-worker_loader.js".into())
}

struct Handle {
    worker: web_sys::Worker,
    /// Whether its loader said it runs ("loading").
    heard: bool,
    /// Whether the worker said "ready"; before that messages would be lost.
    ready: bool,
    /// The newest request of each kind not yet sent (only before "ready").
    waiting: Vec<Request>,
    /// How many workers were started before this one for the same
    /// requests, each of which could not start.
    tries: u32,
}

/// How many workers are started for the same requests before the page
/// says the model could not start. WebKit, going back in history, now and
/// then fails to load a worker's script (an error event), or never runs
/// it; a new worker loads it (found by tests/e2e/monkey.mjs).
const START_TRIES: u32 = 3;

/// How long the worker's loader, a few hundred bytes, may take to say it
/// runs before it is taken for stuck and a new worker started. Fetching
/// and compiling the worker's wasm after that has no limit here.
const LOADER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The number of the newest request of each kind, and of the newest
/// answered: only the answer to the newest is taken, and the worker is
/// busy while one of them is unanswered.
#[derive(Clone, Copy, Default)]
struct Seqs {
    sent: [u64; 3],
    answered: [u64; 3],
}

const KINDS: [Kind; 3] = [Kind::Cluster, Kind::Build, Kind::OtherMode];

fn slot(k: Kind) -> usize {
    match k {
        Kind::Cluster => 0,
        Kind::Build => 1,
        Kind::OtherMode => 2,
    }
}

thread_local! {
    static WORKER: RefCell<Option<Rc<RefCell<Handle>>>> = const { RefCell::new(None) };
    static SEQS: Cell<Seqs> = Cell::new(Seqs::default());
    static NEXT: Cell<u64> = const { Cell::new(0) };
    /// Who takes the answers: the newest caller of `send` (start-up's
    /// first build, then the player).
    static ANSWER: RefCell<Option<Rc<dyn Fn(Reply)>>> = RefCell::new(None);
    /// Where each kind of work stands, as the page shows it.
    static STATUS: Cell<[Option<RwSignal<Status>>; 3]> = const { Cell::new([None, None, None]) };
    /// Called if the worker fails before start-up's first build is answered.
    static ON_FAIL: RefCell<Option<Box<dyn FnOnce()>>> = RefCell::new(None);
}

fn status_of(kind: Kind) -> Option<RwSignal<Status>> {
    STATUS.with(|s| s.get()[slot(kind)])
}

fn set_status(kind: Kind, to: Status) {
    if let Some(s) = status_of(kind) {
        s.set(to);
    }
}

/// Whether a request of `kind` is still to be answered.
pub fn in_flight(kind: Kind) -> bool {
    !done(kind)
}

fn done(kind: Kind) -> bool {
    SEQS.with(|s| {
        let s = s.get();
        s.sent[slot(kind)] == s.answered[slot(kind)]
    })
}

/// Sends a job to the worker, starting it if need be. `answer` gets the
/// reply to the newest request of each kind only (the newest caller's
/// `answer` takes every reply from then on); `status` follows the work of
/// the job's kind.
pub fn send(job: Job, status: RwSignal<Status>, answer: impl Fn(Reply) + 'static) {
    let seq = NEXT.with(|n| n.get() + 1);
    NEXT.with(|n| n.set(seq));
    let kind = job.kind();
    SEQS.with(|s| {
        let mut v = s.get();
        v.sent[slot(kind)] = seq;
        s.set(v);
    });
    ANSWER.with(|a| *a.borrow_mut() = Some(Rc::new(answer)));
    if kind == Kind::Build {
        timing(|p| p.mark(BUILD_START).map(drop));
    }
    STATUS.with(|s| {
        let mut v = s.get();
        v[slot(kind)] = Some(status);
        s.set(v);
    });
    let req = Request { seq, job };
    let Some(handle) = running_or_started(kind) else { return };
    let mut h = handle.borrow_mut();
    if h.ready {
        post(&h.worker, &req);
        status.set(Status::Working);
        return;
    }
    // A cluster request without a paste builds what a waiting one would
    // have read: it keeps that paste.
    let old = h.waiting.iter().position(|w| w.job.kind() == kind).map(|i| h.waiting.remove(i));
    let req = match (req.job, old.map(|o| o.job)) {
        (Job::Cluster { paste: None, params }, Some(Job::Cluster { paste, .. })) => Request { seq, job: Job::Cluster { paste, params } },
        (job, _) => Request { seq, job },
    };
    h.waiting.push(req);
    status.set(Status::Starting);
}

/// Starts the worker, if it is not running, with nothing to do yet: its
/// wasm is then fetched and compiled before the page first needs it.
/// Not for a reader who asked to save data (Save-Data): a reader who
/// only plays never needs it, and it comes when first asked for.
pub fn warm(status: RwSignal<Status>) {
    if saves_data() {
        return;
    }
    STATUS.with(|s| {
        let mut v = s.get();
        v[slot(Kind::Build)].get_or_insert(status);
        s.set(v);
    });
    let _ = running_or_started(Kind::Build);
}

/// Whether the browser says its reader wants to save data
/// (`navigator.connection.saveData`, the Save-Data header's switch).
fn saves_data() -> bool {
    let Some(navigator) = web_sys::window().map(|w| w.navigator()) else { return false };
    let connection = js_sys::Reflect::get(&navigator, &JsValue::from_str("connection")).ok().filter(JsValue::is_object);
    connection.and_then(|c| js_sys::Reflect::get(&c, &JsValue::from_str("saveData")).ok()).and_then(|v| v.as_bool()).unwrap_or(false)
}

/// How long start-up waits for its first build before it draws the page
/// without it (which then says why, or shows the build when it comes).
const FIRST_BUILD_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Builds (id, parameters) before the page is drawn (a link to a state
/// the page has no opening data for): `then` gets the worker's answer,
/// or `None` if the worker could not start or stopped.
pub fn build_first(id: String, params: Params, then: impl FnOnce(Option<Built>) + 'static) {
    let once: Rc<RefCell<Option<Box<dyn FnOnce(Option<Built>)>>>> = Rc::new(RefCell::new(Some(Box::new(then))));
    let on_fail = once.clone();
    ON_FAIL.with(|f| {
        *f.borrow_mut() = Some(Box::new(move || {
            if let Some(t) = on_fail.borrow_mut().take() {
                t(None);
            }
        }))
    });
    // A worker whose wasm never arrives (a fetch that hangs rather than
    // fails) must not keep the page behind its first frame for ever.
    leptos::prelude::set_timeout(
        || {
            if let Some(f) = ON_FAIL.with(|f| f.borrow_mut().take()) {
                f();
            }
        },
        FIRST_BUILD_WAIT,
    );
    // Owned by no reactive scope: it lives as long as the page.
    let status = RwSignal::new(Status::Idle);
    send(Job::Build { id, params }, status, move |reply| {
        if let Answer::Built(b) = reply.answer {
            ON_FAIL.with(|f| f.borrow_mut().take());
            if let Some(t) = once.borrow_mut().take() {
                t(Some(b));
            }
        }
    });
}

/// Drops any answer still to come for `kind` (the text was cleared).
pub fn cancel(kind: Kind, status: RwSignal<Status>) {
    SEQS.with(|s| {
        let mut v = s.get();
        v.answered[slot(kind)] = v.sent[slot(kind)];
        s.set(v);
    });
    if let Some(h) = WORKER.with(|w| w.borrow().clone()) {
        h.borrow_mut().waiting.retain(|w| w.job.kind() != kind);
    }
    if matches!(status.get_untracked(), Status::Working | Status::Starting) {
        status.set(Status::Idle);
    }
}

fn post(worker: &web_sys::Worker, req: &Request) {
    if let Ok(bytes) = postcard::to_allocvec(req) {
        let _ = worker.post_message(&js_sys::Uint8Array::from(&bytes[..]));
    }
}

/// The running worker, or a new one (`None`, and `Failed` for `kind`,
/// where the browser refuses to start one).
fn running_or_started(kind: Kind) -> Option<Rc<RefCell<Handle>>> {
    WORKER.with(|w| w.borrow().clone()).or_else(|| start(kind))
}

/// Starts the worker with its message and error handlers.
fn start(kind: Kind) -> Option<Rc<RefCell<Handle>>> {
    let worker = match web_sys::Worker::new(&loader_url()) {
        Ok(w) => w,
        Err(e) => {
            fail(format!("the browser would not start it ({})", js_text(&e)));
            return None;
        }
    };
    set_status(kind, Status::Starting);
    let handle = Rc::new(RefCell::new(Handle { worker: worker.clone(), heard: false, ready: false, waiting: Vec::new(), tries: 0 }));
    let h = handle.clone();
    let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        let data = ev.data();
        if let Some(text) = data.as_string() {
            if let Some(why) = text.strip_prefix("failed: ") {
                // Its loader could not fetch or compile the wasm.
                retry_or_fail(h.clone(), why.to_string());
            } else if text == "loading" {
                h.borrow_mut().heard = true;
            } else if text == "ready" {
                let mut h = h.borrow_mut();
                h.ready = true;
                let waiting = std::mem::take(&mut h.waiting);
                for req in &waiting {
                    post(&h.worker, req);
                }
                for k in KINDS {
                    let working = waiting.iter().any(|r| r.job.kind() == k);
                    if working || status_of(k).is_some_and(|s| s.get_untracked() == Status::Starting) {
                        set_status(k, if working { Status::Working } else { Status::Idle });
                    }
                }
            }
            return;
        }
        // Read after the next frame is painted, and shown in a task after
        // that: a keystroke's own frame (its text, "Checking…") never waits
        // for the answer to the keystroke before, and reading a big
        // cluster's scenario and drawing the page for it are two tasks,
        // not one long one.
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        crate::stages::after_paint(move || match postcard::from_bytes::<Reply>(&bytes) {
            Ok(Reply { answer: Answer::Unreadable(why), .. }) => fail(why),
            Ok(reply) => crate::stages::then(move || take(reply)),
            Err(e) => fail(format!("its answer could not be read ({e})")),
        });
    });
    // An error inside the worker comes as an ErrorEvent; a script that
    // could not be fetched (a network failure, a page left while it
    // loaded) as a plain Event with no message, whose `message` must not
    // be read as a string.
    let h = handle.clone();
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
        ev.prevent_default();
        let why = ev.dyn_ref::<web_sys::ErrorEvent>().map(|e| e.message()).unwrap_or_default();
        retry_or_fail(h.clone(), if why.is_empty() { "its script did not load".to_string() } else { why });
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_message.forget();
    on_error.forget();
    WORKER.with(|w| *w.borrow_mut() = Some(handle.clone()));
    let watched = handle.clone();
    leptos::prelude::set_timeout(
        move || {
            if !watched.borrow().heard && is_current(&watched) {
                retry_or_fail(watched, format!("its script did not start in {} s", LOADER_WAIT.as_secs()));
            }
        },
        LOADER_WAIT,
    );
    Some(handle)
}

/// Whether `h` is the page's worker (not one given up since).
fn is_current(h: &Rc<RefCell<Handle>>) -> bool {
    WORKER.with(|w| w.borrow().as_ref().is_some_and(|c| Rc::ptr_eq(c, h)))
}

/// A worker that could not start: a new one for the same requests, a
/// moment later, or after [`START_TRIES`] the page says why. A worker
/// that once said "ready" and then failed is not started again here: the
/// next request starts a new one.
fn retry_or_fail(old: Rc<RefCell<Handle>>, why: String) {
    let (ready, tries) = { let h = old.borrow(); (h.ready, h.tries) };
    if ready || tries + 1 >= START_TRIES || !is_current(&old) {
        fail(why);
        return;
    }
    old.borrow().worker.terminate();
    // Requests sent meanwhile wait in the old handle, which is still the
    // page's worker until the new one is started.
    leptos::prelude::set_timeout(
        move || {
            if !is_current(&old) {
                return;
            }
            WORKER.with(|w| *w.borrow_mut() = None);
            let waiting = std::mem::take(&mut old.borrow_mut().waiting);
            let kind = waiting.first().map_or(Kind::Build, |r| r.job.kind());
            if let Some(new) = start(kind) {
                let mut n = new.borrow_mut();
                n.tries = tries + 1;
                n.waiting = waiting;
            }
        },
        std::time::Duration::from_millis(250 << tries),
    );
}

/// An answer: taken if it is to the newest request of its kind.
fn take(reply: Reply) {
    let Some(kind) = reply.answer.kind() else { return };
    let newest = SEQS.with(|s| {
        let mut v = s.get();
        let newest = v.sent[slot(kind)] == reply.seq;
        if newest {
            v.answered[slot(kind)] = reply.seq;
        }
        s.set(v);
        newest
    });
    if done(kind) {
        set_status(kind, Status::Idle);
    }
    if newest && kind == Kind::Build {
        // From the request to the answer (e2e metrics, tests/e2e/metrics.mjs).
        timing(|p| p.measure_with_start_mark("kh-build", BUILD_START).map(drop));
    }
    if newest {
        if let Some(answer) = ANSWER.with(|a| a.borrow().clone()) {
            answer(reply);
        }
    }
}

/// Says why the worker stopped, and drops it: the next request starts a
/// new one.
fn fail(why: String) {
    for k in KINDS {
        set_status(k, Status::Failed(why.clone()));
    }
    SEQS.with(|s| {
        let mut v = s.get();
        v.answered = v.sent;
        s.set(v);
    });
    WORKER.with(|w| {
        if let Some(old) = w.borrow_mut().take() {
            old.borrow().worker.terminate();
        }
    });
    if let Some(f) = ON_FAIL.with(|f| f.borrow_mut().take()) {
        f();
    }
}

/// The mark a scenario's build is measured from: its request.
const BUILD_START: &str = "kh-build-start";

fn timing(f: impl FnOnce(&web_sys::Performance) -> Result<(), JsValue>) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = f(&p);
    }
}

fn js_text(v: &JsValue) -> String {
    v.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| v.as_string()).unwrap_or_else(|| "no reason given".into())
}
