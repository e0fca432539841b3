//! "NodePort and LoadBalancer": five steps from a ClusterIP Service to one
//! public address in front of private Pods.
//!
//! Three nodes, two ready `web` Pods (none on Node-2). Service `web` becomes
//! a NodePort, the laptop dials Node-2 directly, the Service becomes a
//! LoadBalancer, and a connection goes through the cloud's balancer.

use super::words::ProxyWords;
use super::{About, Editor, dice_for, list, Edit, Entry, ParamSpec, Params, Recorder, Scenario};
use crate::api::server::{ApiServer, ApiServerConfig};
use crate::api::{Node, ObjectRef, Pod, Service, ServicePort, ServiceSpec, ServiceType};
use crate::controllers::cloud::{CloudController, CloudProvider, Delivery};
use crate::controllers::LbController;
use crate::dataplane::iptables::Purpose;
use crate::dataplane::kubeproxy::{KubeProxyConfig, ProxyMode};
use crate::dataplane::overlay::PodNetwork;
use crate::net::{ip, Cidr, Protocol, SockAddr};
use crate::sim::{Actor, ActorKind, Dial, Hop, Internet, Outcome, PacketHop, RewriteKind, View, World, Zone};

pub const ENTRY: Entry = Entry {
    about: About {
        id: "nodeport-loadbalancer",
        title: "NodePort and LoadBalancer",
        blurb: "Five steps from a node port to a cloud balancer in front of private Pods",
        params,
        editor: Some(Editor { file: |_| "web.yaml", service: |_| web_service(ServiceType::NodePort, Some(31000)) }),
    },
    build,
    edit: Some(Edit { cluster: |_| cluster(), build: build_edited }),
};

fn params() -> Vec<ParamSpec> {
    vec![ParamSpec::proxy_mode(ProxyMode::Iptables), ParamSpec::pod_network(PodNetwork::Routed), ParamSpec::handshake(), ParamSpec::seed(), ParamSpec::manifest()]
}

/// The user's Service on the story's cluster, in place of the five steps.
fn build_edited(p: &Params, svc: Service) -> Scenario {
    super::edited::build(ENTRY.id, ENTRY.title, cluster(), p, "web.yaml", svc)
}

/// The laptop's address, on the nodes' network over a VPN.
const LAPTOP: std::net::Ipv4Addr = ip(198, 51, 100, 23);

/// Service `web` of the story: port 80 to 8080 on Pods labelled `app: web`.
pub(crate) fn web_service(type_: ServiceType, node_port: Option<u16>) -> Service {
    Service {
        name: "web".into(),
        namespace: "default".into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            type_,
            selector: [("app".to_string(), "web".to_string())].into(),
            ports: vec![ServicePort { name: None, protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port }],
            cluster_ip: None,
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    }
}

/// The cluster of the story: three nodes, two ready `web` Pods (none on
/// Node-2), Service `web` of type ClusterIP, a cloud with a pool of
/// public addresses, and the laptop, API server and
/// cloud-controller-manager as actors.
pub fn cluster() -> World {
    let mut api = ApiServer::new(ApiServerConfig::default());
    api.nodes = (1..=3u8).map(|i| Node { name: format!("node-{i}"), internal_ip: ip(10, 0, 0, 10 + i), pod_cidr: Some(Cidr::new(ip(10, 244, i, 0), 24)) }).collect();
    let pod = |name: &str, node: &str, addr| Pod {
        name: name.into(),
        namespace: "default".into(),
        labels: [("app".to_string(), "web".to_string())].into(),
        node_name: node.into(),
        ip: addr,
        container_port: 8080,
        port_name: Some("http".into()),
        ready: true,
    };
    api.pods = vec![pod("web-6b8f9c7d5-x2klp", "node-1", ip(10, 244, 1, 5)), pod("web-6b8f9c7d5-q7rtm", "node-3", ip(10, 244, 3, 9))];
    // Created before the story begins, as a plain ClusterIP Service.
    api.apply_service(web_service(ServiceType::ClusterIP, None)).unwrap_or_else(|e| panic!("built-in Service is valid: {e}"));
    let cloud = CloudProvider { free_ips: (7..=30).map(|d| ip(203, 0, 113, d)).collect(), provisioning_secs: 40, balancers: vec![] };
    let proxy = KubeProxyConfig { cluster_cidr: Some(Cidr::new(ip(10, 244, 0, 0), 16)), ..Default::default() };
    let internet = Internet { reaches_nodes: true, ..Default::default() };
    let mut w = World::new(api, proxy, LbController::Cloud(CloudController { provider: cloud }), internet, 25 * 60);
    w.add_actor(Actor::component(ActorKind::Laptop, Zone::Outside, "Laptop", "Laptop", &LAPTOP.to_string()).at(LAPTOP));
    w.add_actor(Actor::component(ActorKind::LoadBalancer, Zone::Outside, "Cloud load balancer", "Load balancer", ""));
    w.add_actor(Actor::component(ActorKind::ApiServer, Zone::ControlPlane, "API server", "API server", "kube-apiserver"));
    w.add_actor(Actor::component(ActorKind::Controller, Zone::ControlPlane, "cloud-controller-manager", "cloud-controller-manager", "watches LoadBalancer Services"));
    w.focus = vec![ObjectRef::new("default", "web")];
    w
}

/// The five steps of "NodePort and LoadBalancer".
pub fn build(p: &Params) -> Scenario {
    let seed = p.seed();
    let mut w = cluster();
    w.set_proxy_mode(p.proxy_mode());
    w.set_pod_network(p.pod_network());
    w.set_handshake(p.handshake());
    let laptop = w.first(ActorKind::Laptop).expect("the story has a laptop");
    let mut rec = Recorder::new("web.yaml", w.api.service("default", "web").expect("web exists"));
    let nodes_without_pods: Vec<String> = (0..w.api.nodes.len())
        .filter(|&i| !w.api.pods.iter().any(|p| p.node_name == w.api.nodes[i].name && p.ready))
        .filter_map(|i| w.node_actor(i))
        .map(|a| w.actors.short(a).to_string())
        .collect();

    // 1. type NodePort.
    let np_svc = web_service(ServiceType::NodePort, Some(31000));
    rec.step(&mut w, "Type NodePort", Some(("web.yaml", &np_svc)), |w| {
        let _ = w.kubectl_apply(np_svc.clone());
    });
    narrate_nodeport(&w, &mut rec, &nodes_without_pods);

    // 2. dial Node-2 directly.
    let mut dice = dice_for(seed, vec![0.75], 2);
    let node2 = w.api.nodes[1].internal_ip;
    rec.step(&mut w, "Dial Node-2", None, |w| {
        w.dial(Dial::tcp(laptop, SockAddr::new(node2, 31000)), dice.as_mut());
    });
    narrate_dial_node(&w, &mut rec, node2);

    // 3. type LoadBalancer.
    let lb_svc = web_service(ServiceType::LoadBalancer, Some(31000));
    rec.step(&mut w, "Type LoadBalancer", Some(("web.yaml", &lb_svc)), |w| {
        let _ = w.kubectl_apply(lb_svc.clone());
        let secs = w.lb.cloud().map_or(0, |c| c.provisioning_secs);
        w.wait(secs);
    });
    let lb_ip = balancer_ip(&w).unwrap_or(ip(203, 0, 113, 7));
    if let Some(st) = rec.steps.last_mut() {
        st.narration = format!(
            "Changing the type to LoadBalancer keeps node port 31000. Every kube-proxy sees the change at once, but nothing in its rules changes yet. The cloud-controller-manager notices the Service too, and asks the cloud for a balancer that forwards port 80 to 31000 on every node. The cloud builds it asynchronously: until it is ready, status.loadBalancer is empty and kubectl shows EXTERNAL-IP <pending>. When it is ready, the controller writes {lb_ip} into status.loadBalancer.ingress, and kube-proxy adds a rule for that address too."
        );
    }

    // 4 and 5: one connection through the balancer, split where it reaches the node.
    balancer_steps(&mut w, &mut rec, seed, lb_ip);

    Scenario { what_if: Some("ipMode VIP".into()), ..Scenario::recorded(ENTRY.id, ENTRY.title, p, &w, rec.steps) }
}

fn balancer_ip(w: &World) -> Option<std::net::Ipv4Addr> {
    let cloud = w.lb.cloud()?;
    w.focus.iter().find_map(|f| cloud.balancer_for(f)).map(|b| b.ip)
}

fn narrate_nodeport(w: &World, rec: &mut Recorder, without: &[String]) {
    let Some(st) = rec.steps.last_mut() else { return };
    let port = w.api.service("default", "web").and_then(|s| s.spec.ports[0].node_port);
    let np = port.map_or("?".into(), |p| p.to_string());
    let np_rule = port.map_or_else(|| "a rule for it".to_string(), |p| ProxyWords::of(w).node_port_rule(p));
    let updated = st.hops.iter().filter(|h| w.node_index(h.to).is_some()).count();
    st.narration = format!(
        "Setting type: NodePort on Service web asks the API server for node port {np}. It checks the port is inside {} and free, and holds it for web. kube-proxy on each of the {updated} nodes sees the change and adds {}: every node now accepts web's traffic on that port, {} included, although no web Pod runs there.",
        w.api.config.node_port_range,
        np_rule,
        list(without),
    );
}

fn narrate_dial_node(w: &World, rec: &mut Recorder, node2: std::net::Ipv4Addr) {
    let Some(st) = rec.steps.last_mut() else { return };
    let dnat = st.hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.rewrites.iter().any(|r| r.kind == RewriteKind::Dnat)));
    let (target, snat, node) = dnat
        .map(|p| (p.after.dst, p.after.src.ip.to_string(), p.decided_on.map_or("the node".into(), |n| w.actors.short(n).to_string())))
        .map_or((String::new(), String::new(), String::new()), |(t, s, n)| (t.to_string(), s, n));
    let target_ip = dnat.map(|p| p.after.dst.ip);
    // The Pod's node, by the Pod's address: compared as addresses, not as text.
    let pod_node = w
        .api
        .pods
        .iter()
        .find(|p| Some(p.ip) == target_ip)
        .and_then(|p| w.actors.node(&p.node_name))
        .map_or("its node".into(), |a| w.actors.short(a).to_string());
    let chains = ProxyWords::of(w).node_port_path(&web_chains(w, dnat.and_then(|p| p.decided_on)));
    st.narration = format!(
        "No balancer is needed: a client that can reach the nodes' network (here the laptop, over a VPN) dials {node2}:31000, Node-2's own address. Node-2 runs no web Pod, but {chains}, which picks {target}. {node} DNATs to that Pod, forwards the packet over the cluster network to {pod_node}, and SNATs the source to its own address {snat} so the reply comes back through it. The price: the Pod sees {snat}, not the client; externalTrafficPolicy: Local would keep the client's address but use only Pods on the node that was dialled. On the way back conntrack on {node} undoes both rewrites: the laptop sees an answer from {node2}:31000."
    );
}

/// Steps 4 and 5: the connection through the balancer, cut where it
/// reaches the node. Step 4 also shows a VIP balancer's delivery, computed
/// on a copy of the world, before the real delivery it is the alternative
/// of: no step ends on a what-if hop.
fn balancer_steps(w: &mut World, rec: &mut Recorder, seed: Option<u64>, lb_ip: std::net::Ipv4Addr) {
    let laptop = w.first(ActorKind::Laptop).expect("laptop");
    let mut vip_world = w.clone();
    let mut vip_dice = dice_for(seed, vec![0.25], 4);
    vip_world.dial(Dial { delivery: Delivery::Vip, ..Dial::tcp(laptop, SockAddr::new(lb_ip, 80)) }, vip_dice.as_mut());
    // Laptop → balancer is the same on both paths; the alternative starts
    // where the balancer delivers.
    let shared = 1;
    let vip_trace: Vec<(Hop, View)> = vip_world
        .take_trace()
        .into_iter()
        .skip(shared)
        .take(2) // balancer → node, node → Pod
        .map(|(mut h, v)| {
            h.what_if = true;
            // Nothing of the alternative happens in the cluster, conntrack included.
            h.detail = format!("What if the balancer kept the destination: {}", h.detail.replace("; conntrack records the connection", ""));
            (h, v)
        })
        .collect();

    let mut dice = dice_for(seed, vec![0.25], 4);
    let mut start = w.view();
    let outcome = w.dial(Dial::tcp(laptop, SockAddr::new(lb_ip, 80)), dice.as_mut());
    let trace = w.take_trace_after(&mut start);
    let split = trace.iter().position(|(h, _)| w.node_index(h.to).is_some()).map_or(trace.len(), |i| i + 1);
    let (first, rest) = trace.split_at(split);
    // The alternative is shown where it branches off, before the hop it is
    // the alternative of, so the step ends where the real packet is: at
    // the node the balancer chose. A what-if changes nothing in the real
    // cluster: its views repeat the last real one.
    let (common, delivered) = first.split_at(shared.min(first.len()));
    let mut hops4: Vec<Hop> = common.iter().map(|(h, _)| h.clone()).collect();
    let mut views4: Vec<View> = std::iter::once(start).chain(common.iter().map(|(_, v)| v.clone())).collect();
    let last_real = views4.last().cloned().unwrap_or_else(|| w.view());
    for (vh, _) in &vip_trace {
        hops4.push(vh.clone());
        views4.push(last_real.clone());
    }
    for (h, v) in delivered {
        hops4.push(h.clone());
        views4.push(v.clone());
    }
    let entry_node = hops4.iter().find(|h| !h.what_if && w.node_index(h.to).is_some()).map(|h| w.place_name(h.to)).unwrap_or_default();
    let vip_caught = vip_trace.iter().filter_map(|(h, _)| h.packet.as_ref()).flat_map(|p| p.matched.iter()).any(|m| m.purpose == Some(Purpose::LoadBalancerIp));
    let manifest = rec.steps.last().map(|s| s.manifest.clone()).unwrap_or_default();
    let unchanged = super::Manifest { changed: vec![], ..manifest };
    rec.steps.push(super::Step {
        title: "Dial the balancer".into(),
        narration: format!(
            "An outside client dials {lb_ip}:80. Some balancers keep the destination, and deliver the packet to {entry_node} still addressed to {lb_ip}:80 (dashed, what if). {} This balancer does otherwise: it chooses a node, here {entry_node}, and sends the connection to its node port 31000, keeping the client's address as the source. That is the solid path, and the packet is at {entry_node} as the step ends.",
            if vip_caught {
                format!(
                    "The controller left ipMode unset, which kube-proxy reads as VIP, so it is ready for them: it wrote {} (the load balancer IP), which {} {} of the node port, and the rest is the same. The same rule lets Pods in the cluster that dial {lb_ip} reach web without leaving their node.",
                    ProxyWords::of(&w).address_rule(SockAddr::new(lb_ip, 80)),
                    ProxyWords::of(&w).hands_to(),
                    ProxyWords::of(&w).external_chain(&web_chains(&w, hops4.iter().find(|h| !h.what_if && w.node_index(h.to).is_some()).map(|h| h.to)))
                )
            } else {
                "No rule of kube-proxy matches that address, so such a packet would not reach a Pod.".to_string()
            }
        ),
        manifest: unchanged.clone(),
        snapshot: super::snapshot_for(w, &hops4),
        hops: hops4,
        views: views4,
        evidence: vec![],
    });

    let hops5: Vec<Hop> = rest.iter().map(|(h, _)| h.clone()).collect();
    let views5: Vec<View> = std::iter::once(first.last().map(|(_, v)| v.clone()).unwrap_or_else(|| w.view())).chain(rest.iter().map(|(_, v)| v.clone())).collect();
    let pick = hops5.iter().find_map(|h| h.packet.as_ref().filter(|p| !p.could_reach.is_empty()));
    let narration = narrate_pick(w, pick, &outcome, lb_ip);
    let snapshot = super::snapshot_for(w, &hops5);
    rec.steps.push(super::Step { title: "Node-1 DNATs".into(), narration, manifest: unchanged, hops: hops5, views: views5, evidence: vec![], snapshot });
}

/// The web Service's chains on `node` (its external chain, then its own),
/// for the narration to name them as that node's rules do.
fn web_chains(w: &World, node: Option<crate::sim::ActorId>) -> Vec<String> {
    node.and_then(|n| w.node_index(n)).map(|i| w.rules[i].port_chains("default", "web", true)).unwrap_or_default()
}

fn narrate_pick(w: &World, pick: Option<&PacketHop>, outcome: &Outcome, lb_ip: std::net::Ipv4Addr) -> String {
    match (pick, outcome) {
        (Some(p), Outcome::Answered { .. }) => {
            let node = p.decided_on.map_or("The node".into(), |n| w.actors.short(n).to_string());
            let others: Vec<String> = p.could_reach.iter().filter(|a| **a != p.after.dst).map(|a| a.to_string()).collect();
            let decided_name = p.decided_on.and_then(|n| w.node_index(n)).map(|i| w.api.nodes[i].name.clone());
            let local = w.api.pods.iter().any(|pod| pod.ip == p.after.dst.ip && Some(&pod.node_name) == decided_name.as_ref());
            format!(
                "On {node}, {} leads to {}, which DNATs to {}{}. The balancer only chose the node: under externalTrafficPolicy: Cluster the rule picks from every ready Pod, so it could just as well have picked {}. The packet is masqueraded too, so the Pod sees it come from {}, not from the client. The reply goes back through {node}, where conntrack restores the node port, and through the balancer, which restores {lb_ip}:80. One public address has reached a private Pod.",
                ProxyWords::of(w).node_port_rule(31000),
                ProxyWords::of(w).service_chain(&web_chains(w, p.decided_on)),
                p.after.dst,
                if local { ", the Pod on this very node" } else { "" },
                if others.is_empty() { "no other Pod".into() } else { list(&others) },
                p.after.src.ip,
            )
        }
        (_, Outcome::Dropped { reason, .. }) => format!("The connection did not get through: {}", reason.describe(&w.actors)),
        _ => "The connection is answered.".into(),
    }
}
