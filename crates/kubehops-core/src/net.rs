//! Addresses, protocols and packets: the wire-level vocabulary of the model.
//!
//! Everything here is a typed value; text appears only when a value is
//! displayed. Parsing functions return `None` or an error on bad input and
//! never panic.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// A transport protocol as Kubernetes names it in `spec.ports[].protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub enum Protocol {
    #[default]
    #[serde(rename = "TCP")]
    Tcp,
    #[serde(rename = "UDP")]
    Udp,
    #[serde(rename = "SCTP")]
    Sctp,
}

impl Protocol {
    /// The name as the Kubernetes API spells it (`TCP`).
    pub fn api_name(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }

    /// The name as iptables and conntrack spell it (`tcp`).
    pub fn lower(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }

    /// The IANA protocol number, as `conntrack -L` prints it.
    pub fn number(self) -> u8 {
        match self {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Sctp => 132,
        }
    }

    pub fn parse(s: &str) -> Option<Protocol> {
        match s.to_ascii_uppercase().as_str() {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.api_name())
    }
}

/// An IPv4 prefix such as `10.244.0.0/16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cidr {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Cidr {
    /// Builds a prefix; the host bits of `addr` are cleared. `prefix` is
    /// clamped to 32.
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Cidr {
        let prefix = prefix.min(32);
        Cidr { addr: Ipv4Addr::from(u32::from(addr) & Self::mask(prefix)), prefix }
    }

    fn mask(prefix: u8) -> u32 {
        if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(prefix.min(32)))
        }
    }

    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & Self::mask(self.prefix) == u32::from(self.addr)
    }

    /// Number of addresses in the prefix.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// The address at `offset` from the start, if it is inside the prefix.
    pub fn nth(&self, offset: u64) -> Option<Ipv4Addr> {
        (offset < self.size()).then(|| Ipv4Addr::from(u32::from(self.addr).wrapping_add(offset as u32)))
    }

    pub fn offset_of(&self, ip: Ipv4Addr) -> Option<u64> {
        self.contains(ip).then(|| u64::from(u32::from(ip) - u32::from(self.addr)))
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (a, p) = s.split_once('/').ok_or_else(|| format!("invalid CIDR address: {s}"))?;
        let addr: Ipv4Addr = a.parse().map_err(|_| format!("invalid CIDR address: {s}"))?;
        let prefix: u8 = p.parse().ok().filter(|p| *p <= 32).ok_or_else(|| format!("invalid CIDR address: {s}"))?;
        Ok(Cidr::new(addr, prefix))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// An IP address and port: one end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SockAddr {
    pub ip: Ipv4Addr,
    pub port: u16,
}

impl SockAddr {
    pub const fn new(ip: Ipv4Addr, port: u16) -> SockAddr {
        SockAddr { ip, port }
    }
}

impl fmt::Display for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ip, self.port)
    }
}

/// The header fields of one packet that Service networking reads and
/// rewrites. Payload is not modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Packet {
    pub proto: Protocol,
    pub src: SockAddr,
    pub dst: SockAddr,
}

impl Packet {
    pub fn new(proto: Protocol, src: SockAddr, dst: SockAddr) -> Packet {
        Packet { proto, src, dst }
    }

    /// The packet a server sends back on the same connection.
    pub fn reversed(&self) -> Packet {
        Packet { proto: self.proto, src: self.dst, dst: self.src }
    }
}

impl fmt::Display for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} → {} {}", self.src, self.dst, self.proto.lower())
    }
}

/// Shorthand for building addresses in code and tests.
pub const fn ip(a: u8, b: u8, c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(a, b, c, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_contains_and_clears_host_bits() {
        let c: Cidr = "10.244.3.7/16".parse().unwrap();
        assert_eq!(c.to_string(), "10.244.0.0/16");
        assert!(c.contains(ip(10, 244, 255, 1)));
        assert!(!c.contains(ip(10, 245, 0, 1)));
        assert_eq!(c.nth(65535), Some(ip(10, 244, 255, 255)));
        assert_eq!(c.nth(65536), None);
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("nonsense".parse::<Cidr>().is_err());
        assert!(Cidr::new(ip(1, 2, 3, 4), 0).contains(ip(200, 1, 1, 1)));
    }

    #[test]
    fn protocol_names() {
        assert_eq!(Protocol::parse("tcp"), Some(Protocol::Tcp));
        assert_eq!(Protocol::parse("ICMP"), None);
        assert_eq!(Protocol::Udp.number(), 17);
    }
}
