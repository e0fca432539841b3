//! `kubehops nft`: kube-proxy's nftables mode for the fixture cluster, on
//! every node, with and without the fixture KubeProxyConfiguration. The
//! transaction goes into a real kernel (`unshare --net nft -f -`), and
//! what `nft list table ip kube-proxy` prints back must be exactly what
//! `--format ruleset` printed. Without root, `unshare` or Debian's
//! `nftables` the kernel part says "skipped", which
//! `KUBEHOPS_REQUIRE_KERNEL_TEST=1` (CI) turns into a failure. Also: the
//! command that prints iptables rules refuses a node in nftables mode,
//! and `trace` walks whichever mode the node runs, reaching the same
//! decision in both wherever upstream's two proxiers agree.

use std::io::Write;
use std::process::{Command, Stdio};

const NODES: [&str; 3] = ["node-1", "node-2", "node-3"];

mod support;

use support::run_kubehops as kubehops;

fn ok(args: &[&str]) -> String {
    let out = kubehops(args, "");
    assert!(out.status.success(), "kubehops {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn err(args: &[&str], stdin: &str) -> String {
    let out = kubehops(args, stdin);
    assert!(!out.status.success(), "kubehops {} succeeded", args.join(" "));
    String::from_utf8(out.stderr).unwrap()
}

/// The kernel's listing after loading `transaction`, or why it could not run.
fn kernel_listing(transaction: &str) -> Result<String, String> {
    let mut child = Command::new("unshare")
        .args(["--net", "sh", "-c", "nft -f - && nft list table ip kube-proxy"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child.stdin.take().unwrap().write_all(transaction.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() { Ok(String::from_utf8(out.stdout).unwrap()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
}

fn kernel_available() -> Result<(), String> {
    let out = Command::new("unshare").args(["--net", "nft", "--version"]).output().map_err(|e| e.to_string())?;
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).trim().to_string()) }
}

#[test]
fn every_node_s_transaction_loads_and_lists_as_the_ruleset_format_says() {
    let kernel = kernel_available();
    if let Err(why) = &kernel {
        assert!(std::env::var_os("KUBEHOPS_REQUIRE_KERNEL_TEST").is_none_or(|v| v != "1"), "KUBEHOPS_REQUIRE_KERNEL_TEST=1, but `unshare --net nft` cannot run: {why}");
        println!("nft kernel check: skipped: {why}");
    }
    let mut checked = 0;
    for node in NODES {
        for config in [None, Some("tests/fixtures/kube-proxy.yaml")] {
            let mut args = vec!["nft", "-f", "tests/fixtures/cluster", "--node", node, "--service-cidr", "10.96.0.0/12"];
            if let Some(c) = config {
                args.extend(["-f", c]);
            }
            let transaction = ok(&args);
            assert!(transaction.starts_with("add table ip kube-proxy { comment \"rules for kube-proxy\" ; }\n"), "{transaction}");
            assert!(transaction.contains("add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips\n"), "{transaction}");
            // api, shop and web; db is headless and docs an ExternalName.
            for ip in ["10.99.170.44", "10.96.0.80", "10.96.0.50"] {
                assert!(transaction.contains(&format!("add element ip kube-proxy cluster-ips {{ {ip} }}\n")), "{node}: no cluster IP {ip}:\n{transaction}");
            }
            assert_eq!(transaction.matches("add element ip kube-proxy cluster-ips ").count(), 3, "{transaction}");
            assert!(transaction.contains("ip daddr { 10.96.0.0/12 } drop comment \"Drop traffic to unallocated ClusterIPs\""), "{transaction}");
            args.extend(["--format", "ruleset"]);
            let ruleset = ok(&args);
            if kernel.is_ok() {
                let listed = kernel_listing(&transaction).unwrap_or_else(|e| panic!("nft -f refused {node}'s transaction: {e}"));
                if let Some(i) = listed.lines().zip(ruleset.lines()).position(|(k, m)| k != m) {
                    panic!("{node} ({config:?}): nft list differs at line {}:\n  kernel: {:?}\n  model:  {:?}", i + 1, listed.lines().nth(i).unwrap(), ruleset.lines().nth(i).unwrap());
                }
                assert_eq!(listed, ruleset, "{node} ({config:?})");
                checked += 1;
            }
        }
    }
    if kernel.is_ok() {
        println!("nft kernel check: {checked} rulesets (3 nodes, with and without the KubeProxyConfiguration) listed back as --format ruleset prints them");
        assert_eq!(checked, 6);
    }
}

#[test]
fn a_node_in_nftables_mode_has_no_iptables_rules_to_print() {
    let config = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nhostnameOverride: node-2\nmode: nftables\n";
    let save = err(&["iptables-save", "-f", "tests/fixtures/cluster", "-f", "-"], config);
    assert!(save.contains("the KubeProxyConfiguration sets mode: nftables") && save.contains("`kubehops nft`"), "{save}");
    // trace walks the mode the config sets.
    let trace = kubehops(&["trace", "-f", "tests/fixtures/cluster", "-f", "-", "--src", "10.0.0.1", "--dst", "10.96.0.50", "--dport", "80"], config);
    let text = String::from_utf8(trace.stdout).unwrap();
    assert!(trace.status.success() && text.starts_with("filter-prerouting-pre-dnat: ct state new jump firewall-check\n"), "{text}");
    assert!(text.contains("@service-ips: 10.96.0.50 . tcp . 80 : goto service-") && text.contains("verdict: DNAT\n"), "{text}");
    // nft itself takes the node from the same config.
    let out = kubehops(&["nft", "-f", "tests/fixtures/cluster", "-f", "-"], config);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn nft_flags_refuse_what_they_cannot_read() {
    let f = err(&["nft", "-f", "tests/fixtures/cluster", "--node", "node-1", "--format", "list"], "");
    assert!(f.contains("invalid argument \"list\" for \"--format\": want transaction or ruleset"), "{f}");
    let c = err(&["nft", "-f", "tests/fixtures/cluster", "--node", "node-1", "--service-cidr", "10.96.0.0"], "");
    assert!(c.contains("invalid argument \"10.96.0.0\" for \"--service-cidr\""), "{c}");
    let n = err(&["nft", "-f", "tests/fixtures/cluster"], "");
    assert!(n.contains("--node is required"), "{n}");
}

/// The trace of one packet as JSON, in one mode.
fn trace_json(node: &str, src: &str, dst: &str, dport: &str, mode: &str) -> serde_json::Value {
    let args = ["trace", "-f", "tests/fixtures/cluster", "-f", "tests/fixtures/kube-proxy.yaml", "--node", node, "--src", src, "--dst", dst, "--dport", dport, "--proxy-mode", mode, "-o", "json"];
    serde_json::from_str(&ok(&args)).unwrap()
}

#[test]
fn trace_reaches_the_same_decision_in_both_modes() {
    // (source, destination, port): outside and Pod clients to the cluster
    // IPs, the node ports, the balancer IP (externalTrafficPolicy Local)
    // and a Service without endpoints.
    let packets = [
        ("192.168.1.9", "10.96.0.50", "80"),
        ("10.244.1.7", "10.96.0.50", "80"),
        ("192.168.1.9", "203.0.113.10", "80"),
        ("192.168.1.9", "10.0.0.11", "30080"),
        ("192.168.1.9", "10.0.0.12", "31080"),
        ("10.244.1.7", "10.99.170.44", "443"),
        ("192.168.1.9", "10.96.0.80", "80"),
    ];
    let mut verdicts = std::collections::BTreeSet::new();
    for node in NODES {
        for (src, dst, dport) in packets {
            let ipt = trace_json(node, src, dst, dport, "iptables");
            let mut nft = trace_json(node, src, dst, dport, "nftables");
            assert_eq!(nft["mode"], "nftables");
            nft.as_object_mut().unwrap().remove("mode");
            assert_eq!(ipt, nft, "{node}: {src} -> {dst}:{dport}");
            verdicts.insert(ipt["verdict"].as_str().unwrap().to_string());
        }
    }
    // The packets reach every kind of decision.
    assert_eq!(verdicts.into_iter().collect::<Vec<_>>(), ["DNAT", "DROP", "NONE", "REJECT"]);
    // Where the proxiers differ on purpose: another port of a cluster IP
    // is rejected by nftables mode's cluster-ips-check and left alone by
    // the iptables mode.
    assert_eq!(trace_json("node-1", "192.168.1.9", "10.96.0.50", "81", "iptables")["verdict"], "NONE");
    assert_eq!(trace_json("node-1", "192.168.1.9", "10.96.0.50", "81", "nftables")["verdict"], "REJECT");
}

#[test]
fn trace_flags_for_the_mode_refuse_what_they_cannot_do() {
    let base = ["trace", "-f", "tests/fixtures/cluster", "--node", "node-1", "--src", "10.0.0.1", "--dst", "10.96.0.50", "--dport", "80"];
    let ipvs = err(&[&base[..], &["--proxy-mode", "ipvs"]].concat(), "");
    assert!(ipvs.contains("IPVS mode, deprecated since Kubernetes 1.35, is not modelled"), "{ipvs}");
    let other = err(&[&base[..], &["--proxy-mode", "userspace"]].concat(), "");
    assert!(other.contains("invalid argument \"userspace\" for \"--proxy-mode\": want iptables or nftables"), "{other}");
    let cidr = err(&[&base[..], &["--service-cidr", "10.96.0.0/12"]].concat(), "");
    assert!(cidr.contains("--service-cidr applies to the nftables mode only"), "{cidr}");
    let dropped = ok(&[&base[..], &["--proxy-mode", "nftables", "--service-cidr", "10.96.0.0/12", "--dst", "10.96.7.7"]].concat());
    assert!(dropped.contains("cluster-ips-check: ip daddr { 10.96.0.0/12 } drop") && dropped.contains("verdict: DROP"), "{dropped}");
}
