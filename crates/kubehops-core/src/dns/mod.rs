//! CoreDNS's `kubernetes` plugin: what a Pod's DNS query for a Service name
//! is answered with.
//!
//! The model follows the plugin's steps. A name inside the cluster domain is
//! split into `[endpoint | _port._proto].service.namespace.svc`; the
//! matching Services and endpoints become a list of *targets* (an address or
//! an external name, with a port); the query type then turns targets into
//! records. A ClusterIP Service answers with its cluster IP, a headless one
//! with its ready endpoints, an ExternalName one with a CNAME. A name that
//! matches nothing is NXDOMAIN; a name that exists without records of the
//! asked type is NOERROR with an empty answer (NODATA).
//!
//! An endpoint is named by its `hostname` when it has one, else by its
//! dashed address (`10-244-1-7`), as the plugin's `endpointHostname` does
//! with `endpoint_pod_names` off. Answers keep the question's case; names
//! the plugin builds from objects (SRV targets) keep the objects' case with
//! the zone as asked.
//!
//! [`ClusterDns::search`] adds the Pod's side: the search path and
//! `ndots:5` that kubelet writes into every Pod's resolv.conf.
//!
//! Not modelled: forwarding names outside the cluster domain upstream,
//! wildcard queries (`*`, `any`), PTR and AAAA records, the IPv6 half of a
//! dual-stack Service (an SRV answer for one carries a [`DnsWarning`]), the
//! `endpoint_pod_names` option, and the SOA record of negative answers.

use crate::api::{Endpoint, EndpointSlice, ObjectRef, Service, ServiceType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::net::Ipv4Addr;

/// kubelet's default `--cluster-domain`.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// The TTL of every answer. The plugin's own default is 5 seconds, but the
/// Corefile that kubeadm installs (and most distributions copy) sets
/// `ttl 30` in the `kubernetes` block, so that is what Pods usually see.
pub const DEFAULT_TTL: u32 = 30;

/// `options ndots:5` in every Pod's resolv.conf: names with fewer dots are
/// tried with the search path first.
pub const NDOTS: usize = 5;

/// How deep an in-zone CNAME chain is followed before giving up.
const MAX_CNAME_DEPTH: usize = 8;

/// Namespaces every cluster has, whether or not an object in them was given.
const BUILTIN_NAMESPACES: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsConfig {
    /// The zone the plugin is authoritative for (`cluster.local`).
    pub zone: String,
    pub ttl: u32,
}

impl Default for DnsConfig {
    fn default() -> Self {
        DnsConfig { zone: CLUSTER_DOMAIN.into(), ttl: DEFAULT_TTL }
    }
}

/// The query types the model answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QType {
    A,
    Srv,
    Cname,
}

impl QType {
    /// Parses `A`, `SRV` or `CNAME`, in any case.
    pub fn parse(s: &str) -> Option<QType> {
        match s.to_ascii_uppercase().as_str() {
            "A" => Some(QType::A),
            "SRV" => Some(QType::Srv),
            "CNAME" => Some(QType::Cname),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QType::A => "A",
            QType::Srv => "SRV",
            QType::Cname => "CNAME",
        }
    }
}

impl fmt::Display for QType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The data of one resource record. Names are fully qualified, with the
/// trailing dot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RData {
    A(Ipv4Addr),
    Cname(String),
    Srv { priority: u16, weight: u16, port: u16, target: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The owner name, fully qualified with the trailing dot.
    pub name: String,
    pub ttl: u32,
    pub data: RData,
}

impl Record {
    /// The record's type and data, without owner and TTL: `A 10.96.0.50`.
    pub fn short(&self) -> String {
        match &self.data {
            RData::A(ip) => format!("A {ip}"),
            RData::Cname(t) => format!("CNAME {t}"),
            RData::Srv { port, target, .. } => format!("SRV {port} {target}"),
        }
    }
}

impl fmt::Display for Record {
    /// One line of dig's answer section: `web.default.svc.cluster.local. 30 IN A 10.96.0.50`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} IN ", self.name, self.ttl)?;
        match &self.data {
            RData::A(ip) => write!(f, "A {ip}"),
            RData::Cname(t) => write!(f, "CNAME {t}"),
            RData::Srv { priority, weight, port, target } => write!(f, "SRV {priority} {weight} {port} {target}"),
        }
    }
}

/// The response code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rcode {
    /// The name exists; the answer may still be empty (NODATA).
    NoError,
    /// The name does not exist.
    NxDomain,
}

impl Rcode {
    pub fn as_str(self) -> &'static str {
        match self {
            Rcode::NoError => "NOERROR",
            Rcode::NxDomain => "NXDOMAIN",
        }
    }
}

/// CoreDNS's reply to one question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The question, fully qualified with the trailing dot, in its own case.
    pub name: String,
    pub qtype: QType,
    pub rcode: Rcode,
    pub answer: Vec<Record>,
    /// Addresses of SRV targets.
    pub additional: Vec<Record>,
    /// Where this answer may differ from CoreDNS's because the model
    /// leaves something out. Not part of the DNS reply.
    pub warnings: Vec<DnsWarning>,
}

/// A known gap between the model's answer and CoreDNS's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DnsWarning {
    /// An SRV question about a dual-stack Service. CoreDNS gives every
    /// address of both families a share of the weight (and AAAA records in
    /// the additional section); the model has the IPv4 addresses only, so
    /// its weights are larger than CoreDNS's.
    DualStackSrv { service: ObjectRef },
}

/// A resolver's walk through the search path for one name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lookup {
    /// The names inside the cluster domain that were asked, in order, up to
    /// the one that answered.
    pub tried: Vec<String>,
    /// Names outside the cluster domain the resolver would have sent on the
    /// way; CoreDNS forwards those upstream, which is not modelled.
    pub upstream: Vec<String>,
    /// The response the resolver returns: the first with records, else the
    /// first NODATA, else the last NXDOMAIN. `None` when no name was inside
    /// the cluster domain.
    pub response: Option<Response>,
}

/// Where a record points: an address, or a name for ExternalName Services.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Host {
    Ip(Ipv4Addr),
    Name(String),
}

/// One Service port or endpoint port that matched the question (CoreDNS's
/// `msg.Service`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Target {
    /// The name of the thing itself: the Service's or the endpoint's FQDN,
    /// with the trailing dot.
    key: String,
    host: Host,
    /// `None` for ExternalName Services and for endpoints of a slice with no ports.
    port: Option<u16>,
}

/// A parsed question name, as the plugin's `parseRequest` splits it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Request {
    /// The zone itself, `svc.<zone>` or `pod.<zone>`: exists, no records.
    Apex,
    /// Not a name the plugin can have.
    Invalid,
    /// `namespace.svc.<zone>` or `namespace.pod.<zone>`.
    Namespace(String),
    /// `dashed-ip.namespace.pod.<zone>`.
    Pod { name: String, namespace: String },
    /// `[endpoint.| _port._proto.]service.namespace.svc.<zone>`.
    Service { namespace: String, service: String, endpoint: Option<String>, port: Option<String>, proto: Option<String> },
}

/// The cluster as CoreDNS's informers see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterDns {
    pub config: DnsConfig,
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
    namespaces: BTreeSet<String>,
}

impl ClusterDns {
    /// The namespaces that exist are the built-in ones and every namespace
    /// an object was given in; add others with [`ClusterDns::add_namespace`].
    pub fn new(config: DnsConfig, services: &[Service], slices: &[EndpointSlice]) -> ClusterDns {
        let mut namespaces: BTreeSet<String> = BUILTIN_NAMESPACES.iter().map(|s| s.to_string()).collect();
        namespaces.extend(services.iter().map(|s| s.namespace.clone()));
        namespaces.extend(slices.iter().map(|s| s.namespace.clone()));
        ClusterDns { config, services: services.to_vec(), slices: slices.to_vec(), namespaces }
    }

    pub fn add_namespace(&mut self, namespace: &str) {
        self.namespaces.insert(namespace.to_string());
    }

    /// The search list of a Pod in `namespace`: `ns.svc.<zone> svc.<zone> <zone>`.
    pub fn search_path(&self, namespace: &str) -> Vec<String> {
        let z = &self.config.zone;
        vec![format!("{namespace}.svc.{z}"), format!("svc.{z}"), z.clone()]
    }

    /// The fully qualified names a Pod's resolver tries for `name`, in
    /// order: a name ending in a dot is tried alone; one with fewer than
    /// `ndots` dots gets the search path first; any other is tried as given
    /// first.
    pub fn candidates(&self, name: &str, namespace: &str) -> Vec<String> {
        if name.ends_with('.') {
            return vec![name.to_string()];
        }
        let searched = self.search_path(namespace).into_iter().map(|d| format!("{name}.{d}."));
        let absolute = format!("{name}.");
        if name.matches('.').count() < NDOTS {
            searched.chain(std::iter::once(absolute)).collect()
        } else {
            std::iter::once(absolute).chain(searched).collect()
        }
    }

    /// Resolves `name` as a Pod in `namespace` would: through the search
    /// path, moving on after NXDOMAIN and after an empty answer, as glibc does.
    pub fn search(&self, name: &str, qtype: QType, namespace: &str) -> Lookup {
        let mut tried = Vec::new();
        let mut upstream = Vec::new();
        let mut nodata: Option<Response> = None;
        let mut last: Option<Response> = None;
        for c in self.candidates(name, namespace) {
            let Some(r) = self.query(&c, qtype) else {
                upstream.push(c);
                continue;
            };
            tried.push(c);
            if r.rcode == Rcode::NoError && !r.answer.is_empty() {
                return Lookup { tried, upstream, response: Some(r) };
            }
            if r.rcode == Rcode::NoError {
                nodata.get_or_insert(r);
            } else {
                last = Some(r);
            }
        }
        Lookup { tried, upstream, response: nodata.or(last) }
    }

    /// Answers one fully qualified question (the trailing dot is optional).
    /// `None` when the name is outside the cluster domain: the plugin does
    /// not answer it and CoreDNS forwards it upstream.
    /// The owner names of the answer keep the question's case, as CoreDNS's do.
    pub fn query(&self, name: &str, qtype: QType) -> Option<Response> {
        let fqdn = fqdn(name);
        // Matching ignores case; the plugin parses the lowered name too.
        let request = self.parse(&fqdn.to_ascii_lowercase())?;
        let mut resp = Response { name: fqdn.clone(), qtype, rcode: Rcode::NoError, answer: Vec::new(), additional: Vec::new(), warnings: Vec::new() };
        let targets = match self.targets(&request, &self.zone_as_asked(&fqdn)) {
            Ok(t) => t,
            Err(NameError) => {
                resp.rcode = Rcode::NxDomain;
                return Some(resp);
            }
        };
        match qtype {
            QType::A => resp.answer = self.a_records(&fqdn, &targets, 0),
            QType::Cname => {
                if let Some(Target { host: Host::Name(n), .. }) = targets.first() {
                    resp.answer.push(self.record(&fqdn, RData::Cname(self::fqdn(n))));
                }
            }
            QType::Srv => {
                let (answer, additional) = self.srv_records(&fqdn, targets);
                resp.answer = answer;
                resp.additional = additional;
                resp.warnings = self.dual_stack_services(&request).map(|service| DnsWarning::DualStackSrv { service }).collect();
            }
        }
        Some(resp)
    }

    /// The zone as the question spells it (`cLuStEr.LoCaL`): CoreDNS keeps
    /// that spelling in the names it builds. `fqdn` must be inside the zone.
    fn zone_as_asked(&self, fqdn: &str) -> String {
        let bare = fqdn.trim_end_matches('.');
        let zone = self.config.zone.trim_end_matches('.');
        // The zone is ASCII, so its length in the question is its own.
        bare.len().checked_sub(zone.len()).and_then(|at| bare.get(at..)).unwrap_or(zone).to_string()
    }

    /// The dual-stack Services a question names.
    fn dual_stack_services<'a>(&'a self, request: &'a Request) -> impl Iterator<Item = ObjectRef> + 'a {
        let named = match request {
            Request::Service { namespace, service, .. } => Some((namespace, service)),
            _ => None,
        };
        self.services
            .iter()
            .filter(move |s| named.is_some_and(|(ns, name)| s.namespace == *ns && s.name.eq_ignore_ascii_case(name)))
            .filter(|s| s.spec.is_dual_stack())
            .map(Service::object_ref)
    }

    fn record(&self, name: &str, data: RData) -> Record {
        Record { name: name.to_string(), ttl: self.config.ttl, data }
    }

    /// Splits a name inside the zone; `None` for names outside it.
    fn parse(&self, fqdn: &str) -> Option<Request> {
        let zone = self.config.zone.trim_end_matches('.').to_ascii_lowercase();
        let bare = fqdn.trim_end_matches('.');
        let base = if bare == zone {
            ""
        } else {
            bare.strip_suffix(&zone)?.strip_suffix('.')?
        };
        if base.is_empty() || base == "svc" || base == "pod" {
            return Some(Request::Apex);
        }
        let mut segs: Vec<&str> = base.split('.').collect();
        if segs.iter().any(|s| s.is_empty()) {
            return Some(Request::Invalid);
        }
        let kind = segs.pop().unwrap_or_default();
        if kind != "svc" && kind != "pod" {
            return Some(Request::Invalid);
        }
        let Some(namespace) = segs.pop().map(String::from) else {
            return Some(Request::Apex);
        };
        let Some(service) = segs.pop().map(String::from) else {
            return Some(Request::Namespace(namespace));
        };
        if kind == "pod" {
            return Some(if segs.is_empty() { Request::Pod { name: service, namespace } } else { Request::Invalid });
        }
        let (endpoint, port, proto) = match segs.as_slice() {
            [] => (None, None, None),
            [e] => (Some(e.to_string()), None, None),
            [p, t] => (None, Some(strip_underscore(p)), Some(strip_underscore(t))),
            _ => return Some(Request::Invalid),
        };
        Some(Request::Service { namespace, service, endpoint, port, proto })
    }

    /// What matched the request (the plugin's `Records`), or a name error.
    /// Target names end in `zone`, spelled as the question spells it.
    fn targets(&self, request: &Request, zone: &str) -> Result<Vec<Target>, NameError> {
        match request {
            Request::Apex => Ok(Vec::new()),
            Request::Invalid => Err(NameError),
            Request::Namespace(ns) => {
                if self.namespaces.contains(ns) {
                    Ok(Vec::new())
                } else {
                    Err(NameError)
                }
            }
            Request::Pod { name, namespace } => {
                // `pods insecure` (kubeadm's Corefile): any dashed IPv4
                // address in an existing namespace answers with itself.
                if !self.namespaces.contains(namespace) {
                    return Err(NameError);
                }
                let ip: Ipv4Addr = name.replace('-', ".").parse().map_err(|_| NameError)?;
                let key = format!("{name}.{namespace}.pod.{zone}.");
                Ok(vec![Target { key, host: Host::Ip(ip), port: None }])
            }
            Request::Service { namespace, service, endpoint, port, proto } => {
                self.find_services(namespace, service, endpoint.as_deref(), port.as_deref(), proto.as_deref(), zone)
            }
        }
    }

    /// The plugin's `findServices`.
    fn find_services(&self, ns: &str, name: &str, endpoint: Option<&str>, port: Option<&str>, proto: Option<&str>, zone: &str) -> Result<Vec<Target>, NameError> {
        if !self.namespaces.contains(ns) {
            return Err(NameError);
        }
        let mut found = Vec::new();
        let mut matched = false;
        for svc in self.services.iter().filter(|s| s.namespace == ns && s.name.eq_ignore_ascii_case(name)) {
            let svc_fqdn = format!("{}.{}.svc.{zone}.", svc.name, svc.namespace);
            // An ExternalName Service has no endpoints and no port names:
            // with labels in front of it, the name does not exist.
            if svc.spec.type_ == ServiceType::ExternalName {
                let bare = endpoint.is_none() && port.is_none() && proto.is_none();
                if let Some(ext) = svc.spec.external_name.as_deref().filter(|n| bare && !n.is_empty() && n.parse::<Ipv4Addr>().is_err()) {
                    matched = true;
                    found.push(Target { key: svc_fqdn.clone(), host: Host::Name(ext.to_ascii_lowercase()), port: None });
                }
                continue;
            }
            // An endpoint name, or any name of a headless Service, is
            // answered from the ready endpoints.
            if svc.spec.headless || endpoint.is_some() {
                matched |= self.endpoint_targets(svc, &svc_fqdn, endpoint, port, proto, &mut found);
                continue;
            }
            let Some(ip) = svc.spec.cluster_ip else { continue };
            for p in svc.spec.ports.iter().filter(|p| matches(port, p.name.as_deref().unwrap_or("")) && matches(proto, p.protocol.lower())) {
                matched = true;
                found.push(Target { key: svc_fqdn.clone(), host: Host::Ip(ip), port: Some(p.port) });
            }
        }
        if matched {
            Ok(found)
        } else {
            Err(NameError)
        }
    }

    /// Adds a target for each ready endpoint of `svc` and each of its
    /// ports that the question names; whether there was one.
    fn endpoint_targets(&self, svc: &Service, svc_fqdn: &str, endpoint: Option<&str>, port: Option<&str>, proto: Option<&str>, found: &mut Vec<Target>) -> bool {
        let mut matched = false;
        for slice in self.slices.iter().filter(|s| s.namespace == svc.namespace && s.service_name == svc.name) {
            // The ports asked for are the same for every endpoint of the slice.
            let ports: Vec<Option<u16>> = if slice.ports.is_empty() {
                (port.is_none() && proto.is_none()).then_some(None).into_iter().collect()
            } else {
                slice.ports.iter().filter(|p| matches(port, p.name.as_deref().unwrap_or("")) && matches(proto, p.protocol.lower())).map(|p| Some(p.port)).collect()
            };
            let Some((last, rest)) = ports.split_last() else { continue };
            for ep in slice.endpoints.iter().filter(|e| e.ready) {
                // The name is built once, in place: for a Service of
                // 100,000 endpoints the strings are most of the work.
                let mut key = String::with_capacity(16 + svc_fqdn.len());
                push_endpoint_label(&mut key, ep);
                if endpoint.is_some_and(|e| !e.eq_ignore_ascii_case(&key)) {
                    continue;
                }
                key.push('.');
                key.push_str(svc_fqdn);
                matched = true;
                found.extend(rest.iter().map(|&port| Target { key: key.clone(), host: Host::Ip(ep.ip), port }));
                found.push(Target { key, host: Host::Ip(ep.ip), port: *last });
            }
        }
        matched
    }

    /// A records for `qname` (the plugin's `A`): addresses once each; an
    /// external name as a CNAME, followed when it is inside the zone.
    fn a_records(&self, qname: &str, targets: &[Target], depth: usize) -> Vec<Record> {
        let mut out: Vec<Record> = Vec::with_capacity(targets.len());
        // The addresses already answered, so de-duplication stays linear.
        let mut seen: std::collections::HashSet<Ipv4Addr> = std::collections::HashSet::with_capacity(targets.len());
        for t in targets {
            match &t.host {
                Host::Ip(ip) => {
                    if seen.insert(*ip) {
                        out.push(self.record(qname, RData::A(*ip)));
                    }
                }
                Host::Name(n) => {
                    let target = fqdn(n);
                    let cname = self.record(qname, RData::Cname(target.clone()));
                    match self.parse(&target) {
                        // Inside the zone: the CNAME is given only together
                        // with what it leads to.
                        Some(req) => {
                            if depth >= MAX_CNAME_DEPTH {
                                continue;
                            }
                            let Ok(next) = self.targets(&req, &self.zone_as_asked(&target)) else { continue };
                            let more = self.a_records(&target, &next, depth + 1);
                            if !more.is_empty() {
                                out.push(cname);
                                out.extend(more);
                            }
                        }
                        // Outside: CoreDNS adds what upstream says about
                        // the target, which is not modelled.
                        None => out.push(cname),
                    }
                }
            }
        }
        out
    }

    /// SRV records (the plugin's `SRV`): every target has priority 0 and an
    /// equal share of 100 as weight; each target name's address goes in the
    /// additional section.
    fn srv_records(&self, qname: &str, targets: Vec<Target>) -> (Vec<Record>, Vec<Record>) {
        // SRV for ExternalName Services is not implemented by the plugin.
        let count = targets.iter().filter(|t| matches!(t.host, Host::Ip(_))).count();
        let total = 100.0 * count as f64;
        // As in the plugin, a share that rounds down to 0 is given as 1.
        let weight = if count == 0 { 0 } else { ((100.0 / total * 100.0).floor() as u16).max(1) };
        let (mut answer, mut additional) = (Vec::with_capacity(count), Vec::with_capacity(count));
        let fresh = first_in_each_section(&targets);
        // Each target's name goes into the records it makes, copied only
        // when it makes both.
        for (t, (to_answer, to_additional)) in targets.into_iter().zip(fresh) {
            let (Host::Ip(ip), Some(port)) = (t.host, t.port) else { continue };
            let srv = |target| self.record(qname, RData::Srv { priority: 0, weight, port, target });
            match (to_answer, to_additional) {
                (true, true) => {
                    answer.push(srv(t.key.clone()));
                    additional.push(Record { name: t.key, ttl: self.config.ttl, data: RData::A(ip) });
                }
                (true, false) => answer.push(srv(t.key)),
                (false, true) => additional.push(Record { name: t.key, ttl: self.config.ttl, data: RData::A(ip) }),
                (false, false) => {}
            }
        }
        (answer, additional)
    }
}

/// For each target, whether it is the first with its SRV record (port and
/// name) and the first with its address record (name and address): the
/// records differ only in these, so later ones are duplicates. One pass
/// with a set per section, so de-duplication stays linear.
fn first_in_each_section(targets: &[Target]) -> Vec<(bool, bool)> {
    let mut in_answer: std::collections::HashSet<(u16, &str)> = std::collections::HashSet::with_capacity(targets.len());
    let mut in_additional: std::collections::HashSet<(&str, Ipv4Addr)> = std::collections::HashSet::with_capacity(targets.len());
    targets
        .iter()
        .map(|t| match (&t.host, t.port) {
            (Host::Ip(ip), Some(port)) => (in_answer.insert((port, &t.key)), in_additional.insert((&t.key, *ip))),
            _ => (false, false),
        })
        .collect()
}

/// Appends the label an endpoint answers to under its Service (the
/// plugin's `endpointHostname`): its hostname, else its address with
/// dashes (`10-244-1-7`).
fn push_endpoint_label(out: &mut String, ep: &Endpoint) {
    if let Some(h) = ep.hostname.as_deref().filter(|h| !h.is_empty()) {
        out.push_str(h);
        return;
    }
    // At most 15 ASCII bytes (`255-255-255-255`), spelt on the stack and
    // appended at once, without the formatting machinery.
    let (mut buf, mut len) = ([0u8; 15], 0);
    for (i, octet) in ep.ip.octets().into_iter().enumerate() {
        let digits = [octet / 100, octet / 10 % 10, octet % 10];
        let skip = if octet >= 100 { 0 } else if octet >= 10 { 1 } else { 2 };
        if i > 0 {
            buf[len] = b'-';
            len += 1;
        }
        for d in &digits[skip..] {
            buf[len] = b'0' + d;
            len += 1;
        }
    }
    out.push_str(std::str::from_utf8(&buf[..len]).unwrap_or_default());
}

/// The plugin's "no such name" (NXDOMAIN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NameError;

/// A port or protocol label matches when it was not asked for, or equals
/// the value ignoring case.
fn matches(asked: Option<&str>, have: &str) -> bool {
    asked.is_none_or(|a| a.eq_ignore_ascii_case(have))
}

fn strip_underscore(s: &str) -> String {
    s.strip_prefix('_').unwrap_or(s).to_string()
}

/// Appends the trailing dot if it is missing.
fn fqdn(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Endpoint, EndpointPort, ServicePort, ServiceSpec};
    use crate::net::{ip, Protocol};

    fn port(name: Option<&str>, p: u16, proto: Protocol) -> ServicePort {
        ServicePort { name: name.map(String::from), protocol: proto, port: p, target_port: 8080, node_port: None }
    }

    fn svc(name: &str, ns: &str, spec: ServiceSpec) -> Service {
        Service { name: name.into(), namespace: ns.into(), annotations: Default::default(), spec, status: Default::default(), created: None }
    }

    fn ep(a: Ipv4Addr, ready: bool) -> Endpoint {
        Endpoint { ip: a, node_name: "node-1".into(), ready, serving: ready, terminating: false, target_ref: String::new(), hostname: None }
    }

    fn cluster() -> ClusterDns {
        let services = vec![
            svc(
                "web",
                "default",
                ServiceSpec {
                    ports: vec![port(Some("http"), 80, Protocol::Tcp), port(Some("metrics"), 9090, Protocol::Tcp)],
                    cluster_ip: Some(ip(10, 96, 0, 50)),
                    ..Default::default()
                },
            ),
            svc("db", "data", ServiceSpec { ports: vec![port(Some("pg"), 5432, Protocol::Tcp)], headless: true, ..Default::default() }),
            svc("empty", "data", ServiceSpec { ports: vec![port(None, 5432, Protocol::Tcp)], headless: true, ..Default::default() }),
            svc(
                "docs",
                "default",
                ServiceSpec { type_: ServiceType::ExternalName, external_name: Some("docs.example.com".into()), ..Default::default() },
            ),
            svc(
                "alias",
                "default",
                ServiceSpec { type_: ServiceType::ExternalName, external_name: Some("web.default.svc.cluster.local".into()), ..Default::default() },
            ),
            svc(
                "loop",
                "default",
                ServiceSpec { type_: ServiceType::ExternalName, external_name: Some("loop.default.svc.cluster.local".into()), ..Default::default() },
            ),
        ];
        let slices = vec![
            EndpointSlice {
                name: "db-1".into(),
                namespace: "data".into(),
                service_name: "db".into(),
                endpoints: vec![ep(ip(10, 244, 1, 7), true), ep(ip(10, 244, 2, 8), true), ep(ip(10, 244, 3, 9), false)],
                ports: vec![EndpointPort { name: Some("pg".into()), protocol: Protocol::Tcp, port: 5432 }],
            },
            EndpointSlice {
                name: "web-1".into(),
                namespace: "default".into(),
                service_name: "web".into(),
                endpoints: vec![ep(ip(10, 244, 1, 5), true)],
                ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
            },
        ];
        ClusterDns::new(DnsConfig::default(), &services, &slices)
    }

    fn lines(rs: &[Record]) -> Vec<String> {
        rs.iter().map(|r| r.to_string()).collect()
    }

    #[test]
    fn cluster_ip_service_answers_its_cluster_ip_once() {
        let r = cluster().query("web.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!(r.rcode, Rcode::NoError);
        assert_eq!(lines(&r.answer), ["web.default.svc.cluster.local. 30 IN A 10.96.0.50"]);
    }

    #[test]
    fn headless_service_answers_ready_endpoints() {
        let r = cluster().query("db.data.svc.cluster.local.", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["db.data.svc.cluster.local. 30 IN A 10.244.1.7", "db.data.svc.cluster.local. 30 IN A 10.244.2.8"]);
        // A headless Service without ready endpoints does not exist for DNS.
        assert_eq!(cluster().query("empty.data.svc.cluster.local", QType::A).unwrap().rcode, Rcode::NxDomain);
    }

    #[test]
    fn endpoint_names_are_dashed_addresses() {
        let c = cluster();
        let r = c.query("10-244-2-8.db.data.svc.cluster.local", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["10-244-2-8.db.data.svc.cluster.local. 30 IN A 10.244.2.8"]);
        // Not ready: no name.
        assert_eq!(c.query("10-244-3-9.db.data.svc.cluster.local", QType::A).unwrap().rcode, Rcode::NxDomain);
        // Endpoint names work for ClusterIP Services too.
        let r = c.query("10-244-1-5.web.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["10-244-1-5.web.default.svc.cluster.local. 30 IN A 10.244.1.5"]);
    }

    #[test]
    fn srv_for_named_port_has_weight_100_and_the_address_as_additional() {
        let r = cluster().query("_http._tcp.web.default.svc.cluster.local", QType::Srv).unwrap();
        assert_eq!(lines(&r.answer), ["_http._tcp.web.default.svc.cluster.local. 30 IN SRV 0 100 80 web.default.svc.cluster.local."]);
        assert_eq!(lines(&r.additional), ["web.default.svc.cluster.local. 30 IN A 10.96.0.50"]);
        // The wrong protocol or an unknown port name is NXDOMAIN.
        assert_eq!(cluster().query("_http._udp.web.default.svc.cluster.local", QType::Srv).unwrap().rcode, Rcode::NxDomain);
        assert_eq!(cluster().query("_nope._tcp.web.default.svc.cluster.local", QType::Srv).unwrap().rcode, Rcode::NxDomain);
    }

    #[test]
    fn srv_weights_share_100() {
        // The bare name lists every port: two records, 50 each.
        let r = cluster().query("web.default.svc.cluster.local", QType::Srv).unwrap();
        assert_eq!(
            lines(&r.answer),
            [
                "web.default.svc.cluster.local. 30 IN SRV 0 50 80 web.default.svc.cluster.local.",
                "web.default.svc.cluster.local. 30 IN SRV 0 50 9090 web.default.svc.cluster.local."
            ]
        );
        assert_eq!(r.additional.len(), 1, "one address for one target name");
        // Headless: one record per ready endpoint, pointing at its own name.
        let r = cluster().query("_pg._tcp.db.data.svc.cluster.local", QType::Srv).unwrap();
        assert_eq!(
            lines(&r.answer),
            [
                "_pg._tcp.db.data.svc.cluster.local. 30 IN SRV 0 50 5432 10-244-1-7.db.data.svc.cluster.local.",
                "_pg._tcp.db.data.svc.cluster.local. 30 IN SRV 0 50 5432 10-244-2-8.db.data.svc.cluster.local."
            ]
        );
        assert_eq!(lines(&r.additional)[1], "10-244-2-8.db.data.svc.cluster.local. 30 IN A 10.244.2.8");
    }

    #[test]
    fn external_name_is_a_cname_and_in_zone_targets_are_followed() {
        let c = cluster();
        let r = c.query("docs.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["docs.default.svc.cluster.local. 30 IN CNAME docs.example.com."]);
        let r = c.query("docs.default.svc.cluster.local", QType::Cname).unwrap();
        assert_eq!(lines(&r.answer), ["docs.default.svc.cluster.local. 30 IN CNAME docs.example.com."]);
        let r = c.query("alias.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!(
            lines(&r.answer),
            ["alias.default.svc.cluster.local. 30 IN CNAME web.default.svc.cluster.local.", "web.default.svc.cluster.local. 30 IN A 10.96.0.50"]
        );
        // A CNAME loop ends with an empty answer, not a hang.
        let r = c.query("loop.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!((r.rcode, r.answer.len()), (Rcode::NoError, 0));
        // SRV is not answered for ExternalName Services: NODATA.
        let r = c.query("docs.default.svc.cluster.local", QType::Srv).unwrap();
        assert_eq!((r.rcode, r.answer.len()), (Rcode::NoError, 0));
        // A ClusterIP Service has no CNAME: NODATA.
        let r = c.query("web.default.svc.cluster.local", QType::Cname).unwrap();
        assert_eq!((r.rcode, r.answer.len()), (Rcode::NoError, 0));
    }

    #[test]
    fn unknown_names_namespaces_and_apex() {
        let c = cluster();
        for (name, want) in [
            ("nope.default.svc.cluster.local", Rcode::NxDomain),
            ("web.nons.svc.cluster.local", Rcode::NxDomain),
            ("web.default.foo.cluster.local", Rcode::NxDomain),
            ("a.b.c.web.default.svc.cluster.local", Rcode::NxDomain),
            ("cluster.local", Rcode::NoError),
            ("svc.cluster.local", Rcode::NoError),
            ("data.svc.cluster.local", Rcode::NoError),
            ("kube-system.svc.cluster.local", Rcode::NoError),
            ("nons.svc.cluster.local", Rcode::NxDomain),
        ] {
            let r = c.query(name, QType::A).unwrap();
            assert_eq!(r.rcode, want, "{name}");
            assert!(r.answer.is_empty(), "{name}");
        }
        assert_eq!(c.query("example.com", QType::A), None, "outside the zone");
        assert_eq!(c.query("notcluster.local", QType::A), None);
    }

    #[test]
    fn pod_names_answer_with_their_address() {
        let c = cluster();
        let r = c.query("10-244-1-5.default.pod.cluster.local", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["10-244-1-5.default.pod.cluster.local. 30 IN A 10.244.1.5"]);
        assert_eq!(c.query("10-244-1.default.pod.cluster.local", QType::A).unwrap().rcode, Rcode::NxDomain);
    }

    #[test]
    fn search_path_follows_ndots() {
        let c = cluster();
        assert_eq!(
            c.candidates("web", "default"),
            ["web.default.svc.cluster.local.", "web.svc.cluster.local.", "web.cluster.local.", "web."]
        );
        assert_eq!(c.candidates("web.default.svc.cluster.local.", "x"), ["web.default.svc.cluster.local."]);
        let many = c.candidates("a.b.c.d.e.f", "ns");
        assert_eq!(many[0], "a.b.c.d.e.f.", "five dots or more: as given first");

        let l = c.search("web", QType::A, "default");
        assert_eq!(l.tried, ["web.default.svc.cluster.local."]);
        assert_eq!(lines(&l.response.unwrap().answer), ["web.default.svc.cluster.local. 30 IN A 10.96.0.50"]);

        // From another namespace the short name fails, `web.default` works.
        let l = c.search("web", QType::A, "data");
        assert_eq!(l.response.as_ref().unwrap().rcode, Rcode::NxDomain);
        assert_eq!(l.upstream, ["web."]);
        assert_eq!(l.tried.len(), 3);
        let l = c.search("web.default", QType::A, "data");
        assert_eq!(l.response.unwrap().name, "web.default.svc.cluster.local.");

        // NODATA is remembered while the search goes on.
        let l = c.search("web", QType::Cname, "default");
        let r = l.response.unwrap();
        assert_eq!((r.rcode, r.name.as_str()), (Rcode::NoError, "web.default.svc.cluster.local."));

        // Nothing inside the zone: no response.
        assert_eq!(c.search("example.com.", QType::A, "default").response, None);
    }

    /// A StatefulSet-style headless Service: two endpoints with hostnames,
    /// one without, and a ClusterIP Service whose endpoint has one.
    fn named_endpoints() -> ClusterDns {
        let named = |a: Ipv4Addr, h: &str| Endpoint { hostname: Some(h.into()), ..ep(a, true) };
        let services = vec![
            svc("db", "default", ServiceSpec { ports: vec![port(Some("pg"), 5432, Protocol::Tcp)], headless: true, ..Default::default() }),
            svc("web", "default", ServiceSpec { ports: vec![port(Some("http"), 80, Protocol::Tcp)], cluster_ip: Some(ip(10, 96, 0, 50)), ..Default::default() }),
        ];
        let pg = vec![EndpointPort { name: Some("pg".into()), protocol: Protocol::Tcp, port: 5432 }];
        let slices = vec![
            EndpointSlice {
                name: "db-1".into(),
                namespace: "default".into(),
                service_name: "db".into(),
                endpoints: vec![named(ip(10, 244, 1, 7), "db-0"), named(ip(10, 244, 2, 8), "db-1"), ep(ip(10, 244, 3, 9), true)],
                ports: pg,
            },
            EndpointSlice {
                name: "web-1".into(),
                namespace: "default".into(),
                service_name: "web".into(),
                endpoints: vec![named(ip(10, 244, 1, 5), "ep1a")],
                ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
            },
        ];
        ClusterDns::new(DnsConfig::default(), &services, &slices)
    }

    #[test]
    fn an_endpoint_with_a_hostname_answers_to_it_and_not_to_its_address() {
        let c = named_endpoints();
        let r = c.query("db-0.db.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["db-0.db.default.svc.cluster.local. 30 IN A 10.244.1.7"]);
        assert_eq!(c.query("10-244-1-7.db.default.svc.cluster.local", QType::A).unwrap().rcode, Rcode::NxDomain);
        // Without a hostname the dashed address is the name.
        let r = c.query("10-244-3-9.db.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["10-244-3-9.db.default.svc.cluster.local. 30 IN A 10.244.3.9"]);
        // Under a ClusterIP Service too.
        let r = c.query("ep1a.web.default.svc.cluster.local", QType::A).unwrap();
        assert_eq!(lines(&r.answer), ["ep1a.web.default.svc.cluster.local. 30 IN A 10.244.1.5"]);
        assert_eq!(c.query("10-244-1-5.web.default.svc.cluster.local", QType::A).unwrap().rcode, Rcode::NxDomain);
    }

    #[test]
    fn srv_targets_are_the_endpoint_names() {
        let r = named_endpoints().query("_pg._tcp.db.default.svc.cluster.local", QType::Srv).unwrap();
        assert_eq!(
            lines(&r.answer),
            [
                "_pg._tcp.db.default.svc.cluster.local. 30 IN SRV 0 33 5432 db-0.db.default.svc.cluster.local.",
                "_pg._tcp.db.default.svc.cluster.local. 30 IN SRV 0 33 5432 db-1.db.default.svc.cluster.local.",
                "_pg._tcp.db.default.svc.cluster.local. 30 IN SRV 0 33 5432 10-244-3-9.db.default.svc.cluster.local.",
            ]
        );
        assert_eq!(lines(&r.additional)[0], "db-0.db.default.svc.cluster.local. 30 IN A 10.244.1.7");
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn labels_in_front_of_an_external_name_do_not_exist() {
        let c = cluster();
        for name in ["a.docs.default.svc.cluster.local", "a.b.docs.default.svc.cluster.local", "_http._tcp.docs.default.svc.cluster.local"] {
            for qtype in [QType::A, QType::Cname, QType::Srv] {
                assert_eq!(c.query(name, qtype).unwrap().rcode, Rcode::NxDomain, "{name} {qtype}");
            }
        }
    }

    #[test]
    fn answers_keep_the_questions_case() {
        let c = cluster();
        let r = c.query("WeB.DeFault.svc.ClUsTeR.lOcAl.", QType::A).unwrap();
        assert_eq!(r.name, "WeB.DeFault.svc.ClUsTeR.lOcAl.");
        assert_eq!(lines(&r.answer), ["WeB.DeFault.svc.ClUsTeR.lOcAl. 30 IN A 10.96.0.50"]);
        // SRV: the owner as asked; the target from the object, in the zone as asked.
        let r = c.query("_HtTp._TcP.wEb.default.svc.CLUSTER.local", QType::Srv).unwrap();
        assert_eq!(lines(&r.answer), ["_HtTp._TcP.wEb.default.svc.CLUSTER.local. 30 IN SRV 0 100 80 web.default.svc.CLUSTER.local."]);
        assert_eq!(lines(&r.additional), ["web.default.svc.CLUSTER.local. 30 IN A 10.96.0.50"]);
        assert_eq!(c.search("WEB", QType::A, "default").tried, ["WEB.default.svc.cluster.local."]);
    }

    #[test]
    fn srv_weights_never_round_to_zero() {
        let services = vec![svc("many", "default", ServiceSpec { ports: vec![port(None, 80, Protocol::Tcp)], headless: true, ..Default::default() })];
        let slices = vec![EndpointSlice {
            name: "many-1".into(),
            namespace: "default".into(),
            service_name: "many".into(),
            endpoints: (0..150u32).map(|i| ep(Ipv4Addr::from(0x0af4_0000 + i), true)).collect(),
            ports: vec![EndpointPort { name: None, protocol: Protocol::Tcp, port: 80 }],
        }];
        let r = ClusterDns::new(DnsConfig::default(), &services, &slices).query("many.default.svc.cluster.local", QType::Srv).unwrap();
        assert_eq!(r.answer.len(), 150);
        assert!(r.answer.iter().all(|a| matches!(a.data, RData::Srv { weight: 1, .. })), "100/150 rounds down to 0, given as 1");
    }

    #[test]
    fn srv_for_a_dual_stack_service_warns() {
        let spec = ServiceSpec {
            ports: vec![port(Some("http"), 80, Protocol::Tcp)],
            cluster_ip: Some(ip(10, 0, 0, 3)),
            ip_families: vec![crate::api::IpFamily::IPv4, crate::api::IpFamily::IPv6],
            ..Default::default()
        };
        let c = ClusterDns::new(DnsConfig::default(), &[svc("dual", "default", spec)], &[]);
        let r = c.query("dual.default.svc.cluster.local", QType::Srv).unwrap();
        assert_eq!(r.warnings, [DnsWarning::DualStackSrv { service: ObjectRef::new("default", "dual") }]);
        assert!(c.query("dual.default.svc.cluster.local", QType::A).unwrap().warnings.is_empty(), "the A answer is CoreDNS's");
        assert!(cluster().query("web.default.svc.cluster.local", QType::Srv).unwrap().warnings.is_empty());
    }

    #[test]
    fn dashed_labels_spell_every_octet_as_its_decimal() {
        // Every octet value, in each position: 0, one, two and three digits.
        for v in 0..=255u8 {
            for a in [Ipv4Addr::new(v, 0, 9, 10), Ipv4Addr::new(99, v, 100, 255), Ipv4Addr::new(1, 2, v, 3), Ipv4Addr::new(200, 7, 55, v)] {
                let mut got = String::new();
                push_endpoint_label(&mut got, &ep(a, true));
                assert_eq!(got, a.to_string().replace('.', "-"));
            }
        }
        let mut got = String::from("x");
        push_endpoint_label(&mut got, &Endpoint { hostname: Some("db-0".into()), ..ep(ip(10, 0, 0, 1), true) });
        assert_eq!(got, "xdb-0", "appended; a hostname is the label");
    }

    #[test]
    fn qtype_parsing() {
        assert_eq!(QType::parse("srv"), Some(QType::Srv));
        assert_eq!(QType::parse("AAAA"), None);
        assert_eq!(QType::Cname.to_string(), "CNAME");
    }
}
