//! The binary on hostile and huge input: deep nesting refused with the
//! file and line, every endpoint of a big Service listed, failed writes
//! reported, skipped kinds dropped as they are read, and the YAML reader
//! agreeing with the JSON reader. (Times and memory are printed by the
//! benchmark, `examples/cli_bench.rs`, not asserted here.)

use kubehops_cli::input::{documents, Source};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

mod support;

fn kubehops(args: &[&str], stdin: &str) -> (i32, String, String) {
    let out = support::run_kubehops(args, stdin);
    (out.status.code().expect("an exit code"), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn a_deep_paste_is_refused_with_its_line() {
    let text = format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  labels: {}\n", "[".repeat(50_000));
    let (code, out, err) = kubehops(&["get", "svc", "-f", "-"], &text);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.starts_with("error: error parsing STDIN: yaml: line 5, column ") && err.ends_with(": exceeded max depth of 100 nested mappings and sequences\n"), "{err}");
    let (code, _, err) = kubehops(&["get", "svc", "-f", "-"], &format!("{{\"a\": {}", "[".repeat(50_000)));
    assert_eq!(code, 1);
    assert!(err.starts_with("error: error parsing STDIN: json: line 1, column ") && err.contains("exceeded max depth of 100"), "{err}");
}

/// A NodePort Service `web` on node-1 with `n` endpoints in slices of 1,000.
fn big_service(n: usize) -> String {
    let mut s = String::from(
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.11}]}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: ClusterIP, clusterIP: 10.96.0.50, ports: [{name: http, port: 80, targetPort: 8080}]}\n",
    );
    for k in 0..n.div_ceil(1000) {
        let _ = write!(
            s,
            "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: web-{k}, labels: {{kubernetes.io/service-name: web}}}}\n\
             addressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\nendpoints:\n"
        );
        for i in k * 1000..n.min((k + 1) * 1000) {
            let _ = writeln!(s, "- {{addresses: [10.100.{}.{}], conditions: {{ready: true}}, nodeName: node-1}}", i / 256, i % 256);
        }
    }
    s
}

#[test]
fn trace_lists_every_endpoint_of_a_big_service() {
    // More than the 10,000 the search used to stop at, without a word.
    let n = 12_000;
    let (code, out, err) = kubehops(&["trace", "--node", "node-1", "--src", "198.51.100.7", "--dst", "10.96.0.50", "--dport", "80", "-o", "json", "-f", "-"], &big_service(n));
    assert_eq!((code, err.as_str()), (0, ""));
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let targets = v["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), n);
    assert!(targets.contains(&serde_json::json!("10.100.46.223:8080")), "the last endpoint, 11,999");
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_reported_and_a_closed_pipe_is_not() {
    let full = std::fs::File::create("/dev/full").expect("/dev/full");
    let out = Command::new(env!("CARGO_BIN_EXE_kubehops"))
        .args(["iptables-save", "--node", "node-1", "-f", "tests/fixtures/cluster"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(full)
        .output()
        .expect("run kubehops");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "kubehops: write error: No space left on device\n");

    // `| head -c 10`: the reader goes away while kubehops still has more
    // than a pipe's buffer to write.
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubehops"))
        .args(["iptables-save", "--node", "node-1", "-f", "-"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kubehops");
    let mut stdout = child.stdout.take().expect("stdout");
    child.stdin.take().expect("stdin").write_all(big_service(5_000).as_bytes()).expect("write stdin");
    let mut head = [0u8; 10];
    stdout.read_exact(&mut head).expect("the first bytes");
    drop(stdout);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(&head, b"*filter\n:I");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.status.code(), Some(kubehops_cli::EXIT_BROKEN_PIPE));
}

#[test]
fn skipped_kinds_are_warned_about_and_dropped_as_read() {
    // A List in kubectl's key order: items before kind, data before kind.
    let mut s = String::from("apiVersion: v1\nitems:\n");
    for i in 0..200 {
        let _ = write!(s, "- apiVersion: v1\n  data: {{payload: \"{}\"}}\n  kind: ConfigMap\n  metadata: {{name: cm-{i}, namespace: default}}\n", "x".repeat(1000));
    }
    s.push_str("- apiVersion: v1\n  kind: Service\n  metadata: {name: web}\n  spec: {clusterIP: 10.96.0.50, ports: [{port: 80}]}\nkind: List\nmetadata: {}\n");
    let (code, out, err) = kubehops(&["get", "svc", "--now", "2024-05-01T12:00:00Z", "-f", "-"], &s);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("NAME   TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\nweb    ClusterIP   10.96.0.50"), "{out}");
    assert_eq!(err.lines().filter(|l| l.starts_with("warning: skipping v1 ConfigMap \"cm-")).count(), 200, "{err}");
    // What the reader keeps of them: no data.
    let docs = kubehops_cli::input::documents_keeping(&Source { name: "s".into(), text: s }, &kubehops_cli::objects::reads).unwrap();
    assert_eq!(docs[0].value["items"][0], serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-0", "namespace": "default"}}));
}

#[test]
fn the_yaml_reader_agrees_with_the_json_reader() {
    // The fixtures, and the same objects written as JSON by serde_json.
    for path in ["tests/fixtures/cluster/cluster.yaml", "tests/fixtures/kube-proxy.yaml", "tests/fixtures/with-deployment.yaml"] {
        let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
        let yaml = documents(&Source { name: path.into(), text }).unwrap();
        assert!(!yaml.is_empty());
        let json: String = yaml.iter().map(|d| serde_json::to_string_pretty(&d.value).unwrap() + "\n").collect();
        let back = documents(&Source { name: "j".into(), text: json }).unwrap();
        assert_eq!(yaml.iter().map(|d| &d.value).collect::<Vec<_>>(), back.iter().map(|d| &d.value).collect::<Vec<_>>(), "{path}");
    }
    // A few values checked by hand in cluster.yaml.
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cluster/cluster.yaml")).unwrap();
    let docs = documents(&Source { name: "c".into(), text }).unwrap();
    let web = docs.iter().find(|d| d.value["kind"] == "Service" && d.value["metadata"]["name"] == "web").expect("Service web");
    assert_eq!(web.value["spec"]["ports"][0]["nodePort"], serde_json::json!(30080));
}
