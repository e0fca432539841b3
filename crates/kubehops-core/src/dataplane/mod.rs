//! A node's data plane: iptables rules as data ([`iptables`]), the rules
//! kube-proxy writes ([`kubeproxy`]), the netfilter walk that applies them
//! ([`netfilter`]), the connection tracking that remembers what they did
//! ([`conntrack`]), and one packet traced through a node ([`trace`]).
//!
//! Architecture Invariant: a packet is rewritten only by [`netfilter`]
//! walking rules, or by a [`conntrack`] entry those rules created.

pub mod cni;
pub mod conntrack;
pub mod iptables;
pub mod kubeproxy;
pub mod netfilter;
pub mod trace;
