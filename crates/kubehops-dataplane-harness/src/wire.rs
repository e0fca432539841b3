//! Real connections: small TCP and UDP servers that answer with their own
//! address and the peer address they saw, and the probes that dial them.
//!
//! A server runs on threads inside a Pod's (or a node's) namespace. Each
//! request is one line (`kh NONCE`); the answer is one line,
//! `LOCAL PEER NONCE`: the address:port the connection reached and the
//! source it came from, as that namespace's kernel saw them after every
//! rewrite. A TCP server keeps the connection open after answering, so
//! conntrack shows it ESTABLISHED until the probe closes it.
//!
//! Every wait is bounded: connects and answers have timeouts, servers
//! stop when their [`Server`] is dropped.

use crate::netns::Netns;
use crate::sys;
use kubehops_core::net::{Protocol, SockAddr};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a probe waits for a connection, and for an answer on an open
/// one. Below TCP's first SYN retransmission (1 s), so a dropped
/// connection is one packet.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a server waits between checks of its stop flag.
const POLL: Duration = Duration::from_millis(2);

/// Servers of one namespace; stopped (and their open connections shut)
/// when dropped.
pub struct Server {
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    threads: Vec<JoinHandle<Result<Result<(), String>, String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(conns) = self.conns.lock() {
            for c in conns.iter() {
                let _ = c.shutdown(Shutdown::Both);
            }
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The nonce of a request line, `kh NONCE`.
fn nonce_of(request: &str) -> Option<&str> {
    request.trim().strip_prefix("kh ")
}

fn answer(local: SockAddr, peer: SockAddr, request: &str) -> Option<String> {
    Some(format!("{local} {peer} {}\n", nonce_of(request)?))
}

fn sock(a: std::net::SocketAddr) -> Option<SockAddr> {
    match a {
        std::net::SocketAddr::V4(v) => Some(SockAddr::new(*v.ip(), v.port())),
        std::net::SocketAddr::V6(_) => None,
    }
}

/// Starts a server for each `(protocol, address)` in `ns`; returns once
/// all of them are bound.
pub fn serve(ns: &Netns, listen: &[(Protocol, SocketAddrV4)]) -> Result<Server, String> {
    let mut server = Server { stop: Arc::new(AtomicBool::new(false)), conns: Arc::new(Mutex::new(Vec::new())), threads: Vec::new() };
    for &(proto, addr) in listen {
        let (tx, rx) = mpsc::channel::<Result<(), String>>();
        let (stop, conns) = (server.stop.clone(), server.conns.clone());
        let handle = match proto {
            Protocol::Tcp => ns.spawn(move || tcp_server(addr, tx, stop, conns))?,
            Protocol::Udp => ns.spawn(move || udp_server(addr, tx, stop))?,
            Protocol::Sctp => return Err(format!("no SCTP server for {addr}: std has no SCTP sockets")),
        };
        server.threads.push(handle);
        rx.recv_timeout(Duration::from_secs(5)).map_err(|_| format!("the server on {addr} in {} did not start", ns.name()))??;
    }
    Ok(server)
}

fn tcp_server(addr: SocketAddrV4, ready: mpsc::Sender<Result<(), String>>, stop: Arc<AtomicBool>, conns: Arc<Mutex<Vec<TcpStream>>>) -> Result<(), String> {
    let listener = match TcpListener::bind(addr).and_then(|l| l.set_nonblocking(true).map(|_| l)) {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot listen on tcp {addr}: {e}")));
            return Ok(());
        }
    };
    let _ = ready.send(Ok(()));
    let mut handlers = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Ok(c) = stream.try_clone() {
                    if let Ok(mut all) = conns.lock() {
                        all.push(c);
                    }
                }
                let handler = std::thread::Builder::new().stack_size(64 * 1024).spawn(move || serve_tcp_connection(stream));
                handlers.extend(handler.ok());
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
        handlers.retain(|h: &JoinHandle<()>| !h.is_finished());
    }
    for h in handlers {
        let _ = h.join();
    }
    Ok(())
}

/// Answers the one request, then holds the connection until the peer
/// closes it (or the server is stopped, which shuts it).
fn serve_tcp_connection(stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) else { return };
    let (Some(local), Some(peer)) = (sock(local), sock(peer)) else { return };
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let Some(reply) = answer(local, peer, &line) else { return };
    let nonce: Option<u64> = nonce_of(&line).and_then(|n| n.parse().ok());
    if let Some(n) = nonce {
        wait_to_answer(n);
    }
    let mut w = &stream;
    if w.write_all(reply.as_bytes()).is_err() {
        return;
    }
    let mut rest = String::new();
    while matches!(reader.read_line(&mut rest), Ok(n) if n > 0) {
        rest.clear();
    }
    // The client closed its side; a stepped connection's server closes
    // its own when the harness says.
    if let Some(n) = nonce {
        wait_for_close(&stream, n);
    }
}

/// What the harness has let the server of a stepped connection
/// (`scenario::stepped`) do so far: it says when each packet goes.
#[derive(Clone, Copy, Debug, Default)]
struct Let {
    /// Answer the request ([`answer_now`]).
    answer: bool,
    /// Send one ACK of all it received ([`ack_now`]).
    ack: bool,
}

/// Stepped connections by nonce; a server closes its side after the
/// client's FIN once its nonce is gone ([`release_close`]).
static STEPPED: Mutex<BTreeMap<u64, Let>> = Mutex::new(BTreeMap::new());
/// The longest a server waits for the harness.
const STEPPED_WAIT: Duration = Duration::from_secs(60);

/// A nonce for a stepped connection: its server answers the request on
/// [`answer_now`], and after the client's FIN keeps its side open until
/// [`release_close`].
pub fn stepped() -> u64 {
    let nonce = NONCE.fetch_add(1, Ordering::SeqCst);
    if let Ok(mut all) = STEPPED.lock() {
        all.insert(nonce, Let::default());
    }
    nonce
}

fn allow(nonce: u64, f: impl FnOnce(&mut Let)) {
    if let Ok(mut all) = STEPPED.lock() {
        if let Some(l) = all.get_mut(&nonce) {
            f(l);
        }
    }
}

/// Lets the server of `nonce`'s connection answer its request.
pub fn answer_now(nonce: u64) {
    allow(nonce, |l| l.answer = true);
}

/// Has the server of `nonce`'s connection send one ACK of all it
/// received (a keepalive probe; its kernel's own ACK of the FIN went
/// when it came).
pub fn ack_now(nonce: u64) {
    allow(nonce, |l| l.ack = true);
}

/// Lets the server of `nonce`'s connection close its side (and answer,
/// if it has not).
pub fn release_close(nonce: u64) {
    if let Ok(mut all) = STEPPED.lock() {
        all.remove(&nonce);
    }
}

fn stepped_state(nonce: u64) -> Option<Let> {
    STEPPED.lock().ok().and_then(|all| all.get(&nonce).copied())
}

/// Waits until the harness lets a stepped connection's server answer.
fn wait_to_answer(nonce: u64) {
    let t = std::time::Instant::now();
    while stepped_state(nonce).is_some_and(|l| !l.answer) && t.elapsed() < STEPPED_WAIT {
        std::thread::sleep(POLL);
    }
}

fn wait_for_close(stream: &TcpStream, nonce: u64) {
    if stepped_state(nonce).is_none() {
        return;
    }
    let t = std::time::Instant::now();
    let mut acked = false;
    while let Some(l) = stepped_state(nonce).filter(|_| t.elapsed() < STEPPED_WAIT) {
        if l.ack && !acked {
            // One probe: at once (the connection has been idle since the
            // FIN), the next an hour on. More would be retransmissions to
            // conntrack, which caps the entry's timeout after three.
            let _ = sys::keepalive(stream, 1, 3600);
            acked = true;
        }
        std::thread::sleep(POLL);
    }
    // The FIN now: the server keeps a clone of every stream (to shut them
    // when stopped), so dropping this one would not close the socket.
    let _ = stream.shutdown(Shutdown::Write);
}

fn udp_server(addr: SocketAddrV4, ready: mpsc::Sender<Result<(), String>>, stop: Arc<AtomicBool>) -> Result<(), String> {
    let socket = match UdpSocket::bind(addr).and_then(|s| s.set_read_timeout(Some(Duration::from_millis(20))).map(|_| s)) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot listen on udp {addr}: {e}")));
            return Ok(());
        }
    };
    let _ = ready.send(Ok(()));
    let local = SockAddr::new(*addr.ip(), addr.port());
    let mut buf = [0u8; 256];
    while !stop.load(Ordering::SeqCst) {
        let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
        let (Some(peer), Ok(text)) = (sock(from), std::str::from_utf8(&buf[..n])) else { continue };
        if let Some(reply) = answer(local, peer, text) {
            let _ = socket.send_to(reply.as_bytes(), from);
        }
    }
    Ok(())
}

/// What the server that answered saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The address:port the connection reached.
    pub server: SockAddr,
    /// The source the server saw.
    pub peer: SockAddr,
}

/// How one connection attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Answered(Answer),
    /// ECONNREFUSED: a TCP reset, or an ICMP port unreachable (REJECT).
    Refused,
    /// Nothing came back in time (DROP, or no route anywhere).
    TimedOut,
    /// An ICMP host or network unreachable came back.
    Unreachable,
    /// EPERM: a rule on the sending host's own output path dropped or
    /// rejected the packet (how the kernel tells a local UDP sender).
    Blocked,
    /// Anything else, said in words.
    Failed(String),
}

impl Outcome {
    pub fn answer(&self) -> Option<Answer> {
        match self {
            Outcome::Answered(a) => Some(*a),
            _ => None,
        }
    }
}

/// One connection: how it went, from which local address, and its socket,
/// kept open until dropped so the kernel keeps the connection.
pub struct Conn {
    pub outcome: Outcome,
    /// The probe's own address (its source port, when the kernel chose it).
    pub local: SockAddr,
    _tcp: Option<TcpStream>,
    _udp: Option<UdpSocket>,
}

static NONCE: AtomicU64 = AtomicU64::new(1);

fn classify(e: &std::io::Error) -> Outcome {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => Outcome::Refused,
        Some(libc::EPERM) => Outcome::Blocked,
        Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) => Outcome::Unreachable,
        Some(libc::ETIMEDOUT) | Some(libc::EAGAIN) => Outcome::TimedOut,
        _ if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => Outcome::TimedOut,
        _ => Outcome::Failed(e.to_string()),
    }
}

/// Reads `LOCAL PEER NONCE` and checks the nonce.
pub fn parse_answer(line: &str, nonce: u64) -> Outcome {
    let words: Vec<&str> = line.split_whitespace().collect();
    let parsed = match words.as_slice() {
        [local, peer, n] if n.parse::<u64>().ok() == Some(nonce) => local.parse::<std::net::SocketAddrV4>().ok().zip(peer.parse::<std::net::SocketAddrV4>().ok()),
        _ => None,
    };
    match parsed {
        Some((l, p)) => Outcome::Answered(Answer { server: SockAddr::new(*l.ip(), l.port()), peer: SockAddr::new(*p.ip(), p.port()) }),
        None => Outcome::Failed(format!("unexpected answer {line:?}")),
    }
}

/// Source ports a probe takes in turn when its caller leaves the port
/// open: above the NodePort range and below nothing the harness serves.
/// The kernel's own choice can hand a port straight back once its socket
/// is closed (probes close with a reset), and a connection that timed out
/// leaves its conntrack entry behind: a second connection from the same
/// port then rides that entry and walks no NAT rule. Taking ports in turn
/// means no port repeats within a run (each run has fewer connections
/// than the range has ports).
const PROBE_PORTS: std::ops::RangeInclusive<u16> = 33000..=60999;
static NEXT_PORT: AtomicU64 = AtomicU64::new(0);
/// Ports tried before giving up when each is taken in the namespace.
const PORT_TRIES: usize = 16;

pub fn next_source_port() -> u16 {
    let span = u64::from(PROBE_PORTS.end() - PROBE_PORTS.start()) + 1;
    let n = NEXT_PORT.fetch_add(1, Ordering::SeqCst) % span;
    PROBE_PORTS.start() + n as u16
}

/// Dials `dst` from `src` inside `ns`, sends one request and waits for the
/// answer. Port 0 takes the next of [`PROBE_PORTS`] that is free.
pub fn probe(ns: &Netns, proto: Protocol, src: SockAddr, dst: SockAddr) -> Result<Conn, String> {
    if src.port != 0 {
        return probe_from(ns, proto, src, dst)?.ok_or_else(|| format!("{src} is taken"));
    }
    for _ in 0..PORT_TRIES {
        if let Some(conn) = probe_from(ns, proto, SockAddr::new(src.ip, next_source_port()), dst)? {
            return Ok(conn);
        }
    }
    Err(format!("{PORT_TRIES} source ports in a row were taken on {}", src.ip))
}

/// One probe from exactly `src`; `None` when that address is taken.
fn probe_from(ns: &Netns, proto: Protocol, src: SockAddr, dst: SockAddr) -> Result<Option<Conn>, String> {
    let nonce = NONCE.fetch_add(1, Ordering::SeqCst);
    match proto {
        Protocol::Tcp => ns.within(move || tcp_probe(src, dst, nonce)),
        Protocol::Udp => ns.within(move || udp_probe(src, dst, nonce)),
        Protocol::Sctp => Err("SCTP connections are not probed (std has no SCTP sockets)".into()),
    }
}

fn taken(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AddrInUse
}

fn local_of(a: std::io::Result<std::net::SocketAddr>, fallback: SockAddr) -> SockAddr {
    a.ok().and_then(sock).unwrap_or(fallback)
}

fn tcp_probe(src: SockAddr, dst: SockAddr, nonce: u64) -> Option<Conn> {
    let (stream, connected) = match sys::tcp_connect(sys::v4(src.ip, src.port), sys::v4(dst.ip, dst.port), CONNECT_TIMEOUT) {
        Ok(s) => s,
        Err(e) if taken(&e) => return None,
        Err(e) => return Some(Conn { outcome: Outcome::Failed(format!("socket from {src}: {e}")), local: src, _tcp: None, _udp: None }),
    };
    let local = local_of(stream.local_addr(), src);
    if let Err(e) = connected {
        return Some(Conn { outcome: classify(&e), local, _tcp: None, _udp: None });
    }
    let outcome = (|| {
        stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(|e| classify(&e))?;
        (&stream).write_all(format!("kh {nonce}\n").as_bytes()).map_err(|e| classify(&e))?;
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line).map_err(|e| classify(&e))?;
        if line.is_empty() {
            return Err(Outcome::Failed("the connection closed without an answer".into()));
        }
        Ok(parse_answer(&line, nonce))
    })()
    .unwrap_or_else(|o| o);
    Some(Conn { outcome, local, _tcp: Some(stream), _udp: None })
}

fn udp_probe(src: SockAddr, dst: SockAddr, nonce: u64) -> Option<Conn> {
    let socket = match UdpSocket::bind(sys::v4(src.ip, src.port)) {
        Ok(s) => s,
        Err(e) if taken(&e) => return None,
        Err(e) => return Some(Conn { outcome: Outcome::Failed(format!("bind {src}: {e}")), local: src, _tcp: None, _udp: None }),
    };
    let local = local_of(socket.local_addr(), src);
    let outcome = (|| {
        // Connected: only answers from `dst` are taken, and an ICMP error
        // for the flow is reported (ECONNREFUSED for port unreachable).
        socket.connect(sys::v4(dst.ip, dst.port)).map_err(|e| classify(&e))?;
        socket.set_read_timeout(Some(CONNECT_TIMEOUT)).map_err(|e| classify(&e))?;
        socket.send(format!("kh {nonce}\n").as_bytes()).map_err(|e| classify(&e))?;
        let mut buf = [0u8; 256];
        let n = socket.recv(&mut buf).map_err(|e| classify(&e))?;
        Ok(parse_answer(&String::from_utf8_lossy(&buf[..n]), nonce))
    })()
    .unwrap_or_else(|o| o);
    Some(Conn { outcome, local, _tcp: None, _udp: Some(socket) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubehops_core::net::ip;

    #[test]
    fn answers_carry_both_addresses_and_the_nonce() {
        let (l, p) = (SockAddr::new(ip(10, 180, 0, 1), 80), SockAddr::new(ip(192, 168, 0, 2), 61234));
        let line = answer(l, p, "kh 7\n").unwrap();
        assert_eq!(line, "10.180.0.1:80 192.168.0.2:61234 7\n");
        assert_eq!(parse_answer(&line, 7), Outcome::Answered(Answer { server: l, peer: p }));
        assert!(matches!(parse_answer(&line, 8), Outcome::Failed(_)), "another probe's answer is not ours");
        assert_eq!(answer(l, p, "hello"), None);
    }
}
