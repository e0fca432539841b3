//! The network outside the cluster: which addresses it can deliver to,
//! the names its resolvers answer, and the sites its hosts serve.
//!
//! The outside network routes by ownership only: a packet goes to the
//! actor that holds its destination address (a node, a balancer, a host),
//! or nowhere. It never knows the cluster's Service range or Pod network.

use crate::dns::{QType, RData, Rcode, Record, Response};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// A web server on an outside host: the Host names it answers for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    pub ip: Ipv4Addr,
    pub port: u16,
    pub hosts: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Internet {
    /// Whether the nodes' own addresses can be reached from outside (a
    /// VPN into the node network, public node IPs).
    pub reaches_nodes: bool,
    /// Public DNS: the names outside resolvers answer, and their addresses.
    pub names: Vec<(String, Ipv4Addr)>,
    pub sites: Vec<Site>,
}

/// The TTL public resolvers give in the model's answers.
const PUBLIC_TTL: u32 = 300;

impl Internet {
    /// What a public resolver answers for one question. Names under the
    /// cluster domain mean nothing out here: NXDOMAIN.
    pub fn resolve(&self, name: &str, qtype: QType) -> Response {
        let fqdn = if name.ends_with('.') { name.to_ascii_lowercase() } else { format!("{}.", name.to_ascii_lowercase()) };
        let bare = fqdn.trim_end_matches('.');
        let found: Vec<Ipv4Addr> = self.names.iter().filter(|(n, _)| n.eq_ignore_ascii_case(bare)).map(|(_, ip)| *ip).collect();
        let mut r = Response { name: fqdn.clone(), qtype, rcode: Rcode::NoError, answer: Vec::new(), additional: Vec::new(), warnings: Vec::new() };
        if found.is_empty() {
            r.rcode = Rcode::NxDomain;
        } else if qtype == QType::A {
            r.answer = found.into_iter().map(|ip| Record { name: fqdn.clone(), ttl: PUBLIC_TTL, data: RData::A(ip) }).collect();
        }
        r
    }

    /// The site listening on an address and port.
    pub fn site(&self, ip: Ipv4Addr, port: u16) -> Option<&Site> {
        self.sites.iter().find(|s| s.ip == ip && s.port == port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    #[test]
    fn public_names_resolve_and_cluster_names_do_not() {
        let net = Internet { names: vec![("mydb.example.com".into(), ip(192, 0, 2, 40))], ..Default::default() };
        let r = net.resolve("MyDB.example.com", QType::A);
        assert_eq!((r.rcode, r.answer.len()), (Rcode::NoError, 1));
        assert_eq!(r.answer[0].data, RData::A(ip(192, 0, 2, 40)));
        assert_eq!(net.resolve("api.default.svc.cluster.local", QType::A).rcode, Rcode::NxDomain);
    }
}
