//! What the seeded fuzzers of the examples share (`link_fuzz`,
//! `embed_fuzz`, and through `#[path]` the objects crate's `paste_fuzz`
//! and `edit_fuzz`): a generator drawn from the seed and each case's
//! index, and a runner.
//!
//! Each case's input depends only on the seed and its index, so any case
//! is replayed alone (`--case N`) and the number of threads changes the
//! time, never the cases or the counts. A case fails when its check
//! panics, when it breaks a property (the check says which), or when it
//! runs longer than the timeout: a watchdog thread stops the run there,
//! with the case, because a case that never ends would never report. In
//! a build that aborts on panic (the release profile) the first panic
//! ends the run after printing its case and input; in one that unwinds
//! (the `sweep` profile, debug) every panic is counted and the run goes on.
//!
//! Arguments: `[cases] [seed] [--threads N] [--timeout SECONDS] [--case N]`;
//! `--cases N` and `--seed S` are taken too, as the CLI's fuzzers spell them.

#![allow(dead_code)]

pub mod links;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// SplitMix64, started from the seed and the case's index mixed, so that
/// neighbouring cases do not share a stream.
pub struct Rng(u64);

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    pub fn for_case(seed: u64, index: u64) -> Rng {
        Rng(mix(seed ^ mix(index.wrapping_add(0x632b_e59b_d9b4_e019))))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// A number in `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True once in `n` draws.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// How a run is asked for on the command line.
pub struct Options {
    pub cases: u64,
    pub seed: u64,
    pub threads: usize,
    pub timeout: Duration,
    /// `--case N`: that case alone, its input printed whole.
    pub only: Option<u64>,
}

impl Options {
    /// Reads `[cases] [seed]` and the flags, with these defaults; threads
    /// default to the machine's cores.
    pub fn from_args(cases: u64, seed: u64) -> Options {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut o = Options { cases, seed, threads: cores, timeout: Duration::from_secs(5), only: None };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut positional = 0;
        let mut i = 0;
        while i < args.len() {
            let value = |j: usize| args.get(j).and_then(|v| v.parse::<f64>().ok()).unwrap_or_else(|| usage());
            match args[i].as_str() {
                "--threads" => o.threads = (value(i + 1) as usize).max(1),
                "--timeout" => o.timeout = Duration::from_secs_f64(value(i + 1)),
                "--case" => o.only = Some(value(i + 1) as u64),
                "--cases" => o.cases = value(i + 1) as u64,
                "--seed" => o.seed = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
                a => {
                    let n: u64 = a.parse().unwrap_or_else(|_| usage());
                    match positional {
                        0 => o.cases = n,
                        1 => o.seed = n,
                        _ => usage(),
                    }
                    positional += 1;
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
        o
    }
}

fn usage() -> ! {
    eprintln!("usage: [cases] [seed] [--cases N] [--seed S] [--threads N] [--timeout SECONDS] [--case N]");
    std::process::exit(2)
}

/// One reader's fuzzer: how a case is made from (seed, index), how it is
/// checked (an outcome to count, or the property it broke), and how its
/// input is shown for a replay.
pub struct Fuzzer<I> {
    pub name: &'static str,
    pub make: fn(u64, u64) -> I,
    pub check: fn(&I) -> Result<&'static str, String>,
    pub show: fn(&I) -> String,
}

#[derive(Debug)]
enum Failure {
    Panic(String),
    Broken(String),
}

/// What one thread saw.
#[derive(Default)]
struct Tally {
    outcomes: BTreeMap<&'static str, u64>,
    failures: Vec<(u64, Failure)>,
    slowest: (Duration, u64),
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        for (k, n) in other.outcomes {
            *self.outcomes.entry(k).or_default() += n;
        }
        self.failures.extend(other.failures);
        self.slowest = self.slowest.max(other.slowest);
    }
}

/// A thread's case in progress, for the watchdog: its index and when it
/// started (milliseconds since the run began, plus one; 0 when idle).
#[derive(Default)]
struct Slot {
    index: AtomicU64,
    started: AtomicU64,
}

thread_local! {
    /// The case this thread runs, for the panic hook.
    static CURRENT: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// The first `limit` characters of a shown input, and its length.
fn clip(text: &str, limit: usize) -> String {
    let n = text.chars().count();
    if n <= limit {
        return text.to_string();
    }
    format!("{}… ({n} characters; --case shows it whole)", text.chars().take(limit).collect::<String>())
}

fn message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// Runs the cases and exits: 0 when none failed, 1 otherwise.
pub fn run<I: 'static>(f: Fuzzer<I>, o: Options) -> ! {
    let Fuzzer { name, make, check, show } = f;
    let (seed, limit) = (o.seed, if o.only.is_some() { usize::MAX } else { 1500 });
    // Printed as each panic happens: with panic=abort it is all there is.
    panic::set_hook(Box::new(move |info| {
        let i = CURRENT.with(Cell::get);
        let at = info.location().map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
        eprintln!("{name}: case {i} of seed {seed} panicked{at}: {}", message(info.payload()));
        if cfg!(panic = "abort") {
            eprintln!("{name}: input of case {i}: {}", clip(&show(&make(seed, i)), limit));
        }
    }));
    let range = match o.only {
        Some(i) => {
            println!("{name}: case {i} of seed {seed}: {}", show(&make(seed, i)));
            i..i + 1
        }
        None => 0..o.cases,
    };
    let threads = o.threads.min((range.end - range.start).max(1) as usize);
    let start = Instant::now();
    let tally = run_threads(&Parts { make, check, seed }, range.clone(), threads, o.timeout, start, &|i| {
        eprintln!("{name}: case {i} of seed {seed} ran longer than {:?}: {}", o.timeout, clip(&show(&make(seed, i)), limit));
        std::process::exit(1)
    });
    report(name, &o, threads, &tally, start.elapsed(), &|i| clip(&show(&make(seed, i)), limit))
}

/// What a worker needs: the cases of one seed and their check.
struct Parts<I> {
    make: fn(u64, u64) -> I,
    check: fn(&I) -> Result<&'static str, String>,
    seed: u64,
}

/// Runs `range` on `threads` threads (each takes the next case as it
/// finishes one), with a watchdog that calls `hung` on a case over
/// `timeout`.
fn run_threads<I>(p: &Parts<I>, range: std::ops::Range<u64>, threads: usize, timeout: Duration, start: Instant, hung: &(dyn Fn(u64) + Sync)) -> Tally {
    let next = AtomicU64::new(range.start);
    let slots: Vec<Slot> = (0..threads).map(|_| Slot::default()).collect();
    let done = AtomicBool::new(false);
    let mut total = Tally::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = slots.iter().map(|slot| s.spawn(|| worker(p, &next, range.end, slot, start))).collect();
        s.spawn(|| watch(&slots, &done, timeout, start, hung));
        for w in workers {
            total.merge(w.join().expect("a worker catches its panics"));
        }
        done.store(true, Ordering::SeqCst);
    });
    total.failures.sort_by_key(|(i, _)| *i);
    total
}

fn millis(start: Instant) -> u64 {
    start.elapsed().as_millis() as u64 + 1
}

fn worker<I>(p: &Parts<I>, next: &AtomicU64, end: u64, slot: &Slot, start: Instant) -> Tally {
    let mut t = Tally::default();
    loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= end {
            return t;
        }
        let input = (p.make)(p.seed, i);
        CURRENT.with(|c| c.set(i));
        slot.index.store(i, Ordering::SeqCst);
        slot.started.store(millis(start), Ordering::SeqCst);
        let began = Instant::now();
        let result = panic::catch_unwind(AssertUnwindSafe(|| (p.check)(&input)));
        let took = began.elapsed();
        slot.started.store(0, Ordering::SeqCst);
        t.slowest = t.slowest.max((took, i));
        match result {
            Ok(Ok(outcome)) => *t.outcomes.entry(outcome).or_default() += 1,
            Ok(Err(why)) => t.failures.push((i, Failure::Broken(why))),
            Err(p) => t.failures.push((i, Failure::Panic(message(p.as_ref())))),
        }
        if (i + 1).is_multiple_of(200_000) {
            eprintln!("  {} cases, {:.0} s", i + 1, start.elapsed().as_secs_f64());
        }
    }
}

/// Looks at each thread's case every 20 ms; one over `timeout` ends the
/// run through `hung`.
fn watch(slots: &[Slot], done: &AtomicBool, timeout: Duration, start: Instant, hung: &(dyn Fn(u64) + Sync)) {
    let limit = timeout.as_millis() as u64;
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
        for s in slots {
            let began = s.started.load(Ordering::SeqCst);
            let i = s.index.load(Ordering::SeqCst);
            // Read twice: the case must not have changed in between.
            if began != 0 && began == s.started.load(Ordering::SeqCst) && millis(start) - began > limit {
                hung(i);
            }
        }
    }
}

fn report(name: &str, o: &Options, threads: usize, t: &Tally, took: Duration, shown: &dyn Fn(u64) -> String) -> ! {
    for (i, f) in t.failures.iter().take(20) {
        println!("{name}: case {i} of seed {}: {f:?}\n  input: {}", o.seed, shown(*i));
    }
    let cases: u64 = t.outcomes.values().sum::<u64>() + t.failures.len() as u64;
    let panics = t.failures.iter().filter(|(_, f)| matches!(f, Failure::Panic(_))).count();
    println!(
        "{name}: seed {}: {cases} cases in {:.1} s on {} threads, {} failures ({panics} panics, {} broken properties, 0 over {:?}); slowest case {:.3} s (case {})",
        o.seed,
        took.as_secs_f64(),
        threads,
        t.failures.len(),
        t.failures.len() - panics,
        o.timeout,
        t.slowest.0.as_secs_f64(),
        t.slowest.1
    );
    let counts: Vec<String> = t.outcomes.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!("{name}: outcomes: {}", counts.join(", "));
    std::process::exit(if t.failures.is_empty() { 0 } else { 1 })
}
