//! What every data plane's walk takes, whichever rules it applies: where
//! a packet enters a node ([`Entry`]) and who decides the rules' random
//! choices ([`Dice`]: fixed draws for a repeatable story, a seeded
//! generator for random picks).

use serde::{Deserialize, Serialize};

/// Decides each random choice a rule makes: iptables' `-m statistic
/// --mode random` matches, one at a time, and nftables' `numgen random
/// mod N`, all at once.
pub trait Dice {
    /// Whether a match with this probability succeeds.
    fn roll(&mut self, probability: f64) -> bool;

    /// One of `n` choices, each as likely. By default asked as iptables'
    /// chain of matches asks it (the first with 1/n, the next with
    /// 1/(n-1), …), so the same draws pick the same endpoint in both
    /// proxy modes.
    fn pick(&mut self, n: usize) -> usize {
        for i in 0..n.saturating_sub(1) {
            if self.roll(1.0 / (n - i) as f64) {
                return i;
            }
        }
        n.saturating_sub(1)
    }
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

/// Where a packet enters a node's netfilter hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Entry {
    /// Arrives on an interface: the prerouting hook, then input or forward.
    Arriving,
    /// Sent by a process on the node: the output hook.
    Local,
}
