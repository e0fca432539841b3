//! The opening state as data: the scenario the link names, as the core
//! built it when the page was built (`crates/kubehops-firstframe` writes
//! it next to the page, and the page's first script starts fetching it
//! while the wasm is still on its way).
//!
//! At start-up the app reads it instead of building the scenario on the
//! main thread, where a build runs in the wasm's first, unoptimised code.
//! It is taken only for the scenario and parameters it was built for (the
//! defaults); any other link, or a failed fetch, waits for the worker to
//! build its scenario (`crate::worker::build_first`).

use kubehops_core::scenarios::{self, Params, Scenario};
use wasm_bindgen::JsCast;

/// The bytes the page fetched, and the scenario they are for.
pub struct Opening {
    id: String,
    bytes: Vec<u8>,
}

/// The page script's property (`window.khOpening = {id, bytes}`).
const PROPERTY: &str = "khOpening";

/// Waits for the fetch the page's first script started, if it started
/// one, and takes it off the window.
pub async fn fetched() -> Option<Opening> {
    let w = web_sys::window()?;
    let o = js_sys::Reflect::get(&w, &PROPERTY.into()).ok().filter(|v| v.is_object())?;
    let _ = js_sys::Reflect::delete_property(&w, &PROPERTY.into());
    let id = js_sys::Reflect::get(&o, &"id".into()).ok()?.as_string()?;
    let bytes: js_sys::Promise = js_sys::Reflect::get(&o, &"bytes".into()).ok()?.dyn_into().ok()?;
    let buf: js_sys::ArrayBuffer = wasm_bindgen_futures::JsFuture::from(bytes).await.ok()?.dyn_into().ok()?;
    Some(Opening { id, bytes: js_sys::Uint8Array::new(&buf).to_vec() })
}

impl Opening {
    /// The scenario, when it is what (`id`, `params`) builds: the same
    /// scenario with its default parameters. Timed for the e2e metrics
    /// (`tests/e2e/metrics.mjs`): a `kh-opening` performance measure.
    pub fn scenario_for(&self, id: &str, params: &Params) -> Option<Scenario> {
        let e = scenarios::about(id).filter(|_| id == self.id)?;
        let specs = (e.params)();
        if params.normalized(&specs) != Params::defaults(&specs).normalized(&specs) {
            return None;
        }
        crate::player::measured("kh-opening", || postcard::from_bytes::<Scenario>(&self.bytes).ok().filter(|s| s.id == id))
    }
}
