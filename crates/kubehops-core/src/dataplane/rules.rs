//! What a node's rules show, whichever of kube-proxy's modes wrote them:
//! the table a line is in ([`RuleTable`]), what a rule was written for
//! ([`Purpose`]), one printed line with its owner ([`RuleLine`]), a rule
//! that matched a packet ([`MatchedRule`]) and a Service's rules summed up
//! for a node's card ([`RuleSummary`]). Both modes fill these; the
//! simulator, the scene and the panels read only these, so none of them
//! needs to know which mode wrote a rule.

use crate::net::SockAddr;
use serde::{Deserialize, Serialize};

/// The table a rule is in: one of iptables' (`filter`, `nat`, `mangle`),
/// or the nftables mode's `ip kube-proxy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RuleTable {
    Filter,
    Nat,
    Mangle,
    /// nftables: `table ip kube-proxy`.
    KubeProxy,
}

impl RuleTable {
    /// How a panel tags it: `filter`, `nat`, `mangle`, `nft`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleTable::Filter => "filter",
            RuleTable::Nat => "nat",
            RuleTable::Mangle => "mangle",
            RuleTable::KubeProxy => "nft",
        }
    }

    /// Whether lines of `self` and `other` are numbered in the same
    /// printout: iptables' tables share `iptables-save`; `ip kube-proxy`
    /// has the nftables transaction.
    pub fn same_printout(self, other: RuleTable) -> bool {
        (self == RuleTable::KubeProxy) == (other == RuleTable::KubeProxy)
    }

    /// The table's full name, for a sentence: `the nat table`,
    /// `the ip kube-proxy table`.
    pub fn name(self) -> &'static str {
        match self {
            RuleTable::KubeProxy => "ip kube-proxy",
            t => t.as_str(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Field {
    Source,
    Destination,
}

/// What kube-proxy wrote a rule for. It is not part of the rule's text:
/// kube-proxy knows it when it writes the rule, and the model keeps it so
/// that nothing has to guess it back from a comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Purpose {
    /// KUBE-SERVICES: the Service's cluster IP and port.
    ClusterIp,
    /// KUBE-SERVICES: one of `spec.externalIPs`.
    ExternalIp,
    /// KUBE-SERVICES: an address of `status.loadBalancer.ingress`.
    LoadBalancerIp,
    /// KUBE-NODEPORTS: the Service's node port.
    NodePort,
    /// filter KUBE-NODEPORTS: accepts the health check node port.
    HealthCheckNodePort,
    /// Marks a packet for masquerade (a jump to KUBE-MARK-MASQ).
    MarkMasquerade,
    /// A jump from a Service chain to one endpoint's chain.
    EndpointPick,
    /// The DNAT to one endpoint.
    EndpointDnat,
    /// filter: REJECT, the Service has no endpoints at all.
    NoEndpoints,
    /// filter: DROP, external traffic finds no local endpoint.
    NoLocalEndpoints,
    /// filter KUBE-PROXY-FIREWALL: a source outside loadBalancerSourceRanges.
    SourceRangeDrop,
}

/// What kube-proxy made the chain a rule sits in for, whichever mode wrote
/// it (`KUBE-SVC-…` in iptables mode, `service-…` in nftables mode), or,
/// for a map element, what kind of map holds it. Set where the rule is
/// written, by the module that names the chains, so that nothing above
/// has to tell a chain's kind from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum ChainKind {
    /// Any other chain: netfilter's own, the network plugin's, Docker's.
    #[default]
    Other,
    /// The dispatch by Service address: `KUBE-SERVICES`, nftables' `services`.
    Services,
    /// The dispatch by node port: `KUBE-NODEPORTS` (nftables mode looks
    /// node ports up in a verdict map from `services`).
    NodePorts,
    /// A Service port's chain that picks an endpoint among all of them:
    /// `KUBE-SVC-…`, `service-…`.
    Service,
    /// The same among the node's own endpoints (a Local traffic policy):
    /// `KUBE-SVL-…`, `local-…`.
    ServiceLocal,
    /// A Service port's chain for traffic from outside: `KUBE-EXT-…`,
    /// `external-…`.
    External,
    /// A Service port's source-range check: `KUBE-FW-…`, `firewall-…`.
    Firewall,
    /// One endpoint's chain, which DNATs: `KUBE-SEP-…`, `endpoint-…`.
    Endpoint,
    /// The chain that marks a packet for masquerade: `KUBE-MARK-MASQ`,
    /// `mark-for-masquerade`.
    MarkMasquerade,
    /// The chain that masquerades marked packets: `KUBE-POSTROUTING`,
    /// `masquerading`.
    Masquerading,
    /// Not a chain: an element of a verdict map (nftables), which sends
    /// the packet on to a chain or a verdict.
    VerdictMap,
    /// Not a chain: an element of a plain set (nftables).
    Set,
}

/// One line of a node's rules, as its mode prints them (an `iptables-save`
/// line, or a line of the nftables transaction), with what it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleLine {
    /// Its line number in the node's full rules as printed (`iptables-save`
    /// output, or the nftables transaction).
    pub line: usize,
    pub table: RuleTable,
    pub chain: String,
    pub text: String,
    /// The service port it was written for (`default/web`, `default/api:http`).
    pub owner: Option<String>,
    pub purpose: Option<Purpose>,
}

impl RuleLine {
    /// Two lines are the same rule when chain and text agree; the number
    /// moves when rules are added above it.
    pub fn same_rule(&self, other: &RuleLine) -> bool {
        self.table == other.table && self.chain == other.chain && self.text == other.text
    }
}

/// A rule that matched, as its line on that node (see [`RuleLine`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchedRule {
    /// The table it is in: KUBE-SERVICES, for one, exists in both of
    /// iptables' tables.
    pub table: RuleTable,
    pub line: usize,
    pub text: String,
    /// What kube-proxy wrote the rule for, when it says.
    pub purpose: Option<Purpose>,
    /// The service port kube-proxy wrote it for (`kube-system/kube-dns:dns`),
    /// as the rule's `owner`: the views show that Service's rules on the
    /// node it matched on. (Always written, even when `None`: the page's
    /// worker sends scenarios in postcard, which has no field names, so a
    /// field left out would shift every field after it.)
    #[serde(default)]
    pub owner: Option<String>,
    /// The field its target rewrites: a DNAT the destination, a
    /// MASQUERADE the source (at the end of the walk).
    #[serde(default)]
    pub rewrites: Option<Field>,
    /// The kind of chain it sits in (or of map, for an element).
    #[serde(default)]
    pub chain: ChainKind,
}

/// A compact, typed summary of the rules one node holds for a Service,
/// for the node's card on the canvas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RuleSummary {
    ClusterIp { addr: SockAddr, lines: Vec<usize> },
    NodePort { port: u16, lines: Vec<usize> },
    LoadBalancerIp { addr: SockAddr, lines: Vec<usize> },
    ExternalIp { addr: SockAddr, lines: Vec<usize> },
    Endpoints { targets: Vec<SockAddr>, lines: Vec<usize> },
    /// The filter table turns the Service's traffic away (no endpoints).
    Reject { addr: SockAddr, lines: Vec<usize> },
}

impl RuleSummary {
    pub fn lines(&self) -> &[usize] {
        match self {
            RuleSummary::ClusterIp { lines, .. }
            | RuleSummary::NodePort { lines, .. }
            | RuleSummary::LoadBalancerIp { lines, .. }
            | RuleSummary::ExternalIp { lines, .. }
            | RuleSummary::Endpoints { lines, .. }
            | RuleSummary::Reject { lines, .. } => lines,
        }
    }
}

/// A verdict-map look-up that sent a packet on (nftables mode): `the
/// verdict map service-ips sends 10.96.0.50 . tcp . 80 to chain service-…`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lookup {
    pub map: String,
    /// The key as nft prints it (`10.96.0.50 . tcp . 80`).
    pub key: String,
    pub chain: String,
}

impl Lookup {
    pub fn sentence(&self) -> String {
        format!("the verdict map {} sends {} to chain {}", self.map, self.key, self.chain)
    }
}

impl MatchedRule {
    /// Whether this is the rule printed as `l`.
    pub fn is(&self, l: &RuleLine) -> bool {
        self.line == l.line && self.table.same_printout(l.table)
    }

    /// Its line, if kube-proxy wrote it for a Service port: the lines a
    /// node card's summary rows hold. (In nftables mode the network
    /// plugin's iptables rules are numbered apart and own no port.)
    pub fn card_line(&self) -> Option<usize> {
        self.owner.is_some().then_some(self.line)
    }
}

