//! The packet decisions to replay: one packet of a new connection, at one
//! node, from one kind of source.
//!
//! For a cluster, [`systematic`] lists every address kube-proxy writes a
//! rule for, from every kind of source that reaches it differently: a Pod
//! on the node, the node itself (its InternalIP, and 127.0.0.1 for
//! localhost node ports), an endpoint reaching its own Service (hairpin),
//! and an outside client. That is each Service port's cluster IP, node
//! port, load balancer IPs (from inside and outside
//! `loadBalancerSourceRanges` when it has them), external IPs and health
//! check node port, on every node. On the first node, a Pod also tries a
//! port each cluster IP does not serve, and a Pod and the node an
//! address of the Service range that no Service holds: no rule decides
//! those in iptables mode, while the nftables mode's `cluster-ips-check`
//! rejects the first and drops the second. The golden cases add their own
//! traced packets ([`from_case`]).

use crate::plan::ClusterSpec;
use kubehops_core::api::{Service, ServiceType};
use kubehops_core::dataplane::trace::TraceVerdict;
use kubehops_core::net::{ip, Cidr, Protocol, SockAddr};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// Where a decision's connection starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A client outside the cluster, routed to the node.
    Outside,
    /// A Pod on the node (an endpoint, or a client Pod the harness adds).
    Pod,
    /// A process on the node itself.
    Node,
    /// A host outside the cluster with rules of its own (its namespace
    /// holds the source address), to the node as from outside.
    Host,
}

/// How many connections a decision gets. Whatever the mode, when the
/// model's walk after the first connection can only reach the endpoint
/// that answered it (session affinity), the decision checks that the
/// client keeps it over [`crate::check::STICKY_CONNECTIONS`] connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Until every endpoint the model predicts has answered (bounded).
    Explore,
    /// [`crate::stats::SPLIT_CONNECTIONS`] connections, whose split over the
    /// endpoints must fit the model's probabilities.
    Split,
}

#[derive(Clone, Debug)]
pub struct Decision {
    pub what: String,
    /// The node the packet arrives at, or is sent by.
    pub node: String,
    pub source: Source,
    pub src: Ipv4Addr,
    pub proto: Protocol,
    pub dst: SockAddr,
    /// The verdict a golden file expects, when it says.
    pub want: Option<TraceVerdict>,
    pub mode: Mode,
}

impl Decision {
    pub fn from_node(&self) -> bool {
        self.source == Source::Node
    }

    /// Whether the source is outside the cluster (a client, or a host).
    pub fn from_outside(&self) -> bool {
        matches!(self.source, Source::Outside | Source::Host)
    }

    fn key(&self) -> (String, Source, Ipv4Addr, Protocol, SockAddr) {
        (self.node.clone(), self.source, self.src, self.proto, self.dst)
    }
}

/// Keeps the first of decisions that send the same packet from the same place.
pub fn dedup(decisions: Vec<Decision>) -> Vec<Decision> {
    let mut seen = BTreeSet::new();
    decisions.into_iter().filter(|d| seen.insert(d.key())).collect()
}

/// The outside client the harness dials from by default.
pub const OUTSIDE: Ipv4Addr = ip(198, 51, 100, 7);

/// Every address the cluster itself uses.
fn taken(spec: &ClusterSpec) -> BTreeSet<Ipv4Addr> {
    let mut t: BTreeSet<Ipv4Addr> = spec.nodes.iter().map(|n| n.internal_ip).collect();
    t.extend(spec.nodes.iter().filter_map(|n| n.pod_cidr.and_then(|c| c.nth(1))));
    t.extend(spec.slices.iter().flat_map(|s| s.endpoints.iter().map(|e| e.ip)));
    for s in &spec.services {
        t.extend(s.spec.cluster_ip);
        t.extend(s.spec.external_ips.iter().copied());
        t.extend(s.status.load_balancer_ingress.iter().filter_map(|i| i.ip));
    }
    t
}

/// The first address of `cidr` from `offset` on that is free.
fn free_in(cidr: Cidr, offset: u64, taken: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    (offset..cidr.size().saturating_sub(1)).filter_map(|o| cidr.nth(o)).find(|a| !taken.contains(a))
}

/// The client Pod address for node `n`: in its Pod range, else in the
/// cluster CIDR, else in 10.250.0.0/16.
fn client_pod(spec: &ClusterSpec, n: usize, taken: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    let node = &spec.nodes[n];
    let range = node.pod_cidr.or(spec.proxy.cluster_cidr).unwrap_or(Cidr::new(ip(10, 250, 0, 0), 16));
    let offset = if node.pod_cidr.is_some() { 200 } else { 200 + 256 * n as u64 };
    free_in(range, offset, taken)
}

/// A source inside the ranges, and one outside them.
fn range_sources(ranges: &[Cidr], taken: &BTreeSet<Ipv4Addr>) -> (Option<Ipv4Addr>, Option<Ipv4Addr>) {
    let inside = ranges.first().and_then(|r| free_in(*r, 9.min(r.size().saturating_sub(1)), taken).or_else(|| free_in(*r, 0, taken)));
    let outside = (1..=254u8).map(|d| ip(198, 51, 100, d)).find(|a| !taken.contains(a) && !ranges.iter().any(|r| r.contains(*a)));
    (inside, outside)
}

/// Whether kube-proxy writes rules for the Service at all.
fn proxied(s: &Service) -> bool {
    s.spec.type_ != ServiceType::ExternalName && !s.spec.headless && s.spec.cluster_ip.is_some()
}

/// The decisions that cover every rule kube-proxy writes for `spec`.
pub fn systematic(spec: &ClusterSpec) -> Vec<Decision> {
    let taken = taken(spec);
    let mut out = Vec::new();
    for (n, node) in spec.nodes.iter().enumerate() {
        let pod = client_pod(spec, n, &taken);
        for svc in spec.services.iter().filter(|s| proxied(s)) {
            for port in svc.spec.ports.iter().filter(|p| p.protocol != Protocol::Sctp) {
                let mut d = |what: String, source: Source, src: Ipv4Addr, dst: SockAddr, mode: Mode| {
                    let what = format!("{}: {what}", svc.port_name(port));
                    out.push(Decision { what, node: node.name.clone(), source, src, proto: port.protocol, dst, want: None, mode });
                };
                // One split per Service port (on the first node) is enough
                // to hold the kernel's picks to the model's probabilities;
                // under session affinity it becomes a check that the
                // client sticks.
                let pod_mode = if n == 0 { Mode::Split } else { Mode::Explore };
                let cip = SockAddr::new(svc.spec.cluster_ip.unwrap_or(Ipv4Addr::UNSPECIFIED), port.port);
                if let Some(p) = pod {
                    d(format!("a Pod to the cluster IP {cip}"), Source::Pod, p, cip, pod_mode);
                }
                d(format!("outside to the cluster IP {cip}"), Source::Outside, OUTSIDE, cip, Mode::Explore);
                d(format!("the node to the cluster IP {cip}"), Source::Node, node.internal_ip, cip, Mode::Explore);
                let own: BTreeSet<Ipv4Addr> = spec
                    .slices
                    .iter()
                    .filter(|s| s.namespace == svc.namespace && s.service_name == svc.name)
                    .flat_map(|s| s.endpoints.iter().filter(|e| e.node_name == node.name).map(|e| e.ip))
                    .collect();
                for e in own.iter().take(2) {
                    d(format!("endpoint {e} to its own Service's cluster IP (hairpin)"), Source::Pod, *e, cip, Mode::Explore);
                }
                if let Some(np) = port.node_port.filter(|_| svc.spec.type_.has_node_ports()) {
                    let at = SockAddr::new(node.internal_ip, np);
                    d(format!("outside to the node port {at}"), Source::Outside, OUTSIDE, at, Mode::Explore);
                    d(format!("the node to its node port {at}"), Source::Node, node.internal_ip, at, Mode::Explore);
                    let lo = SockAddr::new(Ipv4Addr::LOCALHOST, np);
                    d(format!("the node to the localhost node port {lo}"), Source::Node, Ipv4Addr::LOCALHOST, lo, Mode::Explore);
                    // Every address of 127.0.0.0/8 is the node's own.
                    let lo2 = SockAddr::new(ip(127, 0, 0, 2), np);
                    d(format!("the node to the node port on another loopback address {lo2}"), Source::Node, Ipv4Addr::LOCALHOST, lo2, Mode::Explore);
                    if let Some(p) = pod {
                        d(format!("a Pod to the node port {at}"), Source::Pod, p, at, Mode::Explore);
                    }
                }
                if svc.spec.type_ == ServiceType::LoadBalancer {
                    let ranges = &svc.spec.load_balancer_source_ranges;
                    for lb in svc.status.load_balancer_ingress.iter().filter_map(|i| i.ip) {
                        let at = SockAddr::new(lb, port.port);
                        if ranges.is_empty() {
                            d(format!("outside to the load balancer IP {at}"), Source::Outside, OUTSIDE, at, Mode::Explore);
                        } else {
                            let (inside, outside) = range_sources(ranges, &taken);
                            if let Some(a) = inside {
                                d(format!("outside, inside loadBalancerSourceRanges, to {at}"), Source::Outside, a, at, Mode::Explore);
                            }
                            if let Some(a) = outside {
                                d(format!("outside, outside loadBalancerSourceRanges, to {at}"), Source::Outside, a, at, Mode::Explore);
                            }
                        }
                        if let Some(p) = pod {
                            d(format!("a Pod to the load balancer IP {at}"), Source::Pod, p, at, Mode::Explore);
                        }
                        d(format!("the node to the load balancer IP {at}"), Source::Node, node.internal_ip, at, Mode::Explore);
                    }
                }
                for ext in &svc.spec.external_ips {
                    let at = SockAddr::new(*ext, port.port);
                    d(format!("outside to the external IP {at}"), Source::Outside, OUTSIDE, at, Mode::Explore);
                    d(format!("the node to the external IP {at}"), Source::Node, node.internal_ip, at, Mode::Explore);
                    if let Some(p) = pod {
                        d(format!("a Pod to the external IP {at}"), Source::Pod, p, at, Mode::Explore);
                    }
                }
            }
            if let Some(hc) = crate::plan::health_ports(std::slice::from_ref(svc)).first() {
                let at = SockAddr::new(node.internal_ip, *hc);
                let what = format!("{}/{}: outside to the health check node port {at}", svc.namespace, svc.name);
                out.push(Decision { what, node: node.name.clone(), source: Source::Outside, src: OUTSIDE, proto: Protocol::Tcp, dst: at, want: None, mode: Mode::Explore });
            }
            if let (0, Some(p), Some((proto, at))) = (n, pod, unserved_port(svc)) {
                let what = format!("{}/{}: a Pod to {at}, a port the cluster IP does not serve", svc.namespace, svc.name);
                out.push(Decision { what, node: node.name.clone(), source: Source::Pod, src: p, proto, dst: at, want: None, mode: Mode::Explore });
            }
        }
        if n > 0 {
            continue;
        }
        for cidr in &spec.service_cidrs {
            let Some(free) = free_in(*cidr, 200, &taken) else { continue };
            let at = SockAddr::new(free, 80);
            let mut d = |what: &str, source: Source, src: Ipv4Addr| {
                let what = format!("{what} {at}, in the Service range {cidr} but no Service's");
                out.push(Decision { what, node: node.name.clone(), source, src, proto: Protocol::Tcp, dst: at, want: None, mode: Mode::Explore });
            };
            if let Some(p) = pod {
                d("a Pod to", Source::Pod, p);
            }
            d("the node to", Source::Node, node.internal_ip);
        }
    }
    out
}

/// A port of the Service's cluster IP that none of its ports uses, with
/// its first port's protocol.
fn unserved_port(svc: &Service) -> Option<(Protocol, SockAddr)> {
    let first = svc.spec.ports.iter().find(|p| p.protocol != Protocol::Sctp)?;
    let used = |port: u16| svc.spec.ports.iter().any(|p| p.protocol == first.protocol && p.port == port);
    let port = (1..=u16::MAX).map(|i| first.port.wrapping_add(i)).find(|p| *p != 0 && !used(*p))?;
    Some((first.protocol, SockAddr::new(svc.spec.cluster_ip?, port)))
}

/// A golden case's traced packet, as a decision on its node.
pub fn from_case(node: &str, what: &str, src: Ipv4Addr, dst: SockAddr, from_node: bool, want: TraceVerdict, pod_sources: &[Ipv4Addr]) -> Decision {
    let source = if from_node {
        Source::Node
    } else if pod_sources.contains(&src) {
        Source::Pod
    } else {
        Source::Outside
    };
    Decision { what: format!("golden: {what}"), node: node.to_string(), source, src, proto: Protocol::Tcp, dst, want: Some(want), mode: Mode::Explore }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources;

    fn golden(name: &str) -> sources::Cluster {
        sources::golden_cases().into_iter().find(|c| c.spec.name.ends_with(name)).expect("case exists")
    }

    #[test]
    fn source_ranges_get_a_source_inside_and_one_outside() {
        let c = golden("kube-proxy/load-balancer");
        let to_ranged: Vec<&Decision> = c.decisions.iter().filter(|d| d.dst == SockAddr::new(ip(5, 6, 7, 8), 80) && d.source == Source::Outside).collect();
        let srcs: BTreeSet<Ipv4Addr> = to_ranged.iter().map(|d| d.src).collect();
        // The golden's own two, and the harness's inside (203.0.113.9, the
        // same as the golden's) and outside (the first free 198.51.100.x).
        assert!(srcs.contains(&ip(203, 0, 113, 9)) && srcs.contains(&ip(198, 51, 100, 1)), "{srcs:?}");
        let ranges: Vec<Cidr> = vec!["203.0.113.0/25".parse().unwrap(), "192.168.0.0/24".parse().unwrap()];
        assert!(srcs.iter().any(|s| !ranges.iter().any(|r| r.contains(*s))), "one source outside every range");
    }

    #[test]
    fn the_first_node_tries_an_unserved_port_and_an_unallocated_service_address() {
        let c = golden("kube-proxy/load-balancer");
        let unserved: Vec<&Decision> = c.decisions.iter().filter(|d| d.what.contains("does not serve")).collect();
        assert_eq!(unserved.len(), c.spec.services.len(), "one per Service");
        assert!(unserved.iter().all(|d| d.source == Source::Pod && d.dst.port == 81));
        let range: Vec<(Source, SockAddr)> = c.decisions.iter().filter(|d| d.what.contains("in the Service range")).map(|d| (d.source, d.dst)).collect();
        let free = SockAddr::new(ip(172, 30, 0, 200), 80);
        assert_eq!(range, [(Source::Pod, free), (Source::Node, free)]);
        let svc = &c.spec.services[0];
        assert_eq!(unserved_port(svc), Some((Protocol::Tcp, SockAddr::new(ip(172, 30, 0, 41), 81))));
    }

    #[test]
    fn every_rule_kind_has_a_decision() {
        let c = golden("kube-proxy/external-traffic-policy-local");
        let has = |what: &str| c.decisions.iter().any(|d| d.what.contains(what));
        for what in ["health check node port", "load balancer IP", "external IP", "node port", "localhost node port", "cluster IP", "hairpin"] {
            assert!(has(what), "no decision for {what}");
        }
        assert!(c.decisions.iter().all(|d| d.node == "test-node"));
        assert_eq!(c.decisions.len(), dedup(c.decisions.clone()).len(), "no decision twice");
    }
}
