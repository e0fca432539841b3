//! Floating-point numbers as decimal text, without `core::fmt`'s float code.
//!
//! `format!("{:.10}", p)` and `f64::to_string` pull Rust's float formatting
//! (Grisu and Dragon4, about 14 KB of wasm) into the browser build. The
//! model prints floats in two places only, both with a fixed number of
//! decimals: kube-proxy's `--probability` and the canvas coordinates. So
//! they are printed here with integer arithmetic, digit for digit what
//! `format!("{:.N}")` prints (ties to even on the exact binary value; the
//! tests compare the two).

/// `v` with exactly `decimals` digits after the point, as
/// `format!("{v:.decimals$}")` prints it. Exact for every `|v| < 2^64` and
/// `decimals <= 17`, which covers probabilities and coordinates; larger
/// values print their integer part saturated at `u128::MAX`.
pub fn fixed(v: f64, decimals: u32) -> String {
    let decimals = decimals.min(17);
    if v.is_nan() {
        return "NaN".to_string();
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_infinite() {
        return format!("{sign}inf");
    }
    let n = scaled(v.abs(), decimals);
    let pow = 10u128.pow(decimals);
    let (int, frac) = (n / pow, n % pow);
    if decimals == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac:0width$}", width = decimals as usize)
    }
}

/// `v` with at most `decimals` digits after the point and no trailing
/// zeros (`12`, `12.5`, `33.33`): short attribute values for SVG.
pub fn trimmed(v: f64, decimals: u32) -> String {
    let mut s = fixed(v, decimals);
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s.remove(0);
    }
    s
}

/// `|v| * 10^decimals` rounded to the nearest integer, ties to even, from
/// the exact value of `v`'s bits.
pub fn scaled(v: f64, decimals: u32) -> u128 {
    let bits = v.abs().to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    // |v| = m * 2^e
    let (m, e) = if exp == 0 { (frac, -1074) } else { (frac | (1u64 << 52), exp - 1075) };
    if m == 0 {
        return 0;
    }
    let pow = 10u128.pow(decimals.min(17));
    if e >= 0 {
        // An integer: no rounding; saturate far out of range.
        return (m as u128).checked_shl(e as u32).filter(|x| x >> e == m as u128).and_then(|x| x.checked_mul(pow)).unwrap_or(u128::MAX);
    }
    // m < 2^53 and pow < 2^57: the product fits.
    let num = m as u128 * pow;
    let shift = (-e) as u32;
    if shift >= 128 {
        // num < 2^110 is less than half of 2^shift: rounds to 0.
        return 0;
    }
    let q = num >> shift;
    let rem = num - (q << shift);
    let half = 1u128 << (shift - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(v: f64, d: u32) {
        assert_eq!(fixed(v, d), format!("{v:.*}", d as usize), "{v:e} with {d} decimals");
    }

    #[test]
    fn prints_what_format_prints_for_probabilities() {
        for n in 1..=5000u32 {
            let p = 1.0 / n as f64;
            same(p, 10);
            same(p, 11);
            same(1.0 - p, 10);
        }
    }

    #[test]
    fn prints_what_format_prints_across_magnitudes_and_ties() {
        for v in [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 1.0 / 2048.0, 0.05, 0.15, 0.25, 0.35, 99.95, 1e-300, 5e-324, 123456.789, 1e15, 2f64.powi(60), 9.999999999] {
            for d in 0..=17 {
                same(v, d);
            }
        }
        // Pseudo-random bit patterns over a wide range of exponents.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let exp = 1023 - 70 + (x >> 56) % 130; // about 2^-70 .. 2^60
            let v = f64::from_bits((exp << 52) | (x & ((1 << 52) - 1)));
            let v = if x & 1 == 1 { -v } else { v };
            same(v, (x >> 40) as u32 % 18);
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(fixed(f64::NAN, 2), "NaN");
        assert_eq!(fixed(f64::INFINITY, 2), "inf");
        assert_eq!(fixed(f64::NEG_INFINITY, 2), "-inf");
    }

    #[test]
    fn trimmed_drops_trailing_zeros_and_negative_zero() {
        assert_eq!(trimmed(100.0, 2), "100");
        assert_eq!(trimmed(112.5, 2), "112.5");
        assert_eq!(trimmed(100.0 / 3.0, 2), "33.33");
        assert_eq!(trimmed(-0.001, 2), "0");
        assert_eq!(trimmed(-4.25, 2), "-4.25");
        assert_eq!(trimmed(0.0, 0), "0");
        assert_eq!(trimmed(1200.0, 0), "1200");
    }
}
