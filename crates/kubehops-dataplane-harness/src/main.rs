//! `kubehops-dataplane-harness`: replays every packet decision of the
//! model through a real kernel and says how many agreed.
//!
//!     kubehops-dataplane-harness [--backend nft|legacy|both] [--only TEXT] [--list]
//!
//! Without root, `ip`, iptables, nfacct or conntrack it prints
//! "skipped: …" and exits 0, which counts as nothing passed;
//! `KUBEHOPS_REQUIRE_KERNEL_TEST=1` (set by CI) makes that a failure.

use kubehops_dataplane_harness::check::Report;
use kubehops_dataplane_harness::kernel::Backend;
use kubehops_dataplane_harness::plan::Plan;
use kubehops_dataplane_harness::{cannot_run, netns, replay, root_state, scenario, sources, state_diff};
use std::collections::{BTreeMap, HashSet};
use std::process::ExitCode;
use std::time::Instant;

const NAME: &str = "dataplane-harness";
const USAGE: &str = "usage: kubehops-dataplane-harness [--backend nft|legacy|both] [--only TEXT] [--list]";

struct Options {
    backends: Vec<Backend>,
    only: Option<String>,
    list: bool,
}

fn options() -> Result<Options, String> {
    let mut o = Options { backends: Backend::ALL.to_vec(), only: None, list: false };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--backend" => {
                o.backends = match args.next().as_deref() {
                    Some("nft") => vec![Backend::Nft],
                    Some("legacy") => vec![Backend::Legacy],
                    Some("both") => Backend::ALL.to_vec(),
                    other => return Err(format!("--backend takes nft, legacy or both, not {other:?}")),
                }
            }
            "--only" => o.only = Some(args.next().ok_or("--only takes a text to look for in cluster names")?),
            "--list" => o.list = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(code) => code,
        Err(e) => {
            println!("{NAME}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(o: &Options) -> Result<ExitCode, String> {
    let start = Instant::now();
    let mut clusters = sources::golden_cases();
    clusters.extend(sources::fixtures()?);
    let (scenarios, coverage) = scenario::connections()?;
    let wanted = |name: &str| o.only.as_deref().is_none_or(|t| name.contains(t));
    clusters.retain(|c| wanted(&c.spec.name));
    let scenarios: Vec<_> = scenarios.into_iter().filter(|s| wanted(&s.dataplane.name)).collect();
    if o.list {
        for c in &clusters {
            println!("{}: {} decisions", c.spec.name, c.decisions.len());
        }
        for s in &scenarios {
            println!("{}: {} connections", s.dataplane.name, s.connections.len());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(reason) = cannot_run(&o.backends) {
        println!("{NAME}: skipped: {reason}");
        if std::env::var_os("KUBEHOPS_REQUIRE_KERNEL_TEST").is_some_and(|v| v == "1") {
            println!("{NAME}: FAILED: KUBEHOPS_REQUIRE_KERNEL_TEST=1 asks for the real-kernel harness");
            return Ok(ExitCode::FAILURE);
        }
        return Ok(ExitCode::SUCCESS);
    }
    for gone in netns::sweep_stale() {
        println!("{NAME}: deleted the stale namespace {gone}");
    }
    let before = root_state()?;
    let mut report = Report::default();
    // Per scenario: decisions, connections, failed, seconds.
    let mut per_scenario: BTreeMap<String, (usize, usize, usize, f64)> = BTreeMap::new();
    for &backend in &o.backends {
        let t = Instant::now();
        let (d0, c0) = (report.decisions, report.connections);
        let mut seen = HashSet::new();
        for c in &clusters {
            match Plan::new(&c.spec, &c.decisions) {
                Ok(plan) => replay(plan, backend, &c.decisions, &mut report),
                Err(e) => {
                    report.decisions += c.decisions.len();
                    report.failed += c.decisions.len();
                    report.failures.push(e);
                }
            }
        }
        for s in &scenarios {
            let (d, c, f, t) = (report.decisions, report.connections, report.failed, Instant::now());
            scenario::replay(s, backend, &mut report, &mut seen);
            let e = per_scenario.entry(s.scenario.clone()).or_default();
            *e = (e.0 + report.decisions - d, e.1 + report.connections - c, e.2 + report.failed - f, e.3 + t.elapsed().as_secs_f64());
        }
        println!(
            "{NAME}: iptables-{}: {} decisions, {} connections, {:.1} s",
            backend.name(),
            report.decisions - d0,
            report.connections - c0,
            t.elapsed().as_secs_f64()
        );
    }
    // Two checks of the run itself, besides its decisions.
    let mut safety_failed = 0;
    let leftover = netns::named(&netns::run_prefix());
    if !leftover.is_empty() {
        safety_failed += 1;
        report.failures.push(format!("namespaces left behind: {}", leftover.join(", ")));
    }
    let diff = state_diff(&before, &root_state()?);
    if !diff.is_empty() {
        safety_failed += 1;
        report.failures.push(format!("the root namespace changed:\n    {}", diff.join("\n    ")));
    }
    for s in &report.splits {
        println!("{NAME}: split: {s}");
    }
    for c in coverage.iter().filter(|c| per_scenario.contains_key(&c.scenario)) {
        let (d, n, f, secs) = per_scenario[&c.scenario];
        println!(
            "{NAME}: scenario {}: {} builds, {} data planes, {} connections ({} identical to one on the same data plane, replayed once), {} packet hops replayed; with {} backend(s): {d} decisions ({f} failed), {n} kernel connections, {secs:.1} s",
            c.scenario,
            c.builds,
            c.data_planes,
            c.connections,
            c.identical,
            c.packet_hops,
            o.backends.len()
        );
        println!("{NAME}: scenario {}: {} hops carry no packet (control plane)", c.scenario, c.not_packets);
        for (why, count) in &c.skipped {
            println!("{NAME}: scenario {}: skipped {count} hops: {why}", c.scenario);
        }
        for (why, count) in &c.stand_ins {
            println!("{NAME}: scenario {}: {count} connections answered by an echo server in the replay, leaving out {why}", c.scenario);
        }
    }
    for f in &report.failures {
        println!("{NAME}: FAILED: {f}");
    }
    let secs = start.elapsed().as_secs_f64();
    let passed = report.decisions.saturating_sub(report.failed);
    println!(
        "{NAME}: {} decisions checked against the kernel ({} connections, {} random splits, {} session affinity checks, {} answers lost on an asymmetric path as the model says, backends {}), root namespace unchanged: {}, in {secs:.1} s",
        report.decisions,
        report.connections,
        report.splits.len(),
        report.sticky,
        report.lost_replies,
        o.backends.iter().map(|b| b.name()).collect::<Vec<_>>().join(" and "),
        if diff.is_empty() { "yes" } else { "NO" },
    );
    println!("{NAME}: {passed} passed, {} failed", report.failed + safety_failed);
    Ok(if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
