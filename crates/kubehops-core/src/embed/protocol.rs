//! The `postMessage` protocol between an embedded KubeHops and the page
//! that embeds it, version 1.
//!
//! The browser side only converts a message's data to [`Data`] (and back);
//! this module decides what a message means. A message is acted on only
//! when it has exactly one of the shapes below; anything else (another
//! library's messages, a missing or wrong version, an unknown field, a
//! wrong type) is ignored without an answer.
//!
//! From the host page (its origin listed in the link's `origins=`):
//!
//! | message | does |
//! | --- | --- |
//! | `{type: "kubehops:get", version: 1, id?}` | answers `kubehops:state` |
//! | `{type: "kubehops:set", version: 1, id?, scenario?, step?, hop?, playing?, mode?, network?}` | opens that state (`mode`: kube-proxy's, `"iptables"` or `"nftables"`; `network`: the Pod network between nodes, `"routed"` or `"vxlan"`), answers `kubehops:state` or `kubehops:error` |
//! | `{type: "kubehops:next" \| "kubehops:previous", version: 1, id?}` | the next or previous step, answers `kubehops:state` |
//!
//! To the host page: `kubehops:ready` (once), `kubehops:change` (whenever
//! the scenario, the step, the hop at rest or the play state changes),
//! `kubehops:state`, `kubehops:error` (with the `id` of the request), all
//! `{type, version: 1, state | message}`; and `kubehops:height`
//! `{type, version: 1, height}` whenever the height it wants changes.

use crate::link::{self, HopPos, Link};
use crate::scenarios::{Params, Scenario};

pub const VERSION: f64 = 1.0;
/// Longest string a message may carry.
pub const MAX_TEXT: usize = 256;

/// A message's data, as the structured clone gave it. Numbers are
/// JavaScript numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Null,
    Bool(bool),
    Num(f64),
    Text(String),
    List(Vec<Data>),
    Map(Vec<(String, Data)>),
}

impl Data {
    fn get(&self, key: &str) -> Option<&Data> {
        match self {
            Data::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn text(s: impl Into<String>) -> Data {
        Data::Text(s.into())
    }
}

/// What a host may ask for.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Get,
    Set(Set),
    Next,
    Previous,
}

/// `kubehops:set`: each field is optional, at least one is given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Set {
    /// A scenario id of the registry; opens it with its defaults.
    pub scenario: Option<String>,
    /// 1-based.
    pub step: Option<usize>,
    pub hop: Option<HopPos>,
    pub playing: Option<bool>,
    /// kube-proxy's mode, as a link's `mode=` takes it.
    pub mode: Option<String>,
    /// The Pod network between nodes, as a link's `network=` takes it.
    pub network: Option<String>,
    /// Whether TCP connections are shown packet by packet, as a link's
    /// `handshake=1` says.
    pub handshake: Option<bool>,
}

/// A request's `id`, echoed in the answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Id {
    Num(f64),
    Text(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub id: Option<Id>,
    pub command: Command,
}

/// A whole number in `0..=max`, given as a JavaScript number.
fn whole(d: &Data, max: usize) -> Option<usize> {
    match d {
        Data::Num(n) if n.is_finite() && n.fract() == 0.0 && *n >= 0.0 && *n <= max as f64 => Some(*n as usize),
        _ => None,
    }
}

/// Reads a message; `None` for anything that is not exactly one of the
/// host's commands.
pub fn parse(data: &Data) -> Option<Request> {
    let Data::Map(fields) = data else { return None };
    let Some(Data::Text(kind)) = data.get("type") else { return None };
    if data.get("version") != Some(&Data::Num(VERSION)) {
        return None;
    }
    let allowed: &[&str] = match kind.as_str() {
        "kubehops:get" | "kubehops:next" | "kubehops:previous" => &["type", "version", "id"],
        "kubehops:set" => &["type", "version", "id", "scenario", "step", "hop", "playing", "mode", "network", "handshake"],
        _ => return None,
    };
    // Exactly that shape: no unknown field, none twice.
    for (i, (k, _)) in fields.iter().enumerate() {
        if !allowed.contains(&k.as_str()) || fields[..i].iter().any(|(k2, _)| k2 == k) {
            return None;
        }
    }
    let id = match data.get("id") {
        None => None,
        Some(Data::Text(s)) if s.chars().count() <= 64 && !s.chars().any(char::is_control) => Some(Id::Text(s.clone())),
        Some(Data::Num(n)) if n.is_finite() && n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 => Some(Id::Num(*n)),
        Some(_) => return None,
    };
    let command = match kind.as_str() {
        "kubehops:get" => Command::Get,
        "kubehops:next" => Command::Next,
        "kubehops:previous" => Command::Previous,
        _ => {
            let mut set = Set::default();
            if let Some(s) = data.get("scenario") {
                match s {
                    Data::Text(t) if !t.is_empty() && t.len() <= MAX_TEXT && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => set.scenario = Some(t.clone()),
                    _ => return None,
                }
            }
            if let Some(s) = data.get("step") {
                set.step = Some(whole(s, 10_000).filter(|n| *n >= 1)?);
            }
            if let Some(h) = data.get("hop") {
                set.hop = Some(match h {
                    Data::Text(t) if t == "end" => HopPos::End,
                    _ => HopPos::After(whole(h, 10_000)?),
                });
            }
            if let Some(p) = data.get("playing") {
                let Data::Bool(b) = p else { return None };
                set.playing = Some(*b);
            }
            set.mode = short_text(data.get("mode"))?;
            set.network = short_text(data.get("network"))?;
            if let Some(h) = data.get("handshake") {
                let Data::Bool(b) = h else { return None };
                set.handshake = Some(*b);
            }
            if set == Set::default() {
                return None;
            }
            Command::Set(set)
        }
    };
    Some(Request { id, command })
}

/// The state a `kubehops:set` asks for, from the state shown now:
/// the link to open, and whether to play on from there. Errors are in
/// the link notices' words.
pub fn resolve(set: &Set, current: &Link, steps: impl Fn(&str, &Params) -> usize) -> Result<(Link, Option<bool>), String> {
    let mut target = current.clone();
    if let Some(id) = &set.scenario {
        let Some(e) = crate::scenarios::about(id) else {
            let known: Vec<&str> = crate::scenarios::CATALOG.iter().map(|e| e.id).collect();
            return Err(format!("There is no scenario named \"{}\"; the scenarios are {}.", link::short(id), known.join(", ")));
        };
        if e.id != current.scenario {
            target.scenario = e.id.to_string();
            target.params = Params::defaults(&(e.params)());
            target.step = 0;
            target.hop = None;
        }
    }
    if let Some(m) = &set.mode {
        set_param(&mut target, crate::scenarios::params::PROXY_MODE, "kube-proxy mode", m)?;
    }
    if let Some(n) = &set.network {
        set_param(&mut target, crate::scenarios::params::POD_NETWORK, "Pod network", n)?;
    }
    if let Some(h) = set.handshake {
        set_param(&mut target, crate::scenarios::params::HANDSHAKE, "TCP handshake", if h { "1" } else { "0" })?;
    }
    let count = steps(&target.scenario, &target.params);
    if let Some(s) = set.step {
        if s > count {
            return Err(format!("Step {s} does not exist; steps run from 1 to {count}."));
        }
        target.step = s - 1;
        target.hop = None;
    }
    if let Some(h) = set.hop {
        target.hop = Some(h);
    } else if set.step.is_some() || set.scenario.is_some() {
        // A step opened without a hop plays once, as a click on it does;
        // asked not to play, it waits at its start.
        target.hop = if set.playing == Some(false) { Some(HopPos::After(0)) } else { None };
    }
    Ok((target, set.playing))
}

/// A text field of a request: absent (`Ok(None)`), a short text, or
/// anything else, which refuses the request (`Err`, read as `None` by
/// `parse`'s `?`).
fn short_text(d: Option<&Data>) -> Option<Option<String>> {
    match d {
        None => Some(None),
        Some(Data::Text(t)) if t.len() <= MAX_TEXT => Some(Some(t.clone())),
        Some(_) => None,
    }
}

/// Puts `value` in as the target scenario's parameter `key` (`what` names
/// it in the error), read as a link's query reads it.
fn set_param(target: &mut Link, key: &str, what: &str, value: &str) -> Result<(), String> {
    let spec = crate::scenarios::about(&target.scenario).and_then(|e| (e.params)().into_iter().find(|s| s.key == key));
    let Some(spec) = spec else { return Err(format!("Scenario {} has no {what} to set.", target.scenario)) };
    target.params.insert(&spec.key, spec.parse(value)?);
    Ok(())
}

/// What the host is told about the state shown.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub scenario: String,
    pub title: String,
    /// 1-based.
    pub step: usize,
    pub steps: usize,
    /// Hops of the step finished.
    pub hop: usize,
    pub hops: usize,
    pub playing: bool,
    /// The link hash of what is shown.
    pub link: String,
}

impl State {
    pub fn of(s: &Scenario, step: usize, progress: f64, playing: bool, link: String) -> State {
        let hops = s.steps.get(step).map_or(0, |st| st.hops.len());
        let hop = if progress.is_finite() { (progress.max(0.0).floor() as usize).min(hops) } else { 0 };
        State { scenario: s.id.clone(), title: s.title.clone(), step: step + 1, steps: s.steps.len(), hop, hops, playing, link }
    }

    fn data(&self) -> Data {
        Data::Map(vec![
            ("scenario".into(), Data::text(&self.scenario)),
            ("title".into(), Data::text(&self.title)),
            ("step".into(), Data::Num(self.step as f64)),
            ("steps".into(), Data::Num(self.steps as f64)),
            ("hop".into(), Data::Num(self.hop as f64)),
            ("hops".into(), Data::Num(self.hops as f64)),
            ("playing".into(), Data::Bool(self.playing)),
            ("link".into(), Data::text(&self.link)),
        ])
    }
}

/// What the page tells its host.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Ready(State),
    Change(State),
    State(Option<Id>, State),
    Error(Option<Id>, String),
    Height(u32),
}

impl Event {
    pub fn data(&self) -> Data {
        let head = |t: &str| vec![("type".to_string(), Data::text(t)), ("version".to_string(), Data::Num(VERSION))];
        let id = |i: &Option<Id>| {
            i.as_ref().map(|i| ("id".to_string(), match i {
                Id::Num(n) => Data::Num(*n),
                Id::Text(t) => Data::text(t),
            }))
        };
        let mut m = match self {
            Event::Ready(s) => [head("kubehops:ready"), vec![("state".into(), s.data())]].concat(),
            Event::Change(s) => [head("kubehops:change"), vec![("state".into(), s.data())]].concat(),
            Event::State(i, s) => [head("kubehops:state"), id(i).into_iter().collect(), vec![("state".into(), s.data())]].concat(),
            Event::Error(i, e) => [head("kubehops:error"), id(i).into_iter().collect(), vec![("message".into(), Data::text(e))]].concat(),
            Event::Height(h) => [head("kubehops:height"), vec![("height".into(), Data::Num(*h as f64))]].concat(),
        };
        m.shrink_to_fit();
        Data::Map(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::Display;

    fn map(pairs: &[(&str, Data)]) -> Data {
        Data::Map(pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }
    fn t(s: &str) -> Data {
        Data::Text(s.into())
    }
    const V: Data = Data::Num(1.0);

    #[test]
    fn the_commands_are_read() {
        assert_eq!(parse(&map(&[("type", t("kubehops:get")), ("version", V)])), Some(Request { id: None, command: Command::Get }));
        assert_eq!(parse(&map(&[("type", t("kubehops:next")), ("version", V), ("id", Data::Num(7.0))])), Some(Request { id: Some(Id::Num(7.0)), command: Command::Next }));
        assert_eq!(parse(&map(&[("type", t("kubehops:previous")), ("version", V), ("id", t("a"))])).unwrap().command, Command::Previous);
        let set = parse(&map(&[("type", t("kubehops:set")), ("version", V), ("scenario", t("service-types")), ("step", Data::Num(2.0)), ("hop", t("end")), ("playing", Data::Bool(false))])).unwrap();
        assert_eq!(set.command, Command::Set(Set { scenario: Some("service-types".into()), step: Some(2), hop: Some(HopPos::End), playing: Some(false), mode: None, network: None, handshake: None }));
        let hop = parse(&map(&[("type", t("kubehops:set")), ("version", V), ("hop", Data::Num(0.0))])).unwrap();
        assert_eq!(hop.command, Command::Set(Set { hop: Some(HopPos::After(0)), ..Set::default() }));
    }

    #[test]
    fn anything_else_is_ignored() {
        let bad = [
            Data::Null,
            t("kubehops:get"),
            Data::List(vec![t("kubehops:get")]),
            map(&[("type", t("kubehops:get"))]),
            map(&[("type", t("kubehops:get")), ("version", Data::Num(2.0))]),
            map(&[("type", t("kubehops:get")), ("version", t("1"))]),
            map(&[("type", t("kubehops:navigate")), ("version", V), ("url", t("https://evil.example"))]),
            map(&[("type", t("kubehops:get")), ("version", V), ("html", t("<img src=x onerror=alert(1)>"))]),
            map(&[("type", t("kubehops:get")), ("version", V), ("version", V)]),
            map(&[("type", t("kubehops:get")), ("version", V), ("id", Data::Map(vec![]))]),
            map(&[("type", t("kubehops:get")), ("version", V), ("id", t(&"x".repeat(65)))]),
            map(&[("type", t("kubehops:get")), ("version", V), ("id", Data::Num(0.5))]),
            map(&[("type", t("kubehops:set")), ("version", V)]),
            map(&[("type", t("kubehops:set")), ("version", V), ("step", Data::Num(0.0))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("step", Data::Num(1.5))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("step", Data::Num(f64::NAN))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("step", t("2"))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("step", Data::Num(-1.0))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("hop", t("start"))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("playing", Data::Num(1.0))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("mode", Data::Bool(true))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("network", Data::Num(1.0))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("network", t(&"v".repeat(MAX_TEXT + 1)))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("mode", t(&"n".repeat(MAX_TEXT + 1)))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("scenario", t("../../evil"))]),
            map(&[("type", t("kubehops:set")), ("version", V), ("scenario", t("javascript:alert(1)"))]),
            map(&[("type", t("kubehops:height")), ("version", V), ("height", Data::Num(500.0))]),
            map(&[("type", t("iframe-resizer")), ("version", V)]),
        ];
        for b in bad {
            assert_eq!(parse(&b), None, "{b:?}");
        }
    }

    fn steps(id: &str, p: &Params) -> usize {
        crate::scenarios::build(id, p).map_or(0, |s| s.steps.len())
    }

    fn at(hash: &str) -> Link {
        link::parse(hash).link
    }

    #[test]
    fn set_carries_kube_proxy_s_mode() {
        let here = at("#/service-types/2/end?tab=nodeport&embed=1");
        let m = parse(&map(&[("type", t("kubehops:set")), ("version", V), ("mode", t("nftables"))])).unwrap();
        let Command::Set(set) = m.command else { panic!("{m:?}") };
        let (l, _) = resolve(&set, &here, steps).unwrap();
        assert_eq!(link::format(&l), "#/service-types/2/end?tab=nodeport&mode=nftables&embed=1");
        // With another scenario, the mode applies to it.
        let other = Set { scenario: Some("local-lab".into()), mode: Some("nftables".into()), ..Set::default() };
        assert!(link::format(&resolve(&other, &here, steps).unwrap().0).starts_with("#/local-lab/1?mode=nftables"));
        let ipvs = Set { mode: Some("ipvs".into()), ..Set::default() };
        assert_eq!(resolve(&ipvs, &here, steps).unwrap_err(), "\"ipvs\" is not a value of mode; it takes iptables, nftables. IPVS mode is not shown: it is deprecated since Kubernetes 1.35.");
    }

    #[test]
    fn set_carries_the_handshake() {
        let here = at("#/nodeport-loadbalancer/2/end?embed=1");
        let m = parse(&map(&[("type", t("kubehops:set")), ("version", V), ("handshake", Data::Bool(true))])).unwrap();
        let Command::Set(set) = m.command else { panic!("{m:?}") };
        assert_eq!(set.handshake, Some(true));
        let (l, _) = resolve(&set, &here, steps).unwrap();
        assert!(l.params.handshake());
        assert!(link::format(&l).contains("handshake=1"), "{}", link::format(&l));
        let off = Set { handshake: Some(false), ..Set::default() };
        assert!(!link::format(&resolve(&off, &l, steps).unwrap().0).contains("handshake"));
        // Only a boolean is a handshake.
        assert!(parse(&map(&[("type", t("kubehops:set")), ("version", V), ("handshake", t("yes"))])).is_none());
    }

    #[test]
    fn set_carries_the_pod_network() {
        let here = at("#/service-types/2/end?tab=nodeport&embed=1");
        let m = parse(&map(&[("type", t("kubehops:set")), ("version", V), ("network", t("vxlan")), ("mode", t("nftables"))])).unwrap();
        let Command::Set(set) = m.command else { panic!("{m:?}") };
        assert_eq!(set.network.as_deref(), Some("vxlan"));
        let (l, _) = resolve(&set, &here, steps).unwrap();
        assert!(matches!(l.params.pod_network(), crate::dataplane::overlay::PodNetwork::Vxlan(_)));
        let f = link::format(&l);
        assert!(f.contains("network=vxlan") && f.contains("mode=nftables") && f.starts_with("#/service-types/2/end?"), "{f}");
        // Back to routed, and a value the choice does not have.
        let routed = Set { network: Some("routed".into()), ..Set::default() };
        assert!(!link::format(&resolve(&routed, &l, steps).unwrap().0).contains("network="));
        let bad = Set { network: Some("geneve".into()), ..Set::default() };
        let e = resolve(&bad, &here, steps).unwrap_err();
        assert!(e.starts_with("\"geneve\" is not a value of network; it takes routed, vxlan."), "{e}");
    }

    #[test]
    fn set_resolves_against_what_is_shown() {
        let here = at("#/service-types/2/end?tab=nodeport&embed=1&origins=https://h.example");
        // A step alone keeps the scenario, its parameters and the display.
        let (l, play) = resolve(&Set { step: Some(3), ..Set::default() }, &here, steps).unwrap();
        assert_eq!((l.step, l.hop, &l.params, &l.display), (2, None, &here.params, &here.display));
        assert_eq!(play, None);
        // Paused at its start, or at a hop.
        let (l, _) = resolve(&Set { step: Some(1), playing: Some(false), ..Set::default() }, &here, steps).unwrap();
        assert_eq!((l.step, l.hop), (0, Some(HopPos::After(0))));
        let (l, _) = resolve(&Set { hop: Some(HopPos::After(2)), ..Set::default() }, &here, steps).unwrap();
        assert_eq!((l.step, l.hop), (1, Some(HopPos::After(2))));
        // Another scenario starts from its defaults, the display stays.
        let (l, _) = resolve(&Set { scenario: Some("nodeport-loadbalancer".into()), step: Some(5), ..Set::default() }, &here, steps).unwrap();
        assert_eq!(link::format(&l), "#/nodeport-loadbalancer/5?embed=1&origins=https://h.example");
        assert_eq!(l.display, Display { embed: true, origins: here.display.origins.clone(), ..Display::default() });
        // Errors.
        let e = resolve(&Set { step: Some(9), ..Set::default() }, &here, steps).unwrap_err();
        assert_eq!(e, "Step 9 does not exist; steps run from 1 to 3.");
        let e = resolve(&Set { scenario: Some("nope".into()), ..Set::default() }, &here, steps).unwrap_err();
        assert!(e.starts_with("There is no scenario named \"nope\""), "{e}");
        // Play state alone.
        assert_eq!(resolve(&Set { playing: Some(true), ..Set::default() }, &here, steps).unwrap(), (here.clone(), Some(true)));
    }

    #[test]
    fn events_have_their_documented_shape() {
        let s = crate::scenarios::build_default("nodeport-loadbalancer").unwrap();
        let st = State::of(&s, 1, 2.7, false, "#/nodeport-loadbalancer/2/2".into());
        assert_eq!((st.step, st.steps, st.hop), (2, 5, 2));
        let d = Event::State(Some(Id::Text("q1".into())), st.clone()).data();
        assert_eq!(d.get("type"), Some(&t("kubehops:state")));
        assert_eq!(d.get("version"), Some(&V));
        assert_eq!(d.get("id"), Some(&t("q1")));
        let state = d.get("state").unwrap();
        for k in ["scenario", "title", "step", "steps", "hop", "hops", "playing", "link"] {
            assert!(state.get(k).is_some(), "state lacks {k}");
        }
        assert_eq!(Event::Height(640).data(), map(&[("type", t("kubehops:height")), ("version", V), ("height", Data::Num(640.0))]));
        assert_eq!(Event::Error(None, "x".into()).data(), map(&[("type", t("kubehops:error")), ("version", V), ("message", t("x"))]));
        // What the page sends is never mistaken for a command.
        for e in [Event::Ready(st.clone()), Event::Change(st.clone()), Event::State(None, st), Event::Height(1)] {
            assert_eq!(parse(&e.data()), None);
        }
        let far = State::of(&s, 0, f64::INFINITY, true, String::new());
        assert_eq!(far.hop, 0);
    }
}
