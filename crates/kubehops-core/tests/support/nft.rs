//! What the nftables tests share: upstream's way of comparing dumps, and
//! a ruleset loaded into a real kernel and listed back.

#![allow(dead_code)]

use std::cmp::Reverse;
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// What upstream's sortNFTablesTransaction (helpers_test.go) does to a
/// dump: blank and `#` lines dropped, lines sorted by object type (table,
/// chain, rule, set, map, element), then by object name, rules keeping
/// their order within a chain (a stable sort), other lines by their text.
pub fn upstream_sorted<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
    let mut out: Vec<String> = lines.iter().map(|l| l.as_ref().trim().to_string()).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let rank = |kind: &str| match kind {
        "table" => 10,
        "chain" => 9,
        "rule" => 8,
        "set" => 7,
        "map" => 6,
        "element" => 5,
        _ => 0,
    };
    out.sort_by_cached_key(|l| {
        let w: Vec<&str> = l.split(' ').collect();
        if w.len() < 5 {
            return (Reverse(0), String::new(), String::new());
        }
        let whole = if w[1] == "rule" { String::new() } else { l.clone() };
        (Reverse(rank(w[1])), w[4].to_string(), whole)
    });
    out
}

/// Lines in `a` not matched by one in `b` (as multisets).
pub fn missing_from(a: &[String], b: &[String]) -> Vec<String> {
    let mut rest: Vec<&String> = b.iter().collect();
    let mut out = Vec::new();
    for l in a {
        match rest.iter().position(|x| *x == l) {
            Some(i) => {
                rest.swap_remove(i);
            }
            None => out.push(l.clone()),
        }
    }
    out
}

/// Runs `script` (with `nft` commands) in a fresh network namespace with
/// `stdin` on its input: one shell, so what one command loads the next
/// one sees.
pub fn in_netns(script: &str, stdin: &str) -> Output {
    let mut child = Command::new("unshare")
        .args(["--net", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare runs");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `transaction` loaded with `nft -f` in a fresh namespace, and what
/// `nft list table ip kube-proxy` prints back.
pub fn load_and_list(transaction: &str) -> Output {
    in_netns("nft -f - && nft list table ip kube-proxy", transaction)
}
