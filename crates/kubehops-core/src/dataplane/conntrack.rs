//! The connection tracking table of one node.
//!
//! The first packet of a connection goes through the nat table; conntrack
//! remembers the result as an original tuple (as the client sent it) and a
//! reply tuple (what the answer will look like after the rewrites). Later
//! packets, and above all the replies, are rewritten from the entry without
//! walking the rules again.

use crate::dataplane::tcp::{Segment, TcpTimeouts, TcpTrack};
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
    /// Both directions have been seen, but the kernel does not count the
    /// flow as assured yet: a UDP flow after its first answer. It becomes
    /// [`ConntrackState::Assured`] (a "stream") when a packet comes more
    /// than two seconds after the flow began.
    Replied,
    /// Both directions have been seen and the entry is assured: a TCP
    /// connection once answered (the model's request and reply stand for
    /// the handshake), or a UDP stream.
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
    /// When the first packet created it (model seconds).
    #[serde(default)]
    pub started_at: u64,
    /// A TCP connection followed segment by segment (a scenario's
    /// `handshake=1`): the state the kernel's TCP tracker is in, its marks
    /// and its timeout. Without it, one request and one reply stand for
    /// the connection, and the entry is SYN_SENT until answered, then
    /// ESTABLISHED.
    #[serde(default)]
    pub tcp: Option<TcpTrack>,
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

    /// How long the entry lives after its last packet, in seconds: the
    /// kernel's timeout for its state (TCP SYN_SENT 120; ESTABLISHED
    /// 86400, which kube-proxy sets; UDP 30 until it is a stream, then 120).
    pub fn timeout(&self) -> u64 {
        if let Some(t) = &self.tcp {
            return u64::from(t.timeout);
        }
        match (self.proto, self.state) {
            (Protocol::Tcp, ConntrackState::Unreplied) => 120,
            (Protocol::Tcp, _) => 86400,
            (_, ConntrackState::Unreplied | ConntrackState::Replied) => 30,
            (_, ConntrackState::Assured) => 120,
        }
    }

    /// The entry as `conntrack -L` prints it at model time `now`: the
    /// second column is the seconds left before the entry expires.
    pub fn render(&self, now: u64) -> String {
        let named;
        let (state, flag): (&str, &str) = match (self.proto, self.state, &self.tcp) {
            (Protocol::Tcp, _, Some(t)) => {
                named = format!("{} ", t.state.name());
                let flag = if t.unreplied() {
                    " [UNREPLIED]"
                } else if t.assured {
                    " [ASSURED]"
                } else {
                    ""
                };
                (named.as_str(), flag)
            }
            (Protocol::Tcp, ConntrackState::Unreplied, None) => ("SYN_SENT ", " [UNREPLIED]"),
            (Protocol::Tcp, _, None) => ("ESTABLISHED ", " [ASSURED]"),
            (_, ConntrackState::Unreplied, _) => ("", " [UNREPLIED]"),
            (_, ConntrackState::Replied, _) => ("", ""),
            (_, ConntrackState::Assured, _) => ("", " [ASSURED]"),
        };
        // The kernel shows the time left, rounded down: one second less at once.
        let timeout = self.timeout().saturating_sub(1).saturating_sub(now.saturating_sub(self.seen_at));
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
            started_at: now,
            tcp: None,
        });
        self.entries.len() - 1
    }

    /// Entry `i` takes one TCP segment, going `seg.dir` relative to the
    /// entry, as the kernel's TCP tracker does; the entry's coarse state
    /// follows the tracker's marks. Called after [`Self::insert`] (the
    /// SYN) or [`Self::translate`] (every later segment).
    pub fn track_tcp(&mut self, i: usize, seg: Segment, timeouts: TcpTimeouts) {
        let Some(e) = self.entries.get_mut(i).filter(|e| e.proto == Protocol::Tcp) else { return };
        let t = e.tcp.get_or_insert_with(TcpTrack::new);
        t.see(seg, timeouts);
        e.state = if t.unreplied() {
            ConntrackState::Unreplied
        } else if t.assured {
            ConntrackState::Assured
        } else {
            ConntrackState::Replied
        };
    }

    /// Rewrites a packet of a tracked connection as the entry says: a
    /// packet in the original direction gets the same NAT again; a reply
    /// gets it undone. A reply makes a TCP entry assured and a UDP entry
    /// replied; a later packet of a replied UDP flow, more than two
    /// seconds after it began, makes it a stream (assured), as the
    /// kernel's UDP tracker does.
    pub fn translate(&mut self, i: usize, dir: Direction, pkt: &Packet, now: u64) -> Packet {
        let Some(e) = self.entries.get_mut(i) else { return *pkt };
        e.seen_at = now;
        if e.state == ConntrackState::Replied && now.saturating_sub(e.started_at) > 2 {
            e.state = ConntrackState::Assured;
        }
        match dir {
            Direction::Original => Packet { proto: pkt.proto, src: e.reply.dst, dst: e.reply.src },
            Direction::Reply => {
                if e.state == ConntrackState::Unreplied {
                    e.state = if e.proto == Protocol::Tcp { ConntrackState::Assured } else { ConntrackState::Replied };
                }
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

    #[test]
    fn a_udp_flow_is_assured_only_as_a_stream() {
        // As a real kernel shows it (conntrack -L after one DNS-like
        // exchange, then after another packet 2.5 s later).
        let mut ct = ConntrackTable::default();
        let q = Packet::new(Protocol::Udp, SockAddr::new(ip(10, 77, 0, 1), 40000), SockAddr::new(ip(10, 77, 0, 2), 5353));
        let i = ct.insert(&q, &q, 10);
        assert_eq!(ct.entries[i].render(10), "udp      17 29 src=10.77.0.1 dst=10.77.0.2 sport=40000 dport=5353 [UNREPLIED] src=10.77.0.2 dst=10.77.0.1 sport=5353 dport=40000 mark=0 use=1");
        ct.translate(i, Direction::Reply, &q.reversed(), 10);
        assert_eq!(ct.entries[i].state, ConntrackState::Replied, "answered, not assured");
        assert_eq!(ct.entries[i].render(10), "udp      17 29 src=10.77.0.1 dst=10.77.0.2 sport=40000 dport=5353 src=10.77.0.2 dst=10.77.0.1 sport=5353 dport=40000 mark=0 use=1");
        // Within two seconds of its start the flow stays replied.
        ct.translate(i, Direction::Original, &q, 12);
        assert_eq!(ct.entries[i].state, ConntrackState::Replied);
        ct.translate(i, Direction::Original, &q, 13);
        assert_eq!(ct.entries[i].state, ConntrackState::Assured);
        assert_eq!(ct.entries[i].render(13), "udp      17 119 src=10.77.0.1 dst=10.77.0.2 sport=40000 dport=5353 src=10.77.0.2 dst=10.77.0.1 sport=5353 dport=40000 [ASSURED] mark=0 use=1");
    }
}
