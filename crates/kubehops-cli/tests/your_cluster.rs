//! The scenario "Your cluster" on the CLI's fixture cluster: the browser's
//! reader (`kubehops_objects::cluster::read`) and the scenario's world give
//! every node exactly the rules `kubehops iptables-save --node N` prints;
//! requests from a Pod, a node and outside play to a reply; bad input is
//! refused in the CLI's words.

use kubehops_core::scenarios::your_cluster::{self, ClusterInput};
use kubehops_core::scenarios::{ParamKind, Params, Value};
use kubehops_core::sim::{ActorKind, HopKind, Payload, RuleSummary};
use kubehops_objects::cluster;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/cluster/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn pasted() -> ClusterInput {
    let (y, j) = (fixture("cluster.yaml"), fixture("shop.json"));
    cluster::read(&[("cluster.yaml", &y), ("shop.json", &j)]).unwrap().input
}

/// The CLI run in-process on `args`: (exit code, stdout, stderr).
fn cli(args: &[&str], stdin: &str) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = kubehops_cli::run(&args, &mut stdin.as_bytes(), &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

fn with(pairs: &[(&str, &str)]) -> Params {
    let mut p = Params::default();
    for (k, v) in pairs {
        p.insert(k, Value::Choice(v.to_string()));
    }
    p
}

#[test]
fn every_node_gets_the_rules_iptables_save_prints() {
    let input = pasted();
    let dir = format!("{}/tests/fixtures/cluster", env!("CARGO_MANIFEST_DIR"));
    let mut w = your_cluster::world_for(&input, &Params::default());
    assert_eq!(w.api.nodes.len(), 3);
    for i in 0..w.api.nodes.len() {
        let name = w.api.nodes[i].name.clone();
        let (code, stdout, stderr) = cli(&["iptables-save", "--node", &name, "-f", &dir], "");
        assert_eq!(code, 0, "{stderr}");
        assert!(!w.is_synced(i), "nothing syncs before it is needed");
        w.sync_node_rules(i);
        let ours: String = w.rules[i].iptables.save().iter().map(|l| format!("{l}\n")).collect();
        assert_eq!(ours, stdout, "node {name}");
    }
}

#[test]
fn the_options_list_their_services_and_pods_and_nodes() {
    let input = pasted();
    let specs = your_cluster::params(&input);
    let values = |key: &str| match &specs.iter().find(|s| s.key == key).unwrap().kind {
        ParamKind::Choice { options, default, .. } => (options.iter().map(|o| o.value.clone()).collect::<Vec<_>>(), default.clone()),
        _ => panic!("{key} is a choice"),
    };
    let (services, default) = values("service");
    for s in ["default/web", "default/shop", "data/db", "default/docs", "default/api"] {
        assert!(services.contains(&s.to_string()), "{s} in {services:?}");
    }
    assert_eq!(default, "default/shop", "a Service with a cluster IP and ready endpoints comes first");
    let (clients, _) = values("client");
    for c in ["pod:default/shop-1", "pod:default/shop-2", "node:node-1", "node:node-3", "outside"] {
        assert!(clients.contains(&c.to_string()), "{c} in {clients:?}");
    }
}

#[test]
fn a_request_from_a_pod_a_node_and_outside_plays_to_a_reply() {
    let input = pasted();
    for client in ["pod:default/shop-1", "node:node-2", "outside"] {
        let s = your_cluster::build(&input, &with(&[("service", "default/web"), ("client", client)]));
        let st = &s.steps[2];
        assert!(st.hops.len() >= 3, "{client}: {:?}", st.hops.iter().map(|h| &h.caption).collect::<Vec<_>>());
        assert!(st.hops.iter().all(|h| h.kind != HopKind::Dropped), "{client}: {}", st.narration);
        let reply = st.hops.iter().rev().find_map(|h| h.packet.as_ref()?.payload.clone());
        assert_eq!(reply, Some(Payload::HttpResponse { status: 200, reason: "OK".into() }), "{client}");
        // The endpoints' rules: the hop that DNATs names the Service's chains.
        let dnat = st.hops.iter().filter_map(|h| h.packet.as_ref()).find(|p| !p.could_reach.is_empty()).expect("a DNAT");
        assert!(dnat.matched.iter().any(|m| m.text.starts_with("-A KUBE-SVC-")), "{client}");
        assert!(st.narration.contains("KUBE-SVC-"), "{}", st.narration);
        // The rules panel's lines of the node that decided are the CLI's.
        let node = dnat.decided_on.unwrap();
        let view = st.views.last().unwrap().node(node).unwrap();
        assert!(view.iptables.iter().any(|l| l.text.contains("KUBE-SVC-")), "{client}");
    }
    // The endpoints without a Pod object are drawn as Pods named after their targetRef.
    let s = your_cluster::build(&input, &with(&[("service", "default/web")]));
    assert!(s.actors.iter().any(|a| a.kind == ActorKind::Pod && a.label == "web-1"));
}

#[test]
fn every_node_with_a_card_has_its_rules_from_the_first_view() {
    // node-2 holds no endpoint of web and no client dials it, so a lazy
    // world would leave it unsynced: drawn, yet without rules. kubehops
    // iptables-save --node node-2 prints web's node port rules there.
    let input = pasted();
    let dir = format!("{}/tests/fixtures/cluster", env!("CARGO_MANIFEST_DIR"));
    let (code, save, _) = cli(&["iptables-save", "--node", "node-2", "-f", &dir], "");
    assert_eq!(code, 0);
    assert!(save.contains("--dport 30080 -j KUBE-EXT-"), "{save}");
    for client in ["outside", "pod:default/shop-1", "node:node-1"] {
        let s = your_cluster::build(&input, &with(&[("service", "default/web"), ("client", client)]));
        let node2 = s.nodes().find(|n| n.label == "Node-2").map(|n| n.id).expect("node-2");
        let cards: Vec<_> = kubehops_core::scene::Layout::for_scenario(&s).nodes.iter().map(|c| c.node).collect();
        assert!(cards.contains(&node2), "{client}: node-2 has a card");
        for (k, st) in s.steps.iter().enumerate() {
            for (v, view) in st.views.iter().enumerate() {
                for card in &cards {
                    let nv = view.node(*card).expect("a view of every node");
                    assert!(nv.synced, "{client}: step {} view {v}: {:?} has a card but no rules computed", k + 1, s.actor(*card).map(|a| &a.label));
                }
                let nv = view.node(node2).unwrap();
                assert!(nv.rules.iter().any(|r| matches!(r, RuleSummary::NodePort { port: 30080, .. })), "{client}: step {} view {v}: node-2's card: {:?}", k + 1, nv.rules);
                let np = nv.rules.iter().find(|r| matches!(r, RuleSummary::NodePort { .. })).unwrap();
                let panel: Vec<&str> = nv.iptables.iter().filter(|l| np.lines().contains(&l.line)).map(|l| l.text.as_str()).collect();
                assert!(panel.iter().all(|l| save.contains(*l)), "{client}: node-2's node port lines are the CLI's: {panel:?}");
            }
        }
    }
}

#[test]
fn the_request_is_told_with_the_client_as_its_subject() {
    // Not "Outside client: From outside, …" nor "Pod shop-1: The client
    // dials …": the client is the one who dials, in the sentence.
    let input = pasted();
    for (service, client, who, opening) in [
        ("default/web", "outside", "Outside client", "From outside, a NodePort Service is reached on any node's port 30080: the outside client dials"),
        ("default/web", "pod:default/shop-1", "Pod shop-1", "Pod shop-1 dials the Service's cluster IP, 10.96.0.50:80."),
        ("default/web", "node:node-2", "Node-2", "Node-2 dials the Service's cluster IP, 10.96.0.50:80."),
        ("data/db", "pod:default/shop-1", "Pod shop-1", "Service db is headless: no cluster IP and no rule, so Pod shop-1 connects straight to a Ready endpoint"),
    ] {
        let s = your_cluster::build(&input, &with(&[("service", service), ("client", client)]));
        let text = &s.steps[2].narration;
        assert!(!text.contains(&format!("{who}:")), "{client}: {text}");
        assert!(text.starts_with(opening), "{client}: {text}");
        if client == "outside" {
            assert!(text.contains("reaches the outside client from"), "{text}");
        }
    }
}

#[test]
fn without_kube_dns_a_lookup_says_why_and_a_headless_service_is_dialled_directly() {
    let input = pasted();
    let s = your_cluster::build(&input, &with(&[("service", "default/web"), ("client", "pod:default/shop-1")]));
    assert!(s.steps[1].hops.is_empty());
    assert!(s.steps[1].narration.contains("no Service kube-system/kube-dns"), "{}", s.steps[1].narration);
    let s = your_cluster::build(&input, &with(&[("service", "data/db"), ("client", "pod:default/shop-1")]));
    let first = s.steps[2].hops.first().unwrap().packet.as_ref().unwrap();
    assert_eq!(first.before.dst.to_string(), "10.244.1.8:5432");
    // ExternalName: nothing to send, said so.
    let s = your_cluster::build(&input, &with(&[("service", "default/docs")]));
    assert!(s.steps[2].hops.is_empty() && s.steps[2].narration.contains("ExternalName"));
}

#[test]
fn a_lookup_through_their_kube_dns_answers_the_cluster_ip() {
    let dns = r#"
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system}
spec:
  clusterIP: 10.96.0.10
  selector: {k8s-app: kube-dns}
  ports:
    - {name: dns, protocol: UDP, port: 53, targetPort: 53}
    - {name: dns-tcp, protocol: TCP, port: 53, targetPort: 53}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-abcde
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns}
addressType: IPv4
endpoints:
  - addresses: ["10.244.2.3"]
    conditions: {ready: true}
    nodeName: node-2
    targetRef: {kind: Pod, name: coredns-5d78c9869d-4hx2p}
ports:
  - {name: dns, protocol: UDP, port: 53}
  - {name: dns-tcp, protocol: TCP, port: 53}
"#;
    let (y, j) = (fixture("cluster.yaml"), fixture("shop.json"));
    let input = cluster::read(&[("cluster.yaml", &y), ("shop.json", &j), ("dns.yaml", dns)]).unwrap().input;
    let s = your_cluster::build(&input, &with(&[("service", "default/web"), ("client", "pod:default/shop-1")]));
    let answer = s.steps[1].hops.iter().rev().find_map(|h| match h.packet.as_ref()?.payload.as_ref()? {
        Payload::DnsAnswer(r) => Some(r.clone()),
        _ => None,
    });
    let answer = answer.expect("CoreDNS answers");
    assert_eq!(answer.name, "web.default.svc.cluster.local.");
    assert!(s.steps[1].narration.contains("10.96.0.50"), "{}", s.steps[1].narration);
    assert!(s.actors.iter().any(|a| a.kind == ActorKind::CoreDns), "the kube-dns endpoint is CoreDNS");
}

#[test]
fn bad_input_gives_the_clis_errors_and_warnings() {
    let bad = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  type: NodePort\n  ports: [{port: 80, nodePort: 29000}]\n";
    let (code, _, stderr) = cli(&["get", "svc", "-f", "-"], bad);
    assert_eq!(code, 1);
    let ours = cluster::read(&[("STDIN", bad)]).unwrap_err().to_string();
    assert_eq!(format!("{ours}\n"), stderr);
    assert!(ours.contains("spec.ports[0].nodePort: Invalid value: 29000"), "{ours}");
    // A syntax error: the CLI puts "error: " in front of the same words.
    let broken = "kind: Service\nmetadata: [\n";
    let (_, _, stderr) = cli(&["get", "svc", "-f", "-"], broken);
    let ours = cluster::read(&[("STDIN", broken)]).unwrap_err().to_string();
    assert_eq!(format!("error: {ours}\n"), stderr);
    // Warnings: a skipped kind and a clash of cluster IPs.
    let warn = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {clusterIP: 10.96.0.7, ports: [{port: 80}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {clusterIP: 10.96.0.7, ports: [{port: 80}]}\n";
    let (code, _, stderr) = cli(&["get", "svc", "-f", "-"], warn);
    assert_eq!(code, 0);
    let read = cluster::read(&[("STDIN", warn)]).unwrap();
    let ours: String = read.warnings.iter().map(|w| format!("{w}\n")).collect();
    assert_eq!(ours, stderr);
    assert_eq!(read.warnings.len(), 2);
}
