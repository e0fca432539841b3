//! How long "Your cluster" takes natively for a big pasted cluster: the
//! YAML read (`cluster::read`), the scenario's build and its layout, for
//! 50 nodes, 2,000 Pods and 500 Services (the generated
//! `cluster::example_yaml`), and the same as JSON. Prints figures; asserts
//! nothing about time. `scripts/test` stage 2 runs it.

use kubehops_core::scenarios::your_cluster;
use kubehops_core::scenarios::{Params, Value};
use kubehops_core::scene::Layout;
use kubehops_objects::cluster;
use std::time::Instant;

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64() * 1000.0);
        last = Some(v);
    }
    (best, last.expect("one run"))
}

fn main() {
    let (nodes, pods, services) = (50, 2000, 500);
    let yaml = cluster::example_yaml(nodes, pods, services);
    let (read_ms, read) = best(3, || cluster::read(&[("big.yaml", &yaml)]).expect("reads"));
    let input = read.input;
    let json = {
        // The same objects as one JSON List, as `kubectl get -o json` prints them.
        let docs = kubehops_objects::input::documents(&kubehops_objects::input::Source { name: "big.yaml".into(), text: yaml.clone() }).expect("documents");
        serde_json::to_string(&docs[0].value).expect("json")
    };
    let (json_ms, _) = best(3, || cluster::read(&[("big.json", &json)]).expect("reads"));
    let src = kubehops_objects::input::Source { name: "big.json".into(), text: json.clone() };
    let (docs_ms, docs) = best(3, || kubehops_objects::input::documents_keeping(&src, &kubehops_objects::objects::reads).expect("documents"));
    let (load_ms, _) = best(3, || kubehops_objects::objects::load(&docs, Default::default()).expect("loads"));
    println!("bench: your cluster: JSON into documents {docs_ms:.1} ms, documents into objects {load_ms:.1} ms");
    let mut p = Params::default();
    p.insert("service", Value::Choice("ns3/app13".into()));
    p.insert("client", Value::Choice("pod:ns7/app7-7c9d8f5b6-p00007".into()));
    let (build_ms, s) = best(3, || your_cluster::build(&input, &p));
    let (layout_ms, l) = best(3, || Layout::for_scenario(&s));
    let hops: usize = s.steps.iter().map(|st| st.hops.len()).sum();
    println!(
        "bench: your cluster {nodes} nodes, {pods} Pods, {services} Services: read YAML {:.2} MB {read_ms:7.1} ms ({:5.1} MB/s), JSON {:.2} MB {json_ms:6.1} ms",
        yaml.len() as f64 / 1e6,
        yaml.len() as f64 / 1e6 / (read_ms / 1000.0),
        json.len() as f64 / 1e6
    );
    println!(
        "bench: your cluster: build {build_ms:7.1} ms ({hops} hops, {} actors), layout {layout_ms:6.2} ms ({} node cards, {} groups); read+build+layout {:7.1} ms",
        s.actors.len(),
        l.nodes.len(),
        l.groups.len(),
        read_ms + build_ms + layout_ms
    );
}

#[allow(dead_code)]
fn split() {}
