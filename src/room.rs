//! The page's shared state, in a room of its own: `Ctx`, what every
//! component reads (the player and what is derived from it: the layout,
//! the frame and its moment). Components fetch it from the context; none
//! keeps a copy of a signal in sync by hand.

use crate::player::Player;
use kubehops_core::scenarios::{Scenario, Step};
use kubehops_core::scene::camera::Viewport;
use kubehops_core::scene::layout::Detail;
use kubehops_core::scene::{frame, Frame, Layout, Moment};
use leptos::prelude::*;

/// Everything the components read: the player and what is derived from it.
#[derive(Clone, Copy)]
pub struct Ctx {
    pub player: Player,
    /// The animation's canvas as its observer last measured it (the
    /// frame's size and text floor): the canvas reports it here, and the
    /// level of detail follows it.
    pub viewport: RwSignal<Viewport>,
    /// Computed from the scenario's actors at the level of detail the
    /// canvas holds whole (`Detail::for_frame`); the same for every
    /// parameter value of one scenario, so the picture does not jump.
    pub layout: Memo<Layout>,
    pub frame: Memo<Frame>,
    /// The frame without its progress: what the panels read, so they are
    /// worked out again when a hop starts or ends, not on every frame of
    /// a flight (the canvas alone follows the token).
    pub moment: Memo<Moment>,
    /// 0 for the animation's canvas; n for the transcript's still picture
    /// of step n (its frame is that step's end).
    pub figure: usize,
}

impl Ctx {
    /// Runs `f` on the scenario.
    pub fn with_scenario<T>(&self, f: impl FnOnce(&Scenario) -> T) -> T {
        self.player.scenario.with(|s| f(s))
    }

    /// Runs `f` on the current step of the scenario.
    pub fn with_step<T>(&self, f: impl FnOnce(&Step) -> T) -> Option<T> {
        let s = self.moment.get().step;
        self.player.scenario.with(|sc| sc.steps.get(s).map(f))
    }
}

/// The frame's moment, as the panels read it (`Ctx::moment`).
pub fn moment_of(frame: Memo<Frame>) -> Memo<Moment> {
    Memo::new(move |_| frame.with(Frame::moment))
}

/// Derives the layout and the frame from the player, and provides them.
pub(crate) fn provide_ctx(player: Player) -> Ctx {
    let viewport = RwSignal::new(Viewport::new(960.0, 600.0));
    // The full picture, once per scenario: its extent decides the level,
    // and it is the layout where it fits.
    let full = Memo::new(move |_| player.scenario.with(|s| Layout::for_scenario(s)));
    let detail = Memo::new(move |_| full.with(|l| Detail::for_frame(l.world(), viewport.get())));
    let layout = Memo::new(move |_| match detail.get() {
        Detail::Full => full.get(),
        d => player.scenario.with(|s| Layout::for_scenario_at(s, d)),
    });
    let frame = Memo::new(move |_| {
        let (s, p) = (player.step.get(), player.shown_progress());
        player.scenario.with(|sc| frame(sc, s, p))
    });
    let ctx = Ctx { player, viewport, layout, frame, moment: moment_of(frame), figure: 0 };
    provide_context(ctx);
    ctx
}
