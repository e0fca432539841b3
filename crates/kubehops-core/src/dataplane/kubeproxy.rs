//! kube-proxy in iptables mode: from Services and EndpointSlices to the
//! `filter` and `nat` rules of one node.
//!
//! The chain layout, names, comments and rule order follow kube-proxy's
//! iptables proxier: `KUBE-SERVICES` matches a Service address and jumps to
//! `KUBE-SVC-…` (cluster traffic) or `KUBE-EXT-…` (traffic from outside),
//! `KUBE-SVC-…` picks an endpoint with `-m statistic`, and each
//! `KUBE-SEP-…` DNATs to one Pod. Packets that need SNAT are marked by
//! `KUBE-MARK-MASQ` and masqueraded in `KUBE-POSTROUTING`.
//!
//! Some rules depend on what the node can do ([`NodeFeatures`]), as
//! kube-proxy probes it at start. Three renderings exist: the node's
//! kube-proxy tables ([`NodeRules::save`]), the iptables-restore payload of
//! one sync, full or partial ([`restore_payload`]), and what the kernel
//! gives back ([`NodeRules::save_kernel`]).

use crate::api::{EndpointSlice, IpMode, Node, ObjectRef, Service, ServicePort, ServiceType, SessionAffinity, TrafficPolicy};
use crate::hash::sha256_base32;
use crate::dataplane::iptables::{Purpose, CtState, Match, Rule, Table, TableName, Target};
use crate::net::{Cidr, SockAddr};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The mark kube-proxy sets on packets that must be masqueraded
/// (`--iptables-masquerade-bit=14`).
pub const MASQ_MARK: u32 = 0x4000;

/// What the node kube-proxy runs on can do. kube-proxy finds these out
/// itself when it starts; they are not part of `KubeProxyConfiguration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFeatures {
    /// The iptables binary supports `MASQUERADE --random-fully`, so
    /// `KUBE-POSTROUTING` masquerades with it.
    pub random_fully: bool,
    /// kube-proxy could create its nfacct counters (the kernel has
    /// nfnetlink_acct), so the invalid-state DROP and the localhost node
    /// port rules count packets with `-m nfacct`.
    pub nfacct: bool,
    /// The node's `net.netfilter.nf_conntrack_tcp_be_liberal` is already 1,
    /// so kube-proxy writes no DROP for INVALID packets.
    pub tcp_be_liberal: bool,
}

impl NodeFeatures {
    /// A current distribution's node: iptables 1.8 and a kernel with nfacct.
    pub const MODERN: NodeFeatures = NodeFeatures { random_fully: true, nfacct: true, tcp_be_liberal: false };
    /// What kube-proxy's unit tests run against (`NewFakeProxier` with the
    /// fake iptables): nfacct counters, but no `--random-fully`.
    pub const UPSTREAM_TEST_FAKE: NodeFeatures = NodeFeatures { random_fully: false, nfacct: true, tcp_be_liberal: false };
    /// Nothing optional: an old iptables, no nfacct.
    pub const NONE: NodeFeatures = NodeFeatures { random_fully: false, nfacct: false, tcp_be_liberal: false };
}

impl Default for NodeFeatures {
    fn default() -> Self {
        NodeFeatures::MODERN
    }
}

/// The nfacct counter of packets dropped in the INVALID conntrack state.
pub const CT_STATE_INVALID_COUNTER: &str = "ct_state_invalid_dropped_pkts";
/// The nfacct counter of packets accepted on a localhost node port.
pub const LOCALHOST_NODE_PORT_COUNTER: &str = "localhost_nps_accepted_pkts";
/// The chain kube-proxy creates, outside its iptables-restore payload, in
/// each table it watches; if it disappears, something flushed the tables.
pub const CANARY_CHAIN: &str = "KUBE-PROXY-CANARY";

/// The parts of `KubeProxyConfiguration` the rules depend on, and the node
/// features kube-proxy found.
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
    /// `conntrack.tcpBeLiberal`: kube-proxy sets the node's
    /// nf_conntrack_tcp_be_liberal to 1 and then drops no INVALID packets.
    #[serde(default)]
    pub tcp_be_liberal: bool,
    /// Not configuration: what the node can do (see [`NodeFeatures`]).
    #[serde(default)]
    pub node_features: NodeFeatures,
}

impl Default for KubeProxyConfig {
    fn default() -> Self {
        KubeProxyConfig {
            cluster_cidr: None,
            masquerade_all: false,
            localhost_node_ports: true,
            hostname_override: None,
            tcp_be_liberal: false,
            node_features: NodeFeatures::default(),
        }
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
    /// Empty when the Cluster policy chain is not used.
    pub svc_chain: String,
    pub svl_chain: Option<String>,
    pub ext_chain: Option<String>,
    pub fw_chain: Option<String>,
    pub sep_chains: Vec<String>,
}

impl ServicePortChains {
    /// Whether this is a port of Service `namespace/name` (`ns/name` for an
    /// unnamed port, `ns/name:port` for a named one).
    pub fn is_port_of(&self, namespace: &str, name: &str) -> bool {
        let rest = self.port_name.strip_prefix(namespace).and_then(|r| r.strip_prefix('/')).and_then(|r| r.strip_prefix(name));
        matches!(rest, Some(r) if r.is_empty() || r.starts_with(':'))
    }

    /// Whether `chain` is one of this port's own chains (SVC, SVL, EXT, FW, SEP).
    pub fn owns(&self, chain: &str) -> bool {
        self.svc_chain == chain
            || self.ext_chain.as_deref() == Some(chain)
            || self.svl_chain.as_deref() == Some(chain)
            || self.fw_chain.as_deref() == Some(chain)
            || self.sep_chains.iter().any(|c| c == chain)
    }
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

    /// What the kernel's `iptables-save` prints back on the node (see
    /// [`Table::save_kernel`]), to compare with a real node: the tables in
    /// iptables-nft's order (mangle, filter, nat), each with kube-proxy's
    /// canary chain, which it creates outside the payload.
    pub fn save_kernel(&self) -> Vec<String> {
        let mut out = Table::new(TableName::Mangle).save_kernel(&[CANARY_CHAIN]);
        out.extend(self.filter.save_kernel(&[CANARY_CHAIN]));
        out.extend(self.nat.save_kernel(&[CANARY_CHAIN]));
        out
    }

    /// A rule's line index in [`NodeRules::save`].
    pub fn line_of(&self, r: &crate::dataplane::iptables::RuleRef) -> Option<usize> {
        match r.table {
            TableName::Filter => self.filter.line_of(r),
            TableName::Nat => self.nat.line_of(r).map(|l| l + self.filter_len()),
            TableName::Mangle => None,
        }
    }

    pub fn rule(&self, r: &crate::dataplane::iptables::RuleRef) -> Option<&Rule> {
        match r.table {
            TableName::Filter => self.filter.rule(r),
            TableName::Nat => self.nat.rule(r),
            TableName::Mangle => None,
        }
    }

    fn filter_len(&self) -> usize {
        // `*filter`, chain headers, rules, `COMMIT`.
        2 + self.filter.chains.len() + self.filter.chains.iter().map(|c| c.rules.len()).sum::<usize>()
    }

    /// The lines of both tables that belong to one Service (the rules that
    /// mention it and the rules of its own chains), numbered as in [`NodeRules::save`].
    pub fn service_lines(&self, namespace: &str, name: &str) -> Vec<(usize, String)> {
        let own: Vec<&ServicePortChains> = self.services.iter().filter(|s| s.is_port_of(namespace, name)).collect();
        let mut out = Vec::new();
        for (table, offset) in [(&self.filter, 0), (&self.nat, self.filter_len())] {
            let mut line = offset + 1 + table.chains.len();
            for c in &table.chains {
                let own_chain = own.iter().any(|s| s.owns(&c.name));
                for r in &c.rules {
                    let mentions = r.comment().is_some_and(|cm| own.iter().any(|s| comment_names(cm, &s.port_name)));
                    if own_chain || mentions {
                        out.push((line, r.render(&c.name)));
                    }
                    line += 1;
                }
            }
        }
        out
    }
}

/// How one sync relates to what the node already holds, for
/// [`restore_payload`].
#[derive(Clone, Copy, Debug)]
pub enum SyncMode<'a> {
    /// kube-proxy's first sync on a fresh node: every chain, nothing to delete.
    First,
    /// A full sync on a node that holds the rules of an earlier sync
    /// (kube-proxy's hourly resync, or the retry after a failed partial
    /// one): every chain, and the service chains the node has but this
    /// sync does not are flushed and deleted.
    Full { previous: &'a NodeRules },
    /// A partial sync: as [`SyncMode::Full`], but the chains of Services
    /// not in `changed` (see [`changed_services`]) are left as the node has
    /// them. `KUBE-SERVICES`, `KUBE-NODEPORTS` and the filter table are
    /// always written whole.
    Partial { previous: &'a NodeRules, changed: &'a BTreeSet<ObjectRef> },
}

/// The iptables-restore input of one sync, as kube-proxy hands it to
/// `iptables-restore --noflush`: for each table, the chains it writes
/// (`:NAME - [0:0]`, which creates or flushes them), their rules, and `-X`
/// for chains it deletes. Built-in chains and the jumps into kube-proxy's
/// chains are not in it: kube-proxy inserts those with `iptables -I`.
/// Rules come grouped by chain; kube-proxy interleaves them, which
/// iptables-restore applies the same way.
pub fn restore_payload(rules: &NodeRules, mode: SyncMode) -> Vec<String> {
    let mut out = payload_table(&rules.filter, |_| true, &[]);
    let (previous, changed) = match mode {
        SyncMode::First => (None, None),
        SyncMode::Full { previous } => (Some(previous), None),
        SyncMode::Partial { previous, changed } => (Some(previous), Some(changed)),
    };
    let mut stale: Vec<&str> = previous.map_or(Vec::new(), |p| {
        p.nat.chains.iter().map(|c| c.name.as_str()).filter(|n| is_service_chain(n) && rules.nat.chain(n).is_none()).collect()
    });
    stale.sort_unstable();
    // In a partial sync, a chain of an unchanged Service is skipped.
    let written = |chain: &str| {
        let Some(changed) = changed else { return true };
        !rules.services.iter().any(|sp| sp.owns(chain) && !changed.iter().any(|r| sp.is_port_of(&r.namespace, &r.name)))
    };
    out.extend(payload_table(&rules.nat, written, &stale));
    out
}

/// One table of a restore payload: the chains `written` keeps, then the
/// chains to delete.
fn payload_table(table: &Table, written: impl Fn(&str) -> bool, delete: &[&str]) -> Vec<String> {
    let chains: Vec<&crate::dataplane::iptables::Chain> = table.chains.iter().filter(|c| !c.is_builtin() && written(&c.name)).collect();
    let mut out = vec![format!("*{}", table.name.as_str())];
    out.extend(chains.iter().map(|c| format!(":{} - [0:0]", c.name)).chain(delete.iter().map(|c| format!(":{c} - [0:0]"))));
    for c in &chains {
        out.extend(c.rules.iter().map(|r| r.render(&c.name)));
    }
    out.extend(delete.iter().map(|c| format!("-X {c}")));
    out.push("COMMIT".into());
    out
}

/// The per-service chains kube-proxy deletes when they are no longer used.
fn is_service_chain(name: &str) -> bool {
    ["KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-"].iter().any(|p| name.starts_with(p))
}

/// The Services a partial sync rewrites: those kube-proxy's change
/// trackers report between two states, because the Service changed in a
/// field kube-proxy reads, or the endpoints it sees for the Service did,
/// or the Service was added or deleted.
pub fn changed_services(before: (&[Service], &[EndpointSlice]), after: (&[Service], &[EndpointSlice]), hostname: &str) -> BTreeSet<ObjectRef> {
    let mut names: BTreeSet<ObjectRef> = before.0.iter().chain(after.0).map(Service::object_ref).collect();
    names.retain(|r| proxy_view(r, before, hostname) != proxy_view(r, after, hostname));
    names
}

/// What kube-proxy knows of one Service: the Service without the fields
/// it ignores (selector, creation time), and each endpoint of each slice
/// port as (port name, protocol, port, address, local, ready, serving,
/// terminating), sorted.
type ProxyView = (Option<Service>, Vec<(Option<String>, crate::net::Protocol, u16, std::net::Ipv4Addr, bool, bool, bool, bool)>);

fn proxy_view(r: &ObjectRef, (services, slices): (&[Service], &[EndpointSlice]), hostname: &str) -> ProxyView {
    let svc = services.iter().find(|s| s.namespace == r.namespace && s.name == r.name).map(|s| {
        let mut s = s.clone();
        s.created = None;
        s.spec.selector.clear();
        s
    });
    let mut eps = Vec::new();
    for sl in slices.iter().filter(|sl| sl.namespace == r.namespace && sl.service_name == r.name) {
        for p in &sl.ports {
            for e in &sl.endpoints {
                eps.push((p.name.clone(), p.protocol, p.port, e.ip, e.node_name == hostname, e.ready, e.serving, e.terminating));
            }
        }
    }
    eps.sort();
    eps.dedup();
    (svc, eps)
}

impl NodeRules {
    /// The lines of both tables kube-proxy wrote for Service
    /// `namespace/name`, with their line numbers in [`NodeRules::save`],
    /// chain, owner and purpose.
    pub fn service_rule_lines(&self, namespace: &str, name: &str) -> Vec<crate::sim::RuleLine> {
        let own: Vec<&str> = self.services.iter().filter(|s| s.is_port_of(namespace, name)).map(|s| s.port_name.as_str()).collect();
        let mut out = Vec::new();
        for (table, offset) in [(&self.filter, 0), (&self.nat, self.filter_len())] {
            let mut line = offset + 1 + table.chains.len();
            for c in &table.chains {
                for r in &c.rules {
                    if r.owner.as_deref().is_some_and(|o| own.contains(&o)) {
                        out.push(crate::sim::RuleLine { line, table: table.name, chain: c.name.clone(), text: r.render(&c.name), owner: r.owner.clone(), purpose: r.purpose });
                    }
                    line += 1;
                }
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

/// The endpoints of one service port, sorted as kube-proxy sorts them.
#[derive(Clone, Debug, PartialEq)]
struct PortEndpoint {
    addr: SockAddr,
    local: bool,
    ready: bool,
    serving_terminating: bool,
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

const FILTER_JUMPS: [(&str, &str, &str, bool); 11] = [
    // (built-in chain, target, comment, only NEW connections), in the order
    // they end up on a node: kube-proxy prepends its jumps, so the last it
    // ensures comes first, and kubelet's KUBE-FIREWALL jumps predate them.
    ("INPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", true),
    ("INPUT", "KUBE-NODEPORTS", "kubernetes health check service ports", false),
    ("INPUT", "KUBE-EXTERNAL-SERVICES", "kubernetes externally-visible service portals", true),
    ("INPUT", "KUBE-FIREWALL", "", false),
    ("FORWARD", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", true),
    ("FORWARD", "KUBE-FORWARD", "kubernetes forwarding rules", false),
    ("FORWARD", "KUBE-SERVICES", "kubernetes service portals", true),
    ("FORWARD", "KUBE-EXTERNAL-SERVICES", "kubernetes externally-visible service portals", true),
    ("OUTPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", true),
    ("OUTPUT", "KUBE-SERVICES", "kubernetes service portals", true),
    ("OUTPUT", "KUBE-FIREWALL", "", false),
];

fn comment(c: impl Into<String>) -> Match {
    Match::Comment(c.into())
}

fn jump(c: &str) -> Target {
    Target::Jump(c.to_string())
}

const LOOPBACK: Cidr = Cidr { addr: std::net::Ipv4Addr::new(127, 0, 0, 0), prefix: 8 };

/// Writes both tables for `node`, as kube-proxy's iptables proxier does
/// in one full sync. Services and slices are taken in the order given
/// (callers sort them); each Service's ports in spec order.
pub fn sync_node(node: &Node, services: &[Service], slices: &[EndpointSlice], cfg: &KubeProxyConfig) -> NodeRules {
    let hostname = cfg.hostname_override.as_deref().unwrap_or(&node.name);
    let mut filter = Table::new(TableName::Filter);
    let mut nat = Table::new(TableName::Nat);
    // Built-in chains hold the jumps kube-proxy inserts with `iptables -I`;
    // the rest is its iptables-restore payload, chains in the order it
    // declares them. The canary chain is not here: see `save_kernel`.
    for c in ["INPUT", "FORWARD", "OUTPUT", "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL"] {
        filter.ensure_chain(c);
    }
    if cfg.localhost_node_ports {
        filter.ensure_chain("KUBE-FIREWALL");
    }
    for (chain, target, text, new_only) in FILTER_JUMPS {
        if target == "KUBE-FIREWALL" && !cfg.localhost_node_ports {
            continue;
        }
        let mut m = Vec::new();
        if new_only {
            m.push(Match::CtState { states: vec![CtState::New], negate: false });
        }
        if !text.is_empty() {
            m.push(comment(text));
        }
        filter.append(chain, Rule::new(m, jump(target)));
    }
    for c in ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING", "KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ"] {
        nat.ensure_chain(c);
    }
    nat.append("PREROUTING", Rule::new(vec![comment("kubernetes service portals")], jump("KUBE-SERVICES")));
    nat.append("OUTPUT", Rule::new(vec![comment("kubernetes service portals")], jump("KUBE-SERVICES")));
    nat.append("POSTROUTING", Rule::new(vec![comment("kubernetes postrouting rules")], jump("KUBE-POSTROUTING")));
    nat.append("KUBE-POSTROUTING", Rule::new(vec![Match::Mark { value: MASQ_MARK, mask: MASQ_MARK, negate: true }], Target::Return));
    nat.append("KUBE-POSTROUTING", Rule::new(vec![], Target::XorMark(MASQ_MARK)));
    let features = cfg.node_features;
    nat.append(
        "KUBE-POSTROUTING",
        Rule::new(vec![comment("kubernetes service traffic requiring SNAT")], Target::Masquerade { random_fully: features.random_fully }),
    );
    nat.append("KUBE-MARK-MASQ", Rule::new(vec![], Target::OrMark(MASQ_MARK)));
    if cfg.localhost_node_ports {
        // Stops the route_localnet setting that localhost node ports need
        // from letting outside packets reach 127.0.0.0/8.
        filter.append(
            "KUBE-FIREWALL",
            Rule::new(
                vec![
                    comment("block incoming localnet connections"),
                    Match::Destination { cidr: LOOPBACK, negate: false },
                    Match::Source { cidr: LOOPBACK, negate: true },
                    Match::CtState { states: vec![CtState::Related, CtState::Established, CtState::Dnat], negate: true },
                ],
                Target::Drop,
            ),
        );
    }

    let mut by_service: std::collections::HashMap<(&str, &str), Vec<&EndpointSlice>> = std::collections::HashMap::new();
    for s in slices {
        by_service.entry((s.namespace.as_str(), s.service_name.as_str())).or_default().push(s);
    }
    let mut chains = Vec::new();
    for svc in services {
        if svc.spec.type_ == ServiceType::ExternalName || svc.spec.headless {
            continue;
        }
        let Some(cluster_ip) = svc.spec.cluster_ip else { continue };
        let slices: &[&EndpointSlice] = by_service.get(&(svc.namespace.as_str(), svc.name.as_str())).map_or(&[], |v| v.as_slice());
        for port in &svc.spec.ports {
            filter.write_for(Some(svc.port_name(port)));
            nat.write_for(Some(svc.port_name(port)));
            chains.push(sync_port(&mut filter, &mut nat, node, hostname, svc, port, cluster_ip, slices, cfg));
        }
        filter.write_for(None);
        nat.write_for(None);
    }

    let mut last = vec![comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain"), Match::DstTypeLocal { negate: false }];
    if !cfg.localhost_node_ports {
        last.push(Match::Destination { cidr: LOOPBACK, negate: true });
    }
    nat.append("KUBE-SERVICES", Rule::new(last, jump("KUBE-NODEPORTS")));
    // INVALID packets would reset connections unless conntrack is liberal
    // about TCP windows, in which case kube-proxy leaves them alone.
    if !(cfg.tcp_be_liberal || features.tcp_be_liberal) {
        let mut m = vec![Match::CtState { states: vec![CtState::Invalid], negate: false }];
        if features.nfacct {
            m.push(Match::Nfacct(CT_STATE_INVALID_COUNTER.into()));
        }
        filter.append("KUBE-FORWARD", Rule::new(m, Target::Drop));
    }
    filter.append(
        "KUBE-FORWARD",
        Rule::new(vec![comment("kubernetes forwarding rules"), Match::Mark { value: MASQ_MARK, mask: MASQ_MARK, negate: false }], Target::Accept),
    );
    filter.append(
        "KUBE-FORWARD",
        Rule::new(
            vec![comment("kubernetes forwarding conntrack rule"), Match::CtState { states: vec![CtState::Related, CtState::Established], negate: false }],
            Target::Accept,
        ),
    );
    NodeRules { node: node.name.clone(), filter, nat, services: chains }
}

#[allow(clippy::too_many_arguments)]
fn sync_port(
    filter: &mut Table,
    nat: &mut Table,
    node: &Node,
    hostname: &str,
    svc: &Service,
    port: &ServicePort,
    cluster_ip: std::net::Ipv4Addr,
    slices: &[&EndpointSlice],
    cfg: &KubeProxyConfig,
) -> ServicePortChains {
    let name = svc.port_name(port);
    let proto = port.protocol.lower();
    let hash = port_proto_hash(&name, proto);
    let (svc_chain, svl_chain, fw_chain, ext_chain) =
        (format!("KUBE-SVC-{hash}"), format!("KUBE-SVL-{hash}"), format!("KUBE-FW-{hash}"), format!("KUBE-EXT-{hash}"));

    // The endpoints of this port, from every slice of the Service.
    // The first slice that lists an address wins; the set keeps this linear.
    let mut eps: Vec<PortEndpoint> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for slice in slices {
        let Some(sp) = slice.ports.iter().find(|p| p.name == port.name && p.protocol == port.protocol) else { continue };
        for e in &slice.endpoints {
            let addr = SockAddr::new(e.ip, sp.port);
            if seen.insert(addr) {
                eps.push(PortEndpoint { addr, local: e.node_name == hostname, ready: e.ready, serving_terminating: e.serving && e.terminating });
            }
        }
    }
    eps.sort_by_cached_key(|e| e.addr.to_string());

    let lb_vips: Vec<std::net::Ipv4Addr> = if svc.spec.type_ == ServiceType::LoadBalancer {
        svc.status.load_balancer_ingress.iter().filter(|i| i.ip_mode != Some(IpMode::Proxy)).filter_map(|i| i.ip).collect()
    } else {
        Vec::new()
    };
    let node_port = port.node_port.filter(|_| svc.spec.type_.has_node_ports());
    let externally_accessible = node_port.is_some() || !lb_vips.is_empty() || !svc.spec.external_ips.is_empty();
    let etp_local = externally_accessible && svc.spec.external_traffic_policy == TrafficPolicy::Local;
    let itp_local = svc.spec.internal_traffic_policy == TrafficPolicy::Local;
    let uses_cluster = !itp_local || (externally_accessible && !etp_local);
    let uses_local = itp_local || (externally_accessible && etp_local);
    let (cluster_eps, local_eps, reachable, has_endpoints) = categorize(&eps, uses_cluster, uses_local);
    let uses_cluster_chain = !cluster_eps.is_empty() && uses_cluster;
    let uses_local_chain = !local_eps.is_empty() && uses_local;
    let internal_chain = if itp_local { &svl_chain } else { &svc_chain };
    let has_internal = has_endpoints && !(itp_local && local_eps.is_empty());
    let external_policy_chain = if etp_local { &svl_chain } else { &svc_chain };
    let has_external = has_endpoints && !(etp_local && local_eps.is_empty());
    let uses_ext = has_endpoints && externally_accessible;
    let uses_fw = has_endpoints && !lb_vips.is_empty() && !svc.spec.load_balancer_source_ranges.is_empty();
    let lb_chain = if uses_fw { &fw_chain } else { &ext_chain };

    let refusal = if has_endpoints { Purpose::NoLocalEndpoints } else { Purpose::NoEndpoints };
    let (internal_filter, external_filter, filter_comment) = if !has_endpoints {
        (Target::Reject, Target::Reject, format!("{name} has no endpoints"))
    } else {
        (Target::Drop, Target::Drop, format!("{name} has no local endpoints"))
    };
    let vip = |what: &str, ip: std::net::Ipv4Addr, c: Option<&str>| {
        vec![
            comment(c.map_or_else(|| format!("{name} {what}"), str::to_string)),
            Match::Protocol(port.protocol),
            Match::Destination { cidr: Cidr::new(ip, 32), negate: false },
            Match::DestinationPort(port.port),
        ]
    };

    // Declare the nat chains in the order kube-proxy writes them.
    if uses_ext {
        nat.ensure_chain(&ext_chain);
    }
    if uses_fw {
        nat.ensure_chain(&fw_chain);
    }
    if uses_cluster_chain {
        nat.ensure_chain(&svc_chain);
    }
    if uses_local_chain {
        nat.ensure_chain(&svl_chain);
    }
    let sep_of = |e: &PortEndpoint| endpoint_chain(&name, proto, &e.addr.to_string());
    for e in &reachable {
        nat.ensure_chain(&sep_of(e));
    }

    // The cluster IP.
    if has_internal {
        nat.append("KUBE-SERVICES", Rule::new(vip("cluster IP", cluster_ip, None), jump(internal_chain)).for_(Purpose::ClusterIp));
    } else {
        filter.append("KUBE-SERVICES", Rule::new(vip("", cluster_ip, Some(&filter_comment)), internal_filter.clone()).for_(refusal));
    }
    // External IPs.
    for ip in &svc.spec.external_ips {
        if has_endpoints {
            nat.append("KUBE-SERVICES", Rule::new(vip("external IP", *ip, None), jump(&ext_chain)).for_(Purpose::ExternalIp));
        }
        if !has_external {
            filter.append("KUBE-EXTERNAL-SERVICES", Rule::new(vip("", *ip, Some(&filter_comment)), external_filter.clone()).for_(refusal));
        }
    }
    // Load balancer IPs (ipMode Proxy balancers are left out upstream).
    for ip in &lb_vips {
        if has_endpoints {
            nat.append("KUBE-SERVICES", Rule::new(vip("loadbalancer IP", *ip, None), jump(lb_chain)).for_(Purpose::LoadBalancerIp));
        }
        if uses_fw {
            let c = format!("{name} traffic not accepted by {fw_chain}");
            filter.append("KUBE-PROXY-FIREWALL", Rule::new(vip("", *ip, Some(&c)), Target::Drop).for_(Purpose::SourceRangeDrop));
        }
    }
    if !has_external {
        for ip in &lb_vips {
            filter.append("KUBE-EXTERNAL-SERVICES", Rule::new(vip("", *ip, Some(&filter_comment)), external_filter.clone()).for_(refusal));
        }
    }
    // The node port.
    if let Some(np) = node_port {
        if has_endpoints {
            if cfg.localhost_node_ports && cfg.node_features.nfacct {
                // The same jump for 127.0.0.0/8, first, only to count it.
                let m = vec![
                    comment(&name),
                    Match::Protocol(port.protocol),
                    Match::Destination { cidr: LOOPBACK, negate: false },
                    Match::DestinationPort(np),
                    Match::Nfacct(LOCALHOST_NODE_PORT_COUNTER.into()),
                ];
                nat.append("KUBE-NODEPORTS", Rule::new(m, jump(&ext_chain)).for_(Purpose::NodePort));
            }
            nat.append("KUBE-NODEPORTS", Rule::new(vec![comment(&name), Match::Protocol(port.protocol), Match::DestinationPort(np)], jump(&ext_chain)).for_(Purpose::NodePort));
        }
        if !has_external {
            filter.append(
                "KUBE-EXTERNAL-SERVICES",
                Rule::new(
                    vec![comment(&filter_comment), Match::DstTypeLocal { negate: false }, Match::Protocol(port.protocol), Match::DestinationPort(np)],
                    external_filter.clone(),
                )
                .for_(refusal),
            );
        }
    }
    // The health check node port of an externalTrafficPolicy: Local balancer.
    if let Some(hc) = svc.spec.health_check_node_port.filter(|_| etp_local && svc.spec.type_ == ServiceType::LoadBalancer) {
        filter.append(
            "KUBE-NODEPORTS",
            Rule::new(
                vec![comment(format!("{name} health check node port")), Match::Protocol(crate::net::Protocol::Tcp), Match::DestinationPort(hc)],
                Target::Accept,
            )
            .for_(Purpose::HealthCheckNodePort),
        );
    }
    // Off-cluster sources reaching the cluster IP are masqueraded, so the
    // reply comes back through this node.
    if has_internal {
        if cfg.masquerade_all {
            nat.append(internal_chain, Rule::new(vip("cluster IP", cluster_ip, None), jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
        } else if let Some(cc) = cfg.cluster_cidr {
            let mut m = vip("cluster IP", cluster_ip, None);
            m.push(Match::Source { cidr: cc, negate: true });
            nat.append(internal_chain, Rule::new(m, jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
        }
    }
    if uses_ext {
        if !etp_local {
            nat.append(&ext_chain, Rule::new(vec![comment(format!("masquerade traffic for {name} external destinations"))], jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
        } else {
            if let Some(cc) = cfg.cluster_cidr {
                // Pods reaching an external address of the Service behave as
                // if they went out to the balancer and back: Cluster policy.
                nat.append(
                    &ext_chain,
                    Rule::new(vec![comment(format!("pod traffic for {name} external destinations")), Match::Source { cidr: cc, negate: false }], jump(&svc_chain)),
                );
            }
            nat.append(
                &ext_chain,
                Rule::new(vec![comment(format!("masquerade LOCAL traffic for {name} external destinations")), Match::SrcTypeLocal { negate: false }], jump("KUBE-MARK-MASQ"))
                    .for_(Purpose::MarkMasquerade),
            );
            nat.append(
                &ext_chain,
                Rule::new(vec![comment(format!("route LOCAL traffic for {name} external destinations")), Match::SrcTypeLocal { negate: false }], jump(&svc_chain)),
            );
        }
        if has_external {
            nat.append(&ext_chain, Rule::new(vec![], jump(external_policy_chain)));
        }
    }
    if uses_fw {
        let c = || comment(format!("{name} loadbalancer IP"));
        let mut from_node = false;
        for cidr in &svc.spec.load_balancer_source_ranges {
            nat.append(&fw_chain, Rule::new(vec![c(), Match::Source { cidr: *cidr, negate: false }], jump(&ext_chain)));
            from_node |= cidr.contains(node.internal_ip);
        }
        if from_node {
            for ip in &lb_vips {
                nat.append(&fw_chain, Rule::new(vec![c(), Match::Source { cidr: Cidr::new(*ip, 32), negate: false }], jump(&ext_chain)));
            }
        }
        nat.append(&fw_chain, Rule::new(vec![comment(format!("other traffic to {name} will be dropped by KUBE-PROXY-FIREWALL"))], Target::Nothing));
    }
    let affinity = match svc.spec.session_affinity {
        SessionAffinity::ClientIP { timeout_seconds } => Some(timeout_seconds),
        SessionAffinity::None => None,
    };
    let endpoint_rules = |nat: &mut Table, chain: &str, eps: &[&PortEndpoint]| {
        if let Some(secs) = affinity {
            for e in eps {
                nat.append(
                    chain,
                    Rule::new(vec![comment(format!("{name} -> {}", e.addr)), Match::RecentCheck { name: sep_of(e), seconds: secs }], jump(&sep_of(e)))
                        .for_(Purpose::EndpointPick),
                );
            }
        }
        let n = eps.len();
        for (i, e) in eps.iter().enumerate() {
            let mut m = vec![comment(format!("{name} -> {}", e.addr))];
            if i + 1 < n {
                m.push(Match::Probability(1.0 / (n - i) as f64));
            }
            nat.append(chain, Rule::new(m, jump(&sep_of(e))).for_(Purpose::EndpointPick));
        }
    };
    if uses_cluster_chain {
        endpoint_rules(nat, &svc_chain, &cluster_eps);
    }
    if uses_local_chain {
        endpoint_rules(nat, &svl_chain, &local_eps);
    }
    for e in &reachable {
        let sep = sep_of(e);
        // Hairpin: a Pod that reaches itself through the Service is masqueraded.
        nat.append(&sep, Rule::new(vec![comment(&name), Match::Source { cidr: Cidr::new(e.addr.ip, 32), negate: false }], jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
        let mut m = vec![comment(&name)];
        if affinity.is_some() {
            m.push(Match::RecentSet { name: sep.clone() });
        }
        m.push(Match::Protocol(port.protocol));
        nat.append(&sep, Rule::new(m, Target::Dnat(e.addr)).for_(Purpose::EndpointDnat));
    }
    let sep_chains = reachable.iter().map(|e| sep_of(e)).collect();
    ServicePortChains {
        port_name: name,
        svc_chain: if uses_cluster_chain { svc_chain } else { String::new() },
        svl_chain: uses_local_chain.then_some(svl_chain),
        ext_chain: uses_ext.then_some(ext_chain),
        fw_chain: uses_fw.then_some(fw_chain),
        sep_chains,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str, ip: [u8; 4]) -> Service {
        use crate::api::ServiceSpec;
        let port = ServicePort { name: Some("p80".into()), protocol: crate::net::Protocol::Tcp, port: 80, target_port: 80, node_port: None };
        let spec = ServiceSpec { ports: vec![port], cluster_ip: Some(ip.into()), ..Default::default() };
        Service { name: name.into(), namespace: "ns".into(), annotations: Default::default(), spec, status: Default::default(), created: None }
    }

    fn slice(name: &str, ip: [u8; 4], ready: bool) -> EndpointSlice {
        use crate::api::{Endpoint, EndpointPort};
        let e = Endpoint { ip: ip.into(), node_name: "n".into(), ready, serving: ready, terminating: false, target_ref: String::new(), hostname: None };
        let p = EndpointPort { name: Some("p80".into()), protocol: crate::net::Protocol::Tcp, port: 80 };
        EndpointSlice { name: format!("{name}-1"), namespace: "ns".into(), service_name: name.into(), endpoints: vec![e], ports: vec![p] }
    }

    #[test]
    fn changed_services_are_those_kube_proxy_would_see_change() {
        let a = service("a", [10, 96, 0, 1]);
        let b = service("b", [10, 96, 0, 2]);
        let before = (vec![a.clone(), b.clone()], vec![slice("a", [10, 0, 0, 1], true), slice("b", [10, 0, 0, 2], true)]);
        let changed = |svcs: &[Service], slices: &[EndpointSlice]| -> Vec<String> {
            changed_services((&before.0, &before.1), (svcs, slices), "n").iter().map(|r| r.to_string()).collect()
        };
        // Labels kube-proxy does not read, and the creation time, change nothing.
        let mut a2 = a.clone();
        a2.spec.selector.insert("app".into(), "x".into());
        a2.created = Some(5);
        assert!(changed(&[a2, b.clone()], &before.1).is_empty());
        // An endpoint turning unready changes its Service only.
        assert_eq!(changed(&before.0, &[slice("a", [10, 0, 0, 1], true), slice("b", [10, 0, 0, 2], false)]), ["ns/b"]);
        // A deleted Service and a new one both count.
        let c = service("c", [10, 96, 0, 3]);
        assert_eq!(changed(&[a, c], &before.1), ["ns/b", "ns/c"]);
    }

    #[test]
    fn chain_names_match_kube_proxy() {
        // Known names from kube-proxy's own iptables proxier tests.
        assert_eq!(service_chain("ns1/svc1:p80", "tcp"), "KUBE-SVC-XPGD46QRK7WJZT7O");
        assert_eq!(endpoint_chain("ns1/svc1:p80", "tcp", "10.180.0.1:80"), "KUBE-SEP-SXIVWICOYRO3J4NJ");
        assert_eq!(external_chain("ns2/svc2:p80", "tcp"), "KUBE-EXT-GNZBNJ2PO5MGZ6GT");
    }
}
