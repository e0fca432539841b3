//! Deep links: the URL hash that opens any state of any scenario.
//!
//! Form: `#/<scenario>/<step>[/<hop>][?<key>=<value>&…]`, steps and hops
//! counted from 1; `<hop>` may be `end`. The keys are the scenario's own
//! parameters ([`crate::scenarios::ParamSpec`]): `?tab=nodeport&client=laptop`,
//! `?notready=api-2`, `?seed=42`. Parameters at their default are left out.
//!
//! Display options ([`crate::embed::Display`]: `embed`, `theme`, `controls`,
//! `autoplay`, `origins`, `notes`) follow the scenario's parameters in the
//! same query and are read and written the same way.
//! `view=transcript` (a key of the link, not of the scenario) opens the
//! scenario's transcript instead of the animation.
//!
//! Parsing never fails: what cannot be understood falls back to a default
//! and is reported in `problems`, so a bad link still opens a working page
//! and says why it looks different.

use crate::embed::Display;
use crate::scenarios::{self, About, Params};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub scenario: String,
    /// 0-based step.
    pub step: usize,
    /// Hops finished; `None` means "play the step from its start".
    pub hop: Option<HopPos>,
    /// Every parameter of the scenario, normalized.
    pub params: Params,
    /// How the page is shown (embedded, theme, controls, …).
    #[serde(default)]
    pub display: Display,
    /// What the page shows of it.
    #[serde(default)]
    pub view: Mode,
}

/// What the page shows: the animation, or the transcript (every step as
/// text, with a picture of each step's end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    #[default]
    Animation,
    Transcript,
}

impl Mode {
    /// The value of `view=` in a link; the animation is the default and
    /// is left out.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Animation => "animation",
            Mode::Transcript => "transcript",
        }
    }

    fn parse(v: &str) -> Option<Mode> {
        [Mode::Animation, Mode::Transcript].into_iter().find(|m| m.as_str() == v)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HopPos {
    /// This many hops finished.
    After(usize),
    End,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parsed {
    pub link: Link,
    pub problems: Vec<String>,
}

/// Parses a hash against the registry, counting steps by building the
/// scenario it names.
pub fn parse(hash: &str) -> Parsed {
    parse_with(hash, scenarios::CATALOG, |id, p| scenarios::build(id, p).map_or(0, |s| s.steps.len()))
}

/// Parses a hash against `entries`; `steps` says how many steps a scenario
/// has with given parameters.
pub fn parse_with(hash: &str, entries: &[About], steps: impl Fn(&str, &Params) -> usize) -> Parsed {
    let (path, query) = hash.split_once('?').unwrap_or((hash, ""));
    let mut problems = Vec::new();
    let body = path.trim_start_matches('#').trim_start_matches('/');
    let mut parts = body.split('/').filter(|p| !p.is_empty());
    let default = entries.first();
    let named = parts.next();
    let entry = match named {
        None => default,
        Some(id) => match entries.iter().find(|e| e.id == id) {
            Some(e) => Some(e),
            None => {
                problems.push(format!("There is no scenario named \"{}\"; showing \"{}\".", short(id), default.map_or("", |e| e.title)));
                default
            }
        },
    };
    let Some(entry) = entry else {
        return Parsed { link: Link { scenario: String::new(), step: 0, hop: None, params: Params::default(), display: Display::default(), view: Mode::Animation }, problems };
    };
    let specs = (entry.params)();
    let (view, query) = take_view(query, &mut problems);
    let (params, display) = parse_query(&query, &specs, &mut problems);
    let mut link = Link { scenario: entry.id.to_string(), step: 0, hop: None, params, display, view };
    let count = steps(entry.id, &link.params);
    if let Some(s) = parts.next() {
        match s.parse::<usize>() {
            Ok(n) if n >= 1 && n <= count => link.step = n - 1,
            _ => problems.push(format!("Step \"{}\" does not exist; steps run from 1 to {count}. Showing step 1.", short(s))),
        }
    }
    if let Some(h) = parts.next() {
        match h {
            "end" => link.hop = Some(HopPos::End),
            _ => match h.parse::<usize>() {
                Ok(n) => link.hop = Some(HopPos::After(n)),
                Err(_) => problems.push(format!("Hop \"{}\" is not a number; playing the step from its start.", short(h))),
            },
        }
    }
    Parsed { link, problems }
}

/// Takes `view=…` out of the query: the page's mode, not a parameter of
/// the scenario. An unknown mode is reported and the animation shown.
fn take_view(query: &str, problems: &mut Vec<String>) -> (Mode, String) {
    let mut view = Mode::Animation;
    let mut rest = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("view", v)) => match Mode::parse(&percent_decode(v)) {
                Some(m) => view = m,
                None => problems.push(format!("There is no view \"{}\" (only transcript and animation); showing the animation.", short(&percent_decode(v)))),
            },
            _ => rest.push(pair),
        }
    }
    (view, rest.join("&"))
}

/// Reads `key=value` pairs against the display options and the scenario's
/// parameters; anything else is reported and ignored, and a bad value
/// leaves its default.
fn parse_query(query: &str, specs: &[scenarios::ParamSpec], problems: &mut Vec<String>) -> (Params, Display) {
    let mut params = Params::defaults(specs);
    let mut display = Display::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key.is_empty() {
            continue;
        }
        let value = percent_decode(value);
        if let Some(read) = display.read(key, &value) {
            if let Err(e) = read {
                problems.push(e);
            }
            continue;
        }
        match specs.iter().find(|s| s.key == key) {
            None => problems.push(format!("\"{}\" in the link is not understood and was ignored.", short(pair))),
            Some(spec) => match spec.parse(&value) {
                Ok(v) => params.insert(key, v),
                Err(e) => problems.push(e),
            },
        }
    }
    (params, display)
}

/// `%2C` → `,` and the like; a malformed escape is kept as it is.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The hash for a link.
pub fn format(link: &Link) -> String {
    let mut h = match link.hop {
        None => format!("#/{}/{}", link.scenario, link.step + 1),
        Some(HopPos::End) => format!("#/{}/{}/end", link.scenario, link.step + 1),
        Some(HopPos::After(n)) => format!("#/{}/{}/{}", link.scenario, link.step + 1, n),
    };
    let mut pairs = scenarios::about(&link.scenario).map(|e| link.params.link_pairs(&(e.params)())).unwrap_or_default();
    pairs.extend(link.display.link_pairs().into_iter().map(|(k, v)| (k.to_string(), v)));
    let view = (link.view != Mode::Animation).then(|| ("view".to_string(), link.view.as_str().to_string()));
    for (i, (k, v)) in pairs.iter().chain(view.iter()).enumerate() {
        h.push(if i == 0 { '?' } else { '&' });
        h.push_str(k);
        h.push('=');
        h.push_str(v);
    }
    h
}

/// Keeps echoed user input short and free of control characters.
pub fn short(s: &str) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).take(40).collect();
    if s.chars().count() > 40 {
        format!("{clean}…")
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::Value;

    fn params(id: &str) -> Params {
        Params::defaults(&(scenarios::entry(id).unwrap().params)())
    }

    #[test]
    fn round_trips() {
        let np = "nodeport-loadbalancer";
        for l in [
            Link { scenario: np.into(), step: 2, hop: None, params: params(np), display: Display::default(), view: Mode::Animation },
            Link { scenario: np.into(), step: 4, hop: Some(HopPos::End), params: params(np).with("seed", Value::Seed(Some(42))), display: Display::default(), view: Mode::Animation },
            Link { scenario: np.into(), step: 0, hop: Some(HopPos::After(3)), params: params(np), display: Display::default(), view: Mode::Transcript },
        ] {
            let p = parse(&format(&l));
            assert_eq!(p.link, l);
            assert!(p.problems.is_empty(), "{:?}", p.problems);
        }
        assert_eq!(format(&Link { scenario: np.into(), step: 1, hop: Some(HopPos::End), params: params(np).with("seed", Value::Seed(Some(42))), display: Display::default(), view: Mode::Animation }), "#/nodeport-loadbalancer/2/end?seed=42");
    }

    #[test]
    fn bad_links_fall_back_and_say_why() {
        let p = parse("#/nope/9");
        assert_eq!(p.link.scenario, "nodeport-loadbalancer");
        assert_eq!(p.link.step, 0);
        assert_eq!(p.problems.len(), 2, "{:?}", p.problems);
        let p = parse("#/nodeport-loadbalancer/0/x");
        assert_eq!((p.link.step, p.link.hop), (0, None));
        assert_eq!(p.problems.len(), 2);
        let p = parse("");
        assert!(p.problems.is_empty());
        let long = format!("#/{}", "a".repeat(500));
        assert!(parse(&long).problems[0].len() < 140);
    }

    #[test]
    fn seeds_are_digits_only() {
        assert_eq!(parse("#/nodeport-loadbalancer/3/end?seed=42").link.params.seed(), Some(42));
        for bad in ["?seed=abc", "?seed=", "?seed=-1", "?seed=99999999999999999999999", "?seed=+4"] {
            let p = parse(&format!("#/nodeport-loadbalancer/3{bad}"));
            assert_eq!(p.link.params.seed(), None, "{bad}");
            assert!(p.problems.len() == 1 && p.problems[0].contains("seed"), "{bad}: {:?}", p.problems);
        }
        let p = parse("#?&&=&seed=5&x=\u{0}?/9");
        assert_eq!(p.link.params.seed(), Some(5));
        assert!(p.problems.iter().any(|m| m.contains("not understood")), "{:?}", p.problems);
    }

    #[test]
    fn display_options_ride_in_the_link() {
        let p = parse("#/service-types/3/end?tab=nodeport&embed=1&theme=dark&controls=none&autoplay=1&origins=https%3A%2F%2Fdocs.example.com,http://127.0.0.1:9000&notes=1");
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        let d = &p.link.display;
        assert!(d.embed && d.autoplay && d.notes);
        assert_eq!((d.theme, d.controls), (crate::embed::Theme::Dark, crate::embed::ControlsMode::None));
        assert!(d.allows("https://docs.example.com") && d.allows("http://127.0.0.1:9000"));
        assert_eq!(p.link.params.choice("tab"), Some("nodeport"));
        let again = parse(&format(&p.link));
        assert_eq!(again.link, p.link);
        assert!(format(&p.link).ends_with("&embed=1&theme=dark&controls=none&autoplay=1&origins=https://docs.example.com,http://127.0.0.1:9000&notes=1"), "{}", format(&p.link));
        // Bad values: a notice each, the defaults, and the rest still read.
        let p = parse("#/nodeport-loadbalancer/2?embed=2&theme=neon&controls=&origins=*&seed=4");
        assert_eq!(p.problems.len(), 4, "{:?}", p.problems);
        assert_eq!(p.link.display, Display::default());
        assert_eq!(p.link.params.seed(), Some(4));
    }

    #[test]
    fn no_scenario_parameter_uses_a_display_key() {
        for e in scenarios::REGISTRY {
            for spec in (e.params)() {
                assert!(!crate::embed::KEYS.contains(&spec.key.as_str()), "{} uses {}", e.id, spec.key);
            }
        }
    }

    #[test]
    fn the_transcript_view_is_a_key_of_the_link_not_of_the_scenario() {
        let p = parse("#/service-types/2/end?tab=headless&view=transcript");
        assert_eq!(p.link.view, Mode::Transcript);
        assert_eq!(p.link.params.choice("tab"), Some("headless"));
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        // It comes last when formatted, and the animation is left out.
        assert_eq!(format(&p.link), "#/service-types/2/end?tab=headless&view=transcript");
        assert_eq!(format(&Link { view: Mode::Animation, ..p.link.clone() }), "#/service-types/2/end?tab=headless");
        let alone = parse("#/nodeport-loadbalancer/1?view=transcript");
        assert_eq!((alone.link.view, format(&alone.link).as_str()), (Mode::Transcript, "#/nodeport-loadbalancer/1?view=transcript"));
        // An unknown view is reported and leaves the animation; other keys still count.
        let bad = parse("#/nodeport-loadbalancer/1?view=slides&seed=4");
        assert_eq!((bad.link.view, bad.link.params.seed()), (Mode::Animation, Some(4)));
        assert!(bad.problems.len() == 1 && bad.problems[0].contains("no view \"slides\""), "{:?}", bad.problems);
        assert_eq!(parse("#/nodeport-loadbalancer/1?view=").link.view, Mode::Animation);
    }

    #[test]
    fn percent_escapes_are_read_and_bad_ones_kept() {
        assert_eq!(percent_decode("a%2Cb"), "a,b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
