//! A node's data plane: iptables rules as data ([`iptables`]), the rules
//! kube-proxy writes ([`kubeproxy`]), the netfilter walk that applies them
//! ([`netfilter`]), the connection tracking that remembers what they did
//! ([`conntrack`]), and one packet traced through a node ([`trace`]).
//! Beside the cluster: Docker Engine's bridge networks and published
//! ports on a host ([`docker`]) and kind's nodes as its containers
//! ([`kind`]).
//! kube-proxy's nftables mode writes its own table ([`nftables`]).
//!
//! Architecture Invariant: a packet is rewritten only by [`netfilter`]
//! walking rules, or by a [`conntrack`] entry those rules created.

pub mod cni;
pub mod conntrack;
pub mod docker;
pub mod endpoints;
pub mod iptables;
pub mod kind;
pub mod kubeproxy;
pub mod netfilter;
pub mod nftables;
pub mod overlay;
pub mod path;
pub mod proxy;
pub mod rules;
pub mod tcp;
pub mod trace;
