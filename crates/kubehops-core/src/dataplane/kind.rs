//! kind: a Kubernetes cluster whose nodes are Docker containers on the
//! `kind` network.
//!
//! [`KindConfig`] is the part of `kind-config.yaml` that decides the
//! network: the cluster's name, its nodes' roles, and `extraPortMappings`.
//! [`KindConfig::create`] does what `kind create cluster` asks of Docker:
//! one container per node, named `<cluster>-<role>` (a second node of a
//! role gets `2`, and so on), each control-plane container also
//! publishing the API server's port 6443 on 127.0.0.1 at a port kind
//! picks at random. A mapping without `listenAddress` binds 0.0.0.0, and
//! one without `protocol` is TCP, as kind's Docker provider defaults them.

use crate::dataplane::docker::{DockerEngine, DockerError, PortBinding};
use crate::net::Protocol;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The port the API server listens on inside a control-plane node.
pub const API_SERVER_PORT: u16 = 6443;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    ControlPlane,
    Worker,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::ControlPlane => "control-plane",
            Role::Worker => "worker",
        }
    }
}

/// One entry of a node's `extraPortMappings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortMapping {
    pub container_port: u16,
    pub host_port: u16,
    /// `listenAddress`; unset means 0.0.0.0.
    pub listen_address: Option<Ipv4Addr>,
    /// `protocol`; unset means TCP.
    pub protocol: Option<Protocol>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindNode {
    pub role: Role,
    pub extra_port_mappings: Vec<PortMapping>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindConfig {
    /// `name`: the cluster's name, which prefixes every node's.
    pub name: String,
    pub nodes: Vec<KindNode>,
}

/// The config file as a user writes it, with the lines that make Docker
/// publish ports marked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigText {
    pub lines: Vec<String>,
    /// Indexes into `lines` of the `extraPortMappings` lines.
    pub mapping_lines: Vec<usize>,
}

impl KindConfig {
    /// The container name of each node, in config order.
    pub fn node_names(&self) -> Vec<String> {
        let mut seen: Vec<Role> = Vec::new();
        self.nodes
            .iter()
            .map(|n| {
                let count = seen.iter().filter(|r| **r == n.role).count();
                seen.push(n.role);
                let suffix = if count == 0 { String::new() } else { (count + 1).to_string() };
                format!("{}-{}{}", self.name, n.role.as_str(), suffix)
            })
            .collect()
    }

    /// `kind-config.yaml`.
    pub fn yaml(&self) -> ConfigText {
        let mut lines = vec!["kind: Cluster".to_string(), "apiVersion: kind.x-k8s.io/v1alpha4".into(), format!("name: {}", self.name), "nodes:".into()];
        let mut mapping_lines = Vec::new();
        for n in &self.nodes {
            lines.push(format!("- role: {}", n.role.as_str()));
            if n.extra_port_mappings.is_empty() {
                continue;
            }
            mapping_lines.push(lines.len());
            lines.push("  extraPortMappings:".into());
            for m in &n.extra_port_mappings {
                let mut item = vec![format!("containerPort: {}", m.container_port), format!("hostPort: {}", m.host_port)];
                if let Some(a) = m.listen_address {
                    item.push(format!("listenAddress: \"{a}\""));
                }
                if let Some(p) = m.protocol {
                    item.push(format!("protocol: {}", p.api_name()));
                }
                for (i, l) in item.iter().enumerate() {
                    mapping_lines.push(lines.len());
                    lines.push(format!("  {} {l}", if i == 0 { "-" } else { " " }));
                }
            }
        }
        ConfigText { lines, mapping_lines }
    }

    /// `kind create cluster --config kind-config.yaml`, as far as Docker
    /// sees it: the nodes' containers on the `kind` network. `api_port`
    /// stands for the free port kind picks for the API server.
    pub fn create(&self, docker: &mut DockerEngine, api_port: u16) -> Result<Vec<String>, DockerError> {
        let names = self.node_names();
        for (n, name) in self.nodes.iter().zip(&names) {
            let mut ports: Vec<PortBinding> = n
                .extra_port_mappings
                .iter()
                .map(|m| PortBinding {
                    host_ip: m.listen_address.unwrap_or(Ipv4Addr::UNSPECIFIED),
                    host_port: m.host_port,
                    container_port: m.container_port,
                    proto: m.protocol.unwrap_or(Protocol::Tcp),
                })
                .collect();
            if n.role == Role::ControlPlane {
                ports.push(PortBinding { host_ip: Ipv4Addr::LOCALHOST, host_port: api_port, container_port: API_SERVER_PORT, proto: Protocol::Tcp });
            }
            docker.run(name, "kind", ports)?;
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::docker::DockerNetwork;
    use crate::net::{ip, Cidr};

    fn lab() -> KindConfig {
        let m = PortMapping { container_port: 30082, host_port: 30082, listen_address: None, protocol: Some(Protocol::Tcp) };
        KindConfig { name: "apollo11".into(), nodes: vec![KindNode { role: Role::ControlPlane, extra_port_mappings: vec![m] }, KindNode { role: Role::Worker, extra_port_mappings: vec![] }] }
    }

    #[test]
    fn nodes_are_named_as_kind_names_them() {
        let mut c = lab();
        assert_eq!(c.node_names(), ["apollo11-control-plane", "apollo11-worker"]);
        c.nodes.push(KindNode { role: Role::Worker, extra_port_mappings: vec![] });
        c.nodes.push(KindNode { role: Role::Worker, extra_port_mappings: vec![] });
        assert_eq!(c.node_names()[2..], ["apollo11-worker2", "apollo11-worker3"]);
    }

    #[test]
    fn the_config_marks_its_mapping_lines_and_creates_the_containers() {
        let text = lab().yaml();
        let marked: Vec<&str> = text.mapping_lines.iter().map(|&i| text.lines[i].as_str()).collect();
        assert_eq!(marked, ["  extraPortMappings:", "  - containerPort: 30082", "    hostPort: 30082", "    protocol: TCP"]);
        assert_eq!(text.lines[4], "- role: control-plane");
        let mut d = DockerEngine::new(true);
        d.networks.push(DockerNetwork::new("kind", Cidr::new(ip(172, 18, 0, 0), 16), ip(172, 18, 0, 1)));
        lab().create(&mut d, 39023).unwrap();
        assert_eq!(d.ps_ports("apollo11"), ["", "0.0.0.0:30082->30082/tcp, 127.0.0.1:39023->6443/tcp"], "newest first: the worker has no ports");
        assert_eq!(d.container("apollo11-worker").unwrap().ip, ip(172, 18, 0, 3));
        // A second cluster asking for the same host port is refused by Docker.
        let mut other = lab();
        other.name = "gemini".into();
        let e = other.create(&mut d, 39024).unwrap_err();
        assert!(e.to_string().contains("endpoint gemini-control-plane") && e.to_string().ends_with("Bind for 0.0.0.0:30082 failed: port is already allocated"), "{e}");
    }
}
