//! Splitting a text into documents. JSON is recognised by its first
//! character (`{` or `[`), as kubectl does; anything else is YAML, with
//! `---` between documents.
//!
//! Reading a text into documents ([`documents`]) does no I/O and knows
//! nothing of the command line, so the CLI and the browser share it. It holds for
//! any input, however large or hostile:
//! - time is linear in the input: nesting deeper than [`MAX_DEPTH`] is
//!   refused as soon as the parser reaches it, with the file, line and
//!   column, before the parser's cost per level adds up;
//! - memory is the objects kept plus the largest one read: an object of a
//!   kind the caller skips (a document, or an item of a List) is cut down
//!   to its apiVersion, kind, name and namespace as soon as it is read;
//! - nothing is dropped silently: a key given twice, a tag the reader does
//!   not know, a number that is not finite, or aliases that expand beyond
//!   [`MAX_ALIAS_NODES_PER_EVENT`] are errors.
//!
//! YAML is read with saphyr-parser's events (YAML 1.2) and plain scalars
//! are resolved with the 1.2 core schema (`true`, `null`, `~`, `0x1F`,
//! `1e3`; `yes` stays a string); JSON with serde_json.

use crate::ReadError as Error;
use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Tag};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::fmt;

/// The deepest nesting of mappings and sequences read (a document's top
/// mapping is level 1). Kubernetes objects nest far less: a Pod about 10
/// levels, a CustomResourceDefinition's schema a few dozen. libyaml stops
/// at 1000 and serde_json at 128; this limit is below both so that every
/// input meets the same one, and low enough that refusing is instant.
pub const MAX_DEPTH: usize = 100;

/// YAML aliases copy what their anchor names. To keep a few bytes from
/// expanding into gigabytes ("billion laughs"), the copies of one input may
/// add at most this many nodes per parser event read so far (plus 10,000).
pub const MAX_ALIAS_NODES_PER_EVENT: usize = 10;

/// The text of one input, named as errors should name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// One document of an input, as a JSON value.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub source: String,
    /// 1-based position of the document in its input.
    pub index: usize,
    pub value: Value,
}

/// Which objects the caller wants whole, by apiVersion and kind; the
/// others are cut down as soon as they are read.
pub type Keep<'a> = &'a dyn Fn(&str, &str) -> bool;

/// Splits one input into documents, keeping every object whole. Empty
/// YAML documents (a stray `---`) are skipped. Syntax errors name the
/// input and the line.
pub fn documents(src: &Source) -> Result<Vec<Document>, Error> {
    documents_keeping(src, &|_, _| true)
}

/// [`documents`], with the objects `keep` refuses cut down to their
/// apiVersion, kind, `metadata.name` and `metadata.namespace`: top-level
/// documents, and the items of a document's `items` list.
pub fn documents_keeping(src: &Source, keep: Keep) -> Result<Vec<Document>, Error> {
    let trimmed = src.text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        json_documents(src, keep)
    } else {
        yaml_documents(src, keep)
    }
}

/// Where a value sits, for cutting down skipped objects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A document's top value.
    Top,
    /// The top mapping's `items`.
    Items,
    /// An element of `items`.
    Item,
    Other,
}

/// The value itself, or what is kept of an object `keep` refuses.
fn kept(v: Value, place: Place, keep: Keep) -> Value {
    if !matches!(place, Place::Top | Place::Item) {
        return v;
    }
    let Value::Object(m) = &v else { return v };
    let text = |k: &str| m.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (Some(api_version), Some(kind)) = (text("apiVersion"), text("kind")) else { return v };
    // A List is never cut: its items are what the caller reads.
    if kind.ends_with("List") || keep(api_version, kind) {
        return v;
    }
    let mut meta = Map::new();
    if let Some(Value::Object(md)) = m.get("metadata") {
        for k in ["name", "namespace"] {
            if let Some(s @ Value::String(_)) = md.get(k) {
                meta.insert(k.to_string(), s.clone());
            }
        }
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version.to_string()));
    out.insert("kind".into(), Value::String(kind.to_string()));
    out.insert("metadata".into(), Value::Object(meta));
    Value::Object(out)
}

// ---------------------------------------------------------------- JSON

fn json_documents(src: &Source, keep: Keep) -> Result<Vec<Document>, Error> {
    let error = |e: serde_json::Error| Error::Syntax { message: format!("error parsing {}: json: line {}, column {}: {}", src.name, e.line(), e.column(), json_message(&e)), line: e.line() };
    let mut de = serde_json::Deserializer::from_str(&src.text);
    let mut out = Vec::new();
    loop {
        let value = JsonSeed { depth: 1, place: Place::Top, keep }.deserialize(&mut de).map_err(error)?;
        out.push(Document { source: src.name.clone(), index: out.len() + 1, value });
        // `end` only looks ahead: at another value it fails and leaves the
        // deserializer there, ready to read it.
        if de.end().is_ok() {
            return Ok(out);
        }
    }
}

/// Reads one JSON value at nesting level `depth` (its own level when it is
/// a container).
struct JsonSeed<'k> {
    depth: usize,
    place: Place,
    keep: Keep<'k>,
}

impl<'de> DeserializeSeed<'de> for JsonSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        let (place, keep) = (self.place, self.keep);
        d.deserialize_any(self).map(|v| kept(v, place, keep))
    }
}

impl<'de> Visitor<'de> for JsonSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Value, E> {
        Number::from_f64(x).map(Value::Number).ok_or_else(|| E::custom(format!("{x} is not a finite number")))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom(too_deep()));
        }
        // The elements of the top mapping's `items` are objects of a List.
        let place = if self.place == Place::Items { Place::Item } else { Place::Other };
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(JsonSeed { depth: self.depth + 1, place, keep: self.keep })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom(too_deep()));
        }
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("key {key:?} already set in map")));
            }
            let place = if self.place == Place::Top && key == "items" { Place::Items } else { Place::Other };
            let v = map.next_value_seed(JsonSeed { depth: self.depth + 1, place, keep: self.keep })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

fn too_deep() -> String {
    format!("exceeded max depth of {MAX_DEPTH} nested mappings and sequences")
}

/// serde_json's message without its own " at line L column C" suffix.
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(at) => s[..at].to_string(),
        None => s,
    }
}

// ---------------------------------------------------------------- YAML

/// A mapping or sequence being read.
enum Open {
    Seq(Vec<Value>),
    /// With the key read and waiting for its value.
    Map(Map<String, Value>, Option<String>),
}

struct Frame {
    open: Open,
    anchor: usize,
    place: Place,
}

/// An anchored value, with what copying it costs.
struct Anchored {
    value: Value,
    nodes: usize,
    depth: usize,
}

/// Builds documents from parser events, with an explicit stack (no
/// recursion, whatever the nesting).
struct YamlBuilder<'k> {
    keep: Keep<'k>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    events: usize,
    alias_nodes: usize,
    /// The finished top value of the current document.
    done: Option<Value>,
}

fn yaml_documents(src: &Source, keep: Keep) -> Result<Vec<Document>, Error> {
    let error = |m: Marker, msg: &str| {
        let (line, column) = position(&src.text, m);
        Error::Syntax { message: format!("error parsing {}: yaml: line {line}, column {column}: {msg}", src.name), line }
    };
    let mut b = YamlBuilder { keep, stack: Vec::new(), anchors: HashMap::new(), events: 0, alias_nodes: 0, done: None };
    let mut out = Vec::new();
    let mut index = 0;
    for ev in Parser::new_from_str(&src.text) {
        let (ev, span) = ev.map_err(|e| {
            // The scanner's own limit on flow nesting (255) can be met while
            // it looks ahead, before our count reaches MAX_DEPTH.
            let msg = if e.info() == "recursion limit exceeded" { too_deep() } else { e.info().to_string() };
            error(*e.marker(), &msg)
        })?;
        b.events += 1;
        match ev {
            Event::DocumentStart(_) => {
                index += 1;
                b.anchors.clear();
            }
            Event::DocumentEnd => {
                if let Some(value) = b.done.take().filter(|v| !v.is_null()) {
                    out.push(Document { source: src.name.clone(), index, value });
                }
            }
            ev => b.event(ev).map_err(|m| error(span.start, &m))?,
        }
    }
    Ok(out)
}

/// The 1-based line and column of a parser's marker. At the end of a text
/// that does not end with a line break, the scanner moves its marker to
/// the start of a line after the last, which the text does not have (an
/// editor could not mark it); the end of the last line is named instead.
fn position(text: &str, m: Marker) -> (usize, usize) {
    let open = !text.ends_with(['\n', '\r']);
    // Line breaks as YAML counts them: LF, CR, or CR LF as one.
    let breaks = text.matches(['\n', '\r']).count() - text.matches("\r\n").count();
    if open && m.col() == 0 && m.line() == breaks + 2 {
        let last = text.rsplit(['\n', '\r']).next().unwrap_or_default();
        return (breaks + 1, last.chars().count() + 1);
    }
    (m.line(), m.col() + 1)
}

impl YamlBuilder<'_> {
    fn event(&mut self, ev: Event) -> Result<(), String> {
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                if self.key_expected() {
                    // Keys are text, as for kubectl (`80: http` has the key "80").
                    return self.push(Value::String(text.into_owned()), anchor, 0, 1);
                }
                let v = scalar(&text, style, tag.as_deref())?;
                self.push(v, anchor, 0, 1)
            }
            Event::SequenceStart(anchor, tag) => self.open(Open::Seq(Vec::new()), anchor, tag.as_deref(), "seq"),
            Event::MappingStart(anchor, tag) => self.open(Open::Map(Map::new(), None), anchor, tag.as_deref(), "map"),
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            Event::Alias(id) => {
                let a = self.anchors.get(&id).ok_or("unknown anchor")?;
                let (value, nodes, depth) = (a.value.clone(), a.nodes, a.depth);
                self.alias_nodes += nodes;
                if self.alias_nodes > MAX_ALIAS_NODES_PER_EVENT * self.events + 10_000 {
                    return Err(format!("aliases expand to too many nodes (more than {MAX_ALIAS_NODES_PER_EVENT} per event read, plus 10000)"));
                }
                if self.key_expected() {
                    return match value {
                        Value::String(s) => self.push(Value::String(s), 0, 0, 1),
                        _ => Err("a mapping key must be text".into()),
                    };
                }
                self.push(value, 0, depth, nodes)
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart(_) | Event::DocumentEnd => Ok(()),
        }
    }

    /// The next value is a mapping key.
    fn key_expected(&self) -> bool {
        matches!(self.stack.last(), Some(Frame { open: Open::Map(_, None), .. }))
    }

    /// Where the next value goes.
    fn next_place(&self) -> Place {
        match self.stack.as_slice() {
            [] => Place::Top,
            [Frame { open: Open::Map(_, Some(k)), place: Place::Top, .. }, Frame { open: Open::Seq(_), .. }] if k == "items" => Place::Item,
            _ => Place::Other,
        }
    }

    fn open(&mut self, open: Open, anchor: usize, tag: Option<&Tag>, core: &str) -> Result<(), String> {
        if self.key_expected() {
            return Err("a mapping key must be text".into());
        }
        if let Some(t) = tag.filter(|t| !(t.is_yaml_core_schema() && t.suffix == core)) {
            return Err(format!("unsupported tag {}", shown(t)));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(too_deep());
        }
        let place = self.next_place();
        self.stack.push(Frame { open, anchor, place });
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        let Some(f) = self.stack.pop() else { return Err("unbalanced end of a collection".into()) };
        let v = match f.open {
            Open::Seq(items) => Value::Array(items),
            Open::Map(m, _) => Value::Object(m),
        };
        let v = kept(v, f.place, self.keep);
        let (depth, nodes) = if f.anchor != 0 { shape(&v) } else { (0, 0) };
        self.push(v, f.anchor, depth, nodes)
    }

    /// Puts a finished value where it belongs; `depth` and `nodes` are its
    /// shape, needed only when it is anchored or copied by an alias.
    fn push(&mut self, v: Value, anchor: usize, depth: usize, nodes: usize) -> Result<(), String> {
        if self.stack.len() + depth > MAX_DEPTH {
            return Err(too_deep());
        }
        if anchor != 0 {
            self.anchors.insert(anchor, Anchored { value: v.clone(), nodes, depth });
        }
        let Some(top) = self.stack.last_mut() else {
            self.done = Some(v);
            return Ok(());
        };
        match &mut top.open {
            Open::Seq(items) => items.push(v),
            Open::Map(m, key @ None) => {
                let Value::String(k) = v else { return Err("a mapping key must be text".into()) };
                if m.contains_key(&k) {
                    return Err(format!("key {k:?} already set in map"));
                }
                *key = Some(k);
            }
            Open::Map(m, key) => {
                if let Some(k) = key.take() {
                    m.insert(k, v);
                }
            }
        }
        Ok(())
    }
}

/// How deep a value nests and how many nodes it has.
fn shape(v: &Value) -> (usize, usize) {
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(a) => Box::new(a.iter()),
        Value::Object(m) => Box::new(m.values()),
        _ => return (0, 1),
    };
    children.map(shape).fold((1, 1), |(d, n), (cd, cn)| (d.max(cd + 1), n + cn))
}

/// A scalar's value: quoted and block scalars are text; plain ones are
/// resolved with the YAML 1.2 core schema. Core tags (`!!str`, `!!int`, …)
/// and the non-specific `!` say what to make of the text.
fn scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    let Some(tag) = tag else {
        return if style == ScalarStyle::Plain { plain(text) } else { Ok(Value::String(text.to_string())) };
    };
    let want = match (tag.is_yaml_core_schema(), tag.handle.as_str(), tag.suffix.as_str()) {
        (true, _, s) => s,
        // The non-specific tag `!`.
        (false, "", "!") => "str",
        _ => return Err(format!("unsupported tag {}", shown(tag))),
    };
    let v = match want {
        "str" => return Ok(Value::String(text.to_string())),
        "null" | "bool" | "int" | "float" => plain(text)?,
        _ => return Err(format!("unsupported tag {}", shown(tag))),
    };
    let fits = match (want, &v) {
        ("null", Value::Null) | ("bool", Value::Bool(_)) => true,
        ("int", Value::Number(n)) => n.is_i64() || n.is_u64(),
        ("float", Value::Number(_)) => true,
        _ => false,
    };
    if fits {
        Ok(v)
    } else {
        Err(format!("invalid value {text:?} for tag {}", shown(tag)))
    }
}

/// A tag as it is usually written: `!!int`, `!local`, `!<tag:verbatim>`.
fn shown(tag: &Tag) -> String {
    match tag.handle.as_str() {
        _ if tag.is_yaml_core_schema() => format!("!!{}", tag.suffix),
        "!" => format!("!{}", tag.suffix),
        "" => format!("!<{}>", tag.suffix),
        h => format!("{h}{}", tag.suffix),
    }
}

/// A plain scalar by the YAML 1.2 core schema.
fn plain(s: &str) -> Result<Value, String> {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    if let Some(n) = integer(s) {
        return Ok(n);
    }
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    let infinite = matches!(unsigned, ".inf" | ".Inf" | ".INF");
    if infinite || matches!(s, ".nan" | ".NaN" | ".NAN") {
        return Err(format!("{s} is not a finite number"));
    }
    if is_float(unsigned) {
        if let Some(n) = s.parse::<f64>().ok().and_then(Number::from_f64) {
            return Ok(Value::Number(n));
        }
        return Err(format!("{s} is not a finite number"));
    }
    Ok(Value::String(s.to_string()))
}

/// `[-+]?[0-9]+`, `0o[0-7]+` and `0x[0-9a-fA-F]+`. Integers beyond 64 bits
/// become floats, as they would in JSON.
fn integer(s: &str) -> Option<Value> {
    let (radix, digits, negative) = if let Some(h) = s.strip_prefix("0x") {
        (16, h, false)
    } else if let Some(o) = s.strip_prefix("0o") {
        (8, o, false)
    } else {
        let negative = s.starts_with('-');
        (10, s.strip_prefix(['-', '+']).unwrap_or(s), negative)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u128::from_str_radix(digits, radix).ok();
    match (negative, magnitude) {
        (false, Some(m)) if m <= u64::MAX as u128 => Some(Value::from(m as u64)),
        (true, Some(m)) if m <= i64::MAX as u128 + 1 => Some(Value::from((m as i128).wrapping_neg() as i64)),
        _ => format!("{}{digits}", if negative { "-" } else { "" }).parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number),
    }
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, without the sign.
fn is_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    mantissa_ok && exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn src(text: &str) -> Source {
        Source { name: "test.yaml".into(), text: text.into() }
    }

    #[test]
    fn yaml_streams_skip_empty_documents() {
        let docs = documents(&src("---\nkind: A\n---\n---\nkind: B\n...\n")).unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d.value["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["A", "B"]);
        assert_eq!(docs[1].index, 3);
    }

    #[test]
    fn json_objects_and_streams() {
        let docs = documents(&src("  {\"kind\": \"A\"}\n{\"kind\": \"B\"} [1]")).unwrap();
        assert_eq!(docs.iter().map(|d| d.value.clone()).collect::<Vec<_>>(), [json!({"kind": "A"}), json!({"kind": "B"}), json!([1])]);
        assert_eq!(docs[2].index, 3);
    }

    #[test]
    fn keys_given_twice_are_errors() {
        let e = documents(&src("kind: Service\nmetadata: {name: a}\nmetadata: {name: b}\n")).unwrap_err().to_string();
        assert_eq!(e, "error parsing test.yaml: yaml: line 3, column 1: key \"metadata\" already set in map");
        let e = documents(&src("{\"kind\": \"A\", \"kind\": \"B\"}")).unwrap_err().to_string();
        assert!(e.contains("key \"kind\" already set in map"), "{e}");
    }

    #[test]
    fn scalars_follow_the_yaml_1_2_core_schema() {
        let docs = documents(&src("a: [1, -2, 2.5, true, null, ~, 'x', yes, 0x1F, 0o17, 1e3, .5, '1', \"true\", 18446744073709551616, -9223372036854775808, 1.2.3, '', ]\nb:\nc: !!str 80\nd: ! 12\n")).unwrap();
        assert_eq!(
            docs[0].value,
            json!({"a": [1, -2, 2.5, true, null, null, "x", "yes", 31, 15, 1000.0, 0.5, "1", "true", 18446744073709551616.0, i64::MIN, "1.2.3", ""], "b": null, "c": "80", "d": "12"})
        );
        // Keys are text, whatever they look like.
        assert_eq!(documents(&src("80: http\ntrue: 1\n")).unwrap()[0].value, json!({"80": "http", "true": 1}));
        for bad in ["a: .inf\n", "a: -.Inf\n", "a: .nan\n", "a: 1e999\n"] {
            let e = documents(&src(bad)).unwrap_err().to_string();
            assert!(e.ends_with("is not a finite number"), "{bad}: {e}");
        }
        let e = documents(&src("a: !!int x\n")).unwrap_err().to_string();
        assert!(e.ends_with("invalid value \"x\" for tag !!int"), "{e}");
        let e = documents(&src("a: !custom x\n")).unwrap_err().to_string();
        assert!(e.contains("line 1, column 4: unsupported tag !custom"), "{e}");
        let e = documents(&src("? [a]\n: b\n")).unwrap_err().to_string();
        assert!(e.ends_with("a mapping key must be text"), "{e}");
    }

    #[test]
    fn anchors_and_aliases_copy_values_within_limits() {
        let docs = documents(&src("a: &x {p: 1}\nb: *x\nc: &s text\nd: *s\n")).unwrap();
        assert_eq!(docs[0].value, json!({"a": {"p": 1}, "b": {"p": 1}, "c": "text", "d": "text"}));
        // Each level doubles the copies: 2^30 nodes from 300 bytes.
        let mut laughs = String::from("a0: &a0 [x, x]\n");
        for i in 1..30 {
            laughs.push_str(&format!("a{i}: &a{i} [*a{}, *a{}]\n", i - 1, i - 1));
        }
        let e = documents(&src(&laughs)).unwrap_err().to_string();
        assert!(e.contains("aliases expand to too many nodes"), "{e}");
    }

    #[test]
    fn syntax_errors_name_the_input_and_line() {
        let e = documents(&src("kind: Service\nmetadata:\n  name: web\n   bad: indent\n")).unwrap_err().to_string();
        assert!(e.starts_with("error parsing test.yaml: yaml: line 4, column "), "{e}");
        let e = documents(&src("{\n  \"kind\": \"Service\",\n  \"metadata\": {\n}")).unwrap_err().to_string();
        assert!(e.starts_with("error parsing test.yaml: json: line 4, column 1: EOF while parsing an object"), "{e}");
    }

    #[test]
    fn an_error_at_the_end_names_a_line_the_text_has() {
        // Found by examples/paste_fuzz.rs: without a final line break the
        // scanner's end of input is on a line after the last.
        for (text, line, column) in [("apiVe: {port", 1, 13), ("a: 1\nb: [x", 2, 6), ("a: 1\r\nb: [x", 2, 6), ("a: 1\rb: {é", 2, 6)] {
            match documents(&src(text)) {
                Err(Error::Syntax { message, line: l }) => {
                    assert_eq!(l, line, "{text:?}: {message}");
                    assert!(message.contains(&format!("line {line}, column {column}:")), "{text:?}: {message}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        // With the line break, the empty line after it is the text's own.
        let Err(Error::Syntax { line, .. }) = documents(&src("apiVe: {port\n")) else { panic!("a syntax error") };
        assert_eq!(line, 2);
    }

    #[test]
    fn nesting_beyond_the_limit_is_refused_at_its_line() {
        let ok = format!("a:{}\n", " [".repeat(MAX_DEPTH - 1) + &"]".repeat(MAX_DEPTH - 1));
        assert!(documents(&src(&ok)).is_ok());
        // Level 101 is refused where it starts: the 99th bracket, on line
        // 3 + 99 (levels 1 and 2 are the mappings).
        let deep = format!("kind: X\nspec:\n  a:{}\n", "\n   [".repeat(150));
        let e = documents(&src(&deep)).unwrap_err().to_string();
        assert_eq!(e, format!("error parsing test.yaml: yaml: line {}, column 4: exceeded max depth of 100 nested mappings and sequences", 3 + MAX_DEPTH - 1));
        // Deeper than 255 flow levels the scanner, which looks ahead, meets
        // its own limit first, a little further on; the error is the same,
        // and the 50,000 levels after it are never looked at.
        for deep in [format!("a: {}\n", "[".repeat(50_000)), format!("a:{}\n", "\n {".repeat(50_000))] {
            let e = documents(&src(&deep)).unwrap_err().to_string();
            assert!(e.starts_with("error parsing test.yaml: yaml: line ") && e.ends_with(": exceeded max depth of 100 nested mappings and sequences"), "{e}");
        }
        // Block nesting (`- - - …`) and JSON meet the same limit.
        let block = "- ".repeat(20_000) + "x\n";
        let e = documents(&src(&block)).unwrap_err().to_string();
        assert!(e.contains("yaml: line 1, column ") && e.ends_with("exceeded max depth of 100 nested mappings and sequences"), "{e}");
        // serde_json points just after the 101st bracket.
        let json = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let e = documents(&src(&json)).unwrap_err().to_string();
        assert!(e.starts_with("error parsing test.yaml: json: line 1, column 102: exceeded max depth of 100"), "{e}");
        assert!(documents(&src(&("[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH)))).is_ok());
        // An alias cannot carry a value past the limit either.
        let alias = format!("a: &d {}\nb:{}*d\n", "[".repeat(60) + &"]".repeat(60), " [".repeat(50));
        let e = documents(&src(&alias)).unwrap_err().to_string();
        assert!(e.ends_with("exceeded max depth of 100 nested mappings and sequences"), "{e}");
    }

    #[test]
    fn skipped_objects_are_cut_down_as_they_are_read() {
        let keep = |_: &str, kind: &str| kind == "Service";
        let yaml = "apiVersion: v1\ndata: {big: xxx}\nkind: ConfigMap\nmetadata: {name: c, namespace: n, labels: {a: b}}\n---\n\
                    apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}, data: {k: v}}\n- {apiVersion: v1, kind: Service, metadata: {name: web}, spec: {}}\n- {metadata: {name: x}, data: {}}\n";
        for text in [yaml.to_string(), yaml_to_json(yaml)] {
            let docs = documents_keeping(&src(&text), &keep).unwrap();
            assert_eq!(docs[0].value, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}), "{text}");
            assert_eq!(
                docs[1].value["items"],
                json!([
                    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
                    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {}},
                    // Without its own kind an item is left for the List's kind to decide.
                    {"metadata": {"name": "x"}, "data": {}}
                ]),
                "{text}"
            );
        }
    }

    /// The same documents as one JSON stream.
    fn yaml_to_json(yaml: &str) -> String {
        documents(&src(yaml)).unwrap().iter().map(|d| d.value.to_string()).collect::<Vec<_>>().join("\n")
    }
}
