//! The worker's entry point in the browser: it says "ready" once it can
//! take messages (one sent before that would be lost while the wasm
//! loads), then answers each request with one reply (`kubehops_worker`).

fn main() {
    #[cfg(target_arch = "wasm32")]
    glue::start();
}

#[cfg(target_arch = "wasm32")]
mod glue {
    use std::cell::RefCell;
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

    pub fn start() {
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let reader = RefCell::new(kubehops_worker::Reader::default());
        let out = scope.clone();
        let on = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let bytes = js_sys::Uint8Array::new(&ev.data()).to_vec();
            let reply = js_sys::Uint8Array::from(&reader.borrow_mut().answer_bytes(&bytes)[..]);
            // The answer's buffer is handed over, not copied.
            let _ = out.post_message_with_transfer(&reply, &js_sys::Array::of1(&reply.buffer()));
        });
        scope.set_onmessage(Some(on.as_ref().unchecked_ref()));
        on.forget();
        let _ = scope.post_message(&JsValue::from_str("ready"));
    }
}
