//! The cluster in motion: control-plane messages and packets, one hop at a
//! time.
//!
//! A [`World`] holds the state of every component: the API server's
//! objects, the rules each node's kube-proxy last wrote, each node's
//! conntrack table, whatever answers LoadBalancer Services, and the
//! network outside. Actions (`kubectl_apply`, `set_ready`, `wait`, `dial`,
//! `lookup`) move messages between [`Actor`]s and record a [`Hop`] for
//! each, with a [`View`] of the state after it.
//!
//! Architecture Invariant: packet decisions are made only by walking a
//! node's (or a host's) rules ([`crate::dataplane::netfilter`]) or by its
//! conntrack entry; the network outside the cluster only delivers to the
//! owner of an address, and a bridge to the owner ARP names. See
//! [`network`] for the walk and [`lan`] for hosts, ARP and proxies.

pub mod actor;
pub mod hop;
pub mod host;
mod lan;
mod network;
mod outside;
pub mod snapshot;
pub mod view;

pub use actor::{Actor, ActorId, ActorKind, Actors, Zone};
pub use hop::{ArpFrame, ArpOp, DropReason, Field, Hop, HopKind, Leg, MatchedRule, PacketHop, Payload, Rewrite, RewriteKind, Tunnel, Unroutable};
pub use host::{HostNet, Neighbour, NeighbourState, Route};
pub use network::{Dial, Outcome};
pub use outside::{Internet, Site};
pub use snapshot::{DataplaneSnapshot, HostSnapshot, NodeSnapshot, PodSnapshot};
pub use view::{BalancerView, ConntrackLine, FocusService, HostView, KubectlTable, NodeView, RuleLine, RuleSummary, ServiceShape, View};

use crate::api::server::{ApiError, ApiServer};
use crate::api::{ObjectRef, Service, ServiceType};
use crate::controllers::{Event, LbController, Party};
use crate::dataplane::conntrack::ConntrackTable;
use crate::dataplane::kubeproxy::KubeProxyConfig;
use crate::net::SockAddr;
use crate::dataplane::proxy::{EgressMasquerade, NodeTables};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct World {
    pub api: ApiServer,
    pub proxy: KubeProxyConfig,
    pub actors: Actors,
    /// The actor of each of `api.nodes`, in the same order.
    node_actors: Vec<ActorId>,
    /// The rules each node's kube-proxy wrote last, by node index. Code
    /// that writes them calls `World::rules_changed`.
    pub rules: Vec<NodeTables>,
    /// Whether node `i`'s kube-proxy has synced (`rules[i]` holds its
    /// rules). A world built with [`World::new_lazy`] syncs a node only
    /// when a story needs it: a pasted cluster of 50 nodes and 500
    /// Services would otherwise compute 49 rule sets nobody looks at.
    #[serde(default)]
    synced: Vec<bool>,
    /// For node `i`, the index into `trace` from which its current rules
    /// hold; `None` when they have held since before the trace began.
    /// Views taken before then saw other rules (see [`World::take_trace`]).
    #[serde(default)]
    rules_since: Vec<Option<usize>>,
    pub conntrack: Vec<ConntrackTable>,
    /// Whatever fills `status.loadBalancer`.
    pub lb: LbController,
    /// The network outside the cluster.
    pub internet: Internet,
    /// Machines outside the cluster whose own rules decide their packets
    /// (the laptop running Docker Engine).
    pub hosts: Vec<HostNet>,
    /// Envoy Gateway's Gateways and routes, which its proxy Pods follow.
    pub gateway: crate::controllers::gateway::EnvoyGateway,
    /// The kube-dns Service's address, which every Pod's resolv.conf names.
    pub cluster_dns: Option<SockAddr>,
    /// The Pod network the network plugin keeps un-masqueraded; traffic
    /// from it to anywhere else leaves with the node's address. `None`: no
    /// such rule (nothing in the story leaves the cluster).
    pub egress_masquerade: Option<crate::net::Cidr>,
    /// Which agent writes that masquerade (ip-masq-agent, kindnet).
    #[serde(default)]
    pub masq_agent: crate::dataplane::cni::MasqAgent,
    /// How Pod traffic crosses between nodes: routed (the default), or
    /// wrapped in a VXLAN overlay.
    #[serde(default)]
    pub pod_network: crate::dataplane::overlay::PodNetwork,
    /// Whether a TCP connection is followed packet by packet (SYN,
    /// SYN-ACK, ACK, the request, the response, FIN and ACK each way)
    /// rather than as one request and one reply (`handshake=1`).
    #[serde(default)]
    pub handshake: bool,
    /// The TCP segment in flight while a connection is followed packet by
    /// packet: every conntrack entry it meets takes it.
    #[serde(default)]
    segment: Option<crate::dataplane::tcp::Segment>,
    pub clock: u64,
    pub created: BTreeMap<ObjectRef, u64>,
    /// The Services whose rules and kubectl rows the views show.
    pub focus: Vec<ObjectRef>,
    next_client_port: u16,
    /// How many connections are open inside a server's answer.
    nesting: u8,
    trace: Vec<(Hop, View)>,
    /// Each node's rule lines and summaries as the last view showed them.
    /// A view is taken at every hop, and rendering every node's rules each
    /// time was most of a scenario's build (63 % of the local lab's); the
    /// rules seldom change between two hops.
    #[serde(skip)]
    rule_views: std::cell::RefCell<Vec<Option<RuleViewCache>>>,
}

/// One node's part of [`World::view`], and the focus it was made for
/// (it was made from the node's rules: `World::rules_changed` clears it
/// when they change).
#[derive(Clone, Debug)]
struct RuleViewCache {
    focus: Vec<ObjectRef>,
    summaries: Vec<RuleSummary>,
    lines: Vec<RuleLine>,
}

impl World {
    /// A world whose nodes and Pods are actors already; add the laptop,
    /// the API server and other components with [`World::add_actor`].
    pub fn new(api: ApiServer, proxy: KubeProxyConfig, lb: LbController, internet: Internet, clock: u64) -> World {
        World::with_sync(api, proxy, lb, internet, clock, true)
    }

    fn with_sync(api: ApiServer, proxy: KubeProxyConfig, lb: LbController, internet: Internet, clock: u64, sync: bool) -> World {
        let mut w = World {
            api,
            proxy,
            actors: Actors::default(),
            node_actors: Vec::new(),
            rules: Vec::new(),
            synced: Vec::new(),
            rules_since: Vec::new(),
            conntrack: Vec::new(),
            lb,
            internet,
            hosts: Vec::new(),
            gateway: Default::default(),
            cluster_dns: None,
            egress_masquerade: None,
            masq_agent: Default::default(),
            pod_network: Default::default(),
            handshake: false,
            segment: None,
            clock,
            created: BTreeMap::new(),
            focus: Vec::new(),
            next_client_port: 51000,
            nesting: 0,
            trace: Vec::new(),
            rule_views: Default::default(),
        };
        for s in w.api.services() {
            w.created.insert(s.object_ref(), 0);
        }
        w.add_cluster_actors();
        w.rules = if sync { (0..w.api.nodes.len()).map(|i| w.desired_rules(i)).collect() } else { w.api.nodes.iter().map(|n| NodeTables::empty(&n.name)).collect() };
        w.synced = vec![sync; w.api.nodes.len()];
        w.rules_since = vec![None; w.api.nodes.len()];
        w.conntrack = vec![ConntrackTable::default(); w.api.nodes.len()];
        w
    }

    /// The same world, but no node's kube-proxy has synced yet: call
    /// [`World::sync_node_rules`] for the nodes a story shows; a packet
    /// reaching another node syncs it first. Views show an unsynced
    /// node without rules and say so (`NodeView::synced`), and its
    /// snapshot holds none.
    pub fn new_lazy(api: ApiServer, proxy: KubeProxyConfig, lb: LbController, internet: Internet, clock: u64) -> World {
        World::with_sync(api, proxy, lb, internet, clock, false)
    }

    /// kube-proxy on node `i` syncs, if it has not yet (see [`World::new_lazy`]).
    pub fn sync_node_rules(&mut self, i: usize) {
        if i < self.rules.len() && !self.synced.get(i).copied().unwrap_or(true) {
            self.rules[i] = self.desired_rules(i);
            self.synced[i] = true;
            self.rules_changed(i);
        }
    }

    /// Whether node `i`'s rules are computed.
    pub fn is_synced(&self, i: usize) -> bool {
        self.synced.get(i).copied().unwrap_or(true)
    }

    /// One actor per node, then one per Pod, each Pod inside its node.
    fn add_cluster_actors(&mut self) {
        for n in &self.api.nodes {
            let mut a = Actor::component(ActorKind::Node, Zone::Cluster, &display_node(&n.name), &display_node(&n.name), &n.internal_ip.to_string()).at(n.internal_ip);
            a.object = Some(ObjectRef::new("", &n.name));
            self.node_actors.push(self.actors.add(a));
        }
        for p in self.api.pods.clone() {
            self.add_pod_actor(&p);
        }
    }

    /// The actor of a Pod, inside its node; its kind from its labels.
    fn add_pod_actor(&mut self, p: &crate::api::Pod) -> ActorId {
        let label = |k: &str, v: &str| p.labels.get(k).is_some_and(|x| x == v);
        let kind = if label("k8s-app", "kube-dns") {
            ActorKind::CoreDns
        } else if label("app.kubernetes.io/name", "envoy") && label("app.kubernetes.io/component", "proxy") {
            ActorKind::Gateway
        } else {
            ActorKind::Pod
        };
        // The Pod's own name, as kubectl and the canvas print it: a shorter
        // one would name the same Pod two ways.
        let short = if kind == ActorKind::Gateway { "Pod envoy".to_string() } else { format!("Pod {}", p.name) };
        let mut a = Actor::component(kind, Zone::Cluster, &p.name, &short, &format!("{}:{}", p.ip, p.container_port)).at(p.ip);
        a.parent = self.actors.node(&p.node_name);
        a.object = Some(ObjectRef::new(&p.namespace, &p.name));
        self.actors.add(a)
    }

    /// A Pod that a controller creates during the story (the proxy of a
    /// Gateway): stored, drawn in its node, and kube-proxy catches up.
    pub fn add_pod(&mut self, p: crate::api::Pod) -> ActorId {
        self.api.pods.push(p.clone());
        let id = self.add_pod_actor(&p);
        self.resync_proxies();
        id
    }

    /// MetalLB's speaker on node `i`: a host-network Pod, so it has no
    /// address of its own; it answers ARP on the node's interface.
    pub fn add_speaker(&mut self, i: usize, pod_name: &str) -> Option<ActorId> {
        let node = self.node_actor(i)?;
        let mut a = Actor::component(ActorKind::Speaker, Zone::Cluster, pod_name, &format!("Pod {pod_name}"), "host network");
        a.parent = Some(node);
        a.object = Some(ObjectRef::new("metallb-system", pod_name));
        Some(self.actors.add(a))
    }

    pub fn add_actor(&mut self, a: Actor) -> ActorId {
        self.actors.add(a)
    }

    /// The actor of node `i` (an index into `api.nodes`).
    pub fn node_actor(&self, i: usize) -> Option<ActorId> {
        self.node_actors.get(i).copied()
    }

    /// The index into `api.nodes` of a node actor.
    pub fn node_index(&self, id: ActorId) -> Option<usize> {
        self.node_actors.iter().position(|a| *a == id)
    }

    pub fn first(&self, kind: ActorKind) -> Option<ActorId> {
        self.actors.first(kind)
    }

    /// The rules node `node` should hold: kube-proxy's (in its mode),
    /// and the network plugin's egress masquerade.
    fn desired_rules(&self, node: usize) -> NodeTables {
        let services: Vec<Service> = self.api.services().cloned().collect();
        let masq = self.egress_masquerade.map(|pods| EgressMasquerade { pods, agent: self.masq_agent });
        NodeTables::sync(&self.api.nodes[node], &services, &self.api.endpoint_slices(), &self.proxy, Some(self.api.config.service_cidr), masq)
    }

    /// Sets up the network plugin's egress masquerade and rewrites every
    /// node's rules for it (before a story begins).
    pub fn set_egress_masquerade(&mut self, pods: crate::net::Cidr) {
        self.egress_masquerade = Some(pods);
        self.rules = (0..self.api.nodes.len()).map(|i| if self.is_synced(i) { self.desired_rules(i) } else { NodeTables::empty(&self.api.nodes[i].name) }).collect();
        for i in 0..self.rules.len() {
            self.rules_changed(i);
        }
    }

    /// Runs kube-proxy in `mode` on every node, rewriting the rules of
    /// the nodes that synced (before a story begins).
    pub fn set_proxy_mode(&mut self, mode: crate::dataplane::kubeproxy::ProxyMode) {
        if self.proxy.mode == mode {
            return;
        }
        self.proxy.mode = mode;
        for i in 0..self.rules.len() {
            if self.is_synced(i) {
                self.rules[i] = self.desired_rules(i);
            }
            self.rules_changed(i);
        }
    }

    /// Follows TCP connections packet by packet (`on`) or as one request
    /// and one reply (before a story begins).
    pub fn set_handshake(&mut self, on: bool) {
        self.handshake = on;
    }

    /// Carries Pod traffic between nodes as `net` says (before a story
    /// begins). kube-proxy's rules do not depend on it.
    pub fn set_pod_network(&mut self, net: crate::dataplane::overlay::PodNetwork) {
        self.pod_network = net;
    }

    /// The nodes as the Pod network sees them: those with a Pod range.
    pub fn overlay_nodes(&self) -> Vec<crate::dataplane::overlay::OverlayNode> {
        self.api.nodes.iter().filter_map(|n| Some(crate::dataplane::overlay::OverlayNode::new(&n.name, n.internal_ip, NODE_INTERFACE, n.pod_cidr?))).collect()
    }

    /// Node `i`'s rules changed: views from the next hop on show the new
    /// ones (and render them again).
    fn rules_changed(&mut self, i: usize) {
        if let Some(s) = self.rules_since.get_mut(i) {
            *s = Some(self.trace.len());
        }
        if let Some(c) = self.rule_views.get_mut().get_mut(i) {
            *c = None;
        }
    }

    /// The hops recorded since the last call, with the view after each.
    ///
    /// A node's view shows the rules of the Services in focus, and also
    /// those of every Service whose rules one of these hops matched on
    /// that node (kube-dns's when a lookup's query is DNATed there), in
    /// every view taken while the node held the rules that matched: the
    /// canvas can then show the rule that decided a hop while it plays.
    pub fn take_trace(&mut self) -> Vec<(Hop, View)> {
        self.finish_trace(None)
    }

    /// [`World::take_trace`], completing `start` too: the view taken
    /// before the first of these hops (a step's first view).
    pub fn take_trace_after(&mut self, start: &mut View) -> Vec<(Hop, View)> {
        self.finish_trace(Some(start))
    }

    fn finish_trace(&mut self, mut start: Option<&mut View>) -> Vec<(Hop, View)> {
        let mut trace = std::mem::take(&mut self.trace);
        let since = std::mem::replace(&mut self.rules_since, vec![None; self.api.nodes.len()]);
        for (i, extra) in self.matched_services(&trace).into_iter().enumerate() {
            if extra.is_empty() {
                continue;
            }
            let node = self.node_actors[i];
            let summaries: Vec<RuleSummary> = extra.iter().flat_map(|f| self.rules[i].summarise(&f.namespace, &f.name)).collect();
            let lines: Vec<RuleLine> = extra.iter().flat_map(|f| self.rules[i].service_lines(&f.namespace, &f.name)).collect();
            let from = since.get(i).copied().flatten();
            let before = start.as_deref_mut().filter(|_| from.is_none());
            let after = trace.iter_mut().enumerate().filter(|(k, _)| from.is_none_or(|f| *k >= f)).map(|(_, (_, v))| v);
            for v in before.into_iter().chain(after) {
                if let Some(nv) = v.nodes.iter_mut().find(|n| n.node == node) {
                    nv.rules.extend(summaries.iter().cloned());
                    nv.iptables.extend(lines.iter().cloned());
                    nv.matched.extend(extra.iter().cloned());
                }
            }
        }
        trace
    }

    /// For each node, the Services outside the focus whose rules a hop of
    /// `trace` matched there (or that dropped a packet there), in the
    /// order the hops met them.
    fn matched_services(&self, trace: &[(Hop, View)]) -> Vec<Vec<ObjectRef>> {
        let mut out: Vec<Vec<ObjectRef>> = vec![Vec::new(); self.api.nodes.len()];
        for (h, _) in trace {
            let by_rules = h.packet.as_ref().filter(|p| !p.by_conntrack).and_then(|p| Some((p.decided_on?, p.matched.iter().collect::<Vec<_>>())));
            let dropped = match &h.dropped {
                Some(DropReason::Filtered { node, rule: Some(m), .. }) => Some((*node, vec![m])),
                _ => None,
            };
            for (node, matched) in by_rules.into_iter().chain(dropped) {
                let Some(i) = self.node_index(node) else { continue };
                for owner in matched.iter().filter_map(|m| m.owner.as_deref()) {
                    if !self.rules[i].has_port(owner) {
                        continue;
                    }
                    let Some(svc) = self.api.services().find(|s| crate::dataplane::nftables::is_port_of(owner, &s.namespace, &s.name)).map(Service::object_ref) else { continue };
                    if !self.focus.contains(&svc) && !out[i].contains(&svc) {
                        out[i].push(svc);
                    }
                }
            }
        }
        out
    }

    fn push(&mut self, hop: Hop) {
        self.clock += 1;
        let v = self.view();
        self.trace.push((hop, v));
    }

    /// The actor a control-plane party stands for, if the world has one.
    fn party(&self, p: Party) -> Option<ActorId> {
        match p {
            Party::ApiServer => self.first(ActorKind::ApiServer),
            Party::Controller => self.first(ActorKind::Controller),
            Party::Balancer => self.first(ActorKind::LoadBalancer),
            Party::Speaker { node } => self.node_actor(node).and_then(|n| self.speaker_on(n)),
        }
    }

    /// Records a controller's events as hops, and lets kube-proxy catch up
    /// after each status change.
    fn record(&mut self, events: Vec<Event>) {
        for e in events {
            if let (Some(from), Some(to)) = (self.party(e.from), self.party(e.to)) {
                let hop = if e.ok { Hop::message(from, to, e.caption, e.detail) } else { Hop::failed_message(from, to, e.caption, e.detail) };
                self.push(hop);
            }
            if e.status_of.is_some() {
                self.resync_proxies();
            }
        }
    }

    pub fn view(&self) -> View {
        let nodes = (0..self.api.nodes.len())
            .map(|i| (i, self.rule_view(i)))
            .map(|(i, (rules, iptables))| NodeView {
                node: self.node_actors[i],
                rules,
                iptables,
                matched: Vec::new(),
                synced: self.is_synced(i),
                conntrack: self.conntrack[i].entries.iter().map(|e| ConntrackLine { text: e.render(self.clock), original: e.original, state: e.state, tcp: e.tcp.map(|t| t.state) }).collect(),
            })
            .collect();
        let balancers = self
            .actors
            .iter()
            .filter(|a| a.kind == ActorKind::LoadBalancer)
            .map(|a| (a.id, self.balancer_view()))
            .collect();
        let not_ready = self
            .api
            .pods
            .iter()
            .filter(|p| !p.ready)
            .filter_map(|p| self.actors.iter().find(|a| a.kind.is_pod() && a.object.as_ref().is_some_and(|o| o.namespace == p.namespace && o.name == p.name)).map(|a| a.id))
            .collect();
        let hosts = self.hosts.iter().map(|h| self.host_view(h)).collect();
        let services = self
            .focus
            .iter()
            .filter_map(|f| self.api.service(&f.namespace, &f.name))
            .map(|s| {
                let shape = match (&s.spec.type_, s.spec.headless, &s.spec.external_name) {
                    (crate::api::ServiceType::ExternalName, _, name) => ServiceShape::ExternalName(name.clone().unwrap_or_default()),
                    (_, true, _) => ServiceShape::Headless,
                    _ => ServiceShape::Virtual,
                };
                FocusService { name: s.name.clone(), shape }
            })
            .collect();
        View { clock: self.clock, kubectl: self.kubectl_get_svc(), nodes, balancers, not_ready, hosts, services }
    }

    /// Node `i`'s rule summaries and lines for the Services in focus,
    /// rendered again only when its rules or the focus changed.
    fn rule_view(&self, i: usize) -> (Vec<RuleSummary>, Vec<RuleLine>) {
        let mut cache = self.rule_views.borrow_mut();
        if cache.len() <= i {
            cache.resize(i + 1, None);
        }
        if let Some(c) = cache[i].as_ref().filter(|c| c.focus == self.focus) {
            return (c.summaries.clone(), c.lines.clone());
        }
        let summaries: Vec<RuleSummary> = self.focus.iter().flat_map(|f| self.rules[i].summarise(&f.namespace, &f.name)).collect();
        let lines: Vec<RuleLine> = self.focus.iter().flat_map(|f| self.rules[i].service_lines(&f.namespace, &f.name)).collect();
        cache[i] = Some(RuleViewCache { focus: self.focus.clone(), summaries: summaries.clone(), lines: lines.clone() });
        (summaries, lines)
    }

    fn host_view(&self, h: &HostNet) -> HostView {
        let iptables = h
            .nat
            .chains
            .iter()
            .flat_map(|c| (0..c.rules.len()).map(move |i| (c, i)))
            .filter_map(|(c, i)| {
                let r = crate::dataplane::iptables::RuleRef { table: h.nat.name, chain: c.name.clone(), index: i };
                Some(RuleLine { line: h.line_of(&r)?, table: h.nat.name.into(), chain: c.name.clone(), text: c.rules[i].render_kernel(&c.name), owner: None, purpose: None })
            })
            .collect();
        HostView {
            host: h.actor,
            iptables,
            conntrack: h.conntrack.entries.iter().map(|e| ConntrackLine { text: e.render(self.clock), original: e.original, state: e.state, tcp: e.tcp.map(|t| t.state) }).collect(),
            neighbours: h.neighbours.iter().map(Neighbour::render).collect(),
        }
    }

    /// `kubectl get svc` for the Services in focus, in focus order.
    pub fn kubectl_get_svc(&self) -> KubectlTable {
        let names: Vec<&str> = self.focus.iter().map(|f| f.name.as_str()).collect();
        let command = format!("kubectl get svc {}", names.join(" "));
        let found: Vec<(&Service, u64)> = self
            .focus
            .iter()
            .filter_map(|f| self.api.service(&f.namespace, &f.name))
            .map(|s| (s, *self.created.get(&s.object_ref()).unwrap_or(&0)))
            .collect();
        let missing: Vec<&ObjectRef> = self.focus.iter().filter(|f| self.api.service(&f.namespace, &f.name).is_none()).collect();
        let notice = missing
            .iter()
            .map(|f| format!("Error from server (NotFound): services \"{}\" not found\n", f.name))
            .collect::<String>();
        let rows = if found.is_empty() { Vec::new() } else { crate::api::kubectl::service_table(&found, self.clock, false) };
        KubectlTable { command, rows, notice: (!notice.is_empty()).then_some(notice) }
    }

    /// `kubectl get svc -n NS [-o wide]`: rows sorted by name, or kubectl's
    /// notice when the namespace has none.
    pub fn kubectl_get_svc_in(&self, namespace: &str, wide: bool) -> KubectlTable {
        let command = format!("kubectl get svc -n {namespace}{}", if wide { " -o wide" } else { "" });
        let found = self.services_in(namespace);
        if found.is_empty() {
            return KubectlTable { command, rows: Vec::new(), notice: Some(format!("No resources found in {namespace} namespace.\n")) };
        }
        let rows = crate::api::kubectl::service_table(&found, self.clock, wide);
        KubectlTable { command, rows, notice: None }
    }

    /// `kubectl get endpoints -n NS`: the Endpoints of every Service with
    /// a selector, sorted by name. (kubectl also prints
    /// [`crate::api::kubectl::ENDPOINTS_DEPRECATED`] on stderr.)
    pub fn kubectl_get_endpoints_in(&self, namespace: &str) -> KubectlTable {
        let command = format!("kubectl get endpoints -n {namespace}");
        let services: Vec<(&Service, u64)> = self.services_in(namespace).into_iter().filter(|(s, _)| !s.spec.selector.is_empty() && s.spec.type_ != ServiceType::ExternalName).collect();
        if services.is_empty() {
            return KubectlTable { command, rows: Vec::new(), notice: Some(format!("No resources found in {namespace} namespace.\n")) };
        }
        let slices: Vec<Option<crate::api::EndpointSlice>> = services.iter().map(|(s, _)| self.api.endpoint_slice(s)).collect();
        let rows: Vec<(&Service, Option<&crate::api::EndpointSlice>, String)> =
            services.iter().zip(&slices).map(|((s, created), sl)| (*s, sl.as_ref(), crate::api::kubectl::human_duration(self.clock.saturating_sub(*created)))).collect();
        KubectlTable { command, rows: crate::api::kubectl::endpoints_table(&rows), notice: None }
    }

    /// The Services of a namespace by name, each with when it was created.
    fn services_in(&self, namespace: &str) -> Vec<(&Service, u64)> {
        let mut found: Vec<(&Service, u64)> = self.api.services().filter(|s| s.namespace == namespace).map(|s| (s, *self.created.get(&s.object_ref()).unwrap_or(&0))).collect();
        crate::sort::by(&mut found, |a, b| a.0.name.cmp(&b.0.name));
        found
    }

    fn balancer_view(&self) -> BalancerView {
        let Some(cloud) = self.lb.cloud() else { return BalancerView::Absent };
        let b = self.focus.iter().find_map(|f| cloud.balancer_for(f));
        match b {
            None => BalancerView::Absent,
            Some(b) if b.state == crate::controllers::cloud::LbState::Active => BalancerView::Active { ip: b.ip },
            Some(_) => BalancerView::Provisioning,
        }
    }

    /// kube-proxy on each node catches up with the API server. A hop is
    /// recorded only for nodes whose rules change.
    fn resync_proxies(&mut self) {
        let Some(api) = self.first(ActorKind::ApiServer) else { return };
        for i in 0..self.api.nodes.len() {
            if !self.is_synced(i) {
                // It syncs from the current objects when first needed.
                continue;
            }
            let want = self.desired_rules(i);
            if want == self.rules[i] {
                continue;
            }
            let (added, removed) = self.rules[i].changes(&want);
            self.rules[i] = want;
            self.rules_changed(i);
            let node = self.node_actors[i];
            let name = self.actors.short(node).to_string();
            self.push(Hop::message(
                api,
                node,
                format!("watch → kube-proxy {name}"),
                format!("kube-proxy on {name} sees the change and rewrites its {} rules: {added} added, {removed} removed.", self.proxy.mode.as_str()),
            ));
        }
    }

    /// `kubectl apply` of a Service from the laptop, then everything that
    /// follows from it right away: kube-proxy updates and whatever the
    /// load-balancer controller does.
    pub fn kubectl_apply(&mut self, svc: Service) -> Result<Service, ApiError> {
        let (Some(laptop), Some(api)) = (self.first(ActorKind::Laptop), self.first(ActorKind::ApiServer)) else {
            return self.api.apply_service(svc);
        };
        let name = svc.name.clone();
        let result = self.api.apply_service(svc);
        let s = match &result {
            Err(e) => {
                self.push(Hop::failed_message(laptop, api, "kubectl apply: rejected".into(), format!("The API server refuses the change: {e}")));
                return result;
            }
            Ok(s) => s.clone(),
        };
        self.created.entry(s.object_ref()).or_insert(self.clock);
        let detail = if s.spec.type_.has_node_ports() {
            let ports: Vec<String> = s.spec.ports.iter().filter_map(|p| p.node_port).map(|p| p.to_string()).collect();
            format!(
                "The API server validates Service {name}, keeps ClusterIP {} and holds node port {} from the range {}.",
                s.spec.cluster_ip.map_or("None".into(), |i| i.to_string()),
                ports.join(", "),
                self.api.config.node_port_range
            )
        } else {
            format!("The API server validates and stores Service {name}.")
        };
        let what = if s.spec.headless { "clusterIP: None".to_string() } else { format!("type {}", s.spec.type_.as_str()) };
        self.push(Hop::message(laptop, api, format!("kubectl apply: {what}"), detail));
        self.resync_proxies();
        let mut events = self.lb.services_changed(&mut self.api, self.clock);
        events.extend(self.lb.unanswered(&s));
        self.record(events);
        Ok(s)
    }

    /// A controller (`from`) creates or updates a Service through the API
    /// server (Envoy Gateway making the Service of a Gateway's proxy);
    /// then kube-proxy and the load-balancer controller follow.
    pub fn apply_from(&mut self, from: ActorId, svc: Service, caption: &str) -> Result<Service, ApiError> {
        let Some(api) = self.first(ActorKind::ApiServer) else { return self.api.apply_service(svc) };
        let result = self.api.apply_service(svc);
        match &result {
            Err(e) => self.push(Hop::failed_message(from, api, format!("{caption}: rejected"), format!("The API server refuses the change: {e}"))),
            Ok(s) => {
                self.created.entry(s.object_ref()).or_insert(self.clock);
                let detail = format!("{} creates Service {}/{} of type {}; the API server gives it cluster IP {}.", self.actors.short(from), s.namespace, s.name, s.spec.type_.as_str(), s.spec.cluster_ip.map_or("None".into(), |i| i.to_string()));
                self.push(Hop::message(from, api, caption.into(), detail));
                self.resync_proxies();
                let mut events = self.lb.services_changed(&mut self.api, self.clock);
                events.extend(self.lb.unanswered(s));
                self.record(events);
            }
        }
        result
    }

    /// Records a message between two actors that changes nothing the
    /// model tracks (a watch event a controller acts on next, a `kubectl
    /// apply` of objects only a controller reads).
    pub fn message(&mut self, from: ActorId, to: ActorId, caption: &str, detail: String) {
        self.push(Hop::message(from, to, caption.into(), detail));
    }

    /// The same, for a request that is refused.
    pub fn refused(&mut self, from: ActorId, to: ActorId, caption: &str, detail: String) {
        self.push(Hop::failed_message(from, to, caption.into(), detail));
    }

    /// The load-balancer controller looks at every Service again (after its
    /// own configuration changed), and kube-proxy follows.
    pub fn reconcile_lb(&mut self) {
        let events = self.lb.services_changed(&mut self.api, self.clock);
        self.record(events);
    }

    /// `kubectl delete service`, then kube-proxy and the controllers catch up.
    pub fn kubectl_delete(&mut self, namespace: &str, name: &str) -> Option<Service> {
        let svc = self.api.delete_service(namespace, name)?;
        self.created.remove(&svc.object_ref());
        if let (Some(laptop), Some(api)) = (self.first(ActorKind::Laptop), self.first(ActorKind::ApiServer)) {
            self.push(Hop::message(laptop, api, "kubectl delete service".into(), format!("The API server deletes Service {name} and frees its addresses.")));
        }
        self.resync_proxies();
        let events = self.lb.services_changed(&mut self.api, self.clock);
        self.record(events);
        Some(svc)
    }

    /// kubelet on a Pod's node reports its readiness; the EndpointSlice
    /// controller updates the Service's endpoints, and kube-proxy follows.
    pub fn set_ready(&mut self, namespace: &str, name: &str, ready: bool) {
        let Some(pod) = self.api.pods.iter_mut().find(|p| p.namespace == namespace && p.name == name) else { return };
        if pod.ready == ready {
            return;
        }
        pod.ready = ready;
        let node_name = pod.node_name.clone();
        let (Some(node), Some(api)) = (self.actors.node(&node_name), self.first(ActorKind::ApiServer)) else { return };
        let short = name.to_string();
        let (caption, state) = if ready { (format!("{short}: Ready"), "passes its readiness probe again") } else { (format!("{short}: not Ready"), "fails its readiness probe") };
        self.push(Hop::message(
            node,
            api,
            caption,
            format!("Pod {name} {state}; kubelet on {} sets its Ready condition to {ready}, and the EndpointSlice controller marks the endpoint ready: {ready}.", self.actors.short(node)),
        ));
        self.resync_proxies();
        let events = self.lb.endpoints_changed(&self.api);
        self.record(events);
    }

    /// Lets `secs` seconds pass: controllers finish what they started.
    pub fn wait(&mut self, secs: u64) {
        self.clock += secs;
        let events = self.lb.tick(&mut self.api, self.clock);
        self.record(events);
    }

    pub fn place_name(&self, a: ActorId) -> String {
        match self.actors.get(a) {
            Some(x) if x.kind.is_pod() => format!("Pod {}", x.ip.map_or_else(String::new, |i| i.to_string())),
            Some(x) if x.kind == ActorKind::Laptop => "the laptop".into(),
            Some(x) if x.kind == ActorKind::LoadBalancer => "the load balancer".into(),
            Some(x) => x.short.clone(),
            None => "?".into(),
        }
    }
}

/// The interface that holds a node's address (kind's nodes and the
/// stories' own): the underlay a VXLAN device sends through.
pub const NODE_INTERFACE: &str = "eth0";

/// `node-2` → `Node-2`, as the explainer labels nodes named `node-N`;
/// other names (`kind-worker`) are kept as they are.
pub fn display_node(name: &str) -> String {
    match name.strip_prefix("node-") {
        Some(rest) if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) => format!("Node-{rest}"),
        _ => name.to_string(),
    }
}

/// Whether a Service answers on a cluster IP (not headless, not ExternalName).
pub fn has_cluster_ip(s: &Service) -> bool {
    !s.spec.headless && s.spec.type_ != ServiceType::ExternalName && s.spec.cluster_ip.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_on_the_canvas() {
        assert_eq!(display_node("node-2"), "Node-2");
        assert_eq!(display_node("apollo11-worker"), "apollo11-worker");
        assert_eq!(display_node("node-"), "node-");
    }
}
