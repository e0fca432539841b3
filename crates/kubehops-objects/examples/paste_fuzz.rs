//! Fuzzes the paste reader natively: `cluster::read`, what the page's
//! worker runs on a cluster pasted or dropped into "Your cluster" (the
//! CLI's `-f` reader, up to 4 MiB), and `your_cluster::params`, the
//! choices it offers from what was read. (`kubehops-cli`'s
//! `fuzz_cluster` goes on to build, lay out and draw; this one is the
//! reader at the depth of a million cases.)
//!
//! Each case, drawn from the seed and its index, is one of the seeds (the
//! CLI's fixtures, good and bad, a generated cluster, the same objects as
//! JSON, with a byte order mark or CRLF line ends) as it is, or mutated:
//! tokens of YAML and JSON syntax, cuts, copies, pieces of other seeds,
//! lines repeated (keys given twice), re-indented or dropped, odd values
//! (huge numbers, `.nan`, tags, anchors and aliases, 300 characters,
//! unicode, control characters), runs of nesting or text up to 50,000
//! long; or random characters; or, rarely, a text of the 4 MiB limit
//! plus one byte.
//!
//! A case fails when the reader panics, runs longer than the timeout, or
//! breaks what it promises: an error has a message; a syntax error
//! names a line of the text (1-based, for the editor to mark) and says it
//! in kubectl's words (`error parsing paste: yaml: line 3, column 7: …`,
//! the same line); an object refused is in the API server's words (`The
//! Service "web" is invalid: spec.ports[0].port: Invalid value: …`, each
//! cause a field and one of the four kinds); a warning
//! is one of the CLI's lines (`warning: ` or `Warning: `); and a text read
//! reads to the same cluster when its documents are given as JSON (the
//! reader takes both alike). Options the cluster offers that a link
//! cannot carry (`service=`, `client=` of "Your cluster") are counted.
//!
//!     cargo run --release -p kubehops-objects --example paste_fuzz -- [cases] [seed] [--threads N] [--timeout S] [--case N]

#[path = "../../kubehops-core/examples/fuzzing/mod.rs"]
mod fuzzing;

use fuzzing::{Fuzzer, Options, Rng};
use kubehops_core::scenarios::{self, your_cluster, ChoiceStyle, ParamKind, Value};
use kubehops_objects::cluster::{self, MAX_BYTES};
use kubehops_objects::input::{documents, Source};
use kubehops_objects::ReadError;
use std::sync::OnceLock;

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!("../../kubehops-cli/tests/fixtures/", $path))
    };
}

const FIXTURES: &[&str] = &[
    fixture!("cluster/cluster.yaml"),
    fixture!("cluster/shop.json"),
    fixture!("kube-proxy.yaml"),
    fixture!("with-deployment.yaml"),
    fixture!("stored-conflicts.yaml"),
    fixture!("upstream/overall.yaml"),
    fixture!("upstream/test-node.yaml"),
    fixture!("upstream/coredns-handler.yaml"),
    fixture!("upstream/kubectl-print-service.yaml"),
    fixture!("bad/port-conflict.yaml"),
    fixture!("bad/several-problems.yaml"),
    fixture!("bad/wrong-types.yaml"),
    fixture!("bad/unresolved-named-port.yaml"),
    fixture!("bad/bad-slice-address.yaml"),
    fixture!("bad/malformed.json"),
];

/// The texts cases start from: the fixtures, a whole cluster, a
/// generated one, and JSON, BOM and CRLF forms of some.
fn seeds() -> &'static [String] {
    static SEEDS: OnceLock<Vec<String>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let whole = [fixture!("cluster/cluster.yaml"), fixture!("cluster/shop.json"), fixture!("kube-proxy.yaml")].join("\n---\n");
        let mut s: Vec<String> = FIXTURES.iter().map(|f| f.to_string()).collect();
        s.extend([whole.clone(), cluster::example_yaml(3, 9, 4)]);
        for text in [&whole, &s[0], &s[4]].map(|t| t.clone()) {
            s.push(as_json(&text).unwrap_or_default());
            s.push(format!("\u{feff}{text}"));
            s.push(text.replace('\n', "\r\n"));
        }
        s
    })
}

/// A text's documents as a JSON stream, when it reads as documents whose
/// first is an object or a list (the reader takes a text for JSON by its
/// first character).
fn as_json(text: &str) -> Option<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let docs = documents(&Source { name: "paste".into(), text: text.into() }).ok()?;
    docs.first().filter(|d| d.value.is_object() || d.value.is_array())?;
    Some(docs.iter().map(|d| d.value.to_string()).collect::<Vec<_>>().join("\n"))
}

/// Pieces of YAML and JSON syntax.
const TOKENS: &[&str] = &[
    "[", "]", "{", "}", ": ", ":", "- ", ", ", "---\n", "...\n", "\n", "  ", "\t", "#", "&a ", "*a", "&b [*a, *a]", "*zz", "!!int ", "!!str ", "!!map ",
    "!!binary ", "!local ", "!<tag:x> ", "? ", "|\n", ">-\n", "\"", "'", "\\", "\\u", "\\ud800", "<<: *a", "%YAML 1.2\n", "%TAG ! x\n", "items:\n",
    "kind: List\n", "apiVersion: v1\n", "kind: Service\n", "kind: Pod\n", "kind: Node\n", "kind: EndpointSlice\n", "kind: KubeProxyConfiguration\n",
    "metadata: {name: x}\n", "spec: null\n", "ports: []\n", "selector: {}\n", "\"kind\": \"Service\"", "\"items\": [", "}{", "][",
];

/// Values that have broken readers.
const VALUES: &[&str] = &[
    "18446744073709551616", "-9223372036854775809", "1e999", "-0", "-0.0", ".nan", ".inf", "0x", "0x1F", "0o17", "1_000", "null", "~", "true",
    "yes", "[]", "{}", "''", "\"\"", "é", "\u{0}", "\u{7f}", "\u{202e}", "😀", "\u{feff}", "65536", "-1", "0", "300.1.1.1", "fd00::1",
    "10.0.0.0/33", "2024-13-01T00:00:00Z", "*a", "&a x", "!!float 1", "!!int x", "|", ">",
];

const RUNS: &[&str] = &["[", "{", "- ", "a: ", "\n ", "[{", "&x [*x, ", "a", "  ", "é", "\"", "#"];

fn insert(s: &mut Vec<char>, at: usize, piece: &str) {
    s.splice(at..at, piece.chars());
}

/// One change at the character level.
fn mutate_chars(rng: &mut Rng, s: &mut Vec<char>) {
    let at = rng.below(s.len() + 1);
    match rng.below(7) {
        0 | 1 => insert(s, at, rng.pick::<&str>(TOKENS)),
        2 => drop(s.drain(at..(at + rng.below(60)).min(s.len()))),
        3 => {
            let copy: Vec<char> = s[at..(at + rng.below(120)).min(s.len())].to_vec();
            let to = rng.below(s.len() + 1);
            s.splice(to..to, copy);
        }
        4 => {
            let n = if rng.one_in(20) { rng.below(50_000) } else { rng.below(300) };
            insert(s, at, &rng.pick(RUNS).repeat(n));
        }
        5 if at < s.len() => s[at] = char::from_u32(rng.below(0x250) as u32).unwrap_or('?'),
        _ => {
            let other = rng.pick(seeds());
            let from = rng.below(other.len());
            let piece: String = other.chars().skip(from).take(rng.below(400)).collect();
            insert(s, at, &piece);
        }
    }
}

/// One change at the line level: a line repeated, re-indented, dropped,
/// or its value replaced.
fn mutate_lines(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.split('\n').map(String::from).collect();
    let i = rng.below(lines.len());
    match rng.below(4) {
        0 => {
            let l = lines[i].clone();
            lines.insert(rng.below(lines.len() + 1), l);
        }
        1 => lines[i] = format!("{}{}", " ".repeat(rng.below(5)), lines[i].trim_start()),
        2 => drop(lines.remove(i)),
        _ => {
            let value = if rng.one_in(10) { "x".repeat(300) } else { rng.pick(VALUES).to_string() };
            if let Some((key, _)) = lines[i].split_once(": ") {
                lines[i] = format!("{key}: {value}");
            }
        }
    }
    lines.join("\n")
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut t = text.to_string();
    let most = if rng.one_in(8) { 10 } else { 3 };
    for _ in 0..1 + rng.below(most) {
        if rng.one_in(3) {
            t = mutate_lines(rng, &t);
        } else {
            let mut s: Vec<char> = t.chars().collect();
            mutate_chars(rng, &mut s);
            t = s.into_iter().collect();
        }
    }
    t
}

fn make(seed: u64, index: u64) -> String {
    let mut rng = Rng::for_case(seed, index);
    if rng.one_in(5000) {
        // Over the limit by one byte: refused before it is read.
        return "#".repeat(MAX_BYTES + 1);
    }
    match rng.below(20) {
        0 => (0..rng.below(400)).map(|_| char::from_u32(rng.below(0x300) as u32).unwrap_or('?')).collect(),
        1 | 2 => rng.pick(seeds()).clone(),
        _ => {
            let base = rng.pick(seeds()).clone();
            mutate(&mut rng, &base)
        }
    }
}

/// Line breaks as YAML counts them (CR, LF or CRLF), plus one.
fn lines(text: &str) -> usize {
    let b = text.as_bytes();
    1 + (0..b.len()).filter(|&i| b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n'))).count()
}

fn check_error(text: &str, e: &ReadError) -> Result<&'static str, String> {
    let shown = e.to_string();
    if shown.trim().is_empty() {
        return Err(format!("an error without a message: {e:?}"));
    }
    match e {
        ReadError::Syntax { line, .. } if *line == 0 || *line > lines(text) => Err(format!("a syntax error names line {line} of {}: {shown}", lines(text))),
        ReadError::Syntax { line, message } => match kubectl_syntax(message) {
            Some(named) if named == *line => Ok("refused: not YAML or JSON"),
            _ => Err(format!("a syntax error at line {line} not in kubectl's words (error parsing paste: yaml|json: line {line}, column …: …): {message:?}")),
        },
        ReadError::Invalid(a) => match api_wording(a, &shown) {
            Ok(()) => Ok("refused: an object the API server would reject"),
            Err(why) => Err(format!("a rejection not in the API server's words ({why}): {shown:?}")),
        },
        ReadError::Other(_) => Ok("refused: other"),
    }
}

/// The line a syntax error in kubectl's words names:
/// `error parsing paste: yaml: line 3, column 7: …` (or `json:`), with
/// something after it.
fn kubectl_syntax(message: &str) -> Option<usize> {
    let rest = message.strip_prefix("error parsing paste: ")?;
    let rest = rest.strip_prefix("yaml: line ").or_else(|| rest.strip_prefix("json: line "))?;
    let (line, rest) = rest.split_once(", column ")?;
    let (column, what) = rest.split_once(": ")?;
    column.parse::<usize>().ok()?;
    (!what.trim().is_empty()).then_some(())?;
    line.parse().ok()
}

/// Whether a rejection reads as the API server's: `The Service "web" is
/// invalid: ` (or without a name), then each cause as
/// `spec.ports[0].port: Invalid value: …` with one of its four kinds.
fn api_wording(e: &kubehops_core::api::server::ApiError, shown: &str) -> Result<(), String> {
    let head = if e.name.is_empty() { format!("The {} is invalid: ", e.kind) } else { format!("The {} \"{}\" is invalid: ", e.kind, e.name) };
    if e.kind.is_empty() || !shown.starts_with(&head) {
        return Err("the headline".into());
    }
    if e.causes.is_empty() {
        return Err("no cause".into());
    }
    for c in &e.causes {
        let text = kubehops_objects::cause(c);
        // The field is what comes before the kind; a subscript (a label's
        // key: `metadata.labels[a b]`) may hold anything.
        let at = [": Invalid value", ": Unsupported value", ": Required value", ": Forbidden"].iter().filter_map(|k| text.find(k)).min().ok_or(format!("the kind of {text:?}"))?;
        let field = &text[..at];
        let outside = match (field.find('['), field.rfind(']')) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &field[..a], &field[b + 1..]),
            _ => field.to_string(),
        };
        if field.is_empty() || outside.contains(char::is_whitespace) {
            return Err(format!("the field {field:?}"));
        }
        if !shown.contains(&text) {
            return Err(format!("the cause {text:?} is not shown"));
        }
    }
    Ok(())
}

/// Whether a link can carry every option the cluster offers: the page
/// reads `service=` and `client=` against the menus' declared form.
fn options_travel(input: &your_cluster::ClusterInput) -> bool {
    let declared = (scenarios::about(your_cluster::ID).expect("Your cluster is in the catalog").params)();
    your_cluster::params(input).iter().all(|spec| match (&spec.kind, declared.iter().find(|d| d.key == spec.key)) {
        (ParamKind::Choice { options, style: ChoiceStyle::Menu, .. }, Some(d)) => options.iter().all(|o| d.parse(&o.value) == Ok(Value::Choice(o.value.clone()))),
        _ => true,
    })
}

#[allow(clippy::ptr_arg)] // the runner hands each check a &Case, here a String
fn check(text: &String) -> Result<&'static str, String> {
    let read = match cluster::read(&[("paste", text)]) {
        Ok(r) => r,
        Err(e) => return check_error(text, &e),
    };
    if let Some(w) = read.warnings.iter().find(|w| !w.starts_with("warning: ") && !w.starts_with("Warning: ")) {
        return Err(format!("a warning not in the CLI's form: {w:?}"));
    }
    if let Some(json) = as_json(text) {
        match cluster::read(&[("paste", &json)]) {
            Ok(again) if again.input == read.input => {}
            other => return Err(format!("read as YAML and as JSON differently: {:?}", other.map(|r| r.input))),
        }
    }
    Ok(if options_travel(&read.input) { "read" } else { "read, with options a link cannot carry" })
}

fn show(text: &String) -> String {
    format!("{text:?}")
}

fn main() {
    fuzzing::run(Fuzzer { name: "paste-fuzz", make, check, show }, Options::from_args(1_000_000, 1));
}
