//! MetalLB: `type: LoadBalancer` without a cloud.
//!
//! Two parts, as in MetalLB. The controller ([`MetalLb::services_changed`])
//! watches LoadBalancer Services and gives each an address from an
//! [`IpAddressPool`]: the one the Service asks for (the
//! `metallb.io/loadBalancerIPs` annotation, its older
//! `metallb.universe.tf/` spelling, or `spec.loadBalancerIP`) when that
//! address is in a pool and free, else the first free address in address
//! order; it frees the address when the Service goes or stops being a
//! LoadBalancer. Its refusals are MetalLB's `AllocationFailed` events, in
//! MetalLB's words. The speakers, one per node, decide which node answers
//! ARP for each address ([`elect`]): every speaker ranks the candidate
//! nodes the same way, by SHA-256 of `node#ip`, and the first one
//! announces. Candidates are the nodes with a speaker that are not
//! labelled `node.kubernetes.io/exclude-from-external-load-balancers`
//! (kubeadm labels control-plane nodes so), and under
//! externalTrafficPolicy Local only those with a serving endpoint.
//!
//! Left out: IPv6 and dual stack, sharing an address between Services
//! (`allow-shared-ip`), pool selection by namespace or label, BGP, and
//! node preferences in L2Advertisements.

use crate::api::server::ApiServer;
use crate::api::{EndpointSlice, LoadBalancerIngress, ObjectRef, Service, ServiceStatus, ServiceType, TrafficPolicy};
use crate::controllers::{Event, Party};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;

/// The annotation that asks for addresses, and its deprecated spelling.
pub const ANNOTATION_IPS: &str = "metallb.io/loadBalancerIPs";
pub const DEPRECATED_ANNOTATION_IPS: &str = "metallb.universe.tf/loadBalancerIPs";
/// The label kubeadm puts on control-plane nodes.
pub const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// `metallb.io/v1beta1` IPAddressPool, as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpAddressPool {
    pub name: String,
    pub namespace: String,
    /// `spec.addresses`: CIDRs (`172.18.0.64/27`) or ranges (`172.18.0.50-172.18.0.100`).
    pub addresses: Vec<String>,
}

/// `metallb.io/v1beta1` L2Advertisement: announce these pools in layer 2.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct L2Advertisement {
    pub name: String,
    pub namespace: String,
    /// `spec.ipAddressPools`; empty means every pool.
    pub ip_address_pools: Vec<String>,
}

/// A pool as MetalLB holds it: inclusive address ranges, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pool {
    pub name: String,
    pub ranges: Vec<(Ipv4Addr, Ipv4Addr)>,
}

impl Pool {
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.ranges.iter().any(|(a, b)| *a <= ip && ip <= *b)
    }

    /// Every address, in order (a pool of the model is small).
    pub fn addresses(&self) -> impl Iterator<Item = Ipv4Addr> + '_ {
        self.ranges.iter().flat_map(|(a, b)| (u32::from(*a)..=u32::from(*b)).map(Ipv4Addr::from))
    }

    pub fn size(&self) -> u64 {
        self.ranges.iter().map(|(a, b)| u64::from(u32::from(*b) - u32::from(*a)) + 1).sum()
    }
}

impl IpAddressPool {
    /// The pool's addresses, or MetalLB's reason for refusing it (its
    /// webhook denies the object with the same text).
    pub fn parse(&self) -> Result<Pool, String> {
        let fail = |e: String| format!("parsing address pool {}: {e}", self.name);
        if self.addresses.is_empty() {
            return Err(fail("pool has no prefixes defined".into()));
        }
        let mut ranges = Vec::new();
        for a in &self.addresses {
            ranges.push(parse_range(a).map_err(|e| fail(format!("invalid CIDR \"{a}\" in pool \"{}\": {e}", self.name)))?);
        }
        Ok(Pool { name: self.name.clone(), ranges })
    }

    /// The manifest a user applies.
    pub fn yaml(&self) -> Vec<String> {
        let mut y = header("IPAddressPool", &self.name, &self.namespace);
        y.push("spec:".into());
        y.push("  addresses:".into());
        y.extend(self.addresses.iter().map(|a| format!("  - {a}")));
        y
    }
}

impl L2Advertisement {
    pub fn yaml(&self) -> Vec<String> {
        let mut y = header("L2Advertisement", &self.name, &self.namespace);
        if !self.ip_address_pools.is_empty() {
            y.push("spec:".into());
            y.push("  ipAddressPools:".into());
            y.extend(self.ip_address_pools.iter().map(|p| format!("  - {p}")));
        }
        y
    }
}

fn header(kind: &str, name: &str, namespace: &str) -> Vec<String> {
    vec!["apiVersion: metallb.io/v1beta1".into(), format!("kind: {kind}"), "metadata:".into(), format!("  name: {name}"), format!("  namespace: {namespace}")]
}

/// One entry of `spec.addresses`, with MetalLB's errors.
fn parse_range(s: &str) -> Result<(Ipv4Addr, Ipv4Addr), String> {
    let Some((a, b)) = s.split_once('-') else {
        let c: crate::net::Cidr = s.parse().map_err(|_| format!("invalid CIDR \"{s}\""))?;
        let last = u32::from(c.addr) | (u32::MAX.checked_shr(u32::from(c.prefix)).unwrap_or(0));
        return Ok((c.addr, Ipv4Addr::from(last)));
    };
    let start: Ipv4Addr = a.trim().parse().map_err(|_| format!("invalid IP range \"{s}\": invalid start IP \"{a}\""))?;
    let end: Ipv4Addr = b.trim().parse().map_err(|_| format!("invalid IP range \"{s}\": invalid end IP \"{b}\""))?;
    if start > end {
        return Err(format!("invalid IP range \"{s}\": start IP \"{start}\" is after the end IP \"{end}\""));
    }
    Ok((start, end))
}

/// Why the controller could not give a Service an address: the message
/// after `Failed to allocate IP for "ns/name": `.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllocError {
    /// The requested address is in no pool.
    NotAllowed(Ipv4Addr),
    /// The requested address belongs to other Services, which do not share.
    InUse { svc: ObjectRef, by: Vec<ObjectRef> },
    /// Every pool address is taken.
    NoAvailable,
    /// Both the annotation and `spec.loadBalancerIP` ask.
    BothRequests,
    InvalidAnnotation(String),
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::NotAllowed(ip) => write!(f, "[\"{ip}\"] is not allowed in config"),
            AllocError::InUse { svc, by } => {
                let by: Vec<String> = by.iter().map(|r| r.to_string()).collect();
                write!(f, "can't change sharing key for \"{svc}\", address also in use by {}", by.join(","))
            }
            AllocError::NoAvailable => write!(f, "no available IPs"),
            AllocError::BothRequests => write!(f, "service can not have both {ANNOTATION_IPS} and svc.Spec.LoadBalancerIP"),
            AllocError::InvalidAnnotation(v) => write!(f, "invalid {ANNOTATION_IPS}: \"{v}\""),
        }
    }
}

/// Which Service holds which address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocator {
    pub pools: Vec<Pool>,
    pub allocated: BTreeMap<ObjectRef, Ipv4Addr>,
}

impl Allocator {
    pub fn ip_of(&self, svc: &ObjectRef) -> Option<Ipv4Addr> {
        self.allocated.get(svc).copied()
    }

    fn holders(&self, ip: Ipv4Addr, except: &ObjectRef) -> Vec<ObjectRef> {
        self.allocated.iter().filter(|(s, a)| **a == ip && *s != except).map(|(s, _)| s.clone()).collect()
    }

    /// Gives `svc` the address it asked for, if a pool has it and no one
    /// else holds it.
    pub fn assign(&mut self, svc: &ObjectRef, ip: Ipv4Addr) -> Result<Ipv4Addr, AllocError> {
        if !self.pools.iter().any(|p| p.contains(ip)) {
            return Err(AllocError::NotAllowed(ip));
        }
        let by = self.holders(ip, svc);
        if !by.is_empty() {
            return Err(AllocError::InUse { svc: svc.clone(), by });
        }
        self.allocated.insert(svc.clone(), ip);
        Ok(ip)
    }

    /// Gives `svc` the first free address, pool by pool in address order;
    /// a Service that holds one keeps it.
    pub fn allocate(&mut self, svc: &ObjectRef) -> Result<Ipv4Addr, AllocError> {
        if let Some(ip) = self.ip_of(svc) {
            return Ok(ip);
        }
        let free = self.pools.iter().flat_map(|p| p.addresses()).find(|ip| !self.allocated.values().any(|a| a == ip));
        let ip = free.ok_or(AllocError::NoAvailable)?;
        self.allocated.insert(svc.clone(), ip);
        Ok(ip)
    }

    /// Frees the address of `svc`; returns it.
    pub fn unassign(&mut self, svc: &ObjectRef) -> Option<Ipv4Addr> {
        self.allocated.remove(svc)
    }
}

/// The address a Service asks for, if any, read as MetalLB reads it.
pub fn requested_ip(svc: &Service) -> Result<Option<Ipv4Addr>, AllocError> {
    let ann = svc.annotations.get(ANNOTATION_IPS).or_else(|| svc.annotations.get(DEPRECATED_ANNOTATION_IPS)).filter(|v| !v.is_empty());
    match (ann, svc.spec.load_balancer_ip) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(AllocError::BothRequests),
        (None, Some(ip)) => Ok(Some(ip)),
        (Some(v), None) => {
            // One IPv4 address: the model has no second family.
            let ips: Vec<&str> = v.split(',').map(str::trim).collect();
            match ips.as_slice() {
                [one] => one.parse().map(Some).map_err(|_| AllocError::InvalidAnnotation(v.clone())),
                _ => Err(AllocError::InvalidAnnotation(v.clone())),
            }
        }
    }
}

/// A node as the speakers see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpeakerNode {
    pub node: String,
    /// Carries [`EXCLUDE_LABEL`]: its speaker never announces.
    pub excluded: bool,
}

/// The node that announces `ip`: of `candidates`, the one whose
/// SHA-256 of `node#ip` is smallest, as every speaker computes it.
pub fn elect(ip: Ipv4Addr, candidates: &[String]) -> Option<String> {
    candidates.iter().min_by_key(|n| crate::hash::sha256(format!("{n}#{ip}").as_bytes())).cloned()
}

/// The nodes that may announce a Service's address: speakers on nodes
/// not excluded, and under externalTrafficPolicy Local only those with a
/// serving endpoint. None at all when no endpoint can serve.
pub fn candidates(svc: &Service, slice: Option<&EndpointSlice>, speakers: &[SpeakerNode]) -> Vec<String> {
    let serving: Vec<&str> = slice.iter().flat_map(|s| s.endpoints.iter()).filter(|e| e.ready || e.serving).map(|e| e.node_name.as_str()).collect();
    if serving.is_empty() {
        return Vec::new();
    }
    speakers
        .iter()
        .filter(|s| !s.excluded)
        .filter(|s| svc.spec.external_traffic_policy != TrafficPolicy::Local || serving.contains(&s.node.as_str()))
        .map(|s| s.node.clone())
        .collect()
}

/// MetalLB installed in a cluster: its configuration, what its controller
/// allocated and which node announces each address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetalLb {
    pub pools: Vec<IpAddressPool>,
    pub l2: Vec<L2Advertisement>,
    pub allocator: Allocator,
    pub speakers: Vec<SpeakerNode>,
    /// Address → the node whose speaker answers ARP for it.
    pub announced: BTreeMap<Ipv4Addr, String>,
    /// The Services whose last allocation failed, with why: reported once.
    pub failed: BTreeMap<ObjectRef, AllocError>,
}

impl MetalLb {
    /// MetalLB freshly installed: speakers on these nodes, no pool yet.
    pub fn new(speakers: Vec<SpeakerNode>) -> MetalLb {
        MetalLb { speakers, ..Default::default() }
    }

    /// Takes a new configuration; a pool MetalLB cannot parse is refused
    /// whole, in its words, and the old configuration stays.
    pub fn configure(&mut self, pools: Vec<IpAddressPool>, l2: Vec<L2Advertisement>) -> Result<(), String> {
        let parsed = pools.iter().map(IpAddressPool::parse).collect::<Result<Vec<Pool>, String>>()?;
        self.pools = pools;
        self.l2 = l2;
        self.allocator.pools = parsed;
        Ok(())
    }

    /// The node announcing `ip`, if any.
    pub fn announcer(&self, ip: Ipv4Addr) -> Option<&str> {
        self.announced.get(&ip).map(String::as_str)
    }

    /// Whether the pool of `ip` is announced in layer 2.
    fn advertised(&self, ip: Ipv4Addr) -> bool {
        let pool = self.allocator.pools.iter().find(|p| p.contains(ip));
        pool.is_some_and(|p| self.l2.iter().any(|a| a.ip_address_pools.is_empty() || a.ip_address_pools.contains(&p.name)))
    }

    /// The controller converges every Service, then the speakers re-elect.
    pub fn services_changed(&mut self, api: &mut ApiServer) -> Vec<Event> {
        let mut events = self.release(api);
        let services: Vec<Service> = api.services().filter(|s| s.spec.type_ == ServiceType::LoadBalancer).cloned().collect();
        for svc in &services {
            events.extend(self.converge(api, svc));
        }
        events.extend(self.speakers_changed(api));
        events
    }

    /// Frees the addresses of Services that are gone or no longer
    /// LoadBalancers.
    fn release(&mut self, api: &ApiServer) -> Vec<Event> {
        let gone: Vec<ObjectRef> =
            self.allocator.allocated.keys().filter(|r| api.service(&r.namespace, &r.name).is_none_or(|s| s.spec.type_ != ServiceType::LoadBalancer)).cloned().collect();
        let mut events = Vec::new();
        for r in gone {
            if let Some(ip) = self.allocator.unassign(&r) {
                events.push(Event::new(Party::ApiServer, Party::Controller, format!("release {ip}"), format!("Service {r} no longer needs an address, so MetalLB's controller returns {ip} to the pool.")));
            }
        }
        self.failed.retain(|r, _| api.service(&r.namespace, &r.name).is_some_and(|s| s.spec.type_ == ServiceType::LoadBalancer));
        events
    }

    /// One Service: keep its address, or allocate one and write it into
    /// `status.loadBalancer`, or report why not (once per reason).
    fn converge(&mut self, api: &mut ApiServer, svc: &Service) -> Vec<Event> {
        let key = svc.object_ref();
        if self.allocator.pools.is_empty() {
            // MetalLB does nothing until it has a pool.
            return Vec::new();
        }
        let want = requested_ip(svc);
        let held = self.allocator.ip_of(&key);
        if held.is_some() && matches!(want, Ok(None)) || held.is_some() && want == Ok(held) {
            return Vec::new();
        }
        if held.is_some() {
            self.allocator.unassign(&key);
        }
        let result = match want {
            Err(e) => Err(e),
            Ok(Some(ip)) => self.allocator.assign(&key, ip),
            Ok(None) => self.allocator.allocate(&key),
        };
        let mut events = vec![Event::new(
            Party::ApiServer,
            Party::Controller,
            "watch → metallb-controller",
            format!("MetalLB's controller sees Service {key} of type LoadBalancer{}.", if held.is_some() { ", which now asks for another address" } else { " with no address yet" }),
        )];
        match result {
            Ok(ip) => {
                self.failed.remove(&key);
                api.update_service_status(&key, ServiceStatus { load_balancer_ingress: vec![LoadBalancerIngress::with_ip(ip, None)] });
                let mut e = Event::new(
                    Party::Controller,
                    Party::ApiServer,
                    format!("PATCH status.loadBalancer: {ip}"),
                    format!("It assigns {ip} from pool {} and writes status.loadBalancer.ingress: [{{ip: {ip}}}], with no ipMode, which kube-proxy reads as VIP. Event IPAllocated: Assigned IP [\"{ip}\"].", self.pool_of(ip)),
                );
                e.status_of = Some(key);
                events.push(e);
            }
            Err(err) => {
                if self.failed.get(&key) == Some(&err) {
                    return Vec::new();
                }
                self.failed.insert(key.clone(), err.clone());
                if held.is_some() {
                    api.update_service_status(&key, ServiceStatus::default());
                }
                let mut e = Event::new(
                    Party::Controller,
                    Party::ApiServer,
                    "AllocationFailed",
                    format!("Warning event AllocationFailed from metallb-controller: Failed to allocate IP for \"{key}\": {err}. The Service stays <pending>."),
                );
                e.ok = false;
                e.status_of = held.map(|_| key);
                events.push(e);
            }
        }
        events
    }

    fn pool_of(&self, ip: Ipv4Addr) -> String {
        self.allocator.pools.iter().find(|p| p.contains(ip)).map_or_else(String::new, |p| p.name.clone())
    }

    /// The speakers re-run their election for every allocated address
    /// (after a Service or its endpoints changed); one event per change of
    /// announcer.
    pub fn speakers_changed(&mut self, api: &ApiServer) -> Vec<Event> {
        let slices = api.endpoint_slices();
        let mut now: BTreeMap<Ipv4Addr, String> = BTreeMap::new();
        for (r, ip) in &self.allocator.allocated {
            let Some(svc) = api.service(&r.namespace, &r.name) else { continue };
            let has_status = svc.status.load_balancer_ingress.iter().any(|i| i.ip == Some(*ip));
            if !has_status || !self.advertised(*ip) {
                continue;
            }
            let slice = slices.iter().find(|s| s.namespace == r.namespace && s.service_name == r.name);
            if let Some(node) = elect(*ip, &candidates(svc, slice, &self.speakers)) {
                now.insert(*ip, node);
            }
        }
        let mut events = Vec::new();
        let node_index = |n: &str| api.nodes.iter().position(|x| x.name == n);
        for (ip, old) in &self.announced {
            if now.get(ip) != Some(old) {
                if let Some(i) = node_index(old) {
                    events.push(Event::new(Party::ApiServer, Party::Speaker { node: i }, format!("stop announcing {ip}"), format!("The speaker on {old} is no longer the one to announce {ip}; it stops answering ARP for it.")));
                }
            }
        }
        for (ip, node) in &now {
            if self.announced.get(ip) != Some(node) {
                if let Some(i) = node_index(node) {
                    events.push(Event::new(
                        Party::Speaker { node: i },
                        Party::ApiServer,
                        format!("nodeAssigned: {node}"),
                        format!("Every speaker ranks the candidate nodes for {ip} the same way; {node} comes first, so its speaker announces {ip} in layer 2 and will answer ARP for it. Event nodeAssigned: announcing from node \"{node}\" with protocol \"layer2\"."),
                    ));
                }
            }
        }
        self.announced = now;
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    fn pool(addresses: &[&str]) -> IpAddressPool {
        IpAddressPool { name: "kind-pool".into(), namespace: "metallb-system".into(), addresses: addresses.iter().map(|s| s.to_string()).collect() }
    }

    fn svc(name: &str) -> ObjectRef {
        ObjectRef::new("apollo-airlines-apps", name)
    }

    #[test]
    fn pools_parse_ranges_and_cidrs_and_refuse_in_metallbs_words() {
        let p = pool(&["172.18.0.50-172.18.0.100"]).parse().unwrap();
        assert_eq!((p.size(), p.addresses().next(), p.addresses().last()), (51, Some(ip(172, 18, 0, 50)), Some(ip(172, 18, 0, 100))));
        let c = pool(&["172.18.0.64/30"]).parse().unwrap();
        assert_eq!(c.addresses().collect::<Vec<_>>(), [ip(172, 18, 0, 64), ip(172, 18, 0, 65), ip(172, 18, 0, 66), ip(172, 18, 0, 67)]);
        assert_eq!(
            pool(&["172.18.0.100-172.18.0.50"]).parse().unwrap_err(),
            "parsing address pool kind-pool: invalid CIDR \"172.18.0.100-172.18.0.50\" in pool \"kind-pool\": invalid IP range \"172.18.0.100-172.18.0.50\": start IP \"172.18.0.100\" is after the end IP \"172.18.0.50\""
        );
        assert!(pool(&["172.18.0.x-172.18.0.9"]).parse().unwrap_err().ends_with("invalid start IP \"172.18.0.x\""));
        assert!(pool(&["nonsense"]).parse().unwrap_err().ends_with("invalid CIDR \"nonsense\" in pool \"kind-pool\": invalid CIDR \"nonsense\""));
        assert_eq!(pool(&[]).parse().unwrap_err(), "parsing address pool kind-pool: pool has no prefixes defined");
    }

    #[test]
    fn the_allocator_goes_in_address_order_never_reuses_and_frees() {
        let mut a = Allocator { pools: vec![pool(&["172.18.0.50-172.18.0.52"]).parse().unwrap()], ..Default::default() };
        assert_eq!(a.allocate(&svc("a")), Ok(ip(172, 18, 0, 50)));
        assert_eq!(a.allocate(&svc("a")), Ok(ip(172, 18, 0, 50)), "a Service keeps its address");
        // A request for a free address is honoured, even out of order.
        assert_eq!(a.assign(&svc("b"), ip(172, 18, 0, 52)), Ok(ip(172, 18, 0, 52)));
        assert_eq!(a.allocate(&svc("c")), Ok(ip(172, 18, 0, 51)), "the first address nobody holds");
        // Exhausted.
        let e = a.allocate(&svc("d")).unwrap_err();
        assert_eq!(e.to_string(), "no available IPs");
        // Two Services asking for one address.
        let e = a.assign(&svc("d"), ip(172, 18, 0, 50)).unwrap_err();
        assert_eq!(e.to_string(), "can't change sharing key for \"apollo-airlines-apps/d\", address also in use by apollo-airlines-apps/a");
        assert_eq!(a.assign(&svc("d"), ip(172, 19, 0, 5)).unwrap_err().to_string(), "[\"172.19.0.5\"] is not allowed in config");
        // Freed addresses come back, first in order.
        assert_eq!(a.unassign(&svc("a")), Some(ip(172, 18, 0, 50)));
        assert_eq!(a.allocate(&svc("d")), Ok(ip(172, 18, 0, 50)));
    }

    #[test]
    fn the_election_ranks_nodes_by_sha256_of_name_and_address() {
        // Orders computed independently (Python's hashlib) for these names.
        let nodes: Vec<String> = ["apollo11-control-plane", "apollo11-worker", "apollo11-worker2", "apollo11-worker3"].iter().map(|s| s.to_string()).collect();
        assert_eq!(elect(ip(172, 18, 0, 50), &nodes).as_deref(), Some("apollo11-worker3"));
        assert_eq!(elect(ip(172, 18, 0, 51), &nodes).as_deref(), Some("apollo11-control-plane"));
        assert_eq!(elect(ip(172, 18, 0, 50), &nodes[..3]).as_deref(), Some("apollo11-worker"), "the runner-up takes over");
        assert_eq!(elect(ip(172, 18, 0, 51), &nodes[1..]).as_deref(), Some("apollo11-worker"));
        assert_eq!(elect(ip(172, 18, 0, 50), &[]), None);
        // The order of the list does not matter: every speaker agrees.
        let mut rev = nodes.clone();
        rev.reverse();
        assert_eq!(elect(ip(172, 18, 0, 52), &rev), elect(ip(172, 18, 0, 52), &nodes));
    }

    #[test]
    fn candidates_leave_out_excluded_nodes_and_under_local_nodes_without_endpoints() {
        use crate::api::{Endpoint, ServiceSpec};
        let ep = |node: &str, ready: bool| Endpoint { ip: ip(10, 244, 1, 5), node_name: node.into(), ready, serving: ready, terminating: false, target_ref: String::new(), hostname: None };
        let slice = |eps: Vec<Endpoint>| EndpointSlice { name: "booking-x".into(), namespace: "apollo-airlines-apps".into(), service_name: "booking".into(), endpoints: eps, ports: vec![] };
        let speakers = vec![SpeakerNode { node: "cp".into(), excluded: true }, SpeakerNode { node: "w1".into(), excluded: false }, SpeakerNode { node: "w2".into(), excluded: false }];
        let mut s = Service { name: "booking".into(), namespace: "apollo-airlines-apps".into(), annotations: Default::default(), spec: ServiceSpec { type_: ServiceType::LoadBalancer, ..Default::default() }, status: Default::default(), created: None };
        let one = slice(vec![ep("w2", true), ep("cp", true)]);
        assert_eq!(candidates(&s, Some(&one), &speakers), ["w1", "w2"], "Cluster: every speaker but the excluded one");
        s.spec.external_traffic_policy = TrafficPolicy::Local;
        assert_eq!(candidates(&s, Some(&one), &speakers), ["w2"], "Local: only where an endpoint serves");
        assert!(candidates(&s, Some(&slice(vec![ep("cp", true)])), &speakers).is_empty(), "the only endpoint is on the excluded node");
        s.spec.external_traffic_policy = TrafficPolicy::Cluster;
        assert!(candidates(&s, Some(&slice(vec![ep("w1", false)])), &speakers).is_empty(), "nothing to announce without a serving endpoint");
    }

    #[test]
    fn requests_are_read_from_annotations_or_the_spec() {
        use crate::api::ServiceSpec;
        let mut s = Service { name: "b".into(), namespace: "n".into(), annotations: Default::default(), spec: ServiceSpec::default(), status: Default::default(), created: None };
        assert_eq!(requested_ip(&s), Ok(None));
        s.annotations.insert(DEPRECATED_ANNOTATION_IPS.into(), "172.18.0.60".into());
        assert_eq!(requested_ip(&s), Ok(Some(ip(172, 18, 0, 60))));
        s.annotations.insert(ANNOTATION_IPS.into(), "172.18.0.61".into());
        assert_eq!(requested_ip(&s), Ok(Some(ip(172, 18, 0, 61))), "the current spelling wins");
        s.spec.load_balancer_ip = Some(ip(172, 18, 0, 62));
        assert_eq!(requested_ip(&s).unwrap_err().to_string(), "service can not have both metallb.io/loadBalancerIPs and svc.Spec.LoadBalancerIP");
        s.annotations.clear();
        assert_eq!(requested_ip(&s), Ok(Some(ip(172, 18, 0, 62))));
        s.spec.load_balancer_ip = None;
        s.annotations.insert(ANNOTATION_IPS.into(), "not-an-ip".into());
        assert_eq!(requested_ip(&s).unwrap_err().to_string(), "invalid metallb.io/loadBalancerIPs: \"not-an-ip\"");
    }
}
