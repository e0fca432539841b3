//! Fuzzes the manifest editor's reading natively: random and mutated
//! manifests through `edit::build` on every scenario that takes a typed
//! Service, which reads, validates, dry-runs and (when admitted) plays
//! them, and `compact`'s link packing of the same text.
//!
//! Each case, drawn from the seed and its index, is the scenario's own
//! Service (scenarios in turn) with lines dropped, inserted, cut, copied
//! or replaced by pieces of manifests good and bad, or (one case in ten)
//! random ASCII.
//!
//! A case fails when it panics, runs longer than the timeout, or breaks
//! what the editor promises: a text `compact::pack` accepts unpacks to
//! itself; a build is either a scenario or a refusal with a headline and
//! at least one problem; and a problem's line is a line of the text (the
//! editor marks it in its gutter).
//!
//!     cargo run --release -p kubehops-objects --example edit_fuzz -- [cases] [seed] [--threads N] [--timeout S] [--case N]

#[path = "../../kubehops-core/examples/fuzzing/mod.rs"]
mod fuzzing;

use fuzzing::{Fuzzer, Options, Rng};
use kubehops_core::compact;
use kubehops_core::scenarios::{Params, Value, REGISTRY};
use kubehops_objects::edit;
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
    let text = if index % 10 == 0 { (0..rng.below(200)).map(|_| char::from(rng.below(128) as u8)).collect() } else { mutate(&mut rng, base) };
    Case { id, text }
}

/// The text's lines as the editor numbers them (a break is LF, CR or
/// CR LF; the browser's text box gives LF only).
fn lines(text: &str) -> usize {
    1 + text.matches(['\n', '\r']).count() - text.matches("\r\n").count()
}

fn check(c: &Case) -> Result<&'static str, String> {
    if let Ok(packed) = compact::pack(&c.text) {
        if compact::unpack(&packed).as_deref() != Ok(c.text.as_str()) {
            return Err(format!("packed as {packed:?}, which does not unpack to the text"));
        }
    }
    let b = edit::build(c.id, &Params::default().with("manifest", Value::Manifest(c.text.clone()))).ok_or("a scenario of the registry is unknown")?;
    match (b.scenario, b.refusal) {
        (Some(_), None) => Ok("admitted and played"),
        (None, Some(r)) if r.headline.is_empty() || r.problems.is_empty() => Err(format!("a refusal without a headline or a problem: {r:?}")),
        (None, Some(r)) => match r.problems.iter().find(|p| p.line.is_some_and(|l| l == 0 || l > lines(&c.text))) {
            Some(p) => Err(format!("a problem at line {:?} of {}: {}", p.line, lines(&c.text), p.message)),
            None => Ok("refused"),
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
