//! Tracing one packet through one node's rules, as `kubehops trace` reports it.
//!
//! The trace walks the nat table from PREROUTING (or OUTPUT for a packet
//! the node sends itself), then the filter table's hooks the packet passes,
//! then POSTROUTING. It lists every rule that matched and every endpoint the
//! random matches could have led to.

use crate::api::Node;
use crate::kubeproxy::NodeRules;
use crate::net::{Packet, SockAddr};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TraceVerdict {
    /// The nat table rewrote the destination.
    Dnat,
    Reject,
    Drop,
    /// No rule of kube-proxy's touched the packet and it is accepted.
    Accept,
    /// The packet is not for a Service at all.
    None,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceResult {
    pub verdict: TraceVerdict,
    /// Every endpoint the packet could be DNATed to, sorted.
    pub targets: Vec<SockAddr>,
    /// Whether kube-proxy marks the packet for masquerade.
    pub masquerade: bool,
    /// The rules that matched, as `iptables-save` lines prefixed by their
    /// table (`nat: -A KUBE-SERVICES ...`), in the order they matched.
    pub matched: Vec<String>,
}

/// Traces `pkt` arriving at `node` (or sent by it when `from_node` is set).
pub fn trace(rules: &NodeRules, node: &Node, pkt: &Packet, from_node: bool) -> TraceResult {
    let _ = (rules, node, pkt, from_node);
    TraceResult { verdict: TraceVerdict::None, targets: Vec::new(), masquerade: false, matched: Vec::new() }
}
