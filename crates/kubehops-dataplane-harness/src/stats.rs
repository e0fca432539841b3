//! The statistical bounds the harness holds the kernel's random picks to.
//!
//! - The split of [`SPLIT_CONNECTIONS`] connections over a Service's
//!   endpoints must fit the model's probabilities by Pearson's chi-square
//!   test at significance [`ALPHA`] = 0.001: the statistic must stay below
//!   the 99.9th percentile of the chi-square distribution with (number of
//!   endpoints − 1) degrees of freedom. A kernel that picks exactly as
//!   the model says fails this one time in a thousand.
//! - While exploring, every endpoint the model predicts must answer within
//!   [`explore_cap`] connections, chosen so a kernel that picks as the
//!   model says misses some endpoint with probability below [`MISS`].

/// Connections of one split.
pub const SPLIT_CONNECTIONS: usize = 200;
/// The chi-square test's significance.
pub const ALPHA: f64 = 0.001;
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

/// The chi-square distribution's 99.9th percentile for `df` degrees of
/// freedom: tabulated for 1 to 10, the Wilson–Hilferty approximation above.
pub fn critical(df: usize) -> f64 {
    const TABLE: [f64; 10] = [10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588];
    match df {
        0 => 0.0,
        1..=10 => TABLE[df - 1],
        _ => {
            let k = df as f64;
            let z = 3.090_232; // the standard normal's 99.9th percentile
            k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
        }
    }
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
        // kube-proxy's cascade read as independent 1/3 draws would give
        // about 1/3, 2/9, 4/9: far outside the bound.
        assert!(chi_square(&[67, 44, 89], &even) > critical(2));
        // An endpoint the model says is never picked, picked once.
        assert_eq!(chi_square(&[100, 99, 1], &[0.5, 0.5, 0.0]), f64::INFINITY);
    }

    #[test]
    fn critical_values_follow_the_table_and_the_approximation() {
        assert_eq!(critical(1), 10.828);
        assert_eq!(critical(5), 20.515);
        // Wilson–Hilferty is within 0.5% of the true 29.588 at df = 10 and
        // better above it (df = 20: 45.315).
        assert!((critical(20) - 45.315).abs() < 0.2, "{}", critical(20));
    }

    #[test]
    fn exploring_bounds_the_chance_of_missing_an_endpoint() {
        // Two endpoints at 1/2: 2·(1/2)^21 < 1e-6.
        assert_eq!(explore_cap(2, 0.5), 21);
        // Six at 1/6 need about a hundred connections.
        let n = explore_cap(6, 1.0 / 6.0);
        assert!(6.0 * (5.0f64 / 6.0).powi(n as i32) < MISS && 6.0 * (5.0f64 / 6.0).powi(n as i32 - 1) >= MISS);
        assert_eq!(explore_cap(1, 1.0), 2);
    }
}
