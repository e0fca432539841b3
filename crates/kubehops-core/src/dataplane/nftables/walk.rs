//! The walk: what netfilter does with a packet when the node holds an
//! `ip kube-proxy` table.
//!
//! At each hook the packet meets the table's base chains for that hook in
//! the order of their priorities (`filter-prerouting-pre-dnat` at
//! dstnat-10 before `nat-prerouting` at dstnat). Within a chain, rules run
//! in order: `jump` descends and comes back, `goto` descends for good,
//! `return` and the end of a regular chain climb back, and the end of a
//! base chain accepts. An accept ends only that base chain: the next base
//! chain of the hook still sees the packet, which is how kube-proxy's
//! filter chains and nat chains share hooks. `drop` and `reject` end the
//! packet; `dnat` and `masquerade` end their chain and rewrite the packet
//! for every chain after it. A rule whose verdict-map look-up finds no
//! element does not match. `numgen random mod N` asks the [`Dice`] for one
//! of N, so fixed draws pick the same endpoint in both proxy modes.
//!
//! nat chains see only a connection's first packet (`Context::ct_new`);
//! later packets follow the conntrack entry, which the caller keeps.
//! Nothing here changes a packet but a rule's `dnat` or `masquerade`.

use super::{Action, Addr, AddrMatch, ChainType, Dir, Hook, KeyPart, Match, Rule, Ruleset, Selector, Verdict};
use crate::dataplane::path::{Dice, Entry};
use crate::net::{Packet, SockAddr};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// What the walk needs to know about the node and the connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// The node's addresses, for `fib … type local` (all of 127.0.0.0/8
    /// counts as well, as the kernel's local table says).
    pub local_addrs: Vec<Ipv4Addr>,
    /// The packet starts a connection (`ct state new`).
    pub ct_new: bool,
    /// The dynamic sets' members (ClientIP affinity): set → addresses
    /// recorded by `update` and not yet timed out.
    pub dynamic: BTreeMap<String, BTreeSet<Ipv4Addr>>,
}

impl Context {
    /// A new connection's first packet on a node with these addresses.
    pub fn new(local_addrs: Vec<Ipv4Addr>) -> Context {
        Context { local_addrs, ct_new: true, dynamic: BTreeMap::new() }
    }

    pub fn is_local(&self, ip: Ipv4Addr) -> bool {
        ip.is_loopback() || self.local_addrs.contains(&ip)
    }
}

/// A rule that matched: its chain and place, and for a look-up the
/// element it found (its set and index) or, for `numgen`, the arm taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hit {
    pub chain: String,
    pub rule: usize,
    #[serde(default)]
    pub element: Option<ElementRef>,
    #[serde(default)]
    pub arm: Option<usize>,
}

/// One element of a named set or map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementRef {
    pub set: String,
    pub index: usize,
}

/// How one base chain ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Accepted (by a rule, a `return` from the base chain, or its end):
    /// the hook's next base chain sees the packet.
    Accept,
    Drop,
    Reject,
    Dnat(SockAddr),
    Masquerade,
}

impl Outcome {
    /// Whether the packet goes no further.
    pub fn refuses(self) -> bool {
        matches!(self, Outcome::Drop | Outcome::Reject)
    }
}

/// One base chain's run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainRun {
    pub chain: String,
    pub outcome: Outcome,
    pub hits: Vec<Hit>,
}

/// One hook: the base chains the packet met there, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRun {
    pub hook: Hook,
    /// The packet as it reached the hook.
    pub packet: Packet,
    pub chains: Vec<ChainRun>,
}

impl HookRun {
    fn refused(&self) -> Option<Outcome> {
        self.chains.iter().map(|c| c.outcome).find(|o| o.refuses())
    }
}

/// How deep `jump`s may nest before the walk gives up on a table that
/// loops (nft refuses such a table when it is loaded).
const MAX_DEPTH: usize = 64;

/// Rule visits one base chain's walk may make, a few per rule of the table.
fn step_budget(rs: &Ruleset) -> usize {
    8 * rs.chains.iter().map(|c| c.rules.len()).sum::<usize>() + 1_000
}

/// The state a walk carries from chain to chain and hook to hook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carried {
    /// `meta mark`.
    pub mark: u32,
    /// `update @set { ip saddr }`: (set, address) in the order made.
    pub updates: Vec<(String, Ipv4Addr)>,
}

/// Walks one chain (a base chain, from its first rule) with `pkt`.
pub fn walk_chain(rs: &Ruleset, base: &str, pkt: &Packet, ctx: &Context, carried: &mut Carried, dice: &mut dyn Dice) -> ChainRun {
    let mut run = ChainRun { chain: base.into(), outcome: Outcome::Accept, hits: Vec::new() };
    let Some(start) = rs.chain(base) else { return run };
    // Frames to come back to: (chain, next rule). A goto replaces the
    // current frame rather than pushing one.
    let mut stack = vec![(start, 0usize)];
    let mut budget = step_budget(rs);
    while let Some((chain, i)) = stack.pop() {
        if budget == 0 || stack.len() > MAX_DEPTH {
            run.outcome = Outcome::Drop;
            return run;
        }
        budget -= 1;
        let Some(rule) = chain.rules.get(i) else { continue };
        if !matches_all(rule, rs, pkt, carried.mark, ctx) {
            stack.push((chain, i + 1));
            continue;
        }
        let mut hit = Hit { chain: chain.name.clone(), rule: i, element: None, arm: None };
        let verdict = match &rule.action {
            Action::Verdict(v) => Some(v.clone()),
            Action::Reject => {
                run.hits.push(hit);
                run.outcome = Outcome::Reject;
                return run;
            }
            Action::Vmap { key, map } => {
                let k = key_of(key, pkt);
                let found = rs.set(map).and_then(|s| s.elements.iter().position(|e| e.key == k).map(|j| (j, &s.elements[j])));
                let Some((j, e)) = found else {
                    stack.push((chain, i + 1));
                    continue;
                };
                hit.element = Some(ElementRef { set: map.clone(), index: j });
                e.verdict.clone()
            }
            Action::RandomGoto(chains) => {
                let arm = dice.pick(chains.len());
                hit.arm = Some(arm);
                chains.get(arm).map(|c| Verdict::Goto(c.clone()))
            }
            Action::MarkOr(m) => {
                carried.mark |= m;
                None
            }
            Action::MarkXor(m) => {
                carried.mark ^= m;
                None
            }
            Action::Update { set, key } => {
                carried.updates.push((set.clone(), address(*key, pkt)));
                None
            }
            Action::MasqueradeFullyRandom | Action::Dnat(_) => {
                run.outcome = if let Action::Dnat(to) = &rule.action { Outcome::Dnat(*to) } else { Outcome::Masquerade };
                run.hits.push(hit);
                return run;
            }
        };
        run.hits.push(hit);
        match verdict {
            None => stack.push((chain, i + 1)),
            Some(Verdict::Accept) => return run,
            Some(Verdict::Drop) => {
                run.outcome = Outcome::Drop;
                return run;
            }
            Some(Verdict::Return) => {}
            Some(Verdict::Jump(to)) => {
                stack.push((chain, i + 1));
                stack.extend(rs.chain(&to).map(|c| (c, 0)));
            }
            Some(Verdict::Goto(to)) => stack.extend(rs.chain(&to).map(|c| (c, 0))),
        }
    }
    run
}

/// Whether every match of `rule` holds for `pkt`.
fn matches_all(rule: &Rule, rs: &Ruleset, pkt: &Packet, mark: u32, ctx: &Context) -> bool {
    rule.matches.iter().all(|m| match m {
        Match::Ip { dir, negate, what } => {
            let ip = if *dir == Dir::Saddr { pkt.src.ip } else { pkt.dst.ip };
            in_addresses(what, ip, rs, ctx) != *negate
        }
        Match::FibLocal(dir) => ctx.is_local(if *dir == Dir::Saddr { pkt.src.ip } else { pkt.dst.ip }),
        Match::CtStateNew => ctx.ct_new,
        Match::MarkClear(m) => mark & m == 0,
        Match::L4Proto(p) => pkt.proto == *p,
    })
}

fn in_addresses(what: &AddrMatch, ip: Ipv4Addr, rs: &Ruleset, ctx: &Context) -> bool {
    let covers = |a: &Addr| match a {
        Addr::Ip(x) => *x == ip,
        Addr::Net(c) => c.contains(ip),
    };
    match what {
        AddrMatch::Is(a) => covers(a),
        AddrMatch::InAnon { items, .. } => items.iter().any(covers),
        AddrMatch::InSet(name) => {
            let stored = rs.set(name).is_some_and(|s| s.elements.iter().any(|e| e.key == [KeyPart::Ip(ip)]));
            stored || ctx.dynamic.get(name).is_some_and(|d| d.contains(&ip))
        }
    }
}

fn address(sel: Selector, pkt: &Packet) -> Ipv4Addr {
    if sel == Selector::Saddr { pkt.src.ip } else { pkt.dst.ip }
}

/// A concatenated look-up key, as the packet gives it.
fn key_of(key: &[Selector], pkt: &Packet) -> Vec<KeyPart> {
    key.iter()
        .map(|s| match s {
            Selector::Daddr | Selector::Saddr => KeyPart::Ip(address(*s, pkt)),
            Selector::L4Proto => KeyPart::Proto(pkt.proto),
            Selector::ThDport => KeyPart::Port(pkt.dst.port),
        })
        .collect()
}

/// Runs the packet through every base chain of `hook`, by priority (nat
/// chains only for a new connection, and not at all with `nat: false`).
/// A DNAT rewrites the packet for the chains after it.
fn run_hook(rs: &Ruleset, hook: Hook, pkt: &mut Packet, ctx: &Context, nat: bool, carried: &mut Carried, dice: &mut dyn Dice) -> HookRun {
    let mut bases: Vec<_> = rs.chains.iter().filter_map(|c| c.base.filter(|b| b.hook == hook).map(|b| (b.priority.value(), c))).collect();
    bases.sort_by_key(|(p, _)| *p);
    let mut run = HookRun { hook, packet: *pkt, chains: Vec::new() };
    for (_, chain) in bases {
        let is_nat = chain.base.is_some_and(|b| b.type_ == ChainType::Nat);
        if is_nat && !(nat && ctx.ct_new) {
            continue;
        }
        let c = walk_chain(rs, &chain.name, pkt, ctx, carried, dice);
        if let Outcome::Dnat(to) = c.outcome {
            pkt.dst = to;
        }
        let stop = c.outcome.refuses();
        run.chains.push(c);
        if stop {
            break;
        }
    }
    run
}

/// A packet's way through one node: each hook it met, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traversal {
    pub hooks: Vec<HookRun>,
    /// The packet after DNAT (if any); the source is not masqueraded.
    pub routed: Packet,
    pub carried: Carried,
}

impl Traversal {
    /// Where a nat chain sent the packet.
    pub fn dnat(&self) -> Option<SockAddr> {
        self.runs().find_map(|c| if let Outcome::Dnat(to) = c.outcome { Some(to) } else { None })
    }

    /// `Drop` or `Reject`, if a chain ended the packet.
    pub fn refused(&self) -> Option<Outcome> {
        self.hooks.iter().find_map(HookRun::refused)
    }

    pub fn masquerade(&self) -> bool {
        self.runs().any(|c| c.outcome == Outcome::Masquerade)
    }

    /// The rule that dropped or rejected the packet.
    pub fn refusing_hit(&self) -> Option<&Hit> {
        self.runs().find(|c| c.outcome.refuses()).and_then(|c| c.hits.last())
    }

    /// The rule that masqueraded it.
    pub fn masquerade_hit(&self) -> Option<&Hit> {
        self.runs().find(|c| c.outcome == Outcome::Masquerade).and_then(|c| c.hits.last())
    }

    /// Every base chain's run, in the order the packet met them.
    pub fn runs(&self) -> impl Iterator<Item = &ChainRun> {
        self.hooks.iter().flat_map(|h| h.chains.iter())
    }

    /// Every rule that matched, in order.
    pub fn hits(&self) -> impl Iterator<Item = &Hit> {
        self.runs().flat_map(|c| c.hits.iter())
    }
}

/// Runs a connection's first packet through the node: prerouting then
/// input (to the node) or forward and postrouting (through it); a packet
/// the node sends, output and postrouting, and if it is addressed to the
/// node itself, back in over loopback through prerouting and input again
/// (the filter chains only: the connection's NAT is settled).
pub fn traverse(rs: &Ruleset, entry: Entry, pkt: &Packet, ctx: &Context, dice: &mut dyn Dice) -> Traversal {
    let mut p = *pkt;
    let mut carried = Carried::default();
    let mut hooks = Vec::new();
    let first = if entry == Entry::Local { Hook::Output } else { Hook::Prerouting };
    hooks.push(run_hook(rs, first, &mut p, ctx, true, &mut carried, dice));
    let routed = p;
    let local = ctx.is_local(routed.dst.ip);
    let rest: &[(Hook, bool)] = match (entry, local) {
        (Entry::Arriving, true) => &[(Hook::Input, false)],
        (Entry::Arriving, false) => &[(Hook::Forward, false), (Hook::Postrouting, true)],
        (Entry::Local, false) => &[(Hook::Postrouting, true)],
        (Entry::Local, true) => &[(Hook::Postrouting, true), (Hook::Prerouting, false), (Hook::Input, false)],
    };
    for (hook, nat) in rest {
        if hooks.last().is_some_and(|h| h.refused().is_some()) {
            break;
        }
        // Masquerade is the last word on the source; the destination stays.
        let mut q = routed;
        hooks.push(run_hook(rs, *hook, &mut q, ctx, *nat, &mut carried, dice));
    }
    Traversal { hooks, routed, carried }
}

/// Every endpoint the packet could be sent to, trying each arm of each
/// `numgen`, and whether every combination was tried (the search stops
/// after [`MAX_TRIES`] runs).
pub fn reachable(rs: &Ruleset, entry: Entry, pkt: &Packet, ctx: &Context) -> (Vec<SockAddr>, bool) {
    let mut found = BTreeSet::new();
    let mut script = Script::default();
    for _ in 0..MAX_TRIES {
        script.pos = 0;
        script.seen.clear();
        let t = traverse(rs, entry, pkt, ctx, &mut script);
        if t.refused().is_none() {
            found.extend(t.dnat());
        }
        if !script.advance() {
            return (found.into_iter().collect(), true);
        }
    }
    (found.into_iter().collect(), false)
}

/// How many runs [`reachable`] makes at most.
pub const MAX_TRIES: usize = 4096;

/// Dice that replay a list of choices and record how many arms each
/// choice had, so every combination can be tried in turn.
#[derive(Default)]
struct Script {
    choices: Vec<usize>,
    seen: Vec<usize>,
    pos: usize,
}

impl Script {
    /// The next combination, odometer style; false when all were tried.
    fn advance(&mut self) -> bool {
        self.choices.truncate(self.seen.len());
        while let Some(last) = self.choices.pop() {
            let arms = self.seen[self.choices.len()];
            if last + 1 < arms {
                self.choices.push(last + 1);
                return true;
            }
        }
        false
    }
}

impl Dice for Script {
    fn roll(&mut self, p: f64) -> bool {
        // A 50:50 or lopsided match is two arms, taken first to last.
        p >= 1.0 || self.pick(2) == 0
    }

    fn pick(&mut self, n: usize) -> usize {
        let c = self.choices.get(self.pos).copied().unwrap_or_else(|| {
            self.choices.push(0);
            0
        });
        self.seen.push(n);
        self.pos += 1;
        c.min(n.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::path::FixedDraws;

    #[test]
    fn the_script_tries_every_combination() {
        let mut s = Script::default();
        let mut seen = Vec::new();
        loop {
            s.pos = 0;
            s.seen.clear();
            let a = s.pick(3);
            let b = s.pick(2);
            seen.push((a, b));
            if !s.advance() {
                break;
            }
        }
        assert_eq!(seen, vec![(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
    }

    #[test]
    fn fixed_draws_pick_as_iptables_matches_would() {
        // Draws 0.9 then 0.2 over three arms: 0.9 ≥ 1/3 (not the first),
        // 0.2 < 1/2 (the second).
        assert_eq!(FixedDraws::new(vec![0.9, 0.2]).pick(3), 1);
        assert_eq!(FixedDraws::new(vec![]).pick(3), 0);
        assert_eq!(FixedDraws::new(vec![0.9, 0.9]).pick(3), 2);
    }
}
