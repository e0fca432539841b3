//! What kube-proxy settles about a Service port's endpoints before any
//! mode writes a rule: which endpoints exist for the port (from all the
//! Service's EndpointSlices), and which ones each traffic policy uses
//! (upstream's shared `CategorizeEndpoints`, pkg/proxy/topology.go). The
//! iptables mode ([`super::kubeproxy`]) and the nftables mode
//! ([`super::nftables`]) both start from here, so they agree on the
//! endpoints by construction.

use crate::api::{EndpointSlice, IpMode, Service, ServicePort, ServiceType, SessionAffinity, TrafficPolicy};
use crate::net::SockAddr;
use std::collections::HashSet;
use std::net::Ipv4Addr;

/// The endpoints of one service port, from every slice of its Service,
/// sorted as kube-proxy sorts them (by `ip:port` text). The first slice
/// that lists an address wins; the set keeps this linear.
pub(crate) fn port_endpoints(slices: &[&EndpointSlice], port: &ServicePort, hostname: &str) -> Vec<PortEndpoint> {
    let mut eps: Vec<PortEndpoint> = Vec::new();
    let mut seen = HashSet::new();
    for slice in slices {
        let Some(sp) = slice.ports.iter().find(|p| p.name == port.name && p.protocol == port.protocol) else { continue };
        for e in &slice.endpoints {
            let addr = SockAddr::new(e.ip, sp.port);
            if seen.insert(addr) {
                eps.push(PortEndpoint { addr, local: e.node_name == hostname, ready: e.ready, serving_terminating: e.serving && e.terminating });
            }
        }
    }
    crate::sort::by_key(&mut eps, |e| e.addr.to_string());
    eps
}

/// The endpoints of one service port, sorted as kube-proxy sorts them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PortEndpoint {
    pub addr: SockAddr,
    /// On the node kube-proxy runs on.
    pub local: bool,
    pub ready: bool,
    pub serving_terminating: bool,
}

/// kube-proxy's `CategorizeEndpoints`: which endpoints the Cluster and Local
/// policies use, all endpoints that need a KUBE-SEP chain, and whether the
/// Service has any usable endpoint anywhere.
fn categorize(eps: &[PortEndpoint], uses_cluster: bool, uses_local: bool) -> (Vec<&PortEndpoint>, Vec<&PortEndpoint>, Vec<&PortEndpoint>, bool) {
    let mut has_any = false;
    let mut cluster = Vec::new();
    if uses_cluster {
        cluster = eps.iter().filter(|e| e.ready).collect();
        if cluster.is_empty() {
            // Fall back to endpoints that still serve while terminating.
            cluster = eps.iter().filter(|e| e.serving_terminating).collect();
        }
        has_any = !cluster.is_empty();
    }
    if !uses_local {
        return (cluster.clone(), Vec::new(), cluster, has_any);
    }
    let (mut local_ready, mut local_st) = (false, false);
    for e in eps {
        if e.ready {
            has_any = true;
            local_ready |= e.local;
        } else if e.serving_terminating {
            has_any = true;
            local_st |= e.local;
        }
    }
    let local: Vec<&PortEndpoint> = if local_ready {
        eps.iter().filter(|e| e.local && e.ready).collect()
    } else if local_st {
        eps.iter().filter(|e| e.local && e.serving_terminating).collect()
    } else {
        Vec::new()
    };
    if !uses_cluster {
        return (cluster, local.clone(), local, has_any);
    }
    let used: std::collections::HashSet<SockAddr> = cluster.iter().chain(&local).map(|e| e.addr).collect();
    let all = eps.iter().filter(|e| used.contains(&e.addr)).collect();
    (cluster, local, all, has_any)
}

/// What both modes settle about one service port before naming any chain:
/// where it is reachable from outside, which traffic policies apply, the
/// endpoints each uses (`categorize`), and its session affinity. The
/// fields are upstream proxiers' per-port locals of the same names.
pub(crate) struct PortPolicy<'a> {
    /// The balancer addresses kube-proxy captures: a LoadBalancer's, not
    /// those with ipMode Proxy, whose balancer sends traffic to the node.
    pub lb_vips: Vec<Ipv4Addr>,
    /// The node port, for the Service types that have one.
    pub node_port: Option<u16>,
    /// A node port, an external IP or a balancer IP.
    pub externally_accessible: bool,
    /// `externalTrafficPolicy: Local` on an externally accessible port.
    pub etp_local: bool,
    /// `internalTrafficPolicy: Local`.
    pub itp_local: bool,
    pub uses_cluster: bool,
    pub uses_local: bool,
    pub cluster_eps: Vec<&'a PortEndpoint>,
    pub local_eps: Vec<&'a PortEndpoint>,
    /// Every endpoint either policy uses (each gets an endpoint chain).
    pub reachable: Vec<&'a PortEndpoint>,
    /// Some endpoint anywhere in the cluster can serve the port.
    pub has_endpoints: bool,
    /// The ClientIP session affinity timeout in seconds, if affinity is on.
    pub affinity: Option<u32>,
}

impl<'a> PortPolicy<'a> {
    pub fn new(svc: &Service, port: &ServicePort, eps: &'a [PortEndpoint]) -> PortPolicy<'a> {
        let lb_vips = if svc.spec.type_ == ServiceType::LoadBalancer {
            svc.status.load_balancer_ingress.iter().filter(|i| i.ip_mode != Some(IpMode::Proxy)).filter_map(|i| i.ip).collect()
        } else {
            Vec::new()
        };
        let node_port = port.node_port.filter(|_| svc.spec.type_.has_node_ports());
        let externally_accessible = node_port.is_some() || !lb_vips.is_empty() || !svc.spec.external_ips.is_empty();
        let etp_local = externally_accessible && svc.spec.external_traffic_policy == TrafficPolicy::Local;
        let itp_local = svc.spec.internal_traffic_policy == TrafficPolicy::Local;
        // Upstream's UsesClusterEndpoints: even with externalTrafficPolicy
        // Local, an externally accessible port needs its cluster chain, where
        // the external chain short-circuits Pods and the node itself. (With
        // both policies Local this was false here, and the external chain
        // named a chain never written: the real kernel refused it.)
        let uses_cluster = !itp_local || externally_accessible;
        let uses_local = itp_local || (externally_accessible && etp_local);
        let (cluster_eps, local_eps, reachable, has_endpoints) = categorize(eps, uses_cluster, uses_local);
        let affinity = match svc.spec.session_affinity {
            SessionAffinity::ClientIP { timeout_seconds } => Some(timeout_seconds),
            SessionAffinity::None => None,
        };
        PortPolicy { lb_vips, node_port, externally_accessible, etp_local, itp_local, uses_cluster, uses_local, cluster_eps, local_eps, reachable, has_endpoints, affinity }
    }
}
