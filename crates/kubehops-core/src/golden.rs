//! Golden files for data-driven tests: compare a rendered text with the
//! file that holds the expected one, or rewrite the file when the
//! `UPDATE_EXPECT` environment variable is set (then review the diff).
//! Used by this crate's and the CLI's tests; plain std, no test framework.

use std::path::Path;

/// Panics, naming the first differing line, when `actual` is not the
/// content of `path`. With `UPDATE_EXPECT` set, writes `actual` there.
pub fn check(path: &Path, actual: &str) {
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        if let Err(e) = std::fs::write(path, actual) {
            panic!("cannot write {}: {e}", path.display());
        }
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|_| panic!("missing {}; run with UPDATE_EXPECT=1", path.display()));
    if expected != actual {
        let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
        let first = e.iter().zip(&a).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
        panic!(
            "{} differs at line {}:\n  expected: {:?}\n  actual:   {:?}\n(run with UPDATE_EXPECT=1 to accept, then review the diff)",
            path.display(),
            first + 1,
            e.get(first),
            a.get(first)
        );
    }
}
