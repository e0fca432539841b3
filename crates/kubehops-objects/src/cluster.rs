//! A whole cluster read for the scenario "Your cluster": the texts a user
//! pasted or dropped, through the same reader as the CLI's `-f`
//! ([`crate::input`] then [`crate::objects::load`]), into the core's
//! [`ClusterInput`], with the warnings as the CLI prints them.
//!
//! Input larger than [`MAX_BYTES`] in total is refused before it is read,
//! with a message that says why: the browser reads in a worker
//! (`crates/kubehops-worker`), which keeps the page usable, but a larger
//! paste would keep the reader, and the reply's drawing on the page,
//! busy for seconds.

use crate::input::{documents_keeping, Source};
use crate::objects::{self, Cluster, LoadOptions};
use crate::ReadError;
use kubehops_core::scenarios::your_cluster::ClusterInput;

/// The most text read at once, all sources together: 4 MiB
/// ([`kubehops_core::worker::MAX_PASTE_BYTES`]).
pub use kubehops_core::worker::MAX_PASTE_BYTES as MAX_BYTES;

/// Everything read, and what the CLI would have printed on stderr.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Read {
    pub input: ClusterInput,
    /// `warning: …` (skipped objects) and `Warning: …` (stored values the
    /// API server would have refused), one line each, as the CLI prints them.
    pub warnings: Vec<String>,
}

/// Reads the sources (a name for errors, and the text) as the CLI reads
/// its `-f` files, with the CLI's defaults (node ports 30000-32767, not
/// strict). An error is the CLI's, without its `error: ` prefix for
/// errors that are not an object's rejection.
pub fn read(sources: &[(&str, &str)]) -> Result<Read, ReadError> {
    let total: usize = sources.iter().map(|(_, t)| t.len()).sum();
    if total > MAX_BYTES {
        return Err(ReadError::Other(too_large(total)));
    }
    let mut docs = Vec::new();
    for (name, text) in sources {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let src = Source { name: name.to_string(), text: text.to_string() };
        docs.extend(documents_keeping(&src, &objects::reads)?);
    }
    let c = objects::load(&docs, LoadOptions::default())?;
    let warnings = warning_lines(&c);
    Ok(Read { input: input_of(c), warnings })
}

/// The message for input over [`MAX_BYTES`], and sizes as messages give them.
pub use kubehops_core::worker::{size_text, too_large};

/// The CLI's stderr lines for a cluster read: notes about the input
/// (`warning: …`), then stored values the API server would have refused.
pub fn warning_lines(c: &Cluster) -> Vec<String> {
    let notes = c.warnings.iter().map(|w| format!("warning: {w}"));
    let stored = c.stored_warnings.iter().map(crate::stored_warning);
    notes.chain(stored).collect()
}

/// The core's input from what the reader made of the objects.
pub fn input_of(c: Cluster) -> ClusterInput {
    ClusterInput { nodes: c.nodes, pods: c.pods.into_iter().map(|p| p.pod).collect(), services: c.services, slices: c.slices, proxy: c.proxy }
}

/// A made-up cluster as `kubectl get nodes,pods,services,endpointslices
/// -A -o yaml` would print it (the fields the reader reads, in one YAML
/// List): `nodes` nodes, `pods` Pods spread over them, and `services`
/// Services, each selecting `pods / services` Pods through an
/// EndpointSlice. The same numbers give the same text. For benchmarks,
/// the fuzzer and the scale tests.
pub fn example_yaml(nodes: usize, pods: usize, services: usize) -> String {
    use std::fmt::Write;
    let services = services.max(1);
    let nodes = nodes.max(1);
    let mut y = String::from("apiVersion: v1\nkind: List\nitems:\n");
    let node_ip = |i: usize| format!("10.0.{}.{}", i / 250, 10 + i % 250);
    let pod_ip = |i: usize, node: usize| format!("10.{}.{}.{}", 100 + node / 250, node % 250, 2 + i / nodes % 250);
    for n in 0..nodes {
        let _ = write!(
            y,
            "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-{}\n  spec:\n    podCIDR: 10.{}.{}.0/24\n  status:\n    addresses:\n    - type: InternalIP\n      address: {}\n",
            n + 1,
            100 + n / 250,
            n % 250,
            node_ip(n)
        );
    }
    for p in 0..pods {
        let (node, app) = (p % nodes, p % services);
        let _ = write!(
            y,
            "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: app{app}-7c9d8f5b6-p{p:05}\n    namespace: ns{}\n    labels:\n      app: app{app}\n  spec:\n    nodeName: node-{}\n    containers:\n    - name: app\n      ports:\n      - name: http\n        containerPort: 8080\n  status:\n    podIP: {}\n    conditions:\n    - type: Ready\n      status: \"True\"\n",
            app % 10,
            node + 1,
            pod_ip(p, node)
        );
    }
    for s in 0..services {
        let ns = s % 10;
        let kind = if s % 5 == 0 { "NodePort" } else { "ClusterIP" };
        let node_port = if s % 5 == 0 { format!("\n      nodePort: {}", 30000 + s % 2768) } else { String::new() };
        let _ = write!(
            y,
            "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: app{s}\n    namespace: ns{ns}\n  spec:\n    type: {kind}\n    clusterIP: 10.96.{}.{}\n    selector:\n      app: app{s}\n    ports:\n    - name: http\n      port: 80\n      targetPort: 8080{node_port}\n",
            1 + s / 250,
            1 + s % 250
        );
        let _ = write!(y, "- apiVersion: discovery.k8s.io/v1\n  kind: EndpointSlice\n  metadata:\n    name: app{s}-abcde\n    namespace: ns{ns}\n    labels:\n      kubernetes.io/service-name: app{s}\n  addressType: IPv4\n  endpoints:\n");
        for p in (s..pods).step_by(services) {
            let node = p % nodes;
            let _ = write!(
                y,
                "  - addresses: [\"{}\"]\n    conditions: {{ready: true}}\n    nodeName: node-{}\n    targetRef: {{kind: Pod, name: app{s}-7c9d8f5b6-p{p:05}}}\n",
                pod_ip(p, node),
                node + 1
            );
        }
        y.push_str("  ports:\n  - name: http\n    protocol: TCP\n    port: 8080\n");
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_much_input_is_refused_before_reading_with_sizes_in_mb() {
        let big = "#".repeat(MAX_BYTES + 1);
        let e = read(&[("paste", &big)]).unwrap_err().to_string();
        assert!(e.starts_with("the input is 4.0 MB and KubeHops reads at most 4.0 MB"), "{e}");
        assert_eq!(size_text(10_000_000), "9.5 MB");
        assert_eq!(size_text(0), "0.0 MB");
    }

    #[test]
    fn the_example_cluster_reads_with_every_object_and_no_warning() {
        let y = example_yaml(5, 40, 8);
        let r = read(&[("example.yaml", &y)]).unwrap();
        assert_eq!((r.input.nodes.len(), r.input.pods.len(), r.input.services.len(), r.input.slices.len()), (5, 40, 8, 8));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.input.slices[0].endpoints.len(), 5);
        assert_eq!(example_yaml(5, 40, 8), y, "deterministic");
    }

    #[test]
    fn a_byte_order_mark_is_dropped_and_errors_name_the_source() {
        let ok = read(&[("paste", "\u{feff}apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {addresses: [{type: InternalIP, address: 10.0.0.1}]}\n")]).unwrap();
        assert_eq!(ok.input.nodes.len(), 1);
        let e = read(&[("paste", "kind: [")]).unwrap_err().to_string();
        assert!(e.contains("paste"), "{e}");
    }
}
