//! A netfilter-like walk of a nat table: which rules a packet matches and
//! what they do to it.
//!
//! The walk follows iptables semantics: rules in order, `-j CHAIN` descends,
//! `RETURN` or the end of a user chain climbs back, a built-in chain ends
//! with its ACCEPT policy, and `DNAT`/`MASQUERADE` end the table. Random
//! choices (`-m statistic`) are asked of a [`Dice`], so a demo can fix them
//! and [`reachable`] can try every branch, in time linear in the rules it
//! visits.

use crate::dataplane::iptables::{Chain, Match, RuleRef, Table, Target};
pub use crate::dataplane::path::{Dice, Entry, FixedDraws, SeededDice};
use crate::net::{Packet, SockAddr};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::Ipv4Addr;

/// Facts about the node and the connection the walk needs.
#[derive(Clone, Debug, Default)]
pub struct NodeContext {
    /// Addresses for `-m addrtype --dst-type LOCAL` and `--src-type LOCAL`.
    pub local_addrs: Vec<Ipv4Addr>,
    /// The packet starts a connection (conntrack state NEW).
    pub ct_new: bool,
    /// The connection's destination was rewritten (conntrack state DNAT).
    pub ct_dnat: bool,
    /// `-m recent` lists: list name → remembered source addresses.
    pub recent: BTreeMap<String, BTreeSet<Ipv4Addr>>,
    /// The interface the packet arrived on; `None` for one the machine
    /// sends itself (so `! -i NAME` matches it).
    pub in_iface: Option<String>,
    /// The interface routing sends the packet out of, for `-o`. Set by
    /// [`traverse`] from `routes` once the nat table has had its say.
    pub out_iface: Option<String>,
    /// The machine's routes as (destination, interface), most specific
    /// match wins. Empty for a node whose rules never name interfaces.
    pub routes: Vec<(crate::net::Cidr, String)>,
}

impl NodeContext {
    pub fn new(local_addrs: Vec<Ipv4Addr>) -> NodeContext {
        NodeContext { local_addrs, ct_new: true, ..Default::default() }
    }

    /// Whether `ip` is an address of this node, as the kernel's local
    /// routing table says: one of its addresses, or any of 127.0.0.0/8
    /// (the loopback route covers the whole block, not just 127.0.0.1).
    pub fn is_local(&self, ip: Ipv4Addr) -> bool {
        ip.is_loopback() || self.local_addrs.contains(&ip)
    }
}

/// How the walk ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// The table let the packet through unchanged.
    Accept,
    Dnat(SockAddr),
    Masquerade,
    Drop,
    Reject,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Walk {
    pub verdict: Verdict,
    /// Every rule that matched, in the order it was hit.
    pub matched: Vec<RuleRef>,
    /// The packet mark after the walk.
    pub mark: u32,
    /// `-m recent --set` lists the source was added to.
    pub recent_set: Vec<String>,
}

/// How deep user chains may nest before a walk gives up on a table that
/// loops (real iptables refuses such a table when it is loaded).
const MAX_CHAIN_DEPTH: usize = 64;

/// How many rule visits a walk, or the search of every branch, may make
/// before it gives up: a few per rule of the table. A table kube-proxy
/// writes visits each rule about once per branch, so this is reached only
/// by tables that call the same chains over and over.
fn step_budget(table: &Table) -> usize {
    let rules: usize = table.chains.iter().map(|c| c.rules.len()).sum();
    8 * rules + BUDGET_FLOOR
}

/// The part of [`step_budget`] that does not depend on the table.
const BUDGET_FLOOR: usize = 10_000;

/// Counts the rule visits of one walk or search against [`step_budget`].
/// The budget is summed over the table only once the count passes
/// [`BUDGET_FLOOR`]: for a large table the sum reads every chain, which
/// costs more than a short walk.
struct Steps<'a> {
    table: &'a Table,
    budget: Option<usize>,
    taken: usize,
}

impl<'a> Steps<'a> {
    fn new(table: &'a Table) -> Steps<'a> {
        Steps { table, budget: None, taken: 0 }
    }

    /// Counts one visit; false once the budget is spent.
    fn take(&mut self) -> bool {
        self.taken += 1;
        let table = self.table;
        self.taken <= BUDGET_FLOOR || self.taken <= *self.budget.get_or_insert_with(|| step_budget(table))
    }
}

/// What one matched rule does to the walk.
enum Effect<'a> {
    /// Go on with the next rule of the chain.
    Next,
    /// Jump to a user chain, coming back after this rule.
    Descend(&'a str),
    /// Climb back to the caller (the end of a user chain, or `RETURN`).
    Climb,
    /// The table is done with the packet.
    End(Verdict),
}

/// The effect of a rule's target; MARK targets change `mark` on the way.
fn effect<'a>(target: &'a Target, mark: &mut u32, builtin: bool) -> Effect<'a> {
    match target {
        Target::Jump(next) => Effect::Descend(next),
        // RETURN from a built-in chain applies its policy (ACCEPT).
        Target::Return if builtin => Effect::End(Verdict::Accept),
        Target::Return => Effect::Climb,
        Target::Accept => Effect::End(Verdict::Accept),
        Target::Drop => Effect::End(Verdict::Drop),
        Target::Reject => Effect::End(Verdict::Reject),
        Target::Dnat(to) => Effect::End(Verdict::Dnat(*to)),
        Target::Masquerade { .. } => Effect::End(Verdict::Masquerade),
        Target::OrMark(v) => {
            *mark |= v;
            Effect::Next
        }
        Target::XorMark(v) => {
            *mark ^= v;
            Effect::Next
        }
        Target::Nothing => Effect::Next,
    }
}

/// Walks `table` from the built-in chain `hook` (e.g. `PREROUTING`).
pub fn walk(table: &Table, hook: &str, pkt: &Packet, mark: u32, ctx: &NodeContext, dice: &mut dyn Dice) -> Walk {
    let mut w = Walk { verdict: Verdict::Accept, matched: Vec::new(), mark, recent_set: Vec::new() };
    // A stack of (chain, next rule index); bounded so a loop in bad rules cannot hang.
    let mut stack: Vec<(&Chain, usize)> = table.chain(hook).map(|c| (c, 0)).into_iter().collect();
    let mut steps = Steps::new(table);
    while let Some((chain, idx)) = stack.pop() {
        if !steps.take() || stack.len() > MAX_CHAIN_DEPTH {
            w.verdict = Verdict::Drop;
            return w;
        }
        let Some(rule) = chain.rules.get(idx) else {
            // End of chain: a user chain returns to its caller; a built-in
            // chain applies its policy (ACCEPT).
            if chain.is_builtin() {
                return w;
            }
            continue;
        };
        if !fixed_matches(&rule.matches, pkt, w.mark, ctx).is_some_and(|p| p.is_none_or(|p| dice.roll(p))) {
            stack.push((chain, idx + 1));
            continue;
        }
        for m in &rule.matches {
            if let Match::RecentSet { name } = m {
                w.recent_set.push(name.clone());
            }
        }
        w.matched.push(RuleRef { table: table.name, chain: chain.name.clone(), index: idx });
        match effect(&rule.target, &mut w.mark, chain.is_builtin()) {
            Effect::Next => stack.push((chain, idx + 1)),
            Effect::Descend(next) => {
                stack.push((chain, idx + 1));
                // A jump to a chain that does not exist does nothing.
                stack.extend(table.chain(next).map(|c| (c, 0)));
            }
            Effect::Climb => {}
            Effect::End(v) => {
                w.verdict = v;
                return w;
            }
        }
    }
    w
}

/// Whether every match of a rule but the random one holds, and if so the
/// random match's probability. The statistic match is decided last, so a
/// rule that fails on addresses does not consume a draw.
fn fixed_matches(matches: &[Match], pkt: &Packet, mark: u32, ctx: &NodeContext) -> Option<Option<f64>> {
    let mut probability = None;
    for m in matches {
        let ok = match m {
            Match::Comment(_) => true,
            Match::Protocol(p) => pkt.proto == *p,
            Match::Source { cidr, negate } => cidr.contains(pkt.src.ip) != *negate,
            Match::Destination { cidr, negate } => cidr.contains(pkt.dst.ip) != *negate,
            Match::DestinationPort(p) => pkt.dst.port == *p,
            Match::InInterface { name, negate } => (ctx.in_iface.as_deref() == Some(name.as_str())) != *negate,
            Match::OutInterface { name, negate } => (ctx.out_iface.as_deref() == Some(name.as_str())) != *negate,
            Match::DstTypeLocal { negate } => ctx.is_local(pkt.dst.ip) != *negate,
            Match::Mark { value, mask, negate } => (mark & mask == *value) != *negate,
            Match::Probability(p) => {
                probability = Some(*p);
                true
            }
            Match::CtState { states, negate } => {
                use crate::dataplane::iptables::CtState;
                let has = |s: &CtState| match s {
                    CtState::New => ctx.ct_new,
                    CtState::Established => !ctx.ct_new,
                    CtState::Dnat => ctx.ct_dnat,
                    CtState::Related | CtState::Invalid => false,
                };
                states.iter().any(has) != *negate
            }
            Match::SrcTypeLocal { negate } => ctx.is_local(pkt.src.ip) != *negate,
            Match::RecentSet { .. } => true,
            // Counting a packet never stops it.
            Match::Nfacct(_) => true,
            Match::RecentCheck { name, .. } => ctx.recent.get(name).is_some_and(|l| l.contains(&pkt.src.ip)),
        };
        if !ok {
            return None;
        }
    }
    Some(probability)
}

/// Every DNAT destination a packet could reach, and whether the search
/// tried every branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reachable {
    /// Sorted, without duplicates.
    pub targets: Vec<SockAddr>,
    /// False when the search stopped at its step budget (a table that
    /// calls the same chains over and over): `targets` may then miss some.
    pub complete: bool,
}

/// Every DNAT destination the packet could reach, trying each outcome of
/// each random match. Sorted and without duplicates. See [`reachable`].
pub fn reachable_dnat_targets(table: &Table, hook: &str, pkt: &Packet, ctx: &NodeContext) -> Vec<SockAddr> {
    reachable(table, hook, pkt, ctx).targets
}

/// Searches every branch of the walk from `hook`: at a random match both
/// outcomes are followed, the failing one from the next rule. The walk
/// state (call stack, rule and mark) at each random match is remembered,
/// so no state is explored twice and the search is linear in the rules it
/// visits: for a Service with n endpoints, n forks of one rule each plus
/// each endpoint's chain.
///
/// The search keeps no per-branch heap data: a state is a [`Cursor`] of
/// fixed size and its call stack an id of [`Calls`]; the fork states are
/// four numbers each, mostly kept as runs of rules ([`Forks`]).
pub fn reachable(table: &Table, hook: &str, pkt: &Packet, ctx: &NodeContext) -> Reachable {
    let mut steps = Steps::new(table);
    let mut calls = Calls::new(table);
    let mut found = Vec::new();
    let mut forks = Forks::default();
    let mut todo: Vec<Cursor> = table.chain(hook).map(|chain| Cursor { chain, idx: 0, caller: Calls::ROOT, depth: 0, mark: 0 }).into_iter().collect();
    'branch: while let Some(mut at) = todo.pop() {
        loop {
            if !steps.take() {
                return Reachable { targets: sorted(found), complete: false };
            }
            if at.depth > MAX_CHAIN_DEPTH {
                break;
            }
            let Some(rule) = at.chain.rules.get(at.idx) else {
                // The end of a user chain climbs back; of a built-in one, accepts.
                match calls.caller(at) {
                    Some(back) if !at.chain.is_builtin() => at = back,
                    _ => break,
                }
                continue;
            };
            let Some(probability) = fixed_matches(&rule.matches, pkt, at.mark, ctx) else {
                at.idx += 1;
                continue;
            };
            if probability.is_some() {
                let stack = calls.canonical(at.caller);
                if !forks.insert(stack, calls.position(at.chain), at.idx as u32, at.mark) {
                    // Both outcomes from this very state were tried already.
                    break;
                }
                // The draw could fail: that branch goes on with the next rule.
                todo.push(Cursor { idx: at.idx + 1, ..at });
            }
            match effect(&rule.target, &mut at.mark, at.chain.is_builtin()) {
                Effect::Next => at.idx += 1,
                Effect::Descend(next) => match table.chain(next) {
                    Some(chain) => at = calls.call(at, chain),
                    // A jump to a chain that does not exist does nothing.
                    None => at.idx += 1,
                },
                Effect::Climb => match calls.caller(at) {
                    Some(back) => at = back,
                    None => continue 'branch,
                },
                Effect::End(v) => {
                    if let Verdict::Dnat(to) = v {
                        found.push(to);
                    }
                    break;
                }
            }
        }
    }
    Reachable { targets: sorted(found), complete: true }
}

/// Sorted in `SockAddr`'s order (address, then port) and without
/// duplicates. Each target is sorted as one integer in that order, which
/// compares much faster than the address's octets.
fn sorted(targets: Vec<SockAddr>) -> Vec<SockAddr> {
    let mut keys: Vec<u64> = targets.iter().map(|t| (u64::from(u32::from(t.ip)) << 16) | u64::from(t.port)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter().map(|k| SockAddr::new(Ipv4Addr::from((k >> 16) as u32), k as u16)).collect()
}

/// The fork states the search has seen: (call stack, chain, rule, mark).
/// The random matches of a `KUBE-SVC-` chain are met one after the other,
/// each by the branch where the one before failed, so the states of one
/// (stack, chain, mark) are kept as the run of rules seen from the first;
/// a state out of order goes in a set. For a Service of 100,000 endpoints
/// that is one small entry instead of 100,000, which stays in the cache.
#[derive(Default)]
struct Forks {
    runs: HashMap<(u32, u32, u32), std::ops::Range<u32>, BuildHasherDefault<MixHasher>>,
    others: HashSet<(u32, u32, u32, u32), BuildHasherDefault<MixHasher>>,
}

impl Forks {
    /// Remembers a state; false if it was seen already. A run and the set
    /// never hold the same state.
    fn insert(&mut self, stack: u32, chain: u32, rule: u32, mark: u32) -> bool {
        let run = match self.runs.entry((stack, chain, mark)) {
            // The first of its run: no other state of the run was seen.
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(rule..rule + 1);
                return true;
            }
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        };
        if run.contains(&rule) {
            return false;
        }
        if rule == run.end && !self.others.contains(&(stack, chain, rule, mark)) {
            run.end += 1;
            return true;
        }
        self.others.insert((stack, chain, rule, mark))
    }
}

/// Where the branch search is: a rule of a chain, the call stack below it
/// (an id of [`Calls`]) and its depth, and the packet mark.
#[derive(Clone, Copy)]
struct Cursor<'a> {
    chain: &'a Chain,
    idx: usize,
    caller: u32,
    depth: usize,
    mark: u32,
}

/// The call stacks of the branch search, shared between branches: each id
/// is one return point (the chain and rule to go on with, and that
/// chain's own caller), so a branch holds its stack as one number.
///
/// A call is recorded without a look-up; the same stack may then have
/// several ids. Fork states need one name per stack, so [`Calls::canonical`]
/// interns a stack when a random match asks for it: a kube-proxy table
/// forks only in its `KUBE-SVC-` chains, so the stacks of the 100,000
/// `KUBE-SEP-` calls of a large Service are never interned. Chains are
/// named by their position in the table, and every number is a `u32`, so
/// the search's sets stay small.
struct Calls<'a> {
    table: &'a Table,
    frames: Vec<Frame>,
    /// Interned stacks: (interned caller, chain position, rule to return to) → id.
    interned: HashMap<(u32, u32, u32), u32, BuildHasherDefault<MixHasher>>,
}

/// One recorded call: where it returns to.
struct Frame {
    caller: u32,
    chain: u32,
    back_to: u32,
    /// The interned id of this stack, once asked for.
    canonical: Option<u32>,
}

impl<'a> Calls<'a> {
    /// The id of the empty stack (the hook's own chain), recorded and interned.
    const ROOT: u32 = u32::MAX;

    fn new(table: &'a Table) -> Calls<'a> {
        Calls { table, frames: Vec::new(), interned: HashMap::default() }
    }

    /// The position in the table of one of its chains, from its address
    /// (the search holds only the table's own chains).
    fn position(&self, chain: &Chain) -> u32 {
        let base = self.table.chains.as_ptr() as usize;
        ((chain as *const Chain as usize - base) / std::mem::size_of::<Chain>()) as u32
    }

    /// Enters `callee` from the rule `at` points to; returning comes back
    /// to the rule after it.
    fn call(&mut self, at: Cursor<'a>, callee: &'a Chain) -> Cursor<'a> {
        let id = self.frames.len() as u32;
        self.frames.push(Frame { caller: at.caller, chain: self.position(at.chain), back_to: at.idx as u32 + 1, canonical: None });
        Cursor { chain: callee, idx: 0, caller: id, depth: at.depth + 1, mark: at.mark }
    }

    /// Where `at` returns to, keeping its mark; `None` at the bottom.
    fn caller(&self, at: Cursor<'a>) -> Option<Cursor<'a>> {
        let f = self.frames.get(at.caller as usize)?;
        let chain = self.table.chains.get(f.chain as usize)?;
        Some(Cursor { chain, idx: f.back_to as usize, caller: f.caller, depth: at.depth - 1, mark: at.mark })
    }

    /// One id for every recording of the same stack: equal exactly when
    /// the stacks are. Recurses once per caller, so at most
    /// [`MAX_CHAIN_DEPTH`] deep.
    fn canonical(&mut self, id: u32) -> u32 {
        let Some(f) = self.frames.get(id as usize) else { return Calls::ROOT };
        if let Some(c) = f.canonical {
            return c;
        }
        let (caller, chain, back_to) = (f.caller, f.chain, f.back_to);
        let caller = self.canonical(caller);
        let fresh = self.interned.len() as u32;
        let c = *self.interned.entry((caller, chain, back_to)).or_insert(fresh);
        self.frames[id as usize].canonical = Some(c);
        c
    }
}

/// A fast hasher for the search's keys (positions, rule indices, marks),
/// which come from the table and not from the user, so they need no
/// defence against chosen collisions. Each word is mixed in by
/// multiplication, and `finish` spreads the bits so that the low ones,
/// which pick the bucket, depend on all of them.
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn finish(&self) -> u64 {
        // MurmurHash3's 64-bit finaliser.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A new connection's first packet through one node: the nat table before
/// routing, the filter table, and nat POSTROUTING; for a packet the node
/// sends to one of its own addresses, also the filter INPUT chain it meets
/// when it comes back in over loopback.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Traversal {
    pub nat: Walk,
    /// The packet after DNAT (if any); the source is not yet masqueraded.
    pub routed: Packet,
    /// The filter hook the packet took (`INPUT`, `FORWARD` or `OUTPUT`).
    pub filter_hook: String,
    pub filter: Walk,
    /// `None` when the filter table dropped or rejected the packet.
    pub post: Option<Walk>,
    /// A locally sent packet to a local address, after POSTROUTING: the
    /// filter INPUT walk of its delivery. (nat does not run again: the
    /// connection's NAT was set in OUTPUT and POSTROUTING.)
    #[serde(default)]
    pub input: Option<Walk>,
}

impl Traversal {
    /// DROP or REJECT from any table or hook.
    pub fn refused(&self) -> Option<&Verdict> {
        let input = self.input.as_ref().map(|w| &w.verdict);
        [Some(&self.nat.verdict), Some(&self.filter.verdict), input].into_iter().flatten().find(|v| matches!(v, Verdict::Drop | Verdict::Reject))
    }

    pub fn masquerade(&self) -> bool {
        self.post.as_ref().is_some_and(|p| p.verdict == Verdict::Masquerade)
    }

    /// The MASQUERADE rule that ended nat POSTROUTING, if one did: its
    /// target says whether the port is drawn (`--random-fully`) or kept.
    pub fn masquerade_rule(&self) -> Option<&RuleRef> {
        self.post.as_ref().filter(|p| p.verdict == Verdict::Masquerade).and_then(|p| p.matched.last())
    }

    /// The rule that dropped or rejected the packet: the last one matched
    /// by the walk that refused it (filter INPUT on the way back in, the
    /// filter hook, or nat).
    pub fn refusing_rule(&self) -> Option<&RuleRef> {
        let refuses = |w: &&Walk| matches!(w.verdict, Verdict::Drop | Verdict::Reject);
        [self.input.as_ref(), Some(&self.filter), Some(&self.nat)].into_iter().flatten().find(refuses).and_then(|w| w.matched.last())
    }

    /// Every rule that matched, in the order the packet met them.
    pub fn matched(&self) -> impl Iterator<Item = &RuleRef> {
        self.nat.matched.iter().chain(&self.filter.matched).chain(self.post.iter().flat_map(|p| p.matched.iter())).chain(self.input.iter().flat_map(|w| w.matched.iter()))
    }
}

/// Runs a new connection's first packet through `nat` and `filter`.
/// `ctx.ct_new` should be true; `ctx.ct_dnat` is set here from the nat walk.
pub fn traverse(filter: &Table, nat: &Table, entry: Entry, pkt: &Packet, ctx: &NodeContext, dice: &mut dyn Dice) -> Traversal {
    let nat_hook = if entry == Entry::Local { "OUTPUT" } else { "PREROUTING" };
    let nat_walk = walk(nat, nat_hook, pkt, 0, ctx, dice);
    let mut routed = *pkt;
    let mut ctx2 = ctx.clone();
    if let Verdict::Dnat(to) = nat_walk.verdict {
        routed.dst = to;
        ctx2.ct_dnat = true;
    }
    // Routing picks the way out after DNAT, as the kernel does.
    if let Some(iface) = out_interface(&ctx.routes, routed.dst.ip) {
        ctx2.out_iface = Some(iface);
    }
    let filter_hook = match entry {
        Entry::Local => "OUTPUT",
        Entry::Arriving if ctx.is_local(routed.dst.ip) => "INPUT",
        Entry::Arriving => "FORWARD",
    };
    let filter_walk = walk(filter, filter_hook, &routed, nat_walk.mark, &ctx2, dice);
    let post = (!matches!(filter_walk.verdict, Verdict::Drop | Verdict::Reject) && filter_hook != "INPUT")
        .then(|| walk(nat, "POSTROUTING", &routed, filter_walk.mark, &ctx2, dice));
    // Sent to itself, the packet loops back and is delivered through INPUT.
    let input = match &post {
        Some(p) if entry == Entry::Local && ctx.is_local(routed.dst.ip) => Some(walk(filter, "INPUT", &routed, p.mark, &ctx2, dice)),
        _ => None,
    };
    Traversal { nat: nat_walk, routed, filter_hook: filter_hook.into(), filter: filter_walk, post, input }
}

/// The interface of the most specific route to `dst`.
pub fn out_interface(routes: &[(crate::net::Cidr, String)], dst: Ipv4Addr) -> Option<String> {
    routes.iter().filter(|(c, _)| c.contains(dst)).max_by_key(|(c, _)| c.prefix).map(|(_, i)| i.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::iptables::{Rule, TableName};
    use crate::net::{ip, Cidr, Protocol};

    fn pkt(dst: Ipv4Addr, port: u16) -> Packet {
        Packet::new(Protocol::Tcp, SockAddr::new(ip(198, 51, 100, 7), 40000), SockAddr::new(dst, port))
    }

    /// kube-proxy's shape: PREROUTING -> KUBE-SERVICES -> KUBE-SVC (one
    /// random rule per endpoint) -> KUBE-SEP-i (hairpin mark, DNAT).
    fn service_table(n: usize) -> Table {
        let mut t = Table::new(TableName::Nat);
        let vip = ip(10, 96, 0, 50);
        t.append("PREROUTING", Rule::new(vec![], Target::Jump("KUBE-SERVICES".into())));
        t.append("KUBE-SERVICES", Rule::new(vec![Match::Destination { cidr: Cidr::new(ip(10, 96, 0, 49), 32), negate: false }], Target::Jump("OTHER".into())));
        t.append("KUBE-SERVICES", Rule::new(vec![Match::Destination { cidr: Cidr::new(vip, 32), negate: false }], Target::Jump("KUBE-SVC".into())));
        t.append("KUBE-MARK-MASQ", Rule::new(vec![], Target::OrMark(0x4000)));
        for i in 0..n {
            let sep = format!("KUBE-SEP-{i}");
            let mut m = vec![];
            if i + 1 < n {
                m.push(Match::Probability(1.0 / (n - i) as f64));
            }
            t.append("KUBE-SVC", Rule::new(m, Target::Jump(sep.clone())));
            let addr = SockAddr::new(Ipv4Addr::from(u32::from(ip(10, 100, 0, 0)) + i as u32), 8080);
            t.append(&sep, Rule::new(vec![Match::Source { cidr: Cidr::new(addr.ip, 32), negate: false }], Target::Jump("KUBE-MARK-MASQ".into())));
            t.append(&sep, Rule::new(vec![], Target::Dnat(addr)));
        }
        t
    }

    /// The search as it was: one whole walk per branch, with scripted draws.
    fn every_walk(table: &Table, hook: &str, p: &Packet, ctx: &NodeContext) -> Vec<SockAddr> {
        struct Script(Vec<bool>, usize);
        impl Dice for Script {
            fn roll(&mut self, _: f64) -> bool {
                if self.1 >= self.0.len() {
                    self.0.push(true);
                }
                self.1 += 1;
                self.0[self.1 - 1]
            }
        }
        let (mut out, mut todo) = (BTreeSet::new(), vec![Vec::new()]);
        while let Some(prefix) = todo.pop() {
            let fixed = prefix.len();
            let mut s = Script(prefix, 0);
            if let Verdict::Dnat(to) = walk(table, hook, p, 0, ctx, &mut s).verdict {
                out.insert(to);
            }
            for j in fixed..s.1 {
                let mut alt = s.0[..j].to_vec();
                alt.push(false);
                todo.push(alt);
            }
        }
        out.into_iter().collect()
    }

    #[test]
    fn the_search_finds_what_walking_every_branch_finds() {
        let ctx = NodeContext::new(vec![ip(192, 168, 0, 2)]);
        for n in [1, 2, 3, 7, 40] {
            let t = service_table(n);
            let got = reachable(&t, "PREROUTING", &pkt(ip(10, 96, 0, 50), 80), &ctx);
            assert!(got.complete);
            assert_eq!(got.targets.len(), n);
            assert_eq!(got.targets, every_walk(&t, "PREROUTING", &pkt(ip(10, 96, 0, 50), 80), &ctx), "{n} endpoints");
        }
        // A packet for no Service reaches nothing.
        assert_eq!(reachable(&service_table(5), "PREROUTING", &pkt(ip(10, 96, 0, 51), 80), &ctx).targets, []);
    }

    #[test]
    fn every_one_of_many_endpoints_is_listed() {
        // The old search stopped after 10,000 targets without saying so.
        let n = 25_000;
        let t = service_table(n);
        let got = reachable(&t, "PREROUTING", &pkt(ip(10, 96, 0, 50), 80), &NodeContext::new(vec![]));
        assert!(got.complete);
        assert_eq!(got.targets.len(), n);
        assert_eq!(got.targets.last(), Some(&SockAddr::new(Ipv4Addr::from(u32::from(ip(10, 100, 0, 0)) + n as u32 - 1), 8080)));
        // One walk through the same chain reaches the last endpoint too:
        // its step budget grows with the table.
        let mut never = FixedDraws::new(vec![1.0; n]);
        assert_eq!(walk(&t, "PREROUTING", &pkt(ip(10, 96, 0, 50), 80), 0, &NodeContext::new(vec![]), &mut never).verdict, Verdict::Dnat(got.targets[n - 1]));
    }

    #[test]
    fn a_state_reached_by_two_paths_is_searched_once() {
        // C_d: a random jump to an empty chain, then a jump to C_{d+1}.
        // Both outcomes of each random match go on to the same jump with
        // the same call stack, so 2^40 paths meet in 40 states; the search
        // finishes within its budget only if it sees them as the same.
        let mut t = Table::new(TableName::Nat);
        t.append("PREROUTING", Rule::new(vec![], Target::Jump("C0".into())));
        t.ensure_chain("NOTHING");
        for d in 0..40 {
            t.append(&format!("C{d}"), Rule::new(vec![Match::Probability(0.5)], Target::Jump("NOTHING".into())));
            t.append(&format!("C{d}"), Rule::new(vec![], Target::Jump(format!("C{}", d + 1))));
        }
        t.append("C40", Rule::new(vec![], Target::Dnat(SockAddr::new(ip(10, 0, 0, 1), 80))));
        let got = reachable(&t, "PREROUTING", &pkt(ip(10, 96, 0, 50), 80), &NodeContext::new(vec![]));
        assert!(got.complete);
        assert_eq!(got.targets, [SockAddr::new(ip(10, 0, 0, 1), 80)]);
    }

    #[test]
    fn fork_states_are_new_exactly_once() {
        // Against a plain set: runs in order, states out of order, repeats,
        // and a state first kept in the set that the run then reaches.
        let mut forks = Forks::default();
        let mut plain = HashSet::new();
        let mut dice = SeededDice(7);
        let mut states: Vec<(u32, u32, u32, u32)> = (0..40).map(|r| (0, 1, r, 0)).collect();
        states.extend([(0, 1, 45, 0), (0, 1, 40, 0), (0, 1, 41, 0), (0, 1, 45, 0), (0, 1, 42, 0), (0, 1, 43, 0), (0, 1, 44, 0), (0, 1, 45, 0), (0, 1, 46, 0)]);
        states.extend((0..5000).map(|_| {
            let mut pick = |n: f64| (dice.next_f64() * n) as u32;
            (pick(3.0), pick(3.0), pick(60.0), pick(2.0))
        }));
        for (i, &(stack, chain, rule, mark)) in states.iter().enumerate() {
            assert_eq!(forks.insert(stack, chain, rule, mark), plain.insert((stack, chain, rule, mark)), "state {i}: {:?}", states[i]);
        }
        assert_eq!(forks.runs.get(&(0, 1, 0)).map(|r| r.start), Some(0));
    }

    #[test]
    fn a_table_that_calls_chains_over_and_over_is_reported_incomplete() {
        // C0 calls C1 twice, C1 calls C2 twice, ...: 2^40 paths through 121
        // rules. Each reaches C40 with another call stack, so no state repeats.
        let mut t = Table::new(TableName::Nat);
        t.append("PREROUTING", Rule::new(vec![], Target::Jump("C0".into())));
        for d in 0..40 {
            for _ in 0..2 {
                t.append(&format!("C{d}"), Rule::new(vec![], Target::Jump(format!("C{}", d + 1))));
            }
        }
        t.append("C40", Rule::new(vec![Match::Probability(0.5)], Target::Dnat(SockAddr::new(ip(10, 0, 0, 1), 80))));
        let got = reachable(&t, "PREROUTING", &pkt(ip(10, 96, 0, 50), 80), &NodeContext::new(vec![]));
        assert!(!got.complete);
        assert_eq!(got.targets, [SockAddr::new(ip(10, 0, 0, 1), 80)]);
    }
}
