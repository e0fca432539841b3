//! View state: which step is shown, how far its hops have played, and
//! whether the clock runs. This is all the UI keeps; everything drawn is
//! derived from it and the walkthrough.

use kubehops_core::link::{self, HopPos, Link};
use kubehops_core::walkthrough::Walkthrough;
use leptos::prelude::*;

/// Milliseconds a hop takes at normal speed.
pub const BEAT_MS: f64 = 1100.0;
/// Beats to rest at the end of a step before continuous play moves on.
pub const HOLD_BEATS: f64 = 0.9;

#[derive(Clone, Copy)]
pub struct Player {
    pub walkthrough: StoredValue<Walkthrough>,
    pub step: RwSignal<usize>,
    /// Beats since the step started; may run past the hop count while
    /// holding at the end.
    pub progress: RwSignal<f64>,
    pub playing: RwSignal<bool>,
    /// Play on into the next steps (Play), or stop at the step's end (a
    /// step chosen by Next, Previous or the indicator).
    pub continuous: RwSignal<bool>,
    pub reduced_motion: RwSignal<bool>,
    /// Problems found in the URL, shown once.
    pub notices: RwSignal<Vec<String>>,
}

impl Player {
    pub fn steps(&self) -> usize {
        self.walkthrough.with_value(|w| w.steps.len())
    }

    pub fn hops_in(&self, step: usize) -> usize {
        self.walkthrough.with_value(|w| w.steps.get(step).map_or(0, |s| s.hops.len()))
    }

    /// The progress to draw: under reduced motion hops jump to their end
    /// state instead of gliding.
    pub fn shown_progress(&self) -> f64 {
        let p = self.progress.get();
        if self.reduced_motion.get() {
            p.floor()
        } else {
            p
        }
    }

    /// Opens a step and plays its hops once (or, under reduced motion,
    /// shows its end state).
    pub fn go_to(&self, step: usize) {
        let step = step.min(self.steps().saturating_sub(1));
        self.step.set(step);
        if self.reduced_motion.get_untracked() && !self.playing.get_untracked() {
            self.progress.set(self.hops_in(step) as f64);
        } else {
            self.progress.set(0.0);
            if !self.playing.get_untracked() {
                self.continuous.set(false);
            }
            self.playing.set(true);
        }
    }

    pub fn next(&self) {
        let s = self.step.get_untracked();
        if s + 1 < self.steps() {
            self.go_to(s + 1);
        }
    }

    pub fn previous(&self) {
        self.go_to(self.step.get_untracked().saturating_sub(1));
    }

    pub fn restart(&self) {
        self.step.set(0);
        self.progress.set(0.0);
        self.continuous.set(true);
        self.playing.set(true);
    }

    pub fn toggle(&self) {
        if self.playing.get_untracked() {
            self.playing.set(false);
            return;
        }
        let (s, n) = (self.step.get_untracked(), self.hops_in(self.step.get_untracked()));
        if self.progress.get_untracked() >= n as f64 {
            // The step has finished: Play moves on, or starts over at the end.
            if s + 1 < self.steps() {
                self.step.set(s + 1);
            } else {
                self.step.set(0);
            }
            self.progress.set(0.0);
        }
        self.continuous.set(true);
        self.playing.set(true);
    }

    /// Shows the end of hop `i` (0-based) and pauses.
    pub fn show_hop(&self, i: usize) {
        self.playing.set(false);
        self.progress.set((i + 1) as f64);
    }

    /// Advances the clock by `ms`. Returns whether it should keep running.
    pub fn tick(&self, ms: f64) -> bool {
        if !self.playing.get_untracked() {
            return false;
        }
        let ms = if ms.is_finite() { ms.clamp(0.0, 250.0) } else { 0.0 };
        let step = self.step.get_untracked();
        let n = self.hops_in(step) as f64;
        let p = self.progress.get_untracked() + ms / BEAT_MS;
        if p >= n + HOLD_BEATS {
            if self.continuous.get_untracked() && step + 1 < self.steps() {
                self.step.set(step + 1);
                self.progress.set(0.0);
                return true;
            }
            self.progress.set(n);
            self.playing.set(false);
            return false;
        }
        self.progress.set(p);
        true
    }

    /// Applies a URL hash.
    pub fn open_link(&self, hash: &str) {
        let parsed = self.walkthrough.with_value(|w| link::parse(hash, &[(w.id.as_str(), w.steps.len())]));
        if !parsed.problems.is_empty() {
            self.notices.set(parsed.problems);
        }
        let l = parsed.link;
        match l.hop {
            None => {
                self.playing.set(false);
                self.go_to(l.step);
            }
            Some(pos) => {
                self.playing.set(false);
                self.step.set(l.step);
                let n = self.hops_in(l.step);
                self.progress.set(match pos {
                    HopPos::End => n,
                    HopPos::After(k) => k.min(n),
                } as f64);
            }
        }
    }

    pub fn link_hash(&self) -> String {
        let id = self.walkthrough.with_value(|w| w.id.clone());
        link::format(&Link { walkthrough: id, step: self.step.get(), hop: None })
    }
}
#[allow(dead_code)]
fn _assert_send() {
    fn s<T: Send + Sync>() {}
    s::<Player>();
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubehops_core::walkthrough::{build, Options};
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn player(reduced: bool) -> Player {
        Player {
            walkthrough: StoredValue::new(build("nodeport-loadbalancer", Options::default()).expect("walkthrough")),
            step: RwSignal::new(0),
            progress: RwSignal::new(0.0),
            playing: RwSignal::new(false),
            continuous: RwSignal::new(false),
            reduced_motion: RwSignal::new(reduced),
            notices: RwSignal::new(Vec::new()),
        }
    }

    #[wasm_bindgen_test]
    fn play_runs_through_every_step_and_stops_at_the_end() {
        let p = player(false);
        p.toggle();
        let mut seen = vec![0];
        for _ in 0..10_000 {
            if !p.tick(100.0) {
                break;
            }
            if seen.last() != Some(&p.step.get_untracked()) {
                seen.push(p.step.get_untracked());
            }
        }
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert!(!p.playing.get_untracked());
        assert_eq!(p.progress.get_untracked(), p.hops_in(4) as f64);
        // Play at the very end starts over.
        p.toggle();
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (0, 0.0));
    }

    #[wasm_bindgen_test]
    fn a_chosen_step_plays_once_and_stops() {
        let p = player(false);
        p.go_to(1);
        assert!(p.playing.get_untracked());
        while p.tick(200.0) {}
        assert_eq!(p.step.get_untracked(), 1, "stays on the chosen step");
        assert_eq!(p.progress.get_untracked(), p.hops_in(1) as f64);
    }

    #[wasm_bindgen_test]
    fn reduced_motion_jumps_to_end_states() {
        let p = player(true);
        p.go_to(2);
        assert!(!p.playing.get_untracked());
        assert_eq!(p.progress.get_untracked(), p.hops_in(2) as f64);
        p.progress.set(2.6);
        assert_eq!(p.shown_progress(), 2.0, "no tweening between hops");
    }

    #[wasm_bindgen_test]
    fn links_open_steps_and_bad_links_leave_a_notice() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/4/end");
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (3, p.hops_in(3) as f64));
        assert!(!p.playing.get_untracked());
        p.open_link("#/nodeport-loadbalancer/77");
        assert_eq!(p.step.get_untracked(), 0);
        assert_eq!(p.notices.get_untracked().len(), 1);
        // Absurd clock input is clamped.
        p.toggle();
        p.tick(f64::NAN);
        p.tick(f64::INFINITY);
        assert!(p.progress.get_untracked().is_finite());
    }
}
