//! The keyboard: the player's shortcuts on the whole window, and where a
//! key press lands (`Target`), which decides whether a shortcut or the
//! focused element takes it. Presenter clickers send Page Down and Page Up.

use crate::player::Player;
use kubehops_core::link::Mode;
use leptos::ev;
use leptos::prelude::*;

/// What a key press asks the player to do.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Key {
    PlayPause,
    NextStep,
    PreviousStep,
    NextHop,
    PreviousHop,
    Restart,
    End,
}

/// Where a key press lands, as far as the shortcuts care.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Target {
    /// Nothing in particular has focus (the body, or an element that
    /// cannot take focus).
    Page,
    /// A focusable element (button, summary, link, a scrollable list with
    /// tabindex="0"): Space, Home and End keep their own meaning there.
    Focusable,
    /// A focusable element that scrolls: Page Up and Page Down scroll it.
    Scroller,
    /// A select (the speed): its keys are its own, except the Page keys,
    /// so a presenter's clicker still steps after the speed was changed.
    Select,
    /// A text field or editable text: every key is its own.
    Input,
}

impl Key {
    fn from_name(name: &str) -> Option<Key> {
        Some(match name {
            " " | "Spacebar" => Key::PlayPause,
            // Presenter clickers send Page Down and Page Up.
            "ArrowRight" | "PageDown" => Key::NextStep,
            "ArrowLeft" | "PageUp" => Key::PreviousStep,
            "." | "]" => Key::NextHop,
            "," | "[" => Key::PreviousHop,
            "Home" => Key::Restart,
            "End" => Key::End,
            _ => return None,
        })
    }

    /// Whether the shortcut takes the key `name`, rather than the element
    /// it was pressed on.
    fn applies_to(self, name: &str, target: Target) -> bool {
        // Space clicks a button and opens a summary; Home and End scroll a
        // list. Arrows and the hop keys stay shortcuts everywhere but in
        // fields, and Page keys too unless the focused element scrolls.
        let its_own = matches!(self, Key::PlayPause | Key::Restart | Key::End);
        match target {
            Target::Page => true,
            Target::Input => false,
            Target::Select => matches!(name, "PageDown" | "PageUp"),
            Target::Focusable => !its_own,
            Target::Scroller => !its_own && !matches!(name, "PageDown" | "PageUp"),
        }
    }
}

impl Target {
    pub(crate) fn of(e: &web_sys::KeyboardEvent) -> Target {
        use wasm_bindgen::JsCast;
        let Some(el) = e.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else { return Target::Page };
        let tag = el.tag_name().to_ascii_lowercase();
        match tag.as_str() {
            "select" => return Target::Select,
            "input" | "textarea" => return Target::Input,
            _ => {}
        }
        let Some(h) = el.dyn_ref::<web_sys::HtmlElement>() else { return Target::Page };
        if h.is_content_editable() {
            return Target::Input;
        }
        if tag == "body" || tag == "html" || h.tab_index() < 0 {
            return Target::Page;
        }
        if el.scroll_height() > el.client_height() {
            Target::Scroller
        } else {
            Target::Focusable
        }
    }
}

/// The keyboard shortcuts, on the whole window.
pub(crate) fn listen_to_keys(player: Player) {
    let _ = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() || e.default_prevented() {
            return;
        }
        let name = e.key();
        let Some(key) = Key::from_name(&name) else { return };
        // The transcript does not play: its keys are the page's.
        if player.view.get_untracked() == Mode::Transcript {
            return;
        }
        if !key.applies_to(&name, Target::of(&e)) {
            return;
        }
        e.prevent_default();
        match key {
            Key::PlayPause => player.toggle(),
            Key::NextStep => player.next(),
            Key::PreviousStep => player.previous(),
            Key::NextHop => player.next_hop(),
            Key::PreviousHop => player.previous_hop(),
            Key::Restart => player.restart(),
            Key::End => player.show_end(),
        }
    });
}
