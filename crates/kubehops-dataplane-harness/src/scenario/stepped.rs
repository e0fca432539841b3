//! A scenario's TCP connection packet by packet, on the kernel.
//!
//! Built with `handshake=1`, a story shows each TCP connection as its nine
//! packets and, after each, the entry every node and host on its way
//! holds for it, as `conntrack -L` prints it ([`Connection::handshake`]).
//! Here the same connection runs between real sockets (the client's in
//! its namespace, the harness's echo server in the server's), stopped
//! after each packet; every such machine's `conntrack -L` is read and
//! compared with the model's line, both read by the same parser: state,
//! `[ASSURED]`, `[UNREPLIED]`, and the timeout (the kernel's counts down
//! from the model's).
//!
//! To stop the connection after a packet, the next one is held back at
//! its sender's egress by a table of the harness's own (`inet
//! khstep_client` and `inet khstep_server`, in the client's and the
//! server's namespaces: nothing kube-proxy or Docker wrote is touched).
//! A held segment comes again when its sender retransmits it. In order,
//! as the core's `tests/tcp_states.rs` does it on one router:
//! 1. the SYN, the server's SYN-ACK held;
//! 2. the SYN-ACK, the client's ACKs held;
//! 3. the ACK, answering a retransmitted SYN-ACK;
//! 4. the request, the server's ACK of it held and its answer not yet
//!    let (the echo server answers when told);
//! 5. the response, the client's ACKs held (so it stays unacknowledged,
//!    as in the model's nine packets);
//! 6. the client's FIN, the server's segments held, and the client's
//!    later FINs dropped (a second FIN through a node reads as the close
//!    of the other side);
//! 7. the server's ACK of it: one keepalive probe, an ACK of all it
//!    received (the kernel's own ACK went when the FIN came, and was held);
//! 8. the server's FIN: the echo server closes when told;
//! 9. the client's last ACK, answering a retransmitted FIN.
//!
//! The kernel picks endpoints at random: an attempt whose SYN took
//! another pick than the scenario's is let go and tried again.

use super::{client_ns, pick_probability, Connection, End, ModelEntry};
use crate::kernel::{self, KernelEntry};
use crate::netns::Netns;
use crate::plan::Machine;
use crate::stats;
use crate::sys;
use crate::topology::Topology;
use crate::wire;
use kubehops_core::net::{Protocol, SockAddr};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

/// How far below the model's timeout the kernel's may be: it counts down
/// whole seconds from the segment that set it, and the model's line is
/// shown one second down at once, as the kernel's is.
const SLACK_SECS: u64 = 3;
/// How long a point may take to show on every machine: a held segment
/// comes again on its sender's retransmission timer (a SYN-ACK's second
/// retransmission is 3 s after the first SYN).
const POINT_WAIT: Duration = Duration::from_secs(12);
/// How long the client waits to connect and for an answer.
const CLIENT_WAIT: Duration = Duration::from_secs(20);

/// What the stepped connections checked, over a run.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub connections: usize,
    /// Points (packets) after which every machine's entry was compared.
    pub points: usize,
    /// Entries compared (a machine at a point), each equal to the model's.
    pub entries: usize,
    /// Attempts let go because the kernel picked another endpoint.
    pub other_picks: usize,
    /// The states seen, in the order first seen.
    pub states: Vec<String>,
}

/// Runs `c` packet by packet (it has [`Connection::handshake`]) and
/// compares every machine's entry after each packet with the model's.
pub fn run(topo: &Topology, c: &Connection, counts: &mut Counts) -> Result<(), String> {
    let End::Answered { server, .. } = c.end else { return Ok(()) };
    let client = client_ns(topo, c)?;
    let server_ns = server_ns(topo, server)?;
    let attempts = stats::attempts_for(pick_probability(&topo.plan, c)?);
    for _ in 0..attempts {
        topo.reset()?;
        // An attempt let go ends at its SYN, before any point is counted.
        match attempt(topo, c, client, server_ns, server, counts)? {
            Took::Scenario => {
                counts.connections += 1;
                return Ok(());
            }
            Took::Other => counts.other_picks += 1,
        }
    }
    Err(format!("packet by packet: the kernel never took the scenario's picks in {attempts} connections"))
}

/// Where an attempt's SYN went.
enum Took {
    /// The scenario's picks: every point compared.
    Scenario,
    /// Another endpoint: let go.
    Other,
}

/// The namespace that answers at `server`: a Pod's, a node's or host's,
/// or the outside (the sites and resolver beyond the cluster).
fn server_ns(topo: &Topology, server: SockAddr) -> Result<&Netns, String> {
    if let Some(j) = topo.plan.pod_of(server.ip) {
        return Ok(&topo.pods[j]);
    }
    if let Some(n) = topo.plan.nodes.iter().position(|n| n.node.internal_ip == server.ip) {
        return Ok(&topo.nodes[n]);
    }
    if topo.plan.outside.contains(&server.ip) {
        return Ok(&topo.outside);
    }
    Err(format!("packet by packet: no namespace answers at {server}"))
}

fn attempt(topo: &Topology, c: &Connection, client: &Netns, server_ns: &Netns, server: SockAddr, seen: &mut Counts) -> Result<Took, String> {
    let nonce = wire::stepped();
    let result = steps(topo, c, client, server_ns, server, nonce, seen);
    wire::release_close(nonce);
    result
}

fn steps(topo: &Topology, c: &Connection, client: &Netns, server_ns: &Netns, server: SockAddr, nonce: u64, seen: &mut Counts) -> Result<Took, String> {
    let src = SockAddr::new(c.sent.src.ip, if c.sent.src.port == 0 { wire::next_source_port() } else { c.sent.src.port });
    let holds = Holds { client, server: server_ns, from: src, to: c.sent.dst, server_port: server.port };
    let p = &c.handshake;
    let point = |k: usize, seen: &mut Counts| wait_point(topo, c, k, seen);

    // 1. The SYN.
    holds.set(&[Hold::SynAck, Hold::ClientAcks])?;
    let (from, to) = (sys::v4(src.ip, src.port), sys::v4(c.sent.dst.ip, c.sent.dst.port));
    let connecting = client.spawn(move || sys::tcp_connect(from, to, CLIENT_WAIT))?;
    let took = wait_point(topo, c, 0, seen);
    if matches!(took, Ok(Took::Other)) {
        holds.set(&[])?;
        let _ = connecting.join();
        return Ok(Took::Other);
    }
    took?;
    // 2. The SYN-ACK let go: connect() returns once it passed.
    holds.set(&[Hold::ClientAcks])?;
    let (stream, connected) = connecting.join().map_err(|_| "the client's thread panicked".to_string())??.map_err(|e| format!("the client's socket: {e}"))?;
    connected.map_err(|e| format!("packet by packet: the client's connect failed after the {}: {e}", p[0].segment))?;
    stream.set_read_timeout(Some(CLIENT_WAIT)).map_err(|e| e.to_string())?;
    point(1, seen)?;
    // 3. The client's ACK let go.
    holds.set(&[])?;
    point(2, seen)?;
    // 4. The request; the server's ACK of it held, its answer not yet let.
    holds.set(&[Hold::ServerAcks])?;
    (&stream).write_all(format!("kh {nonce}\n").as_bytes()).map_err(|e| format!("the request: {e}"))?;
    point(3, seen)?;
    // 5. The response; the client's ACK of it held.
    holds.set(&[Hold::ClientAcks, Hold::ServerAcks])?;
    wire::answer_now(nonce);
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).map_err(|e| format!("packet by packet: waiting for the response: {e}"))?;
    if !matches!(wire::parse_answer(&line, nonce), wire::Outcome::Answered(_)) {
        return Err(format!("packet by packet: the answer was {line:?}"));
    }
    point(4, seen)?;
    // 6. The client's FIN; the server's ACK held, the client's later FINs dropped.
    holds.set(&[Hold::Server, Hold::ClientAcks, Hold::LaterFins])?;
    stream.shutdown(Shutdown::Write).map_err(|e| format!("the client's FIN: {e}"))?;
    point(5, seen)?;
    // 7. The server's ACK: one keepalive probe.
    holds.set(&[Hold::ClientAcks, Hold::Fins])?;
    wire::ack_now(nonce);
    point(6, seen)?;
    // 8. The server's FIN; the client's ACK of it held.
    wire::release_close(nonce);
    let mut rest = Vec::new();
    (&stream).read_to_end(&mut rest).map_err(|e| format!("packet by packet: waiting for the server's FIN: {e}"))?;
    point(7, seen)?;
    // 9. The client's last ACK let go (its FINs stay dropped).
    holds.set(&[Hold::Fins])?;
    point(8, seen)?;
    holds.set(&[])?;
    drop(stream);
    Ok(Took::Scenario)
}

/// Polls every machine of point `k` until each entry agrees with the
/// model's (or the wait ends: the last difference is the error). At the
/// SYN, an entry that took another endpoint than the scenario's pick
/// ends the attempt.
fn wait_point(topo: &Topology, c: &Connection, k: usize, seen: &mut Counts) -> Result<Took, String> {
    let p = &c.handshake[k];
    // Each machine with the model's entry there, read once.
    let mut want = Vec::new();
    for e in &p.entries {
        let m = topo.plan.machine(&e.machine).ok_or_else(|| format!("no node or host {}", e.machine))?;
        let model = match &e.line {
            Some(l) => Some(kernel::parse_entry(l).ok_or_else(|| format!("the model's line {l:?} is not conntrack's"))?),
            None => None,
        };
        want.push((e, m, model));
    }
    let deadline = Instant::now() + POINT_WAIT;
    loop {
        let mut differs = Vec::new();
        let mut states = Vec::new();
        for (e, m, model) in &want {
            let table = kernel::conntrack(topo.machine_ns(*m))?;
            if k == 0 && other_pick(topo, c, *m, &table) {
                return Ok(Took::Other);
            }
            match (model, find(&table, e)) {
                (Some(m), Some(x)) if agrees(m, x) => states.extend(x.state.clone()),
                (None, None) => {}
                (m, x) => differs.push(format!("{}: kernel {}, model {}", e.machine, x.map_or("no entry".into(), show), m.as_ref().map_or("no entry".into(), show))),
            }
        }
        if differs.is_empty() {
            seen.points += 1;
            seen.entries += want.iter().filter(|w| w.2.is_some()).count();
            for s in states {
                if !seen.states.contains(&s) {
                    seen.states.push(s);
                }
            }
            return Ok(Took::Scenario);
        }
        if Instant::now() > deadline {
            return Err(format!("packet by packet, after the {} (packet {} of {}): {}", p.segment, k + 1, c.handshake.len(), differs.join("; ")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The kernel's entry for the model's: the same addresses and destination
/// port (the source port may be one `--random-fully` drew), the same
/// source port first.
fn find<'a>(table: &'a [KernelEntry], e: &ModelEntry) -> Option<&'a KernelEntry> {
    let o = e.original;
    let same: Vec<&KernelEntry> = table.iter().filter(|k| k.proto == Protocol::Tcp && k.original.src.ip == o.src.ip && k.original.dst == o.dst).collect();
    same.iter().find(|k| k.original.src.port == o.src.port).or(same.first()).copied()
}

/// Whether the SYN's entry on `m` sent it to another endpoint than the
/// scenario's pick there.
fn other_pick(topo: &Topology, c: &Connection, m: Machine, table: &[KernelEntry]) -> bool {
    c.hops.iter().filter(|h| h.could_reach.len() > 1 && topo.plan.machine(&h.machine) == Some(m)).any(|h| {
        let entry = table.iter().find(|k| k.proto == Protocol::Tcp && k.original.src.ip == h.before.src.ip && k.original.dst == h.before.dst);
        entry.is_some_and(|k| k.reply.src != h.after.dst)
    })
}

fn agrees(model: &KernelEntry, kernel: &KernelEntry) -> bool {
    (&model.state, model.assured, model.unreplied) == (&kernel.state, kernel.assured, kernel.unreplied) && kernel.timeout <= model.timeout + 1 && kernel.timeout + SLACK_SECS >= model.timeout
}

/// An entry as the comparison sees it: `ESTABLISHED 86399 [ASSURED]`.
fn show(e: &KernelEntry) -> String {
    let marks = [(e.unreplied, " [UNREPLIED]"), (e.assured, " [ASSURED]")].iter().filter(|m| m.0).map(|m| m.1).collect::<String>();
    format!("{} {}{marks}", e.state.as_deref().unwrap_or("-"), e.timeout)
}

/// A segment held back at its sender.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hold {
    /// The server's SYN-ACK.
    SynAck,
    /// Everything the server sends.
    Server,
    /// The server's segments with ACK and no SYN, FIN, RST or PSH: its
    /// ACKs of data (a response carries PSH).
    ServerAcks,
    /// The client's segments with ACK and no SYN, FIN or RST (its
    /// handshake's last ACK, its ACKs of data).
    ClientAcks,
    /// The client's FINs after the first (set once: a table written
    /// anew counts afresh).
    LaterFins,
    /// All of the client's FINs (once the first has passed).
    Fins,
}

/// The hold tables of one connection; removed when dropped.
struct Holds<'a> {
    client: &'a Netns,
    server: &'a Netns,
    /// The client's socket and the address it dials.
    from: SockAddr,
    to: SockAddr,
    /// The port the server listens on, after the nodes' DNAT.
    server_port: u16,
}

const CLIENT_TABLE: &str = "khstep_client";
const SERVER_TABLE: &str = "khstep_server";

impl Holds<'_> {
    /// Holds exactly `on` (each table written anew, in one transaction).
    fn set(&self, on: &[Hold]) -> Result<(), String> {
        let flow = format!("ip saddr {} ip daddr {} tcp sport {} tcp dport {}", self.from.ip, self.to.ip, self.from.port, self.to.port);
        let mut client = Vec::new();
        let mut server = Vec::new();
        for h in on {
            match h {
                Hold::SynAck => server.push(format!("tcp sport {} tcp flags & (syn | ack) == syn | ack drop", self.server_port)),
                Hold::Server => server.push(format!("tcp sport {} drop", self.server_port)),
                Hold::ServerAcks => server.push(format!("tcp sport {} tcp flags & (syn | ack | fin | rst | psh) == ack drop", self.server_port)),
                Hold::ClientAcks => client.push(format!("{flow} tcp flags & (syn | ack | fin | rst) == ack drop")),
                // A quota between one FIN's length (40 to 52 bytes) and
                // two's: the first passes, the rest are over it.
                Hold::LaterFins => client.push(format!("{flow} tcp flags & fin == fin quota over 60 bytes drop")),
                Hold::Fins => client.push(format!("{flow} tcp flags & fin == fin drop")),
            }
        }
        write_table(self.client, CLIENT_TABLE, &client)?;
        write_table(self.server, SERVER_TABLE, &server)
    }
}

impl Drop for Holds<'_> {
    fn drop(&mut self) {
        let _ = self.client.exec("nft", &["delete", "table", "inet", CLIENT_TABLE], None);
        let _ = self.server.exec("nft", &["delete", "table", "inet", SERVER_TABLE], None);
    }
}

/// Replaces table `name` in `ns` with one output chain holding `rules`,
/// at the raw priority: before conntrack, so a segment held back at a
/// node or host that sends it is not tracked there either.
fn write_table(ns: &Netns, name: &str, rules: &[String]) -> Result<(), String> {
    let body: String = rules.iter().map(|r| format!("    {r}\n")).collect();
    let script = format!("table inet {name}\ndelete table inet {name}\ntable inet {name} {{\n  chain out {{\n    type filter hook output priority raw; policy accept;\n{body}  }}\n}}\n");
    ns.exec("nft", &["-f", "-"], Some(&script)).map(|_| ()).map_err(|e| format!("packet by packet: holding segments in {}: {e}", ns.name()))
}
