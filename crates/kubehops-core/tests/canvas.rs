//! What the canvas shows agrees with the model: each test is one of the
//! disagreements a reader saw (issue 18), checked on the drawing.

use kubehops_core::scenarios::{build, Params, Scenario, REGISTRY};
use kubehops_core::scene::drawing::{self, Group, Row, Trail};
use kubehops_core::scene::{frame, Layout, Port, Rect};

fn scenario(id: &str, pairs: &[(&str, &str)]) -> Scenario {
    let e = REGISTRY.iter().find(|e| e.id == id).expect("scenario");
    let specs = (e.params)();
    let mut p = Params::defaults(&specs);
    for (k, v) in pairs {
        let spec = specs.iter().find(|s| s.key == *k).expect("key");
        p.insert(k, spec.parse(v).expect("value"));
    }
    build(id, &p).expect("builds")
}

fn step_named(s: &Scenario, title: &str) -> usize {
    s.steps.iter().position(|st| st.title == title).unwrap_or_else(|| panic!("{}: no step {title:?}", s.id))
}

/// The trails at the end of a step.
fn trails_at_end(s: &Scenario, l: &Layout, step: usize) -> Vec<Trail> {
    drawing::trails(s, l, &frame(s, step, s.steps[step].hops.len() as f64))
}

fn ends_in(t: &Trail, r: &Rect) -> bool {
    t.points.last().is_some_and(|p| p.x >= r.x - 1.0 && p.x <= r.right() + 1.0 && p.y >= r.y - 1.0 && p.y <= r.bottom() + 1.0)
}

fn all_groups(gs: &[Group]) -> Vec<&Group> {
    gs.iter().flat_map(|g| g.all_groups()).collect()
}

#[test]
fn a_headless_request_is_only_routed_by_the_nodes_and_never_meets_a_panel() {
    let s = scenario("service-types", &[("tab", "headless")]);
    let l = Layout::for_scenario(&s);
    let k = step_named(&s, "Send Request");
    let st = &s.steps[k];
    let mut through_nodes = 0;
    for (i, h) in st.hops.iter().enumerate() {
        let (fp, tp) = drawing::ports(st, &l, i);
        for (end, port) in [(h.from, fp), (h.to, tp)] {
            if l.node_card(end).is_some() {
                through_nodes += 1;
                assert_eq!(port, Port::Route, "hop {} meets {} at {port:?}, as if its rules acted", i + 1, s.actors[end.index()].short);
            }
        }
    }
    assert!(through_nodes >= 4, "the request crosses two nodes and back");
    // And no rule lights up on any node while it plays.
    for p in 1..=st.hops.len() {
        let gs = drawing::groups(&s, &l, &frame(&s, k, p as f64));
        assert!(all_groups(&gs).iter().all(|g| !g.class.split(' ').any(|c| c == "hit")), "a rule lit up at hop {p}");
    }
    // The panel says why there is nothing: no virtual IP.
    let gs = drawing::groups(&s, &l, &frame(&s, k, 0.0));
    let texts: Vec<String> = gs.iter().flat_map(|g| g.all_texts()).map(|t| t.content()).collect();
    assert!(texts.iter().any(|t| t.contains("headless, no virtual IP")), "{texts:?}");
}

#[test]
fn a_cluster_ip_request_aims_at_the_virtual_address_and_lights_its_rule() {
    let s = scenario("service-types", &[("tab", "clusterip")]);
    let l = Layout::for_scenario(&s);
    let k = step_named(&s, "Send Request");
    let st = &s.steps[k];
    let first_into_node = (0..st.hops.len()).find(|i| l.node_card(st.hops[*i].to).is_some()).expect("a hop into a node");
    let (_, tp) = drawing::ports(st, &l, first_into_node);
    let Port::Row(r) = tp else { panic!("the request meets its node at {tp:?}, not at the cluster IP's row") };
    let view = st.views.get(first_into_node + 1).and_then(|v| v.node(st.hops[first_into_node].to)).expect("a view");
    let rows = drawing::panel_rows(Some(view), None, &[]);
    let dst = st.hops[first_into_node].packet.as_ref().unwrap().after.dst;
    assert_eq!(rows[r].aims, Some(drawing::Aim::Addr(dst)), "the row is the address the packet aims at");
}

#[test]
fn a_dns_query_lights_kube_dns_s_rule_on_the_node_that_dnats_it() {
    let s = scenario("service-types", &[("tab", "clusterip")]);
    let l = Layout::for_scenario(&s);
    let k = step_named(&s, "DNS Lookup");
    let st = &s.steps[k];
    let i = st.hops.iter().position(|h| h.packet.as_ref().is_some_and(|p| p.rewrites.iter().any(|r| r.kind == kubehops_core::sim::RewriteKind::Dnat))).expect("a DNATed query");
    let gs = drawing::groups(&s, &l, &frame(&s, k, (i + 1) as f64));
    let lit: Vec<String> = all_groups(&gs).iter().filter(|g| g.class.split(' ').any(|c| c == "hit")).flat_map(|g| g.texts.iter().map(|t| t.content())).collect();
    assert!(lit.iter().any(|t| t.contains(":53")), "no kube-dns row is lit while the query is DNATed: {lit:?}");
}

#[test]
fn envoy_s_own_connection_leaves_from_the_envoy_pod_and_is_only_routed() {
    let s = scenario("local-lab", &[]);
    let l = Layout::for_scenario(&s);
    let k = step_named(&s, "Routed by Host");
    let st = &s.steps[k];
    let envoy = s.actors.iter().find(|a| a.short == "Pod envoy").expect("Pod envoy").id;
    let booking: Vec<_> = s.actors.iter().filter(|a| a.short.starts_with("Pod booking")).map(|a| a.id).collect();
    // The hop that leaves Envoy for a booking Pod's node, and the one that reaches the Pod.
    let out = st.hops.iter().position(|h| h.from == envoy && h.leg == kubehops_core::sim::Leg::Out).expect("Envoy's own connection");
    let (fp, tp) = drawing::ports(st, &l, out);
    assert_eq!(fp, Port::Panel, "a Pod's own end");
    assert_eq!(tp, Port::Route, "Envoy dials the Pod's address: its node only routes it");
    let into = st.hops.iter().position(|h| booking.contains(&h.to) && h.leg == kubehops_core::sim::Leg::Out).expect("into booking");
    assert_eq!(drawing::ports(st, &l, into).0, Port::Route, "and it leaves the node from the junction, not from kube-proxy's panel");
}

#[test]
fn the_lab_draws_node_port_traffic_and_balancer_traffic_differently() {
    let s = scenario("local-lab", &[]);
    let l = Layout::for_scenario(&s);
    let rows_hit = |title: &str| {
        let k = step_named(&s, title);
        let st = &s.steps[k];
        let i = (0..st.hops.len()).find(|i| l.node_card(st.hops[*i].to).is_some() && st.hops[*i].packet.is_some()).expect("into a node");
        let Port::Row(r) = drawing::ports(st, &l, i).1 else { panic!("{title}: not at a row") };
        let view = st.views.get(i + 1).and_then(|v| v.node(st.hops[i].to)).unwrap();
        drawing::panel_rows(Some(view), None, &[])[r].aims
    };
    let a = rows_hit("Why NodePort is not for production");
    let b = rows_hit("Traffic through the announcing node");
    assert!(matches!(a, Some(drawing::Aim::Port(_))), "{a:?}");
    assert!(matches!(b, Some(drawing::Aim::Addr(_))), "{b:?}");
}

/// The card of the hop whose packet matches `pick`, at rest.
fn card_lines(s: &Scenario, pick: impl Fn(&kubehops_core::sim::Hop) -> bool) -> (Vec<String>, Option<&'static str>) {
    let l = Layout::for_scenario(s);
    for (k, st) in s.steps.iter().enumerate() {
        if let Some(i) = st.hops.iter().position(&pick) {
            let p = drawing::plan(s, &l, k, i).expect("a plan");
            let t = p.token(1.0);
            return (t.card.texts.iter().map(|x| x.content()).collect(), t.card.tone);
        }
    }
    panic!("no such hop in {}", s.id)
}

#[test]
fn a_failed_answer_looks_different_from_a_good_one_by_its_words_too() {
    use kubehops_core::sim::Payload;
    let laptop = scenario("service-types", &[("tab", "clusterip"), ("client", "laptop")]);
    let (nx, tone) = card_lines(&laptop, |h| matches!(h.packet.as_ref().and_then(|p| p.payload.as_ref()), Some(Payload::DnsAnswer(r)) if r.rcode == kubehops_core::dns::Rcode::NxDomain));
    assert!(nx.iter().any(|l| l.starts_with("✕ NXDOMAIN")), "{nx:?}");
    assert_eq!(tone, Some("bad"));
    let pod = scenario("service-types", &[("tab", "clusterip")]);
    let (ok, tone) = card_lines(&pod, |h| matches!(h.packet.as_ref().and_then(|p| p.payload.as_ref()), Some(Payload::DnsAnswer(r)) if !r.answer.is_empty()));
    assert!(ok.iter().any(|l| l.starts_with("✓ A ")), "{ok:?}");
    assert_eq!(tone, Some("good"));
    let lab = scenario("local-lab", &[]);
    let (e404, tone) = card_lines(&lab, |h| matches!(h.packet.as_ref().and_then(|p| p.payload.as_ref()), Some(Payload::HttpResponse { status: 404, .. })));
    assert!(e404.iter().any(|l| l.starts_with("✕ 404")), "{e404:?}");
    assert_eq!(tone, Some("bad"));
}

#[test]
fn a_rewrite_is_on_the_card_with_the_old_address_struck_through() {
    let s = scenario("nodeport-loadbalancer", &[]);
    let l = Layout::for_scenario(&s);
    let k = step_named(&s, "Dial Node-2");
    let st = &s.steps[k];
    let i = st.hops.iter().position(|h| h.packet.as_ref().is_some_and(|p| !p.rewrites.is_empty() && !p.by_conntrack)).expect("the DNAT hop");
    let p = st.hops[i].packet.as_ref().unwrap();
    let card = drawing::plan(&s, &l, k, i).unwrap().token(0.0).card;
    let spans: Vec<_> = card.texts.iter().flat_map(|t| t.spans.iter()).collect();
    for r in &p.rewrites {
        assert!(spans.iter().any(|sp| sp.text == r.from.to_string() && sp.class == Some("kh-struck")), "{} is not struck through", r.from);
        assert!(spans.iter().any(|sp| sp.text == r.to.to_string() && sp.class.is_some_and(|c| c.starts_with("kh-rw-"))), "{} is not in a rewrite's colour", r.to);
    }
    // The rule that made it lights up on the node at the same moment.
    let gs = drawing::groups(&s, &l, &frame(&s, k, i as f64 + 0.5));
    let node = p.decided_on.unwrap();
    let panel = gs.iter().find(|g| g.key == format!("node-{}", node.0)).unwrap();
    assert!(panel.all_groups().iter().any(|g| g.class.split(' ').any(|c| c == "hit")), "no rule lit on the node that rewrote it");
}

#[test]
fn rows_count_their_pods_and_pick_at_random_only_among_several() {
    use kubehops_core::net::SockAddr;
    use kubehops_core::sim::{NodeView, RuleSummary};
    let a = |last: u8| SockAddr { ip: std::net::Ipv4Addr::new(10, 0, 0, last), port: 80 };
    let view = |n: usize| NodeView { node: kubehops_core::sim::ActorId(0), rules: vec![RuleSummary::Endpoints { targets: (0..n as u8).map(a).collect(), lines: vec![] }], iptables: vec![], conntrack: vec![], matched: vec![], synced: true };
    let text = |n: usize| drawing::panel_rows(Some(&view(n)), None, &[]).iter().map(|r: &Row| r.spans.iter().map(|s| s.text.clone()).collect::<String>()).collect::<String>();
    assert_eq!(text(1), "DNAT to its 1 Pod");
    assert_eq!(text(3), "DNAT to 1 of 3 Pods, at random");
}

#[test]
fn a_node_whose_rules_are_not_computed_never_says_it_has_none() {
    // Your cluster with the CLI's fixture: every node with a card is
    // synced, and a panel without rules gives the reason, never a bare
    // "no rules" for a node the model has not computed.
    for e in REGISTRY.iter().filter(|e| e.id != "your-cluster") {
        let s = kubehops_core::scenarios::build_default(e.id).unwrap();
        let l = Layout::for_scenario(&s);
        for (k, st) in s.steps.iter().enumerate() {
            for v in &st.views {
                for n in v.nodes.iter().filter(|n| l.node_card(n.node).is_some()) {
                    assert!(n.synced, "{} step {}: a node with a card is not synced", s.id, k + 1);
                }
            }
        }
    }
}

#[test]
fn every_registry_entry_draws_at_every_size_without_panicking() {
    use kubehops_core::scene::camera::Viewport;
    for e in REGISTRY.iter() {
        let s = kubehops_core::scenarios::build_default(e.id).unwrap();
        let l = Layout::for_scenario(&s);
        for k in 0..s.steps.len().max(1) {
            for p in [0.0, 0.5, 1.0, 99.0] {
                for vp in [Viewport::new(0.0, 0.0), Viewport::new(480.0, 200.0), Viewport::new(2000.0, 1200.0)] {
                    let _ = drawing::draw(&s, &l, &frame(&s, k, p), vp);
                }
            }
        }
    }
}
