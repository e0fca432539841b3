//! From Kubernetes objects (JSON values) to the model's typed objects.
//!
//! Each field is checked as it is read. A problem becomes a field error in
//! the API server's shape (`spec.ports[0].port: Invalid value: 70000: must
//! be between 1 and 65535, inclusive`) and the object is rejected with all
//! the problems found in it. Objects of other kinds are skipped with a
//! warning, so the output of `kubectl get all -o yaml` can be fed in as is.
//! Values two stored Services both hold (a cluster IP, a node port) are
//! taken as stored and reported as [`StoredWarning`]s, unless
//! [`LoadOptions::strict`] asks for the API server's refusal.

use crate::input::Document;
use crate::ReadError as Error;
use kubehops_core::api::{
    Endpoint, EndpointPort, EndpointSlice, IpFamily, IpMode, Labels, LoadBalancerIngress, Node, Pod, Service, ServicePort, ServiceSpec,
    ServiceStatus, ServiceType, SessionAffinity, TrafficPolicy,
};
use kubehops_core::api::server::{
    admit_stored_services, dns1123_label_errors, ApiError, ApiServerConfig, FieldError, FieldErrorKind, PortRange, StoredWarning,
};
use kubehops_core::dataplane::kubeproxy::{KubeProxyConfig, NodePortAddresses, ProxyMode};
use kubehops_core::net::{Cidr, Protocol};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};

const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const IPV4_ONLY: &str = "kubehops models IPv4 only";

/// One `containers[].ports[]` entry of a Pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerPort {
    pub name: Option<String>,
    pub protocol: Protocol,
    pub port: u16,
}

/// A Pod with an address, and what the model's `Pod` leaves out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodInfo {
    pub pod: Pod,
    pub ports: Vec<ContainerPort>,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `spec.hostname` and `spec.subdomain`: a Pod whose subdomain names a
    /// Service gets its hostname as its endpoint's name there.
    pub hostname: Option<String>,
    pub subdomain: Option<String>,
}

/// How inputs are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// The API server's `--service-node-port-range`.
    pub node_port_range: PortRange,
    /// Refuse what the API server would refuse on create, even where the
    /// value is already allocated, instead of warning about it.
    pub strict: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { node_port_range: PortRange::DEFAULT, strict: false }
    }
}

/// Everything read from the inputs, checked and completed: Services have
/// their cluster IPs and node ports, and Services with a selector but no
/// EndpointSlice get the slices the controller would write for the Pods
/// given. Lists are sorted by namespace and name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cluster {
    pub services: Vec<Service>,
    pub slices: Vec<EndpointSlice>,
    pub nodes: Vec<Node>,
    pub pods: Vec<PodInfo>,
    /// Namespaces named by objects or given as Namespace objects.
    pub namespaces: BTreeSet<String>,
    pub proxy: Option<KubeProxyConfig>,
    /// Notes about the input itself (skipped objects), as printed.
    pub warnings: Vec<String>,
    /// Stored values the API server would have refused, kept as stored.
    pub stored_warnings: Vec<StoredWarning>,
}

/// A Service as read, with the ports whose `targetPort` is a name.
#[derive(Clone)]
struct ReadService {
    svc: Service,
    named_targets: Vec<(usize, String)>,
}

/// Reads all documents into a [`Cluster`].
pub fn load(docs: &[Document], options: LoadOptions) -> Result<Cluster, Error> {
    let node_port_range = options.node_port_range;
    let mut c = Cluster::default();
    let mut read: Vec<ReadService> = Vec::new();
    let mut seen: BTreeMap<(String, String, String), String> = BTreeMap::new();
    let mut pods_given = false;
    for doc in docs {
        for obj in expand(doc)? {
            let (api_version, kind) = (obj.api_version.as_str(), obj.kind.as_str());
            let meta = obj.value.get("metadata").and_then(Value::as_object);
            let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("").to_string();
            let namespace = meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or("default").to_string();
            if !reads(api_version, kind) {
                c.warnings.push(format!(
                    "skipping {api_version} {kind} \"{name}\" in {}: kubehops reads v1 Service, Node, Pod and Namespace, discovery.k8s.io/v1 EndpointSlice and kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration",
                    doc.source
                ));
                continue;
            }
            let key_ns = if matches!(kind, "Node" | "Namespace" | "KubeProxyConfiguration") { String::new() } else { namespace.clone() };
            let key = (kind.to_string(), key_ns, name.clone());
            if let Some(first) = seen.get(&key) {
                let shown = if key.1.is_empty() { name.clone() } else { format!("{namespace}/{name}") };
                return Err(Error::Other(format!("{kind} \"{shown}\" is given twice (in {first} and {})", doc.source)));
            }
            seen.insert(key, doc.source.clone());
            let v = obj.value;
            match kind {
                "Service" => read.push(service(v, &name, &namespace, node_port_range, &mut c.warnings)?),
                "EndpointSlice" => {
                    if let Some(s) = endpoint_slice(v, &name, &namespace, &doc.source, &mut c.warnings)? {
                        c.slices.push(s);
                    }
                }
                "Node" => c.nodes.push(node(v, &name)?),
                "Pod" => {
                    pods_given = true;
                    if let Some(p) = pod(v, &name, &namespace)? {
                        c.pods.push(p);
                    }
                }
                "Namespace" => {
                    c.namespaces.insert(name.clone());
                }
                _ => {
                    if c.proxy.is_some() {
                        return Err(Error::Other(format!("more than one KubeProxyConfiguration given (the second is in {})", doc.source)));
                    }
                    c.proxy = Some(kube_proxy_config(v, &name)?);
                }
            }
        }
    }
    c.slices.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    c.pods.sort_by(|a, b| (&a.pod.namespace, &a.pod.name).cmp(&(&b.pod.namespace, &b.pod.name)));
    c.nodes.sort_by(|a, b| a.name.cmp(&b.name));

    let mut services = Vec::new();
    let mut named: BTreeMap<(String, String), Vec<(usize, String)>> = BTreeMap::new();
    for r in read {
        named.insert((r.svc.namespace.clone(), r.svc.name.clone()), r.named_targets.clone());
        services.push(resolve_named_targets(r, &c.pods, &c.slices)?);
    }
    // Admitted in the order given, so a conflict is charged to the later
    // object, as the API server charges it to the later request.
    let config = ApiServerConfig { node_port_range, ..Default::default() };
    let admitted = admit_stored_services(services, &config).map_err(Error::Invalid)?;
    if options.strict {
        c.services = admitted.strict().map_err(Error::Invalid)?;
    } else {
        c.services = admitted.services;
        c.stored_warnings = admitted.warnings;
    }
    c.services.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));

    if pods_given {
        let generated: Vec<EndpointSlice> = c
            .services
            .iter()
            .filter(|s| !c.slices.iter().any(|sl| sl.namespace == s.namespace && sl.service_name == s.name))
            .flat_map(|s| slices_for(s, &c.pods, named.get(&(s.namespace.clone(), s.name.clone())).map_or(&[], Vec::as_slice)))
            .collect();
        c.slices.extend(generated);
        c.slices.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    }
    c.namespaces.extend(c.services.iter().map(|s| s.namespace.clone()));
    c.namespaces.extend(c.slices.iter().map(|s| s.namespace.clone()));
    c.namespaces.extend(c.pods.iter().map(|p| p.pod.namespace.clone()));
    Ok(c)
}

/// The one Service of an edited manifest, as written: nothing is
/// allocated and nothing is checked against other objects (the API server
/// does that when it is applied). Named targetPorts are resolved from the
/// container ports of `pods`. Anything but exactly one v1 Service is
/// refused, since the editor replaces one Service.
pub fn single_service(docs: &[Document], pods: &[PodInfo], range: PortRange) -> Result<Service, Error> {
    let mut found = Vec::new();
    for doc in docs {
        for obj in expand(doc)? {
            let name = obj.value.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("").to_string();
            if (obj.api_version.as_str(), obj.kind.as_str()) != ("v1", "Service") {
                return Err(Error::Other(format!("{} {} \"{name}\" cannot be edited here: the manifest must be one v1 Service", obj.api_version, obj.kind)));
            }
            let namespace = obj.value.get("metadata").and_then(|m| m.get("namespace")).and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or("default").to_string();
            found.push(service(&obj.value, &name, &namespace, range, &mut Vec::new())?);
        }
    }
    match found.len() {
        0 => Err(Error::Other("the manifest holds no object: write one v1 Service (apiVersion: v1, kind: Service)".into())),
        1 => resolve_named_targets(found.remove(0), pods, &[]),
        n => Err(Error::Other(format!("the manifest holds {n} Services: the editor takes one"))),
    }
}

/// Whether objects of this apiVersion and kind are read (others are
/// skipped with a warning).
pub fn reads(api_version: &str, kind: &str) -> bool {
    matches!(
        (api_version, kind),
        ("v1", "Service" | "Node" | "Pod" | "Namespace") | ("discovery.k8s.io/v1", "EndpointSlice") | ("kubeproxy.config.k8s.io/v1alpha1", "KubeProxyConfiguration")
    )
}

/// An object with its apiVersion and kind.
/// (Borrowed from its document: a List's items are not copied.)
struct Object<'a> {
    api_version: String,
    kind: String,
    value: &'a Value,
}

/// The objects of one document: itself, or the items of a List
/// (`kind: List`, or a typed list such as `ServiceList` whose items may
/// leave out apiVersion and kind).
fn expand(doc: &Document) -> Result<Vec<Object<'_>>, Error> {
    let where_ = format!("document {} of {}", doc.index, doc.source);
    let top = one_object(&doc.value, None, &where_)?;
    if !top.kind.ends_with("List") {
        return Ok(vec![top]);
    }
    let item_kind = top.kind.strip_suffix("List").filter(|k| !k.is_empty()).map(|k| (top.api_version.clone(), k.to_string()));
    let items = match top.value.get("items") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(Error::Other(format!("unable to decode {where_}: items must be a list"))),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| one_object(item, item_kind.as_ref(), &format!("item {i} of {where_}")))
        .collect()
}

fn one_object<'a>(v: &'a Value, defaults: Option<&(String, String)>, where_: &str) -> Result<Object<'a>, Error> {
    if !v.is_object() {
        return Err(Error::Other(format!("unable to decode {where_}: expected a Kubernetes object (a mapping with apiVersion and kind), found {}", type_name(v))));
    }
    let get = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(String::from);
    let kind = get("kind").or_else(|| defaults.map(|d| d.1.clone()));
    let api_version = get("apiVersion").or_else(|| defaults.map(|d| d.0.clone()));
    match (api_version, kind) {
        (_, None) => Err(Error::Other(format!("unable to decode {where_}: Object 'Kind' is missing"))),
        (None, Some(_)) => Err(Error::Other(format!("unable to decode {where_}: Object 'apiVersion' is missing"))),
        (Some(api_version), Some(kind)) => Ok(Object { api_version, kind, value: v }),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A JSON value as the API server shows a rejected value: strings quoted,
/// numbers and booleans bare, anything else as compact JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => {
            let s = other.to_string();
            if s.chars().count() > 60 {
                format!("{}...", s.chars().take(57).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// Collects the field errors of one object while it is read.
struct Reader {
    errs: Vec<FieldError>,
}

impl Reader {
    fn new() -> Reader {
        Reader { errs: Vec::new() }
    }

    fn push(&mut self, field: &str, kind: FieldErrorKind, value: Option<String>, detail: impl Into<String>) {
        self.errs.push(FieldError { field: field.into(), kind, value, detail: detail.into() });
    }

    fn invalid(&mut self, field: &str, value: String, detail: impl Into<String>) {
        self.push(field, FieldErrorKind::Invalid, Some(value), detail);
    }

    fn unsupported(&mut self, field: &str, value: &str, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        self.push(field, FieldErrorKind::NotSupported, Some(format!("{value:?}")), format!("supported values: {}", list.join(", ")));
    }

    /// The error for this object, if anything was wrong.
    fn finish(self, kind: &str, name: &str) -> Result<(), Error> {
        if self.errs.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(ApiError { kind: kind.into(), name: name.into(), causes: self.errs }))
        }
    }

    // Typed reads: `None` when the field is absent or null; a wrong type is
    // reported and also reads as `None`.

    fn str<'a>(&mut self, v: Option<&'a Value>, field: &str) -> Option<&'a str> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.invalid(field, shown(other), "must be a string");
                None
            }
        }
    }

    fn int(&mut self, v: Option<&Value>, field: &str) -> Option<i64> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
            Some(other) => {
                self.invalid(field, shown(other), "must be an integer");
                None
            }
        }
    }

    fn bool(&mut self, v: Option<&Value>, field: &str) -> Option<bool> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.invalid(field, shown(other), "must be a boolean");
                None
            }
        }
    }

    fn obj<'a>(&mut self, v: Option<&'a Value>, field: &str) -> Option<&'a Map<String, Value>> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => {
                self.invalid(field, shown(other), "must be an object");
                None
            }
        }
    }

    fn list<'a>(&mut self, v: Option<&'a Value>, field: &str) -> &'a [Value] {
        match v {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(other) => {
                self.invalid(field, shown(other), "must be a list");
                &[]
            }
        }
    }

    /// A map of strings (labels, selectors).
    fn labels(&mut self, v: Option<&Value>, field: &str) -> Labels {
        let mut out = Labels::new();
        if let Some(m) = self.obj(v, field) {
            for (k, val) in m {
                if let Some(s) = self.str(Some(val), &format!("{field}[{k}]")) {
                    out.insert(k.clone(), s.to_string());
                }
            }
        }
        out
    }

    /// A port number: 1 to 65535. 0 is kept as 0 for the caller to judge.
    fn port(&mut self, v: Option<&Value>, field: &str) -> Option<u16> {
        let n = self.int(v, field)?;
        match u16::try_from(n) {
            Ok(p) => Some(p),
            Err(_) => {
                self.invalid(field, n.to_string(), PORT_RANGE);
                None
            }
        }
    }

    fn protocol(&mut self, v: Option<&Value>, field: &str) -> Protocol {
        match self.str(v, field) {
            None | Some("") => Protocol::Tcp,
            Some("TCP") => Protocol::Tcp,
            Some("UDP") => Protocol::Udp,
            Some("SCTP") => Protocol::Sctp,
            Some(other) => {
                self.unsupported(field, other, &["SCTP", "TCP", "UDP"]);
                Protocol::Tcp
            }
        }
    }

    /// An IPv4 address; IPv6 is valid for Kubernetes but not modelled.
    fn ipv4(&mut self, s: &str, field: &str) -> Option<Ipv4Addr> {
        match s.parse::<Ipv4Addr>() {
            Ok(ip) => Some(ip),
            Err(_) if s.parse::<Ipv6Addr>().is_ok() => {
                self.invalid(field, format!("{s:?}"), IPV4_ONLY);
                None
            }
            Err(_) => {
                self.invalid(field, format!("{s:?}"), INVALID_IP);
                None
            }
        }
    }

    fn cidr(&mut self, s: &str, field: &str) -> Option<Cidr> {
        match s.parse::<Cidr>() {
            Ok(c) => Some(c),
            Err(_) if s.split_once('/').is_some_and(|(a, _)| a.parse::<Ipv6Addr>().is_ok()) => {
                self.invalid(field, format!("{s:?}"), IPV4_ONLY);
                None
            }
            Err(_) => {
                self.invalid(field, format!("{s:?}"), INVALID_CIDR);
                None
            }
        }
    }

    fn timestamp(&mut self, v: Option<&Value>, field: &str) -> Option<i64> {
        let s = self.str(v, field)?;
        let t = crate::time::parse(s);
        if t.is_none() {
            self.invalid(field, format!("{s:?}"), "must be an RFC 3339 time such as 2024-05-01T12:00:00Z");
        }
        t
    }
}

fn service(v: &Value, name: &str, namespace: &str, range: PortRange, warnings: &mut Vec<String>) -> Result<ReadService, Error> {
    let mut r = Reader::new();
    let meta = r.obj(v.get("metadata"), "metadata");
    let created = r.timestamp(meta.and_then(|m| m.get("creationTimestamp")), "metadata.creationTimestamp");
    let spec_v = r.obj(v.get("spec"), "spec");
    let field = |k: &str| spec_v.and_then(|s| s.get(k));
    let type_ = match r.str(field("type"), "spec.type") {
        None | Some("") | Some("ClusterIP") => ServiceType::ClusterIP,
        Some("NodePort") => ServiceType::NodePort,
        Some("LoadBalancer") => ServiceType::LoadBalancer,
        Some("ExternalName") => ServiceType::ExternalName,
        Some(other) => {
            r.unsupported("spec.type", other, &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]);
            ServiceType::ClusterIP
        }
    };
    let mut spec = ServiceSpec { type_, ..Default::default() };

    // clusterIP and clusterIPs agree, or clusterIPs fills in clusterIP; the
    // API server reports the address under clusterIPs[0].
    let cluster_ip = r.str(field("clusterIP"), "spec.clusterIP").unwrap_or("");
    let cluster_ips: Vec<String> = r
        .list(field("clusterIPs"), "spec.clusterIPs")
        .iter()
        .enumerate()
        .filter_map(|(i, x)| r.str(Some(x), &format!("spec.clusterIPs[{i}]")).map(String::from))
        .collect();
    let first = if cluster_ip.is_empty() { cluster_ips.first().map(String::as_str).unwrap_or("") } else { cluster_ip };
    if !cluster_ip.is_empty() && cluster_ips.first().is_some_and(|c| c != cluster_ip) {
        let list: Vec<String> = cluster_ips.iter().map(|c| format!("{c:?}")).collect();
        r.invalid("spec.clusterIPs", format!("[]string{{{}}}", list.join(", ")), "first value must match `clusterIP`");
    } else if first == "None" {
        spec.headless = true;
    } else if !first.is_empty() {
        spec.cluster_ip = r.ipv4(first, "spec.clusterIPs[0]");
    }

    spec.ip_families = ip_families(&mut r, field("ipFamilies"), &cluster_ips);

    let mut named_targets = Vec::new();
    for (i, p) in r.list(field("ports"), "spec.ports").iter().enumerate() {
        let at = |k: &str| format!("spec.ports[{i}].{k}");
        let Some(pm) = r.obj(Some(p), &format!("spec.ports[{i}]")) else { continue };
        let port_name = r.str(pm.get("name"), &at("name")).filter(|s| !s.is_empty()).map(String::from);
        let protocol = r.protocol(pm.get("protocol"), &at("protocol"));
        let port = r.port(pm.get("port"), &at("port")).unwrap_or(0);
        let target_port = match pm.get("targetPort") {
            None | Some(Value::Null) => port,
            Some(Value::String(s)) => {
                for detail in port_name_errors(s) {
                    r.invalid(&at("targetPort"), format!("{s:?}"), detail);
                }
                named_targets.push((i, s.clone()));
                0
            }
            Some(t) => r.port(Some(t), &at("targetPort")).unwrap_or(0),
        };
        let node_port = match r.int(pm.get("nodePort"), &at("nodePort")) {
            None | Some(0) => None,
            Some(n) => match u16::try_from(n) {
                Ok(np) => Some(np),
                Err(_) => {
                    r.invalid(&at("nodePort"), n.to_string(), format!("provided port is not in the valid range. The range of valid ports is {range}"));
                    None
                }
            },
        };
        spec.ports.push(ServicePort { name: port_name, protocol, port, target_port, node_port });
    }

    spec.selector = r.labels(field("selector"), "spec.selector");
    spec.external_traffic_policy = policy(&mut r, field("externalTrafficPolicy"), "spec.externalTrafficPolicy");
    spec.internal_traffic_policy = policy(&mut r, field("internalTrafficPolicy"), "spec.internalTrafficPolicy");
    spec.session_affinity = match r.str(field("sessionAffinity"), "spec.sessionAffinity") {
        None | Some("") | Some("None") => SessionAffinity::None,
        Some("ClientIP") => {
            let path = "spec.sessionAffinityConfig.clientIP.timeoutSeconds";
            let cfg = r.obj(field("sessionAffinityConfig"), "spec.sessionAffinityConfig");
            let client = cfg.and_then(|c| r.obj(c.get("clientIP"), "spec.sessionAffinityConfig.clientIP"));
            let timeout = match client.and_then(|c| r.int(c.get("timeoutSeconds"), path)) {
                None => 10800,
                Some(t) => u32::try_from(t).unwrap_or_else(|_| {
                    r.invalid(path, t.to_string(), "must be greater than 0 and less than 86400");
                    10800
                }),
            };
            SessionAffinity::ClientIP { timeout_seconds: timeout }
        }
        Some(other) => {
            r.unsupported("spec.sessionAffinity", other, &["ClientIP", "None"]);
            SessionAffinity::None
        }
    };
    for (i, x) in r.list(field("externalIPs"), "spec.externalIPs").iter().enumerate() {
        let f = format!("spec.externalIPs[{i}]");
        if let Some(ip) = r.str(Some(x), &f).and_then(|s| r.ipv4(s, &f)) {
            spec.external_ips.push(ip);
        }
    }
    for (i, x) in r.list(field("loadBalancerSourceRanges"), "spec.loadBalancerSourceRanges").iter().enumerate() {
        let f = format!("spec.loadBalancerSourceRanges[{i}]");
        if let Some(c) = r.str(Some(x), &f).and_then(|s| r.cidr(s.trim(), &f)) {
            spec.load_balancer_source_ranges.push(c);
        }
    }
    spec.health_check_node_port = match r.int(field("healthCheckNodePort"), "spec.healthCheckNodePort") {
        None | Some(0) => None,
        Some(n) => u16::try_from(n).ok().or_else(|| {
            r.invalid("spec.healthCheckNodePort", n.to_string(), format!("provided port is not in the valid range. The range of valid ports is {range}"));
            None
        }),
    };
    spec.external_name = r.str(field("externalName"), "spec.externalName").filter(|s| !s.is_empty()).map(String::from);
    spec.allocate_load_balancer_node_ports = r.bool(field("allocateLoadBalancerNodePorts"), "spec.allocateLoadBalancerNodePorts");

    let mut status = ServiceStatus::default();
    let lb = r.obj(v.get("status"), "status").and_then(|s| r.obj(s.get("loadBalancer"), "status.loadBalancer"));
    for (i, ing) in r.list(lb.and_then(|l| l.get("ingress")), "status.loadBalancer.ingress").iter().enumerate() {
        let at = |k: &str| format!("status.loadBalancer.ingress[{i}].{k}");
        let Some(m) = r.obj(Some(ing), &format!("status.loadBalancer.ingress[{i}]")) else { continue };
        let ip_mode = match r.str(m.get("ipMode"), &at("ipMode")) {
            None => None,
            Some("VIP") => Some(IpMode::VIP),
            Some("Proxy") => Some(IpMode::Proxy),
            Some(other) => {
                r.unsupported(&at("ipMode"), other, &["Proxy", "VIP"]);
                None
            }
        };
        let hostname = r.str(m.get("hostname"), &at("hostname")).filter(|s| !s.is_empty()).map(String::from);
        match r.str(m.get("ip"), &at("ip")).filter(|s| !s.is_empty()) {
            Some(s) => {
                if let Some(ip) = r.ipv4(s, &at("ip")) {
                    status.load_balancer_ingress.push(LoadBalancerIngress { ip: Some(ip), hostname, ip_mode });
                }
            }
            // A balancer known by name only (AWS ELB): kubectl shows the
            // name; kube-proxy has no address to write a rule for.
            None if hostname.is_some() => status.load_balancer_ingress.push(LoadBalancerIngress { ip: None, hostname, ip_mode }),
            None => warnings.push(format!("Service \"{namespace}/{name}\": status.loadBalancer.ingress[{i}] has neither ip nor hostname; it is left out")),
        }
    }
    r.finish("Service", name)?;
    Ok(ReadService {
        svc: Service { name: name.into(), namespace: namespace.into(), annotations: Default::default(), spec, status, created },
        named_targets,
    })
}

/// `spec.ipFamilies`; when absent (a hand-written Service), the families of
/// the `clusterIPs` given.
fn ip_families(r: &mut Reader, v: Option<&Value>, cluster_ips: &[String]) -> Vec<IpFamily> {
    let listed = r.list(v, "spec.ipFamilies");
    if listed.is_empty() {
        let family = |ip: &String| match ip.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(_)) => Some(IpFamily::IPv4),
            Ok(std::net::IpAddr::V6(_)) => Some(IpFamily::IPv6),
            Err(_) => None,
        };
        return cluster_ips.iter().filter_map(family).collect();
    }
    let mut out = Vec::new();
    for (i, x) in listed.iter().enumerate() {
        let f = format!("spec.ipFamilies[{i}]");
        match r.str(Some(x), &f) {
            Some("IPv4") => out.push(IpFamily::IPv4),
            Some("IPv6") => out.push(IpFamily::IPv6),
            Some(other) => r.unsupported(&f, other, &["IPv4", "IPv6"]),
            None => {}
        }
    }
    out
}

fn policy(r: &mut Reader, v: Option<&Value>, field: &str) -> TrafficPolicy {
    match r.str(v, field) {
        None | Some("") | Some("Cluster") => TrafficPolicy::Cluster,
        Some("Local") => TrafficPolicy::Local,
        Some(other) => {
            r.unsupported(field, other, &["Cluster", "Local"]);
            TrafficPolicy::Cluster
        }
    }
}

/// The API server's rules for a port name used as a targetPort
/// (an IANA service name).
fn port_name_errors(s: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if s.len() > 15 {
        out.push("must be no more than 15 characters");
    }
    if !s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-') {
        out.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if s.contains("--") {
        out.push("must not contain consecutive hyphens");
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        out.push("must contain at least one letter (a-z)");
    }
    if s.starts_with('-') || s.ends_with('-') {
        out.push("must not begin or end with a hyphen");
    }
    out
}

/// Replaces named targetPorts with numbers: from the container ports of
/// the Pods the Service selects, else from the EndpointSlice port that
/// carries the Service port's name. The model keeps one number per port.
fn resolve_named_targets(r: ReadService, pods: &[PodInfo], slices: &[EndpointSlice]) -> Result<Service, Error> {
    let mut svc = r.svc;
    let mut errs = Vec::new();
    for (i, target) in r.named_targets {
        let sp = &svc.spec.ports[i];
        let from_pods = pods
            .iter()
            .filter(|p| selects(&svc, &p.pod))
            .flat_map(|p| &p.ports)
            .find(|cp| cp.name.as_deref() == Some(target.as_str()) && cp.protocol == sp.protocol)
            .map(|cp| cp.port);
        let from_slices = || {
            slices
                .iter()
                .filter(|s| s.namespace == svc.namespace && s.service_name == svc.name)
                .flat_map(|s| &s.ports)
                .find(|p| p.name == sp.name && p.protocol == sp.protocol)
                .map(|p| p.port)
        };
        match from_pods.or_else(from_slices) {
            Some(n) => svc.spec.ports[i].target_port = n,
            None => errs.push(FieldError {
                field: format!("spec.ports[{i}].targetPort"),
                kind: FieldErrorKind::Invalid,
                value: Some(format!("{target:?}")),
                detail: "kubehops could not resolve this named port: no selected Pod has a container port of that name, and no EndpointSlice of the Service lists the port's number".into(),
            }),
        }
    }
    if errs.is_empty() {
        Ok(svc)
    } else {
        Err(Error::Invalid(ApiError { kind: "Service".into(), name: svc.name, causes: errs }))
    }
}

fn selects(svc: &Service, pod: &Pod) -> bool {
    !svc.spec.selector.is_empty() && pod.namespace == svc.namespace && svc.spec.selector.iter().all(|(k, v)| pod.labels.get(k) == Some(v))
}

/// The EndpointSlices the controller writes for a Service from the Pods it
/// selects: each Pod's ports resolved (a named targetPort per Pod), Pods
/// with the same ports sharing a slice, endpoints sorted by address.
fn slices_for(svc: &Service, pods: &[PodInfo], named: &[(usize, String)]) -> Vec<EndpointSlice> {
    if svc.spec.selector.is_empty() || svc.spec.type_ == ServiceType::ExternalName {
        return Vec::new();
    }
    // Slice ports (name, protocol, number) → the Pods with exactly those.
    type PortSet = Vec<(Option<String>, Protocol, u16)>;
    let mut groups: BTreeMap<PortSet, Vec<&PodInfo>> = BTreeMap::new();
    for p in pods.iter().filter(|p| selects(svc, &p.pod)) {
        let ports: PortSet = svc
            .spec
            .ports
            .iter()
            .enumerate()
            .filter_map(|(i, sp)| pod_port(sp, named.iter().find(|(j, _)| *j == i).map(|(_, n)| n.as_str()), p).map(|n| (sp.name.clone(), sp.protocol, n)))
            .collect();
        if ports.is_empty() && !svc.spec.ports.is_empty() {
            continue;
        }
        groups.entry(ports).or_default().push(p);
    }
    groups
        .into_iter()
        .enumerate()
        .map(|(k, (ports, mut members))| {
            members.sort_by_key(|p| p.pod.ip);
            let suffix = kubehops_core::hash::sha256_base32(format!("{}/{}#{k}", svc.namespace, svc.name).as_bytes())[..5].to_ascii_lowercase();
            EndpointSlice {
                name: format!("{}-{suffix}", svc.name),
                namespace: svc.namespace.clone(),
                service_name: svc.name.clone(),
                endpoints: members
                    .iter()
                    .map(|p| Endpoint {
                        ip: p.pod.ip,
                        node_name: p.pod.node_name.clone(),
                        ready: p.pod.ready && !p.terminating,
                        serving: p.pod.ready,
                        terminating: p.terminating,
                        target_ref: format!("Pod/{}", p.pod.name),
                        hostname: endpoint_hostname(svc, p),
                    })
                    .collect(),
                ports: ports.into_iter().map(|(name, protocol, port)| EndpointPort { name, protocol, port }).collect(),
            }
        })
        .collect()
}

/// The EndpointSlice controller's `ShouldSetHostname`: a Pod's hostname
/// names its endpoint when the Pod's subdomain is the Service's name (in
/// the Service's namespace, which a selected Pod always is).
fn endpoint_hostname(svc: &Service, pod: &PodInfo) -> Option<String> {
    pod.hostname.clone().filter(|h| !h.is_empty() && pod.subdomain.as_deref() == Some(svc.name.as_str()) && pod.pod.namespace == svc.namespace)
}

/// The number a Service port reaches on one Pod: the target number, or
/// for a named target the Pod's container port of that name and protocol
/// (`None` when the Pod has none: the Pod is left out for that port).
fn pod_port(sp: &ServicePort, named: Option<&str>, pod: &PodInfo) -> Option<u16> {
    match named {
        None => Some(sp.target_port),
        Some(n) => pod.ports.iter().find(|cp| cp.name.as_deref() == Some(n) && cp.protocol == sp.protocol).map(|cp| cp.port),
    }
}

fn endpoint_slice(v: &Value, name: &str, namespace: &str, source: &str, warnings: &mut Vec<String>) -> Result<Option<EndpointSlice>, Error> {
    let mut r = Reader::new();
    let meta = r.obj(v.get("metadata"), "metadata");
    let labels = r.labels(meta.and_then(|m| m.get("labels")), "metadata.labels");
    let address_type = r.str(v.get("addressType"), "addressType");
    match address_type {
        None | Some("") => r.push("addressType", FieldErrorKind::Required, None, ""),
        Some("IPv4") => {}
        Some(t @ ("IPv6" | "FQDN")) => {
            warnings.push(format!("skipping EndpointSlice \"{namespace}/{name}\" in {source}: addressType {t} is not modelled (IPv4 only)"));
            return Ok(None);
        }
        Some(other) => r.unsupported("addressType", other, &["FQDN", "IPv4", "IPv6"]),
    }
    let mut endpoints = Vec::new();
    for (i, e) in r.list(v.get("endpoints"), "endpoints").iter().enumerate() {
        let at = |k: &str| format!("endpoints[{i}].{k}");
        let Some(m) = r.obj(Some(e), &format!("endpoints[{i}]")) else { continue };
        let addresses = r.list(m.get("addresses"), &at("addresses"));
        let ip = match addresses.first() {
            None => {
                r.push(&at("addresses"), FieldErrorKind::Required, None, "must contain at least 1 address");
                None
            }
            Some(a) => {
                let f = format!("endpoints[{i}].addresses[0]");
                r.str(Some(a), &f).and_then(|s| match s.parse::<Ipv4Addr>() {
                    Ok(ip) => Some(ip),
                    Err(_) => {
                        r.invalid(&f, format!("{s:?}"), "must be a valid IPv4 address");
                        None
                    }
                })
            }
        };
        let cond = r.obj(m.get("conditions"), &at("conditions"));
        let cond_at = |k: &str| format!("endpoints[{i}].conditions.{k}");
        // An unset readiness means ready, and unset serving follows ready.
        let ready = r.bool(cond.and_then(|c| c.get("ready")), &cond_at("ready")).unwrap_or(true);
        let serving = r.bool(cond.and_then(|c| c.get("serving")), &cond_at("serving")).unwrap_or(ready);
        let terminating = r.bool(cond.and_then(|c| c.get("terminating")), &cond_at("terminating")).unwrap_or(false);
        let node_name = r.str(m.get("nodeName"), &at("nodeName")).unwrap_or("").to_string();
        let hostname = r.str(m.get("hostname"), &at("hostname")).filter(|h| !h.is_empty()).map(String::from);
        if let Some(h) = hostname.as_deref() {
            for detail in dns1123_label_errors(h) {
                r.invalid(&at("hostname"), format!("{h:?}"), detail);
            }
        }
        let target_ref = match r.obj(m.get("targetRef"), &at("targetRef")) {
            Some(t) => {
                let kind = r.str(t.get("kind"), &at("targetRef.kind")).unwrap_or("");
                let n = r.str(t.get("name"), &at("targetRef.name")).unwrap_or("");
                format!("{kind}/{n}")
            }
            None => String::new(),
        };
        if let Some(ip) = ip {
            endpoints.push(Endpoint { ip, node_name, ready, serving, terminating, target_ref, hostname });
        }
    }
    let mut ports = Vec::new();
    for (i, p) in r.list(v.get("ports"), "ports").iter().enumerate() {
        let at = |k: &str| format!("ports[{i}].{k}");
        let Some(m) = r.obj(Some(p), &format!("ports[{i}]")) else { continue };
        let port_name = r.str(m.get("name"), &at("name")).filter(|s| !s.is_empty()).map(String::from);
        let protocol = r.protocol(m.get("protocol"), &at("protocol"));
        match r.port(m.get("port"), &at("port")) {
            None => r.push(&at("port"), FieldErrorKind::Required, None, "kubehops needs the port number"),
            Some(0) => r.invalid(&at("port"), "0".into(), PORT_RANGE),
            Some(port) => ports.push(EndpointPort { name: port_name, protocol, port }),
        }
    }
    r.finish("EndpointSlice", name)?;
    let Some(service_name) = labels.get(SERVICE_NAME_LABEL).filter(|s| !s.is_empty()) else {
        warnings.push(format!(
            "skipping EndpointSlice \"{namespace}/{name}\" in {source}: it has no {SERVICE_NAME_LABEL} label, so kube-proxy and CoreDNS ignore it"
        ));
        return Ok(None);
    };
    Ok(Some(EndpointSlice { name: name.into(), namespace: namespace.into(), service_name: service_name.clone(), endpoints, ports }))
}

fn node(v: &Value, name: &str) -> Result<Node, Error> {
    let mut r = Reader::new();
    if name.is_empty() {
        r.push("metadata.name", FieldErrorKind::Required, None, "name or generateName is required");
    }
    let spec = r.obj(v.get("spec"), "spec");
    let mut pod_cidr = None;
    if let Some(s) = r.str(spec.and_then(|s| s.get("podCIDR")), "spec.podCIDR").filter(|s| !s.is_empty()) {
        pod_cidr = r.cidr(s, "spec.podCIDR");
    }
    let status = r.obj(v.get("status"), "status");
    let mut internal = None;
    for (i, a) in r.list(status.and_then(|s| s.get("addresses")), "status.addresses").iter().enumerate() {
        let Some(m) = r.obj(Some(a), &format!("status.addresses[{i}]")) else { continue };
        let t = r.str(m.get("type"), &format!("status.addresses[{i}].type"));
        let addr = r.str(m.get("address"), &format!("status.addresses[{i}].address"));
        if let (Some("InternalIP"), Some(addr), None) = (t, addr, internal) {
            // A dual-stack node lists its IPv6 address too; take the IPv4 one.
            internal = addr.parse::<Ipv4Addr>().ok();
            if internal.is_none() && addr.parse::<Ipv6Addr>().is_err() {
                r.invalid(&format!("status.addresses[{i}].address"), format!("{addr:?}"), INVALID_IP);
            }
        }
    }
    r.finish("Node", name)?;
    let Some(internal_ip) = internal else {
        return Err(Error::Other(format!("Node \"{name}\" has no IPv4 InternalIP in status.addresses; kubehops needs it to place the node")));
    };
    Ok(Node { name: name.into(), internal_ip, pod_cidr })
}

fn pod(v: &Value, name: &str, namespace: &str) -> Result<Option<PodInfo>, Error> {
    let mut r = Reader::new();
    let meta = r.obj(v.get("metadata"), "metadata");
    let labels = r.labels(meta.and_then(|m| m.get("labels")), "metadata.labels");
    let terminating = meta.and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null());
    let spec = r.obj(v.get("spec"), "spec");
    let node_name = r.str(spec.and_then(|s| s.get("nodeName")), "spec.nodeName").unwrap_or("").to_string();
    let hostname = r.str(spec.and_then(|s| s.get("hostname")), "spec.hostname").filter(|h| !h.is_empty()).map(String::from);
    let subdomain = r.str(spec.and_then(|s| s.get("subdomain")), "spec.subdomain").filter(|h| !h.is_empty()).map(String::from);
    for (field, value) in [("spec.hostname", &hostname), ("spec.subdomain", &subdomain)] {
        for detail in value.as_deref().map(dns1123_label_errors).unwrap_or_default() {
            r.invalid(field, format!("{:?}", value.as_deref().unwrap_or_default()), detail);
        }
    }
    let mut ports = Vec::new();
    for (ci, c) in r.list(spec.and_then(|s| s.get("containers")), "spec.containers").iter().enumerate() {
        let Some(cm) = r.obj(Some(c), &format!("spec.containers[{ci}]")) else { continue };
        for (pi, p) in r.list(cm.get("ports"), &format!("spec.containers[{ci}].ports")).iter().enumerate() {
            let at = |k: &str| format!("spec.containers[{ci}].ports[{pi}].{k}");
            let Some(pm) = r.obj(Some(p), &format!("spec.containers[{ci}].ports[{pi}]")) else { continue };
            let port_name = r.str(pm.get("name"), &at("name")).filter(|s| !s.is_empty()).map(String::from);
            let protocol = r.protocol(pm.get("protocol"), &at("protocol"));
            match r.port(pm.get("containerPort"), &at("containerPort")) {
                None => r.push(&at("containerPort"), FieldErrorKind::Required, None, ""),
                Some(0) => r.invalid(&at("containerPort"), "0".into(), PORT_RANGE),
                Some(port) => ports.push(ContainerPort { name: port_name, protocol, port }),
            }
        }
    }
    let status = r.obj(v.get("status"), "status");
    let phase = r.str(status.and_then(|s| s.get("phase")), "status.phase").unwrap_or("");
    let mut ip = None;
    if let Some(s) = r.str(status.and_then(|s| s.get("podIP")), "status.podIP").filter(|s| !s.is_empty()) {
        ip = s.parse::<Ipv4Addr>().ok();
        if ip.is_none() && s.parse::<Ipv6Addr>().is_err() {
            r.invalid("status.podIP", format!("{s:?}"), INVALID_IP);
        }
    }
    let mut ready = false;
    for (i, c) in r.list(status.and_then(|s| s.get("conditions")), "status.conditions").iter().enumerate() {
        let Some(m) = r.obj(Some(c), &format!("status.conditions[{i}]")) else { continue };
        if r.str(m.get("type"), &format!("status.conditions[{i}].type")) == Some("Ready") {
            ready = r.str(m.get("status"), &format!("status.conditions[{i}].status")) == Some("True");
        }
    }
    r.finish("Pod", name)?;
    // Pods without an IPv4 address, and finished Pods, are never endpoints.
    let Some(ip) = ip.filter(|_| !matches!(phase, "Succeeded" | "Failed")) else { return Ok(None) };
    let container_port = ports.first().map_or(0, |p| p.port);
    Ok(Some(PodInfo {
        pod: Pod { name: name.into(), namespace: namespace.into(), labels, node_name, ip, container_port, port_name: ports.first().and_then(|p| p.name.clone()), ready },
        ports,
        terminating,
        hostname,
        subdomain,
    }))
}

fn kube_proxy_config(v: &Value, name: &str) -> Result<KubeProxyConfig, Error> {
    let mut r = Reader::new();
    let mut cfg = KubeProxyConfig::default();
    if let Some(s) = r.str(v.get("clusterCIDR"), "clusterCIDR").filter(|s| !s.trim().is_empty()) {
        // Dual-stack clusters list both families: keep the IPv4 range.
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let v4 = parts.iter().find(|p| p.split_once('/').is_some_and(|(a, _)| a.parse::<Ipv4Addr>().is_ok()));
        match v4 {
            Some(p) => cfg.cluster_cidr = r.cidr(p, "clusterCIDR"),
            None if parts.iter().all(|p| p.split_once('/').is_some_and(|(a, _)| a.parse::<Ipv6Addr>().is_ok())) => {}
            None => r.invalid("clusterCIDR", format!("{s:?}"), INVALID_CIDR),
        }
    }
    cfg.hostname_override = r.str(v.get("hostnameOverride"), "hostnameOverride").filter(|s| !s.is_empty()).map(String::from);
    let ipt = r.obj(v.get("iptables"), "iptables");
    // v1alpha1 keeps masqueradeAll under iptables; a top-level one is read too.
    let masq = r.bool(ipt.and_then(|i| i.get("masqueradeAll")), "iptables.masqueradeAll");
    let top = r.bool(v.get("masqueradeAll"), "masqueradeAll");
    cfg.masquerade_all = masq.or(top).unwrap_or(false);
    cfg.localhost_node_ports = r.bool(ipt.and_then(|i| i.get("localhostNodePorts")), "iptables.localhostNodePorts").unwrap_or(true);
    let conntrack = r.obj(v.get("conntrack"), "conntrack");
    cfg.tcp_be_liberal = r.bool(conntrack.and_then(|c| c.get("tcpBeLiberal")), "conntrack.tcpBeLiberal").unwrap_or(false);
    cfg.mode = proxy_mode(&mut r, v.get("mode"));
    cfg.node_port_addresses = node_port_addresses(&mut r, v.get("nodePortAddresses"));
    r.finish("KubeProxyConfiguration", name)?;
    Ok(cfg)
}

/// `mode`, as kube-proxy validates it on Linux; IPVS is valid there but
/// not modelled here, and says so.
fn proxy_mode(r: &mut Reader, v: Option<&Value>) -> ProxyMode {
    match r.str(v, "mode").unwrap_or("") {
        "" | "iptables" => ProxyMode::Iptables,
        "nftables" => ProxyMode::Nftables,
        "ipvs" => {
            r.invalid("mode", "\"ipvs\"".into(), "kubehops models the iptables and nftables modes; IPVS mode, deprecated since Kubernetes 1.35, is not modelled");
            ProxyMode::Iptables
        }
        other => {
            r.invalid("mode", format!("{other:?}"), "must be iptables, ipvs, nftables or blank (blank means the best-available proxy [currently iptables])");
            ProxyMode::Iptables
        }
    }
}

/// `nodePortAddresses`: IPv4 prefixes (IPv6 ones are kept out, as the
/// model is IPv4), or the single string `primary`.
fn node_port_addresses(r: &mut Reader, v: Option<&Value>) -> NodePortAddresses {
    let items = r.list(v, "nodePortAddresses");
    let texts: Vec<(usize, &str)> = items.iter().enumerate().filter_map(|(i, x)| r.str(Some(x), &format!("nodePortAddresses[{i}]")).map(|t| (i, t))).collect();
    if texts.iter().any(|(_, t)| *t == "primary") {
        if texts.len() > 1 {
            r.invalid("nodePortAddresses", format!("{:?}", texts.iter().map(|(_, t)| *t).collect::<Vec<_>>()), "\"primary\" must be the only entry");
        }
        return NodePortAddresses::Primary;
    }
    let mut cidrs = Vec::new();
    for (i, t) in texts {
        if t.split_once('/').is_some_and(|(a, _)| a.parse::<Ipv6Addr>().is_ok()) {
            continue;
        }
        cidrs.extend(r.cidr(t, &format!("nodePortAddresses[{i}]")));
    }
    if cidrs.is_empty() { NodePortAddresses::All } else { NodePortAddresses::Cidrs(cidrs) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubehops_core::net::ip;

    fn docs(yaml: &str) -> Vec<Document> {
        crate::input::documents(&crate::input::Source { name: "t.yaml".into(), text: yaml.into() }).expect("parses")
    }

    fn load_yaml(yaml: &str) -> Result<Cluster, Error> {
        load(&docs(yaml), LoadOptions::default())
    }

    fn causes(e: Error) -> Vec<String> {
        match e {
            Error::Invalid(a) => a.causes.iter().map(|c| c.to_string()).collect(),
            other => panic!("not a validation error: {other}"),
        }
    }

    #[test]
    fn service_fields_map_to_the_model() {
        let c = load_yaml(
            "apiVersion: v1
kind: Service
metadata: {name: edge, namespace: prod, creationTimestamp: '2024-05-01T12:00:00Z'}
spec:
  type: LoadBalancer
  clusterIPs: [10.96.1.1, 'fd00::1']
  externalTrafficPolicy: Local
  internalTrafficPolicy: Local
  healthCheckNodePort: 32000
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}
  externalIPs: [192.0.2.10]
  loadBalancerSourceRanges: [' 198.51.100.0/24 ']
  selector: {app: edge}
  ports:
    - {name: https, protocol: TCP, port: 443, targetPort: 8443, nodePort: 31443}
    - {name: dns, protocol: UDP, port: 53}
status:
  loadBalancer:
    ingress:
      - {ip: 203.0.113.5, ipMode: Proxy}
      - {hostname: lb.example.com}
",
        )
        .unwrap();
        let s = &c.services[0];
        assert_eq!((s.namespace.as_str(), s.created), ("prod", Some(1714564800)));
        assert_eq!(s.spec.cluster_ip, Some(ip(10, 96, 1, 1)), "the IPv4 entry of clusterIPs fills in clusterIP");
        assert_eq!(s.spec.external_traffic_policy, TrafficPolicy::Local);
        assert_eq!(s.spec.internal_traffic_policy, TrafficPolicy::Local);
        assert_eq!(s.spec.health_check_node_port, Some(32000));
        assert_eq!(s.spec.session_affinity, SessionAffinity::ClientIP { timeout_seconds: 600 });
        assert_eq!(s.spec.external_ips, [ip(192, 0, 2, 10)]);
        assert_eq!(s.spec.load_balancer_source_ranges, ["198.51.100.0/24".parse::<Cidr>().unwrap()]);
        assert_eq!(s.spec.ports[0], ServicePort { name: Some("https".into()), protocol: Protocol::Tcp, port: 443, target_port: 8443, node_port: Some(31443) });
        assert_eq!(s.spec.ports[1].target_port, 53, "targetPort defaults to port");
        assert!(s.spec.ports[1].node_port.is_some(), "a missing node port is allocated");
        assert_eq!(
            s.status.load_balancer_ingress,
            [
                LoadBalancerIngress::with_ip(ip(203, 0, 113, 5), Some(IpMode::Proxy)),
                LoadBalancerIngress { ip: None, hostname: Some("lb.example.com".into()), ip_mode: None },
            ],
            "a hostname-only ingress is kept for kubectl's EXTERNAL-IP"
        );
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn headless_defaults_and_affinity_timeout_default() {
        let c = load_yaml(
            "apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, sessionAffinity: ClientIP, ports: [{port: 5432}]}
",
        )
        .unwrap();
        let s = &c.services[0];
        assert!(s.spec.headless && s.spec.cluster_ip.is_none());
        assert_eq!((s.namespace.as_str(), s.created), ("default", None));
        assert_eq!(s.spec.session_affinity, SessionAffinity::ClientIP { timeout_seconds: 10800 });
    }

    #[test]
    fn cluster_ip_and_cluster_ips_must_agree() {
        let e = load_yaml("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.1, clusterIPs: [10.96.0.2], ports: [{port: 80}]}\n").unwrap_err();
        assert_eq!(causes(e), ["spec.clusterIPs: Invalid value: []string{\"10.96.0.2\"}: first value must match `clusterIP`"]);
        let e = load_yaml("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 'fd00::1', ports: [{port: 80}]}\n").unwrap_err();
        assert_eq!(causes(e), ["spec.clusterIPs[0]: Invalid value: \"fd00::1\": kubehops models IPv4 only"]);
    }

    #[test]
    fn unsupported_values_list_what_is_supported() {
        let e = load_yaml(
            "apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  externalTrafficPolicy: Global
  sessionAffinity: Cookie
  ports: [{port: 80, nodePort: 70000}]
status: {loadBalancer: {ingress: [{ip: 203.0.113.1, ipMode: Magic}]}}
",
        )
        .unwrap_err();
        assert_eq!(
            causes(e),
            [
                "spec.ports[0].nodePort: Invalid value: 70000: provided port is not in the valid range. The range of valid ports is 30000-32767",
                "spec.externalTrafficPolicy: Unsupported value: \"Global\": supported values: \"Cluster\", \"Local\"",
                "spec.sessionAffinity: Unsupported value: \"Cookie\": supported values: \"ClientIP\", \"None\"",
                "status.loadBalancer.ingress[0].ipMode: Unsupported value: \"Magic\": supported values: \"Proxy\", \"VIP\"",
            ]
        );
    }

    const PODS: &str = "
---
apiVersion: v1
kind: Pod
metadata: {name: a, labels: {app: web}}
spec: {nodeName: node-1, containers: [{ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 10.244.1.9, conditions: [{type: Ready, status: 'True'}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, labels: {app: web}}
spec: {nodeName: node-2, containers: [{ports: [{name: http, containerPort: 9090}]}]}
status: {podIP: 10.244.2.3, conditions: [{type: Ready, status: 'False'}]}
---
apiVersion: v1
kind: Pod
metadata: {name: c, labels: {app: web}, deletionTimestamp: '2024-05-01T12:00:00Z'}
spec: {nodeName: node-2, containers: [{ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 10.244.2.1, conditions: [{type: Ready, status: 'True'}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pending, labels: {app: web}}
spec: {containers: [{ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, labels: {app: db}}
spec: {nodeName: node-1}
status: {podIP: 10.244.1.10}
";

    #[test]
    fn slices_are_written_from_pods_with_named_ports_resolved_per_pod() {
        let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.5, selector: {app: web}, ports: [{name: web, port: 80, targetPort: http}]}\n";
        let c = load_yaml(&format!("{svc}{PODS}")).unwrap();
        assert_eq!(c.pods.len(), 4, "the Pod without an address is left out");
        assert_eq!(c.services[0].spec.ports[0].target_port, 8080, "the first selected Pod names the number");
        assert_eq!(c.slices.len(), 2, "Pods whose port numbers differ go to different slices");
        let by_port = |n: u16| c.slices.iter().find(|s| s.ports[0].port == n).expect("slice for port");
        let eights: Vec<(Ipv4Addr, bool, bool, bool)> = by_port(8080).endpoints.iter().map(|e| (e.ip, e.ready, e.serving, e.terminating)).collect();
        assert_eq!(eights, [(ip(10, 244, 1, 9), true, true, false), (ip(10, 244, 2, 1), false, true, true)]);
        let nines: Vec<(Ipv4Addr, bool)> = by_port(9090).endpoints.iter().map(|e| (e.ip, e.ready)).collect();
        assert_eq!(nines, [(ip(10, 244, 2, 3), false)]);
        assert!(c.slices.iter().all(|s| s.service_name == "web" && s.ports[0].name.as_deref() == Some("web")));
        assert_eq!(by_port(8080).endpoints[0].target_ref, "Pod/a");
    }

    #[test]
    fn given_slices_win_over_pods_and_name_the_target_number() {
        let yaml = "apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: nothing}, ports: [{name: web, port: 80, targetPort: http}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints:
  - addresses: [10.244.9.9]
  - addresses: [10.244.9.8]
    conditions: {ready: false, serving: true, terminating: true}
ports: [{name: web, port: 7000}]
---
apiVersion: v1
kind: Pod
metadata: {name: a, labels: {app: web}}
status: {podIP: 10.244.1.9}
";
        let c = load_yaml(yaml).unwrap();
        assert_eq!(c.services[0].spec.ports[0].target_port, 7000);
        assert_eq!(c.slices.len(), 1, "no slice is written when one is given");
        let e = &c.slices[0].endpoints;
        assert!(e[0].ready && e[0].serving && !e[0].terminating, "unset conditions mean ready and serving");
        assert!(!e[1].ready && e[1].serving && e[1].terminating);
    }

    #[test]
    fn slices_without_a_service_label_or_ipv4_are_skipped_with_warnings() {
        let c = load_yaml(
            "apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: orphan}
addressType: IPv4
endpoints: []
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: v6, labels: {kubernetes.io/service-name: web}}
addressType: IPv6
endpoints: [{addresses: ['fd00::5']}]
",
        )
        .unwrap();
        assert!(c.slices.is_empty());
        assert_eq!(c.warnings.len(), 2);
        assert!(c.warnings[0].contains("no kubernetes.io/service-name label") && c.warnings[1].contains("addressType IPv6"), "{:?}", c.warnings);
    }

    #[test]
    fn typed_lists_give_their_items_a_kind() {
        let c = load_yaml(
            "apiVersion: v1
kind: NodeList
items:
  - metadata: {name: n1}
    status: {addresses: [{type: InternalIP, address: 'fd00::1'}, {type: InternalIP, address: 10.0.0.1}]}
    spec: {podCIDR: 10.244.0.0/24}
",
        )
        .unwrap();
        assert_eq!(c.nodes, [Node { name: "n1".into(), internal_ip: ip(10, 0, 0, 1), pod_cidr: Some("10.244.0.0/24".parse().unwrap()) }]);
        let e = load_yaml("apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n").unwrap_err();
        assert_eq!(e.to_string(), "Node \"n2\" has no IPv4 InternalIP in status.addresses; kubehops needs it to place the node");
    }

    #[test]
    fn kube_proxy_configuration_fields() {
        let c = load_yaml(
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clusterCIDR: 'fd00:10::/56, 10.244.0.0/16'
hostnameOverride: node-2
iptables: {masqueradeAll: true, localhostNodePorts: false}
conntrack: {tcpBeLiberal: true}
mode: nftables
nodePortAddresses: [192.168.0.0/16, 'fd00::/64']
",
        )
        .unwrap();
        let cfg = c.proxy.unwrap();
        assert_eq!(cfg.mode, ProxyMode::Nftables);
        assert_eq!(cfg.node_port_addresses, NodePortAddresses::Cidrs(vec!["192.168.0.0/16".parse().unwrap()]));
        let primary = load_yaml("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nnodePortAddresses: [primary]\n").unwrap();
        assert_eq!(primary.proxy.unwrap().node_port_addresses, NodePortAddresses::Primary);
        let blank = load_yaml("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ''\n").unwrap().proxy.unwrap();
        assert_eq!((blank.mode, blank.node_port_addresses), (ProxyMode::Iptables, NodePortAddresses::All));
        assert_eq!(cfg.cluster_cidr, Some("10.244.0.0/16".parse().unwrap()));
        assert_eq!(cfg.hostname_override.as_deref(), Some("node-2"));
        assert!(cfg.masquerade_all && !cfg.localhost_node_ports && cfg.tcp_be_liberal);
        let e = load_yaml("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nconntrack: {tcpBeLiberal: yes please}\n").unwrap_err();
        assert!(e.to_string().contains("conntrack.tcpBeLiberal"), "{e}");
        let e = load_yaml("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: nonsense\n").unwrap_err();
        assert_eq!(e.to_string(), "The KubeProxyConfiguration is invalid: clusterCIDR: Invalid value: \"nonsense\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)");
        let e = load_yaml("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: kernelspace\n").unwrap_err();
        assert_eq!(e.to_string(), "The KubeProxyConfiguration is invalid: mode: Invalid value: \"kernelspace\": must be iptables, ipvs, nftables or blank (blank means the best-available proxy [currently iptables])");
        let e = load_yaml("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n").unwrap_err();
        assert!(e.to_string().contains("mode: Invalid value: \"ipvs\": kubehops models the iptables and nftables modes"), "{e}");
        let e = load_yaml("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nnodePortAddresses: [10.0.0.0/8, nonsense]\n").unwrap_err();
        assert!(e.to_string().contains("nodePortAddresses[1]: Invalid value: \"nonsense\""), "{e}");
        let two = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n---\napiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmetadata: {name: again}\n";
        assert!(load_yaml(two).unwrap_err().to_string().contains("more than one KubeProxyConfiguration"));
    }

    #[test]
    fn documents_that_are_not_objects() {
        let e = load_yaml("- just\n- a list\n").unwrap_err();
        assert_eq!(e.to_string(), "unable to decode document 1 of t.yaml: expected a Kubernetes object (a mapping with apiVersion and kind), found a list");
        let e = load_yaml("kind: Service\n").unwrap_err();
        assert_eq!(e.to_string(), "unable to decode document 1 of t.yaml: Object 'apiVersion' is missing");
    }

    #[test]
    fn endpoint_hostnames_come_from_slices_or_from_pods_in_the_services_subdomain() {
        let slice = "apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-1, labels: {kubernetes.io/service-name: db}}
addressType: IPv4
endpoints: [{addresses: [10.244.1.7], hostname: db-0}, {addresses: [10.244.1.8]}]
";
        let c = load_yaml(slice).unwrap();
        let names: Vec<Option<&str>> = c.slices[0].endpoints.iter().map(|e| e.hostname.as_deref()).collect();
        assert_eq!(names, [Some("db-0"), None]);
        let e = load_yaml(&slice.replace("hostname: db-0", "hostname: DB_0")).unwrap_err();
        assert!(causes(e)[0].starts_with("endpoints[0].hostname: Invalid value: \"DB_0\": a lowercase RFC 1123 label"));

        // A StatefulSet's Pods: hostname db-N, subdomain db.
        let pods = "apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, labels: {app: db}}
spec: {hostname: db-0, subdomain: db}
status: {podIP: 10.244.1.7}
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, labels: {app: db}}
spec: {hostname: db-1, subdomain: other}
status: {podIP: 10.244.1.8}
";
        let c = load_yaml(pods).unwrap();
        let names: Vec<Option<&str>> = c.slices[0].endpoints.iter().map(|e| e.hostname.as_deref()).collect();
        assert_eq!(names, [Some("db-0"), None], "a Pod in another subdomain keeps its dashed name");
    }

    #[test]
    fn ip_families_are_read_or_follow_the_cluster_ips() {
        let svc = |spec: &str| format!("apiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec: {{{spec}, ports: [{{port: 80}}]}}\n");
        let c = load_yaml(&svc("clusterIPs: [10.96.0.5, 'fd00::5'], ipFamilies: [IPv4, IPv6]")).unwrap();
        assert!(c.services[0].spec.is_dual_stack());
        let c = load_yaml(&svc("clusterIPs: [10.96.0.5, 'fd00::5']")).unwrap();
        assert_eq!(c.services[0].spec.ip_families, [IpFamily::IPv4, IpFamily::IPv6]);
        let c = load_yaml(&svc("clusterIP: 10.96.0.5")).unwrap();
        assert!(!c.services[0].spec.is_dual_stack());
        let e = load_yaml(&svc("ipFamilies: [IPv5]")).unwrap_err();
        assert_eq!(causes(e), ["spec.ipFamilies[0]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\""]);
    }

    #[test]
    fn stored_conflicts_are_kept_unless_strict() {
        let two = "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {clusterIP: 10.96.0.5, ports: [{port: 80}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {clusterIP: 10.96.0.5, ports: [{port: 80}]}\n";
        let c = load_yaml(two).unwrap();
        assert_eq!(c.services.len(), 2);
        assert!(matches!(&c.stored_warnings[..], [StoredWarning::ClusterIpInUse { service, .. }] if service.name == "b"));
        let e = load(&docs(two), LoadOptions { strict: true, ..Default::default() }).unwrap_err();
        assert_eq!(causes(e), ["spec.clusterIPs: Invalid value: []string{\"10.96.0.5\"}: failed to allocate IP 10.96.0.5: provided IP is already allocated"]);
    }

    #[test]
    fn port_names_used_as_target_ports() {
        assert!(port_name_errors("http").is_empty());
        assert_eq!(port_name_errors("8080"), ["must contain at least one letter (a-z)"]);
        assert_eq!(port_name_errors("a--b"), ["must contain consecutive hyphens"].map(|s| s.replace("must contain", "must not contain")));
        assert_eq!(port_name_errors("-web").len(), 1);
        assert_eq!(port_name_errors("a-very-long-port-name").len(), 1);
    }
}
