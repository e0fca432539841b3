//! The worker reads as the CLI reads and builds what the page would have
//! built itself: the same scenario as `your_cluster::build` on the CLI's
//! reading, less the snapshots the page never draws.

use kubehops_core::scenarios::{your_cluster, ParamKind, Params, Value};
use kubehops_core::worker::{Answer, Cluster, Job, Paste, Reply, Request};
use kubehops_objects::cluster;
use kubehops_worker::Reader;

fn paste(seq: u64, text: &str, params: Params) -> Request {
    Request { seq, job: Job::Cluster { paste: Some(Paste { name: "STDIN".into(), text: text.into() }), params } }
}

fn rebuild(seq: u64, params: Params) -> Request {
    Request { seq, job: Job::Cluster { paste: None, params } }
}

/// The cluster answer of a reply (`None`: nothing read).
fn cluster_of(r: Reply) -> Option<Result<Cluster, String>> {
    match r.answer {
        Answer::Cluster(c) => c,
        other => panic!("not a cluster answer: {other:?}"),
    }
}

#[test]
fn a_paste_is_read_and_built_as_the_cli_reads_and_builds_it() {
    let yaml = cluster::example_yaml(4, 12, 5);
    let p = Params::default();
    let reply = Reader::default().answer(paste(3, &yaml, p.clone()));
    assert_eq!(reply.seq, 3);
    let c = cluster_of(reply).expect("something read").expect("read");
    let r = cluster::read(&[("STDIN", &yaml)]).unwrap();
    assert_eq!(c.counts.summary(), format!("Read 4 nodes, 12 Pods, 5 Services and {} EndpointSlices.", r.input.slices.len()));
    assert_eq!(c.warnings, r.warnings);
    assert_eq!(c.specs, your_cluster::params(&r.input));
    let own = your_cluster::build(&r.input, &p);
    assert!(own.steps.iter().any(|s| s.snapshot.is_some()), "the build keeps snapshots, so dropping them is tested");
    assert_eq!(c.scenario, own.without_snapshots());
    assert!(c.scenario.steps.iter().all(|s| s.snapshot.is_none()));
}

/// A cluster whose KubeProxyConfiguration sets nftables mode opens in
/// that mode: the mode choice defaults to it and the nodes' cards hold
/// nftables lines; a link's `mode` still switches it.
#[test]
fn a_cluster_in_nftables_mode_opens_in_that_mode() {
    use kubehops_core::dataplane::rules::RuleTable;
    let yaml = cluster::example_yaml(2, 4, 1);
    let config = |mode: &str| format!("{yaml}\n---\napiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: {mode}\n");
    let tables = |text: &str, p: Params| {
        let c = cluster_of(Reader::default().answer(paste(1, text, p))).unwrap().unwrap();
        let default = c.specs.iter().find(|s| s.key == "mode").map(|s| s.default_value());
        let mut t: Vec<RuleTable> = c.scenario.steps.iter().flat_map(|s| &s.views).flat_map(|v| &v.nodes).flat_map(|n| &n.iptables).map(|l| l.table).collect();
        t.dedup();
        t.sort_by_key(|t| t.as_str());
        t.dedup();
        (default, t)
    };
    let nft = Some(Value::Choice("nftables".into()));
    assert_eq!(tables(&config("nftables"), Params::default()), (nft.clone(), vec![RuleTable::KubeProxy]));
    let iptables = |t: Vec<RuleTable>| !t.is_empty() && t.iter().all(|t| matches!(t, RuleTable::Filter | RuleTable::Nat));
    assert!(iptables(tables(&config("iptables"), Params::default()).1));
    assert!(iptables(tables(&yaml, Params::default()).1));
    let by_link = Params::default().with("mode", Value::Choice("nftables".into()));
    assert_eq!(tables(&yaml, by_link).1, vec![RuleTable::KubeProxy]);
}

#[test]
fn new_parameters_rebuild_the_cluster_kept_without_sending_it_again() {
    let yaml = cluster::example_yaml(4, 12, 5);
    let mut w = Reader::default();
    let first = cluster_of(w.answer(paste(1, &yaml, Params::default()))).unwrap().unwrap();
    let other = first
        .specs
        .iter()
        .find_map(|s| match &s.kind {
            ParamKind::Choice { options, default, .. } if s.key == "service" => options.iter().find(|c| &c.value != default).map(|c| c.value.clone()),
            _ => None,
        })
        .expect("a second Service");
    let p = Params::default().with("service", Value::Choice(other.clone()));
    let c = cluster_of(w.answer(rebuild(2, p.clone()))).unwrap().unwrap();
    assert_eq!(c.scenario.params.choice("service"), Some(other.as_str()));
    assert_ne!(c.scenario, first.scenario);
}

#[test]
fn bad_text_gets_the_clis_error_and_empty_text_clears_what_was_read() {
    let mut w = Reader::default();
    let e = cluster_of(w.answer(paste(1, "kind: [unclosed", Params::default()))).unwrap().unwrap_err();
    assert!(e.starts_with("error: "), "{e}");
    assert!(e.contains("STDIN"), "errors name the paste as the CLI names stdin: {e}");
    assert_eq!(cluster_of(w.answer(paste(2, "  \n", Params::default()))), None);
    assert_eq!(cluster_of(w.answer(rebuild(3, Params::default()))), None, "nothing kept");
}

#[test]
fn a_message_that_is_not_a_request_is_answered_with_an_error() {
    let bytes = Reader::default().answer_bytes(&[0xff, 0xff, 0xff]);
    let reply: Reply = postcard::from_bytes(&bytes).unwrap();
    assert!(matches!(reply.answer, Answer::Unreadable(ref e) if e.contains("disagree")), "an error, not a panic: {:?}", reply.answer);
}

/// postcard writes no field names, so a field skipped when writing (serde's
/// `skip_serializing_if`) would shift all after it: every scenario, with
/// every parameter's values, must come back equal, less its steps'
/// data-plane snapshots, which are never serialized.
#[test]
fn every_scenario_survives_the_trip_through_postcard() {
    let mut n = 0;
    for e in kubehops_core::scenarios::REGISTRY {
        for spec in (e.params)() {
            let ParamKind::Choice { options, .. } = &spec.kind else { continue };
            for c in options {
                let p = Params::default().with(&spec.key, Value::Choice(c.value.clone()));
                let s = (e.build)(&p);
                let back: kubehops_core::scenarios::Scenario = postcard::from_bytes(&postcard::to_allocvec(&s).unwrap()).unwrap();
                assert!(back.steps.iter().all(|st| st.snapshot.is_none()), "a snapshot was sent");
                assert!(back == s.without_snapshots(), "{} with {}={} changed on the way", e.id, spec.key, c.value);
                n += 1;
            }
        }
    }
    assert!(n > 10, "only {n} scenarios tried");
}

#[test]
fn a_big_cluster_travels_in_a_fraction_of_its_json() {
    let yaml = cluster::example_yaml(50, 2000, 500);
    let reply = Reader::default().answer(paste(1, &yaml, Params::default()));
    let bytes = postcard::to_allocvec(&reply).unwrap();
    let json = serde_json::to_string(&reply).unwrap();
    let back: Reply = postcard::from_bytes(&bytes).unwrap();
    assert!(back == reply);
    println!("a 50-node cluster's answer: postcard {} bytes, JSON {}", bytes.len(), json.len());
    assert!(bytes.len() * 3 < json.len() * 2, "postcard {} bytes, JSON {}", bytes.len(), json.len());
}

/// Whatever bytes reach the worker (a page from another build, a message
/// cut short), it answers with an error and never panics: random bytes,
/// and a real request cut or with a byte changed at each place.
#[test]
fn any_bytes_get_an_answer_never_a_panic() {
    let mut w = Reader::default();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for n in 0..2000 {
        let len = (next() % 64) as usize + n % 3;
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        postcard::from_bytes::<Reply>(&w.answer_bytes(&bytes)).expect("an answer the page can read");
    }
    let good = postcard::to_allocvec(&paste(9, &cluster::example_yaml(2, 4, 2), Params::default())).unwrap();
    let mut answered = 0;
    for i in (0..good.len()).step_by(7) {
        for cut in [&good[..i]] {
            postcard::from_bytes::<Reply>(&w.answer_bytes(cut)).expect("an answer");
        }
        let mut changed = good.clone();
        changed[i] ^= (next() as u8) | 1;
        postcard::from_bytes::<Reply>(&w.answer_bytes(&changed)).expect("an answer");
        answered += 2;
    }
    assert!(answered > 100, "{answered}");
}

/// The editor's job gives what `edit::build` gives, less the snapshots,
/// with the scenario and parameters it was asked for.
#[test]
fn a_typed_service_is_admitted_or_refused_as_the_cli_reads_it() {
    let mut w = Reader::default();
    let id = "nodeport-loadbalancer";
    let own = kubehops_core::scenarios::starting_text(id, &Params::default());
    let moved = own.replace("nodePort: 31000", "nodePort: 31234");
    assert_ne!(own, moved, "the scenario's Service has the node port to change:\n{own}");
    for (text, accepted) in [(moved, true), (own.replace("nodePort: 31000", "nodePort: 29000"), false)] {
        let params = Params::default().with("manifest", Value::Manifest(text));
        let Answer::Built(e) = w.answer(Request { seq: 4, job: Job::Build { id: id.into(), params: params.clone() } }).answer else { panic!("not an edit answer") };
        let b = kubehops_objects::edit::build(id, &params).unwrap();
        assert_eq!((e.id.as_str(), &e.params), (id, &params));
        assert_eq!(e.refusal, b.refusal);
        assert_eq!(e.scenario, b.scenario.map(|s| s.without_snapshots()));
        assert_eq!(e.refusal.is_none(), accepted, "{:?}", e.refusal);
    }
    let Answer::Built(e) = w.answer(Request { seq: 5, job: Job::Build { id: "no-such".into(), params: Params::default() } }).answer else { panic!() };
    assert_eq!((e.scenario, e.refusal), (None, None));
}
