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
//! builds that cluster again for new parameters. It also builds every
//! other scenario the page shows (except the opening states, which the
//! page reads as data written at build time), reading and admitting the
//! manifest editor's typed Service on the way: neither the model's
//! builders, nor the object reader, nor the YAML parser is in the page's
//! own wasm.

use crate::scenarios::{ParamSpec, Params, Scenario};
use serde::{Deserialize, Serialize};

/// What the page asks of the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Numbered by the page, which keeps only the answer to its newest
    /// request of each kind (a second paste may be sent before the first
    /// is read).
    pub seq: u64,
    pub job: Job,
}

/// What the worker does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Job {
    /// "Your cluster": new text to read (replacing what was read before),
    /// or `None` to build the cluster already read, for `params`.
    Cluster { paste: Option<Paste>, params: Params },
    /// Scenario `id` for `params`: the page builds no scenario itself (its
    /// wasm has none of the builders), so every change of scenario or
    /// parameters comes here. With a Service typed in the manifest editor
    /// (`params`'s `manifest`), it is read and admitted as the API server
    /// would, then built.
    Build { id: String, params: Params },
    /// The same as `Build`, for the transcript's "Both kube-proxy modes":
    /// the scenario shown, in the other mode. A kind of its own, so it
    /// never takes the place of the scenario shown.
    OtherMode { id: String, params: Params },
}

impl Job {
    /// Which kind of job it is: a newer request of one kind never hides
    /// the answer to the other.
    pub fn kind(&self) -> Kind {
        match self {
            Job::Cluster { .. } => Kind::Cluster,
            Job::Build { .. } => Kind::Build,
            Job::OtherMode { .. } => Kind::OtherMode,
        }
    }
}

/// The kind of a job, and of its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cluster,
    Build,
    OtherMode,
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
    pub answer: Answer,
}

/// What a job came to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// Nothing to show (the text was empty), the cluster, or the error as
    /// the CLI prints it.
    Cluster(Option<Result<Cluster, String>>),
    Built(Built),
    OtherMode(Built),
    /// The request could not be read (a page and worker from different builds).
    Unreadable(String),
}

impl Answer {
    pub fn kind(&self) -> Option<Kind> {
        match self {
            Answer::Cluster(_) => Some(Kind::Cluster),
            Answer::Built(_) => Some(Kind::Build),
            Answer::OtherMode(_) => Some(Kind::OtherMode),
            Answer::Unreadable(_) => None,
        }
    }
}

/// A build done: the scenario (with the typed Service, if one was typed),
/// or why the typed Service was refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Built {
    /// The scenario and parameters it was asked for, so the page can tell
    /// an answer to what it shows now from one to an older text.
    pub id: String,
    pub params: Params,
    /// `None` when the typed Service was refused (or the scenario is
    /// unknown): the page keeps the last scenario it showed. Without the
    /// steps' data-plane snapshots, which the page never draws.
    pub scenario: Option<Scenario>,
    pub refusal: Option<Refusal>,
}

/// Why a typed manifest is not applied: kubectl's first line, and each
/// cause on its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// `The Service "api" is invalid:`, or a reading error as kubectl
    /// prints it.
    pub headline: String,
    pub problems: Vec<Problem>,
}

/// One reason for a refusal, at the line it is about (1-based), when the
/// text has one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    pub line: Option<usize>,
    pub message: String,
}

impl Refusal {
    /// The lines any problem is at, for marking them.
    pub fn lines(&self) -> Vec<usize> {
        let mut l: Vec<usize> = self.problems.iter().filter_map(|p| p.line).collect();
        l.sort_unstable();
        l.dedup();
        l
    }
}

/// The most pasted text read at once, all sources together: 4 MiB. The
/// reader takes YAML at about 8 MB/s natively (`cluster_bench`); a larger
/// paste would keep the worker, and the drawing of its answer, busy for
/// seconds. The page refuses more before sending it.
pub const MAX_PASTE_BYTES: usize = 4 << 20;

/// The message for pasted text over [`MAX_PASTE_BYTES`], as the reader
/// (and the CLI's wording) gives it, without `error: `.
pub fn too_large(total: usize) -> String {
    format!(
        "the input is {} and KubeHops reads at most {} in the browser, so that reading never freezes the page; paste one namespace at a time (kubectl get nodes,pods,services,endpointslices -n NAMESPACE -o yaml), or use the kubehops CLI, which has no limit",
        size_text(total),
        size_text(MAX_PASTE_BYTES)
    )
}

/// `10.5 MB`: a size as the messages give it, with integers only (a float
/// formatter costs the wasm more).
pub fn size_text(bytes: usize) -> String {
    let tenths = (bytes as u64 * 10 + (1 << 19)) >> 20;
    format!("{}.{} MB", tenths / 10, tenths % 10)
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
        let paste = Some(Paste { name: "STDIN".into(), text: "kind: List\nitems: []\n\"quoted\" \\ ✓".into() });
        let req = Request { seq: 7, job: Job::Cluster { paste, params } };
        let back: Request = postcard::from_bytes(&postcard::to_allocvec(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        let refusal = Refusal { headline: "The Service \"web\" is invalid:".into(), problems: vec![Problem { line: Some(3), message: "x".into() }] };
        let edited = Built { id: "service-types".into(), params: Params::default(), scenario: None, refusal: Some(refusal) };
        for answer in [Answer::Cluster(Some(Err("error: error parsing STDIN".into()))), Answer::Built(edited), Answer::Unreadable("why".into())] {
            let reply = Reply { seq: 7, answer };
            let back: Reply = postcard::from_bytes(&postcard::to_allocvec(&reply).unwrap()).unwrap();
            assert_eq!(back, reply);
        }
    }

    #[test]
    fn a_refusal_marks_each_line_once_in_order() {
        let p = |line| Problem { line, message: String::new() };
        let r = Refusal { headline: String::new(), problems: vec![p(Some(9)), p(None), p(Some(2)), p(Some(9))] };
        assert_eq!(r.lines(), [2, 9]);
    }

    #[test]
    fn sizes_are_given_in_tenths_of_a_megabyte() {
        assert_eq!(size_text(MAX_PASTE_BYTES), "4.0 MB");
        assert_eq!(size_text(10_000_000), "9.5 MB");
        assert!(too_large(10_000_000).starts_with("the input is 9.5 MB and KubeHops reads at most 4.0 MB"));
    }

    #[test]
    fn the_summary_counts_each_kind() {
        let c = Counts { nodes: 3, pods: 2, services: 5, slices: 4 };
        assert_eq!(c.summary(), "Read 3 nodes, 2 Pods, 5 Services and 4 EndpointSlices.");
    }
}
