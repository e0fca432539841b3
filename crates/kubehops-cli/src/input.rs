//! Reading `-f` arguments: files, directories (their `.yaml`, `.yml` and
//! `.json` files, sorted) and `-` for stdin; then splitting them into
//! documents. JSON is recognised by its first character (`{` or `[`), as
//! kubectl does; anything else is YAML, with `---` between documents.

use crate::Error;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::fmt;
use std::io::Read;
use std::path::Path;

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

/// Reads every `-f` argument in order. stdin is read at most once.
pub fn read_sources(paths: &[String], stdin: &mut dyn Read) -> Result<Vec<Source>, Error> {
    let mut out = Vec::new();
    let mut stdin_read = false;
    for p in paths {
        if p == "-" {
            if stdin_read {
                continue;
            }
            stdin_read = true;
            let mut buf = Vec::new();
            stdin.read_to_end(&mut buf).map_err(|e| Error::Other(format!("error reading STDIN: {e}")))?;
            out.push(Source { name: "STDIN".into(), text: text_of("STDIN", buf)? });
            continue;
        }
        let path = Path::new(p);
        let meta = std::fs::metadata(path).map_err(|_| Error::Other(format!("the path \"{p}\" does not exist")))?;
        if meta.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(path)
                .map_err(|e| Error::Other(format!("error reading \"{p}\": {e}")))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().and_then(|x| x.to_str()).is_some_and(|x| matches!(x, "yaml" | "yml" | "json")))
                .collect();
            files.sort();
            for f in files {
                out.push(read_file(&f)?);
            }
        } else {
            out.push(read_file(path)?);
        }
    }
    Ok(out)
}

fn read_file(path: &Path) -> Result<Source, Error> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Other(format!("error reading \"{name}\": {e}")))?;
    Ok(Source { text: text_of(&name, bytes)?, name })
}

fn text_of(name: &str, bytes: Vec<u8>) -> Result<String, Error> {
    let text = String::from_utf8(bytes).map_err(|_| Error::Other(format!("error parsing {name}: the input is not UTF-8 text")))?;
    Ok(text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text))
}

/// Splits one input into documents. Empty YAML documents (a stray `---`)
/// are skipped. Syntax errors name the input and the line.
pub fn documents(src: &Source) -> Result<Vec<Document>, Error> {
    let trimmed = src.text.trim_start();
    let mut out = Vec::new();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let stream = serde_json::Deserializer::from_str(&src.text).into_iter::<Strict>();
        for (i, v) in stream.enumerate() {
            let Strict(value) = v.map_err(|e| {
                Error::Other(format!("error parsing {}: json: line {}, column {}: {}", src.name, e.line(), e.column(), json_message(&e)))
            })?;
            out.push(Document { source: src.name.clone(), index: i + 1, value });
        }
        return Ok(out);
    }
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(&src.text).enumerate() {
        let Strict(value) = Strict::deserialize(doc).map_err(|e| {
            let msg = yaml_message(&e);
            match e.location() {
                Some(l) => Error::Other(format!("error parsing {}: yaml: line {}, column {}: {msg}", src.name, l.line(), l.column())),
                None => Error::Other(format!("error parsing {}: yaml: {msg}", src.name)),
            }
        })?;
        if !value.is_null() {
            out.push(Document { source: src.name.clone(), index: i + 1, value });
        }
    }
    Ok(out)
}

/// A JSON value read without losing anything silently: a key given twice
/// in one mapping is an error, as it is for kubectl, instead of the last
/// one winning.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML or JSON value")
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
        serde_json::Number::from_f64(x).map(Value::Number).ok_or_else(|| E::custom(format!("{x} is not a finite number")))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("key {key:?} already set in map")));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// serde_json's message without its own " at line L column C" suffix.
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(at) => s[..at].to_string(),
        None => s,
    }
}

/// The YAML parser's message without its location suffix.
fn yaml_message(e: &serde_yaml_ng::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(at) => s[..at].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let docs = documents(&src("  {\"kind\": \"A\"}\n{\"kind\": \"B\"}")).unwrap();
        assert_eq!(docs.len(), 2);
    }

    #[test]
    fn keys_given_twice_are_errors() {
        let e = documents(&src("kind: Service\nmetadata: {name: a}\nmetadata: {name: b}\n")).unwrap_err().to_string();
        assert!(e.starts_with("error: error parsing test.yaml: yaml: ") && e.contains("key \"metadata\" already set in map"), "{e}");
        let e = documents(&src("{\"kind\": \"A\", \"kind\": \"B\"}")).unwrap_err().to_string();
        assert!(e.contains("key \"kind\" already set in map"), "{e}");
        let docs = documents(&src("a: [1, -2, 2.5, true, null, ~, 'x']\n")).unwrap();
        assert_eq!(docs[0].value, serde_json::json!({"a": [1, -2, 2.5, true, null, null, "x"]}));
    }

    #[test]
    fn syntax_errors_name_the_input_and_line() {
        let e = documents(&src("kind: Service\nmetadata:\n  name: web\n   bad: indent\n")).unwrap_err().to_string();
        assert!(e.starts_with("error: error parsing test.yaml: yaml: line 4, column "), "{e}");
        let e = documents(&src("{\n  \"kind\": \"Service\",\n  \"metadata\": {\n}")).unwrap_err().to_string();
        assert!(e.starts_with("error: error parsing test.yaml: json: line 4, column 1: EOF while parsing an object"), "{e}");
    }
}
