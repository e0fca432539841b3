//! TCP as Linux connection tracking follows it: the state one conntrack
//! entry is in, the segments that move it, and how long it lives.
//!
//! A node that forwards a connection sees every segment of it in both
//! directions, but not the endpoints' sockets. Netfilter guesses the state
//! of the connection from the flags of each segment, as the man in the
//! middle: this module is that guess, with the names `conntrack -L` prints
//! (`SYN_SENT`, `ESTABLISHED`, `TIME_WAIT`, …) and the kernel's timeouts
//! (`nf_conntrack_tcp_timeout_*`).
//!
//! What it represents:
//!
//! - [`TcpState`]: the ten states of `tcp_conntrack_names` in the kernel's
//!   `nf_conntrack_proto_tcp.c`, `NONE` to `SYN_SENT2`;
//! - [`TcpFlags`] and [`Segment`]: the four flags the state machine reads
//!   (SYN, ACK, FIN, RST), the direction of the segment relative to the
//!   entry (original: as the first packet went; reply: back), and whether
//!   it carries data;
//! - [`next`]: the kernel's transition table (`tcp_conntracks`), a pure
//!   function of state, direction and flags;
//! - [`TcpTrack`]: one entry over time, with what the table alone does not
//!   say: the `[UNREPLIED]` and `[ASSURED]` marks, the timeout each segment
//!   sets (shortened while data is unacknowledged), simultaneous open and
//!   a connection reopened over a closed one;
//! - [`TcpTimeouts`]: the kernel's defaults, and kube-proxy's.
//!
//! What it guarantees, for a connection whose segments all arrive, in
//! order and inside the TCP window (a normal connection, including lost
//! and retransmitted ones the endpoints recover from): the state, the
//! marks and the timeout are the kernel's for the same segments, as
//! `tests/tcp_states.rs` checks against a real kernel. It has no
//! sequence numbers, so it does not judge windows: an out-of-window
//! segment, which the kernel marks INVALID or ignores, is taken as in
//! window; it also leaves out the retransmission count (timeout
//! `max_retrans`), zero windows, and the SYN-ACK that answers a SYN the
//! entry had ignored.

use serde::{Deserialize, Serialize};

/// The state of a TCP conntrack entry, as the kernel names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TcpState {
    /// Before the first segment: no entry sits in it.
    None,
    /// A SYN from the client, no answer yet.
    SynSent,
    /// The server's SYN-ACK seen: the handshake waits for its last ACK.
    SynRecv,
    /// The handshake's ACK seen: data flows.
    Established,
    /// One side sent FIN.
    FinWait,
    /// That FIN was acknowledged: one side is closed, the other may
    /// still send.
    CloseWait,
    /// FINs seen both ways: the last ACK is awaited.
    LastAck,
    /// The last ACK seen: the entry lingers so late segments still match.
    TimeWait,
    /// Reset (RST): the entry is about to go.
    Close,
    /// A SYN answered by a SYN (simultaneous open).
    SynSent2,
}

impl TcpState {
    /// Every state, in the kernel's order.
    pub const ALL: [TcpState; 10] = [
        TcpState::None,
        TcpState::SynSent,
        TcpState::SynRecv,
        TcpState::Established,
        TcpState::FinWait,
        TcpState::CloseWait,
        TcpState::LastAck,
        TcpState::TimeWait,
        TcpState::Close,
        TcpState::SynSent2,
    ];

    /// The name `conntrack -L` prints.
    pub fn name(self) -> &'static str {
        match self {
            TcpState::None => "NONE",
            TcpState::SynSent => "SYN_SENT",
            TcpState::SynRecv => "SYN_RECV",
            TcpState::Established => "ESTABLISHED",
            TcpState::FinWait => "FIN_WAIT",
            TcpState::CloseWait => "CLOSE_WAIT",
            TcpState::LastAck => "LAST_ACK",
            TcpState::TimeWait => "TIME_WAIT",
            TcpState::Close => "CLOSE",
            TcpState::SynSent2 => "SYN_SENT2",
        }
    }

    /// The state `conntrack -L` names `name`.
    pub fn from_name(name: &str) -> Option<TcpState> {
        TcpState::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The flags of a TCP segment that conntrack's state machine reads.
/// (PSH, URG, ECE and CWR never change the state.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TcpFlags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

impl TcpFlags {
    pub const SYN: TcpFlags = TcpFlags { syn: true, ack: false, fin: false, rst: false };
    pub const SYN_ACK: TcpFlags = TcpFlags { syn: true, ack: true, fin: false, rst: false };
    pub const ACK: TcpFlags = TcpFlags { syn: false, ack: true, fin: false, rst: false };
    pub const FIN_ACK: TcpFlags = TcpFlags { syn: false, ack: true, fin: true, rst: false };
    pub const RST: TcpFlags = TcpFlags { syn: false, ack: false, fin: false, rst: true };
    pub const RST_ACK: TcpFlags = TcpFlags { syn: false, ack: true, fin: false, rst: true };

    /// The flags as tcpdump writes them: `S`, `S.`, `.`, `F.`, `R`.
    pub fn render(self) -> String {
        let mut s = String::new();
        for (on, c) in [(self.syn, 'S'), (self.fin, 'F'), (self.rst, 'R')] {
            if on {
                s.push(c);
            }
        }
        if self.ack {
            s.push('.');
        }
        s
    }

    /// Which row of the table the segment reads: one flag stands for the
    /// segment, RST before SYN before FIN before ACK, so a FIN that also
    /// acknowledges counts as a FIN.
    pub fn kind(self) -> Kind {
        match self {
            TcpFlags { rst: true, .. } => Kind::Rst,
            TcpFlags { syn: true, ack: true, .. } => Kind::SynAck,
            TcpFlags { syn: true, .. } => Kind::Syn,
            TcpFlags { fin: true, .. } => Kind::Fin,
            TcpFlags { ack: true, .. } => Kind::Ack,
            _ => Kind::Nothing,
        }
    }
}

/// The kind of segment, as the kernel sorts them (`tcp_bit_set`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    Syn,
    SynAck,
    Fin,
    Ack,
    Rst,
    /// None of the four flags: never valid.
    Nothing,
}

/// Which way a segment goes, relative to the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// As the first segment went (client to server).
    Original,
    /// Back (server to client).
    Reply,
}

impl Dir {
    /// The other way.
    pub fn other(self) -> Dir {
        match self {
            Dir::Original => Dir::Reply,
            Dir::Reply => Dir::Original,
        }
    }

    fn index(self) -> usize {
        match self {
            Dir::Original => 0,
            Dir::Reply => 1,
        }
    }
}

/// One segment as the node sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Segment {
    pub dir: Dir,
    pub flags: TcpFlags,
    /// Carries payload bytes (a request, a response).
    pub data: bool,
}

impl Segment {
    /// A segment without payload.
    pub fn new(dir: Dir, flags: TcpFlags) -> Segment {
        Segment { dir, flags, data: false }
    }

    /// A segment with payload (PSH, ACK).
    pub fn data(dir: Dir) -> Segment {
        Segment { dir, flags: TcpFlags::ACK, data: true }
    }

    /// What people call it: `SYN`, `SYN-ACK`, `ACK`, `FIN`, `RST`, or
    /// `data` for one that carries payload.
    pub fn name(self) -> &'static str {
        match (self.data, self.flags.kind()) {
            (true, _) => "data",
            (false, Kind::Syn) => "SYN",
            (false, Kind::SynAck) => "SYN-ACK",
            (false, Kind::Fin) => "FIN",
            (false, Kind::Ack) => "ACK",
            (false, Kind::Rst) => "RST",
            (false, Kind::Nothing) => "segment",
        }
    }
}

/// What the table says a segment does to an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Move {
    /// The entry moves to this state (perhaps the one it is in).
    To(TcpState),
    /// The segment passes but the entry keeps its state and timeout: the
    /// node may be out of step with the endpoints, which will answer a
    /// wrong segment with RST (the kernel's `sIG`).
    Ignore,
    /// The segment is INVALID to conntrack; the entry is unchanged
    /// (the kernel's `sIV`).
    Invalid,
}

/// The kernel's transition table: where a segment of `flags` going `dir`
/// takes an entry in `state`. Read from `tcp_conntracks` in
/// `net/netfilter/nf_conntrack_proto_tcp.c`; the exceptions it cannot
/// express (reopening, simultaneous open) are in [`TcpTrack::see`].
pub fn next(state: TcpState, dir: Dir, flags: TcpFlags) -> Move {
    use TcpState::*;
    let kind = flags.kind();
    match (kind, state) {
        // A reset closes whatever it meets, except an entry not yet made.
        (Kind::Rst, None) => Move::Invalid,
        (Kind::Rst, _) => Move::To(Close),
        (Kind::Nothing, _) => Move::Invalid,
        // FIN and ACK read the same both ways: the table guesses the
        // sender's state, not who closed first.
        (Kind::Fin, SynRecv | Established) => Move::To(FinWait),
        (Kind::Fin, FinWait | CloseWait | LastAck) => Move::To(LastAck),
        (Kind::Fin, TimeWait | Close) => Move::To(state),
        (Kind::Fin, None | SynSent | SynSent2) => Move::Invalid,
        (Kind::Ack, SynRecv) if dir == Dir::Reply => Move::To(SynRecv),
        (Kind::Ack, SynRecv | Established) => Move::To(Established),
        (Kind::Ack, FinWait | CloseWait) => Move::To(CloseWait),
        (Kind::Ack, LastAck | TimeWait) => Move::To(TimeWait),
        (Kind::Ack, Close) => Move::To(Close),
        _ => match dir {
            Dir::Original => opening_original(kind, state),
            Dir::Reply => opening_reply(kind, state),
        },
    }
}

/// SYN, SYN-ACK and the ACK of an entry not yet answered, from the client.
fn opening_original(kind: Kind, state: TcpState) -> Move {
    use TcpState::*;
    match (kind, state) {
        // A first SYN, a retransmitted one, or one reopening a closed
        // connection (RFC 1122 lets a SYN reopen from TIME-WAIT).
        (Kind::Syn, None | SynSent | TimeWait | Close) => Move::To(SynSent),
        (Kind::Syn, SynSent2) => Move::To(SynSent2),
        // Inside a connection a SYN is an error the server will answer
        // with RST, or the node lost track: let it pass, keep the entry.
        (Kind::Syn, _) => Move::Ignore,
        // A SYN-ACK from the client only answers a simultaneous open.
        (Kind::SynAck, SynRecv | SynSent2) => Move::To(SynRecv),
        (Kind::SynAck, _) => Move::Invalid,
        // An ACK with nothing before it: picked up mid-connection.
        (Kind::Ack, None) => Move::To(Established),
        _ => Move::Invalid,
    }
}

/// SYN, SYN-ACK and the ACK of an entry not yet answered, from the server.
fn opening_reply(kind: Kind, state: TcpState) -> Move {
    use TcpState::*;
    match (kind, state) {
        // The server's own SYN: simultaneous open.
        (Kind::Syn, SynSent | SynSent2) => Move::To(SynSent2),
        // The server reopens the port it closed, as a client.
        (Kind::Syn, TimeWait) => Move::To(SynSent),
        (Kind::Syn, _) => Move::Invalid,
        // The standard answer to a SYN.
        (Kind::SynAck, SynSent | SynSent2) => Move::To(SynRecv),
        (Kind::SynAck, None) => Move::Invalid,
        // A late or retransmitted SYN-ACK.
        (Kind::SynAck, _) => Move::Ignore,
        // An ACK to a SYN may answer a connection the server still
        // holds half open: it will be followed by RST.
        (Kind::Ack, SynSent | SynSent2) => Move::Ignore,
        _ => Move::Invalid,
    }
}

/// Seconds an entry lives after its last segment, per state
/// (`net.netfilter.nf_conntrack_tcp_timeout_*`). Only the two kube-proxy
/// changes are fields; the others are the kernel's fixed defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TcpTimeouts {
    /// `nf_conntrack_tcp_timeout_established`.
    pub established: u32,
    /// `nf_conntrack_tcp_timeout_close_wait`.
    pub close_wait: u32,
}

/// The kernel's `nf_conntrack_tcp_timeout_established`: five days.
pub const DEFAULT_ESTABLISHED_SECS: u32 = 5 * 24 * 3600;
/// What kube-proxy writes there (`conntrack.tcpEstablishedTimeout`, 24h).
pub const KUBE_PROXY_ESTABLISHED_SECS: u32 = 24 * 3600;
/// What kube-proxy writes to `..._close_wait`
/// (`conntrack.tcpCloseWaitTimeout`, 1h).
pub const KUBE_PROXY_CLOSE_WAIT_SECS: u32 = 3600;
/// `nf_conntrack_tcp_timeout_unacknowledged`: the cap on a longer
/// timeout while sent data waits for its ACK, so a connection whose peer
/// vanished does not hold an entry for days.
pub const UNACKNOWLEDGED_SECS: u32 = 300;

impl TcpTimeouts {
    /// A node's kernel untouched.
    pub fn kernel_default() -> TcpTimeouts {
        TcpTimeouts { established: DEFAULT_ESTABLISHED_SECS, close_wait: 60 }
    }

    /// A node where kube-proxy set its conntrack sysctls.
    pub fn kube_proxy() -> TcpTimeouts {
        TcpTimeouts { established: KUBE_PROXY_ESTABLISHED_SECS, close_wait: KUBE_PROXY_CLOSE_WAIT_SECS }
    }

    /// The timeout of `state`. `NONE` has none: no entry rests there.
    pub fn secs(self, state: TcpState) -> u32 {
        match state {
            TcpState::None => 0,
            TcpState::SynSent | TcpState::SynSent2 => 120,
            TcpState::SynRecv => 60,
            TcpState::Established => self.established,
            TcpState::FinWait => 120,
            TcpState::CloseWait => self.close_wait,
            TcpState::LastAck => 30,
            TcpState::TimeWait => 120,
            TcpState::Close => 10,
        }
    }

    /// The sysctl suffix of each state that has its own
    /// (`nf_conntrack_tcp_timeout_<suffix>`); SYN_SENT2 shares syn_sent's.
    pub fn sysctl_names() -> [(TcpState, &'static str); 8] {
        [
            (TcpState::SynSent, "syn_sent"),
            (TcpState::SynRecv, "syn_recv"),
            (TcpState::Established, "established"),
            (TcpState::FinWait, "fin_wait"),
            (TcpState::CloseWait, "close_wait"),
            (TcpState::LastAck, "last_ack"),
            (TcpState::TimeWait, "time_wait"),
            (TcpState::Close, "close"),
        ]
    }
}

/// The timeout of `state` on a kernel whose established timeout is
/// `established` (the other states at their defaults).
pub fn timeout_secs(state: TcpState, established: u32) -> u32 {
    TcpTimeouts { established, ..TcpTimeouts::kernel_default() }.secs(state)
}

/// What became of the entry after a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Seen {
    /// The entry took the segment (its state may be the same).
    Tracked,
    /// The segment passed; the entry did not change.
    Ignored,
    /// The segment is INVALID; the entry did not change.
    Invalid,
    /// The entry was removed: a RST answered a connection never replied
    /// to (a closed port). A next segment starts a new entry.
    Removed,
    /// A SYN reopened a closed connection: the old entry was removed and
    /// a new one made in SYN_SENT.
    Reopened,
}

/// One conntrack entry over the segments of its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TcpTrack {
    pub state: TcpState,
    /// A segment went the reply way; without it `conntrack -L` prints
    /// `[UNREPLIED]`.
    pub seen_reply: bool,
    /// `[ASSURED]`: the entry will not be dropped early when the table is
    /// full.
    pub assured: bool,
    /// Seconds the entry had to live when a segment last refreshed it.
    pub timeout: u32,
    /// Per direction: sent data or FIN not yet acknowledged by the peer.
    unacked: [bool; 2],
    /// A FIN was seen: a SYN may reopen the connection.
    fin_seen: bool,
    /// The last segment the entry took was a RST going this way.
    last_rst: Option<Dir>,
    /// Both ends sent SYN.
    simultaneous: bool,
}

impl Default for TcpTrack {
    fn default() -> TcpTrack {
        TcpTrack::new()
    }
}

impl TcpTrack {
    /// No entry yet.
    pub fn new() -> TcpTrack {
        TcpTrack { state: TcpState::None, seen_reply: false, assured: false, timeout: 0, unacked: [false; 2], fin_seen: false, last_rst: None, simultaneous: false }
    }

    /// `[UNREPLIED]` in `conntrack -L`.
    pub fn unreplied(&self) -> bool {
        !self.seen_reply
    }

    /// Sent data is waiting for an ACK, in either direction.
    pub fn unacknowledged(&self) -> bool {
        self.unacked.iter().any(|u| *u)
    }

    /// The entry takes one segment, as `nf_conntrack_tcp_packet` does.
    pub fn see(&mut self, seg: Segment, timeouts: TcpTimeouts) -> Seen {
        let old = self.state;
        let new = match next(old, seg.dir, seg.flags) {
            Move::Invalid => return Seen::Invalid,
            Move::Ignore => return self.ignored(seg),
            // SYN_SENT2 is the table's only way to remember that both
            // ends opened; it decides the reply ACK in SYN_RECV below.
            Move::To(TcpState::SynSent2) => {
                self.simultaneous = true;
                TcpState::SynSent2
            }
            Move::To(TcpState::SynRecv) if self.simultaneous && seg.dir == Dir::Reply && seg.flags.kind() == Kind::Ack => TcpState::Established,
            Move::To(s) => s,
        };
        if new == TcpState::SynSent && matches!(old, TcpState::TimeWait | TcpState::Close) {
            return self.reopen(seg, timeouts);
        }
        self.take(seg, old, new, timeouts)
    }

    /// A segment the table ignores still tells the kernel the reply
    /// direction is alive; the state and the timeout stay.
    fn ignored(&mut self, seg: Segment) -> Seen {
        self.seen_reply |= seg.dir == Dir::Reply;
        Seen::Ignored
    }

    /// A SYN over a closed entry starts a new connection if the old one
    /// was closing (a FIN was seen) or the same side reset it; otherwise
    /// the node may have missed something and only lets it pass.
    fn reopen(&mut self, seg: Segment, timeouts: TcpTimeouts) -> Seen {
        if !(self.fin_seen || self.last_rst == Some(seg.dir)) {
            return self.ignored(seg);
        }
        *self = TcpTrack::new();
        self.see(Segment { dir: Dir::Original, ..seg }, timeouts);
        Seen::Reopened
    }

    /// The entry moves to `new`: marks, timeout, acknowledgements.
    fn take(&mut self, seg: Segment, old: TcpState, new: TcpState, timeouts: TcpTimeouts) -> Seen {
        self.acknowledge(seg);
        self.state = new;
        self.fin_seen |= new == TcpState::FinWait && old != new;
        self.last_rst = seg.flags.rst.then_some(seg.dir);
        let timeout = self.timeout_for(seg, new, timeouts);
        // The kernel reads "replied" before this segment counts: the
        // SYN-ACK itself is judged as a segment of an unreplied entry.
        let replied_before = self.seen_reply;
        self.seen_reply |= seg.dir == Dir::Reply;
        if !replied_before {
            if seg.flags.rst {
                // RST to a SYN: the port is closed; no entry is kept.
                *self = TcpTrack::new();
                return Seen::Removed;
            }
            if seg.flags.kind() == Kind::Syn && old == TcpState::SynSent {
                // A retransmitted SYN does not extend the entry's life, or
                // a client retrying forever would keep it for ever.
                return Seen::Tracked;
            }
            // Picked up mid-connection, never answered: not five days.
            let capped = if new == TcpState::Established { timeout.min(UNACKNOWLEDGED_SECS) } else { timeout };
            self.timeout = capped;
            return Seen::Tracked;
        }
        // ASSURED: the ACK that completes the handshake (or a segment
        // each way of a connection picked up in ESTABLISHED).
        if !self.assured && matches!(old, TcpState::SynRecv | TcpState::Established) && new == TcpState::Established {
            self.assured = true;
        }
        self.timeout = timeout;
        Seen::Tracked
    }

    /// What the segment sends and acknowledges. Without sequence numbers,
    /// an ACK is taken to acknowledge all the peer sent before it; the
    /// SYNs are not counted (the kernel sets up each side's window with
    /// them instead).
    fn acknowledge(&mut self, seg: Segment) {
        let (me, peer) = (seg.dir.index(), 1 - seg.dir.index());
        if !seg.flags.syn && (seg.data || seg.flags.fin) {
            self.unacked[me] = true;
        }
        if seg.flags.ack {
            self.unacked[peer] = false;
        }
    }

    /// The timeout this segment sets, in the kernel's order: a RST gives
    /// CLOSE's; data waiting for an ACK caps a longer one at
    /// [`UNACKNOWLEDGED_SECS`]; otherwise the state's own.
    fn timeout_for(&self, seg: Segment, new: TcpState, timeouts: TcpTimeouts) -> u32 {
        let own = timeouts.secs(new);
        if seg.flags.rst {
            timeouts.secs(TcpState::Close)
        } else if self.unacknowledged() && own > UNACKNOWLEDGED_SECS {
            UNACKNOWLEDGED_SECS
        } else {
            own
        }
    }
}

/// One segment of a connection and the entry after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// What the segment is in the connection ("SYN", "request", …).
    pub label: &'static str,
    pub segment: Segment,
    pub seen: Seen,
    /// The entry after the segment.
    pub track: TcpTrack,
}

/// The segments of a short request and response, closed by the client:
/// SYN, SYN-ACK, ACK, request, response, FIN (client), ACK, FIN
/// (server), ACK.
pub fn standard_segments() -> Vec<(&'static str, Segment)> {
    use Dir::{Original, Reply};
    vec![
        ("SYN", Segment::new(Original, TcpFlags::SYN)),
        ("SYN-ACK", Segment::new(Reply, TcpFlags::SYN_ACK)),
        ("ACK", Segment::new(Original, TcpFlags::ACK)),
        ("request", Segment::data(Original)),
        ("response", Segment::data(Reply)),
        ("FIN (client)", Segment::new(Original, TcpFlags::FIN_ACK)),
        ("ACK (server)", Segment::new(Reply, TcpFlags::ACK)),
        ("FIN (server)", Segment::new(Reply, TcpFlags::FIN_ACK)),
        ("ACK (client)", Segment::new(Original, TcpFlags::ACK)),
    ]
}

/// The entry after each segment of `segments`, from no entry.
pub fn replay(segments: &[(&'static str, Segment)], timeouts: TcpTimeouts) -> Vec<Step> {
    let mut track = TcpTrack::new();
    segments
        .iter()
        .map(|&(label, segment)| {
            let seen = track.see(segment, timeouts);
            Step { label, segment, seen, track }
        })
        .collect()
}

/// The entry after each segment of the standard connection
/// ([`standard_segments`]).
pub fn standard_connection(timeouts: TcpTimeouts) -> Vec<Step> {
    replay(&standard_segments(), timeouts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Dir::{Original, Reply};
    use TcpState::*;

    fn states(steps: &[Step]) -> Vec<&'static str> {
        steps.iter().map(|s| s.track.state.name()).collect()
    }

    #[test]
    fn names_are_the_kernels() {
        let names: Vec<&str> = TcpState::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT", "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE", "SYN_SENT2"]);
        for s in TcpState::ALL {
            assert_eq!(TcpState::from_name(s.name()), Some(s));
        }
        assert_eq!(TcpState::from_name("LISTEN"), Option::None);
    }

    #[test]
    fn a_segment_counts_as_its_strongest_flag() {
        assert_eq!(TcpFlags::FIN_ACK.kind(), Kind::Fin);
        assert_eq!(TcpFlags::RST_ACK.kind(), Kind::Rst);
        assert_eq!(TcpFlags::SYN_ACK.kind(), Kind::SynAck);
        assert_eq!(TcpFlags::default().kind(), Kind::Nothing);
        assert_eq!([TcpFlags::SYN, TcpFlags::SYN_ACK, TcpFlags::ACK, TcpFlags::FIN_ACK, TcpFlags::RST].map(|f| f.render()), ["S", "S.", ".", "F.", "R"]);
    }

    #[test]
    fn the_standard_connection_walks_the_kernels_states() {
        let steps = standard_connection(TcpTimeouts::kernel_default());
        assert_eq!(states(&steps), ["SYN_SENT", "SYN_RECV", "ESTABLISHED", "ESTABLISHED", "ESTABLISHED", "FIN_WAIT", "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT"]);
        assert!(steps.iter().all(|s| s.seen == Seen::Tracked));
    }

    #[test]
    fn unreplied_until_the_syn_ack_assured_from_the_handshakes_ack() {
        let steps = standard_connection(TcpTimeouts::kernel_default());
        let marks: Vec<(bool, bool)> = steps.iter().map(|s| (s.track.unreplied(), s.track.assured)).collect();
        assert_eq!(marks[0], (true, false), "SYN");
        assert_eq!(marks[1], (false, false), "SYN-ACK: replied, not assured yet");
        assert!(marks[2..].iter().all(|m| *m == (false, true)), "assured from the ACK on: {marks:?}");
    }

    #[test]
    fn timeouts_follow_each_state_and_unacknowledged_data() {
        let secs = |t| standard_connection(t).iter().map(|s| s.track.timeout).collect::<Vec<_>>();
        // The request and the response wait for their ACK: 300 s, not days.
        assert_eq!(secs(TcpTimeouts::kernel_default()), [120, 60, 432000, 300, 300, 120, 60, 30, 120]);
        assert_eq!(secs(TcpTimeouts::kube_proxy()), [120, 60, 86400, 300, 300, 120, 3600, 30, 120]);
    }

    #[test]
    fn an_acknowledged_request_gives_back_the_established_timeout() {
        let mut t = TcpTrack::new();
        let k = TcpTimeouts::kube_proxy();
        for (_, seg) in &standard_segments()[..4] {
            t.see(*seg, k);
        }
        assert_eq!(t.timeout, 300);
        t.see(Segment::new(Reply, TcpFlags::ACK), k);
        assert_eq!((t.state, t.timeout), (Established, 86400));
    }

    #[test]
    fn the_default_timeouts() {
        let d = TcpTimeouts::kernel_default();
        let got: Vec<u32> = TcpState::ALL.iter().map(|s| d.secs(*s)).collect();
        assert_eq!(got, [0, 120, 60, 432000, 120, 60, 30, 120, 10, 120]);
        assert_eq!(timeout_secs(Established, KUBE_PROXY_ESTABLISHED_SECS), 86400);
        assert_eq!(timeout_secs(CloseWait, KUBE_PROXY_ESTABLISHED_SECS), 60);
    }

    #[test]
    fn the_server_may_close_first() {
        let segs = [
            ("SYN", Segment::new(Original, TcpFlags::SYN)),
            ("SYN-ACK", Segment::new(Reply, TcpFlags::SYN_ACK)),
            ("ACK", Segment::new(Original, TcpFlags::ACK)),
            ("FIN (server)", Segment::new(Reply, TcpFlags::FIN_ACK)),
            ("ACK (client)", Segment::new(Original, TcpFlags::ACK)),
            ("FIN (client)", Segment::new(Original, TcpFlags::FIN_ACK)),
            ("ACK (server)", Segment::new(Reply, TcpFlags::ACK)),
        ];
        let steps = replay(&segs, TcpTimeouts::kernel_default());
        assert_eq!(&states(&steps)[3..], ["FIN_WAIT", "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT"]);
    }

    #[test]
    fn a_fin_that_acknowledges_a_fin_skips_close_wait() {
        // The server closes as soon as it reads EOF: one FIN-ACK answers.
        let mut t = TcpTrack::new();
        for (_, seg) in &standard_segments()[..6] {
            t.see(*seg, TcpTimeouts::kernel_default());
        }
        t.see(Segment::new(Reply, TcpFlags::FIN_ACK), TcpTimeouts::kernel_default());
        assert_eq!(t.state, LastAck);
    }

    #[test]
    fn a_retransmitted_fin_reads_as_the_second_fin() {
        // The table has no memory of who sent the FIN: the client's FIN
        // again, before the server's ACK, moves FIN_WAIT to LAST_ACK.
        assert_eq!(next(FinWait, Original, TcpFlags::FIN_ACK), Move::To(LastAck));
        assert_eq!(next(LastAck, Reply, TcpFlags::ACK), Move::To(TimeWait));
    }

    #[test]
    fn rst_closes_with_ten_seconds() {
        let mut t = TcpTrack::new();
        for (_, seg) in &standard_segments()[..3] {
            t.see(*seg, TcpTimeouts::kernel_default());
        }
        assert_eq!(t.see(Segment::new(Reply, TcpFlags::RST), TcpTimeouts::kernel_default()), Seen::Tracked);
        assert_eq!((t.state, t.timeout, t.assured), (Close, 10, true));
    }

    #[test]
    fn rst_to_a_syn_removes_the_entry() {
        let mut t = TcpTrack::new();
        t.see(Segment::new(Original, TcpFlags::SYN), TcpTimeouts::kernel_default());
        assert_eq!(t.see(Segment::new(Reply, TcpFlags::RST_ACK), TcpTimeouts::kernel_default()), Seen::Removed);
        assert_eq!(t, TcpTrack::new());
    }

    #[test]
    fn a_retransmitted_syn_does_not_extend_the_entry() {
        let mut t = TcpTrack::new();
        let syn = Segment::new(Original, TcpFlags::SYN);
        t.see(syn, TcpTimeouts::kernel_default());
        t.timeout = 100; // as if 20 s went by
        assert_eq!(t.see(syn, TcpTimeouts::kernel_default()), Seen::Tracked);
        assert_eq!((t.state, t.timeout), (SynSent, 100));
    }

    #[test]
    fn out_of_order_segments_are_invalid_or_ignored() {
        assert_eq!(next(SynSent, Original, TcpFlags::ACK), Move::Invalid, "ACK before the SYN-ACK");
        assert_eq!(next(SynSent, Original, TcpFlags::FIN_ACK), Move::Invalid);
        assert_eq!(next(None, Original, TcpFlags::SYN_ACK), Move::Invalid);
        assert_eq!(next(None, Original, TcpFlags::FIN_ACK), Move::Invalid);
        assert_eq!(next(None, Original, TcpFlags::RST), Move::Invalid);
        assert_eq!(next(Established, Original, TcpFlags::SYN), Move::Ignore);
        assert_eq!(next(SynRecv, Reply, TcpFlags::SYN_ACK), Move::Ignore, "retransmitted SYN-ACK");
        assert_eq!(next(SynRecv, Reply, TcpFlags::ACK), Move::To(SynRecv));
        assert_eq!(next(SynSent, Reply, TcpFlags::ACK), Move::Ignore, "half-open");
        assert_eq!(next(Established, Reply, TcpFlags::default()), Move::Invalid);
    }

    #[test]
    fn an_ack_alone_picks_up_a_connection_for_five_minutes() {
        let mut t = TcpTrack::new();
        t.see(Segment::new(Original, TcpFlags::ACK), TcpTimeouts::kernel_default());
        assert_eq!((t.state, t.timeout, t.assured, t.unreplied()), (Established, 300, false, true));
        // The first answer is still judged as unreplied (the kernel marks
        // the reply after the state machine ran): assured one segment later.
        t.see(Segment::new(Reply, TcpFlags::ACK), TcpTimeouts::kernel_default());
        assert_eq!((t.state, t.timeout, t.assured, t.unreplied()), (Established, 300, false, false));
        t.see(Segment::new(Original, TcpFlags::ACK), TcpTimeouts::kernel_default());
        assert_eq!((t.state, t.timeout, t.assured), (Established, 432000, true));
    }

    #[test]
    fn simultaneous_open() {
        let mut t = TcpTrack::new();
        let k = TcpTimeouts::kernel_default();
        t.see(Segment::new(Original, TcpFlags::SYN), k);
        t.see(Segment::new(Reply, TcpFlags::SYN), k);
        assert_eq!(t.state, SynSent2);
        t.see(Segment::new(Original, TcpFlags::SYN_ACK), k);
        assert_eq!(t.state, SynRecv);
        t.see(Segment::new(Reply, TcpFlags::ACK), k);
        assert_eq!((t.state, t.assured), (Established, true));
    }

    #[test]
    fn a_syn_reopens_a_closed_connection() {
        let k = TcpTimeouts::kernel_default();
        let mut t = TcpTrack::new();
        for step in standard_connection(k) {
            t = step.track;
        }
        assert_eq!(t.see(Segment::new(Original, TcpFlags::SYN), k), Seen::Reopened);
        assert_eq!((t.state, t.unreplied(), t.assured, t.timeout), (SynSent, true, false, 120));
    }

    #[test]
    fn a_syn_after_the_peers_reset_is_let_through() {
        let k = TcpTimeouts::kernel_default();
        let mut t = TcpTrack::new();
        for (_, seg) in &standard_segments()[..3] {
            t.see(*seg, k);
        }
        t.see(Segment::new(Reply, TcpFlags::RST), k);
        assert_eq!(t.see(Segment::new(Original, TcpFlags::SYN), k), Seen::Ignored);
        assert_eq!(t.state, Close);
    }
}
