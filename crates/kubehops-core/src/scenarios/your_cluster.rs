//! "Your cluster": the user's own objects (what `kubectl get
//! nodes,pods,services,endpointslices -A -o yaml` prints), a Service of
//! theirs, a client of theirs, and what a DNS lookup and a request do.
//!
//! The objects arrive read and checked ([`ClusterInput`], filled by
//! `kubehops-objects`, the CLI's reader). Nothing is invented beyond what
//! the story needs, and each invention is said: a Pod for an endpoint
//! whose Pod was not given (named after its `targetRef`), a node for a
//! Pod or endpoint whose Node was not given (an address from
//! 100.64.0.0/10), one outside client at 198.51.100.23. EndpointSlices
//! are used as stored, never recomputed from Pods; Services as stored,
//! with their cluster IPs and node ports; nobody fills
//! `status.loadBalancer`, so a balancer's address is the one given.
//!
//! kube-proxy syncs lazily ([`World::new_lazy`]): only the nodes the story
//! shows or a packet reaches get their rule set, so 50 nodes and 500
//! Services build in well under a second.

use super::{About, dice_for, list, Action, Choice, ChoiceStyle, Entry, ParamSpec, Params, Recorder, Scenario, Step};
use crate::api::server::{ApiServer, ApiServerConfig};
use crate::api::{EndpointSlice, Node, Pod, Service, ServiceType};
use crate::controllers::LbController;
use crate::dataplane::kubeproxy::{KubeProxyConfig, NodeFeatures, ProxyMode};
use crate::dataplane::overlay::PodNetwork;
use crate::dns::{QType, RData, Rcode, Response};
use crate::net::{ip, Cidr, Protocol, SockAddr};
use crate::sim::{Actor, ActorId, ActorKind, Dial, Internet, Outcome, Payload, RewriteKind, World, Zone};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// The scenario's id, for the page, which reads no [`Entry`].
pub const ID: &str = "your-cluster";

pub const ENTRY: Entry = Entry {
    about: About {
        id: ID,
        title: "Your cluster",
        blurb: "Paste kubectl get nodes,pods,services,endpointslices -A -o yaml and watch a request go through your own kube-proxy rules",
        params: empty_params,
        // Their Services are theirs: the manifest editor works on the
        // scenarios' own clusters.
        editor: None,
    },
    build: build_empty,
    edit: None,
};

/// The address of the outside client.
pub const OUTSIDE: Ipv4Addr = ip(198, 51, 100, 23);
/// Where nodes that no Node object describes get addresses from.
const MADE_UP_NODES: Ipv4Addr = ip(100, 64, 0, 0);

/// A cluster's objects as read from the user's files, checked by the
/// same reader as the CLI's: Services admitted (cluster IPs and node
/// ports filled in), EndpointSlices as stored, lists sorted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterInput {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub services: Vec<Service>,
    pub slices: Vec<EndpointSlice>,
    /// A KubeProxyConfiguration, if one was given.
    pub proxy: Option<KubeProxyConfig>,
}

impl ClusterInput {
    fn service(&self, value: &str) -> Option<&Service> {
        self.services.iter().find(|s| service_value(s) == value)
    }

    /// The slices of a Service, as stored.
    fn slices_of<'a>(&'a self, s: &'a Service) -> impl Iterator<Item = &'a EndpointSlice> + 'a {
        self.slices.iter().filter(move |sl| sl.namespace == s.namespace && sl.service_name == s.name)
    }
}

fn service_value(s: &Service) -> String {
    format!("{}/{}", s.namespace, s.name)
}

/// The parameters before anything is pasted: the Service and the client
/// are menus whose options come from the cluster, so a link's values are
/// kept as they are until a cluster gives them meaning.
fn empty_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::choice("service", "Service", ChoiceStyle::Menu, vec![]),
        ParamSpec::choice("client", "Client", ChoiceStyle::Menu, vec![]),
        ParamSpec::proxy_mode(ProxyMode::Iptables),
        ParamSpec::pod_network(PodNetwork::Routed),
        ParamSpec::handshake(),
        ParamSpec::seed(),
    ]
}

/// The parameters for a cluster: its Services, and as clients each of its
/// Pods, each node, and an outside address.
pub fn params(input: &ClusterInput) -> Vec<ParamSpec> {
    let mut services: Vec<&Service> = input.services.iter().collect();
    // The default: a Service with a cluster IP and a ready endpoint, not
    // the cluster's own (default/kubernetes, kube-system).
    services.sort_by_key(|s| !(is_interesting(input, s)));
    let svc_options = services.iter().map(|s| Choice::new(&service_value(s), &format!("{}/{} ({})", s.namespace, s.name, type_label(s)))).collect();
    let mut clients: Vec<Choice> = input
        .pods
        .iter()
        .filter(|p| p.namespace != "kube-system")
        .chain(input.pods.iter().filter(|p| p.namespace == "kube-system"))
        .map(|p| Choice::new(&format!("pod:{}/{}", p.namespace, p.name), &format!("Pod {}/{}", p.namespace, p.name)))
        .collect();
    clients.extend(input.nodes.iter().map(|n| Choice::new(&format!("node:{}", n.name), &format!("Node {}", n.name))));
    clients.push(Choice::new("outside", &format!("Outside ({OUTSIDE})")));
    // The mode the cluster's KubeProxyConfiguration sets, unless the link says otherwise.
    let mode = input.proxy.as_ref().map_or(ProxyMode::Iptables, |p| p.mode);
    vec![ParamSpec::choice("service", "Service", ChoiceStyle::Menu, svc_options), ParamSpec::choice("client", "Client", ChoiceStyle::Menu, clients), ParamSpec::proxy_mode(mode), ParamSpec::pod_network(PodNetwork::Routed), ParamSpec::handshake(), ParamSpec::seed()]
}

fn type_label(s: &Service) -> &'static str {
    if s.spec.headless {
        "Headless"
    } else {
        s.spec.type_.as_str()
    }
}

fn is_interesting(input: &ClusterInput, s: &Service) -> bool {
    let own = s.namespace == "kube-system" || (s.namespace == "default" && s.name == "kubernetes");
    let ready = input.slices_of(s).any(|sl| sl.endpoints.iter().any(|e| e.ready));
    !own && ready && s.spec.cluster_ip.is_some()
}

/// The scenario before anything is pasted: three empty steps that say so.
fn build_empty(p: &Params) -> Scenario {
    let say = "Paste your cluster's objects above (or drop a file): the output of kubectl get nodes,pods,services,endpointslices -A -o yaml, in YAML or JSON. Nothing leaves your browser: the objects are read and played here.";
    let step = |title: &str| Step { title: title.into(), narration: say.into(), manifest: Default::default(), hops: vec![], views: vec![Default::default()], evidence: vec![], snapshot: None };
    Scenario {
        id: ENTRY.id.into(),
        title: ENTRY.title.into(),
        params: p.clone(),
        actors: vec![],
        steps: vec![step("Your cluster"), step("DNS Lookup"), step("Send Request")],
        demos: vec![],
        comparison: None,
        what_if: None,
        actions: actions(),
    }
}

fn actions() -> Vec<Action> {
    vec![Action { label: "DNS Lookup".into(), step: 1 }, Action { label: "Send Request".into(), step: 2 }]
}

/// The smallest prefix holding every cluster IP (the Service range the
/// API server must have had), or kubeadm's default when it holds them.
fn service_range(services: &[Service]) -> Cidr {
    let default = ApiServerConfig::default().service_cidr;
    let ips: Vec<Ipv4Addr> = services.iter().filter_map(|s| s.spec.cluster_ip).collect();
    if ips.iter().all(|i| default.contains(*i)) {
        return default;
    }
    let first = u32::from(ips[0]);
    let mut len = 32u8;
    while len > 0 && !ips.iter().all(|i| (u32::from(*i) ^ first) >> (32 - len as u32) == 0) {
        len -= 1;
    }
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
    // At least a /28, so the network and first address are not a Service's.
    let len = len.min(28);
    let mask = mask & if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
    Cidr::new(Ipv4Addr::from(first & mask), len)
}

/// What the build made up, to be said in the narration.
#[derive(Default)]
struct MadeUp {
    pods: usize,
    nodes: Vec<String>,
}

/// The world of a pasted cluster: their nodes, Pods (and one for each
/// endpoint without one), Services and EndpointSlices as stored.
fn world(input: &ClusterInput, svc: Option<&Service>) -> (World, MadeUp) {
    let config = ApiServerConfig { service_cidr: service_range(&input.services), ..Default::default() };
    let mut api = ApiServer::new(config);
    let mut made = MadeUp::default();
    let mut pods = input.pods.clone();
    let mut by_ip: BTreeSet<Ipv4Addr> = pods.iter().map(|p| p.ip).collect();
    for sl in &input.slices {
        let kube_dns = sl.namespace == "kube-system" && sl.service_name == "kube-dns";
        for e in &sl.endpoints {
            if !by_ip.insert(e.ip) {
                continue;
            }
            let name = e.target_ref.strip_prefix("Pod/").filter(|n| !n.is_empty()).map_or_else(|| format!("endpoint-{}", e.ip.to_string().replace('.', "-")), str::to_string);
            let mut labels = BTreeMap::new();
            if kube_dns {
                labels.insert("k8s-app".to_string(), "kube-dns".to_string());
            }
            let port = sl.ports.first().map_or(80, |p| p.port);
            pods.push(Pod { name, namespace: sl.namespace.clone(), labels, node_name: e.node_name.clone(), ip: e.ip, container_port: port, port_name: sl.ports.first().and_then(|p| p.name.clone()), ready: e.ready });
            made.pods += 1;
        }
    }
    // The Pods of the Service's endpoints serve on its first port's target.
    if let Some(s) = svc {
        let first = s.spec.ports.first();
        for sl in input.slices_of(s) {
            let port = first.and_then(|sp| sl.ports.iter().find(|p| p.name == sp.name && p.protocol == sp.protocol)).or(sl.ports.first());
            if let Some(port) = port {
                for e in &sl.endpoints {
                    if let Some(p) = pods.iter_mut().find(|p| p.ip == e.ip) {
                        p.container_port = port.port;
                    }
                }
            }
        }
    }
    let mut nodes = input.nodes.clone();
    let mut next = u32::from(MADE_UP_NODES) + 1;
    for p in &mut pods {
        if p.node_name.is_empty() {
            p.node_name = "unknown-node".into();
        }
        if !nodes.iter().any(|n| n.name == p.node_name) {
            nodes.push(Node { name: p.node_name.clone(), internal_ip: Ipv4Addr::from(next), pod_cidr: None });
            made.nodes.push(p.node_name.clone());
            next += 1;
        }
    }
    api.nodes = nodes;
    api.pods = pods;
    api.store_services(input.services.iter().cloned());
    api.stored_slices = Some(input.slices.clone());
    // kube-proxy as the CLI runs it: each node knows itself by its own name.
    let mut proxy = input.proxy.clone().unwrap_or_default();
    proxy.hostname_override = None;
    proxy.node_features = NodeFeatures::MODERN;
    let internet = Internet { reaches_nodes: true, names: vec![], sites: vec![] };
    let mut w = World::new_lazy(api, proxy, LbController::Nobody, internet, 0);
    w.cluster_dns = input.services.iter().find(|s| s.namespace == "kube-system" && s.name == "kube-dns").and_then(|s| s.spec.cluster_ip).map(|i| SockAddr::new(i, 53));
    w.add_actor(Actor::component(ActorKind::OutsideHost, Zone::Outside, "Outside client", "Outside client", &OUTSIDE.to_string()).at(OUTSIDE));
    (w, made)
}

/// The world a scenario with these parameters starts from, before any
/// node has synced (for tests: sync a node and compare its rules).
pub fn world_for(input: &ClusterInput, p: &Params) -> World {
    let p = p.normalized(&params(input));
    let svc = p.choice("service").and_then(|v| input.service(v));
    let mut w = world(input, svc).0;
    w.set_proxy_mode(p.proxy_mode());
    w.set_pod_network(p.pod_network());
    w.set_handshake(p.handshake());
    w
}

/// Who the client is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Client {
    Pod(ActorId),
    Node(ActorId),
    Outside(ActorId),
}

impl Client {
    fn id(self) -> ActorId {
        match self {
            Client::Pod(a) | Client::Node(a) | Client::Outside(a) => a,
        }
    }

    /// The client as the subject of a sentence: `Pod shop-1`, `Node-2`,
    /// `the outside client` (its label, "Outside client", names a box).
    fn subject(self, w: &World) -> String {
        match self {
            Client::Outside(_) => "the outside client".into(),
            Client::Pod(a) | Client::Node(a) => w.actors.short(a).to_string(),
        }
    }
}

fn client_of(w: &World, value: &str) -> Option<Client> {
    if value == "outside" {
        return w.actors.iter().find(|a| a.kind == ActorKind::OutsideHost).map(|a| Client::Outside(a.id));
    }
    if let Some(n) = value.strip_prefix("node:") {
        return w.actors.node(n).map(Client::Node);
    }
    let (ns, name) = value.strip_prefix("pod:")?.split_once('/')?;
    w.actors.iter().find(|a| a.kind.is_pod() && a.object.as_ref().is_some_and(|o| o.namespace == ns && o.name == name)).map(|a| Client::Pod(a.id))
}

/// Builds the scenario for a pasted cluster. Values the cluster does not
/// have (a link's Service that is not in it) fall back to the defaults.
///
/// Every node that gets a card of its own on the canvas has its rules
/// from the first view on (a card without them would say the node has
/// none). Which nodes get one is the layout's choice, made from the
/// story's hops ([`crate::scene::featured`]), so the story is told, the
/// layout asked, and if it gives a card to a node that did not sync
/// before the story began (a CoreDNS node, a node shown to fill the
/// column), the story is told again with that node synced. Syncing
/// changes no packet's path, only when a node's rules are computed.
/// Whatever is left unsynced says so (`NodeView::synced`).
pub fn build(input: &ClusterInput, p: &Params) -> Scenario {
    let mut also: Vec<usize> = Vec::new();
    for _ in 0..3 {
        let (s, synced) = tell(input, p, &also);
        let layout = crate::scene::Layout::for_scenario(&s);
        let missing: Vec<usize> = layout.nodes.iter().filter_map(|c| s.nodes().position(|n| n.id == c.node)).filter(|i| !synced.contains(i)).collect();
        if missing.is_empty() {
            return s;
        }
        also.extend(missing);
    }
    tell(input, p, &also).0
}

/// The story, with nodes `also` synced before it begins besides those
/// its facts name; and every node synced before it began.
fn tell(input: &ClusterInput, p: &Params, also: &[usize]) -> (Scenario, Vec<usize>) {
    let specs = params(input);
    let p = p.normalized(&specs);
    let svc = p.choice("service").and_then(|v| input.service(v)).cloned();
    let (mut w, made) = world(input, svc.as_ref());
    w.set_proxy_mode(p.proxy_mode());
    w.set_pod_network(p.pod_network());
    w.set_handshake(p.handshake());
    let client = p.choice("client").and_then(|v| client_of(&w, v)).or_else(|| w.actors.iter().find(|a| a.kind == ActorKind::OutsideHost).map(|a| Client::Outside(a.id)));
    if let Some(s) = &svc {
        w.focus = vec![s.object_ref()];
    }
    // The nodes the story shows sync now, so their rules are there from
    // the first view: the client's, and those of the Service's endpoints.
    let mut shown: Vec<usize> = Vec::new();
    if let Some(c) = client {
        let node = match c {
            Client::Pod(a) => w.actors.get(a).and_then(|x| x.parent),
            Client::Node(a) => Some(a),
            Client::Outside(_) => None,
        };
        shown.extend(node.and_then(|n| w.node_index(n)));
    }
    if let Some(s) = &svc {
        for sl in input.slices_of(s) {
            for e in &sl.endpoints {
                shown.extend(w.api.nodes.iter().position(|n| n.name == e.node_name));
            }
        }
    }
    if let Some(dialled) = svc.as_ref().and_then(|s| outside_target(&w, s)).and_then(|(n, _)| n) {
        shown.push(dialled);
    }
    shown.sort_unstable();
    shown.dedup();
    shown.truncate(MAX_SYNCED);
    shown.extend(also.iter().filter(|i| **i < w.api.nodes.len()));
    for &i in &shown {
        w.sync_node_rules(i);
    }

    let file = svc.as_ref().map_or_else(|| "service.yaml".to_string(), |s| format!("{}.yaml", s.name));
    let placeholder = Service { name: "none".into(), namespace: "default".into(), annotations: Default::default(), spec: Default::default(), status: Default::default(), created: None };
    let mut rec = Recorder::new(&file, svc.as_ref().unwrap_or(&placeholder));
    rec.step(&mut w, "Your cluster", None, |_| {});
    if svc.is_none() {
        rec.set_manifest(Default::default());
    }
    let overview = overview(input, &w, svc.as_ref(), &made);
    if let Some(st) = rec.steps.last_mut() {
        st.narration = overview;
    }

    let mut dice = dice_for(p.seed(), vec![0.5, 0.2], 11);
    // DNS Lookup.
    let name = svc.as_ref().map(|s| lookup_name(&w, client, s));
    let mut answer = None;
    let dns_possible = matches!(client, Some(Client::Pod(_))) && w.cluster_dns.is_some() && name.is_some();
    rec.step(&mut w, "DNS Lookup", None, |w| {
        if let (true, Some(c), Some(n)) = (dns_possible, client, &name) {
            answer = w.lookup(c.id(), n, QType::A, dice.as_mut());
        }
    });
    let text = narrate_lookup(&w, client, svc.as_ref(), name.as_deref(), answer.as_ref(), &rec.steps[1].hops);
    rec.steps[1].narration = text;

    // Send Request.
    let mut outcome = None;
    let mut plan = None;
    rec.step(&mut w, "Send Request", None, |w| {
        if let (Some(c), Some(s)) = (client, &svc) {
            plan = request_plan(w, c, s);
            if let Some(pl) = &plan {
                outcome = Some(w.dial(dial_for(c.id(), pl, s), dice.as_mut()));
            }
        }
    });
    let text = narrate_request(&w, client, svc.as_ref(), plan.as_ref(), outcome.as_ref(), &rec.steps[2].hops);
    rec.steps[2].narration = text;

    (Scenario { actions: actions(), ..Scenario::recorded(ENTRY.id, ENTRY.title, &p, &w, rec.steps) }, shown)
}

/// How many nodes the story's facts sync before it starts (the nodes
/// with a card are synced besides, and any other when a packet reaches it).
const MAX_SYNCED: usize = 12;

/// The name a client looks up: the Service's short name from its own
/// namespace, `name.namespace` from another.
fn lookup_name(w: &World, client: Option<Client>, s: &Service) -> String {
    let ns = client.and_then(|c| w.actors.get(c.id())).and_then(|a| a.object.as_ref()).map(|o| o.namespace.clone());
    if ns.as_deref() == Some(s.namespace.as_str()) {
        s.name.clone()
    } else {
        format!("{}.{}", s.name, s.namespace)
    }
}

/// Where a request to the Service goes, and why there.
#[derive(Clone, Debug)]
struct Plan {
    dst: SockAddr,
    proto: Protocol,
    why: String,
}

/// The node an outside client dials for a Service with node ports (the
/// first node with a ready endpoint, else the first node), and the port.
fn outside_target(w: &World, s: &Service) -> Option<(Option<usize>, u16)> {
    let np = s.spec.ports.first()?.node_port?;
    let slices = w.api.endpoint_slices();
    let ready_node = slices.iter().filter(|sl| sl.namespace == s.namespace && sl.service_name == s.name).flat_map(|sl| sl.endpoints.iter()).find(|e| e.ready).map(|e| e.node_name.clone());
    let i = ready_node.and_then(|n| w.api.nodes.iter().position(|x| x.name == n)).or((!w.api.nodes.is_empty()).then_some(0));
    Some((i, np))
}

/// Where the client sends its request, and why there, told with the
/// client as the one who dials.
fn request_plan(w: &World, c: Client, s: &Service) -> Option<Plan> {
    let who = c.subject(w);
    let port = s.spec.ports.first()?;
    let proto = port.protocol;
    if s.spec.type_ == ServiceType::ExternalName {
        return None;
    }
    if s.spec.headless {
        let slices = w.api.endpoint_slices();
        let e = slices.iter().filter(|sl| sl.namespace == s.namespace && sl.service_name == s.name).flat_map(|sl| sl.ready_addrs(port.name.as_deref())).next()?;
        return Some(Plan { dst: e.0, proto, why: format!("Service {} is headless: no cluster IP and no rule, so {who} connects straight to a Ready endpoint, {}.", s.name, e.0) });
    }
    let ip = s.spec.cluster_ip?;
    match c {
        Client::Outside(_) => {
            if let Some((Some(n), np)) = outside_target(w, s) {
                let node = &w.api.nodes[n];
                let name = w.node_actor(n).map_or_else(|| node.name.clone(), |a| w.actors.short(a).to_string());
                let lb = s.status.load_balancer_ingress.iter().find_map(|i| i.ip);
                let why = match lb {
                    Some(lb) => format!("Your cloud's balancer at {lb} sends to a node's port {np}; KubeHops does not model your cloud, so {who} dials {name} at {}:{np} as the balancer would.", node.internal_ip),
                    None => format!("From outside, a {} Service is reached on any node's port {np}: {who} dials {name} at {}:{np}.", s.spec.type_.as_str(), node.internal_ip),
                };
                return Some(Plan { dst: SockAddr::new(node.internal_ip, np), proto, why });
            }
            Some(Plan { dst: SockAddr::new(ip, port.port), proto, why: format!("Service {} has no node port, so all {who} can dial is its cluster IP, {ip}:{}.", s.name, port.port) })
        }
        Client::Pod(_) | Client::Node(_) => Some(Plan { dst: SockAddr::new(ip, port.port), proto, why: format!("{who} dials the Service's cluster IP, {ip}:{}.", port.port) }),
    }
}

fn dial_for(from: ActorId, pl: &Plan, s: &Service) -> Dial {
    let d = if pl.proto == Protocol::Tcp { Dial::http(from, pl.dst, &s.name) } else { Dial::tcp(from, pl.dst) };
    Dial { proto: pl.proto, ..d }
}

/// Step 1's account: what was read, what was made up, and the Service.
fn overview(input: &ClusterInput, w: &World, svc: Option<&Service>, made: &MadeUp) -> String {
    let mut parts = vec![format!(
        "Read from your objects: {} nodes, {} Pods, {} Services and {} EndpointSlices. The Service range is taken as {} (it holds every cluster IP given); nothing fills status.loadBalancer here, so a balancer's address is the one your cluster published.",
        input.nodes.len(),
        input.pods.len(),
        input.services.len(),
        input.slices.len(),
        w.api.config.service_cidr
    )];
    if made.pods > 0 {
        parts.push(format!("{} endpoints name no Pod you gave; each is drawn as a Pod at its address, named after its targetRef.", made.pods));
    }
    if !made.nodes.is_empty() {
        parts.push(format!("No Node object was given for {}; they get addresses from 100.64.0.0/10.", list(&made.nodes)));
    }
    match svc {
        None => parts.push("Your objects hold no Service: there is nothing to look up or send to.".into()),
        Some(s) => {
            let eps: Vec<String> = input.slices_of(s).flat_map(|sl| sl.endpoints.iter().filter(|e| e.ready).map(|e| e.ip.to_string())).collect();
            let ip = if s.spec.headless { "no cluster IP (headless)".to_string() } else { s.spec.cluster_ip.map_or("no cluster IP".into(), |i| format!("cluster IP {i}")) };
            parts.push(format!(
                "Service {}/{} is of type {} with {ip} and {} ready endpoint{}{}. kube-proxy on each node turns it into the chains the rules panel shows, named as on your nodes.",
                s.namespace,
                s.name,
                type_label(s),
                eps.len(),
                if eps.len() == 1 { "" } else { "s" },
                if eps.is_empty() || eps.len() > 6 { String::new() } else { format!(" ({})", list(&eps)) }
            ));
        }
    }
    parts.join(" ")
}

fn narrate_lookup(w: &World, client: Option<Client>, svc: Option<&Service>, name: Option<&str>, answer: Option<&Response>, hops: &[crate::sim::Hop]) -> String {
    let (Some(s), Some(c), Some(name)) = (svc, client, name) else { return "There is no Service to look up.".into() };
    match c {
        Client::Pod(_) => {}
        Client::Node(_) => return "A node does not ask CoreDNS: its own resolv.conf points at the resolver of its network, which KubeHops does not model. Pick one of your Pods as the client to see a lookup.".into(),
        Client::Outside(_) => return format!("From outside, {name} means nothing: cluster names are known only to CoreDNS inside the cluster. Pick one of your Pods as the client."),
    }
    if w.cluster_dns.is_none() {
        return format!("Your objects hold no Service kube-system/kube-dns, so a Pod's resolv.conf would name a server KubeHops cannot find. Add the kube-dns Service and its EndpointSlice to the paste to see the lookup of {name}.");
    }
    let client = w.actors.short(c.id()).to_string();
    let queries = hops.iter().filter(|h| matches!(h.packet.as_ref().and_then(|p| p.payload.as_ref()), Some(Payload::DnsQuery { .. })) && h.from == c.id()).count();
    let dropped = hops.iter().rev().find_map(|h| h.dropped.as_ref());
    match (answer, dropped) {
        (Some(r), _) if r.rcode == Rcode::NoError && !r.answer.is_empty() => {
            let addrs: Vec<String> = r.answer.iter().filter_map(|x| if let RData::A(a) = x.data { Some(a.to_string()) } else { None }).collect();
            let kind = if s.spec.headless { "one A record per Ready endpoint" } else { "the cluster IP" };
            format!(
                "{client} asks the kube-dns Service for {name}; with ndots:5 its resolver tries the search path first ({queries} quer{}). kube-proxy's rules on its node send the query to a CoreDNS endpoint, and CoreDNS answers {} with {kind}: {}.",
                if queries == 1 { "y" } else { "ies" },
                r.name,
                list(&addrs)
            )
        }
        (Some(r), _) => format!("CoreDNS answers {} with {}: {} has no address record.", r.name, r.rcode.as_str(), s.name),
        (None, Some(d)) => format!("The lookup does not get an answer: {}", d.describe(&w.actors)),
        (None, None) => format!("No answer reached {client}."),
    }
}

fn narrate_request(w: &World, client: Option<Client>, svc: Option<&Service>, plan: Option<&Plan>, outcome: Option<&Outcome>, hops: &[crate::sim::Hop]) -> String {
    let Some(s) = svc else { return "There is no Service to send to.".into() };
    if s.spec.type_ == ServiceType::ExternalName {
        return format!("Service {} is an ExternalName: CoreDNS answers its name with a CNAME to {}, and kube-proxy writes no rule for it. A request would go to that name's address outside the cluster, which KubeHops does not know.", s.name, s.spec.external_name.as_deref().unwrap_or("?"));
    }
    let (Some(c), Some(pl)) = (client, plan) else { return format!("Service {} has no port or address to send to.", s.name) };
    let who = c.subject(w);
    // The plan's reason names the client already, as the one who dials.
    let mut parts = vec![pl.why.clone()];
    let dnat = hops.iter().filter_map(|h| h.packet.as_ref()).find(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat));
    if let Some(p) = dnat {
        let node = p.decided_on.map_or("The node".to_string(), |n| w.actors.short(n).to_string());
        // The chains of this Service port on that node, by their typed
        // plan (names from kube-proxy's hash of the port's name).
        // The external chain only when the client dialled a node port (or
        // another address outside the cluster IP).
        let external = Some(pl.dst.ip) != s.spec.cluster_ip;
        let chains_dedup: Vec<String> = p.decided_on.and_then(|n| w.node_index(n)).map(|i| w.rules[i].port_chains(&s.namespace, &s.name, external)).unwrap_or_default();
        let picks = p.could_reach.len();
        parts.push(format!(
            "{node}'s rules{} DNAT it to {}{}.",
            if chains_dedup.is_empty() { String::new() } else { format!(" ({})", chains_dedup.join(" → ")) },
            p.after.dst,
            if picks > 1 { format!(", one of {picks} endpoints the rules could pick") } else { String::new() }
        ));
        if let Some(r) = p.rewrites.iter().find(|r| r.kind == RewriteKind::Snat) {
            parts.push(format!("It also masquerades the source to {}, so the reply comes back through it.", r.to));
        }
    }
    match outcome {
        Some(Outcome::Answered { server, payload }) => {
            let what = payload.as_ref().map_or_else(String::new, |p| format!(" ({})", p.summary()));
            parts.push(format!("The reply{what} reaches {who} from {server}, the address it dialled{}.", if dnat.is_some() { ": conntrack undid the rewrites on the way back" } else { "" }));
        }
        Some(Outcome::Dropped { reason, .. }) => parts.push(reason.describe(&w.actors)),
        None => {}
    }
    parts.join(" ")
}
