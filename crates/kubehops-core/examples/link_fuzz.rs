//! Fuzzes the link reader (`link::parse_with`, and `link::parse`, which
//! builds the scenario to count its steps) natively, as the page reads
//! every address it opens.
//!
//! Each case, drawn from the seed and its index, is one of:
//! - a valid link: `link::format` of a random state of any scenario (each
//!   parameter at a value it takes, display options, view, step, hop);
//! - the same link spelt differently, as the reader promises to accept:
//!   pairs in another order, values percent-encoded, toggles as `on` or
//!   `true`, origins repeated, `#` left out, slashes doubled, empty pairs;
//! - a valid link mutated: cut, spliced with pieces of links and other
//!   links, repeated pairs, garbled percent escapes, runs of up to 100,000
//!   characters, unicode and control characters, changed case;
//! - a link the README and the e2e tests open (`#/nodeport-loadbalancer/2/3?seed=42&mode=nftables`),
//!   as it is or mutated as above;
//! - random characters.
//!
//! Steps are counted as the page does when it has not built the scenario
//! (any step: `usize::MAX`), with a fixed count per scenario, and in one
//! case in 100 by `link::parse` itself.
//!
//! A case fails when the reader panics, runs longer than the timeout, or
//! breaks what `link.rs` promises: a valid link, however spelt, reads back
//! as the state it was formatted from with no notice; any text reads to a
//! link that formats to a text read back as the same link with no notice
//! (a notice names what was dropped, and nothing else is); no notice
//! carries a control character (echoed input goes through `link::short`).
//!
//!     cargo run --release -p kubehops-core --example link_fuzz -- [cases] [seed] [--threads N] [--timeout S] [--case N]

mod fuzzing;

use fuzzing::{links, Fuzzer, Options, Rng};
use kubehops_core::link::{self, format, Link, Parsed};
use kubehops_core::scenarios::{self, ParamKind};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Counter {
    /// A fixed count per scenario (`links::steps`).
    Fixed,
    /// Any step, as the page reads a link before it has the scenario.
    Any,
    /// `link::parse`: the scenario built with the link's parameters.
    Built,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A link of the README or the e2e tests, unchanged.
    Real,
    Valid,
    Respelled,
    Mutated,
    Noise,
}

struct Case {
    text: String,
    kind: Kind,
    counter: Counter,
    /// The state a valid link must read as.
    expect: Option<Link>,
}

fn read(counter: Counter, text: &str) -> Parsed {
    match counter {
        Counter::Fixed => link::parse_with(text, scenarios::CATALOG, links::steps),
        Counter::Any => link::parse_with(text, scenarios::CATALOG, |_, _| usize::MAX),
        Counter::Built => link::parse(text),
    }
}

/// Links the README and the e2e tests open. The first ones are clean:
/// they read with no notice, and `link::format` writes them back with the
/// same path and pairs (in its own order); the rest read with a notice.
const REAL: &[&str] = &[
    "#/nodeport-loadbalancer/2/3?seed=42&mode=nftables",
    "#/nodeport-loadbalancer/2/4?seed=42",
    "#/nodeport-loadbalancer/1/0?network=vxlan",
    "#/nodeport-loadbalancer/2?embed=1&autoplay=1",
    "#/nodeport-loadbalancer/2?embed=1&controls=minimal",
    "#/nodeport-loadbalancer/2?view=transcript",
    "#/nodeport-loadbalancer/2/end?seed=42",
    "#/nodeport-loadbalancer/4?seed=18446744073709551615",
    "#/local-lab/1/0?handshake=1",
    "#/local-lab/1?mode=nftables",
    "#/local-lab/9/end",
    "#/service-types/1",
    "#/nodeport-loadbalancer/2/99",
    "#/nodeport-loadbalancer/3?seed=4x2",
    "#/nodeport-loadbalancer/5/end?seed=7&seed=&x",
    "#/nodeport-loadbalancer/2?embed=1&theme=neon&controls=lots&autoplay=maybe&origins=*,javascript:alert(1)",
    "#/no-such-thing/99",
    "#/nodeport-loadbalancer/1?embed=1&origins=http://127.0.0.1:8123",
];

/// How many of [`REAL`] are clean.
const CLEAN: usize = 12;

/// A link's path and its query's pairs, sorted.
fn parts(text: &str) -> (&str, Vec<&str>) {
    let (path, query) = text.split_once('?').unwrap_or((text, ""));
    let mut pairs: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
    pairs.sort_unstable();
    (path, pairs)
}

/// Pieces of links, good and bad.
const PIECES: &[&str] = &[
    "#", "/", "?", "&", "=", "end", "0", "-1", "+3", "99999999999999999999999", "view=", "view=transcript", "view=TRANSCRIPT", "embed=1", "theme=neon",
    "controls=", "origins=*", "origins=https://a.example,https://b.example", "origins=javascript:alert(1)", "notes=true", "autoplay=yes", "seed=",
    "seed=+4", "seed=18446744073709551615", "seed=18446744073709551616", "tab=nodeport", "mode=ipvs", "network=vxlan", "handshake=on",
    "notready=api-x4k2p,api-x4k2p", "notready=,", "manifest=", "manifest=AQ", "manifest=AQA", "service=a/b", "client=pod:x/y", "local-lab",
    "your-cluster", "service-types", "nodeport-loadbalancer", "..", "%", "%2", "%zz", "%C3%A9", "%00", "%0A", "%26", "%3D", "%3F", "%23", "%2F",
    "%E2%82", "%FF%FE", "%C0%AF", "%2525", "%u00e9",
];

const UNICODE: &[char] = &['é', '\u{0}', '\u{7}', '\u{7f}', '\u{85}', '\u{9f}', '\u{202e}', '\u{200b}', '\u{feff}', '\u{301}', '\u{10ffff}', '😀', '\n', '\t', 'İ', 'ß'];

/// Runs repeated for long values and deep paths.
const RUNS: &[&str] = &["9", "a", "%41", ",api-x4k2p", "&seed=1", "/", "?", "%", "=", "&", "é", "origins=https://a.example,"];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut s: Vec<char> = text.chars().collect();
    let most = if rng.one_in(8) { 10 } else { 4 };
    for _ in 0..1 + rng.below(most) {
        let at = rng.below(s.len() + 1);
        match rng.below(10) {
            0 => s.truncate(at),
            1 => drop(s.drain(at..(at + rng.below(20)).min(s.len()))),
            2 => insert(&mut s, at, rng.pick::<&str>(PIECES)),
            3 => repeat_pair(rng, &mut s),
            4 => insert(&mut s, at, rng.pick::<&str>(&["%", "%Z", "%4", "%E2%82", "%FF", "%C0%AF", "%00", "%0A", "%25", "%2525", "%%", "%-1"])),
            5 => {
                let n = if rng.one_in(10) { rng.below(100_000) } else { rng.below(500) };
                insert(&mut s, at, &rng.pick(RUNS).repeat(n));
            }
            6 => s.insert(at, *rng.pick(UNICODE)),
            7 if at < s.len() => s[at] = char::from(rng.below(128) as u8),
            8 => {
                let other: Vec<char> = format(&links::link(rng)).chars().collect();
                let from = rng.below(other.len());
                let piece: String = other[from..(from + rng.below(60)).min(other.len())].iter().collect();
                insert(&mut s, at, &piece);
            }
            _ => {
                let end = (at + rng.below(30)).min(s.len());
                for c in &mut s[at..end] {
                    *c = if c.is_lowercase() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() };
                }
            }
        }
    }
    s.into_iter().collect()
}

fn insert(s: &mut Vec<char>, at: usize, piece: &str) {
    s.splice(at..at, piece.chars());
}

/// Copies one `key=value` pair of the query to the end, sometimes with
/// another value.
fn repeat_pair(rng: &mut Rng, s: &mut Vec<char>) {
    let text: String = s.iter().collect();
    let Some((_, query)) = text.split_once('?') else { return };
    let pairs: Vec<&str> = query.split('&').collect();
    let pair = *rng.pick(&pairs);
    let copy = match (rng.one_in(3), pair.split_once('=')) {
        (true, Some((k, _))) => format!("&{k}={}", rng.pick(PIECES)),
        _ => format!("&{pair}"),
    };
    s.extend(copy.chars());
}

/// `%XX` for each byte of `c`, in either case.
fn escaped(rng: &mut Rng, c: char) -> String {
    let mut buf = [0; 4];
    let upper = rng.one_in(2);
    c.encode_utf8(&mut buf).bytes().map(|b| if upper { format!("%{b:02X}") } else { format!("%{b:02x}") }).collect()
}

/// A value as a link may spell it: some characters percent-encoded, and
/// a toggle's `1` as another word the key takes.
fn respell_value(rng: &mut Rng, scenario: &str, key: &str, value: &str) -> String {
    let toggle = links::specs(scenario).iter().any(|s| s.key == key && matches!(s.kind, ParamKind::Toggle { .. }));
    let value = match (value, key) {
        ("1", "embed" | "autoplay" | "notes") => "true",
        ("1", _) if toggle => *rng.pick(&["on", "true", "1"]),
        _ => value,
    };
    let mut v: String = value.chars().map(|c| if rng.one_in(3) { escaped(rng, c) } else { c.to_string() }).collect();
    if key == "origins" && rng.one_in(2) {
        // The same origin twice, and spaces around the commas, are read as once.
        let first = v.split(',').next().unwrap_or_default().to_string();
        v = format!("{v} , {first}");
    }
    v
}

/// `l` spelt another way the reader takes: same state, no notice.
fn respell(rng: &mut Rng, l: &Link) -> String {
    let text = format(l);
    let (path, query) = text.split_once('?').unwrap_or((&text, ""));
    let mut path = path.to_string();
    if rng.one_in(3) {
        path = path.trim_start_matches('#').to_string();
    }
    if rng.one_in(3) {
        path = path.replace('/', "//");
    }
    if rng.one_in(3) {
        path.push('/');
    }
    let mut pairs: Vec<String> = query.split('&').filter(|p| !p.is_empty()).map(String::from).collect();
    for i in (1..pairs.len()).rev() {
        pairs.swap(i, rng.below(i + 1));
    }
    let mut out: Vec<String> = pairs
        .iter()
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            format!("{k}={}", respell_value(rng, &l.scenario, k, v))
        })
        .collect();
    if rng.one_in(3) {
        out.insert(rng.below(out.len() + 1), rng.pick(&["", "=", "=x"]).to_string());
    }
    format!("{path}?{}", out.join("&"))
}

fn noise(rng: &mut Rng) -> String {
    (0..rng.below(300))
        .map(|_| match rng.below(6) {
            0 => *rng.pick(&['#', '/', '?', '&', '=', '%']),
            1 => *rng.pick(UNICODE),
            2 => char::from_u32(rng.below(0x3000) as u32).unwrap_or('?'),
            _ => char::from(32 + rng.below(95) as u8),
        })
        .collect()
}

fn make(seed: u64, index: u64) -> Case {
    let mut rng = Rng::for_case(seed, index);
    let counter = if index.is_multiple_of(100) {
        Counter::Built
    } else if rng.one_in(8) {
        Counter::Any
    } else {
        Counter::Fixed
    };
    let mut l = links::link(&mut rng);
    if counter == Counter::Built {
        // A step of the scenario built with these parameters.
        let steps = scenarios::build(&l.scenario, &l.params).map_or(1, |s| s.steps.len());
        l.step = rng.below(steps);
    }
    if rng.one_in(10) {
        let i = rng.below(REAL.len());
        let text = if rng.one_in(2) { REAL[i].to_string() } else { mutate(&mut rng, REAL[i]) };
        let kind = if text == REAL[i] { Kind::Real } else { Kind::Mutated };
        return Case { text, kind, counter, expect: None };
    }
    let (kind, text, expect) = match rng.below(10) {
        0..=2 => (Kind::Valid, format(&l), Some(l)),
        3 | 4 => (Kind::Respelled, respell(&mut rng, &l), Some(l)),
        5..=8 => (Kind::Mutated, mutate(&mut rng, &format(&l)), None),
        _ => (Kind::Noise, noise(&mut rng), None),
    };
    Case { text, kind, counter, expect }
}

fn check(c: &Case) -> Result<&'static str, String> {
    let p = read(c.counter, &c.text);
    if let Some(m) = p.problems.iter().find(|m| m.chars().any(char::is_control)) {
        return Err(format!("a notice carries a control character: {m:?}"));
    }
    if let Some(l) = &c.expect {
        if p.link != *l || !p.problems.is_empty() {
            return Err(format!("a valid link of {:?} read as {:?}, notices {:?}", format(l), p.link, p.problems));
        }
    }
    if let (Kind::Real, Some(i)) = (c.kind, REAL[..CLEAN].iter().position(|r| *r == c.text)) {
        if parts(&format(&p.link)) != parts(REAL[i]) || !p.problems.is_empty() {
            return Err(format!("{:?} read as {:?} (formatted {:?}), notices {:?}", REAL[i], p.link, format(&p.link), p.problems));
        }
    }
    let again = format(&p.link);
    let q = read(c.counter, &again);
    if q.link != p.link || !q.problems.is_empty() {
        return Err(format!("read as {:?}, formatted as {again:?}, read again as {:?}, notices {:?}", p.link, q.link, q.problems));
    }
    Ok(match (c.kind, p.problems.is_empty()) {
        (Kind::Real, true) => "links of the README and tests read without a notice",
        (Kind::Real, false) => "links of the README and tests read with notices",
        (Kind::Valid, _) => "valid links read back",
        (Kind::Respelled, _) => "respelled links read back",
        (Kind::Mutated, true) => "mutated links read without a notice",
        (Kind::Mutated, false) => "mutated links read with notices",
        (Kind::Noise, true) => "random texts read without a notice",
        (Kind::Noise, false) => "random texts read with notices",
    })
}

fn show(c: &Case) -> String {
    format!("{:?} (steps counted: {:?})", c.text, c.counter)
}

fn main() {
    fuzzing::run(Fuzzer { name: "link-fuzz", make, check, show }, Options::from_args(1_000_000, 1));
}
