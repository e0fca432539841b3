//! View state: which scenario and parameters are shown, which step, how
//! far its hops have played, and whether the clock runs. This is all the
//! UI keeps; the scenario itself is derived from (id, parameters) by the
//! core, and everything drawn is derived from it.
//!
//! The page builds no scenario itself: its wasm has none of the model's
//! builders. A scenario comes from the opening data the page fetched at
//! start-up (`crate::opening`), or from the worker (`crate::worker`),
//! which builds one for each new (id, parameters). While the worker
//! builds, the page keeps showing what it showed, and a link to another
//! scenario or state is applied when its scenario is here
//! (`Player::when_built`).

use kubehops_core::embed::Display;
use kubehops_core::link::{self, HopPos, Link, Mode};
use kubehops_core::scenarios::{self, Params, Scenario, Value};
use kubehops_core::worker::{Answer, Built, Job, Kind, Paste, Refusal, Reply, MAX_PASTE_BYTES};
use leptos::prelude::*;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// Milliseconds a hop takes at normal speed.
pub const BEAT_MS: f64 = 1100.0;
/// Beats to rest at the end of a step before continuous play moves on:
/// long enough to read the step's end state.
pub const HOLD_BEATS: f64 = 3.0;
/// The playback speeds offered: multiple of the normal speed, and its label.
/// (Labels are spelled out: formatting floats would add to the wasm.)
pub const SPEEDS: [(f64, &str); 4] = [(0.5, "0.5×"), (1.0, "1×"), (1.5, "1.5×"), (2.0, "2×")];

/// The first scenario of the catalog, shown when a link names none.
fn default_id() -> String {
    scenarios::CATALOG.first().map_or_else(String::new, |e| e.id.to_string())
}

/// A scenario handed to the page for (id, parameters): the worker's build,
/// or the opening data read at start-up. The scenario is shared, so the
/// memos that hand it on never copy it.
#[derive(Clone, Debug)]
pub struct Answered {
    pub id: String,
    pub params: Params,
    /// `None` while a typed Service is refused (or the scenario is
    /// unknown): the page keeps the last scenario it showed.
    pub scenario: Option<Arc<Scenario>>,
    pub refusal: Option<Refusal>,
}

impl Answered {
    /// The worker's answer to a build.
    pub fn from_worker(b: Built) -> Answered {
        Answered { id: b.id, params: b.params, scenario: b.scenario.map(Arc::new), refusal: b.refusal }
    }

    /// A scenario read or built for (id, parameters).
    pub fn of(id: &str, params: &Params, s: Scenario) -> Answered {
        Answered { id: id.to_string(), params: params.clone(), scenario: Some(Arc::new(s)), refusal: None }
    }

    pub fn is_for(&self, id: &str, params: &Params) -> bool {
        self.id == id && &self.params == params
    }

    /// The number of steps it shows, when it shows a scenario.
    fn steps(&self) -> Option<usize> {
        self.scenario.as_ref().map(|s| s.steps.len())
    }
}

/// Builds a scenario in the page's own thread: only the player's tests
/// set it (their binary has the builders; the app's wasm has none).
pub type BuildHere = fn(&str, &Params) -> Option<Scenario>;

thread_local! {
    /// What start-up was handed for the link it opened (the opening data,
    /// or the worker's first answer): the player starts from it.
    static OPENED: RefCell<Option<Answered>> = const { RefCell::new(None) };
    static BUILD_HERE: Cell<Option<BuildHere>> = const { Cell::new(None) };
    /// What waits for the scenario the worker was last asked for
    /// (`Player::when_built`).
    static WAITING: RefCell<Option<Waiting>> = const { RefCell::new(None) };
    /// The last scenario asked of the worker: it is not asked again while
    /// it is on its way (only the newest answer is taken, so asking again
    /// would put it off).
    static ASKED: RefCell<Option<(String, Params)>> = const { RefCell::new(None) };
}

/// A wait for a scenario: its (id, parameters), what to do once it is
/// here, and what to do if it never comes (a newer wait or build took its
/// place, or the worker stopped).
struct Waiting {
    id: String,
    params: Params,
    ready: Box<dyn FnOnce()>,
    dropped: Box<dyn FnOnce()>,
}

/// Ends the wait there is, if any, without its scenario.
fn drop_waiting() {
    if let Some(w) = WAITING.with(|w| w.borrow_mut().take()) {
        (w.dropped)();
    }
}

/// Hands start-up's scenario to the player the app makes next.
pub fn open_with(a: Answered) {
    OPENED.with(|o| *o.borrow_mut() = Some(a));
}

/// For tests: builds scenarios on the page's thread with `f`.
#[cfg(test)]
pub fn build_here(f: BuildHere) {
    BUILD_HERE.with(|b| b.set(Some(f)));
}

/// What the app shows for a scenario and its parameters: the scenario,
/// or why the typed Service is not shown; `scenario` is `None` while the
/// worker builds (or refused the typed Service).
#[derive(Clone, Debug)]
struct Shown {
    scenario: Option<Arc<Scenario>>,
    refusal: Option<Refusal>,
}

/// The same when it shows the same build: scenarios are told apart by
/// identity, as each answer of the worker (or paste read) is an `Arc` of
/// its own. Comparing them field by field would cost a walk of every
/// step on each change of parameters, and the comparison's code (9 KB of
/// wasm) on the page.
impl PartialEq for Shown {
    fn eq(&self, other: &Shown) -> bool {
        let same = match (&self.scenario, &other.scenario) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        same && self.refusal == other.refusal
    }
}

/// Whether these parameters carry a typed Service for scenario `id`.
fn typed(id: &str, p: &Params) -> bool {
    scenarios::about(id).is_some_and(|e| e.editor.is_some() && p.normalized(&(e.params)()).manifest().is_some())
}

/// The scenario for (id, parameters): "Your cluster" with a cluster read
/// is the worker's build of it; any other is the worker's newest answer
/// when it is for these very parameters, else nothing yet.
fn shown_for(id: &str, params: &Params, cluster: &crate::cluster::ClusterRead, answer: &Option<Arc<Answered>>) -> Shown {
    if let (true, Some(Ok(c))) = (id == scenarios::your_cluster::ID, cluster) {
        return Shown { scenario: Some(c.scenario.clone()), refusal: None };
    }
    match answer {
        Some(a) if a.is_for(id, params) => Shown { scenario: a.scenario.clone(), refusal: a.refusal.clone() },
        _ => match BUILD_HERE.with(Cell::get).and_then(|f| f(id, params)) {
            Some(s) => Shown { scenario: Some(Arc::new(s)), refusal: None },
            None => Shown { scenario: None, refusal: None },
        },
    }
}

/// Runs `f` inside a performance measure named `name`, for the e2e
/// metrics to read (`kh-opening`).
pub fn measured<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let perf = web_sys::window().and_then(|w| w.performance());
    let start = format!("{name}-start");
    if let Some(p) = &perf {
        let _ = p.mark(&start);
    }
    let out = f();
    if let Some(p) = &perf {
        let _ = p.measure_with_start_mark(name, &start);
    }
    out
}

/// The scenario and parameters a link names (or the first scenario's,
/// for a link that names none).
pub fn named_by(hash: &str) -> (String, Params) {
    let l = link::parse_with(hash, scenarios::CATALOG, |_, _| usize::MAX).link;
    if l.scenario.is_empty() {
        (default_id(), Params::default())
    } else {
        (l.scenario, l.params)
    }
}

/// A scenario to show when there is none at all: start-up could get
/// none for the link (its worker did not start), so the page says so over
/// an empty picture rather than showing nothing.
fn nothing(id: &str, params: &Params) -> Arc<Scenario> {
    let title = scenarios::about(id).map_or("KubeHops", |e| e.title);
    Arc::new(Scenario { id: id.to_string(), title: title.to_string(), params: params.clone(), actors: Vec::new(), steps: Vec::new(), demos: Vec::new(), comparison: None, what_if: None, actions: Vec::new() })
}

/// What the page says when the worker cannot build what was asked: with
/// nothing shown yet (start-up), or with the last scenario kept.
fn failed_build(why: &str, nothing_shown: bool) -> String {
    if nothing_shown {
        format!("kubehops's model could not start: {why}. Reload the page to try again.")
    } else {
        format!("kubehops's model stopped: {why}. What was shown before stays; choose again, or reload the page, to retry.")
    }
}

/// Whether the scenario memo's new value is another scenario: another
/// build is, even when equal field by field (see [`Shown`]).
fn other_scenario(old: Option<&Arc<Scenario>>, new: Option<&Arc<Scenario>>) -> bool {
    match (old, new) {
        (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
        _ => true,
    }
}

#[derive(Clone, Copy)]
pub struct Player {
    pub scenario_id: RwSignal<String>,
    /// The parameters as the user set them; the scenario normalizes them.
    pub params: RwSignal<Params>,
    /// The scenario shown: the one built, or, while the worker builds or
    /// a typed Service is refused, the last one shown (the canvas keeps the
    /// last valid state).
    pub scenario: Memo<Arc<Scenario>>,
    /// Why the typed Service is not shown, if it is not.
    pub refusal: Memo<Option<Refusal>>,
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
    /// How the page is shown (embedded, theme, …), from the link; kept in
    /// the link the page writes back.
    pub display: RwSignal<Display>,
    /// The animation, or the transcript (`view=transcript`).
    pub view: RwSignal<Mode>,
    /// The text pasted (or loaded from a file) on "Your cluster", and the
    /// name errors give it (`STDIN`, or the file's name). Never in the link.
    pub pasted: RwSignal<String>,
    pub pasted_name: RwSignal<String>,
    /// What the reader made of it: the worker's newest answer
    /// (`crate::worker`), with "Your cluster" built for the parameters.
    pub cluster: RwSignal<crate::cluster::ClusterRead>,
    /// Where the worker's reading of a paste stands.
    pub reader: RwSignal<crate::worker::Status>,
    /// Where the worker's building of a scenario stands.
    pub builder: RwSignal<crate::worker::Status>,
    /// Whether the request in flight is a rebuild for new parameters (the
    /// step then plays again when its answer comes), not a new paste.
    rebuilding: StoredValue<bool>,
    /// The worker's newest scenario (or start-up's).
    answer: RwSignal<Option<Arc<Answered>>>,
    /// The worker's newest build of a scenario in its other kube-proxy
    /// mode (the transcript's "Both kube-proxy modes").
    pub other_mode: RwSignal<Option<Arc<Answered>>>,
    /// The step to play again when the scenario for new parameters comes
    /// (a typed Service only if it is admitted).
    replay: StoredValue<Option<usize>>,
    /// Whether the scenario for the scenario and parameters set is still
    /// to come from the worker.
    pub pending: Memo<bool>,
    /// Whether the typed Service is still being read and admitted.
    pub checking: Memo<bool>,
    /// Whether a link waits for its scenario (`when_built`).
    waiting: RwSignal<bool>,
    /// What the controls asked for and is not applied yet (`choose`): the
    /// controls show it at once, the page is `aria-busy` until it is applied.
    pub chosen: RwSignal<Vec<Chosen>>,
    /// How many links and commands have named a state (`when_built_or`):
    /// the task that applies a choice made before the newest does nothing.
    links: StoredValue<u64>,
}

/// A change asked for by a control, applied a frame later (`Player::choose`).
#[derive(Clone, Debug, PartialEq)]
pub enum Chosen {
    /// One parameter, as `Player::set_param` takes it.
    Param(String, Value),
    /// A demo's presets, as `Player::apply_demo` takes it.
    Demo(String),
}

impl Player {
    pub fn new(id: &str, params: Params, reduced_motion: bool) -> Player {
        let scenario_id = RwSignal::new(id.to_string());
        let params = RwSignal::new(params);
        let pasted = RwSignal::new(String::new());
        let pasted_name = RwSignal::new("STDIN".to_string());
        let cluster = RwSignal::new(None);
        let answer: RwSignal<Option<Arc<Answered>>> = RwSignal::new(OPENED.with(|o| o.borrow_mut().take()).map(Arc::new));
        // What is shown for (id, parameters), with a typed Service's
        // refusal. Only "Your cluster" depends on the paste.
        let shown = Memo::new(move |_| {
            let id = scenario_id.get();
            let c = if id == scenarios::your_cluster::ID { cluster.get() } else { None };
            params.with(|p| answer.with(|a| shown_for(&id, p, &c, a)))
        });
        let pending = Memo::new(move |_| shown.with(|s| s.scenario.is_none() && s.refusal.is_none()));
        let checking = Memo::new(move |_| pending.get() && params.with(|p| typed(&scenario_id.get(), p)));
        let scenario = Memo::new_with_compare(
            move |prev: Option<&Arc<Scenario>>| {
                shown.with(|b| match (&b.scenario, prev) {
                    (Some(s), _) => s.clone(),
                    (None, Some(last)) => last.clone(),
                    (None, None) => params.with_untracked(|p| nothing(&scenario_id.get_untracked(), p)),
                })
            },
            other_scenario,
        );
        let refusal = Memo::new(move |_| shown.with(|b| b.refusal.clone()));
        Player {
            scenario_id,
            params,
            scenario,
            refusal,
            step: RwSignal::new(0),
            progress: RwSignal::new(0.0),
            playing: RwSignal::new(false),
            continuous: RwSignal::new(false),
            reduced_motion: RwSignal::new(reduced_motion),
            speed: RwSignal::new(1.0),
            notices: RwSignal::new(Vec::new()),
            display: RwSignal::new(Display::default()),
            view: RwSignal::new(Mode::Animation),
            pasted,
            pasted_name,
            cluster,
            reader: RwSignal::new(crate::worker::Status::Idle),
            builder: RwSignal::new(crate::worker::Status::Idle),
            rebuilding: StoredValue::new(false),
            answer,
            other_mode: RwSignal::new(None),
            replay: StoredValue::new(None),
            pending,
            checking,
            waiting: RwSignal::new(false),
            chosen: RwSignal::new(Vec::new()),
            links: StoredValue::new(0),
        }
    }

    /// Hands work to the worker (`crate::worker`): each new paste, each
    /// change of parameters on "Your cluster" once a cluster is read, and
    /// each other (id, parameters) with no scenario yet, a typed Service
    /// included; its newest answers become `cluster` and `answer`. Empty text clears what was read, with no worker. (The app
    /// calls it once, under its owner; the player's own tests have no
    /// executor for effects.)
    pub fn use_worker(self) {
        let p = self;
        Effect::new(move |_| {
            let text = p.pasted.get();
            if text.trim().is_empty() {
                crate::worker::cancel(Kind::Cluster, p.reader);
                p.cluster.set(None);
                return;
            }
            if text.len() > MAX_PASTE_BYTES {
                // Refused at once, as the reader would refuse it, with no
                // megabytes sent to the worker to be refused there.
                crate::worker::cancel(Kind::Cluster, p.reader);
                p.cluster.set(Some(Err(format!("error: {}", kubehops_core::worker::too_large(text.len())))));
                return;
            }
            p.rebuilding.set_value(false);
            let paste = Paste { name: p.pasted_name.get_untracked(), text };
            p.send(Job::Cluster { paste: Some(paste), params: p.params.get_untracked() });
        });
        Effect::new(move |first: Option<()>| {
            let params = p.params.get();
            let here = p.scenario_id.get() == scenarios::your_cluster::ID;
            if first.is_none() || !here || !p.cluster.with_untracked(|c| matches!(c, Some(Ok(_)))) {
                return;
            }
            p.rebuilding.set_value(true);
            p.send(Job::Cluster { paste: None, params });
        });
        // Each new (id, parameters) with nothing to show yet is built (and
        // each time nothing is there to show again: a cleared paste on
        // "Your cluster").
        Effect::new(move |_| {
            let (id, params) = (p.scenario_id.get(), p.params.get());
            if p.pending.get() {
                p.request(id, params);
            }
        });
        // A scenario that cannot come (the worker stopped while one was
        // asked for) is said once, with what is shown instead. A worker
        // that fails while nothing waits for it is started again by the
        // next request, which says so if it fails too.
        Effect::new(move |_| {
            if let crate::worker::Status::Failed(why) = p.builder.get() {
                if p.pending.get_untracked() || p.waiting.get_untracked() {
                    p.notices.set(vec![failed_build(&why, p.n_steps() == 0)]);
                    p.build_failed();
                }
            }
        });
        // The worker is started once the page is shown, so the first
        // change of parameters does not wait for its wasm.
        crate::stages::after_shown(move || crate::worker::warm(p.builder));
    }

    fn send(self, job: Job) {
        let status = if job.kind() == Kind::Cluster { self.reader } else { self.builder };
        crate::worker::send(job, status, move |r| self.take_reply(r));
    }

    /// Asks the worker for scenario `id` with `params`, unless that is
    /// what it is building now.
    fn request(self, id: String, params: Params) {
        let asked = ASKED.with(|a| a.borrow().as_ref().is_some_and(|(i, p)| *i == id && *p == params));
        if asked && crate::worker::in_flight(Kind::Build) {
            return;
        }
        ASKED.with(|a| *a.borrow_mut() = Some((id.clone(), params.clone())));
        self.send(Job::Build { id, params });
    }

    /// Asks the worker for scenario `id` with `params` in the other
    /// kube-proxy mode, unless its newest answer is that one.
    pub fn request_other_mode(self, id: String, params: Params) {
        if !self.other_mode.with_untracked(|o| o.as_ref().is_some_and(|a| a.is_for(&id, &params))) {
            self.send(Job::OtherMode { id, params });
        }
    }

    /// The number of steps of (id, parameters), when the page has its
    /// scenario: the one shown, or the worker's newest answer.
    pub(crate) fn known_steps(&self, id: &str, p: &Params) -> Option<usize> {
        let shown = !self.pending.get_untracked() && self.scenario_id.with_untracked(|i| i == id) && self.params.with_untracked(|q| q == p);
        if shown {
            return Some(self.n_steps());
        }
        if let Some(n) = self.answer.with_untracked(|a| a.as_ref().filter(|a| a.is_for(id, p)).map(|a| a.steps())) {
            // A refused typed Service has no steps of its own to count:
            // its step is taken as asked, and clamped to what is shown.
            return Some(n.unwrap_or(usize::MAX));
        }
        BUILD_HERE.with(Cell::get).and_then(|f| f(id, p)).map(|s| s.steps.len())
    }

    /// Runs `f` once the page has the scenario for (id, parameters): at
    /// once if it has, else when the worker's answer comes. Only the
    /// newest wait is kept: a later link or command replaces an earlier.
    pub fn when_built(self, id: String, params: Params, f: impl FnOnce() + 'static) {
        self.when_built_or(id, params, f, || {});
    }

    /// [`Player::when_built`], with what to do if the scenario never comes
    /// for this wait: a newer wait or build takes its place, or the worker
    /// stops.
    pub fn when_built_or(self, id: String, params: Params, ready: impl FnOnce() + 'static, dropped: impl FnOnce() + 'static) {
        drop_waiting();
        // A link or command names the whole state, so it overtakes what
        // the controls chose before it and is not applied yet (`choose`),
        // and a step left to play again for earlier parameters. Applied
        // after it, while its scenario is still being built, the choice
        // asked the worker for the old scenario again; the worker answers
        // only the newest request, so the link's wait was dropped and the
        // link never opened (a reader's #/your-cluster/1 went back to the
        // demo clicked just before: monkey.mjs seed 3301, action 154).
        if self.chosen.with_untracked(|c| !c.is_empty()) {
            self.chosen.set(Vec::new());
        }
        self.links.update_value(|n| *n += 1);
        self.replay.set_value(None);
        if self.known_steps(&id, &params).is_some() {
            self.waiting.set(false);
            ready();
            return;
        }
        let w = Waiting { id: id.clone(), params: params.clone(), ready: Box::new(ready), dropped: Box::new(dropped) };
        WAITING.with(|slot| *slot.borrow_mut() = Some(w));
        self.waiting.set(true);
        self.request(id, params);
    }

    /// Whether what is shown is about to change: a control's choice not
    /// yet applied (`choose`), or a scenario the worker is building. The
    /// page is `aria-busy` while it is.
    pub fn busy(&self) -> bool {
        let building = !matches!(self.builder.get(), crate::worker::Status::Failed(_));
        self.chosen.with(|c| !c.is_empty()) || (building && (self.waiting.get() || self.pending.get()))
    }

    /// The worker stopped while a scenario was asked of it: what waited
    /// for it is dropped, and the parameters go back to those of the
    /// scenario shown (its controls show the truth, and choosing again
    /// asks again).
    fn build_failed(&self) {
        drop_waiting();
        self.waiting.set(false);
        self.replay.set_value(None);
        let back = self.answer.with_untracked(|a| {
            a.as_ref().filter(|a| self.scenario.with_untracked(|s| a.scenario.as_ref().is_some_and(|x| Arc::ptr_eq(x, s)))).map(|a| (a.id.clone(), a.params.clone()))
        });
        if let Some((id, params)) = back {
            if self.scenario_id.with_untracked(|i| *i != id) {
                self.scenario_id.set(id);
            }
            if self.params.with_untracked(|p| *p != params) {
                self.params.set(params);
            }
        }
    }

    /// The worker's scenario is here: what waited for it runs, or the step
    /// is played again for the new parameters.
    fn take_built(&self, a: Answered) {
        let admitted = a.scenario.is_some();
        // The worker answers only the newest request: an answer for other
        // parameters than the wait's means the wait was overtaken.
        let waiting = match WAITING.with(|w| w.borrow_mut().take()) {
            Some(w) if a.is_for(&w.id, &w.params) => Some(w.ready),
            Some(w) => {
                (w.dropped)();
                None
            }
            None => None,
        };
        self.waiting.set(false);
        self.answer.set(Some(Arc::new(a)));
        if let Some(f) = waiting {
            f();
            return;
        }
        self.clamp_step();
        if let Some(step) = self.replay.get_value().filter(|_| admitted && !self.pending.get_untracked()) {
            self.replay.set_value(None);
            self.go_to(step);
        }
    }

    /// After the parameters changed: the step plays again now if the
    /// scenario for them is here, else once the worker sends it.
    fn replay_step(&self, step: usize) {
        if self.pending.get_untracked() {
            self.playing.set(false);
            self.replay.set_value(Some(step));
        } else {
            self.replay.set_value(None);
            self.clamp_step();
            self.go_to(step);
        }
    }

    /// The worker's answer. A cluster: what was read, and the scenario
    /// built; a rebuild for new parameters plays the step again, as a
    /// change of parameters does on the other scenarios. A typed Service:
    /// admitted, it plays the current step again, as typing did when it
    /// was built on the page; refused, nothing shown changes.
    fn take_reply(&self, r: Reply) {
        match r.answer {
            Answer::Cluster(c) => {
                self.cluster.set(c.map(|o| o.map(|c| Arc::new(c.into()))));
                self.clamp_step();
                if self.rebuilding.get_value() {
                    self.go_to(self.step.get_untracked());
                }
            }
            Answer::Built(b) => self.take_built(Answered::from_worker(b)),
            Answer::OtherMode(b) => self.other_mode.set(Some(Arc::new(Answered::from_worker(b)))),
            Answer::Unreadable(_) => {}
        }
    }

    /// Number of steps; tracked, for views.
    pub fn steps(&self) -> usize {
        self.scenario.with(|s| s.steps.len())
    }

    /// Whether no step has a hop to play (Your cluster before a paste):
    /// then Play, the steps and their keys do nothing, and say so by
    /// being disabled.
    pub fn nothing_to_play(&self) -> bool {
        self.scenario.with(|s| s.steps.iter().all(|st| st.hops.is_empty()))
    }

    // The transitions read untracked: they run from event handlers and the
    // clock, and must not subscribe whatever reactive scope calls them.
    fn n_steps(&self) -> usize {
        self.scenario.with_untracked(|s| s.steps.len())
    }

    fn n_hops(&self, step: usize) -> usize {
        self.scenario.with_untracked(|s| s.steps.get(step).map_or(0, |st| st.hops.len()))
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
        if untrack(|| self.nothing_to_play()) {
            self.playing.set(false);
            self.progress.set(0.0);
        } else if self.reduced_motion.get_untracked() && !self.playing.get_untracked() {
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
        self.playing.set(!untrack(|| self.nothing_to_play()));
    }

    pub fn toggle(&self) {
        if self.playing.get_untracked() {
            self.playing.set(false);
            return;
        }
        if untrack(|| self.nothing_to_play()) {
            return;
        }
        let (s, n) = (self.step.get_untracked(), self.n_hops(self.step.get_untracked()));
        if self.progress.get_untracked() >= n as f64 {
            // The step has finished: Play moves on, or starts over at the end.
            self.step.set(if s + 1 < self.n_steps() { s + 1 } else { 0 });
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

    /// Keeps the step in range after the scenario was rebuilt.
    fn clamp_step(&self) {
        let last = self.n_steps().saturating_sub(1);
        if self.step.get_untracked() > last {
            self.step.set(last);
        }
    }

    /// Takes a control's choice. The control shows it at once (it reads
    /// `shown`) and the choice is applied in a task after the next
    /// frame: the click is answered within a frame, and the rebuild and the
    /// redraw of the page come after it, in a task of their own. Choices
    /// made before then are applied together, in order; a scenario left,
    /// or a link or command come (`when_built_or`), in the meantime drops
    /// them.
    pub fn choose(&self, c: Chosen) {
        let first = self.chosen.with_untracked(Vec::is_empty);
        self.chosen.update(|cs| cs.push(c));
        if first {
            let (p, id, links) = (*self, self.scenario_id.get_untracked(), self.links.get_value());
            crate::stages::after_paint(move || p.apply_chosen(&id, links));
        }
    }

    /// Applies what was chosen (see `choose`), if the page still shows
    /// scenario `id` and no link came since the first choice (`links`):
    /// a link drops the choices made before it, and what is chosen after
    /// it is applied by a task of its own.
    fn apply_chosen(&self, id: &str, links: u64) {
        if self.links.try_get_value() != Some(links) {
            return;
        }
        let Some(cs) = self.chosen.try_update(std::mem::take) else { return };
        if self.scenario_id.with_untracked(|i| i != id) {
            return;
        }
        for c in cs {
            match c {
                Chosen::Param(k, v) => self.set_param(&k, v),
                Chosen::Demo(d) => self.apply_demo(&d),
            }
        }
    }

    /// Runs `f` on the parameters the controls show: the scenario's, with
    /// what was chosen and is not applied yet (`choose`) put in, in order.
    pub fn shown<T>(&self, f: impl FnOnce(&Params) -> T) -> T {
        // While the worker builds, the parameters set (as the scenario
        // will normalize them), not the last scenario's.
        let mut ps = if self.pending.get() {
            let id = self.scenario_id.get();
            self.params.with(|p| scenarios::about(&id).map_or_else(|| p.clone(), |e| p.normalized(&(e.params)())))
        } else {
            self.scenario.with(|s| s.params.clone())
        };
        self.chosen.with(|cs| {
            for c in cs {
                if let Chosen::Param(k, v) = c {
                    ps.insert(k, v.clone());
                }
            }
        });
        f(&ps)
    }

    /// The newest value chosen for parameter `key` and not applied yet.
    pub fn chosen_value(&self, key: &str) -> Option<Value> {
        self.chosen.with(|cs| cs.iter().rev().find_map(|c| match c {
            Chosen::Param(k, v) if k == key => Some(v.clone()),
            _ => None,
        }))
    }

    /// The demo chosen and not applied yet, if any.
    pub fn chosen_demo(&self) -> Option<String> {
        self.chosen.with(|cs| cs.iter().rev().find_map(|c| match c {
            Chosen::Demo(d) => Some(d.clone()),
            Chosen::Param(..) => None,
        }))
    }

    /// Changes one parameter. The scenario is rebuilt from the new values;
    /// the current step is kept and plays again from its start. Changing
    /// the tab also remembers the tab it came from, and opens step 1, where
    /// the new type is applied.
    pub fn set_param(&self, key: &str, value: Value) {
        if self.params.with_untracked(|p| p.get(key) == Some(&value)) {
            return;
        }
        let tab_change = key == "tab";
        self.params.update(|p| {
            if tab_change {
                if let Some(old) = p.choice("tab").map(str::to_string) {
                    p.insert("from", Value::Choice(old));
                }
                // A tab is a Service of its own: it replaces a typed one.
                p.insert("manifest", Value::Manifest(String::new()));
            }
            p.insert(key, value);
        });
        self.replay_step(if tab_change { 0 } else { self.step.get_untracked() });
    }

    /// Replaces the scenario's Service with the text typed (empty: the
    /// scenario's own). The current step is kept where it still exists.
    pub fn set_manifest(&self, text: String) {
        if self.params.with_untracked(|p| p.manifest().unwrap_or("") == text) {
            return;
        }
        self.params.update(|p| p.insert("manifest", Value::Manifest(text)));
        self.playing.set(false);
        // The worker reads it; if it is admitted, the step plays again
        // then. A refused Service changes nothing shown.
        self.replay_step(self.step.get_untracked());
    }

    /// Applies a demo: its presets, and the step it opens.
    pub fn apply_demo(&self, id: &str) {
        let Some(demo) = self.scenario.with_untracked(|s| s.demos.iter().find(|d| d.id == id).cloned()) else { return };
        self.params.update(|p| {
            for (k, v) in &demo.sets {
                if k == "tab" && p.choice("tab") != Some(v.as_str()) {
                    if let Some(old) = p.choice("tab").map(str::to_string) {
                        p.insert("from", Value::Choice(old));
                    }
                }
                p.insert(k, Value::Choice(v.clone()));
            }
            p.insert("demo", Value::Choice(demo.id.clone()));
        });
        self.playing.set(false);
        self.replay_step(demo.step);
    }

    /// Applies a URL hash: `#/<scenario>/<step>[/<hop>][?key=value&…]`.
    /// A link to a scenario or parameters the page has no scenario for
    /// is applied when the worker has built it.
    pub fn open_link(&self, hash: &str) {
        let (id, params) = named_by(hash);
        let (p, hash) = (*self, hash.to_string());
        self.when_built(id, params, move || p.apply_link(&hash));
    }

    /// Applies a link whose scenario the page has: its steps are counted.
    pub(crate) fn apply_link(&self, hash: &str) {
        let parsed = link::parse_with(hash, scenarios::CATALOG, |id, p| self.known_steps(id, p).unwrap_or(usize::MAX));
        let l = parsed.link;
        // Each set only on a change: a signal set to its own value still
        // notifies, and a new `view` would draw the whole page again (its
        // side panels a frame later than the step).
        if self.scenario_id.with_untracked(|i| *i != l.scenario) {
            self.scenario_id.set(l.scenario.clone());
        }
        if self.params.with_untracked(|p| *p != l.params) {
            self.params.set(l.params);
        }
        if self.display.with_untracked(|d| *d != l.display) {
            self.display.set(l.display);
        }
        if self.view.get_untracked() != l.view {
            self.view.set(l.view);
        }
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
            // The transcript does not play.
            None if l.view == Mode::Transcript => self.step.set(step),
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
    /// after N hops, `/end` at the step's end. The parameters come last,
    /// as the scenario normalized them.
    pub fn link_hash(&self) -> String {
        link::format(&self.link())
    }

    /// What is shown, as a link; tracked.
    pub fn link(&self) -> Link {
        let (id, params) = self.scenario.with(|s| (s.id.clone(), s.params.clone()));
        let step = self.step.get();
        let hop = if self.playing.get() {
            None
        } else {
            let n = self.scenario.with(|s| s.steps.get(step).map_or(0, |st| st.hops.len()));
            let p = self.progress.get();
            // A hop paused in flight is not finished: the link names the hops that are.
            let done = if p.is_finite() { (p.max(0.0).floor() as usize).min(n) } else { 0 };
            Some(if done == n && n > 0 { HopPos::End } else { HopPos::After(done) })
        };
        Link { scenario: id, step, hop, params, display: self.display.get(), view: self.view.get() }
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

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    /// A player whose scenarios are built on this thread: the test binary
    /// has the builders, where the app asks its worker.
    fn player_of(id: &str, reduced: bool) -> Player {
        build_here(scenarios::build);
        Player::new(id, Params::default(), reduced)
    }

    fn player(reduced: bool) -> Player {
        player_of("nodeport-loadbalancer", reduced)
    }

    fn hops_in(p: &Player, step: usize) -> usize {
        p.scenario.with_untracked(|s| s.steps[step].hops.len())
    }

    #[wasm_bindgen_test]
    fn there_is_nothing_to_present_before_a_paste() {
        // Found by tests/e2e/monkey.mjs: Present on Your cluster before a
        // paste hid the paste box and left a blank screen.
        let empty = crate::present::Present::new(player_of("your-cluster", false));
        empty.enter();
        assert!(!empty.on.get_untracked(), "presents an empty stage");
        // A scenario with hops can be presented (entering asks for full
        // screen, a task this test has no executor for).
        assert!(!crate::present::Present::new(player(false)).empty.get_untracked());
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
        assert_eq!(p.progress.get_untracked(), hops_in(&p, 4) as f64);
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
        assert_eq!(p.progress.get_untracked(), hops_in(&p, 1) as f64);
    }

    #[wasm_bindgen_test]
    fn reduced_motion_jumps_to_end_states() {
        let p = player(true);
        p.go_to(2);
        assert!(!p.playing.get_untracked());
        assert_eq!(p.progress.get_untracked(), hops_in(&p, 2) as f64);
        p.progress.set(2.6);
        assert_eq!(p.shown_progress(), 2.0, "no tweening between hops");
    }

    #[wasm_bindgen_test]
    fn a_transcript_link_opens_the_transcript_without_playing_and_stays_in_the_link() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/2?view=transcript");
        assert_eq!((p.view.get_untracked(), p.step.get_untracked()), (Mode::Transcript, 1));
        assert!(!p.playing.get_untracked(), "the transcript does not play");
        assert!(p.link_hash().ends_with("view=transcript"), "{}", p.link_hash());
        p.open_link("#/nodeport-loadbalancer/2");
        assert_eq!(p.view.get_untracked(), Mode::Animation);
        assert!(p.playing.get_untracked(), "the animation plays the step");
    }

    #[wasm_bindgen_test]
    fn links_open_steps_and_bad_links_leave_a_notice() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/4/end");
        assert_eq!((p.step.get_untracked(), p.progress.get_untracked()), (3, hops_in(&p, 3) as f64));
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
    fn a_seed_rebuilds_the_scenario_and_replays_the_current_step() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/2/end");
        let fixed = p.scenario.get_untracked();
        p.set_param("seed", Value::Seed(Some(42)));
        assert_eq!(p.step.get_untracked(), 1, "the step is kept");
        assert_eq!(p.progress.get_untracked(), 0.0, "and plays again");
        assert!(p.playing.get_untracked());
        assert_ne!(p.scenario.get_untracked(), fixed, "seed 42 picks differently");
        assert_eq!(p.link_hash(), "#/nodeport-loadbalancer/2?seed=42");
        p.set_param("seed", Value::Seed(None));
        assert_eq!(p.scenario.get_untracked(), fixed, "the fixed picks are back");
    }

    /// Builds (id, parameters) as the worker would answer it.
    fn worker_answer(id: &str, params: &Params) -> Answered {
        Answered::of(id, params, scenarios::build(id, params).expect("a scenario"))
    }

    #[wasm_bindgen_test]
    fn a_link_to_a_scenario_the_page_has_not_got_opens_when_the_worker_answers() {
        let p = player(false);
        // From here on, as in the app: nothing is built on this thread.
        BUILD_HERE.with(|b| b.set(None));
        p.open_link("#/service-types/2?tab=nodeport");
        assert_eq!(p.scenario_id.get_untracked(), "nodeport-loadbalancer", "not applied before its scenario is here");
        assert!(p.busy(), "the page says it is about to change");
        // An answer to another request is not the one the link waits for.
        p.take_built(worker_answer("local-lab", &Params::default()));
        assert_eq!(p.scenario_id.get_untracked(), "nodeport-loadbalancer");
        p.open_link("#/service-types/2?tab=nodeport");
        let (id, params) = named_by("#/service-types/2?tab=nodeport");
        p.take_built(worker_answer(&id, &params));
        assert_eq!((p.scenario_id.get_untracked(), p.step.get_untracked()), ("service-types".to_string(), 1));
        assert_eq!(p.scenario.with_untracked(|s| s.params.choice("tab").map(str::to_string)), Some("nodeport".into()));
        assert!(!p.busy());
    }

    #[wasm_bindgen_test]
    fn a_link_overtakes_the_choices_made_before_it_and_not_applied_yet() {
        // Found by tests/e2e/monkey.mjs (seed 3301, action 154): the
        // random-pick switch and a demo clicked, then #/your-cluster/1 put
        // in the address before their task ran. The task then asked for
        // The five Service types again, the worker's answer to that took
        // the place of the link's, and the link never opened.
        let p = player_of("service-types", false);
        p.open_link("#/service-types/1");
        BUILD_HERE.with(|b| b.set(None));
        let links = p.links.get_value();
        p.choose(Chosen::Param("seed".into(), Value::Seed(Some(7))));
        p.choose(Chosen::Demo("from-pod".into()));
        p.open_link("#/your-cluster/1");
        assert!(p.chosen.with_untracked(Vec::is_empty), "the choices are dropped");
        // The choices' task (after the next paint) comes too late.
        p.apply_chosen("service-types", links);
        assert!(p.params.with_untracked(|ps| ps.choice("demo") != Some("from-pod") && ps.seed() != Some(7)), "the choices were applied");
        let (id, params) = named_by("#/your-cluster/1");
        p.take_built(worker_answer(&id, &params));
        assert_eq!(p.scenario_id.get_untracked(), "your-cluster", "the link did not open");
        // A choice made after the link has a task of its own, which the
        // earlier one does not take.
        let now = p.links.get_value();
        p.open_link("#/service-types/1");
        let (id, params) = named_by("#/service-types/1");
        p.take_built(worker_answer(&id, &params));
        assert_eq!(p.scenario_id.get_untracked(), "service-types");
        let after = p.links.get_value();
        assert_ne!(now, after);
        p.choose(Chosen::Demo("from-pod".into()));
        p.apply_chosen("service-types", links);
        assert!(!p.chosen.with_untracked(Vec::is_empty), "an earlier task took a later choice");
        p.apply_chosen("service-types", after);
        assert_eq!(p.params.with_untracked(|ps| ps.choice("demo").map(str::to_string)), Some("from-pod".into()));
    }

    #[wasm_bindgen_test]
    fn new_parameters_keep_the_scenario_shown_until_the_worker_answers_then_replay_the_step() {
        let p = player(false);
        p.open_link("#/nodeport-loadbalancer/3/end");
        BUILD_HERE.with(|b| b.set(None));
        let before = p.scenario.get_untracked();
        p.set_param("seed", Value::Seed(Some(42)));
        assert!(p.pending.get_untracked() && p.busy());
        assert!(Arc::ptr_eq(&p.scenario.get_untracked(), &before), "the last scenario stays shown");
        assert!(!p.playing.get_untracked(), "nothing plays an old scenario for new parameters");
        assert_eq!(p.shown(|ps| ps.seed()), Some(42), "the controls show the new value at once");
        let params = p.params.get_untracked();
        p.take_built(worker_answer("nodeport-loadbalancer", &params));
        assert!(!p.pending.get_untracked());
        assert_eq!(p.step.get_untracked(), 2, "the step is kept");
        assert!(p.playing.get_untracked() && p.progress.get_untracked() == 0.0, "and plays again");
        assert_ne!(p.scenario.get_untracked(), before);
    }

    #[wasm_bindgen_test]
    fn a_tab_change_remembers_where_it_came_from_and_opens_step_one() {
        let p = player_of("service-types", false);
        p.open_link("#/service-types/3/end?tab=nodeport");
        p.set_param("tab", Value::Choice("headless".into()));
        assert_eq!(p.step.get_untracked(), 0);
        let params = p.scenario.with_untracked(|s| s.params.clone());
        assert_eq!(params.choice("from"), Some("nodeport"));
        assert_eq!(params.choice("tab"), Some("headless"));
        // A demo sets its presets and opens its step.
        p.apply_demo("from-outside");
        let params = p.scenario.with_untracked(|s| s.params.clone());
        assert_eq!((params.choice("tab"), params.choice("client"), params.choice("demo")), (Some("clusterip"), Some("laptop"), Some("from-outside")));
        assert_eq!(p.step.get_untracked(), 2);
    }
}
