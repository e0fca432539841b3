//! Scenarios: stories told by running the model.
//!
//! A scenario declares its parameters ([`ParamSpec`]: a tab, a demo, a
//! toggle, which Pods are Ready, a seed), and builds, for any values of
//! them, a [`Scenario`]: the actors to draw and a list of steps. Each step
//! is one action on a [`World`] (apply a manifest, look up a name, open a
//! connection), with the hops the model recorded, the view after each hop,
//! the manifest as applied, and narration written from what the model
//! computed. Nothing in a step's hops is written by hand.
//!
//! [`REGISTRY`] lists every scenario; the worker, the CLI, the link parser
//! and the tests read it, so a new scenario is one more file here and one
//! more entry there (and in [`CATALOG`], what the page reads of it).
//!
//! Architecture Invariant: `build` is a pure function of the parameters.
//! The same parameters give the same scenario, hop for hop.

pub mod local_lab;
pub mod nodeport_loadbalancer;
pub mod edited;
pub mod params;
pub mod service_types;
mod text;
pub mod words;
pub mod your_cluster;

pub use params::{combinations, Choice, ChoiceStyle, ParamKind, ParamSpec, Params, Value};
pub use text::render_text;

use crate::api::{Service, ServicePort};
use crate::net::Protocol;
use crate::sim::{Actor, ActorId, DataplaneSnapshot, Hop, View, World};
use serde::{Deserialize, Serialize};

/// What the app shows of a scenario before, and without, building it: its
/// name, its parameters, and the Service its manifest editor starts from.
/// [`CATALOG`] lists them. The browser's page reads only this: it never
/// builds a scenario itself (its worker does, `crate::worker`), so none of
/// the builders, nor the model they run, is in the page's wasm.
#[derive(Clone, Copy)]
pub struct About {
    pub id: &'static str,
    pub title: &'static str,
    /// A one-line description, for navigation.
    pub blurb: &'static str,
    pub params: fn() -> Vec<ParamSpec>,
    /// Whether the user may type a Service in place of the scenario's own,
    /// and what the editor shows for it.
    pub editor: Option<Editor>,
}

/// The manifest editor's side of a scenario that takes a typed Service.
#[derive(Clone, Copy)]
pub struct Editor {
    /// The file the manifest panel names for it (`api.yaml`).
    pub file: fn(&Params) -> &'static str,
    /// The scenario's own Service, which the editor starts from.
    pub service: fn(&Params) -> Service,
}

/// One entry of the registry: a scenario as the app knows it
/// ([`About`], which it derefs to), and what builds it.
#[derive(Clone, Copy)]
pub struct Entry {
    pub about: About,
    pub build: fn(&Params) -> Scenario,
    /// How it plays a Service the user typed instead of its own (present
    /// exactly when `about.editor` is).
    pub edit: Option<Edit>,
}

impl std::ops::Deref for Entry {
    type Target = About;
    fn deref(&self) -> &About {
        &self.about
    }
}

/// How a scenario takes a Service the user wrote in place of its own.
/// The text is read outside the core (`kubehops-objects`); the core only
/// says what the Service is checked against and how it is played.
#[derive(Clone, Copy)]
pub struct Edit {
    /// The cluster as it is just before the Service is applied: what a
    /// dry run of `kubectl apply` is checked against.
    pub cluster: fn(&Params) -> World,
    /// The scenario with that Service (already admitted by a dry run) in
    /// place of its own.
    pub build: fn(&Params, Service) -> Scenario,
}

/// Every scenario the core can build, in the order the app lists them.
pub const REGISTRY: &[Entry] = &[nodeport_loadbalancer::ENTRY, service_types::ENTRY, local_lab::ENTRY, your_cluster::ENTRY];

/// What the app shows of each scenario of [`REGISTRY`], in its order,
/// without the builders (see [`About`]).
pub const CATALOG: &[About] = &[nodeport_loadbalancer::ENTRY.about, service_types::ENTRY.about, local_lab::ENTRY.about, your_cluster::ENTRY.about];

pub fn entry(id: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.id == id)
}

/// A scenario's [`About`], without reaching its builder.
pub fn about(id: &str) -> Option<&'static About> {
    CATALOG.iter().find(|e| e.id == id)
}

/// Builds a scenario with these parameters; values a scenario does not
/// know, or that are out of range, are replaced by its defaults first.
pub fn build(id: &str, params: &Params) -> Option<Scenario> {
    let e = entry(id)?;
    let p = params.normalized(&(e.params)());
    Some((e.build)(&p))
}

/// Builds a scenario with its default parameters.
pub fn build_default(id: &str) -> Option<Scenario> {
    let e = entry(id)?;
    Some((e.build)(&Params::defaults(&(e.params)())))
}

/// The manifest of a step: file name, lines, and which lines changed.
/// A file may hold several objects separated by `---` (an IPAddressPool
/// and its L2Advertisement). For a file the step does not apply but
/// points at (`kind-config.yaml`), `changed` marks the lines that matter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The file a user would apply (`web.yaml`).
    pub file: String,
    pub lines: Vec<String>,
    /// Indexes into `lines` of the lines this step changed.
    pub changed: Vec<usize>,
}

/// One command a user would run against the real cluster to see what a
/// step did, with what the model predicts it prints at the end of the
/// step, in the tool's own format.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The command line, as it would be typed (and copied).
    pub command: String,
    /// What it is for, in a few words.
    pub purpose: String,
    pub stdout: String,
    /// What the tool writes on stderr (kubectl's notices and warnings).
    pub stderr: String,
    /// kubectl's table as cells, when the output is one, so a panel can
    /// pick a cell (EXTERNAL-IP) without reading the text.
    pub table: Option<crate::sim::KubectlTable>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub title: String,
    pub narration: String,
    pub manifest: Manifest,
    pub hops: Vec<Hop>,
    /// `views[0]` is the state before the first hop; `views[i + 1]` after hop `i`.
    pub views: Vec<View>,
    /// Commands to check the step against a real cluster, with their
    /// predicted output; empty where a scenario offers none.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// The data plane the step's connections ran on (every node's and
    /// host's tables, every Pod), taken at the end of the step; `None`
    /// when no hop of the step carries a packet. Never serialized: the
    /// harness and the tests read it where the scenario was built, and
    /// the worker sends scenarios without it, so the page's wasm carries
    /// no decoder for every node's tables.
    #[serde(skip)]
    pub snapshot: Option<DataplaneSnapshot>,
}

/// The snapshot a step with these hops keeps: the world's data plane,
/// if any hop carries a packet.
pub(crate) fn snapshot_for(w: &World, hops: &[Hop]) -> Option<DataplaneSnapshot> {
    hops.iter().any(|h| h.packet.is_some()).then(|| w.dataplane_snapshot())
}

/// A preset of parameters, one click away, with its own narration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Demo {
    /// The value of the `demo` parameter that selects it.
    pub id: String,
    pub label: String,
    /// The parameters it sets.
    pub sets: Vec<(String, String)>,
    /// The step it opens (0-based).
    pub step: usize,
    pub narration: String,
}

/// A table of text cells, first row the header, with the row an entry
/// links to (a tab value) where it has one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<(Option<String>, Vec<String>)>,
    pub note: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub id: String,
    pub title: String,
    /// The parameters it was built with, normalized.
    pub params: Params,
    pub actors: Vec<Actor>,
    pub steps: Vec<Step>,
    pub demos: Vec<Demo>,
    pub comparison: Option<Comparison>,
    /// What a what-if hop stands for in this scenario ("ipMode VIP").
    pub what_if: Option<String>,
    /// Steps offered as actions ("DNS Lookup", "Send Request"); the web app
    /// reaches them through its step indicator, where they are steps.
    pub actions: Vec<Action>,
}

/// A step offered as a button of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Action {
    pub label: String,
    /// The step it opens (0-based).
    pub step: usize,
}

impl Scenario {
    /// A scenario as its recorder left it: the world's actors and the
    /// steps, with nothing offered beside them (no demos, comparison,
    /// what-if or actions; a scenario that has them sets them over this).
    pub(crate) fn recorded(id: &str, title: &str, params: &Params, w: &World, mut steps: Vec<Step>) -> Scenario {
        for st in &mut steps {
            if let Some(more) = packet_by_packet(st) {
                st.narration = if st.narration.is_empty() { more } else { format!("{} {more}", st.narration) };
            }
        }
        Scenario {
            id: id.into(),
            title: title.into(),
            params: params.clone(),
            actors: w.actors.as_slice().to_vec(),
            steps,
            demos: vec![],
            comparison: None,
            what_if: None,
            actions: vec![],
        }
    }

    pub fn actor(&self, id: ActorId) -> Option<&Actor> {
        self.actors.get(id.index()).filter(|a| a.id == id)
    }

    /// The node actors, in node order.
    pub fn nodes(&self) -> impl Iterator<Item = &Actor> {
        self.actors.iter().filter(|a| a.kind == crate::sim::ActorKind::Node)
    }

    /// The demo the parameters select, if any.
    pub fn demo(&self) -> Option<&Demo> {
        let id = self.params.choice("demo")?;
        self.demos.iter().find(|d| d.id == id)
    }

    /// The scenario without its steps' data-plane snapshots, which only
    /// the kernel harness reads: for a 50-node cluster they are 4.9 of the
    /// 5.5 MB the scenario takes as JSON, and the page draws none of them.
    pub fn without_snapshots(mut self) -> Scenario {
        for st in &mut self.steps {
            st.snapshot = None;
        }
        self
    }
}

/// What a step that follows a TCP connection packet by packet adds to
/// its narration: who decides which packet, and, once the last ACK has
/// passed, how long the entries wait in TIME_WAIT (read from the entries).
fn packet_by_packet(st: &Step) -> Option<String> {
    use crate::dataplane::tcp::TcpState;
    let segments: Vec<_> = st.hops.iter().filter(|h| !h.what_if).filter_map(|h| h.packet.as_ref()?.segment).collect();
    if segments.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    if segments.iter().any(|s| s.flags.syn && !s.flags.ack) {
        out.push("Packet by packet: the SYN walks the rules; the SYN-ACK, the ACK and every packet after them follow the conntrack entries the SYN made, and no rule is walked again.".to_string());
    }
    let closed = st.views.last().into_iter().flat_map(|v| v.nodes.iter().flat_map(|n| n.conntrack.iter()).chain(v.hosts.iter().flat_map(|h| h.conntrack.iter())));
    let waiting: Vec<u64> = closed.filter(|l| l.tcp == Some(TcpState::TimeWait)).filter_map(|l| l.text.split_whitespace().nth(2)?.parse().ok()).collect();
    if let Some(secs) = waiting.iter().max() {
        out.push(format!("After the last ACK, each entry waits in TIME_WAIT ({secs} s left) so that a late packet still finds its connection."));
    }
    (!out.is_empty()).then(|| out.join(" "))
}

/// Records steps: runs an action on a world and keeps what it recorded.
pub(crate) struct Recorder {
    manifest: Manifest,
    pub steps: Vec<Step>,
}

impl Recorder {
    pub fn new(file: &str, svc: &Service) -> Recorder {
        Recorder { manifest: Manifest { file: file.into(), lines: manifest_yaml(svc), changed: vec![] }, steps: Vec::new() }
    }

    /// Runs `act` on `w` as one step. `applied` is the manifest the step
    /// applies, if any (its changed lines are marked against the last one).
    /// Returns the new step, so narration can be written from its hops.
    pub fn step(&mut self, w: &mut World, title: &str, applied: Option<(&str, &Service)>, act: impl FnOnce(&mut World)) -> &mut Step {
        let mut start = w.view();
        act(w);
        let (hops, mut views): (Vec<Hop>, Vec<View>) = w.take_trace_after(&mut start).into_iter().unzip();
        views.insert(0, start);
        if let Some((file, svc)) = applied {
            let lines = manifest_yaml(svc);
            let changed = if file == self.manifest.file { changed_lines(&self.manifest.lines, &lines) } else { (0..lines.len()).collect() };
            self.manifest = Manifest { file: file.into(), lines, changed };
        } else {
            self.manifest.changed.clear();
        }
        let snapshot = snapshot_for(w, &hops);
        self.steps.push(Step { title: title.into(), narration: String::new(), manifest: self.manifest.clone(), hops, views, evidence: Vec::new(), snapshot });
        self.steps.last_mut().expect("just pushed")
    }

    /// Shows another file from the last step on (one that is not a
    /// Service, or one the step only points at).
    pub fn set_manifest(&mut self, m: Manifest) {
        if let Some(st) = self.steps.last_mut() {
            st.manifest = m.clone();
        }
        self.manifest = Manifest { changed: Vec::new(), ..m };
    }
}

/// The text the manifest editor starts from: the typed one, or the
/// scenario's own Service as a user would write it (empty for a scenario
/// with nothing to edit).
pub fn starting_text(id: &str, p: &Params) -> String {
    if let Some(t) = p.manifest() {
        return t.to_string();
    }
    let Some(e) = about(id) else { return String::new() };
    let Some(editor) = e.editor else { return String::new() };
    let p = p.normalized(&(e.params)());
    manifest_yaml(&(editor.service)(&p)).iter().map(|l| format!("{l}\n")).collect()
}

/// The manifest a user would write for this Service (no server-set fields).
pub fn manifest_yaml(svc: &Service) -> Vec<String> {
    let mut y = vec!["apiVersion: v1".to_string(), "kind: Service".into(), "metadata:".into(), format!("  name: {}", svc.name)];
    if svc.namespace != "default" {
        y.push(format!("  namespace: {}", svc.namespace));
    }
    if !svc.annotations.is_empty() {
        y.push("  annotations:".into());
        for (k, v) in &svc.annotations {
            y.push(format!("    {k}: \"{v}\""));
        }
    }
    y.push("spec:".into());
    y.push(format!("  type: {}", svc.spec.type_.as_str()));
    if svc.spec.headless {
        y.push("  clusterIP: None".into());
    }
    if let Some(n) = &svc.spec.external_name {
        y.push(format!("  externalName: {n}"));
    }
    if let Some(ip) = svc.spec.load_balancer_ip {
        y.push(format!("  loadBalancerIP: {ip}"));
    }
    if svc.spec.external_traffic_policy == crate::api::TrafficPolicy::Local {
        y.push("  externalTrafficPolicy: Local".into());
    }
    if svc.spec.internal_traffic_policy == crate::api::TrafficPolicy::Local {
        y.push("  internalTrafficPolicy: Local".into());
    }
    if let crate::api::SessionAffinity::ClientIP { timeout_seconds } = svc.spec.session_affinity {
        y.push("  sessionAffinity: ClientIP".into());
        if timeout_seconds != 10800 {
            y.extend(["  sessionAffinityConfig:".to_string(), "    clientIP:".into(), format!("      timeoutSeconds: {timeout_seconds}")]);
        }
    }
    if svc.spec.allocate_load_balancer_node_ports == Some(false) {
        y.push("  allocateLoadBalancerNodePorts: false".into());
    }
    let list = |y: &mut Vec<String>, key: &str, items: Vec<String>| {
        if !items.is_empty() {
            y.push(format!("  {key}:"));
            y.extend(items.into_iter().map(|i| format!("  - {i}")));
        }
    };
    list(&mut y, "externalIPs", svc.spec.external_ips.iter().map(|a| a.to_string()).collect());
    list(&mut y, "loadBalancerSourceRanges", svc.spec.load_balancer_source_ranges.iter().map(|c| c.to_string()).collect());
    if !svc.spec.selector.is_empty() {
        y.push("  selector:".into());
        for (k, v) in &svc.spec.selector {
            y.push(format!("    {k}: {v}"));
        }
    }
    if !svc.spec.ports.is_empty() {
        y.push("  ports:".into());
    }
    for p in &svc.spec.ports {
        port_yaml(p, &mut y);
    }
    y
}

fn port_yaml(p: &ServicePort, y: &mut Vec<String>) {
    let mut first = true;
    let mut item = |line: String| {
        y.push(format!("  {} {line}", if first { "-" } else { " " }));
        first = false;
    };
    if let Some(n) = &p.name {
        item(format!("name: {n}"));
    }
    if p.protocol != Protocol::Tcp {
        item(format!("protocol: {}", p.protocol));
    }
    item(format!("port: {}", p.port));
    item(format!("targetPort: {}", p.target_port));
    if let Some(np) = p.node_port {
        item(format!("nodePort: {np}"));
    }
}

/// Lines of `new` that are not part of a longest common subsequence with `old`.
pub fn changed_lines(old: &[String], new: &[String]) -> Vec<usize> {
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while j < m {
        if i < n && old[i] == new[j] {
            i += 1;
            j += 1;
        } else if i < n && lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            out.push(j);
            j += 1;
        }
    }
    out
}

/// `a`, `a and b`, `a, b, and c`.
pub(crate) fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

/// The draws for random rule matches: fixed ones that make a story
/// repeat, or a generator seeded from the link.
pub(crate) fn dice_for(seed: Option<u64>, fixed: Vec<f64>, salt: u64) -> Box<dyn crate::dataplane::netfilter::Dice> {
    use crate::dataplane::netfilter::{FixedDraws, SeededDice};
    match seed {
        None => Box::new(FixedDraws::new(fixed)),
        Some(seed) => Box::new(SeededDice(seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_marks_only_new_lines() {
        let a: Vec<String> = ["a", "type: ClusterIP", "c"].iter().map(|s| s.to_string()).collect();
        let b: Vec<String> = ["a", "type: NodePort", "c", "nodePort: 1"].iter().map(|s| s.to_string()).collect();
        assert_eq!(changed_lines(&a, &b), [1, 3]);
        assert_eq!(changed_lines(&b, &b), Vec::<usize>::new());
    }

    #[test]
    fn the_registry_has_unique_ids_and_every_entry_builds_by_default() {
        let mut ids: Vec<&str> = REGISTRY.iter().map(|e| e.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), REGISTRY.len());
        for e in REGISTRY {
            let s = build_default(e.id).expect("builds");
            assert_eq!(s.id, e.id);
            assert!(!s.steps.is_empty(), "{}", e.id);
        }
        assert!(build("no-such-scenario", &Params::default()).is_none());
    }

    #[test]
    fn the_catalog_is_the_registry_without_its_builders() {
        assert_eq!(CATALOG.len(), REGISTRY.len());
        for (a, e) in CATALOG.iter().zip(REGISTRY) {
            assert_eq!((a.id, a.title, a.blurb), (e.id, e.title, e.blurb));
            assert_eq!((a.params)(), (e.params)(), "{}", e.id);
            // The editor is offered exactly where a typed Service can be built.
            assert_eq!(a.editor.is_some(), e.edit.is_some(), "{}", e.id);
            assert_eq!(about(e.id).map(|x| x.id), Some(e.id));
        }
        assert!(about("no-such-scenario").is_none());
    }
}
