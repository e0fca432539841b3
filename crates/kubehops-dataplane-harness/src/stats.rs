//! The statistical bounds the harness holds the kernel's random picks to.
//!
//! - The split of [`SPLIT_CONNECTIONS`] connections over a Service's
//!   endpoints must fit the model's probabilities by Pearson's chi-square
//!   test at significance [`ALPHA`] = 0.0001: the statistic must stay
//!   below the 99.99th percentile of the chi-square distribution with
//!   (number of endpoints − 1) degrees of freedom. A kernel that picks
//!   exactly as the model says fails one split in ten thousand, so a run
//!   of N splits fails by chance with probability at most N·0.0001 (a
//!   full run has about 30: under 0.3%). At 200 connections the test
//!   catches, for one, two endpoints split 70/30 instead of 50/50, or
//!   six endpoints whose cascade of probabilities is read as six
//!   independent draws.
//! - While exploring, every endpoint the model predicts must answer within
//!   [`explore_cap`] connections, chosen so a kernel that picks as the
//!   model says misses some endpoint with probability below [`MISS`].

/// Connections of one split.
pub const SPLIT_CONNECTIONS: usize = 200;
/// The chi-square test's significance, per split.
pub const ALPHA: f64 = 0.0001;
/// The chance, per decision, that exploring misses an endpoint the kernel
/// does pick with the model's probability.
pub const MISS: f64 = 1e-6;
/// No decision opens more connections than this.
pub const MAX_CONNECTIONS: usize = 300;

/// Pearson's statistic for observed counts against expected probabilities.
pub fn chi_square(observed: &[usize], probabilities: &[f64]) -> f64 {
    let n: usize = observed.iter().sum();
    observed
        .iter()
        .zip(probabilities)
        .map(|(&o, &p)| {
            let e = n as f64 * p;
            if e > 0.0 {
                (o as f64 - e).powi(2) / e
            } else if o > 0 {
                f64::INFINITY
            } else {
                0.0
            }
        })
        .sum()
}

/// The chi-square distribution's 99.99th percentile for `df` degrees of
/// freedom: tabulated for 1 to 10, the Wilson–Hilferty approximation above.
pub fn critical(df: usize) -> f64 {
    const TABLE: [f64; 10] = [15.137, 18.421, 21.108, 23.513, 25.745, 27.856, 29.878, 31.828, 33.720, 35.564];
    match df {
        0 => 0.0,
        1..=10 => TABLE[df - 1],
        _ => {
            let k = df as f64;
            let z = 3.719_016; // the standard normal's 99.99th percentile
            k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
        }
    }
}

/// How many tries make missing an outcome of probability `p` less likely
/// than [`MISS`]: the smallest n with (1 − p)ⁿ < MISS.
pub fn attempts_for(p: f64) -> usize {
    if p >= 1.0 {
        return 1;
    }
    if p <= 0.0 {
        return MAX_CONNECTIONS;
    }
    ((MISS.ln() / (1.0 - p).ln()).ceil() as usize).clamp(1, MAX_CONNECTIONS)
}

/// How many connections make missing an endpoint of probability
/// `p_min`, out of `k`, less likely than [`MISS`]: the smallest n with
/// k·(1 − p_min)ⁿ < MISS.
pub fn explore_cap(k: usize, p_min: f64) -> usize {
    if k <= 1 || p_min >= 1.0 {
        return 2;
    }
    if p_min <= 0.0 {
        return MAX_CONNECTIONS;
    }
    let n = ((MISS / k as f64).ln() / (1.0 - p_min).ln()).ceil();
    (n as usize).clamp(2, MAX_CONNECTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_even_split_passes_and_a_skewed_one_fails() {
        let even = [1.0 / 3.0; 3];
        assert!(chi_square(&[70, 64, 66], &even) < critical(2));
        // Two endpoints split 70/30 where the model says 50/50.
        assert!(chi_square(&[140, 60], &[0.5, 0.5]) > critical(1));
        // Six endpoints whose cascade (1/6, 1/5, … 1/2) were read as six
        // independent 1/6 draws: the last would get (5/6)^5 ≈ 40%.
        let sixth = [1.0 / 6.0; 6];
        assert!(chi_square(&[33, 28, 23, 19, 16, 81], &sixth) > critical(5));
        // An endpoint the model says is never picked, picked once.
        assert_eq!(chi_square(&[100, 99, 1], &[0.5, 0.5, 0.0]), f64::INFINITY);
    }

    #[test]
    fn critical_values_follow_the_table_and_the_approximation() {
        assert_eq!(critical(1), 15.137);
        assert_eq!(critical(5), 25.745);
        // Wilson–Hilferty above the table: within 1% (df = 20: 52.39).
        assert!((critical(20) - 52.39).abs() < 0.5, "{}", critical(20));
        assert!(critical(11) > critical(10));
    }

    #[test]
    fn exploring_bounds_the_chance_of_missing_an_endpoint() {
        // Two endpoints at 1/2: 2·(1/2)^21 < 1e-6.
        assert_eq!(explore_cap(2, 0.5), 21);
        // Six at 1/6 need about a hundred connections.
        let n = explore_cap(6, 1.0 / 6.0);
        assert!(6.0 * (5.0f64 / 6.0).powi(n as i32) < MISS && 6.0 * (5.0f64 / 6.0).powi(n as i32 - 1) >= MISS);
        assert_eq!(explore_cap(1, 1.0), 2);
        // One pick of two: (1/2)^20 < 1e-6 <= (1/2)^19.
        assert_eq!(attempts_for(0.5), 20);
        assert_eq!(attempts_for(1.0), 1);
    }
}
