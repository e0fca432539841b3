//! A scenario's parameters: what a user can change, typed, with defaults.
//!
//! A scenario declares [`ParamSpec`]s; a [`Params`] holds values for them.
//! Values travel in links as `key=value` pairs (see [`crate::link`]):
//! a choice by its value, a toggle as `1` or `0`, a set as a comma list,
//! a seed as digits. A value left at its default is left out of the link.

use crate::dataplane::kubeproxy::ProxyMode;
use crate::dataplane::overlay::{PodNetwork, VxlanConfig};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The key of kube-proxy's mode in links.
pub const PROXY_MODE: &str = "mode";

/// Why the mode choice has no IPVS.
pub const IPVS_HINT: &str = "IPVS mode is not shown: it is deprecated since Kubernetes 1.35.";

/// The key of the Pod network in links.
pub const POD_NETWORK: &str = "network";

/// The Pod network's values in links.
pub const ROUTED: &str = "routed";
pub const VXLAN: &str = "vxlan";

/// What the overlay choice is.
pub const OVERLAY_HINT: &str = "VXLAN is flannel's default overlay: Pod traffic between nodes travels wrapped in UDP between the nodes' own addresses.";

/// The key of the TCP handshake in links (`handshake=1`).
pub const HANDSHAKE: &str = "handshake";

/// What the handshake toggle does.
pub const HANDSHAKE_HINT: &str = "From SYN to the last ACK. The rules decide the first; conntrack carries the rest.";

/// The longest value a menu without options takes from a link.
const MAX_OPEN_VALUE: usize = 320;

/// One option of a choice or a set: the value links carry and its label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

impl Choice {
    pub fn new(value: &str, label: &str) -> Choice {
        Choice { value: value.into(), label: label.into() }
    }
}

/// How a choice is offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChoiceStyle {
    /// A tab list (`role="tab"`).
    Tabs,
    /// A group of toggle buttons.
    Buttons,
    /// A preset that sets other parameters; `""` means none.
    Demo,
    /// Not offered as a control; set by the app (the tab a user came from).
    Hidden,
    /// A menu (`<select>`), for long lists (a pasted cluster's Services
    /// and Pods). Declared without options, it takes any value a link
    /// names (see [`ParamSpec::parse`]) until a cluster gives it options.
    Menu,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ParamKind {
    Choice { options: Vec<Choice>, default: String, style: ChoiceStyle },
    Toggle { default: bool },
    /// Any subset of the options (the Pods made not Ready).
    Set { options: Vec<Choice> },
    /// Seeded random picks; off (`None`) by default.
    Seed,
    /// A Service manifest the user wrote in place of the scenario's own;
    /// empty (the scenario's own) by default. Links carry it packed
    /// ([`crate::compact`]).
    Manifest,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    pub key: String,
    pub label: String,
    pub kind: ParamKind,
    /// When the parameter matters: every listed choice parameter has one
    /// of the listed values. Empty: always. A control is offered only then.
    pub when: Vec<(String, Vec<String>)>,
    /// One line the control shows beside it (why IPVS is not a mode).
    #[serde(default)]
    pub hint: Option<String>,
}

impl ParamSpec {
    pub fn choice(key: &str, label: &str, style: ChoiceStyle, options: Vec<Choice>) -> ParamSpec {
        let default = options.first().map(|c| c.value.clone()).unwrap_or_default();
        ParamSpec { key: key.into(), label: label.into(), kind: ParamKind::Choice { options, default, style }, when: vec![], hint: None }
    }

    pub fn toggle(key: &str, label: &str) -> ParamSpec {
        ParamSpec { key: key.into(), label: label.into(), kind: ParamKind::Toggle { default: false }, when: vec![], hint: None }
    }

    pub fn set(key: &str, label: &str, options: Vec<Choice>) -> ParamSpec {
        ParamSpec { key: key.into(), label: label.into(), kind: ParamKind::Set { options }, when: vec![], hint: None }
    }

    pub fn seed() -> ParamSpec {
        ParamSpec { key: "seed".into(), label: "Random pick (seeded)".into(), kind: ParamKind::Seed, when: vec![], hint: None }
    }

    pub fn manifest() -> ParamSpec {
        ParamSpec { key: "manifest".into(), label: "Your Service".into(), kind: ParamKind::Manifest, when: vec![], hint: None }
    }

    /// kube-proxy's mode (`mode=nftables` in a link), iptables unless
    /// `default` says otherwise (a pasted KubeProxyConfiguration's mode).
    pub fn proxy_mode(default: ProxyMode) -> ParamSpec {
        let options = [ProxyMode::Iptables, ProxyMode::Nftables].map(|m| Choice::new(m.as_str(), m.as_str())).to_vec();
        let mut spec = ParamSpec::choice(PROXY_MODE, "kube-proxy mode", ChoiceStyle::Buttons, options);
        if let ParamKind::Choice { default: d, .. } = &mut spec.kind {
            *d = default.as_str().into();
        }
        spec.hint = Some(IPVS_HINT.into());
        spec
    }

    /// The Pod network between the nodes (`network=vxlan` in a link),
    /// routed unless `default` says otherwise.
    pub fn pod_network(default: PodNetwork) -> ParamSpec {
        let options = vec![Choice::new(ROUTED, "Routed"), Choice::new(VXLAN, "VXLAN (flannel)")];
        let mut spec = ParamSpec::choice(POD_NETWORK, "Pod network", ChoiceStyle::Buttons, options);
        if let ParamKind::Choice { default: d, .. } = &mut spec.kind {
            *d = pod_network_value(&default).into();
        }
        spec.hint = Some(OVERLAY_HINT.into());
        spec
    }

    /// Whether a TCP connection is shown packet by packet
    /// (`handshake=1` in a link); off by default.
    pub fn handshake() -> ParamSpec {
        let mut spec = ParamSpec::toggle(HANDSHAKE, "TCP packet by packet");
        spec.hint = Some(HANDSHAKE_HINT.into());
        spec
    }

    /// Whether the parameter sets how the cluster is built and shown
    /// (kube-proxy's mode, the Pod network, TCP packet by packet, seeded
    /// picks) rather than which story is told (a Service type, a client):
    /// the page folds these into one settings disclosure.
    pub fn is_setting(&self) -> bool {
        matches!(self.kind, ParamKind::Seed) || [PROXY_MODE, POD_NETWORK, HANDSHAKE].contains(&self.key.as_str())
    }

    /// What a setting is set to, in a word or two for the settings'
    /// summary line: `iptables`, `VXLAN`, `packet by packet`, `seed 42`.
    pub fn summary(&self, p: &Params) -> Option<String> {
        match (&self.kind, self.key.as_str()) {
            (ParamKind::Seed, _) => Some(p.seed().map_or_else(|| "fixed picks".to_string(), |s| format!("seed {s}"))),
            (_, PROXY_MODE) => Some(p.proxy_mode().as_str().to_string()),
            (_, POD_NETWORK) => Some(if matches!(p.pod_network(), PodNetwork::Routed) { "routed" } else { "VXLAN" }.to_string()),
            (_, HANDSHAKE) => Some(if p.handshake() { "packet by packet" } else { "whole requests" }.to_string()),
            _ => None,
        }
    }

    /// The same parameter, offered only while `key` has one of `values`.
    pub fn when(mut self, key: &str, values: &[&str]) -> ParamSpec {
        self.when.push((key.into(), values.iter().map(|v| v.to_string()).collect()));
        self
    }

    /// Whether the parameter matters with these values of the others.
    pub fn applies(&self, p: &Params) -> bool {
        self.when.iter().all(|(k, vs)| p.choice(k).is_some_and(|v| vs.iter().any(|x| x == v)))
    }

    pub fn default_value(&self) -> Value {
        match &self.kind {
            ParamKind::Choice { default, .. } => Value::Choice(default.clone()),
            ParamKind::Toggle { default } => Value::Toggle(*default),
            ParamKind::Set { .. } => Value::Set(BTreeSet::new()),
            ParamKind::Seed => Value::Seed(None),
            ParamKind::Manifest => Value::Manifest(String::new()),
        }
    }

    /// Reads a value from its link form, or says why it cannot.
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        let shown = crate::link::short(text);
        match &self.kind {
            ParamKind::Choice { options, style: ChoiceStyle::Menu, .. } if options.is_empty() => {
                if text.len() <= MAX_OPEN_VALUE && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"./:-_".contains(&b)) {
                    Ok(Value::Choice(text.to_string()))
                } else {
                    Err(format!("\"{shown}\" is not a value of {}; it takes a namespace/name.", self.key))
                }
            }
            ParamKind::Choice { options, .. } => match options.iter().find(|c| c.value == text) {
                Some(c) => Ok(Value::Choice(c.value.clone())),
                None => Err(format!(
                    "\"{shown}\" is not a value of {}; it takes {}.{}",
                    self.key,
                    options.iter().filter(|c| !c.value.is_empty()).map(|c| c.value.as_str()).collect::<Vec<_>>().join(", "),
                    self.hint.as_deref().map_or_else(String::new, |h| format!(" {h}"))
                )),
            },
            ParamKind::Toggle { .. } => match text {
                "1" | "on" | "true" => Ok(Value::Toggle(true)),
                "0" | "off" | "false" => Ok(Value::Toggle(false)),
                _ => Err(format!("\"{shown}\" is not a value of {}; it takes 1 or 0.", self.key)),
            },
            ParamKind::Set { options } => {
                let mut set = BTreeSet::new();
                for v in text.split(',').filter(|v| !v.is_empty()) {
                    if !options.iter().any(|c| c.value == v) {
                        return Err(format!("\"{}\" is not a value of {}; it takes a list of {}.", crate::link::short(v), self.key, options.iter().map(|c| c.value.as_str()).collect::<Vec<_>>().join(", ")));
                    }
                    set.insert(v.to_string());
                }
                Ok(Value::Set(set))
            }
            ParamKind::Seed => {
                let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
                match text.parse::<u64>().ok().filter(|_| digits) {
                    Some(s) => Ok(Value::Seed(Some(s))),
                    None => Err(format!("The seed \"{shown}\" is not a number (digits only, as in ?seed=42); showing the fixed picks.")),
                }
            }
            ParamKind::Manifest => crate::compact::unpack(text).map(Value::Manifest).map_err(|e| e.to_string()),
        }
    }

    /// Whether `v` is a value this parameter can take.
    fn accepts(&self, v: &Value) -> bool {
        match (&self.kind, v) {
            (ParamKind::Choice { options, style: ChoiceStyle::Menu, .. }, Value::Choice(_)) if options.is_empty() => true,
            (ParamKind::Choice { options, .. }, Value::Choice(c)) => options.iter().any(|o| &o.value == c),
            (ParamKind::Toggle { .. }, Value::Toggle(_)) | (ParamKind::Seed, Value::Seed(_)) => true,
            // Any length: the editor states its own limit, and a link leaves out
            // what it cannot carry.
            (ParamKind::Manifest, Value::Manifest(_)) => true,
            (ParamKind::Set { options }, Value::Set(s)) => s.iter().all(|x| options.iter().any(|o| &o.value == x)),
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Value {
    Choice(String),
    Toggle(bool),
    Set(BTreeSet<String>),
    Seed(Option<u64>),
    Manifest(String),
}

impl Value {
    /// The value as a link carries it; empty for a manifest too long for
    /// a link (see [`crate::compact::pack`]), which links leave out.
    pub fn link_text(&self) -> String {
        match self {
            Value::Choice(c) => c.clone(),
            Value::Toggle(b) => if *b { "1" } else { "0" }.into(),
            Value::Set(s) => s.iter().cloned().collect::<Vec<_>>().join(","),
            Value::Seed(s) => s.map_or_else(String::new, |s| s.to_string()),
            Value::Manifest(t) => crate::compact::pack(t).unwrap_or_default(),
        }
    }
}

/// Values of a scenario's parameters, by key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    values: BTreeMap<String, Value>,
}

impl Params {
    /// The settings' summary line: `iptables · routed · whole requests ·
    /// fixed picks`, each setting of `specs` in their order.
    pub fn settings_summary(&self, specs: &[ParamSpec]) -> String {
        specs.iter().filter(|s| s.is_setting()).filter_map(|s| s.summary(self)).collect::<Vec<_>>().join(" · ")
    }

    pub fn defaults(specs: &[ParamSpec]) -> Params {
        Params { values: specs.iter().map(|s| (s.key.clone(), s.default_value())).collect() }
    }

    /// Every parameter of `specs`, with the value here where it is one the
    /// parameter takes, else its default. Keys `specs` does not know are dropped.
    pub fn normalized(&self, specs: &[ParamSpec]) -> Params {
        let values = specs
            .iter()
            .map(|s| {
                let v = self.values.get(&s.key).filter(|v| s.accepts(v)).cloned().unwrap_or_else(|| s.default_value());
                (s.key.clone(), v)
            })
            .collect();
        Params { values }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    pub fn insert(&mut self, key: &str, v: Value) {
        self.values.insert(key.into(), v);
    }

    pub fn with(mut self, key: &str, v: Value) -> Params {
        self.insert(key, v);
        self
    }

    pub fn choice(&self, key: &str) -> Option<&str> {
        match self.values.get(key) {
            Some(Value::Choice(c)) => Some(c.as_str()),
            _ => None,
        }
    }

    pub fn toggle(&self, key: &str) -> bool {
        matches!(self.values.get(key), Some(Value::Toggle(true)))
    }

    pub fn set_contains(&self, key: &str, item: &str) -> bool {
        matches!(self.values.get(key), Some(Value::Set(s)) if s.contains(item))
    }

    /// The kube-proxy mode chosen; iptables when there is no such parameter.
    pub fn proxy_mode(&self) -> ProxyMode {
        if self.choice(PROXY_MODE) == Some(ProxyMode::Nftables.as_str()) { ProxyMode::Nftables } else { ProxyMode::Iptables }
    }

    /// The Pod network chosen (flannel's defaults for VXLAN); routed when
    /// there is no such parameter.
    pub fn pod_network(&self) -> PodNetwork {
        if self.choice(POD_NETWORK) == Some(VXLAN) { PodNetwork::Vxlan(VxlanConfig::default()) } else { PodNetwork::Routed }
    }

    /// Whether TCP connections are shown packet by packet.
    pub fn handshake(&self) -> bool {
        self.toggle(HANDSHAKE)
    }

    pub fn seed(&self) -> Option<u64> {
        match self.values.get("seed") {
            Some(Value::Seed(s)) => *s,
            _ => None,
        }
    }

    /// The manifest the user wrote, if any.
    pub fn manifest(&self) -> Option<&str> {
        match self.values.get("manifest") {
            Some(Value::Manifest(t)) if !t.is_empty() => Some(t.as_str()),
            _ => None,
        }
    }

    /// The `key=value` pairs a link carries: every value that is not its
    /// parameter's default, in the order the parameters are declared
    /// (a manifest too long to pack is left out).
    pub fn link_pairs(&self, specs: &[ParamSpec]) -> Vec<(String, String)> {
        specs
            .iter()
            .filter_map(|s| {
                let v = self.values.get(&s.key)?;
                (*v != s.default_value()).then(|| (s.key.clone(), v.link_text())).filter(|(_, text)| !matches!(v, Value::Manifest(_)) || !text.is_empty())
            })
            .collect()
    }
}

/// A Pod network's value in links.
pub fn pod_network_value(net: &PodNetwork) -> &'static str {
    match net {
        PodNetwork::Routed => ROUTED,
        PodNetwork::Vxlan(_) => VXLAN,
    }
}

/// Every combination of the parameters' values, for tests and
/// benchmarks: each choice's options (demos aside: a demo only presets
/// others), both values of a toggle, every subset of a set, and the seeds
/// given (fixed picks are `None`).
pub fn combinations(specs: &[ParamSpec], seeds: &[Option<u64>]) -> Vec<Params> {
    let mut all = vec![Params::defaults(specs)];
    for spec in specs {
        let values: Vec<Value> = match &spec.kind {
            ParamKind::Choice { style: ChoiceStyle::Demo, default, .. } => vec![Value::Choice(default.clone())],
            ParamKind::Choice { options, .. } => options.iter().map(|c| Value::Choice(c.value.clone())).collect(),
            ParamKind::Toggle { .. } => vec![Value::Toggle(false), Value::Toggle(true)],
            ParamKind::Set { options } => (0..1u32 << options.len().min(12))
                .map(|bits| Value::Set(options.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, c)| c.value.clone()).collect()))
                .collect(),
            ParamKind::Seed => seeds.iter().map(|s| Value::Seed(*s)).collect(),
            // Edits are tested by their own tests, one manifest at a time.
            ParamKind::Manifest => vec![Value::Manifest(String::new())],
        };
        all = all.into_iter().flat_map(|p| values.iter().map(move |v| p.clone().with(&spec.key, v.clone()))).collect();
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<ParamSpec> {
        vec![
            ParamSpec::choice("tab", "Type", ChoiceStyle::Tabs, vec![Choice::new("a", "A"), Choice::new("b", "B")]),
            ParamSpec::toggle("local", "Local"),
            ParamSpec::set("down", "Not Ready", vec![Choice::new("p1", "P1"), Choice::new("p2", "P2")]),
            ParamSpec::seed(),
        ]
    }

    #[test]
    fn defaults_are_left_out_of_links_and_values_round_trip() {
        let s = specs();
        let d = Params::defaults(&s);
        assert!(d.link_pairs(&s).is_empty());
        let p = d.clone().with("tab", Value::Choice("b".into())).with("down", Value::Set(["p2".to_string()].into())).with("seed", Value::Seed(Some(7)));
        let pairs = p.link_pairs(&s);
        assert_eq!(pairs, [("tab".into(), "b".into()), ("down".into(), "p2".into()), ("seed".into(), "7".into())]);
        let mut back = d;
        for (k, v) in pairs {
            let spec = s.iter().find(|x| x.key == k).unwrap();
            back.insert(&k, spec.parse(&v).unwrap());
        }
        assert_eq!(back, p);
    }

    #[test]
    fn bad_values_are_refused_with_what_is_accepted() {
        let s = specs();
        assert!(s[0].parse("c").unwrap_err().contains("it takes a, b"));
        assert!(s[1].parse("yes").is_err());
        assert!(s[2].parse("p1,p9").unwrap_err().contains("p9"));
        assert!(s[3].parse("-1").is_err());
        assert!(s[3].parse("99999999999999999999999").is_err());
        // Normalizing drops what a scenario does not declare.
        let odd = Params::default().with("tab", Value::Choice("zzz".into())).with("other", Value::Toggle(true));
        assert_eq!(odd.normalized(&s), Params::defaults(&s));
    }

    #[test]
    fn the_settings_sum_up_in_one_line_and_the_story_choices_stay_out() {
        let specs = vec![ParamSpec::choice("tab", "Type", ChoiceStyle::Tabs, vec![Choice::new("a", "A")]), ParamSpec::proxy_mode(ProxyMode::Iptables), ParamSpec::pod_network(PodNetwork::Routed), ParamSpec::handshake(), ParamSpec::seed()];
        let settings: Vec<&str> = specs.iter().filter(|s| s.is_setting()).map(|s| s.key.as_str()).collect();
        assert_eq!(settings, [PROXY_MODE, POD_NETWORK, HANDSHAKE, "seed"]);
        let d = Params::defaults(&specs);
        assert_eq!(d.settings_summary(&specs), "iptables · routed · whole requests · fixed picks");
        let p = d
            .with(PROXY_MODE, Value::Choice("nftables".into()))
            .with(POD_NETWORK, Value::Choice(VXLAN.into()))
            .with(HANDSHAKE, Value::Toggle(true))
            .with("seed", Value::Seed(Some(42)));
        assert_eq!(p.settings_summary(&specs), "nftables · VXLAN · packet by packet · seed 42");
    }
}
