//! The clusters the harness replays, with their decisions:
//!
//! - every kube-proxy golden case of the core (`tests/golden/kube-proxy/`,
//!   from `tests/support/kube_proxy_cases.rs`, included here as source):
//!   its own traced packets with the verdict its golden file holds, and
//!   the systematic decisions of [`decisions::systematic`];
//! - the CLI's fixture cluster (`tests/fixtures/cluster`, behind the
//!   goldens `iptables-save-node-1*`), alone and with
//!   `tests/fixtures/kube-proxy.yaml` (behind
//!   `iptables-save-node-2-kube-proxy-config*`), on all three nodes;
//! - kube-proxy's own `TestOverallIPTablesRules` cluster
//!   (`tests/fixtures/upstream/`), on the node its unit tests fake;
//! - the harness's `fixtures/udp.yaml`, for UDP.
//!
//! The CLI's inputs are read with the CLI's own loader, so they become
//! the same objects `kubehops iptables-save` sees.
//!
//! Each cluster also says its Service range, which kube-proxy's nftables
//! mode reads (`cluster-ips-check` drops the range's unallocated
//! addresses): kube-proxy's unit tests' 172.30.0.0/16 for the golden
//! cases and `TestOverallIPTablesRules`, the API server's default
//! 10.96.0.0/12 (as `kubehops nft --service-cidr` is given it in the CLI's
//! tests) for the others.

use crate::decisions::{self, Decision};
use crate::plan::ClusterSpec;
use kubehops_cli::{input, objects};
use kubehops_core::api::server::{ApiServerConfig, PortRange};
use kubehops_core::net::{ip, Cidr};
use kubehops_core::dataplane::kubeproxy::NodeFeatures;
use std::path::PathBuf;

#[path = "../../kubehops-core/tests/support/kube_proxy_cases.rs"]
mod cases;

/// A cluster and the decisions replayed on it.
pub struct Cluster {
    pub spec: ClusterSpec,
    pub decisions: Vec<Decision>,
}

fn crates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The core's kube-proxy golden cases.
pub fn golden_cases() -> Vec<Cluster> {
    cases::all()
        .into_iter()
        .map(|c| {
            let spec = ClusterSpec {
                name: format!("core golden kube-proxy/{}", c.name),
                nodes: vec![cases::node()],
                services: c.services,
                slices: c.slices,
                proxy: c.cfg,
                service_cidrs: vec![UPSTREAM_SERVICE_CIDR],
            };
            let endpoints: Vec<std::net::Ipv4Addr> = spec.slices.iter().flat_map(|s| s.endpoints.iter().map(|e| e.ip)).collect();
            let pods: Vec<std::net::Ipv4Addr> = std::iter::once(cases::POD).chain(endpoints).collect();
            let mut ds: Vec<Decision> =
                c.packets.iter().map(|(what, src, dst, from_node, want)| decisions::from_case(cases::HOST, what, *src, *dst, *from_node, *want, &pods)).collect();
            ds.extend(decisions::systematic(&spec));
            Cluster { decisions: decisions::dedup(ds), spec }
        })
        .collect()
}

/// The Service range of kube-proxy's unit tests (its fake proxier's),
/// which the golden cases and `TestOverallIPTablesRules` follow.
const UPSTREAM_SERVICE_CIDR: Cidr = Cidr { addr: ip(172, 30, 0, 0), prefix: 16 };

/// Reads objects as `kubehops -f` reads them, with the API server's
/// Service range `service_cidr`.
fn load(name: &str, files: &[PathBuf], range: PortRange, service_cidr: Cidr, features: NodeFeatures) -> Result<Cluster, String> {
    let paths: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    let mut docs = Vec::new();
    for src in input::read_sources(&paths, &mut std::io::empty()).map_err(|e| e.to_string())? {
        docs.extend(input::documents(&src).map_err(|e| e.to_string())?);
    }
    let c = objects::load(&docs, objects::LoadOptions { node_port_range: range, strict: false }).map_err(|e| format!("{name}: {e}"))?;
    let mut proxy = c.proxy.clone().unwrap_or_default();
    proxy.node_features = features;
    let spec = ClusterSpec { name: name.to_string(), nodes: c.nodes, services: c.services, slices: c.slices, proxy, service_cidrs: vec![service_cidr] };
    Ok(Cluster { decisions: decisions::dedup(decisions::systematic(&spec)), spec })
}

/// The CLI's fixtures, kube-proxy's overall cluster and the harness's own.
pub fn fixtures() -> Result<Vec<Cluster>, String> {
    let cli = crates_dir().join("kubehops-cli/tests/fixtures");
    let upstream_range = PortRange::parse("3000-32767").ok_or("bad port range")?;
    // The API server's default range, which the CLI's reader allocates from.
    let default_cidr = ApiServerConfig::default().service_cidr;
    Ok(vec![
        load("CLI fixtures/cluster", &[cli.join("cluster")], PortRange::DEFAULT, default_cidr, NodeFeatures::MODERN)?,
        load("CLI fixtures/cluster + kube-proxy.yaml", &[cli.join("cluster"), cli.join("kube-proxy.yaml")], PortRange::DEFAULT, default_cidr, NodeFeatures::MODERN)?,
        load(
            "upstream TestOverallIPTablesRules",
            &[cli.join("upstream/test-node.yaml"), cli.join("upstream/overall.yaml")],
            upstream_range,
            UPSTREAM_SERVICE_CIDR,
            NodeFeatures::UPSTREAM_TEST_FAKE,
        )?,
        load("harness fixtures/udp.yaml", &[crates_dir().join("kubehops-dataplane-harness/fixtures/udp.yaml")], PortRange::DEFAULT, default_cidr, NodeFeatures::MODERN)?,
    ])
}
