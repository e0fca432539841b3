//! "Local lab": `curl http://localhost:30082` on a laptop against a kind
//! cluster, and what `type: LoadBalancer` needs on bare metal.
//!
//! The laptop runs Docker Engine; kind cluster `apollo11` is two
//! containers on Docker's `kind` network 172.18.0.0/16: the control plane
//! (172.18.0.2, Pods in 10.244.0.0/24) and a worker (172.18.0.3, Pods in
//! 10.244.1.0/24). Namespace `apollo-airlines-apps` holds two `booking`
//! Pods (one at 10.244.1.5:8082) and Service `booking`, a NodePort on
//! 30082 that `kind-config.yaml` maps from the laptop's port 30082.
//!
//! Ten steps in six stages: Docker's mapping (host to node); kube-proxy's
//! node port (node to Pod); why a node port is not for production; a
//! LoadBalancer Service nobody answers; MetalLB (an address, ARP, traffic
//! through the announcing node); Envoy Gateway (its own address, a request
//! routed by Host, an unknown Host answered 404). Each step carries the
//! commands that show its effect on a real cluster, with their output.
//!
//! Parameters: where the second booking Pod runs, externalTrafficPolicy,
//! Docker's userland proxy, and seeded random picks.

use super::words::ProxyWords;
use super::{About, Editor, dice_for, list, Choice, ChoiceStyle, Comparison, Edit, Entry, Evidence, Manifest, ParamSpec, Params, Recorder, Scenario, Step};
use crate::api::kubectl::ENDPOINTS_DEPRECATED;
use crate::api::server::{ApiServer, ApiServerConfig};
use crate::api::{Node, ObjectRef, Pod, Service, ServicePort, ServiceSpec, ServiceType, TrafficPolicy};
use crate::controllers::gateway::{BackendRef, Gateway, HttpRoute, Listener, RouteRule, NAMESPACE as EG_NS};
use crate::controllers::metallb::{IpAddressPool, L2Advertisement, MetalLb, SpeakerNode};
use crate::controllers::LbController;
use crate::dataplane::docker::{DockerEngine, DockerNetwork};
use crate::dataplane::kind::{KindConfig, KindNode, PortMapping, Role};
use crate::dataplane::kubeproxy::{KubeProxyConfig, ProxyMode};
use crate::dataplane::overlay::PodNetwork;
use crate::net::{ip, Cidr, Protocol, SockAddr};
use crate::sim::{Actor, ActorKind, ArpOp, Dial, DropReason, Hop, HostNet, Internet, Neighbour, NeighbourState, Outcome, RewriteKind, Route, View, World, Zone};
use std::net::Ipv4Addr;

pub const ENTRY: Entry = Entry {
    about: About {
        id: "local-lab",
        title: "Local lab: kind, Docker, MetalLB and a gateway",
        blurb: "curl localhost:30082 through Docker's port mapping and a node port, then MetalLB's address, ARP and an L7 gateway",
        params,
        editor: Some(Editor { file: |_| "booking.yaml", service: |p| booking(ServiceType::NodePort, Some(NODE_PORT), p.toggle("local")) }),
    },
    build,
    edit: Some(Edit { cluster: edit_cluster, build: build_edited }),
};

/// The lab as a user would try their own Service on it: MetalLB installed
/// with the lab's pool, so a LoadBalancer gets an address.
fn edit_cluster(p: &Params) -> World {
    let lab = Lab { spread: p.choice("placement") == Some("spread"), local: p.toggle("local"), hairpin: p.toggle("hairpin"), seed: p.seed() };
    let mut w = cluster(lab);
    install_metallb(&mut w);
    w.take_trace();
    w
}

fn build_edited(p: &Params, svc: Service) -> Scenario {
    super::edited::build(ENTRY.id, ENTRY.title, edit_cluster(p), p, "booking.yaml", svc)
}

const CLUSTER: &str = "apollo11";
pub const NS: &str = "apollo-airlines-apps";
const CP: &str = "apollo11-control-plane";
const WORKER: &str = "apollo11-worker";
const NODE_PORT: u16 = 30082;
const APP_PORT: u16 = 8082;
/// The port of 127.0.0.1 kind picked for the API server.
const API_HOST_PORT: u16 = 39023;
const KIND_NET: Cidr = Cidr { addr: ip(172, 18, 0, 0), prefix: 16 };
const BRIDGE_IP: Ipv4Addr = ip(172, 18, 0, 1);
const LAN_IP: Ipv4Addr = ip(192, 168, 1, 20);
const POD_NETWORK: Cidr = Cidr { addr: ip(10, 244, 0, 0), prefix: 16 };
pub const POOL: &str = "172.18.0.50-172.18.0.100";
const BOOKING_IP: Ipv4Addr = ip(10, 96, 143, 27);
const ENVOY_IP: Ipv4Addr = ip(10, 96, 58, 201);
const EG_CONTROLLER_IP: Ipv4Addr = ip(10, 96, 37, 112);
pub const GATEWAY_HOST: &str = "booking.apollo11.local";
pub const UNKNOWN_HOST: &str = "crew.apollo11.local";
/// The booking Pod the seed follows.
const SEED_POD: Ipv4Addr = ip(10, 244, 1, 5);

fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::choice("placement", "booking Pods", ChoiceStyle::Buttons, vec![Choice::new("worker", "Both on the worker"), Choice::new("spread", "One on each node")]),
        ParamSpec::toggle("local", "externalTrafficPolicy: Local"),
        ParamSpec::toggle("hairpin", "Docker without userland-proxy"),
        ParamSpec::proxy_mode(ProxyMode::Iptables),
        ParamSpec::pod_network(PodNetwork::Routed),
        ParamSpec::handshake(),
        ParamSpec::seed(),
        ParamSpec::manifest(),
    ]
}

/// The parameters, read once.
#[derive(Clone, Copy)]
struct Lab {
    /// The second booking Pod runs on the control plane (it tolerates the taint).
    spread: bool,
    local: bool,
    /// `"userland-proxy": false` in Docker's daemon.json.
    hairpin: bool,
    seed: Option<u64>,
}

/// The cluster's kind-config.yaml.
pub fn kind_config() -> KindConfig {
    let mapping = PortMapping { container_port: NODE_PORT, host_port: NODE_PORT, listen_address: None, protocol: Some(Protocol::Tcp) };
    KindConfig { name: CLUSTER.into(), nodes: vec![KindNode { role: Role::ControlPlane, extra_port_mappings: vec![mapping] }, KindNode { role: Role::Worker, extra_port_mappings: vec![] }] }
}

pub fn pool() -> IpAddressPool {
    IpAddressPool { name: "kind-pool".into(), namespace: "metallb-system".into(), addresses: vec![POOL.into()] }
}

pub fn l2_advertisement() -> L2Advertisement {
    L2Advertisement { name: "kind-l2".into(), namespace: "metallb-system".into(), ip_address_pools: vec!["kind-pool".into()] }
}

pub fn gateway() -> Gateway {
    Gateway { name: "apollo-gateway".into(), namespace: NS.into(), class: "eg".into(), listeners: vec![Listener { name: "http".into(), port: 80 }] }
}

pub fn route() -> HttpRoute {
    HttpRoute {
        name: "booking".into(),
        namespace: NS.into(),
        parent: "apollo-gateway".into(),
        hostnames: vec![GATEWAY_HOST.into()],
        rules: vec![RouteRule { path_prefix: "/".into(), backend: BackendRef { name: "booking".into(), port: APP_PORT } }],
    }
}

/// Service `booking` as a user writes it.
pub fn booking(type_: ServiceType, node_port: Option<u16>, local: bool) -> Service {
    Service {
        name: "booking".into(),
        namespace: NS.into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            type_,
            selector: [("app".to_string(), "booking".to_string())].into(),
            ports: vec![ServicePort { name: None, protocol: Protocol::Tcp, port: APP_PORT, target_port: APP_PORT, node_port }],
            external_traffic_policy: if local { TrafficPolicy::Local } else { TrafficPolicy::Cluster },
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

/// Envoy Gateway's own Service, as its Helm chart makes it.
fn envoy_gateway_service() -> Service {
    let port = |name: &str, p| ServicePort { name: Some(name.into()), protocol: Protocol::Tcp, port: p, target_port: p, node_port: None };
    Service {
        name: "envoy-gateway".into(),
        namespace: EG_NS.into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            selector: [("control-plane".to_string(), "envoy-gateway".to_string()), ("app.kubernetes.io/instance".into(), "eg".into()), ("app.kubernetes.io/name".into(), "gateway-helm".into())].into(),
            ports: vec![port("grpc", 18000), port("ratelimit", 18001), port("wasm", 18002), port("metrics", 19001)],
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

fn pod(name: &str, namespace: &str, labels: crate::api::Labels, node: &str, addr: Ipv4Addr, port: u16) -> Pod {
    Pod { name: name.into(), namespace: namespace.into(), labels, node_name: node.into(), ip: addr, container_port: port, port_name: Some("http".into()), ready: true }
}

/// The proxy Pod Envoy Gateway starts for the Gateway.
fn envoy_pod() -> Pod {
    let gw = gateway();
    pod(&format!("{}-5d8c7f9b6d-x7k2q", gw.proxy_name()), EG_NS, gw.proxy_labels(), WORKER, ip(10, 244, 1, 7), crate::controllers::gateway::container_port(80))
}

/// Docker on the laptop after `kind create cluster --config kind-config.yaml`.
fn docker(hairpin: bool) -> DockerEngine {
    let mut d = DockerEngine::new(!hairpin);
    d.networks.push(DockerNetwork::new("kind", KIND_NET, BRIDGE_IP));
    kind_config().create(&mut d, API_HOST_PORT).unwrap_or_else(|e| panic!("the lab's config is valid: {e}"));
    d
}

/// The laptop's network stack: loopback, Wi-Fi, docker0 and the kind bridge.
fn laptop_net(actor: crate::sim::ActorId, d: DockerEngine) -> HostNet {
    let bridge = d.network("kind").map(|n| n.bridge()).unwrap_or_default();
    let route = |dst: Cidr, iface: &str, src, via| Route { dst, iface: iface.into(), src, via };
    let routes = vec![
        route(Cidr::new(Ipv4Addr::UNSPECIFIED, 0), "wlan0", LAN_IP, Some(ip(192, 168, 1, 1))),
        route(Cidr::new(ip(127, 0, 0, 0), 8), "lo", Ipv4Addr::LOCALHOST, None),
        route(Cidr::new(ip(172, 17, 0, 0), 16), "docker0", ip(172, 17, 0, 1), None),
        route(KIND_NET, &bridge, BRIDGE_IP, None),
    ];
    let known: Vec<Neighbour> = d.containers.iter().map(|c| Neighbour { ip: c.ip, iface: bridge.clone(), mac: Some(c.mac), state: NeighbourState::Reachable }).collect();
    let mut h = HostNet::new(actor, vec![Ipv4Addr::LOCALHOST, LAN_IP, ip(172, 17, 0, 1), BRIDGE_IP], routes, Some(d));
    // kind has talked to both containers while it set them up.
    h.neighbours = known;
    h
}

/// The lab before the first step.
fn cluster(lab: Lab) -> World {
    let d = docker(lab.hairpin);
    let mut api = ApiServer::new(ApiServerConfig { service_cidr: Cidr::new(ip(10, 96, 0, 0), 16), ..Default::default() });
    api.nodes = [(CP, 0u8), (WORKER, 1)]
        .iter()
        .map(|(name, i)| Node { name: name.to_string(), internal_ip: d.container(name).map_or(Ipv4Addr::UNSPECIFIED, |c| c.ip), pod_cidr: Some(Cidr::new(ip(10, 244, *i, 0), 24)) })
        .collect();
    let app = || [("app".to_string(), "booking".to_string())].into();
    let (second_node, second_ip) = if lab.spread { (CP, ip(10, 244, 0, 5)) } else { (WORKER, ip(10, 244, 1, 6)) };
    api.pods = vec![pod("booking-7c5d9f8b6-h2x7q", NS, app(), WORKER, SEED_POD, APP_PORT), pod("booking-7c5d9f8b6-p9m4k", NS, app(), second_node, second_ip, APP_PORT)];
    for (r, a) in [(ObjectRef::new(NS, "booking"), BOOKING_IP), (ObjectRef::new(EG_NS, "envoy-gateway"), EG_CONTROLLER_IP), (ObjectRef::new(EG_NS, &gateway().proxy_name()), ENVOY_IP)] {
        api.cluster_ip_draws.insert(r, a);
    }
    let applied = [booking(ServiceType::NodePort, Some(NODE_PORT), lab.local), envoy_gateway_service()];
    for s in applied {
        api.apply_service(s).unwrap_or_else(|e| panic!("the lab's Services are valid: {e}"));
    }
    let proxy = KubeProxyConfig { cluster_cidr: Some(POD_NETWORK), ..Default::default() };
    let mut w = World::new(api, proxy, LbController::Nobody, Internet::default(), 20 * 60);
    w.masq_agent = crate::dataplane::cni::MasqAgent::Kindnet;
    w.set_egress_masquerade(POD_NETWORK);
    let bridge = d.network("kind").map(|n| n.bridge()).unwrap_or_default();
    let laptop = w.add_actor(Actor::component(ActorKind::Laptop, Zone::Outside, "Laptop (Docker Engine)", "Laptop", &format!("{BRIDGE_IP} on {bridge}")).at(BRIDGE_IP));
    w.hosts.push(laptop_net(laptop, d));
    w.add_actor(Actor::component(ActorKind::ApiServer, Zone::ControlPlane, "API server", "API server", &format!("in {CP}, 127.0.0.1:{API_HOST_PORT} on the laptop")));
    w.add_actor(Actor::component(ActorKind::Controller, Zone::ControlPlane, "MetalLB controller", "metallb-controller", "metallb-system, watches LoadBalancer Services"));
    w.add_actor(Actor::component(ActorKind::Controller, Zone::ControlPlane, "Envoy Gateway", "envoy-gateway", "envoy-gateway-system, watches Gateways"));
    w.focus = vec![ObjectRef::new(NS, "booking")];
    w
}

/// Fixed draws that lead kube-proxy's (and Envoy's) pick to `want` among
/// `among` (in the order the rules list them): every earlier endpoint is
/// passed over.
fn draws_for(among: &[Ipv4Addr], want: Ipv4Addr) -> Vec<f64> {
    let k = among.iter().position(|a| *a == want).unwrap_or(0);
    vec![0.99; k]
}

/// The ready booking endpoints, as the rules list them (by address).
fn booking_endpoints(w: &World) -> Vec<Ipv4Addr> {
    let mut a: Vec<Ipv4Addr> = w.api.pods.iter().filter(|p| p.namespace == NS && p.labels.get("app").is_some_and(|v| v == "booking") && p.ready).map(|p| p.ip).collect();
    crate::sort::natural(&mut a);
    a
}

pub fn build(p: &Params) -> Scenario {
    let lab = Lab { spread: p.choice("placement") == Some("spread"), local: p.toggle("local"), hairpin: p.toggle("hairpin"), seed: p.seed() };
    let mut w = cluster(lab);
    w.set_proxy_mode(p.proxy_mode());
    w.set_pod_network(p.pod_network());
    w.set_handshake(p.handshake());
    let mut rec = Recorder::new("booking.yaml", &booking(ServiceType::NodePort, Some(NODE_PORT), lab.local));
    host_to_pod(&mut w, &mut rec, lab);
    not_for_production(&mut w, &mut rec, lab);
    let why_not = rec.steps.len() - 1;
    no_controller(&mut w, &mut rec, lab);
    metallb(&mut w, &mut rec, lab);
    let gateway_step = rec.steps.len();
    envoy_gateway(&mut w, &mut rec, lab);
    // "Not for production" points to the step where the gateway comes, by its number as the reader sees it.
    let title = rec.steps.get(gateway_step).map(|st| st.title.clone()).unwrap_or_default();
    rec.steps[why_not].narration.push_str(&format!(" (step {}, {title}).", gateway_step + 1));
    Scenario { comparison: Some(comparison()), ..Scenario::recorded(ENTRY.id, ENTRY.title, p, &w, rec.steps) }
}

/// Runs one connection and records it as steps, cut after the hops for
/// which `cut` holds (the last such hop ends the first step).
fn split_connection(w: &mut World, rec: &mut Recorder, titles: [&str; 2], act: impl FnOnce(&mut World) -> Outcome, cut: impl Fn(&World, &Hop) -> bool) -> Outcome {
    let mut start = w.view();
    let outcome = act(w);
    let trace = w.take_trace_after(&mut start);
    let at = trace.iter().rposition(|(h, _)| cut(w, h)).map_or(0, |i| i + 1);
    let (first, rest) = trace.split_at(at);
    let manifest = Manifest { changed: vec![], ..rec.manifest.clone() };
    let mid = first.last().map_or_else(|| start.clone(), |(_, v)| v.clone());
    for (title, part, before) in [(titles[0], first, start), (titles[1], rest, mid)] {
        let views: Vec<View> = std::iter::once(before).chain(part.iter().map(|(_, v)| v.clone())).collect();
        let hops: Vec<Hop> = part.iter().map(|(h, _)| h.clone()).collect();
        let snapshot = super::snapshot_for(w, &hops);
        rec.steps.push(Step { title: title.into(), narration: String::new(), manifest: manifest.clone(), hops, views, evidence: vec![], snapshot });
    }
    outcome
}

/// Stages 1 and 2: curl http://localhost:30082, cut where the packet
/// reaches the control-plane node.
fn host_to_pod(w: &mut World, rec: &mut Recorder, lab: Lab) {
    let laptop = w.first(ActorKind::Laptop).expect("the lab has a laptop");
    let cp = w.node_actor(0).expect("control plane");
    let mut dice = dice_for(lab.seed, draws_for(&booking_endpoints(w), SEED_POD), 1);
    split_connection(
        w,
        rec,
        ["Host to node: Docker's port mapping", "NodePort to Pod: kube-proxy"],
        |w| w.dial(Dial::http(laptop, SockAddr::new(Ipv4Addr::LOCALHOST, NODE_PORT), &format!("localhost:{NODE_PORT}")), dice.as_mut()),
        |_, h| h.to == cp && h.leg == crate::sim::Leg::Out && h.from == laptop,
    );
    let n = rec.steps.len();
    let text = kind_config().yaml();
    let kind_manifest = Manifest { file: "kind-config.yaml".into(), lines: text.lines, changed: text.mapping_lines };
    rec.steps[n - 2].manifest = kind_manifest;
    rec.steps[n - 2].narration = narrate_host_to_node(w, &rec.steps[n - 2], lab);
    rec.steps[n - 1].narration = narrate_node_to_pod(w, &rec.steps[n - 1], lab);
    for st in &mut rec.steps[n - 2..] {
        st.evidence = evidence(w);
    }
}

fn bridge(w: &World) -> String {
    w.hosts.first().and_then(|h| h.docker.as_ref()).and_then(|d| d.network("kind")).map(|n| n.bridge()).unwrap_or_default()
}

fn narrate_host_to_node(w: &World, st: &Step, lab: Lab) -> String {
    let br = bridge(w);
    let mapping = format!(
        "kind created the cluster with kind-config.yaml, whose extraPortMappings (marked) ask Docker to publish port {NODE_PORT} of the laptop on port {NODE_PORT} of the {CP} container. Docker did that with its own rules and processes, not Kubernetes': `docker ps` lists the mapping, and the laptop's nat table has a DNAT in Docker's chain DOCKER for it."
    );
    let to_node = st.hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.after.dst.ip == ip(172, 18, 0, 2)));
    let Some(p) = to_node else { return format!("{mapping} The connection did not reach {CP}.") };
    let how = if lab.hairpin {
        let dnat = p.rewrites.iter().find(|r| r.kind == RewriteKind::Dnat).map_or_else(String::new, |r| format!("{} to {}", r.from, r.to));
        format!(
            "curl connects to localhost:{NODE_PORT}. With \"userland-proxy\": false in Docker's daemon.json, Docker's OUTPUT rule sends every local destination to the DOCKER chain, loopback included, and its DNAT rewrites {dnat}. Docker's POSTROUTING rule for local sources then masquerades 127.0.0.1 to {}, the laptop's address on the kind bridge {br} (Docker lets loopback addresses leave on it). The laptop's conntrack remembers both rewrites for the reply.",
            p.after.src.ip
        )
    } else {
        format!(
            "curl connects to localhost:{NODE_PORT}. With Docker's default userland proxy, Docker's OUTPUT rule skips 127.0.0.0/8 (`! -d 127.0.0.0/8`), so no rule rewrites the packet: it reaches docker-proxy, a Docker process listening on 0.0.0.0:{NODE_PORT}. docker-proxy opens a connection of its own to {}, from {}, the laptop's address on the kind bridge {br}. Docker's DNAT rule serves the same mapping for packets that come from other machines.",
            p.after.dst, p.after.src
        )
    };
    format!("{mapping} {how} The packet arrives at {CP} addressed to its own port {NODE_PORT}: the first system's work is done.")
}

fn narrate_node_to_pod(w: &World, st: &Step, lab: Lab) -> String {
    let pick = st.hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat) && !p.by_conntrack));
    let dropped = st.hops.iter().find_map(|h| h.dropped.as_ref());
    let Some(p) = pick.filter(|_| dropped.is_none()) else {
        return match dropped {
            Some(DropReason::Filtered { .. }) => format!(
                "The Service opens node port {NODE_PORT} on every node, and {CP} has {} like any other. But with externalTrafficPolicy: Local a node sends outside traffic only to booking Pods of its own, and {CP} has none, so {}. Docker's mapping points at the control plane only: with Local, curl localhost:{NODE_PORT} works only if a booking Pod runs there.",
                ProxyWords::of(w).node_port_rule(NODE_PORT),
                ProxyWords::of(w).local_drop()
            ),
            Some(reason) => format!("The connection did not reach a Pod: {}", reason.describe(&w.actors)),
            None => "The connection was answered without kube-proxy's DNAT.".into(),
        };
    };
    let node = p.decided_on.map_or(CP.to_string(), |n| w.actors.short(n).to_string());
    let target = p.after.dst;
    let pod_node = w.api.pods.iter().find(|x| x.ip == target.ip).map_or(String::new(), |x| x.node_name.clone());
    let others: Vec<String> = p.could_reach.iter().filter(|a| **a != target).map(|a| a.to_string()).collect();
    let cross = if pod_node == node { format!("That Pod runs on {node} itself, so the packet stays on the node.") } else { format!("That Pod runs on {pod_node}, so {node} forwards the packet over the Docker network to {pod_node}, which delivers it over the Pod's veth.") };
    let snat = if p.rewrites.iter().any(|r| r.kind == RewriteKind::Snat) {
        format!("Under externalTrafficPolicy: Cluster kube-proxy also masquerades the packet to {}, so the reply has to come back through {node}.", p.after.src.ip)
    } else {
        "Under externalTrafficPolicy: Local there is no masquerade: the Pod sees the laptop's bridge address.".to_string()
    };
    let back = if lab.hairpin { "the laptop's conntrack undoes Docker's DNAT and masquerade" } else { "docker-proxy copies the answer onto curl's own connection" };
    format!(
        "Service booking is a NodePort: kube-proxy on every node has {}. On {node} it {} the Service's chain, which picks a Ready booking Pod and DNATs to {target}{}. {cross} {snat} The reply retraces the way: conntrack on {node} undoes kube-proxy's rewrites, then {back}, and curl sees its answer from localhost:{NODE_PORT}.",
        ProxyWords::of(w).node_port_rule(NODE_PORT),
        ProxyWords::of(w).hands_to(),
        if others.is_empty() { String::new() } else { format!(" (it could as well have picked {})", list(&others)) }
    )
}

/// Stage 3: a node port outside the range is refused, and any node's
/// address answers on the port.
fn not_for_production(w: &mut World, rec: &mut Recorder, lab: Lab) {
    let laptop = w.first(ActorKind::Laptop).expect("laptop");
    let worker_ip = w.api.nodes[1].internal_ip;
    let low = booking(ServiceType::NodePort, Some(80), lab.local);
    let mut refusal = None;
    let mut dice = dice_for(lab.seed, draws_for(&booking_endpoints(w), SEED_POD), 3);
    let mut outcome = None;
    rec.step(w, "Why NodePort is not for production", Some(("booking.yaml", &low)), |w| {
        refusal = w.kubectl_apply(low.clone()).err();
        outcome = Some(w.dial(Dial::http(laptop, SockAddr::new(worker_ip, NODE_PORT), &format!("{worker_ip}:{NODE_PORT}")), dice.as_mut()));
    });
    let refused = refusal.map_or_else(|| "the API server accepted it".into(), |e| e.to_string());
    let answered = matches!(outcome, Some(Outcome::Answered { .. }));
    // The refused file changed nothing: the next change is marked against the stored one.
    rec.manifest.lines = super::manifest_yaml(&booking(ServiceType::NodePort, Some(NODE_PORT), lab.local));
    let st = rec.steps.last_mut().expect("just recorded");
    st.narration = format!(
        "Fine for a lab, poor at the edge of production, for three reasons. The port range: asking for nodePort 80, the port browsers use, is refused ({refused}); node ports are high ports, so users would have to type :{NODE_PORT}. Every node: curl http://{worker_ip}:{NODE_PORT}, the worker's own address, which Docker maps nothing to, is {} there as well, because the port is open on every node of the cluster; each node is exposed and has to be firewalled. No layer 7: the rules that carried the request matched its address and port only. Nothing read its Host header, so there is no routing by host or path, no TLS termination, no rewriting; that takes a proxy that speaks HTTP",
        if answered { "answered" } else { "caught by the node's rules" }
    );
    st.evidence = evidence(w);
}

/// Stage 4: type LoadBalancer with no controller in the cluster.
fn no_controller(w: &mut World, rec: &mut Recorder, lab: Lab) {
    let lb = booking(ServiceType::LoadBalancer, Some(NODE_PORT), lab.local);
    rec.step(w, "LoadBalancer without a controller", Some(("booking.yaml", &lb)), |w| {
        let _ = w.kubectl_apply(lb.clone());
        w.wait(300);
    });
    let ext = w.kubectl_get_svc().cell("booking", "EXTERNAL-IP").unwrap_or("?").to_string();
    let st = rec.steps.last_mut().expect("just recorded");
    st.narration = format!(
        "Changing the type to LoadBalancer keeps node port {NODE_PORT} and asks for one thing more: an address outside the cluster, which someone has to provide and write into status.loadBalancer. In a cloud the cloud-controller-manager watches for that and asks the cloud for a balancer. kind has none, and nothing else watches: the API server stores the change and no one answers. Five minutes later kubectl still shows EXTERNAL-IP {ext}, and it will for good. kube-proxy has nothing new to write either: without an address in the status there is no load-balancer rule."
    );
    st.evidence = evidence(w);
}

/// Stage 5: MetalLB gives booking an address, a speaker answers ARP for
/// it, and traffic goes through the announcing node.
/// MetalLB as the lab installs it: a speaker on each node (the control
/// plane's excluded from L2 announcements, as kind labels it), and the
/// lab's pool and L2Advertisement.
fn install_metallb(w: &mut World) {
    let speakers = vec![SpeakerNode { node: CP.into(), excluded: true }, SpeakerNode { node: WORKER.into(), excluded: false }];
    w.lb = LbController::MetalLb(MetalLb::new(speakers));
    w.add_speaker(0, "speaker-4xk2p");
    w.add_speaker(1, "speaker-9tq7m");
    configure_metallb(w, vec![pool()], vec![l2_advertisement()]);
}

fn metallb(w: &mut World, rec: &mut Recorder, lab: Lab) {
    rec.step(w, "MetalLB assigns an address", None, install_metallb);
    let mut lines = pool().yaml();
    lines.push("---".into());
    lines.extend(l2_advertisement().yaml());
    let changed = (0..lines.len()).collect();
    rec.set_manifest(Manifest { file: "metallb-pool.yaml".into(), lines, changed });
    let lb_ip = service_ip(w, NS, "booking");
    let st = rec.steps.last_mut().expect("just recorded");
    st.narration = narrate_metallb(w, lb_ip, lab.local);
    st.evidence = evidence(w);

    let Some(lb_ip) = lb_ip else { return };
    let laptop = w.first(ActorKind::Laptop).expect("laptop");
    let mut dice = dice_for(lab.seed, draws_for(&booking_endpoints(w), SEED_POD), 5);
    let outcome = split_connection(
        w,
        rec,
        [&format!("ARP: who has {lb_ip}?"), "Traffic through the announcing node"],
        |w| w.dial(Dial::http(laptop, SockAddr::new(lb_ip, APP_PORT), &format!("{lb_ip}:{APP_PORT}")), dice.as_mut()),
        |_, h| h.arp.is_some(),
    );
    let n = rec.steps.len();
    rec.steps[n - 2].narration = narrate_arp(w, &rec.steps[n - 2], lb_ip);
    rec.steps[n - 1].narration = narrate_lb_traffic(w, &rec.steps[n - 1], &outcome, lb_ip);
    for st in &mut rec.steps[n - 2..] {
        st.evidence = evidence(w);
    }
    if let Some(st) = rec.steps.get_mut(n - 2) {
        st.evidence.push(neighbours(w));
    }
}

/// `kubectl apply -f metallb-pool.yaml`: MetalLB's webhook checks the
/// pool, the controller takes the configuration and converges.
pub fn configure_metallb(w: &mut World, pools: Vec<IpAddressPool>, l2: Vec<L2Advertisement>) {
    let (Some(laptop), Some(api)) = (w.first(ActorKind::Laptop), w.first(ActorKind::ApiServer)) else { return };
    let result = w.lb.metallb_mut().map(|m| m.configure(pools, l2));
    match result {
        Some(Ok(())) => {
            w.message(laptop, api, "kubectl apply: IPAddressPool, L2Advertisement", "The API server stores IPAddressPool kind-pool and L2Advertisement kind-l2 in metallb-system, after MetalLB's validating webhook has checked the pool.".into());
            w.reconcile_lb();
        }
        Some(Err(e)) => w.refused(
            laptop,
            api,
            "kubectl apply: denied",
            format!("Error from server (Forbidden): error when creating \"metallb-pool.yaml\": admission webhook \"ipaddresspoolvalidationwebhook.metallb.io\" denied the request: {e}"),
        ),
        None => {}
    }
}

/// The address in a Service's status, if it has one.
fn service_ip(w: &World, ns: &str, name: &str) -> Option<Ipv4Addr> {
    w.api.service(ns, name)?.status.load_balancer_ingress.iter().find_map(|i| i.ip)
}

fn narrate_metallb(w: &World, lb_ip: Option<Ipv4Addr>, local: bool) -> String {
    let install = format!(
        "MetalLB is installed: a controller (a Deployment) and a speaker on every node (a DaemonSet on the host network). metallb-pool.yaml gives it addresses: IPAddressPool kind-pool holds {POOL}, on Docker's kind network {KIND_NET} but above the addresses Docker hands its containers (it counts up from .2), and L2Advertisement kind-l2 says to announce them in layer 2, by ARP."
    );
    let Some(ip) = lb_ip else { return format!("{install} The controller could not give booking an address; EXTERNAL-IP stays <pending>.") };
    let m = w.lb.metallb();
    let announcer = m.and_then(|m| m.announcer(ip)).map(str::to_string);
    let elect = match &announcer {
        Some(node) => format!(
            "Then the speakers agree on one node to announce {ip}. {CP} is out: kubeadm labelled it {}, and MetalLB's speakers respect that.{} Every speaker ranks the remaining candidates by SHA-256 of node name and address, and {node} comes first, so only its speaker will answer ARP for {ip}.",
            crate::controllers::metallb::EXCLUDE_LABEL,
            if local { " Under externalTrafficPolicy: Local only nodes with a ready booking Pod count." } else { "" }
        ),
        None => format!("No node may announce {ip}: with externalTrafficPolicy: Local only a node with a ready booking Pod and a speaker that is not excluded can."),
    };
    format!(
        "{install} The controller sees booking waiting and assigns {ip}, the first free address of the pool, in status.loadBalancer; EXTERNAL-IP is no longer <pending>. kube-proxy on every node adds {}, the load-balancer IP. {elect}",
        ProxyWords::of(w).address_rule(SockAddr::new(ip, APP_PORT))
    )
}

fn narrate_arp(w: &World, st: &Step, ip: Ipv4Addr) -> String {
    let br = bridge(w);
    let asks = st.hops.iter().filter(|h| h.arp.as_ref().is_some_and(|a| a.op == ArpOp::Request)).count();
    let reply = st.hops.iter().find_map(|h| h.arp.as_ref().filter(|a| a.op == ArpOp::Reply).map(|a| (a.clone(), h.from)));
    let start = format!(
        "curl http://{ip}:{APP_PORT}. The address is on the laptop's kind bridge {br}, so the kernel sends to it directly, but first it needs the Ethernet address behind it, and no container holds {ip}. It broadcasts an ARP request, who-has {ip}, which reaches every node on the bridge ({asks})."
    );
    match reply {
        Some((a, from)) => format!(
            "{start} The nodes' kernels ignore it (the address is on none of their interfaces), but MetalLB's speakers read ARP on the node's interface. The elected one, {} on {}, answers: {ip} is-at {}, the Ethernet address of its node's eth0. The laptop keeps that in its neighbour table (`ip neigh`), and from now on every frame for {ip} goes to that node. Should the node fail, the speakers elect another, which announces the address anew.",
            w.actors.short(from),
            w.actors.get(from).and_then(|a| a.parent).map_or("?", |n| w.actors.short(n)),
            a.sender_mac
        ),
        None => format!("{start} Nobody answers, so the kernel gives up: the connection fails with \"No route to host\"."),
    }
}

fn narrate_lb_traffic(w: &World, st: &Step, outcome: &Outcome, ip: Ipv4Addr) -> String {
    let pick = st.hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat) && !p.by_conntrack));
    let Some(p) = pick else {
        let why = match outcome {
            Outcome::Dropped { reason, .. } => reason.describe(&w.actors),
            Outcome::Answered { .. } => String::new(),
        };
        return format!("The packet to {ip} did not reach a Pod. {why}");
    };
    let node = p.decided_on.map_or_else(String::new, |n| w.actors.short(n).to_string());
    let pod_node = w.api.pods.iter().find(|x| x.ip == p.after.dst.ip).map_or(String::new(), |x| x.node_name.clone());
    let where_ = if pod_node == node { "a Pod on the node itself".to_string() } else { format!("a Pod on {pod_node}, across the Docker network") };
    format!(
        "The laptop sends the packet, still addressed to {ip}:{APP_PORT}, to the Ethernet address of {node}. {ip} is on none of {node}'s interfaces, but kube-proxy wrote {}, which catches it in {} and {} the same chains as the node port: DNAT to {}, {where_}. {} The reply comes back through {node}, whose conntrack puts {ip}:{APP_PORT} back as the source. No Docker port mapping was involved: MetalLB's address works for anything on the kind network, and the laptop is on it.",
        ProxyWords::of(w).address_rule(SockAddr::new(ip, APP_PORT)),
        ProxyWords::of(w).prerouting(),
        ProxyWords::of(w).hands_to(),
        p.after.dst,
        if p.rewrites.iter().any(|r| r.kind == RewriteKind::Snat) { "Under externalTrafficPolicy: Cluster the packet is masqueraded too." } else { "Under externalTrafficPolicy: Local it keeps the laptop's address as its source." }
    )
}

/// Stage 6: a Gateway and its route; Envoy Gateway's proxy gets an
/// address of its own, routes by Host, and answers an unknown Host 404.
fn envoy_gateway(w: &mut World, rec: &mut Recorder, lab: Lab) {
    let gw = gateway();
    let proxy = gw.proxy_name();
    w.focus.push(ObjectRef::new(EG_NS, &proxy));
    rec.step(w, "Envoy Gateway gets its own address", None, |w| install_gateway(w, gw.clone(), route()));
    let mut lines = gw.yaml();
    lines.push("---".into());
    lines.extend(route().yaml());
    let changed = (0..lines.len()).collect();
    rec.set_manifest(Manifest { file: "gateway.yaml".into(), lines, changed });
    let gw_ip = service_ip(w, EG_NS, &proxy);
    let st = rec.steps.last_mut().expect("just recorded");
    st.narration = narrate_gateway(w, gw_ip, &proxy);
    st.evidence = evidence(w);
    let Some(gw_ip) = gw_ip else { return };
    let laptop = w.first(ActorKind::Laptop).expect("laptop");
    for (title, host, salt) in [("Routed by Host", GATEWAY_HOST, 9), ("Unknown Host: 404 from the gateway", UNKNOWN_HOST, 10)] {
        let mut dice = dice_for(lab.seed, draws_for(&booking_endpoints(w), SEED_POD), salt);
        let mut outcome = None;
        rec.step(w, title, None, |w| outcome = Some(w.dial(Dial::http(laptop, SockAddr::new(gw_ip, 80), host), dice.as_mut())));
        let st = rec.steps.last_mut().expect("just recorded");
        st.narration = narrate_gateway_request(w, st, host, gw_ip, outcome.as_ref());
        st.evidence = evidence(w);
    }
}

/// `kubectl apply -f gateway.yaml`, and what Envoy Gateway's controller does.
pub fn install_gateway(w: &mut World, gw: Gateway, route: HttpRoute) {
    let (Some(laptop), Some(api)) = (w.first(ActorKind::Laptop), w.first(ActorKind::ApiServer)) else { return };
    let Some(eg) = w.actors.iter().find(|a| a.kind == ActorKind::Controller && a.short == "envoy-gateway").map(|a| a.id) else { return };
    w.message(laptop, api, "kubectl apply: Gateway, HTTPRoute", format!("The API server stores Gateway {} and HTTPRoute {} in {}.", gw.name, route.name, gw.namespace));
    w.message(api, eg, "watch → envoy-gateway", format!("Envoy Gateway's controller sees Gateway {} of its class {} and HTTPRoute {} attached to it, and translates them into Envoy's configuration.", gw.name, gw.class, route.name));
    w.gateway.gateways.push(gw.clone());
    w.gateway.routes.push(route);
    let pod = envoy_pod();
    w.message(eg, api, "create Deployment", format!("It creates Deployment {} in {EG_NS}, whose Pod {} starts on {WORKER} at {}.", gw.proxy_name(), pod.name, pod.ip));
    w.add_pod(pod);
    let _ = w.apply_from(eg, gw.proxy_service(), "create Service");
}

fn narrate_gateway(w: &World, gw_ip: Option<Ipv4Addr>, proxy: &str) -> String {
    let start = format!(
        "gateway.yaml holds a Gateway, apollo-gateway of class eg with one HTTP listener on port 80, and an HTTPRoute that sends Host {GATEWAY_HOST}, any path, to Service booking on port {APP_PORT}. Envoy Gateway's controller answers with an Envoy proxy of its own: Deployment and Service {proxy} in {EG_NS}. The Service is a LoadBalancer with externalTrafficPolicy: Local (Envoy Gateway's default), port 80 to Envoy's container port 10080."
    );
    let Some(ip) = gw_ip else { return format!("{start} MetalLB could not give it an address; it stays <pending>.") };
    let booking_ip = service_ip(w, NS, "booking").map_or_else(String::new, |b| format!(" ({b} belongs to booking)"));
    let node = w.lb.metallb().and_then(|m| m.announcer(ip)).unwrap_or("no node");
    format!("{start} MetalLB gives it {ip}, the next free address of the pool{booking_ip}. Under Local only a node that runs an Envoy Pod may announce it: {node}.")
}

fn narrate_gateway_request(w: &World, st: &Step, host: &str, gw_ip: Ipv4Addr, outcome: Option<&Outcome>) -> String {
    let arp = st.hops.iter().any(|h| h.arp.is_some());
    let envoy_detail = st.hops.iter().find(|h| w.actors.get(h.from).is_some_and(|a| a.kind == ActorKind::Gateway) && h.leg == crate::sim::Leg::Back).map(|h| h.detail.clone()).unwrap_or_default();
    let answer = match outcome {
        Some(Outcome::Answered { payload: Some(p), .. }) => p.summary(),
        Some(Outcome::Dropped { reason, .. }) => format!("nothing: {}", reason.describe(&w.actors)),
        _ => "an answer".into(),
    };
    let first = if arp { format!("The laptop first asks ARP for {gw_ip}, as for booking's address, and the announcing speaker answers. ") } else { String::new() };
    let conns = st.hops.iter().filter_map(|h| h.conn).collect::<std::collections::BTreeSet<_>>().len();
    format!(
        "curl -H \"Host: {host}\" http://{gw_ip}/. {first}kube-proxy on the announcing node DNATs the packet to the Envoy Pod; under Local there is no masquerade, so Envoy sees the laptop's address. {envoy_detail} curl gets {answer}. {}",
        if conns > 1 { format!("{conns} connections, each with its own hops: the gateway is a proxy, not a rewrite.") } else { "One connection only: Envoy never opened one to a backend.".to_string() }
    )
}

/// The commands of the seed's evidence list, with the output the model
/// predicts for them now.
pub fn evidence(w: &World) -> Vec<Evidence> {
    let ports = w.hosts.first().and_then(|h| h.docker.as_ref()).map(|d| d.ps_ports(CLUSTER)).unwrap_or_default();
    let table = |t: crate::sim::KubectlTable, purpose: &str, stderr: String| {
        let stdout = if t.rows.is_empty() { String::new() } else { t.render() };
        let stderr = format!("{stderr}{}", if t.rows.is_empty() { t.notice.clone().unwrap_or_default() } else { String::new() });
        Evidence { command: t.command.clone(), purpose: purpose.into(), stdout, stderr, table: Some(t) }
    };
    vec![
        Evidence {
            command: format!("docker ps --filter name={CLUSTER} --format \"{{{{.Ports}}}}\""),
            purpose: "Docker host-port mapping of the kind containers".into(),
            stdout: ports.iter().map(|l| format!("{l}\n")).collect(),
            stderr: String::new(),
            table: None,
        },
        table(w.kubectl_get_svc_in(NS, true), "Service booking: type, node port, external IP", String::new()),
        table(w.kubectl_get_svc_in(EG_NS, false), "the gateway's address from MetalLB", String::new()),
        table(w.kubectl_get_endpoints_in(NS), "Ready Pods behind booking", format!("{ENDPOINTS_DEPRECATED}\n")),
    ]
}

/// `ip neigh show dev BRIDGE` on the laptop.
fn neighbours(w: &World) -> Evidence {
    let br = bridge(w);
    let lines: Vec<String> = w.hosts.first().map(|h| h.neighbours.iter().filter(|n| n.iface == br).map(|n| n.render().replace(&format!(" dev {br}"), "")).collect()).unwrap_or_default();
    Evidence { command: format!("ip neigh show dev {br}"), purpose: "the laptop's neighbour table after ARP".into(), stdout: lines.iter().map(|l| format!("{l}\n")).collect(), stderr: String::new(), table: None }
}

fn comparison() -> Comparison {
    let row = |cells: [&str; 3]| (None, cells.iter().map(|c| c.to_string()).collect());
    Comparison {
        caption: "How far each way of exposing booking reaches".into(),
        header: ["type", "reachable at", "good for"].map(String::from).to_vec(),
        rows: vec![
            row(["ClusterIP", "inside the cluster only", "backends other Pods call: services, databases"]),
            row(["NodePort", "any node's address, on a port from 30000–32767", "local labs and quick manual checks"]),
            row(["LoadBalancer (MetalLB or a cloud)", "an address of its own, outside the cluster", "the cluster's edge: gateways and HTTP(S) proxies"]),
            row(["Envoy Gateway / Ingress", "HTTP routing by host and path, behind one LoadBalancer", "many hosts and paths behind one address"]),
        ],
        note: "A LoadBalancer Service carries TCP or UDP to a port; it knows nothing of HTTP. A gateway is a proxy in Pods behind such a Service: it reads each request and picks a backend, so one address serves many sites.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::build as build_scenario;
    use crate::sim::{HopKind, Leg, Payload};

    fn with(pairs: &[(&str, &str)]) -> Scenario {
        let specs = params();
        let mut p = Params::defaults(&specs);
        for (k, v) in pairs {
            let spec = specs.iter().find(|s| s.key == *k).unwrap();
            p.insert(k, spec.parse(v).unwrap());
        }
        build_scenario(ENTRY.id, &p).unwrap()
    }

    fn ev<'a>(st: &'a Step, command: &str) -> &'a Evidence {
        st.evidence.iter().find(|e| e.command.starts_with(command)).unwrap_or_else(|| panic!("{command} in {:?}", st.evidence.iter().map(|e| &e.command).collect::<Vec<_>>()))
    }

    #[test]
    fn every_stage_builds_with_its_evidence() {
        let s = with(&[]);
        let titles: Vec<&str> = s.steps.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(titles.len(), 10, "{titles:?}");
        for st in &s.steps {
            assert!(!st.hops.is_empty(), "{} has hops", st.title);
            assert!(!st.narration.is_empty(), "{} is narrated", st.title);
            assert_eq!(st.evidence.iter().filter(|e| e.command.starts_with("kubectl") || e.command.starts_with("docker")).count(), 4, "{}", st.title);
        }
        assert_eq!(s.steps[0].manifest.file, "kind-config.yaml");
        assert_eq!(ev(&s.steps[0], "docker ps").stdout, "\n0.0.0.0:30082->30082/tcp, 127.0.0.1:39023->6443/tcp\n");
    }

    #[test]
    fn external_ip_goes_from_pending_to_the_pool() {
        let s = with(&[]);
        let cell = |i: usize, name: &str| ev(&s.steps[i], "kubectl get svc -n apollo-airlines-apps").table.as_ref().unwrap().cell(name, "EXTERNAL-IP").map(str::to_string);
        assert_eq!(cell(0, "booking").as_deref(), Some("<none>"), "a NodePort");
        assert_eq!(cell(3, "booking").as_deref(), Some("<pending>"), "nobody answers");
        assert_eq!(cell(4, "booking").as_deref(), Some("172.18.0.50"), "MetalLB's first address");
        let gw = |i: usize| ev(&s.steps[i], "kubectl get svc -n envoy-gateway-system").table.clone().unwrap();
        assert_eq!(gw(4).cell("envoy-gateway", "TYPE"), Some("ClusterIP"));
        assert_eq!(gw(7).cell(&gateway().proxy_name(), "EXTERNAL-IP"), Some("172.18.0.51"));
        // The gateway's proxy has no Service before stage 6.
        assert_eq!(gw(4).cell(&gateway().proxy_name(), "EXTERNAL-IP"), None);
    }

    #[test]
    fn the_arp_exchange_is_answered_by_the_elected_speaker_only() {
        let s = with(&[]);
        let st = &s.steps[5];
        let arp: Vec<&Hop> = st.hops.iter().filter(|h| h.arp.is_some()).collect();
        assert_eq!(arp.len(), 3, "two who-has, one is-at");
        assert!(arp.iter().all(|h| h.kind == HopKind::Dns && h.packet.is_none()));
        let reply = arp.iter().find(|h| h.leg == Leg::Back).unwrap();
        let from = s.actor(reply.from).unwrap();
        assert_eq!(from.kind, ActorKind::Speaker);
        assert_eq!(s.actor(from.parent.unwrap()).unwrap().label, WORKER);
        assert!(ev(st, "ip neigh").stdout.starts_with("172.18.0.2 lladdr"));
        assert!(ev(st, "ip neigh").stdout.contains("172.18.0.50 lladdr"));
    }

    #[test]
    fn the_gateway_routes_by_host_with_two_connections_and_404s_an_unknown_host() {
        let s = with(&[]);
        let conns = |i: usize| s.steps[i].hops.iter().filter_map(|h| h.conn).collect::<std::collections::BTreeSet<_>>().len();
        let last_payload = |i: usize| s.steps[i].hops.last().and_then(|h| h.packet.as_ref()).and_then(|p| p.payload.clone());
        assert_eq!(conns(8), 2);
        assert_eq!(last_payload(8), Some(Payload::HttpResponse { status: 200, reason: "OK".into() }));
        // Envoy dials the Pod, not the cluster IP.
        let upstream = s.steps[8].hops.iter().find(|h| s.actor(h.from).is_some_and(|a| a.kind == ActorKind::Gateway) && h.leg == Leg::Out).unwrap();
        assert_eq!(upstream.packet.as_ref().unwrap().after.dst, SockAddr::new(SEED_POD, APP_PORT));
        assert_eq!(conns(9), 1);
        assert_eq!(last_payload(9), Some(Payload::HttpResponse { status: 404, reason: "Not Found".into() }));
    }

    #[test]
    fn docker_either_proxies_or_dnats_localhost() {
        let proxied = with(&[]);
        let st = &proxied.steps[0];
        assert!(st.hops.iter().all(|h| h.packet.as_ref().is_none_or(|p| p.rewrites.is_empty())), "docker-proxy rewrites nothing");
        assert_eq!(st.hops.iter().filter_map(|h| h.conn).collect::<std::collections::BTreeSet<_>>().len(), 2);
        let hairpin = with(&[("hairpin", "1")]);
        let first = hairpin.steps[0].hops[0].packet.as_ref().unwrap();
        assert_eq!(first.after.dst, SockAddr::new(ip(172, 18, 0, 2), NODE_PORT));
        assert_eq!(first.after.src.ip, BRIDGE_IP);
        assert!(first.matched.iter().any(|m| m.text.contains("-j DNAT --to-destination 172.18.0.2:30082")));
        // The reply is delivered after the laptop's conntrack undoes both.
        let last = hairpin.steps[1].hops.last().unwrap();
        assert_eq!((last.from, last.to), (hairpin.steps[0].hops[0].from, hairpin.steps[0].hops[0].from));
        let p = last.packet.as_ref().unwrap();
        assert!(p.by_conntrack && p.after.src == SockAddr::new(Ipv4Addr::LOCALHOST, NODE_PORT), "{p:?}");
    }

    #[test]
    fn local_policy_drops_on_a_node_without_a_booking_pod() {
        for hairpin in ["0", "1"] {
            let s = with(&[("local", "1"), ("hairpin", hairpin)]);
            let h = s.steps[1].hops.iter().find(|h| h.dropped.is_some()).expect("a drop");
            assert!(matches!(h.dropped, Some(DropReason::Filtered { rejected: false, .. })), "{h:?}");
            assert!(s.steps[1].narration.contains("has none"), "{}", s.steps[1].narration);
        }
        // With a Pod on the control plane, it is served there, unmasqueraded.
        let s = with(&[("local", "1"), ("placement", "spread")]);
        let to_pod = s.steps[1].hops.iter().find(|h| h.packet.as_ref().is_some_and(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat))).unwrap();
        assert_eq!(to_pod.packet.as_ref().unwrap().after.dst.ip, ip(10, 244, 0, 5));
        assert!(!to_pod.packet.as_ref().unwrap().rewrites.iter().any(|r| r.kind == RewriteKind::Snat));
    }

    /// The lab's world up to MetalLB's address for booking (stage 5's first step).
    fn world_with_metallb(pools: Vec<IpAddressPool>) -> World {
        let lab = Lab { spread: false, local: false, hairpin: false, seed: None };
        let mut w = cluster(lab);
        let _ = w.kubectl_apply(booking(ServiceType::LoadBalancer, Some(NODE_PORT), false));
        w.lb = LbController::MetalLb(MetalLb::new(vec![SpeakerNode { node: CP.into(), excluded: true }, SpeakerNode { node: WORKER.into(), excluded: false }]));
        w.add_speaker(0, "speaker-4xk2p");
        w.add_speaker(1, "speaker-9tq7m");
        configure_metallb(&mut w, pools, vec![l2_advertisement()]);
        w.take_trace();
        w
    }

    fn failures(trace: &[(Hop, View)]) -> Vec<String> {
        trace.iter().filter(|(h, _)| h.kind == HopKind::Dropped).map(|(h, _)| h.detail.clone()).collect()
    }

    #[test]
    fn two_services_asking_for_one_address_get_metallbs_refusal() {
        let mut w = world_with_metallb(vec![pool()]);
        assert_eq!(service_ip(&w, NS, "booking"), Some(ip(172, 18, 0, 50)));
        let mut admin = booking(ServiceType::LoadBalancer, None, false);
        admin.name = "booking-admin".into();
        admin.annotations.insert(crate::controllers::metallb::ANNOTATION_IPS.into(), "172.18.0.50".into());
        w.kubectl_apply(admin.clone()).unwrap();
        let f = failures(&w.take_trace());
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("Failed to allocate IP for \"apollo-airlines-apps/booking-admin\": can't change sharing key for \"apollo-airlines-apps/booking-admin\", address also in use by apollo-airlines-apps/booking"), "{}", f[0]);
        assert_eq!(w.kubectl_get_svc_in(NS, false).cell("booking-admin", "EXTERNAL-IP"), Some("<pending>"));
        // Asking by spec.loadBalancerIP for a free address is honoured.
        admin.annotations.clear();
        admin.spec.load_balancer_ip = Some(ip(172, 18, 0, 77));
        w.kubectl_apply(admin).unwrap();
        assert!(failures(&w.take_trace()).is_empty());
        assert_eq!(service_ip(&w, NS, "booking-admin"), Some(ip(172, 18, 0, 77)));
        assert_eq!(w.lb.metallb().unwrap().announcer(ip(172, 18, 0, 77)), Some(WORKER));
    }

    #[test]
    fn an_exhausted_pool_leaves_the_gateway_pending_until_an_address_is_freed() {
        let one = IpAddressPool { addresses: vec!["172.18.0.50/32".into()], ..pool() };
        let mut w = world_with_metallb(vec![one]);
        install_gateway(&mut w, gateway(), route());
        let f = failures(&w.take_trace());
        assert!(f.iter().any(|d| d.contains("Failed to allocate IP for \"envoy-gateway-system/envoy-apollo-airlines-apps-apollo-gateway-681e3ed2\": no available IPs")), "{f:?}");
        assert_eq!(w.kubectl_get_svc_in(EG_NS, false).cell(&gateway().proxy_name(), "EXTERNAL-IP"), Some("<pending>"));
        // booking goes back to a NodePort: its address is released and the gateway gets it.
        w.kubectl_apply(booking(ServiceType::NodePort, Some(NODE_PORT), false)).unwrap();
        let trace = w.take_trace();
        assert!(trace.iter().any(|(h, _)| h.caption == "release 172.18.0.50"), "{:?}", trace.iter().map(|(h, _)| &h.caption).collect::<Vec<_>>());
        assert_eq!(service_ip(&w, EG_NS, &gateway().proxy_name()), Some(ip(172, 18, 0, 50)));
        assert_eq!(service_ip(&w, NS, "booking"), None);
    }

    #[test]
    fn a_bad_pool_is_denied_by_metallbs_webhook_and_changes_nothing() {
        let w = world_with_metallb(vec![IpAddressPool { addresses: vec!["172.18.0.100-172.18.0.50".into()], ..pool() }]);
        assert_eq!(service_ip(&w, NS, "booking"), None, "no pool, no address");
        let mut w = world_with_metallb(vec![pool()]);
        configure_metallb(&mut w, vec![IpAddressPool { addresses: vec!["172.18.0.300-172.18.0.310".into()], ..pool() }], vec![l2_advertisement()]);
        let f = failures(&w.take_trace());
        assert!(f[0].starts_with("Error from server (Forbidden): error when creating \"metallb-pool.yaml\": admission webhook \"ipaddresspoolvalidationwebhook.metallb.io\" denied the request: parsing address pool kind-pool: invalid CIDR"), "{f:?}");
        assert_eq!(service_ip(&w, NS, "booking"), Some(ip(172, 18, 0, 50)), "the old configuration stays");
    }

    #[test]
    fn a_pool_off_the_kind_network_is_accepted_but_unreachable_from_the_laptop() {
        // Neither MetalLB nor Docker refuses it; it just does not work:
        // the laptop routes the address to its default gateway, not to the
        // kind bridge, so no ARP is sent and nothing answers.
        let mut w = world_with_metallb(vec![IpAddressPool { addresses: vec!["172.19.0.50-172.19.0.100".into()], ..pool() }]);
        assert_eq!(service_ip(&w, NS, "booking"), Some(ip(172, 19, 0, 50)));
        let laptop = w.first(ActorKind::Laptop).unwrap();
        let out = w.dial(Dial::tcp(laptop, SockAddr::new(ip(172, 19, 0, 50), APP_PORT)), &mut crate::dataplane::netfilter::FixedDraws::new(vec![]));
        assert!(matches!(out, Outcome::Dropped { reason: DropReason::NoRoute { .. }, .. }), "{out:?}");
        assert!(!w.take_trace().iter().any(|(h, _)| h.arp.is_some()));
    }

    #[test]
    fn an_address_nobody_announces_fails_arp() {
        // Local, and the only booking Pods on the excluded control plane.
        let lab = Lab { spread: false, local: true, hairpin: false, seed: None };
        let mut w = cluster(lab);
        for p in w.api.pods.iter_mut() {
            p.node_name = CP.into();
        }
        let _ = w.kubectl_apply(booking(ServiceType::LoadBalancer, Some(NODE_PORT), true));
        w.lb = LbController::MetalLb(MetalLb::new(vec![SpeakerNode { node: CP.into(), excluded: true }, SpeakerNode { node: WORKER.into(), excluded: false }]));
        w.add_speaker(0, "speaker-4xk2p");
        w.add_speaker(1, "speaker-9tq7m");
        configure_metallb(&mut w, vec![pool()], vec![l2_advertisement()]);
        assert_eq!(w.lb.metallb().unwrap().announcer(ip(172, 18, 0, 50)), None);
        w.take_trace();
        let laptop = w.first(ActorKind::Laptop).unwrap();
        let out = w.dial(Dial::tcp(laptop, SockAddr::new(ip(172, 18, 0, 50), APP_PORT)), &mut crate::dataplane::netfilter::FixedDraws::new(vec![]));
        assert!(matches!(out, Outcome::Dropped { reason: DropReason::NoNeighbour { .. }, .. }), "{out:?}");
        let trace = w.take_trace();
        assert_eq!(trace.iter().filter(|(h, _)| h.arp.is_some()).count(), 2, "two who-has, no answer");
        assert!(trace.last().unwrap().1.host(laptop).unwrap().neighbours.iter().any(|n| n.starts_with("172.18.0.50 dev") && n.ends_with("FAILED")));
    }

    #[test]
    fn links_carry_the_labs_parameters() {
        let parsed = crate::link::parse("#/local-lab/6/end?placement=spread&local=1&hairpin=1&seed=4");
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        let l = &parsed.link;
        assert_eq!((l.scenario.as_str(), l.step, l.params.choice("placement"), l.params.toggle("local"), l.params.toggle("hairpin"), l.params.seed()), ("local-lab", 5, Some("spread"), true, true, Some(4)));
        assert_eq!(crate::link::format(l), "#/local-lab/6/end?placement=spread&local=1&hairpin=1&seed=4");
        let bad = crate::link::parse("#/local-lab/11?placement=moon");
        assert_eq!(bad.problems.len(), 2, "{:?}", bad.problems);
    }

    #[test]
    fn a_host_port_mapped_twice_is_refused_by_docker() {
        let mut c = kind_config();
        c.nodes[1].extra_port_mappings = c.nodes[0].extra_port_mappings.clone();
        let mut d = DockerEngine::new(true);
        d.networks.push(DockerNetwork::new("kind", KIND_NET, BRIDGE_IP));
        let e = c.create(&mut d, API_HOST_PORT).unwrap_err().to_string();
        assert!(e.contains("on endpoint apollo11-worker (") && e.ends_with("Bind for 0.0.0.0:30082 failed: port is already allocated"), "{e}");
    }
}
