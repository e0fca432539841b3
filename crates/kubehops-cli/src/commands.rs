//! The four commands. Each checks its command line first, then reads the
//! inputs, then asks the model and formats the answer.

use crate::args::{self, Flag, Parsed};
use crate::objects::Cluster;
use crate::{input, objects, Error, Output, SHORT_USAGE, USAGE};
use kubehops_core::api::Node;
use kubehops_core::api::server::PortRange;
use kubehops_core::dns::{ClusterDns, DnsConfig, QType, NDOTS};
use kubehops_core::api::kubectl::{get_svc, Namespaces};
use kubehops_core::dataplane::kubeproxy::{changed_services, restore_payload, sync_node, KubeProxyConfig, NodeFeatures, NodeRules, SyncMode};
use kubehops_core::net::{Packet, Protocol, SockAddr};
use kubehops_core::dataplane::trace::{trace, TraceVerdict};
use serde::Serialize;
use std::io::Read;
use std::net::Ipv4Addr;

const IPTABLES_USAGE: &str = "\
Usage: kubehops iptables-save [--node NAME] [--format kube-proxy|restore|kernel] [--iptables-features FEATURES] [--previous FILE... [--full-sync]] [--strict] -f FILE...

Prints the filter and nat tables of NAME's kube-proxy in iptables-save
format. Without --node, the node is the hostnameOverride of the
KubeProxyConfiguration given.

  --format kube-proxy  (the default) the node's kube-proxy tables, each rule
                       as kube-proxy writes it: the jumps it inserts into the
                       built-in chains, then its own chains in the order it
                       declares them
  --format restore     what kube-proxy hands to `iptables-restore --noflush`
                       in one sync: its own chains only, -X for chains it
                       deletes
  --format kernel      what `iptables-save` on the node prints back, to diff
                       against a real node: addresses first with /32, strings
                       quoted as iptables quotes them, probabilities as the
                       kernel stores them, user chains sorted, and the
                       KUBE-PROXY-CANARY chains kube-proxy creates in the
                       mangle, filter and nat tables
  --iptables-features FEATURES
                       what the node can do: a profile, or a comma-separated
                       list of features (\"\" for none). Profiles:
                         modern              random-fully,nfacct (default)
                         upstream-test-fake  nfacct: the node kube-proxy's
                                             own unit tests fake
                         none                no optional feature
                       Features:
                         random-fully    MASQUERADE --random-fully
                         nfacct          kube-proxy could create its nfacct
                                         counters: the INVALID drop and the
                                         localhost node ports count packets
                         tcp-be-liberal  nf_conntrack_tcp_be_liberal is 1:
                                         no DROP of INVALID packets (also
                                         what conntrack.tcpBeLiberal sets)
  --previous FILE      with --format restore: the objects of the last sync
                       kube-proxy applied on the node (repeatable, like -f).
                       The payload is then a partial sync: only the chains of
                       Services that changed since, and -X for chains no
                       longer used
  --full-sync          with --previous: a full resync instead (every chain,
                       and -X for chains no longer used)
";

const TRACE_USAGE: &str = "\
Usage: kubehops trace [--node NAME] --src IP --dst IP --dport PORT [--proto tcp|udp|sctp] [--from-node] [--iptables-features FEATURES] [-o json] [--strict] -f FILE...

Follows one packet (source port 40000) through NAME's rules: arriving at
the node, or sent by the node itself with --from-node. Prints the rules
that matched, the verdict, every endpoint it could reach and whether it
is masqueraded; -o json prints {\"verdict\", \"targets\", \"masquerade\"}.
--iptables-features is as for iptables-save (default modern).
";

const GET_USAGE: &str = "\
Usage: kubehops get svc [-n NAMESPACE | -A] [-o wide] [--now RFC3339] [--strict] -f FILE...

Prints kubectl's table of the Services in NAMESPACE (default \"default\")
or in all namespaces. AGE is measured to --now (default: the clock).
";

const DIG_USAGE: &str = "\
Usage: kubehops dig NAME [A|SRV|CNAME] [-n NAMESPACE] [--strict] -f FILE...

Prints CoreDNS's answer for NAME in the cluster domain cluster.local, as a
Pod in NAMESPACE (default \"default\") resolves it: short names go through
the Pod's search path.
";

/// What every command says about -f and --strict.
const INPUT_HELP: &str = "
Objects are read as stored: a cluster IP or node port two Services both
hold, or a healthCheckNodePort the API server would not allow, is a warning
on stderr. --strict refuses them instead, as the API server refuses them on
create.
";

/// The source port of traced packets.
const TRACE_SOURCE_PORT: u16 = 40000;

/// Runs one command line. On failure the warnings printed so far come with
/// the error.
pub fn dispatch(argv: &[String], stdin: &mut dyn Read) -> Result<Output, (String, Error)> {
    let usage_err = |message: String, usage: &'static str| (String::new(), Error::Usage { message, usage });
    let Some((cmd, rest)) = argv.split_first() else {
        return Err(usage_err("no command given".into(), SHORT_USAGE));
    };
    let (flags, usage): (&[Flag], &'static str) = match cmd.as_str() {
        "iptables-save" => (
            &[args::FILENAME, args::NODE_PORT_RANGE, args::STRICT, args::HELP, args::NODE, args::FORMAT, args::IPTABLES_FEATURES, args::PREVIOUS, args::FULL_SYNC],
            IPTABLES_USAGE,
        ),
        "trace" => (
            &[
                args::FILENAME,
                args::NODE_PORT_RANGE,
                args::STRICT,
                args::HELP,
                args::NODE,
                args::SRC,
                args::DST,
                args::DPORT,
                args::PROTO,
                args::FROM_NODE,
                args::OUTPUT,
                args::IPTABLES_FEATURES,
            ],
            TRACE_USAGE,
        ),
        "get" => (&[args::FILENAME, args::NODE_PORT_RANGE, args::STRICT, args::HELP, args::NAMESPACE, args::ALL_NAMESPACES, args::OUTPUT, args::NOW], GET_USAGE),
        "dig" => (&[args::FILENAME, args::NODE_PORT_RANGE, args::STRICT, args::HELP, args::NAMESPACE], DIG_USAGE),
        "help" | "-h" | "--help" => return Ok(Output { stdout: USAGE.into(), stderr: String::new() }),
        other => return Err(usage_err(format!("unknown command \"{other}\""), SHORT_USAGE)),
    };
    let p = args::parse(rest, flags).map_err(|m| usage_err(m, usage))?;
    if p.switch("help") {
        return Ok(Output { stdout: format!("{usage}{INPUT_HELP}"), stderr: String::new() });
    }
    let usage_of = |message: String| Error::Usage { message, usage };
    let result = match cmd.as_str() {
        "iptables-save" => iptables_save(&p, stdin, &usage_of),
        "trace" => trace_cmd(&p, stdin, &usage_of),
        "get" => get(&p, stdin, &usage_of),
        _ => dig(&p, stdin, &usage_of),
    };
    result
}

type Outcome = Result<Output, (String, Error)>;

/// Warnings as printed on stderr: notes about the input, then stored
/// values the API server would have refused.
fn warnings(c: &Cluster) -> String {
    let notes = c.warnings.iter().map(|w| format!("warning: {w}\n"));
    let stored = c.stored_warnings.iter().map(|w| format!("{}\n", crate::stored_warning(w)));
    notes.chain(stored).collect()
}

/// Reads `-f` inputs into a checked cluster.
fn load(p: &Parsed, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Result<Cluster, (String, Error)> {
    let files = p.all("filename");
    if files.is_empty() {
        return Err((String::new(), usage_of("no input: give -f FILE (a file, a directory, or - for stdin)".into())));
    }
    load_files(p, files, stdin, usage_of)
}

/// Reads the given files (as `-f` takes them) into a checked cluster.
fn load_files(p: &Parsed, files: &[String], stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Result<Cluster, (String, Error)> {
    let range = match p.value("service-node-port-range") {
        None => PortRange::DEFAULT,
        Some(s) => PortRange::parse(s)
            .ok_or_else(|| (String::new(), usage_of(format!("invalid argument \"{s}\" for \"--service-node-port-range\": want FIRST-LAST, such as 30000-32767"))))?,
    };
    let mut docs = Vec::new();
    for src in input::read_sources(files, stdin).map_err(|e| (String::new(), e))? {
        // Objects of kinds that are skipped are cut down as they are read.
        docs.extend(input::documents_keeping(&src, &objects::reads).map_err(|e| (String::new(), e))?);
    }
    let options = objects::LoadOptions { node_port_range: range, strict: p.switch("strict") };
    objects::load(&docs, options).map_err(|e| (String::new(), e))
}

/// What `--iptables-features` says the node can do: a profile or a list.
fn node_features(p: &Parsed) -> Result<NodeFeatures, String> {
    let Some(v) = p.value("iptables-features") else { return Ok(NodeFeatures::MODERN) };
    match v {
        "modern" => return Ok(NodeFeatures::MODERN),
        "upstream-test-fake" => return Ok(NodeFeatures::UPSTREAM_TEST_FAKE),
        "none" | "" => return Ok(NodeFeatures::NONE),
        _ => {}
    }
    let mut f = NodeFeatures::NONE;
    for name in v.split(',').map(str::trim) {
        match name {
            "random-fully" => f.random_fully = true,
            "nfacct" => f.nfacct = true,
            "tcp-be-liberal" => f.tcp_be_liberal = true,
            other => {
                return Err(format!(
                    "invalid argument \"{v}\" for \"--iptables-features\": unknown feature \"{other}\"; want modern, upstream-test-fake, none, or a list of random-fully, nfacct and tcp-be-liberal"
                ))
            }
        }
    }
    Ok(f)
}

/// The node a command is about and the kube-proxy settings for it.
fn pick_node<'a>(p: &Parsed, c: &'a Cluster, features: NodeFeatures, usage_of: &dyn Fn(String) -> Error) -> Result<(&'a Node, KubeProxyConfig), Error> {
    let mut cfg = c.proxy.clone().unwrap_or_default();
    cfg.node_features = features;
    let Some(name) = p.value("node").or(cfg.hostname_override.as_deref()).map(String::from) else {
        return Err(usage_of("--node is required (or give a KubeProxyConfiguration with hostnameOverride)".into()));
    };
    let Some(node) = c.nodes.iter().find(|n| n.name == name) else {
        if c.nodes.is_empty() {
            return Err(Error::Other(format!("node \"{name}\" not found: no Node objects were given")));
        }
        let known: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
        return Err(Error::Other(format!("node \"{name}\" not found; the nodes given are: {}", known.join(", "))));
    };
    // kube-proxy on the chosen node knows itself by that node's name.
    cfg.hostname_override = Some(node.name.clone());
    Ok((node, cfg))
}

fn no_positionals(p: &Parsed, usage_of: &dyn Fn(String) -> Error) -> Result<(), (String, Error)> {
    match p.positional.first() {
        Some(extra) => Err((String::new(), usage_of(format!("unexpected argument \"{extra}\"")))),
        None => Ok(()),
    }
}

/// The renderings of `iptables-save --format`.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    KubeProxy,
    Restore,
    Kernel,
}

fn iptables_save(p: &Parsed, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    no_positionals(p, usage_of)?;
    let u = |m: String| (String::new(), usage_of(m));
    let format = match p.value("format") {
        None | Some("kube-proxy") => Format::KubeProxy,
        Some("restore") => Format::Restore,
        Some("kernel") => Format::Kernel,
        Some(other) => return Err(u(format!("invalid argument \"{other}\" for \"--format\": want kube-proxy, restore or kernel"))),
    };
    let features = node_features(p).map_err(u)?;
    let previous = p.all("previous");
    if !previous.is_empty() && format != Format::Restore {
        return Err(u("--previous only changes the restore payload: use it with --format restore (the node's tables are the same after any sync)".into()));
    }
    if previous.iter().any(|f| f == "-") {
        return Err(u("--previous takes files or directories; stdin (-) is only for -f".into()));
    }
    if p.switch("full-sync") && previous.is_empty() {
        return Err(u("--full-sync needs --previous: without it the sync is the node's first, which is full anyway".into()));
    }
    let c = load(p, stdin, usage_of)?;
    let (node, cfg) = pick_node(p, &c, features, usage_of).map_err(|e| (warnings(&c), e))?;
    let rules = sync_node(node, &c.services, &c.slices, &cfg);
    let (lines, extra_warnings) = match format {
        Format::KubeProxy => (rules.save(), String::new()),
        Format::Kernel => (rules.save_kernel(), String::new()),
        Format::Restore if previous.is_empty() => (restore_payload(&rules, SyncMode::First), String::new()),
        Format::Restore => {
            let before = load_files(p, previous, stdin, usage_of).map_err(|(w, e)| (warnings(&c) + &w, e))?;
            (later_sync(&before, &c, node, &cfg, &rules, p.switch("full-sync")), warnings(&before))
        }
    };
    let stdout: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Ok(Output { stdout, stderr: warnings(&c) + &extra_warnings })
}

/// The restore payload of a sync after the node applied `before`'s: the
/// node holds the rules of `before`, and kube-proxy now sees `now`.
fn later_sync(before: &Cluster, now: &Cluster, node: &Node, cfg: &KubeProxyConfig, rules: &NodeRules, full: bool) -> Vec<String> {
    let held = sync_node(node, &before.services, &before.slices, cfg);
    let changed = changed_services((&before.services, &before.slices), (&now.services, &now.slices), &node.name);
    let mode = if full { SyncMode::Full { previous: &held } } else { SyncMode::Partial { previous: &held, changed: &changed } };
    restore_payload(rules, mode)
}

/// The `-o json` form of a trace.
#[derive(Serialize)]
struct TraceJson {
    verdict: TraceVerdict,
    targets: Vec<String>,
    masquerade: bool,
}

fn trace_cmd(p: &Parsed, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    no_positionals(p, usage_of)?;
    let u = |m: String| (String::new(), usage_of(m));
    let ip_flag = |key: &str| -> Result<Ipv4Addr, (String, Error)> {
        let v = p.value(key).ok_or_else(|| u(format!("--{key} is required")))?;
        v.parse().map_err(|_| u(format!("invalid argument \"{v}\" for \"--{key}\": want an IPv4 address")))
    };
    let src = ip_flag("src")?;
    let dst = ip_flag("dst")?;
    let dport_s = p.value("dport").ok_or_else(|| u("--dport is required".into()))?;
    let dport = dport_s
        .parse::<u16>()
        .ok()
        .filter(|n| *n != 0)
        .ok_or_else(|| u(format!("invalid argument \"{dport_s}\" for \"--dport\": want a port from 1 to 65535")))?;
    let proto = match p.value("proto") {
        None => Protocol::Tcp,
        Some(s) => Protocol::parse(s).ok_or_else(|| u(format!("invalid argument \"{s}\" for \"--proto\": want tcp, udp or sctp")))?,
    };
    let json = match p.value("output") {
        None => false,
        Some("json") => true,
        Some(other) => return Err(u(format!("unsupported output format \"{other}\": trace prints text, or JSON with -o json"))),
    };
    let features = node_features(p).map_err(u)?;
    let c = load(p, stdin, usage_of)?;
    let (node, cfg) = pick_node(p, &c, features, usage_of).map_err(|e| (warnings(&c), e))?;
    let rules = sync_node(node, &c.services, &c.slices, &cfg);
    let pkt = Packet::new(proto, SockAddr::new(src, TRACE_SOURCE_PORT), SockAddr::new(dst, dport));
    let result = trace(&rules, node, &pkt, p.switch("from-node"));
    let targets: Vec<String> = result.targets.iter().map(|t| t.to_string()).collect();
    let stdout = if json {
        let doc = TraceJson { verdict: result.verdict, targets, masquerade: result.masquerade };
        let text = serde_json::to_string_pretty(&doc).map_err(|e| (warnings(&c), Error::Other(format!("cannot write JSON: {e}"))))?;
        format!("{text}\n")
    } else {
        let mut s: String = result.matched.iter().map(|m| format!("{m}\n")).collect();
        let verdict = serde_json::to_value(result.verdict).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        s.push_str(&format!("verdict: {verdict}\n"));
        s.push_str(&format!("targets: {}\n", if targets.is_empty() { "<none>".to_string() } else { targets.join(", ") }));
        s.push_str(&format!("masquerade: {}\n", result.masquerade));
        s
    };
    let mut stderr = warnings(&c);
    if !result.targets_complete {
        stderr.push_str("warning: the search for reachable endpoints stopped at its step budget: targets may be incomplete\n");
    }
    Ok(Output { stdout, stderr })
}

fn get(p: &Parsed, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let u = |m: String| (String::new(), usage_of(m));
    match p.positional.as_slice() {
        [] => return Err(u("you must specify the type of resource to get: svc".into())),
        [r] if matches!(r.as_str(), "svc" | "service" | "services") => {}
        [r] => return Err(u(format!("unsupported resource type \"{r}\": kubehops get lists services (svc)"))),
        [_, extra, ..] => return Err(u(format!("unexpected argument \"{extra}\": kubehops get svc lists all Services of a namespace"))),
    }
    let wide = match p.value("output") {
        None => false,
        Some("wide") => true,
        Some(other) => return Err(u(format!("unsupported output format \"{other}\": use -o wide or leave -o out"))),
    };
    let now = match p.value("now") {
        Some(s) => crate::rfc3339::parse(s).ok_or_else(|| u(format!("invalid argument \"{s}\" for \"--now\": want an RFC 3339 time such as 2024-05-01T12:00:00Z")))?,
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0),
    };
    let ns = p.value("namespace").filter(|s| !s.is_empty()).unwrap_or("default").to_string();
    let c = load(p, stdin, usage_of)?;
    let scope = if p.switch("all-namespaces") { Namespaces::All } else { Namespaces::Only(&ns) };
    let out = get_svc(&c.services, scope, now, wide);
    Ok(Output { stdout: out.stdout, stderr: warnings(&c) + &out.stderr })
}

fn dig(p: &Parsed, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let u = |m: String| (String::new(), usage_of(m));
    let (name, qtype) = match p.positional.as_slice() {
        [] => return Err(u("a name to look up is required".into())),
        [n] => (n.clone(), QType::A),
        [n, t] => (n.clone(), QType::parse(t).ok_or_else(|| u(format!("unsupported query type \"{t}\": kubehops answers A, SRV and CNAME")))?),
        [_, _, extra, ..] => return Err(u(format!("unexpected argument \"{extra}\""))),
    };
    if name.is_empty() || name == "." || name.starts_with('.') || name.contains("..") || name.chars().any(|c| c.is_whitespace()) {
        return Err(u(format!("\"{name}\" is not a domain name")));
    }
    let ns = p.value("namespace").filter(|s| !s.is_empty()).unwrap_or("default").to_string();
    let c = load(p, stdin, usage_of)?;
    let mut dns = ClusterDns::new(DnsConfig::default(), &c.services, &c.slices);
    for n in &c.namespaces {
        dns.add_namespace(n);
    }
    let lookup = dns.search(&name, qtype, &ns);
    let Some(resp) = lookup.response else {
        let msg = format!(
            "{} is outside the cluster domain {}: CoreDNS forwards such names upstream, which kubehops does not model",
            lookup.upstream.first().map(String::as_str).unwrap_or(&name),
            dns.config.zone
        );
        return Err((warnings(&c), Error::Other(msg)));
    };
    let mut s = format!("; <<>> kubehops dig <<>> {name} {qtype} (from a Pod in namespace {ns})\n");
    if !name.ends_with('.') {
        s.push_str(&format!(";; search path: {} (ndots:{NDOTS})\n", dns.search_path(&ns).join(" ")));
    }
    s.push_str(&format!(";; tried: {}\n", lookup.tried.join(", ")));
    for up in &lookup.upstream {
        s.push_str(&format!(";; not modelled: {up} is outside {} and would be forwarded upstream\n", dns.config.zone));
    }
    s.push_str(&format!(";; ->>HEADER<<- opcode: QUERY, status: {}\n", resp.rcode.as_str()));
    s.push_str(&format!("\n;; QUESTION SECTION:\n;{} IN {}\n", resp.name, resp.qtype));
    if !resp.answer.is_empty() {
        s.push_str("\n;; ANSWER SECTION:\n");
        for r in &resp.answer {
            s.push_str(&format!("{r}\n"));
        }
    }
    if !resp.additional.is_empty() {
        s.push_str("\n;; ADDITIONAL SECTION:\n");
        for r in &resp.additional {
            s.push_str(&format!("{r}\n"));
        }
    }
    let answer_warnings: String = resp.warnings.iter().map(|w| format!("{}\n", crate::dns_warning(w))).collect();
    Ok(Output { stdout: s, stderr: warnings(&c) + &answer_warnings })
}
