//! Runs the built `kubehops` binary on the fixtures in `tests/fixtures/`.
//!
//! Good input: stdout is compared with `tests/golden/<case>.txt`; run with
//! `UPDATE_EXPECT=1` to rewrite those files after an intended change, then
//! review the diff. Outputs that depend on kube-proxy's rule layout also get
//! checks of facts that hold whatever the layout.
//!
//! Bad input: the exit code and the exact message on stderr.

mod support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use support::{dump_differences, parse_dump, repeated_restore_args, REPEATED, UPSTREAM_NODE, UPSTREAM_OVERALL, UPSTREAM_PORT_RANGE};

/// The good cluster: a directory with cluster.yaml (YAML stream) and
/// shop.json (a JSON List with a LoadBalancer Service and its Pods).
const CLUSTER: [&str; 2] = ["-f", "tests/fixtures/cluster"];
const NOW: [&str; 2] = ["--now", "2024-05-01T12:05:30Z"];

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the binary in the crate's directory, so fixture paths in messages
/// are the relative ones given here.
fn kubehops_with_stdin(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubehops"))
        .args(args)
        .current_dir(manifest_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kubehops");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    let out = child.wait_with_output().expect("wait for kubehops");
    Run {
        code: out.status.code().expect("exit code (not killed by a signal)"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

fn kubehops(args: &[&str]) -> Run {
    kubehops_with_stdin(args, "")
}

fn with(parts: &[&[&str]]) -> Vec<String> {
    parts.iter().flat_map(|p| p.iter().map(|s| s.to_string())).collect()
}

fn run_ok(args: &[String]) -> String {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = kubehops(&a);
    assert_eq!(r.code, 0, "kubehops {}\nstderr: {}", a.join(" "), r.stderr);
    assert_eq!(r.stderr, "", "kubehops {} wrote to stderr", a.join(" "));
    r.stdout
}

fn check_golden(name: &str, actual: &str) {
    kubehops_core::golden::check(&manifest_dir().join("tests/golden").join(format!("{name}.txt")), actual);
}

// ------------------------------------------------------------ iptables-save

/// The tables, each `*NAME … COMMIT`, in this order, and nothing but
/// iptables-save lines.
fn assert_iptables_save_shape(out: &str, tables: &[&str]) {
    let starts: Vec<&str> = out.lines().filter(|l| l.starts_with('*')).collect();
    let want: Vec<String> = tables.iter().map(|t| format!("*{t}")).collect();
    assert_eq!(starts, want, "tables in order:\n{out}");
    assert!(out.ends_with("\nCOMMIT\n"), "ends with COMMIT");
    assert_eq!(out.lines().filter(|l| *l == "COMMIT").count(), tables.len());
    for l in out.lines() {
        assert!(l.starts_with('*') || l.starts_with(':') || l.starts_with("-A ") || l.starts_with("-X ") || l == "COMMIT", "not an iptables-save line: {l:?}");
    }
}

const CANARY: &str = ":KUBE-PROXY-CANARY - [0:0]";

#[test]
fn iptables_save_for_a_named_node() {
    let out = run_ok(&with(&[&["iptables-save", "--node", "node-1"], &CLUSTER]));
    assert_iptables_save_shape(&out, &["filter", "nat"]);
    // Facts of the input, whatever the rule layout: web's node port and both
    // endpoints; shop's endpoints come from its Pods, with the named
    // targetPort `http` resolved to 8080.
    assert!(out.contains("--dport 30080"));
    for ep in ["10.244.1.5:8080", "10.244.3.9:8080", "10.244.2.7:8080", "10.244.3.4:8080"] {
        assert!(out.contains(&format!("--to-destination {ep}")), "DNAT to {ep}");
    }
    assert!(!out.contains("10.244.2.9"), "the headless Service gets no rules");
    // kube-proxy creates its canary chains itself; they are not rules it writes.
    assert!(!out.contains("KUBE-PROXY-CANARY"));
    // A modern node: MASQUERADE --random-fully and nfacct counters.
    assert!(out.contains("-j MASQUERADE --random-fully\n"));
    assert!(out.contains("-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP\n"));
    check_golden("iptables-save-node-1", &out);
}

#[test]
fn iptables_save_in_the_kernel_form() {
    let ours = run_ok(&with(&[&["iptables-save", "--node", "node-1"], &CLUSTER]));
    let kernel = run_ok(&with(&[&["iptables-save", "--node", "node-1", "--format", "kernel"], &CLUSTER]));
    assert_iptables_save_shape(&kernel, &["mangle", "filter", "nat"]);
    // Same rules, said the way iptables-save says them.
    assert_eq!(ours.lines().filter(|l| l.starts_with("-A ")).count(), kernel.lines().filter(|l| l.starts_with("-A ")).count());
    assert!(kernel.contains("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n"));
    assert!(kernel.contains("-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n"));
    assert!(kernel.contains(" -d 10.96.0.50/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-"));
    assert!(kernel.contains(" -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP\n"), "libxt_nfacct's two spaces");
    assert!(!kernel.contains("--or-mark"), "kube-proxy's spelling is not what the kernel prints");
    // The canary chain, and nothing else, in each of the three tables.
    assert_eq!(kernel.matches(CANARY).count(), 3);
    let mangle: Vec<&str> = kernel.lines().take_while(|l| *l != "COMMIT").collect();
    assert_eq!(mangle.len(), 7, "mangle: five built-in chains and the canary\n{}", mangle.join("\n"));
    // User chains are listed in name order after the built-in ones.
    let chains: Vec<&str> = kernel.lines().skip_while(|l| *l != "*nat").filter(|l| l.starts_with(":KUBE-")).collect();
    let mut sorted = chains.clone();
    sorted.sort();
    assert_eq!(chains, sorted);
    let bad = kubehops(&["iptables-save", "--node", "node-1", "--format", "yaml", "-f", "tests/fixtures/cluster"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("invalid argument \"yaml\" for \"--format\": want kube-proxy, restore or kernel"), "{}", bad.stderr);
    check_golden("iptables-save-node-1-kernel", &kernel);
}

#[test]
fn iptables_save_takes_the_node_from_hostname_override() {
    let out = run_ok(&with(&[&["iptables-save"], &CLUSTER, &["-f", "tests/fixtures/kube-proxy.yaml"]]));
    assert_iptables_save_shape(&out, &["filter", "nat"]);
    assert!(out.contains("10.244.0.0/16"), "clusterCIDR is used");
    // shop's externalTrafficPolicy is Local and node-2 runs one of its Pods,
    // node-1 none: the rules differ, so the node really is node-2.
    let node_1 = run_ok(&with(&[&["iptables-save", "--node", "node-1"], &CLUSTER, &["-f", "tests/fixtures/kube-proxy.yaml"]]));
    let node_2 = run_ok(&with(&[&["iptables-save", "--node", "node-2"], &CLUSTER, &["-f", "tests/fixtures/kube-proxy.yaml"]]));
    assert_ne!(out, node_1);
    assert_eq!(out, node_2);
    check_golden("iptables-save-node-2-kube-proxy-config", &out);
    let kernel = run_ok(&with(&[&["iptables-save", "--format", "kernel"], &CLUSTER, &["-f", "tests/fixtures/kube-proxy.yaml"]]));
    check_golden("iptables-save-node-2-kube-proxy-config-kernel", &kernel);
}

// ------------------------------------------------ node features and syncs

/// The KUBE-FORWARD and KUBE-POSTROUTING rules, and the localhost node
/// port rule, for one --iptables-features value.
fn feature_lines(features: &str) -> Vec<String> {
    let out = run_ok(&with(&[&["iptables-save", "--node", "node-1", "--iptables-features", features], &CLUSTER]));
    out.lines()
        .filter(|l| l.starts_with("-A KUBE-FORWARD -m conntrack --ctstate INVALID") || l.contains("-j MASQUERADE") || l.contains("-d 127.0.0.0/8 --dport 30080"))
        .map(String::from)
        .collect()
}

#[test]
fn node_features_decide_three_rules() {
    let np = "-A KUBE-NODEPORTS -m comment --comment default/web:http -m tcp -p tcp -d 127.0.0.0/8 --dport 30080 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j KUBE-EXT-CDGGSHYLG3RE2FKL";
    let drop = "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP";
    let drop_counted = "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP";
    let masq = "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE";
    let masq_rf = format!("{masq} --random-fully");
    assert_eq!(feature_lines("modern"), [drop_counted, np, &masq_rf]);
    assert_eq!(feature_lines("random-fully,nfacct"), feature_lines("modern"));
    assert_eq!(feature_lines("upstream-test-fake"), [drop_counted, np, masq]);
    assert_eq!(feature_lines("none"), [drop, masq]);
    assert_eq!(feature_lines(""), [drop, masq]);
    assert_eq!(feature_lines("random-fully"), [drop, &masq_rf]);
    // Liberal TCP tracking: no DROP at all, from the node or from the configuration.
    assert_eq!(feature_lines("nfacct,tcp-be-liberal"), [np, masq]);
    let cfg = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nconntrack: {tcpBeLiberal: true}\n";
    let r = kubehops_with_stdin(&with(&[&["iptables-save", "--node", "node-1", "-f", "-"], &CLUSTER]).iter().map(String::as_str).collect::<Vec<_>>(), cfg);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("--ctstate INVALID"), "{}", r.stdout);
    // trace takes the same flag: a localhost node port hits the counted rule.
    let t = run_ok(&with(&[&["trace", "--node", "node-1", "--src", "127.0.0.1", "--dst", "127.0.0.1", "--dport", "30080", "--from-node"], &CLUSTER]));
    assert!(t.contains(&format!("nat: {np}\n")), "{t}");
    let t = run_ok(&with(&[&["trace", "--node", "node-1", "--src", "127.0.0.1", "--dst", "127.0.0.1", "--dport", "30080", "--from-node", "--iptables-features", "none"], &CLUSTER]));
    assert!(!t.contains("nfacct"), "{t}");
    assert_eq!(trace_summary(&t).1, "10.244.1.5:8080, 10.244.3.9:8080", "the same endpoints either way");
}

/// Runs kubehops and reads its stdout as iptables-restore text.
fn restore_dump(args: &[String]) -> std::collections::BTreeMap<String, support::TableDump> {
    let out = run_ok(args);
    parse_dump(&out).unwrap_or_else(|e| panic!("kubehops {}: {e}\n{out}", args.join(" ")))
}

fn upstream_golden(name: &str) -> std::collections::BTreeMap<String, support::TableDump> {
    let path = manifest_dir().join("tests/golden/upstream").join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_dump(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The goldens in `tests/golden/upstream/` are kube-proxy's own expected
/// dumps, checked by hand against its proxier_test.go; UPDATE_EXPECT does
/// not rewrite them. They are compared as kube-proxy's test compares: the
/// same chains, each with the same rules in the same order.
#[test]
fn reproduces_upstream_overall_iptables_rules() {
    let args = with(&[
        &["iptables-save", "--format", "restore", "--iptables-features", "upstream-test-fake", "-f", UPSTREAM_NODE, "-f", UPSTREAM_OVERALL],
        &UPSTREAM_PORT_RANGE,
    ]);
    let diff = dump_differences(&upstream_golden("overall"), &restore_dump(&args));
    assert!(diff.is_empty(), "TestOverallIPTablesRules:\n{}", diff.join("\n"));
    // The modern default differs from the fake node in exactly one rule.
    let mut modern = args.clone();
    modern.retain(|a| a != "upstream-test-fake" && a != "--iptables-features");
    let diff = dump_differences(&upstream_golden("overall"), &restore_dump(&modern));
    assert_eq!(diff.len(), 1, "{}", diff.join("\n"));
    assert!(diff[0].starts_with("nat: chain KUBE-POSTROUTING differs") && diff[0].ends_with("-j MASQUERADE --random-fully"), "{}", diff[0]);
}

#[test]
fn reproduces_upstream_sync_proxy_rules_repeated() {
    for (i, step) in REPEATED.iter().enumerate() {
        let diff = dump_differences(&upstream_golden(&format!("sync-repeated-{}", i + 1)), &restore_dump(&repeated_restore_args(i)));
        assert!(diff.is_empty(), "TestSyncProxyRulesRepeated, sync {} ({}):\n{}", i + 1, step.what, diff.join("\n"));
    }
}

#[test]
fn a_partial_sync_writes_only_what_changed() {
    let sync = |i: usize| restore_dump(&repeated_restore_args(i));
    // Nothing changed: only kube-proxy's base chains are rewritten.
    let nat = &sync(7)["nat"];
    let base = ["KUBE-MARK-MASQ", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-SERVICES"];
    assert_eq!(nat.chains.iter().map(String::as_str).collect::<Vec<_>>(), base);
    // The same objects as a full sync: every chain.
    let mut full = repeated_restore_args(7);
    full.push("--full-sync".into());
    let full = restore_dump(&full);
    // svc1 and svc4 have an SVC and a SEP chain each, svc3 an SVC and two SEP.
    assert_eq!(full["nat"].chains.len(), base.len() + 7, "{:?}", full["nat"].chains);
    assert!(full["nat"].deleted.is_empty());
    // The filter table is whole in both.
    assert_eq!(sync(7)["filter"], full["filter"]);
}

#[test]
fn sync_flags_are_checked() {
    let cases: &[(&[&str], &str)] = &[
        (&["--previous", "tests/fixtures/cluster"], "error: --previous only changes the restore payload: use it with --format restore"),
        (&["--format", "kernel", "--previous", "tests/fixtures/cluster"], "error: --previous only changes the restore payload"),
        (&["--format", "restore", "--full-sync"], "error: --full-sync needs --previous"),
        (&["--format", "restore", "--previous", "-"], "error: --previous takes files or directories; stdin (-) is only for -f"),
        (&["--iptables-features", "nfacct,ipvs"], "error: invalid argument \"nfacct,ipvs\" for \"--iptables-features\": unknown feature \"ipvs\""),
    ];
    for (extra, first) in cases {
        let args = with(&[&["iptables-save", "--node", "node-1"], extra, &CLUSTER]);
        let r = kubehops(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{args:?}");
        assert!(r.stderr.starts_with(first), "{args:?}:\n{}", r.stderr);
    }
    let help = kubehops(&["iptables-save", "--help"]).stdout;
    for word in ["--format kube-proxy", "--format restore", "--format kernel", "KUBE-PROXY-CANARY", "upstream-test-fake", "random-fully", "nfacct", "tcp-be-liberal", "--previous FILE", "--full-sync"] {
        assert!(help.contains(word), "iptables-save --help mentions {word}:\n{help}");
    }
}

#[test]
fn directory_file_and_stdin_inputs_agree() {
    let from_dir = run_ok(&with(&[&["iptables-save", "--node", "node-3"], &CLUSTER]));
    let from_files = run_ok(&with(&[
        &["iptables-save", "--node", "node-3"],
        &["-f", "tests/fixtures/cluster/cluster.yaml", "--filename=tests/fixtures/cluster/shop.json"],
    ]));
    assert_eq!(from_dir, from_files);
    let yaml = std::fs::read_to_string(manifest_dir().join("tests/fixtures/cluster/cluster.yaml")).unwrap();
    let r = kubehops_with_stdin(&["iptables-save", "--node", "node-3", "-f", "-", "-f", "tests/fixtures/cluster/shop.json"], &yaml);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    assert_eq!(r.stdout, from_dir);
}

// -------------------------------------------------------------------- trace

const FROM_OUTSIDE: [&str; 4] = ["--src", "198.51.100.7", "--dport", "30080"];

/// The last three lines of a text trace, split at ": ".
fn trace_summary(out: &str) -> (String, String, String) {
    let tail: Vec<&str> = out.lines().rev().take(3).collect();
    assert_eq!(tail.len(), 3, "{out}");
    let field = |line: &str, key: &str| line.strip_prefix(&format!("{key}: ")).unwrap_or_else(|| panic!("expected {key}: in {line:?}")).to_string();
    (field(tail[2], "verdict"), field(tail[1], "targets"), field(tail[0], "masquerade"))
}

#[test]
fn trace_text_ends_with_verdict_targets_and_masquerade() {
    let out = run_ok(&with(&[&["trace", "--node", "node-2", "--dst", "10.0.0.12"], &FROM_OUTSIDE, &CLUSTER]));
    let (verdict, targets, masq) = trace_summary(&out);
    assert_eq!(verdict, "DNAT");
    assert_eq!(targets, "10.244.1.5:8080, 10.244.3.9:8080");
    // web's policy is Cluster: a packet from outside may go to another
    // node's Pod, so it is masqueraded for the reply to come back here.
    assert_eq!(masq, "true");
    for l in out.lines().rev().skip(3) {
        assert!(l.starts_with("nat: -A ") || l.starts_with("filter: -A ") || l.starts_with("mangle: -A ") || l.starts_with("raw: -A "), "matched rule line: {l:?}");
    }
    check_golden("trace-nodeport-from-outside", &out);
}

fn trace_json(args: &[String]) -> serde_json::Map<String, serde_json::Value> {
    let out = run_ok(args);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"));
    let obj = v.as_object().expect("a JSON object").clone();
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    for k in ["verdict", "targets", "masquerade"] {
        assert!(obj.contains_key(k), "key {k} in {out}");
    }
    let verdict = obj["verdict"].as_str().expect("verdict is a string");
    assert!(["DNAT", "REJECT", "DROP", "ACCEPT", "NONE"].contains(&verdict), "{verdict}");
    assert!(obj["masquerade"].is_boolean());
    for t in obj["targets"].as_array().expect("targets is a list") {
        let t = t.as_str().expect("target is a string");
        let (ip, port) = t.rsplit_once(':').expect("ip:port");
        assert!(ip.parse::<std::net::Ipv4Addr>().is_ok() && port.parse::<u16>().is_ok(), "{t}");
    }
    obj
}

#[test]
fn trace_json_has_exactly_the_three_keys() {
    // shop has externalTrafficPolicy Local: from outside, the balancer's
    // address reaches only the Pods on the node the packet arrives at.
    let lb = |node: &str| with(&[&["trace", "--node", node, "--src", "198.51.100.7", "--dst", "203.0.113.10", "--dport", "80", "-o", "json"], &CLUSTER]);
    let obj = trace_json(&lb("node-2"));
    assert_eq!(obj["verdict"], "DNAT");
    assert_eq!(obj["targets"], serde_json::json!(["10.244.2.7:8080"]));
    check_golden("trace-loadbalancer-local-json", &run_ok(&lb("node-2")));
    let obj = trace_json(&lb("node-1"));
    assert_eq!(obj["targets"], serde_json::json!([]), "node-1 runs none of shop's Pods");
    // UDP to the same address matches nothing of kube-proxy's.
    let args = with(&[&["trace", "--node", "node-1", "--src", "198.51.100.7", "--dst", "203.0.113.10", "--dport", "80", "--proto", "udp", "-o", "json"], &CLUSTER]);
    let obj = trace_json(&args);
    assert_eq!(obj["targets"], serde_json::json!([]));
}

#[test]
fn trace_from_the_node_and_without_endpoints() {
    let out = run_ok(&with(&[&["trace", "--node", "node-3", "--src", "10.0.0.13", "--dst", "10.96.0.50", "--dport", "80", "--from-node"], &CLUSTER]));
    assert_eq!(trace_summary(&out).1, "10.244.1.5:8080, 10.244.3.9:8080");
    check_golden("trace-cluster-ip-from-node", &out);
    // `api` has no endpoints; its cluster IP was allocated by kubehops.
    let api_ip = run_ok(&with(&[&["get", "svc"], &CLUSTER, &NOW]))
        .lines()
        .find(|l| l.starts_with("api "))
        .and_then(|l| l.split_whitespace().nth(2))
        .expect("api row")
        .to_string();
    let out = run_ok(&with(&[&["trace", "--node", "node-1", "--src", "10.244.1.5", "--dst", &api_ip, "--dport", "443"], &CLUSTER]));
    let (verdict, targets, _) = trace_summary(&out);
    assert_eq!((verdict.as_str(), targets.as_str()), ("REJECT", "<none>"));
    check_golden("trace-no-endpoints", &out);
}

// ------------------------------------------------- trace: the wire form

/// A Pod on node-2 (10.244.2.4) opens web's cluster IP: both endpoints are
/// on other nodes (10.244.1.5 on node-1, 10.244.3.9 on node-3).
const POD_TO_WEB: [&str; 9] = ["trace", "--node", "node-2", "--src", "10.244.2.4", "--dst", "10.96.0.50", "--dport", "80"];

#[test]
fn network_routed_is_todays_output_byte_for_byte() {
    let cases: [&[&str]; 3] = [
        &["trace", "--node", "node-2", "--dst", "10.0.0.12", "--src", "198.51.100.7", "--dport", "30080"],
        &["trace", "--node", "node-3", "--src", "10.0.0.13", "--dst", "10.96.0.50", "--dport", "80", "--from-node"],
        &["trace", "--node", "node-2", "--src", "198.51.100.7", "--dst", "203.0.113.10", "--dport", "80", "-o", "json"],
    ];
    for case in cases {
        let plain = run_ok(&with(&[case, &CLUSTER]));
        assert_eq!(run_ok(&with(&[case, &["--network", "routed"], &CLUSTER])), plain, "{case:?}");
        assert_eq!(run_ok(&with(&[case, &["--network=vxlan", "--network", "routed"], &CLUSTER])), plain, "the last --network wins");
    }
}

#[test]
fn vxlan_wraps_a_packet_for_another_nodes_pod() {
    let routed = run_ok(&with(&[&POD_TO_WEB, &CLUSTER]));
    let out = run_ok(&with(&[&POD_TO_WEB, &["--network", "vxlan"], &CLUSTER]));
    // The trace itself is unchanged; the overlay follows it.
    let overlay = out.strip_prefix(&routed).unwrap_or_else(|| panic!("routed output first:\n{out}"));
    assert!(overlay.starts_with("network: vxlan (flannel's defaults: device flannel.1, VNI 1, UDP port 8472, MTU 1450)\n"), "{overlay}");
    // node-2 is 10.0.0.12; node-1 (10.244.1.0/24) 10.0.0.11; node-3 (10.244.3.0/24) 10.0.0.13.
    for (target, node, addr) in [("10.244.1.5:8080", "node-1", "10.0.0.11"), ("10.244.3.9:8080", "node-3", "10.0.0.13")] {
        assert!(overlay.contains(&format!("to {target}:\n  wrapped by flannel.1 on node-2")), "{overlay}");
        assert!(overlay.contains(&format!("outer: 10.0.0.12 → {addr} udp, source port chosen by the kernel in 32768–60998, destination port 8472, VXLAN VNI 1\n")), "{overlay}");
        assert!(overlay.contains(&format!("inner: 10.244.2.4:40000 → {target} tcp, carried unchanged")), "{overlay}");
        assert!(overlay.contains(&format!("unwrapped on {node} ({addr}), which owns the inner destination's Pod range")), "{overlay}");
    }
    assert!(overlay.ends_with("cost: 50 bytes of headers (outer IPv4 20, UDP 8, VXLAN 8, inner Ethernet 14): flannel.1's MTU is 1450 on a 1500-byte underlay\n"), "{overlay}");
    check_golden("trace-vxlan-cross-node", &out);

    let json = run_ok(&with(&[&POD_TO_WEB, &["--network", "vxlan", "-o", "json"], &CLUSTER]));
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let o = &v["overlay"];
    assert_eq!((o["device"].as_str(), o["vni"].as_u64(), o["udp_dst"].as_u64(), o["mtu"].as_u64(), o["overhead"].as_u64()), (Some("flannel.1"), Some(1), Some(8472), Some(1450), Some(50)));
    let legs = o["packets"].as_array().expect("packets");
    assert_eq!(legs.len(), 2);
    assert_eq!(legs[1]["delivery"], "wrapped");
    assert_eq!(legs[1]["outer"], serde_json::json!({"src": "10.0.0.12", "dst": "10.0.0.13", "udp_src": {"lo": 32768, "hi": 60998}, "udp_dst": 8472, "vni": 1}));
    assert_eq!(legs[1]["packet"], serde_json::json!({"proto": "tcp", "src": "10.244.2.4:40000", "dst": "10.244.3.9:8080"}));
    assert_eq!((legs[1]["wrapped_by"].as_str(), legs[1]["unwrapped_at"].as_str()), (Some("flannel.1"), Some("node-3")));
    assert!(v.get("handshake").is_none(), "only when asked for");
    check_golden("trace-vxlan-cross-node-json", &json);
}

#[test]
fn vxlan_leaves_a_same_node_pod_unwrapped() {
    // Straight to a Pod of node-1's, from another Pod of node-1's: no rule
    // rewrites it and it never leaves the node.
    let out = run_ok(&with(&[&["trace", "--node", "node-1", "--src", "10.244.1.7", "--dst", "10.244.1.5", "--dport", "8080", "--network", "vxlan"], &CLUSTER]));
    assert!(out.contains("verdict: NONE\n"), "{out}");
    assert!(out.ends_with("to 10.244.1.5:8080:\n  not wrapped: the destination is a Pod on node-1 itself (its Pod range 10.244.1.0/24)\n"), "{out}");
    assert!(!out.contains("outer:") && !out.contains("cost:"), "{out}");
    check_golden("trace-vxlan-same-node", &out);
    // From node-1, web's endpoints are one here and one on node-3.
    let out = run_ok(&with(&[&["trace", "--node", "node-1", "--src", "10.244.1.7", "--dst", "10.96.0.50", "--dport", "80", "--network", "vxlan"], &CLUSTER]));
    assert!(out.contains("to 10.244.1.5:8080:\n  not wrapped: the destination is a Pod on node-1 itself"), "{out}");
    assert!(out.contains("to 10.244.3.9:8080:\n  wrapped by flannel.1 on node-1"), "{out}");
    assert!(out.contains("outer: 10.0.0.11 → 10.0.0.13 udp"), "{out}");
}

#[test]
fn vxlan_masquerades_to_flannels_address_and_says_what_does_not_leave() {
    // From outside to web's node port on node-2: masqueraded, and MASQUERADE
    // takes the address of the device the packet leaves by, flannel.1's.
    let out = run_ok(&with(&[&["trace", "--node", "node-2", "--network", "vxlan", "--dst", "10.0.0.12"], &FROM_OUTSIDE, &CLUSTER]));
    assert!(out.contains("inner: 10.244.2.0:random → 10.244.1.5:8080 tcp, carried unchanged"), "{out}");
    assert!(out.contains("(the source is masqueraded: its port is drawn by MASQUERADE --random-fully)"), "{out}");
    let kept = run_ok(&with(&[&["trace", "--node", "node-2", "--network", "vxlan", "--iptables-features", "none", "--dst", "10.0.0.12"], &FROM_OUTSIDE, &CLUSTER]));
    assert!(kept.contains("inner: 10.244.2.0:40000 → 10.244.1.5:8080 tcp"), "{kept}");
    // api has no endpoints: the packet is rejected on the node.
    let api_ip = run_ok(&with(&[&["get", "svc"], &CLUSTER, &NOW])).lines().find(|l| l.starts_with("api ")).and_then(|l| l.split_whitespace().nth(2)).expect("api").to_string();
    let out = run_ok(&with(&[&["trace", "--node", "node-1", "--src", "10.244.1.5", "--dst", &api_ip, "--dport", "443", "--network", "vxlan"], &CLUSTER]));
    assert!(out.ends_with("verdict: REJECT\ntargets: <none>\nmasquerade: false\nnetwork: vxlan (flannel's defaults: device flannel.1, VNI 1, UDP port 8472, MTU 1450)\nnote: the packet does not leave node-1 (REJECT): nothing is wrapped\n"), "{out}");
}

#[test]
fn vxlan_without_a_pod_range_says_so() {
    let yaml = std::fs::read_to_string(manifest_dir().join("tests/fixtures/cluster/cluster.yaml")).unwrap().replace("  podCIDR: 10.244.3.0/24\n", "");
    let r = kubehops_with_stdin(&[&POD_TO_WEB[..], &["--network", "vxlan", "--handshake", "-f", "-"]].concat(), &yaml);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{}", r.stderr);
    assert!(r.stdout.contains("note: the overlay cannot be worked out: node node-3 has no spec.podCIDR"), "{}", r.stdout);
    assert!(r.stdout.contains(" 9. ACK (client)"), "the handshake is still shown:\n{}", r.stdout);
    let r = kubehops_with_stdin(&[&POD_TO_WEB[..], &["--network", "vxlan", "-o", "json", "-f", "-"]].concat(), &yaml);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert!(v["overlay"]["note"].as_str().is_some_and(|n| n.contains("node-3 has no spec.podCIDR")), "{}", r.stdout);
    assert_eq!(v["overlay"]["packets"], serde_json::json!([]));
}

/// The states, marks and timeouts of the standard connection, in order.
const HANDSHAKE: [(&str, &str, &str, &str, u64, &str); 9] = [
    ("SYN", "original", "S", "SYN_SENT", 120, " [UNREPLIED]"),
    ("SYN-ACK", "reply", "S.", "SYN_RECV", 60, ""),
    ("ACK", "original", ".", "ESTABLISHED", 86400, " [ASSURED]"),
    ("request", "original", "P.", "ESTABLISHED", 300, " [ASSURED]"),
    ("response", "reply", "P.", "ESTABLISHED", 300, " [ASSURED]"),
    ("FIN (client)", "original", "F.", "FIN_WAIT", 120, " [ASSURED]"),
    ("ACK (server)", "reply", ".", "CLOSE_WAIT", 3600, " [ASSURED]"),
    ("FIN (server)", "reply", "F.", "LAST_ACK", 30, " [ASSURED]"),
    ("ACK (client)", "original", ".", "TIME_WAIT", 120, " [ASSURED]"),
];

#[test]
fn handshake_shows_each_packet_and_the_conntrack_state_after_it() {
    let routed = run_ok(&with(&[&POD_TO_WEB, &CLUSTER]));
    let out = run_ok(&with(&[&POD_TO_WEB, &["--handshake", "--network", "vxlan"], &CLUSTER]));
    assert!(out.starts_with(&routed), "the trace first:\n{out}");
    let hs = &out[out.find("handshake: ").expect("handshake")..];
    assert!(hs.starts_with("handshake: the TCP connection 10.244.2.4:40000 → 10.96.0.50:80 tcp, which reaches 10.244.1.5:8080;"), "{hs}");
    let rows: Vec<&str> = hs.lines().filter(|l| l.chars().nth(2) == Some('.')).collect();
    assert_eq!(rows.len(), 9, "{hs}");
    for (row, (label, dir, flags, state, secs, marks)) in rows.iter().zip(HANDSHAKE) {
        let (src, dst) = if dir == "original" { ("10.244.2.4:40000", "10.244.1.5:8080") } else { ("10.244.1.5:8080", "10.244.2.4:40000") };
        assert!(row.contains(&format!(" {label:<13} {dir:<8} {src} → {dst} ")), "{row}");
        assert!(row.contains(&format!("[{flags}]")) && row.contains(&format!(" {state:<11} timeout {secs}s{marks}")) && row.ends_with(&format!("{secs}s{marks}")), "{row}");
    }
    // The rules decide the SYN; conntrack every later packet.
    assert_eq!(hs.matches("no NAT rule walked: conntrack knows this connection").count(), 8, "{hs}");
    assert!(hs.contains("[UNREPLIED]\n    the rules decided it: the 10 matched rules above (DNAT to 10.244.1.5:8080)\n"), "{hs}");
    // Both ways across: node-2 (10.0.0.12) and node-1 (10.0.0.11).
    assert_eq!(hs.matches("wrapped by flannel.1 on node-2: outer 10.0.0.12 → 10.0.0.11 udp, source port in 32768–60998, destination port 8472, VNI 1; unwrapped on node-1").count(), 5, "{hs}");
    assert_eq!(hs.matches("wrapped by flannel.1 on node-1: outer 10.0.0.11 → 10.0.0.12 udp, source port in 32768–60998, destination port 8472, VNI 1; unwrapped on node-2").count(), 4, "{hs}");
    check_golden("trace-handshake-vxlan", &out);
    // Routed: the same packets, nothing wrapped.
    let plain = run_ok(&with(&[&POD_TO_WEB, &["--handshake"], &CLUSTER]));
    assert!(!plain.contains("wrapped") && !plain.contains("network: vxlan"), "{plain}");
    assert_eq!(plain.matches("no NAT rule walked").count(), 8);
}

#[test]
fn handshake_in_json() {
    let json = run_ok(&with(&[&POD_TO_WEB, &["--handshake", "--network", "vxlan", "-o", "json"], &CLUSTER]));
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let hs = v["handshake"].as_array().expect("handshake");
    assert_eq!(hs.len(), 9);
    for (i, (p, (label, dir, flags, state, secs, marks))) in hs.iter().zip(HANDSHAKE).enumerate() {
        assert_eq!((p["packet"].as_str(), p["direction"].as_str(), p["flags"].as_str(), p["state"].as_str(), p["timeout"].as_u64()), (Some(label), Some(dir), Some(flags), Some(state), Some(secs)));
        assert_eq!((p["assured"].as_bool(), p["unreplied"].as_bool()), (Some(marks == " [ASSURED]"), Some(marks == " [UNREPLIED]")));
        assert_eq!(p["decided_by"], if i == 0 { "rules" } else { "conntrack" });
        let (from, to) = if dir == "original" { ("10.0.0.12", "10.0.0.11") } else { ("10.0.0.11", "10.0.0.12") };
        assert_eq!((p["overlay"]["outer"]["src"].as_str(), p["overlay"]["outer"]["dst"].as_str()), (Some(from), Some(to)), "{label}");
        assert_eq!((p["overlay"]["outer"]["udp_dst"].as_u64(), p["overlay"]["outer"]["vni"].as_u64()), (Some(8472), Some(1)));
    }
    check_golden("trace-handshake-vxlan-json", &json);
    // Without --network vxlan, no overlay anywhere.
    let v: serde_json::Value = serde_json::from_str(&run_ok(&with(&[&POD_TO_WEB, &["--handshake", "-o", "json"], &CLUSTER]))).expect("JSON");
    assert!(v.get("overlay").is_none() && v["handshake"][0].get("overlay").is_none(), "{v}");
    // A refused SYN: no connection.
    let api_ip = run_ok(&with(&[&["get", "svc"], &CLUSTER, &NOW])).lines().find(|l| l.starts_with("api ")).and_then(|l| l.split_whitespace().nth(2)).expect("api").to_string();
    let args = with(&[&["trace", "--node", "node-1", "--src", "10.244.1.5", "--dst", &api_ip, "--dport", "443", "--handshake"], &CLUSTER]);
    assert!(run_ok(&args).ends_with("handshake: the rules REJECT the SYN: no connection is made, so conntrack has nothing to follow\n"));
    let v: serde_json::Value = serde_json::from_str(&run_ok(&[args.clone(), vec!["-o".to_string(), "json".to_string()]].concat())).expect("JSON");
    assert_eq!(v["handshake"], serde_json::json!([]));
    assert!(v["handshake_note"].as_str().is_some_and(|n| n.contains("REJECT")));
}

#[test]
fn bad_network_and_handshake_values_are_usage_errors() {
    let cases: [(&[&str], &str); 6] = [
        (&["--network", "host-gw"], "error: invalid argument \"host-gw\" for \"--network\": want routed or vxlan (flannel's VXLAN backend)\n"),
        (&["--network", "VXLAN"], "error: invalid argument \"VXLAN\" for \"--network\": want routed or vxlan (flannel's VXLAN backend)\n"),
        (&["--network="], "error: invalid argument \"\" for \"--network\": want routed or vxlan (flannel's VXLAN backend)\n"),
        (&["--network"], "error: flag needs an argument: --network\n"),
        (&["--handshake=yes"], "error: flag --handshake takes no value\n"),
        (&["--handshake", "--proto", "udp"], "error: --handshake follows a TCP connection; UDP has none: one query and one answer, which the trace without --handshake shows\n"),
    ];
    for (extra, first_line) in cases {
        let args = with(&[&POD_TO_WEB, &CLUSTER, extra]);
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.starts_with(first_line), "{args:?}:\n{}", r.stderr);
        assert!(r.stderr.contains("Usage: kubehops trace"), "{}", r.stderr);
        assert_eq!(r.stdout, "");
    }
    let r = run(&with(&[&POD_TO_WEB, &["--handshake", "--proto", "sctp"], &CLUSTER]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: --handshake follows a TCP connection; SCTP's is not modelled: leave --handshake out\n"), "{}", r.stderr);
}

// ------------------------------------------------------------------ get svc

#[test]
fn get_svc_default_namespace() {
    let out = run_ok(&with(&[&["get", "svc"], &CLUSTER, &NOW]));
    let names: Vec<&str> = out.lines().skip(1).map(|l| l.split(' ').next().unwrap_or("")).collect();
    assert_eq!(names, ["api", "docs", "shop", "web"], "sorted by name, db is in another namespace");
    check_golden("get-svc", &out);
}

#[test]
fn get_svc_all_namespaces_wide() {
    let out = run_ok(&with(&[&["get", "services", "-A", "-owide"], &CLUSTER, &NOW]));
    assert!(out.starts_with("NAMESPACE   NAME "), "{out}");
    assert!(out.lines().nth(1).unwrap_or("").starts_with("data        db     ClusterIP      None "), "{out}");
    check_golden("get-svc-all-namespaces-wide", &out);
}

#[test]
fn get_svc_in_an_empty_namespace_says_so_on_stderr() {
    let r = kubehops(&with(&[&["get", "svc", "-n", "nothing"], &CLUSTER]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", "No resources found in nothing namespace.\n"));
    let r = kubehops(&["get", "svc", "-A", "-f", "tests/fixtures/kube-proxy.yaml"]);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", "No resources found\n"));
}

#[test]
fn other_kinds_are_skipped_with_a_warning() {
    let r = kubehops(&["get", "svc", "-f", "tests/fixtures/with-deployment.yaml", "--now", "2024-05-01T12:00:09Z"]);
    assert_eq!(r.code, 0);
    assert_eq!(
        r.stderr,
        "warning: skipping apps/v1 Deployment \"web\" in tests/fixtures/with-deployment.yaml: kubehops reads v1 Service, Node, Pod and Namespace, discovery.k8s.io/v1 EndpointSlice and kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration\n"
    );
    assert_eq!(r.stdout, "NAME   TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\nweb    ClusterIP   10.96.0.50   <none>        80/TCP    9s\n");
}

// ---------------------------------------------------------------------- dig

#[test]
fn dig_goldens() {
    let cases: [(&str, &[&str]); 9] = [
        ("dig-web", &["web"]),
        ("dig-web-srv", &["_http._tcp.web", "SRV"]),
        ("dig-headless-from-its-namespace", &["db", "-n", "data"]),
        ("dig-headless-from-default", &["db.data"]),
        ("dig-headless-endpoint", &["10-244-1-8.db.data.svc.cluster.local."]),
        ("dig-external-name-cname", &["docs", "CNAME"]),
        ("dig-external-name-a", &["docs"]),
        ("dig-nxdomain", &["nope"]),
        ("dig-fqdn-srv", &["shop.default.svc.cluster.local.", "srv"]),
    ];
    for (name, args) in cases {
        let out = run_ok(&with(&[&["dig"], args, &CLUSTER]));
        assert!(out.contains(";; ->>HEADER<<- opcode: QUERY, status: "), "{name}: {out}");
        check_golden(name, &out);
    }
}

#[test]
fn dig_answers() {
    let answer = |args: &[&str]| -> Vec<String> {
        let out = run_ok(&with(&[&["dig"], args, &CLUSTER]));
        out.split("\n;; ANSWER SECTION:\n").nth(1).unwrap_or("").split("\n\n").next().unwrap_or("").lines().map(String::from).collect()
    };
    assert_eq!(answer(&["web"]), ["web.default.svc.cluster.local. 30 IN A 10.96.0.50"]);
    assert_eq!(answer(&["_http._tcp.web", "SRV"]), ["_http._tcp.web.default.svc.cluster.local. 30 IN SRV 0 100 80 web.default.svc.cluster.local."]);
    assert_eq!(answer(&["db", "-n", "data"]), ["db.data.svc.cluster.local. 30 IN A 10.244.1.8"], "only the ready endpoint");
    assert_eq!(answer(&["docs"]), ["docs.default.svc.cluster.local. 30 IN CNAME docs.example.com."]);
    assert!(answer(&["db"]).is_empty(), "db is not in namespace default");
    let out = run_ok(&with(&[&["dig", "nope"], &CLUSTER]));
    assert!(out.contains("status: NXDOMAIN"));
    let r = kubehops(&with(&[&["dig", "example.com."], &CLUSTER]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, "error: example.com. is outside the cluster domain cluster.local: CoreDNS forwards such names upstream, which kubehops does not model\n");
}

// ---------------------------------------------------------------- bad input

/// Each case: the arguments, and the exact stderr; stdout must be empty and
/// the exit code 1.
#[test]
fn bad_input_is_rejected_in_the_api_servers_words() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-f", "tests/fixtures/bad/nodeport-out-of-range.yaml"],
            "The Service \"web\" is invalid: spec.ports[0].nodePort: Invalid value: 29000: provided port is not in the valid range. The range of valid ports is 30000-32767\n",
        ),
        (&["-f", "tests/fixtures/bad/port-zero.yaml"], "The Service \"web\" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive\n"),
        (
            &["-f", "tests/fixtures/bad/bad-cluster-ip.yaml"],
            "The Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)\n",
        ),
        (
            &["-f", "tests/fixtures/bad/bad-type.yaml"],
            "The Service \"web\" is invalid: spec.type: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"\n",
        ),
        (
            &["-f", "tests/fixtures/bad/headless-nodeport.yaml"],
            "The Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services\n",
        ),
        (&["-f", "tests/fixtures/bad/external-name-missing.yaml"], "The Service \"docs\" is invalid: spec.externalName: Required value\n"),
        (
            &["-f", "tests/fixtures/bad/several-problems.yaml"],
            "The Service \"web\" is invalid: \n\
             * spec.ports[0].protocol: Unsupported value: \"tcp\": supported values: \"SCTP\", \"TCP\", \"UDP\"\n\
             * spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive\n\
             * spec.ports[1].targetPort: Invalid value: \"my_port\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)\n",
        ),
        (
            &["-f", "tests/fixtures/bad/wrong-types.yaml"],
            "The Service \"web\" is invalid: \n* spec.ports: Invalid value: {\"port\":80}: must be a list\n* spec.selector: Invalid value: [\"app\",\"web\"]: must be an object\n",
        ),
        (
            &["-f", "tests/fixtures/bad/bad-timestamp.yaml"],
            "The Service \"web\" is invalid: metadata.creationTimestamp: Invalid value: \"yesterday\": must be an RFC 3339 time such as 2024-05-01T12:00:00Z\n",
        ),
        (
            &["-f", "tests/fixtures/bad/unresolved-named-port.yaml"],
            "The Service \"web\" is invalid: spec.ports[0].targetPort: Invalid value: \"http\": kubehops could not resolve this named port: no selected Pod has a container port of that name, and no EndpointSlice of the Service lists the port's number\n",
        ),
        (
            &["-f", "tests/fixtures/bad/bad-slice-address.yaml"],
            "The EndpointSlice \"web-abcde\" is invalid: endpoints[0].addresses[0]: Invalid value: \"10.244.1.500\": must be a valid IPv4 address\n",
        ),
        (
            &["-f", "tests/fixtures/cluster", "-f", "tests/fixtures/bad/port-conflict.yaml", "--strict"],
            "The Service \"other\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated\n",
        ),
        (
            &["-f", "tests/fixtures/cluster", "--service-node-port-range", "20000-22767"],
            "The Service \"web\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is not in the valid range. The range of valid ports is 20000-22767\n",
        ),
        (
            &["-f", "tests/fixtures/bad/malformed.yaml"],
            "error: error parsing tests/fixtures/bad/malformed.yaml: yaml: line 5, column 13: mapping values are not allowed in this context\n",
        ),
        (&["-f", "tests/fixtures/bad/malformed.json"], "error: error parsing tests/fixtures/bad/malformed.json: json: line 4, column 30: trailing comma\n"),
        (&["-f", "tests/fixtures/bad/missing-kind.yaml"], "error: unable to decode document 1 of tests/fixtures/bad/missing-kind.yaml: Object 'Kind' is missing\n"),
        (&["-f", "tests/fixtures/bad/nope.yaml"], "error: the path \"tests/fixtures/bad/nope.yaml\" does not exist\n"),
        (
            &["-f", "tests/fixtures/cluster", "-f", "tests/fixtures/cluster/cluster.yaml"],
            "error: Node \"node-1\" is given twice (in tests/fixtures/cluster/cluster.yaml and tests/fixtures/cluster/cluster.yaml)\n",
        ),
    ];
    for (files, want) in cases {
        let args = with(&[&["get", "svc"], files]);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = kubehops(&a);
        assert_eq!(r.stderr, *want, "kubehops {}", a.join(" "));
        assert_eq!((r.code, r.stdout.as_str()), (1, ""), "kubehops {}", a.join(" "));
    }
}

#[test]
fn unknown_node_lists_the_known_ones() {
    for cmd in [&["iptables-save"][..], &["trace", "--src", "1.2.3.4", "--dst", "10.96.0.50", "--dport", "80"]] {
        let args = with(&[cmd, &["--node", "node-9"], &CLUSTER]);
        let r = kubehops(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!((r.code, r.stdout.as_str()), (1, ""));
        assert_eq!(r.stderr, "error: node \"node-9\" not found; the nodes given are: node-1, node-2, node-3\n");
    }
    let r = kubehops(&["iptables-save", "--node", "node-1", "-f", "tests/fixtures/with-deployment.yaml"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.ends_with("error: node \"node-1\" not found: no Node objects were given\n"), "{}", r.stderr);
}

// ---------------------------------------------------------- command line

#[test]
fn usage_errors_exit_2_with_usage() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "error: no command given\n"),
        (&["frobnicate"], "error: unknown command \"frobnicate\"\n"),
        (&["get", "svc", "--bogus", "-f", "x"], "error: unknown flag: --bogus\n"),
        (&["get", "pods", "-f", "tests/fixtures/cluster"], "error: unsupported resource type \"pods\": kubehops get lists services (svc)\n"),
        (&["get", "svc", "-o", "json", "-f", "tests/fixtures/cluster"], "error: unsupported output format \"json\": use -o wide or leave -o out\n"),
        (&["get", "svc", "--now", "noon", "-f", "tests/fixtures/cluster"], "error: invalid argument \"noon\" for \"--now\": want an RFC 3339 time such as 2024-05-01T12:00:00Z\n"),
        (&["get", "svc"], "error: no input: give -f FILE (a file, a directory, or - for stdin)\n"),
        (&["get", "svc", "-f"], "error: flag needs an argument: -f\n"),
        (
            &["get", "svc", "--service-node-port-range", "3-1", "-f", "tests/fixtures/cluster"],
            "error: invalid argument \"3-1\" for \"--service-node-port-range\": want FIRST-LAST, such as 30000-32767\n",
        ),
        (&["iptables-save", "-f", "tests/fixtures/cluster"], "error: --node is required (or give a KubeProxyConfiguration with hostnameOverride)\n"),
        (&["trace", "--node", "node-1", "--src", "1.2.3", "--dst", "10.96.0.50", "--dport", "80", "-f", "tests/fixtures/cluster"], "error: invalid argument \"1.2.3\" for \"--src\": want an IPv4 address\n"),
        (&["trace", "--node", "node-1", "--src", "1.2.3.4", "--dst", "10.96.0.50", "-f", "tests/fixtures/cluster"], "error: --dport is required\n"),
        (&["trace", "--node", "node-1", "--src", "1.2.3.4", "--dst", "10.96.0.50", "--dport", "0", "-f", "tests/fixtures/cluster"], "error: invalid argument \"0\" for \"--dport\": want a port from 1 to 65535\n"),
        (&["trace", "--node", "node-1", "--src", "1.2.3.4", "--dst", "10.96.0.50", "--dport", "80", "--proto", "icmp", "-f", "x"], "error: invalid argument \"icmp\" for \"--proto\": want tcp, udp or sctp\n"),
        (&["dig", "-f", "tests/fixtures/cluster"], "error: a name to look up is required\n"),
        (&["dig", "web", "AAAA", "-f", "tests/fixtures/cluster"], "error: unsupported query type \"AAAA\": kubehops answers A, SRV and CNAME\n"),
        (&["dig", "a..b", "-f", "tests/fixtures/cluster"], "error: \"a..b\" is not a domain name\n"),
        (&["iptables-save", "extra", "-f", "x"], "error: unexpected argument \"extra\"\n"),
    ];
    for (args, first_line) in cases {
        let r = kubehops(args);
        assert_eq!(r.code, 2, "kubehops {}: {}", args.join(" "), r.stderr);
        assert!(r.stderr.starts_with(first_line), "kubehops {}:\n{}", args.join(" "), r.stderr);
        assert!(r.stderr.contains("Usage: kubehops") || r.stderr.contains("Usage:\n  kubehops"), "usage shown: {}", r.stderr);
        assert_eq!(r.stdout, "");
    }
}

#[test]
fn help_goes_to_stdout() {
    for args in [&["--help"][..], &["help"], &["dig", "--help"], &["trace", "-h"]] {
        let r = kubehops(args);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{args:?}");
        assert!(r.stdout.contains("Usage"), "{args:?}: {}", r.stdout);
    }
    assert!(kubehops(&["dig", "--help"]).stdout.starts_with("Usage: kubehops dig NAME"));
}

// ------------------------------------------------------------ no panics

/// Every scalar of the cluster fixture replaced in turn by odd values, run
/// through every command in-process: each run must end in success or a
/// reported error, never a panic.
#[test]
fn odd_values_never_panic() {
    let yaml = std::fs::read_to_string(manifest_dir().join("tests/fixtures/cluster/cluster.yaml")).unwrap();
    let odd = ["", "[]", "{}", "-1", "0", "70000", "99999999999999999999", "1.5", "x", "null", "true", "\"10.0.0.300\"", "None", "'-'", "\"\\u00e9\""];
    let commands: [&[&str]; 5] = [
        &["get", "svc", "-A", "-o", "wide", "--now", "2024-05-01T12:00:00Z", "-f", "-"],
        &["iptables-save", "--node", "node-1", "-f", "-"],
        &["trace", "--node", "node-2", "--src", "198.51.100.7", "--dst", "10.0.0.12", "--dport", "30080", "-o", "json", "-f", "-"],
        &["trace", "--node", "node-2", "--src", "10.244.2.4", "--dst", "10.96.0.50", "--dport", "80", "--network", "vxlan", "--handshake", "-f", "-"],
        &["dig", "_http._tcp.web", "SRV", "-f", "-"],
    ];
    let lines: Vec<&str> = yaml.lines().collect();
    let mut runs = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some((key, value)) = line.split_once(": ") else { continue };
        if value.trim().is_empty() || key.trim_start().starts_with('#') {
            continue;
        }
        for v in odd {
            let mut mutant = lines.clone();
            let replaced = format!("{key}: {v}");
            mutant[i] = &replaced;
            let text = mutant.join("\n");
            for cmd in commands {
                let args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
                let (mut out, mut err) = (Vec::new(), Vec::new());
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kubehops_cli::run(&args, &mut text.as_bytes(), &mut out, &mut err)));
                let code = result.unwrap_or_else(|_| panic!("panic with line {} set to {replaced:?} running {cmd:?}", i + 1));
                assert!(code == 0 || code == 1, "exit {code} with line {} = {replaced:?}", i + 1);
                assert!(code == 0 || !err.is_empty(), "an error is explained");
                runs += 1;
            }
        }
    }
    assert!(runs > 1000, "only {runs} runs");
}

#[test]
fn a_balancer_without_node_ports_gets_none() {
    let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: lb, namespace: default}\nspec:\n  type: LoadBalancer\n  allocateLoadBalancerNodePorts: false\n  clusterIP: 10.96.0.60\n  selector: {app: web}\n  ports:\n  - port: 80\n    targetPort: 8080\n";
    let get = kubehops_with_stdin(&["get", "svc", "--now", "2024-05-01T12:05:30Z", "-f", "-"], svc);
    assert_eq!(get.code, 0, "{}", get.stderr);
    assert!(get.stdout.contains(" 80/TCP "), "no node port is allocated:\n{}", get.stdout);
    let rules = kubehops_with_stdin(&["iptables-save", "--node", "node-1", "-f", "-", "-f", "tests/fixtures/cluster"], svc);
    assert_eq!(rules.code, 0, "{}", rules.stderr);
    // lb has no endpoints: its cluster IP is rejected, but there is no node port to reject.
    assert!(rules.stdout.contains("\"default/lb has no endpoints\" -m tcp -p tcp -d 10.96.0.60 --dport 80 -j REJECT"), "lb is in the rules:\n{}", rules.stdout);
    assert!(!rules.stdout.contains("-A KUBE-NODEPORTS -m comment --comment default/lb "), "no node-port rule for lb");
    assert!(!rules.stdout.contains("default/lb has no endpoints\" -m addrtype"), "no node-port reject for lb");
}

// ------------------------------------------------------- stored objects

const STORED: [&str; 2] = ["-f", "tests/fixtures/stored-conflicts.yaml"];
const STORED_WARNINGS: &str = "\
Warning: Service \"b\" has clusterIP 10.96.0.70, already used by Service \"a\"; the API server would have refused one of them
Warning: Service \"c\" has spec.ports[0].nodePort 30500, already used by Service \"a\" as spec.ports[0].nodePort; the API server would have refused one of them
Warning: Service \"d\" has spec.healthCheckNodePort 31999, which the API server allows only for type LoadBalancer with externalTrafficPolicy Local; kube-proxy ignores it
";

fn run(args: &[String]) -> Run {
    kubehops(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn stored_conflicts_are_warnings_and_kube_proxy_writes_rules_for_both() {
    let r = run(&with(&[&["iptables-save", "--node", "node-1"], &STORED]));
    assert_eq!((r.code, r.stderr.as_str()), (0, STORED_WARNINGS));
    // Both Services on 10.96.0.70 and both on node port 30500 get their rules.
    for svc in ["a", "b"] {
        assert!(r.stdout.contains(&format!("--comment \"default/{svc} cluster IP\" -m tcp -p tcp -d 10.96.0.70 --dport 80 -j KUBE-SVC-")), "{svc}:\n{}", r.stdout);
    }
    for svc in ["a", "c"] {
        assert!(r.stdout.contains(&format!("-A KUBE-NODEPORTS -m comment --comment default/{svc} -m tcp -p tcp --dport 30500 -j KUBE-EXT-")), "{svc}");
    }
    // d's health check port is ignored by kube-proxy (no rule names it).
    assert!(!r.stdout.contains("31999"));
    // The first rule wins: a packet to the shared address reaches a's endpoint.
    let t = run(&with(&[&["trace", "--node", "node-1", "--src", "10.244.1.99", "--dst", "10.96.0.70", "--dport", "80"], &STORED]));
    assert_eq!(t.code, 0, "{}", t.stderr);
    assert!(t.stdout.contains("\ntargets: 10.244.1.10:80\n"), "{}", t.stdout);
    // kubectl lists both Services with the stored address.
    let g = run(&with(&[&["get", "svc"], &STORED, &NOW]));
    assert_eq!((g.code, g.stderr.as_str()), (0, STORED_WARNINGS));
    let rows: Vec<Vec<&str>> = g.stdout.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0][..5], ["a", "NodePort", "10.96.0.70", "<none>", "80:30500/TCP"]);
    assert_eq!(rows[1][..5], ["b", "ClusterIP", "10.96.0.70", "<none>", "80/TCP"]);
    assert_eq!(rows[2][..5], ["c", "NodePort", "10.96.0.71", "<none>", "8080:30500/TCP"]);
}

#[test]
fn strict_refuses_stored_conflicts_in_every_command() {
    let want = "The Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.0.70\"}: failed to allocate IP 10.96.0.70: provided IP is already allocated\n";
    let commands: [&[&str]; 4] = [
        &["iptables-save", "--node", "node-1"],
        &["trace", "--node", "node-1", "--src", "10.244.1.99", "--dst", "10.96.0.70", "--dport", "80"],
        &["get", "svc"],
        &["dig", "b"],
    ];
    for cmd in commands {
        let r = run(&with(&[cmd, &STORED, &["--strict"]]));
        assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (1, "", want), "{cmd:?}");
    }
    // With b out of the way, c's node port is the first refusal, then d's health check port.
    let without_b = std::fs::read_to_string(manifest_dir().join("tests/fixtures/stored-conflicts.yaml")).unwrap().replace("  clusterIP: 10.96.0.70\n  ports:\n    - protocol: TCP\n      port: 80\n---", "  clusterIP: 10.96.0.73\n  ports:\n    - protocol: TCP\n      port: 80\n---");
    let r = kubehops_with_stdin(&["get", "svc", "--strict", "-f", "-"], &without_b);
    assert_eq!(r.stderr, "The Service \"c\" is invalid: spec.ports[0].nodePort: Invalid value: 30500: provided port is already allocated\n");
    let only_d = without_b.replace("nodePort: 30500\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: d", "nodePort: 30501\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: d");
    let r = kubehops_with_stdin(&["get", "svc", "--strict", "-f", "-"], &only_d);
    assert_eq!(
        r.stderr,
        "The Service \"d\" is invalid: spec.healthCheckNodePort: Invalid value: 31999: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'\n"
    );
    // What a user would be creating stays an error without --strict.
    let r = run(&with(&[&["get", "svc"], &["-f", "tests/fixtures/bad/nodeport-out-of-range.yaml"]]));
    assert_eq!(r.code, 1);
    let r = run(&with(&[&["get", "svc"], &CLUSTER, &["-f", "tests/fixtures/bad/port-conflict.yaml"]]));
    assert_eq!(r.code, 0);
    assert_eq!(r.stderr, "Warning: Service \"other\" has spec.ports[0].nodePort 30080, already used by Service \"web\" as spec.ports[0].nodePort; the API server would have refused one of them\n");
}

// ------------------------------------------- kubectl's TestPrintService

const PRINT_SERVICE: [&str; 4] = ["-f", "tests/fixtures/upstream/kubectl-print-service.yaml", "--service-node-port-range", "9000-32767"];

/// The cells kubectl's TestPrintService expects
/// (pkg/printers/internalversion/printers_test.go), with the protocol
/// spelled as stored (`TCP`, where the Go test's objects say `tcp`).
const PRINT_SERVICE_ROWS: [[&str; 6]; 7] = [
    ["test1", "ClusterIP", "10.9.8.7", "<none>", "2233/TCP", "<unknown>"],
    ["test2", "NodePort", "10.9.8.7", "<none>", "8888:9999/TCP", "<unknown>"],
    ["test3", "LoadBalancer", "10.9.8.7", "<pending>", "8888/TCP", "<unknown>"],
    ["test4", "LoadBalancer", "10.9.8.7", "80.11.12.10", "8888/TCP", "<unknown>"],
    ["test5", "LoadBalancer", "10.9.8.7", "3.4.5.6,80.11.12.10", "8888/TCP", "<unknown>"],
    ["test6", "LoadBalancer", "10.9.8.7", "2.3.4.5,3.4.5.6,80.11.12.10,80.11.12.11", "8888/TCP", "<unknown>"],
    ["test7", "ExternalName", "<none>", "my.database.example.com", "<none>", "<unknown>"],
];

#[test]
fn get_svc_renders_kubectls_print_service_cases() {
    let r = run(&with(&[&["get", "svc"], &PRINT_SERVICE]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let repeats: String = (2..=6)
        .map(|i| format!("Warning: Service \"test{i}\" has clusterIP 10.9.8.7, already used by Service \"test1\"; the API server would have refused one of them\n"))
        .collect();
    assert_eq!(r.stderr, repeats, "the shared address is taken as stored, with a warning per repeat");
    let rows: Vec<Vec<&str>> = r.stdout.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows, PRINT_SERVICE_ROWS.map(|r| r.to_vec()));
    check_golden("get-svc-print-service", &r.stdout);

    // -o wide adds the selector (the Go test's second case); the others have none.
    let wide = run(&with(&[&["get", "svc", "-o", "wide"], &PRINT_SERVICE]));
    let rows: Vec<Vec<&str>> = wide.stdout.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["test1", "ClusterIP", "10.9.8.7", "<none>", "2233/TCP", "<unknown>", "foo=bar"]);
    assert!(rows[1..].iter().all(|r| r[6] == "<none>"));
    check_golden("get-svc-print-service-wide", &wide.stdout);

    let strict = run(&with(&[&["get", "svc", "--strict"], &PRINT_SERVICE]));
    assert_eq!(strict.code, 1);
    assert!(strict.stderr.starts_with("The Service \"test2\" is invalid: spec.clusterIPs: "), "{}", strict.stderr);
}

// ---------------------------------------------- CoreDNS's handler_test.go

const COREDNS: [&str; 2] = ["-f", "tests/fixtures/upstream/coredns-handler.yaml"];
/// What every run on the CoreDNS fixture says about the input.
const COREDNS_INPUT_WARNINGS: &str = "\
warning: skipping EndpointSlice \"testns/hdls1-slice2\" in tests/fixtures/upstream/coredns-handler.yaml: addressType IPv6 is not modelled (IPv4 only)
Warning: Service \"testns/svcempty\" has clusterIP 10.0.0.1, already used by Service \"testns/svc1\"; the API server would have refused one of them
";

/// The status, answer and additional sections of `kubehops dig`'s output,
/// each record sorted as CoreDNS's test sorts them before comparing.
fn dig_sections(out: &str) -> (String, Vec<String>, Vec<String>) {
    let status = out.split("status: ").nth(1).unwrap_or("").lines().next().unwrap_or("").to_string();
    let section = |title: &str| -> Vec<String> {
        let mut v: Vec<String> = out.split(&format!("\n;; {title} SECTION:\n")).nth(1).unwrap_or("").split("\n\n").next().unwrap_or("").lines().map(String::from).collect();
        v.sort();
        v
    };
    (status, section("ANSWER"), section("ADDITIONAL"))
}

/// One A, SRV or CNAME case of CoreDNS's handler tests: the question, and
/// upstream's rcode, answer and extra records with the TTL kubeadm's
/// Corefile sets (30; the tests run with the plugin's default of 5).
struct DnsCase {
    name: &'static str,
    qtype: &'static str,
    rcode: &'static str,
    answer: &'static [&'static str],
    extra: &'static [&'static str],
}

const fn case(name: &'static str, qtype: &'static str, rcode: &'static str, answer: &'static [&'static str], extra: &'static [&'static str]) -> DnsCase {
    DnsCase { name, qtype, rcode, answer, extra }
}

/// The cases whose answers kubehops gives exactly as upstream expects.
const COREDNS_CASES: &[DnsCase] = &[
    // commonDnsTestCases
    case("svc1.testns.svc.cluster.local.", "A", "NOERROR", &["svc1.testns.svc.cluster.local. 30 IN A 10.0.0.1"], &[]),
    case("svcempty.testns.svc.cluster.local.", "A", "NOERROR", &["svcempty.testns.svc.cluster.local. 30 IN A 10.0.0.1"], &[]),
    case(
        "svc1.testns.svc.cluster.local.",
        "SRV",
        "NOERROR",
        &["svc1.testns.svc.cluster.local. 30 IN SRV 0 100 80 svc1.testns.svc.cluster.local."],
        &["svc1.testns.svc.cluster.local. 30 IN A 10.0.0.1"],
    ),
    case(
        "svcempty.testns.svc.cluster.local.",
        "SRV",
        "NOERROR",
        &["svcempty.testns.svc.cluster.local. 30 IN SRV 0 100 80 svcempty.testns.svc.cluster.local."],
        &["svcempty.testns.svc.cluster.local. 30 IN A 10.0.0.1"],
    ),
    case(
        "_http._tcp.svc1.testns.svc.cluster.local.",
        "SRV",
        "NOERROR",
        &["_http._tcp.svc1.testns.svc.cluster.local. 30 IN SRV 0 100 80 svc1.testns.svc.cluster.local."],
        &["svc1.testns.svc.cluster.local. 30 IN A 10.0.0.1"],
    ),
    case(
        "_http._tcp.svcempty.testns.svc.cluster.local.",
        "SRV",
        "NOERROR",
        &["_http._tcp.svcempty.testns.svc.cluster.local. 30 IN SRV 0 100 80 svcempty.testns.svc.cluster.local."],
        &["svcempty.testns.svc.cluster.local. 30 IN A 10.0.0.1"],
    ),
    case(
        "hdls1.testns.svc.cluster.local.",
        "A",
        "NOERROR",
        &[
            "hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.2",
            "hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.3",
            "hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.4",
            "hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.5",
        ],
        &[],
    ),
    case("hdlsprtls.testns.svc.cluster.local.", "A", "NOERROR", &["hdlsprtls.testns.svc.cluster.local. 30 IN A 172.0.0.20"], &[]),
    case("svc0.testns.svc.cluster.local.", "A", "NXDOMAIN", &[], &[]),
    case("svc0.svc-nons.svc.cluster.local.", "A", "NXDOMAIN", &[], &[]),
    case("bogusendpoint.hdls1.testns.svc.cluster.local.", "A", "NXDOMAIN", &[], &[]),
    case("bogusendpoint.svc0.testns.svc.cluster.local.", "A", "NXDOMAIN", &[], &[]),
    case("svc.cluster.local.", "A", "NOERROR", &[], &[]),
    case("pod.cluster.local.", "A", "NOERROR", &[], &[]),
    case("testns.svc.cluster.local.", "A", "NOERROR", &[], &[]),
    case("svc-dual-stack.testns.svc.cluster.local.", "A", "NOERROR", &["svc-dual-stack.testns.svc.cluster.local. 30 IN A 10.0.0.3"], &[]),
    case("endpoint.external.testns.svc.cluster.local.", "CNAME", "NXDOMAIN", &[], &[]),
    case("subdomain.subdomain.external.testns.svc.cluster.local.", "CNAME", "NXDOMAIN", &[], &[]),
    // dnsTestCases
    case("172-0-0-20.hdlsprtls.testns.svc.cluster.local.", "A", "NOERROR", &["172-0-0-20.hdlsprtls.testns.svc.cluster.local. 30 IN A 172.0.0.20"], &[]),
    case("172-0-0-2.hdls1.testns.svc.cluster.local.", "A", "NOERROR", &["172-0-0-2.hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.2"], &[]),
    case("172-0-0-3.hdls1.testns.svc.cluster.local.", "A", "NOERROR", &["172-0-0-3.hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.3"], &[]),
    case(
        "dup-name.hdls1.testns.svc.cluster.local.",
        "A",
        "NOERROR",
        &["dup-name.hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.4", "dup-name.hdls1.testns.svc.cluster.local. 30 IN A 172.0.0.5"],
        &[],
    ),
    case("external.testns.svc.cluster.local.", "CNAME", "NOERROR", &["external.testns.svc.cluster.local. 30 IN CNAME ext.interwebs.test."], &[]),
    // Upstream writes this name without the dot; its test makes every question fully qualified.
    case(
        "external-to-service.testns.svc.cluster.local.",
        "A",
        "NOERROR",
        &["external-to-service.testns.svc.cluster.local. 30 IN CNAME svc1.testns.svc.cluster.local.", "svc1.testns.svc.cluster.local. 30 IN A 10.0.0.1"],
        &[],
    ),
    // handler_case_test.go (dnsPreserveCaseCases)
    case("not-a-service.testns.svc.ClUsTeR.lOcAl.", "A", "NXDOMAIN", &[], &[]),
    case("SvC1.TeStNs.SvC.cLuStEr.LoCaL.", "A", "NOERROR", &["SvC1.TeStNs.SvC.cLuStEr.LoCaL. 30 IN A 10.0.0.1"], &[]),
    case(
        "_HtTp._TcP.sVc1.TeStNs.SvC.cLuStEr.LoCaL.",
        "SRV",
        "NOERROR",
        &["_HtTp._TcP.sVc1.TeStNs.SvC.cLuStEr.LoCaL. 30 IN SRV 0 100 80 svc1.testns.svc.cLuStEr.LoCaL."],
        &["svc1.testns.svc.cLuStEr.LoCaL. 30 IN A 10.0.0.1"],
    ),
    // kubernetes_test.go (TestServices): an endpoint named by its hostname.
    case("ep1a.svc1.testns.svc.cluster.local.", "A", "NOERROR", &["ep1a.svc1.testns.svc.cluster.local. 30 IN A 172.0.0.1"], &[]),
    // Names the issue adds: the dashed form of an endpoint with a hostname,
    // and more labels in front of an ExternalName Service.
    case("172-0-0-4.hdls1.testns.svc.cluster.local.", "A", "NXDOMAIN", &[], &[]),
    case("172-0-0-1.svc1.testns.svc.cluster.local.", "A", "NXDOMAIN", &[], &[]),
    case("a.b.external.testns.svc.cluster.local.", "A", "NXDOMAIN", &[], &[]),
    case("_http._tcp.external.testns.svc.cluster.local.", "SRV", "NXDOMAIN", &[], &[]),
    case("hdlsprtls.testns.svc.cluster.local.", "SRV", "NOERROR", &[], &[]),
];

fn dig_coredns(name: &str, qtype: &str) -> Run {
    run(&with(&[&["dig", name, qtype], &COREDNS]))
}

#[test]
fn dig_gives_coredns_handler_test_answers() {
    let mut golden = String::new();
    for c in COREDNS_CASES {
        let r = dig_coredns(c.name, c.qtype);
        assert_eq!((r.code, r.stderr.as_str()), (0, COREDNS_INPUT_WARNINGS), "{} {}", c.name, c.qtype);
        let (status, answer, additional) = dig_sections(&r.stdout);
        let sorted = |v: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
            v.sort();
            v
        };
        assert_eq!((status.as_str(), answer, additional), (c.rcode, sorted(c.answer), sorted(c.extra)), "{} {}", c.name, c.qtype);
        golden.push_str(&format!("$ kubehops dig {} {}\n{}\n", c.name, c.qtype, r.stdout));
    }
    check_golden("dig-coredns-handler-test", &golden);
}

/// Where kubehops leaves out what upstream's answer needs, it says so.
#[test]
fn dig_warns_where_coredns_counts_ipv6_addresses() {
    // Upstream: "0 50 80 svc-dual-stack…" with an A and an AAAA record, the
    // weight shared with the IPv6 cluster IP.
    let r = dig_coredns("svc-dual-stack.testns.svc.cluster.local.", "SRV");
    let (status, answer, additional) = dig_sections(&r.stdout);
    assert_eq!((status.as_str(), r.code), ("NOERROR", 0));
    assert_eq!(answer, ["svc-dual-stack.testns.svc.cluster.local. 30 IN SRV 0 100 80 svc-dual-stack.testns.svc.cluster.local."]);
    assert_eq!(additional, ["svc-dual-stack.testns.svc.cluster.local. 30 IN A 10.0.0.3"]);
    let dual = "Warning: Service \"testns/svc-dual-stack\" is dual-stack and kubehops models its IPv4 half only; CoreDNS also gives its IPv6 addresses a share of the SRV weight (and AAAA records), so its weights are smaller than these\n";
    assert_eq!(r.stderr, format!("{COREDNS_INPUT_WARNINGS}{dual}"));
    // Upstream: five records of weight 16 (two of them for the IPv6
    // endpoints); here the IPv4 three, each a quarter of four addresses.
    let r = dig_coredns("_http._tcp.hdls1.testns.svc.cluster.local.", "SRV");
    let (_, answer, additional) = dig_sections(&r.stdout);
    assert_eq!(
        answer,
        [
            "_http._tcp.hdls1.testns.svc.cluster.local. 30 IN SRV 0 25 80 172-0-0-2.hdls1.testns.svc.cluster.local.",
            "_http._tcp.hdls1.testns.svc.cluster.local. 30 IN SRV 0 25 80 172-0-0-3.hdls1.testns.svc.cluster.local.",
            "_http._tcp.hdls1.testns.svc.cluster.local. 30 IN SRV 0 25 80 dup-name.hdls1.testns.svc.cluster.local.",
        ]
    );
    assert_eq!(additional.len(), 4, "both dup-name addresses are listed");
    assert!(r.stderr.ends_with("Warning: Service \"testns/hdls1\" is dual-stack and kubehops models its IPv4 half only; CoreDNS also gives its IPv6 addresses a share of the SRV weight (and AAAA records), so its weights are smaller than these\n"), "{}", r.stderr);
    // A single-stack Service's SRV answer has no such warning.
    assert_eq!(dig_coredns("svc1.testns.svc.cluster.local.", "SRV").stderr, COREDNS_INPUT_WARNINGS);
}

/// A StatefulSet's Pods name their own records under the headless Service
/// their subdomain names, and the SRV targets use those names.
#[test]
fn dig_statefulset_pods_by_hostname() {
    let objects = "apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{name: pg, port: 5432}]}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, labels: {app: db}}
spec: {hostname: db-0, subdomain: db, containers: [{ports: [{containerPort: 5432}]}]}
status: {podIP: 10.244.1.7, conditions: [{type: Ready, status: 'True'}]}
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, labels: {app: db}}
spec: {hostname: db-1, subdomain: db, containers: [{ports: [{containerPort: 5432}]}]}
status: {podIP: 10.244.2.8, conditions: [{type: Ready, status: 'True'}]}
";
    let dig = |args: &[&str]| {
        let r = kubehops_with_stdin(&[&["dig"], args, &["-f", "-"]].concat(), objects);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{args:?}");
        dig_sections(&r.stdout)
    };
    let (status, answer, _) = dig(&["db-0.db"]);
    assert_eq!((status.as_str(), answer), ("NOERROR", vec!["db-0.db.default.svc.cluster.local. 30 IN A 10.244.1.7".to_string()]));
    assert_eq!(dig(&["10-244-1-7.db"]).0, "NXDOMAIN", "the dashed name is not the endpoint's name any more");
    let (_, answer, additional) = dig(&["_pg._tcp.db", "SRV"]);
    assert_eq!(
        answer,
        [
            "_pg._tcp.db.default.svc.cluster.local. 30 IN SRV 0 50 5432 db-0.db.default.svc.cluster.local.",
            "_pg._tcp.db.default.svc.cluster.local. 30 IN SRV 0 50 5432 db-1.db.default.svc.cluster.local.",
        ]
    );
    assert_eq!(additional, ["db-0.db.default.svc.cluster.local. 30 IN A 10.244.1.7", "db-1.db.default.svc.cluster.local. 30 IN A 10.244.2.8"]);
}
