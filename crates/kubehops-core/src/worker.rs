//! The messages between the page and its worker: the page hands a pasted
//! cluster (and, later, the parameters chosen for it) to a Web Worker,
//! which reads it with the CLI's reader, builds "Your cluster" and sends
//! back what the page draws. Reading 1.2 MB of YAML and building a
//! 50-node cluster takes hundreds of milliseconds; on the page's own
//! thread that would freeze it.
//!
//! Both sides are plain data with serde, sent as postcard bytes: compact
//! (a 50-node cluster's answer is about half its JSON), and the smallest
//! code to read in the page's wasm, since it has no field names to match.
//! That is also why no type here, nor any inside a `Scenario`, may skip a
//! field when writing it (serde's `skip_serializing_if`). The page and the
//! worker are built from the same commit, so the shapes always agree.
//! The worker keeps the last cluster it read; a request without a paste
//! builds that cluster again for new parameters.

use crate::scenarios::{ParamSpec, Params, Scenario};
use serde::{Deserialize, Serialize};

/// What the page asks of the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Numbered by the page, which keeps only the answer to its newest
    /// request (a second paste may be sent before the first is read).
    pub seq: u64,
    /// New text to read, replacing what was read before; `None` builds
    /// the cluster already read for `params`.
    pub paste: Option<Paste>,
    /// The parameters to build "Your cluster" with (Service, client, …).
    pub params: Params,
}

/// A pasted text or a dropped file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paste {
    /// The name errors give it: `STDIN` for a paste, as the CLI names its
    /// standard input, or the file's name.
    pub name: String,
    pub text: String,
}

/// The worker's answer to a request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The request's number.
    pub seq: u64,
    /// Nothing to show (the text was empty), the cluster, or the error as
    /// the CLI prints it.
    pub outcome: Option<Result<Cluster, String>>,
}

/// A cluster read and built.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub counts: Counts,
    /// What the CLI would have printed on stderr, one line each.
    pub warnings: Vec<String>,
    /// The parameters this cluster offers (its Services and clients).
    pub specs: Vec<ParamSpec>,
    /// "Your cluster" for the request's parameters, without the steps'
    /// data-plane snapshots (see [`Scenario::without_snapshots`]).
    pub scenario: Scenario,
}

/// How many objects of each kind were read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub nodes: usize,
    pub pods: usize,
    pub services: usize,
    pub slices: usize,
}

impl Counts {
    /// The summary line the page shows once a cluster is read.
    pub fn summary(&self) -> String {
        format!("Read {} nodes, {} Pods, {} Services and {} EndpointSlices.", self.nodes, self.pods, self.services, self.slices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::Value;

    #[test]
    fn a_request_and_a_reply_survive_the_trip() {
        let params = Params::default().with("service", Value::Choice("default/web".into()));
        let req = Request { seq: 7, paste: Some(Paste { name: "STDIN".into(), text: "kind: List\nitems: []\n\"quoted\" \\ ✓".into() }), params };
        let back: Request = postcard::from_bytes(&postcard::to_allocvec(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        let reply = Reply { seq: 7, outcome: Some(Err("error: error parsing STDIN".into())) };
        let back: Reply = postcard::from_bytes(&postcard::to_allocvec(&reply).unwrap()).unwrap();
        assert_eq!(back, reply);
    }

    #[test]
    fn the_summary_counts_each_kind() {
        let c = Counts { nodes: 3, pods: 2, services: 5, slices: 4 };
        assert_eq!(c.summary(), "Read 3 nodes, 2 Pods, 5 Services and 4 EndpointSlices.");
    }
}
