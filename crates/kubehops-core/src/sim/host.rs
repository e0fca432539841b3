//! A machine outside the cluster with a network stack of its own: the
//! laptop running Docker Engine.
//!
//! Such a host decides its packets as a node does: by its nat table (the
//! rules Docker wrote), its conntrack table and its routes. Its neighbour
//! table maps addresses on its bridges to Ethernet addresses; an address
//! not in it is resolved by ARP before the first packet leaves, and an
//! address nobody answers for is marked FAILED, which the kernel reports
//! as "No route to host".

use crate::dataplane::conntrack::ConntrackTable;
use crate::dataplane::docker::{DockerEngine, Mac};
use crate::dataplane::iptables::{RuleRef, Table, TableName};
use crate::net::Cidr;
use crate::sim::actor::ActorId;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// One line of `ip route`: where packets to `dst` leave, and the source
/// address the kernel gives connections it opens that way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub dst: Cidr,
    pub iface: String,
    pub src: Ipv4Addr,
    /// A gateway; `None` for a network the host is on.
    pub via: Option<Ipv4Addr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NeighbourState {
    Reachable,
    /// ARP went unanswered.
    Failed,
}

/// One entry of the neighbour table (`ip neigh`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbour {
    pub ip: Ipv4Addr,
    pub iface: String,
    pub mac: Option<Mac>,
    pub state: NeighbourState,
}

impl Neighbour {
    /// As `ip neigh show` prints it.
    pub fn render(&self) -> String {
        match (self.state, self.mac) {
            (NeighbourState::Reachable, Some(m)) => format!("{} dev {} lladdr {m} REACHABLE", self.ip, self.iface),
            _ => format!("{} dev {} FAILED", self.ip, self.iface),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostNet {
    pub actor: ActorId,
    /// Every address of the host (`-m addrtype LOCAL`), loopback included.
    pub addrs: Vec<Ipv4Addr>,
    pub routes: Vec<Route>,
    pub neighbours: Vec<Neighbour>,
    pub docker: Option<DockerEngine>,
    pub nat: Table,
    /// Empty: see [`crate::dataplane::docker`] on the filter table.
    pub filter: Table,
    pub conntrack: ConntrackTable,
}

impl HostNet {
    /// A host with these addresses and routes, and Docker's rules if it runs Docker.
    pub fn new(actor: ActorId, addrs: Vec<Ipv4Addr>, routes: Vec<Route>, docker: Option<DockerEngine>) -> HostNet {
        let mut filter = Table::new(TableName::Filter);
        for c in TableName::Filter.builtin_chains() {
            filter.ensure_chain(c);
        }
        let mut h = HostNet { actor, addrs, routes, neighbours: Vec::new(), docker, nat: Table::new(TableName::Nat), filter, conntrack: ConntrackTable::default() };
        h.rewrite_rules();
        h
    }

    /// Docker writes its rules again (after a container or setting changed).
    pub fn rewrite_rules(&mut self) {
        self.nat = match &self.docker {
            Some(d) => d.nat_table(),
            None => Table::new(TableName::Nat),
        };
    }

    /// The most specific route to `dst`.
    pub fn route(&self, dst: Ipv4Addr) -> Option<&Route> {
        self.routes.iter().filter(|r| r.dst.contains(dst)).max_by_key(|r| r.dst.prefix)
    }

    /// The source address of a connection the host opens to `dst`.
    pub fn source_for(&self, dst: Ipv4Addr) -> Option<Ipv4Addr> {
        if self.addrs.contains(&dst) {
            return Some(dst);
        }
        self.route(dst).map(|r| r.src)
    }

    /// Routes as the netfilter walk reads them for `-o`.
    pub fn iface_routes(&self) -> Vec<(Cidr, String)> {
        self.routes.iter().map(|r| (r.dst, r.iface.clone())).collect()
    }

    pub fn neighbour(&self, ip: Ipv4Addr) -> Option<&Neighbour> {
        self.neighbours.iter().find(|n| n.ip == ip)
    }

    /// Records what ARP found out (replacing an older entry).
    pub fn learn(&mut self, n: Neighbour) {
        self.neighbours.retain(|o| o.ip != n.ip);
        self.neighbours.push(n);
    }

    /// The host's own Ethernet address on a bridge.
    pub fn mac_on(&self, iface: &str) -> Mac {
        Mac::derived(iface)
    }

    /// The nat table as the kernel's `iptables-save` prints it.
    pub fn save(&self) -> Vec<String> {
        self.nat.save_kernel(&[])
    }

    /// The line of a rule in [`HostNet::save`]: built-in chains in the
    /// kernel's order, then user chains by name.
    pub fn line_of(&self, r: &RuleRef) -> Option<usize> {
        let builtins = TableName::Nat.builtin_chains();
        let mut user: Vec<&str> = self.nat.chains.iter().map(|c| c.name.as_str()).filter(|n| !builtins.contains(n)).collect();
        user.sort_unstable();
        let mut line = 1 + builtins.len() + user.len();
        for name in builtins.iter().chain(&user) {
            let n = self.nat.chain(name).map_or(0, |c| c.rules.len());
            if *name == r.chain {
                return (r.index < n).then_some(line + r.index);
            }
            line += n;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::docker::{DockerNetwork, PortBinding};
    use crate::net::{ip, Protocol};

    #[test]
    fn lines_are_counted_as_the_kernel_prints_them() {
        let mut d = DockerEngine::new(true);
        d.networks.push(DockerNetwork::new("kind", Cidr::new(ip(172, 18, 0, 0), 16), ip(172, 18, 0, 1)));
        d.run("n", "kind", vec![PortBinding { host_ip: std::net::Ipv4Addr::UNSPECIFIED, host_port: 30082, container_port: 30082, proto: Protocol::Tcp }]).unwrap();
        let h = HostNet::new(ActorId(0), vec![ip(127, 0, 0, 1)], vec![], Some(d));
        let lines = h.save();
        for (chain, index) in [("PREROUTING", 0), ("OUTPUT", 0), ("POSTROUTING", 1), ("DOCKER", 0)] {
            let r = RuleRef { table: TableName::Nat, chain: chain.into(), index };
            let at = h.line_of(&r).unwrap();
            assert_eq!(lines[at], h.nat.rule(&r).unwrap().render_kernel(chain), "{chain} {index}");
        }
        assert_eq!(h.line_of(&RuleRef { table: TableName::Nat, chain: "DOCKER".into(), index: 1 }), None);
    }

    #[test]
    fn routes_pick_the_most_specific_and_give_the_source() {
        let r = |c: &str, i: &str, s| Route { dst: c.parse().unwrap(), iface: i.into(), src: s, via: None };
        let h = HostNet::new(ActorId(0), vec![ip(127, 0, 0, 1), ip(192, 168, 1, 20), ip(172, 18, 0, 1)], vec![r("0.0.0.0/0", "wlan0", ip(192, 168, 1, 20)), r("172.18.0.0/16", "br-x", ip(172, 18, 0, 1))], None);
        assert_eq!(h.route(ip(172, 18, 0, 50)).unwrap().iface, "br-x");
        assert_eq!(h.source_for(ip(172, 18, 0, 50)), Some(ip(172, 18, 0, 1)));
        assert_eq!(h.source_for(ip(8, 8, 8, 8)), Some(ip(192, 168, 1, 20)));
        assert_eq!(h.source_for(ip(127, 0, 0, 1)), Some(ip(127, 0, 0, 1)), "loopback to loopback");
        let n = Neighbour { ip: ip(172, 18, 0, 50), iface: "br-x".into(), mac: Some(Mac([2, 0x42, 0xac, 0x12, 0, 3])), state: NeighbourState::Reachable };
        assert_eq!(n.render(), "172.18.0.50 dev br-x lladdr 02:42:ac:12:00:03 REACHABLE");
    }
}
