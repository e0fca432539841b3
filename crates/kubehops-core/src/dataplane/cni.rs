//! Rules a node holds beside kube-proxy's: the network plugin's egress
//! masquerade.
//!
//! A Pod address means nothing outside the cluster, so traffic from a Pod
//! to the internet must leave with the node's address. kube-proxy does
//! not do that; the network plugin (or ip-masq-agent) does, with a chain
//! hooked into nat POSTROUTING that masquerades everything not bound for
//! the Pod network. The model writes it as ip-masq-agent does, or as
//! kindnet (kind's network plugin, which borrowed ip-masq-agent's design)
//! does with its own chain and comments.

use crate::dataplane::iptables::{Match, Rule, Table, Target};
use crate::net::Cidr;
use serde::{Deserialize, Serialize};

/// The chain ip-masq-agent keeps.
pub const CHAIN: &str = "IP-MASQ-AGENT";

/// Which agent writes the masquerade: they differ in chain, comments and
/// the order of the POSTROUTING jump's matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MasqAgent {
    #[default]
    IpMasqAgent,
    /// kindnetd's `KIND-MASQ-AGENT`.
    Kindnet,
}

impl MasqAgent {
    pub fn chain(self) -> &'static str {
        match self {
            MasqAgent::IpMasqAgent => CHAIN,
            MasqAgent::Kindnet => "KIND-MASQ-AGENT",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            MasqAgent::IpMasqAgent => "ip-masq-agent",
            MasqAgent::Kindnet => "kind-masq-agent",
        }
    }
}

/// Appends ip-masq-agent's chain to a node's nat table: traffic to
/// `pod_network` stays as it is, everything else leaving the node is
/// masqueraded.
pub fn egress_masquerade(nat: &mut Table, pod_network: Cidr) {
    egress_masquerade_by(nat, pod_network, MasqAgent::IpMasqAgent);
}

/// The same masquerade as `agent` writes it.
pub fn egress_masquerade_by(nat: &mut Table, pod_network: Cidr, agent: MasqAgent) {
    let (chain, p) = (agent.chain(), agent.prefix());
    let comment = |c: String| Match::Comment(c);
    let jump = comment(format!("{p}: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom {chain} chain"));
    let not_local = Match::DstTypeLocal { negate: true };
    // ip-masq-agent names the comment first; kindnet the address type.
    let matches = match agent {
        MasqAgent::IpMasqAgent => vec![jump, not_local],
        MasqAgent::Kindnet => vec![not_local, jump],
    };
    nat.append("POSTROUTING", Rule::new(matches, Target::Jump(chain.into())));
    nat.append(chain, Rule::new(vec![Match::Destination { cidr: pod_network, negate: false }, comment(format!("{p}: local traffic is not subject to MASQUERADE"))], Target::Return));
    nat.append(chain, Rule::new(vec![comment(format!("{p}: outbound traffic is subject to MASQUERADE (must be last in chain)"))], Target::Masquerade { random_fully: false }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::iptables::TableName;
    use crate::net::ip;

    #[test]
    fn kindnet_writes_its_own_chain_as_iptables_save_shows_it() {
        let mut nat = Table::new(TableName::Nat);
        egress_masquerade_by(&mut nat, Cidr::new(ip(10, 244, 0, 0), 16), MasqAgent::Kindnet);
        let lines: Vec<String> = nat.chains.iter().flat_map(|c| c.rules.iter().map(|r| r.render_kernel(&c.name)).collect::<Vec<_>>()).collect();
        assert_eq!(
            lines,
            [
                "-A POSTROUTING -m addrtype ! --dst-type LOCAL -m comment --comment \"kind-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom KIND-MASQ-AGENT chain\" -j KIND-MASQ-AGENT",
                "-A KIND-MASQ-AGENT -d 10.244.0.0/16 -m comment --comment \"kind-masq-agent: local traffic is not subject to MASQUERADE\" -j RETURN",
                "-A KIND-MASQ-AGENT -m comment --comment \"kind-masq-agent: outbound traffic is subject to MASQUERADE (must be last in chain)\" -j MASQUERADE",
            ]
        );
    }
}
