//! Walkthroughs: a story told by running the model.
//!
//! A walkthrough sets up a cluster, then performs one action per step
//! (apply a manifest, dial an address) on a [`World`]. Each step keeps the
//! hops the model recorded, the view after each hop, the manifest as
//! applied, and narration filled in from what the model computed.
//! Nothing in a step's hops is written by hand.

use crate::api::{Node, Pod, Service, ServicePort, ServiceSpec, ServiceType};
use crate::api::server::{ApiServer, ApiServerConfig};
use crate::controllers::cloud::{CloudProvider, Delivery};
use crate::dataplane::kubeproxy::KubeProxyConfig;
use crate::net::{ip, Cidr, Protocol, SockAddr};
use crate::dataplane::netfilter::{Dice, FixedDraws, SeededDice};
use crate::sim::{display_node, Hop, Outcome, Place, View, World};
use serde::{Deserialize, Serialize};

/// A component drawn on the canvas, with its labels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Actor {
    pub place: Place,
    pub label: String,
    /// A label short enough for the canvas and hop headings (`Pod web-x2klp`).
    pub short: String,
    /// An address or role under the label.
    pub sublabel: String,
    /// For Pods: the node index it runs on.
    pub node: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub title: String,
    pub narration: String,
    /// The Service manifest as applied at this step, one YAML line each.
    pub manifest: Vec<String>,
    /// Indexes into `manifest` of the lines this step changed.
    pub changed: Vec<usize>,
    pub hops: Vec<Hop>,
    /// `views[0]` is the state before the first hop; `views[i + 1]` after hop `i`.
    pub views: Vec<View>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Walkthrough {
    pub id: String,
    pub title: String,
    pub actors: Vec<Actor>,
    pub steps: Vec<Step>,
}

impl Walkthrough {
    pub fn actor(&self, place: Place) -> Option<&Actor> {
        self.actors.iter().find(|a| a.place == place)
    }
}

/// Inputs a user can change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Options {
    /// `None`: the fixed picks that make the story repeat. `Some(seed)`:
    /// kube-proxy's random choices come from a seeded generator.
    pub random_seed: Option<u64>,
}

/// The ids of every walkthrough the core can build.
pub const WALKTHROUGHS: &[&str] = &["nodeport-loadbalancer"];

pub fn build(id: &str, opts: Options) -> Option<Walkthrough> {
    match id {
        "nodeport-loadbalancer" => Some(nodeport_loadbalancer(opts)),
        _ => None,
    }
}

/// Service `web` of the NodePort and LoadBalancer story: port 80 to 8080
/// on Pods labelled `app: web`.
pub(crate) fn web_service(type_: ServiceType, node_port: Option<u16>) -> Service {
    Service {
        name: "web".into(),
        namespace: "default".into(),
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

/// The manifest a user would write for this Service (no server-set fields).
pub fn manifest_yaml(svc: &Service) -> Vec<String> {
    let mut y = vec![
        "apiVersion: v1".to_string(),
        "kind: Service".into(),
        "metadata:".into(),
        format!("  name: {}", svc.name),
        "spec:".into(),
        format!("  type: {}", svc.spec.type_.as_str()),
        "  selector:".into(),
    ];
    for (k, v) in &svc.spec.selector {
        y.push(format!("    {k}: {v}"));
    }
    y.push("  ports:".into());
    for p in &svc.spec.ports {
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
    y
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

/// The cluster of the NodePort and LoadBalancer story: three nodes, two
/// ready `web` Pods (none on Node-2), Service `web` of type ClusterIP.
pub fn nodeport_cluster() -> World {
    let mut api = ApiServer::new(ApiServerConfig::default());
    api.nodes = (1..=3u8)
        .map(|i| Node { name: format!("node-{i}"), internal_ip: ip(10, 0, 0, 10 + i), pod_cidr: Some(Cidr::new(ip(10, 244, i, 0), 24)) })
        .collect();
    let pod = |name: &str, node: &str, addr| Pod {
        name: name.into(),
        namespace: "default".into(),
        labels: [("app".to_string(), "web".to_string())].into(),
        node_name: node.into(),
        ip: addr,
        container_port: 8080,
        ready: true,
    };
    api.pods = vec![pod("web-6b8f9c7d5-x2klp", "node-1", ip(10, 244, 1, 5)), pod("web-6b8f9c7d5-q7rtm", "node-3", ip(10, 244, 3, 9))];
    // Created before the story begins, as a plain ClusterIP Service.
    api.apply_service(web_service(ServiceType::ClusterIP, None)).unwrap_or_else(|e| panic!("built-in Service is valid: {e}"));
    let cloud = CloudProvider { free_ips: (7..=30).map(|d| ip(203, 0, 113, d)).collect(), provisioning_secs: 40, balancers: vec![] };
    let proxy = KubeProxyConfig { cluster_cidr: Some(Cidr::new(ip(10, 244, 0, 0), 16)), ..Default::default() };
    World::new(api, proxy, cloud, ip(198, 51, 100, 23), crate::api::ObjectRef::new("default", "web"), 25 * 60)
}

fn actors(w: &World) -> Vec<Actor> {
    let mut a = vec![
        Actor { place: Place::Laptop, label: "Laptop".into(), short: "Laptop".into(), sublabel: w.client.to_string(), node: None },
        Actor { place: Place::LoadBalancer, label: "Cloud load balancer".into(), short: "Load balancer".into(), sublabel: String::new(), node: None },
        Actor { place: Place::ApiServer, label: "API server".into(), short: "API server".into(), sublabel: "kube-apiserver".into(), node: None },
        Actor {
            place: Place::CloudControllerManager,
            label: "cloud-controller-manager".into(),
            short: "cloud-controller-manager".into(),
            sublabel: "watches LoadBalancer Services".into(),
            node: None,
        },
    ];
    for (i, n) in w.api.nodes.iter().enumerate() {
        a.push(Actor { place: Place::Node(i), label: display_node(&n.name), short: display_node(&n.name), sublabel: n.internal_ip.to_string(), node: None });
    }
    for (i, p) in w.api.pods.iter().enumerate() {
        let node = w.api.nodes.iter().position(|n| n.name == p.node_name);
        a.push(Actor { place: Place::Pod(i), label: p.name.clone(), short: format!("Pod {}", short_pod_name(&p.name)), sublabel: format!("{}:{}", p.ip, p.container_port), node });
    }
    a
}

/// `web-6b8f9c7d5-x2klp` → `web-x2klp`: the Deployment's name and the
/// Pod's own suffix, without the ReplicaSet hash in between.
pub fn short_pod_name(name: &str) -> String {
    let parts: Vec<&str> = name.split('-').collect();
    if parts.len() < 3 {
        return name.to_string();
    }
    let keep: Vec<&str> = parts[..parts.len() - 2].iter().chain(parts.last()).copied().collect();
    keep.join("-")
}

fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

fn dice_for(opts: Options, fixed: Vec<f64>, salt: u64) -> Box<dyn Dice> {
    match opts.random_seed {
        None => Box::new(FixedDraws::new(fixed)),
        Some(seed) => Box::new(SeededDice(seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
    }
}

/// The five steps of "NodePort and LoadBalancer".
pub fn nodeport_loadbalancer(opts: Options) -> Walkthrough {
    let mut w = nodeport_cluster();
    let actors = actors(&w);
    let mut steps = Vec::new();
    let mut manifest = manifest_yaml(w.api.service("default", "web").expect("web exists"));
    let nodes_without_pods: Vec<String> = w
        .api
        .nodes
        .iter()
        .filter(|n| !w.api.pods.iter().any(|p| p.node_name == n.name && p.ready))
        .map(|n| display_node(&n.name))
        .collect();

    let mut step = |w: &mut World, title: &str, applied: Option<&Service>, narrate: &dyn Fn(&World, &[Hop]) -> String, act: &mut dyn FnMut(&mut World)| {
        let start = w.view();
        act(w);
        let trace = w.take_trace();
        let (hops, mut views): (Vec<Hop>, Vec<View>) = trace.into_iter().unzip();
        views.insert(0, start);
        let new_manifest = applied.map(manifest_yaml).unwrap_or_else(|| manifest.clone());
        let changed = changed_lines(&manifest, &new_manifest);
        manifest = new_manifest.clone();
        let narration = narrate(w, &hops);
        steps.push(Step { title: title.into(), narration, manifest: new_manifest, changed, hops, views });
    };

    // 1. type NodePort.
    let np_svc = web_service(ServiceType::NodePort, Some(31000));
    let without = nodes_without_pods.clone();
    step(
        &mut w,
        "Type NodePort",
        Some(&np_svc),
        &|w, hops| {
            let s = w.api.service("default", "web");
            let np = s.and_then(|s| s.spec.ports[0].node_port).map_or("?".into(), |p| p.to_string());
            let updated = hops.iter().filter(|h| matches!(h.to, Place::Node(_))).count();
            format!(
                "Setting type: NodePort on Service web asks the API server for node port {np}. It checks the port is inside {} and free, and holds it for web. kube-proxy on each of the {updated} nodes sees the change and adds a KUBE-NODEPORTS rule for {np}: every node now accepts web's traffic on that port, {} included, although no web Pod runs there.",
                w.api.config.node_port_range,
                list(&without),
            )
        },
        &mut |w| {
            let _ = w.kubectl_apply(np_svc.clone());
        },
    );

    // 2. dial Node-2 directly.
    let mut dice = dice_for(opts, vec![0.75], 2);
    let node2 = w.api.nodes[1].internal_ip;
    step(
        &mut w,
        "Dial Node-2",
        None,
        &|w, hops| {
            let dnat = hops.iter().find_map(|h| h.packet.as_ref().filter(|p| p.rewrites.iter().any(|r| r.kind == crate::sim::RewriteKind::Dnat)));
            let (target, snat, node) = dnat
                .map(|p| (p.after.dst.to_string(), p.after.src.ip.to_string(), p.decided_on.map_or("the node".into(), |n| display_node(&w.api.nodes[n].name))))
                .unwrap_or_default();
            let pod_node = w.api.pods.iter().find(|p| target.starts_with(&p.ip.to_string())).map_or("its node".into(), |p| display_node(&p.node_name));
            format!(
                "No balancer is needed: a client that can reach the nodes' network (here the laptop, over a VPN) dials {node2}:31000, Node-2's own address. Node-2 runs no web Pod, but its KUBE-NODEPORTS rule jumps to KUBE-EXT, which marks the packet for masquerade (externalTrafficPolicy: Cluster), and on to KUBE-SVC, which picks {target}. {node} DNATs to that Pod, forwards the packet over the cluster network to {pod_node}, and SNATs the source to its own address {snat} so the reply comes back through it. The price: the Pod sees {snat}, not the client; externalTrafficPolicy: Local would keep the client's address but use only Pods on the node that was dialled. On the way back conntrack on {node} undoes both rewrites: the laptop sees an answer from {node2}:31000."
            )
        },
        &mut |w| {
            w.connect(SockAddr::new(node2, 31000), dice.as_mut(), 0, Delivery::NodePort);
        },
    );

    // 3. type LoadBalancer.
    let lb_svc = web_service(ServiceType::LoadBalancer, Some(31000));
    step(
        &mut w,
        "Type LoadBalancer",
        Some(&lb_svc),
        &|w, _| {
            let ip = w.cloud.balancer_for(&w.focus).map_or("?".into(), |b| b.ip.to_string());
            format!(
                "Changing the type to LoadBalancer keeps node port 31000. Every kube-proxy sees the change at once, but nothing in its rules changes yet. The cloud-controller-manager notices the Service too, and asks the cloud for a balancer that forwards port 80 to 31000 on every node. The cloud builds it asynchronously: until it is ready, status.loadBalancer is empty and kubectl shows EXTERNAL-IP <pending>. When it is ready, the controller writes {ip} into status.loadBalancer.ingress, and kube-proxy adds a rule for that address too."
            )
        },
        &mut |w| {
            let _ = w.kubectl_apply(lb_svc.clone());
            let secs = w.cloud.provisioning_secs;
            w.wait(secs);
        },
    );

    // 4 and 5: one connection through the balancer, split where it reaches
    // the node. Step 4 also shows a VIP balancer's delivery, computed on a copy.
    let lb_ip = w.cloud.balancer_for(&w.focus).map(|b| b.ip).unwrap_or(ip(203, 0, 113, 7));
    let mut vip_world = w.clone();
    let mut vip_dice = dice_for(opts, vec![0.25], 4);
    vip_world.connect(SockAddr::new(lb_ip, 80), vip_dice.as_mut(), 0, Delivery::Vip);
    let vip_trace: Vec<(Hop, View)> = vip_world
        .take_trace()
        .into_iter()
        .skip(1) // laptop → balancer is the same as on the main path
        .take(2) // balancer → node, node → Pod
        .map(|(mut h, v)| {
            h.what_if = true;
            // Nothing of the alternative happens in the cluster, conntrack included.
            h.detail = format!("What if the balancer kept the destination: {}", h.detail.replace("; conntrack records the connection", ""));
            (h, v)
        })
        .collect();

    let mut dice = dice_for(opts, vec![0.25], 4);
    let start = w.view();
    let outcome = w.connect(SockAddr::new(lb_ip, 80), dice.as_mut(), 0, Delivery::NodePort);
    let trace = w.take_trace();
    let split = trace.iter().position(|(h, _)| matches!(h.to, Place::Node(_))).map_or(trace.len(), |i| i + 1);
    let (first, rest) = trace.split_at(split);
    // Step 4 shows the request up to the node, then the VIP alternative.
    // A what-if changes nothing in the real cluster: its views repeat the
    // last real one.
    let mut hops4: Vec<Hop> = first.iter().map(|(h, _)| h.clone()).collect();
    let mut views4: Vec<View> = std::iter::once(start).chain(first.iter().map(|(_, v)| v.clone())).collect();
    let last_real = views4.last().cloned().unwrap_or_else(|| w.view());
    for (vh, _) in &vip_trace {
        hops4.push(vh.clone());
        views4.push(last_real.clone());
    }
    let entry_node = hops4.iter().find(|h| !h.what_if && matches!(h.to, Place::Node(_))).map(|h| w.place_name(h.to)).unwrap_or_default();
    let vip_caught = vip_trace
        .iter()
        .filter_map(|(h, _)| h.packet.as_ref())
        .flat_map(|p| p.matched.iter())
        .any(|m| m.text.contains("loadbalancer IP"));
    steps.push(Step {
        title: "Dial the balancer".into(),
        narration: format!(
            "An outside client dials {lb_ip}:80. This balancer chooses a node, here {entry_node}, and sends the connection to its node port 31000, keeping the client's address as the source: the solid path. Other balancers keep the destination instead, and deliver the packet to {entry_node} still addressed to {lb_ip}:80 (dashed, what if). The controller left ipMode unset, which kube-proxy reads as VIP, so it is ready for both. {}",
            if vip_caught {
                format!("Its KUBE-SERVICES rule for the load balancer IP {lb_ip}:80 jumps to the same KUBE-EXT chain as the node port, so the rest is the same. The same rule lets Pods in the cluster that dial {lb_ip} reach web without leaving their node.")
            } else {
                "No rule of kube-proxy matches that address, so the packet would not reach a Pod.".to_string()
            }
        ),
        manifest: manifest_yaml(&lb_svc),
        changed: vec![],
        hops: hops4,
        views: views4,
    });

    let hops5: Vec<Hop> = rest.iter().map(|(h, _)| h.clone()).collect();
    let views5: Vec<View> = std::iter::once(first.last().map(|(_, v)| v.clone()).unwrap_or_else(|| w.view())).chain(rest.iter().map(|(_, v)| v.clone())).collect();
    let pick = hops5.iter().find_map(|h| h.packet.as_ref().filter(|p| !p.could_reach.is_empty()));
    let narration = match (pick, &outcome) {
        (Some(p), Outcome::Answered { .. }) => {
            let node = p.decided_on.map_or("The node".into(), |n| display_node(&w.api.nodes[n].name));
            let others: Vec<String> = p.could_reach.iter().filter(|a| **a != p.after.dst).map(|a| a.to_string()).collect();
            let local = w.api.pods.iter().any(|pod| pod.ip == p.after.dst.ip && Some(&pod.node_name) == p.decided_on.map(|n| &w.api.nodes[n].name));
            format!(
                "On {node} the KUBE-NODEPORTS rule for 31000 leads to KUBE-SVC, which DNATs to {}{}. The balancer only chose the node: under externalTrafficPolicy: Cluster the rule picks from every ready Pod, so it could just as well have picked {}. The packet is masqueraded too, so the Pod sees it come from {}, not from the client. The reply goes back through {node}, where conntrack restores the node port, and through the balancer, which restores {lb_ip}:80. One public address has reached a private Pod.",
                p.after.dst,
                if local { ", the Pod on this very node" } else { "" },
                if others.is_empty() { "no other Pod".into() } else { list(&others) },
                p.after.src.ip,
            )
        }
        (_, Outcome::Dropped { reason, .. }) => format!("The connection did not get through: {reason}"),
        _ => "The connection is answered.".into(),
    };
    steps.push(Step { title: "Node-1 DNATs".into(), narration, manifest: manifest_yaml(&lb_svc), changed: vec![], hops: hops5, views: views5 });

    Walkthrough { id: "nodeport-loadbalancer".into(), title: "NodePort and LoadBalancer".into(), actors, steps }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_names_lose_the_replica_set_hash() {
        assert_eq!(short_pod_name("web-6b8f9c7d5-x2klp"), "web-x2klp");
        assert_eq!(short_pod_name("my-app-6b8f9c7d5-x2klp"), "my-app-x2klp");
        assert_eq!(short_pod_name("web"), "web");
        assert_eq!(short_pod_name("web-0"), "web-0");
    }

    #[test]
    fn changed_lines_marks_only_new_lines() {
        let a: Vec<String> = ["a", "type: ClusterIP", "c"].iter().map(|s| s.to_string()).collect();
        let b: Vec<String> = ["a", "type: NodePort", "c", "nodePort: 1"].iter().map(|s| s.to_string()).collect();
        assert_eq!(changed_lines(&a, &b), [1, 3]);
        assert_eq!(changed_lines(&b, &b), Vec::<usize>::new());
    }
}

/// A plain-text account of a walkthrough: every step's hops with packets,
/// rewrites and matched rules, and the kubectl output after the step.
/// Golden tests compare it; it is meant to be read by people.
pub fn render_text(w: &Walkthrough) -> String {
    use std::fmt::Write as _;
    let name = |p: Place| w.actor(p).map_or_else(|| format!("{p:?}"), |a| a.label.clone());
    let mut s = format!("# {} ({})\n", w.title, w.id);
    for (i, st) in w.steps.iter().enumerate() {
        let _ = writeln!(s, "\n## Step {}: {}", i + 1, st.title);
        let _ = writeln!(s, "manifest changes: {}", st.changed.iter().map(|&l| st.manifest[l].trim().to_string()).collect::<Vec<_>>().join(" | "));
        for (j, h) in st.hops.iter().enumerate() {
            let what_if = if h.what_if { " (what if: VIP)" } else { "" };
            let _ = writeln!(s, "{}. [{:?}] {} -> {}{}: {}", j + 1, h.kind, name(h.from), name(h.to), what_if, h.caption);
            if let Some(p) = &h.packet {
                if p.before != p.after {
                    let _ = writeln!(s, "   before {}", p.before);
                }
                let _ = writeln!(s, "   wire   {}", p.after);
                for r in &p.rewrites {
                    let _ = writeln!(s, "   {:?} {:?} {} => {}", r.kind, r.field, r.from, r.to);
                }
                if p.by_conntrack {
                    let _ = writeln!(s, "   (by conntrack)");
                }
                for m in &p.matched {
                    let _ = writeln!(s, "   rule {:>3}: {}", m.line, m.text);
                }
                if !p.could_reach.is_empty() {
                    let _ = writeln!(s, "   could reach: {}", p.could_reach.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "));
                }
            }
        }
        if let Some(v) = st.views.last() {
            let _ = write!(s, "kubectl get svc web:\n{}", v.kubectl);
            for (n, nv) in v.nodes.iter().enumerate() {
                for c in &nv.conntrack {
                    let _ = writeln!(s, "conntrack {}: {}", name(Place::Node(n)), c.text);
                }
            }
        }
    }
    s
}
