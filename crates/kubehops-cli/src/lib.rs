//! `kubehops`: reads Kubernetes objects and prints what the KubeHops model
//! computes from them: a node's iptables rules, the path of one packet, the
//! `kubectl get svc` table, and CoreDNS's answers.
//!
//! [`run`] is the whole program with its streams passed in, so tests can
//! call it directly; [`process::main`] wires it to the process for both
//! binaries, `kubehops` and the kubectl plugin `kubectl-hops`.

pub mod args;
pub mod commands;
pub mod input;
pub mod objects;
pub mod process;
pub mod time;

use kubehops_core::api::ObjectRef;
use kubehops_core::api::server::{ApiError, FieldError, FieldErrorKind, StoredWarning};
use kubehops_core::dns::DnsWarning;
use std::fmt;
use std::io::{Read, Write};

/// Why a command failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// The command line is wrong: exit code 2, with the command's usage.
    Usage { message: String, usage: String },
    /// An object was rejected, in the API server's words.
    Invalid(ApiError),
    /// Anything else (unreadable input, an unknown node): exit code 1.
    Other(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage { .. } => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for Error {
    /// The message as printed on stderr, without a final newline: kubectl's
    /// `The Service "web" is invalid: …` for rejected objects (one cause on
    /// the line, several as a `*` list), `error: …` for the rest.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage { message, usage } => write!(f, "error: {message}\n\n{usage}"),
            Error::Other(m) => write!(f, "error: {m}"),
            Error::Invalid(e) => {
                let prefix = if e.name.is_empty() { format!("The {} is invalid: ", e.kind) } else { format!("The {} \"{}\" is invalid: ", e.kind, e.name) };
                match e.causes.as_slice() {
                    [one] => write!(f, "{prefix}{}", cause(one)),
                    many => {
                        write!(f, "{prefix}")?;
                        for c in many {
                            write!(f, "\n* {}", cause(c))?;
                        }
                        Ok(())
                    }
                }
            }
        }
    }
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
fn object(r: &ObjectRef) -> String {
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
            format!("Warning: Service {} has clusterIP {ip}, already used by Service {}; {REFUSED}", object(service), object(holder))
        }
        StoredWarning::NodePortInUse { service, field, port, holder, holder_field } => format!(
            "Warning: Service {} has {field} {port}, already used by Service {} as {holder_field}; {REFUSED}",
            object(service),
            object(holder)
        ),
        StoredWarning::HealthCheckNodePortNotAllowed { service, port } => format!(
            "Warning: Service {} has spec.healthCheckNodePort {port}, which the API server allows only for type LoadBalancer with externalTrafficPolicy Local; kube-proxy ignores it",
            object(service)
        ),
    }
}

/// Where a DNS answer may differ from CoreDNS's (`Warning: …`).
pub fn dns_warning(w: &DnsWarning) -> String {
    match w {
        DnsWarning::DualStackSrv { service } => format!(
            "Warning: Service {} is dual-stack and kubehops models its IPv4 half only; CoreDNS also gives its IPv6 addresses a share of the SRV weight (and AAAA records), so its weights are smaller than these",
            object(service)
        ),
    }
}

/// What a successful command writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// Runs `kubehops` on `args` (without the program name) and returns the
/// exit code: 0 on success, 1 when the input or the model says no, 2 for a
/// wrong command line.
pub fn run(args: &[String], stdin: &mut dyn Read, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    run_as(args::Program::Kubehops, args, stdin, stdout, stderr)
}

/// [`run`] as `program`: the kubectl plugin's usage and help say
/// `kubectl hops`.
pub fn run_as(program: args::Program, args: &[String], stdin: &mut dyn Read, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    // A failed write (a closed pipe) has nowhere to be reported.
    match commands::dispatch(program, args, stdin) {
        Ok(out) => {
            let _ = stderr.write_all(out.stderr.as_bytes());
            let _ = stdout.write_all(out.stdout.as_bytes());
            0
        }
        Err((warnings, e)) => {
            let _ = stderr.write_all(warnings.as_bytes());
            let _ = writeln!(stderr, "{e}");
            e.exit_code()
        }
    }
}
