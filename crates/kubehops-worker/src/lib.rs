//! What the page's Web Worker does: it reads a pasted cluster with the
//! CLI's reader (`kubehops_objects::cluster`), keeps it, and builds "Your
//! cluster" for the parameters the page asks for; and it builds every
//! other scenario the page asks for, reading, admitting and building the
//! manifest editor's typed Service where one was typed
//! (`kubehops_objects::edit`), answering each with a
//! [`kubehops_core::worker::Reply`]. The browser glue is in `main.rs`;
//! everything here is plain Rust, tested natively.
//!
//! The page starts this worker once it is shown (or at once, for a link
//! to a state it has no opening data for), so neither the model's
//! builders, nor the reader, nor the YAML parser is on its critical path
//! (nor in its wasm).

use kubehops_core::scenarios::{your_cluster, Params};
use kubehops_core::worker::{Answer, Cluster, Counts, Built, Job, Reply, Request};
use kubehops_objects::edit;
use kubehops_objects::cluster::{read, Read};
use kubehops_objects::ReadError;

/// The worker's state: the last text it read, as read.
#[derive(Default)]
pub struct Reader {
    kept: Option<Result<Read, String>>,
}

impl Reader {
    /// Answers a request. A cluster job reads the paste if there is one
    /// (replacing what was kept), then builds the cluster kept for the
    /// parameters; a build job builds the scenario, reading, admitting and
    /// building the typed Service if there is one.
    pub fn answer(&mut self, req: Request) -> Reply {
        let answer = match req.job {
            Job::Cluster { paste, params } => {
                if let Some(p) = paste {
                    self.kept = read_pasted(&p.name, &p.text);
                }
                Answer::Cluster(self.kept.as_ref().map(|k| match k {
                    Ok(r) => Ok(cluster(r, &params)),
                    Err(e) => Err(e.clone()),
                }))
            }
            Job::Build { id, params } => Answer::Built(built(id, params)),
            Job::OtherMode { id, params } => Answer::OtherMode(built(id, params)),
        };
        Reply { seq: req.seq, answer }
    }

    /// [`Reader::answer`] on the bytes the page sends (postcard, see
    /// [`kubehops_core::worker`]), answered in the same form. A message
    /// that is not a request (which only a page and worker from different
    /// builds would exchange) is answered with an error.
    pub fn answer_bytes(&mut self, bytes: &[u8]) -> Vec<u8> {
        let reply = match postcard::from_bytes::<Request>(bytes) {
            Ok(req) => self.answer(req),
            Err(e) => Reply { seq: 0, answer: Answer::Unreadable(format!("the page and its reader disagree on a message: {e}")) },
        };
        postcard::to_allocvec(&reply).unwrap_or_else(|e| {
            let fallback = Reply { seq: reply.seq, answer: Answer::Unreadable(format!("the answer could not be written: {e}")) };
            postcard::to_allocvec(&fallback).unwrap_or_default()
        })
    }
}

/// Reads the pasted text (named as the CLI names stdin, or the file's
/// name) as the CLI reads `-f`; `None` for text with nothing in it.
pub fn read_pasted(name: &str, text: &str) -> Option<Result<Read, String>> {
    if text.trim().is_empty() {
        return None;
    }
    Some(read(&[(name, text)]).map_err(|e| match e {
        // The CLI prints a rejected object as kubectl does, anything else after `error: `.
        ReadError::Invalid(_) => e.to_string(),
        ReadError::Other(m) | ReadError::Syntax { message: m, .. } => format!("error: {m}"),
    }))
}

/// The scenario for `params`, with the typed Service read, admitted and
/// built if there is one, as `edit::build` does for the CLI's tests (an
/// unknown scenario is refused with nothing to show).
fn built(id: String, params: Params) -> Built {
    let (scenario, refusal) = match edit::build(&id, &params) {
        Some(b) => (b.scenario.map(|s| s.without_snapshots()), b.refusal),
        None => (None, None),
    };
    Built { id, params, scenario, refusal }
}

/// What the page needs of a cluster read, built for `params`.
fn cluster(r: &Read, params: &Params) -> Cluster {
    let i = &r.input;
    Cluster {
        counts: Counts { nodes: i.nodes.len(), pods: i.pods.len(), services: i.services.len(), slices: i.slices.len() },
        warnings: r.warnings.clone(),
        specs: your_cluster::params(i),
        scenario: your_cluster::build(i, params).without_snapshots(),
    }
}
