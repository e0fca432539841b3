//! The connection tracking table of one node.
//!
//! The first packet of a connection goes through the nat table; conntrack
//! remembers the result as an original tuple (as the client sent it) and a
//! reply tuple (what the answer will look like after the rewrites). Later
//! packets, and above all the replies, are rewritten from the entry without
//! walking the rules again.

use crate::net::{Packet, Protocol, SockAddr};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tuple {
    pub src: SockAddr,
    pub dst: SockAddr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConntrackState {
    /// Only the first direction has been seen.
    Unreplied,
    /// Both directions have been seen.
    Assured,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConntrackEntry {
    pub proto: Protocol,
    pub original: Tuple,
    pub reply: Tuple,
    pub state: ConntrackState,
    /// When a packet last refreshed the entry (model seconds): its timeout
    /// counts down from there.
    pub seen_at: u64,
}

impl ConntrackEntry {
    /// Did the nat table change the destination (DNAT)?
    pub fn dnat(&self) -> bool {
        self.reply.src != self.original.dst
    }

    /// Did the nat table change the source (SNAT/masquerade)?
    pub fn snat(&self) -> bool {
        self.reply.dst != self.original.src
    }

    /// The entry as `conntrack -L` prints it at model time `now`: the
    /// second column is the seconds left before the entry expires
    /// (kube-proxy sets 86400 for established TCP).
    pub fn render(&self, now: u64) -> String {
        let (state, full, flag): (&str, u64, &str) = match (self.proto, self.state) {
            (Protocol::Tcp, ConntrackState::Unreplied) => ("SYN_SENT ", 120, " [UNREPLIED]"),
            (Protocol::Tcp, ConntrackState::Assured) => ("ESTABLISHED ", 86400, " [ASSURED]"),
            (_, ConntrackState::Unreplied) => ("", 30, " [UNREPLIED]"),
            // One exchange each way (a DNS query and its answer) has seen a
            // reply but is not yet a stream: the kernel keeps the short
            // timeout and does not mark it assured.
            (_, ConntrackState::Assured) => ("", 30, ""),
        };
        // The kernel shows the time left, rounded down: one second less at once.
        let timeout = full.saturating_sub(1).saturating_sub(now.saturating_sub(self.seen_at));
        let (o, r) = (self.original, self.reply);
        let (a, b) = if self.state == ConntrackState::Unreplied { (flag, "") } else { ("", flag) };
        format!(
            "{:<8} {} {} {}src={} dst={} sport={} dport={}{} src={} dst={} sport={} dport={}{} mark=0 use=1",
            self.proto.lower(),
            self.proto.number(),
            timeout,
            state,
            o.src.ip,
            o.dst.ip,
            o.src.port,
            o.dst.port,
            a,
            r.src.ip,
            r.dst.ip,
            r.src.port,
            r.dst.port,
            b
        )
    }
}

/// Which way a packet runs on a tracked connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    Original,
    Reply,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConntrackTable {
    pub entries: Vec<ConntrackEntry>,
}

impl ConntrackTable {
    /// The entry a packet belongs to, and in which direction it runs.
    pub fn lookup(&self, pkt: &Packet) -> Option<(usize, Direction)> {
        let t = Tuple { src: pkt.src, dst: pkt.dst };
        self.entries.iter().enumerate().find_map(|(i, e)| {
            if e.proto != pkt.proto {
                None
            } else if e.original == t {
                Some((i, Direction::Original))
            } else if e.reply == t {
                Some((i, Direction::Reply))
            } else {
                None
            }
        })
    }

    /// Records a new connection: `before` as it arrived, `after` as the nat
    /// table left it. Returns the entry's index.
    pub fn insert(&mut self, before: &Packet, after: &Packet, now: u64) -> usize {
        self.entries.push(ConntrackEntry {
            proto: before.proto,
            original: Tuple { src: before.src, dst: before.dst },
            reply: Tuple { src: after.dst, dst: after.src },
            state: ConntrackState::Unreplied,
            seen_at: now,
        });
        self.entries.len() - 1
    }

    /// Rewrites a packet of a tracked connection as the entry says: a
    /// packet in the original direction gets the same NAT again; a reply
    /// gets it undone. Marks the entry assured on a reply.
    pub fn translate(&mut self, i: usize, dir: Direction, pkt: &Packet, now: u64) -> Packet {
        let Some(e) = self.entries.get_mut(i) else { return *pkt };
        e.seen_at = now;
        match dir {
            Direction::Original => Packet { proto: pkt.proto, src: e.reply.dst, dst: e.reply.src },
            Direction::Reply => {
                e.state = ConntrackState::Assured;
                Packet { proto: pkt.proto, src: e.original.dst, dst: e.original.src }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    #[test]
    fn reply_is_un_natted_from_the_entry() {
        let mut ct = ConntrackTable::default();
        let before = Packet::new(Protocol::Tcp, SockAddr::new(ip(198, 51, 100, 23), 51000), SockAddr::new(ip(10, 0, 0, 12), 31000));
        let after = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 12), 51000), SockAddr::new(ip(10, 244, 3, 9), 8080));
        let i = ct.insert(&before, &after, 100);
        assert!(ct.entries[i].dnat() && ct.entries[i].snat());
        assert!(ct.entries[i].render(100).contains("tcp      6 119 SYN_SENT"));
        assert!(ct.entries[i].render(100).contains("[UNREPLIED]"));
        let reply = after.reversed();
        let (j, dir) = ct.lookup(&reply).expect("reply is tracked");
        assert_eq!((j, dir), (i, Direction::Reply));
        let out = ct.translate(j, dir, &reply, 101);
        assert_eq!(out, before.reversed(), "the client sees the address it dialled");
        assert_eq!(
            ct.entries[i].render(101),
            "tcp      6 86399 ESTABLISHED src=198.51.100.23 dst=10.0.0.12 sport=51000 dport=31000 src=10.244.3.9 dst=10.0.0.12 sport=8080 dport=51000 [ASSURED] mark=0 use=1"
        );
        // The timeout counts down between packets.
        assert!(ct.entries[i].render(141).starts_with("tcp      6 86359 ESTABLISHED"));
        let other = Packet::new(Protocol::Udp, before.src, before.dst);
        assert_eq!(ct.lookup(&other), None, "protocol is part of the key");
    }
}
