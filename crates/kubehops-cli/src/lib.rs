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
/// Objects to the model: [`kubehops_objects::objects`], shared with the browser.
pub use kubehops_objects::objects;
/// RFC 3339 times: [`kubehops_objects::time`].
pub use kubehops_objects::time;
pub mod process;
pub mod wire;

use kubehops_core::api::server::ApiError;
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

impl From<kubehops_objects::ReadError> for Error {
    fn from(e: kubehops_objects::ReadError) -> Error {
        match e {
            kubehops_objects::ReadError::Invalid(a) => Error::Invalid(a),
            kubehops_objects::ReadError::Other(m) => Error::Other(m),
            e @ kubehops_objects::ReadError::Syntax { .. } => Error::Other(e.to_string()),
        }
    }
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
            Error::Invalid(e) => f.write_str(&kubehops_objects::invalid(e)),
        }
    }
}

pub use kubehops_objects::cause;

pub use kubehops_objects::stored_warning;
use kubehops_objects::object_name as object;

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

/// The exit code after stdout was closed early (`kubehops … | head`): what
/// the shell reports for a command that SIGPIPE ended, as it ends the
/// coreutils.
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// Runs `kubehops` on `args` (without the program name) and returns the
/// exit code: 0 on success, 1 when the input or the model says no or the
/// output cannot be written, 2 for a wrong command line.
pub fn run(args: &[String], stdin: &mut dyn Read, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    run_as(args::Program::Kubehops, args, stdin, stdout, stderr)
}

/// [`run`] as `program`: the kubectl plugin's usage and help say
/// `kubectl hops`.
///
/// A failed write is reported as the coreutils report it, under the
/// executable's name (`kubehops: write error: No space left on device`,
/// exit 1), except a closed pipe, which ends quietly with
/// [`EXIT_BROKEN_PIPE`].
pub fn run_as(program: args::Program, args: &[String], stdin: &mut dyn Read, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let (code, out, err) = match commands::dispatch(program, args, stdin) {
        Ok(out) => (0, out.stdout, out.stderr),
        Err((warnings, e)) => (e.exit_code(), String::new(), format!("{warnings}{e}\n")),
    };
    // Warnings first, then the answer; flushed here so that a failure
    // buffered in the stream is seen too.
    let written = stderr.write_all(err.as_bytes()).and_then(|()| stderr.flush()).and_then(|()| stdout.write_all(out.as_bytes())).and_then(|()| stdout.flush());
    match written {
        Ok(()) => code,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_BROKEN_PIPE,
        Err(e) => {
            // stderr may be the stream that failed; then there is no one to tell.
            let _ = writeln!(stderr, "{}: write error: {}", program.binary(), io_message(&e)).and_then(|()| stderr.flush());
            1
        }
    }
}

/// An I/O error as the C library words it (`No space left on device`),
/// without Rust's ` (os error 28)`.
pub fn io_message(e: &std::io::Error) -> String {
    let s = e.to_string();
    match (e.raw_os_error(), s.rfind(" (os error ")) {
        (Some(_), Some(at)) => s[..at].to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// A stream whose writes fail with one error.
    struct Failing(fn() -> io::Error);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err((self.0)())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn help(stdout: &mut dyn Write) -> (i32, String) {
        help_as(args::Program::Kubehops, stdout)
    }

    fn help_as(program: args::Program, stdout: &mut dyn Write) -> (i32, String) {
        let mut err = Vec::new();
        let code = run_as(program, &["--help".to_string()], &mut io::empty(), stdout, &mut err);
        (code, String::from_utf8(err).unwrap())
    }

    #[test]
    fn a_full_disk_is_reported_as_the_coreutils_report_it() {
        let (code, err) = help(&mut Failing(|| io::Error::from_raw_os_error(28)));
        assert_eq!((code, err.as_str()), (1, "kubehops: write error: No space left on device\n"));
    }

    #[test]
    fn the_plugin_reports_a_write_error_under_its_own_name() {
        let (code, err) = help_as(args::Program::KubectlPlugin, &mut Failing(|| io::Error::from_raw_os_error(28)));
        assert_eq!((code, err.as_str()), (1, "kubectl-hops: write error: No space left on device\n"));
        let (code, err) = help_as(args::Program::KubectlPlugin, &mut Failing(|| io::Error::from(io::ErrorKind::BrokenPipe)));
        assert_eq!((code, err.as_str()), (EXIT_BROKEN_PIPE, ""));
    }

    #[test]
    fn a_closed_pipe_ends_quietly() {
        let (code, err) = help(&mut Failing(|| io::Error::from(io::ErrorKind::BrokenPipe)));
        assert_eq!((code, err.as_str()), (EXIT_BROKEN_PIPE, ""));
    }

    #[test]
    fn a_written_answer_exits_0() {
        let mut out = Vec::new();
        assert_eq!(help(&mut out), (0, String::new()));
        assert!(String::from_utf8(out).unwrap().starts_with("Usage:"));
    }
}
