//! View state: which step is shown, how far its hops have played, and
//! whether the clock runs. This is all the UI keeps; everything drawn is
//! derived from it and the walkthrough.

use kubehops_core::link::{self, HopPos, Link};
use kubehops_core::scenarios::{build, Options, Walkthrough};
use leptos::prelude::*;

/// Milliseconds a hop takes at normal speed.
pub const BEAT_MS: f64 = 1100.0;
/// Beats to rest at the end of a step before continuous play moves on:
/// long enough to read the step's end state.
pub const HOLD_BEATS: f64 = 3.0;
/// The playback speeds offered: multiple of the normal speed, and its label.
/// (Labels are spelled out: formatting floats would add to the wasm.)
pub const SPEEDS: [(f64, &str); 4] = [(0.5, "0.5×"), (1.0, "1×"), (1.5, "1.5×"), (2.0, "2×")];

#[derive(Clone, Copy)]
pub struct Player {
    /// The walkthrough shown. It is replaced (not edited) when the random
    /// pick option changes; readers track it like any signal.
    pub walkthrough: RwSignal<Walkthrough>,
    /// `Some(seed)`: kube-proxy's random picks come from a generator seeded
    /// with it. `None`: the fixed picks that make the story repeat.
    pub seed: RwSignal<Option<u64>>,
    pub step: RwSignal<usize>,
    /// Beats since the step started; may run past the hop count while
    /// holding at the end.
    pub progress: RwSignal<f64>,
    pub playing: RwSignal<bool>,
    /// Play on into the next steps (Play), or stop at the step's end (a
    /// step chosen by Next, Previous or the indicator).
    pub continuous: RwSignal<bool>,
    pub reduced_motion: RwSignal<bool>,
    /// Playback speed, a multiple of the normal speed (one of `SPEEDS`).
    /// It changes only how fast progress runs, never what is drawn.
    pub speed: RwSignal<f64>,
    /// Problems found in the URL, shown once.
    pub notices: RwSignal<Vec<String>>,
}

impl Player {
    pub fn new(walkthrough: Walkthrough, seed: Option<u64>, reduced_motion: bool) -> Player {
        Player {
            walkthrough: RwSignal::new(walkthrough),
            seed: RwSignal::new(seed),
            step: RwSignal::new(0),
            progress: RwSignal::new(0.0),
            playing: RwSignal::new(false),
            continuous: RwSignal::new(false),
            reduced_motion: RwSignal::new(reduced_motion),
            speed: RwSignal::new(1.0),
            notices: RwSignal::new(Vec::new()),
        }
    }

    /// Number of steps; tracked, for views.
    pub fn steps(&self) -> usize {
        self.walkthrough.with(|w| w.steps.len())
    }

    /// Number of hops in `step`.
    #[cfg(test)]
    pub(crate) fn hops_in(&self, step: usize) -> usize {
        self.walkthrough.with(|w| w.steps.get(step).map_or(0, |s| s.hops.len()))
    }

    // The transitions read untracked: they run from event handlers and the
    // clock, and must not subscribe whatever reactive scope calls them.
    fn n_steps(&self) -> usize {
        self.walkthrough.with_untracked(|w| w.steps.len())
    }

    fn n_hops(&self, step: usize) -> usize {
        self.walkthrough.with_untracked(|w| w.steps.get(step).map_or(0, |s| s.hops.len()))
    }

    /// Rebuilds the walkthrough with other random picks. Returns false
    /// (and changes nothing) when the seed is already in use or the
    /// walkthrough cannot be built.
    fn rebuild(&self, seed: Option<u64>) -> bool {
        if self.seed.get_untracked() == seed {
            return false;
        }
        let id = self.walkthrough.with_untracked(|w| w.id.clone());
        let Some(w) = build(&id, Options { random_seed: seed }) else { return false };
        self.seed.set(seed);
        self.walkthrough.set(w);
        // A rebuilt walkthrough of the same id has the same steps; clamp anyway.
        let last = self.n_steps().saturating_sub(1);
        if self.step.get_untracked() > last {
            self.step.set(last);
        }
        true
    }

    /// Switches random picks on (`Some(seed)`) or off (`None`). The
    /// current step is kept and plays again from its start.
    pub fn set_seed(&self, seed: Option<u64>) {
        if self.rebuild(seed) {
            self.go_to(self.step.get_untracked());
        }
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
        let step = step.min(self.n_steps().saturating_sub(1));
        self.step.set(step);
        if self.reduced_motion.get_untracked() && !self.playing.get_untracked() {
            self.progress.set(self.n_hops(step) as f64);
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
        if s + 1 < self.n_steps() {
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
        let (s, n) = (self.step.get_untracked(), self.n_hops(self.step.get_untracked()));
        if self.progress.get_untracked() >= n as f64 {
            // The step has finished: Play moves on, or starts over at the end.
            if s + 1 < self.n_steps() {
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

    /// Pauses and shows the end of the current step.
    pub fn show_end(&self) {
        self.playing.set(false);
        self.progress.set(self.n_hops(self.step.get_untracked()) as f64);
    }

    /// Pauses and shows the next hop at its end: the one in flight, or the
    /// one after the hop shown. After a step's last hop comes the first
    /// hop of the next step.
    pub fn next_hop(&self) {
        self.playing.set(false);
        let (s, p) = (self.step.get_untracked(), self.progress.get_untracked());
        let n = self.n_hops(s);
        let done = if p.is_finite() { p.max(0.0).floor() as usize } else { 0 };
        if done < n {
            self.progress.set((done + 1) as f64);
        } else if s + 1 < self.n_steps() {
            self.step.set(s + 1);
            self.progress.set(self.n_hops(s + 1).min(1) as f64);
        } else {
            self.progress.set(n as f64);
        }
    }

    /// Pauses and shows the hop before the one shown (or in flight). Before
    /// a step's first hop comes the end of the previous step; the very
    /// first step goes back to its start.
    pub fn previous_hop(&self) {
        self.playing.set(false);
        let (s, p) = (self.step.get_untracked(), self.progress.get_untracked());
        let n = self.n_hops(s) as f64;
        let p = if p.is_finite() { p.clamp(0.0, n) } else { 0.0 };
        // A hop in flight counts as shown: go to the end of the one before.
        let target = p.ceil() - 1.0;
        if target >= 1.0 {
            self.progress.set(target);
        } else if s > 0 {
            self.step.set(s - 1);
            self.progress.set(self.n_hops(s - 1) as f64);
        } else {
            self.progress.set(0.0);
        }
    }

    /// Sets the playback speed; anything but a positive finite number
    /// leaves it as it is.
    pub fn set_speed(&self, speed: f64) {
        if speed.is_finite() && speed > 0.0 {
            self.speed.set(speed.clamp(0.1, 8.0));
        }
    }

    /// Advances the clock by `ms`. Returns whether it should keep running.
    pub fn tick(&self, ms: f64) -> bool {
        if !self.playing.get_untracked() {
            return false;
        }
        let ms = if ms.is_finite() { ms.clamp(0.0, 250.0) } else { 0.0 };
        let step = self.step.get_untracked();
        let n = self.n_hops(step) as f64;
        let p = self.progress.get_untracked() + ms * self.speed.get_untracked() / BEAT_MS;
        if p >= n + HOLD_BEATS {
            if self.continuous.get_untracked() && step + 1 < self.n_steps() {
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

    /// Applies a URL hash: `#/<walkthrough>/<step>[/<hop>][?seed=<n>]`.
    pub fn open_link(&self, hash: &str) {
        let parsed = self.walkthrough.with_untracked(|w| link::parse(hash, &[(w.id.as_str(), w.steps.len())]));
        let l = parsed.link;
        self.rebuild(l.seed);
        let step = l.step.min(self.n_steps().saturating_sub(1));
        let n = self.n_hops(step);
        let mut problems = parsed.problems;
        if let Some(HopPos::After(k)) = l.hop {
            if k > n {
                let hops = if n == 1 { "1 hop".to_string() } else { format!("{n} hops") };
                problems.push(format!("Hop {k} does not exist; step {} has {hops}. Showing its end.", step + 1));
            }
        }
        if !problems.is_empty() {
            self.notices.set(problems);
        }
        self.playing.set(false);
        match l.hop {
            None => self.go_to(step),
            Some(pos) => {
                self.step.set(step);
                self.progress.set(match pos {
                    HopPos::End => n,
                    HopPos::After(k) => k.min(n),
                } as f64);
            }
        }
    }

    /// The hash for what is shown; tracked. While playing it names the
    /// step (the link plays it); while paused also the hop position: `/N`
    /// after N hops, `/end` at the step's end. The seed comes last.
    pub fn link_hash(&self) -> String {
        let id = self.walkthrough.with(|w| w.id.clone());
        let step = self.step.get();
        let hop = if self.playing.get() {
            None
        } else {
            let n = self.walkthrough.with(|w| w.steps.get(step).map_or(0, |s| s.hops.len()));
            let p = self.progress.get();
            // A hop paused in flight is not finished: the link names the hops that are.
            let done = if p.is_finite() { (p.max(0.0).floor() as usize).min(n) } else { 0 };
            Some(if done == n && n > 0 { HopPos::End } else { HopPos::After(done) })
        };
        link::format(&Link { walkthrough: id, step, hop, seed: self.seed.get() })
    }
}

/// A new seed, different from `prev`, from whatever entropy the caller
/// has (the clock). Seeds stay short enough to read and type: 1 to 99999.
pub fn next_seed(entropy: u64, prev: Option<u64>) -> u64 {
    // splitmix64
    let mut x = entropy ^ prev.unwrap_or(0).rotate_left(17);
    let mut mix = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    loop {
        let s = mix() % 99_999 + 1;
        if Some(s) != prev {
            return s;
        }
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
    use kubehops_core::scenarios::{build, Options};
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn player(reduced: bool) -> Player {
        Player::new(build("nodeport-loadbalancer", Options::default()).expect("walkthrough"), None, reduced)
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

    #[wasm_bindgen_test]
    fn a_seed_rebuilds_the_walkthrough_and_replays_the_current_step() {
        let p = player(false);
        let fixed = p.walkthrough.get_untracked();
        p.open_link("#/nodeport-loadbalancer/2/end");
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (1, p.hops_in(1) as f64));
        // Seed 42 makes Node-2's rules pick the other Pod in step 2.
        p.set_seed(Some(42));
        assert_eq!(p.seed.get_untracked(), Some(42));
        assert_eq!(p.step.get_untracked(), 1, "the step is kept");
        assert_eq!(p.progress.get_untracked(), 0.0, "and plays again");
        assert!(p.playing.get_untracked());
        assert_ne!(p.walkthrough.get_untracked(), fixed, "seed 42 picks differently");
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/2?seed=42");
        // The same seed again changes nothing.
        p.progress.set(3.0);
        p.set_seed(Some(42));
        assert_eq!(p.progress.get_untracked(), 3.0);
        // Off: the fixed picks are back, exactly.
        p.set_seed(None);
        assert_eq!(p.walkthrough.get_untracked(), fixed);
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/2");
    }

    #[wasm_bindgen_test]
    fn links_carry_the_seed_and_bad_seeds_leave_a_notice() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/3/end?seed=42");
        assert_eq!(p.seed.get_untracked(), Some(42));
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (2, p.hops_in(2) as f64));
        assert!(p.notices.get_untracked().is_empty(), "{:?}", p.notices.get_untracked());
        for bad in ["#/nodeport-loadbalancer/3?seed=abc", "#/nodeport-loadbalancer/3?seed=", "#/nodeport-loadbalancer/3?seed=-1", "#/nodeport-loadbalancer/3?seed=99999999999999999999999", "#/nodeport-loadbalancer/3?seed=+4"] {
            p.notices.set(Vec::new());
            p.open_link(bad);
            assert_eq!(p.seed.get_untracked(), None, "{bad}");
            assert_eq!(p.step.get_untracked(), 2, "{bad}: the step still opens");
            let n = p.notices.get_untracked();
            assert!(n.len() == 1 && n[0].contains("seed"), "{bad}: {n:?}");
        }
        // Without a suffix the fixed picks are used.
        p.open_link("#/nodeport-loadbalancer/4?seed=7");
        p.open_link("#/nodeport-loadbalancer/4");
        assert_eq!(p.seed.get_untracked(), None);
        // Nonsense after `?` never panics and is reported.
        p.notices.set(Vec::new());
        p.open_link("#?&&=&seed=5&x=\u{0}?/9");
        assert_eq!(p.seed.get_untracked(), Some(5));
        assert_eq!(p.notices.get_untracked().len(), 1);
    }

    #[wasm_bindgen_test]
    fn hop_keys_step_one_hop_and_cross_steps() {
        let p = player(false);
        p.toggle();
        p.tick(200.0);
        // A hop in flight: next shows it at its end, and pauses.
        p.next_hop();
        assert!(!p.playing.get_untracked());
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (0, 1.0));
        p.next_hop();
        assert_eq!(p.progress.get_untracked(), 2.0);
        p.previous_hop();
        assert_eq!(p.progress.get_untracked(), 1.0);
        // Before the first hop of step 1 there is only its start.
        p.previous_hop();
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (0, 0.0));
        // From the end of a step, next is the first hop of the next one…
        p.show_end();
        p.next_hop();
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (1, 1.0));
        // …and back again is the end of the previous one.
        p.previous_hop();
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (0, p.hops_in(0) as f64));
        // Mid-flight, previous goes to the end of the hop before it.
        p.step.set(1);
        p.progress.set(2.4);
        p.previous_hop();
        assert_eq!(p.progress.get_untracked(), 2.0);
        // The very last position stays put.
        let last = p.steps() - 1;
        p.step.set(last);
        p.show_end();
        p.next_hop();
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (last, p.hops_in(last) as f64));
    }

    #[wasm_bindgen_test]
    fn the_link_names_the_hop_while_paused() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/4/3");
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (3, 3.0));
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/4/3");
        p.show_end();
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/4/end");
        // Paused in flight: the hops that are finished.
        p.progress.set(2.5);
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/4/2");
        p.progress.set(0.0);
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/4/0");
        // Playing: just the step, which a link plays.
        p.toggle();
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/4");
        // The seed comes last, and the link opens the same picture again.
        p.open_link("#/nodeport-loadbalancer/2/3?seed=42");
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/2/3?seed=42");
        let again = player(false);
        again.open_link(&p.link_hash());
        assert_eq!((again.step.get_untracked(), again.progress.get_untracked(), again.seed.get_untracked()), (1, 3.0, Some(42)));
    }

    #[wasm_bindgen_test]
    fn a_hop_past_the_end_shows_the_end_and_says_so() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/2/99");
        let n = p.hops_in(1);
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (1, n as f64));
        assert_eq!(p.notices.get_untracked(), [format!("Hop 99 does not exist; step 2 has {n} hops. Showing its end.")]);
        // The last hop itself is fine.
        p.notices.set(Vec::new());
        p.open_link(&format!("#/nodeport-loadbalancer/2/{n}"));
        assert!(p.notices.get_untracked().is_empty());
    }

    #[wasm_bindgen_test]
    fn speed_scales_the_clock_only() {
        let (slow, fast) = (player(false), player(false));
        slow.set_speed(0.5);
        fast.set_speed(2.0);
        for p in [&slow, &fast] {
            p.go_to(1);
            p.tick(200.0);
        }
        let (a, b) = (slow.progress.get_untracked(), fast.progress.get_untracked());
        assert!((b / a - 4.0).abs() < 1e-9, "{a} {b}");
        // Nonsense is ignored.
        fast.set_speed(f64::NAN);
        fast.set_speed(0.0);
        fast.set_speed(-1.0);
        assert_eq!(fast.speed.get_untracked(), 2.0);
        // A finished step holds for HOLD_BEATS before continuous play moves on.
        let p = player(false);
        p.toggle();
        let n = p.hops_in(0) as f64;
        p.progress.set(n);
        let mut held = 0.0;
        while p.step.get_untracked() == 0 && p.tick(100.0) {
            held += 100.0;
        }
        assert!((held / BEAT_MS - HOLD_BEATS).abs() < 0.1, "held {held} ms");
    }

    #[wasm_bindgen_test]
    fn new_seeds_differ_and_stay_short() {
        let mut prev = None;
        for e in 0..200u64 {
            let s = next_seed(e, prev);
            assert!((1..=99_999).contains(&s));
            assert_ne!(Some(s), prev);
            prev = Some(s);
        }
    }
}
