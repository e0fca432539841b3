//! Network namespaces the harness owns.
//!
//! Every namespace is named `khh<pid>-<role>`: the prefix says it is the
//! harness's, the process id says which run made it, so runs side by side
//! never touch each other's. A [`Netns`] deletes its namespace when
//! dropped, on success and on failure alike; [`sweep_stale`] deletes the
//! namespaces of harness runs that are gone (killed before their guards
//! ran). Commands run inside a namespace (`ip -n`, `ip netns exec`);
//! none of them is ever given the root namespace.

use crate::sys;
use std::fs::File;
use std::thread::JoinHandle;

/// What every harness namespace's name starts with.
pub const PREFIX: &str = "khh";
const NETNS_DIR: &str = "/run/netns";

/// This run's names: `khh<pid>-`.
pub fn run_prefix() -> String {
    format!("{PREFIX}{}-", std::process::id())
}

/// A network namespace made by this run; deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    file: File,
}

impl Netns {
    /// Creates `khh<pid>-<role>` with its loopback up.
    pub fn create(role: &str) -> Result<Netns, String> {
        let name = format!("{}{role}", run_prefix());
        sys::run("ip", &["netns", "add", &name], None)?;
        let file = match File::open(format!("{NETNS_DIR}/{name}")) {
            Ok(f) => f,
            Err(e) => {
                let _ = sys::run("ip", &["netns", "del", &name], None);
                return Err(format!("cannot open {NETNS_DIR}/{name}: {e}"));
            }
        };
        let ns = Netns { name, file };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME ARGS`.
    pub fn ip(&self, args: &[&str]) -> Result<String, String> {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        sys::run("ip", &a, None)
    }

    /// `ip -n NAME -batch -`: one `ip` command per line.
    pub fn ip_batch(&self, commands: &[String]) -> Result<(), String> {
        if commands.is_empty() {
            return Ok(());
        }
        let text: String = commands.iter().map(|c| format!("{c}\n")).collect();
        sys::run("ip", &["-n", &self.name, "-batch", "-"], Some(&text)).map(|_| ()).map_err(|e| format!("{e}\n  commands:\n    {}", commands.join("\n    ")))
    }

    /// A program run inside the namespace (`ip netns exec NAME ...`).
    pub fn exec(&self, program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        let path = sys::find_tool(program).ok_or_else(|| format!("{program} not found"))?;
        let path = path.to_string_lossy().into_owned();
        let mut a = vec!["netns", "exec", self.name.as_str(), path.as_str()];
        a.extend_from_slice(args);
        sys::run("ip", &a, stdin)
    }

    /// Sets sysctls of this namespace (`key=value` each).
    pub fn sysctl(&self, settings: &[String]) -> Result<(), String> {
        let mut a = vec!["-q", "-w"];
        a.extend(settings.iter().map(String::as_str));
        self.exec("sysctl", &a, None).map(|_| ())
    }

    /// Runs `f` on a new thread inside this namespace.
    pub fn spawn<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<JoinHandle<Result<T, String>>, String> {
        let file = self.file.try_clone().map_err(|e| format!("{}: {e}", self.name))?;
        let name = self.name.clone();
        std::thread::Builder::new()
            .name(format!("in-{name}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                sys::enter_netns(&file).map_err(|e| format!("setns into {name}: {e}"))?;
                Ok(f())
            })
            .map_err(|e| format!("cannot start a thread: {e}"))
    }

    /// Runs `f` inside this namespace and waits for it.
    pub fn within<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        self.spawn(f)?.join().map_err(|_| format!("a thread in {} panicked", self.name))?
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = sys::run("ip", &["netns", "del", &self.name], None) {
            eprintln!("warning: {e}");
        }
    }
}

/// The names in `/run/netns` that start with `prefix`.
pub fn named(prefix: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else { return Vec::new() };
    let mut out: Vec<String> = dir.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.starts_with(prefix)).collect();
    out.sort();
    out
}

/// The run that made a harness namespace, from its name.
fn owner(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split_once('-')?.0.parse().ok()
}

/// Whether the process `pid` is a harness run (same program as this one).
fn is_live_run(pid: u32) -> bool {
    let comm = |p: &str| std::fs::read_to_string(format!("/proc/{p}/comm")).ok().map(|s| s.trim().to_string());
    pid == std::process::id() || (comm(&pid.to_string()).is_some() && comm(&pid.to_string()) == comm("self"))
}

/// Deletes harness namespaces whose run is gone; returns their names.
pub fn sweep_stale() -> Vec<String> {
    let mut gone = Vec::new();
    for name in named(PREFIX) {
        let stale = owner(&name).is_none_or(|pid| !is_live_run(pid));
        if stale && sys::run("ip", &["netns", "del", &name], None).is_ok() {
            gone.push(name);
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_run() {
        assert_eq!(owner("khh1234-n0"), Some(1234));
        assert_eq!(owner("khh1234-p12"), Some(1234));
        assert_eq!(owner("khhx-n0"), None);
        assert_eq!(owner("other-n0"), None);
        assert!(run_prefix().starts_with("khh") && run_prefix().ends_with('-'));
        assert!(is_live_run(std::process::id()));
    }
}
