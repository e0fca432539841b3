//! The TCP conntrack model (`dataplane::tcp`) against this machine's
//! kernel. A client, a node that routes and a server, each a network
//! namespace joined by veth pairs; a real connection between std::net
//! sockets made inside the namespaces; the node's `conntrack -L` read at
//! nine points of the connection and compared with the model's entry
//! after the same segments: state, timeout (within a few seconds of the
//! model's, as it counts down), `[ASSURED]` and `[UNREPLIED]`. Also: the
//! kernel's default timeouts in a fresh namespace, and two resets (a
//! closed port; a server closing with a request unread).
//!
//! To stop the connection at a point, the next segment is held back at
//! its sender's egress with iptables; it is retransmitted once let go.
//! Needs root, `ip`, `iptables` and `conntrack`: without them it fails.

use kubehops_core::dataplane::tcp::{replay, standard_connection, standard_segments, Dir, Seen, Segment, Step, TcpFlags, TcpState, TcpTimeouts};
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::raw::c_int;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How far below the model's timeout the kernel's may be: it counts down
/// whole seconds from the segment that set it.
const SLACK_SECS: u32 = 3;
const PORT: u16 = 8080;
const CLIENT_IP: &str = "10.99.1.2";
const SERVER_IP: &str = "10.99.2.2";

extern "C" {
    /// glibc's setns(2): moves the calling thread into a namespace.
    fn setns(fd: c_int, nstype: c_int) -> c_int;
}
const CLONE_NEWNET: c_int = 0x4000_0000;

/// Runs a command; its stdout, or a panic with its stderr.
fn run(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"));
    assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The test needs these; a machine without them fails here, not later.
fn require_tools() {
    let uid = std::fs::read_to_string("/proc/self/status").expect("procfs").lines().find_map(|l| l.strip_prefix("Uid:").map(|r| r.split_whitespace().next().unwrap_or("").to_string()));
    assert_eq!(uid.as_deref(), Some("0"), "tcp_states needs root (network namespaces, iptables, conntrack)");
    for tool in ["ip", "iptables", "conntrack"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().map(|o| o.status.success()).unwrap_or(false);
        assert!(found, "tcp_states needs `{tool}` on PATH (Debian: iproute2, iptables, conntrack)");
    }
}

/// A network namespace, deleted when dropped (also when a test fails).
struct Netns(String);

impl Netns {
    fn new(name: String) -> Netns {
        run(&["ip", "netns", "add", &name]);
        let ns = Netns(name);
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    fn exec(&self, args: &[&str]) -> String {
        let mut all = vec!["ip", "netns", "exec", &self.0];
        all.extend_from_slice(args);
        run(&all)
    }

    /// One iptables command (`-A …` or `-D …`) in this namespace.
    fn iptables(&self, rule: &str) {
        let mut args = vec!["iptables", "-w"];
        args.extend(rule.split_whitespace());
        self.exec(&args);
    }

    /// Runs `f` on a thread inside this namespace: sockets it makes
    /// belong here, wherever they are used afterwards.
    fn spawn<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
        let path = format!("/run/netns/{}", self.0);
        thread::spawn(move || {
            let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // SAFETY: a plain syscall on a descriptor we hold open; it
            // changes only this thread's network namespace.
            let rc = unsafe { setns(file.as_raw_fd(), CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
            f()
        })
    }

    fn read_sysctl(&self, name: &str) -> u32 {
        let text = self.exec(&["cat", &format!("/proc/sys/net/netfilter/{name}")]);
        text.trim().parse().unwrap_or_else(|_| panic!("{name}: {text:?}"))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// A name no other test, in this run or another, uses at the same time.
fn unique(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("kh{tag}{}-{}{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), nanos % 10_000)
}

/// client ── node ── server: the node routes between two /24s and
/// tracks connections (one conntrack rule, counting INVALID segments,
/// turns tracking on in its namespace).
struct Lab {
    client: Netns,
    node: Netns,
    server: Netns,
}

impl Lab {
    fn new() -> Lab {
        let base = unique("tcp");
        let lab = Lab { client: Netns::new(format!("{base}-c")), node: Netns::new(format!("{base}-n")), server: Netns::new(format!("{base}-s")) };
        let (c, n, s) = (&lab.client.0, &lab.node.0, &lab.server.0);
        run(&["ip", "link", "add", "eth0", "netns", c, "type", "veth", "peer", "name", "to-client", "netns", n]);
        run(&["ip", "link", "add", "to-server", "netns", n, "type", "veth", "peer", "name", "eth0", "netns", s]);
        for (ns, dev, addr) in [(&lab.client, "eth0", "10.99.1.2/24"), (&lab.node, "to-client", "10.99.1.1/24"), (&lab.node, "to-server", "10.99.2.1/24"), (&lab.server, "eth0", "10.99.2.2/24")] {
            ns.exec(&["ip", "addr", "add", addr, "dev", dev]);
            ns.exec(&["ip", "link", "set", dev, "up"]);
        }
        lab.client.exec(&["ip", "route", "add", "default", "via", "10.99.1.1"]);
        lab.server.exec(&["ip", "route", "add", "default", "via", "10.99.2.1"]);
        lab.node.exec(&["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]);
        lab.node.iptables("-A FORWARD -m conntrack --ctstate INVALID");
        lab
    }

    /// The node's entry for the connection to the server's `port`, as
    /// `conntrack -L` prints it.
    fn entry_to(&self, port: u16) -> Option<Entry> {
        let text = self.node.exec(&["conntrack", "-L", "-p", "tcp"]);
        text.lines().find(|l| l.contains(&format!("src={CLIENT_IP} dst={SERVER_IP} ")) && l.contains(&format!("dport={port} "))).map(Entry::parse)
    }

    fn entry(&self) -> Option<Entry> {
        self.entry_to(PORT)
    }

    /// Polls the entry until `done` holds, or panics after a while.
    fn wait_for(&self, what: &str, done: impl Fn(&Entry) -> bool) -> Entry {
        self.wait_for_to(PORT, what, done)
    }

    fn wait_for_to(&self, port: u16, what: &str, done: impl Fn(&Entry) -> bool) -> Entry {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(e) = self.entry_to(port).filter(|e| done(e)) {
                return e;
            }
            assert!(Instant::now() < deadline, "waited 20 s for {what}; the node has {:?}", self.entry_to(port));
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn invalid_count(&self) -> u64 {
        let text = self.node.exec(&["iptables", "-w", "-L", "FORWARD", "-v", "-n", "-x"]);
        let rule = text.lines().nth(2).unwrap_or_else(|| panic!("no rule in FORWARD: {text}"));
        rule.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("counter: {rule}"))
    }
}

/// What `conntrack -L` shows of an entry.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    timeout: u32,
    state: String,
    assured: bool,
    unreplied: bool,
}

impl Entry {
    /// `tcp 6 <timeout> <STATE> src=… [UNREPLIED] src=… [ASSURED] …`
    fn parse(line: &str) -> Entry {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(words.len() > 4 && words[0] == "tcp", "not a tcp entry: {line}");
        Entry { timeout: words[2].parse().unwrap_or_else(|_| panic!("timeout in {line}")), state: words[3].to_string(), assured: words.contains(&"[ASSURED]"), unreplied: words.contains(&"[UNREPLIED]") }
    }

    fn render(&self) -> String {
        let marks = [(self.unreplied, " [UNREPLIED]"), (self.assured, " [ASSURED]")].iter().filter(|m| m.0).map(|m| m.1).collect::<String>();
        format!("{} {}{marks}", self.state, self.timeout)
    }

    /// The model's entry after a step, as `conntrack -L` would show it
    /// at once.
    fn of(step: &Step) -> Entry {
        Entry { timeout: step.track.timeout, state: step.track.state.name().to_string(), assured: step.track.assured, unreplied: step.track.unreplied() }
    }

    /// Same state and marks, and a timeout counted down from the model's.
    fn agrees(&self, model: &Entry) -> bool {
        let (a, b) = (Entry { timeout: 0, ..self.clone() }, Entry { timeout: 0, ..model.clone() });
        a == b && self.timeout <= model.timeout && self.timeout + SLACK_SECS >= model.timeout
    }
}

/// The kernel's timeouts in a fresh namespace are the model's defaults.
#[test]
fn the_kernels_default_timeouts_are_the_models() {
    require_tools();
    let ns = Netns::new(unique("tmo"));
    let model = TcpTimeouts::kernel_default();
    let mut equal = 0;
    let mut wrong = Vec::new();
    let mut host = Vec::new();
    for (state, suffix) in TcpTimeouts::sysctl_names() {
        let name = format!("nf_conntrack_tcp_timeout_{suffix}");
        let kernel = ns.read_sysctl(&name);
        let on_host = std::fs::read_to_string(format!("/proc/sys/net/netfilter/{name}")).unwrap_or_default();
        host.push(format!("{suffix}={}", on_host.trim()));
        if kernel == model.secs(state) {
            equal += 1;
        } else {
            wrong.push(format!("{name}: kernel {kernel}, model {}", model.secs(state)));
        }
    }
    println!("host's nf_conntrack_tcp_timeout_*: {}", host.join(" "));
    println!("tcp conntrack kernel check: {} timeouts read in a fresh namespace, {equal} equal to the model's", TcpTimeouts::sysctl_names().len());
    assert!(wrong.is_empty(), "the kernel's defaults differ:\n{}", wrong.join("\n"));
}

/// Reads a message of `n` bytes, or panics after the socket's timeout.
fn read_n(s: &mut TcpStream, n: usize, what: &str) -> Vec<u8> {
    let mut buf = vec![0; n];
    s.read_exact(&mut buf).unwrap_or_else(|e| panic!("reading the {what}: {e}"));
    buf
}

fn read_eof(s: &mut TcpStream, what: &str) {
    let mut buf = [0; 16];
    let n = s.read(&mut buf).unwrap_or_else(|e| panic!("waiting for {what}: {e}"));
    assert_eq!(n, 0, "{what}: got data instead");
}

fn accept_within(listener: &TcpListener, secs: u64) -> TcpStream {
    listener.set_nonblocking(true).expect("nonblocking listener");
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).expect("blocking stream");
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("the server accepted no connection in {secs} s: {e}"),
        }
    }
}

/// The standard connection (SYN, SYN-ACK, ACK, request, response, FIN,
/// ACK, FIN, ACK) through a node set up as kube-proxy sets it, stopped
/// after each segment; the node's entry each time against the model's.
#[test]
fn a_connection_through_the_node_walks_the_models_states() {
    require_tools();
    let lab = Lab::new();
    // kube-proxy's conntrack settings (established 24 h, close_wait 1 h).
    let timeouts = TcpTimeouts::kube_proxy();
    for (suffix, secs) in [("established", timeouts.established), ("close_wait", timeouts.close_wait)] {
        lab.node.exec(&["sh", "-c", &format!("echo {secs} > /proc/sys/net/netfilter/nf_conntrack_tcp_timeout_{suffix}")]);
    }
    let model = standard_connection(timeouts);
    let mut seen: Vec<Entry> = Vec::new();

    let server_addr: SocketAddr = format!("{SERVER_IP}:{PORT}").parse().unwrap();
    let listener = lab.server.spawn(move || TcpListener::bind(server_addr)).join().unwrap().expect("the server listens");

    // Held from the start: the server's SYN-ACK, and the client's
    // segments with ACK and no SYN, FIN or RST: the handshake's last ACK,
    // later the ACK of the response (and the client's retransmitted
    // request, which the server already has).
    let hold_synack = format!("OUTPUT -p tcp --sport {PORT} --tcp-flags SYN,ACK SYN,ACK -j DROP");
    let hold_client_acks = format!("OUTPUT -p tcp --dport {PORT} --tcp-flags SYN,ACK,FIN,RST ACK -j DROP");
    let hold_server = format!("OUTPUT -p tcp --sport {PORT} -j DROP");
    lab.server.iptables(&format!("-A {hold_synack}"));
    lab.client.iptables(&format!("-A {hold_client_acks}"));

    // 1. SYN: the client's connect() waits; its retransmitted SYNs do not
    //    renew the entry.
    let connecting = lab.client.spawn(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(30)));
    seen.push(lab.wait_for("the SYN", |_| true));

    // 2. SYN-ACK let go: connect() returns once it passed the node.
    lab.server.iptables(&format!("-D {hold_synack}"));
    let mut client = connecting.join().unwrap().expect("the client connects");
    client.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    seen.push(lab.entry().expect("entry after the SYN-ACK"));

    // 3. The client's ACK let go: it answers the server's next
    //    retransmitted SYN-ACK; accept() returns once it passed.
    lab.client.iptables(&format!("-D {hold_client_acks}"));
    let mut server = accept_within(&listener, 30);
    server.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    seen.push(lab.entry().expect("entry after the ACK"));

    // 4. The request, its ACK held back at the server.
    let request = b"GET / HTTP/1.0\r\n\r\n";
    lab.server.iptables(&format!("-A {hold_server}"));
    client.write_all(request).expect("the client writes");
    assert_eq!(read_n(&mut server, request.len(), "request"), request);
    seen.push(lab.entry().expect("entry after the request"));

    // 5. The response (it acknowledges the request), the client's ACK of
    //    it held back.
    let response = b"HTTP/1.0 200 OK\r\n\r\nhello\n";
    server.write_all(response).expect("the server writes");
    lab.client.iptables(&format!("-A {hold_client_acks}"));
    lab.server.iptables(&format!("-D {hold_server}"));
    assert_eq!(read_n(&mut client, response.len(), "response"), response);
    seen.push(lab.entry().expect("entry after the response"));

    // 6. The client's FIN (half-close), the server's ACK held back. The
    //    client will retransmit its FIN; the node must not track those
    //    (a second FIN reads as the server's and would make it LAST_ACK),
    //    so only the first client FIN is tracked, later ones pass
    //    untracked.
    lab.server.iptables(&format!("-A {hold_server}"));
    lab.node.iptables("-t raw -A PREROUTING -i to-client -p tcp --tcp-flags FIN FIN -m limit --limit 1/hour --limit-burst 1 -j ACCEPT");
    lab.node.iptables("-t raw -A PREROUTING -i to-client -p tcp --tcp-flags FIN FIN -j CT --notrack");
    client.shutdown(Shutdown::Write).expect("the client half-closes");
    read_eof(&mut server, "the client's FIN");
    seen.push(lab.entry().expect("entry after the client's FIN"));

    // 7. The server's ACK of the FIN let go: it answers the next
    //    retransmitted FIN.
    lab.server.iptables(&format!("-D {hold_server}"));
    seen.push(lab.wait_for("the server's ACK of the FIN", |e| e.state != TcpState::FinWait.name()));

    // 8. The server's FIN; the client's ACK of it still held back.
    server.shutdown(Shutdown::Write).expect("the server closes its side");
    read_eof(&mut client, "the server's FIN");
    seen.push(lab.entry().expect("entry after the server's FIN"));

    // 9. The client's last ACK let go: it answers a retransmitted FIN.
    lab.client.iptables(&format!("-D {hold_client_acks}"));
    seen.push(lab.wait_for("the client's last ACK", |e| e.state != TcpState::LastAck.name()));

    let mut equal = 0;
    let mut report = Vec::new();
    for (i, (step, kernel)) in model.iter().zip(&seen).enumerate() {
        let predicted = Entry::of(step);
        let ok = kernel.agrees(&predicted);
        equal += usize::from(ok);
        let flags = format!("{}{}", if step.segment.data { "P" } else { "" }, step.segment.flags.render());
        report.push(format!("{:>2}. {:<13} {:<3} kernel {:<32} model {:<32}{}", i + 1, step.label, flags, kernel.render(), predicted.render(), if ok { "" } else { "  <- differs" }));
    }
    println!("{}", report.join("\n"));
    println!("segments the node's conntrack found INVALID: {}", lab.invalid_count());
    println!("tcp conntrack kernel check: {} points of a connection, {equal} states and flags equal to the model's", seen.len());
    assert_eq!(seen.len(), model.len());
    assert_eq!(equal, model.len(), "the kernel and the model differ:\n{}", report.join("\n"));
}

/// Two resets: a SYN to a port nobody listens on, answered by RST (the
/// entry is removed at once), and a server that closes without reading
/// the request (its RST leaves the entry in CLOSE for ten seconds).
#[test]
fn a_reset_closes_or_removes_the_entry() {
    require_tools();
    let lab = Lab::new();
    let timeouts = TcpTimeouts::kernel_default();
    let mut equal = 0;
    let mut report = Vec::new();

    // A closed port: the server's kernel answers the SYN with RST-ACK.
    // Its RST is held back until the node shows the SYN's entry, so the
    // entry's going is seen, not assumed.
    let closed: SocketAddr = format!("{SERVER_IP}:{}", PORT + 1).parse().unwrap();
    let hold_rst = format!("OUTPUT -p tcp --sport {} --tcp-flags RST RST -j DROP", PORT + 1);
    lab.server.iptables(&format!("-A {hold_rst}"));
    let connecting = lab.client.spawn(move || TcpStream::connect_timeout(&closed, Duration::from_secs(20)));
    let before = lab.wait_for_to(PORT + 1, "the SYN to the closed port", |_| true);
    assert_eq!(before.state, TcpState::SynSent.name(), "{before:?}");
    lab.server.iptables(&format!("-D {hold_rst}"));
    let refused = connecting.join().unwrap();
    assert_eq!(refused.map(|_| ()).map_err(|e| e.kind()), Err(std::io::ErrorKind::ConnectionRefused), "the closed port refuses");
    let model = replay(&[("SYN", Segment::new(Dir::Original, TcpFlags::SYN)), ("RST", Segment::new(Dir::Reply, TcpFlags::RST_ACK))], timeouts);
    let kernel = lab.entry_to(PORT + 1);
    let ok = kernel.is_none() && model[1].seen == Seen::Removed;
    equal += usize::from(ok);
    report.push(format!("closed port: kernel {}, model {:?}", kernel.map_or("no entry".to_string(), |e| e.render()), model[1].seen));

    // A server that drops the connection with the request unread.
    let server_addr: SocketAddr = format!("{SERVER_IP}:{PORT}").parse().unwrap();
    let listener = lab.server.spawn(move || TcpListener::bind(server_addr)).join().unwrap().expect("the server listens");
    let mut client = lab.client.spawn(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(10))).join().unwrap().expect("the client connects");
    client.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let server = accept_within(&listener, 10);
    server.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    client.write_all(b"GET / HTTP/1.0\r\n\r\n").expect("the client writes");
    // Arrived, left unread: closing now resets.
    let mut buf = [0; 16];
    server.peek(&mut buf).expect("the request arrives");
    drop(server);
    let got = client.read(&mut buf).map_err(|e| e.kind());
    assert_eq!(got, Err(std::io::ErrorKind::ConnectionReset), "the server's close resets the connection");
    let mut segments = standard_segments()[..4].to_vec();
    segments.push(("RST (server)", Segment::new(Dir::Reply, TcpFlags::RST_ACK)));
    let predicted = Entry::of(replay(&segments, timeouts).last().unwrap());
    let kernel = lab.entry().expect("the entry stays after the RST");
    let ok = kernel.agrees(&predicted);
    equal += usize::from(ok);
    report.push(format!("unread request, server closes: kernel {}, model {}", kernel.render(), predicted.render()));

    println!("{}", report.join("\n"));
    println!("tcp conntrack kernel check: 2 resets, {equal} outcomes equal to the model's");
    assert_eq!(equal, 2, "the kernel and the model differ:\n{}", report.join("\n"));
}
