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

use crate::api::{EndpointSlice, Node, ObjectRef, Service, ServicePort, ServiceType};
use crate::hash::sha256_base32;
use crate::dataplane::endpoints::{port_endpoints, PortEndpoint, PortPolicy};
use crate::dataplane::iptables::{Purpose, CtState, Match, Rule, RuleRef, Table, TableName, Target};
use crate::dataplane::rules::{ChainKind, RuleSummary};
use crate::net::SockAddr;
use crate::net::Cidr;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

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
    /// `mode`: which proxier writes the node's rules.
    #[serde(default)]
    pub mode: ProxyMode,
    /// `nodePortAddresses`. Only the nftables mode reads it so far.
    #[serde(default)]
    pub node_port_addresses: NodePortAddresses,
}

/// `nodePortAddresses`: which of the node's addresses answer on node ports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodePortAddresses {
    /// Unset: every local address.
    #[default]
    All,
    /// `primary`: the node's primary address, from its Node object.
    Primary,
    /// The node's addresses inside these prefixes.
    Cidrs(Vec<Cidr>),
}

/// `KubeProxyConfiguration.mode` on Linux, as far as kubehops models it:
/// blank means iptables, as upstream has it. IPVS mode (deprecated since
/// Kubernetes 1.35) is not modelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProxyMode {
    #[default]
    Iptables,
    Nftables,
}

impl ProxyMode {
    /// The name the configuration and the command line use.
    pub fn as_str(self) -> &'static str {
        match self {
            ProxyMode::Iptables => "iptables",
            ProxyMode::Nftables => "nftables",
        }
    }
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
            mode: ProxyMode::default(),
            node_port_addresses: NodePortAddresses::All,
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
    /// No rules at all: a node whose kube-proxy has not synced yet.
    pub fn empty(node: &str) -> NodeRules {
        NodeRules { node: node.into(), filter: Table::new(TableName::Filter), nat: Table::new(TableName::Nat), services: Vec::new() }
    }

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

/// What kube-proxy made chain `name` for, by the names this module gives
/// its chains (`KUBE-SVC-` + hash, …); another writer's chain is `Other`.
pub fn chain_kind(name: &str) -> ChainKind {
    match name {
        "KUBE-SERVICES" => return ChainKind::Services,
        "KUBE-NODEPORTS" => return ChainKind::NodePorts,
        "KUBE-MARK-MASQ" => return ChainKind::MarkMasquerade,
        "KUBE-POSTROUTING" => return ChainKind::Masquerading,
        _ => {}
    }
    let kinds = [("KUBE-SVC-", ChainKind::Service), ("KUBE-SVL-", ChainKind::ServiceLocal), ("KUBE-EXT-", ChainKind::External), ("KUBE-FW-", ChainKind::Firewall), ("KUBE-SEP-", ChainKind::Endpoint)];
    kinds.iter().find(|(p, _)| name.starts_with(p)).map_or(ChainKind::Other, |(_, k)| *k)
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
    crate::sort::natural(&mut eps);
    eps.dedup();
    (svc, eps)
}

impl NodeRules {
    /// The lines of both tables kube-proxy wrote for Service
    /// `namespace/name`, with their line numbers in [`NodeRules::save`],
    /// chain, owner and purpose.
    pub fn service_rule_lines(&self, namespace: &str, name: &str) -> Vec<super::iptables::RuleLine> {
        let own: Vec<&str> = self.services.iter().filter(|s| s.is_port_of(namespace, name)).map(|s| s.port_name.as_str()).collect();
        let mut out = Vec::new();
        for (table, offset) in [(&self.filter, 0), (&self.nat, self.filter_len())] {
            let mut line = offset + 1 + table.chains.len();
            for c in &table.chains {
                for r in &c.rules {
                    if r.owner.as_deref().is_some_and(|o| own.contains(&o)) {
                        out.push(super::iptables::RuleLine { line, table: table.name.into(), chain: c.name.clone(), text: r.render(&c.name), owner: r.owner.clone(), purpose: r.purpose });
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

const LOOPBACK: Cidr = Cidr { addr: Ipv4Addr::new(127, 0, 0, 0), prefix: 8 };

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
    write_filter_jumps(&mut filter, cfg);
    write_nat_jumps(&mut nat);
    write_postrouting(&mut nat, cfg.node_features);
    write_mark_masq(&mut nat);
    if cfg.localhost_node_ports {
        write_localnet_firewall(&mut filter);
    }
    let chains = write_services(&mut filter, &mut nat, node, hostname, services, slices, cfg);
    write_node_ports_jump(&mut nat, cfg);
    write_forward(&mut filter, cfg);
    NodeRules { node: node.name.clone(), filter, nat, services: chains }
}

/// The filter table's built-in chains with the jumps into kube-proxy's
/// top-level chains, which are declared here too (the payload's chains
/// `KUBE-SERVICES`, `KUBE-EXTERNAL-SERVICES`, `KUBE-FORWARD`,
/// `KUBE-NODEPORTS`, `KUBE-PROXY-FIREWALL`, in kube-proxy's order).
/// kube-proxy keeps these jumps out of its restore payload, which must not
/// replace other programs' rules in the built-in chains; on a full sync it
/// checks each one and inserts it at the top if missing. Jumps whose
/// chains only judge new connections carry `--ctstate NEW`, so packets of
/// established flows skip them. The jumps to kubelet's `KUBE-FIREWALL`
/// are left out when that chain is (localhost node ports off).
fn write_filter_jumps(filter: &mut Table, cfg: &KubeProxyConfig) {
    for c in ["INPUT", "FORWARD", "OUTPUT", "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL"] {
        filter.ensure_chain(c);
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
}

/// The nat table's built-in chains and kube-proxy's top-level nat chains
/// (`KUBE-SERVICES`, `KUBE-NODEPORTS`, `KUBE-POSTROUTING`,
/// `KUBE-MARK-MASQ`), with the jumps kube-proxy inserts outside its
/// payload: packets arriving (PREROUTING) and packets the node sends
/// (OUTPUT) are looked up in `KUBE-SERVICES`; every packet leaving passes
/// `KUBE-POSTROUTING`, where marked ones are masqueraded.
fn write_nat_jumps(nat: &mut Table) {
    for c in ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING", "KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ"] {
        nat.ensure_chain(c);
    }
    nat.append("PREROUTING", Rule::new(vec![comment("kubernetes service portals")], jump("KUBE-SERVICES")));
    nat.append("OUTPUT", Rule::new(vec![comment("kubernetes service portals")], jump("KUBE-SERVICES")));
    nat.append("POSTROUTING", Rule::new(vec![comment("kubernetes postrouting rules")], jump("KUBE-POSTROUTING")));
}

/// `KUBE-POSTROUTING` masquerades exactly the packets some rule sent to
/// `KUBE-MARK-MASQ`. Unmarked packets return at once. Marked ones first
/// have the bit cleared, so a packet that passes through the stack again
/// is not masqueraded twice; then MASQUERADE, with `--random-fully` where
/// iptables has it, so that the source ports of concurrent connections
/// are picked at random rather than in sequence, where they could collide.
/// kube-proxy gives this its own chain so that it can be flushed and
/// rewritten whole (if the mark bit ever changes, say).
fn write_postrouting(nat: &mut Table, features: NodeFeatures) {
    nat.append("KUBE-POSTROUTING", Rule::new(vec![Match::Mark { value: MASQ_MARK, mask: MASQ_MARK, negate: true }], Target::Return));
    nat.append("KUBE-POSTROUTING", Rule::new(vec![], Target::XorMark(MASQ_MARK)));
    nat.append(
        "KUBE-POSTROUTING",
        Rule::new(vec![comment("kubernetes service traffic requiring SNAT")], Target::Masquerade { random_fully: features.random_fully }),
    );
}

/// `KUBE-MARK-MASQ` only sets the bit. Whether a packet needs SNAT is
/// known where its destination is chosen (PREROUTING, OUTPUT), but the
/// address to masquerade to only after routing, in `KUBE-POSTROUTING`;
/// the mark carries the decision from one to the other.
fn write_mark_masq(nat: &mut Table) {
    nat.append("KUBE-MARK-MASQ", Rule::new(vec![], Target::OrMark(MASQ_MARK)));
}

/// `KUBE-FIREWALL` (declared here, after the payload's other filter
/// chains, as kube-proxy declares it). Localhost node ports need the
/// `route_localnet` sysctl, which would also let packets from outside
/// addressed to 127.0.0.0/8 be routed in; this DROP stops them unless
/// conntrack knows them as replies or as already DNATed. kubelet writes
/// the same rule; kube-proxy writes its copy only with localhost node
/// ports on.
fn write_localnet_firewall(filter: &mut Table) {
    filter.ensure_chain("KUBE-FIREWALL");
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

/// The rules of every service port, Service by Service, each rule marked
/// as written for its port. kube-proxy skips Services without a cluster
/// IP (headless, ExternalName): nothing is proxied for them.
fn write_services(
    filter: &mut Table,
    nat: &mut Table,
    node: &Node,
    hostname: &str,
    services: &[Service],
    slices: &[EndpointSlice],
    cfg: &KubeProxyConfig,
) -> Vec<ServicePortChains> {
    let by_service = slices_by_service(slices);
    let mut chains = Vec::new();
    for svc in services {
        if svc.spec.type_ == ServiceType::ExternalName || svc.spec.headless {
            continue;
        }
        let Some(cluster_ip) = svc.spec.cluster_ip else { continue };
        let slices: &[&EndpointSlice] = by_service.get(&(svc.namespace.as_str(), svc.name.as_str())).map_or(&[], |v| v.as_slice());
        for port in &svc.spec.ports {
            let eps = port_endpoints(slices, port, hostname);
            let plan = PortPlan::new(svc, port, cluster_ip, &eps);
            filter.write_for(Some(svc.port_name(port)));
            nat.write_for(Some(svc.port_name(port)));
            sync_port(filter, nat, &plan, node.internal_ip, cfg);
            chains.push(plan.into_chains());
        }
        filter.write_for(None);
        nat.write_for(None);
    }
    chains
}

/// The slices of each Service, by (namespace, Service name), in the order given.
fn slices_by_service(slices: &[EndpointSlice]) -> HashMap<(&str, &str), Vec<&EndpointSlice>> {
    let mut by_service: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
    for s in slices {
        by_service.entry((s.namespace.as_str(), s.service_name.as_str())).or_default().push(s);
    }
    by_service
}

/// The last rule of `KUBE-SERVICES`: a packet for one of the node's own
/// addresses that matched no Service address goes on to `KUBE-NODEPORTS`
/// (kube-proxy's default `nodePortAddresses`, every local address). It
/// must come last so that a Service address the node also holds is
/// matched as a Service address first. With localhost node ports off,
/// 127.0.0.0/8 is left out, as such packets could not be answered.
fn write_node_ports_jump(nat: &mut Table, cfg: &KubeProxyConfig) {
    let mut last = vec![comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain"), Match::DstTypeLocal { negate: false }];
    if !cfg.localhost_node_ports {
        last.push(Match::Destination { cidr: LOOPBACK, negate: true });
    }
    nat.append("KUBE-SERVICES", Rule::new(last, jump("KUBE-NODEPORTS")));
}

/// `KUBE-FORWARD`. INVALID packets (outside the TCP window conntrack
/// tracks) would pass un-DNATed to a Pod and make it reset the connection,
/// so they are dropped, unless conntrack is liberal about TCP windows and
/// never marks them INVALID. Packets marked for masquerade are accepted,
/// so node port traffic is forwarded even where the FORWARD policy is
/// DROP; the rest of those connections is accepted by conntrack state.
fn write_forward(filter: &mut Table, cfg: &KubeProxyConfig) {
    let features = cfg.node_features;
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
}

/// What kube-proxy settles about one service port before it writes any
/// of its rules: the names, the endpoints each traffic policy uses, and
/// which chains exist. The fields are the proxier's per-port locals.
struct PortPlan<'a> {
    svc: &'a Service,
    port: &'a ServicePort,
    /// `namespace/name:port`: the text of the port's comments and chain hashes.
    name: String,
    proto: &'static str,
    cluster_ip: Ipv4Addr,
    svc_chain: String,
    svl_chain: String,
    fw_chain: String,
    ext_chain: String,
    /// The balancer addresses kube-proxy captures: not those with ipMode
    /// Proxy, whose balancer sends traffic to the node rather than to the VIP.
    lb_vips: Vec<Ipv4Addr>,
    /// The node port, for the Service types that have one.
    node_port: Option<u16>,
    /// The endpoints of the Cluster policy, of the Local policy, and all
    /// that either policy uses (each gets a KUBE-SEP chain).
    cluster_eps: Vec<&'a PortEndpoint>,
    local_eps: Vec<&'a PortEndpoint>,
    reachable: Vec<&'a PortEndpoint>,
    /// Some endpoint anywhere in the cluster can serve the port.
    has_endpoints: bool,
    /// `externalTrafficPolicy: Local` on a port with a node port, an
    /// external IP or a balancer IP (an externally accessible port).
    etp_local: bool,
    /// `internalTrafficPolicy: Local`.
    itp_local: bool,
    /// The KUBE-SVC and KUBE-SVL chains are written.
    uses_cluster_chain: bool,
    uses_local_chain: bool,
    /// Cluster IP traffic has an endpoint to go to.
    has_internal: bool,
    /// Traffic from outside to an external address has an endpoint to go to.
    has_external: bool,
    /// The KUBE-EXT chain is written: the port has endpoints and is externally accessible.
    uses_ext: bool,
    /// The KUBE-FW chain is written: balancer IPs with loadBalancerSourceRanges.
    uses_fw: bool,
    /// The ClientIP session affinity timeout in seconds, if affinity is on.
    affinity: Option<u32>,
    /// The comment of the filter rules that refuse the port's traffic.
    refusal_comment: String,
}

impl<'a> PortPlan<'a> {
    fn new(svc: &'a Service, port: &'a ServicePort, cluster_ip: Ipv4Addr, eps: &'a [PortEndpoint]) -> PortPlan<'a> {
        let name = svc.port_name(port);
        let proto = port.protocol.lower();
        let hash = port_proto_hash(&name, proto);
        let PortPolicy { lb_vips, node_port, externally_accessible, etp_local, itp_local, uses_cluster, uses_local, cluster_eps, local_eps, reachable, has_endpoints, affinity } =
            PortPolicy::new(svc, port, eps);
        let no_local = local_eps.is_empty();
        let refusal_comment = if has_endpoints { format!("{name} has no local endpoints") } else { format!("{name} has no endpoints") };
        PortPlan {
            svc,
            port,
            proto,
            cluster_ip,
            svc_chain: format!("KUBE-SVC-{hash}"),
            svl_chain: format!("KUBE-SVL-{hash}"),
            fw_chain: format!("KUBE-FW-{hash}"),
            ext_chain: format!("KUBE-EXT-{hash}"),
            uses_cluster_chain: !cluster_eps.is_empty() && uses_cluster,
            uses_local_chain: !no_local && uses_local,
            has_internal: has_endpoints && !(itp_local && no_local),
            has_external: has_endpoints && !(etp_local && no_local),
            uses_ext: has_endpoints && externally_accessible,
            uses_fw: has_endpoints && !lb_vips.is_empty() && !svc.spec.load_balancer_source_ranges.is_empty(),
            affinity,
            name,
            lb_vips,
            node_port,
            cluster_eps,
            local_eps,
            reachable,
            has_endpoints,
            etp_local,
            itp_local,
            refusal_comment,
        }
    }

    /// The chain cluster IP traffic goes to: the internal policy's.
    fn internal_chain(&self) -> &str {
        if self.itp_local { &self.svl_chain } else { &self.svc_chain }
    }

    /// The chain KUBE-EXT ends in: the external policy's.
    fn external_policy_chain(&self) -> &str {
        if self.etp_local { &self.svl_chain } else { &self.svc_chain }
    }

    /// The chain balancer IP traffic goes to: KUBE-FW when source ranges
    /// filter it, KUBE-EXT otherwise.
    fn lb_chain(&self) -> &str {
        if self.uses_fw { &self.fw_chain } else { &self.ext_chain }
    }

    /// An endpoint's KUBE-SEP chain.
    fn sep_chain(&self, e: &PortEndpoint) -> String {
        endpoint_chain(&self.name, self.proto, &e.addr.to_string())
    }

    /// The matches of one of the port's addresses, with a comment.
    fn vip_matches(&self, text: String, ip: Ipv4Addr) -> Vec<Match> {
        vec![comment(text), Match::Protocol(self.port.protocol), Match::Destination { cidr: Cidr::new(ip, 32), negate: false }, Match::DestinationPort(self.port.port)]
    }

    /// The matches of one of the port's addresses, commented `<port name> <what>`.
    fn vip(&self, what: &str, ip: Ipv4Addr) -> Vec<Match> {
        self.vip_matches(format!("{} {what}", self.name), ip)
    }

    /// A filter rule that refuses traffic the nat table did not take:
    /// REJECT when the port has no endpoints at all, so clients learn it
    /// at once; DROP when endpoints exist but none here for a Local
    /// policy, as upstream does for "no local endpoints".
    fn refusal(&self, m: Vec<Match>) -> Rule {
        if self.has_endpoints {
            Rule::new(m, Target::Drop).for_(Purpose::NoLocalEndpoints)
        } else {
            Rule::new(m, Target::Reject).for_(Purpose::NoEndpoints)
        }
    }

    /// A refusal for one of the port's addresses.
    fn refused_vip(&self, ip: Ipv4Addr) -> Rule {
        self.refusal(self.vip_matches(self.refusal_comment.clone(), ip))
    }

    /// The chains kept for displays of this port; unused ones left empty or out.
    fn into_chains(self) -> ServicePortChains {
        let sep_chains = self.reachable.iter().map(|e| self.sep_chain(e)).collect();
        ServicePortChains {
            svc_chain: if self.uses_cluster_chain { self.svc_chain } else { String::new() },
            svl_chain: self.uses_local_chain.then_some(self.svl_chain),
            ext_chain: self.uses_ext.then_some(self.ext_chain),
            fw_chain: self.uses_fw.then_some(self.fw_chain),
            port_name: self.name,
            sep_chains,
        }
    }
}

/// One service port's rules, group by group in the order kube-proxy's
/// per-port loop writes them.
fn sync_port(filter: &mut Table, nat: &mut Table, plan: &PortPlan, node_ip: Ipv4Addr, cfg: &KubeProxyConfig) {
    declare_port_chains(nat, plan);
    write_cluster_ip(filter, nat, plan);
    write_external_ips(filter, nat, plan);
    write_balancer_ips(filter, nat, plan);
    write_node_port(filter, nat, plan, cfg);
    write_health_check_node_port(filter, plan);
    write_internal_masquerade(nat, plan, cfg);
    write_external_chain(nat, plan, cfg);
    write_firewall_chain(nat, plan, node_ip);
    write_endpoint_picks(nat, plan);
    write_endpoint_chains(nat, plan);
}

/// Declares the port's nat chains in the order of kube-proxy's chain
/// lines (EXT, FW, SVC, SVL, then one SEP per endpoint), each only if it
/// gets rules: a port without endpoints has no nat chains at all, only
/// the filter rules that refuse its traffic.
fn declare_port_chains(nat: &mut Table, plan: &PortPlan) {
    if plan.uses_ext {
        nat.ensure_chain(&plan.ext_chain);
    }
    if plan.uses_fw {
        nat.ensure_chain(&plan.fw_chain);
    }
    if plan.uses_cluster_chain {
        nat.ensure_chain(&plan.svc_chain);
    }
    if plan.uses_local_chain {
        nat.ensure_chain(&plan.svl_chain);
    }
    for e in &plan.reachable {
        nat.ensure_chain(&plan.sep_chain(e));
    }
}

/// The cluster IP: `KUBE-SERVICES` sends it to the internal policy chain
/// when that has endpoints; otherwise the filter table's `KUBE-SERVICES`
/// refuses it (an internal Local policy with no endpoint on this node
/// drops, even if other nodes have some).
fn write_cluster_ip(filter: &mut Table, nat: &mut Table, plan: &PortPlan) {
    if plan.has_internal {
        nat.append("KUBE-SERVICES", Rule::new(plan.vip("cluster IP", plan.cluster_ip), jump(plan.internal_chain())).for_(Purpose::ClusterIp));
    } else {
        filter.append("KUBE-SERVICES", plan.refused_vip(plan.cluster_ip));
    }
}

/// External IPs go to KUBE-EXT whenever the port has endpoints anywhere,
/// even if an external Local policy has none here: KUBE-EXT still sends
/// Pods and the node itself on to the Cluster policy. What KUBE-EXT
/// leaves un-DNATed is refused in `KUBE-EXTERNAL-SERVICES`.
fn write_external_ips(filter: &mut Table, nat: &mut Table, plan: &PortPlan) {
    for ip in &plan.svc.spec.external_ips {
        if plan.has_endpoints {
            nat.append("KUBE-SERVICES", Rule::new(plan.vip("external IP", *ip), jump(&plan.ext_chain)).for_(Purpose::ExternalIp));
        }
        if !plan.has_external {
            filter.append("KUBE-EXTERNAL-SERVICES", plan.refused_vip(*ip));
        }
    }
}

/// Balancer IPs go to KUBE-FW when loadBalancerSourceRanges applies,
/// else to KUBE-EXT. With KUBE-FW, `KUBE-PROXY-FIREWALL` in filter drops
/// what it let through un-DNATed (a source outside the ranges). The
/// refusals for a port without external endpoints come after, in a loop
/// of their own as upstream writes them.
fn write_balancer_ips(filter: &mut Table, nat: &mut Table, plan: &PortPlan) {
    for ip in &plan.lb_vips {
        if plan.has_endpoints {
            nat.append("KUBE-SERVICES", Rule::new(plan.vip("loadbalancer IP", *ip), jump(plan.lb_chain())).for_(Purpose::LoadBalancerIp));
        }
        if plan.uses_fw {
            let c = format!("{} traffic not accepted by {}", plan.name, plan.fw_chain);
            filter.append("KUBE-PROXY-FIREWALL", Rule::new(plan.vip_matches(c, *ip), Target::Drop).for_(Purpose::SourceRangeDrop));
        }
    }
    if !plan.has_external {
        for ip in &plan.lb_vips {
            filter.append("KUBE-EXTERNAL-SERVICES", plan.refused_vip(*ip));
        }
    }
}

/// The node port jumps from `KUBE-NODEPORTS` to KUBE-EXT (source ranges
/// never apply to node ports). With localhost node ports and nfacct, a
/// first copy for 127.0.0.0/8 destinations only counts them. Without
/// external endpoints, `KUBE-EXTERNAL-SERVICES` refuses the port on every
/// local address.
fn write_node_port(filter: &mut Table, nat: &mut Table, plan: &PortPlan, cfg: &KubeProxyConfig) {
    let Some(np) = plan.node_port else { return };
    let proto = plan.port.protocol;
    if plan.has_endpoints {
        if cfg.localhost_node_ports && cfg.node_features.nfacct {
            let m = vec![
                comment(&plan.name),
                Match::Protocol(proto),
                Match::Destination { cidr: LOOPBACK, negate: false },
                Match::DestinationPort(np),
                Match::Nfacct(LOCALHOST_NODE_PORT_COUNTER.into()),
            ];
            nat.append("KUBE-NODEPORTS", Rule::new(m, jump(&plan.ext_chain)).for_(Purpose::NodePort));
        }
        nat.append("KUBE-NODEPORTS", Rule::new(vec![comment(&plan.name), Match::Protocol(proto), Match::DestinationPort(np)], jump(&plan.ext_chain)).for_(Purpose::NodePort));
    }
    if !plan.has_external {
        let m = vec![comment(&plan.refusal_comment), Match::DstTypeLocal { negate: false }, Match::Protocol(proto), Match::DestinationPort(np)];
        filter.append("KUBE-EXTERNAL-SERVICES", plan.refusal(m));
    }
}

/// The health check node port of an `externalTrafficPolicy: Local`
/// balancer is accepted whether or not this node has endpoints: the
/// balancer's probes must be answered (by kube-proxy's health server,
/// which says whether the node has local endpoints) to steer traffic.
fn write_health_check_node_port(filter: &mut Table, plan: &PortPlan) {
    let spec = &plan.svc.spec;
    let Some(hc) = spec.health_check_node_port.filter(|_| plan.etp_local && spec.type_ == ServiceType::LoadBalancer) else { return };
    filter.append(
        "KUBE-NODEPORTS",
        Rule::new(vec![comment(format!("{} health check node port", plan.name)), Match::Protocol(crate::net::Protocol::Tcp), Match::DestinationPort(hc)], Target::Accept)
            .for_(Purpose::HealthCheckNodePort),
    );
}

/// The first rule of the internal policy chain marks cluster IP traffic
/// for masquerade: all of it with masqueradeAll, else what does not come
/// from a Pod (outside clusterCIDR). Upstream's reason: off-cluster
/// clients may route the Service range to any node, and the endpoint may
/// be on another one, so the reply has to come back through this node.
fn write_internal_masquerade(nat: &mut Table, plan: &PortPlan, cfg: &KubeProxyConfig) {
    if !plan.has_internal {
        return;
    }
    if cfg.masquerade_all {
        nat.append(plan.internal_chain(), Rule::new(plan.vip("cluster IP", plan.cluster_ip), jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
    } else if let Some(cc) = cfg.cluster_cidr {
        let mut m = plan.vip("cluster IP", plan.cluster_ip);
        m.push(Match::Source { cidr: cc, negate: true });
        nat.append(plan.internal_chain(), Rule::new(m, jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
    }
}

/// KUBE-EXT, where all external traffic goes. With a Cluster external
/// policy it masquerades everything, as the endpoint may be on another
/// node. With Local it keeps client addresses, but two sources take the
/// Cluster policy instead: Pods (told apart by clusterCIDR), as if they
/// had gone out to the balancer and come back; and the node itself,
/// masqueraded because its source address would be the local VIP. The
/// rest goes to the external policy chain if that has endpoints, or falls
/// through to the filter table's refusal.
fn write_external_chain(nat: &mut Table, plan: &PortPlan, cfg: &KubeProxyConfig) {
    if !plan.uses_ext {
        return;
    }
    let (name, ext) = (&plan.name, plan.ext_chain.as_str());
    if !plan.etp_local {
        nat.append(ext, Rule::new(vec![comment(format!("masquerade traffic for {name} external destinations"))], jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
    } else {
        if let Some(cc) = cfg.cluster_cidr {
            nat.append(ext, Rule::new(vec![comment(format!("pod traffic for {name} external destinations")), Match::Source { cidr: cc, negate: false }], jump(&plan.svc_chain)));
        }
        nat.append(
            ext,
            Rule::new(vec![comment(format!("masquerade LOCAL traffic for {name} external destinations")), Match::SrcTypeLocal { negate: false }], jump("KUBE-MARK-MASQ"))
                .for_(Purpose::MarkMasquerade),
        );
        nat.append(ext, Rule::new(vec![comment(format!("route LOCAL traffic for {name} external destinations")), Match::SrcTypeLocal { negate: false }], jump(&plan.svc_chain)));
    }
    if plan.has_external {
        nat.append(ext, Rule::new(vec![], jump(plan.external_policy_chain())));
    }
}

/// KUBE-FW, for loadBalancerSourceRanges (which only works with
/// balancers that keep the client's address): each allowed range jumps
/// on to KUBE-EXT. If a range holds the node's own IP, the balancer IPs
/// are allowed as sources too: a node that has the VIP as a local address
/// reaches it directly, with the VIP as its source. The last rule only
/// comments; what gets past it was not DNATed, and `KUBE-PROXY-FIREWALL`
/// drops it.
fn write_firewall_chain(nat: &mut Table, plan: &PortPlan, node_ip: Ipv4Addr) {
    if !plan.uses_fw {
        return;
    }
    let c = || comment(format!("{} loadbalancer IP", plan.name));
    let mut from_node = false;
    for cidr in &plan.svc.spec.load_balancer_source_ranges {
        nat.append(&plan.fw_chain, Rule::new(vec![c(), Match::Source { cidr: *cidr, negate: false }], jump(&plan.ext_chain)));
        from_node |= cidr.contains(node_ip);
    }
    if from_node {
        for ip in &plan.lb_vips {
            nat.append(&plan.fw_chain, Rule::new(vec![c(), Match::Source { cidr: Cidr::new(*ip, 32), negate: false }], jump(&plan.ext_chain)));
        }
    }
    nat.append(&plan.fw_chain, Rule::new(vec![comment(format!("other traffic to {} will be dropped by KUBE-PROXY-FIREWALL", plan.name))], Target::Nothing));
}

/// KUBE-SVC and KUBE-SVL each pick one of their policy's endpoints.
fn write_endpoint_picks(nat: &mut Table, plan: &PortPlan) {
    if plan.uses_cluster_chain {
        write_picks(nat, plan, &plan.svc_chain, &plan.cluster_eps);
    }
    if plan.uses_local_chain {
        write_picks(nat, plan, &plan.svl_chain, &plan.local_eps);
    }
}

/// One policy chain's picks. With ClientIP affinity, first one `recent
/// --rcheck` rule per endpoint sends a client seen within the timeout back
/// to the endpoint it had. Then the random picks: the i-th of n endpoints
/// (from 0) matches with probability 1/(n-i), which gives each 1/n
/// overall, and the last one takes what is left without a match.
fn write_picks(nat: &mut Table, plan: &PortPlan, chain: &str, eps: &[&PortEndpoint]) {
    let name = &plan.name;
    if let Some(secs) = plan.affinity {
        for e in eps {
            let sep = plan.sep_chain(e);
            let recent = Match::RecentCheck { name: sep, seconds: secs };
            nat.append(chain, Rule::new(vec![comment(format!("{name} -> {}", e.addr)), recent], jump(&plan.sep_chain(e))).for_(Purpose::EndpointPick));
        }
    }
    let n = eps.len();
    for (i, e) in eps.iter().enumerate() {
        let mut m = vec![comment(format!("{name} -> {}", e.addr))];
        if i + 1 < n {
            m.push(Match::Probability(1.0 / (n - i) as f64));
        }
        nat.append(chain, Rule::new(m, jump(&plan.sep_chain(e))).for_(Purpose::EndpointPick));
    }
}

/// One KUBE-SEP chain per endpoint either policy uses. First, a packet
/// from the endpoint itself (a Pod reaching itself through its Service)
/// is marked for masquerade: without it the Pod would answer its own
/// address directly, past the conntrack entry that undoes the DNAT. Then
/// the DNAT, which with affinity also records the client in the
/// endpoint's `recent` list.
fn write_endpoint_chains(nat: &mut Table, plan: &PortPlan) {
    for e in &plan.reachable {
        let sep = plan.sep_chain(e);
        let hairpin = vec![comment(&plan.name), Match::Source { cidr: Cidr::new(e.addr.ip, 32), negate: false }];
        nat.append(&sep, Rule::new(hairpin, jump("KUBE-MARK-MASQ")).for_(Purpose::MarkMasquerade));
        let mut m = vec![comment(&plan.name)];
        if plan.affinity.is_some() {
            m.push(Match::RecentSet { name: sep.clone() });
        }
        m.push(Match::Protocol(plan.port.protocol));
        nat.append(&sep, Rule::new(m, Target::Dnat(e.addr)).for_(Purpose::EndpointDnat));
    }
}

/// Reads one node's typed rules back into a summary of what they do for
/// Service `namespace/name`, for the node's card.
pub fn summarise(rules: &NodeRules, namespace: &str, name: &str) -> Vec<RuleSummary> {
    let (nat, filter) = (&rules.nat, &rules.filter);
    let line = |table, chain: &str, i: usize| rules.line_of(&RuleRef { table, chain: chain.into(), index: i });
    let nat_line = |chain: &str, i: usize| line(nat.name, chain, i);
    let chain_lines = |chain: &str| -> Vec<usize> { nat.chain(chain).map_or(Vec::new(), |c| (0..c.rules.len()).filter_map(|i| nat_line(chain, i)).collect()) };
    let mut out = Vec::new();
    for sp in rules.services.iter().filter(|s| s.is_port_of(namespace, name)) {
        if let Some(services) = nat.chain("KUBE-SERVICES") {
            for (i, r) in services.rules.iter().enumerate() {
                let (Target::Jump(t), Some(addr)) = (&r.target, rule_addr(&r.matches)) else { continue };
                let lines: Vec<usize> = nat_line("KUBE-SERVICES", i).into_iter().collect();
                let to_ext = Some(t) == sp.ext_chain.as_ref() || Some(t) == sp.fw_chain.as_ref();
                let internal = *t == sp.svc_chain || Some(t) == sp.svl_chain.as_ref();
                match r.purpose {
                    Some(Purpose::ExternalIp) if to_ext => out.push(RuleSummary::ExternalIp { addr, lines }),
                    _ if internal => out.push(RuleSummary::ClusterIp { addr, lines }),
                    _ if to_ext => out.push(RuleSummary::LoadBalancerIp { addr, lines }),
                    _ => {}
                }
            }
        }
        if let Some(services) = filter.chain("KUBE-SERVICES") {
            for (i, r) in services.rules.iter().enumerate() {
                if r.target == Target::Reject && r.owner.as_deref() == Some(sp.port_name.as_str()) {
                    if let Some(addr) = rule_addr(&r.matches) {
                        out.push(RuleSummary::Reject { addr, lines: line(filter.name, "KUBE-SERVICES", i).into_iter().collect() });
                    }
                }
            }
        }
        if let (Some(ext), Some(np)) = (&sp.ext_chain, nat.chain("KUBE-NODEPORTS")) {
            for (i, r) in np.rules.iter().enumerate() {
                if r.target != Target::Jump(ext.clone()) {
                    continue;
                }
                // Only the node port's own rules: the KUBE-EXT chain they
                // jump to is shared with balancer and external IPs. The
                // copy for 127.0.0.0/8 (a localhost node port, counted by
                // nfacct) is the same node port: one summary holds both.
                let Some(port) = r.matches.iter().find_map(|m| if let Match::DestinationPort(p) = m { Some(*p) } else { None }) else { continue };
                let line = nat_line("KUBE-NODEPORTS", i);
                match out.iter_mut().find_map(|s| match s {
                    RuleSummary::NodePort { port: p, lines } if *p == port => Some(lines),
                    _ => None,
                }) {
                    Some(lines) => lines.extend(line),
                    None => out.push(RuleSummary::NodePort { port, lines: line.into_iter().collect() }),
                }
            }
        }
        let targets: Vec<SockAddr> = sp
            .sep_chains
            .iter()
            .filter_map(|c| nat.chain(c)?.rules.iter().find_map(|r| if let Target::Dnat(a) = r.target { Some(a) } else { None }))
            .collect();
        if !targets.is_empty() {
            let mut lines = chain_lines(&sp.svc_chain);
            for c in sp.svl_chain.iter().chain(&sp.sep_chains) {
                lines.extend(chain_lines(c));
            }
            out.push(RuleSummary::Endpoints { targets, lines });
        }
    }
    out
}

/// The address and port a KUBE-SERVICES rule matches.
fn rule_addr(m: &[Match]) -> Option<SockAddr> {
    let ip = m.iter().find_map(|x| if let Match::Destination { cidr, negate: false } = x { Some(cidr.addr) } else { None })?;
    let port = m.iter().find_map(|x| if let Match::DestinationPort(p) = x { Some(*p) } else { None })?;
    Some(SockAddr::new(ip, port))
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

    /// With both traffic policies Local, a node port's KUBE-EXT chain still
    /// short-circuits Pods and the node to KUBE-SVC (upstream's
    /// UsesClusterEndpoints), so that chain must be written: every jump
    /// has a chain to land in. (The nftables mode's kernel test found this
    /// missing; iptables-restore refuses such a jump just as nft does.)
    #[test]
    fn with_both_policies_local_every_jump_lands_in_a_written_chain() {
        let mut svc = service("a", [10, 96, 0, 1]);
        svc.spec.type_ = ServiceType::NodePort;
        svc.spec.ports[0].node_port = Some(30080);
        svc.spec.external_traffic_policy = crate::api::TrafficPolicy::Local;
        svc.spec.internal_traffic_policy = crate::api::TrafficPolicy::Local;
        let node = Node { name: "other".into(), internal_ip: [10, 0, 0, 9].into(), pod_cidr: None };
        let rules = sync_node(&node, &[svc], &[slice("a", [10, 0, 0, 1], true)], &KubeProxyConfig::default());
        let mut jumps = 0;
        for t in [&rules.filter, &rules.nat] {
            for c in &t.chains {
                for r in &c.rules {
                    if let Target::Jump(to) = &r.target {
                        jumps += 1;
                        assert!(t.chain(to).is_some(), "{} jumps to {to}, which is not written:\n{}", c.name, rules.save().join("\n"));
                    }
                }
            }
        }
        assert!(jumps > 5, "only {jumps} jumps");
        assert!(rules.nat.chains.iter().any(|c| c.name.starts_with("KUBE-SVC-")), "no KUBE-SVC chain:\n{}", rules.save().join("\n"));
    }

    #[test]
    fn each_chain_says_what_it_was_made_for() {
        assert_eq!(chain_kind(&service_chain("ns1/svc1:p80", "tcp")), ChainKind::Service);
        assert_eq!(chain_kind(&external_chain("ns1/svc1:p80", "tcp")), ChainKind::External);
        assert_eq!(chain_kind(&endpoint_chain("ns1/svc1:p80", "tcp", "10.180.0.1:80")), ChainKind::Endpoint);
        assert_eq!(chain_kind("KUBE-SVL-GNZBNJ2PO5MGZ6GT"), ChainKind::ServiceLocal);
        assert_eq!(chain_kind("KUBE-FW-GNZBNJ2PO5MGZ6GT"), ChainKind::Firewall);
        assert_eq!(chain_kind("KUBE-SERVICES"), ChainKind::Services);
        assert_eq!(chain_kind("KUBE-NODEPORTS"), ChainKind::NodePorts);
        assert_eq!(chain_kind("KUBE-MARK-MASQ"), ChainKind::MarkMasquerade);
        assert_eq!(chain_kind("KUBE-POSTROUTING"), ChainKind::Masquerading);
        for other in ["PREROUTING", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-PROXY-FIREWALL", "IP-MASQ-AGENT", "DOCKER"] {
            assert_eq!(chain_kind(other), ChainKind::Other, "{other}");
        }
    }

    #[test]
    fn chain_names_match_kube_proxy() {
        // Known names from kube-proxy's own iptables proxier tests.
        assert_eq!(service_chain("ns1/svc1:p80", "tcp"), "KUBE-SVC-XPGD46QRK7WJZT7O");
        assert_eq!(endpoint_chain("ns1/svc1:p80", "tcp", "10.180.0.1:80"), "KUBE-SEP-SXIVWICOYRO3J4NJ");
        assert_eq!(external_chain("ns2/svc2:p80", "tcp"), "KUBE-EXT-GNZBNJ2PO5MGZ6GT");
    }
}
