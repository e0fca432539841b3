//! kubehops-core: a model of how traffic reaches Pods through Kubernetes
//! Services, in plain Rust.
//!
//! The model has the same parts as a cluster: an API server that validates
//! Services and allocates addresses ([`apiserver`]), kube-proxy that turns
//! Services and EndpointSlices into iptables rules ([`kubeproxy`]), a
//! netfilter walk that applies those rules to a packet ([`netfilter`]),
//! conntrack that undoes the rewrites on replies ([`conntrack`]), and a
//! cloud-controller-manager with its load balancer ([`cloud`]).
//! [`sim`] moves packets between them hop by hop, and [`walkthrough`]
//! records what happened as data for a renderer.
//!
//! Nothing here depends on a browser: every type is plain data with serde.

pub mod api;
pub mod apiserver;
pub mod cloud;
pub mod conntrack;
pub mod dns;
pub mod golden;
pub mod hash;
pub mod iptables;
pub mod kubectl;
pub mod link;
pub mod kubeproxy;
pub mod net;
pub mod netfilter;
pub mod scene;
pub mod sim;
pub mod trace;
pub mod walkthrough;
