//! Actors: the components a hop starts or ends at.
//!
//! An actor is anything drawn on the canvas that sends, receives or
//! forwards: the laptop, a balancer, the API server, a controller, a node,
//! a Pod, a host on the internet. Each has a [`ActorKind`], which says how
//! it handles a packet, and a [`Zone`], which says where it is drawn. A
//! Pod's `parent` is the node it runs on.
//!
//! Architecture Invariant: an [`ActorId`] is stable for the life of a
//! [`crate::sim::World`]: actors are only ever added, so an id never
//! comes to mean another actor when Pods or Services change.

use crate::api::ObjectRef;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The identity of an actor: its index in [`Actors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ActorId(pub u16);

impl ActorId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What an actor is, which decides what it does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ActorKind {
    /// The user's machine: runs kubectl, and a client outside the cluster.
    Laptop,
    /// A host on the internet that serves something (`mydb.example.com`).
    OutsideHost,
    /// A DNS resolver outside the cluster: the laptop's, and CoreDNS's upstream.
    Resolver,
    /// A cloud load balancer in front of the nodes.
    LoadBalancer,
    ApiServer,
    /// A controller that fills `status.loadBalancer`, or another that
    /// watches the API server from the control plane.
    Controller,
    Node,
    Pod,
    /// A CoreDNS Pod: answers DNS for the cluster domain.
    CoreDns,
    /// MetalLB's speaker on a node (a host-network Pod): answers ARP for
    /// the addresses its node announces.
    Speaker,
    /// An L7 proxy Pod (Envoy): ends the client's connection, reads the
    /// HTTP request and opens its own connection to a backend.
    Gateway,
}

impl ActorKind {
    /// Pods of every sort run inside a node.
    pub fn is_pod(self) -> bool {
        matches!(self, ActorKind::Pod | ActorKind::CoreDns | ActorKind::Speaker | ActorKind::Gateway)
    }

    /// Every kind, in declaration order.
    pub const ALL: [ActorKind; 11] = [
        ActorKind::Laptop,
        ActorKind::OutsideHost,
        ActorKind::Resolver,
        ActorKind::LoadBalancer,
        ActorKind::ApiServer,
        ActorKind::Controller,
        ActorKind::Node,
        ActorKind::Pod,
        ActorKind::CoreDns,
        ActorKind::Speaker,
        ActorKind::Gateway,
    ];

    /// The kind's name in lower case (`coredns`), for the app's CSS
    /// classes. Spelled out: formatting the `Debug` name would add to the
    /// wasm.
    pub fn css_name(self) -> &'static str {
        match self {
            ActorKind::Laptop => "laptop",
            ActorKind::OutsideHost => "outsidehost",
            ActorKind::Resolver => "resolver",
            ActorKind::LoadBalancer => "loadbalancer",
            ActorKind::ApiServer => "apiserver",
            ActorKind::Controller => "controller",
            ActorKind::Node => "node",
            ActorKind::Pod => "pod",
            ActorKind::CoreDns => "coredns",
            ActorKind::Speaker => "speaker",
            ActorKind::Gateway => "gateway",
        }
    }
}

/// Where an actor is drawn: outside the cluster, in its control plane, or
/// among its nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Zone {
    Outside,
    ControlPlane,
    Cluster,
}

impl Zone {
    pub const ALL: [Zone; 3] = [Zone::Outside, Zone::ControlPlane, Zone::Cluster];

    pub fn label(self) -> &'static str {
        match self {
            Zone::Outside => "OUTSIDE",
            Zone::ControlPlane => "CONTROL PLANE",
            Zone::Cluster => "CLUSTER",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Actor {
    pub id: ActorId,
    pub kind: ActorKind,
    pub zone: Zone,
    /// The full name (`web-6b8f9c7d5-x2klp`, `cloud-controller-manager`).
    pub label: String,
    /// The label on the canvas and in hop headings: the kind and the name (`Pod web-6b8f9c7d5-x2klp`, `Node-2`).
    pub short: String,
    /// An address or role under the label.
    pub sublabel: String,
    /// For Pods: the node they run on.
    pub parent: Option<ActorId>,
    /// The address packets reach it at, for actors on the packet path.
    pub ip: Option<Ipv4Addr>,
    /// The API object it stands for (a Node by name, a Pod by namespace and name).
    pub object: Option<ObjectRef>,
}

impl Actor {
    /// An actor outside the cluster's objects: the laptop, a host, a
    /// balancer, a control-plane component.
    pub fn component(kind: ActorKind, zone: Zone, label: &str, short: &str, sublabel: &str) -> Actor {
        Actor {
            id: ActorId(0),
            kind,
            zone,
            label: label.into(),
            short: short.into(),
            sublabel: sublabel.into(),
            parent: None,
            ip: None,
            object: None,
        }
    }

    pub fn at(mut self, ip: Ipv4Addr) -> Actor {
        self.ip = Some(ip);
        self
    }
}

/// Every actor of a world, in the order they were added (which is also
/// the order they are drawn in within a zone).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Actors {
    list: Vec<Actor>,
}

impl Actors {
    /// Adds an actor and returns its id.
    pub fn add(&mut self, mut a: Actor) -> ActorId {
        let id = ActorId(self.list.len() as u16);
        a.id = id;
        self.list.push(a);
        id
    }

    pub fn get(&self, id: ActorId) -> Option<&Actor> {
        self.list.get(id.index())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Actor> {
        self.list.iter()
    }

    pub fn as_slice(&self) -> &[Actor] {
        &self.list
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The first actor of a kind (the laptop, the API server).
    pub fn first(&self, kind: ActorKind) -> Option<ActorId> {
        self.list.iter().find(|a| a.kind == kind).map(|a| a.id)
    }

    /// The actor that stands for an API object.
    pub fn of_object(&self, kind: ActorKind, namespace: &str, name: &str) -> Option<ActorId> {
        self.list
            .iter()
            .find(|a| a.kind == kind && a.object.as_ref().is_some_and(|o| o.namespace == namespace && o.name == name))
            .map(|a| a.id)
    }

    /// The node actor of a node name.
    pub fn node(&self, name: &str) -> Option<ActorId> {
        self.of_object(ActorKind::Node, "", name)
    }

    /// Every node actor, in order.
    pub fn nodes(&self) -> impl Iterator<Item = &Actor> {
        self.list.iter().filter(|a| a.kind == ActorKind::Node)
    }

    /// The Pods (of any sort) that run on `node`.
    pub fn pods_on(&self, node: ActorId) -> impl Iterator<Item = &Actor> {
        self.list.iter().filter(move |a| a.kind.is_pod() && a.parent == Some(node))
    }

    /// The actor packets to `ip` are delivered to, if one owns the address.
    pub fn with_ip(&self, ip: Ipv4Addr) -> Option<ActorId> {
        self.list.iter().find(|a| a.ip == Some(ip)).map(|a| a.id)
    }

    /// The label of an actor, or a placeholder for an unknown id.
    pub fn short(&self, id: ActorId) -> &str {
        self.get(id).map_or("?", |a| a.short.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    #[test]
    fn ids_are_positions_and_lookups_find_objects() {
        let mut a = Actors::default();
        let laptop = a.add(Actor::component(ActorKind::Laptop, Zone::Outside, "Laptop", "Laptop", "").at(ip(198, 51, 100, 23)));
        let mut node = Actor::component(ActorKind::Node, Zone::Cluster, "Node-1", "Node-1", "10.0.0.11").at(ip(10, 0, 0, 11));
        node.object = Some(ObjectRef::new("", "node-1"));
        let node = a.add(node);
        let mut pod = Actor::component(ActorKind::Pod, Zone::Cluster, "web-1", "Pod web-1", "").at(ip(10, 244, 1, 5));
        pod.parent = Some(node);
        pod.object = Some(ObjectRef::new("default", "web-1"));
        let pod = a.add(pod);
        assert_eq!((laptop, node, pod), (ActorId(0), ActorId(1), ActorId(2)));
        assert_eq!(a.node("node-1"), Some(node));
        assert_eq!(a.of_object(ActorKind::Pod, "default", "web-1"), Some(pod));
        assert_eq!(a.of_object(ActorKind::Pod, "other", "web-1"), None);
        assert_eq!(a.pods_on(node).map(|p| p.id).collect::<Vec<_>>(), [pod]);
        assert_eq!(a.with_ip(ip(10, 244, 1, 5)), Some(pod));
        assert_eq!(a.with_ip(ip(10, 244, 1, 50)), None, "addresses are compared whole, not as text prefixes");
        assert_eq!(a.short(ActorId(99)), "?");
    }

    #[test]
    fn css_names_are_the_lower_case_variant_names_and_distinct() {
        for k in ActorKind::ALL {
            assert_eq!(k.css_name(), format!("{k:?}").to_lowercase());
        }
        let names: std::collections::BTreeSet<_> = ActorKind::ALL.iter().map(|k| k.css_name()).collect();
        assert_eq!(names.len(), ActorKind::ALL.len());
    }
}
