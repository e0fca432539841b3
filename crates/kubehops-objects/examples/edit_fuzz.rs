//! Fuzzes the manifest editor's reading natively: random and mutated
//! manifests through `edit::build` on every scenario that takes a typed
//! Service, which reads, validates, dry-runs and (when admitted) plays
//! them, and `compact`'s link packing of the same text.
//!
//! Each case, drawn from the seed and its index, is the scenario's own
//! Service (scenarios in turn) with lines dropped, inserted, cut, copied
//! or replaced by pieces of manifests good and bad, or (one case in ten)
//! random ASCII, or (one in 250) a huge text: the Service padded to the
//! editor's 64 KiB limit or one byte past it, or long runs of nesting,
//! list items or keys.
//!
//! A case fails when it panics, runs longer than the timeout, or breaks
//! what the editor promises: it keeps the user's text (a text
//! `compact::pack` accepts unpacks to itself, and the page's link for the
//! scenario with that text reads back with the text unchanged, or, when
//! it is too long for a link, without one); a build is either a scenario
//! or a refusal with a headline and at least one problem; a problem's line
//! is a line of the text (the editor marks it in its gutter); and the
//! refusal is in kubectl's and the API server's words: `The Service "web"
//! is invalid:` with each problem a field and one of the API server's four
//! kinds (`spec.ports[0].port: Invalid value: …`), or `The manifest cannot
//! be read:` with `error parsing <file>: yaml: line N, column M: …` at
//! line N (or the size limit), or `The manifest cannot be applied:` with a
//! message.
//!
//!     cargo run --release -p kubehops-objects --example edit_fuzz -- [cases] [seed] [--threads N] [--timeout S] [--case N]

#[path = "../../kubehops-core/examples/fuzzing/mod.rs"]
mod fuzzing;

use fuzzing::{Fuzzer, Options, Rng};
use kubehops_core::compact;
use kubehops_core::link::{self, Link};
use kubehops_core::scenarios::{Params, Value, CATALOG, REGISTRY};
use kubehops_objects::edit::{self, Refusal, MAX_EDIT_BYTES};
use std::sync::OnceLock;

/// Pieces a manifest is made of, good and bad.
const TOKENS: &[&str] = &[
    "type: NodePort", "type: LoadBalancer", "type: ExternalName", "type: ClusterIP", "type: Bogus", "clusterIP: None", "clusterIP: 10.96.0.1",
    "clusterIP: 300.1.1.1", "nodePort: 29000", "nodePort: 30080", "nodePort: 65536", "nodePort: -1", "port: 0", "port: 80", "targetPort: http",
    "targetPort: nope", "targetPort: 8080", "protocol: UDP", "protocol: SCTP", "protocol: ICMP", "externalName: mydb.example.com", "externalName: \"\"",
    "externalTrafficPolicy: Local", "internalTrafficPolicy: Local", "sessionAffinity: ClientIP", "sessionAffinity: Sticky", "externalIPs: [192.0.2.9]",
    "loadBalancerSourceRanges: [10.0.0.0/33]", "loadBalancerSourceRanges: [192.0.2.0/24]", "selector: {app: api}", "selector: {}", "ports: []",
    "- port: 81", "- {port: 82, name: b}", "name: UPPER", "namespace: kube-system", "&a [*a]", "*b", "!!binary AAAA", "{", "}", "[", "]", "\"", "'",
    ": :", "- - -", "---", "...", "\t", "#", "%YAML 1.2", "?", "|", ">", "\u{feff}", "\u{0}", "é", "9999999999999999999999",
];

/// Each scenario that takes a typed Service, with its own.
fn own() -> &'static [(&'static str, String)] {
    static OWN: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    OWN.get_or_init(|| REGISTRY.iter().filter(|e| e.edit.is_some()).map(|e| (e.id, edit::starting_text(e.id, &Params::default()))).collect())
}

fn mutate(rng: &mut Rng, base: &str) -> String {
    let mut lines: Vec<String> = base.lines().map(String::from).collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(lines.len() + 1);
        let indent = " ".repeat(rng.below(4) * 2);
        match rng.below(6) {
            0 if !lines.is_empty() => drop(lines.remove(at.min(lines.len() - 1))),
            1 => lines.insert(at, format!("{indent}{}", rng.pick(TOKENS))),
            2 if !lines.is_empty() => {
                let i = at.min(lines.len() - 1);
                let keep: String = lines[i].chars().take(rng.below(lines[i].len() + 1)).collect();
                lines[i] = format!("{keep}{}", rng.pick(TOKENS));
            }
            3 if !lines.is_empty() => {
                let l = rng.pick(&lines).clone();
                lines.insert(at, l);
            }
            4 => {
                let bytes: String = (0..rng.below(12)).map(|_| char::from(32 + rng.below(95) as u8)).collect();
                lines.insert(at, bytes);
            }
            _ => {
                let key = *rng.pick(&["spec", "ports", "metadata", "x"]);
                lines.insert(at, format!("{indent}{key}: {}", rng.pick(TOKENS)));
            }
        }
    }
    lines.join("\n")
}

struct Case {
    id: &'static str,
    text: String,
}

fn make(seed: u64, index: u64) -> Case {
    let (id, base) = &own()[index as usize % own().len()];
    let mut rng = Rng::for_case(seed, index);
    let text = if index.is_multiple_of(10) {
        (0..rng.below(200)).map(|_| char::from(rng.below(128) as u8)).collect()
    } else if index % 250 == 1 {
        huge(&mut rng, base)
    } else {
        mutate(&mut rng, base)
    };
    Case { id, text }
}

/// A text at the editor's limit or past it.
fn huge(rng: &mut Rng, base: &str) -> String {
    match rng.below(4) {
        0 => {
            // The Service and a comment: exactly the limit, or one byte over.
            let pad = (MAX_EDIT_BYTES + rng.below(2)).saturating_sub(base.len() + 3);
            format!("{base}\n# {}", "x".repeat(pad))
        }
        1 => {
            let n = rng.below(MAX_EDIT_BYTES / 2);
            format!("{base}\n  x: {}{}", "[".repeat(n), "]".repeat(n))
        }
        2 => format!("{base}\n{}", "- a\n".repeat(rng.below(MAX_EDIT_BYTES / 4))),
        _ => {
            let key = *rng.pick(&["  type: NodePort\n", "spec:\n", "  ports: []\n", "&a x: *a\n"]);
            format!("{base}\n{}", key.repeat(rng.below(MAX_EDIT_BYTES / key.len() + 2)))
        }
    }
}

/// The text's lines as the editor numbers them (a break is LF, CR or
/// CR LF; the browser's text box gives LF only).
fn lines(text: &str) -> usize {
    1 + text.matches(['\n', '\r']).count() - text.matches("\r\n").count()
}

/// The page's link for scenario `id` with the text typed: the text comes
/// back from it as it was, or, too long for a link, not at all.
fn link_keeps(id: &str, text: &str) -> Result<(), String> {
    let packs = compact::pack(text).is_ok();
    let params = Params::default().with("manifest", Value::Manifest(text.to_string()));
    let l = Link { scenario: id.to_string(), step: 0, hop: None, params, display: Default::default(), view: Default::default() };
    let hash = link::format(&l);
    let back = link::parse_with(&hash, CATALOG, |_, _| usize::MAX);
    let got = back.link.params.manifest().unwrap_or_default();
    match (packs, got == text) {
        (true, true) | (false, _) if !back.problems.is_empty() => Err(format!("the link {hash:?} reads with notices {:?}", back.problems)),
        (true, true) => Ok(()),
        (false, _) if got.is_empty() => Ok(()),
        _ => Err(format!("the link {:?} gives back the text {got:?}", clip(&hash))),
    }
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}

/// A cause in the API server's words: `<field>: <kind>…`, the field with
/// no space outside a subscript (`metadata.labels[a b]` may hold any).
fn api_cause(text: &str) -> bool {
    let Some(at) = [": Invalid value", ": Unsupported value", ": Required value", ": Forbidden"].iter().filter_map(|k| text.find(k)).min() else { return false };
    let field = &text[..at];
    let outside = match (field.find('['), field.rfind(']')) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &field[..a], &field[b + 1..]),
        _ => field.to_string(),
    };
    !field.is_empty() && !outside.contains(char::is_whitespace)
}

/// The line a syntax error in kubectl's words names:
/// `error parsing <file>: yaml: line 3, column 7: …` (or `json:`).
fn kubectl_syntax(message: &str) -> Option<usize> {
    let rest = message.strip_prefix("error parsing ")?;
    let at = rest.find(": yaml: line ").or_else(|| rest.find(": json: line "))?;
    let (line, rest) = rest[at + ": yaml: line ".len()..].split_once(", column ")?;
    let (column, what) = rest.split_once(": ")?;
    column.parse::<usize>().ok()?;
    (at > 0 && !what.trim().is_empty()).then_some(())?;
    line.parse().ok()
}

/// Whether a refusal is in kubectl's and the API server's words.
fn worded(r: &Refusal, text: &str) -> Result<(), String> {
    let h = r.headline.as_str();
    let api = h.starts_with("The ") && (h.ends_with("\" is invalid:") || h.ends_with(" is invalid:"));
    for p in &r.problems {
        let ok = match h {
            _ if api => api_cause(&p.message),
            "The manifest cannot be read:" => match p.line {
                Some(line) => kubectl_syntax(&p.message) == Some(line),
                None => text.len() > MAX_EDIT_BYTES && p.message.contains(&format!("at most {MAX_EDIT_BYTES}")),
            },
            "The manifest cannot be applied:" => !p.message.trim().is_empty(),
            _ => return Err(format!("a headline not in kubectl's words: {h:?}")),
        };
        if !ok {
            return Err(format!("under {h:?}, a problem not in the API server's or kubectl's words: {p:?}"));
        }
    }
    Ok(())
}

fn check(c: &Case) -> Result<&'static str, String> {
    if let Ok(packed) = compact::pack(&c.text) {
        if compact::unpack(&packed).as_deref() != Ok(c.text.as_str()) {
            return Err(format!("packed as {packed:?}, which does not unpack to the text"));
        }
    }
    link_keeps(c.id, &c.text)?;
    let b = edit::build(c.id, &Params::default().with("manifest", Value::Manifest(c.text.clone()))).ok_or("a scenario of the registry is unknown")?;
    match (b.scenario, b.refusal) {
        (Some(_), None) => Ok("admitted and played"),
        (None, Some(r)) if r.headline.is_empty() || r.problems.is_empty() => Err(format!("a refusal without a headline or a problem: {r:?}")),
        (None, Some(r)) => match r.problems.iter().find(|p| p.line.is_some_and(|l| l == 0 || l > lines(&c.text))) {
            Some(p) => Err(format!("a problem at line {:?} of {}: {}", p.line, lines(&c.text), p.message)),
            None => worded(&r, &c.text).map(|()| if c.text.len() > MAX_EDIT_BYTES { "refused: past the size limit" } else { "refused" }),
        },
        (s, r) => Err(format!("a build that is {} and {}", if s.is_some() { "a scenario" } else { "no scenario" }, if r.is_some() { "a refusal" } else { "no refusal" })),
    }
}

fn show(c: &Case) -> String {
    format!("{:?} typed in {}", c.text, c.id)
}

fn main() {
    fuzzing::run(Fuzzer { name: "edit-fuzz", make, check, show }, Options::from_args(1_000_000, 0x5eed_cafe));
}
