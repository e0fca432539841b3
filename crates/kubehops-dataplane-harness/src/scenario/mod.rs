//! Every packet hop of the scenarios, replayed through a real kernel.
//!
//! A scenario records its connections hop by hop: the packet as it
//! arrives at each node or host, what that machine's rules did to it
//! (DNAT, SNAT, the rules that matched, every endpoint it could have
//! picked), the conntrack entry it made, and the way back; and with each
//! step the data plane the step's connections ran on. The harness builds
//! that data plane (the nodes with the tables they held, the Pods, a host
//! with Docker's rules), sends the same packet (same client, address and
//! port: a Pod from its veth, a host from its own stack) and compares hop
//! by hop. What is not netfilter's is left out and counted
//! ([`adapter`]'s `SKIP_*`): ARP, a cloud balancer's own rewrite,
//! docker-proxy's userland connection, packets between machines outside;
//! servers (Pods, Envoy, CoreDNS, the resolver and sites outside) are the
//! harness's echo servers, compared by address, not payload.
//!
//! The kernel picks endpoints at random, so the connection is repeated
//! (each time on machines that have seen nothing) until it takes the
//! scenario's pick, which a kernel that picks as the model says misses
//! with probability below [`crate::stats::MISS`]; every other pick must be
//! one the hop says it could reach. Ports that `--random-fully` chose are
//! the kernel's own, and are compared as one value wherever the model
//! uses the same port; a masquerade without it must keep the port.
//!
//! Every case runs in both of kube-proxy's modes (the nftables mode's
//! builds add `mode=nftables`). In nftables mode a node holds kube-proxy's
//! `ip kube-proxy` table beside the network plugin's iptables rules (its
//! masquerade), loaded as on a real node; a hop names lines of both (of
//! the table's transaction, `RuleTable::KubeProxy`, or of `iptables-save`),
//! each checked against the rebuilt machine, and the plugin's lines are
//! counted as in iptables mode (kube-proxy's nftables rules have no
//! counters).
//!
//! The cases run once more built with `network=vxlan` (flannel's VXLAN
//! overlay as the Pod network; [`connections_vxlan`]): the same checks on
//! nodes that hold `flannel.1`, and the underlay captured and compared
//! with every hop's tunnel ([`overlay`]).
//!
//! Only [`adapter`] knows the simulator's types: the rest works on
//! [`ScenarioReplay`], so a new simulator changes that module alone.

pub mod adapter;
pub mod overlay;
pub mod stepped;

use crate::check::{self, Report};
use crate::decisions::{Decision, Mode, Source};
use crate::kernel::{KernelEntry, NodeState};
use crate::oracle;
use crate::plan::{DataplaneSpec, Machine, Plan, ProxyMode};
use crate::stats;
use crate::topology::Topology;
use crate::wire::{self, Answer, Outcome};
use kubehops_core::dataplane::iptables::{TableName, Target};
use kubehops_core::dataplane::nftables;
use kubehops_core::dataplane::rules::RuleTable;
use kubehops_core::dataplane::netfilter::Entry;
use kubehops_core::dataplane::overlay::{PodNetwork, Wrapped};
use kubehops_core::net::{Packet, Protocol, SockAddr};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::Ipv4Addr;

/// A data plane a scenario recorded, and the connections that ran on it.
pub struct ScenarioReplay {
    /// The scenario's id.
    pub scenario: String,
    /// The mode kube-proxy ran in (the scenario's `mode`).
    pub mode: ProxyMode,
    /// The Pod network the scenario was built with (`network=`).
    pub network: PodNetwork,
    pub dataplane: DataplaneSpec,
    pub connections: Vec<Connection>,
}

/// Who opens a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Client {
    /// A client outside the cluster: the outside namespace.
    Outside,
    /// A Pod: its namespace, through its veth into its node's PREROUTING.
    Pod,
    /// A process on a node or a host, by name: through its OUTPUT.
    Machine(String),
}

/// One connection, as the scenario recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    pub what: String,
    pub client: Client,
    /// The first packet as the client sends it; after a balancer, as it
    /// reaches the node the balancer chose.
    pub sent: Packet,
    /// The address the packet has when it reaches its first node, and
    /// that node: an address only ARP or a balancer sends there (a
    /// load-balancer IP) is routed to it for the connection.
    pub route: Option<(Ipv4Addr, String)>,
    /// Each rule decision a node or host made, in order.
    pub hops: Vec<MachineHop>,
    pub end: End,
    /// How many of the scenario's hops the replay covers.
    pub packet_hops: usize,
    /// The hops the Pod network carries wrapped (a VXLAN overlay's), in order.
    pub wrapped: Vec<WrappedHop>,
    /// The packets of hops that stay on one node, never wrapped.
    pub same_node: Vec<Packet>,
    /// Built with `handshake=1`: the model's conntrack entries after each
    /// of the connection's nine packets (empty otherwise). The
    /// connection's hops are then its SYN's, and its end the SYN-ACK's.
    pub handshake: Vec<Point>,
}

/// A point of a connection followed packet by packet: after `segment`
/// (`SYN`, `SYN-ACK`, … as `Segment::name` says), every entry the
/// model's machines hold for the connection.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub segment: &'static str,
    pub entries: Vec<ModelEntry>,
}

/// A machine's conntrack entry in the model, as `conntrack -L` prints
/// it (the model's own rendering, read with the kernel's parser).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelEntry {
    pub machine: String,
    /// The entry's original direction: the SYN as it reached the machine.
    pub original: Packet,
    /// `None`: the model holds no entry for it at this point.
    pub line: Option<String>,
}

/// A hop of a connection the Pod network wraps: `PacketHop::tunnel`.
#[derive(Clone, Debug, PartialEq)]
pub struct WrappedHop {
    /// The node whose device wraps it, and the one that unwraps it.
    pub from: String,
    pub to: String,
    /// On the way back (the answer).
    pub reply: bool,
    pub wrapped: Wrapped,
}

impl Connection {
    /// The same packets through the same decisions (the name aside).
    pub fn same_packets(&self, o: &Connection) -> bool {
        (&self.client, self.sent, &self.route, &self.hops, &self.end) == (&o.client, o.sent, &o.route, &o.hops, &o.end)
    }

    fn proto(&self) -> Protocol {
        self.sent.proto
    }
}

/// One machine's rule decision on a new connection.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineHop {
    pub machine: String,
    pub before: Packet,
    pub after: Packet,
    pub could_reach: Vec<SockAddr>,
    /// The rules that matched: table, line as the hop numbers it (in
    /// `iptables-save`, or for `ip kube-proxy` in its transaction), text.
    pub matched: Vec<(RuleTable, usize, String)>,
    /// Whether the machine masqueraded the packet (a masquerade that
    /// changed nothing is not one).
    pub snat: bool,
}

/// How a connection ends in the scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum End {
    /// A server answered: where the request reached it, and the source
    /// the answer comes from as it reaches the client (`None`: the
    /// scenario draws no way back).
    Answered { server: SockAddr, reply_from: Option<SockAddr> },
    /// A machine's filter rules dropped or rejected it.
    Filtered { machine: String, rejected: bool, rule: Option<(RuleTable, usize, String)> },
    /// Nothing listens: refused.
    Refused,
    /// The answer came back from another address than the one dialled.
    WrongSource { got: SockAddr },
}

/// What one scenario's cases hold in one of kube-proxy's modes, and what
/// of it the harness replays.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    pub scenario: String,
    pub mode: ProxyMode,
    pub builds: usize,
    /// Distinct data planes the connections ran on (one set of namespaces each).
    pub data_planes: usize,
    pub connections: usize,
    /// Connections identical to one on the same data plane, replayed once.
    pub identical: usize,
    /// Packet hops of replayed (or identical) connections.
    pub packet_hops: usize,
    /// Hops that carry no packet (control plane).
    pub not_packets: usize,
    /// Hops left out, by why.
    pub skipped: BTreeMap<&'static str, usize>,
    /// Connections whose server is an echo server in the replay, by what
    /// of the scenario's answer that leaves out.
    pub stand_ins: BTreeMap<&'static str, usize>,
}

/// The scenarios the core builds with kube-proxy in each of `modes`, as
/// replays, and their coverage.
pub fn connections(modes: &[ProxyMode]) -> Result<(Vec<ScenarioReplay>, Vec<Coverage>), String> {
    adapter::replays(modes)
}

/// The same cases built with flannel's VXLAN overlay as the Pod network
/// (`network=vxlan`), with kube-proxy in `mode`.
pub fn connections_vxlan(mode: ProxyMode) -> Result<(Vec<ScenarioReplay>, Vec<Coverage>), String> {
    adapter::replays_on(&[mode], PodNetwork::Vxlan(Default::default()))
}

/// The same cases built with `handshake=1` (routed, kube-proxy in
/// `mode`): the TCP connections a server answers, each followed packet by
/// packet ([`stepped`]).
///
/// A stepped connection takes seconds (held segments come again on
/// retransmission timers), so of the connections whose packet-by-packet
/// story is the same (the same kind of client, the same machines, nodes
/// or hosts, holding the same entries after every packet, addresses
/// aside) one is followed: the kernel's TCP tracking does not read the
/// addresses. Also returns how many there were in all.
pub fn connections_handshake(mode: ProxyMode) -> Result<(Vec<ScenarioReplay>, usize), String> {
    let (mut planes, _) = adapter::handshakes(mode)?;
    let all = planes.iter().map(|s| s.connections.len()).sum();
    let mut stories = HashSet::new();
    for s in &mut planes {
        let hosts: BTreeSet<&str> = s.dataplane.hosts.iter().map(|h| h.name.as_str()).collect();
        s.connections.retain(|c| stories.insert(story(c, &hosts)));
    }
    planes.retain(|s| !s.connections.is_empty());
    Ok((planes, all))
}

/// What a connection followed packet by packet shows, addresses aside.
fn story(c: &Connection, hosts: &BTreeSet<&str>) -> String {
    let client = match &c.client {
        Client::Outside => "outside".to_string(),
        Client::Pod => "pod".to_string(),
        Client::Machine(m) => format!("{} {m}", if hosts.contains(m.as_str()) { "host" } else { "node" }),
    };
    let points: Vec<String> = c
        .handshake
        .iter()
        .map(|p| {
            let entries: Vec<String> = p
                .entries
                .iter()
                .map(|e| {
                    let kind = if hosts.contains(e.machine.as_str()) { "host" } else { "node" };
                    let line = e.line.as_deref().and_then(crate::kernel::parse_entry);
                    format!("{kind}:{}", line.map_or("none".into(), |k| format!("{:?} {} {} {}", k.state, k.timeout, k.assured, k.unreplied)))
                })
                .collect();
            entries.join(",")
        })
        .collect();
    format!("{client}|{}", points.join("|"))
}

/// Addresses and servers outside the cluster the connections need.
fn outside_of(s: &ScenarioReplay) -> (Vec<Ipv4Addr>, Vec<(Protocol, SockAddr)>) {
    let pods: BTreeSet<Ipv4Addr> = s.dataplane.pods.iter().map(|p| p.0).collect();
    let mut addrs: BTreeSet<Ipv4Addr> = BTreeSet::new();
    let mut listen: BTreeSet<(Protocol, SockAddr)> = BTreeSet::new();
    for c in &s.connections {
        if c.client == Client::Outside {
            addrs.insert(c.sent.src.ip);
        }
        if let End::Answered { server, .. } = c.end {
            let inside = pods.contains(&server.ip) || s.dataplane.nodes.iter().any(|(n, ..)| n.internal_ip == server.ip);
            if !inside {
                addrs.insert(server.ip);
                listen.insert((c.proto(), server));
            }
        }
    }
    (addrs.into_iter().collect(), listen.into_iter().collect())
}

/// Replays one data plane's connections, each with its hops, and each
/// connection's random pick as a decision of its own (every endpoint, the
/// split), unless an identical decision was checked already (`seen`).
pub fn replay(s: &ScenarioReplay, backend: crate::kernel::Backend, report: &mut Report, seen: &mut HashSet<String>) {
    let (outside, listen) = outside_of(s);
    let mut plan = match Plan::from_dataplane(&s.dataplane, outside, listen) {
        Ok(p) => p,
        Err(e) => return fail_all(s, report, e),
    };
    plan.network = s.network.clone();
    // A connection followed packet by packet had its split checked when
    // replayed as one request (the routed run).
    let decisions: Vec<Option<Decision>> = s.connections.iter().map(|c| split_decision(&plan, c).filter(|_| c.handshake.is_empty())).collect();
    for d in decisions.iter().flatten() {
        if let Err(e) = plan.add_source(d) {
            return fail_all(s, report, e);
        }
    }
    let topo = match Topology::build(plan, backend) {
        Ok(t) => t,
        Err(e) => {
            let with = match s.mode {
                ProxyMode::Iptables => format!("iptables-{}", backend.name()),
                ProxyMode::Nftables => format!("kube-proxy's nftables mode (the network plugin's rules with iptables-{})", backend.name()),
            };
            return fail_all(s, report, format!("cannot build the cluster with {with}: {e}"));
        }
    };
    // Under an overlay, the fabric's traffic is captured for the whole
    // data plane, and each connection's frames are told apart by marks.
    let mut capture = match &s.network {
        PodNetwork::Routed => None,
        PodNetwork::Vxlan(_) => match overlay::Capture::start(&topo) {
            Ok(k) => Some(k),
            Err(e) => return fail_all(s, report, format!("cannot capture the underlay: {e}")),
        },
    };
    for (c, d) in s.connections.iter().zip(&decisions) {
        let n = decisions_of(c);
        report.decisions += n;
        if let Err(e) = replay_connection(&topo, c, report, capture.as_mut()) {
            report.failed += n;
            report.failures.push(format!("{} / {}: {e}", s.dataplane.name, c.what));
        }
        if let Some(d) = d.as_ref().filter(|d| seen.insert(decision_key(&topo.plan, d))) {
            check::run_decision(&topo, d, report);
        }
    }
    if let Some(k) = capture {
        match k.finish() {
            Ok(0) => {}
            Ok(n) => {
                report.overlay.dropped += n;
                report.failures.push(format!("{}: the underlay's capture dropped {n} frames, so its checks cannot stand", s.dataplane.name));
            }
            Err(e) => report.failures.push(format!("{}: {e}", s.dataplane.name)),
        }
    }
}

fn fail_all(s: &ScenarioReplay, report: &mut Report, e: String) {
    let n: usize = s.connections.iter().map(decisions_of).sum();
    report.decisions += n;
    report.failed += n;
    report.failures.push(format!("{}: {e}", s.dataplane.name));
}

/// The rule decisions a connection's replay checks: each machine's on
/// its way, and the drop.
fn decisions_of(c: &Connection) -> usize {
    c.hops.len() + usize::from(matches!(c.end, End::Filtered { .. }))
}

/// The decision of the node that picks an endpoint at random (or of the
/// first node), from the source it sees: the client, or a host in front
/// of it. A node behind another node (a Pod's own node forwarding to a
/// node port elsewhere) sees a source no decision stands for: none then.
fn split_decision(plan: &Plan, c: &Connection) -> Option<Decision> {
    let is_node = |h: &MachineHop| matches!(plan.machine(&h.machine), Some(Machine::Node(_)));
    let i = c.hops.iter().position(|h| h.could_reach.len() > 1).or_else(|| c.hops.iter().position(is_node))?;
    let h = &c.hops[i];
    if !is_node(h) {
        return None;
    }
    let source = match (i, &c.client) {
        (0, Client::Outside) => Source::Outside,
        (0, Client::Pod) => Source::Pod,
        (0, Client::Machine(_)) => Source::Node,
        (_, _) if matches!(plan.machine(&c.hops[i - 1].machine), Some(Machine::Host(_))) => Source::Host,
        _ => return None,
    };
    let what = format!("{}: {}'s decision, every endpoint", c.what, h.machine);
    Some(Decision { what, node: h.machine.clone(), source, src: h.before.src.ip, proto: c.proto(), dst: h.before.dst, want: None, mode: Mode::Split })
}

/// Decisions are the same when the node holds the same rules (iptables,
/// and kube-proxy's nftables table) and the same packet arrives from the
/// same kind of source.
fn decision_key(plan: &Plan, d: &Decision) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    plan.machine(&d.node).map(|m| (plan.machine_lines(m), plan.machine_nft(m).map(nftables::Ruleset::transaction))).hash(&mut h);
    format!("{}|{:?}|{}|{:?}|{}|{:x}", d.node, d.source, d.src, d.proto, d.dst, h.finish())
}

/// Ports the kernel chose where the model chose its own (`--random-fully`):
/// model port → kernel port.
#[derive(Default)]
struct Ports {
    free: BTreeSet<u16>,
    bound: BTreeMap<u16, u16>,
}

impl Ports {
    /// Binds a free model port to the kernel's, or checks it is the same.
    fn agree(&mut self, model: SockAddr, kernel: SockAddr) -> bool {
        if model.ip != kernel.ip {
            return false;
        }
        if !self.free.contains(&model.port) {
            return model.port == kernel.port;
        }
        *self.bound.entry(model.port).or_insert(kernel.port) == kernel.port
    }

    fn apply(&self, a: SockAddr) -> SockAddr {
        SockAddr::new(a.ip, self.bound.get(&a.port).copied().unwrap_or(a.port))
    }

    fn packet(&self, p: Packet) -> Packet {
        Packet { proto: p.proto, src: self.apply(p.src), dst: self.apply(p.dst) }
    }
}

fn machine(plan: &Plan, name: &str) -> Result<Machine, String> {
    plan.machine(name).ok_or_else(|| format!("no node or host {name}"))
}

/// Where the client's connection starts.
fn client_ns<'t>(topo: &'t Topology, c: &Connection) -> Result<&'t crate::netns::Netns, String> {
    match &c.client {
        Client::Outside => Ok(&topo.outside),
        Client::Pod => topo.plan.pod_of(c.sent.src.ip).map(|j| &topo.pods[j]).ok_or_else(|| format!("no Pod {}", c.sent.src.ip)),
        Client::Machine(name) => Ok(topo.machine_ns(machine(&topo.plan, name)?)),
    }
}

/// The chance that the kernel takes every pick the scenario took.
fn pick_probability(plan: &Plan, c: &Connection) -> Result<f64, String> {
    let mut p = 1.0;
    for (i, h) in c.hops.iter().enumerate().filter(|(_, h)| h.could_reach.len() > 1) {
        let m = machine(plan, &h.machine)?;
        let own = i == 0 && matches!(c.client, Client::Machine(_));
        let entry = if own { Entry::Local } else { Entry::Arriving };
        let branches = match m {
            // A node in its proxy mode (with the network plugin's rules).
            Machine::Node(n) => oracle::NodeModel::of(&plan.nodes[n]).branches(entry, &h.before),
            Machine::Host(_) => oracle::branches(plan.machine_rules(m), entry, &h.before, &plan.machine_ctx(m)),
        };
        p *= branches.iter().filter(|b| b.target() == Some(h.after.dst)).map(|b| b.probability).sum::<f64>();
    }
    Ok(p)
}

fn replay_connection(topo: &Topology, c: &Connection, report: &mut Report, mut capture: Option<&mut overlay::Capture>) -> Result<(), String> {
    check_lines(&topo.plan, c)?;
    let ns = client_ns(topo, c)?;
    let attempts = stats::attempts_for(pick_probability(&topo.plan, c)?);
    let from_outside = !matches!(c.client, Client::Pod) && !matches!(&c.client, Client::Machine(n) if topo.plan.node_index(n).is_some());
    let route = c.route.as_ref().filter(|(a, _)| from_outside && !topo.is_routed(*a));
    let routed_to = match route {
        Some((a, node)) => Some((*a, topo.plan.node_index(node).ok_or_else(|| format!("no node {node}"))?)),
        None => None,
    };
    if let Some((a, n)) = routed_to {
        topo.route_vip(a, Some(n))?;
    }
    let result = (|| {
        for _ in 0..attempts {
            topo.reset()?;
            let start = capture.as_deref_mut().map(|k| k.mark(topo)).transpose()?;
            let conn = wire::probe(ns, c.proto(), c.sent.src, c.sent.dst)?;
            report.connections += 1;
            if let Some(done) = judge(topo, c, &conn.outcome)? {
                // The kernel took the scenario's picks: its frames on the
                // underlay against the model's tunnels (while the
                // connection is still open, so nothing of its close).
                if let (Some(k), Some(start), Ok(())) = (capture.as_deref_mut(), start, &done) {
                    let end = k.mark(topo)?;
                    let before = report.overlay.clone();
                    if k.check(topo, c, start, end, &mut report.overlay).is_ok() {
                        return Ok(());
                    }
                    // tcpdump on every interface (`-i any`) can write a
                    // frame after a mark that another interface carried
                    // later: once, the same window is read up to a later
                    // mark (still before the next connection), and its
                    // verdict stands. Counted, and printed.
                    report.overlay = before;
                    report.overlay.rechecked += 1;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    let end = k.mark(topo)?;
                    return k.check(topo, c, start, end, &mut report.overlay);
                }
                return done;
            }
        }
        Err(format!("the kernel never took the scenario's picks in {attempts} connections"))
    })();
    // Built with `handshake=1`: the same connection once more, packet by
    // packet, on the same routes.
    let result = result.and_then(|()| if c.handshake.is_empty() { Ok(()) } else { stepped::run(topo, c, &mut report.handshake) });
    if let Some((a, _)) = routed_to {
        topo.route_vip(a, None)?;
    }
    result
}

/// One attempt's outcome against the scenario's end: `None` to try again
/// (the kernel picked another endpoint the hop could reach).
fn judge(topo: &Topology, c: &Connection, outcome: &Outcome) -> Result<Option<Result<(), String>>, String> {
    let got = describe(outcome);
    match &c.end {
        End::Answered { server, .. } => {
            let Some(a) = outcome.answer() else { return Ok(Some(Err(format!("the scenario's connection to {} {got} in the kernel", c.sent.dst)))) };
            if a.server == *server {
                return Ok(Some(compare_hops(topo, c, Some(a))));
            }
            let random = c.hops.iter().find(|h| h.could_reach.len() > 1);
            if random.is_some_and(|h| h.could_reach.contains(&a.server)) {
                return Ok(None);
            }
            Ok(Some(Err(format!("the kernel delivered it to {}, which the scenario's hops never reach (it says {server})", a.server))))
        }
        End::Filtered { rejected, .. } => {
            let ok = match outcome {
                Outcome::Refused | Outcome::Blocked => *rejected,
                Outcome::TimedOut => !*rejected,
                _ => false,
            };
            let want = if *rejected { "refused" } else { "timed out" };
            Ok(Some(if ok { compare_hops(topo, c, None) } else { Err(format!("the scenario's rules {} it; the kernel's connection {got}, not {want}", if *rejected { "reject" } else { "drop" })) }))
        }
        End::Refused => Ok(Some(if *outcome == Outcome::Refused { compare_hops(topo, c, None) } else { Err(format!("nothing listens, says the scenario; the kernel's connection {got}")) })),
        End::WrongSource { got: from } => Ok(Some(if *outcome == Outcome::TimedOut {
            compare_hops(topo, c, None)
        } else {
            Err(format!("the answer comes back from {from}, says the scenario, which the client's socket does not take; the kernel's connection {got}"))
        })),
    }
}

fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Answered(a) => format!("was answered by {} (which saw {})", a.server, a.peer),
        Outcome::Refused => "was refused".into(),
        Outcome::TimedOut => "timed out".into(),
        Outcome::Unreachable => "got ICMP unreachable".into(),
        Outcome::Blocked => "was blocked on its way out (EPERM)".into(),
        Outcome::Failed(e) => format!("failed: {e}"),
    }
}

/// Every rule line a hop (or the drop) names is that line of the rules
/// the rebuilt machine holds: of its `iptables-save`, or for kube-proxy's
/// nftables table, of its transaction (`Ruleset::transaction`).
fn check_lines(plan: &Plan, c: &Connection) -> Result<(), String> {
    let drop = match &c.end {
        End::Filtered { machine, rule: Some(r), .. } => Some((machine, r)),
        _ => None,
    };
    let named = c.hops.iter().flat_map(|h| h.matched.iter().map(move |r| (&h.machine, r))).chain(drop);
    for (name, (table, line, text)) in named {
        let m = machine(plan, name)?;
        let lines = match table {
            RuleTable::KubeProxy => plan.machine_nft(m).ok_or_else(|| format!("{name}: the scenario names line {line} of ip kube-proxy, which the rebuilt machine does not hold"))?.transaction(),
            _ => plan.machine_lines(m),
        };
        if lines.get(*line) != Some(text) {
            return Err(format!("{name}: {} line {line} is {:?} in the rebuilt rules, {text:?} in the scenario", table.name(), lines.get(*line)));
        }
    }
    Ok(())
}

/// The iptables table of a hop's line (`None`: kube-proxy's nftables table).
fn iptables_table(t: RuleTable) -> Option<TableName> {
    match t {
        RuleTable::Filter => Some(TableName::Filter),
        RuleTable::Nat => Some(TableName::Nat),
        RuleTable::Mangle => Some(TableName::Mangle),
        RuleTable::KubeProxy => None,
    }
}

/// Whether the masquerade a hop matched draws its port (iptables'
/// `--random-fully`, nftables' `masquerade fully-random`).
fn random_fully(plan: &Plan, h: &MachineHop) -> bool {
    let Some(m) = plan.machine(&h.machine) else { return false };
    h.matched.iter().rev().find_map(|(t, line, _)| match t {
        RuleTable::Nat => {
            let r = plan.rule_at(m, TableName::Nat, *line)?;
            match plan.machine_rules(m).rule(&r)?.target {
                Target::Masquerade { random_fully } => Some(random_fully),
                _ => None,
            }
        }
        RuleTable::KubeProxy => (plan.nft_rule_at(m, *line)?.action == nftables::Action::MasqueradeFullyRandom).then_some(true),
        RuleTable::Filter | RuleTable::Mangle => None,
    }) == Some(true)
}

/// The kernel's account of one connection against the scenario's: the
/// source the server saw, the client's answer, each hop's conntrack
/// entry, every machine's counters.
fn compare_hops(topo: &Topology, c: &Connection, answer: Option<Answer>) -> Result<(), String> {
    let mut ports = Ports::default();
    for h in c.hops.iter().filter(|h| h.snat && random_fully(&topo.plan, h)) {
        ports.free.insert(h.after.src.port);
    }
    let mut problems = Vec::new();
    if let (Some(a), Some(last)) = (answer, c.hops.last()) {
        if !ports.agree(last.after.src, a.peer) {
            problems.push(format!("{} saw the source {}, the scenario says {}", a.server, a.peer, last.after.src));
        }
    }
    let reply_from = match c.end {
        End::Answered { reply_from, .. } => reply_from,
        _ => None,
    };
    if let Some(from) = reply_from.filter(|f| *f != c.sent.dst) {
        problems.push(format!("the client's answer comes from {} in the kernel (its socket only takes that), from {from} in the scenario", c.sent.dst));
    }
    let machines = topo.plan.machines();
    let states: Vec<NodeState> = machines.iter().map(|m| topo.read_machine(*m)).collect::<Result<_, _>>()?;
    let answered = answer.is_some() && reply_from.is_some();
    for h in &c.hops {
        let i = machines.iter().position(|m| Some(*m) == topo.plan.machine(&h.machine)).ok_or("no machine")?;
        problems.extend(compare_hop_entry(&h.machine, h, &ports, answered, &states[i].conntrack));
    }
    problems.extend(compare_counters(topo, c, &machines, &states)?);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n    "))
    }
}

fn compare_hop_entry(name: &str, h: &MachineHop, ports: &Ports, answered: bool, table: &[KernelEntry]) -> Option<String> {
    let (before, after) = (ports.packet(h.before), ports.packet(h.after));
    let model = oracle::conntrack_entry(&before, &after, answered);
    let k = table.iter().find(|k| k.proto == before.proto && k.original == model.original);
    let Some(k) = k else { return Some(format!("{name}: no conntrack entry for {} → {}", model.original.src, model.original.dst)) };
    if k.reply != model.reply {
        return Some(format!("{name}: conntrack's reply tuple is {} → {}, the scenario's {} → {}", k.reply.src, k.reply.dst, model.reply.src, model.reply.dst));
    }
    (answered && k.unreplied).then(|| format!("{name}: conntrack shows the answered connection unreplied, the scenario's entry is {:?}", model.state))
}

/// Each hop's nat lines counted once on its machine and no other nat
/// rule anywhere (but on the machine that dropped the packet, whose nat
/// walk the scenario does not list); each of its filter lines, and the
/// rule that dropped it, counted. kube-proxy's nftables rules have no
/// counters: only their lines are checked (`check_lines`), and the
/// network plugin's iptables rules beside them are counted as above.
fn compare_counters(topo: &Topology, c: &Connection, machines: &[Machine], states: &[NodeState]) -> Result<Vec<String>, String> {
    let plan = &topo.plan;
    let mut want: Vec<BTreeMap<(String, usize), u64>> = vec![BTreeMap::new(); machines.len()];
    let mut filter: Vec<Vec<(kubehops_core::dataplane::iptables::RuleRef, String)>> = vec![Vec::new(); machines.len()];
    let index = |name: &str| -> Result<usize, String> {
        let m = machine(plan, name)?;
        machines.iter().position(|x| *x == m).ok_or_else(|| format!("no machine {name}"))
    };
    let drop = match &c.end {
        End::Filtered { machine, rule, .. } => Some((machine.clone(), rule.clone())),
        _ => None,
    };
    let lines = c.hops.iter().flat_map(|h| h.matched.iter().map(move |r| (h.machine.clone(), r.clone()))).chain(drop.iter().filter_map(|(m, r)| Some((m.clone(), r.clone()?))));
    for (name, (table, line, text)) in lines {
        let Some(table) = iptables_table(table) else { continue };
        let i = index(&name)?;
        let r = plan.rule_at(machines[i], table, line).ok_or_else(|| format!("{name}: no rule at line {line}"))?;
        match table {
            TableName::Nat => *want[i].entry((r.chain, r.index)).or_default() += 1,
            _ => filter[i].push((r, text)),
        }
    }
    let dropped_at = drop.as_ref().map(|(m, _)| index(m)).transpose()?;
    let mut out = Vec::new();
    for (i, state) in states.iter().enumerate() {
        let name = plan.machine_name(machines[i]);
        for ((table, chain), counts) in &state.counters {
            if *table != TableName::Nat || dropped_at == Some(i) {
                continue;
            }
            for (index, got) in counts.iter().enumerate() {
                let w = want[i].get(&(chain.clone(), index)).copied().unwrap_or(0);
                if *got != w {
                    let r = kubehops_core::dataplane::iptables::RuleRef { table: *table, chain: chain.clone(), index };
                    let text = plan.machine_rules(machines[i]).rule(&r).map(|x| x.render(chain)).unwrap_or_default();
                    out.push(format!("{name}: the kernel counted {got} packets on `nat: {text}`, the scenario's hops {w}"));
                }
            }
        }
        for (r, text) in &filter[i] {
            if state.counters.get(&(r.table, r.chain.clone())).and_then(|v| v.get(r.index)).copied().unwrap_or(0) == 0 {
                out.push(format!("{name}: the scenario's hop matched `{text}`, the kernel counted nothing there"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubehops_core::net::ip;

    fn all() -> (Vec<ScenarioReplay>, Vec<Coverage>) {
        connections(&[ProxyMode::Iptables]).expect("the scenarios build")
    }

    fn all_nftables() -> (Vec<ScenarioReplay>, Vec<Coverage>) {
        connections(&[ProxyMode::Nftables]).expect("the scenarios build in nftables mode")
    }

    fn find<'a>(r: &'a [ScenarioReplay], what: &str) -> Vec<&'a Connection> {
        r.iter().flat_map(|s| s.connections.iter()).filter(|c| c.what.contains(what)).collect()
    }

    #[test]
    fn the_walkthrough_gives_its_connections_and_their_hops() {
        let (r, _) = all();
        let walk: Vec<&ScenarioReplay> = r.iter().filter(|s| s.scenario == "nodeport-loadbalancer").collect();
        let shape: Vec<Vec<(Vec<String>, bool)>> =
            walk.iter().map(|s| s.connections.iter().map(|c| (c.hops.iter().map(|h| h.machine.clone()).collect(), matches!(c.end, End::Answered { reply_from: Some(_), .. }))).collect()).collect();
        // Step 2 through Node-2 to a Pod on Node-3; the balancer's
        // connection and the VIP what-if, both on Node-1.
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(shape, [vec![(n(&["node-2", "node-3"]), true)], vec![(n(&["node-1"]), true), (n(&["node-1"]), false)]]);
        let dial = &walk[0].connections[0];
        assert_eq!((dial.client.clone(), dial.sent.dst), (Client::Outside, SockAddr::new(ip(10, 0, 0, 12), 31000)));
        assert!(matches!(dial.end, End::Answered { reply_from: Some(f), .. } if f == dial.sent.dst), "the laptop hears back from the address it dialled");
        assert!(dial.hops[0].snat && !dial.hops[1].snat);
        let via_balancer = &walk[1].connections[0];
        assert_eq!(via_balancer.sent.dst, SockAddr::new(ip(10, 0, 0, 11), 31000), "the node port the balancer chose");
        let what_if = &walk[1].connections[1];
        assert_eq!(what_if.sent.dst.port, 80, "a VIP balancer keeps the balancer's address");
        assert_eq!(what_if.route, Some((what_if.sent.dst.ip, "node-1".to_string())), "routed to the node the balancer chose");
    }

    #[test]
    fn pods_hosts_and_the_outside_are_clients_and_servers() {
        let (r, _) = all();
        // The explorer's DNS lookup: Pod web through its node to CoreDNS, over UDP.
        let dns = find(&r, "tab=nodeport client=pod-web, step 2 (");
        assert_eq!(dns.len(), 1, "{:#?}", dns.iter().map(|c| (&c.what, c.sent, &c.end)).collect::<Vec<_>>());
        assert_eq!((dns[0].client.clone(), dns[0].proto()), (Client::Pod, Protocol::Udp));
        assert_eq!(dns[0].hops.iter().map(|h| h.machine.as_str()).collect::<Vec<_>>(), ["node-1", "node-2"]);
        // ExternalName: CoreDNS asks the resolver outside, web dials the site; both masqueraded.
        let egress: Vec<&Connection> = find(&r, "tab=externalname client=pod-web").into_iter().filter(|c| matches!(c.end, End::Answered { server, .. } if !server.ip.is_private())).collect();
        assert_eq!(egress.len(), 2, "{egress:?}");
        assert!(egress.iter().all(|c| c.hops.len() == 1 && c.hops[0].snat));
        // The lab in hairpin mode: the laptop's own rules DNAT localhost.
        let hairpin = find(&r, "local-lab placement=worker local=0 hairpin=1, step 1 (");
        assert_eq!(hairpin.len(), 1);
        assert_eq!(hairpin[0].client, Client::Machine("Laptop (Docker Engine)".into()));
        assert_eq!(hairpin[0].sent.dst, SockAddr::new(ip(127, 0, 0, 1), 30082));
        assert_eq!(hairpin[0].hops.len(), 3, "the laptop, the control plane, the worker");
        // A node's drop under Local, with the rule that dropped it.
        let dropped = find(&r, "notready=api-x4k2p, step 3 (");
        assert!(matches!(&dropped[0].end, End::Filtered { machine, rejected: false, rule: Some(_) } if machine == "node-1"), "{:?}", dropped[0].end);
    }

    #[test]
    fn every_scenario_of_the_registry_is_replayed_with_its_defaults() {
        let (r, cov) = all();
        for e in kubehops_core::scenarios::REGISTRY.iter().filter(|e| adapter::replayed(e.id)) {
            assert!(adapter::cases().contains(&(e.id, vec![])), "{} with its defaults", e.id);
            assert!(r.iter().any(|s| s.scenario == e.id), "{} has connections", e.id);
            assert!(cov.iter().any(|c| c.scenario == e.id && c.builds > 0));
        }
        // The explorer's defaults are one of its tabs: built once.
        assert_eq!(cov.iter().find(|c| c.scenario == "service-types").map(|c| c.builds), Some(14));
    }

    #[test]
    fn what_is_not_replayed_is_counted_with_why() {
        let (_, cov) = all();
        let of = |id: &str| cov.iter().find(|c| c.scenario == id).expect("covered");
        let lab = of("local-lab");
        assert_eq!(lab.builds, 8);
        for reason in [adapter::SKIP_ARP, adapter::SKIP_HOST_PROXY] {
            assert!(lab.skipped.get(reason).is_some_and(|n| *n > 0), "{reason}: {:?}", lab.skipped);
        }
        assert!(lab.stand_ins.get(adapter::STAND_IN_PROXY).is_some_and(|n| *n > 0), "Envoy answers: {:?}", lab.stand_ins);
        let explorer = of("service-types");
        for reason in [adapter::SKIP_BALANCER, adapter::SKIP_OUTSIDE, adapter::SKIP_NO_ROUTE, adapter::SKIP_NO_PACKET] {
            assert!(explorer.skipped.get(reason).is_some_and(|n| *n > 0), "{reason}: {:?}", explorer.skipped);
        }
        assert!(explorer.identical > 0, "identical connections on one data plane are replayed once");
        for why in [adapter::STAND_IN_DNS, adapter::STAND_IN_OUTSIDE] {
            assert!(explorer.stand_ins.get(why).is_some_and(|n| *n > 0), "{why}: {:?}", explorer.stand_ins);
        }
        assert!(cov.iter().all(|c| c.connections > 0 && c.packet_hops > 0 && c.data_planes > 0));
    }

    #[test]
    fn the_rebuilt_data_plane_holds_the_rules_every_hop_matched() {
        let (r, _) = all();
        let (n, _) = all_nftables();
        for s in r.iter().chain(&n) {
            let plan = Plan::from_dataplane(&s.dataplane, Vec::new(), Vec::new()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(plan.mode, s.mode, "{}", s.dataplane.name);
            for c in &s.connections {
                check_lines(&plan, c).unwrap_or_else(|e| panic!("{}: {e}", c.what));
                assert!(c.hops.iter().filter(|h| plan.node_index(&h.machine).is_some()).all(|h| !h.matched.is_empty()), "{}", c.what);
                let p = pick_probability(&plan, c).unwrap();
                assert!(p > 0.0 && p <= 1.0, "{}: the scenario's pick has probability {p}", c.what);
            }
        }
    }

    #[test]
    fn every_case_is_replayed_in_nftables_mode_too() {
        let (ipt, ipt_cov) = all();
        let (nft, nft_cov) = all_nftables();
        assert!(nft.iter().all(|s| s.mode == ProxyMode::Nftables) && nft_cov.iter().all(|c| c.mode == ProxyMode::Nftables));
        // The same cases, scenario by scenario: as many builds, and connections.
        for c in &ipt_cov {
            let n = nft_cov.iter().find(|n| n.scenario == c.scenario).unwrap_or_else(|| panic!("{} in nftables mode", c.scenario));
            assert_eq!(n.builds, c.builds, "{}", c.scenario);
            assert!(n.connections > 0 && n.packet_hops > 0, "{}", c.scenario);
        }
        assert!(nft.iter().all(|s| s.connections.iter().all(|c| c.what.contains("mode=nftables"))));
        // Every node holds kube-proxy's table; kube-proxy's lines are
        // named by the transaction, the network plugin's by iptables-save.
        let lines = |r: &[ScenarioReplay], t: RuleTable| r.iter().flat_map(|s| s.connections.iter().flat_map(|c| c.hops.iter().flat_map(|h| h.matched.iter()))).filter(|m| m.0 == t).count();
        assert!(nft.iter().all(|s| s.dataplane.nodes.iter().all(|(_, _, rs)| rs.is_some())));
        assert!(ipt.iter().all(|s| s.dataplane.nodes.iter().all(|(_, _, rs)| rs.is_none())));
        assert_eq!(lines(&ipt, RuleTable::KubeProxy), 0);
        assert!(lines(&nft, RuleTable::KubeProxy) > 0 && lines(&nft, RuleTable::Nat) > 0, "the network plugin's masquerade is matched too");
        let plugin = nft.iter().flat_map(|s| s.dataplane.nodes.iter()).filter(|(_, rules, _)| rules.nat.chains.iter().any(|c| !c.rules.is_empty())).count();
        assert!(plugin > 0, "nodes hold the network plugin's iptables rules beside kube-proxy's table");
        // The lab's kindnet nodes: both at once in the plan.
        let lab = nft.iter().find(|s| s.scenario == "local-lab").expect("the lab");
        let plan = Plan::from_dataplane(&lab.dataplane, Vec::new(), Vec::new()).unwrap();
        assert!(plan.nodes.iter().all(|n| n.nft.is_some() && n.uses_iptables() && n.plugin_rules().is_some()));
        // A kube-proxy line is held to the transaction: one line off, or
        // read as an iptables line, it is caught.
        let c = lab.connections.iter().find(|c| c.hops.iter().any(|h| h.matched.iter().any(|m| m.0 == RuleTable::KubeProxy))).expect("a hop through ip kube-proxy");
        let (h, k) = c.hops.iter().enumerate().find_map(|(h, x)| Some((h, x.matched.iter().position(|m| m.0 == RuleTable::KubeProxy)?))).unwrap();
        for wrong in [(RuleTable::KubeProxy, c.hops[h].matched[k].1 + 1), (RuleTable::Nat, c.hops[h].matched[k].1)] {
            let mut bad = c.clone();
            (bad.hops[h].matched[k].0, bad.hops[h].matched[k].1) = wrong;
            assert!(check_lines(&plan, &bad).is_err(), "{wrong:?}");
        }
        // kube-proxy's masquerade always draws the port (fully-random);
        // the network plugin's as its rule says.
        let snat = |by: RuleTable| {
            nft.iter().flat_map(|s| s.connections.iter().flat_map(move |c| c.hops.iter().map(move |h| (s, h)))).find(|(_, h)| h.snat && h.matched.iter().rev().find(|m| m.2.contains("masquerade") || m.2.contains("MASQUERADE")).is_some_and(|m| m.0 == by))
        };
        let plan_of = |s: &ScenarioReplay| Plan::from_dataplane(&s.dataplane, Vec::new(), Vec::new()).unwrap();
        let (s, h) = snat(RuleTable::KubeProxy).expect("a hop kube-proxy masqueraded");
        assert!(random_fully(&plan_of(s), h), "{:?}", h.matched);
        let (s, h) = snat(RuleTable::Nat).expect("a hop the network plugin masqueraded (a Pod's egress)");
        let rule = h.matched.iter().rev().find(|m| m.2.contains("-j MASQUERADE")).unwrap();
        assert_eq!(random_fully(&plan_of(s), h), rule.2.contains("--random-fully"), "{rule:?}");
    }

    #[test]
    fn a_connection_packet_by_packet_is_its_syn_and_the_entries_after_each_packet() {
        let (hs, total) = connections_handshake(ProxyMode::Iptables).expect("the scenarios build with handshake=1");
        let (plain, _) = all();
        let followed: Vec<&Connection> = hs.iter().flat_map(|s| s.connections.iter()).collect();
        assert!(!followed.is_empty() && followed.len() < total, "{} stories of {total} connections", followed.len());
        let names: Vec<&str> = kubehops_core::dataplane::tcp::standard_segments().iter().map(|(_, g)| g.name()).collect();
        for c in &followed {
            // Its SYN walks the rules the one-request story walks.
            let same = plain.iter().flat_map(|s| s.connections.iter()).find(|p| p.sent == c.sent && p.hops == c.hops);
            assert!(same.is_some(), "{}: no one-request connection walks the SYN's rules", c.what);
            assert!(matches!(c.end, End::Answered { .. }), "{}: {:?}", c.what, c.end);
            assert_eq!(c.handshake.iter().map(|p| p.segment).collect::<Vec<_>>(), names, "{}", c.what);
            // Every point names an entry on every machine the SYN made
            // one on, in conntrack's own words (TIME_WAIT at the end).
            for p in &c.handshake {
                assert!(!p.entries.is_empty(), "{}: no entry after the {}", c.what, p.segment);
                for e in &p.entries {
                    let line = e.line.as_deref().and_then(crate::kernel::parse_entry);
                    assert!(line.as_ref().is_some_and(|l| l.state.is_some()), "{}: {} after the {}: {:?}", c.what, e.machine, p.segment, e.line);
                }
            }
            let last = c.handshake.last().unwrap().entries.iter().filter_map(|e| crate::kernel::parse_entry(e.line.as_deref()?)).map(|l| l.state.unwrap_or_default()).collect::<Vec<_>>();
            assert!(last.iter().all(|s| s == "TIME_WAIT"), "{}: {last:?}", c.what);
        }
    }
}
