//! kube-proxy's nftables mode against upstream's own expectation:
//! `TestOverallNFTablesRules` (kubernetes/kubernetes
//! pkg/proxy/nftables/proxier_test.go at 81810de635aa13aa0a32992f6def3aa9d6025ebc),
//! whose expected ruleset is kept as data in
//! `tests/golden/nftables/overall.txt`. The inputs are rebuilt here with
//! this crate's types, and both sides are compared as upstream's
//! `sortNFTablesTransaction` (helpers_test.go) prepares them: blank and
//! `#` lines dropped, lines sorted by object type (table, chain, rule,
//! set, map, element), then by object name, rules keeping their order
//! within a chain, other lines by their whole text.

#[path = "support/nft.rs"]
mod nft;

use nft::{missing_from, upstream_sorted};
use kubehops_core::api::*;
use kubehops_core::dataplane::kubeproxy::KubeProxyConfig;
use kubehops_core::dataplane::nftables::{sync_node, NftablesConfig, Ruleset};
use kubehops_core::net::{ip, Protocol};
use std::net::Ipv4Addr;
use std::path::PathBuf;

const HOST: &str = "test-node";

/// Lines of the golden that this model does not produce yet, each with
/// why. Empty: every line is reproduced.
const KNOWN_GAPS: &[(&str, &str)] = &[];

/// NewFakeProxier's node: 192.168.0.2 (and the other addresses of its
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

/// A Service with one TCP port `p80` (port 80).
fn svc(n: u8, type_: ServiceType, node_port: Option<u16>, edit: impl FnOnce(&mut Service)) -> Service {
    let mut s = Service {
        name: format!("svc{n}"),
        namespace: format!("ns{n}"),
        annotations: Default::default(),
        spec: ServiceSpec {
            type_,
            ports: vec![ServicePort { name: Some("p80".into()), protocol: Protocol::Tcp, port: 80, target_port: 80, node_port }],
            cluster_ip: Some(ip(172, 30, 0, 40 + n)),
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    };
    edit(&mut s);
    s
}

/// A slice for `svcN` with ready endpoints (address, node name) on port `p80`.
fn slice(n: u8, eps: &[(Ipv4Addr, &str)]) -> EndpointSlice {
    EndpointSlice {
        name: format!("svc{n}-1"),
        namespace: format!("ns{n}"),
        service_name: format!("svc{n}"),
        endpoints: eps
            .iter()
            .map(|(a, node)| Endpoint { ip: *a, node_name: node.to_string(), ready: true, serving: true, terminating: false, target_ref: String::new(), hostname: None })
            .collect(),
        ports: vec![EndpointPort { name: Some("p80".into()), protocol: Protocol::Tcp, port: 80 }],
    }
}

fn balancer(s: &mut Service, lb: Ipv4Addr) {
    s.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(lb, None)];
    s.spec.health_check_node_port = Some(30000);
}

fn overall() -> Ruleset {
    overall_with(|_, _, _| {})
}

/// The test's objects and node, changed by `edit` before the sync.
fn overall_with(edit: impl Fn(&mut Vec<Service>, &mut Vec<EndpointSlice>, &mut NftablesConfig)) -> Ruleset {
    let mut services = vec![
        // ClusterIP.
        svc(1, ServiceType::ClusterIP, None, |_| {}),
        // LoadBalancer, externalTrafficPolicy Local, an external IP.
        svc(2, ServiceType::LoadBalancer, Some(3001), |s| {
            s.spec.external_traffic_policy = TrafficPolicy::Local;
            s.spec.external_ips = vec![ip(192, 168, 99, 22)];
            balancer(s, ip(1, 2, 3, 4));
        }),
        // NodePort.
        svc(3, ServiceType::NodePort, Some(3003), |_| {}),
        // NodePort without a node port, with an external IP.
        svc(4, ServiceType::NodePort, None, |s| s.spec.external_ips = vec![ip(192, 168, 99, 33)]),
        // LoadBalancer, Cluster policy, source ranges, ClientIP affinity.
        svc(5, ServiceType::LoadBalancer, Some(3002), |s| {
            balancer(s, ip(5, 6, 7, 8));
            s.spec.load_balancer_source_ranges = vec!["203.0.113.0/25".parse().unwrap()];
            s.spec.session_affinity = SessionAffinity::ClientIP { timeout_seconds: 10800 };
        }),
        // ClusterIP without endpoints.
        svc(6, ServiceType::ClusterIP, None, |_| {}),
    ];
    let mut slices = vec![
        slice(1, &[(ip(10, 180, 0, 1), "")]),
        // Not on this node: svc2's Local policy has no endpoint here.
        slice(2, &[(ip(10, 180, 0, 2), "")]),
        slice(3, &[(ip(10, 180, 0, 3), "")]),
        slice(4, &[(ip(10, 180, 0, 4), ""), (ip(10, 180, 0, 5), HOST)]),
        slice(5, &[(ip(10, 180, 0, 3), "")]),
    ];
    let (node, mut cfg) = setup();
    edit(&mut services, &mut slices, &mut cfg);
    sync_node(&node, &services, &slices, &cfg)
}

/// Rulesets the golden does not cover, for the kernel: other policies,
/// settings and endpoint states over the same Services.
fn variants() -> Vec<(&'static str, Ruleset)> {
    vec![
        ("upstream's overall", overall()),
        ("every traffic policy Local", overall_with(|svcs, _, _| {
            for s in svcs {
                s.spec.external_traffic_policy = TrafficPolicy::Local;
                s.spec.internal_traffic_policy = TrafficPolicy::Local;
            }
        })),
        ("masqueradeAll, node ports on every address, no ServiceCIDR", overall_with(|_, _, cfg| {
            cfg.proxy.masquerade_all = true;
            cfg.node_port_addresses.clear();
            cfg.service_cidrs.clear();
        })),
        ("only terminating endpoints, still serving", overall_with(|_, slices, _| {
            for e in slices.iter_mut().flat_map(|s| s.endpoints.iter_mut()) {
                (e.ready, e.serving, e.terminating) = (false, true, true);
            }
        })),
        ("no endpoints anywhere", overall_with(|_, slices, _| slices.clear())),
    ]
}

#[test]
fn reproduces_upstream_overall_nftables_rules() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/nftables/overall.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let golden: Vec<&str> = text.lines().collect();
    let expected = upstream_sorted(&golden);
    let actual = upstream_sorted(&overall().transaction());
    let gaps: Vec<String> = KNOWN_GAPS.iter().map(|(l, _)| l.to_string()).collect();
    let missing: Vec<String> = missing_from(&expected, &actual).into_iter().filter(|l| !gaps.contains(l)).collect();
    let extra = missing_from(&actual, &expected);
    let mut report = String::new();
    for l in &missing {
        report.push_str(&format!("- {l}\n"));
    }
    for l in &extra {
        report.push_str(&format!("+ {l}\n"));
    }
    assert!(report.is_empty(), "TestOverallNFTablesRules: {} expected lines missing (-), {} lines extra (+):\n{report}", missing.len(), extra.len());
    // The same lines: then the order must match too (rules within a chain).
    let expected: Vec<&String> = expected.iter().filter(|l| !gaps.contains(l)).collect();
    if let Some(i) = expected.iter().zip(&actual).position(|(e, a)| *e != a) {
        panic!("TestOverallNFTablesRules: rule order differs at sorted line {}:\n  expected: {}\n  actual:   {}", i + 1, expected[i], actual[i]);
    }
    assert_eq!(expected.len(), 122 - KNOWN_GAPS.len(), "every line of the golden is compared");
}

#[test]
fn every_rule_and_element_of_a_service_says_whose_it_is() {
    let rs = overall();
    for c in rs.chains.iter().filter(|c| c.name.contains('/')) {
        assert!(c.owner.is_some(), "chain {} has no owner", c.name);
        for r in &c.rules {
            assert_eq!(r.owner, c.owner, "{}: {}", c.name, r.render());
        }
    }
    let svc5 = rs.services.iter().find(|s| s.port_name == "ns5/svc5:p80").expect("svc5 is synced");
    assert_eq!(svc5.sets, ["affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80"]);
    assert!(svc5.chains.contains(&"firewall-HVFWP5L3-ns5/svc5/tcp/p80".to_string()));
    let refused: Vec<String> = rs.set("no-endpoint-services").unwrap().elements.iter().filter_map(|e| e.owner.clone()).collect();
    assert_eq!(refused, ["ns2/svc2:p80", "ns2/svc2:p80", "ns6/svc6:p80"]);
}

/// The real kernel reads the transaction the model writes, in the model's
/// own order (table, sets and maps, chains, rules, elements), in a network
/// namespace of its own (`unshare --net`), and `nft list table ip
/// kube-proxy` then prints exactly what `Ruleset::list` says, byte for
/// byte. Needs root, `unshare` and Debian's `nftables`; without them it
/// says "skipped", which `KUBEHOPS_REQUIRE_KERNEL_TEST=1` (CI) turns into
/// a failure.
#[test]
fn the_kernel_loads_the_transaction_and_lists_what_the_model_says() {
    use std::process::Command;
    let required = std::env::var_os("KUBEHOPS_REQUIRE_KERNEL_TEST").is_some_and(|v| v == "1");
    let tools = Command::new("unshare").args(["--net", "nft", "--version"]).output();
    if !tools.as_ref().is_ok_and(|o| o.status.success()) {
        let why = tools.map_or_else(|e| e.to_string(), |o| String::from_utf8_lossy(&o.stderr).trim().to_string());
        assert!(!required, "KUBEHOPS_REQUIRE_KERNEL_TEST=1, but `unshare --net nft` cannot run: {why}");
        println!("nftables kernel check: skipped: `unshare --net nft` cannot run ({why})");
        return;
    }
    let (mut lines, variants) = (0, variants());
    let count = variants.len();
    for (name, rs) in variants {
        let text = rs.transaction().join("\n") + "\n";
        // One shell in one namespace: load, then list what the kernel holds.
        let out = nft::load_and_list(&text);
        assert!(out.status.success(), "{name}: nft -f refused the model's transaction:\n{}", String::from_utf8_lossy(&out.stderr));
        let listed = String::from_utf8_lossy(&out.stdout).to_string();
        let model = rs.list().join("\n") + "\n";
        if let Some(i) = listed.lines().zip(model.lines()).position(|(k, m)| k != m) {
            panic!("{name}: nft list differs from Ruleset::list at line {}:\n  kernel: {:?}\n  model:  {:?}\nkernel's listing:\n{listed}", i + 1, listed.lines().nth(i).unwrap(), model.lines().nth(i).unwrap());
        }
        assert_eq!(listed, model, "{name}: same lines, but not the same text (line count or ending)");
        println!("nftables kernel check: {name}: {} chains, {} sets and maps, {} rules, {} elements; nft list matches the model's {} lines",
            rs.chains.len(), rs.sets.len(), rs.chains.iter().map(|c| c.rules.len()).sum::<usize>(), rs.sets.iter().map(|s| s.elements.len()).sum::<usize>(), model.lines().count());
        lines += model.lines().count();
    }
    println!("nftables kernel check: {count} rulesets, {lines} listed lines, all equal");
}
