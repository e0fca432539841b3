//! Random valid links, for the link and embed fuzzers: a scenario of the
//! catalog, each parameter left at its default or set to a value it
//! takes, display options, the view, a step the scenario has and a hop.

use super::Rng;
use kubehops_core::compact;
use kubehops_core::embed::{ControlsMode, Display, Origin, Theme, MAX_ORIGINS};
use kubehops_core::link::{HopPos, Link, Mode};
use kubehops_core::scenarios::{self, ChoiceStyle, ParamKind, ParamSpec, Params, Value, CATALOG};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Each scenario's steps with its default parameters, built once.
fn default_steps() -> &'static [(&'static str, usize)] {
    static STEPS: OnceLock<Vec<(&'static str, usize)>> = OnceLock::new();
    STEPS.get_or_init(|| CATALOG.iter().map(|e| (e.id, scenarios::build(e.id, &Params::defaults(&(e.params)())).map_or(0, |s| s.steps.len()))).collect())
}

/// A step count for `parse_with` that builds nothing: the scenario's
/// steps with its defaults, whatever the parameters (the page counts
/// with what it has built, or takes any step: `usize::MAX`).
pub fn steps(id: &str, _: &Params) -> usize {
    default_steps().iter().find(|(i, _)| *i == id).map_or(1, |(_, n)| *n).max(1)
}

/// Every scenario's parameters, declared once.
pub fn specs(id: &str) -> &'static [ParamSpec] {
    static SPECS: OnceLock<Vec<(&'static str, Vec<ParamSpec>)>> = OnceLock::new();
    let all = SPECS.get_or_init(|| CATALOG.iter().map(|e| (e.id, (e.params)())).collect());
    all.iter().find(|(i, _)| *i == id).map_or(&[], |(_, s)| s.as_slice())
}

/// Bytes a menu without options takes from a link.
const MENU_BYTES: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./:-_";

/// A value a menu without options takes: the forms a pasted cluster's
/// options have, or any run of its bytes up to its 320.
fn menu_value(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => rng.pick(&["pod:shop/web-7c9d8f5b6-x2x9z", "node:node-1", "outside", "shop/web", "default/kubernetes", ""]).to_string(),
        1 => "n".repeat(320),
        _ => (0..rng.below(40)).map(|_| char::from(*rng.pick(MENU_BYTES))).collect(),
    }
}

/// Manifests a link may carry: the scenario's kind of text, or any text;
/// empty (the scenario's own) when it does not pack.
fn manifest(rng: &mut Rng) -> String {
    let text = match rng.below(3) {
        0 => format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: {}\n  ports:\n  - port: {}\n", rng.pick(&["NodePort", "ClusterIP", "LoadBalancer"]), rng.below(70_000)),
        1 => (0..rng.below(300)).map(|_| *rng.pick(&['a', 'é', '\n', ' ', ':', '-', '\u{0}', '😀', '%', '&', '#'])).collect(),
        _ => "x".repeat(rng.below(6000)),
    };
    if compact::pack(&text).is_ok() {
        text
    } else {
        String::new()
    }
}

/// A value `spec` takes.
pub fn value(rng: &mut Rng, spec: &ParamSpec) -> Value {
    match &spec.kind {
        ParamKind::Choice { options, style: ChoiceStyle::Menu, .. } if options.is_empty() => Value::Choice(menu_value(rng)),
        ParamKind::Choice { options, .. } => Value::Choice(rng.pick(options).value.clone()),
        ParamKind::Toggle { .. } => Value::Toggle(rng.one_in(2)),
        ParamKind::Set { options } => Value::Set(options.iter().filter(|_| rng.one_in(2)).map(|c| c.value.clone()).collect::<BTreeSet<_>>()),
        ParamKind::Seed => Value::Seed(match rng.below(3) {
            0 => None,
            1 => Some(rng.below(100) as u64),
            _ => Some(rng.next_u64()),
        }),
        ParamKind::Manifest => Value::Manifest(manifest(rng)),
    }
}

/// Origins as a person writes them in `origins=` (any case, default
/// ports, a trailing slash), which read to their normal form.
pub fn origin_text(rng: &mut Rng) -> String {
    let scheme = rng.pick(&["https", "http", "HTTPS", "Http"]);
    let host = rng.pick(&["docs.example.com", "127.0.0.1", "localhost", "[::1]", "[2001:db8::7]", "xn--bcher-kva.example", "a-b.c9.example", "EXAMPLE.org", "h"]);
    let port = rng.pick(&["", ":443", ":80", ":8080", ":1", ":65535", ":09000"]);
    let slash = if rng.one_in(4) { "/" } else { "" };
    format!("{scheme}://{host}{port}{slash}")
}

pub fn display(rng: &mut Rng) -> Display {
    let mut origins: Vec<Origin> = Vec::new();
    for _ in 0..rng.below(MAX_ORIGINS + 1) {
        if let Ok(o) = Origin::parse(&origin_text(rng)) {
            if !origins.contains(&o) {
                origins.push(o);
            }
        }
    }
    Display {
        embed: rng.one_in(2),
        theme: *rng.pick(&[Theme::Auto, Theme::Light, Theme::Dark]),
        controls: *rng.pick(&[ControlsMode::Full, ControlsMode::Minimal, ControlsMode::None]),
        autoplay: rng.one_in(3),
        origins,
        notes: rng.one_in(4),
    }
}

/// A link `parse_with(.., steps)` reads back as it is.
pub fn link(rng: &mut Rng) -> Link {
    let id = rng.pick(CATALOG).id;
    let specs = specs(id);
    let mut params = Params::defaults(specs);
    for s in specs {
        if rng.one_in(2) {
            params.insert(&s.key, value(rng, s));
        }
    }
    let hop = match rng.below(4) {
        0 => None,
        1 => Some(HopPos::End),
        2 => Some(HopPos::After(rng.below(12))),
        _ => Some(HopPos::After(rng.next_u64() as usize)),
    };
    let view = if rng.one_in(4) { Mode::Transcript } else { Mode::Animation };
    let display = if rng.one_in(2) { Display::default() } else { display(rng) };
    Link { scenario: id.to_string(), step: rng.below(steps(id, &params)), hop, params, display, view }
}
