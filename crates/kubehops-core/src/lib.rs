//! kubehops-core: a model of how traffic reaches Pods through Kubernetes
//! Services, in plain Rust.
//!
//! The model has the same parts as a cluster, one folder per layer:
//!
//! - [`api`]: the API objects, the API server that validates them and
//!   allocates addresses, and kubectl's view of them;
//! - [`controllers`]: what fills `status.loadBalancer` (the cloud's
//!   controller);
//! - [`dataplane`]: iptables rules as data, kube-proxy that writes them,
//!   the netfilter walk that applies them to a packet, and conntrack that
//!   undoes the rewrites on replies;
//! - [`dns`]: CoreDNS's answers for names in the cluster domain;
//! - [`sim`]: the cluster in motion, moving messages and packets hop by hop;
//! - [`scenarios`]: the stories told by running the simulator, as data;
//! - [`scene`]: where things are drawn and where a packet is at a moment;
//! - [`link`]: the URL that opens any state, and [`compact`]: an edited
//!   manifest packed to travel in it;
//! - [`glossary`]: the terms of art the story uses, each with a short
//!   definition;
//! - [`embed`]: how it is shown (embedded, themed, presented) and the
//!   messages it exchanges with a host page and a presenter view;
//! - [`worker`]: the messages between the page and the Web Worker that
//!   reads a pasted cluster and builds it.
//!
//! Nothing here depends on a browser: every type is plain data with serde.

pub mod api;
pub mod compact;
pub mod controllers;
pub mod dataplane;
pub mod decimal;
pub mod dns;
pub mod embed;
pub mod glossary;
pub mod golden;
pub mod hash;
pub mod link;
pub mod net;
pub mod scenarios;
pub mod scene;
pub mod sim;
pub mod sort;
pub mod worker;
