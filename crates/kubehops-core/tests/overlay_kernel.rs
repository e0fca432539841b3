//! flannel's VXLAN overlay (`dataplane::overlay`) against the real kernel.
//!
//! Three "nodes" (network namespaces) share an underlay: a bridge `br0` in
//! a namespace of the test's own, each node's `eth0` a veth into it. Each
//! node has a `cni0` bridge with Pods behind it (node 1 two, the others
//! one), and the overlay state the model computes, created by running the
//! model's own rendered `ip`/`bridge` commands in the node. Pods then talk
//! UDP and TCP across nodes and within node 1 while `tcpdump` records
//! `br0`; the capture is read here (pcap, Ethernet, IPv4, UDP, VXLAN,
//! inner Ethernet, IPv4, TCP/UDP) and every wrapped packet is compared with
//! the model's `Wrapped` for its inner packet, requests and replies alike.
//! The kernel's device (MTU, VNI, port, learning), neighbour, FDB and
//! route tables are read back and compared with the model's state. Then
//! the other choice: `flannel.1` removed, the model's routed state put in,
//! the same traffic must cross the underlay bare, each frame addressed to
//! the node the model routes via.
//!
//! Needs root, `ip`, `bridge`, `tcpdump` and `python3`; fails (never
//! skips) when one is missing.

use kubehops_core::dataplane::overlay::{Delivery, OverlayNode, PodNetwork, PortRange, VxlanConfig, KERNEL_SOURCE_PORTS, UNDERLAY_MTU, ENCAP_OVERHEAD};
use kubehops_core::net::{ip, Cidr, Packet, Protocol, SockAddr};
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// UDP round trips per flow.
const UDP_ROUNDS: usize = 3;
const UDP_PORT: u16 = 7000;
const TCP_PORT: u16 = 7001;

fn run(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"));
    assert!(out.status.success(), "{args:?} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `cmd` (words separated by spaces) inside namespace `ns`.
fn in_ns(ns: &str, cmd: &str) -> String {
    let mut args = vec!["ip", "netns", "exec", ns];
    args.extend(cmd.split_whitespace());
    run(&args)
}

fn need(tool: &str, args: &[&str]) {
    let ok = Command::new(tool).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false);
    assert!(ok, "the overlay kernel test needs `{tool}` ({tool} {args:?} failed); install it (`scripts/setup` installs tcpdump)");
}

/// The namespaces of one run, deleted on drop whatever happened.
struct Lab {
    prefix: String,
    namespaces: Vec<String>,
}

impl Lab {
    fn ns(&mut self, tag: &str) -> String {
        let name = format!("{}-{tag}", self.prefix);
        run(&["ip", "netns", "add", &name]);
        self.namespaces.push(name.clone());
        in_ns(&name, "ip link set lo up");
        name
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in self.namespaces.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// A running tcpdump, stopped on drop; its file removed too.
struct Capture {
    child: Option<Child>,
    path: PathBuf,
}

impl Capture {
    fn start(ns: &str, dev: &str, path: PathBuf) -> Capture {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "tcpdump", "-i", dev, "-n", "-U", "--immediate-mode", "-s", "0", "-Z", "root", "-w"])
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump starts");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            let n = err.read_line(&mut line).unwrap();
            assert!(n > 0, "tcpdump exited before listening");
            if line.contains("listening on") {
                break;
            }
        }
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Capture { child: Some(child), path }
    }

    /// Stops tcpdump and returns the capture's bytes.
    fn finish(&mut self) -> Vec<u8> {
        std::thread::sleep(Duration::from_millis(500));
        if let Some(mut c) = self.child.take() {
            run(&["kill", "-INT", &c.id().to_string()]);
            c.wait().unwrap();
        }
        std::fs::read(&self.path).expect("the capture file")
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A Pod: its namespace, address and node.
#[derive(Clone)]
struct Pod {
    ns: String,
    addr: Ipv4Addr,
    node: usize,
}

/// One exchange: client Pod, server Pod, the client's UDP source port.
struct Flow {
    client: Pod,
    server: Pod,
    udp_sport: u16,
}

fn server_script() -> String {
    format!(
        "import socket\n\
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);u.bind(('0.0.0.0',{UDP_PORT}));u.settimeout(10)\n\
t=socket.socket();t.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);t.bind(('0.0.0.0',{TCP_PORT}));t.listen(4);t.settimeout(10)\n\
print('ready',flush=True)\n\
for _ in range({UDP_ROUNDS}):\n d,a=u.recvfrom(2048);u.sendto(b'pong:'+d,a)\n\
c,a=t.accept();c.settimeout(10);d=c.recv(2048);c.sendall(b'pong:'+d);c.recv(16);c.close()\n"
    )
}

fn client_script(dst: Ipv4Addr, sport: u16) -> String {
    format!(
        "import socket\n\
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);u.bind(('0.0.0.0',{sport}));u.settimeout(5)\n\
for i in range({UDP_ROUNDS}):\n m=b'ping%d'%i;u.sendto(m,('{dst}',{UDP_PORT}));d,a=u.recvfrom(2048);assert d==b'pong:'+m,d\n\
t=socket.create_connection(('{dst}',{TCP_PORT}),timeout=5);t.sendall(b'hello');d=t.recv(2048);assert d==b'pong:hello',d;t.close()\n\
print('ok')\n"
    )
}

fn exchange(f: &Flow) {
    let mut server = Command::new("ip")
        .args(["netns", "exec", &f.server.ns, "python3", "-c", &server_script()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("server starts");
    let mut line = String::new();
    BufReader::new(server.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the server in {} is listening", f.server.ns);
    let out = Command::new("ip").args(["netns", "exec", &f.client.ns, "python3", "-c", &client_script(f.server.addr, f.udp_sport)]).output().unwrap();
    let ok = out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok";
    let status = server.wait().unwrap();
    assert!(ok, "{} → {}: the exchange failed: {}", f.client.addr, f.server.addr, String::from_utf8_lossy(&out.stderr));
    assert!(status.success(), "the server in {} failed", f.server.ns);
}

// ---------------------------------------------------------------- pcap

/// The frames of a pcap file (Ethernet link type).
fn pcap_frames(b: &[u8]) -> Vec<&[u8]> {
    assert!(b.len() >= 24, "a pcap global header");
    let magic = [b[0], b[1], b[2], b[3]];
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => panic!("not a pcap file: magic {magic:02x?}"),
    };
    let u32_at = |o: usize| {
        let w = [b[o], b[o + 1], b[o + 2], b[o + 3]];
        if le { u32::from_le_bytes(w) } else { u32::from_be_bytes(w) }
    };
    assert_eq!(u32_at(20), 1, "link type Ethernet");
    let mut out = Vec::new();
    let mut o = 24;
    while o + 16 <= b.len() {
        let incl = u32_at(o + 8) as usize;
        let start = o + 16;
        assert!(start + incl <= b.len(), "a truncated pcap record");
        out.push(&b[start..start + incl]);
        o = start + incl;
    }
    out
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

fn addr(b: &[u8], o: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[o], b[o + 1], b[o + 2], b[o + 3])
}

struct Ip4<'a> {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    payload: &'a [u8],
}

/// The IPv4 packet in an Ethernet frame: (dst MAC, src MAC, packet).
fn ethernet_ipv4(f: &[u8]) -> Option<([u8; 6], [u8; 6], Ip4<'_>)> {
    if f.len() < 14 + 20 || be16(f, 12) != 0x0800 {
        return None;
    }
    let dst: [u8; 6] = f[0..6].try_into().unwrap();
    let src: [u8; 6] = f[6..12].try_into().unwrap();
    let ip = &f[14..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(be16(ip, 2)).min(ip.len());
    Some((dst, src, Ip4 { src: addr(ip, 12), dst: addr(ip, 16), proto: ip[9], payload: &ip[ihl..total] }))
}

/// A VXLAN packet as captured on the underlay.
struct Captured {
    outer_src: Ipv4Addr,
    outer_dst: Ipv4Addr,
    udp_src: u16,
    udp_dst: u16,
    vxlan_flags: u8,
    vni: u32,
    inner_dst_mac: [u8; 6],
    inner_src_mac: [u8; 6],
    inner: Packet,
}

enum Frame {
    Vxlan(Captured),
    /// Any other IPv4 packet: its Ethernet addresses, its IP addresses,
    /// and the packet when it is TCP, UDP or SCTP.
    Plain { dst_mac: [u8; 6], src_mac: [u8; 6], src: Ipv4Addr, dst: Ipv4Addr, packet: Option<Packet> },
    Other,
}

fn inner_packet(ip: &Ip4) -> Packet {
    let proto = match ip.proto {
        6 => Protocol::Tcp,
        17 => Protocol::Udp,
        132 => Protocol::Sctp,
        p => panic!("an inner packet of protocol {p} from {} to {}", ip.src, ip.dst),
    };
    let p = ip.payload;
    Packet::new(proto, SockAddr::new(ip.src, be16(p, 0)), SockAddr::new(ip.dst, be16(p, 2)))
}

fn parse(frame: &[u8], vxlan_port: u16) -> Frame {
    let Some((dst_mac, src_mac, ip)) = ethernet_ipv4(frame) else { return Frame::Other };
    if ip.proto == 17 && ip.payload.len() >= 16 && be16(ip.payload, 2) == vxlan_port {
        let udp = ip.payload;
        let vx = &udp[8..];
        let vni = u32::from_be_bytes([0, vx[4], vx[5], vx[6]]);
        let (dmac, smac, inner) = ethernet_ipv4(&vx[8..]).expect("an IPv4 frame inside VXLAN");
        return Frame::Vxlan(Captured {
            outer_src: ip.src,
            outer_dst: ip.dst,
            udp_src: be16(udp, 0),
            udp_dst: be16(udp, 2),
            vxlan_flags: vx[0],
            vni,
            inner_dst_mac: dmac,
            inner_src_mac: smac,
            inner: inner_packet(&inner),
        });
    }
    let packet = matches!(ip.proto, 6 | 17 | 132).then(|| inner_packet(&ip));
    Frame::Plain { dst_mac, src_mac, src: ip.src, dst: ip.dst, packet }
}

// ---------------------------------------------------------------- the test

#[test]
fn flannel_vxlan_overlay_wraps_as_the_model_says() {
    assert_eq!(run(&["id", "-u"]).trim(), "0", "the overlay kernel test runs as root");
    need("ip", &["-V"]);
    need("bridge", &["-V"]);
    need("tcpdump", &["--version"]);
    need("python3", &["--version"]);

    let pid = std::process::id();
    let mut lab = Lab { prefix: format!("khov{pid}"), namespaces: Vec::new() };
    let cfg = VxlanConfig::default();
    let net = PodNetwork::Vxlan(cfg.clone());

    // The model's nodes.
    let nodes: Vec<OverlayNode> =
        (1..=3u8).map(|i| OverlayNode::new(&format!("node-{i}"), ip(192, 168, 77, 10 + i), "eth0", Cidr::new(ip(10, 244, i, 0), 24))).collect();

    // The underlay: a bridge in the test's own namespace.
    let under = lab.ns("under");
    in_ns(&under, "ip link add br0 type bridge");
    in_ns(&under, "ip link set br0 up");

    let mut node_ns = Vec::new();
    let mut pods: Vec<Pod> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let k = i + 1;
        let ns = lab.ns(&format!("n{k}"));
        run(&["ip", "-n", &ns, "link", "add", "eth0", "mtu", &UNDERLAY_MTU.to_string(), "type", "veth", "peer", "name", &format!("vn{k}"), "netns", &under]);
        in_ns(&under, &format!("ip link set vn{k} master br0 up"));
        in_ns(&ns, &format!("ip addr add {}/24 dev eth0", n.address));
        in_ns(&ns, "ip link set eth0 up");
        in_ns(&ns, "sysctl -qw net.ipv4.ip_forward=1");
        in_ns(&ns, "ip link add cni0 type bridge");
        in_ns(&ns, &format!("ip addr add {}/24 dev cni0", n.pod_cidr.nth(1).unwrap()));
        in_ns(&ns, "ip link set cni0 up");
        let count = if k == 1 { 2 } else { 1 };
        for j in 0..count {
            let tag = format!("p{k}{}", (b'a' + j as u8) as char);
            let pns = lab.ns(&tag);
            let pod_ip = n.pod_cidr.nth(2 + j as u64).unwrap();
            run(&["ip", "-n", &ns, "link", "add", &format!("veth{tag}"), "mtu", &cfg.mtu.to_string(), "type", "veth", "peer", "name", "eth0", "netns", &pns]);
            in_ns(&ns, &format!("ip link set veth{tag} master cni0 up"));
            in_ns(&pns, &format!("ip addr add {pod_ip}/24 dev eth0"));
            in_ns(&pns, "ip link set eth0 up");
            in_ns(&pns, &format!("ip route add default via {}", n.pod_cidr.nth(1).unwrap()));
            pods.push(Pod { ns: pns, addr: pod_ip, node: i });
        }
        node_ns.push(ns);
    }

    // flannel's state, from the model's own commands.
    let mut commands = 0;
    for (i, n) in nodes.iter().enumerate() {
        for cmd in net.node_state(n, &nodes).commands() {
            in_ns(&node_ns[i], &cmd);
            commands += 1;
        }
    }

    // The kernel's view of the device: MTU, VNI, port, no source-port range.
    let mut ranges = Vec::new();
    for (i, ns) in node_ns.iter().enumerate() {
        let link = in_ns(ns, "ip -d -o link show flannel.1");
        assert!(link.contains(&format!(" mtu {} ", cfg.mtu)), "flannel.1's MTU is the model's {}: {link}", cfg.mtu);
        for want in [format!("vxlan id {}", cfg.vni), format!("local {}", nodes[i].address), format!("dstport {}", cfg.port), "nolearning".to_string(), "srcport 0 0".to_string()] {
            assert!(link.contains(&want), "flannel.1 on {} shows `{want}`: {link}", nodes[i].name);
        }
        let r = in_ns(ns, "sysctl -n net.ipv4.ip_local_port_range");
        let mut w = r.split_whitespace().map(|x| x.parse::<u16>().unwrap());
        ranges.push(PortRange::from_local_port_range(w.next().unwrap(), w.next().unwrap()));
    }
    // The kernel's tables hold the model's entries, as it prints them back.
    for (i, ns) in node_ns.iter().enumerate() {
        let st = net.node_state(&nodes[i], &nodes);
        let neigh = in_ns(ns, "ip neigh show dev flannel.1");
        let fdb = in_ns(ns, "bridge fdb show dev flannel.1");
        let routes = in_ns(ns, "ip route show dev flannel.1");
        let has = |table: &str, line: String| assert!(table.lines().any(|l| l.trim() == line), "{}: `{line}` in\n{table}", nodes[i].name);
        for n in &st.neighbours {
            has(&neigh, format!("{} lladdr {} PERMANENT", n.ip, n.mac));
        }
        for f in &st.fdb {
            has(&fdb, format!("{} dst {} self permanent", f.mac, f.dst));
        }
        for r in &st.routes {
            has(&routes, format!("{} via {} onlink", r.dst, r.via));
        }
        assert_eq!((neigh.lines().count(), fdb.lines().count(), routes.lines().count()), (2, 2, 2), "{}: only the model's entries:\n{neigh}{fdb}{routes}", nodes[i].name);
    }
    assert!(ranges.iter().all(|r| *r == KERNEL_SOURCE_PORTS), "every node has the default ip_local_port_range: {ranges:?}");
    // The kernel's own MTU for a VXLAN device given none: the underlay's minus its headroom.
    in_ns(&node_ns[0], "ip link add probe0 type vxlan id 42 dev eth0 dstport 8472");
    let probe = in_ns(&node_ns[0], "ip -o link show probe0");
    in_ns(&node_ns[0], "ip link del probe0");
    let kernel_default_mtu = UNDERLAY_MTU - ENCAP_OVERHEAD;
    assert!(probe.contains(&format!(" mtu {kernel_default_mtu} ")), "the kernel's own VXLAN MTU is {kernel_default_mtu}: {probe}");

    // Traffic, captured on the underlay.
    let path = std::env::temp_dir().join(format!("khov-{pid}.pcap"));
    let mut cap = Capture::start(&under, "br0", path);
    let flows = [
        Flow { client: pods[0].clone(), server: pods[2].clone(), udp_sport: 41001 },
        Flow { client: pods[2].clone(), server: pods[3].clone(), udp_sport: 41002 },
        Flow { client: pods[3].clone(), server: pods[1].clone(), udp_sport: 41003 },
    ];
    let same = Flow { client: pods[0].clone(), server: pods[1].clone(), udp_sport: 41004 };
    for f in flows.iter().chain([&same]) {
        exchange(f);
    }
    let bytes = cap.finish();

    // The model's answer for the same-node flow.
    let p = Packet::new(Protocol::Udp, SockAddr::new(same.client.addr, same.udp_sport), SockAddr::new(same.server.addr, UDP_PORT));
    assert_eq!(net.route(&nodes, &nodes[same.client.node].name, p), Some(Delivery::Local));

    let frames = pcap_frames(&bytes);
    let pod_net = Cidr::new(ip(10, 244, 0, 0), 16);
    let mut wrapped = 0;
    let mut same_node_wrapped = 0;
    let mut bare = Vec::new();
    let mut mismatches = Vec::new();
    // Per flow: (UDP requests, UDP replies, TCP requests, TCP replies).
    let mut seen = vec![[0usize; 4]; flows.len()];
    // Per flow, protocol and direction (as `seen`): the outer UDP source ports.
    let mut sports: Vec<[std::collections::BTreeSet<u16>; 4]> = vec![Default::default(); flows.len()];
    for frame in &frames {
        match parse(frame, cfg.port) {
            Frame::Vxlan(c) => {
                wrapped += 1;
                let from = nodes.iter().position(|n| n.pod_cidr.contains(c.inner.src.ip)).expect("a Pod source");
                let to = nodes.iter().position(|n| n.pod_cidr.contains(c.inner.dst.ip)).expect("a Pod destination");
                if from == to {
                    same_node_wrapped += 1;
                    continue;
                }
                let model = match net.route(&nodes, &nodes[from].name, c.inner) {
                    Some(Delivery::Wrapped(w)) => w,
                    other => panic!("the model does not wrap {}: {other:?}", c.inner),
                };
                let mut diff = Vec::new();
                let o = model.outer;
                if (c.outer_src, c.outer_dst) != (o.src, o.dst) {
                    diff.push(format!("outer {} → {}, model {} → {}", c.outer_src, c.outer_dst, o.src, o.dst));
                }
                if c.udp_dst != o.udp_dst {
                    diff.push(format!("udp dst {}, model {}", c.udp_dst, o.udp_dst));
                }
                if !o.udp_src.contains(c.udp_src) || !ranges[from].contains(c.udp_src) {
                    diff.push(format!("udp src {} outside the model's {}", c.udp_src, o.udp_src));
                }
                if c.vni != o.vni || c.vxlan_flags != 0x08 {
                    diff.push(format!("vni {} flags {:#04x}, model vni {}", c.vni, c.vxlan_flags, o.vni));
                }
                if (c.inner_src_mac, c.inner_dst_mac) != (model.inner_src_mac.0, model.inner_dst_mac.0) {
                    diff.push(format!("inner MACs {:02x?} → {:02x?}, model {} → {}", c.inner_src_mac, c.inner_dst_mac, model.inner_src_mac, model.inner_dst_mac));
                }
                if c.inner != model.inner {
                    diff.push(format!("inner {}, model {}", c.inner, model.inner));
                }
                let unwrapped = net.unwrapped_at(&nodes, &model).map(|n| n.address);
                if unwrapped != Some(c.outer_dst) {
                    diff.push(format!("the model unwraps at {unwrapped:?}, the packet goes to {}", c.outer_dst));
                }
                if !diff.is_empty() {
                    mismatches.push(format!("{}: {}", c.inner, diff.join("; ")));
                }
                let Some(fi) = flows.iter().position(|f| {
                    let (a, b) = (f.client.addr, f.server.addr);
                    (c.inner.src.ip, c.inner.dst.ip) == (a, b) || (c.inner.src.ip, c.inner.dst.ip) == (b, a)
                }) else {
                    panic!("a wrapped packet of no flow: {}", c.inner)
                };
                let reply = c.inner.src.ip == flows[fi].server.addr;
                let slot = match (c.inner.proto, reply) {
                    (Protocol::Udp, false) => 0,
                    (Protocol::Udp, true) => 1,
                    (_, false) => 2,
                    (_, true) => 3,
                };
                seen[fi][slot] += 1;
                sports[fi][usize::from(c.inner.proto == Protocol::Tcp) * 2 + usize::from(reply)].insert(c.udp_src);
            }
            Frame::Plain { src: s, dst: d, .. } => {
                if pod_net.contains(s) || pod_net.contains(d) {
                    bare.push(format!("{s} → {d}"));
                }
            }
            Frame::Other => {}
        }
    }

    assert!(mismatches.is_empty(), "wrapped packets unlike the model's:\n{}", mismatches.join("\n"));
    assert_eq!(same_node_wrapped, 0, "same-node traffic was wrapped");
    assert!(bare.is_empty(), "Pod traffic on the underlay unwrapped: {bare:?}");
    for (f, s) in flows.iter().zip(&seen) {
        assert_eq!((s[0], s[1]), (UDP_ROUNDS, UDP_ROUNDS), "{} ↔ {}: UDP requests and replies wrapped (udp, udp replies, tcp, tcp replies: {s:?}; all flows {seen:?})", f.client.addr, f.server.addr);
        assert!(s[2] >= 3 && s[3] >= 2, "{} ↔ {}: TCP segments wrapped both ways: {s:?}", f.client.addr, f.server.addr);
    }
    // The source port is the flow's: the kernel hashes the inner flow, and
    // for UDP from unconnected sockets that hash is the flow dissector's,
    // the same both ways, so a request and its reply share one port.
    for (f, p) in flows.iter().zip(&sports) {
        assert!(p[0].len() == 1 && p[0] == p[1], "{} ↔ {}: one outer source port for the UDP flow, both ways: {:?} / {:?}", f.client.addr, f.server.addr, p[0], p[1]);
    }
    let checked: usize = seen.iter().flatten().sum();
    assert_eq!(checked, wrapped, "every wrapped packet belongs to a flow");

    println!("overlay kernel check: {} nodes, {commands} model commands run, flannel.1 MTU {} on each (kernel default for a VXLAN device on a {UNDERLAY_MTU}-byte underlay: {kernel_default_mtu})", nodes.len(), cfg.mtu);
    println!(
        "overlay kernel check: {} frames on the underlay, {wrapped} wrapped packets captured, {wrapped} outer and inner headers equal to the model's ({} requests, {} replies); same-node: {same_node_wrapped} wrapped, {} bare",
        frames.len(),
        seen.iter().map(|s| s[0] + s[2]).sum::<usize>(),
        seen.iter().map(|s| s[1] + s[3]).sum::<usize>(),
        bare.len()
    );
    for (f, (s, p)) in flows.iter().zip(seen.iter().zip(&sports)) {
        println!(
            "overlay kernel check: {} ({}) ↔ {} ({}): udp {}+{}, tcp {}+{}; outer UDP source ports in {}: udp {:?}/{:?}, tcp {:?}/{:?}",
            f.client.addr, nodes[f.client.node].name, f.server.addr, nodes[f.server.node].name, s[0], s[1], s[2], s[3], KERNEL_SOURCE_PORTS, p[0], p[1], p[2], p[3]
        );
    }
    drop(cap);

    // The other choice: routed. flannel.1 goes, its routes, neighbours and
    // FDB entries with it; the model's routed state goes in.
    let mut routed_commands = 0;
    for (i, n) in nodes.iter().enumerate() {
        in_ns(&node_ns[i], "ip link del flannel.1");
        for cmd in PodNetwork::Routed.node_state(n, &nodes).commands() {
            in_ns(&node_ns[i], &cmd);
            routed_commands += 1;
        }
    }
    let macs: Vec<[u8; 6]> = node_ns.iter().map(|ns| link_mac(&in_ns(ns, "ip -o link show eth0"))).collect();
    let mut cap = Capture::start(&under, "br0", std::env::temp_dir().join(format!("khov-{pid}-routed.pcap")));
    for f in flows.iter().chain([&same]) {
        exchange(f);
    }
    let bytes = cap.finish();
    let (mut routed, mut routed_wrapped, mut routed_same) = (0, 0, 0);
    let mut wrong = Vec::new();
    for frame in pcap_frames(&bytes) {
        match parse(frame, cfg.port) {
            Frame::Vxlan(_) => routed_wrapped += 1,
            Frame::Plain { dst_mac, src_mac, src, dst, packet } if pod_net.contains(src) || pod_net.contains(dst) => {
                let p = packet.unwrap_or_else(|| panic!("a Pod packet neither TCP nor UDP: {src} → {dst}"));
                let from = nodes.iter().position(|n| n.pod_cidr.contains(src)).expect("a Pod source");
                let to = nodes.iter().position(|n| n.pod_cidr.contains(dst)).expect("a Pod destination");
                if from == to {
                    routed_same += 1;
                    continue;
                }
                routed += 1;
                let model = PodNetwork::Routed.route(&nodes, &nodes[from].name, p);
                if model != Some(Delivery::Routed { via: nodes[to].address }) || (src_mac, dst_mac) != (macs[from], macs[to]) {
                    wrong.push(format!("{p}: frame {src_mac:02x?} → {dst_mac:02x?} (node MACs {:02x?} → {:02x?}), model {model:?}", macs[from], macs[to]));
                }
            }
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "routed packets unlike the model's:\n{}", wrong.join("\n"));
    assert_eq!((routed_wrapped, routed_same), (0, 0), "routed: nothing wrapped, nothing same-node on the underlay");
    assert!(routed >= flows.len() * (2 * UDP_ROUNDS + 5), "routed: every flow's packets crossed bare ({routed})");
    println!(
        "overlay kernel check: routed: {routed_commands} model commands run, {routed} bare Pod packets on the underlay, each from its node's MAC to the MAC of the node the model routes via; {routed_wrapped} wrapped; same-node: {routed_same}"
    );
    drop(cap);
    drop(lab);
}

/// The `link/ether` address in `ip -o link show` output.
fn link_mac(line: &str) -> [u8; 6] {
    let hex = line.split_whitespace().skip_while(|w| *w != "link/ether").nth(1).unwrap_or_else(|| panic!("no link/ether in {line}"));
    let b: Vec<u8> = hex.split(':').map(|x| u8::from_str_radix(x, 16).unwrap()).collect();
    b.try_into().unwrap()
}
