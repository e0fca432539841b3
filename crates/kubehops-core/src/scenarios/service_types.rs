//! "The five Service types": one cluster, one Service, five values of
//! `spec.type`, and what a DNS lookup and a request do under each.
//!
//! Two nodes; a client Pod `web`; three Pods of Deployment `api`; CoreDNS
//! behind the kube-dns Service. Outside: the laptop, the cloud's load
//! balancer, a resolver, and `mydb.example.com`. Each tab applies one type
//! to Service `api` (ExternalName: Service `db`), coming from the tab the
//! user was on (`from`), with the API server's rules for type changes.
//! Then step 2 looks the name up and step 3 sends a request, from Pod web
//! or from the laptop.

use super::words::ProxyWords;
use super::{About, Editor, dice_for, list, Action, Edit, Choice, ChoiceStyle, Comparison, Demo, Entry, ParamSpec, Params, Recorder, Scenario, Value};
use crate::api::server::{ApiServer, ApiServerConfig};
use crate::api::{Node, ObjectRef, Pod, Service, ServicePort, ServiceSpec, ServiceType, TrafficPolicy};
use crate::controllers::cloud::{CloudController, CloudProvider};
use crate::controllers::LbController;
use crate::dataplane::kubeproxy::{KubeProxyConfig, ProxyMode};
use crate::dataplane::overlay::PodNetwork;
use crate::dataplane::netfilter::Dice;
use crate::dns::{QType, Rcode, Response};
use crate::net::{ip, Cidr, Protocol, SockAddr};
use crate::sim::{Actor, ActorId, ActorKind, Dial, DropReason, Internet, Outcome, Payload, RewriteKind, Site, Unroutable, World, Zone};
use std::net::Ipv4Addr;

pub const ENTRY: Entry = Entry {
    about: About {
        id: "service-types",
        title: "The five Service types",
        blurb: "ClusterIP, NodePort, LoadBalancer, ExternalName and Headless: DNS Lookup and Send Request under each",
        params,
        editor: Some(Editor { file: edit_file, service: own_service }),
    },
    build,
    edit: Some(Edit { cluster: edit_cluster, build: build_edited }),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    ClusterIp,
    NodePort,
    LoadBalancer,
    ExternalName,
    Headless,
}

impl Tab {
    pub const ALL: [Tab; 5] = [Tab::ClusterIp, Tab::NodePort, Tab::LoadBalancer, Tab::ExternalName, Tab::Headless];

    pub fn value(self) -> &'static str {
        match self {
            Tab::ClusterIp => "clusterip",
            Tab::NodePort => "nodeport",
            Tab::LoadBalancer => "loadbalancer",
            Tab::ExternalName => "externalname",
            Tab::Headless => "headless",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Tab::ClusterIp => "ClusterIP",
            Tab::NodePort => "NodePort",
            Tab::LoadBalancer => "LoadBalancer",
            Tab::ExternalName => "ExternalName",
            Tab::Headless => "Headless",
        }
    }

    fn parse(v: &str) -> Option<Tab> {
        Tab::ALL.into_iter().find(|t| t.value() == v)
    }

    /// The tab a Service belongs under: its type, or Headless.
    pub fn of(svc: &Service) -> Tab {
        match svc.spec.type_ {
            ServiceType::ExternalName => Tab::ExternalName,
            _ if svc.spec.headless => Tab::Headless,
            ServiceType::NodePort => Tab::NodePort,
            ServiceType::LoadBalancer => Tab::LoadBalancer,
            ServiceType::ClusterIP => Tab::ClusterIp,
        }
    }

    /// The tabs that are types of Service `api` (ExternalName is Service `db`).
    fn is_api(self) -> bool {
        self != Tab::ExternalName
    }

    fn externally_reachable(self) -> bool {
        matches!(self, Tab::NodePort | Tab::LoadBalancer)
    }
}

const NODE_PORT: u16 = 30080;
const API_IP: Ipv4Addr = ip(10, 96, 0, 50);
const DNS_IP: Ipv4Addr = ip(10, 96, 0, 10);
const LAPTOP: Ipv4Addr = ip(198, 51, 100, 23);
const MYDB: Ipv4Addr = ip(192, 0, 2, 40);
const RESOLVER: Ipv4Addr = ip(192, 0, 2, 53);
const MYDB_NAME: &str = "mydb.example.com";

/// The api Pods: name, short name (the value of `notready`), node, address.
const API_PODS: [(&str, &str, &str, Ipv4Addr); 3] = [
    ("api-7c9d8f5b6-x4k2p", "api-x4k2p", "node-1", ip(10, 244, 1, 6)),
    ("api-7c9d8f5b6-r8t6w", "api-r8t6w", "node-2", ip(10, 244, 2, 7)),
    ("api-7c9d8f5b6-m3n9q", "api-m3n9q", "node-2", ip(10, 244, 2, 8)),
];

/// The preset demos: value, label, the parameters each sets, the step it opens.
const DEMOS: [(&str, &str, &[(&str, &str)], usize); 6] = [
    ("from-pod", "From a Pod", &[("tab", "clusterip"), ("client", "pod-web")], 2),
    ("from-outside", "From Outside", &[("tab", "clusterip"), ("client", "laptop")], 2),
    ("nodeport", "NodePort", &[("tab", "nodeport"), ("client", "laptop")], 2),
    ("loadbalancer", "LoadBalancer", &[("tab", "loadbalancer"), ("client", "laptop")], 0),
    ("externalname", "ExternalName", &[("tab", "externalname"), ("client", "pod-web")], 1),
    ("headless", "Headless", &[("tab", "headless"), ("client", "pod-web")], 1),
];

fn params() -> Vec<ParamSpec> {
    let tabs: Vec<Choice> = Tab::ALL.iter().map(|t| Choice::new(t.value(), t.label())).collect();
    let mut from = vec![Choice::new("", "none")];
    from.extend(tabs.iter().cloned());
    let mut demos = vec![Choice::new("", "None")];
    demos.extend(DEMOS.iter().map(|(v, l, _, _)| Choice::new(v, l)));
    vec![
        ParamSpec::choice("tab", "Service type", ChoiceStyle::Tabs, tabs),
        ParamSpec::choice("client", "Client", ChoiceStyle::Buttons, vec![Choice::new("pod-web", "Pod web"), Choice::new("laptop", "Laptop")]),
        ParamSpec::toggle("local", "externalTrafficPolicy: Local").when("tab", &["nodeport", "loadbalancer"]),
        ParamSpec::choice("via", "The laptop dials", ChoiceStyle::Buttons, vec![Choice::new("node-1", "Node-1"), Choice::new("node-2", "Node-2")])
            .when("tab", &["nodeport"])
            .when("client", &["laptop"]),
        ParamSpec::set("notready", "Not Ready", API_PODS.iter().map(|(_, short, _, _)| Choice::new(short, &format!("Pod {short}"))).collect())
            .when("tab", &["clusterip", "nodeport", "loadbalancer", "headless"]),
        ParamSpec::choice("demo", "Demo", ChoiceStyle::Demo, demos),
        ParamSpec::choice("from", "Coming from", ChoiceStyle::Hidden, from),
        ParamSpec::proxy_mode(ProxyMode::Iptables),
        ParamSpec::pod_network(PodNetwork::Routed),
        ParamSpec::handshake(),
        ParamSpec::seed(),
        ParamSpec::manifest(),
    ]
}

/// The parameters with a demo that no longer matches them cleared: a
/// demo stays selected only while its presets hold.
fn settle_demo(p: &Params) -> Params {
    let Some(demo) = p.choice("demo").filter(|d| !d.is_empty()) else { return p.clone() };
    let Some((_, _, sets, _)) = DEMOS.iter().find(|d| d.0 == demo) else { return p.clone() };
    if sets.iter().all(|(k, v)| p.choice(k) == Some(*v)) {
        p.clone()
    } else {
        p.clone().with("demo", Value::Choice(String::new()))
    }
}

/// Service `api` as the tab writes it.
fn api_service(tab: Tab, local: bool) -> Service {
    let (type_, node_port) = match tab {
        Tab::NodePort => (ServiceType::NodePort, Some(NODE_PORT)),
        Tab::LoadBalancer => (ServiceType::LoadBalancer, Some(NODE_PORT)),
        _ => (ServiceType::ClusterIP, None),
    };
    Service {
        name: "api".into(),
        namespace: "default".into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            type_,
            selector: [("app".to_string(), "api".to_string())].into(),
            ports: vec![ServicePort { name: None, protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port }],
            headless: tab == Tab::Headless,
            external_traffic_policy: if local && tab.externally_reachable() { TrafficPolicy::Local } else { TrafficPolicy::Cluster },
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

/// Service `db`: an alias for the database outside.
fn db_service() -> Service {
    Service {
        name: "db".into(),
        namespace: "default".into(),
        annotations: Default::default(),
        spec: ServiceSpec { type_: ServiceType::ExternalName, external_name: Some(MYDB_NAME.into()), ..Default::default() },
        status: Default::default(),
        created: None,
    }
}

/// kube-dns, as kubeadm creates it: a fixed cluster IP, DNS over UDP and TCP.
fn kube_dns() -> Service {
    let port = |name: &str, protocol| ServicePort { name: Some(name.into()), protocol, port: 53, target_port: 53, node_port: None };
    Service {
        name: "kube-dns".into(),
        namespace: "kube-system".into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            selector: [("k8s-app".to_string(), "kube-dns".to_string())].into(),
            ports: vec![port("dns", Protocol::Udp), port("dns-tcp", Protocol::Tcp)],
            cluster_ip: Some(DNS_IP),
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

fn pod(name: &str, namespace: &str, labels: &[(&str, &str)], node: &str, addr: Ipv4Addr, port: u16) -> Pod {
    Pod {
        name: name.into(),
        namespace: namespace.into(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        node_name: node.into(),
        ip: addr,
        container_port: port,
        port_name: Some(if port == 53 { "dns" } else { "http" }.into()),
        ready: true,
    }
}

/// The explorer's cluster before any tab is applied.
pub fn cluster() -> World {
    let mut api = ApiServer::new(ApiServerConfig::default());
    api.nodes = (1..=2u8).map(|i| Node { name: format!("node-{i}"), internal_ip: ip(10, 0, 0, 10 + i), pod_cidr: Some(Cidr::new(ip(10, 244, i, 0), 24)) }).collect();
    api.pods = vec![pod("web", "default", &[("app", "web")], "node-1", ip(10, 244, 1, 4), 8080)];
    api.pods.extend(API_PODS.iter().filter(|p| p.2 == "node-1").map(|(n, _, node, a)| pod(n, "default", &[("app", "api")], node, *a, 8080)));
    api.pods.push(pod("coredns-5d78c9869d-4hx2p", "kube-system", &[("k8s-app", "kube-dns")], "node-2", ip(10, 244, 2, 3), 53));
    api.pods.extend(API_PODS.iter().filter(|p| p.2 == "node-2").map(|(n, _, node, a)| pod(n, "default", &[("app", "api")], node, *a, 8080)));
    api.apply_service(kube_dns()).unwrap_or_else(|e| panic!("kube-dns is valid: {e}"));
    // The allocator is random; this is the draw the story shows.
    api.cluster_ip_draws.insert(ObjectRef::new("default", "api"), API_IP);
    let cloud = CloudProvider { free_ips: (10..=40).map(|d| ip(203, 0, 113, d)).collect(), provisioning_secs: 45, balancers: vec![] };
    let pods = Cidr::new(ip(10, 244, 0, 0), 16);
    let proxy = KubeProxyConfig { cluster_cidr: Some(pods), ..Default::default() };
    let internet = Internet {
        reaches_nodes: true,
        names: vec![(MYDB_NAME.into(), MYDB)],
        sites: vec![Site { ip: MYDB, port: 80, hosts: vec![MYDB_NAME.into()] }],
    };
    let mut w = World::new(api, proxy, LbController::Cloud(CloudController { provider: cloud }), internet, 3 * 3600);
    w.cluster_dns = Some(SockAddr::new(DNS_IP, 53));
    w.set_egress_masquerade(pods);
    w.add_actor(Actor::component(ActorKind::Laptop, Zone::Outside, "Laptop", "Laptop", &LAPTOP.to_string()).at(LAPTOP));
    w.add_actor(Actor::component(ActorKind::LoadBalancer, Zone::Outside, "Cloud load balancer", "Load balancer", ""));
    w.add_actor(Actor::component(ActorKind::Resolver, Zone::Outside, "DNS resolver", "Resolver", &RESOLVER.to_string()).at(RESOLVER));
    w.add_actor(Actor::component(ActorKind::OutsideHost, Zone::Outside, MYDB_NAME, MYDB_NAME, &MYDB.to_string()).at(MYDB));
    w.add_actor(Actor::component(ActorKind::ApiServer, Zone::ControlPlane, "API server", "API server", "kube-apiserver"));
    w.add_actor(Actor::component(ActorKind::Controller, Zone::ControlPlane, "cloud-controller-manager", "cloud-controller-manager", "watches LoadBalancer Services"));
    w
}

/// The cluster as the tab the user came from left it.
fn cluster_after(from: Option<Tab>, local: bool) -> World {
    let mut w = cluster();
    match from {
        Some(Tab::ExternalName) => {
            let _ = w.kubectl_apply(db_service());
        }
        Some(t) => {
            let _ = w.kubectl_apply(api_service(t, local));
            if t == Tab::LoadBalancer {
                let secs = w.lb.cloud().map_or(0, |c| c.provisioning_secs);
                w.wait(secs);
            }
        }
        None => {}
    }
    w.take_trace();
    w
}

struct Ctx {
    /// The Service step 1 applies: the tab's own, or the one the user typed.
    svc: Service,
    /// Whether `svc` is the object the `from` tab left (Service `api`), so
    /// that the API server's rules for changing it apply.
    replaces_from: bool,
    tab: Tab,
    from: Option<Tab>,
    local: bool,
    client: ActorId,
    laptop: bool,
    via: usize,
    seed: Option<u64>,
}

pub fn build(p: &Params) -> Scenario {
    build_with(p, None)
}

/// The file the tab's Service is written in.
fn edit_file(p: &Params) -> &'static str {
    if p.choice("tab") == Some(Tab::ExternalName.value()) {
        "db.yaml"
    } else {
        "api.yaml"
    }
}

/// The tab's own Service.
fn own_service(p: &Params) -> Service {
    match p.choice("tab").and_then(Tab::parse).unwrap_or(Tab::ClusterIp) {
        Tab::ExternalName => db_service(),
        tab => api_service(tab, p.toggle("local")),
    }
}

/// The cluster just before step 1 applies a Service.
fn edit_cluster(p: &Params) -> World {
    cluster_after(p.choice("from").and_then(Tab::parse), p.toggle("local"))
}

/// The explorer with the user's Service in place of the tab's: the tab
/// that Service belongs under is shown, and the local switch follows it.
fn build_edited(p: &Params, svc: Service) -> Scenario {
    let tab = Tab::of(&svc);
    let local = svc.spec.external_traffic_policy == TrafficPolicy::Local;
    let p = p.clone().with("tab", Value::Choice(tab.value().into())).with("local", Value::Toggle(local && tab.externally_reachable()));
    build_with(&p, Some(svc))
}

fn build_with(p: &Params, typed: Option<Service>) -> Scenario {
    let p = settle_demo(p);
    let tab = p.choice("tab").and_then(Tab::parse).unwrap_or(Tab::ClusterIp);
    let from = p.choice("from").and_then(Tab::parse);
    let local = p.toggle("local");
    let mut w = cluster_after(from, local);
    w.set_proxy_mode(p.proxy_mode());
    w.set_pod_network(p.pod_network());
    w.set_handshake(p.handshake());
    let laptop = p.choice("client") == Some("laptop");
    let client = if laptop { w.first(ActorKind::Laptop) } else { w.actors.of_object(ActorKind::Pod, "default", "web") }.unwrap_or(ActorId(0));
    let via = if p.choice("via") == Some("node-2") { 1 } else { 0 };
    let file = edit_file(&p);
    let svc = typed.unwrap_or_else(|| own_service(&p));
    let replaces_from = from.is_some_and(Tab::is_api) && svc.namespace == "default" && svc.name == "api";
    let c = Ctx { svc: svc.clone(), replaces_from, tab, from, local, client, laptop, via, seed: p.seed() };
    w.focus = vec![svc.object_ref()];

    let before = match from {
        Some(f) if replaces_from => api_service(f, local),
        _ => svc.clone(),
    };
    let mut rec = Recorder::new(file, &before);
    let not_ready: Vec<&(&str, &str, &str, Ipv4Addr)> = API_PODS.iter().filter(|x| p.set_contains("notready", x.1)).collect();
    let mut refused = None;
    rec.step(&mut w, &apply_title(&c), Some((file, &svc)), |w| {
        refused = apply(w, &c);
        for (name, ..) in &not_ready {
            w.set_ready("default", name, false);
        }
    });
    if !replaces_from {
        // A first apply, or another Service's file: nothing to compare with.
        if let Some(st) = rec.steps.last_mut() {
            st.manifest.changed.clear();
        }
    }
    narrate_apply(&w, &mut rec, &c, &not_ready, refused.as_ref());

    let mut dice = dice_for(c.seed, vec![0.5, 0.2], 7);
    let mut answer = None;
    let name = lookup_name(&w, &c);
    rec.step(&mut w, "DNS Lookup", None, |w| answer = w.lookup(c.client, &name, QType::A, dice.as_mut()));
    narrate_lookup(&w, &mut rec, &c, &name, answer.as_ref());

    let mut outcome = None;
    rec.step(&mut w, "Send Request", None, |w| outcome = Some(send_request(w, &c, dice.as_mut())));
    narrate_request(&w, &mut rec, &c, outcome.as_ref());

    Scenario {
        demos: demos(),
        comparison: Some(comparison()),
        actions: vec![Action { label: "DNS Lookup".into(), step: 1 }, Action { label: "Send Request".into(), step: 2 }],
        ..Scenario::recorded(ENTRY.id, ENTRY.title, &p, &w, rec.steps)
    }
}

fn apply_title(c: &Ctx) -> String {
    let name = &c.svc.name;
    match (c.tab, c.from) {
        (Tab::ExternalName, _) => format!("Apply Service {name} (ExternalName)"),
        (t, Some(f)) if c.replaces_from && t == Tab::Headless && f != Tab::Headless => format!("Recreate {name} as headless"),
        (t, Some(Tab::Headless)) if c.replaces_from && t != Tab::Headless => format!("Recreate {name} as {}", t.label()),
        (t, _) if name != "api" => format!("Apply Service {name} ({})", t.label()),
        (t, _) => format!("Apply type {}", t.label()),
    }
}

/// What the narration says of the applied Service, read from the stored
/// object (the typed one, if the API server refused it).
struct Figures {
    name: String,
    namespace: String,
    cluster_ip: Option<Ipv4Addr>,
    port: u16,
    target_port: u16,
    node_port: Option<u16>,
    external_name: String,
    external_ip: Option<Ipv4Addr>,
}

impl Figures {
    fn of(w: &World, c: &Ctx) -> Figures {
        let s = w.api.service(&c.svc.namespace, &c.svc.name).unwrap_or(&c.svc);
        let first = s.spec.ports.first();
        Figures {
            name: s.name.clone(),
            namespace: s.namespace.clone(),
            cluster_ip: s.spec.cluster_ip,
            port: first.map_or(80, |p| p.port),
            target_port: first.map_or(8080, |p| p.target_port),
            node_port: first.and_then(|p| p.node_port),
            external_name: s.spec.external_name.clone().unwrap_or_default(),
            external_ip: s.spec.external_ips.first().copied(),
        }
    }

    fn ip(&self) -> String {
        self.cluster_ip.map_or_else(|| "no address".into(), |i| i.to_string())
    }

    fn node_port(&self) -> String {
        self.node_port.map_or_else(|| "(none)".into(), |n| n.to_string())
    }

    fn fqdn(&self) -> String {
        format!("{}.{}.svc.cluster.local", self.name, self.namespace)
    }
}

/// Step 1: the tab's manifest reaches the API server, with what the API
/// server makes of a type change. Returns the API server's refusal, if
/// the first attempt was refused.
fn apply(w: &mut World, c: &Ctx) -> Option<crate::api::server::ApiError> {
    if c.tab == Tab::ExternalName {
        return w.kubectl_apply(c.svc.clone()).err();
    }
    let mut refused = None;
    let svc = c.svc.clone();
    let headless_change = c.replaces_from && c.from.is_some_and(|f| (f == Tab::Headless) != (c.tab == Tab::Headless));
    if headless_change {
        if c.tab == Tab::Headless {
            // The API server refuses: clusterIP (None included) is immutable.
            refused = w.kubectl_apply(svc.clone()).err();
        }
        w.kubectl_delete(&svc.namespace, &svc.name);
    }
    let second = w.kubectl_apply(svc).err();
    refused = refused.or(second);
    if c.tab == Tab::LoadBalancer {
        let secs = w.lb.cloud().map_or(0, |c| c.provisioning_secs);
        w.wait(secs);
    }
    refused
}

fn lookup_name(w: &World, c: &Ctx) -> String {
    let f = Figures::of(w, c);
    match (c.laptop, f.namespace.as_str()) {
        (true, _) => f.fqdn(),
        (false, "default") => f.name,
        (false, ns) => format!("{}.{ns}", f.name),
    }
}

/// Step 3: what a client does to reach the Service, and how far it gets.
fn send_request(w: &mut World, c: &Ctx, dice: &mut dyn Dice) -> Outcome {
    let f = Figures::of(w, c);
    let host = lookup_name(w, &Ctx { laptop: false, svc: c.svc.clone(), ..*c });
    if !c.laptop {
        let addrs = w.resolve_quietly(c.client, &host);
        let Some(addr) = pick_address(&addrs, c, dice) else { return w.give_up(c.client, DropReason::Unresolved { name: host }) };
        let port = if c.tab == Tab::Headless { f.target_port } else { f.port };
        return w.dial(Dial::http(c.client, SockAddr::new(addr, port), &host), dice);
    }
    let unresolved = |name: String| DropReason::Unresolved { name };
    let dst = match (c.tab, f.external_ip) {
        (Tab::ClusterIp, Some(ip)) => Ok(SockAddr::new(ip, f.port)),
        (Tab::ClusterIp, _) => f.cluster_ip.map(|ip| SockAddr::new(ip, f.port)).ok_or_else(|| unresolved(f.fqdn())),
        (Tab::NodePort, _) => f.node_port.map(|np| SockAddr::new(w.api.nodes[c.via].internal_ip, np)).ok_or_else(|| unresolved("a node port".into())),
        (Tab::LoadBalancer, _) => balancer_ip(w, c).map(|ip| SockAddr::new(ip, f.port)).ok_or_else(|| unresolved("the balancer's address".into())),
        (Tab::ExternalName, _) => Err(unresolved(f.fqdn())),
        (Tab::Headless, _) => headless_target(w, &f).ok_or_else(|| unresolved(f.fqdn())),
    };
    match dst {
        Ok(dst) => w.dial(Dial::http(c.client, dst, &host), dice),
        Err(reason) => w.give_up(c.client, reason),
    }
}

/// A headless Service's first Ready endpoint, at its target port: what a
/// client that learnt a Pod's address would dial.
fn headless_target(w: &World, f: &Figures) -> Option<SockAddr> {
    let slices = w.api.endpoint_slices();
    let ep = slices.iter().filter(|s| s.namespace == f.namespace && s.service_name == f.name).flat_map(|s| &s.endpoints).find(|e| e.ready)?;
    Some(SockAddr::new(ep.ip, f.target_port))
}

/// A headless answer lists Pods; the client picks one. Fixed picks take
/// the second (a Pod on the other node), seeded ones draw.
fn pick_address(addrs: &[Ipv4Addr], c: &Ctx, dice: &mut dyn Dice) -> Option<Ipv4Addr> {
    if c.tab != Tab::Headless || addrs.len() < 2 {
        return addrs.first().copied();
    }
    if c.seed.is_none() {
        return addrs.get(1).copied();
    }
    // Walk the list the way kube-proxy's rules do: 1/n, then 1/(n-1), …
    let n = addrs.len();
    (0..n).find(|i| *i + 1 == n || dice.roll(1.0 / (n - i) as f64)).and_then(|i| addrs.get(i).copied())
}

fn balancer_ip(w: &World, c: &Ctx) -> Option<Ipv4Addr> {
    let cloud = w.lb.cloud()?;
    cloud.balancer_for(&c.svc.object_ref()).filter(|b| b.state == crate::controllers::cloud::LbState::Active).map(|b| b.ip)
}

fn svc_row(w: &World) -> String {
    let t = w.kubectl_get_svc();
    let name = w.focus.first().map_or("api", |f| f.name.as_str());
    let cell = |c: &str| t.cell(name, c).unwrap_or("?").to_string();
    format!("TYPE {}, CLUSTER-IP {}, EXTERNAL-IP {}, PORT(S) {}", cell("TYPE"), cell("CLUSTER-IP"), cell("EXTERNAL-IP"), cell("PORT(S)"))
}

fn narrate_apply(w: &World, rec: &mut Recorder, c: &Ctx, not_ready: &[&(&str, &str, &str, Ipv4Addr)], refused: Option<&crate::api::server::ApiError>) {
    let Some(st) = rec.steps.last_mut() else { return };
    let rejected = refused.map(|e| e.to_string());
    let f = Figures::of(w, c);
    let (name, np) = (f.name.as_str(), f.node_port());
    let selects = match c.svc.spec.selector.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>() {
        labels if labels.is_empty() => format!("Service {name} has no selector, so no Pod becomes its endpoint by itself."),
        labels => format!("Service {name} selects the Pods labelled {}.", list(&labels)),
    };
    let mut parts = vec![match c.tab {
        Tab::ClusterIp => format!("{selects} The API server gives it {} from the Service range {}; no network card has that address. kube-proxy on every node writes a rule for {}:{} that DNATs to one Ready {name} Pod on port {}.", f.ip(), w.api.config.service_cidr, f.ip(), f.port, f.target_port),
        Tab::NodePort => format!("A NodePort Service is a ClusterIP Service with one more thing: port {np} from the range {}, opened on every node's own address, whether or not a {name} Pod runs there.", w.api.config.node_port_range).replace("a api", "an api"),
        Tab::LoadBalancer => format!("A LoadBalancer Service keeps its cluster IP and node port {np}. The cloud-controller-manager sees it and asks the cloud for a balancer aimed at every node's port {np}. That takes time: until the cloud answers, kubectl shows EXTERNAL-IP <pending>; then the controller writes the address into status.loadBalancer and kube-proxy adds a rule for it."),
        Tab::ExternalName => format!("Service {name} has no selector, no endpoints and no cluster IP, and kube-proxy writes no rule for it. It exists only as a DNS record: CoreDNS answers {} with a CNAME to {}.", f.fqdn(), f.external_name),
        Tab::Headless => "With clusterIP: None the Service keeps its selector and its endpoints but gets no virtual address, so kube-proxy writes no rule for it. CoreDNS answers its name with one A record per Ready Pod instead; StatefulSets use such a Service to give each Pod a stable name (db-0.db.default.svc.cluster.local).".to_string(),
    }];
    if let Some(e) = rejected.as_ref().filter(|_| !(c.replaces_from && c.tab == Tab::Headless)) {
        parts.push(format!("The API server refuses it: {e}."));
    }
    match (c.from.filter(|_| c.replaces_from), c.tab) {
        (Some(f), t) if f == t => parts.push(format!("Service api is already of type {}: the API server stores the same object and nothing else changes.", t.label())),
        (Some(f), Tab::Headless) if f.is_api() => parts.push(format!(
            "Coming from {}: the API server refuses the change ({}). clusterIP is immutable, and None counts as a value, so the Service has to be deleted and created again.",
            f.label(),
            rejected.as_deref().unwrap_or("clusterIP may not change once set")
        )),
        (Some(Tab::Headless), t) if t.is_api() => parts.push("Coming from Headless: kubectl apply would keep clusterIP: None (an update that leaves clusterIP out keeps the old value), so the Service is deleted and created again to get a virtual address.".into()),
        (Some(Tab::LoadBalancer), t) if t.is_api() => parts.push(format!("Coming from LoadBalancer: with the type changed to {}, the cloud-controller-manager deletes the balancer, and the node port {}.", t.label(), if t == Tab::NodePort { "stays" } else { "is released" })),
        (Some(Tab::NodePort), Tab::ClusterIp) => parts.push(format!("Coming from NodePort: node port {NODE_PORT} is released and kube-proxy removes {} on every node.", ProxyWords::of(w).own_node_port_rule())),
        (Some(_), Tab::ExternalName) => parts.push("Coming from another type: the API server releases the cluster IP, and kube-proxy removes every rule of the Service.".into()),
        _ => {}
    }
    if c.local && c.tab.externally_reachable() {
        parts.push("externalTrafficPolicy: Local: traffic from outside is only sent to api Pods on the node it arrived at, and keeps its source address.".into());
    }
    if !not_ready.is_empty() {
        let names: Vec<String> = not_ready.iter().map(|x| x.1.to_string()).collect();
        // kube-proxy's hops after the first readiness report, if its rules changed.
        let report = st.hops.iter().position(|h| w.node_index(h.from).is_some()).unwrap_or(st.hops.len());
        let rewrote = st.hops[report..].iter().any(|h| w.node_index(h.to).is_some());
        let proxy = if rewrote {
            "kube-proxy removes its lines (marked −)"
        } else {
            "kube-proxy has nothing to change, since it writes no rule for this Service; CoreDNS stops listing the address"
        };
        parts.push(format!(
            "Then {} {} its readiness probe: kubelet reports it, the EndpointSlice controller marks the endpoint not ready, and {proxy}. No new connection reaches it.",
            list(&names),
            if names.len() == 1 { "fails" } else { "fail" }
        ));
    }
    parts.push(format!("kubectl get svc now shows {}.", svc_row(w)));
    st.narration = parts.join(" ");
}

fn narrate_lookup(w: &World, rec: &mut Recorder, c: &Ctx, name: &str, answer: Option<&Response>) {
    let Some(st) = rec.steps.last_mut() else { return };
    let records = |r: &Response| r.answer.iter().map(|x| x.short()).collect::<Vec<_>>();
    st.narration = if c.laptop {
        match answer {
            Some(r) if r.rcode == Rcode::NxDomain => format!(
                "The laptop asks its own resolver for {name}. That resolver is not CoreDNS: cluster.local is a name only the cluster's DNS knows, so the answer is NXDOMAIN. From outside, a Service is reached by an address (a node's, a balancer's), not by its cluster name."
            ),
            Some(r) => format!("The laptop's resolver answers {name} with {}.", list(&records(r))),
            None => format!("The laptop's question about {name} got no answer."),
        }
    } else {
        let pick = st.hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat)));
        let coredns = pick.map_or_else(String::new, |p| format!(" kube-proxy on {} DNATs it to the CoreDNS Pod at {}, like any other Service.", p.decided_on.map_or("the node".into(), |n| w.actors.short(n).to_string()), p.after.dst));
        let upstream = st.hops.iter().any(|h| w.actors.get(h.to).is_some_and(|a| a.kind == ActorKind::Resolver));
        let said = match answer {
            None => "no answer".to_string(),
            Some(r) if r.rcode == Rcode::NxDomain => "NXDOMAIN".to_string(),
            Some(r) => list(&records(r)),
        };
        let fqdn = st.hops.iter().find_map(|h| match h.packet.as_ref().and_then(|p| p.payload.as_ref()) {
            Some(Payload::DnsQuery { name, .. }) => Some(name.clone()),
            _ => None,
        });
        let mut s = format!(
            "Pod web looks up {name}. Its resolv.conf names the kube-dns Service, {DNS_IP}, and a search path, so the first name it asks is {}.{coredns} CoreDNS answers {said}.",
            fqdn.as_deref().unwrap_or_default().trim_end_matches('.')
        );
        if upstream {
            s.push_str(&format!(" {} is outside the cluster domain, so CoreDNS asks the resolver outside for it and adds that answer after the CNAME.", Figures::of(w, c).external_name));
        }
        match c.tab {
            Tab::Headless => s.push_str(" A headless Service has no address of its own: the answer lists the Ready Pods themselves, and the client chooses."),
            Tab::ExternalName => s.push_str(" An ExternalName Service is only this CNAME: there is no cluster IP and nothing in kube-proxy."),
            _ => s.push_str(&format!(" The answer is the cluster IP, whatever the type: {} and LoadBalancer Services have one too.", Tab::NodePort.label())),
        }
        s.push_str(" The reply comes back through conntrack, which puts the kube-dns address back as its source.");
        s
    };
}

fn narrate_request(w: &World, rec: &mut Recorder, c: &Ctx, outcome: Option<&Outcome>) {
    let Some(st) = rec.steps.last_mut() else { return };
    let dnat = st.hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat)).map(|p| (h, p)));
    let snat = st.hops.iter().filter_map(|h| h.packet.as_ref()).find(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Snat));
    let server_pod = st.hops.iter().find(|h| h.leg == crate::sim::Leg::Out && w.actors.get(h.to).is_some_and(|a| a.kind.is_pod() && a.id != c.client)).map(|h| w.actors.short(h.to).to_string());
    let reply_from = match outcome {
        Some(Outcome::Answered { server, payload }) => Some((*server, payload.clone())),
        _ => None,
    };
    let dropped = match outcome {
        Some(Outcome::Dropped { reason, .. }) => Some(reason.clone()),
        _ => None,
    };
    let mut parts = Vec::new();
    if let Some(r) = &dropped {
        parts.push(drop_story(w, c, r));
    } else {
        let start = st.hops.first().and_then(|h| h.packet.as_ref()).map(|p| p.after);
        if let Some(p) = start {
            parts.push(format!("{} sends GET / to {} (Host: {}).", w.actors.short(c.client), p.dst, lookup_name(w, &Ctx { laptop: false, svc: c.svc.clone(), ..*c })));
        }
        if let Some(b) = st.hops.iter().find(|h| w.actors.get(h.from).is_some_and(|a| a.kind == ActorKind::LoadBalancer) && h.leg == crate::sim::Leg::Out) {
            parts.push(format!("The balancer picks {} and forwards to its node port {}: the first of two choices.", w.actors.short(b.to), Figures::of(w, c).node_port()));
        }
        if let Some((_, p)) = dnat {
            let node = p.decided_on.map_or("a node".into(), |n| w.actors.short(n).to_string());
            let others: Vec<String> = p.could_reach.iter().filter(|a| **a != p.after.dst).map(|a| a.to_string()).collect();
            parts.push(format!(
                "{node}'s rules pick {} and DNAT to it{}.",
                p.after.dst,
                if others.is_empty() { String::new() } else { format!("; they could as well have picked {}", or_list(&others)) }
            ));
        } else if c.tab == Tab::Headless {
            parts.push("Nothing rewrites the packet: no rule of kube-proxy matches a Pod's own address. The nodes only route it.".into());
        }
        if let Some(p) = snat {
            let node = p.decided_on.map_or("the node".into(), |n| w.actors.short(n).to_string());
            let why = if c.tab == Tab::ExternalName {
                "the network plugin masquerades traffic that leaves the Pod network".to_string()
            } else {
                format!("externalTrafficPolicy: Cluster marks it for masquerade, so the Pod sees {}, not the laptop's address", p.after.src.ip)
            };
            parts.push(format!("{node} also SNATs the source to {}: {why}, and the reply comes back through {node}.", p.after.src));
        } else if c.laptop && c.tab.externally_reachable() {
            parts.push(format!("No SNAT: with externalTrafficPolicy: Local the Pod sees the laptop's own address, {LAPTOP}."));
        }
        if let Some(pod) = &server_pod {
            parts.push(format!("{pod} answers."));
        }
        if let Some((server, payload)) = &reply_from {
            let what = payload.as_ref().map_or_else(String::new, |p| format!(" ({})", p.summary()));
            parts.push(match c.tab {
                Tab::ExternalName => {
                    let f = Figures::of(w, c);
                    format!(
                        "The reply{what} comes from {server}. The pitfall: the request still says Host: {n} (and a TLS client would send SNI {n}), and {} serves no site called {n}. The alias works for DNS, not for HTTP or TLS names.",
                        f.external_name,
                        n = f.name
                    )
                }
                Tab::Headless => format!("The reply{what} comes straight from {server}: the client talked to one Pod and knows which; balancing is its own job now."),
                _ if dnat.is_some() => format!("On the way back conntrack undoes the rewrites, so the reply{what} comes from {server}, the address the client dialled: it never learns which Pod answered."),
                _ => format!("The reply{what} comes from {server}."),
            });
        }
    }
    st.narration = parts.join(" ");
}

/// The sentence for a request that did not get through.
fn drop_story(w: &World, c: &Ctx, r: &DropReason) -> String {
    match r {
        DropReason::NoRoute { why: Unroutable::ServiceRange(range), dst } => format!(
            "The laptop sends to {dst}:{}. Outside the cluster {range} means nothing: no router has a route to it, because the address lives only in kube-proxy's rules on the nodes. The packet is dropped before it gets anywhere. A ClusterIP Service is for traffic inside the cluster.",
            Figures::of(w, c).port
        ),
        DropReason::NoRoute { why: Unroutable::PodNetwork(_), dst } => format!(
            "Even knowing a Pod's address ({dst}), the laptop cannot reach it: the Pod network is routed between the nodes only. A headless Service is for clients inside the cluster."
        ),
        DropReason::Unresolved { name } if c.tab == Tab::ExternalName => format!(
            "The laptop cannot even start: {name} does not resolve outside the cluster, and {} is an alias that only CoreDNS knows.",
            c.svc.name
        ),
        DropReason::Filtered { .. } => format!(
            "{} With externalTrafficPolicy: Local a node only sends outside traffic to its own Ready Pods, and this one has none, so it drops the packet rather than forward it.",
            r.describe(&w.actors)
        ),
        other => other.describe(&w.actors),
    }
}

/// `a`, `a or b`, `a, b, or c`.
fn or_list(items: &[String]) -> String {
    match items {
        [rest @ .., last] if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => list(items),
    }
}

fn demos() -> Vec<Demo> {
    DEMOS
        .iter()
        .map(|(id, label, sets, step)| Demo {
            id: id.to_string(),
            label: label.to_string(),
            sets: sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            step: *step,
            narration: demo_text(id).to_string(),
        })
        .collect()
}

fn demo_text(id: &str) -> &'static str {
    match id {
        "from-pod" => "From a Pod: web calls api by its cluster IP. Its own node's rules DNAT the packet to one Ready Pod, and conntrack turns the reply's source back into the cluster IP, so web never learns which Pod answered.",
        "from-outside" => "From Outside: the laptop dials the cluster IP. No network outside the cluster has a route to the Service range, so the packet is dropped before it reaches any node.",
        "nodeport" => "NodePort: the laptop dials a node's own address on port 30080. That node's rules DNAT to any Ready Pod, maybe on the other node, and SNAT the source so the reply returns through it: the Pod sees the node's address, not the laptop's. Switch on externalTrafficPolicy: Local to keep the client's address; then only Pods on the dialled node are used, and a node with no Ready local Pod drops the packet (mark its Pod not Ready to see it).",
        "loadbalancer" => "LoadBalancer: applying the type starts the cloud-controller-manager; the cloud builds a balancer while kubectl shows <pending>, then status.loadBalancer gets its address. Send Request goes laptop → balancer → a node's port 30080 → kube-proxy → a Pod: balanced twice, once by the balancer (which node) and once by the node's rules (which Pod).",
        "externalname" => "ExternalName: db is only a CNAME to mydb.example.com. There is no cluster IP, no endpoint and no rule; web connects to the outside address itself, and its request still says Host: db, which the outside server does not know.",
        "headless" => "Headless: the lookup returns one A record per Ready Pod. The client picks one and connects straight to it: no cluster IP, no DNAT. Mark a Pod not Ready and it leaves the answer.",
        _ => "",
    }
}

fn comparison() -> Comparison {
    let row = |tab: Tab, cells: [&str; 5]| (Some(tab.value().to_string()), std::iter::once(tab.label()).chain(cells).map(String::from).collect());
    Comparison {
        caption: "The five types side by side".into(),
        header: ["type", "virtual IP", "DNS answer", "reachable from", "balanced by", "typical use"].map(String::from).to_vec(),
        rows: vec![
            row(Tab::ClusterIp, ["yes", "A: the cluster IP", "inside the cluster", "kube-proxy", "service to service"]),
            row(Tab::NodePort, ["yes, plus a port 30000–32767 on every node", "A: the cluster IP", "inside, and any node's address", "kube-proxy", "development, or behind a balancer of your own"]),
            row(Tab::LoadBalancer, ["yes, plus a node port and the balancer's address", "A: the cluster IP", "inside, and the internet", "the balancer, then kube-proxy", "one TCP or UDP service exposed to the world"]),
            row(Tab::ExternalName, ["no", "CNAME: a name outside", "wherever the name points", "nothing", "an alias for a database or API outside"]),
            row(Tab::Headless, ["no (clusterIP: None)", "A: each Ready Pod", "inside the cluster", "the client", "StatefulSets, gRPC, client-side balancing"]),
        ],
        note: "Ingress and Gateway API are not Service types. An Ingress or Gateway controller is a proxy running in Pods, usually behind one LoadBalancer Service; it reads each HTTP request's Host and path and forwards it to a ClusterIP Service, so one balancer can serve many sites.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::RData;
    use crate::sim::{Hop, HopKind};

    fn hops(s: &Scenario, i: usize) -> &[Hop] {
        &s.steps[i].hops
    }
    use crate::scenarios::{build as build_scenario, Params};

    fn with(pairs: &[(&str, &str)]) -> Scenario {
        let specs = params();
        let mut p = Params::defaults(&specs);
        for (k, v) in pairs {
            let spec = specs.iter().find(|s| s.key == *k).unwrap();
            p.insert(k, spec.parse(v).unwrap());
        }
        build_scenario(ENTRY.id, &p).unwrap()
    }

    fn last(s: &Scenario, i: usize) -> &crate::sim::View {
        s.steps[i].views.last().unwrap()
    }

    #[test]
    fn kubectl_shows_each_type_as_the_seed_describes() {
        let cell = |tab: &str, col: &str| {
            let s = with(&[("tab", tab)]);
            let name = if tab == "externalname" { "db" } else { "api" };
            last(&s, 0).kubectl.cell(name, col).unwrap().to_string()
        };
        assert_eq!(cell("clusterip", "CLUSTER-IP"), "10.96.0.50");
        assert_eq!(cell("nodeport", "PORT(S)"), "80:30080/TCP");
        assert_eq!(cell("externalname", "EXTERNAL-IP"), "mydb.example.com");
        assert_eq!(cell("externalname", "PORT(S)"), "<none>");
        assert_eq!(cell("headless", "CLUSTER-IP"), "None");
        // LoadBalancer: <pending> while the cloud builds, then the address.
        let s = with(&[("tab", "loadbalancer")]);
        let views = &s.steps[0].views;
        assert!(views.iter().any(|v| v.kubectl.cell("api", "EXTERNAL-IP") == Some("<pending>")));
        assert_eq!(views.last().unwrap().kubectl.cell("api", "EXTERNAL-IP"), Some("203.0.113.10"));
    }

    #[test]
    fn from_outside_the_cluster_ip_is_a_dropped_hop_with_a_typed_reason() {
        let s = with(&[("tab", "clusterip"), ("client", "laptop")]);
        let h = hops(&s, 2).last().unwrap();
        assert_eq!(h.kind, HopKind::Dropped);
        assert!(matches!(h.dropped, Some(DropReason::NoRoute { why: Unroutable::ServiceRange(_), .. })), "{:?}", h.dropped);
        assert_eq!(hops(&s, 2).len(), 1, "the packet never leaves the laptop");
    }

    #[test]
    fn headless_answers_one_record_per_ready_pod() {
        let a_records = |s: &Scenario| {
            hops(s, 1)
                .iter()
                .filter_map(|h| h.packet.as_ref()?.payload.as_ref())
                .find_map(|p| if let Payload::DnsAnswer(r) = p { Some(r.answer.len()) } else { None })
        };
        assert_eq!(a_records(&with(&[("tab", "headless")])), Some(3));
        assert_eq!(a_records(&with(&[("tab", "headless"), ("notready", "api-r8t6w")])), Some(2));
    }

    #[test]
    fn a_pod_reaches_the_cluster_ip_and_sees_the_reply_from_it() {
        let s = with(&[("tab", "clusterip")]);
        let st = &s.steps[2];
        let first = st.hops.first().unwrap().packet.as_ref().unwrap();
        let last = st.hops.last().unwrap().packet.as_ref().unwrap();
        assert_eq!(first.after.dst, SockAddr::new(API_IP, 80));
        assert_eq!(last.after.src, SockAddr::new(API_IP, 80), "un-DNATed by conntrack");
        assert!(st.hops.iter().any(|h| h.packet.as_ref().is_some_and(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat))));
        // Pod to Pod inside the cluster: no masquerade.
        assert!(!st.hops.iter().any(|h| h.packet.as_ref().is_some_and(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Snat))));
    }

    #[test]
    fn a_not_ready_pod_loses_its_rules_and_gets_no_traffic() {
        let s = with(&[("tab", "clusterip"), ("notready", "api-r8t6w,api-m3n9q")]);
        let node2 = s.nodes().nth(1).unwrap().id;
        let lines = |v: &crate::sim::View| v.node(node2).unwrap().iptables.iter().filter(|l| l.text.contains("10.244.2.7")).count();
        let st = &s.steps[0];
        assert!(st.views.iter().any(|v| lines(v) > 0), "the endpoint had rules");
        assert_eq!(lines(st.views.last().unwrap()), 0, "and lost them");
        // Every request now lands on the one Ready Pod.
        let to = s.steps[2].hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat))).unwrap();
        assert_eq!(to.after.dst, SockAddr::new(API_PODS[0].3, 8080));
        assert_eq!(to.could_reach.len(), 1);
    }

    #[test]
    fn local_policy_keeps_the_client_address_and_drops_without_a_local_pod() {
        let s = with(&[("tab", "nodeport"), ("client", "laptop"), ("local", "1")]);
        let st = &s.steps[2];
        let to_pod = st.hops.iter().find(|h| h.leg == crate::sim::Leg::Out && s.actor(h.to).is_some_and(|a| a.kind == ActorKind::Pod)).unwrap();
        assert_eq!(to_pod.packet.as_ref().unwrap().after.src.ip, LAPTOP);
        let s = with(&[("tab", "nodeport"), ("client", "laptop"), ("local", "1"), ("notready", "api-x4k2p")]);
        let h = s.steps[2].hops.last().unwrap();
        assert!(matches!(h.dropped, Some(DropReason::Filtered { rejected: false, .. })), "{:?}", h.dropped);
    }

    #[test]
    fn recreating_as_headless_shows_the_refusal_then_delete_and_create() {
        let s = with(&[("tab", "headless"), ("from", "nodeport")]);
        let st = &s.steps[0];
        let refused = st.hops.iter().find(|h| h.kind == HopKind::Dropped).expect("the update is refused");
        assert!(refused.detail.contains("spec.clusterIPs[0]: Invalid value: []string{\"None\"}: may not change once set"), "{}", refused.detail);
        assert!(st.hops.iter().any(|h| h.caption == "kubectl delete service"));
        assert_eq!(st.views.last().unwrap().kubectl.cell("api", "CLUSTER-IP"), Some("None"));
        // The lines that differ from the NodePort manifest are marked.
        let changed: Vec<&str> = st.manifest.changed.iter().map(|&i| st.manifest.lines[i].trim()).collect();
        assert!(changed.contains(&"type: ClusterIP") && changed.contains(&"clusterIP: None"), "{changed:?}");
    }

    #[test]
    fn externalname_resolves_through_coredns_and_upstream_and_keeps_host_db() {
        let s = with(&[("tab", "externalname")]);
        let dns = &s.steps[1];
        assert!(dns.hops.iter().any(|h| s.actor(h.to).is_some_and(|a| a.kind == ActorKind::Resolver)), "CoreDNS asks upstream");
        let answer = dns.hops.iter().rev().find_map(|h| match h.packet.as_ref()?.payload.as_ref()? {
            Payload::DnsAnswer(r) => Some(r.clone()),
            _ => None,
        });
        let answer = answer.unwrap();
        assert!(matches!(answer.answer[0].data, RData::Cname(ref t) if t == "mydb.example.com."), "{answer:?}");
        assert!(answer.answer.iter().any(|r| r.data == RData::A(MYDB)));
        let req = &s.steps[2];
        let reply = req.hops.last().unwrap().packet.as_ref().unwrap();
        assert_eq!(reply.payload, Some(Payload::HttpResponse { status: 404, reason: "Not Found".into() }));
        // The Pod's address never leaves the cluster: masqueraded on the way out.
        let out = req.hops.iter().find(|h| s.actor(h.to).is_some_and(|a| a.kind == ActorKind::OutsideHost)).unwrap();
        assert_eq!(out.packet.as_ref().unwrap().after.src.ip, ip(10, 0, 0, 11));
    }

    #[test]
    fn the_laptop_cannot_resolve_cluster_names() {
        let s = with(&[("client", "laptop")]);
        let answer = s.steps[1].hops.iter().find_map(|h| match h.packet.as_ref()?.payload.as_ref()? {
            Payload::DnsAnswer(r) => Some(r.rcode),
            _ => None,
        });
        assert_eq!(answer, Some(Rcode::NxDomain));
    }

    #[test]
    fn a_demo_stays_selected_only_while_its_presets_hold() {
        let s = with(&[("demo", "from-outside"), ("tab", "clusterip"), ("client", "laptop")]);
        assert_eq!(s.demo().map(|d| d.id.as_str()), Some("from-outside"));
        let s = with(&[("demo", "from-outside"), ("tab", "nodeport"), ("client", "laptop")]);
        assert!(s.demo().is_none());
    }
}
