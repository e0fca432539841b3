//! The cluster in motion: control-plane messages and packets, one hop at a
//! time.
//!
//! A [`World`] holds the state of every component: the API server's
//! objects, the rules each node's kube-proxy last wrote, each node's
//! conntrack table and the cloud's balancers. Actions (`kubectl_apply`,
//! `wait`, `connect`) move messages between components and record a
//! [`Hop`] for each, with a [`View`] of the state after it. Packet
//! decisions are made only by walking the node's rules or by conntrack.

use crate::api::{LoadBalancerIngress, ObjectRef, Service, ServiceStatus, ServiceType};
use crate::api::server::{ApiError, ApiServer};
use crate::controllers::cloud::{CloudProvider, Delivery, LbFlow, LbState, Listener};
use crate::dataplane::conntrack::{ConntrackTable, Direction};
use crate::dataplane::iptables::{Match, RuleRef, Target};
use crate::dataplane::kubeproxy::{sync_node, KubeProxyConfig, NodeRules};
use crate::dataplane::netfilter::{reachable_dnat_targets, traverse, Dice, Entry, NodeContext, Verdict};
use crate::net::{Packet, Protocol, SockAddr};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// A component on the canvas that a hop starts or ends at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Place {
    /// The user's machine: runs kubectl and the client.
    Laptop,
    LoadBalancer,
    ApiServer,
    CloudControllerManager,
    /// A node, by index into the API server's node list.
    Node(usize),
    /// A Pod, by index into the API server's Pod list.
    Pod(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HopKind {
    Dns,
    Request,
    Reply,
    ControlPlane,
    Dropped,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RewriteKind {
    /// kube-proxy's DNAT to an endpoint.
    Dnat,
    /// kube-proxy's masquerade.
    Snat,
    /// conntrack undoing a DNAT on a reply.
    UnDnat,
    /// conntrack undoing a SNAT on a reply.
    UnSnat,
    /// A cloud balancer's own rewrite.
    Balancer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Field {
    Source,
    Destination,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    pub kind: RewriteKind,
    pub field: Field,
    pub from: SockAddr,
    pub to: SockAddr,
}

/// A rule that matched, as its `iptables-save` line on that node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchedRule {
    /// The table it is in: KUBE-SERVICES, for one, exists in both.
    pub table: crate::dataplane::iptables::TableName,
    pub line: usize,
    pub text: String,
}

/// What happened to a packet on one hop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PacketHop {
    /// As it arrived at the hop's start.
    pub before: Packet,
    /// As it travels on this hop.
    pub after: Packet,
    pub rewrites: Vec<Rewrite>,
    /// The node whose rules or conntrack decided the rewrites.
    pub decided_on: Option<usize>,
    pub matched: Vec<MatchedRule>,
    /// True when conntrack, not the rules, made the rewrite.
    pub by_conntrack: bool,
    /// Every endpoint the rules could have picked (when they chose).
    pub could_reach: Vec<SockAddr>,
    /// The entry of `decided_on`'s conntrack table this hop created or was
    /// rewritten by, as an index into that table's entries.
    pub conntrack_entry: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hop {
    pub from: Place,
    pub to: Place,
    pub kind: HopKind,
    /// Drawn as an alternative ("what a VIP balancer would do"), not as
    /// part of the main story.
    pub what_if: bool,
    /// A short caption for the canvas.
    pub caption: String,
    /// One or two sentences for the hop list.
    pub detail: String,
    pub packet: Option<PacketHop>,
}

/// A compact, typed summary of the rules one node holds for a Service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RuleSummary {
    ClusterIp { addr: SockAddr, lines: Vec<usize> },
    NodePort { port: u16, lines: Vec<usize> },
    LoadBalancerIp { addr: SockAddr, lines: Vec<usize> },
    Endpoints { targets: Vec<SockAddr>, lines: Vec<usize> },
}

impl RuleSummary {
    pub fn lines(&self) -> &[usize] {
        match self {
            RuleSummary::ClusterIp { lines, .. }
            | RuleSummary::NodePort { lines, .. }
            | RuleSummary::LoadBalancerIp { lines, .. }
            | RuleSummary::Endpoints { lines, .. } => lines,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub rules: Vec<RuleSummary>,
    /// The Service's lines of both tables, numbered as in `NodeRules::save`.
    pub iptables: Vec<(usize, String)>,
    /// The node's conntrack table, one `conntrack -L` line per entry.
    pub conntrack: Vec<ConntrackLine>,
}

/// One conntrack entry as shown, with what identifies it: the original
/// tuple names the connection, the state says how far it got. The text's
/// timeout changes every second; these do not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConntrackLine {
    pub text: String,
    pub original: crate::dataplane::conntrack::Tuple,
    pub state: crate::dataplane::conntrack::ConntrackState,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BalancerView {
    Absent,
    Provisioning,
    Active { ip: Ipv4Addr },
}

/// What the panels show at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub clock: u64,
    pub kubectl: String,
    pub nodes: Vec<NodeView>,
    pub balancer: BalancerView,
}

/// How a connection ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The reply reached the client.
    Answered { server: SockAddr },
    Dropped { at: Place, reason: String },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct World {
    pub api: ApiServer,
    pub proxy: KubeProxyConfig,
    /// The rules each node's kube-proxy wrote last.
    pub rules: Vec<NodeRules>,
    pub conntrack: Vec<ConntrackTable>,
    pub cloud: CloudProvider,
    pub clock: u64,
    pub created: BTreeMap<ObjectRef, u64>,
    pub client: Ipv4Addr,
    next_client_port: u16,
    /// The Service whose rules and kubectl row the views show.
    pub focus: ObjectRef,
    trace: Vec<(Hop, View)>,
}

impl World {
    pub fn new(api: ApiServer, proxy: KubeProxyConfig, cloud: CloudProvider, client: Ipv4Addr, focus: ObjectRef, clock: u64) -> World {
        let mut w = World {
            api,
            proxy,
            rules: Vec::new(),
            conntrack: Vec::new(),
            cloud,
            clock,
            created: BTreeMap::new(),
            client,
            next_client_port: 51000,
            focus,
            trace: Vec::new(),
        };
        for s in w.api.services() {
            w.created.insert(s.object_ref(), 0);
        }
        w.rules = (0..w.api.nodes.len()).map(|i| w.desired_rules(i)).collect();
        w.conntrack = vec![ConntrackTable::default(); w.api.nodes.len()];
        w
    }

    fn desired_rules(&self, node: usize) -> NodeRules {
        let services: Vec<Service> = self.api.services().cloned().collect();
        sync_node(&self.api.nodes[node], &services, &self.api.endpoint_slices(), &self.proxy)
    }

    /// The hops recorded since the last call, with the view after each.
    pub fn take_trace(&mut self) -> Vec<(Hop, View)> {
        std::mem::take(&mut self.trace)
    }

    fn push(&mut self, hop: Hop) {
        self.clock += 1;
        let v = self.view();
        self.trace.push((hop, v));
    }

    pub fn view(&self) -> View {
        let svc = self.api.service(&self.focus.namespace, &self.focus.name);
        let kubectl = match svc {
            Some(s) => crate::api::kubectl::get_services(&[(s, *self.created.get(&self.focus).unwrap_or(&0))], self.clock, false),
            None => format!("Error from server (NotFound): services \"{}\" not found\n", self.focus.name),
        };
        let nodes = (0..self.api.nodes.len())
            .map(|i| NodeView {
                rules: self.summarise(i),
                iptables: self.rules[i].service_lines(&self.focus.namespace, &self.focus.name),
                conntrack: self.conntrack[i]
                    .entries
                    .iter()
                    .map(|e| ConntrackLine { text: e.render(self.clock), original: e.original, state: e.state })
                    .collect(),
            })
            .collect();
        let balancer = match self.cloud.balancer_for(&self.focus) {
            None => BalancerView::Absent,
            Some(b) if b.state == LbState::Active => BalancerView::Active { ip: b.ip },
            Some(_) => BalancerView::Provisioning,
        };
        View { clock: self.clock, kubectl, nodes, balancer }
    }

    /// Reads the typed rules back into a summary of what the node does
    /// for the focused Service.
    fn summarise(&self, node: usize) -> Vec<RuleSummary> {
        let rules = &self.rules[node];
        let nat = &rules.nat;
        let line = |chain: &str, i: usize| rules.line_of(&RuleRef { table: nat.name, chain: chain.into(), index: i });
        let chain_lines = |chain: &str| -> Vec<usize> { nat.chain(chain).map_or(Vec::new(), |c| (0..c.rules.len()).filter_map(|i| line(chain, i)).collect()) };
        let mut out = Vec::new();
        for sp in rules.services.iter().filter(|s| s.is_port_of(&self.focus.namespace, &self.focus.name)) {
            let Some(services) = nat.chain("KUBE-SERVICES") else { continue };
            for (i, r) in services.rules.iter().enumerate() {
                let Target::Jump(t) = &r.target else { continue };
                let addr = rule_addr(&r.matches);
                let lines: Vec<usize> = line("KUBE-SERVICES", i).into_iter().collect();
                match addr {
                    Some(addr) if *t == sp.svc_chain => out.push(RuleSummary::ClusterIp { addr, lines }),
                    Some(addr) if Some(t) == sp.ext_chain.as_ref() => out.push(RuleSummary::LoadBalancerIp { addr, lines }),
                    _ => {}
                }
            }
            if let (Some(ext), Some(np)) = (&sp.ext_chain, nat.chain("KUBE-NODEPORTS")) {
                for (i, r) in np.rules.iter().enumerate() {
                    // The copy for 127.0.0.0/8 (a localhost node port, counted
                    // by nfacct) is the same node port: summarise it once.
                    let localhost = r.matches.iter().any(|m| matches!(m, Match::Destination { .. }));
                    if r.target == Target::Jump(ext.clone()) && !localhost {
                        let port = r.matches.iter().find_map(|m| if let Match::DestinationPort(p) = m { Some(*p) } else { None });
                        // Only the node port's own rule: the KUBE-EXT chain it
                        // jumps to is shared with balancer and external IPs.
                        let lines: Vec<usize> = line("KUBE-NODEPORTS", i).into_iter().collect();
                        if let Some(port) = port {
                            out.push(RuleSummary::NodePort { port, lines });
                        }
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
                for c in &sp.sep_chains {
                    lines.extend(chain_lines(c));
                }
                out.push(RuleSummary::Endpoints { targets, lines });
            }
        }
        out
    }

    /// kube-proxy on each node catches up with the API server. A hop is
    /// recorded only for nodes whose rules change.
    fn resync_proxies(&mut self) {
        for i in 0..self.api.nodes.len() {
            let want = self.desired_rules(i);
            if want != self.rules[i] {
                let before: std::collections::BTreeSet<String> = self.rules[i].nat.save().into_iter().collect();
                let after: std::collections::BTreeSet<String> = want.nat.save().into_iter().collect();
                let added = after.difference(&before).filter(|l| l.starts_with("-A")).count();
                let removed = before.difference(&after).filter(|l| l.starts_with("-A")).count();
                self.rules[i] = want;
                let name = display_node(&self.api.nodes[i].name);
                self.push(Hop {
                    from: Place::ApiServer,
                    to: Place::Node(i),
                    kind: HopKind::ControlPlane,
                    what_if: false,
                    caption: format!("watch → kube-proxy {name}"),
                    detail: format!("kube-proxy on {name} sees the change and rewrites its iptables rules: {added} added, {removed} removed."),
                    packet: None,
                });
            }
        }
    }

    /// `kubectl apply` of a Service, then everything that follows from it
    /// right away: kube-proxy updates and the cloud-controller-manager's
    /// request for a balancer.
    pub fn kubectl_apply(&mut self, svc: Service) -> Result<Service, ApiError> {
        let name = svc.name.clone();
        let result = self.api.apply_service(svc);
        match &result {
            Err(e) => {
                self.push(Hop {
                    from: Place::Laptop,
                    to: Place::ApiServer,
                    kind: HopKind::Dropped,
                    what_if: false,
                    caption: "kubectl apply: rejected".into(),
                    detail: format!("The API server refuses the change: {e}"),
                    packet: None,
                });
                return result;
            }
            Ok(s) => {
                self.created.entry(s.object_ref()).or_insert(self.clock);
                let ports: Vec<String> = s.spec.ports.iter().filter_map(|p| p.node_port).map(|p| p.to_string()).collect();
                let detail = if s.spec.type_.has_node_ports() {
                    format!(
                        "The API server validates Service {name}, keeps ClusterIP {} and holds node port {} from the range {}.",
                        s.spec.cluster_ip.map_or("None".into(), |i| i.to_string()),
                        ports.join(", "),
                        self.api.config.node_port_range
                    )
                } else {
                    format!("The API server validates and stores Service {name}.")
                };
                self.push(Hop {
                    from: Place::Laptop,
                    to: Place::ApiServer,
                    kind: HopKind::ControlPlane,
                    what_if: false,
                    caption: format!("kubectl apply: type {}", s.spec.type_.as_str()),
                    detail,
                    packet: None,
                });
            }
        }
        let svc = result.clone().unwrap_or_else(|_| unreachable!("errors returned above"));
        self.resync_proxies();
        if svc.spec.type_ == ServiceType::LoadBalancer && self.cloud.balancer_for(&svc.object_ref()).is_none() {
            self.push(Hop {
                from: Place::ApiServer,
                to: Place::CloudControllerManager,
                kind: HopKind::ControlPlane,
                what_if: false,
                caption: "watch → cloud-controller-manager".into(),
                detail: format!("The cloud-controller-manager sees that Service {} is now of type LoadBalancer and has no balancer yet.", svc.object_ref()),
                packet: None,
            });
            let listeners: Vec<Listener> =
                svc.spec.ports.iter().filter_map(|p| Some(Listener { protocol: p.protocol, port: p.port, node_port: p.node_port? })).collect();
            let targets: Vec<(String, Ipv4Addr)> = self.api.nodes.iter().map(|n| (n.name.clone(), n.internal_ip)).collect();
            let now = self.clock;
            let created = self.cloud.create(svc.object_ref(), listeners.clone(), targets, now).is_some();
            let l = listeners.iter().map(|l| format!("{}/{} → every node :{}", l.port, l.protocol, l.node_port)).collect::<Vec<_>>().join(", ");
            self.push(Hop {
                from: Place::CloudControllerManager,
                to: Place::LoadBalancer,
                kind: if created { HopKind::ControlPlane } else { HopKind::Dropped },
                what_if: false,
                caption: "create load balancer".into(),
                detail: if created {
                    format!("It asks the cloud for a load balancer with listener {l}. The cloud starts building it; the call returns before it is ready.")
                } else {
                    "The cloud has no free address; the Service stays <pending>.".into()
                },
                packet: None,
            });
        }
        Ok(svc)
    }

    /// Lets `secs` seconds pass: balancers finish provisioning and the
    /// cloud-controller-manager publishes their addresses.
    pub fn wait(&mut self, secs: u64) {
        self.clock += secs;
        for svc in self.cloud.tick(self.clock) {
            let Some(lb) = self.cloud.balancer_for(&svc) else { continue };
            let ip = lb.ip;
            self.push(Hop {
                from: Place::LoadBalancer,
                to: Place::CloudControllerManager,
                kind: HopKind::ControlPlane,
                what_if: false,
                caption: format!("ready: {ip}"),
                detail: format!("The cloud reports the balancer ready at {ip}, with every node as a healthy target."),
                packet: None,
            });
            // Like most cloud controllers this one leaves ipMode unset,
            // which kube-proxy reads as VIP: it also captures the address.
            let status = ServiceStatus { load_balancer_ingress: vec![LoadBalancerIngress::with_ip(ip, None)] };
            self.api.update_service_status(&svc, status);
            self.push(Hop {
                from: Place::CloudControllerManager,
                to: Place::ApiServer,
                kind: HopKind::ControlPlane,
                what_if: false,
                caption: "PATCH status.loadBalancer".into(),
                detail: format!("The cloud-controller-manager writes status.loadBalancer.ingress: [{{ip: {ip}}}], with no ipMode, which kube-proxy reads as VIP. EXTERNAL-IP is no longer <pending>."),
                packet: None,
            });
            self.resync_proxies();
        }
    }

    /// A client on the laptop opens a connection to `dst`. Random rule
    /// matches are decided by `dice`; a balancer sends to the node at
    /// index `lb_target` and hands over packets as `delivery` says.
    pub fn connect(&mut self, dst: SockAddr, dice: &mut dyn Dice, lb_target: usize, delivery: Delivery) -> Outcome {
        let src = SockAddr::new(self.client, self.next_client_port);
        self.next_client_port = self.next_client_port.wrapping_add(1).max(1024);
        let mut pkt = Packet::new(Protocol::Tcp, src, dst);
        let mut at = Place::Laptop;
        let mut kind = HopKind::Request;
        for _ in 0..32 {
            let step = match at {
                Place::Laptop if kind == HopKind::Reply => return Outcome::Answered { server: pkt.src },
                Place::Laptop => self.from_outside(&pkt),
                Place::LoadBalancer => self.at_balancer(&pkt, lb_target, delivery),
                Place::Node(n) => self.at_node(n, &pkt, dice),
                Place::Pod(p) => self.at_pod(p, &pkt),
                Place::ApiServer | Place::CloudControllerManager => Step::Drop("not a packet path".into()),
            };
            match step {
                Step::Next { to, packet, caption, detail } => {
                    if matches!(at, Place::Pod(_)) {
                        kind = HopKind::Reply;
                    }
                    let after = packet.after;
                    self.push(Hop { from: at, to, kind, what_if: false, caption, detail, packet: Some(packet) });
                    at = to;
                    pkt = after;
                }
                Step::Drop(reason) => {
                    self.push(Hop {
                        from: at,
                        to: at,
                        kind: HopKind::Dropped,
                        what_if: false,
                        caption: "dropped".into(),
                        detail: reason.clone(),
                        packet: Some(PacketHop { before: pkt, after: pkt, rewrites: vec![], decided_on: None, matched: vec![], by_conntrack: false, could_reach: vec![], conntrack_entry: None }),
                    });
                    return Outcome::Dropped { at, reason };
                }
            }
        }
        Outcome::Dropped { at, reason: "too many hops".into() }
    }

    fn node_of_ip(&self, ip: Ipv4Addr) -> Option<usize> {
        self.api.nodes.iter().position(|n| n.internal_ip == ip)
    }

    /// The outside network: it knows the nodes' and the balancers'
    /// addresses, and nothing inside the cluster.
    fn from_outside(&self, pkt: &Packet) -> Step {
        let plain = |to: Place, caption: String, detail: String| Step::Next { to, packet: PacketHop::plain(*pkt), caption, detail };
        if let Some(n) = self.node_of_ip(pkt.dst.ip) {
            let name = display_node(&self.api.nodes[n].name);
            return plain(Place::Node(n), format!("request → {}", pkt.dst), format!("The client sends {} straight to {name}.", packet_text(pkt)));
        }
        if self.cloud.balancer_at(pkt.dst.ip).is_some() {
            return plain(Place::LoadBalancer, format!("request → {}", pkt.dst), format!("The client sends {} to the load balancer.", packet_text(pkt)));
        }
        Step::Drop(format!("No route outside the cluster leads to {}: only node and balancer addresses are reachable from here.", pkt.dst.ip))
    }

    fn at_balancer(&mut self, pkt: &Packet, target: usize, delivery: Delivery) -> Step {
        let client = self.client;
        let Some(lb) = self.cloud.balancers.iter_mut().find(|b| b.ip == pkt.dst.ip || b.flows.iter().any(|f| f.backend == pkt.src)) else {
            return Step::Drop("no balancer owns this address".into());
        };
        // A reply from a node on a flow the balancer remembers.
        if pkt.dst.ip == client {
            let Some(flow) = lb.reply_flow(pkt).cloned() else { return Step::Drop("the balancer has no flow for this reply".into()) };
            let after = Packet { src: flow.frontend, ..*pkt };
            let rewrites = vec![Rewrite { kind: RewriteKind::Balancer, field: Field::Source, from: pkt.src, to: after.src }];
            return Step::Next {
                to: Place::Laptop,
                packet: PacketHop { before: *pkt, after, rewrites, decided_on: None, matched: vec![], by_conntrack: false, could_reach: vec![], conntrack_entry: None },
                caption: format!("reply from {}", after.src),
                detail: format!("The balancer puts its own address back as the source, so the client sees a reply from {}.", after.src),
            };
        }
        let Some(listener) = lb.listener(pkt.dst, pkt.proto).cloned() else {
            return Step::Drop(format!("The balancer has no listener on {}.", pkt.dst));
        };
        let Some((node_name, node_ip)) = lb.targets.get(target).or(lb.targets.first()).cloned() else {
            return Step::Drop("the balancer has no healthy targets".into());
        };
        let backend = match delivery {
            Delivery::NodePort => SockAddr::new(node_ip, listener.node_port),
            Delivery::Vip => pkt.dst,
        };
        lb.flows.push(LbFlow { client: pkt.src, frontend: pkt.dst, backend });
        let after = Packet { dst: backend, ..*pkt };
        let node = self.node_of_ip(node_ip).unwrap_or(0);
        let name = display_node(&node_name);
        let (rewrites, caption, detail) = match delivery {
            Delivery::NodePort => (
                vec![Rewrite { kind: RewriteKind::Balancer, field: Field::Destination, from: pkt.dst, to: backend }],
                format!("forward to {name}:{}", listener.node_port),
                format!("The balancer picks {name} and forwards to its node port {}, keeping the client's address as source.", listener.node_port),
            ),
            Delivery::Vip => (
                vec![],
                format!("VIP: to {name}, still {}", pkt.dst),
                format!("A balancer with ipMode VIP delivers the packet to {name} still addressed to {}.", pkt.dst),
            ),
        };
        Step::Next {
            to: Place::Node(node),
            packet: PacketHop { before: *pkt, after, rewrites, decided_on: None, matched: vec![], by_conntrack: false, could_reach: vec![], conntrack_entry: None },
            caption,
            detail,
        }
    }

    fn at_pod(&self, p: usize, pkt: &Packet) -> Step {
        let pod = &self.api.pods[p];
        let node = self.api.nodes.iter().position(|n| n.name == pod.node_name).unwrap_or(0);
        if pkt.dst.ip != pod.ip || pkt.dst.port != pod.container_port {
            return Step::Drop(format!("Nothing in Pod {} listens on port {}; the connection is refused.", pod.name, pkt.dst.port));
        }
        let reply = pkt.reversed();
        Step::Next {
            to: Place::Node(node),
            packet: PacketHop::plain(reply),
            caption: format!("reply → {}", reply.dst),
            detail: format!("Pod {} answers. It saw the request come from {}, so it replies there.", pod.name, pkt.src),
        }
    }

    /// A node receives a packet: conntrack, then the nat table, then routing.
    fn at_node(&mut self, n: usize, pkt: &Packet, dice: &mut dyn Dice) -> Step {
        let node = self.api.nodes[n].clone();
        let name = display_node(&node.name);
        let ctx = NodeContext::new(crate::dataplane::trace::node_addresses(&node));

        // A packet of a known connection is rewritten from conntrack.
        if let Some((i, dir)) = self.conntrack[n].lookup(pkt) {
            let after = self.conntrack[n].translate(i, dir, pkt, self.clock);
            let mut rewrites = Vec::new();
            if after.src != pkt.src {
                let kind = if dir == Direction::Reply { RewriteKind::UnDnat } else { RewriteKind::Snat };
                rewrites.push(Rewrite { kind, field: Field::Source, from: pkt.src, to: after.src });
            }
            if after.dst != pkt.dst {
                let kind = if dir == Direction::Reply { RewriteKind::UnSnat } else { RewriteKind::Dnat };
                rewrites.push(Rewrite { kind, field: Field::Destination, from: pkt.dst, to: after.dst });
            }
            let Some((to, _)) = self.route(n, after.dst.ip) else {
                return Step::Drop(format!("{name} has no route to {}.", after.dst.ip));
            };
            let detail = if rewrites.is_empty() {
                format!("{name} forwards the packet unchanged; conntrack knows the connection but made no rewrite on it.")
            } else {
                format!("conntrack on {name} matches the reply to its entry and undoes the NAT: the packet now runs {}.", packet_text(&after))
            };
            return Step::Next {
                to,
                packet: PacketHop { before: *pkt, after, rewrites, decided_on: Some(n), matched: vec![], by_conntrack: true, could_reach: vec![], conntrack_entry: Some(i) },
                caption: if after == *pkt { format!("forward → {}", after.dst) } else { "conntrack undoes the NAT".to_string() },
                detail,
            };
        }

        // A new connection goes through the nat and filter tables.
        let rules = &self.rules[n];
        let t = traverse(&rules.filter, &rules.nat, Entry::Arriving, pkt, &ctx, dice);
        let mut after = t.routed;
        let mut rewrites = Vec::new();
        let mut could_reach = Vec::new();
        if let Verdict::Dnat(to) = t.nat.verdict {
            rewrites.push(Rewrite { kind: RewriteKind::Dnat, field: Field::Destination, from: pkt.dst, to });
            could_reach = reachable_dnat_targets(&rules.nat, "PREROUTING", pkt, &ctx);
        }
        let matched: Vec<MatchedRule> =
            t.matched().filter_map(|r| Some(MatchedRule { table: r.table, line: rules.line_of(r)?, text: rules.rule(r)?.render(&r.chain) })).collect();
        if let Some(v) = t.refused() {
            let why = t
                .filter
                .matched
                .last()
                .and_then(|r| rules.rule(r))
                .and_then(|r| r.comment().map(str::to_string))
                .unwrap_or_else(|| "no rule accepts it".into());
            let what = if *v == Verdict::Reject { "rejects" } else { "drops" };
            return Step::Drop(format!("{name}'s filter table {what} {}: {why}.", packet_text(pkt)));
        }
        let Some((to, out_addr)) = self.route(n, after.dst.ip) else {
            return Step::Drop(if self.api.config.service_cidr.contains(after.dst.ip) {
                format!("{name} has no rule for {} and no route to the service range: the address exists only in kube-proxy's rules.", after.dst)
            } else {
                format!("{name} has no route to {}.", after.dst.ip)
            });
        };
        if t.masquerade() {
            let from = after.src;
            // MASQUERADE --random-fully draws a fresh source port; here it
            // is derived from the connection so the story repeats.
            after.src = SockAddr::new(out_addr, masquerade_port(n, pkt));
            rewrites.push(Rewrite { kind: RewriteKind::Snat, field: Field::Source, from, to: after.src });
        }
        let entry = self.conntrack[n].insert(pkt, &after, self.clock);
        let to_name = self.place_name(to);
        let (caption, detail) = if rewrites.is_empty() {
            (format!("forward → {to_name}"), format!("No rule of {name} rewrites {}; it is routed on to {to_name}.", packet_text(pkt)))
        } else {
            let mut parts = Vec::new();
            for r in &rewrites {
                match r.kind {
                    RewriteKind::Dnat => parts.push(format!("DNAT to {}", r.to)),
                    RewriteKind::Snat => parts.push(format!("SNAT to {}", r.to.ip)),
                    _ => {}
                }
            }
            (
                parts.join(", "),
                format!(
                    "{name} walks its nat table: {}. The packet leaves for {to_name} as {}; conntrack records the connection.",
                    parts.join(", then "),
                    packet_text(&after)
                ),
            )
        };
        Step::Next {
            to,
            packet: PacketHop { before: *pkt, after, rewrites, decided_on: Some(n), matched, by_conntrack: false, could_reach, conntrack_entry: Some(entry) },
            caption,
            detail,
        }
    }

    /// Routing on node `n`: where a packet to `dst` goes next, and which
    /// of the node's addresses it leaves from (used by masquerade).
    fn route(&self, n: usize, dst: Ipv4Addr) -> Option<(Place, Ipv4Addr)> {
        let node = &self.api.nodes[n];
        if node.pod_cidr.is_some_and(|c| c.contains(dst)) {
            let p = self.api.pods.iter().position(|p| p.ip == dst && p.node_name == node.name)?;
            return Some((Place::Pod(p), node.pod_cidr.and_then(|c| c.nth(1)).unwrap_or(node.internal_ip)));
        }
        if let Some(m) = self.api.nodes.iter().position(|o| o.pod_cidr.is_some_and(|c| c.contains(dst)) || (o.internal_ip == dst && o.name != node.name)) {
            return Some((Place::Node(m), node.internal_ip));
        }
        if self.api.config.service_cidr.contains(dst) || node.internal_ip == dst {
            return None;
        }
        // Outside: via the balancer if it carries this flow, else straight back.
        if self.cloud.balancers.iter().any(|b| b.flows.iter().any(|f| f.client.ip == dst)) {
            return Some((Place::LoadBalancer, node.internal_ip));
        }
        (dst == self.client).then_some((Place::Laptop, node.internal_ip))
    }

    pub fn place_name(&self, p: Place) -> String {
        match p {
            Place::Laptop => "the laptop".into(),
            Place::LoadBalancer => "the load balancer".into(),
            Place::ApiServer => "the API server".into(),
            Place::CloudControllerManager => "the cloud-controller-manager".into(),
            Place::Node(n) => self.api.nodes.get(n).map_or("a node".into(), |x| display_node(&x.name)),
            Place::Pod(p) => self.api.pods.get(p).map_or("a Pod".into(), |x| format!("Pod {}", x.ip)),
        }
    }
}

enum Step {
    Next { to: Place, packet: PacketHop, caption: String, detail: String },
    Drop(String),
}

impl PacketHop {
    fn plain(p: Packet) -> PacketHop {
        PacketHop { before: p, after: p, rewrites: vec![], decided_on: None, matched: vec![], by_conntrack: false, could_reach: vec![], conntrack_entry: None }
    }
}

/// A source port in 1024–65535, stable for one node and connection.
fn masquerade_port(node: usize, pkt: &Packet) -> u16 {
    let h = crate::hash::fnv1a(format!("{node}|{}|{}", pkt.src, pkt.dst).as_bytes());
    1024 + (h % 64512) as u16
}

/// `node-2` → `Node-2`, as the explainer labels nodes.
pub fn display_node(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn packet_text(p: &Packet) -> String {
    format!("{} → {}", p.src, p.dst)
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
    use crate::api::TrafficPolicy;
    use crate::net::ip;
    use crate::dataplane::netfilter::FixedDraws;
    use crate::scenarios::nodeport_cluster;

    fn web(w: &World) -> Service {
        w.api.service("default", "web").cloned().expect("web exists")
    }

    #[test]
    fn a_cluster_ip_is_unreachable_from_outside() {
        let mut w = nodeport_cluster();
        let cip = web(&w).spec.cluster_ip.unwrap();
        let out = w.connect(SockAddr::new(cip, 80), &mut FixedDraws::new(vec![]), 0, Delivery::NodePort);
        assert!(matches!(out, Outcome::Dropped { at: Place::Laptop, .. }), "{out:?}");
        let hops = w.take_trace();
        assert_eq!(hops.len(), 1);
        assert_eq!(hops[0].0.kind, HopKind::Dropped);
    }

    #[test]
    fn local_policy_drops_at_a_node_without_a_pod_and_keeps_the_client_ip_elsewhere() {
        let mut w = nodeport_cluster();
        let mut s = web(&w);
        s.spec.type_ = ServiceType::NodePort;
        s.spec.ports[0].node_port = Some(31000);
        s.spec.external_traffic_policy = TrafficPolicy::Local;
        w.kubectl_apply(s).unwrap();
        w.take_trace();
        // Node-2 runs no web Pod: its filter table drops the connection.
        let out = w.connect(SockAddr::new(ip(10, 0, 0, 12), 31000), &mut FixedDraws::new(vec![]), 0, Delivery::NodePort);
        match out {
            Outcome::Dropped { at: Place::Node(1), reason } => assert!(reason.contains("has no local endpoints"), "{reason}"),
            other => panic!("expected a drop on Node-2, got {other:?}"),
        }
        // Node-3 has one: the Pod sees the laptop's own address.
        w.take_trace();
        let out = w.connect(SockAddr::new(ip(10, 0, 0, 13), 31000), &mut FixedDraws::new(vec![]), 0, Delivery::NodePort);
        assert_eq!(out, Outcome::Answered { server: SockAddr::new(ip(10, 0, 0, 13), 31000) });
        let hops = w.take_trace();
        let to_pod = hops.iter().find(|(h, _)| matches!(h.to, Place::Pod(_))).expect("reaches the Pod");
        let p = to_pod.0.packet.as_ref().unwrap();
        assert_eq!(p.after.src.ip, w.client, "no SNAT under Local policy");
        assert_eq!(p.could_reach, vec![SockAddr::new(ip(10, 244, 3, 9), 8080)], "only the local Pod");
    }

    #[test]
    fn conntrack_reverses_exactly_what_the_rules_did() {
        let mut w = nodeport_cluster();
        let mut s = web(&w);
        s.spec.type_ = ServiceType::NodePort;
        s.spec.ports[0].node_port = Some(31000);
        w.kubectl_apply(s).unwrap();
        w.take_trace();
        for draw in [0.1, 0.9] {
            let dst = SockAddr::new(ip(10, 0, 0, 12), 31000);
            let out = w.connect(dst, &mut FixedDraws::new(vec![draw]), 0, Delivery::NodePort);
            assert_eq!(out, Outcome::Answered { server: dst }, "the client sees the address it dialled");
            let hops = w.take_trace();
            let first = hops.first().unwrap().0.packet.clone().unwrap();
            let last = hops.last().unwrap().0.packet.clone().unwrap();
            assert_eq!(last.after, first.after.reversed());
        }
        assert_eq!(w.conntrack[1].entries.len(), 2, "one entry per connection on Node-2");
    }

    #[test]
    fn conntrack_lines_keep_their_identity_while_the_timer_ticks() {
        let w = crate::scenarios::build("nodeport-loadbalancer", Default::default()).unwrap();
        let node2 = |step: usize, view: usize| w.steps[step].views[view].nodes[1].conntrack.clone();
        // Step 2: the entry appears unreplied, then the reply assures it.
        let after_request = node2(1, 2);
        let after_reply = node2(1, 6);
        assert_eq!(after_request[0].original, after_reply[0].original, "the same connection");
        assert_ne!(after_request[0].state, after_reply[0].state, "in a new state");
        assert!(after_request[0].text.contains("SYN_SENT") && after_reply[0].text.contains("ESTABLISHED"));
        // Step 3 waits for the balancer: the countdown moves, nothing else.
        let later = node2(2, 8);
        assert_ne!(later[0].text, after_reply[0].text, "the timeout counted down");
        assert_eq!((later[0].original, later[0].state), (after_reply[0].original, after_reply[0].state));
    }
}
