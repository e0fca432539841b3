//! kube-proxy in nftables mode: from Services and EndpointSlices to the
//! `ip kube-proxy` table of one node.
//!
//! Where the iptables mode walks a list of rules per Service address, the
//! nftables mode looks addresses up in verdict maps: `services` finds
//! `daddr . proto . dport` in `service-ips` (cluster, external and
//! balancer IPs) or `proto . dport` in `service-nodeports`, and jumps to
//! the port's `service-…` chain (cluster traffic) or `external-…` chain
//! (traffic from outside). A `service-…` chain picks an endpoint with
//! `numgen random mod N vmap { … }`, and each `endpoint-…` chain DNATs to
//! one Pod. Addresses without endpoints are refused by the filter base
//! chains through `no-endpoint-services` and `no-endpoint-nodeports`;
//! other ports of a cluster IP, and unallocated cluster IPs, by
//! `cluster-ips-check`; balancer sources outside
//! `loadBalancerSourceRanges` by `firewall-check` and `firewall-ips`.
//!
//! Reference: kube-proxy's `pkg/proxy/nftables`. The test expectation
//! reproduced by `tests/nftables_upstream.rs` is proxier_test.go at commit
//! 81810de635aa13aa0a32992f6def3aa9d6025ebc (`TestOverallNFTablesRules`),
//! and that version of the ruleset is what this module writes. The nearest
//! proxier.go the look-up tools hold is at b0f823e6ccd8a10b3893fc75011b9981af39285c,
//! a little older: it names the pre-DNAT filter chains `filter-prerouting`
//! and `filter-output` at priority dstnat-10 (with `filter-input`,
//! `filter-forward` there too, and a `filter-output-post-dnat` at dstnat+10
//! for `cluster-ips-check`), and its cluster IP masquerade rule also
//! matches `tcp dport`. Where the two differ, this module follows the
//! test's expected output.
//!
//! Inside, everything is typed ([`Ruleset`], [`Chain`], [`Set`], [`Rule`],
//! [`Element`]); each rule and element says what it was written for
//! ([`Purpose`]) and for which service port (`owner`). Text is only made by
//! [`Ruleset::transaction`] (what kube-proxy hands to `nft -f`) and
//! [`Ruleset::list`] (what `nft list table` prints back, `listing`).

use crate::api::{EndpointSlice, Node, Service, ServicePort, ServiceType};
use crate::dataplane::kubeproxy::{KubeProxyConfig, NodePortAddresses, MASQ_MARK};
use crate::hash::sha256_base32;
use crate::dataplane::endpoints::{port_endpoints, PortEndpoint, PortPolicy};
use crate::net::{Cidr, Protocol, SockAddr};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::Ipv4Addr;

mod listing;
pub mod resync;
mod view;
pub mod walk;

pub use view::is_port_of;

pub use walk::{reachable, traverse, Context, Outcome, Traversal};

/// The table kube-proxy owns; every chain, set and map is inside it.
pub const TABLE: &str = "kube-proxy";
/// The table's comment.
pub const TABLE_COMMENT: &str = "rules for kube-proxy";

// The fixed chains, sets and maps.
pub const FILTER_PREROUTING_PRE_DNAT: &str = "filter-prerouting-pre-dnat";
pub const FILTER_OUTPUT_PRE_DNAT: &str = "filter-output-pre-dnat";
pub const FILTER_INPUT: &str = "filter-input";
pub const FILTER_FORWARD: &str = "filter-forward";
pub const FILTER_OUTPUT: &str = "filter-output";
pub const NAT_PREROUTING: &str = "nat-prerouting";
pub const NAT_OUTPUT: &str = "nat-output";
pub const NAT_POSTROUTING: &str = "nat-postrouting";
pub const SERVICES: &str = "services";
pub const SERVICE_IPS: &str = "service-ips";
pub const SERVICE_NODEPORTS: &str = "service-nodeports";
pub const NODEPORT_IPS: &str = "nodeport-ips";
pub const CLUSTER_IPS: &str = "cluster-ips";
pub const SERVICE_ENDPOINTS_CHECK: &str = "service-endpoints-check";
pub const NODEPORT_ENDPOINTS_CHECK: &str = "nodeport-endpoints-check";
pub const NO_ENDPOINT_SERVICES: &str = "no-endpoint-services";
pub const NO_ENDPOINT_NODEPORTS: &str = "no-endpoint-nodeports";
pub const REJECT_CHAIN: &str = "reject-chain";
pub const CLUSTER_IPS_CHECK: &str = "cluster-ips-check";
pub const FIREWALL_IPS: &str = "firewall-ips";
pub const FIREWALL_CHECK: &str = "firewall-check";
pub const MARK_FOR_MASQUERADE: &str = "mark-for-masquerade";
pub const MASQUERADING: &str = "masquerading";

/// What kube-proxy's nftables mode reads besides the Services and slices:
/// the shared settings of [`KubeProxyConfig`] (`clusterCIDR` for telling
/// Pods apart, `masqueradeAll`, `hostnameOverride`; the iptables-only
/// ones are ignored) and what only this mode uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NftablesConfig {
    pub proxy: KubeProxyConfig,
    /// `nodePortAddresses`: node ports answer only on the node's addresses
    /// inside these prefixes (the `nodeport-ips` set). Empty, or holding
    /// 0.0.0.0/0, means every local address but 127.0.0.0/8, and then the
    /// set is not created.
    pub node_port_addresses: Vec<Cidr>,
    /// The ServiceCIDRs: traffic to an address inside them that is no
    /// Service's cluster IP is dropped. Empty: no such rule.
    pub service_cidrs: Vec<Cidr>,
    /// The node's addresses besides its InternalIP (other interfaces,
    /// loopback), for `nodePortAddresses`.
    pub local_addresses: Vec<Ipv4Addr>,
    /// The masquerade mark (`--masquerade-bit`, 14 by default).
    pub masquerade_mark: u32,
}

impl Default for NftablesConfig {
    fn default() -> Self {
        NftablesConfig::new(KubeProxyConfig::default())
    }
}

impl NftablesConfig {
    /// The nftables settings at their defaults, around `proxy`.
    pub fn new(proxy: KubeProxyConfig) -> NftablesConfig {
        NftablesConfig { proxy, node_port_addresses: Vec::new(), service_cidrs: Vec::new(), local_addresses: Vec::new(), masquerade_mark: MASQ_MARK }
    }

    /// The settings kube-proxy in nftables mode has on `node`: the shared
    /// ones of `proxy`, its `nodePortAddresses` resolved against the node
    /// (`primary` is the node's InternalIP), and the node's own address.
    /// The ServiceCIDRs come from elsewhere (the API server's range), so
    /// they stay empty here.
    pub fn for_node(proxy: KubeProxyConfig, node: &Node) -> NftablesConfig {
        let node_port_addresses = match &proxy.node_port_addresses {
            NodePortAddresses::All => Vec::new(),
            NodePortAddresses::Primary => vec![Cidr::new(node.internal_ip, 32)],
            NodePortAddresses::Cidrs(c) => c.clone(),
        };
        NftablesConfig { node_port_addresses, ..NftablesConfig::new(proxy) }
    }

    /// Node ports answer on every local address (no `nodeport-ips` set).
    fn node_ports_everywhere(&self) -> bool {
        self.node_port_addresses.is_empty() || self.node_port_addresses.iter().any(|c| c.prefix == 0)
    }
}

/// A base chain's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChainType {
    Filter,
    Nat,
}

/// The netfilter hook a base chain is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Hook {
    Prerouting,
    Input,
    Forward,
    Output,
    Postrouting,
}

/// A base chain's priority: a named standard priority plus an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Priority {
    /// `filter` (0).
    Filter(i32),
    /// `dstnat` (-100 in the ip family).
    DstNat(i32),
    /// `srcnat` (100 in the ip family).
    SrcNat(i32),
}

impl Priority {
    /// The number nft takes (knftables writes priorities as numbers).
    pub fn value(self) -> i32 {
        match self {
            Priority::Filter(o) => o,
            Priority::DstNat(o) => -100 + o,
            Priority::SrcNat(o) => 100 + o,
        }
    }
}

/// What makes a chain a base chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseChain {
    pub type_: ChainType,
    pub hook: Hook,
    pub priority: Priority,
}

/// What a rule or an element was written for. Not rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Purpose {
    /// The table's wiring: jumps from base chains, the dispatch lookups,
    /// the helpers' fixed rules.
    Plumbing,
    /// `service-ips`: a cluster IP to its internal policy chain.
    ClusterIp,
    /// `service-ips`: one of `spec.externalIPs` to the external chain.
    ExternalIp,
    /// `service-ips`: a balancer IP to the external chain.
    LoadBalancerIp,
    /// `service-nodeports`: the node port to the external chain.
    NodePort,
    /// `cluster-ips`: a cluster IP in use.
    ActiveClusterIp,
    /// `nodeport-ips`: an address node ports answer on.
    NodePortAddress,
    /// `cluster-ips-check`: another port of a cluster IP, or an unallocated one.
    ClusterIpCheck,
    /// `no-endpoint-…`: rejected, the port has no endpoints at all.
    NoEndpoints,
    /// `no-endpoint-…`: dropped, a Local policy finds no endpoint here.
    NoLocalEndpoints,
    /// `firewall-ips` and the `firewall-…` chain: loadBalancerSourceRanges.
    SourceRanges,
    /// Marks a packet for masquerade.
    MarkMasquerade,
    /// `external-…` with a Local policy: Pods and the node itself take
    /// the Cluster policy.
    ShortCircuit,
    /// `external-…`: on to the external policy chain.
    ExternalPolicy,
    /// ClientIP affinity: the set, the look-up and the update.
    Affinity,
    /// The random pick of an endpoint.
    EndpointPick,
    /// The DNAT to one endpoint.
    EndpointDnat,
}

/// An address, or a prefix, as a rule names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Addr {
    Ip(Ipv4Addr),
    Net(Cidr),
}

/// What `ip saddr` or `ip daddr` is compared with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AddrMatch {
    /// One address or prefix.
    Is(Addr),
    /// A named set (`@name`).
    InSet(String),
    /// An anonymous set (`{ a , b }`). kube-proxy joins the service CIDRs
    /// with a bare `,` (`compact`) and the source ranges with ` , `.
    InAnon { items: Vec<Addr>, compact: bool },
}

/// Which address of the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dir {
    Saddr,
    Daddr,
}

/// One match of a rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Match {
    /// `ip saddr|daddr [!=] …`.
    Ip { dir: Dir, negate: bool, what: AddrMatch },
    /// `fib saddr|daddr type local`: the address is one of the node's.
    FibLocal(Dir),
    /// `ct state new`.
    CtStateNew,
    /// `mark and M == 0`: the masquerade bit is not set.
    MarkClear(u32),
    /// `meta l4proto tcp`.
    L4Proto(Protocol),
}

/// One part of a concatenated look-up key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    /// `ip daddr`.
    Daddr,
    /// `ip saddr`.
    Saddr,
    /// `meta l4proto`.
    L4Proto,
    /// `th dport`.
    ThDport,
}

/// A verdict, in a rule or as a map's value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    Accept,
    Drop,
    Return,
    Jump(String),
    Goto(String),
}

/// What a rule does once its matches hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    Verdict(Verdict),
    /// `reject`.
    Reject,
    /// `KEY vmap @map`: look the key up, apply the verdict found.
    Vmap { key: Vec<Selector>, map: String },
    /// `numgen random mod N vmap { 0 : goto a , … }`: one of the chains at random.
    RandomGoto(Vec<String>),
    /// `mark set mark or M`.
    MarkOr(u32),
    /// `mark set mark xor M`.
    MarkXor(u32),
    /// `masquerade fully-random`.
    MasqueradeFullyRandom,
    /// `update @set { KEY }`: record the key (with the set's timeout).
    Update { set: String, key: Selector },
    /// `dnat to ip:port`.
    Dnat(SockAddr),
}

/// One rule of a chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub matches: Vec<Match>,
    pub action: Action,
    pub comment: Option<String>,
    pub purpose: Purpose,
    /// The service port it was written for (`ns/name:port`), if any.
    pub owner: Option<String>,
}

/// A chain: a base chain (attached to a hook) or a regular one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chain {
    pub name: String,
    pub base: Option<BaseChain>,
    pub comment: Option<String>,
    pub rules: Vec<Rule>,
    pub owner: Option<String>,
}

/// The type of one part of a set's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyType {
    Ipv4Addr,
    InetProto,
    InetService,
}

/// A set's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetFlag {
    Dynamic,
    Timeout,
}

/// One part of an element's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyPart {
    Ip(Ipv4Addr),
    Proto(Protocol),
    Port(u16),
}

/// An element of a set, or of a verdict map (with its verdict).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Element {
    pub key: Vec<KeyPart>,
    pub verdict: Option<Verdict>,
    pub comment: Option<String>,
    pub purpose: Purpose,
    pub owner: Option<String>,
}

/// A named set, or a verdict map (`verdict_map`: its elements carry verdicts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Set {
    pub name: String,
    pub key: Vec<KeyType>,
    pub verdict_map: bool,
    pub flags: Vec<SetFlag>,
    /// Seconds an element lives (`timeout Ns`).
    pub timeout: Option<u32>,
    pub comment: Option<String>,
    pub elements: Vec<Element>,
    pub owner: Option<String>,
}

/// One port's chain names, for displays of a single Service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServicePortChains {
    /// `ns/name:port`.
    pub port_name: String,
    /// The chains of this port that exist, in the order they were declared.
    pub chains: Vec<String>,
    /// Its affinity sets.
    pub sets: Vec<String>,
}

/// The `ip kube-proxy` table of one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ruleset {
    pub node: String,
    pub comment: String,
    pub chains: Vec<Chain>,
    pub sets: Vec<Set>,
    pub services: Vec<ServicePortChains>,
}

impl Ruleset {
    fn new(node: &str) -> Ruleset {
        Ruleset { node: node.into(), comment: TABLE_COMMENT.into(), chains: Vec::new(), sets: Vec::new(), services: Vec::new() }
    }

    pub fn chain(&self, name: &str) -> Option<&Chain> {
        self.chains.iter().find(|c| c.name == name)
    }

    pub fn set(&self, name: &str) -> Option<&Set> {
        self.sets.iter().find(|s| s.name == name)
    }

    /// Declares a chain once; later calls keep the first declaration.
    fn ensure_chain(&mut self, name: &str, owner: Option<&str>) {
        if self.chain(name).is_none() {
            self.chains.push(Chain { name: name.into(), base: None, comment: None, rules: Vec::new(), owner: owner.map(String::from) });
        }
    }

    fn chain_mut(&mut self, name: &str) -> &mut Chain {
        let i = self.chains.iter().position(|c| c.name == name).unwrap_or_else(|| panic!("chain {name} is declared before its rules"));
        &mut self.chains[i]
    }

    fn push_rule(&mut self, chain: &str, rule: Rule) {
        self.chain_mut(chain).rules.push(rule);
    }

    fn add_set(&mut self, set: Set) {
        if self.set(&set.name).is_none() {
            self.sets.push(set);
        }
    }

    /// Adds an element unless one with the same key is there (nft keeps
    /// one element per key; kube-proxy adds each once).
    fn add_element(&mut self, set: &str, e: Element) {
        let s = self.sets.iter_mut().find(|s| s.name == set).unwrap_or_else(|| panic!("set {set} is declared before its elements"));
        if !s.elements.iter().any(|x| x.key == e.key) {
            s.elements.push(e);
        }
    }

    /// The ruleset as `add` commands in knftables' syntax, the form
    /// kube-proxy's transaction (and its tests' fake dump) uses, and one
    /// `nft -f` takes: the table, the sets and maps, the chains, each
    /// chain's rules in order, then the elements. kube-proxy's real
    /// transaction also flushes each chain and map it rewrites and deletes
    /// stale ones; on a fresh node these lines build the same table.
    pub fn transaction(&self) -> Vec<String> {
        let mut out = vec![format!("add table ip {TABLE} {{ comment {} ; }}", quote(&self.comment))];
        out.extend(self.sets.iter().map(render_set));
        out.extend(self.chains.iter().map(render_chain));
        for c in &self.chains {
            out.extend(c.rules.iter().map(|r| format!("add rule ip {TABLE} {} {}", c.name, r.render())));
        }
        for s in &self.sets {
            out.extend(s.elements.iter().map(|e| format!("add element ip {TABLE} {} {{ {} }}", s.name, e.render())));
        }
        out
    }
}

/// A string as Go's `%q` writes these (comments hold no control characters).
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn render_set(s: &Set) -> String {
    let kind = if s.verdict_map { "map" } else { "set" };
    let mut ty = s.key.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(" . ");
    if s.verdict_map {
        ty.push_str(" : verdict");
    }
    let mut out = format!("add {kind} ip {TABLE} {} {{ type {ty} ;", s.name);
    if !s.flags.is_empty() {
        let f: Vec<&str> = s.flags.iter().map(|f| f.as_str()).collect();
        out.push_str(&format!(" flags {} ;", f.join(",")));
    }
    if let Some(t) = s.timeout {
        out.push_str(&format!(" timeout {t}s ;"));
    }
    if let Some(c) = &s.comment {
        out.push_str(&format!(" comment {} ;", quote(c)));
    }
    out.push_str(" }");
    out
}

fn render_chain(c: &Chain) -> String {
    let mut out = format!("add chain ip {TABLE} {}", c.name);
    if c.base.is_some() || c.comment.is_some() {
        out.push_str(" {");
        if let Some(b) = c.base {
            out.push_str(&format!(" type {} hook {} priority {} ;", b.type_.as_str(), b.hook.as_str(), b.priority.value()));
        }
        if let Some(cm) = &c.comment {
            out.push_str(&format!(" comment {} ;", quote(cm)));
        }
        out.push_str(" }");
    }
    out
}

impl SetFlag {
    pub fn as_str(self) -> &'static str {
        match self {
            SetFlag::Dynamic => "dynamic",
            SetFlag::Timeout => "timeout",
        }
    }
}

impl KeyType {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Ipv4Addr => "ipv4_addr",
            KeyType::InetProto => "inet_proto",
            KeyType::InetService => "inet_service",
        }
    }
}

impl ChainType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChainType::Filter => "filter",
            ChainType::Nat => "nat",
        }
    }
}

impl Hook {
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Prerouting => "prerouting",
            Hook::Input => "input",
            Hook::Forward => "forward",
            Hook::Output => "output",
            Hook::Postrouting => "postrouting",
        }
    }
}

impl Addr {
    fn render(&self) -> String {
        match self {
            Addr::Ip(ip) => ip.to_string(),
            Addr::Net(c) => c.to_string(),
        }
    }
}

impl Dir {
    fn as_str(self) -> &'static str {
        match self {
            Dir::Saddr => "saddr",
            Dir::Daddr => "daddr",
        }
    }
}

impl Selector {
    fn as_str(self) -> &'static str {
        match self {
            Selector::Daddr => "ip daddr",
            Selector::Saddr => "ip saddr",
            Selector::L4Proto => "meta l4proto",
            Selector::ThDport => "th dport",
        }
    }
}

impl Verdict {
    pub fn render(&self) -> String {
        match self {
            Verdict::Accept => "accept".into(),
            Verdict::Drop => "drop".into(),
            Verdict::Return => "return".into(),
            Verdict::Jump(c) => format!("jump {c}"),
            Verdict::Goto(c) => format!("goto {c}"),
        }
    }
}

impl Match {
    pub fn render(&self) -> String {
        match self {
            Match::Ip { dir, negate, what } => {
                let op = if *negate { "!= " } else { "" };
                let value = match what {
                    AddrMatch::Is(a) => a.render(),
                    AddrMatch::InSet(s) => format!("@{s}"),
                    AddrMatch::InAnon { items, compact } => {
                        let items: Vec<String> = items.iter().map(Addr::render).collect();
                        format!("{{ {} }}", items.join(if *compact { "," } else { " , " }))
                    }
                };
                format!("ip {} {op}{value}", dir.as_str())
            }
            Match::FibLocal(dir) => format!("fib {} type local", dir.as_str()),
            Match::CtStateNew => "ct state new".into(),
            Match::MarkClear(m) => format!("mark and {} == 0", mark(*m)),
            Match::L4Proto(p) => format!("meta l4proto {}", p.lower()),
        }
    }
}

/// A mark as the upstream test configures it (`0x4000`). kube-proxy
/// itself formats the mark with Go's `%#08x`; nft reads either as the
/// same number.
fn mark(m: u32) -> String {
    format!("{m:#x}")
}

/// `numgen random mod N vmap { 0 : goto a<sep>1 : goto b … }`: knftables
/// writes ` , ` between the arms, nft lists them with `, `.
fn random_goto(chains: &[String], sep: &str) -> String {
    let arms: Vec<String> = chains.iter().enumerate().map(|(i, c)| format!("{i} : goto {c}")).collect();
    format!("numgen random mod {} vmap {{ {} }}", chains.len(), arms.join(sep))
}

fn key_text(key: &[Selector]) -> String {
    key.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" . ")
}

impl Action {
    pub fn render(&self) -> String {
        match self {
            Action::Verdict(v) => v.render(),
            Action::Reject => "reject".into(),
            Action::Vmap { key, map } => format!("{} vmap @{map}", key_text(key)),
            Action::RandomGoto(chains) => random_goto(chains, " , "),
            Action::MarkOr(m) => format!("mark set mark or {}", mark(*m)),
            Action::MarkXor(m) => format!("mark set mark xor {}", mark(*m)),
            Action::MasqueradeFullyRandom => "masquerade fully-random".into(),
            Action::Update { set, key } => format!("update @{set} {{ {} }}", key.as_str()),
            Action::Dnat(to) => format!("dnat to {to}"),
        }
    }
}

impl Rule {
    fn new(matches: Vec<Match>, action: Action, purpose: Purpose) -> Rule {
        Rule { matches, action, comment: None, purpose, owner: None }
    }

    fn with_comment(mut self, c: &str) -> Rule {
        self.comment = Some(c.into());
        self
    }

    fn owned(mut self, owner: &str) -> Rule {
        self.owner = Some(owner.into());
        self
    }

    /// The rule's text after `add rule ip kube-proxy CHAIN`.
    pub fn render(&self) -> String {
        self.text(Match::render, Action::render)
    }

    /// Matches, action and comment, each written by the given form
    /// (the transaction's here, `nft list`'s in `listing`).
    fn text(&self, m: fn(&Match) -> String, a: fn(&Action) -> String) -> String {
        let mut parts: Vec<String> = self.matches.iter().map(m).collect();
        parts.push(a(&self.action));
        if let Some(c) = &self.comment {
            parts.push(format!("comment {}", quote(c)));
        }
        parts.join(" ")
    }
}

impl Element {
    /// The key as nft writes it: `10.96.0.50 . tcp . 80`.
    pub fn key_text(&self) -> String {
        let key: Vec<String> = self.key.iter().map(|k| match k {
            KeyPart::Ip(ip) => ip.to_string(),
            KeyPart::Proto(p) => p.lower().to_string(),
            KeyPart::Port(p) => p.to_string(),
        }).collect();
        key.join(" . ")
    }

    /// The element's text inside `{ … }`.
    pub fn render(&self) -> String {
        let mut out = self.key_text();
        if let Some(c) = &self.comment {
            out.push_str(&format!(" comment {}", quote(c)));
        }
        if let Some(v) = &self.verdict {
            out.push_str(&format!(" : {}", v.render()));
        }
        out
    }
}

// ------------------------------------------------------------ chain names

/// knftables' limit on object names, and the room kube-proxy keeps for a
/// prefix such as `endpoint-`.
const NAME_LENGTH_MAX: usize = 256;
const PREFIX_LENGTH_MAX: usize = 16;

/// Prefixes `name` with the first 8 characters of the base32 SHA-256 of
/// itself (so similar names look different and truncated names stay
/// unique), cut to fit with `...` at the end if too long.
fn hashed(name: String) -> String {
    let max = NAME_LENGTH_MAX - PREFIX_LENGTH_MAX;
    let mut out = format!("{}-{name}", &sha256_base32(name.as_bytes())[..8]);
    if out.len() > max {
        out.truncate(max - 3);
        out.push_str("...");
    }
    out
}

/// The part after `service-`, `external-`, `firewall-` in a service
/// port's chain names: `HASH-namespace/name/protocol/port`.
pub fn port_chain_base(namespace: &str, name: &str, proto: Protocol, port_name: &str) -> String {
    hashed(format!("{namespace}/{name}/{}/{port_name}", proto.lower()))
}

/// The part after `endpoint-` and `affinity-` for one endpoint of a
/// service port: `HASH-namespace/name/protocol/port__ip/port`.
pub fn endpoint_chain_base(namespace: &str, name: &str, proto: Protocol, port_name: &str, endpoint: SockAddr) -> String {
    hashed(format!("{namespace}/{name}/{}/{port_name}__{}/{}", proto.lower(), endpoint.ip, endpoint.port))
}

// ------------------------------------------------------------ endpoints

// ------------------------------------------------------------ the sync

/// The base chains, each `type-hook`, as the test's expected ruleset has
/// them: filtering on pre-DNAT addresses (the firewall) before dstnat,
/// the endpoint and cluster IP checks after it.
const BASE_CHAINS: [(&str, ChainType, Hook, Priority); 8] = [
    (FILTER_PREROUTING_PRE_DNAT, ChainType::Filter, Hook::Prerouting, Priority::DstNat(-10)),
    (FILTER_OUTPUT_PRE_DNAT, ChainType::Filter, Hook::Output, Priority::DstNat(-10)),
    (FILTER_INPUT, ChainType::Filter, Hook::Input, Priority::Filter(0)),
    (FILTER_FORWARD, ChainType::Filter, Hook::Forward, Priority::Filter(0)),
    (FILTER_OUTPUT, ChainType::Filter, Hook::Output, Priority::Filter(0)),
    (NAT_PREROUTING, ChainType::Nat, Hook::Prerouting, Priority::DstNat(0)),
    (NAT_OUTPUT, ChainType::Nat, Hook::Output, Priority::DstNat(0)),
    (NAT_POSTROUTING, ChainType::Nat, Hook::Postrouting, Priority::SrcNat(0)),
];

/// The jumps from base chains to kube-proxy's top-level chains: (target,
/// from, only for new connections). The checks that reject run where
/// reject is allowed (input, forward, output).
const JUMPS: [(&str, &str, bool); 11] = [
    (NODEPORT_ENDPOINTS_CHECK, FILTER_INPUT, true),
    (SERVICE_ENDPOINTS_CHECK, FILTER_INPUT, true),
    (SERVICE_ENDPOINTS_CHECK, FILTER_FORWARD, true),
    (SERVICE_ENDPOINTS_CHECK, FILTER_OUTPUT, true),
    (FIREWALL_CHECK, FILTER_PREROUTING_PRE_DNAT, true),
    (FIREWALL_CHECK, FILTER_OUTPUT_PRE_DNAT, true),
    (SERVICES, NAT_OUTPUT, false),
    (SERVICES, NAT_PREROUTING, false),
    (MASQUERADING, NAT_POSTROUTING, false),
    (CLUSTER_IPS_CHECK, FILTER_FORWARD, true),
    (CLUSTER_IPS_CHECK, FILTER_OUTPUT, true),
];

const LOOPBACK: Cidr = Cidr { addr: Ipv4Addr::new(127, 0, 0, 0), prefix: 8 };

fn ip_match(dir: Dir, negate: bool, what: AddrMatch) -> Match {
    Match::Ip { dir, negate, what }
}

fn jump(c: &str) -> Action {
    Action::Verdict(Verdict::Jump(c.into()))
}

fn goto(c: &str) -> Action {
    Action::Verdict(Verdict::Goto(c.into()))
}

/// A verdict map over `KEY` with no flags.
fn vmap(name: &str, key: Vec<KeyType>, comment: &str) -> Set {
    Set { name: name.into(), key, verdict_map: true, flags: Vec::new(), timeout: None, comment: Some(comment.into()), elements: Vec::new(), owner: None }
}

fn addr_set(name: &str, comment: &str) -> Set {
    Set { name: name.into(), key: vec![KeyType::Ipv4Addr], verdict_map: false, flags: Vec::new(), timeout: None, comment: Some(comment.into()), elements: Vec::new(), owner: None }
}

const ADDR_PROTO_PORT: [KeyType; 3] = [KeyType::Ipv4Addr, KeyType::InetProto, KeyType::InetService];
const PROTO_PORT: [KeyType; 2] = [KeyType::InetProto, KeyType::InetService];
const DST_KEY: [Selector; 3] = [Selector::Daddr, Selector::L4Proto, Selector::ThDport];
const PORT_KEY: [Selector; 2] = [Selector::L4Proto, Selector::ThDport];

/// Writes the `ip kube-proxy` table for `node`, as kube-proxy's nftables
/// proxier does in one full sync. Services and slices in the order given;
/// each Service's ports in spec order.
pub fn sync_node(node: &Node, services: &[Service], slices: &[EndpointSlice], cfg: &NftablesConfig) -> Ruleset {
    let hostname = cfg.proxy.hostname_override.as_deref().unwrap_or(&node.name);
    let mut rs = Ruleset::new(&node.name);
    write_setup(&mut rs, node, cfg);
    let mut by_service: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
    for s in slices {
        by_service.entry((s.namespace.as_str(), s.service_name.as_str())).or_default().push(s);
    }
    for svc in services {
        if svc.spec.type_ == ServiceType::ExternalName || svc.spec.headless {
            continue;
        }
        let Some(cluster_ip) = svc.spec.cluster_ip else { continue };
        let slices: &[&EndpointSlice] = by_service.get(&(svc.namespace.as_str(), svc.name.as_str())).map_or(&[], |v| v.as_slice());
        for port in &svc.spec.ports {
            let eps = port_endpoints(slices, port, hostname);
            let plan = PortPlan::new(svc, port, cluster_ip, &eps);
            let chains_before = rs.chains.len();
            let sets_before = rs.sets.len();
            sync_port(&mut rs, &plan, node.internal_ip, cfg);
            let chains = rs.chains[chains_before..].iter().map(|c| c.name.clone()).collect();
            let sets = rs.sets[sets_before..].iter().map(|s| s.name.clone()).collect();
            rs.services.push(ServicePortChains { port_name: plan.name.clone(), chains, sets });
        }
    }
    rs
}

/// What kube-proxy writes before any Service: base chains and the jumps
/// from them, the masquerade helpers, the sets and maps, and the rules
/// that look packets up in them.
fn write_setup(rs: &mut Ruleset, node: &Node, cfg: &NftablesConfig) {
    for (name, type_, hook, priority) in BASE_CHAINS {
        rs.chains.push(Chain { name: name.into(), base: Some(BaseChain { type_, hook, priority }), comment: None, rules: Vec::new(), owner: None });
    }
    for (to, from, new_only) in JUMPS {
        rs.ensure_chain(to, None);
        let m = if new_only { vec![Match::CtStateNew] } else { Vec::new() };
        rs.push_rule(from, Rule::new(m, jump(to), Purpose::Plumbing));
    }
    for c in [SERVICES, CLUSTER_IPS_CHECK, MASQUERADING, MARK_FOR_MASQUERADE] {
        rs.ensure_chain(c, None);
    }
    write_masquerade(rs, cfg.masquerade_mark);
    write_cluster_ips_check(rs, cfg);
    write_node_port_ips(rs, node, cfg);
    write_no_endpoint_checks(rs, cfg);
    write_firewall_check(rs);
    write_dispatch(rs, cfg);
}

/// `mark-for-masquerade` sets the bit where a destination is chosen;
/// `masquerading` (from nat-postrouting) returns unmarked packets, clears
/// the bit so a packet looping through the stack is not masqueraded
/// twice, and masquerades with random source ports.
fn write_masquerade(rs: &mut Ruleset, m: u32) {
    rs.push_rule(MARK_FOR_MASQUERADE, Rule::new(vec![], Action::MarkOr(m), Purpose::MarkMasquerade));
    rs.push_rule(MASQUERADING, Rule::new(vec![Match::MarkClear(m)], Action::Verdict(Verdict::Return), Purpose::Plumbing));
    rs.push_rule(MASQUERADING, Rule::new(vec![], Action::MarkXor(m), Purpose::Plumbing));
    rs.push_rule(MASQUERADING, Rule::new(vec![], Action::MasqueradeFullyRandom, Purpose::Plumbing));
}

/// `cluster-ips` holds every cluster IP in use. A new connection to one
/// of them that no Service port took (after DNAT its address is still
/// the cluster IP) is rejected; one to an unallocated address of the
/// ServiceCIDRs is dropped.
fn write_cluster_ips_check(rs: &mut Ruleset, cfg: &NftablesConfig) {
    rs.add_set(addr_set(CLUSTER_IPS, "Active ClusterIPs"));
    let r = Rule::new(vec![ip_match(Dir::Daddr, false, AddrMatch::InSet(CLUSTER_IPS.into()))], Action::Reject, Purpose::ClusterIpCheck);
    rs.push_rule(CLUSTER_IPS_CHECK, r.with_comment("Reject traffic to invalid ports of ClusterIPs"));
    if !cfg.service_cidrs.is_empty() {
        let items = cfg.service_cidrs.iter().map(|c| Addr::Net(*c)).collect();
        let r = Rule::new(vec![ip_match(Dir::Daddr, false, AddrMatch::InAnon { items, compact: true })], Action::Verdict(Verdict::Drop), Purpose::ClusterIpCheck);
        rs.push_rule(CLUSTER_IPS_CHECK, r.with_comment("Drop traffic to unallocated ClusterIPs"));
    }
}

/// `nodeport-ips`: the node's addresses inside `nodePortAddresses`
/// (never loopback). Not created when node ports answer everywhere.
fn write_node_port_ips(rs: &mut Ruleset, node: &Node, cfg: &NftablesConfig) {
    if cfg.node_ports_everywhere() {
        return;
    }
    rs.add_set(addr_set(NODEPORT_IPS, "IPs that accept NodePort traffic"));
    let addrs = std::iter::once(node.internal_ip).chain(cfg.local_addresses.iter().copied());
    for ip in addrs.filter(|ip| !LOOPBACK.contains(*ip) && cfg.node_port_addresses.iter().any(|c| c.contains(*ip))) {
        rs.add_element(NODEPORT_IPS, Element { key: vec![KeyPart::Ip(ip)], verdict: None, comment: None, purpose: Purpose::NodePortAddress, owner: None });
    }
}

/// Which destinations a node port rule looks at: the `nodeport-ips` set,
/// or any address but loopback.
fn node_port_destination(cfg: &NftablesConfig) -> Match {
    if cfg.node_ports_everywhere() {
        ip_match(Dir::Daddr, true, AddrMatch::Is(Addr::Net(LOOPBACK)))
    } else {
        ip_match(Dir::Daddr, false, AddrMatch::InSet(NODEPORT_IPS.into()))
    }
}

/// The maps of addresses and node ports without (usable) endpoints, and
/// `reject-chain`, the verdict for "none at all" (a map's verdict cannot
/// be reject). The filter chains look up new connections in them.
fn write_no_endpoint_checks(rs: &mut Ruleset, cfg: &NftablesConfig) {
    rs.add_set(vmap(NO_ENDPOINT_SERVICES, ADDR_PROTO_PORT.to_vec(), "vmap to drop or reject packets to services with no endpoints"));
    rs.add_set(vmap(NO_ENDPOINT_NODEPORTS, PROTO_PORT.to_vec(), "vmap to drop or reject packets to service nodeports with no endpoints"));
    rs.chains.push(Chain { name: REJECT_CHAIN.into(), base: None, comment: Some("helper for @no-endpoint-services / @no-endpoint-nodeports".into()), rules: Vec::new(), owner: None });
    rs.push_rule(REJECT_CHAIN, Rule::new(vec![], Action::Reject, Purpose::NoEndpoints));
    rs.push_rule(SERVICE_ENDPOINTS_CHECK, Rule::new(vec![], Action::Vmap { key: DST_KEY.to_vec(), map: NO_ENDPOINT_SERVICES.into() }, Purpose::Plumbing));
    let m = vec![node_port_destination(cfg)];
    rs.push_rule(NODEPORT_ENDPOINTS_CHECK, Rule::new(m, Action::Vmap { key: PORT_KEY.to_vec(), map: NO_ENDPOINT_NODEPORTS.into() }, Purpose::Plumbing));
}

/// `firewall-ips`: balancer addresses with loadBalancerSourceRanges, to
/// their `firewall-…` chain, looked up before DNAT.
fn write_firewall_check(rs: &mut Ruleset) {
    rs.add_set(vmap(FIREWALL_IPS, ADDR_PROTO_PORT.to_vec(), "destinations that are subject to LoadBalancerSourceRanges"));
    rs.ensure_chain(FIREWALL_CHECK, None);
    rs.push_rule(FIREWALL_CHECK, Rule::new(vec![], Action::Vmap { key: DST_KEY.to_vec(), map: FIREWALL_IPS.into() }, Purpose::Plumbing));
}

/// `services`: Service addresses in `service-ips`, then node ports in
/// `service-nodeports` on the addresses that take them.
fn write_dispatch(rs: &mut Ruleset, cfg: &NftablesConfig) {
    rs.add_set(vmap(SERVICE_IPS, ADDR_PROTO_PORT.to_vec(), "ClusterIP, ExternalIP and LoadBalancer IP traffic"));
    rs.add_set(vmap(SERVICE_NODEPORTS, PROTO_PORT.to_vec(), "NodePort traffic"));
    rs.push_rule(SERVICES, Rule::new(vec![], Action::Vmap { key: DST_KEY.to_vec(), map: SERVICE_IPS.into() }, Purpose::Plumbing));
    let mut m = Vec::new();
    if cfg.node_ports_everywhere() {
        m.push(Match::FibLocal(Dir::Daddr));
    }
    m.push(node_port_destination(cfg));
    rs.push_rule(SERVICES, Rule::new(m, Action::Vmap { key: PORT_KEY.to_vec(), map: SERVICE_NODEPORTS.into() }, Purpose::Plumbing));
}

/// What kube-proxy settles about one service port before writing it.
struct PortPlan<'a> {
    svc: &'a Service,
    port: &'a ServicePort,
    /// `namespace/name:port`: the owner, and the no-endpoint comments.
    name: String,
    cluster_ip: Ipv4Addr,
    cluster_chain: String,
    local_chain: String,
    external_chain: String,
    firewall_chain: String,
    /// Balancer IPs kube-proxy captures (not ipMode Proxy).
    lb_vips: Vec<Ipv4Addr>,
    node_port: Option<u16>,
    cluster_eps: Vec<&'a PortEndpoint>,
    local_eps: Vec<&'a PortEndpoint>,
    reachable: Vec<&'a PortEndpoint>,
    has_endpoints: bool,
    itp_local: bool,
    etp_local: bool,
    uses_cluster_chain: bool,
    uses_local_chain: bool,
    has_internal: bool,
    has_external: bool,
    uses_external_chain: bool,
    uses_firewall_chain: bool,
    affinity: Option<u32>,
}

impl<'a> PortPlan<'a> {
    fn new(svc: &'a Service, port: &'a ServicePort, cluster_ip: Ipv4Addr, eps: &'a [PortEndpoint]) -> PortPlan<'a> {
        let port_name = port.name.as_deref().unwrap_or("");
        let base = port_chain_base(&svc.namespace, &svc.name, port.protocol, port_name);
        let PortPolicy { lb_vips, node_port, externally_accessible, etp_local, itp_local, uses_cluster, uses_local, cluster_eps, local_eps, reachable, has_endpoints, affinity } =
            PortPolicy::new(svc, port, eps);
        PortPlan {
            name: svc.port_name(port),
            cluster_ip,
            cluster_chain: format!("service-{base}"),
            local_chain: format!("local-{base}"),
            external_chain: format!("external-{base}"),
            firewall_chain: format!("firewall-{base}"),
            uses_cluster_chain: !cluster_eps.is_empty() && uses_cluster,
            uses_local_chain: !local_eps.is_empty() && uses_local,
            has_internal: has_endpoints && !(itp_local && local_eps.is_empty()),
            has_external: has_endpoints && !(etp_local && local_eps.is_empty()),
            uses_external_chain: has_endpoints && externally_accessible,
            // Unlike the iptables mode, whether or not there are endpoints.
            uses_firewall_chain: !lb_vips.is_empty() && !svc.spec.load_balancer_source_ranges.is_empty(),
            svc,
            port,
            lb_vips,
            node_port,
            cluster_eps,
            local_eps,
            reachable,
            has_endpoints,
            itp_local,
            etp_local,
            affinity,
        }
    }

    fn internal_chain(&self) -> &str {
        if self.itp_local { &self.local_chain } else { &self.cluster_chain }
    }

    fn external_policy_chain(&self) -> &str {
        if self.etp_local { &self.local_chain } else { &self.cluster_chain }
    }

    fn endpoint_base(&self, e: &PortEndpoint) -> String {
        endpoint_chain_base(&self.svc.namespace, &self.svc.name, self.port.protocol, self.port.name.as_deref().unwrap_or(""), e.addr)
    }

    fn endpoint_chain(&self, e: &PortEndpoint) -> String {
        format!("endpoint-{}", self.endpoint_base(e))
    }

    fn affinity_set(&self, e: &PortEndpoint) -> String {
        format!("affinity-{}", self.endpoint_base(e))
    }

    /// What a refused address gets: reject (through reject-chain) when no
    /// endpoint exists anywhere, drop when a Local policy has none here.
    fn refusal(&self) -> (Verdict, Purpose) {
        if self.has_endpoints {
            (Verdict::Drop, Purpose::NoLocalEndpoints)
        } else {
            (Verdict::Goto(REJECT_CHAIN.into()), Purpose::NoEndpoints)
        }
    }

    fn key(&self, ip: Ipv4Addr) -> Vec<KeyPart> {
        vec![KeyPart::Ip(ip), KeyPart::Proto(self.port.protocol), KeyPart::Port(self.port.port)]
    }

    fn element(&self, key: Vec<KeyPart>, verdict: Verdict, purpose: Purpose) -> Element {
        Element { key, verdict: Some(verdict), comment: None, purpose, owner: Some(self.name.clone()) }
    }

    /// A no-endpoint map element, commented with the port's name.
    fn refused(&self, key: Vec<KeyPart>) -> Element {
        let (v, p) = self.refusal();
        Element { comment: Some(self.name.clone()), ..self.element(key, v, p) }
    }
}

/// One service port, in the order kube-proxy's per-port loop works:
/// chains, then the map elements, then the chains' rules.
fn sync_port(rs: &mut Ruleset, plan: &PortPlan, node_ip: Ipv4Addr, cfg: &NftablesConfig) {
    declare_port_chains(rs, plan);
    write_addresses(rs, plan);
    write_internal_masquerade(rs, plan, cfg);
    write_external_chain(rs, plan, cfg);
    write_firewall_chain(rs, plan, node_ip);
    write_affinity_sets(rs, plan);
    if plan.uses_cluster_chain {
        write_picks(rs, plan, &plan.cluster_chain, &plan.cluster_eps);
    }
    if plan.uses_local_chain {
        write_picks(rs, plan, &plan.local_chain, &plan.local_eps);
    }
    write_endpoint_chains(rs, plan);
}

/// The chains the port uses: one per reachable endpoint, the policy
/// chains with endpoints, the external chain when the port has endpoints
/// and is reachable from outside, the firewall chain with source ranges.
fn declare_port_chains(rs: &mut Ruleset, plan: &PortPlan) {
    let owner = Some(plan.name.as_str());
    for e in &plan.reachable {
        rs.ensure_chain(&plan.endpoint_chain(e), owner);
    }
    if plan.uses_cluster_chain {
        rs.ensure_chain(&plan.cluster_chain, owner);
    }
    if plan.uses_local_chain {
        rs.ensure_chain(&plan.local_chain, owner);
    }
    if plan.uses_external_chain {
        rs.ensure_chain(&plan.external_chain, owner);
    }
    if plan.uses_firewall_chain {
        rs.ensure_chain(&plan.firewall_chain, owner);
    }
}

/// The port's addresses in the maps. The cluster IP goes to the internal
/// policy chain, or to `no-endpoint-services`. External and balancer IPs
/// and the node port go to the external chain whenever the port has
/// endpoints anywhere (the chain short-circuits Pods and the node even
/// with a Local policy and no endpoint here), and to the no-endpoint maps
/// when outside traffic has nowhere to go. Node ports are not subject to
/// source ranges.
fn write_addresses(rs: &mut Ruleset, plan: &PortPlan) {
    let owner = Some(plan.name.clone());
    rs.add_element(CLUSTER_IPS, Element { key: vec![KeyPart::Ip(plan.cluster_ip)], verdict: None, comment: None, purpose: Purpose::ActiveClusterIp, owner });
    if plan.has_internal {
        rs.add_element(SERVICE_IPS, plan.element(plan.key(plan.cluster_ip), Verdict::Goto(plan.internal_chain().into()), Purpose::ClusterIp));
    } else {
        rs.add_element(NO_ENDPOINT_SERVICES, plan.refused(plan.key(plan.cluster_ip)));
    }
    let to_external = || Verdict::Goto(plan.external_chain.clone());
    for ip in &plan.svc.spec.external_ips {
        if plan.has_endpoints {
            rs.add_element(SERVICE_IPS, plan.element(plan.key(*ip), to_external(), Purpose::ExternalIp));
        }
        if !plan.has_external {
            rs.add_element(NO_ENDPOINT_SERVICES, plan.refused(plan.key(*ip)));
        }
    }
    for ip in &plan.lb_vips {
        if plan.has_endpoints {
            rs.add_element(SERVICE_IPS, plan.element(plan.key(*ip), to_external(), Purpose::LoadBalancerIp));
        }
        if plan.uses_firewall_chain {
            rs.add_element(FIREWALL_IPS, plan.element(plan.key(*ip), Verdict::Goto(plan.firewall_chain.clone()), Purpose::SourceRanges));
        }
    }
    if !plan.has_external {
        for ip in &plan.lb_vips {
            rs.add_element(NO_ENDPOINT_SERVICES, plan.refused(plan.key(*ip)));
        }
    }
    if let Some(np) = plan.node_port {
        let key = || vec![KeyPart::Proto(plan.port.protocol), KeyPart::Port(np)];
        if plan.has_endpoints {
            rs.add_element(SERVICE_NODEPORTS, plan.element(key(), to_external(), Purpose::NodePort));
        }
        if !plan.has_external {
            rs.add_element(NO_ENDPOINT_NODEPORTS, plan.refused(key()));
        }
    }
}

/// The internal policy chain's first rule marks cluster IP traffic for
/// masquerade: all of it with masqueradeAll, else what does not come
/// from a Pod (outside clusterCIDR).
fn write_internal_masquerade(rs: &mut Ruleset, plan: &PortPlan, cfg: &NftablesConfig) {
    if !plan.has_internal {
        return;
    }
    let mut m = vec![ip_match(Dir::Daddr, false, AddrMatch::Is(Addr::Ip(plan.cluster_ip)))];
    if !cfg.proxy.masquerade_all {
        let Some(cc) = cfg.proxy.cluster_cidr else { return };
        m.push(ip_match(Dir::Saddr, true, AddrMatch::Is(Addr::Net(cc))));
    }
    rs.push_rule(plan.internal_chain(), Rule::new(m, jump(MARK_FOR_MASQUERADE), Purpose::MarkMasquerade).owned(&plan.name));
}

/// The external chain. With a Cluster external policy everything is
/// masqueraded (the endpoint may be on another node). With Local, client
/// addresses are kept, but Pods (by clusterCIDR) and the node itself
/// (masqueraded: its source would be the local VIP) take the Cluster
/// policy, as if they had gone out to the balancer and back. The rest goes
/// to the external policy chain if it has endpoints; else it falls
/// through, and the no-endpoint maps drop it.
fn write_external_chain(rs: &mut Ruleset, plan: &PortPlan, cfg: &NftablesConfig) {
    if !plan.uses_external_chain {
        return;
    }
    let (ext, name) = (plan.external_chain.as_str(), plan.name.as_str());
    if !plan.etp_local {
        rs.push_rule(ext, Rule::new(vec![], jump(MARK_FOR_MASQUERADE), Purpose::MarkMasquerade).owned(name));
    } else {
        if let Some(cc) = cfg.proxy.cluster_cidr {
            let m = vec![ip_match(Dir::Saddr, false, AddrMatch::Is(Addr::Net(cc)))];
            rs.push_rule(ext, Rule::new(m, goto(&plan.cluster_chain), Purpose::ShortCircuit).with_comment("short-circuit pod traffic").owned(name));
        }
        let local = || vec![Match::FibLocal(Dir::Saddr)];
        rs.push_rule(ext, Rule::new(local(), jump(MARK_FOR_MASQUERADE), Purpose::MarkMasquerade).with_comment("masquerade local traffic").owned(name));
        rs.push_rule(ext, Rule::new(local(), goto(&plan.cluster_chain), Purpose::ShortCircuit).with_comment("short-circuit local traffic").owned(name));
    }
    if plan.has_external {
        rs.push_rule(ext, Rule::new(vec![], goto(plan.external_policy_chain()), Purpose::ExternalPolicy).owned(name));
    }
}

/// The firewall chain drops sources outside loadBalancerSourceRanges.
/// If a range holds the node's IP, the balancer IPs are allowed as
/// sources too: a node holding the VIP reaches it with the VIP as source.
fn write_firewall_chain(rs: &mut Ruleset, plan: &PortPlan, node_ip: Ipv4Addr) {
    if !plan.uses_firewall_chain {
        return;
    }
    let ranges = &plan.svc.spec.load_balancer_source_ranges;
    let mut items: Vec<Addr> = ranges.iter().map(|c| Addr::Net(*c)).collect();
    if ranges.iter().any(|c| c.contains(node_ip)) {
        items.extend(plan.lb_vips.iter().map(|ip| Addr::Ip(*ip)));
    }
    let m = vec![ip_match(Dir::Saddr, true, AddrMatch::InAnon { items, compact: false })];
    rs.push_rule(&plan.firewall_chain, Rule::new(m, Action::Verdict(Verdict::Drop), Purpose::SourceRanges).owned(&plan.name));
}

/// With ClientIP affinity, one set per reachable endpoint holds the
/// client addresses recently sent there (for the timeout). `dynamic` too,
/// as the kernel would add it anyway.
fn write_affinity_sets(rs: &mut Ruleset, plan: &PortPlan) {
    let Some(secs) = plan.affinity else { return };
    for e in &plan.reachable {
        rs.add_set(Set {
            name: plan.affinity_set(e),
            key: vec![KeyType::Ipv4Addr],
            verdict_map: false,
            flags: vec![SetFlag::Dynamic, SetFlag::Timeout],
            timeout: Some(secs),
            comment: None,
            elements: Vec::new(),
            owner: Some(plan.name.clone()),
        });
    }
}

/// A policy chain's picks: with affinity, a client found in an
/// endpoint's set goes back there; then one random pick among all.
fn write_picks(rs: &mut Ruleset, plan: &PortPlan, chain: &str, eps: &[&PortEndpoint]) {
    if plan.affinity.is_some() {
        for e in eps {
            let m = vec![ip_match(Dir::Saddr, false, AddrMatch::InSet(plan.affinity_set(e)))];
            rs.push_rule(chain, Rule::new(m, goto(&plan.endpoint_chain(e)), Purpose::Affinity).owned(&plan.name));
        }
    }
    let chains = eps.iter().map(|e| plan.endpoint_chain(e)).collect();
    rs.push_rule(chain, Rule::new(vec![], Action::RandomGoto(chains), Purpose::EndpointPick).owned(&plan.name));
}

/// Each endpoint chain marks hairpin traffic (the Pod reaching itself
/// through its Service) for masquerade, records the client for affinity,
/// and DNATs.
fn write_endpoint_chains(rs: &mut Ruleset, plan: &PortPlan) {
    for e in &plan.reachable {
        let chain = plan.endpoint_chain(e);
        let hairpin = vec![ip_match(Dir::Saddr, false, AddrMatch::Is(Addr::Ip(e.addr.ip)))];
        rs.push_rule(&chain, Rule::new(hairpin, jump(MARK_FOR_MASQUERADE), Purpose::MarkMasquerade).owned(&plan.name));
        if plan.affinity.is_some() {
            rs.push_rule(&chain, Rule::new(vec![], Action::Update { set: plan.affinity_set(e), key: Selector::Saddr }, Purpose::Affinity).owned(&plan.name));
        }
        rs.push_rule(&chain, Rule::new(vec![Match::L4Proto(plan.port.protocol)], Action::Dnat(e.addr), Purpose::EndpointDnat).owned(&plan.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TrafficPolicy;
    use crate::net::ip;

    #[test]
    fn chain_names_match_kube_proxy() {
        // Names from upstream's expected output in TestOverallNFTablesRules.
        let tcp = Protocol::Tcp;
        assert_eq!(port_chain_base("ns1", "svc1", tcp, "p80"), "ULMVA6XW-ns1/svc1/tcp/p80");
        assert_eq!(port_chain_base("ns2", "svc2", tcp, "p80"), "42NFTM6N-ns2/svc2/tcp/p80");
        assert_eq!(port_chain_base("ns3", "svc3", tcp, "p80"), "4AT6LBPK-ns3/svc3/tcp/p80");
        assert_eq!(port_chain_base("ns4", "svc4", tcp, "p80"), "LAUZTJTB-ns4/svc4/tcp/p80");
        assert_eq!(port_chain_base("ns5", "svc5", tcp, "p80"), "HVFWP5L3-ns5/svc5/tcp/p80");
        let ep = |ns: &str, svc: &str, a: Ipv4Addr| endpoint_chain_base(ns, svc, tcp, "p80", SockAddr::new(a, 80));
        assert_eq!(ep("ns1", "svc1", ip(10, 180, 0, 1)), "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80");
        assert_eq!(ep("ns2", "svc2", ip(10, 180, 0, 2)), "SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80");
        assert_eq!(ep("ns3", "svc3", ip(10, 180, 0, 3)), "UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80");
        assert_eq!(ep("ns4", "svc4", ip(10, 180, 0, 4)), "UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80");
        assert_eq!(ep("ns4", "svc4", ip(10, 180, 0, 5)), "5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80");
        assert_eq!(ep("ns5", "svc5", ip(10, 180, 0, 3)), "GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80");
    }

    #[test]
    fn long_names_are_cut_to_fit() {
        // With IPv4 endpoints a name never gets this long (at most 228
        // characters with 63-character names); an IPv6 endpoint could.
        let cut = hashed("n".repeat(300));
        assert_eq!(cut.len(), NAME_LENGTH_MAX - PREFIX_LENGTH_MAX);
        assert!(cut.ends_with("..."));
        let long = "n".repeat(63);
        let base = endpoint_chain_base(&long, &long, Protocol::Sctp, &long, SockAddr::new(ip(255, 255, 255, 255), 65535));
        assert!(base.len() <= NAME_LENGTH_MAX - PREFIX_LENGTH_MAX && !base.ends_with("..."), "{}", base.len());
    }

    fn lb(ep_nodes: &[(Ipv4Addr, &str, bool, bool)], edit: impl FnOnce(&mut Service)) -> Vec<String> {
        use crate::api::{Endpoint, EndpointPort, LoadBalancerIngress, ServiceSpec};
        let port = ServicePort { name: Some("p80".into()), protocol: Protocol::Tcp, port: 80, target_port: 80, node_port: Some(3001) };
        let spec = ServiceSpec { type_: ServiceType::LoadBalancer, ports: vec![port], cluster_ip: Some(ip(172, 30, 0, 41)), ..Default::default() };
        let mut svc = Service { name: "svc1".into(), namespace: "ns1".into(), annotations: Default::default(), spec, status: Default::default(), created: None };
        svc.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(ip(5, 6, 7, 8), None)];
        edit(&mut svc);
        let endpoints = ep_nodes
            .iter()
            .map(|(a, n, ready, terminating)| Endpoint { ip: *a, node_name: n.to_string(), ready: *ready, serving: true, terminating: *terminating, target_ref: String::new(), hostname: None })
            .collect();
        let slice = EndpointSlice { name: "svc1-1".into(), namespace: "ns1".into(), service_name: "svc1".into(), endpoints, ports: vec![EndpointPort { name: Some("p80".into()), protocol: Protocol::Tcp, port: 80 }] };
        let node = Node { name: "node".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
        let proxy = KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().unwrap()), ..Default::default() };
        let cfg = NftablesConfig { node_port_addresses: vec!["192.168.0.2/32".parse().unwrap()], ..NftablesConfig::new(proxy) };
        let slices = if ep_nodes.is_empty() { Vec::new() } else { vec![slice] };
        sync_node(&node, &[svc], &slices, &cfg).transaction()
    }

    fn has(t: &[String], line: &str) -> bool {
        t.iter().any(|l| l == line)
    }

    const SVC: &str = "service-ULMVA6XW-ns1/svc1/tcp/p80";
    const LOCAL: &str = "local-ULMVA6XW-ns1/svc1/tcp/p80";
    const EXT: &str = "external-ULMVA6XW-ns1/svc1/tcp/p80";

    #[test]
    fn external_local_policy_with_a_local_endpoint_uses_the_local_chain() {
        let t = lb(&[(ip(10, 180, 0, 1), "node", true, false), (ip(10, 180, 1, 1), "other", true, false)], |s| s.spec.external_traffic_policy = TrafficPolicy::Local);
        assert!(has(&t, &format!("add rule ip kube-proxy {EXT} goto {LOCAL}")), "{t:#?}");
        let picks: Vec<&String> = t.iter().filter(|l| l.contains("numgen")).collect();
        assert_eq!(picks.len(), 2, "{picks:#?}");
        assert!(picks[0].starts_with(&format!("add rule ip kube-proxy {SVC} numgen random mod 2 ")), "{picks:#?}");
        assert!(picks[1].starts_with(&format!("add rule ip kube-proxy {LOCAL} numgen random mod 1 ")), "{picks:#?}");
        assert!(!t.iter().any(|l| l.contains("no-endpoint") && l.starts_with("add element")), "{t:#?}");
    }

    #[test]
    fn internal_local_policy_without_a_local_endpoint_drops_the_cluster_ip() {
        let t = lb(&[(ip(10, 180, 1, 1), "other", true, false)], |s| s.spec.internal_traffic_policy = TrafficPolicy::Local);
        assert!(has(&t, "add element ip kube-proxy no-endpoint-services { 172.30.0.41 . tcp . 80 comment \"ns1/svc1:p80\" : drop }"), "{t:#?}");
        assert!(!t.iter().any(|l| l.starts_with("add element ip kube-proxy service-ips { 172.30.0.41 ")), "{t:#?}");
        // External traffic still has the Cluster policy.
        assert!(has(&t, &format!("add element ip kube-proxy service-ips {{ 5.6.7.8 . tcp . 80 : goto {EXT} }}")), "{t:#?}");
    }

    #[test]
    fn terminating_endpoints_serve_when_none_is_ready() {
        let t = lb(&[(ip(10, 180, 0, 1), "node", false, true)], |_| {});
        assert!(t.iter().any(|l| l.ends_with("meta l4proto tcp dnat to 10.180.0.1:80")), "{t:#?}");
    }

    #[test]
    fn masquerade_all_marks_all_cluster_ip_traffic() {
        let node = Node { name: "node".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
        let proxy = KubeProxyConfig { masquerade_all: true, ..Default::default() };
        let port = ServicePort { name: Some("p80".into()), protocol: Protocol::Tcp, port: 80, target_port: 80, node_port: None };
        let spec = crate::api::ServiceSpec { ports: vec![port], cluster_ip: Some(ip(172, 30, 0, 41)), ..Default::default() };
        let svc = Service { name: "svc1".into(), namespace: "ns1".into(), annotations: Default::default(), spec, status: Default::default(), created: None };
        let ep = crate::api::Endpoint { ip: ip(10, 180, 0, 1), node_name: String::new(), ready: true, serving: true, terminating: false, target_ref: String::new(), hostname: None };
        let ports = vec![crate::api::EndpointPort { name: Some("p80".into()), protocol: Protocol::Tcp, port: 80 }];
        let slice = EndpointSlice { name: "svc1-1".into(), namespace: "ns1".into(), service_name: "svc1".into(), endpoints: vec![ep], ports };
        let t = sync_node(&node, &[svc], &[slice], &NftablesConfig::new(proxy)).transaction();
        assert!(has(&t, &format!("add rule ip kube-proxy {SVC} ip daddr 172.30.0.41 jump mark-for-masquerade")), "{t:#?}");
    }

    #[test]
    fn a_source_range_holding_the_node_allows_the_balancer_ips() {
        let t = lb(&[(ip(10, 180, 0, 1), "", true, false)], |s| s.spec.load_balancer_source_ranges = vec!["192.168.0.0/24".parse().unwrap(), "203.0.113.0/25".parse().unwrap()]);
        assert!(has(&t, "add rule ip kube-proxy firewall-ULMVA6XW-ns1/svc1/tcp/p80 ip saddr != { 192.168.0.0/24 , 203.0.113.0/25 , 5.6.7.8 } drop"), "{t:#?}");
    }

    #[test]
    fn a_balancer_without_endpoints_is_rejected_but_keeps_its_firewall() {
        let t = lb(&[], |s| s.spec.load_balancer_source_ranges = vec!["203.0.113.0/25".parse().unwrap()]);
        for l in [
            "add element ip kube-proxy no-endpoint-services { 172.30.0.41 . tcp . 80 comment \"ns1/svc1:p80\" : goto reject-chain }",
            "add element ip kube-proxy no-endpoint-services { 5.6.7.8 . tcp . 80 comment \"ns1/svc1:p80\" : goto reject-chain }",
            "add element ip kube-proxy no-endpoint-nodeports { tcp . 3001 comment \"ns1/svc1:p80\" : goto reject-chain }",
            "add element ip kube-proxy firewall-ips { 5.6.7.8 . tcp . 80 : goto firewall-ULMVA6XW-ns1/svc1/tcp/p80 }",
        ] {
            assert!(has(&t, l), "missing {l}\n{t:#?}");
        }
        assert!(!t.iter().any(|l| l.contains(SVC) || l.contains(EXT) || l.starts_with("add element ip kube-proxy service-")), "{t:#?}");
    }

    #[test]
    fn priorities_are_written_as_numbers() {
        assert_eq!(Priority::DstNat(-10).value(), -110);
        assert_eq!(Priority::SrcNat(0).value(), 100);
        assert_eq!(Priority::Filter(0).value(), 0);
    }

    #[test]
    fn node_ports_everywhere_has_no_nodeport_ips_set() {
        let node = Node { name: "n".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
        let rs = sync_node(&node, &[], &[], &NftablesConfig::default());
        assert!(rs.set(NODEPORT_IPS).is_none());
        let t = rs.transaction();
        assert!(t.contains(&"add rule ip kube-proxy services fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports".to_string()), "{t:#?}");
        assert!(t.contains(&"add rule ip kube-proxy nodeport-endpoints-check ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports".to_string()), "{t:#?}");
        // No service CIDRs known: only the reject rule in cluster-ips-check.
        assert_eq!(rs.chain(CLUSTER_IPS_CHECK).map(|c| c.rules.len()), Some(1));
    }
}
