//! Kubernetes API objects, reduced to the fields Service networking reads.
//!
//! Field names follow the Kubernetes API (`spec.externalTrafficPolicy`,
//! `status.loadBalancer.ingress`), so serialised objects look like the real
//! ones. Values are typed: addresses are `Ipv4Addr`, protocols are enums.

use crate::net::{Protocol, SockAddr};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

pub type Labels = BTreeMap<String, String>;

/// Identifies an object inside a kind: `namespace/name`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    pub fn new(namespace: &str, name: &str) -> ObjectRef {
        ObjectRef { namespace: namespace.into(), name: name.into() }
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    pub name: String,
    /// `status.addresses[type=InternalIP]`.
    pub internal_ip: Ipv4Addr,
    /// `spec.podCIDR`: the range this node's Pods get addresses from.
    pub pod_cidr: Option<crate::net::Cidr>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    pub name: String,
    pub namespace: String,
    pub labels: Labels,
    /// `spec.nodeName`.
    pub node_name: String,
    /// `status.podIP`.
    pub ip: Ipv4Addr,
    /// The container port the app listens on.
    pub container_port: u16,
    /// That port's name in the Pod spec (`http`), which a Service's
    /// `targetPort` may give instead of the number.
    #[serde(default)]
    pub port_name: Option<String>,
    /// The `Ready` condition: only ready Pods serve traffic.
    pub ready: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ServiceType {
    #[default]
    ClusterIP,
    NodePort,
    LoadBalancer,
    ExternalName,
}

impl ServiceType {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::ClusterIP => "ClusterIP",
            ServiceType::NodePort => "NodePort",
            ServiceType::LoadBalancer => "LoadBalancer",
            ServiceType::ExternalName => "ExternalName",
        }
    }

    /// NodePort and LoadBalancer Services get a node port per service port.
    pub fn has_node_ports(self) -> bool {
        matches!(self, ServiceType::NodePort | ServiceType::LoadBalancer)
    }
}

/// `spec.externalTrafficPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum TrafficPolicy {
    #[default]
    Cluster,
    Local,
}

/// `status.loadBalancer.ingress[].ipMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum IpMode {
    /// The balancer delivers packets still addressed to its own IP.
    #[default]
    VIP,
    /// The balancer terminates or rewrites the connection itself.
    Proxy,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// Optional for a single-port Service.
    pub name: Option<String>,
    pub protocol: Protocol,
    pub port: u16,
    pub target_port: u16,
    pub node_port: Option<u16>,
}

/// `spec.sessionAffinity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum SessionAffinity {
    #[default]
    None,
    /// Connections from one client IP stick to one endpoint for this many
    /// seconds (`sessionAffinityConfig.clientIP.timeoutSeconds`, 10800 by default).
    ClientIP { timeout_seconds: u32 },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    #[serde(rename = "type")]
    pub type_: ServiceType,
    pub selector: Labels,
    pub ports: Vec<ServicePort>,
    /// `None` asks the API server to allocate one (unless `headless`).
    #[serde(rename = "clusterIP")]
    pub cluster_ip: Option<Ipv4Addr>,
    /// `clusterIP: None`.
    pub headless: bool,
    pub external_traffic_policy: TrafficPolicy,
    pub internal_traffic_policy: TrafficPolicy,
    pub session_affinity: SessionAffinity,
    #[serde(rename = "externalIPs")]
    pub external_ips: Vec<Ipv4Addr>,
    pub load_balancer_source_ranges: Vec<crate::net::Cidr>,
    /// Allocated for LoadBalancer Services with externalTrafficPolicy Local.
    pub health_check_node_port: Option<u16>,
    /// For type ExternalName: the DNS name CoreDNS answers with a CNAME.
    pub external_name: Option<String>,
    /// `spec.loadBalancerIP`: an address asked of the load-balancer
    /// controller (deprecated upstream, still read by MetalLB).
    #[serde(rename = "loadBalancerIP", default)]
    pub load_balancer_ip: Option<Ipv4Addr>,
    /// `allocateLoadBalancerNodePorts`; unset means true. When false, a
    /// LoadBalancer gets node ports only where the manifest names them.
    pub allocate_load_balancer_node_ports: Option<bool>,
    /// `spec.ipFamilies`, as stored; empty means IPv4 only. The model
    /// carries IPv4 addresses only, so a dual-stack Service is modelled by
    /// its IPv4 half (see [`ServiceSpec::is_dual_stack`]).
    #[serde(rename = "ipFamilies", default)]
    pub ip_families: Vec<IpFamily>,
}

/// One entry of `spec.ipFamilies`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IpFamily {
    IPv4,
    IPv6,
}

impl ServiceSpec {
    /// Whether the API server picks node ports the manifest leaves out.
    pub fn allocates_node_ports(&self) -> bool {
        match self.type_ {
            ServiceType::NodePort => true,
            ServiceType::LoadBalancer => self.allocate_load_balancer_node_ports != Some(false),
            _ => false,
        }
    }

    /// Whether the Service has an IPv6 half besides its IPv4 one, which
    /// the model leaves out.
    pub fn is_dual_stack(&self) -> bool {
        self.ip_families.contains(&IpFamily::IPv4) && self.ip_families.contains(&IpFamily::IPv6)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerIngress {
    /// Empty for balancers that publish only a DNS name (AWS ELB).
    pub ip: Option<Ipv4Addr>,
    pub hostname: Option<String>,
    /// Unset (as most controllers leave it) means VIP to kube-proxy.
    pub ip_mode: Option<IpMode>,
}

impl LoadBalancerIngress {
    /// An ingress entry with an address.
    pub fn with_ip(ip: Ipv4Addr, ip_mode: Option<IpMode>) -> LoadBalancerIngress {
        LoadBalancerIngress { ip: Some(ip), hostname: None, ip_mode }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus {
    /// `status.loadBalancer.ingress`; empty until a controller publishes an address.
    pub load_balancer_ingress: Vec<LoadBalancerIngress>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    pub name: String,
    pub namespace: String,
    /// `metadata.annotations`: read by controllers (MetalLB's
    /// `metallb.io/loadBalancerIPs`), not by the API server or kube-proxy.
    #[serde(default)]
    pub annotations: Labels,
    pub spec: ServiceSpec,
    pub status: ServiceStatus,
    /// `metadata.creationTimestamp`, in seconds since the Unix epoch.
    #[serde(default)]
    pub created: Option<i64>,
}

impl Service {
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef::new(&self.namespace, &self.name)
    }

    /// kube-proxy's name for one port of a Service: `namespace/name:port`,
    /// or just `namespace/name` for an unnamed port.
    pub fn port_name(&self, port: &ServicePort) -> String {
        match port.name.as_deref() {
            Some(n) if !n.is_empty() => format!("{}/{}:{}", self.namespace, self.name, n),
            _ => format!("{}/{}", self.namespace, self.name),
        }
    }
}

/// One address in an EndpointSlice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub ip: Ipv4Addr,
    pub node_name: String,
    /// `conditions.ready`.
    pub ready: bool,
    /// `conditions.serving`: used when no endpoint is ready but some are terminating.
    pub serving: bool,
    pub terminating: bool,
    pub target_ref: String,
    /// `hostname`: the endpoint's own DNS label under its Service
    /// (`db-0.db.default.svc.cluster.local` for a StatefulSet's Pod). The
    /// EndpointSlice controller copies it from a Pod whose `subdomain` is
    /// the Service's name. Without one, CoreDNS names the endpoint by its
    /// dashed address.
    #[serde(default)]
    pub hostname: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPort {
    pub name: Option<String>,
    pub protocol: Protocol,
    pub port: u16,
}

/// `discovery.k8s.io/v1` EndpointSlice: the Pods behind one Service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    pub name: String,
    pub namespace: String,
    /// The `kubernetes.io/service-name` label.
    pub service_name: String,
    pub endpoints: Vec<Endpoint>,
    pub ports: Vec<EndpointPort>,
}

impl EndpointSlice {
    /// Ready endpoint addresses for a named port, in slice order.
    pub fn ready_addrs(&self, port_name: Option<&str>) -> Vec<(SockAddr, &Endpoint)> {
        let Some(port) = self.ports.iter().find(|p| p.name.as_deref() == port_name) else {
            return Vec::new();
        };
        self.endpoints
            .iter()
            .filter(|e| e.ready)
            .map(|e| (SockAddr::new(e.ip, port.port), e))
            .collect()
    }
}
