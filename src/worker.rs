//! The page's end of its Web Worker (`crates/kubehops-worker`), which
//! reads a pasted cluster and builds "Your cluster", and reads, admits and
//! builds the manifest editor's typed Service, off the page's thread.
//!
//! The worker is started when a cluster is first pasted or a Service
//! first typed (or a link carries one), never before: its wasm (the
//! object reader, the YAML parser and a second copy of the model) is not
//! on the page's critical path, and the page's own wasm has no reader.
//! Until the worker says it is ready, the newest request of each kind
//! waits here; after that each request goes at once, and only the answer
//! to the newest of its kind is taken. If the worker cannot start, or
//! stops, the page says so and the next request starts a new one; what
//! the user typed or pasted is never lost.

use kubehops_core::worker::{Answer, Job, Kind, Reply, Request};
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
    /// Whether the worker said "ready"; before that messages would be lost.
    ready: bool,
    /// The newest request of each kind not yet sent (only before "ready").
    waiting: Vec<Request>,
}

/// The number of the newest request of each kind, and of the newest
/// answered: only the answer to the newest is taken, and the worker is
/// busy while one of them is unanswered.
#[derive(Clone, Copy, Default)]
struct Seqs {
    sent: [u64; 2],
    answered: [u64; 2],
}

fn slot(k: Kind) -> usize {
    match k {
        Kind::Cluster => 0,
        Kind::Edit => 1,
    }
}

thread_local! {
    static WORKER: RefCell<Option<Rc<RefCell<Handle>>>> = const { RefCell::new(None) };
    static SEQS: Cell<Seqs> = Cell::new(Seqs::default());
    static NEXT: Cell<u64> = const { Cell::new(0) };
}

fn busy() -> bool {
    SEQS.with(|s| {
        let s = s.get();
        s.sent != s.answered
    })
}

/// Sends a job to the worker, starting it if need be. `answer` gets the
/// reply to the newest request of each kind only (the first call's
/// `answer` serves the worker's whole life); `status` follows the work.
pub fn send(job: Job, status: RwSignal<Status>, answer: impl Fn(Reply) + 'static) {
    let seq = NEXT.with(|n| n.get() + 1);
    NEXT.with(|n| n.set(seq));
    let kind = job.kind();
    SEQS.with(|s| {
        let mut v = s.get();
        v.sent[slot(kind)] = seq;
        s.set(v);
    });
    let req = Request { seq, job };
    let handle = WORKER.with(|w| w.borrow().clone()).or_else(|| start(status, Rc::new(answer)));
    let Some(handle) = handle else { return };
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
    if status.get_untracked() == Status::Working && !busy() {
        status.set(Status::Idle);
    }
}

fn post(worker: &web_sys::Worker, req: &Request) {
    if let Ok(bytes) = postcard::to_allocvec(req) {
        let _ = worker.post_message(&js_sys::Uint8Array::from(&bytes[..]));
    }
}

/// Starts the worker with its message and error handlers; `None` (and
/// `Failed`) where the browser refuses to.
fn start(status: RwSignal<Status>, answer: Rc<dyn Fn(Reply)>) -> Option<Rc<RefCell<Handle>>> {
    let worker = match web_sys::Worker::new(&loader_url()) {
        Ok(w) => w,
        Err(e) => {
            status.set(Status::Failed(format!("the browser would not start it ({})", js_text(&e))));
            return None;
        }
    };
    status.set(Status::Starting);
    let handle = Rc::new(RefCell::new(Handle { worker: worker.clone(), ready: false, waiting: Vec::new() }));
    let h = handle.clone();
    let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        let data = ev.data();
        if let Some(text) = data.as_string() {
            if let Some(why) = text.strip_prefix("failed: ") {
                // Its loader could not fetch or compile the wasm.
                fail(status, why.to_string());
            } else if text == "ready" {
                let mut h = h.borrow_mut();
                h.ready = true;
                let waiting = std::mem::take(&mut h.waiting);
                for req in &waiting {
                    post(&h.worker, req);
                }
                status.set(if waiting.is_empty() { Status::Idle } else { Status::Working });
            }
            return;
        }
        // Read after the next frame is painted, and shown in a task after
        // that: a keystroke's own frame (its text, "Checking…") never waits
        // for the answer to the keystroke before, and reading a big
        // cluster's scenario and drawing the page for it are two tasks,
        // not one long one.
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        let answer = answer.clone();
        crate::after_paint(move || match postcard::from_bytes::<Reply>(&bytes) {
            Ok(Reply { answer: Answer::Unreadable(why), .. }) => fail(status, why),
            Ok(reply) => crate::then(move || take(reply, status, &answer)),
            Err(e) => fail(status, format!("its answer could not be read ({e})")),
        });
    });
    let on_error = Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
        ev.prevent_default();
        let why = ev.message();
        fail(status, if why.is_empty() { "its script did not load".to_string() } else { why });
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_message.forget();
    on_error.forget();
    WORKER.with(|w| *w.borrow_mut() = Some(handle.clone()));
    Some(handle)
}

/// An answer: taken if it is to the newest request of its kind.
fn take(reply: Reply, status: RwSignal<Status>, answer: &Rc<dyn Fn(Reply)>) {
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
    if !busy() {
        status.set(Status::Idle);
    }
    if newest {
        answer(reply);
    }
}

/// Says why the worker stopped, and drops it: the next request starts a
/// new one.
fn fail(status: RwSignal<Status>, why: String) {
    status.set(Status::Failed(why));
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
}

fn js_text(v: &JsValue) -> String {
    v.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| v.as_string()).unwrap_or_else(|| "no reason given".into())
}
