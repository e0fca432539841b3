//! kube-proxy's nftables mode over repeated syncs, against upstream's own
//! expectation: `TestSyncProxyRulesRepeated` (kubernetes/kubernetes
//! pkg/proxy/nftables/proxier_test.go at [`COMMIT`]). Services and
//! EndpointSlices are added, changed and deleted between syncs, as upstream
//! does, and `SyncState` (src/dataplane/nftables/resync.rs) syncs after each
//! change. After each sync:
//!
//! - the whole table the model holds must be upstream's expected dump
//!   (knftables' fake `Dump()`), kept as data in
//!   `tests/golden/nftables/repeated/` (`base.txt`, upstream's `baseRules`,
//!   plus one file per step), both sides prepared as upstream's
//!   `sortNFTablesTransaction` does (as in tests/nftables_upstream.rs);
//! - where upstream counts the operations of the last transaction
//!   (`LastTransaction.NumOperations()`), the model's main transaction has
//!   that many;
//! - where upstream checks `fp.staleChains`, the model's stale chains are
//!   those.
//!
//! With root, `unshare` and `nft`, every transaction the model writes is
//! also loaded, in order, into a real kernel (one network namespace), and
//! after each sync `nft list table ip kube-proxy` must print what
//! `Ruleset::list` says of the model's table.

#[path = "support/nft.rs"]
mod nft;

use nft::{missing_from, upstream_sorted};
use kubehops_core::api::*;
use kubehops_core::dataplane::kubeproxy::KubeProxyConfig;
use kubehops_core::dataplane::nftables::resync::{Sync, SyncState};
use kubehops_core::dataplane::nftables::NftablesConfig;
use kubehops_core::net::{ip, Protocol};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The upstream commit whose test this reproduces.
const COMMIT: &str = "81810de635aa13aa0a32992f6def3aa9d6025ebc";

const HOST: &str = "test-node";

/// Lines of the goldens the model does not reproduce, each with its step
/// (golden file) and why. Empty: every line of every step is reproduced.
const KNOWN_GAPS: &[(&str, &str, &str)] = &[];

/// NewFakeProxier(IPv4): node 192.168.0.2 (and the other addresses of its
/// fake interfaces), Pods in 10.0.0.0/8, Services in 172.30.0.0/16,
/// `nodePortAddresses` 192.168.0.2/32, mark 0x4000.
fn setup() -> (Node, NftablesConfig) {
    let node = Node { name: HOST.into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
    let proxy = KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().unwrap()), ..Default::default() };
    let cfg = NftablesConfig {
        node_port_addresses: vec!["192.168.0.2/32".parse().unwrap()],
        service_cidrs: vec!["172.30.0.0/16".parse().unwrap()],
        local_addresses: vec![ip(127, 0, 0, 1), ip(192, 168, 1, 2), ip(192, 168, 99, 11)],
        masquerade_mark: 0x4000,
        ..NftablesConfig::new(proxy)
    };
    (node, cfg)
}

/// `svcN` in `nsN`, type ClusterIP, cluster IP 172.30.0.(40+N), one TCP
/// port named `p<port>`.
fn svc(n: u8, port: u16) -> Service {
    Service {
        name: format!("svc{n}"),
        namespace: format!("ns{n}"),
        annotations: Default::default(),
        spec: ServiceSpec {
            type_: ServiceType::ClusterIP,
            ports: vec![ServicePort { name: Some(format!("p{port}")), protocol: Protocol::Tcp, port, target_port: port, node_port: None }],
            cluster_ip: Some(ip(172, 30, 0, 40 + n)),
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

/// `svcN-1`: endpoints at these addresses (no node name, no conditions,
/// so ready) on TCP port `p<port>`.
fn slice(n: u8, port: u16, eps: &[Ipv4Addr]) -> EndpointSlice {
    EndpointSlice {
        name: format!("svc{n}-1"),
        namespace: format!("ns{n}"),
        service_name: format!("svc{n}"),
        endpoints: eps.iter().map(|a| Endpoint { ip: *a, node_name: String::new(), ready: true, serving: true, terminating: false, target_ref: String::new(), hostname: None }).collect(),
        ports: vec![EndpointPort { name: Some(format!("p{port}")), protocol: Protocol::Tcp, port }],
    }
}

/// One assertion point of the upstream test: after a sync, the dump must
/// be `golden`; upstream's operation count and stale chains where it
/// checks them.
struct Step {
    name: &'static str,
    golden: &'static str,
    ops: Option<usize>,
    stale: Option<&'static [&'static str]>,
}

/// One sync as the model ran it.
struct Synced {
    /// The step it belongs to (several syncs may make one step).
    step: &'static str,
    sync: Sync,
    /// The table afterwards: its dump (`transaction()`) and `list()`.
    dump: Vec<String>,
    list: Vec<String>,
    stale: Vec<String>,
}

/// The Services and slices, and the proxier, driven as upstream's test
/// drives them.
struct Run {
    node: Node,
    cfg: NftablesConfig,
    state: SyncState,
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
    synced: Vec<Synced>,
}

impl Run {
    fn sync(&mut self, step: &'static str) {
        let sync = self.state.sync(&self.node, &self.services, &self.slices, &self.cfg);
        let table = self.state.table().expect("synced");
        let stale = self.state.stale_chains().iter().map(|s| s.to_string()).collect();
        self.synced.push(Synced { step, sync, dump: table.transaction(), list: table.list(), stale });
    }

    fn set_slice(&mut self, s: EndpointSlice) {
        match self.slices.iter_mut().find(|x| x.namespace == s.namespace && x.name == s.name) {
            Some(x) => *x = s,
            None => self.slices.push(s),
        }
    }
}

/// Upstream's test, step by step: the steps with their expectations, and
/// every sync the model ran.
fn run() -> (Vec<Step>, Vec<Synced>) {
    let (node, cfg) = setup();
    let mut r = Run { node, cfg, state: SyncState::new(), services: Vec::new(), slices: Vec::new(), synced: Vec::new() };
    let eps3 = |ips: &[Ipv4Addr]| slice(3, 80, ips);
    let mut steps = Vec::new();
    let mut step = |name, golden, ops, stale| steps.push(Step { name, golden, ops, stale });

    // Create initial state: svc1 and svc2 with one endpoint each.
    r.services = vec![svc(1, 80), svc(2, 8080)];
    r.slices = vec![slice(1, 80, &[ip(10, 0, 1, 1)]), slice(2, 8080, &[ip(10, 0, 2, 1)])];
    r.sync("initial");
    step("initial", "01-initial.txt", None, None);

    // Add a new service and its endpoints.
    r.services.push(svc(3, 80));
    r.set_slice(eps3(&[ip(10, 0, 3, 1)]));
    r.sync("add svc3");
    step("add svc3", "02-add-svc3.txt", Some(10), None);

    // Delete a service (its slice stays): chains flushed, not deleted.
    r.services.retain(|s| s.name != "svc2");
    r.sync("delete svc2");
    step("delete svc2", "03-delete-svc2.txt", Some(4), None);

    // Time passes: the stale chains are deleted, in their own transaction.
    r.state.age_stale_chains();
    r.sync("stale chains deleted");
    step("stale chains deleted", "04-stale-chains-deleted.txt", Some(0), None);

    // Add a service, sync, then add its endpoints.
    r.services.push(svc(4, 80));
    r.sync("add svc4");
    step("add svc4", "05-add-svc4.txt", Some(2), None);
    r.set_slice(slice(4, 80, &[ip(10, 0, 4, 1)]));
    r.sync("svc4 endpoints");
    step("svc4 endpoints", "06-svc4-endpoints.txt", Some(10), None);

    // Change an endpoint of an existing service.
    r.set_slice(eps3(&[ip(10, 0, 3, 2)]));
    r.sync("svc3 endpoint changed");
    step("svc3 endpoint changed", "07-svc3-endpoint-changed.txt", Some(9), None);

    // The old chain ages; add an endpoint to a service.
    r.state.age_stale_chains();
    r.set_slice(eps3(&[ip(10, 0, 3, 2), ip(10, 0, 3, 3)]));
    r.sync("svc3 endpoint added");
    step("svc3 endpoint added", "08-svc3-endpoint-added.txt", Some(12), None);

    // Empty a service's endpoints: chains flushed, not deleted.
    const SVC3_CHAINS: &[&str] = &[
        "endpoint-SWWHDC7X-ns3/svc3/tcp/p80__10.0.3.2/80",
        "endpoint-TQ2QKHCZ-ns3/svc3/tcp/p80__10.0.3.3/80",
        "service-4AT6LBPK-ns3/svc3/tcp/p80",
    ];
    r.set_slice(eps3(&[]));
    r.sync("svc3 emptied");
    step("svc3 emptied", "09-svc3-emptied.txt", Some(5), Some(SVC3_CHAINS));

    // Restore them at once: chains rewritten, no longer stale.
    r.set_slice(eps3(&[ip(10, 0, 3, 2), ip(10, 0, 3, 3)]));
    r.sync("svc3 restored");
    step("svc3 restored", "10-svc3-restored.txt", Some(14), Some(&[]));

    // Empty, sync, age, restore, sync: the chains are deleted, then
    // written anew; the same dump as before.
    r.set_slice(eps3(&[]));
    r.sync("svc3 emptied and restored after aging");
    r.state.age_stale_chains();
    r.set_slice(eps3(&[ip(10, 0, 3, 2), ip(10, 0, 3, 3)]));
    r.sync("svc3 emptied and restored after aging");
    step("svc3 emptied and restored after aging", "10-svc3-restored.txt", None, None);

    // Sync with no new changes.
    r.sync("no changes");
    step("no changes", "10-svc3-restored.txt", Some(0), None);

    (steps, r.synced)
}

fn golden(file: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/nftables/repeated");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(f).display()));
    // upstream: baseRules + dedent.Dedent(`…`)
    format!("{}\n{}", read("base.txt"), read(file)).lines().map(String::from).collect()
}

#[test]
fn reproduces_upstream_sync_proxy_rules_repeated() {
    let (steps, synced) = run();
    assert_eq!(steps.len(), 12, "upstream's test asserts a dump 12 times");
    let mut report = String::new();
    let mut gaps_seen = Vec::new();
    for s in &steps {
        // The last sync of the step.
        let done = synced.iter().rev().find(|x| x.step == s.name).expect("the step synced");
        let expected = upstream_sorted(&golden(s.golden));
        let actual = upstream_sorted(&done.dump);
        let gaps: Vec<&str> = KNOWN_GAPS.iter().filter(|(f, _, _)| *f == s.golden).map(|(_, l, _)| *l).collect();
        let missing: Vec<String> = missing_from(&expected, &actual);
        gaps_seen.extend(missing.iter().filter(|l| gaps.contains(&l.as_str())).map(|l| (s.golden, l.clone())));
        let missing: Vec<&String> = missing.iter().filter(|l| !gaps.contains(&l.as_str())).collect();
        let extra = missing_from(&actual, &expected);
        for l in &missing {
            report.push_str(&format!("{}: - {l}\n", s.name));
        }
        for l in &extra {
            report.push_str(&format!("{}: + {l}\n", s.name));
        }
        if missing.is_empty() && extra.is_empty() {
            let want: Vec<&String> = expected.iter().filter(|l| !gaps.contains(&l.as_str())).collect();
            if let Some(i) = want.iter().zip(&actual).position(|(e, a)| *e != a) {
                report.push_str(&format!("{}: rule order differs at sorted line {}:\n  expected: {}\n  actual:   {}\n", s.name, i + 1, want[i], actual[i]));
            }
        }
        let ops = done.sync.main.len();
        if let Some(want) = s.ops {
            if ops != want {
                report.push_str(&format!("{}: upstream counts {want} operations, the model's transaction has {ops}:\n    {}\n", s.name, done.sync.main.lines().join("\n    ")));
            }
        }
        if let Some(want) = s.stale {
            if done.stale != want {
                report.push_str(&format!("{}: stale chains {:?}, upstream expects {want:?}\n", s.name, done.stale));
            }
        }
        println!(
            "{:<40} {:>3}/{:<3} dump lines match; operations: model {ops:>2}, upstream {}",
            s.name,
            expected.len() - missing.len(),
            expected.len(),
            s.ops.map_or("not counted".to_string(), |n| n.to_string()),
        );
        // The transactions, for `--nocapture` (skipping the first, whole table).
        if !done.sync.full {
            for t in done.sync.transactions() {
                println!("    {}", t.lines().join("\n    "));
            }
        }
    }
    assert!(report.is_empty(), "TestSyncProxyRulesRepeated at {COMMIT}:\n{report}");
    let mut listed: Vec<(&str, String)> = KNOWN_GAPS.iter().map(|(f, l, _)| (*f, l.to_string())).collect();
    listed.sort();
    gaps_seen.sort();
    assert_eq!(gaps_seen, listed, "the known gaps are exactly the lines the model misses");
}

/// The stale-chain deletions upstream's dumps imply: svc2's two chains
/// after the first aging, svc3's old endpoint chain after the second,
/// svc3's three chains in the step that empties and restores it; each
/// alone in its transaction, before the sync's own.
#[test]
fn stale_chains_are_deleted_in_a_transaction_of_their_own() {
    let (_, synced) = run();
    let cleanups: Vec<(&str, Vec<String>)> = synced.iter().filter(|s| !s.sync.cleanup.is_empty()).map(|s| (s.step, s.sync.cleanup.lines())).collect();
    let del = |c: &str| format!("delete chain ip kube-proxy {c}");
    assert_eq!(cleanups, [
        ("stale chains deleted", vec![del("endpoint-7RVP4LUQ-ns2/svc2/tcp/p8080__10.0.2.1/8080"), del("service-MHHHYRWA-ns2/svc2/tcp/p8080")]),
        ("svc3 endpoint added", vec![del("endpoint-2OCDJSZQ-ns3/svc3/tcp/p80__10.0.3.1/80")]),
        ("svc3 emptied and restored after aging", vec![
            del("endpoint-SWWHDC7X-ns3/svc3/tcp/p80__10.0.3.2/80"),
            del("endpoint-TQ2QKHCZ-ns3/svc3/tcp/p80__10.0.3.3/80"),
            del("service-4AT6LBPK-ns3/svc3/tcp/p80"),
        ]),
    ]);
    assert!(synced[0].sync.full && synced[1..].iter().all(|s| !s.sync.full), "only the first sync is a full one");
}

/// Upstream's syncs, and those beyond it, through a real kernel
/// ([`kernel_check`]).
#[test]
fn the_kernel_follows_the_transactions_sync_after_sync() {
    let (_, synced) = run();
    kernel_check("TestSyncProxyRulesRepeated", &synced);
    kernel_check("a verdict changes, affinity sets go", &beyond_upstream());
}

/// Beyond upstream's test: svc1 with ClientIP affinity and an endpoint on
/// this node; its internal policy turns Local (the cluster IP's verdict in
/// `service-ips` changes: deleted and added again), then its endpoint
/// moves (the old affinity set is deleted at once, the old endpoint chain
/// goes stale).
fn beyond_upstream() -> Vec<Synced> {
    let (node, cfg) = setup();
    let mut r = Run { node, cfg, state: SyncState::new(), services: Vec::new(), slices: Vec::new(), synced: Vec::new() };
    let mut s1 = svc(1, 80);
    s1.spec.session_affinity = SessionAffinity::ClientIP { timeout_seconds: 10800 };
    r.services = vec![s1];
    let mut eps = slice(1, 80, &[ip(10, 0, 1, 1)]);
    eps.endpoints[0].node_name = HOST.into();
    r.slices = vec![eps.clone()];
    r.sync("affinity");
    r.services[0].spec.internal_traffic_policy = TrafficPolicy::Local;
    r.sync("internal policy Local");
    eps.endpoints[0].ip = ip(10, 0, 1, 2);
    r.set_slice(eps);
    r.sync("endpoint moved");
    r.synced
}

#[test]
fn a_changed_verdict_is_deleted_and_added_and_unused_affinity_sets_go_at_once() {
    let synced = beyond_upstream();
    let local = synced[1].sync.main.lines();
    let element = |l: &&String| l.contains("element ip kube-proxy service-ips");
    assert_eq!(local.iter().filter(element).collect::<Vec<_>>(), [
        "delete element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 }",
        "add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 : goto local-ULMVA6XW-ns1/svc1/tcp/p80 }",
    ]);
    assert!(local.contains(&"flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80".to_string()), "the Cluster chain is no longer used: {local:#?}");
    let moved = synced[2].sync.main.lines();
    assert!(moved.contains(&"delete set ip kube-proxy affinity-5TPGNJF2-ns1/svc1/tcp/p80__10.0.1.1/80".to_string()), "{moved:#?}");
    assert!(moved.contains(&"flush chain ip kube-proxy endpoint-5TPGNJF2-ns1/svc1/tcp/p80__10.0.1.1/80".to_string()), "{moved:#?}");
    let table = synced[2].dump.join("\n");
    assert!(!table.contains("affinity-5TPGNJF2") && table.contains("add chain ip kube-proxy endpoint-5TPGNJF2-ns1/svc1/tcp/p80__10.0.1.1/80\n"), "{table}");
}

/// The real kernel runs every transaction of `synced`, in order, in one
/// network namespace (`unshare --net`); after each sync `nft list table ip
/// kube-proxy` prints exactly what `Ruleset::list` says of the model's
/// table. Needs root, `unshare` and Debian's `nftables`; without them it
/// says "skipped", which `KUBEHOPS_REQUIRE_KERNEL_TEST=1` (CI) turns into
/// a failure.
fn kernel_check(name: &str, synced: &[Synced]) {
    use std::process::Command;
    let required = std::env::var_os("KUBEHOPS_REQUIRE_KERNEL_TEST").is_some_and(|v| v == "1");
    let tools = Command::new("unshare").args(["--net", "nft", "--version"]).output();
    if !tools.as_ref().is_ok_and(|o| o.status.success()) {
        let why = tools.map_or_else(|e| e.to_string(), |o| String::from_utf8_lossy(&o.stderr).trim().to_string());
        assert!(!required, "KUBEHOPS_REQUIRE_KERNEL_TEST=1, but `unshare --net nft` cannot run: {why}");
        println!("nftables kernel check: skipped: `unshare --net nft` cannot run ({why})");
        return;
    }
    let dir = std::env::temp_dir().join(format!("kubehops-nft-repeated-{}-{}", std::process::id(), name.len()));
    std::fs::create_dir_all(&dir).unwrap();
    // One shell: after each sync's transactions, a marker and the listing.
    let mut script = String::from("set -e\n");
    let mut files = 0;
    for (i, s) in synced.iter().enumerate() {
        for t in s.sync.transactions() {
            files += 1;
            let f = dir.join(format!("{files:02}.nft"));
            std::fs::write(&f, t.lines().join("\n") + "\n").unwrap();
            script.push_str(&format!("nft -f {}\n", f.display()));
        }
        script.push_str(&format!("echo '@@ sync {i}'\nnft list table ip kube-proxy\n"));
    }
    let out = Command::new("unshare").args(["--net", "sh", "-c", &script]).output().expect("unshare runs");
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "{name}: nft refused a transaction of the model:\n{}\n{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let listings: Vec<&str> = stdout.split("@@ sync ").skip(1).map(|b| b.split_once('\n').map_or("", |(_, rest)| rest)).collect();
    assert_eq!(listings.len(), synced.len(), "{name}: a listing after each sync");
    let mut lines = 0;
    for (i, (s, listed)) in synced.iter().zip(&listings).enumerate() {
        let model = s.list.join("\n") + "\n";
        if let Some(j) = listed.lines().zip(model.lines()).position(|(k, m)| k != m) {
            panic!("{name}, sync {i} ({}): nft list differs from Ruleset::list at line {}:\n  kernel: {:?}\n  model:  {:?}\nkernel's listing:\n{listed}", s.step, j + 1, listed.lines().nth(j).unwrap(), model.lines().nth(j).unwrap());
        }
        assert_eq!(*listed, model, "{name}, sync {i} ({}): same lines, but not the same text", s.step);
        lines += model.lines().count();
    }
    println!("nftables kernel check: {name}: {} syncs, {files} transactions loaded in order, {lines} listed lines, all equal to the model's", synced.len());
}
