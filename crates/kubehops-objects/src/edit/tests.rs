use super::*;
use kubehops_core::api::{SessionAffinity, TrafficPolicy};
use kubehops_core::link;
use kubehops_core::scenarios::{Value, REGISTRY};
use kubehops_core::sim::{HopKind, Leg, RewriteKind};

const EXPLORER: &str = "service-types";

fn params(pairs: &[(&str, &str)], manifest: &str) -> Params {
    let mut p = Params::default().with("manifest", Value::Manifest(manifest.into()));
    for (k, v) in pairs {
        p.insert(k, Value::Choice(v.to_string()));
    }
    p
}

fn api(spec: &str) -> String {
    format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n{spec}")
}

const SELECT: &str = "  selector:\n    app: api\n";

fn built(id: &str, p: &Params) -> Built {
    build(id, p).expect("known scenario")
}

fn scenario(text: &str) -> Scenario {
    let b = built(EXPLORER, &params(&[], text));
    assert_eq!(b.refusal, None, "{text}");
    b.scenario.expect("admitted")
}

/// The hops of the Send Request step.
fn request(s: &Scenario) -> &[kubehops_core::sim::Hop] {
    &s.steps[s.actions.iter().find(|a| a.label == "Send Request").expect("offered").step].hops
}

#[test]
fn a_node_port_out_of_range_is_refused_at_its_line_in_the_api_servers_words() {
    let text = api(&format!("  type: NodePort\n{SELECT}  ports:\n  - port: 80\n    targetPort: 8080\n    nodePort: 29000\n"));
    let b = built(EXPLORER, &params(&[], &text));
    assert!(b.scenario.is_none(), "the last valid state stays: nothing new is built");
    let r = b.refusal.expect("refused");
    assert_eq!(r.headline, "The Service \"api\" is invalid:");
    assert_eq!(
        r.problems,
        [Problem { line: Some(12), message: "spec.ports[0].nodePort: Invalid value: 29000: provided port is not in the valid range. The range of valid ports is 30000-32767".into() }]
    );
}

#[test]
fn syntax_errors_and_wrong_objects_are_refused_with_their_line() {
    let r = built(EXPLORER, &params(&[], "apiVersion: v1\nkind: Service\nmetadata:\n  name: [api\n")).refusal.expect("refused");
    assert!(r.problems[0].message.starts_with("error parsing api.yaml: yaml: line "), "{r:?}");
    assert!(r.problems[0].line.is_some());
    let r = built(EXPLORER, &params(&[], "{\"apiVersion\": \"v1\",\n \"kind\": \"Service\",\n \"metadata\": {\"name\": \"api\"},\n")).refusal.expect("refused");
    assert!(r.problems[0].message.contains("json: line 4"), "{r:?}");
    assert_eq!(r.problems[0].line, Some(4));
    let r = built(EXPLORER, &params(&[], "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n")).refusal.expect("refused");
    assert!(r.problems[0].message.contains("must be one v1 Service"), "{r:?}");
    let r = built(EXPLORER, &params(&[], &api("  type: Bogus\n  ports:\n  - port: 80\n"))).refusal.expect("refused");
    assert_eq!(r.problems[0].line, Some(6), "{r:?}");
    assert!(r.problems[0].message.starts_with("spec.type: Unsupported value: \"Bogus\""), "{r:?}");
    let huge = "#".repeat(MAX_EDIT_BYTES + 1);
    assert!(built(EXPLORER, &params(&[], &huge)).refusal.is_some());
}

#[test]
fn locate_finds_fields_items_and_their_nearest_parent() {
    let text = api("  ports:\n  - name: a\n    port: 80\n  - name: b\n    port: 81\n    nodePort: 1\n  clusterIP: None\n");
    assert_eq!(locate(&text, "spec.ports[1].nodePort"), Some(11));
    assert_eq!(locate(&text, "spec.ports[1].port"), Some(10));
    assert_eq!(locate(&text, "spec.ports[0].targetPort"), Some(7), "falls back to the item");
    assert_eq!(locate(&text, "spec.clusterIPs[0]"), Some(12));
    assert_eq!(locate(&text, "metadata.name"), Some(4));
    assert_eq!(locate(&text, "status.loadBalancer"), None);
    let json = "{\"apiVersion\": \"v1\", \"kind\": \"Service\",\n \"metadata\": {\"name\": \"api\"},\n \"spec\": {\"ports\": [\n  {\"port\": 80, \"nodePort\": 5}]}}";
    assert_eq!(locate(json, "spec.ports[0].nodePort"), Some(4));
}

#[test]
fn every_type_can_be_typed_and_plays_truly() {
    // ClusterIP: Pod web reaches it through a DNAT to an api Pod.
    let s = scenario(&api(&format!("{SELECT}  ports:\n  - port: 8000\n    targetPort: http\n")));
    assert_eq!(s.params.choice("tab"), Some("clusterip"));
    let dnat = request(&s).iter().filter_map(|h| h.packet.as_ref()).find(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat)).expect("DNAT");
    assert_eq!((dnat.before.dst.port, dnat.after.dst.port), (8000, 8080), "the named port resolves to the Pods' http port");
    assert!(s.steps[0].narration.contains(":8000 that DNATs"), "{}", s.steps[0].narration);

    // NodePort from the laptop, with the typed node port.
    let mut p = params(&[("client", "laptop")], &api(&format!("  type: NodePort\n{SELECT}  ports:\n  - port: 80\n    targetPort: 8080\n    nodePort: 31234\n")));
    p.insert("client", Value::Choice("laptop".into()));
    let s = built(EXPLORER, &p).scenario.expect("admitted");
    assert_eq!(s.params.choice("tab"), Some("nodeport"));
    let first = request(&s).iter().find_map(|h| h.packet.as_ref()).expect("a packet");
    assert_eq!(first.before.dst.port, 31234);
    assert!(request(&s).iter().any(|h| h.leg == Leg::Back && h.kind != HopKind::Dropped), "a reply comes back");

    // LoadBalancer: the balancer is built and answers.
    let p = params(&[("client", "laptop")], &api(&format!("  type: LoadBalancer\n{SELECT}  ports:\n  - port: 443\n    targetPort: 8080\n")));
    let s = built(EXPLORER, &p).scenario.expect("admitted");
    let kubectl = &s.steps[0].views.last().expect("views").kubectl;
    assert!(kubectl.render().contains("443:3"), "a node port was allocated: {}", kubectl.render());
    assert!(request(&s).iter().any(|h| h.leg == Leg::Back), "answered through the balancer");

    // ExternalName: a CNAME to the typed name.
    let s = scenario(&api("  type: ExternalName\n  externalName: mydb.example.com\n"));
    assert_eq!(s.params.choice("tab"), Some("externalname"));
    assert!(s.steps[1].narration.contains("CNAME") || s.steps[1].narration.contains("mydb.example.com"), "{}", s.steps[1].narration);

    // Headless: no DNAT, straight to a Pod.
    let s = scenario(&api(&format!("  clusterIP: None\n{SELECT}  ports:\n  - port: 80\n    targetPort: 8080\n")));
    assert_eq!(s.params.choice("tab"), Some("headless"));
    assert!(request(&s).iter().filter_map(|h| h.packet.as_ref()).all(|p| p.rewrites.iter().all(|r| r.kind != RewriteKind::Dnat)));
}

#[test]
fn policies_affinity_and_source_ranges_reach_the_rules() {
    let text = api(&format!(
        "  type: LoadBalancer\n{SELECT}  ports:\n  - port: 80\n    targetPort: 8080\n  externalTrafficPolicy: Local\n  internalTrafficPolicy: Local\n  sessionAffinity: ClientIP\n  loadBalancerSourceRanges:\n  - 192.0.2.0/24\n  externalIPs:\n  - 192.0.2.99\n"
    ));
    let s = scenario(&text);
    assert!(s.params.toggle("local"), "the local switch follows the typed policy");
    let applied = &s.steps[0].manifest.lines;
    for line in ["  externalTrafficPolicy: Local", "  internalTrafficPolicy: Local", "  sessionAffinity: ClientIP", "  - 192.0.2.0/24", "  - 192.0.2.99"] {
        assert!(applied.iter().any(|l| l == line), "{line} in {applied:?}");
    }
    let snap = s.steps.iter().rev().find_map(|st| st.snapshot.as_ref()).expect("a data plane");
    let rules = snap.nodes[0].rules.save().join("\n");
    assert!(rules.contains("-m recent"), "ClientIP affinity");
    assert!(rules.contains("KUBE-SVL-"), "a local-only chain");
    assert!(rules.contains("-s 192.0.2.0/24"), "the source range");
    assert!(rules.contains("-d 192.0.2.99 --dport 80"), "the external IP: {rules}");
    let svc = read_service(&text, "api.yaml", &kubehops_core::scenarios::service_types::cluster()).expect("admitted");
    assert_eq!(svc.spec.internal_traffic_policy, TrafficPolicy::Local);
    assert!(matches!(svc.spec.session_affinity, SessionAffinity::ClientIP { .. }));
}

#[test]
fn a_taken_node_port_is_refused_by_the_dry_run() {
    // The walkthrough's web holds no node port before step 1; the lab's booking holds 30082.
    let text = "apiVersion: v1\nkind: Service\nmetadata:\n  name: other\nspec:\n  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 30082\n";
    let r = built("local-lab", &params(&[], text)).refusal.expect("refused");
    assert!(r.problems[0].message.contains("spec.ports[0].nodePort: Invalid value: 30082: provided port is already allocated"), "{r:?}");
    assert_eq!(r.problems[0].line, Some(9));
}

#[test]
fn every_scenario_takes_an_edit_and_plays_it() {
    for e in REGISTRY {
        if e.edit.is_none() {
            continue;
        }
        let p = Params::default();
        let own = starting_text(e.id, &p);
        assert!(own.contains("kind: Service"), "{}: {own}", e.id);
        let b = built(e.id, &params(&[], &own));
        assert_eq!(b.refusal, None, "{}: its own manifest is admitted", e.id);
        let s = b.scenario.expect("built");
        assert!(!s.steps.is_empty() && s.steps[0].manifest.file == (e.editor.expect("an editor beside the edit").file)(&p), "{}", e.id);
        assert!(s.steps.iter().all(|st| !st.narration.is_empty()), "{}: every step is narrated", e.id);
    }
}

#[test]
fn an_edited_manifest_round_trips_through_a_link() {
    let text = api(&format!("  type: NodePort\n{SELECT}  ports:\n  - port: 80\n    targetPort: 8080\n    nodePort: 31234\n"));
    let p = params(&[("tab", "nodeport")], &text);
    let l = link::Link { scenario: EXPLORER.into(), step: 0, hop: None, params: p.normalized(&(scenarios::entry(EXPLORER).unwrap().params)()), display: Default::default(), view: Default::default() };
    let url = link::format(&l);
    assert!(url.contains("manifest="), "{url}");
    assert!(url.len() < 300, "{} chars: {url}", url.len());
    let back = link::parse(&url);
    assert!(back.problems.is_empty(), "{:?}", back.problems);
    assert_eq!(back.link.params.manifest(), Some(text.as_str()));
    assert_eq!(built(EXPLORER, &back.link.params).scenario, built(EXPLORER, &p).scenario);
}
