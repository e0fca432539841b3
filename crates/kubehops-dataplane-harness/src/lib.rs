//! The dataplane harness: KubeHops's packet decisions, replayed through a
//! real Linux kernel.
//!
//! A cluster (the objects the CLI reads, a golden case, or a scenario's
//! world) becomes network namespaces ([`topology`]): one per node,
//! holding exactly the rules the model wrote for it, loaded as kube-proxy
//! loads them ([`kernel`]) in the mode it runs in (iptables or nftables:
//! [`plan::ProxyMode`]; in nftables mode a scenario's node holds the
//! network plugin's iptables rules beside kube-proxy's table);
//! one per Pod, with servers that say what they saw ([`wire`]); a client
//! namespace outside; and a router between them.
//! Each packet decision the model makes ([`decisions`], [`scenario`]) is
//! then tried with real connections and compared with the model
//! ([`check`], [`oracle`], [`stats`]).
//!
//! Between the nodes the Pod network is routed (the fabric routes each
//! Pod address to its node), or, for the scenario cases built with
//! `network=vxlan`, flannel's VXLAN overlay as the model programs it
//! (`Plan::network`, the topology's `overlay`): there the fabric's traffic
//! is captured with tcpdump and every wrapped packet compared with the
//! scenario hop's tunnel ([`scenario::overlay`]).
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
use plan::{Plan, ProxyMode};
use topology::Topology;

/// The tools a run needs: always `ip` and friends; nfacct and the
/// backends' iptables for kube-proxy's iptables mode; `nft` for its
/// nftables mode, and the first backend's iptables, which loads the
/// network plugin's rules beside kube-proxy's table on a scenario's node
/// (and a host's own tables).
pub fn tools(backends: &[Backend], modes: &[ProxyMode]) -> Vec<String> {
    let mut tools: Vec<String> = ["ip", "unshare", "conntrack", "sysctl", "sh"].map(String::from).to_vec();
    let mut iptables: Vec<Backend> = Vec::new();
    if modes.contains(&ProxyMode::Iptables) {
        tools.push("nfacct".into());
        iptables.extend(backends);
    }
    if modes.contains(&ProxyMode::Nftables) {
        tools.push("nft".into());
        iptables.extend(backends.first().filter(|b| !iptables.contains(b)));
    }
    for b in iptables {
        tools.extend(b.tools());
    }
    tools
}

/// Why the harness cannot run on this machine, if it cannot.
pub fn cannot_run(backends: &[Backend], modes: &[ProxyMode]) -> Option<String> {
    if !sys::is_root() {
        return Some("not root (network namespaces, iptables and nftables need root)".into());
    }
    let missing: Vec<String> = tools(backends, modes).into_iter().filter(|t| sys::find_tool(t).is_none()).collect();
    if !missing.is_empty() {
        return Some(format!(
            "{} not found (Debian packages iproute2, util-linux, iptables, nfacct, conntrack and nftables; scripts/setup installs them)",
            missing.join(", ")
        ));
    }
    match netns::Netns::create("probe") {
        Ok(_) => None,
        Err(e) => Some(format!("cannot create a network namespace: {e}")),
    }
}

/// What the root namespace holds that the harness must leave alone:
/// links, addresses (without their lifetimes, which tick), routes of
/// every table, policy rules, both iptables backends' rules (without
/// counters, which count the host's own traffic), and the names of its
/// nftables tables (where `nft` is installed).
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
    if sys::find_tool("nft").is_some() {
        out += &sys::run("nft", &["list", "tables"], None).unwrap_or_else(|e| format!("unreadable: {e}"));
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
    let (name, mode) = (plan.name.clone(), plan.mode);
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
            let with = match mode {
                ProxyMode::Iptables => format!("iptables-{}", backend.name()),
                ProxyMode::Nftables => "kube-proxy's nftables mode".into(),
            };
            report.failures.push(format!("{name}: cannot build the cluster with {with}: {e}"));
        }
    }
}

/// The decisions on which the model's two modes part, each with how:
/// `(what, "iptables NONE, nftables REJECT")`. The packet is the
/// decision's first, on a node that has seen nothing.
pub fn mode_differences(spec: &plan::ClusterSpec, decisions: &[decisions::Decision]) -> Result<Vec<(String, String)>, String> {
    use kubehops_core::dataplane::trace::{TraceResult, TraceVerdict};
    let plans = [Plan::new(spec, decisions, ProxyMode::Iptables)?, Plan::new(spec, decisions, ProxyMode::Nftables)?];
    let verdict = |t: &TraceResult| match t.verdict {
        TraceVerdict::Dnat => "DNAT",
        TraceVerdict::Reject => "REJECT",
        TraceVerdict::Drop => "DROP",
        TraceVerdict::Accept => "ACCEPT",
        TraceVerdict::None => "no rule",
    };
    let mut out = Vec::new();
    for d in decisions {
        let pkt = kubehops_core::net::Packet::new(d.proto, kubehops_core::net::SockAddr::new(d.src, 40000), d.dst);
        let [ipt, nft] = plans.each_ref().map(|p| p.node_index(&d.node).map(|n| oracle::NodeModel::of(&p.nodes[n]).trace(&pkt, d.from_node())));
        let (Some(ipt), Some(nft)) = (ipt, nft) else { return Err(format!("{}: no node {}", d.what, d.node)) };
        let kind = if ipt.verdict != nft.verdict {
            format!("iptables {}, nftables {}", verdict(&ipt), verdict(&nft))
        } else if ipt.targets != nft.targets {
            format!("{} to other endpoints", verdict(&ipt))
        } else if ipt.masquerade != nft.masquerade {
            format!("{}, masquerade in iptables mode {}, in nftables mode {}", verdict(&ipt), ipt.masquerade, nft.masquerade)
        } else {
            continue;
        };
        out.push((format!("{} on {}", d.what, d.node), kind));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_needs_its_tools() {
        let ipt = tools(&Backend::ALL, &[ProxyMode::Iptables]);
        assert!(ipt.iter().any(|t| t == "iptables-legacy-restore") && ipt.iter().any(|t| t == "nfacct") && !ipt.iter().any(|t| t == "nft"));
        let nft = tools(&Backend::ALL, &[ProxyMode::Nftables]);
        assert!(nft.iter().any(|t| t == "nft") && !nft.iter().any(|t| t == "nfacct"));
        assert!(nft.iter().any(|t| t == "conntrack"));
        // The network plugin's rules beside kube-proxy's table: the first backend only.
        assert!(nft.iter().any(|t| t == "iptables-nft-restore") && !nft.iter().any(|t| t.starts_with("iptables-legacy")), "{nft:?}");
        let both = tools(&[Backend::Legacy], &[ProxyMode::Iptables, ProxyMode::Nftables]);
        assert_eq!(both.iter().filter(|t| *t == "iptables-legacy-restore").count(), 1, "{both:?}");
    }

    #[test]
    fn the_modes_part_where_upstreams_proxiers_do() {
        let all = sources::golden_cases();
        let case = |name: &str| all.iter().find(|c| c.spec.name.ends_with(name)).expect("case exists");
        let kinds = |name: &str| -> Vec<(String, String)> {
            let c = case(name);
            mode_differences(&c.spec, &c.decisions).unwrap()
        };
        let cluster_ip = kinds("kube-proxy/cluster-ip");
        assert!(cluster_ip.contains(&("golden: wrong port on test-node".into(), "iptables no rule, nftables REJECT".into())), "{cluster_ip:#?}");
        assert!(cluster_ip.iter().any(|(what, kind)| what.contains("172.30.0.200:80") && kind == "iptables no rule, nftables DROP"), "{cluster_ip:#?}");
        let node_port = kinds("kube-proxy/node-port");
        assert!(node_port.contains(&("golden: the node to localhost:3001 on test-node".into(), "iptables DNAT, nftables no rule".into())), "{node_port:#?}");
        let local = kinds("kube-proxy/external-traffic-policy-local");
        assert!(local.contains(&("golden: health check node port is accepted on test-node".into(), "iptables ACCEPT, nftables no rule".into())), "{local:#?}");
        // Everything else is decided alike: endpoints, masquerade, refusals.
        let kinds_seen: std::collections::BTreeSet<String> = all.iter().flat_map(|c| mode_differences(&c.spec, &c.decisions).unwrap()).map(|(_, k)| k).collect();
        let expected = ["iptables ACCEPT, nftables no rule", "iptables DNAT, nftables no rule", "iptables REJECT, nftables no rule", "iptables no rule, nftables DROP", "iptables no rule, nftables REJECT"];
        assert_eq!(kinds_seen, expected.iter().map(|k| k.to_string()).collect());
    }

    #[test]
    fn a_changed_root_state_is_shown_line_by_line() {
        let before = "1: lo\n2: eth0 inet 192.0.2.2/24\ndefault via 192.0.2.1 dev eth0\n";
        assert!(state_diff(before, before).is_empty());
        let after = "1: lo\n2: eth0 inet 192.0.2.2/24\n3: khh1-x\ndefault via 10.0.0.1 dev eth0\n";
        assert_eq!(state_diff(before, after), ["- default via 192.0.2.1 dev eth0", "+ 3: khh1-x", "+ default via 10.0.0.1 dev eth0"]);
    }
}
