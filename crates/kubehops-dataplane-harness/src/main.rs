//! `kubehops-dataplane-harness`: replays every packet decision of the
//! model through a real kernel and says how many agreed.
//!
//!     kubehops-dataplane-harness [--backend nft|legacy|both]
//!         [--proxy-mode iptables|nftables|both] [--network routed|vxlan|both]
//!         [--only TEXT] [--list]
//!
//! kube-proxy's iptables mode runs every cluster and scenario once per
//! iptables backend; its nftables mode runs the golden and fixture
//! clusters (whose nodes hold no iptables rules) and every scenario case
//! built with `mode=nftables` once, with the first backend (which loads
//! the network plugin's iptables rules beside kube-proxy's table, and the
//! lab laptop's Docker rules).
//!
//! The Pod network (`--network`, both by default): everything above runs
//! routed (the fabric routes Pod addresses between the nodes); then every
//! scenario case runs once more built with `network=vxlan`, on nodes that
//! hold flannel's VXLAN state, with kube-proxy in iptables mode (the
//! first mode asked for) and the first backend only: wrapping happens
//! below kube-proxy's rules, and the masquerade that picks `flannel.1`'s
//! address is the kernel's one masquerade (`nf_nat_masquerade_ipv4`),
//! which the nftables mode's `masquerade` calls as iptables' MASQUERADE
//! does, so a second mode or backend would repeat the same tunnels. Its
//! decisions are checked as the routed ones, and the underlay is captured
//! with tcpdump and compared with each hop's tunnel
//! ([`scenario::overlay`]); it needs `tcpdump` besides.
//!
//! Without root, `ip`, iptables, nfacct, conntrack or nft it prints
//! "skipped: …" and exits 0, which counts as nothing passed;
//! `KUBEHOPS_REQUIRE_KERNEL_TEST=1` (set by CI) makes that a failure.

use kubehops_dataplane_harness::check::Report;
use kubehops_dataplane_harness::kernel::Backend;
use kubehops_dataplane_harness::plan::{Plan, ProxyMode};
use kubehops_dataplane_harness::{cannot_run, mode_differences, netns, replay, root_state, scenario, sources, state_diff};
use std::collections::{BTreeMap, HashSet};
use std::process::ExitCode;
use std::time::Instant;

const NAME: &str = "dataplane-harness";
const USAGE: &str = "usage: kubehops-dataplane-harness [--backend nft|legacy|both] [--proxy-mode iptables|nftables|both] [--network routed|vxlan|both] [--handshake yes|no|only] [--only TEXT] [--list]";

struct Options {
    backends: Vec<Backend>,
    modes: Vec<ProxyMode>,
    /// Run everything on a routed Pod network.
    routed: bool,
    /// Run the scenario cases on flannel's VXLAN overlay too.
    vxlan: bool,
    /// Follow the scenarios' TCP connections packet by packet too.
    handshake: bool,
    /// Only that (`--handshake only`): a run of its own, beside the rest.
    handshake_only: bool,
    only: Option<String>,
    list: bool,
}

const BOTH_MODES: [ProxyMode; 2] = [ProxyMode::Iptables, ProxyMode::Nftables];

fn options() -> Result<Options, String> {
    let mut o = Options { backends: Backend::ALL.to_vec(), modes: BOTH_MODES.to_vec(), routed: true, vxlan: true, handshake: true, handshake_only: false, only: None, list: false };
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
            "--proxy-mode" => {
                o.modes = match args.next().as_deref() {
                    Some("iptables") => vec![ProxyMode::Iptables],
                    Some("nftables") => vec![ProxyMode::Nftables],
                    Some("both") => BOTH_MODES.to_vec(),
                    other => return Err(format!("--proxy-mode takes iptables, nftables or both, not {other:?}")),
                }
            }
            "--network" => {
                (o.routed, o.vxlan) = match args.next().as_deref() {
                    Some("routed") => (true, false),
                    Some("vxlan") => (false, true),
                    Some("both") => (true, true),
                    other => return Err(format!("--network takes routed, vxlan or both, not {other:?}")),
                }
            }
            "--handshake" => {
                (o.handshake, o.handshake_only) = match args.next().as_deref() {
                    Some("yes") => (true, false),
                    Some("no") => (false, false),
                    Some("only") => (true, true),
                    other => return Err(format!("--handshake takes yes, no or only, not {other:?}")),
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
    // `--handshake only`: the stepped connections alone.
    let rest = !o.handshake_only;
    let (scenarios, coverage) = if o.routed && rest { scenario::connections(&o.modes)? } else { Default::default() };
    let wanted = |name: &str| o.only.as_deref().is_none_or(|t| name.contains(t));
    clusters.retain(|c| o.routed && rest && wanted(&c.spec.name));
    let iptables = o.routed && rest && o.modes.contains(&ProxyMode::Iptables);
    let nftables = o.routed && rest && o.modes.contains(&ProxyMode::Nftables);
    let scenarios: Vec<_> = scenarios.into_iter().filter(|s| wanted(&s.dataplane.name)).collect();
    // The overlay's run and the packet-by-packet run: one mode, the first asked for.
    let first_mode = o.modes[0];
    let (vxlan, vxlan_coverage) = if o.vxlan && rest { scenario::connections_vxlan(first_mode)? } else { Default::default() };
    let vxlan: Vec<_> = vxlan.into_iter().filter(|s| wanted(&s.dataplane.name)).collect();
    // Packet by packet: routed, in the first mode asked for.
    let (stepped, stepped_all) = if o.routed && o.handshake { scenario::connections_handshake(first_mode)? } else { Default::default() };
    let stepped: Vec<_> = stepped.into_iter().filter(|s| wanted(&s.dataplane.name)).collect();
    let scenarios_in = |mode: ProxyMode| scenarios.iter().filter(move |s| s.mode == mode);
    if o.list {
        let modes: Vec<&str> = o.modes.iter().map(|m| m.as_str()).collect();
        for c in &clusters {
            println!("{}: {} decisions (kube-proxy {})", c.spec.name, c.decisions.len(), modes.join(" and "));
        }
        for s in &scenarios {
            println!("{}: {} connections (kube-proxy {})", s.dataplane.name, s.connections.len(), s.mode.as_str());
        }
        for s in &vxlan {
            let wrapped: usize = s.connections.iter().map(|c| c.wrapped.len()).sum();
            println!("{}: {} connections, {wrapped} wrapped hops (kube-proxy {}, VXLAN overlay)", s.dataplane.name, s.connections.len(), s.mode.as_str());
        }
        for s in &stepped {
            println!("{}: {} connections packet by packet (kube-proxy {}, handshake=1)", s.dataplane.name, s.connections.len(), s.mode.as_str());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let overlay_tools: Vec<&str> = if vxlan.is_empty() { vec![] } else { ["tcpdump"].into_iter().filter(|t| kubehops_dataplane_harness::sys::find_tool(t).is_none()).collect() };
    let cannot = cannot_run(&o.backends, &o.modes).or_else(|| {
        (!overlay_tools.is_empty()).then(|| format!("{} not found (the VXLAN overlay's run; Debian package tcpdump; scripts/setup installs it)", overlay_tools.join(", ")))
    });
    if let Some(reason) = cannot {
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
    // Per scenario and mode: decisions, connections, failed, seconds.
    let mut per_scenario: BTreeMap<(String, &str), (usize, usize, usize, f64)> = BTreeMap::new();
    // Decisions per mode.
    let mut per_mode: BTreeMap<&str, usize> = BTreeMap::new();
    // The overlay's run: its mode and decisions.
    let mut overlay_decisions: Option<(&str, usize)> = None;
    // The packet-by-packet run: its mode and the SYNs' decisions.
    let mut stepped_decisions: Option<(&str, usize)> = None;
    // Replays one mode's scenarios with one backend; how many decisions
    // and connections that took.
    let mut replay_scenarios = |mode: ProxyMode, backend: Backend, report: &mut Report| {
        let (d0, c0) = (report.decisions, report.connections);
        // An identical decision on an identical node is checked once.
        let mut seen = HashSet::new();
        for s in scenarios_in(mode) {
            let (d, c, f, t) = (report.decisions, report.connections, report.failed, Instant::now());
            scenario::replay(s, backend, report, &mut seen);
            let e = per_scenario.entry((s.scenario.clone(), mode.as_str())).or_default();
            *e = (e.0 + report.decisions - d, e.1 + report.connections - c, e.2 + report.failed - f, e.3 + t.elapsed().as_secs_f64());
        }
        (report.decisions - d0, report.connections - c0)
    };
    let replay_clusters = |mode: ProxyMode, backend: Backend, report: &mut Report| {
        for c in &clusters {
            match Plan::new(&c.spec, &c.decisions, mode) {
                Ok(plan) => replay(plan, backend, &c.decisions, report),
                Err(e) => {
                    report.decisions += c.decisions.len();
                    report.failed += c.decisions.len();
                    report.failures.push(e);
                }
            }
        }
    };
    if iptables {
        let (t_mode, md0, mc0) = (Instant::now(), report.decisions, report.connections);
        let (mut sd, mut sc, mut st) = (0, 0, 0.0);
        for &backend in &o.backends {
            let t = Instant::now();
            let (d0, c0) = (report.decisions, report.connections);
            replay_clusters(ProxyMode::Iptables, backend, &mut report);
            let ts = Instant::now();
            let (d, c) = replay_scenarios(ProxyMode::Iptables, backend, &mut report);
            (sd, sc, st) = (sd + d, sc + c, st + ts.elapsed().as_secs_f64());
            println!(
                "{NAME}: iptables-{}: {} decisions, {} connections, {:.1} s",
                backend.name(),
                report.decisions - d0,
                report.connections - c0,
                t.elapsed().as_secs_f64()
            );
        }
        let (d, c) = (report.decisions - md0, report.connections - mc0);
        per_mode.insert("iptables", d);
        let with = o.backends.iter().map(|b| b.name()).collect::<Vec<_>>().join(" and iptables-");
        println!("{NAME}: kube-proxy iptables: {d} decisions, {c} connections, {:.1} s (clusters and scenarios, with iptables-{with})", t_mode.elapsed().as_secs_f64());
        println!("{NAME}: kube-proxy iptables: scenarios: {sd} decisions, {sc} connections, {st:.1} s (every scenario case, with iptables-{with})");
    }
    if nftables {
        let (t, d0, c0) = (Instant::now(), report.decisions, report.connections);
        // Kubernetes' side is kube-proxy's table, which no backend loads,
        // so one run does; the backend loads the network plugin's iptables
        // rules on a scenario's nodes, and a host's own tables.
        let backend = o.backends[0];
        replay_clusters(ProxyMode::Nftables, backend, &mut report);
        let (cd, cc, ct) = (report.decisions - d0, report.connections - c0, t.elapsed().as_secs_f64());
        let ts = Instant::now();
        let (sd, sc) = replay_scenarios(ProxyMode::Nftables, backend, &mut report);
        let st = ts.elapsed().as_secs_f64();
        let (d, c) = (report.decisions - d0, report.connections - c0);
        per_mode.insert("nftables", d);
        println!(
            "{NAME}: kube-proxy nftables: {d} decisions, {c} connections, {:.1} s (clusters and scenarios, ip kube-proxy loaded with nft -f, the network plugin's and hosts' iptables rules with iptables-{})",
            t.elapsed().as_secs_f64(),
            backend.name()
        );
        println!("{NAME}: kube-proxy nftables: clusters: {cd} decisions, {cc} connections, {ct:.1} s (the golden and fixture clusters)");
        println!("{NAME}: kube-proxy nftables: scenarios: {sd} decisions, {sc} connections, {st:.1} s (every scenario case with mode=nftables)");
        // Where the two modes' walks part on purpose, as upstream's proxiers do.
        let mut differ: BTreeMap<String, (usize, String)> = BTreeMap::new();
        for c in &clusters {
            for (what, kind) in mode_differences(&c.spec, &c.decisions)? {
                let e = differ.entry(kind).or_insert((0, format!("{}: {what}", c.spec.name)));
                e.0 += 1;
            }
        }
        let total: usize = differ.values().map(|(n, _)| n).sum();
        if cd > 0 {
            println!("{NAME}: kube-proxy nftables: the model's two modes part on {total} of the clusters' {cd} decisions, as upstream's proxiers do (the kernel is held to the nftables walk):");
        }
        for (kind, (n, example)) in &differ {
            println!("{NAME}:   {n} × {kind} (e.g. {example})");
        }
    }
    if !vxlan.is_empty() {
        let backend = o.backends[0];
        let (t, d0, c0, f0) = (Instant::now(), report.decisions, report.connections, report.failed);
        let mut seen = HashSet::new();
        let mut per: BTreeMap<String, (usize, usize, usize, f64)> = BTreeMap::new();
        for s in &vxlan {
            let (d, c, f, ts) = (report.decisions, report.connections, report.failed, Instant::now());
            scenario::replay(s, backend, &mut report, &mut seen);
            let e = per.entry(s.scenario.clone()).or_default();
            *e = (e.0 + report.decisions - d, e.1 + report.connections - c, e.2 + report.failed - f, e.3 + ts.elapsed().as_secs_f64());
        }
        let (d, c, f) = (report.decisions - d0, report.connections - c0, report.failed - f0);
        overlay_decisions = Some((first_mode.as_str(), d));
        let with = match first_mode {
            ProxyMode::Iptables => format!("iptables-{}", backend.name()),
            ProxyMode::Nftables => format!("nftables, the network plugin's rules with iptables-{}", backend.name()),
        };
        println!(
            "{NAME}: overlay (network=vxlan, kube-proxy {}, {with}): {d} scenario decisions ({f} failed), {c} connections, {} data planes, {:.1} s",
            first_mode.as_str(),
            vxlan.len(),
            t.elapsed().as_secs_f64()
        );
        let k = &report.overlay;
        let ports = match (k.source_ports.first(), k.source_ports.last()) {
            (Some(lo), Some(hi)) => format!("{} distinct, {lo}..={hi}", k.source_ports.len()),
            _ => "none".into(),
        };
        println!(
            "{NAME}: overlay: {d} scenario decisions, {} wrapped packets captured and equal ({} requests and {} answers the model wraps, on {} of {} connections checked), {} same-node hops bare, {} Pod packets bare between nodes, {} refusals wrapped back, {} connections read again up to a later mark, {} frames dropped by the capture; outer UDP source ports {ports}",
            k.frames, k.wrapped_requests, k.wrapped_replies, k.with_tunnel, k.connections, k.same_node, k.bare, k.refusals, k.rechecked, k.dropped
        );
        for cov in &vxlan_coverage {
            let Some(&(d, n, f, secs)) = per.get(&cov.scenario) else { continue };
            println!(
                "{NAME}: overlay: scenario {} (network=vxlan): {} builds, {} data planes, {} connections ({} identical), {} packet hops replayed: {d} decisions ({f} failed), {n} kernel connections, {secs:.1} s",
                cov.scenario, cov.builds, cov.data_planes, cov.connections, cov.identical, cov.packet_hops
            );
        }
    }
    if !stepped.is_empty() {
        let backend = o.backends[0];
        let (t, d0, c0, f0) = (Instant::now(), report.decisions, report.connections, report.failed);
        let mut seen = HashSet::new();
        for s in &stepped {
            scenario::replay(s, backend, &mut report, &mut seen);
        }
        let (d, c, f) = (report.decisions - d0, report.connections - c0, report.failed - f0);
        stepped_decisions = Some((first_mode.as_str(), d));
        let k = &report.handshake;
        let planes = stepped.len();
        println!(
            "{NAME}: packet by packet (handshake=1, kube-proxy {}, iptables-{}): {} TCP connections on {planes} data planes (one per story of the {stepped_all} the cases follow to their close), each stopped after each of its 9 packets: {} points, {} conntrack entries equal to the model's (states seen: {}); {} attempts let go for another pick; with the SYN's {d} decisions ({f} failed), {c} kernel connections, {:.1} s",
            first_mode.as_str(),
            backend.name(),
            k.connections,
            k.points,
            k.entries,
            k.states.join(", "),
            k.other_picks,
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
    for c in coverage.iter() {
        let Some(&(d, n, f, secs)) = per_scenario.get(&(c.scenario.clone(), c.mode.as_str())) else { continue };
        // iptables mode's lines as they always were; nftables mode's say so.
        let name = match c.mode {
            ProxyMode::Iptables => c.scenario.clone(),
            ProxyMode::Nftables => format!("{} (kube-proxy nftables)", c.scenario),
        };
        let backends = match c.mode {
            ProxyMode::Iptables => o.backends.len(),
            ProxyMode::Nftables => 1,
        };
        println!(
            "{NAME}: scenario {name}: {} builds, {} data planes, {} connections ({} identical to one on the same data plane, replayed once), {} packet hops replayed; with {backends} backend(s): {d} decisions ({f} failed), {n} kernel connections, {secs:.1} s",
            c.builds,
            c.data_planes,
            c.connections,
            c.identical,
            c.packet_hops,
        );
        println!("{NAME}: scenario {name}: {} hops carry no packet (control plane)", c.not_packets);
        for (why, count) in &c.skipped {
            println!("{NAME}: scenario {name}: skipped {count} hops: {why}");
        }
        for (why, count) in &c.stand_ins {
            println!("{NAME}: scenario {name}: {count} connections answered by an echo server in the replay, leaving out {why}");
        }
    }
    for f in &report.failures {
        println!("{NAME}: FAILED: {f}");
    }
    let secs = start.elapsed().as_secs_f64();
    let passed = report.decisions.saturating_sub(report.failed);
    let mut modes: Vec<String> = per_mode.iter().map(|(m, d)| format!("{d} with kube-proxy in {m} mode")).collect();
    if let Some((m, d)) = overlay_decisions {
        modes.push(format!("{d} with kube-proxy in {m} mode on a VXLAN overlay"));
    }
    if let Some((m, d)) = stepped_decisions {
        modes.push(format!("{d} with kube-proxy in {m} mode, the SYNs of connections followed packet by packet"));
    }
    println!(
        "{NAME}: {} decisions checked against the kernel ({}; {} connections, {} random splits, {} session affinity checks, {} answers lost on an asymmetric path as the model says, iptables backends {}), root namespace unchanged: {}, in {secs:.1} s",
        report.decisions,
        modes.join(", "),
        report.connections,
        report.splits.len(),
        report.sticky,
        report.lost_replies,
        // The nftables mode alone uses the first backend only.
        o.backends.iter().take(if iptables { o.backends.len() } else { 1 }).map(|b| b.name()).collect::<Vec<_>>().join(" and "),
        if diff.is_empty() { "yes" } else { "NO" },
    );
    println!("{NAME}: {passed} passed, {} failed", report.failed + safety_failed);
    Ok(if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
