//! The operating system under the harness: the tools it runs (`ip`,
//! `iptables`, `conntrack`, `nfacct`), whether it may run them, and the
//! two things std cannot do: enter a network namespace from a thread
//! (`setns`) and open a TCP connection from a chosen source address.
//!
//! Nothing here acts on the root network namespace; [`crate::netns`] is
//! the only caller of `ip netns`, and it touches only namespaces it names.

use std::fs::File;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Where a tool is, on PATH or in the sbin directories root's tools live in.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from)).map(|d| d.join(name)).find(|p| p.is_file())
}

pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|r| r.split_whitespace().next().map(str::to_string));
    uid.as_deref() == Some("0")
}

/// Runs a program to completion; its stdout, or an error naming the
/// command and what it printed on stderr.
pub fn run(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    let shown = || format!("{program} {}", args.join(" "));
    let path = find_tool(program).ok_or_else(|| format!("{program} not found"))?;
    let mut child = Command::new(path)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", shown()))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).map_err(|e| format!("{}: writing stdin: {e}", shown()))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("{}: {e}", shown()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("`{}` failed ({}): {}", shown(), out.status, err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Moves the calling thread into the network namespace `ns` (an open
/// `/run/netns/NAME`). Sockets the thread opens afterwards live there.
pub fn enter_netns(ns: &File) -> io::Result<()> {
    // SAFETY: setns only reads the descriptor, which `ns` keeps open.
    let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn set_int_option(fd: libc::c_int, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the option value is a c_int that outlives the call.
    check(unsafe { libc::setsockopt(fd, level, name, (&value as *const libc::c_int).cast(), len) })
}

/// A TCP connection from `src` (port 0: the kernel picks one) to `dst`,
/// given up after `timeout`. The socket comes back whether or not the
/// connection was made (the second value says), so its bound address can
/// be read either way. It is closed with a reset when dropped (SO_LINGER
/// 0), so neither end keeps the four-tuple in TIME_WAIT and the same
/// source port can be used again at once.
pub fn tcp_connect(src: SocketAddrV4, dst: SocketAddrV4, timeout: Duration) -> io::Result<(TcpStream, io::Result<()>)> {
    // SAFETY: plain socket calls on a descriptor this function owns; it is
    // handed to TcpStream right away, which closes it on every path.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) };
    check(fd)?;
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    let len = std::mem::size_of::<libc::linger>() as libc::socklen_t;
    check(unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_LINGER, (&linger as *const libc::linger).cast(), len) })?;
    let sa_len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let from = sockaddr(src);
    check(unsafe { libc::bind(fd, (&from as *const libc::sockaddr_in).cast(), sa_len) })?;
    let connected = connect_fd(fd, dst, timeout);
    stream.set_nonblocking(false)?;
    Ok((stream, connected))
}

fn connect_fd(fd: libc::c_int, dst: SocketAddrV4, timeout: Duration) -> io::Result<()> {
    let sa_len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let to = sockaddr(dst);
    // SAFETY: `to` outlives the call; fd is a valid non-blocking socket.
    if unsafe { libc::connect(fd, (&to as *const libc::sockaddr_in).cast(), sa_len) } < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    let mut pfd = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
    check(ready)?;
    if ready == 0 {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out"));
    }
    let mut err: libc::c_int = 0;
    let mut err_len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    check(unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, (&mut err as *mut libc::c_int).cast(), &mut err_len) })?;
    if err != 0 {
        return Err(io::Error::from_raw_os_error(err));
    }
    Ok(())
}

/// Turns on TCP keepalive probes after `idle` seconds idle, then every
/// `every` seconds, for as long as the socket is open.
pub fn keepalive(stream: &TcpStream, idle: i32, every: i32) -> io::Result<()> {
    let fd = stream.as_raw_fd();
    set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle)?;
    set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, every)?;
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    // Unanswered probes never reset it (a stepped connection holds the
    // client's ACKs of them).
    set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 127)
}

/// `Ipv4Addr` and port as std's socket address.
pub fn v4(ip: Ipv4Addr, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(ip, port)
}
