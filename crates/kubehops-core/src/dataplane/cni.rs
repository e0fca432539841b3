//! Rules a node holds beside kube-proxy's: the network plugin's egress
//! masquerade.
//!
//! A Pod address means nothing outside the cluster, so traffic from a Pod
//! to the internet must leave with the node's address. kube-proxy does
//! not do that; the network plugin (or ip-masq-agent) does, with a chain
//! hooked into nat POSTROUTING that masquerades everything not bound for
//! the Pod network. The model writes it as ip-masq-agent does (configured
//! with the Pod network as its only `nonMasqueradeCIDRs`, link-local
//! traffic left alone as by default, `--random-fully` where iptables has
//! it), or as kindnet (kind's network plugin, which borrowed
//! ip-masq-agent's design) does with its own chain and comments, and no
//! `--random-fully`.

use crate::dataplane::iptables::{Match, Rule, Table, Target};
use crate::net::{ip, Cidr};
use serde::{Deserialize, Serialize};

/// The chain ip-masq-agent keeps.
pub const CHAIN: &str = "IP-MASQ-AGENT";

/// Which agent writes the masquerade: they differ in chain, comments, the
/// order of the POSTROUTING jump's matches and their MASQUERADE.
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

/// The link-local range, which ip-masq-agent never masquerades unless
/// told to (`masqLinkLocal: false`, its default).
const LINK_LOCAL: Cidr = Cidr { addr: ip(169, 254, 0, 0), prefix: 16 };

/// Appends ip-masq-agent's chain to a node's nat table: traffic to
/// `pod_network` (and link-local traffic) stays as it is, everything else
/// leaving the node is masqueraded, with `--random-fully` when the node's
/// iptables has it (`random_fully`).
pub fn egress_masquerade(nat: &mut Table, pod_network: Cidr, random_fully: bool) {
    egress_masquerade_by(nat, pod_network, MasqAgent::IpMasqAgent, random_fully);
}

/// The same masquerade as `agent` writes it. kindnet never asks for
/// `--random-fully`, whatever the node can do.
pub fn egress_masquerade_by(nat: &mut Table, pod_network: Cidr, agent: MasqAgent, random_fully: bool) {
    let (chain, p) = (agent.chain(), agent.prefix());
    let comment = |c: String| Match::Comment(c);
    let jump = comment(format!("{p}: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom {chain} chain"));
    let not_local = Match::DstTypeLocal { negate: true };
    let local = || comment(format!("{p}: local traffic is not subject to MASQUERADE"));
    let outbound = comment(format!("{p}: outbound traffic is subject to MASQUERADE (must be last in chain)"));
    let to = |cidr| Match::Destination { cidr, negate: false };
    match agent {
        // ip-masq-agent names the comment first, in every rule.
        MasqAgent::IpMasqAgent => {
            nat.append("POSTROUTING", Rule::new(vec![jump, not_local], Target::Jump(chain.into())));
            for cidr in [LINK_LOCAL, pod_network] {
                nat.append(chain, Rule::new(vec![local(), to(cidr)], Target::Return));
            }
            nat.append(chain, Rule::new(vec![outbound], Target::Masquerade { random_fully }));
        }
        MasqAgent::Kindnet => {
            nat.append("POSTROUTING", Rule::new(vec![not_local, jump], Target::Jump(chain.into())));
            nat.append(chain, Rule::new(vec![to(pod_network), local()], Target::Return));
            nat.append(chain, Rule::new(vec![outbound], Target::Masquerade { random_fully: false }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::iptables::TableName;
    use crate::net::ip;

    #[test]
    fn ip_masq_agent_writes_its_rules_as_its_sync_does() {
        // As ip-masq-agent's syncMasqRules writes them (comment first, the
        // link-local range before the configured ones, --random-fully when
        // iptables supports it), and as the kernel prints them back.
        let mut nat = Table::new(TableName::Nat);
        egress_masquerade(&mut nat, Cidr::new(ip(10, 244, 0, 0), 16), true);
        let written: Vec<String> = nat.chains.iter().flat_map(|c| c.rules.iter().map(|r| r.render(&c.name)).collect::<Vec<_>>()).collect();
        assert_eq!(
            written,
            [
                "-A POSTROUTING -m comment --comment \"ip-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom IP-MASQ-AGENT chain\" -m addrtype ! --dst-type LOCAL -j IP-MASQ-AGENT",
                "-A IP-MASQ-AGENT -m comment --comment \"ip-masq-agent: local traffic is not subject to MASQUERADE\" -d 169.254.0.0/16 -j RETURN",
                "-A IP-MASQ-AGENT -m comment --comment \"ip-masq-agent: local traffic is not subject to MASQUERADE\" -d 10.244.0.0/16 -j RETURN",
                "-A IP-MASQ-AGENT -m comment --comment \"ip-masq-agent: outbound traffic is subject to MASQUERADE (must be last in chain)\" -j MASQUERADE --random-fully",
            ]
        );
        let kernel = nat.chain(CHAIN).unwrap().rules[1].render_kernel(CHAIN);
        assert_eq!(kernel, "-A IP-MASQ-AGENT -d 10.244.0.0/16 -m comment --comment \"ip-masq-agent: local traffic is not subject to MASQUERADE\" -j RETURN");
        // An old iptables: no --random-fully.
        let mut old = Table::new(TableName::Nat);
        egress_masquerade(&mut old, Cidr::new(ip(10, 244, 0, 0), 16), false);
        assert_eq!(old.chain(CHAIN).unwrap().rules[2].target, Target::Masquerade { random_fully: false });
    }

    #[test]
    fn kindnet_writes_its_own_chain_as_iptables_save_shows_it() {
        let mut nat = Table::new(TableName::Nat);
        egress_masquerade_by(&mut nat, Cidr::new(ip(10, 244, 0, 0), 16), MasqAgent::Kindnet, true);
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
