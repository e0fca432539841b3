//! The `ip kube-proxy` table as the views show it: each rule and element
//! as its line of the transaction (its index in what
//! [`Ruleset::transaction`] prints), one Service's lines, its summary for a node's card, and
//! the lines a walk matched, all in the mode-neutral shapes of
//! `dataplane::rules`.

use super::walk::Hit;
use super::{Action, Purpose, Ruleset, SERVICE_IPS, SERVICE_NODEPORTS, NO_ENDPOINT_SERVICES, TABLE, KeyPart};
use crate::dataplane::rules::{self, ChainKind, Field, Lookup, MatchedRule, RuleLine, RuleSummary, RuleTable};
use crate::net::SockAddr;

impl Purpose {
    /// What the views call it; the table's wiring has no such name.
    pub fn shown(self) -> Option<rules::Purpose> {
        Some(match self {
            Purpose::ClusterIp => rules::Purpose::ClusterIp,
            Purpose::ExternalIp => rules::Purpose::ExternalIp,
            Purpose::LoadBalancerIp => rules::Purpose::LoadBalancerIp,
            Purpose::NodePort => rules::Purpose::NodePort,
            Purpose::MarkMasquerade => rules::Purpose::MarkMasquerade,
            Purpose::EndpointPick => rules::Purpose::EndpointPick,
            Purpose::EndpointDnat => rules::Purpose::EndpointDnat,
            Purpose::NoEndpoints => rules::Purpose::NoEndpoints,
            Purpose::NoLocalEndpoints => rules::Purpose::NoLocalEndpoints,
            Purpose::SourceRanges => rules::Purpose::SourceRangeDrop,
            Purpose::Plumbing
            | Purpose::ActiveClusterIp
            | Purpose::NodePortAddress
            | Purpose::ClusterIpCheck
            | Purpose::ShortCircuit
            | Purpose::ExternalPolicy
            | Purpose::Affinity => return None,
        })
    }
}

/// Whether `owner` (`ns/name:port`, or `ns/name`) is a port of Service `ns/name`.
pub fn is_port_of(owner: &str, namespace: &str, name: &str) -> bool {
    let rest = owner.strip_prefix(namespace).and_then(|r| r.strip_prefix('/')).and_then(|r| r.strip_prefix(name));
    matches!(rest, Some(r) if r.is_empty() || r.starts_with(':'))
}

impl Ruleset {
    /// The first rule's line: after the table, the sets and the chains.
    fn first_rule_line(&self) -> usize {
        1 + self.sets.len() + self.chains.len()
    }

    /// The line of rule `index` of `chain`: its index in
    /// [`Ruleset::transaction`], as iptables mode's lines index `iptables-save`.
    pub fn rule_line(&self, chain: &str, index: usize) -> Option<usize> {
        let at = self.chains.iter().position(|c| c.name == chain)?;
        (index < self.chains[at].rules.len()).then(|| self.first_rule_line() + self.chains[..at].iter().map(|c| c.rules.len()).sum::<usize>() + index)
    }

    /// The line of element `index` of `set` (its index in [`Ruleset::transaction`]).
    pub fn element_line(&self, set: &str, index: usize) -> Option<usize> {
        let at = self.sets.iter().position(|s| s.name == set)?;
        let rules: usize = self.chains.iter().map(|c| c.rules.len()).sum();
        (index < self.sets[at].elements.len()).then(|| self.first_rule_line() + rules + self.sets[..at].iter().map(|s| s.elements.len()).sum::<usize>() + index)
    }

    fn rule_text(&self, chain: &str, index: usize) -> Option<String> {
        let r = self.chain(chain)?.rules.get(index)?;
        Some(format!("add rule ip {TABLE} {chain} {}", r.render()))
    }

    fn element_text(&self, set: &str, index: usize) -> Option<String> {
        let e = self.set(set)?.elements.get(index)?;
        Some(format!("add element ip {TABLE} {set} {{ {} }}", e.render()))
    }

    fn rule_view(&self, chain: &str, index: usize) -> Option<RuleLine> {
        let r = self.chain(chain)?.rules.get(index)?;
        Some(RuleLine { line: self.rule_line(chain, index)?, table: RuleTable::KubeProxy, chain: chain.into(), text: self.rule_text(chain, index)?, owner: r.owner.clone(), purpose: r.purpose.shown() })
    }

    fn element_view(&self, set: &str, index: usize) -> Option<RuleLine> {
        let e = self.set(set)?.elements.get(index)?;
        Some(RuleLine { line: self.element_line(set, index)?, table: RuleTable::KubeProxy, chain: set.into(), text: self.element_text(set, index)?, owner: e.owner.clone(), purpose: e.purpose.shown() })
    }

    /// Service `namespace/name`'s lines in the order a packet meets
    /// them: its elements in the maps (where a look-up lands), then its
    /// chains' rules, firewall and external chains before the policy
    /// chains and those before the endpoints' (the transaction declares
    /// endpoint chains first). Each keeps its line number.
    pub fn service_lines(&self, namespace: &str, name: &str) -> Vec<RuleLine> {
        let own = |o: &Option<String>| o.as_deref().is_some_and(|o| is_port_of(o, namespace, name));
        let elements = self.sets.iter().flat_map(|s| s.elements.iter().enumerate().filter(|(_, e)| own(&e.owner)).filter_map(|(i, _)| self.element_view(&s.name, i)));
        let mut chains: Vec<&super::Chain> = self.chains.iter().filter(|c| c.rules.iter().any(|r| own(&r.owner))).collect();
        let walk_order = |c: &&super::Chain| ["firewall-", "external-", "service-", "local-", "endpoint-"].iter().position(|p| c.name.starts_with(p)).unwrap_or(5);
        crate::sort::by_key(&mut chains, walk_order);
        let rules = chains.into_iter().flat_map(|c| c.rules.iter().enumerate().filter(|(_, r)| own(&r.owner)).filter_map(|(i, _)| self.rule_view(&c.name, i)));
        elements.chain(rules).collect()
    }

    /// What the table does for Service `namespace/name`, per port: its
    /// addresses in `service-ips`, its refusals in `no-endpoint-services`,
    /// its node port in `service-nodeports`, and its endpoints.
    pub fn summarise(&self, namespace: &str, name: &str) -> Vec<RuleSummary> {
        let mut out = Vec::new();
        for sp in self.services.iter().filter(|s| is_port_of(&s.port_name, namespace, name)) {
            let mine = |o: &Option<String>| o.as_deref() == Some(sp.port_name.as_str());
            let elements = |set: &str| -> Vec<(usize, &super::Element)> { self.set(set).map_or(Vec::new(), |s| s.elements.iter().enumerate().filter(|(_, e)| mine(&e.owner)).collect()) };
            for (i, e) in elements(SERVICE_IPS) {
                let (Some(addr), lines) = (key_addr(&e.key), self.element_line(SERVICE_IPS, i).into_iter().collect()) else { continue };
                out.push(match e.purpose {
                    Purpose::ExternalIp => RuleSummary::ExternalIp { addr, lines },
                    Purpose::LoadBalancerIp => RuleSummary::LoadBalancerIp { addr, lines },
                    _ => RuleSummary::ClusterIp { addr, lines },
                });
            }
            for (i, e) in elements(NO_ENDPOINT_SERVICES).into_iter().filter(|(_, e)| e.purpose == Purpose::NoEndpoints) {
                if let Some(addr) = key_addr(&e.key) {
                    out.push(RuleSummary::Reject { addr, lines: self.element_line(NO_ENDPOINT_SERVICES, i).into_iter().collect() });
                }
            }
            for (i, e) in elements(SERVICE_NODEPORTS) {
                if let Some(KeyPart::Port(port)) = e.key.get(1) {
                    out.push(RuleSummary::NodePort { port: *port, lines: self.element_line(SERVICE_NODEPORTS, i).into_iter().collect() });
                }
            }
            let picks = |c: &&super::Chain| c.name.starts_with("service-") || c.name.starts_with("local-") || c.name.starts_with("endpoint-");
            let chains: Vec<&super::Chain> = sp.chains.iter().filter_map(|n| self.chain(n)).filter(picks).collect();
            let targets: Vec<SockAddr> = chains.iter().flat_map(|c| c.rules.iter()).filter_map(|r| if let Action::Dnat(a) = r.action { Some(a) } else { None }).collect();
            if !targets.is_empty() {
                let lines = chains.iter().flat_map(|c| (0..c.rules.len()).filter_map(|i| self.rule_line(&c.name, i))).collect();
                out.push(RuleSummary::Endpoints { targets, lines });
            }
        }
        out
    }

    /// The lines a hit stands for: the rule, then the element its look-up found.
    pub fn matched(&self, hit: &Hit) -> Vec<MatchedRule> {
        let mut out = Vec::new();
        if let (Some(r), Some(line), Some(text)) = (self.chain(&hit.chain).and_then(|c| c.rules.get(hit.rule)), self.rule_line(&hit.chain, hit.rule), self.rule_text(&hit.chain, hit.rule)) {
            let rewrites = match r.action {
                Action::Dnat(_) => Some(Field::Destination),
                Action::MasqueradeFullyRandom => Some(Field::Source),
                _ => None,
            };
            out.push(MatchedRule { table: RuleTable::KubeProxy, line, text, purpose: r.purpose.shown(), owner: r.owner.clone(), rewrites, chain: self.chain(&hit.chain).map_or(ChainKind::Other, chain_kind) });
        }
        if let Some(e) = &hit.element {
            if let Some(v) = self.element_view(&e.set, e.index) {
                let chain = if self.set(&e.set).is_some_and(|s| s.verdict_map) { ChainKind::VerdictMap } else { ChainKind::Set };
                out.push(MatchedRule { table: RuleTable::KubeProxy, line: v.line, text: v.text, purpose: v.purpose, owner: v.owner, rewrites: None, chain });
            }
        }
        out
    }

    /// The look-up a hit made in a verdict map, when it found an element
    /// that sends the packet to a chain.
    pub fn lookup(&self, hit: &Hit) -> Option<Lookup> {
        let e = hit.element.as_ref()?;
        let el = self.set(&e.set)?.elements.get(e.index)?;
        let chain = match el.verdict.as_ref()? {
            super::Verdict::Goto(c) | super::Verdict::Jump(c) => c.clone(),
            _ => return None,
        };
        Some(Lookup { map: e.set.clone(), key: el.key_text(), chain })
    }

    /// The chains a packet to this Service's port takes before the pick,
    /// by name: `external-…` (from outside) then `service-…`.
    pub fn port_chains(&self, namespace: &str, name: &str, external: bool) -> Vec<String> {
        let Some(sp) = self.services.iter().find(|s| is_port_of(&s.port_name, namespace, name)) else { return Vec::new() };
        let find = |prefix: &str| sp.chains.iter().find(|c| c.starts_with(prefix)).cloned();
        find("external-").filter(|_| external).into_iter().chain(find("service-")).collect()
    }
}

/// `ip . proto . port` as an address and port.
fn key_addr(key: &[KeyPart]) -> Option<SockAddr> {
    match key {
        [KeyPart::Ip(ip), _, KeyPart::Port(p)] => Some(SockAddr::new(*ip, *p)),
        _ => None,
    }
}

/// What kube-proxy made chain `c` for: the table's own chains by their
/// names, a Service port's chains (those with an owner) by the prefix
/// [`super::sync_node`] gives them.
pub fn chain_kind(c: &super::Chain) -> ChainKind {
    match c.name.as_str() {
        super::SERVICES => return ChainKind::Services,
        super::MARK_FOR_MASQUERADE => return ChainKind::MarkMasquerade,
        super::MASQUERADING => return ChainKind::Masquerading,
        _ if c.owner.is_none() => return ChainKind::Other,
        _ => {}
    }
    let kinds = [("service-", ChainKind::Service), ("local-", ChainKind::ServiceLocal), ("external-", ChainKind::External), ("firewall-", ChainKind::Firewall), ("endpoint-", ChainKind::Endpoint)];
    kinds.iter().find(|(p, _)| c.name.starts_with(p)).map_or(ChainKind::Other, |(_, k)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Endpoint, EndpointPort, EndpointSlice, Node, Service, ServicePort, ServiceSpec, ServiceType};
    use crate::net::{ip, Protocol};

    fn table() -> Ruleset {
        let port = ServicePort { name: Some("http".into()), protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: Some(30080) };
        let spec = ServiceSpec { type_: ServiceType::NodePort, ports: vec![port], cluster_ip: Some(ip(10, 96, 0, 50)), ..Default::default() };
        let svc = Service { name: "web".into(), namespace: "default".into(), annotations: Default::default(), spec, status: Default::default(), created: None };
        let ep = |a| Endpoint { ip: a, node_name: "n".into(), ready: true, serving: true, terminating: false, target_ref: String::new(), hostname: None };
        let slice = EndpointSlice {
            name: "web-1".into(),
            namespace: "default".into(),
            service_name: "web".into(),
            endpoints: vec![ep(ip(10, 244, 1, 5)), ep(ip(10, 244, 2, 6))],
            ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
        };
        let node = Node { name: "n".into(), internal_ip: ip(10, 0, 0, 11), pod_cidr: None };
        super::super::sync_node(&node, &[svc], &[slice], &super::super::NftablesConfig::default())
    }

    #[test]
    fn line_numbers_are_the_transaction_s() {
        let rs = table();
        let t = rs.transaction();
        for (ci, c) in rs.chains.iter().enumerate() {
            for i in 0..c.rules.len() {
                let line = rs.rule_line(&c.name, i).unwrap();
                assert_eq!(t[line], rs.rule_text(&c.name, i).unwrap(), "chain {ci} rule {i}");
            }
        }
        for s in &rs.sets {
            for i in 0..s.elements.len() {
                assert_eq!(t[rs.element_line(&s.name, i).unwrap()], rs.element_text(&s.name, i).unwrap());
            }
        }
        assert_eq!(rs.rule_line("services", 99), None);
    }

    #[test]
    fn a_service_s_summary_names_its_map_entries_and_endpoints() {
        let rs = table();
        let s = rs.summarise("default", "web");
        let addr = SockAddr::new(ip(10, 96, 0, 50), 80);
        assert!(matches!(&s[0], RuleSummary::ClusterIp { addr: a, lines } if *a == addr && lines.len() == 1), "{s:?}");
        assert!(s.iter().any(|x| matches!(x, RuleSummary::NodePort { port: 30080, .. })), "{s:?}");
        let Some(RuleSummary::Endpoints { targets, lines }) = s.last() else { panic!("{s:?}") };
        assert_eq!(targets, &[SockAddr::new(ip(10, 244, 1, 5), 8080), SockAddr::new(ip(10, 244, 2, 6), 8080)]);
        // The service chain's pick and each endpoint chain's two rules.
        assert_eq!(lines.len(), 1 + 2 * 2, "{lines:?}");
        let lines = rs.service_lines("default", "web");
        assert!(lines[0].text.starts_with("add element ip kube-proxy cluster-ips { 10.96.0.50 }"), "{lines:#?}");
        assert!(lines.iter().all(|l| l.table == RuleTable::KubeProxy && l.owner.as_deref() == Some("default/web:http")));
        assert!(rs.service_lines("default", "we").is_empty() && rs.service_lines("default", "web2").is_empty());
        assert_eq!(rs.port_chains("default", "web", true).len(), 2);
    }

    #[test]
    fn each_chain_says_what_it_was_made_for() {
        let rs = table();
        let kind = |name: &str| chain_kind(rs.chain(name).unwrap_or_else(|| panic!("{name} is in the table")));
        assert_eq!(kind(super::super::SERVICES), ChainKind::Services);
        assert_eq!(kind(super::super::MARK_FOR_MASQUERADE), ChainKind::MarkMasquerade);
        assert_eq!(kind(super::super::MASQUERADING), ChainKind::Masquerading);
        assert_eq!(kind(super::super::SERVICE_ENDPOINTS_CHECK), ChainKind::Other, "a table chain whose name starts like a Service's");
        let port = rs.services.iter().find(|s| s.port_name == "default/web:http").expect("web's port");
        let kinds: Vec<ChainKind> = port.chains.iter().map(|c| kind(c)).collect();
        assert!(kinds.contains(&ChainKind::Service) && kinds.contains(&ChainKind::Endpoint), "{:?} {kinds:?}", port.chains);
        assert!(!kinds.contains(&ChainKind::Other), "every chain of a port has its kind: {:?} {kinds:?}", port.chains);
    }
}
