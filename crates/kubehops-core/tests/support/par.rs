//! Work over many builds split across the machine's cores (up to 8), for
//! the sweep tests: each part of `items` mapped by `f` on a thread of its
//! own, the results in the order of the parts.

pub fn chunks<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let size = items.len().div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        let f = &f;
        let handles: Vec<_> = items.chunks(size).map(|part| sc.spawn(move || f(part))).collect();
        handles.into_iter().map(|h| h.join().expect("a worker thread panicked")).collect()
    })
}
