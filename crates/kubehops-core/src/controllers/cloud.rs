//! The cloud side of `type: LoadBalancer`: a provider that creates load
//! balancers asynchronously, and the balancers themselves.
//!
//! [`CloudController`] is the cloud-controller-manager's service
//! controller: it watches LoadBalancer Services, asks the cloud for a
//! balancer, and writes the address into `status.loadBalancer` once the
//! cloud has built it. It reports each message as an [`Event`].

use crate::api::server::ApiServer;
use crate::api::{LoadBalancerIngress, ObjectRef, ServiceStatus, ServiceType};
use crate::controllers::{Event, Party};
use crate::net::{Packet, Protocol, SockAddr};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// How a balancer hands a connection to a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delivery {
    /// Rewrites the destination to the node's IP and node port.
    NodePort,
    /// Keeps the balancer's IP as destination (ipMode VIP); the node's
    /// kube-proxy catches it with its load-balancer-IP rule.
    Vip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LbState {
    Provisioning { ready_at: u64 },
    Active,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    pub protocol: Protocol,
    pub port: u16,
    pub node_port: u16,
}

/// A balancer's memory of one connection, so replies go back through it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LbFlow {
    pub client: SockAddr,
    pub frontend: SockAddr,
    pub backend: SockAddr,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudLoadBalancer {
    pub name: String,
    pub service: ObjectRef,
    pub ip: Ipv4Addr,
    pub state: LbState,
    pub listeners: Vec<Listener>,
    /// Node names and addresses, in the order health checks list them.
    pub targets: Vec<(String, Ipv4Addr)>,
    pub flows: Vec<LbFlow>,
}

impl CloudLoadBalancer {
    pub fn listener(&self, dst: SockAddr, proto: Protocol) -> Option<&Listener> {
        (dst.ip == self.ip && self.state == LbState::Active)
            .then(|| self.listeners.iter().find(|l| l.port == dst.port && l.protocol == proto))
            .flatten()
    }

    /// The flow a reply from a node belongs to.
    pub fn reply_flow(&self, pkt: &Packet) -> Option<&LbFlow> {
        self.flows.iter().find(|f| f.backend == pkt.src && f.client == pkt.dst)
    }
}

/// A cloud with a pool of public addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudProvider {
    pub free_ips: Vec<Ipv4Addr>,
    /// Seconds between the create call and an address.
    pub provisioning_secs: u64,
    pub balancers: Vec<CloudLoadBalancer>,
}

impl CloudProvider {
    pub fn balancer_for(&self, svc: &ObjectRef) -> Option<&CloudLoadBalancer> {
        self.balancers.iter().find(|b| &b.service == svc)
    }

    pub fn balancer_at(&self, ip: Ipv4Addr) -> Option<&CloudLoadBalancer> {
        self.balancers.iter().find(|b| b.ip == ip && b.state == LbState::Active)
    }

    /// Starts creating a balancer; it gets an address now but serves only
    /// once provisioned. `None` when the pool is empty.
    pub fn create(&mut self, svc: ObjectRef, listeners: Vec<Listener>, targets: Vec<(String, Ipv4Addr)>, now: u64) -> Option<&CloudLoadBalancer> {
        if self.free_ips.is_empty() {
            return None;
        }
        let ip = self.free_ips.remove(0);
        let name = format!("a{}", &crate::hash::sha256_base32(svc.to_string().as_bytes())[..12].to_ascii_lowercase());
        self.balancers.push(CloudLoadBalancer {
            name,
            service: svc,
            ip,
            state: LbState::Provisioning { ready_at: now + self.provisioning_secs },
            listeners,
            targets,
            flows: Vec::new(),
        });
        self.balancers.last()
    }

    /// Deletes the balancer of a Service and returns its address to the pool.
    pub fn delete(&mut self, svc: &ObjectRef) {
        if let Some(i) = self.balancers.iter().position(|b| &b.service == svc) {
            let b = self.balancers.remove(i);
            self.free_ips.insert(0, b.ip);
        }
    }

    /// Finishes provisioning of every balancer whose time has come.
    /// Returns the ones that became active.
    pub fn tick(&mut self, now: u64) -> Vec<ObjectRef> {
        let mut done = Vec::new();
        for b in &mut self.balancers {
            if let LbState::Provisioning { ready_at } = b.state {
                if now >= ready_at {
                    b.state = LbState::Active;
                    done.push(b.service.clone());
                }
            }
        }
        done
    }
}

/// The cloud-controller-manager's service controller, with the cloud it
/// talks to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudController {
    pub provider: CloudProvider,
}

impl CloudController {
    /// Asks the cloud for a balancer for every LoadBalancer Service that
    /// has none, and deletes the balancers of Services that are no longer
    /// of that type.
    pub fn services_changed(&mut self, api: &ApiServer, now: u64) -> Vec<Event> {
        let mut events = Vec::new();
        for svc in api.services().filter(|s| s.spec.type_ == ServiceType::LoadBalancer) {
            if self.provider.balancer_for(&svc.object_ref()).is_some() {
                continue;
            }
            events.push(Event::new(
                Party::ApiServer,
                Party::Controller,
                "watch → cloud-controller-manager",
                format!("The cloud-controller-manager sees that Service {} is now of type LoadBalancer and has no balancer yet.", svc.object_ref()),
            ));
            let listeners: Vec<Listener> = svc.spec.ports.iter().filter_map(|p| Some(Listener { protocol: p.protocol, port: p.port, node_port: p.node_port? })).collect();
            let targets: Vec<(String, Ipv4Addr)> = api.nodes.iter().map(|n| (n.name.clone(), n.internal_ip)).collect();
            let l = listeners.iter().map(|l| format!("{}/{} → every node :{}", l.port, l.protocol, l.node_port)).collect::<Vec<_>>().join(", ");
            let created = self.provider.create(svc.object_ref(), listeners, targets, now).is_some();
            let mut e = Event::new(Party::Controller, Party::Balancer, "create load balancer", String::new());
            if created {
                e.detail = format!("It asks the cloud for a load balancer with listener {l}. The cloud starts building it; the call returns before it is ready.");
            } else {
                e.ok = false;
                e.detail = "The cloud has no free address; the Service stays <pending>.".into();
            }
            events.push(e);
        }
        let gone: Vec<ObjectRef> = self
            .provider
            .balancers
            .iter()
            .map(|b| b.service.clone())
            .filter(|r| api.service(&r.namespace, &r.name).is_none_or(|s| s.spec.type_ != ServiceType::LoadBalancer))
            .collect();
        for r in gone {
            self.provider.delete(&r);
            events.push(Event::new(
                Party::Controller,
                Party::Balancer,
                "delete load balancer",
                format!("Service {r} no longer asks for a balancer, so the cloud-controller-manager deletes the one it had."),
            ));
        }
        events
    }

    /// Finishes provisioning of the balancers whose time has come and
    /// publishes their addresses in `status.loadBalancer`.
    pub fn tick(&mut self, api: &mut ApiServer, now: u64) -> Vec<Event> {
        let mut events = Vec::new();
        for svc in self.provider.tick(now) {
            let Some(ip) = self.provider.balancer_for(&svc).map(|b| b.ip) else { continue };
            events.push(Event::new(
                Party::Balancer,
                Party::Controller,
                format!("ready: {ip}"),
                format!("The cloud reports the balancer ready at {ip}, with every node as a healthy target."),
            ));
            // Like most cloud controllers this one leaves ipMode unset,
            // which kube-proxy reads as VIP: it also captures the address.
            api.update_service_status(&svc, ServiceStatus { load_balancer_ingress: vec![LoadBalancerIngress::with_ip(ip, None)] });
            let mut e = Event::new(
                Party::Controller,
                Party::ApiServer,
                "PATCH status.loadBalancer",
                format!("The cloud-controller-manager writes status.loadBalancer.ingress: [{{ip: {ip}}}], with no ipMode, which kube-proxy reads as VIP. EXTERNAL-IP is no longer <pending>."),
            );
            e.status_of = Some(svc);
            events.push(e);
        }
        events
    }
}
