//! The manifest editor's reading: a Service the user typed, admitted as
//! the API server would admit it, or refused with its reasons, each at
//! the line of the field it names.
//!
//! A text goes through the same reader as the CLI's `-f` (YAML or JSON,
//! [`crate::input`]), then the stored-object checks
//! ([`validate_stored_service`]), then a dry run of `kubectl apply`
//! against a copy of the scenario's API server, which adds what only a
//! cluster can refuse (a node port already taken, a cluster IP outside the
//! service range). Only a Service that passes all three is built into a
//! scenario; the caller keeps showing the last one that did.

use crate::input::{documents, Source};
use crate::objects::{single_service, ContainerPort, PodInfo};
use crate::{cause, ReadError};
use kubehops_core::api::server::{validate_stored_service, ApiError};
use kubehops_core::api::Service;
use kubehops_core::net::Protocol;
use kubehops_core::scenarios::{self, Params, Scenario};
use kubehops_core::sim::World;
use saphyr_parser::{Event, Parser};

/// The longest text the editor reads, in bytes; a link carries less
/// ([`kubehops_core::compact::MAX_TEXT_BYTES`]).
pub const MAX_EDIT_BYTES: usize = 64 * 1024;

pub use kubehops_core::worker::{Problem, Refusal};

/// A refusal for the API server's error, each cause at the line of the
/// field it names.
fn rejected(e: &ApiError, text: &str) -> Refusal {
    let headline = if e.name.is_empty() { format!("The {} is invalid:", e.kind) } else { format!("The {} \"{}\" is invalid:", e.kind, e.name) };
    let problems = e.causes.iter().map(|c| Problem { line: locate(text, &c.field), message: cause(c) }).collect();
    Refusal { headline, problems }
}

/// A refusal for a reading error, as kubectl prints it.
fn refusal_of(e: ReadError, text: &str) -> Refusal {
    match e {
        ReadError::Invalid(a) => rejected(&a, text),
        ReadError::Syntax { message, line } => Refusal { headline: "The manifest cannot be read:".into(), problems: vec![Problem { line: Some(line), message }] },
        ReadError::Other(message) => Refusal { headline: "The manifest cannot be applied:".into(), problems: vec![Problem { line: None, message }] },
    }
}
/// Reads a typed Service and admits it against `world`'s API server
/// (which is not changed).
pub fn read_service(text: &str, file: &str, world: &World) -> Result<Service, Refusal> {
    if text.len() > MAX_EDIT_BYTES {
        let message = format!("the manifest is {} bytes; the editor reads at most {MAX_EDIT_BYTES}", text.len());
        return Err(Refusal { headline: "The manifest cannot be read:".into(), problems: vec![Problem { line: None, message }] });
    }
    let docs = documents(&Source { name: file.into(), text: text.into() }).map_err(|e| refusal_of(e, text))?;
    let pods: Vec<PodInfo> = world.api.pods.iter().map(pod_info).collect();
    let range = world.api.config.node_port_range;
    let svc = single_service(&docs, &pods, range).map_err(|e| refusal_of(e, text))?;
    let causes = validate_stored_service(&svc, range);
    if !causes.is_empty() {
        let e = ApiError { kind: "Service".into(), name: svc.name.clone(), causes };
        return Err(rejected(&e, text));
    }
    let mut dry_run = world.api.clone();
    dry_run.apply_service(svc.clone()).map_err(|e| rejected(&e, text))?;
    Ok(svc)
}

/// A model Pod with its one container port, as the reader's Pods are.
fn pod_info(p: &kubehops_core::api::Pod) -> PodInfo {
    let port = ContainerPort { name: p.port_name.clone(), protocol: Protocol::Tcp, port: p.container_port };
    PodInfo { pod: p.clone(), ports: vec![port], terminating: false, hostname: None, subdomain: None }
}

/// What the app shows for a scenario and its parameters: the scenario
/// (with the typed Service in place of its own, when one is typed and
/// admitted), or why the typed one was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    /// `None` when the typed Service was refused: the caller keeps the
    /// last scenario it showed.
    pub scenario: Option<Scenario>,
    pub refusal: Option<Refusal>,
}

/// Builds scenario `id` for `p`, reading `p`'s manifest if it has one.
/// `None` for an unknown scenario.
pub fn build(id: &str, p: &Params) -> Option<Built> {
    let entry = scenarios::entry(id)?;
    let p = p.normalized(&(entry.params)());
    let (Some(text), Some(edit), Some(editor)) = (p.manifest(), entry.edit, entry.editor) else {
        return Some(Built { scenario: Some((entry.build)(&p)), refusal: None });
    };
    let world = (edit.cluster)(&p);
    Some(match read_service(text, (editor.file)(&p), &world) {
        Ok(svc) => Built { scenario: Some((edit.build)(&p, svc)), refusal: None },
        Err(r) => Built { scenario: None, refusal: Some(r) },
    })
}

/// The text the editor starts from: [`scenarios::starting_text`].
pub use kubehops_core::scenarios::starting_text;

/// The 1-based line of the field an API error names (`spec.ports[0].nodePort`),
/// or of the nearest field around it that the text has; `None` if the
/// text does not parse or has none of it.
pub fn locate(text: &str, field: &str) -> Option<usize> {
    let lines = field_lines(text);
    let mut path = field.replace("clusterIPs[0]", "clusterIP");
    loop {
        if let Some((_, line)) = lines.iter().find(|(p, _)| *p == path) {
            return Some(*line);
        }
        // `spec.ports[0].nodePort` → `spec.ports[0]` → `spec.ports` → `spec`.
        let cut = path.rfind(['.', '['])?;
        path.truncate(cut);
    }
}

/// Where a container sits while the events are read.
enum Frame {
    /// A mapping at `path`, with the key whose value comes next.
    Map { path: String, key: Option<String> },
    /// A sequence at `path`, with the index of its next item.
    Seq { path: String, next: usize },
}

/// Every field path of the first document with the line it starts on:
/// keys at their key, sequence items at their first token.
fn field_lines(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    for ev in Parser::new_from_str(text) {
        let Ok((ev, span)) = ev else { break };
        let line = span.start.line();
        match ev {
            Event::Scalar(value, ..) => {
                if let Some(Frame::Map { path, key: key @ None }) = stack.last_mut() {
                    out.push((join(path, &value), line));
                    *key = Some(value.to_string());
                } else {
                    child_path(&mut stack, line, &mut out);
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let path = if stack.is_empty() { String::new() } else { child_path(&mut stack, line, &mut out) };
                stack.push(if matches!(ev, Event::MappingStart(..)) { Frame::Map { path, key: None } } else { Frame::Seq { path, next: 0 } });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            Event::DocumentEnd if !out.is_empty() => break,
            _ => {}
        }
    }
    out
}

/// The path of the value that starts now in the innermost container, which
/// moves on past it (a mapping to its next key, a sequence to its next
/// item); a sequence item is recorded at `line`.
fn child_path(stack: &mut [Frame], line: usize, out: &mut Vec<(String, usize)>) -> String {
    match stack.last_mut() {
        Some(Frame::Map { path, key }) => key.take().map(|k| join(path, &k)).unwrap_or_default(),
        Some(Frame::Seq { path, next }) => {
            let p = format!("{path}[{next}]");
            *next += 1;
            out.push((p.clone(), line));
            p
        }
        None => String::new(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests;
