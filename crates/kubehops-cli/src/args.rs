//! A small hand-written argv parser: each command declares its flags, and
//! anything else is a usage error that names the offending argument.

use std::collections::BTreeMap;

/// One flag a command accepts.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// The key values are stored under (the long name without dashes).
    pub key: &'static str,
    /// Every spelling, with dashes: `-f`, `--filename`.
    pub names: &'static [&'static str],
    /// Whether the flag takes a value (`-f FILE`, `-fFILE`, `--filename=FILE`).
    pub takes_value: bool,
}

pub const FILENAME: Flag = Flag { key: "filename", names: &["-f", "--filename"], takes_value: true };
pub const NODE_PORT_RANGE: Flag = Flag { key: "service-node-port-range", names: &["--service-node-port-range"], takes_value: true };
pub const STRICT: Flag = Flag { key: "strict", names: &["--strict"], takes_value: false };
pub const HELP: Flag = Flag { key: "help", names: &["-h", "--help"], takes_value: false };
pub const NODE: Flag = Flag { key: "node", names: &["--node"], takes_value: true };
pub const SRC: Flag = Flag { key: "src", names: &["--src"], takes_value: true };
pub const DST: Flag = Flag { key: "dst", names: &["--dst"], takes_value: true };
pub const DPORT: Flag = Flag { key: "dport", names: &["--dport"], takes_value: true };
pub const PROTO: Flag = Flag { key: "proto", names: &["--proto"], takes_value: true };
pub const FROM_NODE: Flag = Flag { key: "from-node", names: &["--from-node"], takes_value: false };
pub const OUTPUT: Flag = Flag { key: "output", names: &["-o", "--output"], takes_value: true };
pub const NAMESPACE: Flag = Flag { key: "namespace", names: &["-n", "--namespace"], takes_value: true };
pub const ALL_NAMESPACES: Flag = Flag { key: "all-namespaces", names: &["-A", "--all-namespaces"], takes_value: false };
pub const NOW: Flag = Flag { key: "now", names: &["--now"], takes_value: true };
pub const FORMAT: Flag = Flag { key: "format", names: &["--format"], takes_value: true };
pub const IPTABLES_FEATURES: Flag = Flag { key: "iptables-features", names: &["--iptables-features"], takes_value: true };
pub const PREVIOUS: Flag = Flag { key: "previous", names: &["--previous"], takes_value: true };
pub const FULL_SYNC: Flag = Flag { key: "full-sync", names: &["--full-sync"], takes_value: false };

/// Parsed arguments of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub positional: Vec<String>,
    values: BTreeMap<&'static str, Vec<String>>,
    switches: BTreeMap<&'static str, bool>,
}

impl Parsed {
    /// Every value given for a flag, in order.
    pub fn all(&self, key: &str) -> &[String] {
        self.values.get(key).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The last value given for a flag (later flags win, as in kubectl).
    pub fn value(&self, key: &str) -> Option<&str> {
        self.all(key).last().map(String::as_str)
    }

    pub fn switch(&self, key: &str) -> bool {
        self.switches.get(key).copied().unwrap_or(false)
    }
}

/// Parses `args` (without the program and command names) against `flags`.
/// `--` ends the flags; a lone `-` is a positional (or a value of `-f`).
pub fn parse(args: &[String], flags: &[Flag]) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_positional || arg == "-" || !arg.starts_with('-') {
            out.positional.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        let (flag, inline) = find(arg, flags).ok_or_else(|| format!("unknown flag: {arg}"))?;
        if !flag.takes_value {
            if inline.is_some() {
                return Err(format!("flag {} takes no value", flag.names[flag.names.len() - 1]));
            }
            out.switches.insert(flag.key, true);
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                let v = args.get(i).ok_or_else(|| format!("flag needs an argument: {arg}"))?;
                i += 1;
                v.clone()
            }
        };
        out.values.entry(flag.key).or_default().push(value);
    }
    Ok(out)
}

/// Finds the flag `arg` names, with a value attached by `=` (`--now=…`,
/// `-o=wide`) or, for one-letter flags, directly (`-owide`).
fn find(arg: &str, flags: &[Flag]) -> Option<(Flag, Option<String>)> {
    let (name, inline) = match arg.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (arg, None),
    };
    if let Some(f) = flags.iter().find(|f| f.names.contains(&name)) {
        return Some((*f, inline));
    }
    // `-owide`, `-fcluster.yaml`: a one-letter flag with its value glued on.
    if !arg.starts_with("--") && arg.len() > 2 && arg.is_char_boundary(2) {
        let (short, rest) = arg.split_at(2);
        if let Some(f) = flags.iter().find(|f| f.takes_value && f.names.contains(&short)) {
            let rest = rest.strip_prefix('=').unwrap_or(rest);
            return Some((*f, Some(rest.to_string())));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn values_switches_and_positionals() {
        let flags = [FILENAME, OUTPUT, ALL_NAMESPACES, NAMESPACE];
        let p = parse(&strings(&["svc", "-f", "a.yaml", "-fb.yaml", "--filename=c.yaml", "-owide", "-A", "-n=prod", "-f", "-"]), &flags).unwrap();
        assert_eq!(p.positional, ["svc"]);
        assert_eq!(p.all("filename"), ["a.yaml", "b.yaml", "c.yaml", "-"]);
        assert_eq!(p.value("output"), Some("wide"));
        assert_eq!(p.value("namespace"), Some("prod"));
        assert!(p.switch("all-namespaces"));
        assert!(!p.switch("help"));
    }

    #[test]
    fn errors_name_the_argument() {
        let flags = [FILENAME, ALL_NAMESPACES];
        assert_eq!(parse(&strings(&["--nope"]), &flags).unwrap_err(), "unknown flag: --nope");
        assert_eq!(parse(&strings(&["-f"]), &flags).unwrap_err(), "flag needs an argument: -f");
        assert_eq!(parse(&strings(&["-A=yes"]), &flags).unwrap_err(), "flag --all-namespaces takes no value");
        assert_eq!(parse(&strings(&["-Ax"]), &flags).unwrap_err(), "unknown flag: -Ax");
        let p = parse(&strings(&["--", "-A"]), &flags).unwrap();
        assert_eq!(p.positional, ["-A"]);
    }
}
