//! The commands. The command line arrives read and typed (`args`); each
//! command checks what clap cannot (flags that need each other), then reads
//! the inputs, then asks the model and formats the answer.

use crate::args::{self, Command, CompletionArgs, DigArgs, Format, GetArgs, InputArgs, IptablesSaveArgs, NftArgs, NftFormat, NotRun, Program, TraceArgs};
use crate::objects::Cluster;
use crate::{input, objects, wire, Error, Output};
use kubehops_core::api::kubectl::{get_svc, Namespaces};
use kubehops_core::api::server::PortRange;
use kubehops_core::api::Node;
use kubehops_core::dataplane::kubeproxy::{changed_services, restore_payload, sync_node, KubeProxyConfig, NodeFeatures, NodeRules, ProxyMode, SyncMode};
use kubehops_core::dataplane::nftables::{self, NftablesConfig};
use kubehops_core::dataplane::overlay::PodNetwork;
use kubehops_core::dataplane::trace::{node_addresses, trace, trace_nftables, TraceResult, TraceVerdict};
use kubehops_core::dns::{ClusterDns, DnsConfig, QType, NDOTS};
use kubehops_core::net::{Packet, Protocol, SockAddr};
use serde::Serialize;
use std::io::Read;

/// The source port of traced packets.
const TRACE_SOURCE_PORT: u16 = 40000;

/// Runs one command line as `program`. On failure the warnings printed so
/// far come with the error.
pub fn dispatch(program: Program, argv: &[String], stdin: &mut dyn Read) -> Result<Output, (String, Error)> {
    let command = match args::parse(program, argv) {
        Ok(c) => c,
        Err(NotRun::Print(text)) => return Ok(Output { stdout: text, stderr: String::new() }),
        Err(NotRun::Usage { message, usage }) => return Err((String::new(), Error::Usage { message, usage })),
    };
    let name = argv.first().map(String::as_str);
    let usage_of = |message: String| Error::Usage { message, usage: args::usage(program, name) };
    match command {
        Command::IptablesSave(a) => iptables_save(&a, stdin, &usage_of),
        Command::Nft(a) => nft(&a, stdin, &usage_of),
        Command::Trace(a) => trace_cmd(&a, stdin, &usage_of),
        Command::Get(a) => get(&a, stdin, &usage_of),
        Command::Dig(a) => dig(&a, stdin, &usage_of),
        Command::Completion(a) => completion(program, &a, &usage_of),
    }
}

type Outcome = Result<Output, (String, Error)>;

/// Warnings as printed on stderr: notes about the input, then stored
/// values the API server would have refused.
fn warnings(c: &Cluster) -> String {
    kubehops_objects::cluster::warning_lines(c).iter().map(|l| format!("{l}\n")).collect()
}

/// Reads `-f` inputs into a checked cluster.
fn load(input: &InputArgs, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Result<Cluster, (String, Error)> {
    if input.filename.is_empty() {
        return Err((String::new(), usage_of("no input: give -f FILE (a file, a directory, or - for stdin)".into())));
    }
    load_files(input, &input.filename, stdin)
}

/// Reads the given files (as `-f` takes them) into a checked cluster.
fn load_files(input: &InputArgs, files: &[String], stdin: &mut dyn Read) -> Result<Cluster, (String, Error)> {
    let mut docs = Vec::new();
    for src in input::read_sources(files, stdin).map_err(|e| (String::new(), e))? {
        // Objects of kinds that are skipped are cut down as they are read.
        docs.extend(input::documents_keeping(&src, &objects::reads).map_err(|e| (String::new(), e.into()))?);
    }
    let options = objects::LoadOptions { node_port_range: input.service_node_port_range.unwrap_or(PortRange::DEFAULT), strict: input.strict };
    objects::load(&docs, options).map_err(|e| (String::new(), e.into()))
}

/// The node a command is about and the kube-proxy settings for it.
fn pick_node<'a>(node: Option<&str>, c: &'a Cluster, features: Option<NodeFeatures>, usage_of: &dyn Fn(String) -> Error) -> Result<(&'a Node, KubeProxyConfig), Error> {
    let mut cfg = c.proxy.clone().unwrap_or_default();
    cfg.node_features = features.unwrap_or(NodeFeatures::MODERN);
    let Some(name) = node.or(cfg.hostname_override.as_deref()).map(String::from) else {
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

fn iptables_save(a: &IptablesSaveArgs, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let u = |m: &str| (String::new(), usage_of(m.into()));
    let format = a.format.unwrap_or(Format::KubeProxy);
    if !a.previous.is_empty() && format != Format::Restore {
        return Err(u("--previous only changes the restore payload: use it with --format restore (the node's tables are the same after any sync)"));
    }
    if a.previous.iter().any(|f| f == "-") {
        return Err(u("--previous takes files or directories; stdin (-) is only for -f"));
    }
    if a.full_sync && a.previous.is_empty() {
        return Err(u("--full-sync needs --previous: without it the sync is the node's first, which is full anyway"));
    }
    let c = load(&a.input, stdin, usage_of)?;
    let (node, cfg) = pick_node(a.node.node.as_deref(), &c, a.features.iptables_features, usage_of).map_err(|e| (warnings(&c), e))?;
    iptables_mode(&cfg, "iptables-save").map_err(|e| (warnings(&c), e))?;
    let rules = sync_node(node, &c.services, &c.slices, &cfg);
    let (lines, extra_warnings) = match format {
        Format::KubeProxy => (rules.save(), String::new()),
        Format::Kernel => (rules.save_kernel(), String::new()),
        Format::Restore if a.previous.is_empty() => (restore_payload(&rules, SyncMode::First), String::new()),
        Format::Restore => {
            let before = load_files(&a.input, &a.previous, stdin).map_err(|(w, e)| (warnings(&c) + &w, e))?;
            (later_sync(&before, &c, node, &cfg, &rules, a.full_sync), warnings(&before))
        }
    };
    let stdout: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Ok(Output { stdout, stderr: warnings(&c) + &extra_warnings })
}

/// A node whose kube-proxy runs in nftables mode has no kube-proxy
/// iptables rules: the commands that read them say so rather than print
/// rules the node does not have.
fn iptables_mode(cfg: &KubeProxyConfig, command: &str) -> Result<(), Error> {
    match cfg.mode {
        ProxyMode::Iptables => Ok(()),
        ProxyMode::Nftables => Err(Error::Other(format!(
            "the KubeProxyConfiguration sets mode: nftables, so kube-proxy writes no iptables rules on this node; `kubehops nft` prints its nftables rules ({command} reads the iptables mode only)"
        ))),
    }
}

fn nft(a: &NftArgs, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let c = load(&a.input, stdin, usage_of)?;
    let (node, cfg) = pick_node(a.node.node.as_deref(), &c, None, usage_of).map_err(|e| (warnings(&c), e))?;
    let nft_cfg = NftablesConfig { service_cidrs: a.service_cidr.into_iter().collect(), ..NftablesConfig::for_node(cfg, node) };
    let rules = nftables::sync_node(node, &c.services, &c.slices, &nft_cfg);
    let lines = match a.format.unwrap_or(NftFormat::Transaction) {
        NftFormat::Transaction => rules.transaction(),
        NftFormat::Ruleset => rules.list(),
    };
    let stdout: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Ok(Output { stdout, stderr: warnings(&c) })
}

/// The restore payload of a sync after the node applied `before`'s: the
/// node holds the rules of `before`, and kube-proxy now sees `now`.
fn later_sync(before: &Cluster, now: &Cluster, node: &Node, cfg: &KubeProxyConfig, rules: &NodeRules, full: bool) -> Vec<String> {
    let held = sync_node(node, &before.services, &before.slices, cfg);
    let changed = changed_services((&before.services, &before.slices), (&now.services, &now.slices), &node.name);
    let mode = if full { SyncMode::Full { previous: &held } } else { SyncMode::Partial { previous: &held, changed: &changed } };
    restore_payload(rules, mode)
}

/// The `-o json` form of a trace. `mode` is there only in nftables mode,
/// so the iptables mode's output is as it always was.
#[derive(Serialize)]
struct TraceJson {
    verdict: TraceVerdict,
    targets: Vec<String>,
    masquerade: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<&'static str>,
    /// With --network vxlan only.
    #[serde(skip_serializing_if = "Option::is_none")]
    overlay: Option<wire::OverlayJson>,
    /// With --handshake only: empty when the rules refuse the SYN, and
    /// then `handshake_note` says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    handshake: Option<Vec<wire::HandshakePacket>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    handshake_note: Option<String>,
}

fn trace_cmd(a: &TraceArgs, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let required = |flag: &str| (String::new(), usage_of(format!("--{flag} is required")));
    let src = a.src.ok_or_else(|| required("src"))?;
    let dst = a.dst.ok_or_else(|| required("dst"))?;
    let dport = a.dport.ok_or_else(|| required("dport"))?;
    let proto = a.proto.unwrap_or(Protocol::Tcp);
    let json = a.json.unwrap_or(false);
    match proto {
        _ if !a.handshake => {}
        Protocol::Tcp => {}
        Protocol::Udp => {
            return Err((String::new(), usage_of("--handshake follows a TCP connection; UDP has none: one query and one answer, which the trace without --handshake shows".into())));
        }
        _ => return Err((String::new(), usage_of(format!("--handshake follows a TCP connection; {}'s is not modelled: leave --handshake out", proto.api_name())))),
    }
    let network = a.network.clone().unwrap_or_default();
    let c = load(&a.input, stdin, usage_of)?;
    let (node, cfg) = pick_node(a.node.as_deref(), &c, a.features.iptables_features, usage_of).map_err(|e| (warnings(&c), e))?;
    let mode = a.proxy_mode.unwrap_or(cfg.mode);
    if a.service_cidr.is_some() && mode == ProxyMode::Iptables {
        return Err((warnings(&c), usage_of("--service-cidr applies to the nftables mode only (the iptables mode has no rule for unallocated cluster IPs)".into())));
    }
    let pkt = Packet::new(proto, SockAddr::new(src, TRACE_SOURCE_PORT), SockAddr::new(dst, dport));
    let result = trace_in_mode(mode, a, node, cfg, &c, &pkt);
    let targets: Vec<String> = result.targets.iter().map(|t| t.to_string()).collect();
    let traced = wire::Traced { node, packet: pkt, result: &result, features: a.features.iptables_features.unwrap_or(NodeFeatures::MODERN) };
    let overlay = matches!(network, PodNetwork::Vxlan(_)).then(|| wire::overlay(&traced, &c, &network));
    let handshake = a.handshake.then(|| wire::handshake(&traced, &c, &network));
    let stdout = if json {
        let mode = (mode == ProxyMode::Nftables).then_some(mode.as_str());
        let (handshake, handshake_note) = match &handshake {
            None => (None, None),
            Some(Ok(steps)) => (Some(steps.clone()), None),
            Some(Err(note)) => (Some(Vec::new()), Some(note.clone())),
        };
        let doc = TraceJson { verdict: result.verdict, targets, masquerade: result.masquerade, mode, overlay, handshake, handshake_note };
        let text = serde_json::to_string_pretty(&doc).map_err(|e| (warnings(&c), Error::Other(format!("cannot write JSON: {e}"))))?;
        format!("{text}\n")
    } else {
        let mut s: String = result.matched.iter().map(|m| format!("{m}\n")).collect();
        let verdict = serde_json::to_value(result.verdict).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        s.push_str(&format!("verdict: {verdict}\n"));
        s.push_str(&format!("targets: {}\n", if targets.is_empty() { "<none>".to_string() } else { targets.join(", ") }));
        s.push_str(&format!("masquerade: {}\n", result.masquerade));
        if let Some(o) = &overlay {
            s.push_str(&wire::overlay_text(o, &c));
        }
        if let Some(hs) = &handshake {
            s.push_str(&wire::handshake_text(&traced, hs));
        }
        s
    };
    let mut stderr = warnings(&c);
    if !result.targets_complete {
        stderr.push_str("warning: the search for reachable endpoints stopped at its step budget: targets may be incomplete\n");
    }
    Ok(Output { stdout, stderr })
}

/// One packet through the node's rules in `mode`.
fn trace_in_mode(mode: ProxyMode, a: &TraceArgs, node: &Node, cfg: KubeProxyConfig, c: &Cluster, pkt: &Packet) -> TraceResult {
    match mode {
        ProxyMode::Iptables => trace(&sync_node(node, &c.services, &c.slices, &cfg), node, pkt, a.from_node),
        ProxyMode::Nftables => {
            let nft_cfg = NftablesConfig { service_cidrs: a.service_cidr.into_iter().collect(), ..NftablesConfig::for_node(cfg, node) };
            let mut local = node_addresses(node);
            local.extend(nft_cfg.local_addresses.iter().copied());
            trace_nftables(&nftables::sync_node(node, &c.services, &c.slices, &nft_cfg), local, pkt, a.from_node)
        }
    }
}

fn get(a: &GetArgs, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let u = |m: String| (String::new(), usage_of(m));
    if a.resource.is_none() {
        return Err(u("you must specify the type of resource to get: svc".into()));
    }
    if let Some(extra) = a.extra.first() {
        return Err(u(format!("unexpected argument \"{extra}\": kubehops get svc lists all Services of a namespace")));
    }
    let now = a.now.unwrap_or_else(unix_now);
    let ns = a.namespace.as_deref().filter(|s| !s.is_empty()).unwrap_or("default");
    let c = load(&a.input, stdin, usage_of)?;
    let scope = if a.all_namespaces { Namespaces::All } else { Namespaces::Only(ns) };
    let out = get_svc(&c.services, scope, now, a.wide.unwrap_or(false));
    Ok(Output { stdout: out.stdout, stderr: warnings(&c) + &out.stderr })
}

fn dig(a: &DigArgs, stdin: &mut dyn Read, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let u = |m: String| (String::new(), usage_of(m));
    let name = a.name.clone().ok_or_else(|| u("a name to look up is required".into()))?;
    let qtype = a.qtype.unwrap_or(QType::A);
    if name.is_empty() || name == "." || name.starts_with('.') || name.contains("..") || name.chars().any(|c| c.is_whitespace()) {
        return Err(u(format!("\"{name}\" is not a domain name")));
    }
    let ns = a.namespace.as_deref().filter(|s| !s.is_empty()).unwrap_or("default").to_string();
    let c = load(&a.input, stdin, usage_of)?;
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

/// `completion SHELL`: the script on stdout, as `kubectl completion` prints it.
fn completion(program: Program, a: &CompletionArgs, usage_of: &dyn Fn(String) -> Error) -> Outcome {
    let shell = a.shell.ok_or_else(|| (String::new(), usage_of("a shell is required: bash, zsh, fish or powershell".into())))?;
    Ok(Output { stdout: args::completion(program, shell), stderr: String::new() })
}

/// The clock, in whole seconds since the Unix epoch (before 1970 reads as 0,
/// which no cluster's creationTimestamp precedes).
fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
