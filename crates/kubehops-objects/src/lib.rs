//! kubehops-objects: Kubernetes objects as `kubectl get -o yaml` prints
//! them (or as a person writes them), read into the model's `api` types,
//! with the API server's errors and kubectl's warnings.
//!
//! The same reading serves the `kubehops` CLI and the browser (a pasted
//! cluster, an edited manifest), so both accept and refuse the same
//! input in the same words. Nothing here does I/O or knows a command line:
//! [`input`] turns a text into documents, [`objects`] turns documents into
//! a [`objects::Cluster`], [`time`] reads RFC 3339 times.

pub mod cluster;
pub mod edit;
pub mod input;
pub mod objects;
pub mod time;

use kubehops_core::api::server::{ApiError, FieldError, FieldErrorKind, StoredWarning};
use kubehops_core::api::ObjectRef;
use std::fmt;

/// Why an input could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// An object was rejected, in the API server's words.
    Invalid(ApiError),
    /// The text could not be read (an unknown kind of structure, an
    /// object given twice), in kubectl's words.
    Other(String),
    /// The text is not YAML or JSON: kubectl's message, and the 1-based
    /// line it names, so an editor can mark it.
    Syntax { message: String, line: usize },
}

impl fmt::Display for ReadError {
    /// kubectl's words: `The Service "web" is invalid: …` for a rejected
    /// object (one cause on the line, several as a `*` list); the message
    /// itself for the rest (the CLI puts `error: ` in front).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Invalid(e) => f.write_str(&invalid(e)),
            ReadError::Other(m) | ReadError::Syntax { message: m, .. } => write!(f, "{m}"),
        }
    }
}

/// A rejected object as kubectl prints it.
pub fn invalid(e: &ApiError) -> String {
    let mut s = if e.name.is_empty() { format!("The {} is invalid: ", e.kind) } else { format!("The {} \"{}\" is invalid: ", e.kind, e.name) };
    match e.causes.as_slice() {
        [one] => s.push_str(&cause(one)),
        many => {
            for c in many {
                s.push_str("\n* ");
                s.push_str(&cause(c));
            }
        }
    }
    s
}

/// One field error as the API server prints it: the value is shown for
/// invalid and unsupported values only, and an empty detail adds nothing.
pub fn cause(e: &FieldError) -> String {
    let (kind, show_value) = match e.kind {
        FieldErrorKind::Invalid => ("Invalid value", true),
        FieldErrorKind::NotSupported => ("Unsupported value", true),
        FieldErrorKind::Required => ("Required value", false),
        FieldErrorKind::Forbidden => ("Forbidden", false),
    };
    let mut s = format!("{}: {kind}", e.field);
    if let Some(v) = e.value.as_deref().filter(|_| show_value) {
        s.push_str(": ");
        s.push_str(v);
    }
    if !e.detail.is_empty() {
        s.push_str(": ");
        s.push_str(&e.detail);
    }
    s
}

/// An object as a warning names it: `"web"` in namespace default, else
/// `"prod/web"`.
pub fn object_name(r: &ObjectRef) -> String {
    if r.namespace == "default" {
        format!("\"{}\"", r.name)
    } else {
        format!("\"{}/{}\"", r.namespace, r.name)
    }
}

/// A stored value the API server would have refused, as kubectl prints the
/// API server's warnings (`Warning: …`, without a final newline).
pub fn stored_warning(w: &StoredWarning) -> String {
    const REFUSED: &str = "the API server would have refused one of them";
    match w {
        StoredWarning::ClusterIpInUse { service, ip, holder } => {
            format!("Warning: Service {} has clusterIP {ip}, already used by Service {}; {REFUSED}", object_name(service), object_name(holder))
        }
        StoredWarning::NodePortInUse { service, field, port, holder, holder_field } => format!(
            "Warning: Service {} has {field} {port}, already used by Service {} as {holder_field}; {REFUSED}",
            object_name(service),
            object_name(holder)
        ),
        StoredWarning::HealthCheckNodePortNotAllowed { service, port } => format!(
            "Warning: Service {} has spec.healthCheckNodePort {port}, which the API server allows only for type LoadBalancer with externalTrafficPolicy Local; kube-proxy ignores it",
            object_name(service)
        ),
    }
}

impl std::error::Error for ReadError {}
