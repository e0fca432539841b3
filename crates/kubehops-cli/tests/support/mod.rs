//! Shared by the binary's tests: running the binary, kube-proxy's
//! `TestSyncProxyRulesRepeated` as a sequence of object sets, and
//! iptables-restore text read back as data.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs the binary in the crate's directory (so fixture paths are the
/// relative ones given) with `stdin` as its input.
pub fn run_kubehops(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubehops"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kubehops");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait for kubehops")
}

pub const UPSTREAM_NODE: &str = "tests/fixtures/upstream/test-node.yaml";
pub const UPSTREAM_OVERALL: &str = "tests/fixtures/upstream/overall.yaml";
/// kube-proxy's tests use node ports below the API server's default range.
pub const UPSTREAM_PORT_RANGE: [&str; 2] = ["--service-node-port-range", "3000-32767"];

/// One sync of `TestSyncProxyRulesRepeated`: the objects in
/// `tests/fixtures/upstream/repeated/` kube-proxy sees, and whether the
/// sync is full. Every sync after the first follows the one before it.
pub struct Step {
    pub what: &'static str,
    pub files: &'static [&'static str],
    pub full: bool,
}

pub const REPEATED: [Step; 9] = [
    Step { what: "first sync of svc1 and svc2", files: &["svc1", "svc1-slice", "svc2", "svc2-slice"], full: true },
    Step { what: "svc3 and its endpoint added", files: &["svc1", "svc1-slice", "svc2", "svc2-slice", "svc3", "svc3-slice-a"], full: false },
    // The test deletes the Service; its slice stays.
    Step { what: "svc2 deleted", files: &["svc1", "svc1-slice", "svc2-slice", "svc3", "svc3-slice-a"], full: false },
    Step { what: "svc4 added without endpoints", files: &["svc1", "svc1-slice", "svc2-slice", "svc3", "svc3-slice-a", "svc4"], full: false },
    Step { what: "svc4's endpoint added", files: &["svc1", "svc1-slice", "svc2-slice", "svc3", "svc3-slice-a", "svc4", "svc4-slice"], full: false },
    Step { what: "svc3's endpoint moved", files: &["svc1", "svc1-slice", "svc2-slice", "svc3", "svc3-slice-b", "svc4", "svc4-slice"], full: false },
    Step { what: "svc3 gains an endpoint", files: &["svc1", "svc1-slice", "svc2-slice", "svc3", "svc3-slice-c", "svc4", "svc4-slice"], full: false },
    Step { what: "no change", files: &["svc1", "svc1-slice", "svc2-slice", "svc3", "svc3-slice-c", "svc4", "svc4-slice"], full: false },
    // Upstream makes the partial sync that deletes svc4 fail on purpose;
    // the retry is a full sync on a node that still has svc4's chains.
    Step { what: "svc4 deleted, by the full resync after a failed partial one", files: &["svc1", "svc1-slice", "svc2-slice", "svc3", "svc3-slice-c", "svc4-slice"], full: true },
];

/// `-f` arguments for a step's objects, after the node's.
pub fn step_files(step: &Step, flag: &str) -> Vec<String> {
    step.files.iter().flat_map(|f| [flag.to_string(), format!("tests/fixtures/upstream/repeated/{f}.yaml")]).collect()
}

/// The arguments of `iptables-save --format restore` for sync `i` of
/// [`REPEATED`]: its objects, and the previous sync's as `--previous`.
pub fn repeated_restore_args(i: usize) -> Vec<String> {
    let mut a: Vec<String> = ["iptables-save", "--format", "restore", "--iptables-features", "upstream-test-fake", "-f", UPSTREAM_NODE].map(String::from).to_vec();
    a.extend(step_files(&REPEATED[i], "-f"));
    if i > 0 {
        a.extend(step_files(&REPEATED[i - 1], "--previous"));
        if REPEATED[i].full {
            a.push("--full-sync".into());
        }
    }
    a
}

/// One table of iptables-restore or iptables-save text, as data: the
/// chains declared, each chain's rules in order, and the chains deleted.
#[derive(Debug, Default, PartialEq)]
pub struct TableDump {
    pub chains: BTreeSet<String>,
    pub rules: BTreeMap<String, Vec<String>>,
    pub deleted: BTreeSet<String>,
}

/// Reads text in iptables-save form into tables by name. Comment lines
/// (`#`) are skipped; any other line that is not part of the format is
/// an error, so a garbled dump cannot compare equal by accident.
pub fn parse_dump(text: &str) -> Result<BTreeMap<String, TableDump>, String> {
    let mut tables: BTreeMap<String, TableDump> = BTreeMap::new();
    let mut current: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let at = || format!("line {}: {line:?}", n + 1);
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('*') {
            if tables.insert(name.to_string(), TableDump::default()).is_some() {
                return Err(format!("table {name} given twice, {}", at()));
            }
            current = Some(name.to_string());
            continue;
        }
        let Some(t) = current.as_ref().and_then(|c| tables.get_mut(c)) else { return Err(format!("outside a table, {}", at())) };
        let word = |rest: &str| rest.split_whitespace().next().map(String::from).ok_or_else(at);
        if line == "COMMIT" {
            current = None;
        } else if let Some(rest) = line.strip_prefix(':') {
            t.chains.insert(word(rest)?);
        } else if let Some(rest) = line.strip_prefix("-A ") {
            t.rules.entry(word(rest)?).or_default().push(line.to_string());
        } else if let Some(rest) = line.strip_prefix("-X ") {
            t.deleted.insert(word(rest)?);
        } else {
            return Err(format!("not an iptables-save line, {}", at()));
        }
    }
    match current {
        Some(t) => Err(format!("table {t} has no COMMIT")),
        None => Ok(tables),
    }
}

/// What differs between two dumps, chain by chain; empty when they agree.
pub fn dump_differences(expected: &BTreeMap<String, TableDump>, actual: &BTreeMap<String, TableDump>) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = expected.keys().chain(actual.keys()).collect();
    for name in names {
        let (Some(e), Some(a)) = (expected.get(name), actual.get(name)) else {
            out.push(format!("table {name}: only in {}", if expected.contains_key(name) { "expected" } else { "actual" }));
            continue;
        };
        for c in e.chains.symmetric_difference(&a.chains) {
            out.push(format!("{name}: chain {c} declared only in {}", if e.chains.contains(c) { "expected" } else { "actual" }));
        }
        for c in e.deleted.symmetric_difference(&a.deleted) {
            out.push(format!("{name}: -X {c} only in {}", if e.deleted.contains(c) { "expected" } else { "actual" }));
        }
        let chains: BTreeSet<&String> = e.rules.keys().chain(a.rules.keys()).collect();
        for c in chains {
            let (er, ar) = (e.rules.get(c).map_or(&[][..], Vec::as_slice), a.rules.get(c).map_or(&[][..], Vec::as_slice));
            if er != ar {
                out.push(format!("{name}: chain {c} differs\n  expected:\n    {}\n  actual:\n    {}", er.join("\n    "), ar.join("\n    ")));
            }
        }
    }
    out
}
