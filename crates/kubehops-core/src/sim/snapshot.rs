//! What the data plane held at one moment, as plain data: every machine
//! that decides packets by its own rules, with those rules, and every Pod
//! with its address and port.
//!
//! A scenario keeps one with each step whose hops carry packets
//! ([`crate::scenarios::Step::snapshot`]), taken when the step's
//! connections have run: kube-proxy's rules change only on a control-plane
//! hop, and no step has one after its first packet (the scenario
//! invariants check that every rule a packet hop names is in its step's
//! snapshot). It is what a real-kernel replay needs to build the same
//! machines (`crates/kubehops-dataplane-harness`), and nothing of the
//! connections themselves: conntrack and neighbour tables are left out.

use super::{ActorId, HostNet, World};
use crate::api::Node;
use crate::dataplane::kubeproxy::{KubeProxyConfig, NodeRules};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataplaneSnapshot {
    /// kube-proxy's configuration, the same on every node: what the node
    /// can do (`--random-fully`, nfacct counters) and its settings
    /// (localhost node ports, which need `route_localnet`).
    pub proxy: KubeProxyConfig,
    pub nodes: Vec<NodeSnapshot>,
    pub pods: Vec<PodSnapshot>,
    /// Machines outside the cluster with rules of their own (the laptop
    /// running Docker Engine).
    pub hosts: Vec<HostSnapshot>,
}

/// One node: its addresses, and the full tables it holds (kube-proxy's
/// and the network plugin's), numbered as its hops number them
/// ([`NodeRules::save`]); in nftables mode `rules` holds the network
/// plugin's only, and `nftables` kube-proxy's table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeSnapshot {
    pub actor: ActorId,
    pub node: Node,
    pub rules: NodeRules,
    #[serde(default)]
    pub nftables: Option<crate::dataplane::nftables::Ruleset>,
}

/// One Pod, Ready or not: where it runs and the one port it serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodSnapshot {
    pub actor: ActorId,
    pub namespace: String,
    pub name: String,
    /// The name of its node.
    pub node: String,
    pub ip: Ipv4Addr,
    pub port: u16,
    pub ready: bool,
}

/// A host's addresses, routes and tables (numbered as its hops number
/// them, [`HostNet::line_of`]), without its connections, neighbours and
/// Docker's own state (its rules are in the tables).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSnapshot {
    pub net: HostNet,
    /// Interfaces with `route_localnet` set, so loopback addresses may be
    /// routed out of them (Docker sets it on its bridges when it runs
    /// without the userland proxy).
    pub route_localnet: Vec<String>,
}

impl World {
    /// The data plane as it is now.
    pub fn dataplane_snapshot(&self) -> DataplaneSnapshot {
        let nodes = self.api.nodes.iter().enumerate().map(|(i, n)| NodeSnapshot { actor: self.node_actors[i], node: n.clone(), rules: self.rules[i].iptables.clone(), nftables: self.rules[i].nftables.clone() }).collect();
        let pods = self
            .api
            .pods
            .iter()
            .filter_map(|p| {
                let actor = self.actors.iter().find(|a| a.kind.is_pod() && a.object.as_ref().is_some_and(|o| o.namespace == p.namespace && o.name == p.name))?.id;
                Some(PodSnapshot { actor, namespace: p.namespace.clone(), name: p.name.clone(), node: p.node_name.clone(), ip: p.ip, port: p.container_port, ready: p.ready })
            })
            .collect();
        let hosts = self
            .hosts
            .iter()
            .map(|h| {
                // Docker's own state is in the rules it wrote; only those are kept.
                let net = HostNet { actor: h.actor, addrs: h.addrs.clone(), routes: h.routes.clone(), neighbours: Vec::new(), docker: None, nat: h.nat.clone(), filter: h.filter.clone(), conntrack: Default::default() };
                let route_localnet = h.docker.as_ref().map_or_else(Vec::new, |d| d.route_localnet_bridges());
                HostSnapshot { net, route_localnet }
            })
            .collect();
        DataplaneSnapshot { proxy: self.proxy.clone(), nodes, pods, hosts }
    }
}

#[cfg(test)]
mod tests {
    use crate::scenarios::local_lab;
    use crate::scenarios::{build, Params};

    #[test]
    fn a_snapshot_holds_every_node_pod_and_host_without_connection_state() {
        let s = build("local-lab", &Params::default().with("hairpin", crate::scenarios::Value::Toggle(true))).expect("builds");
        let snap = s.steps[0].snapshot.as_ref().expect("the first step carries packets");
        assert_eq!(snap.nodes.iter().map(|n| n.node.name.as_str()).collect::<Vec<_>>(), ["apollo11-control-plane", "apollo11-worker"]);
        assert!(snap.pods.iter().any(|p| p.namespace == local_lab::NS && p.port == 8082 && p.ready));
        let host = &snap.hosts[0];
        assert!(host.net.conntrack.entries.is_empty() && host.net.neighbours.is_empty());
        assert!(host.net.nat.chain("DOCKER").is_some_and(|c| !c.rules.is_empty()), "Docker's rules");
        // Hairpin mode lets loopback out on every bridge: docker0 and kind's.
        assert_eq!(host.route_localnet.len(), 2);
        assert!(host.route_localnet.contains(&"docker0".to_string()) && host.route_localnet.iter().any(|b| b.starts_with("br-")));
        // With the userland proxy Docker leaves route_localnet alone.
        let s = build("local-lab", &Params::default()).expect("builds");
        assert!(s.steps[0].snapshot.as_ref().unwrap().hosts[0].route_localnet.is_empty());
        // A step of control-plane hops only carries none.
        assert!(s.steps.iter().any(|st| st.snapshot.is_none() && st.hops.iter().all(|h| h.packet.is_none())));
    }
}
