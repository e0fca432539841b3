//! The dataplane harness: KubeHops's packet decisions, replayed through a
//! real Linux kernel.
//!
//! A cluster (the objects the CLI reads, a golden case, or a scenario's
//! world) becomes network namespaces ([`topology`]): one per node,
//! holding exactly the rules the model wrote for it, loaded as kube-proxy
//! loads them ([`kernel`]); one per Pod, with servers that say what they
//! saw ([`wire`]); a client namespace outside; and a router between them.
//! Each packet decision the model makes ([`decisions`], [`scenario`]) is
//! then tried with real connections and compared with the model
//! ([`check`], [`oracle`], [`stats`]).
//!
//! Safety: the harness creates only namespaces named `khh<pid>-…`
//! ([`netns`]), joins them only to each other, deletes them when done or
//! failed, and checks that the root namespace's interfaces, addresses,
//! routes, policy rules and iptables rules are the same after the run as
//! before it ([`root_state`]).

pub mod check;
pub mod decisions;
pub mod kernel;
pub mod netns;
pub mod oracle;
pub mod plan;
pub mod scenario;
pub mod sources;
pub mod stats;
pub mod sys;
pub mod topology;
pub mod wire;

use check::Report;
use kernel::Backend;
use plan::Plan;
use topology::Topology;

/// Why the harness cannot run on this machine, if it cannot.
pub fn cannot_run(backends: &[Backend]) -> Option<String> {
    if !sys::is_root() {
        return Some("not root (network namespaces and iptables need root)".into());
    }
    let mut tools: Vec<String> = ["ip", "unshare", "nfacct", "conntrack", "sysctl", "sh"].map(String::from).to_vec();
    for b in backends {
        tools.extend(b.tools());
    }
    let missing: Vec<String> = tools.into_iter().filter(|t| sys::find_tool(t).is_none()).collect();
    if !missing.is_empty() {
        return Some(format!("{} not found (Debian packages iproute2, util-linux, iptables, nfacct and conntrack; scripts/setup installs them)", missing.join(", ")));
    }
    match netns::Netns::create("probe") {
        Ok(_) => None,
        Err(e) => Some(format!("cannot create a network namespace: {e}")),
    }
}

/// What the root namespace holds that the harness must leave alone:
/// links, addresses (without their lifetimes, which tick), routes of
/// every table, policy rules, and both iptables backends' rules (without
/// counters, which count the host's own traffic).
pub fn root_state() -> Result<String, String> {
    let mut out = String::new();
    let lifetimes = |s: String| s.lines().map(|l| l.split("valid_lft").next().unwrap_or(l).trim_end().to_string()).collect::<Vec<_>>().join("\n");
    out += &sys::run("ip", &["-o", "link", "show"], None)?;
    out += &lifetimes(sys::run("ip", &["-o", "addr", "show"], None)?);
    out += &sys::run("ip", &["route", "show", "table", "all"], None)?;
    out += &sys::run("ip", &["-6", "route", "show", "table", "all"], None)?;
    out += &sys::run("ip", &["rule", "show"], None)?;
    for b in Backend::ALL {
        let save = sys::run(&format!("iptables-{}-save", b.name()), &[], None).unwrap_or_else(|e| format!("unreadable: {e}"));
        for l in save.lines().filter(|l| !l.starts_with('#')) {
            let l = match l.strip_prefix(':').and_then(|x| x.rsplit_once(" [")) {
                Some((head, _)) => format!(":{head}"),
                None => l.to_string(),
            };
            out += &l;
            out.push('\n');
        }
    }
    Ok(out)
}

/// A line by line account of what changed between two states.
pub fn state_diff(before: &str, after: &str) -> Vec<String> {
    let b: std::collections::BTreeSet<&str> = before.lines().collect();
    let a: std::collections::BTreeSet<&str> = after.lines().collect();
    b.difference(&a).map(|l| format!("- {l}")).chain(a.difference(&b).map(|l| format!("+ {l}"))).collect()
}

/// Builds `plan` and replays `decisions` on it; a cluster that cannot be
/// built is one failure.
pub fn replay(plan: Plan, backend: Backend, decisions: &[decisions::Decision], report: &mut Report) {
    let name = plan.name.clone();
    match Topology::build(plan, backend) {
        Ok(topo) => {
            for d in decisions {
                check::run_decision(&topo, d, report);
            }
        }
        Err(e) => {
            // None of its decisions could be checked: each counts as failed.
            report.decisions += decisions.len();
            report.failed += decisions.len();
            report.failures.push(format!("{name}: cannot build the cluster with iptables-{}: {e}", backend.name()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_root_state_is_shown_line_by_line() {
        let before = "1: lo\n2: eth0 inet 192.0.2.2/24\ndefault via 192.0.2.1 dev eth0\n";
        assert!(state_diff(before, before).is_empty());
        let after = "1: lo\n2: eth0 inet 192.0.2.2/24\n3: khh1-x\ndefault via 10.0.0.1 dev eth0\n";
        assert_eq!(state_diff(before, after), ["- default via 192.0.2.1 dev eth0", "+ 3: khh1-x", "+ default via 10.0.0.1 dev eth0"]);
    }
}
