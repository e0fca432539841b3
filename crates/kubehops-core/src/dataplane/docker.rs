//! Docker Engine on a host: its bridge networks, its containers with their
//! published ports, and the nat rules it writes for them.
//!
//! A published port is two things in Docker. The port allocator remembers
//! which host address and port are taken, and refuses a second claim in
//! its own words (`Bind for 0.0.0.0:30082 failed: port is already
//! allocated`). The bridge driver writes a DNAT rule in the host's nat
//! table, chain `DOCKER`, reached from PREROUTING and OUTPUT through
//! `-m addrtype --dst-type LOCAL`. With the userland proxy on (Docker's
//! default) the OUTPUT jump leaves out 127.0.0.0/8, so a connection to
//! `localhost` is accepted by `docker-proxy`, which opens a connection of
//! its own to the container; with `"userland-proxy": false` (hairpin
//! mode) the DNAT applies to localhost too and a masquerade rule gives the
//! packet the bridge's address.
//!
//! The rules are those of moby's bridge driver (`iptabler`), in the order
//! it writes them: the jumps appended, each network's masquerade inserted
//! at the top, each port's DNAT appended to `DOCKER`. Only the nat table
//! is written: Docker's filter chains (`DOCKER-FORWARD` and the rest) see
//! forwarded traffic only, and no packet in the model is forwarded by the
//! host; the `raw` table's guard against direct access is left out too.
//!
//! Docker draws container MAC addresses at random; here they are derived
//! from the container's name so that a story repeats.

use crate::dataplane::iptables::{Match, Rule, Table, TableName, Target};
use crate::net::{Cidr, Protocol, SockAddr};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::Ipv4Addr;

/// An Ethernet address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// A locally administered unicast address derived from `seed`, as
    /// Docker's random ones are shaped (first byte `xxxxxx10`).
    pub fn derived(seed: &str) -> Mac {
        let h = crate::hash::sha256(seed.as_bytes());
        Mac([(h[0] & 0xfe) | 0x02, h[1], h[2], h[3], h[4], h[5]])
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

/// A user-defined bridge network (`docker network create`), or the
/// default `bridge` network on `docker0`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DockerNetwork {
    pub name: String,
    /// The network's ID: 64 hexadecimal digits.
    pub id: String,
    pub subnet: Cidr,
    /// The bridge's own address: the host on this network.
    pub gateway: Ipv4Addr,
}

impl DockerNetwork {
    /// A network named `name`, with an ID derived from the name.
    pub fn new(name: &str, subnet: Cidr, gateway: Ipv4Addr) -> DockerNetwork {
        DockerNetwork { name: name.into(), id: hex_id(name), subnet, gateway }
    }

    /// The bridge device: `docker0` for the default network, else
    /// `br-` and the first 12 digits of the ID.
    pub fn bridge(&self) -> String {
        if self.name == "bridge" {
            "docker0".into()
        } else {
            format!("br-{}", &self.id[..12])
        }
    }
}

/// 64 hexadecimal digits derived from a name (Docker's IDs are random).
pub fn hex_id(name: &str) -> String {
    crate::hash::sha256(name.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// One `--publish HOST_IP:HOST_PORT:CONTAINER_PORT/PROTO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortBinding {
    /// `0.0.0.0` means every address of the host.
    pub host_ip: Ipv4Addr,
    pub host_port: u16,
    pub container_port: u16,
    pub proto: Protocol,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Container {
    pub name: String,
    pub id: String,
    /// The network it is attached to, by name.
    pub network: String,
    pub ip: Ipv4Addr,
    pub mac: Mac,
    pub ports: Vec<PortBinding>,
}

/// Docker's refusals, in the daemon's words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DockerError {
    /// The port allocator already holds the address and port.
    PortAllocated { endpoint: String, endpoint_id: String, ip: Ipv4Addr, port: u16 },
    NoSuchNetwork(String),
    /// No free address is left in the network's subnet.
    NoAddress(String),
}

impl fmt::Display for DockerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DockerError::PortAllocated { endpoint, endpoint_id, ip, port } => write!(
                f,
                "Error response from daemon: driver failed programming external connectivity on endpoint {endpoint} ({endpoint_id}): Bind for {ip}:{port} failed: port is already allocated"
            ),
            DockerError::NoSuchNetwork(n) => write!(f, "Error response from daemon: network {n} not found"),
            DockerError::NoAddress(n) => write!(f, "Error response from daemon: no available IPv4 addresses on this network's address pools: {n}"),
        }
    }
}

impl std::error::Error for DockerError {}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DockerEngine {
    /// `userland-proxy` in daemon.json; true unless switched off.
    pub userland_proxy: bool,
    /// In creation order; the first is the default `bridge` network.
    pub networks: Vec<DockerNetwork>,
    /// In creation order.
    pub containers: Vec<Container>,
}

impl DockerEngine {
    /// A fresh engine with its default `bridge` network on docker0.
    pub fn new(userland_proxy: bool) -> DockerEngine {
        let bridge = DockerNetwork::new("bridge", Cidr::new(Ipv4Addr::new(172, 17, 0, 0), 16), Ipv4Addr::new(172, 17, 0, 1));
        DockerEngine { userland_proxy, networks: vec![bridge], containers: Vec::new() }
    }

    pub fn network(&self, name: &str) -> Option<&DockerNetwork> {
        self.networks.iter().find(|n| n.name == name)
    }

    pub fn container(&self, name: &str) -> Option<&Container> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// The container that holds `ip` on one of the networks.
    pub fn container_at(&self, ip: Ipv4Addr) -> Option<&Container> {
        self.containers.iter().find(|c| c.ip == ip)
    }

    /// `docker run --name NAME --net NETWORK --publish ...`: attaches a
    /// container at the network's next free address (after the gateway)
    /// and claims its ports, or refuses as the daemon does.
    pub fn run(&mut self, name: &str, network: &str, ports: Vec<PortBinding>) -> Result<&Container, DockerError> {
        let net = self.network(network).cloned().ok_or_else(|| DockerError::NoSuchNetwork(network.into()))?;
        let mut claimed: Vec<PortBinding> = Vec::new();
        for p in &ports {
            let held = self.containers.iter().flat_map(|c| c.ports.iter()).chain(claimed.iter());
            if let Some(ip) = allocated(held, p) {
                return Err(DockerError::PortAllocated { endpoint: name.into(), endpoint_id: hex_id(&format!("endpoint {name}")), ip, port: p.host_port });
            }
            claimed.push(*p);
        }
        let used: Vec<Ipv4Addr> = self.containers.iter().filter(|c| c.network == network).map(|c| c.ip).collect();
        let ip = (2..net.subnet.size().saturating_sub(1))
            .filter_map(|o| net.subnet.nth(o))
            .find(|a| *a != net.gateway && !used.contains(a))
            .ok_or_else(|| DockerError::NoAddress(network.into()))?;
        self.containers.push(Container { name: name.into(), id: hex_id(name), network: network.into(), ip, mac: Mac::derived(name), ports });
        Ok(self.containers.last().expect("just pushed"))
    }

    /// The nat table Docker keeps on the host for its networks and ports.
    pub fn nat_table(&self) -> Table {
        let mut t = Table::new(TableName::Nat);
        for c in TableName::Nat.builtin_chains() {
            t.ensure_chain(c);
        }
        t.ensure_chain("DOCKER");
        let local = Match::DstTypeLocal { negate: false };
        t.append("PREROUTING", Rule::new(vec![local.clone()], Target::Jump("DOCKER".into())));
        let mut output = vec![local];
        if self.userland_proxy {
            // Connections to localhost are docker-proxy's.
            output.insert(0, Match::Destination { cidr: Cidr::new(Ipv4Addr::new(127, 0, 0, 0), 8), negate: true });
        }
        t.append("OUTPUT", Rule::new(output, Target::Jump("DOCKER".into())));
        let mut post = Vec::new();
        for n in &self.networks {
            // Each network's rules are inserted above the older ones.
            let mut mine = Vec::new();
            if !self.userland_proxy {
                mine.push(Rule::new(vec![out(&n.bridge(), false), Match::SrcTypeLocal { negate: false }], Target::Masquerade { random_fully: false }));
            }
            mine.push(Rule::new(vec![Match::Source { cidr: n.subnet, negate: false }, out(&n.bridge(), true)], Target::Masquerade { random_fully: false }));
            mine.extend(post);
            post = mine;
        }
        for r in post {
            t.append("POSTROUTING", r);
        }
        for c in &self.containers {
            self.container_rules(c, &mut t);
        }
        t
    }

    /// A container's DNAT per published port, and in hairpin mode the
    /// masquerade for a container that reaches itself through its port.
    fn container_rules(&self, c: &Container, t: &mut Table) {
        let Some(bridge) = self.network(&c.network).map(|n| n.bridge()) else { return };
        for p in &c.ports {
            let mut m = Vec::new();
            if !p.host_ip.is_unspecified() {
                m.push(Match::Destination { cidr: Cidr::new(p.host_ip, 32), negate: false });
            }
            if self.userland_proxy {
                m.push(Match::InInterface { name: bridge.clone(), negate: true });
            }
            m.extend([Match::Protocol(p.proto), Match::DestinationPort(p.host_port)]);
            t.append("DOCKER", Rule::new(m, Target::Dnat(SockAddr::new(c.ip, p.container_port))));
            if !self.userland_proxy {
                let me = Cidr::new(c.ip, 32);
                let m = vec![Match::Source { cidr: me, negate: false }, Match::Destination { cidr: me, negate: false }, Match::Protocol(p.proto), Match::DestinationPort(p.container_port)];
                t.append("POSTROUTING", Rule::new(m, Target::Masquerade { random_fully: false }));
            }
        }
    }

    /// The bridges whose `route_localnet` Docker sets: every network's,
    /// in hairpin mode (moby's `setupLoopbackAddressesRouting`), so that a
    /// connection from 127.0.0.1 DNATed to a container may leave on the
    /// bridge, and its answers, addressed back to 127.0.0.1, come in.
    pub fn route_localnet_bridges(&self) -> Vec<String> {
        if self.userland_proxy {
            return Vec::new();
        }
        self.networks.iter().map(DockerNetwork::bridge).collect()
    }

    /// The host port docker-proxy listens on for `dst`, if one is
    /// published there: `(container address, port)` it forwards to.
    pub fn proxy_target(&self, dst: SockAddr, proto: Protocol) -> Option<SockAddr> {
        self.containers.iter().find_map(|c| {
            let p = c.ports.iter().find(|p| p.proto == proto && p.host_port == dst.port && (p.host_ip.is_unspecified() || p.host_ip == dst.ip))?;
            Some(SockAddr::new(c.ip, p.container_port))
        })
    }

    /// `docker ps --filter name=FILTER --format "{{.Ports}}"`: one line per
    /// running container whose name contains `filter`, newest first.
    pub fn ps_ports(&self, filter: &str) -> Vec<String> {
        self.containers.iter().rev().filter(|c| c.name.contains(filter)).map(|c| displayable_ports(&c.ports)).collect()
    }
}

fn out(bridge: &str, negate: bool) -> Match {
    Match::OutInterface { name: bridge.into(), negate }
}

/// Whether a binding collides with one already held, as Docker's port
/// allocator decides: the same port and protocol on the same address, or
/// on any address when either side is 0.0.0.0. Returns the address whose
/// claim is in the way, which is the one the error names.
fn allocated<'a>(held: impl Iterator<Item = &'a PortBinding>, p: &PortBinding) -> Option<Ipv4Addr> {
    let mut held = held.filter(|h| h.proto == p.proto && h.host_port == p.host_port);
    held.find(|h| h.host_ip == p.host_ip || h.host_ip.is_unspecified() || p.host_ip.is_unspecified()).map(|h| h.host_ip)
}

/// The Ports column as the docker CLI prints it: sorted by container
/// port, then address; bindings whose host port equals the container
/// port are grouped per address and protocol (consecutive ports become a
/// range), the others are listed after them as they are.
pub fn displayable_ports(ports: &[PortBinding]) -> String {
    let mut sorted = ports.to_vec();
    crate::sort::by_key(&mut sorted, |p| (p.container_port, p.host_ip, p.host_port, p.proto.lower()));
    // (address, protocol) → runs of ports, in the order the keys appear.
    type Runs = Vec<(u16, u16)>;
    let mut groups: Vec<((Ipv4Addr, Protocol), Runs)> = Vec::new();
    let mut mapped = Vec::new();
    for p in &sorted {
        if p.host_port != p.container_port {
            mapped.push(format!("{}:{}->{}/{}", p.host_ip, p.host_port, p.container_port, p.proto.lower()));
            continue;
        }
        let key = (p.host_ip, p.proto);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, runs)) => match runs.last_mut() {
                Some(run) if run.1.checked_add(1) == Some(p.container_port) => run.1 = p.container_port,
                _ => runs.push((p.container_port, p.container_port)),
            },
            None => groups.push((key, vec![(p.container_port, p.container_port)])),
        }
    }
    let mut out: Vec<String> = Vec::new();
    for ((ip, proto), runs) in &groups {
        for (a, b) in runs {
            let ports = if a == b { a.to_string() } else { format!("{a}-{b}") };
            out.push(format!("{ip}:{ports}->{ports}/{}", proto.lower()));
        }
    }
    out.extend(mapped);
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    fn bind(host_ip: Ipv4Addr, host_port: u16, container_port: u16) -> PortBinding {
        PortBinding { host_ip, host_port, container_port, proto: Protocol::Tcp }
    }

    fn engine(proxy: bool) -> DockerEngine {
        let mut d = DockerEngine::new(proxy);
        d.networks.push(DockerNetwork::new("kind", Cidr::new(ip(172, 18, 0, 0), 16), ip(172, 18, 0, 1)));
        d
    }

    #[test]
    fn the_ports_column_groups_like_the_docker_cli() {
        let any = Ipv4Addr::UNSPECIFIED;
        // kind's control plane: the mapping of the config, and the API
        // server on a port of loopback picked at random.
        assert_eq!(displayable_ports(&[bind(any, 30082, 30082), bind(ip(127, 0, 0, 1), 39023, 6443)]), "0.0.0.0:30082->30082/tcp, 127.0.0.1:39023->6443/tcp");
        assert_eq!(displayable_ports(&[bind(any, 81, 81), bind(any, 80, 80), bind(any, 90, 90)]), "0.0.0.0:80-81->80-81/tcp, 0.0.0.0:90->90/tcp");
        assert_eq!(displayable_ports(&[]), "");
    }

    #[test]
    fn the_nat_rules_have_dockers_shape_in_both_modes() {
        let mut d = engine(true);
        d.run("apollo11-control-plane", "kind", vec![bind(Ipv4Addr::UNSPECIFIED, 30082, 30082), bind(ip(127, 0, 0, 1), 39023, 6443)]).unwrap();
        let br = d.network("kind").unwrap().bridge();
        let lines: Vec<String> = d.nat_table().chains.iter().flat_map(|c| c.rules.iter().map(|r| r.render_kernel(&c.name)).collect::<Vec<_>>()).collect();
        assert_eq!(
            lines,
            [
                "-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER".to_string(),
                "-A OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j DOCKER".into(),
                format!("-A POSTROUTING -s 172.18.0.0/16 ! -o {br} -j MASQUERADE"),
                "-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE".into(),
                format!("-A DOCKER ! -i {br} -p tcp -m tcp --dport 30082 -j DNAT --to-destination 172.18.0.2:30082"),
                format!("-A DOCKER -d 127.0.0.1/32 ! -i {br} -p tcp -m tcp --dport 39023 -j DNAT --to-destination 172.18.0.2:6443"),
            ]
        );
        d.userland_proxy = false;
        let lines: Vec<String> = d.nat_table().chains.iter().flat_map(|c| c.rules.iter().map(|r| r.render_kernel(&c.name)).collect::<Vec<_>>()).collect();
        assert!(lines.contains(&"-A OUTPUT -m addrtype --dst-type LOCAL -j DOCKER".to_string()), "{lines:#?}");
        assert!(lines.contains(&format!("-A POSTROUTING -o {br} -m addrtype --src-type LOCAL -j MASQUERADE")));
        assert!(lines.contains(&"-A DOCKER -p tcp -m tcp --dport 30082 -j DNAT --to-destination 172.18.0.2:30082".to_string()));
        assert!(lines.contains(&"-A POSTROUTING -s 172.18.0.2/32 -d 172.18.0.2/32 -p tcp -m tcp --dport 30082 -j MASQUERADE".to_string()));
    }

    #[test]
    fn a_port_already_published_is_refused_in_dockers_words() {
        let mut d = engine(true);
        let any = Ipv4Addr::UNSPECIFIED;
        let first = d.run("apollo11-control-plane", "kind", vec![bind(any, 30082, 30082)]).unwrap().clone();
        assert_eq!((first.ip, first.name.as_str()), (ip(172, 18, 0, 2), "apollo11-control-plane"));
        let e = d.run("apollo11-worker", "kind", vec![bind(any, 30082, 30082)]).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("Error response from daemon: driver failed programming external connectivity on endpoint apollo11-worker ("), "{text}");
        assert!(text.ends_with("): Bind for 0.0.0.0:30082 failed: port is already allocated"), "{text}");
        // A specific address collides with the wildcard claim, and the
        // error names the claim in the way.
        let e = d.run("other", "kind", vec![bind(ip(127, 0, 0, 1), 30082, 80)]).unwrap_err();
        assert!(e.to_string().ends_with("Bind for 0.0.0.0:30082 failed: port is already allocated"), "{e}");
        // Another port, or another protocol, is free.
        assert!(d.run("ok", "kind", vec![bind(any, 30083, 30083), PortBinding { proto: Protocol::Udp, ..bind(any, 30082, 30082) }]).is_ok());
        assert_eq!(d.container("ok").unwrap().ip, ip(172, 18, 0, 3), "the refused containers took no address");
        assert!(matches!(d.run("x", "nope", vec![]), Err(DockerError::NoSuchNetwork(_))));
    }

    #[test]
    fn macs_are_locally_administered_unicast() {
        for name in ["apollo11-control-plane", "apollo11-worker", "x"] {
            let m = Mac::derived(name);
            assert_eq!(m.0[0] & 0x03, 0x02, "{m}");
        }
        assert_ne!(Mac::derived("a"), Mac::derived("b"));
        assert_eq!(Mac([2, 0x42, 0xac, 0x12, 0, 3]).to_string(), "02:42:ac:12:00:03");
    }
}
