//! How fast `kubehops` reads, and how much memory it takes: a cluster of
//! 5,000 Services as YAML and as JSON (the reader's MB/s, then the whole
//! `get svc -A`), 50 MB of ConfigMaps that are all skipped (time and peak
//! memory), and a 50 KB paste nested 50,000 deep (time to refuse it).
//! Prints figures; asserts nothing about time.
//!
//! `cargo run --release -p kubehops-cli --example cli_bench`

use kubehops_cli::input::{documents_keeping, Source};
use kubehops_cli::objects;
use std::fmt::Write as _;
use std::time::Instant;

/// `n` Services in 50 namespaces, as `kubectl get svc -o yaml` prints them
/// (server-set fields included), one document each.
fn services_yaml(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let k = i + 1;
        let ip = format!("10.{}.{}.{}", 96 + k / 65536, k / 256 % 256, k % 256);
        let _ = write!(
            s,
            "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\n  namespace: ns-{}\n  labels: {{app: svc-{i}, tier: backend}}\n  \
             annotations:\n    description: \"service number {i} of the benchmark\"\n  creationTimestamp: \"2024-05-01T12:00:00Z\"\n  \
             uid: 0e4b8c7a-{i:04}-4f3e-9d2a-6c1b5e8f7a90\n  resourceVersion: \"{}\"\nspec:\n  type: ClusterIP\n  clusterIP: {ip}\n  \
             clusterIPs: [{ip}]\n  ipFamilies: [IPv4]\n  ipFamilyPolicy: SingleStack\n  internalTrafficPolicy: Cluster\n  sessionAffinity: None\n  \
             selector: {{app: svc-{i}}}\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n    targetPort: 8080\n  \
             - name: metrics\n    port: 9090\n    protocol: TCP\n    targetPort: 9090\nstatus:\n  loadBalancer: {{}}\n",
            i % 50,
            100_000 + i
        );
    }
    s
}

/// About `bytes` of ConfigMaps with 100 small keys each, in kubectl's key
/// order (apiVersion, data, kind, metadata: the kind comes after the data).
fn configmaps_yaml(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 10_000);
    let mut i = 0;
    while s.len() < bytes {
        s.push_str("---\napiVersion: v1\ndata:\n");
        for k in 0..100 {
            let _ = writeln!(s, "  key-{k}: value number {k} of configmap {i}");
        }
        let _ = write!(s, "kind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: default\n");
        i += 1;
    }
    s
}

/// The process's peak resident memory in MB since the last [`reset_peak`]
/// (Linux: VmHWM in /proc/self/status), or `None` elsewhere.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Resets the peak to the current resident memory (Linux 4.0 and later).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn read(name: &str, text: String) -> (f64, usize) {
    let src = Source { name: name.into(), text };
    let t = Instant::now();
    let docs = documents_keeping(&src, &objects::reads).expect("the benchmark's input reads");
    (t.elapsed().as_secs_f64(), docs.len())
}

fn run(args: &[&str], stdin: &str) -> (f64, i32, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let t = Instant::now();
    let code = kubehops_cli::run(&args, &mut stdin.as_bytes(), &mut out, &mut err);
    (t.elapsed().as_secs_f64(), code, String::from_utf8_lossy(&err).lines().last().unwrap_or("").to_string())
}

fn main() {
    // Peak memory first, while the process is still small.
    let path = std::env::temp_dir().join(format!("kubehops-bench-{}.yaml", std::process::id()));
    let mb = {
        let cms = configmaps_yaml(50_000_000);
        std::fs::write(&path, &cms).expect("write the benchmark's input file");
        cms.len() as f64 / 1e6
    };
    reset_peak();
    let before = peak_rss_mb();
    let (t, code, _) = run(&["get", "svc", "-f", &path.display().to_string()], "");
    let _ = std::fs::remove_file(&path);
    let peak = match (before, peak_rss_mb()) {
        (Some(b), Some(p)) => format!("peak memory {p:.0} MB ({b:.0} MB before; the text read is {mb:.0} MB)"),
        _ => "peak memory not measured on this platform".into(),
    };
    println!("bench: {mb:.1} MB of skipped ConfigMaps: get svc {:.2} s ({:.1} MB/s, exit {code}), {peak}", t, mb / t);

    let yaml = services_yaml(5000);
    let values: Vec<serde_json::Value> = documents_keeping(&Source { name: "y".into(), text: yaml.clone() }, &|_, _| true)
        .expect("reads")
        .into_iter()
        .map(|d| d.value)
        .collect();
    let json = serde_json::to_string_pretty(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": values})).expect("JSON");
    for (what, text) in [("YAML stream", &yaml), ("JSON List", &json)] {
        let mb = text.len() as f64 / 1e6;
        let (t, docs) = read(what, text.clone());
        let (all, code, _) = run(&["get", "svc", "-A", "--now", "2024-05-01T12:05:00Z", "-f", "-"], text);
        println!("bench: 5000 Services, {what:<11} {mb:>5.1} MB: read {:>6.1} ms ({:>5.1} MB/s, {docs} documents), get svc -A {:>6.1} ms (exit {code})", t * 1e3, mb / t, all * 1e3);
    }

    for (what, text) in [("YAML", format!("a: {}\n", "[".repeat(50_000))), ("JSON", "[".repeat(50_000))] {
        let (t, code, msg) = run(&["get", "svc", "-f", "-"], &text);
        println!("bench: 50 KB {what} nested 50,000 deep: refused in {:.2} ms (exit {code}: {msg})", t * 1e3);
    }
}
