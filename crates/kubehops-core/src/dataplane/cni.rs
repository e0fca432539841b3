//! Rules a node holds beside kube-proxy's: the network plugin's egress
//! masquerade.
//!
//! A Pod address means nothing outside the cluster, so traffic from a Pod
//! to the internet must leave with the node's address. kube-proxy does
//! not do that; the network plugin (or ip-masq-agent) does, with a chain
//! hooked into nat POSTROUTING that masquerades everything not bound for
//! the Pod network. The model writes it as ip-masq-agent does.

use crate::dataplane::iptables::{Match, Rule, Table, Target};
use crate::net::Cidr;

/// The chain ip-masq-agent keeps.
pub const CHAIN: &str = "IP-MASQ-AGENT";

/// Appends ip-masq-agent's chain to a node's nat table: traffic to
/// `pod_network` stays as it is, everything else leaving the node is
/// masqueraded.
pub fn egress_masquerade(nat: &mut Table, pod_network: Cidr) {
    let comment = |c: &str| Match::Comment(c.into());
    nat.append(
        "POSTROUTING",
        Rule::new(
            vec![comment("ip-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom IP-MASQ-AGENT chain"), Match::DstTypeLocal { negate: true }],
            Target::Jump(CHAIN.into()),
        ),
    );
    nat.append(CHAIN, Rule::new(vec![Match::Destination { cidr: pod_network, negate: false }, comment("ip-masq-agent: local traffic is not subject to MASQUERADE")], Target::Return));
    nat.append(CHAIN, Rule::new(vec![comment("ip-masq-agent: outbound traffic is subject to MASQUERADE (must be last in chain)")], Target::Masquerade { random_fully: false }));
}
