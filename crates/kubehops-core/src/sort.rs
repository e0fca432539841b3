//! Stable sorting through one shared instance of the standard sort.
//!
//! Every `sort_by` on a new element type is another copy of the standard
//! library's stable sort in the wasm (1.5 to 4 KB each, and the model sorts
//! about ten types). These helpers sort the positions instead, with the
//! comparison behind a `&dyn Fn`, so the sort itself is compiled once; then
//! they swap the elements into that order in place. The result is exactly what the
//! standard stable sort gives: equal elements keep their order.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably (as `v.sort_by(cmp)`).
pub fn by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    let order = positions(v.len(), &|a, b| cmp(&v[a], &v[b]));
    apply(v, order);
}

/// Sorts `v` by a key computed once per element, stably (as
/// `v.sort_by_cached_key(key)`).
pub fn by_key<T, K: Ord>(v: &mut Vec<T>, key: impl Fn(&T) -> K) {
    let keys: Vec<K> = v.iter().map(key).collect();
    let order = positions(v.len(), &|a, b| keys[a].cmp(&keys[b]));
    apply(v, order);
}

/// Sorts `v` in its natural order (as `v.sort()`).
pub fn natural<T: Ord>(v: &mut Vec<T>) {
    by(v, T::cmp);
}

/// The positions `0..n` in the order `cmp` gives them; the one sort.
fn positions(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| cmp(*a, *b));
    order
}

/// Rearranges `v` so that its `i`th element is the old `order[i]`th, in
/// place: each cycle of the permutation is walked with swaps, and `order`
/// marks what is done, so no second copy of the elements is held.
fn apply<T>(v: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..v.len() {
        let mut at = start;
        while order[at] != DONE {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_the_standard_stable_sort_does() {
        // Pairs compared by their first field only: equal keys keep their order.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for len in [0usize, 1, 2, 3, 7, 20, 33, 100, 500] {
            let v: Vec<(u8, usize)> = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    ((x % 7) as u8, i)
                })
                .collect();
            let mut want = v.clone();
            want.sort_by(|a, b| a.0.cmp(&b.0));
            let mut got = v.clone();
            by(&mut got, |a, b| a.0.cmp(&b.0));
            assert_eq!(got, want);
            let mut got = v.clone();
            by_key(&mut got, |p| p.0);
            assert_eq!(got, want);
            let mut want = v.clone();
            want.sort();
            let mut got = v;
            natural(&mut got);
            assert_eq!(got, want);
        }
    }
}
