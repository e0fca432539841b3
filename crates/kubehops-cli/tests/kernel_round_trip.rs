//! The kernel's own view, checked against a real kernel: every golden rule
//! set is loaded into a fresh network namespace with both iptables
//! backends (legacy and nft), and what `iptables-save` prints back must
//! equal `kubehops iptables-save --format kernel`, table by table, byte for
//! byte (header comments and the order of tables aside).
//!
//! Each namespace is prepared as kube-proxy prepares a node: its nfacct
//! counters and its KUBE-PROXY-CANARY chains (mangle, filter, nat) first,
//! then `iptables-restore --noflush` of what it writes. The rule sets are
//! the core's `tests/golden/kube-proxy/*.txt` (against `kernel/*.txt`), the
//! CLI's `iptables-save-*.txt` goldens (against their `-kernel` twins), and
//! kube-proxy's own expected dumps in `tests/golden/upstream/`. Those are
//! restore payloads without the jumps kube-proxy inserts with
//! `iptables -I`, so the node's kube-proxy tables are loaded before the
//! first of them; the syncs of TestSyncProxyRulesRepeated then follow one
//! another in the same namespace, partial ones included, and after each
//! the kernel must hold the full rules of that sync's objects.
//!
//! It needs root, `unshare`, Debian's `iptables` and `nfacct` packages
//! (`scripts/setup` installs both). Without them it prints "skipped: …"
//! and checks nothing; `KUBEHOPS_REQUIRE_KERNEL_TEST=1` makes that a
//! failure. It has its own `main` (`harness = false` in Cargo.toml) so a
//! skip reads as a skip and is not counted as a passed test.

mod support;

use kubehops_core::dataplane::kubeproxy::{CANARY_CHAIN, CT_STATE_INVALID_COUNTER, LOCALHOST_NODE_PORT_COUNTER};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;
use support::{repeated_restore_args, step_files, REPEATED, UPSTREAM_NODE, UPSTREAM_OVERALL, UPSTREAM_PORT_RANGE};

const NAME: &str = "kernel_round_trip";
const BACKENDS: [&str; 2] = ["legacy", "nft"];
/// What kube-proxy creates before its first sync (with the nfacct feature).
const COUNTERS: [&str; 2] = [CT_STATE_INVALID_COUNTER, LOCALHOST_NODE_PORT_COUNTER];
const CANARY_TABLES: [&str; 3] = ["mangle", "filter", "nat"];

/// One sync: the texts given to `iptables-restore --noflush`, in order,
/// and what the kernel must then give back.
struct Sync {
    payloads: Vec<String>,
    expected: String,
}

/// Syncs applied one after another in one namespace.
struct Flow {
    name: String,
    syncs: Vec<Sync>,
}

fn main() -> ExitCode {
    if !selected() {
        return ExitCode::SUCCESS;
    }
    if let Some(reason) = missing_tools() {
        println!("{NAME}: skipped: {reason}");
        if std::env::var_os("KUBEHOPS_REQUIRE_KERNEL_TEST").is_some_and(|v| v == "1") {
            println!("{NAME}: FAILED: KUBEHOPS_REQUIRE_KERNEL_TEST=1 asks for the real-kernel round trip");
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let start = Instant::now();
    let flows = match flows() {
        Ok(f) => f,
        Err(e) => {
            println!("{NAME}: FAILED: {e}");
            return ExitCode::FAILURE;
        }
    };
    let scratch = std::env::temp_dir().join(format!("kubehops-kernel-{}", std::process::id()));
    let mut failures = Vec::new();
    for backend in BACKENDS {
        for flow in &flows {
            if let Err(e) = round_trip(backend, flow, &scratch) {
                failures.push(format!("{} with iptables-{backend}: {e}", flow.name));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let syncs: usize = flows.iter().map(|f| f.syncs.len()).sum();
    if !failures.is_empty() {
        for f in &failures {
            println!("{NAME}: FAILED: {f}");
        }
        return ExitCode::FAILURE;
    }
    println!(
        "{NAME}: ok: {syncs} rule sets in {} namespaces per backend ({}) give back --format kernel byte for byte, in {:.2} s",
        flows.len(),
        BACKENDS.join(", "),
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

/// Whether `cargo test [FILTER]` selects this test, as libtest would.
fn selected() -> bool {
    let mut args = std::env::args().skip(1);
    let (mut filters, mut exact) = (Vec::new(), false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--list" => {
                println!("{NAME}: test");
                return false;
            }
            "--exact" => exact = true,
            // Options that take a value; the value is not a filter.
            "--test-threads" | "--color" | "--format" | "--logfile" | "--skip" | "-Z" => {
                args.next();
            }
            _ if a.starts_with('-') => {}
            _ => filters.push(a),
        }
    }
    filters.is_empty() || filters.iter().any(|f| if exact { f == NAME } else { NAME.contains(f.as_str()) })
}

/// Why the round trip cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    let uid = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| s.lines().find_map(|l| l.strip_prefix("Uid:").map(|r| r.split_whitespace().next().unwrap_or("").to_string())));
    if uid.as_deref() != Some("0") {
        return Some("not root (a network namespace and iptables need root)".into());
    }
    let mut tools: Vec<String> = vec!["unshare".into(), "nfacct".into()];
    for b in BACKENDS {
        tools.extend([format!("iptables-{b}"), format!("iptables-{b}-restore"), format!("iptables-{b}-save")]);
    }
    let missing: Vec<String> = tools.into_iter().filter(|t| find_tool(t).is_none()).collect();
    if !missing.is_empty() {
        return Some(format!("{} not found (Debian packages util-linux, iptables and nfacct; scripts/setup installs them)", missing.join(", ")));
    }
    match Command::new("unshare").args(["-n", "true"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("`unshare -n true` failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Some(format!("cannot run unshare: {e}")),
    }
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from)).map(|d| d.join(name)).find(|p| p.is_file())
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs the CLI in its crate directory, as cli.rs does.
fn kubehops(args: &[String]) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_kubehops")).args(args).current_dir(manifest_dir()).output().map_err(|e| format!("cannot run kubehops: {e}"))?;
    if !out.status.success() {
        return Err(format!("kubehops {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// `args` (an iptables-save restore command line) with another format,
/// without the sync flags that only the restore format takes.
fn as_format(args: &[String], format: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--previous" => {
                it.next();
            }
            "--full-sync" => {}
            "--format" => {
                it.next();
                out.extend(["--format".to_string(), format.to_string()]);
            }
            _ => out.push(a.clone()),
        }
    }
    out
}

/// Every golden rule set, as flows.
fn flows() -> Result<Vec<Flow>, String> {
    let mut flows = Vec::new();
    // The core's feature goldens: rules, then packet traces.
    let core = manifest_dir().join("../kubehops-core/tests/golden/kube-proxy");
    for path in sorted_files(&core, ".txt")? {
        let text = read(&path)?;
        let rules = text.split("\n# trace:").next().unwrap_or("").trim_end().to_string() + "\n";
        let kernel = read(&core.join("kernel").join(path.file_name().unwrap_or_default()))?;
        flows.push(Flow { name: format!("core golden {}", path.display()), syncs: vec![Sync { payloads: vec![rules], expected: kernel }] });
    }
    // The CLI's iptables-save goldens in kube-proxy's form, each with its kernel twin.
    let golden = manifest_dir().join("tests/golden");
    for path in sorted_files(&golden, ".txt")? {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(stem) = name.strip_prefix("iptables-save-").and_then(|n| n.strip_suffix(".txt")).filter(|n| !n.ends_with("-kernel")) else { continue };
        let kernel = read(&golden.join(format!("iptables-save-{stem}-kernel.txt")))?;
        flows.push(Flow { name: format!("CLI golden {name}"), syncs: vec![Sync { payloads: vec![read(&path)?], expected: kernel }] });
    }
    // kube-proxy's TestOverallIPTablesRules.
    let overall: Vec<String> = ["iptables-save", "--format", "restore", "--iptables-features", "upstream-test-fake", "-f", UPSTREAM_NODE, "-f", UPSTREAM_OVERALL]
        .iter()
        .chain(&UPSTREAM_PORT_RANGE)
        .map(|s| s.to_string())
        .collect();
    flows.push(Flow {
        name: "upstream TestOverallIPTablesRules".into(),
        syncs: vec![Sync {
            payloads: vec![kubehops(&as_format(&overall, "kube-proxy"))?, read(&golden.join("upstream/overall.txt"))?],
            expected: kubehops(&as_format(&overall, "kernel"))?,
        }],
    });
    // kube-proxy's TestSyncProxyRulesRepeated, sync after sync.
    let mut syncs = Vec::new();
    for i in 0..REPEATED.len() {
        let args = repeated_restore_args(i);
        let mut payloads = Vec::new();
        if i == 0 {
            let mut first: Vec<String> = ["iptables-save", "--iptables-features", "upstream-test-fake", "-f", UPSTREAM_NODE].map(String::from).to_vec();
            first.extend(step_files(&REPEATED[0], "-f"));
            payloads.push(kubehops(&first)?);
        }
        payloads.push(read(&golden.join(format!("upstream/sync-repeated-{}.txt", i + 1)))?);
        syncs.push(Sync { payloads, expected: kubehops(&as_format(&args, "kernel"))? });
    }
    flows.push(Flow { name: "upstream TestSyncProxyRulesRepeated".into(), syncs });
    Ok(flows)
}

fn sorted_files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(ext))
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(format!("no {ext} files in {}", dir.display()));
    }
    Ok(out)
}

const MARK: &str = "@@@ sync ";

/// Loads a flow into a fresh namespace and compares each sync's result.
fn round_trip(backend: &str, flow: &Flow, scratch: &Path) -> Result<(), String> {
    let dir = scratch.join(format!("{backend}-{}", flow.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut script = String::from("set -e\n");
    for c in COUNTERS {
        script.push_str(&format!("nfacct add {c} >/dev/null\n"));
    }
    for t in CANARY_TABLES {
        script.push_str(&format!("iptables-{backend} -w -t {t} -N {CANARY_CHAIN}\n"));
    }
    for (i, sync) in flow.syncs.iter().enumerate() {
        for (j, p) in sync.payloads.iter().enumerate() {
            let file = dir.join(format!("{i}-{j}.txt"));
            std::fs::write(&file, p).map_err(|e| format!("{}: {e}", file.display()))?;
            script.push_str(&format!("iptables-{backend}-restore -w --noflush < '{}'\n", file.display()));
        }
        script.push_str(&format!("echo '{MARK}{i}'\niptables-{backend}-save\n"));
    }
    let out = Command::new("unshare").args(["-n", "sh", "-c", &script]).output().map_err(|e| format!("cannot run unshare: {e}"))?;
    if !out.status.success() {
        return Err(format!("the kernel refused the rules: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let sections: Vec<&str> = text.split(MARK).skip(1).collect();
    if sections.len() != flow.syncs.len() {
        return Err(format!("expected {} iptables-save outputs, got {}", flow.syncs.len(), sections.len()));
    }
    for (i, (section, sync)) in sections.iter().zip(&flow.syncs).enumerate() {
        let body = section.split_once('\n').map_or("", |(_, b)| b);
        compare(&tables(&sync.expected), &tables(body)).map_err(|e| format!("sync {}: {e}", i + 1))?;
    }
    Ok(())
}

/// iptables-save text by table, without its `#` header and footer lines.
fn tables(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(name) = line.strip_prefix('*') {
            current = name.to_string();
        }
        out.entry(current.clone()).or_default().push(line.to_string());
    }
    out
}

fn compare(expected: &BTreeMap<String, Vec<String>>, kernel: &BTreeMap<String, Vec<String>>) -> Result<(), String> {
    let names = |m: &BTreeMap<String, Vec<String>>| m.keys().cloned().collect::<Vec<_>>();
    if names(expected) != names(kernel) {
        return Err(format!("tables: --format kernel has {:?}, the kernel {:?}", names(expected), names(kernel)));
    }
    for (name, want) in expected {
        let got = &kernel[name];
        if want != got {
            let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
            return Err(format!(
                "table {name} differs at line {}:\n  --format kernel: {:?}\n  the kernel:      {:?}",
                at + 1,
                want.get(at).map_or("<end>", String::as_str),
                got.get(at).map_or("<end>", String::as_str)
            ));
        }
    }
    Ok(())
}
