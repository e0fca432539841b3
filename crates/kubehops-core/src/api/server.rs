//! The part of kube-apiserver that Services depend on: validation, the
//! ClusterIP and node port allocators, and the EndpointSlice controller.
//!
//! Errors are reported as the API server reports them, field by field
//! (`spec.ports[0].nodePort: Invalid value: 29000: ...`). The real
//! allocators pick at random; these pick from a hash of the Service's name,
//! so the same input always gets the same address and port.

use crate::api::{Endpoint, EndpointPort, EndpointSlice, Node, ObjectRef, Pod, Service, ServiceType};
use crate::net::{Cidr, Protocol};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::Ipv4Addr;

/// `--service-node-port-range`, inclusive at both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

impl PortRange {
    pub const DEFAULT: PortRange = PortRange { first: 30000, last: 32767 };

    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }

    fn len(&self) -> u32 {
        u32::from(self.last) - u32::from(self.first) + 1
    }

    /// Parses `30000-32767`, the flag's syntax.
    pub fn parse(s: &str) -> Option<PortRange> {
        let (a, b) = s.trim().split_once('-')?;
        let (first, last) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        (first <= last).then_some(PortRange { first, last })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// One field error, in the API server's `field: Type: detail` shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: String,
    pub kind: FieldErrorKind,
    /// The rejected value, rendered as the API server renders it.
    pub value: Option<String>,
    pub detail: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FieldErrorKind {
    Invalid,
    Required,
    Forbidden,
    NotSupported,
}

impl FieldError {
    /// The allocator has no free ClusterIP left.
    pub fn cluster_ip_range_full() -> FieldError {
        FieldError {
            field: "spec.clusterIPs".into(),
            kind: FieldErrorKind::Invalid,
            value: Some("[]string{}".into()),
            detail: "failed to allocate a serviceIP: range is full".into(),
        }
    }

    /// The allocator has no free node port left for `field`.
    pub fn node_port_range_full(field: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::Invalid,
            value: Some("0".into()),
            detail: "failed to allocate a nodePort: range is full".into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::NotSupported => "Unsupported value",
        };
        write!(f, "{}: {}", self.field, kind)?;
        if let Some(v) = &self.value {
            write!(f, ": {v}")?;
        }
        // Like the API server, an empty detail adds nothing (`spec.ports: Required value`).
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// A rejected request: `Service "web" is invalid: ...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    pub kind: String,
    pub name: String,
    pub causes: Vec<FieldError>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} \"{}\" is invalid: ", self.kind, self.name)?;
        if self.causes.len() == 1 {
            write!(f, "{}", self.causes[0])
        } else {
            let all: Vec<String> = self.causes.iter().map(|c| c.to_string()).collect();
            write!(f, "[{}]", all.join(", "))
        }
    }
}

impl std::error::Error for ApiError {}

/// The cluster-wide settings of the control plane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiServerConfig {
    /// `--service-cluster-ip-range`.
    pub service_cidr: Cidr,
    /// `--service-node-port-range`.
    pub node_port_range: PortRange,
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        ApiServerConfig {
            service_cidr: Cidr::new(Ipv4Addr::new(10, 96, 0, 0), 12),
            node_port_range: PortRange::DEFAULT,
        }
    }
}

/// The stored objects and the allocators' bitmaps.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiServer {
    pub config: ApiServerConfig,
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    services: BTreeMap<ObjectRef, Service>,
    cluster_ips: BTreeSet<Ipv4Addr>,
    /// What the allocator, which is random in the real API server, draws
    /// for a Service's cluster IP, where a story needs a known address.
    /// Used only when free; otherwise the hash-based pick applies.
    pub cluster_ip_draws: BTreeMap<ObjectRef, Ipv4Addr>,
    node_ports: BTreeSet<(Protocol, u16)>,
    /// EndpointSlices read as stored (a pasted cluster's), used instead
    /// of the controller's slices computed from Pods. `None`: the
    /// controller writes them.
    #[serde(default)]
    pub stored_slices: Option<Vec<EndpointSlice>>,
}

impl ApiServer {
    pub fn new(config: ApiServerConfig) -> ApiServer {
        let mut s = ApiServer {
            config,
            nodes: Vec::new(),
            pods: Vec::new(),
            services: BTreeMap::new(),
            cluster_ips: BTreeSet::new(),
            cluster_ip_draws: BTreeMap::new(),
            node_ports: BTreeSet::new(),
            stored_slices: None,
        };
        // The network address and the first address (taken by the
        // `kubernetes` Service) are never handed out.
        if let Some(a) = s.config.service_cidr.nth(0) {
            s.cluster_ips.insert(a);
        }
        if let Some(a) = s.config.service_cidr.nth(1) {
            s.cluster_ips.insert(a);
        }
        s
    }

    pub fn services(&self) -> impl Iterator<Item = &Service> {
        self.services.values()
    }

    pub fn service(&self, namespace: &str, name: &str) -> Option<&Service> {
        self.services.get(&ObjectRef::new(namespace, name))
    }

    /// Creates or updates a Service, as `kubectl apply` would. On success
    /// the returned object has its ClusterIP and node ports filled in.
    pub fn apply_service(&mut self, mut svc: Service) -> Result<Service, ApiError> {
        let key = svc.object_ref();
        let old = self.services.get(&key).cloned();
        let err = |causes: Vec<FieldError>| ApiError { kind: "Service".into(), name: svc.name.clone(), causes };

        let mut causes = validate_static(&svc);
        if !causes.is_empty() {
            return Err(err(causes));
        }

        // ClusterIP: immutable once set, and `None` (headless) counts as
        // set; allocated on create and when a type that has none
        // (ExternalName) becomes one that needs one.
        let needs_ip = !svc.spec.headless && svc.spec.type_ != ServiceType::ExternalName;
        let old_has_ip = old.as_ref().is_some_and(|o| o.spec.cluster_ip.is_some() || o.spec.headless);
        if let Some(o) = old.as_ref().filter(|o| o.spec.headless != svc.spec.headless && old_has_ip && svc.spec.type_ != ServiceType::ExternalName) {
            let value = if svc.spec.headless { "None".to_string() } else { svc.spec.cluster_ip.map_or_else(String::new, |i| i.to_string()) };
            if svc.spec.headless || svc.spec.cluster_ip.is_some() || !o.spec.headless {
                causes.push(FieldError {
                    field: "spec.clusterIPs[0]".into(),
                    kind: FieldErrorKind::Invalid,
                    value: Some(format!("[]string{{\"{value}\"}}")),
                    detail: "may not change once set".into(),
                });
            }
        }
        let cluster_ip = match (&old, svc.spec.cluster_ip) {
            _ if !needs_ip => None,
            (Some(o), _) if o.spec.headless => None,
            (Some(o), Some(ip)) if Some(ip) != o.spec.cluster_ip && o.spec.cluster_ip.is_some() => {
                causes.push(FieldError {
                    field: "spec.clusterIPs[0]".into(),
                    kind: FieldErrorKind::Invalid,
                    value: Some(format!("[]string{{\"{ip}\"}}")),
                    detail: "may not change once set".into(),
                });
                None
            }
            (Some(o), _) if o.spec.cluster_ip.is_some() => o.spec.cluster_ip,
            (_, Some(ip)) => {
                let cidr = self.config.service_cidr;
                if !cidr.contains(ip) {
                    causes.push(FieldError {
                        field: "spec.clusterIPs".into(),
                        kind: FieldErrorKind::Invalid,
                        value: Some(format!("[]string{{\"{ip}\"}}")),
                        detail: format!("failed to allocate IP {ip}: provided IP is not in the valid range. The range of valid IPs is {cidr}"),
                    });
                    None
                } else if self.cluster_ips.contains(&ip) {
                    causes.push(FieldError {
                        field: "spec.clusterIPs".into(),
                        kind: FieldErrorKind::Invalid,
                        value: Some(format!("[]string{{\"{ip}\"}}")),
                        detail: format!("failed to allocate IP {ip}: provided IP is already allocated"),
                    });
                    None
                } else {
                    Some(ip)
                }
            }
            (_, None) => match self.next_cluster_ip(&key) {
                Some(ip) => Some(ip),
                None => {
                    causes.push(FieldError::cluster_ip_range_full());
                    None
                }
            },
        };

        // Node ports: ports this Service already holds stay its own.
        let held: BTreeSet<(Protocol, u16)> = old
            .iter()
            .flat_map(|o| o.spec.ports.iter().filter_map(|p| p.node_port.map(|n| (p.protocol, n))))
            .collect();
        let mut taken_now: BTreeSet<(Protocol, u16)> = BTreeSet::new();
        let range = self.config.node_port_range;
        if svc.spec.type_.has_node_ports() {
            for i in 0..svc.spec.ports.len() {
                let proto = svc.spec.ports[i].protocol;
                let requested = svc.spec.ports[i].node_port.or_else(|| {
                    // An update that leaves nodePort out keeps the old one.
                    old.as_ref()
                        .and_then(|o| o.spec.ports.iter().find(|p| p.port == svc.spec.ports[i].port && p.protocol == proto))
                        .and_then(|p| p.node_port)
                });
                let field = format!("spec.ports[{i}].nodePort");
                match requested {
                    Some(np) if !range.contains(np) => causes.push(FieldError {
                        field,
                        kind: FieldErrorKind::Invalid,
                        value: Some(np.to_string()),
                        detail: format!("provided port is not in the valid range. The range of valid ports is {range}"),
                    }),
                    Some(np)
                        if (self.node_ports.contains(&(proto, np)) && !held.contains(&(proto, np)))
                            || taken_now.contains(&(proto, np)) =>
                    {
                        causes.push(FieldError {
                            field,
                            kind: FieldErrorKind::Invalid,
                            value: Some(np.to_string()),
                            detail: "provided port is already allocated".into(),
                        })
                    }
                    Some(np) => {
                        taken_now.insert((proto, np));
                        svc.spec.ports[i].node_port = Some(np);
                    }
                    None if !svc.spec.allocates_node_ports() => {}
                    None => match self.next_node_port(&key, i, proto, &taken_now) {
                        Some(np) => {
                            taken_now.insert((proto, np));
                            svc.spec.ports[i].node_port = Some(np);
                        }
                        None => causes.push(FieldError::node_port_range_full(field)),
                    },
                }
            }
        }
        if !causes.is_empty() {
            return Err(err(causes));
        }

        // Commit: release what the old object held and take the new.
        for p in &held {
            self.node_ports.remove(p);
        }
        self.node_ports.extend(taken_now);
        if let Some(ip) = old.as_ref().and_then(|o| o.spec.cluster_ip).filter(|ip| Some(*ip) != cluster_ip) {
            self.cluster_ips.remove(&ip);
        }
        svc.spec.cluster_ip = cluster_ip;
        if let Some(ip) = cluster_ip {
            self.cluster_ips.insert(ip);
        }
        // Status belongs to controllers, not to the applier; it is kept
        // while the Service stays a LoadBalancer.
        svc.status = match (&old, svc.spec.type_) {
            (Some(o), ServiceType::LoadBalancer) => o.status.clone(),
            _ => Default::default(),
        };
        self.services.insert(key, svc.clone());
        Ok(svc)
    }

    /// Stores Services as they were read (already admitted: cluster IPs
    /// and node ports filled in, clashes warned about by
    /// `admit_stored_services`), taking their values in the allocators.
    pub fn store_services(&mut self, services: impl IntoIterator<Item = Service>) {
        for svc in services {
            if let Some(ip) = svc.spec.cluster_ip {
                self.cluster_ips.insert(ip);
            }
            for p in &svc.spec.ports {
                if let Some(n) = p.node_port {
                    self.node_ports.insert((p.protocol, n));
                }
            }
            self.services.insert(svc.object_ref(), svc);
        }
    }

    /// Deletes a Service and frees its ClusterIP and node ports.
    pub fn delete_service(&mut self, namespace: &str, name: &str) -> Option<Service> {
        let svc = self.services.remove(&ObjectRef::new(namespace, name))?;
        if let Some(ip) = svc.spec.cluster_ip {
            self.cluster_ips.remove(&ip);
        }
        for p in &svc.spec.ports {
            if let Some(n) = p.node_port {
                self.node_ports.remove(&(p.protocol, n));
            }
        }
        Some(svc)
    }

    /// Writes `status.loadBalancer`, as a load-balancer controller does.
    pub fn update_service_status(&mut self, svc: &ObjectRef, status: crate::api::ServiceStatus) -> Option<&Service> {
        let s = self.services.get_mut(svc)?;
        s.status = status;
        Some(s)
    }

    /// The EndpointSlice controller: one slice per Service with a selector,
    /// listing every matching Pod with its readiness.
    pub fn endpoint_slice(&self, svc: &Service) -> Option<EndpointSlice> {
        if let Some(stored) = &self.stored_slices {
            // Stored slices: the Service's, merged into one (a Service's
            // endpoints may be spread over several slices).
            let mut mine = stored.iter().filter(|s| s.namespace == svc.namespace && s.service_name == svc.name);
            let mut first = mine.next()?.clone();
            for s in mine {
                first.endpoints.extend(s.endpoints.iter().cloned());
            }
            return Some(first);
        }
        if svc.spec.selector.is_empty() || svc.spec.type_ == ServiceType::ExternalName {
            return None;
        }
        let mut pods: Vec<&Pod> = self
            .pods
            .iter()
            .filter(|p| p.namespace == svc.namespace)
            .filter(|p| svc.spec.selector.iter().all(|(k, v)| p.labels.get(k) == Some(v)))
            .collect();
        crate::sort::by_key(&mut pods, |p| p.ip);
        let suffix = &crate::hash::sha256_base32(svc.name.as_bytes())[..5].to_ascii_lowercase();
        Some(EndpointSlice {
            name: format!("{}-{}", svc.name, suffix),
            namespace: svc.namespace.clone(),
            service_name: svc.name.clone(),
            endpoints: pods
                .iter()
                .map(|p| Endpoint { ip: p.ip, node_name: p.node_name.clone(), ready: p.ready, serving: p.ready, terminating: false, target_ref: format!("Pod/{}", p.name), hostname: None })
                .collect(),
            ports: svc
                .spec
                .ports
                .iter()
                .map(|sp| EndpointPort { name: sp.name.clone(), protocol: sp.protocol, port: sp.target_port })
                .collect(),
        })
    }

    pub fn endpoint_slices(&self) -> Vec<EndpointSlice> {
        if let Some(stored) = &self.stored_slices {
            return stored.clone();
        }
        self.services.values().filter_map(|s| self.endpoint_slice(s)).collect()
    }

    /// A free ClusterIP in the dynamic (upper) band, starting from a point
    /// derived from the Service's name.
    fn next_cluster_ip(&self, key: &ObjectRef) -> Option<Ipv4Addr> {
        let cidr = self.config.service_cidr;
        if let Some(ip) = self.cluster_ip_draws.get(key).filter(|ip| cidr.contains(**ip) && !self.cluster_ips.contains(ip)) {
            return Some(*ip);
        }
        let size = cidr.size();
        if size < 4 {
            return None;
        }
        // The lower band is kept for static addresses, as in the API server.
        let lower = (size / 16).clamp(16, 256).min(size - 2);
        let band = size - 1 - lower;
        let start = crate::hash::fnv1a(key.to_string().as_bytes()) % band;
        (0..band)
            .map(|i| lower + (start + i) % band)
            .filter_map(|o| cidr.nth(o))
            .find(|ip| !self.cluster_ips.contains(ip))
    }

    fn next_node_port(&self, key: &ObjectRef, index: usize, proto: Protocol, taken: &BTreeSet<(Protocol, u16)>) -> Option<u16> {
        let range = self.config.node_port_range;
        let n = range.len();
        let start = (crate::hash::fnv1a(format!("{key}#{index}").as_bytes()) % u64::from(n)) as u32;
        (0..n)
            .map(|i| (u32::from(range.first) + (start + i) % n) as u16)
            .find(|p| !self.node_ports.contains(&(proto, *p)) && !taken.contains(&(proto, *p)))
    }
}

/// Checks that need no allocator state.
fn validate_static(svc: &Service) -> Vec<FieldError> {
    let mut out = Vec::new();
    if svc.spec.ports.is_empty() && svc.spec.type_ != ServiceType::ExternalName {
        out.push(FieldError { field: "spec.ports".into(), kind: FieldErrorKind::Required, value: None, detail: "".into() });
    }
    let multi = svc.spec.ports.len() > 1;
    let mut seen = BTreeSet::new();
    for (i, p) in svc.spec.ports.iter().enumerate() {
        if p.port == 0 {
            out.push(FieldError {
                field: format!("spec.ports[{i}].port"),
                kind: FieldErrorKind::Invalid,
                value: Some("0".into()),
                detail: "must be between 1 and 65535, inclusive".into(),
            });
        }
        if p.target_port == 0 {
            out.push(FieldError {
                field: format!("spec.ports[{i}].targetPort"),
                kind: FieldErrorKind::Invalid,
                value: Some("0".into()),
                detail: "must be between 1 and 65535, inclusive".into(),
            });
        }
        if multi && p.name.as_deref().unwrap_or("").is_empty() {
            out.push(FieldError { field: format!("spec.ports[{i}].name"), kind: FieldErrorKind::Required, value: None, detail: "".into() });
        }
        if !seen.insert((p.port, p.protocol)) {
            out.push(FieldError {
                field: format!("spec.ports[{i}]"),
                kind: FieldErrorKind::Invalid,
                value: Some(format!("{}/{}", p.port, p.protocol)),
                detail: "duplicate port and protocol".into(),
            });
        }
        if p.node_port.is_some() && !svc.spec.type_.has_node_ports() {
            out.push(FieldError {
                field: format!("spec.ports[{i}].nodePort"),
                kind: FieldErrorKind::Forbidden,
                value: None,
                detail: format!("may not be used when `type` is '{}'", svc.spec.type_.as_str()),
            });
        }
    }
    out
}


// ---------------------------------------------------------------------
// Services read from files.
//
// `kubehops` reads Services that a real API server already admitted (from
// `kubectl get -o yaml`) or that someone wrote by hand. Each is held to the
// API server's create-time checks that need no stored state (names, types,
// ranges). Across the set, values are taken as stored: a clash between two
// allocated values is a `StoredWarning`, since kube-proxy writes rules for
// both. What is missing is allocated as `apply_service` would.

/// The create-time checks of one Service read from a file, with the API
/// server's field paths and wording. Node ports (and the health check node
/// port) must lie in `node_port_range`. Given cluster IPs are not checked
/// against a service range, since the file does not say which one the
/// cluster used.
pub fn validate_stored_service(svc: &Service, node_port_range: PortRange) -> Vec<FieldError> {
    let mut out = Vec::new();
    let spec = &svc.spec;
    if svc.name.is_empty() {
        out.push(FieldError {
            field: "metadata.name".into(),
            kind: FieldErrorKind::Required,
            value: None,
            detail: "name or generateName is required".into(),
        });
    }
    for detail in dns1035_label_errors(&svc.name).into_iter().filter(|_| !svc.name.is_empty()) {
        out.push(invalid_str("metadata.name", &svc.name, detail));
    }
    for detail in dns1123_label_errors(&svc.namespace) {
        out.push(invalid_str("metadata.namespace", &svc.namespace, detail));
    }
    // A headless Service may have no ports; `validate_static` does not know that.
    out.extend(validate_static(svc).into_iter().filter(|e| !(spec.headless && e.field == "spec.ports" && e.kind == FieldErrorKind::Required)));
    let mut names = BTreeSet::new();
    for (i, p) in spec.ports.iter().enumerate() {
        if let Some(n) = p.name.as_deref().filter(|n| !n.is_empty()) {
            for detail in dns1123_label_errors(n) {
                out.push(invalid_str(&format!("spec.ports[{i}].name"), n, detail));
            }
            if !names.insert(n) {
                out.push(invalid_str(&format!("spec.ports[{i}].name"), n, "duplicate port name".into()));
            }
        }
    }
    match spec.type_ {
        ServiceType::NodePort | ServiceType::LoadBalancer if spec.headless => out.push(FieldError {
            field: "spec.clusterIPs[0]".into(),
            kind: FieldErrorKind::Invalid,
            value: Some("\"None\"".into()),
            detail: format!("may not be set to 'None' for {} services", spec.type_.as_str()),
        }),
        ServiceType::ExternalName => {
            if spec.headless || spec.cluster_ip.is_some() {
                out.push(FieldError {
                    field: "spec.clusterIPs".into(),
                    kind: FieldErrorKind::Forbidden,
                    value: None,
                    detail: "may not be set for ExternalName services".into(),
                });
            }
            // The name may end with a dot to say it is fully qualified.
            let name = spec.external_name.as_deref().unwrap_or("").trim_end_matches('.');
            if name.is_empty() {
                out.push(FieldError { field: "spec.externalName".into(), kind: FieldErrorKind::Required, value: None, detail: "".into() });
            }
            for detail in dns1123_subdomain_errors(name).into_iter().filter(|_| !name.is_empty()) {
                out.push(invalid_str("spec.externalName", name, detail));
            }
        }
        _ => {}
    }
    if spec.type_.has_node_ports() {
        let mut seen = BTreeSet::new();
        for (i, p) in spec.ports.iter().enumerate() {
            let Some(np) = p.node_port else { continue };
            let field = format!("spec.ports[{i}].nodePort");
            if !node_port_range.contains(np) {
                out.push(FieldError {
                    field,
                    kind: FieldErrorKind::Invalid,
                    value: Some(np.to_string()),
                    detail: format!("provided port is not in the valid range. The range of valid ports is {node_port_range}"),
                });
            } else if !seen.insert((p.protocol, np)) {
                out.push(FieldError { field, kind: FieldErrorKind::Invalid, value: Some(np.to_string()), detail: "provided port is already allocated".into() });
            }
        }
    }
    if let Some(hc) = spec.health_check_node_port.filter(|hc| !node_port_range.contains(*hc)) {
        out.push(FieldError {
            field: "spec.healthCheckNodePort".into(),
            kind: FieldErrorKind::Invalid,
            value: Some(hc.to_string()),
            detail: format!("provided port is not in the valid range. The range of valid ports is {node_port_range}"),
        });
    }
    if let crate::api::SessionAffinity::ClientIP { timeout_seconds } = spec.session_affinity {
        if timeout_seconds == 0 || timeout_seconds > 86400 {
            out.push(FieldError {
                field: "spec.sessionAffinityConfig.clientIP.timeoutSeconds".into(),
                kind: FieldErrorKind::Invalid,
                value: Some(timeout_seconds.to_string()),
                detail: "must be greater than 0 and less than 86400".into(),
            });
        }
    }
    out
}

/// A value a stored Service holds that the API server would refuse if the
/// Service were created now, but that kube-proxy and kubectl act on as it
/// is stored. Two Services can come to share an address after a restore
/// from backup or a hand-edited `kubectl get -o yaml`, and upstream's own
/// test fixtures do it on purpose. `kubehops` reports these as warnings;
/// [`StoredWarning::field_error`] gives the API server's refusal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredWarning {
    /// `service` has cluster IP `ip`, which `holder` (earlier in the input) has too.
    ClusterIpInUse { service: ObjectRef, ip: Ipv4Addr, holder: ObjectRef },
    /// `service`'s `field` holds node port `port`, which `holder`'s
    /// `holder_field` holds too (the holder may be the Service itself, when
    /// its health check node port repeats one of its node ports).
    NodePortInUse { service: ObjectRef, field: String, port: u16, holder: ObjectRef, holder_field: String },
    /// `spec.healthCheckNodePort` on a Service that is not a LoadBalancer
    /// with externalTrafficPolicy Local. kube-proxy serves no health check
    /// for it, and the port is not taken from the allocator.
    HealthCheckNodePortNotAllowed { service: ObjectRef, port: u16 },
}

impl StoredWarning {
    /// The Service the warning is about.
    pub fn service(&self) -> &ObjectRef {
        match self {
            StoredWarning::ClusterIpInUse { service, .. }
            | StoredWarning::NodePortInUse { service, .. }
            | StoredWarning::HealthCheckNodePortNotAllowed { service, .. } => service,
        }
    }

    /// The error the API server gives when asked to create the Service
    /// with this value.
    pub fn field_error(&self) -> FieldError {
        match self {
            StoredWarning::ClusterIpInUse { ip, .. } => FieldError {
                field: "spec.clusterIPs".into(),
                kind: FieldErrorKind::Invalid,
                value: Some(format!("[]string{{\"{ip}\"}}")),
                detail: format!("failed to allocate IP {ip}: provided IP is already allocated"),
            },
            StoredWarning::NodePortInUse { field, port, .. } => FieldError {
                field: field.clone(),
                kind: FieldErrorKind::Invalid,
                value: Some(port.to_string()),
                detail: "provided port is already allocated".into(),
            },
            StoredWarning::HealthCheckNodePortNotAllowed { port, .. } => FieldError {
                field: "spec.healthCheckNodePort".into(),
                kind: FieldErrorKind::Invalid,
                value: Some(port.to_string()),
                detail: "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'".into(),
            },
        }
    }
}

/// Services read from files, admitted: each has its cluster IP and node
/// ports, and `warnings` lists what the API server would have refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admitted {
    pub services: Vec<Service>,
    pub warnings: Vec<StoredWarning>,
}

impl Admitted {
    /// The strict reading, as if every Service were created anew in input
    /// order: the first Service with a warning is refused, with each of its
    /// warnings as a cause.
    pub fn strict(self) -> Result<Vec<Service>, ApiError> {
        let Some(first) = self.warnings.first().map(|w| w.service().clone()) else {
            return Ok(self.services);
        };
        let causes = self.warnings.iter().filter(|w| *w.service() == first).map(StoredWarning::field_error).collect();
        Err(ApiError { kind: "Service".into(), name: first.name, causes })
    }
}

/// Whether the API server gives (and wants) a health check node port.
fn needs_health_check(svc: &Service) -> bool {
    svc.spec.type_ == ServiceType::LoadBalancer && svc.spec.external_traffic_policy == crate::api::TrafficPolicy::Local
}

/// Admits a set of Services read from files, in the order given. Each is
/// validated as the API server validates a new object; the first one with
/// a problem is the error. Values already allocated are taken as stored:
/// a cluster IP or node port that two Services hold is a warning charged to
/// the later one, not an error. Cluster IPs and node ports left out are
/// allocated from `config` as `apply_service` allocates them
/// (deterministically), avoiding every stored one. Status is kept as read.
pub fn admit_stored_services(services: Vec<Service>, config: &ApiServerConfig) -> Result<Admitted, ApiError> {
    for svc in &services {
        let causes = validate_stored_service(svc, config.node_port_range);
        if !causes.is_empty() {
            return Err(ApiError { kind: "Service".into(), name: svc.name.clone(), causes });
        }
    }
    let mut api = ApiServer::new(config.clone());
    // Stored values first, so allocation avoids all of them.
    let warnings = claim_stored_values(&services, &mut api);
    let services = services.into_iter().map(|svc| allocate_missing(&mut api, svc)).collect::<Result<_, _>>()?;
    Ok(Admitted { services, warnings })
}

/// The node ports a stored Service holds, with their fields: one per
/// service port of a type that has them, and the health check node port
/// where the API server allows one.
fn held_node_ports(svc: &Service) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    if svc.spec.type_.has_node_ports() {
        for (i, p) in svc.spec.ports.iter().enumerate() {
            if let Some(np) = p.node_port {
                out.push((format!("spec.ports[{i}].nodePort"), np));
            }
        }
    }
    if let Some(hc) = svc.spec.health_check_node_port.filter(|_| needs_health_check(svc)) {
        out.push((HEALTH_CHECK_FIELD.to_string(), hc));
    }
    out
}

/// Takes a node port number for every protocol, as the API server's
/// allocator (which counts numbers only) does, so later allocation skips it.
fn take_node_port(api: &mut ApiServer, port: u16) {
    for proto in [Protocol::Tcp, Protocol::Udp, Protocol::Sctp] {
        api.node_ports.insert((proto, port));
    }
}

const HEALTH_CHECK_FIELD: &str = "spec.healthCheckNodePort";

/// Marks every stored cluster IP and node port as taken, and reports the
/// ones an earlier Service already holds. The API server's node port
/// allocator counts port numbers whatever the protocol, so UDP 30053 of one
/// Service clashes with TCP 30053 of another; one Service may use a number
/// for both protocols, but not again for its health check.
fn claim_stored_values(services: &[Service], api: &mut ApiServer) -> Vec<StoredWarning> {
    let mut ip_holders: BTreeMap<Ipv4Addr, ObjectRef> = BTreeMap::new();
    let mut port_holders: BTreeMap<u16, (ObjectRef, String)> = BTreeMap::new();
    let mut warnings = Vec::new();
    for svc in services {
        let me = svc.object_ref();
        if let Some(ip) = svc.spec.cluster_ip.filter(|_| svc.spec.type_ != ServiceType::ExternalName) {
            match ip_holders.get(&ip) {
                Some(holder) => warnings.push(StoredWarning::ClusterIpInUse { service: me.clone(), ip, holder: holder.clone() }),
                None => {
                    ip_holders.insert(ip, me.clone());
                }
            }
            api.cluster_ips.insert(ip);
        }
        for (field, port) in held_node_ports(svc) {
            let shared_within = |h: &ObjectRef, hf: &str| *h == me && field != HEALTH_CHECK_FIELD && hf != HEALTH_CHECK_FIELD;
            match port_holders.get(&port).filter(|(h, hf)| !shared_within(h, hf)) {
                Some((holder, holder_field)) => warnings.push(StoredWarning::NodePortInUse {
                    service: me.clone(),
                    field,
                    port,
                    holder: holder.clone(),
                    holder_field: holder_field.clone(),
                }),
                None => {
                    port_holders.entry(port).or_insert((me.clone(), field));
                }
            }
            take_node_port(api, port);
        }
        if let Some(port) = svc.spec.health_check_node_port.filter(|_| !needs_health_check(svc)) {
            warnings.push(StoredWarning::HealthCheckNodePortNotAllowed { service: me.clone(), port });
        }
    }
    warnings
}

/// Fills in what a stored Service leaves out: its cluster IP, its node
/// ports, and the health check node port of a LoadBalancer with
/// externalTrafficPolicy Local.
fn allocate_missing(api: &mut ApiServer, mut svc: Service) -> Result<Service, ApiError> {
    let key = svc.object_ref();
    let err = |svc: &Service, cause: FieldError| ApiError { kind: "Service".into(), name: svc.name.clone(), causes: vec![cause] };
    let wants_ip = svc.spec.type_ != ServiceType::ExternalName && !svc.spec.headless;
    if wants_ip && svc.spec.cluster_ip.is_none() {
        let ip = api.next_cluster_ip(&key).ok_or_else(|| err(&svc, FieldError::cluster_ip_range_full()))?;
        api.cluster_ips.insert(ip);
        svc.spec.cluster_ip = Some(ip);
    }
    if svc.spec.allocates_node_ports() {
        for i in 0..svc.spec.ports.len() {
            if svc.spec.ports[i].node_port.is_some() {
                continue;
            }
            let proto = svc.spec.ports[i].protocol;
            let field = format!("spec.ports[{i}].nodePort");
            let np = api.next_node_port(&key, i, proto, &BTreeSet::new()).ok_or_else(|| err(&svc, FieldError::node_port_range_full(field)))?;
            take_node_port(api, np);
            svc.spec.ports[i].node_port = Some(np);
        }
    }
    if needs_health_check(&svc) && svc.spec.health_check_node_port.is_none() {
        let index = svc.spec.ports.len();
        let np = api
            .next_node_port(&key, index, Protocol::Tcp, &BTreeSet::new())
            .ok_or_else(|| err(&svc, FieldError::node_port_range_full(HEALTH_CHECK_FIELD)))?;
        take_node_port(api, np);
        svc.spec.health_check_node_port = Some(np);
    }
    Ok(svc)
}

/// A string value as the API server quotes it in an error.
fn invalid_str(field: &str, value: &str, detail: String) -> FieldError {
    FieldError { field: field.into(), kind: FieldErrorKind::Invalid, value: Some(format!("{value:?}")), detail }
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(inner),
        _ => false,
    }
}

/// The API server's two checks on a name: its length, then its shape.
fn name_errors(s: &str, max: usize, well_formed: bool, shape_msg: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > max {
        out.push(format!("must be no more than {max} characters"));
    }
    if !well_formed {
        out.push(shape_msg.into());
    }
    out
}

/// Problems with a DNS-1123 label (port names, namespaces), in the API server's words.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    name_errors(s, 63, is_label(s), DNS1123_LABEL_MSG)
}

/// Problems with a DNS-1123 subdomain (external names), in the API server's words.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    name_errors(s, 253, s.split('.').all(is_label), DNS1123_SUBDOMAIN_MSG)
}

/// Problems with a DNS-1035 label (Service names), in the API server's words.
pub fn dns1035_label_errors(s: &str) -> Vec<String> {
    name_errors(s, 63, is_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase()), DNS1035_LABEL_MSG)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(type_: ServiceType, node_port: Option<u16>) -> Service {
        crate::scenarios::nodeport_loadbalancer::web_service(type_, node_port)
    }

    #[test]
    fn node_port_out_of_range_is_rejected_in_api_server_words() {
        let mut api = ApiServer::new(Default::default());
        let e = api.apply_service(svc(ServiceType::NodePort, Some(29000))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Service \"web\" is invalid: spec.ports[0].nodePort: Invalid value: 29000: provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
        assert!(api.service("default", "web").is_none(), "a rejected object is not stored");
    }

    #[test]
    fn node_port_already_taken_is_rejected() {
        let mut api = ApiServer::new(Default::default());
        api.apply_service(svc(ServiceType::NodePort, Some(31000))).unwrap();
        let mut other = svc(ServiceType::NodePort, Some(31000));
        other.name = "api".into();
        let e = api.apply_service(other).unwrap_err();
        assert_eq!(e.to_string(), "Service \"api\" is invalid: spec.ports[0].nodePort: Invalid value: 31000: provided port is already allocated");
    }

    #[test]
    fn requested_port_is_honoured_and_kept_across_type_change() {
        let mut api = ApiServer::new(Default::default());
        let a = api.apply_service(svc(ServiceType::NodePort, Some(31000))).unwrap();
        assert_eq!(a.spec.ports[0].node_port, Some(31000));
        // Changing the type without naming the port keeps it.
        let b = api.apply_service(svc(ServiceType::LoadBalancer, None)).unwrap();
        assert_eq!(b.spec.ports[0].node_port, Some(31000));
        assert_eq!(a.spec.cluster_ip, b.spec.cluster_ip, "ClusterIP never changes on update");
        // Going back to ClusterIP frees the port for another Service.
        api.apply_service(svc(ServiceType::ClusterIP, None)).unwrap();
        let mut other = svc(ServiceType::NodePort, Some(31000));
        other.name = "api".into();
        assert!(api.apply_service(other).is_ok());
    }

    #[test]
    fn dynamic_allocation_is_in_range_stable_and_unique() {
        let mut api = ApiServer::new(Default::default());
        let mut ports = BTreeSet::new();
        let mut ips = BTreeSet::new();
        for i in 0..200 {
            let mut s = svc(ServiceType::NodePort, None);
            s.name = format!("svc{i}");
            let s = api.apply_service(s).unwrap();
            let np = s.spec.ports[0].node_port.unwrap();
            assert!(PortRange::DEFAULT.contains(np));
            assert!(ports.insert(np), "node port {np} handed out twice");
            let ip = s.spec.cluster_ip.unwrap();
            assert!(api.config.service_cidr.contains(ip));
            assert!(ips.insert(ip), "cluster IP {ip} handed out twice");
        }
        let mut again = ApiServer::new(Default::default());
        let first = again.apply_service({
            let mut s = svc(ServiceType::NodePort, None);
            s.name = "svc0".into();
            s
        });
        assert!(ports.contains(&first.unwrap().spec.ports[0].node_port.unwrap()));
    }

    #[test]
    fn small_range_fills_up_with_a_clear_error() {
        let mut api = ApiServer::new(ApiServerConfig { node_port_range: PortRange { first: 30000, last: 30001 }, ..Default::default() });
        for i in 0..2 {
            let mut s = svc(ServiceType::NodePort, None);
            s.name = format!("s{i}");
            api.apply_service(s).unwrap();
        }
        let e = api.apply_service(svc(ServiceType::NodePort, None)).unwrap_err();
        assert!(e.to_string().contains("failed to allocate a nodePort: range is full"), "{e}");
    }

    #[test]
    fn cluster_ip_outside_range_and_node_port_on_cluster_ip_type() {
        let mut api = ApiServer::new(Default::default());
        let mut s = svc(ServiceType::ClusterIP, Some(31000));
        s.spec.cluster_ip = Some(Ipv4Addr::new(10, 0, 0, 1));
        let e = api.apply_service(s).unwrap_err();
        assert_eq!(e.to_string(), "Service \"web\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'");
        let mut s = svc(ServiceType::ClusterIP, None);
        s.spec.cluster_ip = Some(Ipv4Addr::new(10, 0, 0, 1));
        let e = api.apply_service(s).unwrap_err();
        assert!(e.to_string().ends_with("provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12"), "{e}");
    }

    #[test]
    fn multiple_errors_are_listed_in_brackets() {
        let mut api = ApiServer::new(Default::default());
        // Validation runs before allocation, so the out-of-range node port
        // is not reported until these are fixed, as in the API server.
        let mut s = svc(ServiceType::NodePort, Some(1));
        s.spec.ports[0].port = 0;
        s.spec.ports[0].target_port = 0;
        let e = api.apply_service(s).unwrap_err().to_string();
        assert_eq!(
            e,
            "Service \"web\" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive]"
        );
    }

    #[test]
    fn endpoint_slice_follows_selector_and_readiness() {
        let mut api = ApiServer::new(Default::default());
        let pod = |name: &str, ip: [u8; 4], app: &str, ready| Pod {
            name: name.into(),
            namespace: "default".into(),
            labels: [("app".to_string(), app.to_string())].into(),
            node_name: "node-1".into(),
            ip: ip.into(),
            container_port: 8080,
            port_name: None,
            ready,
        };
        api.pods = vec![
            pod("b", [10, 244, 3, 9], "web", true),
            pod("a", [10, 244, 1, 5], "web", true),
            pod("c", [10, 244, 2, 2], "web", false),
            pod("d", [10, 244, 2, 3], "db", true),
        ];
        let s = api.apply_service(svc(ServiceType::ClusterIP, None)).unwrap();
        let slice = api.endpoint_slice(&s).unwrap();
        let ips: Vec<String> = slice.endpoints.iter().map(|e| format!("{}:{}", e.ip, e.ready)).collect();
        assert_eq!(ips, ["10.244.1.5:true", "10.244.2.2:false", "10.244.3.9:true"]);
        let ready: Vec<String> = slice.ready_addrs(None).iter().map(|(a, _)| a.to_string()).collect();
        assert_eq!(ready, ["10.244.1.5:8080", "10.244.3.9:8080"]);
    }
}

#[cfg(test)]
mod stored_service_tests {
    use super::*;
    use crate::api::{ServicePort, ServiceSpec};
    use crate::net::ip;

    fn svc(name: &str, type_: ServiceType) -> Service {
        Service {
            name: name.into(),
            namespace: "default".into(),
            annotations: Default::default(),
            spec: ServiceSpec {
                type_,
                ports: vec![ServicePort { name: None, protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: None }],
                ..Default::default()
            },
            status: Default::default(),
            created: None,
        }
    }

    fn message(svc: Service) -> String {
        admit_stored_services(vec![svc], &ApiServerConfig::default()).unwrap_err().to_string()
    }

    #[test]
    fn range_names_and_type_combinations_are_checked() {
        let mut s = svc("web", ServiceType::NodePort);
        s.spec.ports[0].node_port = Some(29000);
        assert_eq!(
            message(s),
            "Service \"web\" is invalid: spec.ports[0].nodePort: Invalid value: 29000: provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
        let mut s = svc("web", ServiceType::LoadBalancer);
        s.spec.headless = true;
        assert_eq!(message(s), "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for LoadBalancer services");
        assert!(message(svc("Web", ServiceType::ClusterIP)).starts_with("Service \"Web\" is invalid: metadata.name: Invalid value: \"Web\": a DNS-1035 label"));
        let mut s = svc("docs", ServiceType::ExternalName);
        s.spec.external_name = Some("Not_A_Name".into());
        assert!(message(s).contains("spec.externalName: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"));
        let s = svc("docs", ServiceType::ExternalName);
        let e = admit_stored_services(vec![s], &ApiServerConfig::default()).unwrap_err();
        assert_eq!((e.causes[0].field.as_str(), e.causes[0].kind, e.causes.len()), ("spec.externalName", FieldErrorKind::Required, 1));
        let mut s = svc("docs", ServiceType::ExternalName);
        s.spec.external_name = Some("docs.example.com.".into());
        s.spec.cluster_ip = Some(ip(10, 96, 0, 9));
        assert_eq!(message(s), "Service \"docs\" is invalid: spec.clusterIPs: Forbidden: may not be set for ExternalName services");
    }

    #[test]
    fn headless_services_need_no_ports_or_address() {
        let mut s = svc("db", ServiceType::ClusterIP);
        s.spec.headless = true;
        s.spec.ports.clear();
        let out = admit_stored_services(vec![s], &ApiServerConfig::default()).unwrap();
        assert_eq!(out.services[0].spec.cluster_ip, None);
    }

    fn admit(services: Vec<Service>) -> Admitted {
        admit_stored_services(services, &ApiServerConfig::default()).expect("admitted")
    }

    #[test]
    fn a_shared_cluster_ip_is_a_warning_and_strict_refuses_it() {
        let mut a = svc("a", ServiceType::ClusterIP);
        a.spec.cluster_ip = Some(ip(10, 9, 8, 7));
        let mut b = svc("b", ServiceType::ClusterIP);
        b.spec.cluster_ip = Some(ip(10, 9, 8, 7));
        let out = admit(vec![a.clone(), b.clone()]);
        assert_eq!(out.services.iter().map(ip_of).collect::<Vec<_>>(), [ip(10, 9, 8, 7), ip(10, 9, 8, 7)], "both keep the stored address");
        assert_eq!(
            out.warnings,
            [StoredWarning::ClusterIpInUse { service: ObjectRef::new("default", "b"), ip: ip(10, 9, 8, 7), holder: ObjectRef::new("default", "a") }]
        );
        assert_eq!(
            out.strict().unwrap_err().to_string(),
            "Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.9.8.7\"}: failed to allocate IP 10.9.8.7: provided IP is already allocated"
        );
        // The kubernetes Service's address, reserved by the allocator, is no clash by itself.
        a.spec.cluster_ip = Some(ip(10, 96, 0, 1));
        assert!(admit(vec![a.clone()]).warnings.is_empty());
        b.spec.cluster_ip = Some(ip(10, 96, 0, 1));
        assert_eq!(admit(vec![a, b]).warnings.len(), 1, "but two Services on it are");
    }

    #[test]
    fn shared_node_ports_are_warnings_charged_to_the_later_service() {
        let mut a = svc("a", ServiceType::NodePort);
        a.spec.cluster_ip = Some(ip(10, 96, 0, 50));
        a.spec.ports[0].node_port = Some(31000);
        let mut b = svc("b", ServiceType::NodePort);
        b.spec.ports[0].node_port = Some(31000);
        let out = admit(vec![a.clone(), b]);
        assert_eq!(out.services[1].spec.ports[0].node_port, Some(31000));
        assert_eq!(
            out.warnings,
            [StoredWarning::NodePortInUse {
                service: ObjectRef::new("default", "b"),
                field: "spec.ports[0].nodePort".into(),
                port: 31000,
                holder: ObjectRef::new("default", "a"),
                holder_field: "spec.ports[0].nodePort".into(),
            }]
        );
        assert_eq!(out.strict().unwrap_err().to_string(), "Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: 31000: provided port is already allocated");

        // A health check node port that repeats a node port, its own or another's.
        let mut local = svc("local", ServiceType::LoadBalancer);
        local.spec.external_traffic_policy = crate::api::TrafficPolicy::Local;
        local.spec.ports[0].node_port = Some(31500);
        local.spec.health_check_node_port = Some(31500);
        let out = admit(vec![a.clone(), local.clone()]);
        assert_eq!(out.warnings.len(), 1);
        assert!(matches!(&out.warnings[0], StoredWarning::NodePortInUse { field, holder, .. } if field == "spec.healthCheckNodePort" && holder.name == "local"));
        local.spec.health_check_node_port = Some(31000);
        let e = admit(vec![a, local]).strict().unwrap_err();
        assert_eq!(e.to_string(), "Service \"local\" is invalid: spec.healthCheckNodePort: Invalid value: 31000: provided port is already allocated");
    }

    #[test]
    fn node_port_numbers_clash_across_protocols_but_not_within_a_service() {
        let mut dns = svc("dns", ServiceType::NodePort);
        dns.spec.ports = vec![
            ServicePort { name: Some("udp".into()), protocol: Protocol::Udp, port: 53, target_port: 53, node_port: Some(30053) },
            ServicePort { name: Some("tcp".into()), protocol: Protocol::Tcp, port: 53, target_port: 53, node_port: Some(30053) },
        ];
        assert!(admit(vec![dns.clone()]).warnings.is_empty(), "one Service, one number, two protocols");
        let mut other = svc("other", ServiceType::NodePort);
        other.spec.ports[0].node_port = Some(30053);
        let out = admit(vec![dns, other]);
        assert!(matches!(&out.warnings[..], [StoredWarning::NodePortInUse { service, holder_field, .. }] if service.name == "other" && holder_field == "spec.ports[0].nodePort"));
        // Allocation skips a number another protocol holds.
        let config = ApiServerConfig { node_port_range: PortRange { first: 30000, last: 30001 }, ..Default::default() };
        for held in [30000, 30001] {
            let mut tcp = svc("tcp", ServiceType::NodePort);
            tcp.spec.ports[0].node_port = Some(held);
            let mut udp = svc("udp", ServiceType::NodePort);
            udp.spec.ports[0].protocol = Protocol::Udp;
            let out = admit_stored_services(vec![tcp, udp], &config).unwrap();
            assert_eq!(out.services[1].spec.ports[0].node_port, Some(60001 - held));
        }
    }

    #[test]
    fn a_health_check_port_the_api_server_forbids_is_a_warning() {
        let mut s = svc("web", ServiceType::LoadBalancer);
        s.spec.health_check_node_port = Some(31999);
        let out = admit(vec![s]);
        assert_eq!(out.services[0].spec.health_check_node_port, Some(31999), "kept as stored; kube-proxy ignores it");
        assert_eq!(out.warnings, [StoredWarning::HealthCheckNodePortNotAllowed { service: ObjectRef::new("default", "web"), port: 31999 }]);
        assert_eq!(
            out.strict().unwrap_err().causes[0].to_string(),
            "spec.healthCheckNodePort: Invalid value: 31999: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
        );
        // It is not taken from the allocator: another Service may hold it.
        let mut other = svc("other", ServiceType::NodePort);
        other.spec.ports[0].node_port = Some(31999);
        let mut s = svc("web", ServiceType::ClusterIP);
        s.spec.health_check_node_port = Some(31999);
        assert_eq!(admit(vec![s, other]).warnings.len(), 1);
    }

    #[test]
    fn strict_names_every_problem_of_the_first_service() {
        let mut a = svc("a", ServiceType::NodePort);
        a.spec.cluster_ip = Some(ip(10, 96, 0, 50));
        a.spec.ports[0].node_port = Some(31000);
        let mut b = a.clone();
        b.name = "b".into();
        let mut c = a.clone();
        c.name = "c".into();
        let out = admit(vec![a, b, c]);
        assert_eq!(out.warnings.len(), 4, "two clashes each for b and c");
        let e = out.strict().unwrap_err();
        assert_eq!((e.name.as_str(), e.causes.len()), ("b", 2));
    }

    #[test]
    fn gaps_are_allocated_around_stored_values() {
        let mut a = svc("a", ServiceType::NodePort);
        a.spec.cluster_ip = Some(ip(10, 96, 0, 50));
        a.spec.ports[0].node_port = Some(31000);
        let d = svc("d", ServiceType::LoadBalancer);
        let out = admit(vec![a, d]).services;
        let ip = out[1].spec.cluster_ip.expect("allocated");
        assert_ne!(ip, ip_of(&out[0]));
        let np = out[1].spec.ports[0].node_port.expect("allocated");
        assert!(PortRange::DEFAULT.contains(np) && np != 31000);
        assert_eq!(out[1].spec.health_check_node_port, None, "only for externalTrafficPolicy Local");

        let mut local = svc("local", ServiceType::LoadBalancer);
        local.spec.external_traffic_policy = crate::api::TrafficPolicy::Local;
        let out = admit(vec![local]).services;
        let hc = out[0].spec.health_check_node_port.expect("health check node port allocated");
        assert!(PortRange::DEFAULT.contains(hc) && Some(hc) != out[0].spec.ports[0].node_port);
    }

    #[test]
    fn out_of_range_and_duplicates_inside_one_service_stay_errors() {
        let mut s = svc("web", ServiceType::NodePort);
        s.spec.ports.push(ServicePort { name: Some("b".into()), protocol: Protocol::Tcp, port: 81, target_port: 81, node_port: Some(31000) });
        s.spec.ports[0].name = Some("a".into());
        s.spec.ports[0].node_port = Some(31000);
        assert_eq!(message(s), "Service \"web\" is invalid: spec.ports[1].nodePort: Invalid value: 31000: provided port is already allocated");
        let mut s = svc("local", ServiceType::LoadBalancer);
        s.spec.health_check_node_port = Some(1000);
        assert!(message(s).contains("spec.healthCheckNodePort: Invalid value: 1000: provided port is not in the valid range"));
    }

    fn ip_of(s: &Service) -> Ipv4Addr {
        s.spec.cluster_ip.unwrap()
    }

    #[test]
    fn dns_name_rules() {
        assert!(dns1123_label_errors("http-2").is_empty());
        assert_eq!(dns1123_label_errors("-x").len(), 1);
        assert_eq!(dns1123_label_errors(&"a".repeat(64)), ["must be no more than 63 characters"]);
        assert!(dns1123_subdomain_errors("docs.example.com").is_empty());
        assert!(!dns1123_subdomain_errors("docs..example.com").is_empty());
        assert!(dns1035_label_errors("web").is_empty());
        assert!(!dns1035_label_errors("1web").is_empty());
    }
}

#[cfg(test)]
mod display_tests {
    use super::*;

    #[test]
    fn required_value_has_no_trailing_separator() {
        let e = FieldError { field: "spec.ports".into(), kind: FieldErrorKind::Required, value: None, detail: String::new() };
        assert_eq!(e.to_string(), "spec.ports: Required value");
    }
}
