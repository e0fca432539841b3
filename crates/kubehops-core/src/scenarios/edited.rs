//! A Service the user typed, played on a scenario's cluster.
//!
//! A walkthrough tells one story with its own manifests; when the user
//! writes their own Service, the story no longer holds, but the cluster
//! does. This module plays the typed Service on it the way a person
//! would try it: apply it, look its name up from inside (where the
//! cluster has DNS), and send a request from outside to wherever the
//! Service is exposed. Every sentence is written from what the model
//! recorded.

use super::{dice_for, list, Action, Params, Recorder, Scenario};
use crate::api::{ObjectRef, Service, ServiceType};
use crate::dns::{QType, Rcode};
use crate::net::SockAddr;
use crate::sim::{ActorKind, Dial, DropReason, Leg, RewriteKind, Unroutable, World};

/// How long a cloud takes to build a balancer, if the cluster has one.
fn provisioning_secs(w: &World) -> u64 {
    w.lb.cloud().map_or(0, |c| c.provisioning_secs)
}

/// Builds "your Service on this cluster": apply, DNS Lookup (when the
/// cluster has DNS and a Pod to ask from), Send Request from outside.
pub fn build(id: &str, title: &str, mut w: World, p: &Params, file: &str, svc: Service) -> Scenario {
    w.set_proxy_mode(p.proxy_mode());
    w.set_pod_network(p.pod_network());
    w.set_handshake(p.handshake());
    let key = svc.object_ref();
    w.focus = vec![key.clone()];
    let before = w.api.service(&key.namespace, &key.name).cloned();
    let mut rec = Recorder::new(file, before.as_ref().unwrap_or(&svc));
    let mut refused = None;
    rec.step(&mut w, &format!("Apply your Service {}", svc.name), Some((file, &svc)), |w| {
        refused = w.kubectl_apply(svc.clone()).err();
        if refused.is_none() && svc.spec.type_ == ServiceType::LoadBalancer {
            let secs = provisioning_secs(w);
            w.wait(secs);
        }
    });
    if before.is_none() {
        if let Some(st) = rec.steps.last_mut() {
            st.manifest.changed.clear();
        }
    }
    let applied = narrate_apply(&w, &key, refused.as_ref());
    if let Some(st) = rec.steps.last_mut() {
        st.narration = applied;
    }
    let mut dice = dice_for(p.seed(), vec![0.5, 0.25], 11);
    let mut actions = Vec::new();
    if let Some(client) = dns_client(&w, &key) {
        let name = format!("{}.{}.svc.cluster.local", key.name, key.namespace);
        let mut answer = None;
        rec.step(&mut w, "DNS Lookup", None, |w| answer = w.lookup(client, &name, QType::A, dice.as_mut()));
        let said = match &answer {
            None => "no answer".to_string(),
            Some(r) if r.rcode == Rcode::NxDomain => "NXDOMAIN".into(),
            Some(r) if r.answer.is_empty() => "no records (NODATA)".into(),
            Some(r) => list(&r.answer.iter().map(|x| x.short()).collect::<Vec<_>>()),
        };
        if let Some(st) = rec.steps.last_mut() {
            st.narration = format!("{} asks CoreDNS for {name}; the answer is {said}.", w.actors.short(client));
        }
        actions.push(Action { label: "DNS Lookup".into(), step: rec.steps.len() - 1 });
    }
    if let Some(laptop) = w.first(ActorKind::Laptop) {
        let dst = outside_destination(&w, &key);
        let host = key.name.clone();
        let attempt = dst.clone();
        rec.step(&mut w, "Send Request", None, |w| {
            let _ = match attempt {
                Ok(dst) => w.dial(Dial::http(laptop, dst, &host), dice.as_mut()),
                Err(reason) => w.give_up(laptop, reason),
            };
        });
        let story = narrate_request(&w, rec.steps.last().map(|s| s.hops.as_slice()).unwrap_or_default(), dst);
        if let Some(st) = rec.steps.last_mut() {
            st.narration = story;
        }
        actions.push(Action { label: "Send Request".into(), step: rec.steps.len() - 1 });
    }
    Scenario { actions, ..Scenario::recorded(id, title, p, &w, rec.steps) }
}

/// A Pod to ask from: one the Service does not select, else any.
fn dns_client(w: &World, key: &ObjectRef) -> Option<crate::sim::ActorId> {
    w.cluster_dns?;
    let selected = |p: &crate::api::Pod| w.api.service(&key.namespace, &key.name).is_some_and(|s| !s.spec.selector.is_empty() && s.spec.selector.iter().all(|(k, v)| p.labels.get(k) == Some(v)));
    let mut pods: Vec<&crate::api::Pod> = w.api.pods.iter().filter(|p| p.namespace != "kube-system").collect();
    pods.sort_by_key(|p| selected(p));
    pods.iter().find_map(|p| w.actors.of_object(ActorKind::Pod, &p.namespace, &p.name))
}

/// Where someone outside would send a request to reach the Service, or
/// why there is nowhere: a balancer's address, an external IP, a node
/// port, else the cluster IP (which only works inside).
pub fn outside_destination(w: &World, key: &ObjectRef) -> Result<SockAddr, DropReason> {
    let unresolved = |what: &str| DropReason::Unresolved { name: what.to_string() };
    let Some(svc) = w.api.service(&key.namespace, &key.name) else { return Err(unresolved(&format!("{}.{}.svc.cluster.local", key.name, key.namespace))) };
    let Some(port) = svc.spec.ports.first() else { return Err(unresolved(&format!("a port of Service {}", key.name))) };
    let ingress = svc.status.load_balancer_ingress.iter().find_map(|i| i.ip);
    let node = w.api.nodes.first().map(|n| n.internal_ip);
    match (svc.spec.type_, ingress, svc.spec.external_ips.first(), port.node_port, node, svc.spec.cluster_ip) {
        (ServiceType::ExternalName, ..) => Err(unresolved(&format!("{}.{}.svc.cluster.local", key.name, key.namespace))),
        (ServiceType::LoadBalancer, Some(ip), ..) => Ok(SockAddr::new(ip, port.port)),
        (_, _, Some(ip), ..) => Ok(SockAddr::new(*ip, port.port)),
        (_, _, _, Some(np), Some(node), _) => Ok(SockAddr::new(node, np)),
        (_, _, _, _, _, Some(ip)) => Ok(SockAddr::new(ip, port.port)),
        _ => Err(unresolved(&format!("{}.{}.svc.cluster.local", key.name, key.namespace))),
    }
}

fn narrate_apply(w: &World, key: &ObjectRef, refused: Option<&crate::api::server::ApiError>) -> String {
    if let Some(e) = refused {
        return format!("The API server refuses the change: {e}. The Service stays as it was.");
    }
    let Some(svc) = w.api.service(&key.namespace, &key.name) else { return format!("Service {} is not stored.", key.name) };
    let mut parts = vec![format!("The API server stores Service {} as type {}.", svc.name, svc.spec.type_.as_str())];
    match (svc.spec.headless, svc.spec.cluster_ip) {
        (true, _) => parts.push("It is headless (clusterIP: None): no virtual address, and kube-proxy writes no rule for it.".into()),
        (false, Some(ip)) => parts.push(format!("Its cluster IP is {ip}.")),
        _ => {}
    }
    let node_ports: Vec<String> = svc.spec.ports.iter().filter_map(|p| p.node_port).map(|n| n.to_string()).collect();
    if !node_ports.is_empty() {
        parts.push(format!("Every node opens node port {}.", list(&node_ports)));
    }
    let endpoints: usize = w.api.endpoint_slices().iter().filter(|s| s.namespace == key.namespace && s.service_name == key.name).map(|s| s.endpoints.iter().filter(|e| e.ready).count()).sum();
    if svc.spec.type_ != ServiceType::ExternalName {
        parts.push(match endpoints {
            0 => "Its selector matches no Ready Pod, so it has no endpoints: a connection to it is rejected.".to_string(),
            1 => "One Ready Pod is its endpoint.".to_string(),
            n => format!("{n} Ready Pods are its endpoints."),
        });
    }
    if let Some(ip) = svc.status.load_balancer_ingress.iter().find_map(|i| i.ip) {
        parts.push(format!("The balancer's address {ip} is published in status.loadBalancer."));
    } else if svc.spec.type_ == ServiceType::LoadBalancer {
        parts.push("No controller has published a balancer's address yet: EXTERNAL-IP stays <pending>.".into());
    }
    parts.join(" ")
}

fn narrate_request(w: &World, hops: &[crate::sim::Hop], dst: Result<SockAddr, DropReason>) -> String {
    let mut parts = Vec::new();
    if let Ok(d) = dst {
        parts.push(format!("The laptop sends GET / to {d}."));
    }
    for h in hops {
        let Some(p) = &h.packet else { continue };
        let node = p.decided_on.map(|n| w.actors.short(n).to_string());
        for r in &p.rewrites {
            let on = node.as_deref().unwrap_or("a node");
            match r.kind {
                RewriteKind::Dnat if h.leg == Leg::Out => parts.push(format!("{on}'s rules DNAT it to {}.", p.after.dst)),
                RewriteKind::Snat if h.leg == Leg::Out => parts.push(format!("{on} masquerades the source as {}.", p.after.src)),
                _ => {}
            }
        }
    }
    if let Some(h) = hops.iter().rev().find(|h| h.dropped.is_some()) {
        let reason = h.dropped.as_ref().map(|r| r.describe(&w.actors)).unwrap_or_default();
        parts.push(reason);
        if matches!(h.dropped, Some(DropReason::NoRoute { why: Unroutable::ServiceRange(_), .. })) {
            parts.push("Give the Service a node port, an external IP or a balancer to reach it from outside.".into());
        }
    } else if let Some(last) = hops.last().and_then(|h| h.packet.as_ref()).filter(|_| hops.last().is_some_and(|h| h.leg == Leg::Back)) {
        parts.push(format!("The reply comes back from {}, the address the laptop dialled.", last.after.src));
    }
    parts.join(" ")
}
