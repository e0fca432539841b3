//! Every packet hop of the scenarios, replayed through a real kernel.
//!
//! A scenario records its connections hop by hop: the packet as it
//! arrives at each node, what that node's rules did to it (DNAT, SNAT,
//! the rules that matched, every endpoint it could have picked), the
//! conntrack entry it made, and the way back. The harness builds the
//! cluster as it was when the connection ran, sends the same packet
//! (same client address and port) to the same node, and compares hop by
//! hop; only a cloud balancer's own rewrite, which is not netfilter's,
//! is left out (the client dials the node the balancer picked, as the
//! balancer would have).
//!
//! The kernel picks endpoints at random, so the connection is repeated
//! (each time on nodes that have seen nothing) until it takes the
//! scenario's pick, which a kernel that picks as the model says misses
//! with probability below [`crate::stats::MISS`]; every other pick must be
//! one the hop says it could reach. Ports that `--random-fully` chose are
//! the kernel's own, and are compared as one value wherever the model
//! uses the same port.
//!
//! Only [`adapter`] knows the simulator's types: the rest works on
//! [`ScenarioReplay`], so a new simulator changes that module alone.

use crate::check::{self, Report};
use crate::decisions::{Decision, Mode, Source};
use crate::kernel::{self, Backend, KernelEntry};
use crate::oracle;
use crate::plan::{ClusterSpec, Plan};
use crate::stats;
use crate::topology::Topology;
use crate::wire::{self, Answer};
use kubehops_core::dataplane::iptables::{RuleRef, TableName};
use kubehops_core::dataplane::netfilter::{Entry, NodeContext};
use kubehops_core::dataplane::trace::node_addresses;
use kubehops_core::net::{Packet, SockAddr};
use std::collections::{BTreeMap, BTreeSet};

/// The connections of a scenario that ran on one state of its cluster.
pub struct ScenarioReplay {
    /// The cluster as kube-proxy saw it while the connections ran.
    pub spec: ClusterSpec,
    pub connections: Vec<Connection>,
}

/// One connection, as the scenario recorded it.
#[derive(Clone, Debug)]
pub struct Connection {
    pub what: String,
    /// The node the connection first reaches, and the packet as it arrives.
    pub entry_node: String,
    pub entry: Packet,
    /// What each node's rules did on the way to the Pod, in order.
    pub hops: Vec<NodeHop>,
    /// Where the request ends: the Pod's address and port.
    pub reached: Option<SockAddr>,
    /// The source the client sees the answer come from, as it leaves the
    /// last node (`None`: the scenario shows no way back).
    pub reply_from: Option<SockAddr>,
}

/// One node's decision on a new connection.
#[derive(Clone, Debug)]
pub struct NodeHop {
    pub node: String,
    pub before: Packet,
    pub after: Packet,
    pub could_reach: Vec<SockAddr>,
    /// The rules that matched: table, line in `NodeRules::save`, text.
    pub matched: Vec<(TableName, usize, String)>,
    /// Whether the node masqueraded the packet.
    pub snat: bool,
}

/// The walkthroughs and scenarios the core builds, as replays.
pub fn connections() -> Result<Vec<ScenarioReplay>, String> {
    adapter::replays()
}

/// The simulator's side: builds [`ScenarioReplay`]s from the core's
/// scenarios. This is the only code that reads `sim` and `scenarios`.
pub mod adapter {
    use super::{Connection, NodeHop, ScenarioReplay};
    use crate::plan::ClusterSpec;
    use kubehops_core::scenarios::{self, nodeport_loadbalancer, Scenario};
    use kubehops_core::sim::{ActorId, ActorKind, Hop, HopKind, RewriteKind, World};

    /// The walkthroughs the harness replays: those whose starting cluster
    /// [`from_walkthrough`] knows.
    const WALKTHROUGHS: [&str; 1] = ["nodeport-loadbalancer"];

    pub fn replays() -> Result<Vec<ScenarioReplay>, String> {
        let mut out = Vec::new();
        for id in WALKTHROUGHS {
            let w = scenarios::build_default(id).ok_or_else(|| format!("no walkthrough {id}"))?;
            out.extend(from_walkthrough(&w)?);
        }
        Ok(out)
    }

    /// The cluster as kube-proxy sees it in `w`.
    fn spec_of(name: String, w: &World) -> ClusterSpec {
        ClusterSpec { name, nodes: w.api.nodes.clone(), services: w.api.services().cloned().collect(), slices: w.api.endpoint_slices(), proxy: w.proxy.clone() }
    }

    /// The manifest a step applied, read as `kubectl apply -f` would be
    /// (by the CLI's loader), without what the API server keeps.
    fn applied(step: &scenarios::Step) -> Result<kubehops_core::api::Service, String> {
        use kubehops_cli::{input, objects};
        let src = input::Source { name: "manifest".into(), text: step.manifest.lines.join("\n") };
        let docs = input::documents(&src).map_err(|e| e.to_string())?;
        let c = objects::load(&docs, Default::default()).map_err(|e| e.to_string())?;
        let mut svc = c.services.into_iter().next().ok_or("the step's manifest has no Service")?;
        svc.spec.cluster_ip = None;
        svc.created = None;
        Ok(svc)
    }

    /// A walkthrough does not keep its world, so the world is rebuilt:
    /// its starting cluster, and each step's manifest applied when the
    /// step applied it (then the cloud given time to provision). The
    /// replay checks every matched rule line against the rebuilt rules,
    /// so a world that drifted from the scenario's cannot pass.
    fn from_walkthrough(w: &Scenario) -> Result<Vec<ScenarioReplay>, String> {
        // The cluster each walkthrough starts from; a new one must be named
        // here rather than replayed on the wrong cluster.
        let mut world = match w.id.as_str() {
            "nodeport-loadbalancer" => nodeport_loadbalancer::cluster(),
            other => return Err(format!("the harness does not know the cluster walkthrough {other} starts from")),
        };
        let mut states = vec![ScenarioReplay { spec: spec_of(format!("walkthrough {}, before step 1", w.id), &world), connections: Vec::new() }];
        // The connection under way, and a what-if one beside it.
        let (mut main, mut what_if): (Option<Connection>, Option<Connection>) = (None, None);
        let kind = |a: ActorId| w.actor(a).map(|x| x.kind);
        for (s, step) in w.steps.iter().enumerate() {
            let title = |h: &Hop| format!("{}, step {} ({}){}", w.id, s + 1, step.title, if h.what_if { ", what if: VIP" } else { "" });
            if step.hops.iter().any(|h| h.kind == HopKind::ControlPlane && kind(h.from) == Some(ActorKind::Laptop) && kind(h.to) == Some(ActorKind::ApiServer)) {
                close(&mut states, &mut main, &mut what_if);
                world.kubectl_apply(applied(step)?).map_err(|e| format!("step {}: {e}", s + 1))?;
                let secs = world.lb.cloud().map_or(0, |c| c.provisioning_secs);
                world.wait(secs);
                world.take_trace();
                states.push(ScenarioReplay { spec: spec_of(format!("walkthrough {}, after step {}", w.id, s + 1), &world), connections: Vec::new() });
            }
            for h in &step.hops {
                let new_request = h.kind == HopKind::Request && kind(h.from) == Some(ActorKind::Laptop) && !h.what_if;
                if h.packet.is_none() || new_request {
                    close(&mut states, &mut main, &mut what_if);
                }
                if h.packet.is_none() {
                    continue;
                }
                if !h.what_if {
                    if let (Some(c), Some(last)) = (what_if.take(), states.last_mut()) {
                        last.connections.push(c);
                    }
                }
                let slot = if h.what_if { &mut what_if } else { &mut main };
                add_hop(slot.get_or_insert_with(|| Connection::empty(title(h))), h, &world, &kind);
            }
        }
        close(&mut states, &mut main, &mut what_if);
        for r in &mut states {
            r.connections.retain(|c| !c.hops.is_empty());
        }
        Ok(states.into_iter().filter(|r| !r.connections.is_empty()).collect())
    }

    /// Ends the open connections; they belong to the state they ran in.
    fn close(states: &mut [ScenarioReplay], main: &mut Option<Connection>, what_if: &mut Option<Connection>) {
        if let Some(last) = states.last_mut() {
            last.connections.extend(main.take());
            last.connections.extend(what_if.take());
        }
    }

    impl Connection {
        fn empty(what: String) -> Connection {
            Connection { what, entry_node: String::new(), entry: kubehops_core::net::Packet::new(Default::default(), zero(), zero()), hops: Vec::new(), reached: None, reply_from: None }
        }
    }

    fn zero() -> kubehops_core::net::SockAddr {
        kubehops_core::net::SockAddr::new(std::net::Ipv4Addr::UNSPECIFIED, 0)
    }

    fn add_hop(c: &mut Connection, h: &Hop, w: &World, kind: &dyn Fn(ActorId) -> Option<ActorKind>) {
        let Some(p) = &h.packet else { return };
        let node_name = |n: ActorId| w.node_index(n).and_then(|i| w.api.nodes.get(i)).map_or(String::new(), |x| x.name.clone());
        if kind(h.to) == Some(ActorKind::Node) && c.entry_node.is_empty() {
            c.entry_node = node_name(h.to);
            c.entry = p.after;
        }
        match (h.kind, p.decided_on) {
            (HopKind::Request, Some(n)) if !p.by_conntrack => c.hops.push(NodeHop {
                node: node_name(n),
                before: p.before,
                after: p.after,
                could_reach: p.could_reach.clone(),
                matched: p.matched.iter().map(|m| (m.table, m.line, m.text.clone())).collect(),
                snat: p.rewrites.iter().any(|r| r.kind == RewriteKind::Snat),
            }),
            (HopKind::Reply, Some(_)) if p.by_conntrack && !kind(h.to).is_some_and(|k| k == ActorKind::Node || k.is_pod()) => c.reply_from = Some(p.after.src),
            _ => {}
        }
        if h.kind == HopKind::Request && kind(h.to).is_some_and(ActorKind::is_pod) {
            c.reached = Some(p.after.dst);
        }
    }
}

/// Replays one state's connections, each with its hops, and the entry
/// node's decision as a decision of its own (every endpoint, the split).
pub fn replay(s: &ScenarioReplay, backend: Backend, report: &mut Report) {
    let decisions: Vec<Decision> = s.connections.iter().map(entry_decision).collect();
    let plan = match Plan::new(&s.spec, &decisions) {
        Ok(p) => p,
        Err(e) => return report.failures.push(e),
    };
    let topo = match Topology::build(plan, backend) {
        Ok(t) => t,
        Err(e) => return report.failures.push(format!("{}: cannot build the cluster with iptables-{}: {e}", s.spec.name, backend.name())),
    };
    for (c, d) in s.connections.iter().zip(&decisions) {
        report.decisions += c.hops.len();
        if let Err(e) = replay_connection(&topo, c, report) {
            report.failed += c.hops.len();
            report.failures.push(format!("{} / {}: {e}", s.spec.name, c.what));
        }
        check::run_decision(&topo, d, report);
    }
}

/// The entry node's decision, from the scenario's client.
fn entry_decision(c: &Connection) -> Decision {
    Decision {
        what: format!("{}: the entry node's decision, every endpoint", c.what),
        node: c.entry_node.clone(),
        source: Source::Outside,
        src: c.entry.src.ip,
        proto: c.entry.proto,
        dst: c.entry.dst,
        want: None,
        mode: Mode::Split,
    }
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

fn replay_connection(topo: &Topology, c: &Connection, report: &mut Report) -> Result<(), String> {
    let n = topo.plan.node_index(&c.entry_node).ok_or_else(|| format!("no node {}", c.entry_node))?;
    check_lines(&topo.plan, c)?;
    let Some(target) = c.reached else { return Err("the scenario's connection reaches no Pod; nothing to replay".into()) };
    let first = c.hops.first().ok_or("no node decided anything")?;
    let pn = &topo.plan.nodes[n];
    let branches = oracle::branches(&pn.rules, Entry::Arriving, &c.entry, &NodeContext::new(node_addresses(&pn.node)));
    let p: f64 = branches.iter().filter(|b| b.target() == Some(target)).map(|b| b.probability).sum();
    let attempts = stats::attempts_for(p);
    let vip = (!topo.is_routed(c.entry.dst.ip)).then_some(c.entry.dst.ip);
    if let Some(v) = vip {
        topo.route_vip(v, Some(n))?;
    }
    let result = (|| {
        for _ in 0..attempts {
            topo.reset()?;
            let conn = wire::probe(&topo.outside, c.entry.proto, c.entry.src, c.entry.dst)?;
            report.connections += 1;
            let Some(a) = conn.outcome.answer() else {
                return Err(format!("the scenario's connection to {} got no answer from the kernel: {:?}", c.entry.dst, conn.outcome));
            };
            if !first.could_reach.contains(&a.server) {
                return Err(format!("{} picked {}, which the hop says it could not reach ({:?})", c.entry_node, a.server, first.could_reach));
            }
            if a.server == target {
                return compare_hops(topo, c, a);
            }
        }
        Err(format!("the kernel never picked the scenario's {target} in {attempts} connections"))
    })();
    if let Some(v) = vip {
        topo.route_vip(v, None)?;
    }
    result
}

/// Every rule line a hop says matched is that line of the rules the
/// rebuilt cluster's node holds.
fn check_lines(plan: &Plan, c: &Connection) -> Result<(), String> {
    for h in &c.hops {
        let i = plan.node_index(&h.node).ok_or_else(|| format!("no node {}", h.node))?;
        let save = plan.nodes[i].rules.save();
        for (_, line, text) in &h.matched {
            if save.get(*line) != Some(text) {
                return Err(format!("{}: line {line} is {:?} in the rebuilt rules, {text:?} in the scenario", h.node, save.get(*line)));
            }
        }
    }
    Ok(())
}

/// The rule a `save()` line is, on one node.
fn rule_at(topo: &Topology, node: usize, table: TableName, line: usize) -> Option<RuleRef> {
    let rules = &topo.plan.nodes[node].rules;
    let t = if table == TableName::Nat { &rules.nat } else { &rules.filter };
    t.chains.iter().flat_map(|c| (0..c.rules.len()).map(move |i| RuleRef { table, chain: c.name.clone(), index: i })).find(|r| rules.line_of(r) == Some(line))
}

fn compare_hops(topo: &Topology, c: &Connection, a: Answer) -> Result<(), String> {
    let random_fully = |h: &NodeHop| topo.plan.node_index(&h.node).is_some_and(|i| topo.plan.nodes[i].features().random_fully);
    let mut ports = Ports::default();
    for h in c.hops.iter().filter(|h| h.snat && random_fully(h)) {
        ports.free.insert(h.after.src.port);
    }
    let last = c.hops.last().ok_or("no hop")?;
    let mut problems = Vec::new();
    if !ports.agree(last.after.src, a.peer) {
        problems.push(format!("{} saw the source {}, the scenario says {}", a.server, a.peer, last.after.src));
    }
    if let Some(from) = c.reply_from.filter(|f| *f != c.entry.dst) {
        problems.push(format!("the client's answer comes from {} in the kernel (its socket only takes that), from {from} in the scenario", c.entry.dst));
    }
    let states = topo.read()?;
    for h in &c.hops {
        let i = topo.plan.node_index(&h.node).ok_or("no node")?;
        problems.extend(compare_hop_entry(&h.node, h, &ports, c.reply_from.is_some(), &states[i].conntrack));
    }
    problems.extend(compare_hop_counters(topo, c, &states)?);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n    "))
    }
}

fn compare_hop_entry(node: &str, h: &NodeHop, ports: &Ports, answered: bool, table: &[KernelEntry]) -> Option<String> {
    let (before, after) = (ports.packet(h.before), ports.packet(h.after));
    let model = oracle::conntrack_entry(&before, &after, answered);
    let k = table.iter().find(|k| k.proto == before.proto && k.original == model.original);
    let Some(k) = k else { return Some(format!("{node}: no conntrack entry for {} → {}", model.original.src, model.original.dst)) };
    if k.reply != model.reply {
        return Some(format!("{node}: conntrack's reply tuple is {} → {}, the scenario's {} → {}", k.reply.src, k.reply.dst, model.reply.src, model.reply.dst));
    }
    (answered && (k.unreplied || !k.assured)).then(|| format!("{node}: conntrack shows unreplied={} assured={}, the scenario's entry is {:?}", k.unreplied, k.assured, model.state))
}

/// Each hop's nat lines counted once on its node, no other nat rule
/// anywhere; each of its filter lines counted.
fn compare_hop_counters(topo: &Topology, c: &Connection, states: &[kernel::NodeState]) -> Result<Vec<String>, String> {
    let mut want: Vec<BTreeMap<(String, usize), u64>> = vec![BTreeMap::new(); topo.nodes.len()];
    let mut filter: Vec<Vec<(RuleRef, String)>> = vec![Vec::new(); topo.nodes.len()];
    for h in &c.hops {
        let i = topo.plan.node_index(&h.node).ok_or("no node")?;
        for (table, line, text) in &h.matched {
            let r = rule_at(topo, i, *table, *line).ok_or_else(|| format!("{}: no rule at line {line}", h.node))?;
            match table {
                TableName::Nat => *want[i].entry((r.chain, r.index)).or_default() += 1,
                _ => filter[i].push((r, text.clone())),
            }
        }
    }
    let mut out = Vec::new();
    for (i, state) in states.iter().enumerate() {
        let counters = &state.counters;
        let name = &topo.plan.nodes[i].node.name;
        for ((table, chain), counts) in counters {
            for (index, got) in counts.iter().enumerate() {
                if *table == TableName::Nat {
                    let w = want[i].get(&(chain.clone(), index)).copied().unwrap_or(0);
                    if *got != w {
                        let text = topo.plan.nodes[i].rules.rule(&RuleRef { table: *table, chain: chain.clone(), index }).map(|r| r.render(chain)).unwrap_or_default();
                        out.push(format!("{name}: the kernel counted {got} packets on `nat: {text}`, the scenario's hops {w}"));
                    }
                }
            }
        }
        for (r, text) in &filter[i] {
            if counters.get(&(r.table, r.chain.clone())).and_then(|v| v.get(r.index)).copied().unwrap_or(0) == 0 {
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

    #[test]
    fn the_walkthrough_gives_its_connections_and_their_hops() {
        let replays = connections().unwrap();
        let shape: Vec<Vec<(String, usize)>> = replays.iter().map(|r| r.connections.iter().map(|c| (c.entry_node.clone(), c.hops.len())).collect()).collect();
        // Step 2 through Node-2 to a Pod on Node-3; the VIP what-if and the
        // balancer's connection, both on Node-1.
        assert_eq!(shape, [vec![("node-2".to_string(), 2)], vec![("node-1".to_string(), 1), ("node-1".to_string(), 1)]]);
        let dial = &replays[0].connections[0];
        assert_eq!(dial.entry.dst, SockAddr::new(ip(10, 0, 0, 12), 31000));
        assert_eq!(dial.reply_from, Some(dial.entry.dst), "the laptop hears back from the address it dialled");
        assert!(dial.hops[0].snat && !dial.hops[1].snat);
        let via_balancer = &replays[1].connections[1];
        assert_eq!(via_balancer.entry.dst, SockAddr::new(ip(10, 0, 0, 11), 31000), "the node port the balancer chose");
        let what_if = &replays[1].connections[0];
        assert_eq!(what_if.entry.dst.port, 80, "a VIP balancer keeps the balancer's address");
        assert_eq!(what_if.reply_from, None);
    }

    #[test]
    fn the_rebuilt_cluster_holds_the_rules_every_hop_matched() {
        for r in connections().unwrap() {
            let plan = Plan::new(&r.spec, &[]).unwrap();
            for c in &r.connections {
                check_lines(&plan, c).unwrap_or_else(|e| panic!("{}: {e}", c.what));
                assert!(c.hops.iter().all(|h| !h.matched.is_empty()));
            }
        }
    }
}
