//! kube-proxy in iptables mode: from Services and EndpointSlices to the
//! `nat` rules of one node.
//!
//! The chain layout, names, comments and rule order follow kube-proxy's
//! iptables proxier: `KUBE-SERVICES` matches a Service address and jumps to
//! `KUBE-SVC-…` (cluster traffic) or `KUBE-EXT-…` (traffic from outside),
//! `KUBE-SVC-…` picks an endpoint with `-m statistic`, and each
//! `KUBE-SEP-…` DNATs to one Pod. Packets that need SNAT are marked by
//! `KUBE-MARK-MASQ` and masqueraded in `KUBE-POSTROUTING`.

use crate::api::{EndpointSlice, IpMode, Node, Service, ServicePort, ServiceType, TrafficPolicy};
use crate::hash::sha256_base32;
use crate::iptables::{Match, Rule, Table, TableName, Target};
use crate::net::{Cidr, SockAddr};
use serde::{Deserialize, Serialize};

/// The mark kube-proxy sets on packets that must be masqueraded
/// (`--iptables-masquerade-bit=14`).
pub const MASQ_MARK: u32 = 0x4000;

/// The parts of `KubeProxyConfiguration` the rules depend on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KubeProxyConfig {
    /// `clusterCIDR`: sources inside it are Pods; others are masqueraded
    /// when they reach a ClusterIP.
    pub cluster_cidr: Option<Cidr>,
    /// `masqueradeAll`.
    pub masquerade_all: bool,
    /// `iptables.localhostNodePorts` (default true): node ports answer on 127.0.0.1.
    pub localhost_node_ports: bool,
    /// `hostnameOverride`: the node name kube-proxy compares endpoints' nodeName with.
    pub hostname_override: Option<String>,
}

impl Default for KubeProxyConfig {
    fn default() -> Self {
        KubeProxyConfig { cluster_cidr: None, masquerade_all: false, localhost_node_ports: true, hostname_override: None }
    }
}

/// `KUBE-SVC-` + the hash kube-proxy derives from the port name and protocol.
pub fn service_chain(port_name: &str, proto: &str) -> String {
    format!("KUBE-SVC-{}", port_proto_hash(port_name, proto))
}

/// `KUBE-EXT-` chain for traffic arriving from outside the cluster.
pub fn external_chain(port_name: &str, proto: &str) -> String {
    format!("KUBE-EXT-{}", port_proto_hash(port_name, proto))
}

/// `KUBE-SEP-` chain for one endpoint (`ip:port`) of a service port.
pub fn endpoint_chain(port_name: &str, proto: &str, endpoint: &str) -> String {
    let h = sha256_base32(format!("{port_name}{proto}{endpoint}").as_bytes());
    format!("KUBE-SEP-{}", &h[..16])
}

fn port_proto_hash(port_name: &str, proto: &str) -> String {
    sha256_base32(format!("{port_name}{proto}").as_bytes())[..16].to_string()
}

/// What kube-proxy wrote for one service port, for displays that show a
/// single Service's rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServicePortChains {
    pub port_name: String,
    pub svc_chain: String,
    pub ext_chain: Option<String>,
    pub sep_chains: Vec<String>,
}

/// The rules one node's kube-proxy holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeRules {
    pub node: String,
    pub filter: Table,
    pub nat: Table,
    pub services: Vec<ServicePortChains>,
}

impl NodeRules {
    /// Both tables in `iptables-save` format: `*filter … COMMIT` then `*nat … COMMIT`.
    pub fn save(&self) -> Vec<String> {
        let mut out = self.filter.save();
        out.extend(self.nat.save());
        out
    }

    /// The `iptables-save` lines of the nat table that belong to one
    /// Service, in table order (jump rules and its own chains).
    pub fn service_lines(&self, namespace: &str, name: &str) -> Vec<(usize, String)> {
        let prefix = format!("{namespace}/{name}");
        let own: Vec<&ServicePortChains> = self.services.iter().filter(|s| s.port_name == prefix || s.port_name.starts_with(&format!("{prefix}:"))).collect();
        let mut out = Vec::new();
        let mut line = 1 + self.nat.chains.len();
        for c in &self.nat.chains {
            let own_chain = own.iter().any(|s| s.svc_chain == c.name || s.ext_chain.as_deref() == Some(&c.name) || s.sep_chains.contains(&c.name));
            for r in &c.rules {
                let mentions = r.comment().is_some_and(|cm| own.iter().any(|s| comment_names(cm, &s.port_name)));
                if own_chain || mentions {
                    out.push((line, r.render(&c.name)));
                }
                line += 1;
            }
        }
        out
    }
}

/// Whether a kube-proxy comment is about this service port: the comment is
/// the port name, or starts with it and a space, or names it after "for ".
fn comment_names(comment: &str, port_name: &str) -> bool {
    comment == port_name
        || comment.strip_prefix(port_name).is_some_and(|rest| rest.starts_with(' '))
        || comment.contains(&format!("for {port_name} "))
}

/// Writes the nat table for `node`, as kube-proxy's sync loop does.
/// Services and slices are taken in the order given (callers sort them).
pub fn sync_node(node: &Node, services: &[Service], slices: &[EndpointSlice], cfg: &KubeProxyConfig) -> NodeRules {
    let mut nat = Table::new(TableName::Nat);
    for c in ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING", "KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ"] {
        nat.ensure_chain(c);
    }
    let portals = || vec![Match::Comment("kubernetes service portals".into())];
    nat.append("PREROUTING", Rule::new(portals(), Target::Jump("KUBE-SERVICES".into())));
    nat.append("OUTPUT", Rule::new(portals(), Target::Jump("KUBE-SERVICES".into())));
    nat.append("POSTROUTING", Rule::new(vec![Match::Comment("kubernetes postrouting rules".into())], Target::Jump("KUBE-POSTROUTING".into())));
    nat.append("KUBE-MARK-MASQ", Rule::new(vec![], Target::OrMark(MASQ_MARK)));
    nat.append("KUBE-POSTROUTING", Rule::new(vec![Match::Mark { value: MASQ_MARK, mask: MASQ_MARK, negate: true }], Target::Return));
    nat.append("KUBE-POSTROUTING", Rule::new(vec![], Target::XorMark(MASQ_MARK)));
    nat.append(
        "KUBE-POSTROUTING",
        Rule::new(vec![Match::Comment("kubernetes service traffic requiring SNAT".into())], Target::Masquerade),
    );

    let mut chains = Vec::new();
    for svc in services {
        if svc.spec.type_ == ServiceType::ExternalName {
            continue;
        }
        let Some(cluster_ip) = svc.spec.cluster_ip else { continue };
        let slice = slices.iter().find(|s| s.namespace == svc.namespace && s.service_name == svc.name);
        for port in &svc.spec.ports {
            chains.push(sync_port(&mut nat, node, svc, port, cluster_ip, slice, cfg));
        }
    }
    nat.append(
        "KUBE-SERVICES",
        Rule::new(
            vec![Match::Comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain".into()), Match::DstTypeLocal { negate: false }],
            Target::Jump("KUBE-NODEPORTS".into()),
        ),
    );
    NodeRules { node: node.name.clone(), filter: Table::new(TableName::Filter), nat, services: chains }
}

fn sync_port(
    nat: &mut Table,
    _node: &Node,
    svc: &Service,
    port: &ServicePort,
    cluster_ip: std::net::Ipv4Addr,
    slice: Option<&EndpointSlice>,
    cfg: &KubeProxyConfig,
) -> ServicePortChains {
    let name = svc.port_name(port);
    let proto = port.protocol.lower();
    let svc_chain = service_chain(&name, proto);
    let endpoints: Vec<SockAddr> = slice.map(|s| s.ready_addrs(port.name.as_deref()).into_iter().map(|(a, _)| a).collect()).unwrap_or_default();
    let has_endpoints = !endpoints.is_empty();
    let has_external = svc.spec.type_.has_node_ports() && svc.spec.external_traffic_policy == TrafficPolicy::Cluster;
    let ext_chain = has_external.then(|| external_chain(&name, proto));
    let sep_chains: Vec<String> = endpoints.iter().map(|e| endpoint_chain(&name, proto, &e.to_string())).collect();

    // Declare the chains in the order kube-proxy creates them.
    if has_endpoints {
        nat.ensure_chain(&svc_chain);
        if let Some(ext) = &ext_chain {
            nat.ensure_chain(ext);
        }
        for c in &sep_chains {
            nat.ensure_chain(c);
        }
    }

    let dst = |ip: std::net::Ipv4Addr| Match::Destination { cidr: Cidr::new(ip, 32), negate: false };
    let vip = |what: &str, ip: std::net::Ipv4Addr| {
        vec![
            Match::Comment(format!("{name} {what}")),
            Match::Protocol(port.protocol),
            dst(ip),
            Match::DestinationPort(port.port),
        ]
    };

    // Without endpoints kube-proxy writes REJECT rules in the filter table
    // instead; the nat table has nothing for the Service.
    if !has_endpoints {
        return ServicePortChains { port_name: name, svc_chain, ext_chain: None, sep_chains };
    }

    nat.append("KUBE-SERVICES", Rule::new(vip("cluster IP", cluster_ip), Target::Jump(svc_chain.clone())));
    if let Some(ext) = &ext_chain {
        for ing in svc.status.load_balancer_ingress.iter().filter(|i| i.ip_mode == IpMode::VIP) {
            if svc.spec.type_ == ServiceType::LoadBalancer {
                nat.append("KUBE-SERVICES", Rule::new(vip("loadbalancer IP", ing.ip), Target::Jump(ext.clone())));
            }
        }
        if let Some(np) = port.node_port {
            nat.append(
                "KUBE-NODEPORTS",
                Rule::new(vec![Match::Comment(name.clone()), Match::Protocol(port.protocol), Match::DestinationPort(np)], Target::Jump(ext.clone())),
            );
        }
        nat.append(
            ext,
            Rule::new(vec![Match::Comment(format!("masquerade traffic for {name} external destinations"))], Target::Jump("KUBE-MARK-MASQ".into())),
        );
        nat.append(ext, Rule::new(vec![], Target::Jump(svc_chain.clone())));
    }

    // Off-cluster sources that reach the ClusterIP are masqueraded so the
    // reply comes back through this node.
    if let Some(cc) = cfg.cluster_cidr {
        let mut m = vip("cluster IP", cluster_ip);
        m.push(Match::Source { cidr: cc, negate: true });
        nat.append(&svc_chain, Rule::new(m, Target::Jump("KUBE-MARK-MASQ".into())));
    }
    let n = endpoints.len();
    for (i, (ep, sep)) in endpoints.iter().zip(&sep_chains).enumerate() {
        let mut m = vec![Match::Comment(format!("{name} -> {ep}"))];
        if i + 1 < n {
            m.push(Match::Probability(1.0 / (n - i) as f64));
        }
        nat.append(&svc_chain, Rule::new(m, Target::Jump(sep.clone())));
    }
    for (ep, sep) in endpoints.iter().zip(&sep_chains) {
        // Hairpin: a Pod that reaches itself through the Service is masqueraded.
        nat.append(
            sep,
            Rule::new(vec![Match::Comment(name.clone()), Match::Source { cidr: Cidr::new(ep.ip, 32), negate: false }], Target::Jump("KUBE-MARK-MASQ".into())),
        );
        nat.append(sep, Rule::new(vec![Match::Comment(name.clone()), Match::Protocol(port.protocol)], Target::Dnat(*ep)));
    }
    ServicePortChains { port_name: name, svc_chain, ext_chain, sep_chains }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_names_match_kube_proxy() {
        // Known names from kube-proxy's own iptables proxier tests.
        assert_eq!(service_chain("ns1/svc1:p80", "tcp"), "KUBE-SVC-XPGD46QRK7WJZT7O");
        assert_eq!(endpoint_chain("ns1/svc1:p80", "tcp", "10.180.0.1:80"), "KUBE-SEP-SXIVWICOYRO3J4NJ");
        assert_eq!(external_chain("ns2/svc2:p80", "tcp"), "KUBE-EXT-GNZBNJ2PO5MGZ6GT");
    }
}
