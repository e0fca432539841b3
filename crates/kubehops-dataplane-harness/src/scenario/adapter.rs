//! The simulator's side: turns the core's scenarios into
//! [`ScenarioReplay`]s. This is the only code of the harness that reads
//! `sim` and `scenarios`.
//!
//! Each scenario is built with the parameter sets of [`cases`], in each of
//! kube-proxy's modes asked for (`mode=nftables` added to every set for
//! the nftables mode; a node's snapshot then holds kube-proxy's `ip
//! kube-proxy` table beside the network plugin's iptables rules). Every step
//! that carries packets keeps the data plane its connections ran on
//! (`Step::snapshot`); steps with the same data plane share one replay. A
//! connection is the hops of one `conn` (a what-if apart), across steps;
//! each becomes a [`Connection`] or is counted as skipped, with why, in
//! the scenario's [`Coverage`]. So is every hop that carries no packet.

use super::{Client, Connection, Coverage, End, MachineHop, ModelEntry, Point, ScenarioReplay, WrappedHop};
use kubehops_core::dataplane::overlay::PodNetwork;
use crate::plan::{DataplaneSpec, PlannedHost, ProxyMode};
use kubehops_core::dataplane::iptables::{RuleRef, TableName};
use kubehops_core::dataplane::kubeproxy::NodeRules;
use kubehops_core::dataplane::rules::RuleTable;
use kubehops_core::dataplane::tcp::standard_segments;
use kubehops_core::net::Packet;
use kubehops_core::scenarios::{self, Params, Scenario};
use kubehops_core::sim::{ActorId, ActorKind, DataplaneSnapshot, DropReason, HostSnapshot, Hop, Leg, MatchedRule};

pub const SKIP_ARP: &str = "ARP frames (no IP packet; the harness routes the address to the node whose speaker or kernel answered)";
pub const SKIP_BALANCER: &str = "a cloud balancer's hops and its own rewrite (the harness's client dials the node the balancer chose)";
pub const SKIP_HOST_PROXY: &str = "connections to a proxy on a host's own socket (curl to docker-proxy over the laptop's loopback; docker-proxy's own connection to the node is replayed)";
pub const SKIP_OUTSIDE: &str = "packets between machines outside the cluster, which no node's or host's rules decide (the laptop asking its resolver)";
pub const SKIP_NO_ROUTE: &str = "packets the network outside drops for want of a route (a cluster IP or Pod address dialled from the laptop)";
pub const SKIP_NO_PACKET: &str = "drops before any packet is sent (a name that does not resolve)";
pub const SKIP_OTHER_DROP: &str = "connections that end in a drop no netfilter rule makes (a balancer without a listener, a loop)";

pub const STAND_IN_PROXY: &str = "Envoy's proxying (its answer comes from its own connection upstream, which is replayed as a connection of its own)";
pub const STAND_IN_DNS: &str = "CoreDNS's answers (the records are the dns model's; the packets carrying them are replayed)";
pub const STAND_IN_OUTSIDE: &str = "the resolver and sites outside the cluster (an echo server at their address and port)";

/// Why a connection's server is an echo server in the replay, where the
/// scenario's answer is more than the addresses it carries.
fn stand_in(kind: Option<ActorKind>) -> Option<&'static str> {
    match kind? {
        ActorKind::Gateway => Some(STAND_IN_PROXY),
        ActorKind::CoreDns => Some(STAND_IN_DNS),
        ActorKind::Resolver | ActorKind::OutsideHost => Some(STAND_IN_OUTSIDE),
        _ => None,
    }
}

/// The parameter sets the harness replays: every scenario of the
/// registry with its defaults, and for the ones it knows more: the
/// explorer's every tab from both clients, NodePort under
/// `externalTrafficPolicy: Local` dialled at each node, LoadBalancer under
/// Local, and the Local node that drops for want of a ready Pod; every
/// combination of the lab's placement, policy and Docker mode. Between
/// them they take every data-plane path the scenarios draw; seeds only
/// change which endpoint the rules pick, and the harness tries the
/// kernel's picks itself.
pub fn cases() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut out = Vec::new();
    for e in scenarios::REGISTRY.iter().filter(|e| replayed(e.id)) {
        out.push((e.id, vec![]));
        out.extend(more_cases(e.id).into_iter().map(|p| (e.id, p)));
    }
    out
}

/// Whether a registry entry is replayed. "Your cluster" is not: its entry
/// builds the empty page (no cluster pasted yet), and a pasted cluster's
/// rules are the CLI's for the same objects (`kubehops-cli`'s
/// `tests/your_cluster.rs` checks that node by node), which the harness
/// replays for the CLI's fixture cluster.
pub fn replayed(id: &str) -> bool {
    id != scenarios::your_cluster::ENTRY.id
}

fn more_cases(id: &str) -> Vec<Vec<(&'static str, &'static str)>> {
    let mut out = Vec::new();
    match id {
        "service-types" => {
            for tab in ["clusterip", "nodeport", "loadbalancer", "externalname", "headless"] {
                for client in ["pod-web", "laptop"] {
                    out.push(vec![("tab", tab), ("client", client)]);
                }
            }
            let local_laptop = |more: &[(&'static str, &'static str)]| [&[("client", "laptop"), ("local", "1")], more].concat();
            out.push(local_laptop(&[("tab", "nodeport"), ("via", "node-1")]));
            out.push(local_laptop(&[("tab", "nodeport"), ("via", "node-2")]));
            out.push(local_laptop(&[("tab", "loadbalancer")]));
            out.push(local_laptop(&[("tab", "nodeport"), ("via", "node-1"), ("notready", "api-x4k2p")]));
        }
        "local-lab" => {
            for placement in ["worker", "spread"] {
                for local in ["0", "1"] {
                    for hairpin in ["0", "1"] {
                        out.push(vec![("placement", placement), ("local", local), ("hairpin", hairpin)]);
                    }
                }
            }
        }
        _ => {}
    }
    out
}

fn params(id: &str, pairs: &[(&str, &str)]) -> Result<Params, String> {
    let specs = (scenarios::entry(id).ok_or_else(|| format!("no scenario {id}"))?.params)();
    let mut p = Params::defaults(&specs);
    for (k, v) in pairs {
        let spec = specs.iter().find(|s| s.key == *k).ok_or_else(|| format!("{id} has no parameter {k}"))?;
        p.insert(k, spec.parse(v)?);
    }
    Ok(p)
}

/// Every case's connections in each of `modes`, one replay per distinct
/// data plane, and what each scenario holds that is not replayed (one
/// [`Coverage`] per scenario and mode).
pub fn replays(modes: &[ProxyMode]) -> Result<(Vec<ScenarioReplay>, Vec<Coverage>), String> {
    replays_on(modes, PodNetwork::Routed)
}

/// As [`replays`], every case built with the Pod network `network` (its
/// value added to every set, `network=vxlan`, unless routed, the default).
pub fn replays_on(modes: &[ProxyMode], network: PodNetwork) -> Result<(Vec<ScenarioReplay>, Vec<Coverage>), String> {
    replays_with(modes, network, false)
}

/// Every case built with `handshake=1` (routed, kube-proxy in `mode`):
/// the TCP connections a story follows packet by packet to their close
/// and a server answers, each as its SYN's hops (the rules' walk) and its
/// SYN-ACK's (the answer), with the model's entries after each packet
/// ([`Connection::handshake`]). Connections that end in a drop, or that a
/// proxy opens while it answers (one request and one reply), are not.
pub fn handshakes(mode: ProxyMode) -> Result<(Vec<ScenarioReplay>, Vec<Coverage>), String> {
    replays_with(&[mode], PodNetwork::Routed, true)
}

fn replays_with(modes: &[ProxyMode], network: PodNetwork, handshake: bool) -> Result<(Vec<ScenarioReplay>, Vec<Coverage>), String> {
    let mut planes: Vec<(String, DataplaneSnapshot, ScenarioReplay)> = Vec::new();
    let mut cover: Vec<Coverage> = Vec::new();
    let mut built: Vec<(&str, Params)> = Vec::new();
    for &mode in modes {
        for (id, mut pairs) in cases() {
            if mode == ProxyMode::Nftables {
                pairs.push((scenarios::params::PROXY_MODE, "nftables"));
            }
            if network != PodNetwork::Routed {
                pairs.push((scenarios::params::POD_NETWORK, scenarios::params::pod_network_value(&network)));
            }
            if handshake {
                pairs.push((scenarios::params::HANDSHAKE, "1"));
            }
            // A stated set that is the defaults is built once.
            let p = params(id, &pairs)?;
            if built.iter().any(|(i, q)| *i == id && *q == p) {
                continue;
            }
            built.push((id, p.clone()));
            if p.proxy_mode() != mode {
                return Err(format!("{id}: built with {} asked for kube-proxy's {} mode", p.proxy_mode().as_str(), mode.as_str()));
            }
            if p.pod_network() != network {
                return Err(format!("{id}: built with the Pod network {:?}, asked for {network:?}", p.pod_network()));
            }
            let s = scenarios::build(id, &p).ok_or_else(|| format!("no scenario {id}"))?;
            let label = if pairs.is_empty() { format!("{id} (defaults)") } else { format!("{id} {}", pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")) };
            let at = cover.iter().position(|c| c.scenario == id && c.mode == mode).unwrap_or_else(|| {
                cover.push(Coverage { scenario: id.into(), mode, ..Default::default() });
                cover.len() - 1
            });
            cover[at].builds += 1;
            collect(&s, &label, mode, &network, handshake, &mut planes, &mut cover[at]);
        }
    }
    for c in &mut cover {
        c.data_planes = planes.iter().filter(|(id, _, r)| *id == c.scenario && r.mode == c.mode).count();
    }
    Ok((planes.into_iter().map(|(_, _, r)| r).collect(), cover))
}

/// One built scenario: its hops, sorted into connections by data plane.
fn collect(s: &Scenario, label: &str, mode: ProxyMode, network: &PodNetwork, handshake: bool, planes: &mut Vec<(String, DataplaneSnapshot, ScenarioReplay)>, cov: &mut Coverage) {
    let mut groups: Vec<((u32, bool), usize, Vec<At>)> = Vec::new();
    for (i, st) in s.steps.iter().enumerate() {
        for (j, h) in st.hops.iter().enumerate() {
            match (h.conn, &h.packet) {
                _ if h.arp.is_some() => *cov.skipped.entry(SKIP_ARP).or_default() += 1,
                (Some(c), Some(_)) => match groups.iter_mut().find(|g| g.0 == (c, h.what_if)) {
                    Some(g) => g.2.push((i, j)),
                    None => groups.push(((c, h.what_if), i, vec![(i, j)])),
                },
                (_, None) if h.dropped.is_some() => *cov.skipped.entry(SKIP_NO_PACKET).or_default() += 1,
                _ => cov.not_packets += 1,
            }
        }
    }
    for ((conn, what_if), step, at) in groups {
        let Some(snap) = &s.steps[step].snapshot else { continue };
        let st = &s.steps[step];
        let what = format!("{label}, step {} ({}), connection {conn}{}", step + 1, st.title, if what_if { ", what if" } else { "" });
        let points = if handshake {
            match packet_by_packet(s, snap, &at) {
                Some(p) => Some(p),
                None => continue,
            }
        } else {
            None
        };
        // Followed packet by packet, the connection's rules are its SYN's
        // and its answer its SYN-ACK's.
        let opening = |&(i, j): &At| s.steps[i].hops[j].packet.as_ref().and_then(|p| p.segment).is_some_and(|g| g.flags.syn);
        let hops: Vec<&Hop> = at.iter().filter(|a| points.is_none() || opening(a)).map(|&(i, j)| &s.steps[i].hops[j]).collect();
        let (c, skipped) = match connection(s, snap, &hops, what) {
            Ok(x) => x,
            Err(reason) => {
                *cov.skipped.entry(reason).or_default() += hops.len();
                continue;
            }
        };
        if skipped > 0 {
            *cov.skipped.entry(SKIP_BALANCER).or_default() += skipped;
        }
        let server = hops.iter().find(|h| h.leg == Leg::Back).and_then(|h| s.actor(h.from)).map(|a| a.kind);
        if let Some(why) = stand_in(server) {
            *cov.stand_ins.entry(why).or_default() += 1;
        }
        let mut c = c;
        if let Some(points) = points {
            if !matches!(c.end, End::Answered { .. }) {
                continue;
            }
            c.handshake = points;
        }
        cov.connections += 1;
        cov.packet_hops += c.packet_hops;
        let at = planes.iter().position(|(id, p, _)| *id == s.id && p == snap).unwrap_or_else(|| {
            let name = format!("{} data plane of {label}, step {}", s.id, step + 1);
            planes.push((s.id.clone(), snap.clone(), ScenarioReplay { scenario: s.id.clone(), mode, network: network.clone(), dataplane: dataplane(s, snap, name), connections: Vec::new() }));
            planes.len() - 1
        });
        let replay = &mut planes[at].2;
        if replay.connections.iter().any(|o| o.same_packets(&c)) {
            cov.identical += 1;
        } else {
            replay.connections.push(c);
        }
    }
}

/// A hop of a scenario: its step and its index there.
type At = (usize, usize);

/// A TCP connection's nine packets (`handshake=1`), each with the model's
/// entries after it on the machines the SYN made one on; `None` for any
/// other connection (UDP, one ended by a drop, one a proxy opened while
/// it answered).
fn packet_by_packet(s: &Scenario, snap: &DataplaneSnapshot, at: &[At]) -> Option<Vec<Point>> {
    let m = Machines { snap, s };
    let hop = |&(i, j): &At| &s.steps[i].hops[j];
    let segments = kubehops_core::sim::hop::segments(at.iter().map(|a| (*a, hop(a))));
    let names: Vec<&str> = standard_segments().iter().map(|(_, g)| g.name()).collect();
    if segments.iter().map(|(g, _)| g.name()).collect::<Vec<_>>() != names {
        return None;
    }
    // The entries the SYN made: each machine, with the SYN as it arrived.
    let syn_end = segments[0].1;
    let made: Vec<(ActorId, String, Packet)> = at
        .iter()
        .filter(|a| **a <= syn_end)
        .filter_map(|a| {
            let p = hop(a).packet.as_ref().filter(|p| p.conntrack_entry.is_some() && !p.by_conntrack)?;
            let on = p.decided_on?;
            Some((on, m.name(on)?, p.before))
        })
        .collect();
    let points = segments
        .iter()
        .map(|(seg, (i, j))| {
            let view = s.steps[*i].views.get(j + 1);
            let entries = made
                .iter()
                .map(|(on, machine, original)| {
                    let lines = view.and_then(|v| v.nodes.iter().find(|n| n.node == *on).map(|n| &n.conntrack).or_else(|| v.hosts.iter().find(|h| h.host == *on).map(|h| &h.conntrack)));
                    let line = lines.and_then(|ls| ls.iter().find(|l| l.original.src == original.src && l.original.dst == original.dst)).map(|l| l.text.clone());
                    ModelEntry { machine: machine.clone(), original: *original, line }
                })
                .collect();
            Point { segment: seg.name(), entries }
        })
        .collect();
    Some(points)
}

/// The machines whose rules decide packets: nodes and hosts, by actor.
struct Machines<'a> {
    snap: &'a DataplaneSnapshot,
    s: &'a Scenario,
}

impl Machines<'_> {
    fn name(&self, a: ActorId) -> Option<String> {
        let node = self.snap.nodes.iter().find(|n| n.actor == a).map(|n| n.node.name.clone());
        node.or_else(|| self.snap.hosts.iter().find(|h| h.net.actor == a).map(|h| host_name(self.s, h)))
    }

    fn is_host(&self, a: ActorId) -> bool {
        self.snap.hosts.iter().any(|h| h.net.actor == a)
    }

    fn kind(&self, a: ActorId) -> Option<ActorKind> {
        self.s.actor(a).map(|x| x.kind)
    }
}

fn host_name(s: &Scenario, h: &HostSnapshot) -> String {
    s.actor(h.net.actor).map_or_else(|| "host".into(), |a| a.label.clone())
}

/// One connection's hops as the harness replays them, with the number of
/// a balancer's hops left out; or why it is not replayed at all.
fn connection(s: &Scenario, snap: &DataplaneSnapshot, hops: &[&Hop], what: String) -> Result<(Connection, usize), &'static str> {
    let m = Machines { snap, s };
    let touches = |h: &&Hop| m.name(h.from).is_some() || m.name(h.to).is_some();
    if !hops.iter().any(touches) {
        let no_route = hops.last().is_some_and(|h| matches!(h.dropped, Some(DropReason::NoRoute { .. })));
        return Err(if no_route { SKIP_NO_ROUTE } else { SKIP_OUTSIDE });
    }
    // The server is where the connection turns back.
    if hops.iter().find(|h| h.leg == Leg::Back).is_some_and(|h| m.is_host(h.from)) {
        return Err(SKIP_HOST_PROXY);
    }
    let lb = |a: ActorId| m.kind(a) == Some(ActorKind::LoadBalancer);
    let (start, stop) = match hops.iter().position(|h| lb(h.from) || lb(h.to)) {
        None => (0, hops.len()),
        Some(_) => {
            let start = hops.iter().position(|h| lb(h.from) && m.name(h.to).is_some()).ok_or(SKIP_OTHER_DROP)?;
            let stop = hops.iter().position(|h| h.leg == Leg::Back && lb(h.to)).map_or(hops.len(), |i| i + 1);
            (start, stop)
        }
    };
    let part = &hops[start..stop];
    let first = part.first().and_then(|h| h.packet.as_ref()).ok_or(SKIP_OTHER_DROP)?;
    let balanced = start > 0;
    let client = match (balanced, m.kind(part[0].from)) {
        (true, _) => Client::Outside,
        (false, Some(k)) if k.is_pod() => Client::Pod,
        (false, _) => m.name(part[0].from).map_or(Client::Outside, Client::Machine),
    };
    let sent = if balanced { first.after } else { first.before };
    // The first node the packet reaches, and what it is addressed to there.
    let at_node = part.iter().find(|h| snap.nodes.iter().any(|n| n.actor == h.to)).and_then(|h| Some((h.packet.as_ref()?.after.dst.ip, m.name(h.to)?)));
    let machine_hops: Vec<MachineHop> = part.iter().filter_map(|h| machine_hop(&m, h)).collect();
    let end = end_of(&m, part)?;
    let (wrapped, same_node) = pod_network_hops(&m, part);
    let c = Connection { what, client, sent, route: at_node, hops: machine_hops, end, packet_hops: part.len(), wrapped, same_node, handshake: Vec::new() };
    Ok((c, hops.len() - part.len()))
}

/// The hops the Pod network carries wrapped (`PacketHop::tunnel`), with
/// the nodes that wrap and unwrap them; and the packets of hops that stay
/// on one node (between a node and its own Pod, or two Pods of one node),
/// which no network wraps.
fn pod_network_hops(m: &Machines, part: &[&Hop]) -> (Vec<WrappedHop>, Vec<kubehops_core::net::Packet>) {
    let node_of = |a: ActorId| -> Option<ActorId> {
        let x = m.s.actor(a)?;
        match x.kind {
            ActorKind::Node => Some(a),
            k if k.is_pod() => x.parent,
            _ => None,
        }
    };
    let (mut wrapped, mut same) = (Vec::new(), Vec::new());
    for h in part {
        let Some(p) = &h.packet else { continue };
        match &p.tunnel {
            Some(t) => wrapped.push(WrappedHop {
                from: m.name(t.wrapped_by).unwrap_or_default(),
                to: m.name(t.unwrapped_by).unwrap_or_default(),
                reply: h.leg == Leg::Back,
                wrapped: t.wrapped,
            }),
            None if h.from != h.to && node_of(h.from).is_some() && node_of(h.from) == node_of(h.to) => same.push(p.after),
            None => {}
        }
    }
    // A packet some hop carries wrapped crosses nodes, though its hop
    // into the server's node or out of the client's stays on one.
    same.retain(|p| !wrapped.iter().any(|w| w.wrapped.inner == *p));
    (wrapped, same)
}

/// A matched rule as the replay checks it: its table (an iptables table,
/// or kube-proxy's `ip kube-proxy`), its line (of `iptables-save`, or of
/// the nftables transaction) and its text.
fn matched(r: &MatchedRule) -> (RuleTable, usize, String) {
    (r.table, r.line, r.text.clone())
}

/// A hop on which a machine's rules decided a new connection.
fn machine_hop(m: &Machines, h: &Hop) -> Option<MachineHop> {
    let p = h.packet.as_ref().filter(|p| !p.by_conntrack)?;
    let machine = m.name(p.decided_on?)?;
    let snat = p.rewrites.iter().any(|r| r.kind == kubehops_core::sim::RewriteKind::Snat);
    Some(MachineHop { machine, before: p.before, after: p.after, could_reach: p.could_reach.clone(), matched: p.matched.iter().map(matched).collect(), snat })
}

/// How the replayed part of a connection ends.
fn end_of(m: &Machines, part: &[&Hop]) -> Result<End, &'static str> {
    let last = part.last().ok_or(SKIP_OTHER_DROP)?;
    match &last.dropped {
        Some(DropReason::Filtered { node, rejected, rule, .. }) => Ok(End::Filtered { machine: m.name(*node).ok_or(SKIP_OTHER_DROP)?, rejected: *rejected, rule: rule.as_ref().map(matched) }),
        Some(DropReason::ReplyFromWrongSource { got, .. }) => Ok(End::WrongSource { got: *got }),
        Some(DropReason::Refused { .. }) => Ok(End::Refused),
        Some(DropReason::NoRoute { .. }) => Err(SKIP_NO_ROUTE),
        Some(DropReason::NoNeighbour { .. }) => Err(SKIP_ARP),
        Some(_) => Err(SKIP_OTHER_DROP),
        None => {
            let server = part.iter().rev().find(|h| h.leg == Leg::Out).and_then(|h| h.packet.as_ref()).map(|p| p.after.dst).ok_or(SKIP_OTHER_DROP)?;
            let reply_from = (last.leg == Leg::Back).then(|| last.packet.as_ref().map(|p| p.after.src)).flatten();
            Ok(End::Answered { server, reply_from })
        }
    }
}

/// The snapshot as the harness's plan reads it.
fn dataplane(s: &Scenario, snap: &DataplaneSnapshot, name: String) -> DataplaneSpec {
    DataplaneSpec {
        name,
        proxy: snap.proxy.clone(),
        nodes: snap.nodes.iter().map(|n| (n.node.clone(), n.rules.clone(), n.nftables.clone())).collect(),
        pods: snap.pods.iter().map(|p| (p.ip, p.node.clone(), p.port)).collect(),
        hosts: snap.hosts.iter().map(|h| planned_host(s, h)).collect(),
    }
}

fn planned_host(s: &Scenario, h: &HostSnapshot) -> PlannedHost {
    let net = &h.net;
    // An address is on the interface of the most specific route that leaves from it.
    let iface_of = |a: std::net::Ipv4Addr| net.routes.iter().filter(|r| r.src == a && !a.is_loopback()).max_by_key(|r| r.dst.prefix).map_or_else(|| "lo".to_string(), |r| r.iface.clone());
    let rules = NodeRules { node: host_name(s, h), filter: net.filter.clone(), nat: net.nat.clone(), services: Vec::new() };
    let mut rule_lines = Vec::new();
    for c in &net.nat.chains {
        for i in 0..c.rules.len() {
            let r = RuleRef { table: TableName::Nat, chain: c.name.clone(), index: i };
            if let Some(line) = net.line_of(&r) {
                rule_lines.push((r, line));
            }
        }
    }
    PlannedHost {
        name: host_name(s, h),
        addrs: net.addrs.iter().map(|a| (*a, iface_of(*a))).collect(),
        routes: net.iface_routes(),
        rules,
        lines: net.save(),
        rule_lines,
        route_localnet: h.route_localnet.clone(),
    }
}
