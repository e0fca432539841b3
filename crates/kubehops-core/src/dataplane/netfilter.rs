//! A netfilter-like walk of a nat table: which rules a packet matches and
//! what they do to it.
//!
//! The walk follows iptables semantics: rules in order, `-j CHAIN` descends,
//! `RETURN` or the end of a user chain climbs back, a built-in chain ends
//! with its ACCEPT policy, and `DNAT`/`MASQUERADE` end the table. Random
//! choices (`-m statistic`) are asked of a [`Dice`], so a demo can fix them
//! and [`reachable_dnat_targets`] can try every branch.

use crate::dataplane::iptables::{Match, RuleRef, Table, Target};
use crate::net::{Packet, SockAddr};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// Decides each `-m statistic --mode random` match.
pub trait Dice {
    /// Whether a match with this probability succeeds.
    fn roll(&mut self, probability: f64) -> bool;
}

/// Fixed draws in [0, 1): a match succeeds when its draw is below the
/// probability. When the draws run out, every match succeeds, which picks
/// the first endpoint.
#[derive(Clone, Debug, Default)]
pub struct FixedDraws(pub Vec<f64>, usize);

impl FixedDraws {
    pub fn new(draws: Vec<f64>) -> FixedDraws {
        FixedDraws(draws, 0)
    }
}

impl Dice for FixedDraws {
    fn roll(&mut self, p: f64) -> bool {
        let d = self.0.get(self.1).copied().unwrap_or(0.0);
        self.1 += 1;
        d < p
    }
}

/// A seeded pseudo-random source (SplitMix64), for a "random pick" mode
/// that still repeats for the same seed.
#[derive(Clone, Debug)]
pub struct SeededDice(pub u64);

impl SeededDice {
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl Dice for SeededDice {
    fn roll(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }
}

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

/// Walks `table` from the built-in chain `hook` (e.g. `PREROUTING`).
pub fn walk(table: &Table, hook: &str, pkt: &Packet, mark: u32, ctx: &NodeContext, dice: &mut dyn Dice) -> Walk {
    let mut w = Walk { verdict: Verdict::Accept, matched: Vec::new(), mark, recent_set: Vec::new() };
    // A stack of (chain, next rule index); bounded so a loop in bad rules cannot hang.
    let mut stack: Vec<(String, usize)> = vec![(hook.to_string(), 0)];
    let mut steps = 0;
    while let Some((chain_name, idx)) = stack.pop() {
        steps += 1;
        if steps > 100_000 || stack.len() > 64 {
            w.verdict = Verdict::Drop;
            return w;
        }
        let Some(chain) = table.chain(&chain_name) else { continue };
        let Some(rule) = chain.rules.get(idx) else {
            // End of chain: a user chain returns to its caller; a built-in
            // chain applies its policy (ACCEPT).
            if chain.is_builtin() {
                return w;
            }
            continue;
        };
        if !rule_matches(&rule.matches, pkt, w.mark, ctx, dice) {
            stack.push((chain_name, idx + 1));
            continue;
        }
        for m in &rule.matches {
            if let Match::RecentSet { name } = m {
                w.recent_set.push(name.clone());
            }
        }
        w.matched.push(RuleRef { table: table.name, chain: chain_name.clone(), index: idx });
        match &rule.target {
            Target::Jump(next) => {
                stack.push((chain_name, idx + 1));
                stack.push((next.clone(), 0));
            }
            Target::Return => {
                if chain.is_builtin() {
                    return w;
                }
            }
            Target::Accept => return w,
            Target::Drop => {
                w.verdict = Verdict::Drop;
                return w;
            }
            Target::Reject => {
                w.verdict = Verdict::Reject;
                return w;
            }
            Target::Dnat(to) => {
                w.verdict = Verdict::Dnat(*to);
                return w;
            }
            Target::Masquerade { .. } => {
                w.verdict = Verdict::Masquerade;
                return w;
            }
            Target::OrMark(v) => {
                w.mark |= v;
                stack.push((chain_name, idx + 1));
            }
            Target::XorMark(v) => {
                w.mark ^= v;
                stack.push((chain_name, idx + 1));
            }
            Target::Nothing => stack.push((chain_name, idx + 1)),
        }
    }
    w
}

fn rule_matches(matches: &[Match], pkt: &Packet, mark: u32, ctx: &NodeContext, dice: &mut dyn Dice) -> bool {
    // The statistic match is evaluated last among a rule's matches, so a
    // rule that fails on addresses does not consume a draw.
    let mut probability = None;
    for m in matches {
        let ok = match m {
            Match::Comment(_) => true,
            Match::Protocol(p) => pkt.proto == *p,
            Match::Source { cidr, negate } => cidr.contains(pkt.src.ip) != *negate,
            Match::Destination { cidr, negate } => cidr.contains(pkt.dst.ip) != *negate,
            Match::DestinationPort(p) => pkt.dst.port == *p,
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
            return false;
        }
    }
    probability.is_none_or(|p| dice.roll(p))
}

/// Every DNAT destination the packet could reach, trying each outcome of
/// each random match. Sorted and without duplicates.
pub fn reachable_dnat_targets(table: &Table, hook: &str, pkt: &Packet, ctx: &NodeContext) -> Vec<SockAddr> {
    /// Answers from a script, then `true` for the rest while recording how
    /// many free choices were made.
    struct Branch {
        script: Vec<bool>,
        used: usize,
    }
    impl Dice for Branch {
        fn roll(&mut self, _: f64) -> bool {
            let r = self.script.get(self.used).copied().unwrap_or(true);
            if self.used >= self.script.len() {
                self.script.push(true);
            }
            self.used += 1;
            r
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![Vec::new()];
    while let Some(prefix) = todo.pop() {
        if out.len() > 10_000 {
            break;
        }
        let fixed = prefix.len();
        let mut b = Branch { script: prefix, used: 0 };
        let w = walk(table, hook, pkt, 0, ctx, &mut b);
        if let Verdict::Dnat(to) = w.verdict {
            out.push(to);
        }
        // Each free choice could have gone the other way.
        for j in fixed..b.used {
            let mut alt = b.script[..j].to_vec();
            alt.push(false);
            todo.push(alt);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Where a packet enters a node's netfilter hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Entry {
    /// Arrives on an interface: nat PREROUTING, then filter INPUT or FORWARD.
    Arriving,
    /// Sent by a process on the node: nat OUTPUT, then filter OUTPUT.
    Local,
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
