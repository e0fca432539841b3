//! The cloud side of `type: LoadBalancer`: a provider that creates load
//! balancers asynchronously, and the balancers themselves.
//!
//! The cloud-controller-manager's part (watch Services, ask the cloud,
//! write `status.loadBalancer`) is driven by [`crate::sim`], which records a
//! hop for each message; this module keeps the cloud's own state.

use crate::api::ObjectRef;
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
