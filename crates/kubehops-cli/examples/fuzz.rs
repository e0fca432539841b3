//! A deterministic mutation fuzzer for the object reader and the command
//! line, on stable Rust and without dependencies.
//!
//! Each case is drawn from a seed: the test fixtures, cut, spliced and
//! sprinkled with YAML and JSON syntax (brackets, anchors, tags, quotes,
//! long runs of nesting, odd numbers, odd bytes), and a command line built
//! from the real commands and flags (in the spellings clap accepts:
//! `--flag=value`, `-fFILE`, flags before operands) with mutated values.
//! Even cases go to the reader alone, odd ones through
//! `kubehops_cli::run_as` with the text on stdin, a quarter of them as the
//! kubectl plugin; `run_as` reads the line with the clap definitions the
//! binaries use. A case fails when it panics, when it takes longer than the
//! timeout, when it exits with a code other than 0, 1, 2 (or 141, a closed
//! pipe, which cannot happen here), when it fails without saying why on
//! stderr (exit 2 without the usage), or when the plugin names itself
//! `kubehops`.
//!
//! `cargo run --release -p kubehops-cli --example fuzz -- [--cases N] [--seed S] [--timeout SECONDS]`
//!
//! `cargo test` runs a short campaign (tests/fuzz.rs); the README gives
//! the long one.

use kubehops_cli::args::Program;
use kubehops_cli::input::{documents, documents_keeping, Source};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// SplitMix64: small, fast and the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const CORPUS: [&str; 8] = [
    include_str!("../tests/fixtures/cluster/cluster.yaml"),
    include_str!("../tests/fixtures/cluster/shop.json"),
    include_str!("../tests/fixtures/kube-proxy.yaml"),
    include_str!("../tests/fixtures/with-deployment.yaml"),
    include_str!("../tests/fixtures/bad/several-problems.yaml"),
    include_str!("../tests/fixtures/bad/wrong-types.yaml"),
    include_str!("../tests/fixtures/bad/port-conflict.yaml"),
    include_str!("../tests/fixtures/bad/unresolved-named-port.yaml"),
];

/// Pieces of YAML and JSON syntax, and values that have broken parsers.
const TOKENS: [&str; 48] = [
    "[", "]", "{", "}", ": ", "- ", ", ", "---\n", "...\n", "\n", "  ", "\t", "#", "&a ", "*a", "&b ", "*b", "!!int ", "!!str ", "!!map ",
    "!custom ", "? ", "|\n", ">-\n", "\"", "'", "\\", "\\u", "null", "~", "true", "yes", "0x", "0o", "1e999", "-0", ".nan", "18446744073709551616",
    "\u{feff}", "\u{0}", "é", "\u{10ffff}", "<<: ", "items:\n", "kind: List\n", "apiVersion: v1\n", "kind: Service\n", "%YAML 1.2\n",
];

/// Replaces, inserts, deletes or duplicates parts of `text`.
pub fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut s: Vec<char> = text.chars().collect();
    let most = if rng.below(8) == 0 { 8 } else { 2 };
    for _ in 0..1 + rng.below(most) {
        let at = rng.below(s.len() + 1);
        match rng.below(8) {
            0 | 1 => {
                let t: Vec<char> = rng.pick(&TOKENS).chars().collect();
                s.splice(at..at, t);
            }
            2 => {
                let end = (at + rng.below(40)).min(s.len());
                s.drain(at..end);
            }
            3 => {
                let end = (at + rng.below(80)).min(s.len());
                let copy: Vec<char> = s[at..end].to_vec();
                let to = rng.below(s.len() + 1);
                s.splice(to..to, copy);
            }
            4 => {
                // A long run of one token: deep nesting, long lines.
                let t = rng.pick(&["[", "{", "- ", "a: ", "\n ", "[{", "&x [*x, "]);
                let most = if rng.below(10) == 0 { 50_000 } else { 300 };
                let n = 1 + rng.below(most);
                s.splice(at..at, t.repeat(n).chars());
            }
            5 => {
                if at < s.len() {
                    s[at] = char::from_u32(rng.below(0x80) as u32).unwrap_or('?');
                }
            }
            6 => {
                let other = rng.pick(&CORPUS);
                let from = rng.below(other.len() + 1);
                let piece: String = other.chars().skip(from).take(rng.below(300)).collect();
                s.splice(at..at, piece.chars());
            }
            _ => {
                let end = (at + rng.below(10)).min(s.len());
                s.drain(at..end);
            }
        }
    }
    s.into_iter().collect()
}

/// A directory of real objects, for `--previous`.
const CLUSTER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cluster");

/// Flags with the values to pick from: `["--node", "node-1", …]`.
type Flags<'a> = Vec<&'a [&'a str]>;

/// A command line: mostly a real command with its own flags and usual
/// values, sometimes a stray flag, a missing one or a mutated value.
pub fn command_line(rng: &mut Rng) -> Vec<String> {
    let node = ["--node", "node-1", "node-2", "node-3", "nope"];
    let src = ["--src", "198.51.100.7", "10.244.1.5", "192.168.0.11", "300.1.1.1"];
    let dst = ["--dst", "10.96.0.50", "10.0.0.12", "203.0.113.10", "192.168.0.12", "10.244.2.8"];
    let dport = ["--dport", "80", "30080", "443", "8080", "0"];
    let proto = ["--proto", "tcp", "udp", "sctp", "icmp"];
    let ns = ["-n", "default", "shop", "kube-system", ""];
    let namespace = ["--namespace", "default", "shop"];
    let now = ["--now", "2024-05-01T12:05:30Z", "2024-05-01T14:05:30+02:00", "2024-13-01T00:00:00Z"];
    let format = ["--format", "kernel", "kube-proxy", "restore", "nft"];
    let features = ["--iptables-features", "modern", "upstream-test-fake", "none", "random-fully,nfacct", "tcp-be-liberal", "", "bogus"];
    let previous = ["--previous", CLUSTER_DIR, "-", "/nonexistent"];
    let output = ["-o", "json", "wide", "yaml"];
    let range = ["--service-node-port-range", "30000-32767", "1-65535", "32767-30000"];
    let strict: &[&str] = &["--strict"];
    // A partial or full sync for iptables-save: `--format restore
    // --previous FILE [--full-sync]`, kept together at the end.
    let mut sync = None;
    // The command's words, its flags, and whether it reads objects (-f).
    // The commands that read objects come twice as often as the others.
    let nft_format = ["--format", "transaction", "ruleset", "kernel"];
    let network = ["--network", "routed", "vxlan", "vxlan", "host-gw"];
    let service_cidr = ["--service-cidr", "10.96.0.0/12", "10.96.0.1", "fd00::/108", "0.0.0.0/0"];
    let (mut a, required, optional, reads): (Vec<String>, Flags, Flags, bool) = match rng.below(12) {
        0 | 1 => {
            if rng.below(4) == 0 {
                sync = Some((*rng.pick(&[CLUSTER_DIR, CLUSTER_DIR, "/nonexistent"]), rng.below(2) == 0));
            }
            (vec!["iptables-save".into()], vec![&node], vec![&format, &features, &range, strict], true)
        }
        2 | 3 => (vec!["trace".into()], vec![&node, &src, &dst, &dport], vec![&proto, &output, &["--from-node"], &features, &range, strict, &network, &["--handshake"]], true),
        4 | 5 => {
            let resource = *rng.pick(&["svc", "svc", "service", "services", "pods"]);
            (vec!["get".into(), resource.into()], vec![], vec![&ns, &namespace, &["-A"], &["--all-namespaces"], &["-o", "wide"], &now, strict], true)
        }
        6 | 7 => {
            let name = *rng.pick(&["web", "_http._tcp.web", "web.default.svc.cluster.local.", "10-244-1-5.web", "docs", "shop.shop", "x..y"]);
            let mut a = vec!["dig".to_string(), name.to_string()];
            if rng.below(2) == 0 {
                a.push(rng.pick(&["A", "SRV", "CNAME", "MX"]).to_string());
            }
            (a, vec![], vec![&ns, strict], true)
        }
        8 => {
            let mut a = vec!["completion".to_string()];
            if rng.below(8) != 0 {
                a.push(rng.pick(&["bash", "zsh", "fish", "powershell", "tcsh"]).to_string());
            }
            (a, vec![], vec![], false)
        }
        9 => {
            let words = *rng.pick(&[&["--version"][..], &["-V"], &["help"], &["help", "trace"], &["help", "nope"], &["--help"], &["-h"], &["dig", "-h"]]);
            (words.iter().map(|w| w.to_string()).collect(), vec![], vec![], false)
        }
        10 => (vec!["nft".into()], vec![&node], vec![&nft_format, &service_cidr, &range, strict], true),
        _ => (vec![rng.pick(&["nope", "get", "", "iptables", "-x"]).to_string()], vec![], vec![&output], true),
    };
    let mut flags: Vec<&[&str]> = required.into_iter().filter(|_| rng.below(12) != 0).collect();
    flags.extend(optional.into_iter().filter(|_| rng.below(3) == 0));
    if rng.below(12) == 0 {
        flags.push(*rng.pick(&[&node[..], &src, &output, &previous, &["--full-sync"], &["--bogus"], &["--"], &["--nod"], &["-Ax"], &["-A=yes"], &["--strict=true"], &["-f"]]));
    }
    // Mostly stdin for commands that read objects; now and then none, or
    // one for a command that takes no -f.
    if reads == (rng.below(12) != 0) {
        flags.push(&["-f", "-"]);
    }
    let operands = a.len();
    for f in flags {
        let value = (f.len() > 1).then(|| {
            let v = rng.pick(&f[1..]).to_string();
            if rng.below(10) == 0 {
                mutate(rng, &v)
            } else {
                v
            }
        });
        let words = match value {
            // The spellings of one flag with its value: `--flag value`,
            // `--flag=value`, `-fvalue`.
            Some(v) if rng.below(6) == 0 => vec![if f[0].starts_with("--") { format!("{}={v}", f[0]) } else { format!("{}{v}", f[0]) }],
            Some(v) => vec![f[0].to_string(), v],
            None => vec![f[0].to_string()],
        };
        // Flags go after the command's name, before or among its operands.
        let at = if rng.below(6) == 0 { 1 + rng.below(operands) } else { a.len() };
        a.splice(at..at, words);
    }
    if let Some((previous, full)) = sync {
        a.extend(["--format", "restore", "--previous", previous].map(String::from));
        if full {
            a.push("--full-sync".into());
        }
    }
    a
}

/// What went wrong in one case (shown with `{:?}`).
#[derive(Debug)]
#[allow(dead_code)] // the messages are read through Debug only
pub enum Failure {
    Panic(String),
    Timeout,
    Unreported(String),
}

/// One case: the input text and, for command-line cases, the arguments
/// and the program that reads them.
pub struct Case {
    pub text: String,
    pub args: Option<Vec<String>>,
    pub program: Program,
}

pub fn case(seed: u64, index: u64) -> Case {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0xd134_2543_de82_ef95));
    let base = rng.pick(&CORPUS);
    let text = if rng.below(20) == 0 { base.to_string() } else { mutate(&mut rng, base) };
    let args = (index % 2 == 1).then(|| command_line(&mut rng));
    let program = if args.is_some() && rng.below(4) == 0 { Program::KubectlPlugin } else { Program::Kubehops };
    Case { text, args, program }
}

/// Runs a case and checks what the program promises about it. Returns the
/// exit code (for the reader alone: 0 when it read the text, 1 when not).
pub fn check(c: &Case) -> Result<i32, Failure> {
    let result = std::panic::catch_unwind(|| match &c.args {
        None => {
            let src = Source { name: "fuzz.yaml".into(), text: c.text.clone() };
            let keep_services = |_: &str, kind: &str| kind == "Service";
            let mut code = 0;
            for r in [documents(&src), documents_keeping(&src, &keep_services)] {
                if let Err(e) = r {
                    // As the CLI prints it: `error: …`.
                    let msg = kubehops_cli::Error::from(e).to_string();
                    if !msg.starts_with("error: ") || msg.trim().len() <= "error: ".len() {
                        return Err(format!("reader error without a message: {msg:?}"));
                    }
                    code = 1;
                }
            }
            Ok(code)
        }
        Some(args) => {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let code = kubehops_cli::run_as(c.program, args, &mut c.text.as_bytes(), &mut out, &mut err);
            let (out, err) = (String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
            if c.program == Program::KubectlPlugin && [&out, &err].iter().any(|s| s.contains("Usage: kubehops") || s.contains("'kubehops ")) {
                return Err(format!("the plugin says kubehops: exit {code}, stdout {out:?}, stderr {err:?}"));
            }
            match code {
                0 => Ok(0),
                1 if err.contains("error: ") || err.contains(" is invalid: ") => Ok(code),
                2 if err.contains("error: ") && err.contains("\n\nUsage:") => Ok(code),
                _ => Err(format!("exit {code} with stderr {err:?}")),
            }
        }
    });
    match result {
        Ok(Ok(code)) => Ok(code),
        Ok(Err(m)) => Err(Failure::Unreported(m)),
        Err(p) => Err(Failure::Panic(p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default())),
    }
}

/// How a campaign went.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: u64,
    pub failures: Vec<(u64, Failure)>,
    pub slowest: Duration,
    /// How many reader cases read their text (0) or refused it (1), and
    /// command-line cases exited 0, 1 and 2.
    pub reader: [u64; 2],
    pub exits: [u64; 3],
}

/// Runs cases `0..cases` of `seed` on a worker thread, each within
/// `timeout`. After a timeout the stuck worker is left behind and a new
/// one takes the next case.
pub fn campaign(seed: u64, cases: u64, timeout: Duration, mut progress: impl FnMut(u64, &Report)) -> Report {
    let mut report = Report::default();
    let spawn = || {
        let (to_worker, cases_rx) = mpsc::channel::<u64>();
        let (results_tx, results) = mpsc::channel::<Result<i32, Failure>>();
        std::thread::spawn(move || {
            for i in cases_rx {
                if results_tx.send(check(&case(seed, i))).is_err() {
                    return;
                }
            }
        });
        (to_worker, results)
    };
    let (mut to_worker, mut results) = spawn();
    for i in 0..cases {
        let t = Instant::now();
        let outcome = match to_worker.send(i) {
            Ok(()) => results.recv_timeout(timeout).unwrap_or(Err(Failure::Timeout)),
            Err(_) => Err(Failure::Timeout),
        };
        report.slowest = report.slowest.max(t.elapsed());
        report.cases += 1;
        match outcome {
            Ok(code) if i % 2 == 0 => report.reader[code.clamp(0, 1) as usize] += 1,
            Ok(code) => report.exits[code.clamp(0, 2) as usize] += 1,
            Err(f) => {
                if matches!(f, Failure::Timeout) {
                    (to_worker, results) = spawn();
                }
                report.failures.push((i, f));
            }
        }
        progress(i + 1, &report);
    }
    report
}

#[allow(dead_code)]
fn main() {
    let mut args = std::env::args().skip(1);
    let (mut cases, mut seed, mut timeout) = (100_000u64, 1u64, 5.0f64);
    while let Some(a) = args.next() {
        let value = args.next().and_then(|v| v.parse::<f64>().ok());
        match (a.as_str(), value) {
            ("--cases", Some(v)) => cases = v as u64,
            ("--seed", Some(v)) => seed = v as u64,
            ("--timeout", Some(v)) => timeout = v,
            _ => {
                eprintln!("usage: fuzz [--cases N] [--seed S] [--timeout SECONDS]");
                std::process::exit(2);
            }
        }
    }
    // Panics are counted and shown below, not printed as they happen.
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let report = campaign(seed, cases, Duration::from_secs_f64(timeout), |done, r| {
        if done % 100_000 == 0 {
            eprintln!("fuzz: {done} cases, {} failures, {:.0} s", r.failures.len(), start.elapsed().as_secs_f64());
        }
    });
    for (i, f) in report.failures.iter().take(20) {
        println!("fuzz: case {i} of seed {seed}: {f:?}");
    }
    let panics = report.failures.iter().filter(|(_, f)| matches!(f, Failure::Panic(_))).count();
    let timeouts = report.failures.iter().filter(|(_, f)| matches!(f, Failure::Timeout)).count();
    println!(
        "fuzz: seed {seed}: {} cases in {:.0} s, {} failures ({panics} panics, {timeouts} timeouts over {timeout} s), slowest case {:.3} s",
        report.cases,
        start.elapsed().as_secs_f64(),
        report.failures.len(),
        report.slowest.as_secs_f64()
    );
    let [read, refused] = report.reader;
    let [ok, bad_input, usage] = report.exits;
    println!("fuzz: reader cases: {read} read, {refused} refused; command lines: {ok} exit 0, {bad_input} exit 1, {usage} exit 2");
    std::process::exit(if report.failures.is_empty() { 0 } else { 1 });
}
