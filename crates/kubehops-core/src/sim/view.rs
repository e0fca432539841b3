//! Views: what the panels show at one moment, as rows and fields.
//!
//! A [`View`] is taken after every hop. It holds the kubectl table of the
//! Services the story is about, each node's kube-proxy lines for them, each
//! node's conntrack table and each balancer's state. Panels read these
//! fields; none of them parses text.

use crate::dataplane::conntrack::{ConntrackState, Tuple};
// Rule lines and summaries are the data plane's (either mode writes them); views show them.
pub use crate::dataplane::rules::{RuleLine, RuleSummary};
use crate::dataplane::tcp::TcpState;
use crate::sim::actor::ActorId;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// One conntrack entry as shown, with what identifies it: the original
/// tuple names the connection, the state says how far it got. The text's
/// timeout changes every second; these do not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConntrackLine {
    pub text: String,
    pub original: Tuple,
    pub state: ConntrackState,
    /// The TCP state as the kernel names it, when the connection is
    /// followed packet by packet (`handshake=1`).
    #[serde(default)]
    pub tcp: Option<TcpState>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub node: ActorId,
    /// The node's rules for the Services in focus, summarised, then for
    /// the Services of `matched`.
    pub rules: Vec<RuleSummary>,
    /// The lines of both tables for the same Services.
    pub iptables: Vec<RuleLine>,
    /// Services outside the focus whose rules a hop of the step matched
    /// on this node (kube-dns, for a lookup): shown so that the rule that
    /// decided a hop is on the card while it plays.
    #[serde(default)]
    pub matched: Vec<crate::api::ObjectRef>,
    /// Whether the node's kube-proxy rules are computed. A lazy world
    /// ([`crate::sim::World::new_lazy`]) syncs a node only when a story
    /// needs it; an unsynced node's view has no rules because none were
    /// computed, not because the node has none, and is drawn as such.
    #[serde(default = "computed")]
    pub synced: bool,
    /// The node's conntrack table, one `conntrack -L` line per entry.
    pub conntrack: Vec<ConntrackLine>,
}

fn computed() -> bool {
    true
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BalancerView {
    Absent,
    Provisioning,
    Active { ip: Ipv4Addr },
}

/// kubectl's output as rows of cells (the first row is the header), or
/// the notice kubectl prints when nothing matched.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubectlTable {
    /// The command it answers (`kubectl get svc api`).
    pub command: String,
    pub rows: Vec<Vec<String>>,
    pub notice: Option<String>,
}

impl KubectlTable {
    /// The table as kubectl prints it, padded as its tabwriter pads.
    pub fn render(&self) -> String {
        match &self.notice {
            Some(n) if self.rows.is_empty() => n.clone(),
            _ => crate::api::kubectl::tabulate(&self.rows),
        }
    }

    /// The cell of `column` in the row whose first cell is `name`.
    pub fn cell(&self, name: &str, column: &str) -> Option<&str> {
        let header = self.rows.first()?;
        let c = header.iter().position(|h| h == column)?;
        self.rows.iter().skip(1).find(|r| r.first().is_some_and(|n| n == name))?.get(c).map(String::as_str)
    }
}

/// A host's panel: its nat table as Docker wrote it, its conntrack table
/// and its neighbour table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostView {
    pub host: ActorId,
    /// Every line of its nat table, numbered as `iptables-save -t nat` prints it.
    pub iptables: Vec<RuleLine>,
    pub conntrack: Vec<ConntrackLine>,
    /// `ip neigh show`, one line per entry.
    pub neighbours: Vec<String>,
}

/// What a Service in focus is, as far as the canvas draws it: a virtual
/// address the rules catch, no address at all (headless), or a name that
/// points outside (ExternalName).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServiceShape {
    /// It has a cluster IP, and kube-proxy writes rules for it.
    Virtual,
    /// `clusterIP: None`: no virtual address; DNS answers with the Pods.
    Headless,
    /// Only a CNAME to this name; no address, no rules.
    ExternalName(String),
}

/// A Service in focus, typed for the canvas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FocusService {
    pub name: String,
    pub shape: ServiceShape,
}

/// What the panels show at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub clock: u64,
    pub kubectl: KubectlTable,
    /// One per node, in node order.
    pub nodes: Vec<NodeView>,
    /// The state of each balancer actor.
    pub balancers: Vec<(ActorId, BalancerView)>,
    /// The Pods whose Ready condition is false.
    pub not_ready: Vec<ActorId>,
    /// One per host with a network stack of its own.
    #[serde(default)]
    pub hosts: Vec<HostView>,
    /// The Services in focus that exist, in focus order.
    #[serde(default)]
    pub services: Vec<FocusService>,
}

impl View {
    pub fn node(&self, id: ActorId) -> Option<&NodeView> {
        self.nodes.iter().find(|n| n.node == id)
    }

    pub fn host(&self, id: ActorId) -> Option<&HostView> {
        self.hosts.iter().find(|h| h.host == id)
    }

    pub fn balancer(&self, id: ActorId) -> BalancerView {
        self.balancers.iter().find(|(a, _)| *a == id).map_or(BalancerView::Absent, |(_, b)| b.clone())
    }
}
