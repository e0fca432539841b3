//! Fuzzes the readers of other windows' messages natively: the host
//! page's `postMessage` commands (`embed::protocol::parse`, and
//! `protocol::resolve` for a `kubehops:set`) and the presenter channel's
//! (`embed::presenter::Sync::parse`, and `presenter::adopt` for a state).
//! The page converts a message to `protocol::Data` (src/embed.rs: depth 4,
//! 32 fields or items, 200 values, texts of 4,096 bytes) and hands it to
//! these; the cases are such data, and some past those bounds.
//!
//! Each case, drawn from the seed and its index, is one of:
//! - a valid message of every type (`get`, `set` with any of its fields,
//!   `next`, `previous`; `hello`, `sync`), fields in any order, values at
//!   their limits (an `id` of 64 characters or ±(2^53 − 1), a scenario of
//!   256 characters, step 10,000, a mode of 256 bytes, hop `-0`);
//! - a valid message broken once: an unknown field (up to 2,000 of them,
//!   or values nested 40 deep), a field twice, a wrong or missing version
//!   or type, a value of the wrong type or out of range (NaN, ±∞, 0.5,
//!   2^53, 257 bytes, control characters), a `set` with nothing to set,
//!   the message wrapped in a list or a map;
//! - random data of the protocol's words and numbers, within the page's
//!   bounds and past them;
//! - the page's own events and presenter messages with random contents;
//! - a host message as JSON text (the commands the e2e tests send, or a
//!   valid message written out), as it is or mutated at the character
//!   level (JSON tokens, cuts, a key twice, numbers past 2^53, long
//!   strings, deep nesting); parsed as `JSON.parse` would (serde_json)
//!   and converted as src/embed.rs's `to_data` does (the same bounds),
//!   then read by the host reader.
//!
//! A case fails when a reader panics, runs longer than the timeout, or
//! breaks what `protocol.rs` and `presenter.rs` promise: a valid message
//! reads as what it says; a message of any other shape is ignored (`None`);
//! whatever is read reads the same when written again; the page's own
//! messages are never read as commands; a `set` resolves, against a random
//! state, to a link that reads back as itself with no notice, keeping the
//! display and taking the step and hop asked for, or to an error without
//! control characters; a presenter's state is adopted as a link that reads
//! back as the state sent with this window's display; a command the e2e
//! tests send reads as a command of its own `type`, with its own `id`.
//!
//!     cargo run --release -p kubehops-core --example embed_fuzz -- [cases] [seed] [--threads N] [--timeout S] [--case N]

mod fuzzing;

use fuzzing::{links, Fuzzer, Options, Rng};
use kubehops_core::embed::presenter::{self, Sync};
use kubehops_core::embed::protocol::{self, Command, Data, Event, Id, Request, Set, State, MAX_TEXT};
use kubehops_core::embed::Display;
use kubehops_core::link::{self, HopPos, Link};
use kubehops_core::scenarios::{Params, CATALOG};

/// What the case's data must read as.
#[derive(Debug)]
enum Expect {
    Command(Request),
    Sync(Sync),
    /// Not one of the reader's shapes.
    Ignored,
    /// Random data: anything, as long as what is read is consistent.
    Any,
    /// A real command unchanged: read, as a command of this type.
    Real(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reader {
    Host,
    Presenter,
}

struct Case {
    /// The JSON text the data was converted from, if any.
    json: Option<String>,
    reader: Reader,
    data: Data,
    expect: Expect,
    /// The state shown when a `set` comes, and this window's display.
    current: Link,
    own: Display,
    /// Whether steps are counted (a fixed count per scenario) or any is taken.
    any_step: bool,
}

const SAFE: f64 = 9_007_199_254_740_991.0;

/// Text of `n` characters drawn from `chars`.
fn text(rng: &mut Rng, chars: &[char], n: usize) -> String {
    (0..n).map(|_| *rng.pick(chars)).collect()
}

const WORD: &[char] = &['a', 'z', 'A', '0', '9', '-', 'é', '😀', ' ', '_', '.', ':'];
const ID_CHARS: &[char] = &['a', 'z', 'A', 'Z', '0', '9', '-'];

fn request(rng: &mut Rng) -> Request {
    let id = match rng.below(4) {
        0 => {
            let any = rng.below(1 << 40) as f64;
            Some(Id::Num(*rng.pick(&[0.0, -0.0, 1.0, 7.0, -3.0, SAFE, -SAFE, any])))
        }
        1 => {
            let n = if rng.one_in(4) { 64 } else { rng.below(64) };
            Some(Id::Text(text(rng, WORD, n)))
        }
        _ => None,
    };
    let command = match rng.below(5) {
        0 => Command::Get,
        1 => Command::Next,
        2 => Command::Previous,
        _ => Command::Set(set(rng)),
    };
    Request { id, command }
}

fn set(rng: &mut Rng) -> Set {
    let mut s = Set::default();
    if rng.one_in(3) {
        s.scenario = Some(match rng.below(3) {
            0 => {
                let n = 1 + rng.below(MAX_TEXT);
                text(rng, ID_CHARS, n)
            }
            _ => rng.pick(CATALOG).id.to_string(),
        });
    }
    if rng.one_in(3) {
        let any = 1 + rng.below(10_000);
        s.step = Some(*rng.pick(&[1, 2, 3, 5, 10, 10_000, any]));
    }
    if rng.one_in(3) {
        let any = rng.below(10_001);
        s.hop = Some(if rng.one_in(3) { HopPos::End } else { HopPos::After(*rng.pick(&[0, 1, 3, 10_000, any])) });
    }
    if rng.one_in(3) {
        s.playing = Some(rng.one_in(2));
    }
    s.mode = rng.one_in(3).then(|| choice_text(rng, &["iptables", "nftables", "ipvs"]));
    s.network = rng.one_in(3).then(|| choice_text(rng, &["routed", "vxlan", "geneve"]));
    s.handshake = rng.one_in(3).then(|| rng.one_in(2));
    if s == Set::default() {
        s.playing = Some(rng.one_in(2));
    }
    s
}

/// A value for `mode` or `network`: mostly one of `words`, else any text
/// of at most 256 bytes (control characters too: the reader takes any).
fn choice_text(rng: &mut Rng, words: &[&str]) -> String {
    match rng.below(5) {
        0 => "é".repeat(MAX_TEXT / 2),
        1 => {
            let n = rng.below(MAX_TEXT / 2);
            text(rng, &['a', '\n', '\u{0}', 'é', '%', '&'], n)
        }
        2 => String::new(),
        _ => rng.pick(words).to_string(),
    }
}

fn kind_of(c: &Command) -> &'static str {
    match c {
        Command::Get => "kubehops:get",
        Command::Set(_) => "kubehops:set",
        Command::Next => "kubehops:next",
        Command::Previous => "kubehops:previous",
    }
}

/// The message's fields as a host writes them.
fn encode(r: &Request) -> Vec<(String, Data)> {
    let mut m = vec![("type".to_string(), Data::Text(kind_of(&r.command).into())), ("version".to_string(), Data::Num(1.0))];
    match &r.id {
        Some(Id::Num(n)) => m.push(("id".into(), Data::Num(*n))),
        Some(Id::Text(t)) => m.push(("id".into(), Data::Text(t.clone()))),
        None => {}
    }
    let Command::Set(s) = &r.command else { return m };
    let mut put = |k: &str, v: Option<Data>| m.extend(v.map(|v| (k.to_string(), v)));
    put("scenario", s.scenario.clone().map(Data::Text));
    put("step", s.step.map(|n| Data::Num(n as f64)));
    put("hop", s.hop.map(|h| match h {
        HopPos::End => Data::Text("end".into()),
        HopPos::After(n) => Data::Num(n as f64),
    }));
    put("playing", s.playing.map(Data::Bool));
    put("mode", s.mode.clone().map(Data::Text));
    put("network", s.network.clone().map(Data::Text));
    put("handshake", s.handshake.map(Data::Bool));
    m
}

fn shuffle<T>(rng: &mut Rng, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
}

fn allowed(kind: &str) -> &'static [&'static str] {
    if kind == "kubehops:set" {
        &["type", "version", "id", "scenario", "step", "hop", "playing", "mode", "network", "handshake"]
    } else {
        &["type", "version", "id"]
    }
}

/// Values no field of the protocol takes in that place.
fn wrong(rng: &mut Rng, key: &str) -> Data {
    let (nan, inf, t) = (f64::NAN, f64::INFINITY, |s: &str| Data::Text(s.to_string()));
    let options: Vec<Data> = match key {
        "type" => ["kubehops:GET", "kubehops:set ", "kubehops:height", "kubehops:state", "kubehops:sync", "kubehops:hello", "", "kubehops:", "iframe-resizer"].map(t).into_iter().chain([Data::Null, Data::Num(1.0)]).collect(),
        "version" => vec![Data::Num(2.0), Data::Num(1.000_000_000_000_000_2), Data::Num(0.999_999_999_999_999_9), Data::Num(-1.0), t("1"), Data::Bool(true), Data::Null, Data::List(vec![Data::Num(1.0)]), Data::Num(nan), Data::Num(inf)],
        "id" => vec![Data::Map(vec![]), Data::List(vec![]), Data::Bool(true), Data::Null, Data::Num(0.5), Data::Num(nan), Data::Num(-inf), Data::Num(SAFE + 1.0), Data::Num(-SAFE - 1.0), t(&"x".repeat(65)), t(&"é".repeat(65)), t("a\nb"), t("\u{0}"), t("\u{85}")],
        "scenario" => vec![t(""), t(&"a".repeat(MAX_TEXT + 1)), t("../evil"), t("é"), t("a b"), t("javascript:alert(1)"), t("local_lab"), Data::Num(1.0), Data::Null, Data::Bool(true)],
        "step" => vec![Data::Num(0.0), Data::Num(-0.0), Data::Num(-1.0), Data::Num(1.5), Data::Num(10_001.0), Data::Num(nan), Data::Num(inf), Data::Num(1e300), t("2"), Data::Null, Data::Bool(true)],
        "hop" => vec![t("start"), t("END"), t(""), Data::Num(-1.0), Data::Num(0.5), Data::Num(10_001.0), Data::Num(nan), Data::Num(-inf), Data::Bool(false), Data::Null],
        "playing" | "handshake" => vec![Data::Num(1.0), Data::Num(0.0), t("true"), Data::Null, Data::List(vec![Data::Bool(true)])],
        _ => vec![Data::Bool(true), Data::Num(1.0), Data::Null, t(&"a".repeat(MAX_TEXT + 1)), t(&"é".repeat(MAX_TEXT / 2 + 1)), Data::List(vec![t("nftables")])],
    };
    rng.pick(&options).clone()
}

/// Field names no message of the protocol has.
const UNKNOWN: &[&str] = &["url", "html", "Type", "type ", "id2", "", "__proto__", "constructor", "kubehops:set", "state", "message", "height", "from", "link", "done", "data"];

/// A value nested `depth` deep, or `width` wide.
fn nested(depth: usize, width: usize) -> Data {
    let leaf = Data::List((0..width).map(|i| Data::Num(i as f64)).collect());
    (0..depth).fold(leaf, |d, i| if i % 2 == 0 { Data::List(vec![d]) } else { Data::Map(vec![("k".into(), d)]) })
}

/// Breaks a valid host message once; each way leaves a shape the reader
/// must ignore.
fn break_request(rng: &mut Rng, r: &Request) -> Data {
    let kind = kind_of(&r.command);
    let mut m = encode(r);
    let setting = |k: &str| !["type", "version", "id"].contains(&k);
    match rng.below(8) {
        0 => {
            let keys: Vec<&str> = UNKNOWN.iter().chain(allowed("kubehops:set")).filter(|k| !allowed(kind).contains(k)).copied().collect();
            let value = if rng.one_in(4) { nested(rng.below(40), rng.below(40)) } else { wrong(rng, "id") };
            m.push((rng.pick(&keys).to_string(), value));
        }
        1 => {
            let (k, v) = rng.pick(&m).clone();
            let v = if rng.one_in(2) { v } else { wrong(rng, &k) };
            m.insert(rng.below(m.len() + 1), (k, v));
        }
        2 | 3 => {
            let key = if rng.one_in(2) { "version" } else { "type" };
            m.retain(|(k, _)| k != key);
            if rng.below(4) != 0 {
                m.push((key.to_string(), wrong(rng, key)));
            }
        }
        4 => {
            let i = rng.below(m.len());
            m[i].1 = wrong(rng, &m[i].0.clone());
        }
        5 if kind == "kubehops:set" => m.retain(|(k, _)| !setting(k)),
        6 => {
            let whole = Data::Map(m);
            return rng.pick(&[Data::List(vec![whole.clone()]), Data::Map(vec![("data".into(), whole)]), Data::Text(format!("{{\"type\":\"{kind}\",\"version\":1}}")), Data::Null]).clone();
        }
        _ => {
            // Unknown fields up to the page's 32, or past it.
            let n = if rng.one_in(2) { 32usize.saturating_sub(m.len()).max(1) } else { 33 + rng.below(2000) };
            m.extend((0..n).map(|i| (format!("x{i}"), Data::Null)));
        }
    }
    shuffle(rng, &mut m);
    Data::Map(m)
}

/// Words and numbers of the protocol, for random data that sometimes
/// takes a valid shape.
const KEYS: &[&str] = &["type", "version", "id", "scenario", "step", "hop", "playing", "mode", "network", "handshake", "from", "link", "done", "x"];
const TEXTS: &[&str] = &["kubehops:get", "kubehops:set", "kubehops:next", "kubehops:previous", "kubehops:hello", "kubehops:sync", "end", "main", "notes", "#/", "#/service-types/2", "nftables", "vxlan", "local-lab", ""];
const NUMS: &[f64] = &[0.0, -0.0, 1.0, 2.0, 3.0, 0.5, -1.0, 10_000.0, 10_001.0, SAFE, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE, 1e300];

/// Random data; `bounds` are the page's (depth, width, values, text bytes).
fn random(rng: &mut Rng, depth: usize, bounds: (usize, usize, usize), budget: &mut usize) -> Data {
    *budget = budget.saturating_sub(1);
    let leaf = depth == 0 || *budget == 0;
    match rng.below(if leaf { 4 } else { 7 }) {
        0 => Data::Null,
        1 => Data::Bool(rng.one_in(2)),
        2 => Data::Num(if rng.one_in(2) { *rng.pick(NUMS) } else { rng.below(20) as f64 }),
        3 if rng.one_in(10) => {
            let n = rng.below(bounds.2 / 4);
            Data::Text(text(rng, WORD, n))
        }
        3 => Data::Text(rng.pick(TEXTS).to_string()),
        4 => Data::List((0..rng.below(bounds.1 + 1)).map(|_| random(rng, depth - 1, bounds, budget)).collect()),
        _ => Data::Map((0..rng.below(bounds.1.min(12) + 1)).map(|_| (rng.pick(KEYS).to_string(), random(rng, depth - 1, bounds, budget))).collect()),
    }
}

fn noise(rng: &mut Rng) -> Data {
    // (depth, width, text bytes) and values: the page's, or past them.
    let (depth, bounds, mut budget) = if rng.one_in(10) { (40, (40, 300, 100_000), 5000) } else { (4, (4, 32, 4096), 200) };
    let mut d = random(rng, depth, bounds, &mut budget);
    if let (Data::Map(m), true) = (&mut d, rng.one_in(2)) {
        // A head that makes the rest matter.
        m.insert(0, ("type".into(), Data::Text(rng.pick(TEXTS).to_string())));
        m.insert(rng.below(m.len() + 1), ("version".into(), Data::Num(1.0)));
    }
    d
}

fn sync(rng: &mut Rng) -> Sync {
    if rng.one_in(4) {
        return Sync::Hello;
    }
    // Links of at most 2,048 bytes (4 bytes a character at most).
    let link = match rng.below(4) {
        0 => {
            let n = rng.below(511);
            format!("#/{}", text(rng, WORD, n))
        }
        1 => format!("#/{}", "a".repeat(2046)),
        _ => Some(link::format(&links::link(rng))).filter(|l| l.len() <= 2048).unwrap_or_else(|| "#/local-lab/2".into()),
    };
    let any = rng.below(10_001);
    Sync::State { from_notes: rng.one_in(2), link, done: *rng.pick(&[0, 1, 10_000, any]) }
}

fn sync_fields(s: &Sync) -> Vec<(String, Data)> {
    match s.data() {
        Data::Map(m) => m,
        _ => unreachable!("a presenter message is a map"),
    }
}

/// Breaks a valid presenter message once.
fn break_sync(rng: &mut Rng, s: &Sync) -> Data {
    let mut m = sync_fields(s);
    let t = |s: &str| Data::Text(s.to_string());
    match rng.below(5) {
        0 => m.push((rng.pick(UNKNOWN).to_string(), Data::Null)),
        1 => {
            let i = rng.below(m.len());
            m.remove(i);
        }
        2 => {
            let i = rng.below(m.len());
            m[i].1 = match m[i].0.as_str() {
                // The host's wrong types include the presenter's two.
                "type" => match wrong(rng, "type") {
                    Data::Text(k) if k == "kubehops:hello" || k == "kubehops:sync" => Data::Null,
                    d => d,
                },
                "version" => wrong(rng, "version"),
                "from" => rng.pick(&[t("Notes"), t(""), Data::Bool(true), Data::Null]).clone(),
                "link" => rng.pick(&[t("/service-types"), t(""), t(&format!("#/{}", "a".repeat(2047))), t("https://evil.example/#/x"), Data::Null]).clone(),
                _ => rng.pick(&[Data::Num(f64::NAN), Data::Num(0.5), Data::Num(-1.0), Data::Num(10_001.0), t("3"), Data::Num(f64::INFINITY)]).clone(),
            };
        }
        3 => {
            // A field twice in place of another: one the message needs is gone.
            let i = rng.below(m.len());
            let j = (i + 1 + rng.below(m.len() - 1)) % m.len();
            m[j] = m[i].clone();
        }
        _ => return Data::List(vec![Data::Map(m)]),
    }
    shuffle(rng, &mut m);
    Data::Map(m)
}

/// The page's own messages, with random contents: never commands.
fn own_event(rng: &mut Rng) -> Data {
    let mut words = || text(rng, WORD, 20);
    let state = State { scenario: words(), title: words(), step: 1, steps: 3, hop: 0, hops: 2, playing: true, link: words() };
    let id = Some(Id::Text(text(rng, WORD, 5)));
    let e = match rng.below(6) {
        0 => Event::Ready(state),
        1 => Event::Change(state),
        2 => Event::State(id, state),
        3 => Event::Error(id, text(rng, WORD, 30)),
        4 => Event::Height(rng.next_u64() as u32),
        _ => return protocol::Event::Error(None, String::new()).data(),
    };
    e.data()
}

fn make(seed: u64, index: u64) -> Case {
    let mut rng = Rng::for_case(seed, index);
    let (current, own, any_step) = (links::link(&mut rng), links::display(&mut rng), rng.one_in(4));
    let (reader, data, expect) = match rng.below(20) {
        0..=5 => {
            let r = request(&mut rng);
            let mut m = encode(&r);
            shuffle(&mut rng, &mut m);
            (Reader::Host, Data::Map(m), Expect::Command(r))
        }
        6..=10 => {
            let r = request(&mut rng);
            (Reader::Host, break_request(&mut rng, &r), Expect::Ignored)
        }
        11..=12 => {
            let s = sync(&mut rng);
            let mut m = sync_fields(&s);
            shuffle(&mut rng, &mut m);
            (Reader::Presenter, Data::Map(m), Expect::Sync(s))
        }
        13..=14 => {
            let s = sync(&mut rng);
            (Reader::Presenter, break_sync(&mut rng, &s), Expect::Ignored)
        }
        15 => (*rng.pick(&[Reader::Host, Reader::Presenter]), own_event(&mut rng), Expect::Ignored),
        16 | 17 => {
            let (text, expect) = json_case(&mut rng);
            let data = from_json(&text);
            return Case { json: Some(text), reader: Reader::Host, data, expect, current, own, any_step };
        }
        _ => (*rng.pick(&[Reader::Host, Reader::Presenter]), noise(&mut rng), Expect::Any),
    };
    Case { json: None, reader, data, expect, current, own, any_step }
}

fn check(c: &Case) -> Result<&'static str, String> {
    let outcome = match c.reader {
        Reader::Host => check_host(c)?,
        Reader::Presenter => check_presenter(c)?,
    };
    // JSON cases are counted apart.
    Ok(match (&c.json, &c.data, outcome) {
        (None, ..) => outcome,
        (Some(_), Data::Null, _) => "JSON texts that do not parse or pass the page's bounds",
        (Some(_), _, "broken or foreign host messages ignored" | "random data ignored by the host reader") => "JSON messages ignored",
        (Some(_), _, "sets refused with an error") => "JSON sets refused with an error",
        (Some(_), ..) => "JSON messages read",
    })
}

fn check_host(c: &Case) -> Result<&'static str, String> {
    let got = protocol::parse(&c.data);
    match (&c.expect, &got) {
        (Expect::Command(want), Some(r)) if want == r => {}
        (Expect::Real(kind), Some(r)) if kind_of(&r.command) == *kind && field(&c.data, "id").map(|d| format!("{d:?}")) == r.id.as_ref().map(id_data) => {}
        (Expect::Real(kind), _) => return Err(format!("a command the e2e tests send ({kind}) read as {got:?}")),
        (Expect::Command(want), _) => return Err(format!("a valid message read as {got:?}, not {want:?}")),
        (Expect::Ignored, Some(r)) => return Err(format!("a message outside the protocol read as {r:?}")),
        _ => {}
    }
    let Some(r) = got else { return Ok(if matches!(c.expect, Expect::Any) { "random data ignored by the host reader" } else { "broken or foreign host messages ignored" }) };
    let again = protocol::parse(&Data::Map(encode(&r)));
    if again.as_ref() != Some(&r) {
        return Err(format!("read as {r:?}, written again and read as {again:?}"));
    }
    let Command::Set(set) = &r.command else { return Ok("get, next and previous read") };
    check_resolve(c, set)
}

/// A `set` against the state shown: a link that reads back as itself,
/// or an error in plain words.
fn check_resolve(c: &Case, set: &Set) -> Result<&'static str, String> {
    let steps = |id: &str, p: &Params| if c.any_step { usize::MAX } else { links::steps(id, p) };
    let (target, play) = match protocol::resolve(set, &c.current, steps) {
        Err(m) if m.is_empty() || m.chars().any(char::is_control) => return Err(format!("resolving {set:?} gave the error {m:?}")),
        Err(_) => return Ok("sets refused with an error"),
        Ok(t) => t,
    };
    let kept = play == set.playing && target.display == c.current.display;
    let stepped = set.step.is_none_or(|s| target.step == s - 1) && set.hop.is_none_or(|h| target.hop == Some(h));
    if !kept || !stepped {
        return Err(format!("{set:?} on {:?} resolved to {target:?}, playing {play:?}", link::format(&c.current)));
    }
    let text = link::format(&target);
    let back = link::parse_with(&text, CATALOG, steps);
    if back.link != target || !back.problems.is_empty() {
        return Err(format!("{set:?} resolved to {target:?}, formatted {text:?}, read back as {:?}, notices {:?}", back.link, back.problems));
    }
    Ok("sets resolved to a link that reads back")
}

fn check_presenter(c: &Case) -> Result<&'static str, String> {
    let got = Sync::parse(&c.data);
    match (&c.expect, &got) {
        (Expect::Sync(want), Some(s)) if want == s => {}
        (Expect::Sync(want), _) => return Err(format!("a valid presenter message read as {got:?}, not {want:?}")),
        (Expect::Ignored, Some(s)) => return Err(format!("a message outside the presenter's read as {s:?}")),
        _ => {}
    }
    let Some(s) = got else { return Ok(if matches!(c.expect, Expect::Any) { "random data ignored by the presenter reader" } else { "broken or foreign presenter messages ignored" }) };
    if Sync::parse(&s.data()).as_ref() != Some(&s) || protocol::parse(&s.data()).is_some() {
        return Err(format!("{s:?} does not read back as itself alone"));
    }
    let Sync::State { link: sent, .. } = &s else { return Ok("presenter hellos read") };
    let mut want = link::parse_with(sent, CATALOG, |_, _| usize::MAX).link;
    want.display = c.own.clone();
    let adopted = presenter::adopt(sent, &c.own);
    let back = link::parse_with(&adopted, CATALOG, |_, _| usize::MAX);
    if back.link != want || !back.problems.is_empty() {
        return Err(format!("{sent:?} adopted as {adopted:?}, read back as {:?}, notices {:?}", back.link, back.problems));
    }
    Ok("presenter states read and adopted")
}

fn show(c: &Case) -> String {
    let from = c.json.as_ref().map_or(String::new(), |j| format!("JSON {j:?} as "));
    from + &format!("{:?} to the {:?} reader, expected {:?}; shown {:?}, steps {}", c.data, c.reader, c.expect, link::format(&c.current), if c.any_step { "any" } else { "counted" })
}

fn main() {
    fuzzing::run(Fuzzer { name: "embed-fuzz", make, check, show }, Options::from_args(1_000_000, 1));
}

/// Host commands as tests/e2e/embed.mjs and the README send them.
const REAL: &[(&str, &str)] = &[
    ("kubehops:get", r#"{"type":"kubehops:get","version":1,"id":"q1"}"#),
    ("kubehops:get", r#"{"type":"kubehops:get","version":1,"id":1}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"id":2,"step":3,"hop":"end"}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"step":4,"hop":"end"}"#),
    ("kubehops:next", r#"{"type":"kubehops:next","version":1}"#),
    ("kubehops:previous", r#"{"type":"kubehops:previous","version":1}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"playing":true}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"playing":false}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"scenario":"service-types","step":2,"hop":"end","id":"sc"}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"network":"vxlan","id":"net"}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"network":"geneve","id":"badnet"}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"scenario":"local-lab","step":2,"id":"first"}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"scenario":"nodeport-loadbalancer","step":2,"id":"second"}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"scenario":"service-types","step":2,"network":"vxlan","id":"back"}"#),
    ("kubehops:set", r#"{"type":"kubehops:set","version":1,"step":99,"id":"bad"}"#),
    ("kubehops:set", r#"{ "type": "kubehops:set", "version": 1, "mode": "nftables", "handshake": true }"#),
];

fn field<'a>(d: &'a Data, key: &str) -> Option<&'a Data> {
    let Data::Map(m) = d else { return None };
    m.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// The data of an id as the reader keeps it, for comparing with the message's.
fn id_data(id: &Id) -> String {
    match id {
        Id::Num(n) => format!("{:?}", Data::Num(*n)),
        Id::Text(t) => format!("{:?}", Data::Text(t.clone())),
    }
}

/// Data written as JSON (a valid message has no NaN or infinity).
fn to_json(d: &Data) -> serde_json::Value {
    use serde_json::Value as J;
    match d {
        Data::Null => J::Null,
        Data::Bool(b) => J::Bool(*b),
        // Whole numbers as `JSON.stringify` writes them, with no `.0`
        // (serde_json reads those exactly; its `1.0` forms may round).
        Data::Num(n) if n.fract() == 0.0 && n.abs() < 9.0e18 => J::from(*n as i64),
        Data::Num(n) => serde_json::Number::from_f64(*n).map_or(J::Null, J::Number),
        Data::Text(t) => J::String(t.clone()),
        Data::List(l) => J::Array(l.iter().map(to_json).collect()),
        Data::Map(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

/// A JSON text as `JSON.parse` reads it and src/embed.rs's `to_data`
/// converts it: depth 4, 32 items or fields, 200 values, texts of 4,096
/// bytes; anything past those, or text that does not parse, is `Null`
/// (the page never hands it to the reader).
fn from_json(text: &str) -> Data {
    fn convert(v: &serde_json::Value, depth: u32, budget: &mut u32) -> Option<Data> {
        use serde_json::Value as J;
        *budget = budget.checked_sub(1)?;
        Some(match v {
            J::Null => Data::Null,
            J::Bool(b) => Data::Bool(*b),
            J::Number(n) => Data::Num(n.as_f64()?),
            J::String(s) => return (s.len() <= 4096).then(|| Data::Text(s.clone())),
            _ if depth == 0 => return None,
            J::Array(a) if a.len() > 32 => return None,
            J::Array(a) => Data::List(a.iter().map(|x| convert(x, depth - 1, budget)).collect::<Option<_>>()?),
            J::Object(m) if m.len() > 32 => return None,
            J::Object(m) => Data::Map(m.iter().map(|(k, x)| Some((k.clone(), convert(x, depth - 1, budget)?))).collect::<Option<_>>()?),
        })
    }
    serde_json::from_str::<serde_json::Value>(text).ok().and_then(|v| convert(&v, 4, &mut 200)).unwrap_or(Data::Null)
}

/// JSON tokens, and pieces of the protocol's messages.
const JSON_PIECES: &[&str] = &[
    "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u0000", "\\ud800", "\\n", "null", "true", "false", "-0", "0.5", "1e999", "-1e999", "1e-400",
    "9007199254740993", "18446744073709551616", "1.0000000000000002", " ", "\n", "\"type\":\"kubehops:set\",", "\"version\":1,", "\"version\":2,",
    "\"version\":\"1\",", "\"step\":", "\"hop\":\"end\",", "\"hop\":", "\"id\":", "\"scenario\":\"local-lab\",", "\"mode\":\"nftables\",",
    "\"network\":\"vxlan\",", "\"handshake\":true,", "\"playing\":false,", "\"__proto__\":{},", "\"x\":[[[[[1]]]]],", "é", "😀", "\u{0}",
];

/// A real or written-out host message as JSON, maybe mutated, and what
/// it must read as.
fn json_case(rng: &mut Rng) -> (String, Expect) {
    let (text, expect) = if rng.one_in(2) {
        let (kind, text) = *rng.pick(REAL);
        (text.to_string(), Expect::Real(kind))
    } else {
        let r = request(rng);
        let mut m = encode(&r);
        shuffle(rng, &mut m);
        (to_json(&Data::Map(m)).to_string(), Expect::Command(r))
    };
    if rng.one_in(4) {
        return (text, expect);
    }
    let mut s: Vec<char> = text.chars().collect();
    let most = if rng.one_in(8) { 8 } else { 2 };
    for _ in 0..1 + rng.below(most) {
        let at = rng.below(s.len() + 1);
        match rng.below(6) {
            0 | 1 => drop(s.splice(at..at, rng.pick(JSON_PIECES).chars())),
            2 => drop(s.drain(at..(at + rng.below(12)).min(s.len()))),
            3 if at < s.len() => s[at] = char::from(32 + rng.below(95) as u8),
            4 => {
                let n = if rng.one_in(10) { rng.below(20_000) } else { rng.below(100) };
                let run = rng.pick(&["[", "{\"a\":", "a", "é", "\\n", "1"]).repeat(n);
                s.splice(at..at, run.chars());
            }
            _ => {
                // A key given a second time, with another value (`JSON.parse` keeps the last).
                let key = *rng.pick(&["type", "version", "id", "step", "hop", "scenario", "playing"]);
                let piece = format!(",\"{key}\":{}", rng.pick(&["1", "2", "\"end\"", "\"kubehops:get\"", "null", "true", "-0", "0.5"]));
                let end = s.iter().rposition(|c| *c == '}').unwrap_or(s.len());
                s.splice(end..end, piece.chars());
            }
        }
    }
    (s.into_iter().collect(), Expect::Any)
}
