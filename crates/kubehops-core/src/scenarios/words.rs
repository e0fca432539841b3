//! kube-proxy's rules in the narration's words, in the mode the world's
//! kube-proxy runs: "a KUBE-NODEPORTS rule for 30080" in iptables mode,
//! "an element tcp . 30080 in the verdict map service-nodeports" in
//! nftables mode. The names are kube-proxy's: the iptables chains it
//! always writes, and the nftables mode's maps and chain prefixes as
//! `dataplane::nftables` names them.

use crate::dataplane::kubeproxy::ProxyMode;
use crate::dataplane::nftables::{NO_ENDPOINT_NODEPORTS, SERVICE_IPS, SERVICE_NODEPORTS};
use crate::net::{Protocol, SockAddr};
use crate::sim::World;

/// Words for the rules of one world's kube-proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyWords(pub ProxyMode);

impl ProxyWords {
    pub fn of(w: &World) -> ProxyWords {
        ProxyWords(w.proxy.mode)
    }

    /// What catches a node port: `a KUBE-NODEPORTS rule for 30080`.
    pub fn node_port_rule(self, port: u16) -> String {
        match self.0 {
            ProxyMode::Iptables => format!("a KUBE-NODEPORTS rule for {port}"),
            ProxyMode::Nftables => format!("an element {} . {port} in the verdict map {SERVICE_NODEPORTS}", Protocol::Tcp.lower()),
        }
    }

    /// A Service's own node port rule, named once its port is known: `its KUBE-NODEPORTS rule`.
    pub fn own_node_port_rule(self) -> String {
        match self.0 {
            ProxyMode::Iptables => "its KUBE-NODEPORTS rule".into(),
            ProxyMode::Nftables => format!("its element in the verdict map {SERVICE_NODEPORTS}"),
        }
    }

    /// What catches a Service address: `a KUBE-SERVICES rule for 10.96.0.50:80`.
    pub fn address_rule(self, addr: SockAddr) -> String {
        match self.0 {
            ProxyMode::Iptables => format!("a KUBE-SERVICES rule for {addr}"),
            ProxyMode::Nftables => format!("an element {} . {} . {} in the verdict map {SERVICE_IPS}", addr.ip, Protocol::Tcp.lower(), addr.port),
        }
    }

    /// The chain shared by a Service's outside addresses: `the KUBE-EXT
    /// chain`; in nftables mode the chain's own name (its `external-`
    /// chain, named for the Service's port), from `chains` as
    /// [`crate::dataplane::proxy::NodeTables::port_chains`] gives them.
    pub fn external_chain(self, chains: &[String]) -> String {
        match self.0 {
            ProxyMode::Iptables => "the KUBE-EXT chain".into(),
            ProxyMode::Nftables => named(chains, "external-", "the Service's external chain"),
        }
    }

    /// The chain that picks an endpoint: `the KUBE-SVC chain`, or in
    /// nftables mode the Service port's own `service-` chain, by name.
    pub fn service_chain(self, chains: &[String]) -> String {
        match self.0 {
            ProxyMode::Iptables => "the KUBE-SVC chain".into(),
            ProxyMode::Nftables => named(chains, "service-", "the Service's own chain"),
        }
    }

    /// What drops outside traffic a Local policy has no endpoint for here.
    pub fn local_drop(self) -> String {
        match self.0 {
            ProxyMode::Iptables => "its filter table drops the packet".into(),
            ProxyMode::Nftables => format!("the verdict map {NO_ENDPOINT_NODEPORTS} drops the packet"),
        }
    }

    /// A node port's way to the pick under externalTrafficPolicy: Cluster,
    /// as a clause: `its KUBE-NODEPORTS rule jumps to KUBE-EXT, which marks
    /// the packet for masquerade …, and on to KUBE-SVC`.
    pub fn node_port_path(self, chains: &[String]) -> String {
        match self.0 {
            ProxyMode::Iptables => "its KUBE-NODEPORTS rule jumps to KUBE-EXT, which marks the packet for masquerade (externalTrafficPolicy: Cluster), and on to KUBE-SVC".into(),
            ProxyMode::Nftables => format!(
                "its verdict map {SERVICE_NODEPORTS} sends the port to {}, which marks the packet for masquerade (externalTrafficPolicy: Cluster) and goes to {}",
                self.external_chain(chains),
                self.service_chain(chains)
            ),
        }
    }

    /// How a rule hands a packet to a Service's chain: iptables jumps,
    /// kube-proxy's verdict maps go to it.
    pub fn hands_to(self) -> &'static str {
        match self.0 {
            ProxyMode::Iptables => "jumps to",
            ProxyMode::Nftables => "goes to",
        }
    }

    /// The hook where a Service address is caught on arrival.
    pub fn prerouting(self) -> &'static str {
        match self.0 {
            ProxyMode::Iptables => "PREROUTING",
            ProxyMode::Nftables => "the prerouting hook",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    #[test]
    fn each_mode_names_its_own_rules() {
        let (ipt, nft) = (ProxyWords(ProxyMode::Iptables), ProxyWords(ProxyMode::Nftables));
        assert_eq!(ipt.node_port_rule(30080), "a KUBE-NODEPORTS rule for 30080");
        assert_eq!(nft.node_port_rule(30080), "an element tcp . 30080 in the verdict map service-nodeports");
        let a = SockAddr::new(ip(10, 96, 0, 50), 80);
        assert_eq!(nft.address_rule(a), "an element 10.96.0.50 . tcp . 80 in the verdict map service-ips");
        assert_eq!(ipt.address_rule(a), "a KUBE-SERVICES rule for 10.96.0.50:80");
    }
}

/// `the chain NAME` for the first of `chains` that starts with `prefix`,
/// or `otherwise` where the node has none (a Service not yet synced).
fn named(chains: &[String], prefix: &str, otherwise: &str) -> String {
    chains.iter().find(|c| c.starts_with(prefix)).map_or_else(|| otherwise.to_string(), |c| format!("the chain {c}"))
}
