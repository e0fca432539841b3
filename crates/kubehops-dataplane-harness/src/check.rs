//! One decision, replayed and compared.
//!
//! The model's side comes from the core, in the node's proxy mode:
//! `trace` or `trace_nftables` (the verdict, the endpoints, masquerade)
//! and the branches of `netfilter::traverse` or `nftables::traverse`
//! ([`crate::oracle`]). The kernel's side comes from real connections
//! and from the nodes' own tools. For every connection:
//!
//! - the endpoint that answered must be one the model's walk can reach
//!   from the state the node is in (so, with session affinity, the one
//!   the client had);
//! - the source that endpoint saw must be the client's own address when
//!   the model does not masquerade, and the node's address on the way
//!   out when it does (any port: `--random-fully` picks it);
//! - REJECT must refuse the connection (a UDP sender on the node itself
//!   hears EPERM instead), DROP must let it time out, and a health check
//!   node port must be answered by the node itself;
//! - a DNAT to a Pod on another node without masquerade, for an outside
//!   client, cannot be answered: the Pod's reply goes straight back with
//!   its own address as source, and the client drops it. The harness
//!   then reads where the kernel sent the connection from conntrack.
//!
//! For the decision as a whole:
//!
//! - every endpoint the model predicts answers (within a bounded number
//!   of connections, see [`crate::stats`]);
//! - in iptables mode, each nat rule's packet counter, on every node,
//!   equals the number of connections whose model walk matched it (nat
//!   sees a connection's first packet only); each filter rule the model's
//!   walks matched has counted at least that often, and no filter rule
//!   counted that no walk of the connection's packets, first or later,
//!   could match (kube-proxy's nftables rules have no counters; in
//!   nftables mode the network plugin's iptables rules beside them, on a
//!   scenario's node, are held to the same, from the walk through them
//!   that follows kube-proxy's table, as in `NodeTables::decide`);
//! - in nftables mode, each node's affinity sets hold exactly the clients
//!   the model's walks recorded (`update @affinity-…`), each to expire
//!   after the set's timeout;
//! - each node's conntrack entry for the connection has the model's
//!   original and reply tuples, state and timeout; a connection refused
//!   before it left the node has none (one the node sent itself and
//!   refused on the way back in was confirmed on the way out, and stays
//!   unreplied).

use crate::decisions::{Decision, Mode};
use crate::kernel::{self, Counters, KernelEntry, NodeState};
use crate::plan::ProxyMode;
use crate::oracle::{self, Branch, NodeModel, Refusal};
use crate::stats;
use crate::topology::Topology;
use crate::wire::{self, Answer, Conn, Outcome};
use kubehops_core::dataplane::conntrack::{ConntrackState, Tuple};
use kubehops_core::dataplane::iptables::{RuleRef, TableName};
use kubehops_core::dataplane::netfilter::{traverse, Entry, FixedDraws, NodeContext, Traversal, Verdict};
use kubehops_core::dataplane::trace::{node_addresses, TraceResult, TraceVerdict};
use kubehops_core::net::{Packet, Protocol, SockAddr};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::Ipv4Addr;

/// What a run checked, and what disagreed.
#[derive(Default)]
pub struct Report {
    pub decisions: usize,
    /// Decisions the kernel disagreed on (each has a line in `failures`).
    pub failed: usize,
    pub connections: usize,
    /// Decisions that checked session affinity.
    pub sticky: usize,
    /// Connections whose answer was lost on an asymmetric path, as the
    /// model's walk says it must be.
    pub lost_replies: usize,
    pub failures: Vec<String>,
    /// One line per random split checked.
    pub splits: Vec<String>,
    /// What the overlay check saw on the underlay (VXLAN runs only).
    pub overlay: crate::scenario::overlay::Counts,
    /// What the connections followed packet by packet saw (handshake runs only).
    pub handshake: crate::scenario::stepped::Counts,
}

/// Connections from one client under session affinity.
pub const STICKY_CONNECTIONS: usize = 8;

/// One connection and the branch of the model's walk the kernel took.
pub struct Tried {
    pub conn: Conn,
    pub pkt: Packet,
    pub branch: Branch,
    /// The endpoint the connection reached and the source it saw there:
    /// from the answer, or, when the answer was lost on the way back,
    /// from the deciding node's conntrack entry.
    pub reached: Option<Answer>,
    /// The model's walk reaches a Pod on another node without
    /// masquerade, for a client whose route back does not pass the
    /// deciding node: the Pod's answer goes straight to the client, with
    /// the Pod's own address as source, and the client drops it. The
    /// decision is still checked, from conntrack.
    pub lost_reply: bool,
}

/// Replays `d` on `topo` and records what disagreed.
pub fn run_decision(topo: &Topology, d: &Decision, report: &mut Report) {
    report.decisions += 1;
    if let Err(e) = decide(topo, d, report) {
        report.failed += 1;
        report.failures.push(format!("{} / {} on {}: {e}", topo.plan.name, d.what, d.node));
    }
}

fn entry_of(d: &Decision) -> Entry {
    if d.from_node() {
        Entry::Local
    } else {
        Entry::Arriving
    }
}

fn decide(topo: &Topology, d: &Decision, report: &mut Report) -> Result<(), String> {
    let n = topo.plan.node_index(&d.node).ok_or_else(|| format!("no node {}", d.node))?;
    let model = NodeModel::of(&topo.plan.nodes[n]);
    let first = Packet::new(d.proto, SockAddr::new(d.src, 40000), d.dst);
    let t = model.trace(&first, d.from_node());
    // A golden file holds the iptables mode's verdict; in nftables mode
    // the model's own walk says what to expect.
    if let Some(want) = d.want.filter(|w| *w != t.verdict && topo.plan.mode == ProxyMode::Iptables) {
        return Err(format!("the model's trace says {:?}, its golden file {want:?}", t.verdict));
    }
    agree_with_trace(&model.branches(entry_of(d), &first), &t)?;
    topo.reset()?;
    let vip = (d.from_outside() && !topo.is_routed(d.dst.ip)).then_some(d.dst.ip);
    if let Some(v) = vip {
        topo.route_vip(v, Some(n))?;
    }
    let result = connect_and_compare(topo, d, n, &t, model, report);
    if let Some(v) = vip {
        topo.route_vip(v, None)?;
    }
    result
}

/// The harness's branches and `trace` are two readings of the same walk.
fn agree_with_trace(branches: &[Branch], t: &TraceResult) -> Result<(), String> {
    let mut targets: Vec<SockAddr> = branches.iter().filter_map(Branch::target).collect();
    targets.sort();
    targets.dedup();
    let first_masq = branches.first().is_some_and(Branch::masquerade);
    if targets != t.targets || first_masq != t.masquerade {
        return Err(format!("the branches of the walk ({targets:?}, masquerade {first_masq}) disagree with trace ({:?}, {})", t.targets, t.masquerade));
    }
    Ok(())
}

fn connect_and_compare(topo: &Topology, d: &Decision, n: usize, t: &TraceResult, mut model: NodeModel, report: &mut Report) -> Result<(), String> {
    let ns = topo.source_ns(d.source, n, d.src)?;
    let probs = target_probabilities(&model.branches(entry_of(d), &Packet::new(d.proto, SockAddr::new(d.src, 40000), d.dst)));
    let dnat = t.verdict == TraceVerdict::Dnat;
    let mut wanted = match d.mode {
        Mode::Split if probs.len() >= 2 => stats::SPLIT_CONNECTIONS,
        _ if dnat => stats::explore_cap(probs.len(), probs.values().copied().fold(1.0, f64::min)),
        _ => 1,
    };
    let (mut tries, mut seen, mut sticky) = (Vec::<Tried>::new(), BTreeSet::<SockAddr>::new(), false);
    while tries.len() < wanted {
        let tr = connect_once(topo, d, n, ns, t, &model).map_err(|e| format!("connection {}: {e}", tries.len() + 1))?;
        report.connections += 1;
        model.remember(&tr.branch, &tr.pkt);
        seen.extend(tr.reached.map(|a| a.server));
        if tries.is_empty() && probs.len() > 1 {
            // Affinity: from now on the model's walk has one way to go.
            let next = model.branches(entry_of(d), &tr.pkt);
            if next.iter().filter_map(Branch::target).collect::<BTreeSet<_>>().len() == 1 {
                sticky = true;
                wanted = STICKY_CONNECTIONS;
            }
        }
        tries.push(tr);
        let covered = t.targets.iter().all(|x| seen.contains(x));
        if wanted != stats::SPLIT_CONNECTIONS && !sticky && dnat && covered && tries.len() >= 2 {
            break;
        }
    }
    if sticky {
        report.sticky += 1;
        if seen.len() > 1 {
            return Err(format!("session affinity: one client reached {seen:?}"));
        }
    } else {
        let missing: Vec<String> = t.targets.iter().filter(|x| !seen.contains(x)).map(|x| x.to_string()).collect();
        if !missing.is_empty() {
            return Err(format!("{} of the model's endpoints never answered in {} connections: {}", missing.len(), tries.len(), missing.join(", ")));
        }
    }
    report.lost_replies += tries.iter().filter(|t| t.lost_reply).count();
    compare_kernel(topo, n, entry_of(d), &tries, &model)?;
    if wanted == stats::SPLIT_CONNECTIONS && !sticky {
        report.splits.push(check_split(topo, d, &tries, &probs)?);
    }
    Ok(())
}

/// One connection of a decision, matched to the model's walk.
fn connect_once(topo: &Topology, d: &Decision, n: usize, ns: &crate::netns::Netns, t: &TraceResult, model: &NodeModel) -> Result<Tried, String> {
    let conn = wire::probe(ns, d.proto, SockAddr::new(d.src, 0), d.dst)?;
    let pkt = Packet::new(d.proto, conn.local, d.dst);
    let at = |e: String| format!("from {}: {e}", pkt.src);
    let branches = model.branches(entry_of(d), &pkt);
    if conn.outcome.answer().is_none() && branches.iter().any(|b| b.target().is_some()) {
        let (branch, reached) = lost_reply(topo, d, n, &branches, &conn, &pkt).map_err(at)?;
        return Ok(Tried { conn, pkt, branch, reached: Some(reached), lost_reply: true });
    }
    let branch = pick(&branches, &conn.outcome, t, &pkt).map_err(at)?;
    check_peer(topo, n, &branch, &conn.outcome, &pkt).map_err(at)?;
    Ok(Tried { reached: conn.outcome.answer(), conn, pkt, branch, lost_reply: false })
}

/// A DNATed connection that got no answer: where the kernel sent it
/// (from the deciding node's conntrack), and whether the model's walk
/// explains why the answer cannot come back.
fn lost_reply(topo: &Topology, d: &Decision, n: usize, branches: &[Branch], conn: &Conn, pkt: &Packet) -> Result<(Branch, Answer), String> {
    let original = Tuple { src: pkt.src, dst: pkt.dst };
    let entry = kernel::conntrack(&topo.nodes[n])?.into_iter().find(|k| k.proto == pkt.proto && k.original == original);
    let Some(k) = entry else {
        return Err(format!("the model DNATs it; the kernel's connection {} and the node has no conntrack entry for it", describe(&conn.outcome)));
    };
    let branch = branches.iter().find(|b| b.target() == Some(k.reply.src)).ok_or_else(|| format!("the kernel sent it to {}, which the model's walk never reaches", k.reply.src))?;
    let remote = topo.node_of_pod(k.reply.src).is_some_and(|m| m != n);
    if branch.masquerade() || !remote || !d.from_outside() {
        return Err(format!("the kernel sent it to {} and no answer came back ({}), though the model's path returns through {}", k.reply.src, describe(&conn.outcome), d.node));
    }
    Ok((branch.clone(), Answer { server: k.reply.src, peer: k.reply.dst }))
}

/// The probability of reaching each endpoint, summed over branches.
fn target_probabilities(branches: &[Branch]) -> BTreeMap<SockAddr, f64> {
    let mut out = BTreeMap::new();
    for b in branches {
        if let Some(t) = b.target() {
            *out.entry(t).or_insert(0.0) += b.probability;
        }
    }
    out
}

/// The branch the kernel took, from how the connection went.
fn pick(branches: &[Branch], outcome: &Outcome, t: &TraceResult, pkt: &Packet) -> Result<Branch, String> {
    let reach: Vec<String> = branches.iter().filter_map(Branch::target).map(|a| a.to_string()).collect();
    let single = || branches.first().cloned().ok_or_else(|| "the model has no walk".to_string());
    match outcome {
        Outcome::Answered(a) => {
            if let Some(b) = branches.iter().find(|b| b.target() == Some(a.server)) {
                return Ok(b.clone());
            }
            // No DNAT: a health check port answered by the node itself, or
            // a packet no rule decides (a Pod's own address), delivered as sent.
            if reach.is_empty() && matches!(t.verdict, TraceVerdict::Accept | TraceVerdict::None) && a.server == pkt.dst {
                return single();
            }
            Err(format!("the kernel delivered it to {}; the model's walk reaches [{}] (verdict {:?})", a.server, reach.join(", "), t.verdict))
        }
        other => {
            if !reach.is_empty() {
                return Err(format!("the model DNATs to one of [{}]; the kernel's connection {}", reach.join(", "), describe(other)));
            }
            let b = single()?;
            // Refused on the node's own way out, a UDP sender hears EPERM.
            let blocked = *other == Outcome::Blocked && b.refused_on_output();
            let ok = match b.refused() {
                _ if blocked => true,
                Some(Refusal::Drop) => *other == Outcome::TimedOut,
                Some(Refusal::Reject) => *other == Outcome::Refused,
                None if t.verdict == TraceVerdict::Accept => false,
                None => matches!(other, Outcome::Refused | Outcome::TimedOut | Outcome::Unreachable),
            };
            if ok {
                Ok(b)
            } else {
                Err(format!("the model's verdict is {:?}; the kernel's connection {}", t.verdict, describe(other)))
            }
        }
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

/// The source the endpoint saw, against masquerade.
fn check_peer(topo: &Topology, n: usize, b: &Branch, outcome: &Outcome, pkt: &Packet) -> Result<(), String> {
    let Some(a) = outcome.answer() else { return Ok(()) };
    if b.masquerade() {
        let want = topo.plan.masquerade_source(n, a.server.ip);
        if a.peer.ip != want {
            return Err(format!("{} saw the source {}; the model masquerades it to {want}", a.server, a.peer));
        }
    } else if a.peer != pkt.src {
        return Err(format!("{} saw the source {}; the model keeps the client's {}", a.server, a.peer, pkt.src));
    }
    Ok(())
}

/// A rule, as counters and expectations name it.
type RuleKey = (TableName, String, usize);

fn key(r: &RuleRef) -> RuleKey {
    (r.table, r.chain.clone(), r.index)
}

/// What one node's counters should show.
#[derive(Default)]
struct Expect {
    nat: HashMap<RuleKey, u64>,
    filter_min: HashMap<RuleKey, u64>,
    allowed: HashSet<RuleKey>,
}

impl Expect {
    fn first_packet(&mut self, t: &Traversal) {
        for r in t.nat.matched.iter().chain(t.post.iter().flat_map(|p| p.matched.iter())) {
            *self.nat.entry(key(r)).or_default() += 1;
        }
        for r in t.filter.matched.iter().chain(t.input.iter().flat_map(|w| w.matched.iter())) {
            *self.filter_min.entry(key(r)).or_default() += 1;
            self.allowed.insert(key(r));
        }
    }

    fn later(&mut self, rules: &[RuleRef]) {
        self.allowed.extend(rules.iter().map(key));
    }
}

/// The packets after the first, at the node that decided: later packets
/// of the connection, replies, and the node's own errors (ICMP, reset).
fn later_packets(topo: &Topology, n: usize, entry: Entry, tr: &Tried, t: &Traversal, e: &mut Expect) {
    let pn = &topo.plan.nodes[n];
    let ctx = NodeContext::new(node_addresses(&pn.node));
    let dnat = matches!(t.nat.verdict, Verdict::Dnat(_));
    let back = Packet { proto: tr.pkt.proto, src: t.routed.dst, dst: tr.pkt.src };
    let mut hooks = vec![(t.filter_hook.as_str(), t.routed)];
    hooks.push(match t.filter_hook.as_str() {
        "FORWARD" => ("FORWARD", back),
        _ => ("OUTPUT", back),
    });
    if entry == Entry::Local {
        hooks.push(("INPUT", back));
        hooks.push(("INPUT", t.routed));
    }
    hooks.push(("OUTPUT", Packet { proto: tr.pkt.proto, src: SockAddr::new(pn.node.internal_ip, 0), dst: tr.pkt.src }));
    for (hook, p) in hooks {
        e.later(&oracle::established(&pn.rules, hook, &p, &ctx, dnat));
    }
}

/// The node a DNATed connection crosses to reach a Pod on another node:
/// its first packet there, as that node's iptables rules walk it (in
/// nftables mode, the network plugin's: kube-proxy's table leaves a
/// packet to a Pod as it is).
fn crossing(topo: &Topology, n: usize, tr: &Tried) -> Option<(usize, Packet, Traversal)> {
    let a = tr.reached?;
    let m = topo.node_of_pod(a.server).filter(|m| *m != n)?;
    let pm = &topo.plan.nodes[m];
    if !pm.uses_iptables() {
        return None;
    }
    let pkt = Packet { proto: tr.pkt.proto, src: a.peer, dst: a.server };
    let ctx = NodeContext::new(node_addresses(&pm.node));
    Some((m, pkt, traverse(&pm.rules.filter, &pm.rules.nat, Entry::Arriving, &pkt, &ctx, &mut FixedDraws::new(vec![]))))
}

/// What every node's iptables counters should show (in nftables mode
/// only the network plugin's rules count, where a node holds any).
fn expectations(topo: &Topology, n: usize, entry: Entry, tries: &[Tried]) -> Vec<Expect> {
    let mut e: Vec<Expect> = topo.plan.nodes.iter().map(|_| Expect::default()).collect();
    for tr in tries {
        if let Some(t) = tr.branch.iptables() {
            e[n].first_packet(t);
            later_packets(topo, n, entry, tr, t, &mut e[n]);
        }
        if let Some((m, pkt, t)) = crossing(topo, n, tr) {
            e[m].first_packet(&t);
            let pm = &topo.plan.nodes[m];
            let ctx = NodeContext::new(node_addresses(&pm.node));
            e[m].later(&oracle::established(&pm.rules, "FORWARD", &pkt, &ctx, false));
            e[m].later(&oracle::established(&pm.rules, "FORWARD", &pkt.reversed(), &ctx, false));
        }
    }
    e
}

/// Reads every node's counters (or affinity sets) and connections and
/// compares them.
pub fn compare_kernel(topo: &Topology, n: usize, entry: Entry, tries: &[Tried], model: &NodeModel) -> Result<(), String> {
    let expects = expectations(topo, n, entry, tries);
    let states = topo.read()?;
    let mut problems = Vec::new();
    for (i, e) in expects.iter().enumerate() {
        problems.extend(compare_counters(topo, i, e, &states[i].counters));
    }
    problems.extend(compare_affinity(topo, n, model, &states));
    let tables: Vec<Vec<KernelEntry>> = states.into_iter().map(|s| s.conntrack).collect();
    for tr in tries {
        problems.extend(compare_conntrack(topo, n, tr, &tables));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n    "))
    }
}

/// Seconds an affinity set's member may have aged between its last
/// update and `nft list set`.
const SET_AGE: u64 = 20;

/// In nftables mode: every node's affinity sets hold exactly the clients
/// the model's walks recorded on the deciding node (none elsewhere), each
/// expiring within the set's timeout.
fn compare_affinity(topo: &Topology, n: usize, model: &NodeModel, states: &[NodeState]) -> Vec<String> {
    let NodeModel::Nftables { ctx, .. } = model else { return Vec::new() };
    let mut out = Vec::new();
    for (i, state) in states.iter().enumerate() {
        let pn = &topo.plan.nodes[i];
        let Some(rs) = &pn.nft else { continue };
        for name in kernel::dynamic_sets(rs) {
            let want: BTreeSet<Ipv4Addr> = if i == n { ctx.dynamic.get(&name).cloned().unwrap_or_default() } else { BTreeSet::new() };
            let members = state.sets.get(&name).map(Vec::as_slice).unwrap_or_default();
            let got: BTreeSet<Ipv4Addr> = members.iter().map(|m| m.addr).collect();
            if got != want {
                out.push(format!("{}: the kernel's set {name} holds {got:?}, the model's {want:?}", pn.node.name));
            }
            let timeout = rs.set(&name).and_then(|s| s.timeout).map_or(0, u64::from);
            for m in members {
                if m.expires.is_none_or(|e| e > timeout || e + SET_AGE < timeout) {
                    out.push(format!("{}: {} in {name} expires in {:?} s, the set's timeout is {timeout} s", pn.node.name, m.addr, m.expires));
                }
            }
        }
    }
    out
}

fn rule_text(topo: &Topology, node: usize, (table, chain, index): &RuleKey) -> String {
    let r = RuleRef { table: *table, chain: chain.clone(), index: *index };
    topo.plan.nodes[node].rules.rule(&r).map_or_else(|| format!("{chain} rule {index}"), |rule| format!("{}: {}", table.as_str(), rule.render(chain)))
}

fn compare_counters(topo: &Topology, i: usize, e: &Expect, counters: &Counters) -> Vec<String> {
    let name = &topo.plan.nodes[i].node.name;
    let mut out = Vec::new();
    for ((table, chain), counts) in counters {
        for (index, &got) in counts.iter().enumerate() {
            let k: RuleKey = (*table, chain.clone(), index);
            match table {
                TableName::Nat => {
                    let want = e.nat.get(&k).copied().unwrap_or(0);
                    if got != want {
                        out.push(format!("{name}: the kernel counted {got} packets on `{}`, the model's walks {want}", rule_text(topo, i, &k)));
                    }
                }
                TableName::Filter => {
                    let min = e.filter_min.get(&k).copied().unwrap_or(0);
                    if got < min {
                        out.push(format!("{name}: the kernel counted {got} packets on `{}`, the model's first packets alone {min}", rule_text(topo, i, &k)));
                    } else if got > 0 && !e.allowed.contains(&k) {
                        out.push(format!("{name}: the kernel counted {got} packets on `{}`, which no packet of the connection meets in the model", rule_text(topo, i, &k)));
                    }
                }
                TableName::Mangle => {}
            }
        }
    }
    out
}

fn state_agrees(model: ConntrackState, k: &KernelEntry) -> bool {
    let tcp_state = match model {
        ConntrackState::Unreplied => "SYN_SENT",
        _ => "ESTABLISHED",
    };
    let tcp_ok = k.proto != Protocol::Tcp || k.state.as_deref() == Some(tcp_state);
    let flags = match model {
        ConntrackState::Unreplied => (true, false),
        ConntrackState::Replied => (false, false),
        ConntrackState::Assured => (false, true),
    };
    tcp_ok && (k.unreplied, k.assured) == flags
}

/// Seconds an entry may have aged between its last packet and `conntrack -L`.
const CONNTRACK_AGE: u64 = 20;

/// How much of a conntrack entry to compare.
#[derive(Clone, Copy, PartialEq)]
enum Compare {
    /// Tuples, state and timeout of an answered connection.
    Answered,
    /// The same for a connection whose answer never came through here.
    Unanswered,
    /// Tuples only.
    Tuples,
}

fn compare_entry(node: &str, before: Packet, after: Packet, what: Compare, table: &[KernelEntry]) -> Option<String> {
    let model = oracle::conntrack_entry(&before, &after, what == Compare::Answered);
    let found: Vec<&KernelEntry> = table.iter().filter(|k| k.proto == before.proto && k.original == model.original).collect();
    let [k] = found.as_slice() else {
        return Some(format!("{node}: {} conntrack entries for {} → {}, the model has one", found.len(), model.original.src, model.original.dst));
    };
    if k.reply != model.reply {
        return Some(format!("{node}: conntrack's reply tuple is {} → {}, the model's {} → {}", k.reply.src, k.reply.dst, model.reply.src, model.reply.dst));
    }
    if what == Compare::Tuples {
        return None;
    }
    if !state_agrees(model.state, k) {
        return Some(format!("{node}: conntrack shows {} unreplied={} assured={}, the model {:?}", k.state.as_deref().unwrap_or("-"), k.unreplied, k.assured, model.state));
    }
    let full = model.timeout();
    if k.timeout > full || k.timeout + CONNTRACK_AGE < full {
        return Some(format!("{node}: conntrack's entry expires in {} s, the model's after {full} s", k.timeout));
    }
    None
}

fn compare_conntrack(topo: &Topology, n: usize, tr: &Tried, tables: &[Vec<KernelEntry>]) -> Vec<String> {
    let name = |i: usize| topo.plan.nodes[i].node.name.clone();
    let mut out = Vec::new();
    match tr.reached {
        Some(Answer { server, peer }) => {
            let after = Packet { proto: tr.pkt.proto, src: peer, dst: server };
            // An answer lost on its way back never passed the deciding node,
            // and the crossing node saw the handshake end in the client's reset.
            let (here, there) = if tr.lost_reply { (Compare::Unanswered, Compare::Tuples) } else { (Compare::Answered, Compare::Answered) };
            out.extend(compare_entry(&name(n), tr.pkt, after, here, &tables[n]));
            if let Some(m) = topo.node_of_pod(server).filter(|m| *m != n) {
                out.extend(compare_entry(&name(m), after, after, there, &tables[m]));
            }
        }
        // Refused on its way in, after POSTROUTING: conntrack confirmed the
        // connection on the way out, so the entry stays, unreplied.
        None if tr.branch.refused().is_some() && tr.branch.confirmed() => {
            let after = Packet { proto: tr.pkt.proto, src: tr.pkt.src, dst: tr.branch.routed().dst };
            out.extend(compare_entry(&name(n), tr.pkt, after, Compare::Unanswered, &tables[n]));
        }
        // Refused before: the connection was never confirmed.
        None if tr.branch.refused().is_some() => {
            let original = Tuple { src: tr.pkt.src, dst: tr.pkt.dst };
            if tables[n].iter().any(|k| k.proto == tr.pkt.proto && k.original == original) {
                out.push(format!("{}: conntrack kept an entry for the refused connection {} → {}", name(n), original.src, original.dst));
            }
        }
        None => {}
    }
    out
}

fn check_split(topo: &Topology, d: &Decision, tries: &[Tried], probs: &BTreeMap<SockAddr, f64>) -> Result<String, String> {
    let counts: Vec<usize> = probs.keys().map(|t| tries.iter().filter(|tr| tr.conn.outcome.answer().map(|a| a.server) == Some(*t)).count()).collect();
    let p: Vec<f64> = probs.values().copied().collect();
    let x2 = stats::chi_square(&counts, &p);
    let crit = stats::critical(p.len() - 1);
    let shown: Vec<String> = probs.keys().zip(&counts).zip(&p).map(|((t, c), p)| format!("{t} {c} (p={p:.3})")).collect();
    let line = format!("{} / {} on {} ({}): {} connections: {}; chi-square {x2:.2} < {crit:.2}", topo.plan.name, d.what, d.node, topo.label(), tries.len(), shown.join(", "));
    if x2 < crit {
        Ok(line)
    } else {
        Err(format!("the split does not fit the model's probabilities at significance {}: {}", stats::ALPHA, line.replace(" < ", " >= ")))
    }
}
