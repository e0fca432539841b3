//! The Pod network on the wire: a scenario built with `network=vxlan`,
//! replayed on nodes that hold flannel's VXLAN state (the topology's
//! `overlay`), with the underlay captured.
//!
//! `tcpdump` runs in the fabric namespace (the network between the
//! nodes) on every interface for the whole data plane; before and after
//! each attempt the harness sends a marker datagram out of the fabric's
//! `mark0` (a veth whose other end drops it), and waits until the capture holds it, so the frames of
//! one attempt are those between its two marks. Each frame is counted
//! once, as it arrives at the fabric from the node that sent it (Linux
//! cooked capture's packet type: not `OUTGOING`). The capture keeps the
//! headers only, in a ring big enough for the busiest data plane; when
//! it ends, a data plane whose capture the kernel dropped frames from
//! fails, since its "no such packet" could be a lost one.
//!
//! For the attempt that took the scenario's picks, every VXLAN frame must
//! be one of the connection's wrapped hops (`PacketHop::tunnel`): the
//! inner packet equal to the hop's packet after its node's rules (DNAT,
//! SNAT; the masquerade source under an overlay is `flannel.1`'s address),
//! its ports as the replay binds the kernel's `--random-fully` ports;
//! and then the outer header equal to the model's: node address to node
//! address, UDP destination port 8472, VNI 1 (flags 0x08), the UDP source
//! port within the model's range, the inner Ethernet addresses the two
//! nodes' VTEP MACs. Every wrapped hop must have been seen, requests and
//! answers. A packet the model keeps on one node must never be wrapped,
//! and no Pod-to-Pod packet may cross the fabric bare. What the kernel
//! sends back for a refused or rejected connection (a TCP reset, an ICMP
//! error) is not a hop of the scenario: it is counted, and its outer
//! header must be the way back of the request's.

use super::{random_fully, Connection, End, WrappedHop};
use crate::sys;
use crate::topology::{Topology, MARK_FROM, MARK_TO};
use kubehops_core::dataplane::overlay::{owner, OverlayNode};
use kubehops_core::net::{Packet, Protocol, SockAddr};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The marker datagrams' port (discard).
const MARK_PORT: u16 = 9;
/// How long a mark may take to show in the capture.
const MARK_WAIT: Duration = Duration::from_secs(5);
/// The bytes kept of each frame: the cooked header, the outer IPv4, UDP
/// and VXLAN headers, the inner Ethernet, IPv4 and TCP headers with
/// options (20 + 20 + 8 + 8 + 14 + 60 + 60), and a mark's text. On `any`,
/// libpcap sizes each slot of the kernel's ring by this length: with the
/// whole frame (`-s 0`, 256 KiB a slot) the default 2 MiB ring held 8
/// frames, and under load the kernel dropped a quarter of them (CI at
/// dab2270 missed a wrapped answer that way).
const SNAPLEN: &str = "256";
/// The kernel's ring for the capture, in KiB: room for some 30,000
/// frames, while a split check's 200 connections make about 10,000.
const RING_KIB: &str = "16384";

/// What the overlay check saw, over a run.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Connections whose underlay was checked.
    pub connections: usize,
    /// Of them, connections with a wrapped hop in the model.
    pub with_tunnel: usize,
    /// The model's wrapped hops, each seen on the wire and equal.
    pub wrapped_requests: usize,
    pub wrapped_replies: usize,
    /// VXLAN frames captured, each equal to its hop's model.
    pub frames: usize,
    /// Hops that stay on one node, none wrapped.
    pub same_node: usize,
    /// Frames the kernel sends back for a refused or rejected connection
    /// (a reset, an ICMP error), wrapped the way back.
    pub refusals: usize,
    /// The outer UDP source ports seen.
    pub source_ports: BTreeSet<u16>,
    /// Frames on the underlay in all (each once).
    pub underlay_frames: usize,
    /// Pod-to-Pod packets that crossed between nodes unwrapped (each a failure).
    pub bare: usize,
    /// Connections checked a second time over a later end mark (see
    /// `scenario::replay`'s use of [`Capture::check`]).
    pub rechecked: usize,
    /// Frames the kernel dropped from the capture's ring (each data plane
    /// that drops any fails).
    pub dropped: u64,
}

/// A running capture of the fabric; stopped (and its file removed) on drop.
pub struct Capture {
    child: Option<Child>,
    /// What tcpdump says on stderr, read to its end when it exits.
    said: Option<std::thread::JoinHandle<String>>,
    path: PathBuf,
    marks: u64,
    nodes: Vec<OverlayNode>,
}

/// One frame of the capture.
#[derive(Debug)]
enum Frame {
    Mark(String),
    Vxlan(Captured),
    /// Any other IPv4 packet arriving at the fabric.
    Plain { src: Ipv4Addr, dst: Ipv4Addr },
    /// Not IPv4, or the fabric's own sending.
    Other,
}

/// A VXLAN packet as it arrived at the fabric.
#[derive(Debug)]
struct Captured {
    outer_src: Ipv4Addr,
    outer_dst: Ipv4Addr,
    udp_src: u16,
    udp_dst: u16,
    flags: u8,
    vni: u32,
    inner_src_mac: [u8; 6],
    inner_dst_mac: [u8; 6],
    inner: Inner,
}

#[derive(Clone, Copy, Debug)]
enum Inner {
    /// TCP or UDP; `rst`: a TCP reset.
    Packet { p: Packet, rst: bool },
    /// Any other protocol (an ICMP error): its addresses and protocol.
    Other { src: Ipv4Addr, dst: Ipv4Addr, proto: u8 },
}

impl Inner {
    fn addrs(&self) -> (Ipv4Addr, Ipv4Addr) {
        match self {
            Inner::Packet { p, .. } => (p.src.ip, p.dst.ip),
            Inner::Other { src, dst, .. } => (*src, *dst),
        }
    }
}

impl std::fmt::Display for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Inner::Packet { p, rst } => write!(f, "{:?} {} → {}{}", p.proto, p.src, p.dst, if *rst { " (RST)" } else { "" }),
            Inner::Other { src, dst, proto } => write!(f, "IP protocol {proto} {src} → {dst}"),
        }
    }
}

fn mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

impl Capture {
    /// Starts `tcpdump` on every interface of the fabric.
    pub fn start(topo: &Topology) -> Result<Capture, String> {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!("{}overlay-{n}.pcap", crate::netns::run_prefix()));
        let ip = sys::find_tool("ip").ok_or("ip not found")?;
        let tcpdump = sys::find_tool("tcpdump").ok_or("tcpdump not found (Debian package tcpdump; scripts/setup installs it)")?;
        let mut child = Command::new(ip)
            .args(["netns", "exec", topo.fabric.name()])
            .arg(tcpdump)
            .args(["-i", "any", "-n", "-U", "--immediate-mode", "-s", SNAPLEN, "-B", RING_KIB, "-Z", "root", "-w"])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start tcpdump: {e}"))?;
        let mut err = BufReader::new(child.stderr.take().ok_or("tcpdump's stderr")?);
        let mut said = String::new();
        let mut cap = Capture { child: Some(child), said: None, path, marks: 0, nodes: topo.plan.overlay_nodes() };
        loop {
            let mut line = String::new();
            let n = err.read_line(&mut line).map_err(|e| format!("tcpdump: {e}"))?;
            if n == 0 {
                return Err(format!("tcpdump exited before listening: {said}"));
            }
            if line.contains("listening on") {
                break;
            }
            said.push_str(&line);
        }
        cap.said = Some(std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut rest);
            rest
        }));
        // The first mark: the capture is running and sees the fabric.
        cap.mark(topo)?;
        Ok(cap)
    }

    /// Sends the next mark and waits for it in the capture; the number of
    /// frames up to and including it.
    pub fn mark(&mut self, topo: &Topology) -> Result<usize, String> {
        self.marks += 1;
        let tag = format!("khh-mark {}", self.marks);
        let text = tag.clone();
        topo.fabric
            .within(move || -> std::io::Result<()> {
                let u = std::net::UdpSocket::bind((MARK_FROM, 0))?;
                u.send_to(text.as_bytes(), (MARK_TO, MARK_PORT))?;
                Ok(())
            })?
            .map_err(|e| format!("the capture's mark: {e}"))?;
        let t = Instant::now();
        loop {
            let frames = self.frames()?;
            if let Some(i) = frames.iter().position(|f| matches!(f, Frame::Mark(m) if *m == tag)) {
                return Ok(i + 1);
            }
            if t.elapsed() > MARK_WAIT {
                return Err(format!("the capture of the fabric never showed mark {} ({} frames)", self.marks, frames.len()));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn frames(&self) -> Result<Vec<Frame>, String> {
        let bytes = std::fs::read(&self.path).map_err(|e| format!("{}: {e}", self.path.display()))?;
        pcap_frames(&bytes)
    }

    /// The frames between the marks `start` and `end` (as [`Capture::mark`]
    /// returns them) against connection `c`'s wrapped hops.
    pub fn check(&mut self, topo: &Topology, c: &Connection, start: usize, end: usize, counts: &mut Counts) -> Result<(), String> {
        let frames = self.frames()?;
        let window = frames.get(start..end.saturating_sub(1)).ok_or("the capture shrank")?;
        // Ports the kernel drew (`--random-fully`): model port → kernel port.
        let free: BTreeSet<u16> = c.hops.iter().filter(|h| h.snat && random_fully(&topo.plan, h)).map(|h| h.after.src.port).collect();
        let mut bound: BTreeMap<u16, u16> = BTreeMap::new();
        let mut seen = vec![0usize; c.wrapped.len()];
        let refused = matches!(c.end, End::Refused | End::Filtered { rejected: true, .. });
        let mut problems = Vec::new();
        let mut frames_ok = 0;
        let mut refusals = 0;
        let mut ports = BTreeSet::new();
        for f in window {
            let k = match f {
                Frame::Vxlan(k) => k,
                Frame::Plain { src, dst } => {
                    let (a, b) = (owner(&self.nodes, *src), owner(&self.nodes, *dst));
                    if let (Some(a), Some(b)) = (a, b) {
                        if a.name != b.name {
                            counts.bare += 1;
                            problems.push(format!("a Pod packet {src} → {dst} crossed the underlay bare, from {}'s Pods to {}'s", a.name, b.name));
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            ports.insert(k.udp_src);
            let matched = match k.inner {
                Inner::Packet { p, .. } => c.wrapped.iter().position(|w| same_packet(&w.wrapped.inner, &p, &free, &bound)),
                Inner::Other { .. } => None,
            };
            let Some(i) = matched else {
                // What a refusal sends back, wrapped the way back of a request.
                let back = c.wrapped.iter().find(|w| {
                    !w.reply && {
                        let (s, d) = k.inner.addrs();
                        (s, d) == (w.wrapped.inner.dst.ip, w.wrapped.inner.src.ip) || d == w.wrapped.inner.src.ip
                    }
                });
                let rst = matches!(k.inner, Inner::Packet { rst: true, .. });
                match back {
                    Some(w) if refused && (rst || matches!(k.inner, Inner::Other { .. })) => {
                        let o = &w.wrapped.outer;
                        let mut diff = Vec::new();
                        if (k.outer_src, k.outer_dst) != (o.dst, o.src) {
                            diff.push(format!("outer {} → {}, the request's way back {} → {}", k.outer_src, k.outer_dst, o.dst, o.src));
                        }
                        if (k.udp_dst, k.vni, k.flags) != (o.udp_dst, o.vni, 0x08) || !o.udp_src.contains(k.udp_src) {
                            diff.push(format!("UDP {} → {}, VNI {} (flags {:#04x}); model UDP {} → {}, VNI {}", k.udp_src, k.udp_dst, k.vni, k.flags, o.udp_src, o.udp_dst, o.vni));
                        }
                        if diff.is_empty() {
                            refusals += 1;
                        } else {
                            problems.push(format!("the refusal {} came back wrapped unlike the request's way back: {}", k.inner, diff.join("; ")));
                        }
                    }
                    _ => problems.push(self.unexpected(c, k, &free, &bound)),
                }
                continue;
            };
            let w = &c.wrapped[i];
            if let Inner::Packet { p, .. } = k.inner {
                bind(&w.wrapped.inner, &p, &free, &mut bound);
            }
            let diff = outer_diff(w, k);
            if diff.is_empty() {
                seen[i] += 1;
                frames_ok += 1;
            } else {
                problems.push(format!("{} ({} → {}, {}): {}", k.inner, w.from, w.to, if w.reply { "answer" } else { "request" }, diff.join("; ")));
            }
        }
        for (w, n) in c.wrapped.iter().zip(&seen) {
            if *n == 0 && !problems.iter().any(|p| p.contains(&format!("({} → {}, ", w.from, w.to))) {
                let bare = window.iter().any(|f| matches!(f, Frame::Plain { src, dst } if (*src, *dst) == (w.wrapped.inner.src.ip, w.wrapped.inner.dst.ip)));
                problems.push(format!(
                    "the model wraps the {} {} on {} for {} (outer {} → {}); the kernel put no such VXLAN packet on the underlay{}",
                    if w.reply { "answer" } else { "request" },
                    w.wrapped.inner,
                    w.from,
                    w.to,
                    w.wrapped.outer.src,
                    w.wrapped.outer.dst,
                    if bare { ", it crossed bare" } else { "" }
                ));
            }
        }
        counts.connections += 1;
        counts.underlay_frames += window.iter().filter(|f| !matches!(f, Frame::Other)).count();
        // One line per kind of disagreement (a connection's segments repeat it).
        let mut once: Vec<String> = Vec::new();
        for p in problems {
            if !once.contains(&p) {
                once.push(p);
            }
        }
        let problems = once;
        if problems.is_empty() {
            counts.with_tunnel += usize::from(!c.wrapped.is_empty());
            counts.wrapped_requests += c.wrapped.iter().filter(|w| !w.reply).count();
            counts.wrapped_replies += c.wrapped.iter().filter(|w| w.reply).count();
            counts.frames += frames_ok;
            counts.same_node += c.same_node.len();
            counts.refusals += refusals;
            counts.source_ports.extend(ports);
            Ok(())
        } else {
            Err(format!("on the VXLAN underlay:\n    {}", problems.join("\n    ")))
        }
    }

    /// Why a wrapped frame fits none of the connection's wrapped hops.
    fn unexpected(&self, c: &Connection, k: &Captured, free: &BTreeSet<u16>, bound: &BTreeMap<u16, u16>) -> String {
        let head = format!("a VXLAN packet {} → {} (UDP {} → {}, VNI {}) carrying {}", k.outer_src, k.outer_dst, k.udp_src, k.udp_dst, k.vni, k.inner);
        if let Inner::Packet { p, .. } = k.inner {
            if c.same_node.iter().any(|s| same_packet(s, &p, free, bound)) {
                return format!("{head}: the model keeps that packet on one node, unwrapped");
            }
            // The nearest wrapped hop: the same nodes and protocol.
            let near = c.wrapped.iter().find(|w| (w.wrapped.outer.src, w.wrapped.outer.dst) == (k.outer_src, k.outer_dst) && w.wrapped.inner.proto == p.proto);
            if let Some(w) = near {
                let m = w.wrapped.inner;
                let mut diff = Vec::new();
                if m.src.ip != p.src.ip || !port_ok(m.src.port, p.src.port, free, bound) {
                    diff.push(format!("inner source: kernel {}, model {}", p.src, m.src));
                }
                if m.dst.ip != p.dst.ip || !port_ok(m.dst.port, p.dst.port, free, bound) {
                    diff.push(format!("inner destination: kernel {}, model {}", p.dst, m.dst));
                }
                return format!("{head}: unlike the model's {} wrapped on {} for {} ({}): {}", if w.reply { "answer" } else { "request" }, w.from, w.to, m, diff.join("; "));
            }
        }
        let model: Vec<String> = c.wrapped.iter().map(|w| format!("{} ({} → {})", w.wrapped.inner, w.from, w.to)).collect();
        format!("{head}: not a packet the model wraps (its wrapped hops: {})", if model.is_empty() { "none".into() } else { model.join(", ") })
    }
}

impl Capture {
    /// Stops the capture; the frames the kernel dropped from its ring (as
    /// tcpdump counts them on exit). A capture that dropped frames cannot
    /// say a packet never crossed the underlay.
    pub fn finish(mut self) -> Result<u64, String> {
        self.stop();
        let said = self.said.take().and_then(|t| t.join().ok()).unwrap_or_default();
        dropped(&said).ok_or_else(|| format!("tcpdump gave no counts on exit: {}", said.trim()))
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: a signal to the process this capture started.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGINT) };
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(2) {
                if matches!(c.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The count in tcpdump's "N packets dropped by kernel".
fn dropped(said: &str) -> Option<u64> {
    said.lines().find_map(|l| l.trim().strip_suffix(" packets dropped by kernel")?.parse().ok())
}

/// The outer header and inner Ethernet addresses against the hop's model.
fn outer_diff(w: &WrappedHop, k: &Captured) -> Vec<String> {
    let (m, o) = (&w.wrapped, &w.wrapped.outer);
    let mut diff = Vec::new();
    if (k.outer_src, k.outer_dst) != (o.src, o.dst) {
        diff.push(format!("outer addresses: kernel {} → {}, model {} → {}", k.outer_src, k.outer_dst, o.src, o.dst));
    }
    if k.udp_dst != o.udp_dst {
        diff.push(format!("outer UDP destination port: kernel {}, model {}", k.udp_dst, o.udp_dst));
    }
    if !o.udp_src.contains(k.udp_src) {
        diff.push(format!("outer UDP source port: kernel {}, outside the model's {}", k.udp_src, o.udp_src));
    }
    if k.vni != o.vni || k.flags != 0x08 {
        diff.push(format!("VXLAN: kernel VNI {} (flags {:#04x}), model VNI {} (flags 0x08)", k.vni, k.flags, o.vni));
    }
    if (k.inner_src_mac, k.inner_dst_mac) != (m.inner_src_mac.0, m.inner_dst_mac.0) {
        diff.push(format!("inner Ethernet: kernel {} → {}, model {} → {}", mac(&k.inner_src_mac), mac(&k.inner_dst_mac), m.inner_src_mac, m.inner_dst_mac));
    }
    diff
}

fn port_ok(model: u16, kernel: u16, free: &BTreeSet<u16>, bound: &BTreeMap<u16, u16>) -> bool {
    if free.contains(&model) {
        bound.get(&model).is_none_or(|b| *b == kernel)
    } else {
        model == kernel
    }
}

/// The kernel's packet is the model's, a port the kernel drew aside.
fn same_packet(model: &Packet, kernel: &Packet, free: &BTreeSet<u16>, bound: &BTreeMap<u16, u16>) -> bool {
    let addr = |m: SockAddr, k: SockAddr| m.ip == k.ip && port_ok(m.port, k.port, free, bound);
    model.proto == kernel.proto && addr(model.src, kernel.src) && addr(model.dst, kernel.dst)
}

fn bind(model: &Packet, kernel: &Packet, free: &BTreeSet<u16>, bound: &mut BTreeMap<u16, u16>) {
    for (m, k) in [(model.src.port, kernel.src.port), (model.dst.port, kernel.dst.port)] {
        if free.contains(&m) {
            bound.entry(m).or_insert(k);
        }
    }
}

// ---------------------------------------------------------------- pcap

fn be16(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(o)?, *b.get(o + 1)?]))
}

fn addr(b: &[u8], o: usize) -> Option<Ipv4Addr> {
    let w = b.get(o..o + 4)?;
    Some(Ipv4Addr::new(w[0], w[1], w[2], w[3]))
}

/// The frames of a pcap file written by tcpdump on `any` (Linux cooked
/// capture, v1 or v2) or on one Ethernet interface. A record cut short
/// (tcpdump still writing it) ends the list.
fn pcap_frames(b: &[u8]) -> Result<Vec<Frame>, String> {
    if b.len() < 24 {
        return Ok(Vec::new());
    }
    let le = match [b[0], b[1], b[2], b[3]] {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        m => return Err(format!("not a pcap file: magic {m:02x?}")),
    };
    let u32_at = |o: usize| {
        let w = [b[o], b[o + 1], b[o + 2], b[o + 3]];
        if le {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        }
    };
    let link = u32_at(20);
    let mut out = Vec::new();
    let mut o = 24;
    while o + 16 <= b.len() {
        let incl = u32_at(o + 8) as usize;
        let start = o + 16;
        if start + incl > b.len() {
            break;
        }
        out.push(frame(link, &b[start..start + incl]).unwrap_or(Frame::Other));
        o = start + incl;
    }
    Ok(out)
}

/// One captured frame: (whether the fabric sent it itself, ethertype, payload).
fn link_layer(link: u32, f: &[u8]) -> Option<(bool, u16, &[u8])> {
    const OUTGOING: u16 = 4;
    match link {
        // LINUX_SLL: packet type, ARPHRD type, address length, address (8), protocol.
        113 => Some((be16(f, 0)? == OUTGOING, be16(f, 14)?, f.get(16..)?)),
        // LINUX_SLL2: protocol, reserved, interface index, ARPHRD type, packet type, ...
        276 => Some((u16::from(*f.get(10)?) == OUTGOING, be16(f, 0)?, f.get(20..)?)),
        // Ethernet.
        1 => Some((false, be16(f, 12)?, f.get(14..)?)),
        _ => None,
    }
}

struct Ip4<'a> {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    payload: &'a [u8],
}

fn ipv4(ip: &[u8]) -> Option<Ip4<'_>> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(be16(ip, 2)?).min(ip.len());
    Some(Ip4 { src: addr(ip, 12)?, dst: addr(ip, 16)?, proto: ip[9], payload: ip.get(ihl..total)? })
}

fn frame(link: u32, f: &[u8]) -> Option<Frame> {
    let (outgoing, ethertype, payload) = link_layer(link, f)?;
    if ethertype != 0x0800 {
        return Some(Frame::Other);
    }
    let ip = ipv4(payload)?;
    let udp = (ip.proto == 17 && ip.payload.len() >= 8).then_some(ip.payload);
    if let Some(u) = udp {
        if ip.dst == MARK_TO && be16(u, 2)? == MARK_PORT {
            return Some(Frame::Mark(String::from_utf8_lossy(&u[8..]).into_owned()));
        }
    }
    if outgoing {
        return Some(Frame::Other);
    }
    if let Some(u) = udp.filter(|u| u.len() >= 16 + 14 && be16(u, 2) == Some(kubehops_core::dataplane::overlay::LINUX_VXLAN_PORT)) {
        let vx = &u[8..];
        let eth = &vx[8..];
        if be16(eth, 12)? != 0x0800 {
            return Some(Frame::Other);
        }
        let inner = ipv4(&eth[14..])?;
        let inner = match inner.proto {
            6 | 17 => {
                let proto = if inner.proto == 6 { Protocol::Tcp } else { Protocol::Udp };
                let p = Packet::new(proto, SockAddr::new(inner.src, be16(inner.payload, 0)?), SockAddr::new(inner.dst, be16(inner.payload, 2)?));
                let rst = inner.proto == 6 && inner.payload.get(13).is_some_and(|flags| flags & 0x04 != 0);
                Inner::Packet { p, rst }
            }
            proto => Inner::Other { src: inner.src, dst: inner.dst, proto },
        };
        return Some(Frame::Vxlan(Captured {
            outer_src: ip.src,
            outer_dst: ip.dst,
            udp_src: be16(u, 0)?,
            udp_dst: be16(u, 2)?,
            flags: vx[0],
            vni: u32::from_be_bytes([0, vx[4], vx[5], vx[6]]),
            inner_dst_mac: eth[0..6].try_into().ok()?,
            inner_src_mac: eth[6..12].try_into().ok()?,
            inner,
        }));
    }
    Some(Frame::Plain { src: ip.src, dst: ip.dst })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, ProxyMode};
    use kubehops_core::dataplane::overlay::{PodNetwork, KERNEL_SOURCE_PORTS, LINUX_VXLAN_PORT};
    use kubehops_core::net::ip;

    fn vxlan() -> Vec<super::super::ScenarioReplay> {
        super::super::connections_vxlan(ProxyMode::Iptables).expect("the scenarios build with network=vxlan").0
    }

    #[test]
    fn every_case_builds_on_the_overlay_with_tunnels_node_to_node() {
        let r = vxlan();
        let (routed, _) = super::super::connections(&[ProxyMode::Iptables]).unwrap();
        assert_eq!(r.iter().map(|s| s.connections.len()).sum::<usize>(), routed.iter().map(|s| s.connections.len()).sum::<usize>(), "as many connections as routed");
        assert!(r.iter().all(|s| matches!(s.network, PodNetwork::Vxlan(_)) && s.connections.iter().all(|c| c.what.contains("network=vxlan"))));
        assert!(routed.iter().all(|s| s.network == PodNetwork::Routed && s.connections.iter().all(|c| c.wrapped.is_empty())));
        let mut masqueraded_to_vtep = 0;
        let mut replies = 0;
        for s in &r {
            let plan = Plan::from_dataplane(&s.dataplane, Vec::new(), Vec::new()).unwrap();
            let nodes = plan.overlay_nodes();
            for c in &s.connections {
                for w in &c.wrapped {
                    let o = w.wrapped.outer;
                    let (from, to) = (nodes.iter().find(|n| n.name == w.from).unwrap(), nodes.iter().find(|n| n.name == w.to).unwrap());
                    assert_eq!((o.src, o.dst, o.udp_dst, o.vni, o.udp_src), (from.address, to.address, LINUX_VXLAN_PORT, 1, KERNEL_SOURCE_PORTS), "{}", c.what);
                    assert!(to.pod_cidr.contains(w.wrapped.inner.dst.ip), "{}: unwrapped where the inner destination lives", c.what);
                    masqueraded_to_vtep += usize::from(!w.reply && w.wrapped.inner.src.ip == from.vtep_address());
                    replies += usize::from(w.reply);
                }
                assert!(c.same_node.iter().all(|p| !c.wrapped.iter().any(|w| w.wrapped.inner == *p)), "{}", c.what);
            }
        }
        assert!(masqueraded_to_vtep > 0, "a masquerade to flannel.1's address crosses the overlay");
        assert!(replies > 0, "answers cross it too");
    }

    #[test]
    fn the_masquerade_source_is_flannels_address_towards_another_nodes_pods() {
        let s = vxlan().into_iter().find(|s| s.scenario == "nodeport-loadbalancer").unwrap();
        let mut plan = Plan::from_dataplane(&s.dataplane, Vec::new(), Vec::new()).unwrap();
        let n = plan.node_index("node-2").unwrap();
        let other = plan.pods.iter().find(|p| p.node != n).unwrap().ip;
        let internal = plan.nodes[n].node.internal_ip;
        assert_eq!(plan.masquerade_source(n, other), internal, "routed");
        plan.network = s.network.clone();
        assert_eq!(plan.masquerade_source(n, other), plan.nodes[n].node.pod_cidr.unwrap().addr, "flannel.1's address");
        assert_eq!(plan.masquerade_source(n, ip(198, 51, 100, 23)), internal, "outside: the node's own");
    }

    /// A pcap file of Linux cooked (v2) records: (packet type, IPv4 packet).
    fn pcap(records: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut b = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        b.extend([0u8; 8]);
        b.extend(65535u32.to_le_bytes());
        b.extend(276u32.to_le_bytes());
        for (kind, ip) in records {
            let mut f = vec![0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, *kind, 6];
            f.extend([0u8; 8]);
            f.extend(ip);
            b.extend([0u8; 8]);
            b.extend((f.len() as u32).to_le_bytes());
            b.extend((f.len() as u32).to_le_bytes());
            b.extend(f);
        }
        b
    }

    fn ipv4_packet(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0];
        p[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
        p.extend(src.octets());
        p.extend(dst.octets());
        p.extend(payload);
        p
    }

    fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut u = Vec::new();
        u.extend(sport.to_be_bytes());
        u.extend(dport.to_be_bytes());
        u.extend(((8 + payload.len()) as u16).to_be_bytes());
        u.extend([0, 0]);
        u.extend(payload);
        u
    }

    #[test]
    fn the_capture_reads_marks_wrapped_and_bare_packets() {
        let inner_tcp = {
            let mut t = Vec::new();
            t.extend(40000u16.to_be_bytes());
            t.extend(8080u16.to_be_bytes());
            t.extend([0u8; 9]);
            t.push(0x04); // RST
            t.extend([0u8; 6]);
            t
        };
        let mut vx = vec![0x08, 0, 0, 0, 0, 0, 1, 0];
        vx.extend([0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
        vx.extend(ipv4_packet(ip(10, 244, 1, 0), ip(10, 244, 2, 5), 6, &inner_tcp));
        let records = [
            (4, ipv4_packet(MARK_FROM, MARK_TO, 17, &udp(5000, MARK_PORT, b"khh-mark 1"))),
            (0, ipv4_packet(ip(10, 0, 0, 11), ip(10, 0, 0, 12), 17, &udp(40001, 8472, &vx))),
            (4, ipv4_packet(ip(10, 0, 0, 11), ip(10, 0, 0, 12), 17, &udp(40001, 8472, &vx))),
            (0, ipv4_packet(ip(10, 244, 1, 3), ip(10, 244, 2, 5), 17, &udp(1, 2, b""))),
        ];
        let frames = pcap_frames(&pcap(&records)).unwrap();
        assert!(matches!(&frames[0], Frame::Mark(m) if m == "khh-mark 1"), "{:?}", frames[0]);
        let Frame::Vxlan(k) = &frames[1] else { panic!("{:?}", frames[1]) };
        assert_eq!((k.outer_src, k.outer_dst, k.udp_src, k.udp_dst, k.flags, k.vni), (ip(10, 0, 0, 11), ip(10, 0, 0, 12), 40001, 8472, 0x08, 1));
        assert_eq!((k.inner_dst_mac, k.inner_src_mac), ([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]));
        assert!(matches!(k.inner, Inner::Packet { p, rst: true } if p == Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 244, 1, 0), 40000), SockAddr::new(ip(10, 244, 2, 5), 8080))));
        assert!(matches!(frames[2], Frame::Other), "the fabric's own sending is not counted twice");
        assert!(matches!(frames[3], Frame::Plain { src, dst } if (src, dst) == (ip(10, 244, 1, 3), ip(10, 244, 2, 5))));
        // A record still being written ends the list.
        let mut cut = pcap(&records);
        cut.truncate(cut.len() - 3);
        assert_eq!(pcap_frames(&cut).unwrap().len(), 3);
    }

    #[test]
    fn reads_what_tcpdump_says_it_dropped() {
        let said = "tcpdump: listening on any\n7161 packets captured\n9668 packets received by filter\n2507 packets dropped by kernel\n";
        assert_eq!(dropped(said), Some(2507));
        assert_eq!(dropped("0 packets dropped by kernel"), Some(0));
        assert_eq!(dropped("tcpdump: Operation not permitted"), None);
    }
}
