//! The packet path on a local network: a host deciding its packets by its
//! own rules (the laptop with Docker's), ARP on its bridges, docker-proxy
//! forwarding a published port, and an L7 proxy Pod that ends one
//! connection and opens another.
//!
//! Architecture Invariant: as on a node, a host's packet is rewritten
//! only by walking its rules or by its conntrack entry. A proxy (docker-
//! proxy, Envoy) never rewrites a packet: it answers its client's
//! connection and opens a connection of its own, which has its own hops.

use crate::dataplane::rules::ChainKind;
use super::hop::{ArpFrame, ArpOp, DropReason, Field, Hop, HopKind, Leg, MatchedRule, PacketHop, Payload, Rewrite, RewriteKind, Unroutable};
use super::host::{Neighbour, NeighbourState};
use super::network::{masquerade, next, packet_text, Dial, Outcome, Step};
use super::{ActorId, ActorKind, World};
use crate::controllers::gateway::{container_port, Decision};
use crate::dataplane::conntrack::Direction;
use crate::dataplane::docker::Mac;
use crate::dataplane::iptables::Target;
use crate::dataplane::netfilter::{traverse, Dice, Entry, NodeContext, Verdict};
use crate::net::{Packet, SockAddr};
use std::net::Ipv4Addr;

impl World {
    /// The index into `hosts` of an actor with a network stack of its own.
    pub(crate) fn host_of(&self, a: ActorId) -> Option<usize> {
        self.hosts.iter().position(|h| h.actor == a)
    }

    /// A host sends the first packet of a connection: nat OUTPUT, routing
    /// (with ARP when the next hop is not known yet), nat POSTROUTING.
    pub(super) fn at_host(&mut self, h: usize, pkt: &Packet, payload: &Option<Payload>, entry: Entry, dice: &mut dyn Dice) -> Step {
        // A later packet of a connection the host knows (followed packet
        // by packet): its conntrack entry rewrites it; no rule is walked.
        if let Some((i, dir)) = self.segment.and_then(|_| self.hosts[h].conntrack.lookup(pkt)) {
            return self.host_by_conntrack(h, i, dir, pkt, payload);
        }
        let host = &self.hosts[h];
        let me = host.actor;
        let mut ctx = NodeContext::new(host.addrs.clone());
        ctx.routes = host.iface_routes();
        let t = traverse(&host.filter, &host.nat, entry, pkt, &ctx, dice);
        let matched: Vec<MatchedRule> = t
            .matched()
            .filter_map(|r| {
                let rule = host.nat.rule(r)?;
                Some(MatchedRule { table: r.table.into(), line: host.line_of(r)?, text: rule.render_kernel(&r.chain), purpose: None, owner: None, rewrites: rule.target.rewrites(), chain: ChainKind::Other })
            })
            .collect();
        if let Some(v) = t.refused() {
            let rule = t.refusing_rule().and_then(|r| matched.iter().find(|m| Some(m.line) == host.line_of(r)).cloned());
            return Step::Drop(DropReason::Filtered { node: me, rejected: *v == Verdict::Reject, rule, comment: None });
        }
        let mut after = t.routed;
        let mut rewrites = Vec::new();
        if let Verdict::Dnat(to) = t.nat.verdict {
            rewrites.push(Rewrite { kind: RewriteKind::Dnat, field: Field::Destination, from: pkt.dst, to });
        }
        let (to, src) = match self.host_next(h, after.dst.ip) {
            Ok(x) => x,
            Err(e) => return Step::Drop(e),
        };
        if let Some(r) = t.masquerade_rule() {
            let from = after.src;
            let random_fully = self.hosts[h].nat.rule(r).is_some_and(|r| matches!(r.target, Target::Masquerade { random_fully: true }));
            after.src = masquerade(&self.hosts[h].conntrack, 1000 + h, pkt, &after, src, random_fully);
            // A masquerade that keeps both address and port changes nothing.
            if after.src != from {
                rewrites.push(Rewrite { kind: RewriteKind::Snat, field: Field::Source, from, to: after.src });
            }
        }
        let entry_index = self.hosts[h].conntrack.insert(pkt, &after, self.clock);
        self.track_host_segment(h, entry_index, Direction::Original);
        let kept = t.masquerade_rule().is_some() && !rewrites.iter().any(|r| r.kind == RewriteKind::Snat);
        let (caption, detail) = self.host_caption(me, to, pkt, &after, &rewrites, &matched, kept);
        let packet = PacketHop { before: *pkt, after, rewrites, decided_on: Some(me), matched, by_conntrack: false, could_reach: vec![], conntrack_entry: Some(entry_index), payload: payload.clone(), tunnel: None, segment: None };
        next(to, packet, caption, detail)
    }

    /// A later packet the host sends on a connection it knows, rewritten
    /// as its entry says.
    fn host_by_conntrack(&mut self, h: usize, i: usize, dir: Direction, pkt: &Packet, payload: &Option<Payload>) -> Step {
        let me = self.hosts[h].actor;
        let after = self.hosts[h].conntrack.translate(i, dir, pkt, self.clock);
        self.track_host_segment(h, i, dir);
        let rewrites = super::network::conntrack_rewrites(pkt, &after, dir);
        let (to, _) = match self.host_next(h, after.dst.ip) {
            Ok(x) => x,
            Err(e) => return Step::Drop(e),
        };
        let name = self.actors.short(me).to_string();
        let detail = if rewrites.is_empty() {
            format!("No rule walked: {name}'s conntrack knows this connection, and the packet goes as it is, {}.", packet_text(&after))
        } else {
            format!("No rule walked: {name}'s conntrack knows this connection and rewrites the packet as Docker's rules rewrote its first one; it now runs {}.", packet_text(&after))
        };
        let caption = if rewrites.is_empty() { format!("→ {}", after.dst) } else { "conntrack: same NAT".to_string() };
        let packet = PacketHop { before: *pkt, after, rewrites, decided_on: Some(me), matched: vec![], by_conntrack: true, could_reach: vec![], conntrack_entry: Some(i), payload: payload.clone(), tunnel: None, segment: None };
        next(to, packet, caption, detail)
    }

    /// `kept`: a masquerade matched and left the source as it was.
    #[allow(clippy::too_many_arguments)]
    fn host_caption(&self, me: ActorId, to: ActorId, before: &Packet, after: &Packet, rewrites: &[Rewrite], matched: &[MatchedRule], kept: bool) -> (String, String) {
        let name = self.actors.short(me).to_string();
        if to == me {
            let docker = if matched.is_empty() { " Docker's OUTPUT rule leaves 127.0.0.0/8 alone, so nothing rewrites it." } else { "" };
            return (format!("loopback → {}", after.dst), format!("{name} sends {} over loopback to a socket on itself.{docker}", packet_text(before)));
        }
        let to_name = self.place_name(to);
        if rewrites.is_empty() {
            let why = if kept {
                format!("its masquerade rule for the bridge matches, but the packet already leaves from {}, and a masquerade without --random-fully keeps a source port no other connection uses, so nothing changes", after.src.ip)
            } else {
                "no rule of its nat table rewrites it".to_string()
            };
            return (format!("request → {}", after.dst), format!("{name} sends {} out of its bridge to {to_name}; {why}.", packet_text(before)));
        }
        let parts: Vec<String> = rewrites
            .iter()
            .map(|r| match r.kind {
                RewriteKind::Dnat => format!("DNAT to {}", r.to),
                _ => format!("masquerade to {}", r.to.ip),
            })
            .collect();
        (
            parts.join(", "),
            format!(
                "{name}'s nat table, as Docker wrote it: {}. The packet leaves on the bridge for {to_name} as {}; {name}'s conntrack records the connection.",
                parts.join(", then "),
                packet_text(after)
            ),
        )
    }

    /// Where a host sends a packet to `dst`, and the source address of that
    /// way out: itself for its own addresses, the owner of the address on
    /// a bridge (found by ARP), or the network outside.
    fn host_next(&mut self, h: usize, dst: Ipv4Addr) -> Result<(ActorId, Ipv4Addr), DropReason> {
        let host = &self.hosts[h];
        if host.addrs.contains(&dst) {
            return Ok((host.actor, dst));
        }
        let Some(route) = host.route(dst).cloned() else { return Err(DropReason::NoRoute { dst, why: Unroutable::Unknown }) };
        if route.via.is_some() {
            return self.outside_route(dst).map(|a| (a, route.src));
        }
        self.resolve(h, dst, &route.iface, route.src).map(|a| (a, route.src))
    }

    /// The actor behind `ip` on a bridge, by the neighbour table or, when
    /// it has no entry yet, by ARP: a who-has to every container on the
    /// bridge, and an is-at from whichever answers.
    fn resolve(&mut self, h: usize, ip: Ipv4Addr, iface: &str, asker: Ipv4Addr) -> Result<ActorId, DropReason> {
        let unanswered = DropReason::NoNeighbour { ip, iface: iface.into() };
        if let Some(n) = self.hosts[h].neighbour(ip) {
            return match n.mac.filter(|_| n.state == NeighbourState::Reachable) {
                Some(mac) => self.node_of_mac(mac).ok_or(unanswered),
                None => Err(unanswered),
            };
        }
        let me = self.hosts[h].actor;
        let my_mac = self.hosts[h].mac_on(iface);
        let answer = self.arp_answerer(ip);
        for (node, listener) in self.bridge_listeners(h, iface) {
            let frame = ArpFrame { op: ArpOp::Request, iface: iface.into(), sender_ip: asker, sender_mac: my_mac, target_ip: ip, target_mac: None };
            let detail = format!("{}: the kernel of {} does not know {ip}'s Ethernet address yet, so it broadcasts on {iface}. {}", frame.summary(), self.actors.short(me), self.arp_silence(node, ip, answer.as_ref()));
            self.push_arp(me, listener, Leg::Out, format!("who-has {ip}?"), detail, frame);
        }
        let Some((node, responder, mac)) = answer else {
            self.hosts[h].learn(Neighbour { ip, iface: iface.into(), mac: None, state: NeighbourState::Failed });
            return Err(unanswered);
        };
        let frame = ArpFrame { op: ArpOp::Reply, iface: iface.into(), sender_ip: ip, sender_mac: mac, target_ip: asker, target_mac: Some(my_mac) };
        let who = if responder == node { format!("{}'s kernel, which holds {ip},", self.actors.short(node)) } else { format!("MetalLB's speaker on {}", self.actors.short(node)) };
        let detail = format!("{}: {who} answers with the Ethernet address of {}'s eth0. {} keeps {ip} → {mac} in its neighbour table; from now on every packet to {ip} goes to {}.", frame.summary(), self.actors.short(node), self.actors.short(me), self.actors.short(node));
        self.hosts[h].learn(Neighbour { ip, iface: iface.into(), mac: Some(mac), state: NeighbourState::Reachable });
        self.push_arp(responder, me, Leg::Back, format!("{ip} is-at {mac}"), detail, frame);
        Ok(node)
    }

    fn push_arp(&mut self, from: ActorId, to: ActorId, leg: Leg, caption: String, detail: String, frame: ArpFrame) {
        self.push(Hop { from, to, kind: HopKind::Dns, leg, what_if: false, caption, detail, packet: None, dropped: None, conn: None, arp: Some(frame) });
    }

    /// The nodes whose containers are on the bridge `iface` of host `h`,
    /// each with the actor that hears ARP there: its speaker if it has
    /// one (MetalLB listens on the node's interface), else the node.
    fn bridge_listeners(&self, h: usize, iface: &str) -> Vec<(ActorId, ActorId)> {
        let Some(d) = &self.hosts[h].docker else { return Vec::new() };
        let Some(net) = d.networks.iter().find(|n| n.bridge() == iface) else { return Vec::new() };
        d.containers
            .iter()
            .filter(|c| c.network == net.name)
            .filter_map(|c| self.actors.node(&c.name))
            .map(|n| (n, self.speaker_on(n).unwrap_or(n)))
            .collect()
    }

    /// The speaker actor on a node, if MetalLB runs there.
    pub(crate) fn speaker_on(&self, node: ActorId) -> Option<ActorId> {
        self.actors.pods_on(node).find(|p| p.kind == ActorKind::Speaker).map(|p| p.id)
    }

    /// Who answers ARP for `ip`: the node that holds it, or the node whose
    /// speaker announces it. Returns (node, the actor that answers, the MAC).
    fn arp_answerer(&self, ip: Ipv4Addr) -> Option<(ActorId, ActorId, Mac)> {
        let docker = self.hosts.iter().find_map(|h| h.docker.as_ref())?;
        if let Some(c) = docker.container_at(ip) {
            let node = self.actors.node(&c.name)?;
            return Some((node, node, c.mac));
        }
        let owner = self.lb.metallb()?.announcer(ip)?;
        let node = self.actors.node(owner)?;
        let c = docker.container(owner)?;
        Some((node, self.speaker_on(node).unwrap_or(node), c.mac))
    }

    /// Why a node on the bridge stays silent (or that it answers).
    fn arp_silence(&self, node: ActorId, ip: Ipv4Addr, answer: Option<&(ActorId, ActorId, Mac)>) -> String {
        let name = self.actors.short(node).to_string();
        if answer.is_some_and(|a| a.0 == node) {
            return format!("It reaches {name}, which will answer.");
        }
        let Some(m) = self.lb.metallb() else { return format!("{name} does not hold {ip} and nothing on it announces it.") };
        let excluded = m.speakers.iter().any(|s| s.node == name && s.excluded);
        match (excluded, m.announcer(ip)) {
            (true, _) => format!("The speaker on {name} stays silent: its node carries the label {}, so it never announces.", crate::controllers::metallb::EXCLUDE_LABEL),
            (false, Some(owner)) => format!("The speaker on {name} stays silent: {owner} won the election for {ip}."),
            (false, None) => format!("The speaker on {name} stays silent: no node was elected to announce {ip}."),
        }
    }

    /// The node whose container has this Ethernet address.
    fn node_of_mac(&self, mac: Mac) -> Option<ActorId> {
        let docker = self.hosts.iter().find_map(|h| h.docker.as_ref())?;
        let c = docker.containers.iter().find(|c| c.mac == mac)?;
        self.actors.node(&c.name)
    }

    /// Host `h`'s entry `i` takes the segment in flight, with the kernel's
    /// own timeouts (no kube-proxy runs on a host).
    fn track_host_segment(&mut self, h: usize, i: usize, dir: Direction) {
        if let Some(seg) = self.segment {
            let seg = crate::dataplane::tcp::Segment { dir: super::network::entry_dir(dir), ..seg };
            self.hosts[h].conntrack.track_tcp(i, seg, crate::dataplane::tcp::TcpTimeouts::kernel_default());
        }
    }

    /// A packet reaches a host: its conntrack rewrites a reply back to
    /// what the client's socket expects; a packet for a socket of the
    /// host itself is served there.
    pub(super) fn host_receive(&mut self, h: usize, client_reply: bool, pkt: &Packet, payload: &Option<Payload>, dice: &mut dyn Dice) -> Step {
        let me = self.hosts[h].actor;
        let Some((i, dir)) = self.hosts[h].conntrack.lookup(pkt) else {
            return if client_reply { Step::Arrived } else { Step::Drop(DropReason::Refused { at: me, port: pkt.dst.port }) };
        };
        let after = self.hosts[h].conntrack.translate(i, dir, pkt, self.clock);
        // A packet the host sent itself (over loopback, to its own
        // socket) was tracked as it left; the kernel does not track it
        // again as it comes in.
        let own = pkt.src.ip.is_loopback() || self.hosts[h].addrs.contains(&pkt.src.ip);
        if !(own && dir == Direction::Original) {
            self.track_host_segment(h, i, dir);
        }
        if !client_reply && dir == Direction::Original {
            // A segment without data is the host's kernel's to answer;
            // docker-proxy, behind the socket, opens its own connection
            // for the request.
            if let Some(seg) = self.segment.filter(|s| !s.data) {
                return self.kernel_answer(me, me, &after, seg);
            }
            return self.serve_on_host(h, &after, payload, dice);
        }
        let rewrites = super::network::conntrack_rewrites(pkt, &after, Direction::Reply);
        if rewrites.is_empty() {
            return Step::Arrived;
        }
        let name = self.actors.short(me).to_string();
        let packet = PacketHop { before: *pkt, after, rewrites, decided_on: Some(me), matched: vec![], by_conntrack: true, could_reach: vec![], conntrack_entry: Some(i), payload: payload.clone(), tunnel: None, segment: None };
        let detail = format!(
            "conntrack on {name} matches the reply to the entry Docker's rules made and undoes both rewrites: the packet now runs {}, and curl sees its answer come from {}, the address it dialled.",
            packet_text(&after),
            after.src
        );
        Step::Deliver { packet, caption: "conntrack undoes Docker's NAT".into(), detail }
    }

    /// A socket on the host answers: docker-proxy, for a published port,
    /// by opening its own connection to the container.
    fn serve_on_host(&mut self, h: usize, pkt: &Packet, payload: &Option<Payload>, dice: &mut dyn Dice) -> Step {
        let me = self.hosts[h].actor;
        let target = self.hosts[h].docker.as_ref().filter(|d| d.userland_proxy).and_then(|d| d.proxy_target(pkt.dst, pkt.proto));
        let Some(target) = target else { return Step::Drop(DropReason::Refused { at: me, port: pkt.dst.port }) };
        if self.nesting >= super::network::MAX_NESTING {
            return Step::Drop(DropReason::TooManyHops);
        }
        self.nesting += 1;
        let out = self.dial(Dial { payload: payload.clone(), proto: pkt.proto, ..Dial::tcp(me, target) }, dice);
        self.nesting -= 1;
        let reply = pkt.reversed();
        let (answer, caption, detail) = match out {
            Outcome::Answered { payload, .. } => {
                let what = payload.as_ref().map_or_else(String::new, |p| format!(" ({})", p.summary()));
                let detail = format!("docker-proxy copies the answer{what} from its own connection to {target} back onto curl's connection, which still runs between {} and {}.", reply.src, reply.dst);
                (payload, format!("docker-proxy answers from {}", reply.src), detail)
            }
            // docker-proxy moves bytes, not HTTP: when it cannot reach the
            // container it closes the connection it accepted.
            Outcome::Dropped { .. } => (
                None,
                "docker-proxy closes the connection".to_string(),
                format!("docker-proxy could not reach {target}, so it closes curl's connection without a byte of answer: curl reports \"(52) Empty reply from server\"."),
            ),
        };
        Step::Answer { to: me, packet: PacketHop::plain(reply, answer), caption, detail }
    }

    /// An Envoy Pod ends the client's HTTP connection: it picks a route by
    /// Host and path, opens its own connection to one endpoint of the
    /// backend Service, and answers with what that endpoint answered.
    pub(super) fn serve_gateway(&mut self, at: ActorId, pkt: &Packet, payload: &Option<Payload>, dice: &mut dyn Dice) -> Step {
        let Some(a) = self.actors.get(at).cloned() else { return Step::Drop(DropReason::TooManyHops) };
        let pod = a.object.as_ref().and_then(|o| self.api.pods.iter().find(|p| p.namespace == o.namespace && p.name == o.name)).cloned();
        let (Some(pod), Some(node)) = (pod, a.parent) else { return Step::Drop(DropReason::TooManyHops) };
        let gw = self.gateway.gateway_of(&pod.labels).cloned();
        let listens = gw.as_ref().is_some_and(|g| g.listeners.iter().any(|l| container_port(l.port) == pkt.dst.port));
        let (Some(gw), true, true) = (gw, listens, pkt.dst.ip == pod.ip) else { return Step::Drop(DropReason::Refused { at, port: pkt.dst.port }) };
        let (host, path) = match payload {
            Some(Payload::HttpRequest { host, path }) => (host.clone(), path.clone()),
            _ => (String::new(), "/".into()),
        };
        let (answer, detail) = match self.gateway.decide(&gw, &host, &path) {
            Decision::NoRoute => (
                Payload::HttpResponse { status: 404, reason: "Not Found".into() },
                format!("Envoy ends the connection and reads the request: Host {host}, path {path}. No HTTPRoute of Gateway {} matches that host, so Envoy answers 404 Not Found itself; it opens no connection to any backend.", gw.name),
            ),
            Decision::Forward { route, backend } => self.forward_upstream(at, &gw.namespace, &route, &backend, payload, &host, &path, dice),
        };
        let reply = pkt.reversed();
        Step::Answer { to: node, packet: PacketHop::plain(reply, Some(answer.clone())), caption: answer.summary(), detail }
    }

    /// Envoy's own connection to one endpoint of the route's backend.
    #[allow(clippy::too_many_arguments)]
    fn forward_upstream(&mut self, at: ActorId, ns: &str, route: &str, backend: &crate::controllers::gateway::BackendRef, payload: &Option<Payload>, host: &str, path: &str, dice: &mut dyn Dice) -> (Payload, String) {
        let svc = self.api.service(ns, &backend.name).cloned();
        let port = svc.as_ref().and_then(|s| s.spec.ports.iter().find(|p| p.port == backend.port).cloned());
        let slice = svc.as_ref().and_then(|s| self.api.endpoint_slice(s));
        let endpoints: Vec<SockAddr> = match (&slice, &port) {
            (Some(sl), Some(p)) => sl.ready_addrs(p.name.as_deref()).into_iter().map(|(a, _)| a).collect(),
            _ => Vec::new(),
        };
        let unavailable = Payload::HttpResponse { status: 503, reason: "Service Unavailable".into() };
        if endpoints.is_empty() || self.nesting >= super::network::MAX_NESTING {
            return (unavailable, format!("HTTPRoute {route} sends Host {host} to Service {}, which has no ready endpoint: Envoy answers 503 (no healthy upstream).", backend.name));
        }
        // Walk the list as kube-proxy's rules do: 1/n, then 1/(n-1), …
        let n = endpoints.len();
        let pick = (0..n).find(|i| *i + 1 == n || dice.roll(1.0 / (n - i) as f64)).map_or(endpoints[0], |i| endpoints[i]);
        self.nesting += 1;
        let out = self.dial(Dial { payload: payload.clone(), ..Dial::tcp(at, pick) }, dice);
        self.nesting -= 1;
        let others: Vec<String> = endpoints.iter().filter(|e| **e != pick).map(|e| e.to_string()).collect();
        let detail = format!(
            "Envoy ends the client's connection and reads the request: Host {host}, path {path}. HTTPRoute {route} matches and names Service {}:{}. Envoy does not dial its cluster IP: it reads the Service's EndpointSlice and opens its own connection to {pick}{}. It answers the client with what {pick} answered.",
            backend.name,
            backend.port,
            if others.is_empty() { String::new() } else { format!(" (it could as well have picked {})", crate::scenarios::list(&others)) }
        );
        match out {
            Outcome::Answered { payload: Some(p), .. } => (p, detail),
            _ => (Payload::HttpResponse { status: 503, reason: "Service Unavailable".into() }, format!("{detail} That connection failed, so the client gets 503.")),
        }
    }
}
