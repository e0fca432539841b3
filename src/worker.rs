//! The page's end of its Web Worker (`crates/kubehops-worker`), which
//! reads a pasted cluster and builds "Your cluster" off the page's thread.
//!
//! The worker is started when a cluster is first pasted or dropped, never
//! before: its wasm (the object reader, the YAML parser and a second copy
//! of the model) is not on the page's critical path. Until it says it is
//! ready, the newest request waits here; after that each request goes at
//! once, and only the answer to the newest is kept (`Player::cluster`).
//! If the worker cannot start, or stops, the paste panel says so and the
//! next request starts a new one; the pasted text is never lost.

use kubehops_core::scenarios::Params;
use kubehops_core::worker::{Paste, Reply, Request};
use std::cell::Cell;
use leptos::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

/// Where the reading stands, as the paste panel shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Status {
    /// Nothing asked, or the newest request answered.
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
    /// The newest request not yet sent (only before "ready").
    waiting: Option<Request>,
}

thread_local! {
    static WORKER: RefCell<Option<Rc<RefCell<Handle>>>> = const { RefCell::new(None) };
    /// The number of the newest request: only its answer is taken.
    static NEWEST: Cell<u64> = const { Cell::new(0) };
}

/// Sends a request to the worker (a new paste, or `None` to build the
/// one read for `params`), starting the worker if need be. `answer` gets
/// the reply to the newest request only; `status` follows the work.
pub fn send(paste: Option<Paste>, params: Params, status: RwSignal<Status>, answer: impl Fn(Reply) + 'static) {
    let seq = NEWEST.with(|n| n.get() + 1);
    NEWEST.with(|n| n.set(seq));
    let req = Request { seq, paste, params };
    let handle = WORKER.with(|w| w.borrow().clone()).or_else(|| start(status, Rc::new(answer)));
    let Some(handle) = handle else { return };
    let mut h = handle.borrow_mut();
    if h.ready {
        post(&h.worker, &req);
        status.set(Status::Working);
    } else {
        // A request without a paste builds what the waiting one would
        // have read: it keeps that paste.
        let paste = req.paste.clone().or_else(|| h.waiting.take().and_then(|w| w.paste));
        h.waiting = Some(Request { paste, ..req });
    }
}

/// Drops any answer still to come (the text was cleared).
pub fn cancel(status: RwSignal<Status>) {
    NEWEST.with(|n| n.set(n.get() + 1));
    if let Some(h) = WORKER.with(|w| w.borrow().clone()) {
        h.borrow_mut().waiting = None;
    }
    if status.get_untracked() == Status::Working {
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
    let handle = Rc::new(RefCell::new(Handle { worker: worker.clone(), ready: false, waiting: None }));
    let h = handle.clone();
    let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        let data = ev.data();
        if let Some(why) = data.as_string().as_deref().and_then(|t| t.strip_prefix("failed: ")) {
            // Its loader could not fetch or compile the wasm.
            fail(status, why.to_string());
            return;
        }
        if data.as_string().as_deref() == Some("ready") {
            let mut h = h.borrow_mut();
            h.ready = true;
            if let Some(req) = h.waiting.take() {
                post(&h.worker, &req);
                status.set(Status::Working);
            } else {
                status.set(Status::Idle);
            }
            return;
        }
        let newest = NEWEST.with(Cell::get);
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        match postcard::from_bytes::<Reply>(&bytes) {
            Ok(reply) if reply.seq == newest => {
                status.set(Status::Idle);
                answer(reply);
            }
            Ok(_) => {}
            Err(e) => status.set(Status::Failed(format!("its answer could not be read ({e})"))),
        }
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

/// Says why the worker stopped, and drops it: the next request starts a
/// new one.
fn fail(status: RwSignal<Status>, why: String) {
    status.set(Status::Failed(why));
    WORKER.with(|w| {
        if let Some(old) = w.borrow_mut().take() {
            old.borrow().worker.terminate();
        }
    });
}

fn js_text(v: &JsValue) -> String {
    v.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| v.as_string()).unwrap_or_else(|| "no reason given".into())
}
