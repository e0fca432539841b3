//! The command line, declared once with clap: what each command takes, its
//! `--help`, the completion scripts and the reference in `docs/cli.md` all
//! come from these definitions.
//!
//! Values are checked here, into typed values, as the line is read; a
//! wrong line becomes a [`crate::Error::Usage`] whose message names the
//! argument in kubectl's words (`unknown flag: --bogus`, `flag needs an
//! argument: -f`, `invalid argument "x" for "--src": …`). The usage text
//! names the program as it was run: `kubehops`, or `kubectl hops` when the
//! binary runs as a kubectl plugin.

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand};
use kubehops_core::api::server::PortRange;
use kubehops_core::dataplane::kubeproxy::{NodeFeatures, ProxyMode};
use kubehops_core::dataplane::overlay::{PodNetwork, VxlanConfig};
use kubehops_core::dns::QType;
use kubehops_core::net::{Cidr, Protocol};
use std::ffi::OsStr;
use std::net::Ipv4Addr;

/// How the binary was started: as `kubehops`, or as `kubectl-hops`, which
/// kubectl runs for `kubectl hops …` (its plugin convention: an executable
/// named `kubectl-NAME` on PATH gets the arguments after NAME).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    Kubehops,
    KubectlPlugin,
}

impl Program {
    /// The name users type, as usage and help show it.
    pub fn name(self) -> &'static str {
        match self {
            Program::Kubehops => "kubehops",
            Program::KubectlPlugin => "kubectl hops",
        }
    }

    /// The executable's file name.
    pub fn binary(self) -> &'static str {
        match self {
            Program::Kubehops => "kubehops",
            Program::KubectlPlugin => "kubectl-hops",
        }
    }

    /// The program an executable path names: `kubectl-hops` (a copy or a
    /// symlink of `kubehops` under that name) is the plugin, anything else
    /// is `default`.
    pub fn from_argv0(argv0: Option<&OsStr>, default: Program) -> Program {
        let stem = argv0.map(std::path::Path::new).and_then(|p| p.file_stem()).and_then(OsStr::to_str);
        match stem {
            Some("kubectl-hops") => Program::KubectlPlugin,
            Some("kubehops") => Program::Kubehops,
            _ => default,
        }
    }
}

// ------------------------------------------------------------ definitions
//
// clap is built without `wrap_help`, so help is never re-wrapped to the
// terminal and `docs/cli.md` is the same everywhere: the texts below are
// laid out by hand to fit 100 columns (a test checks), short help after a
// 38-column flag column, long help after a 10-column indent.

/// What the program's help says after the list of commands.
const ROOT_NOTES: &str = "Every command reads Kubernetes objects, YAML or JSON, from each -f FILE (a file, a directory,
or - for stdin): v1 Service, Node, Pod, Namespace, discovery.k8s.io/v1 EndpointSlice and
kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration. Other kinds are skipped with a warning.

Objects are taken as stored: a value two Services both hold (a cluster IP, a node port), or a
healthCheckNodePort the API server would not allow, is a warning on stderr, and the output shows
what kube-proxy and kubectl do with it; --strict refuses them. Fields that are missing, malformed
or out of range are errors (exit code 1); a wrong command line exits with 2.";

#[derive(Parser, Debug)]
#[command(
    name = "kubehops",
    version,
    about = "Reads Kubernetes objects and prints what the KubeHops model computes from them",
    long_about = "Reads Kubernetes objects and prints what the KubeHops model computes from them: a node's
kube-proxy rules (iptables mode, or nftables mode with `nft`), the path of one packet through
the iptables rules, kubectl's Service table and CoreDNS's answers.",
    subcommand_required = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    IptablesSave(IptablesSaveArgs),
    Nft(NftArgs),
    Trace(TraceArgs),
    Get(GetArgs),
    Dig(DigArgs),
    Completion(CompletionArgs),
}

/// Where the objects come from and how they are admitted; every command
/// that reads objects takes these.
#[derive(Args, Debug, Clone, PartialEq)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// A file or directory of objects (YAML or JSON), or - for stdin; repeatable
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        long_help = "A file or directory of objects (YAML or JSON), or - for stdin; repeatable. Reads
v1 Service, Node, Pod and Namespace, discovery.k8s.io/v1 EndpointSlice and
kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration, as `kubectl get -o yaml`
writes them (one object, a List, or a stream of documents); other kinds are skipped
with a warning"
    )]
    pub filename: Vec<String>,

    /// The API server's node port range [default: 30000-32767]
    #[arg(long, value_name = "FIRST-LAST", value_parser = Checked::new(port_range, &[]))]
    pub service_node_port_range: Option<PortRange>,

    /// Refuse stored values as the API server refuses them on create
    #[arg(
        long,
        long_help = "Refuse stored values as the API server refuses them on create: a cluster IP or
node port two Services both hold, or a healthCheckNodePort it would not allow. Without
--strict they are warnings on stderr, and the output shows what kube-proxy and kubectl do
with them"
    )]
    pub strict: bool,
}

/// Print a node's kube-proxy rules in iptables-save format
#[derive(Args, Debug, Clone, PartialEq)]
#[command(
    args_override_self = true,
    long_about = "Prints the filter and nat tables of NAME's kube-proxy in iptables-save format, each rule in
the argument order kube-proxy writes it. Without --node, the node is the hostnameOverride of
the KubeProxyConfiguration given."
)]
pub struct IptablesSaveArgs {
    #[command(flatten)]
    pub node: NodeArg,

    /// kube-proxy (the default), restore or kernel
    #[arg(
        long,
        value_name = "FORMAT",
        hide_possible_values = true,
        value_parser = Checked::new(format, &["kube-proxy", "restore", "kernel"]),
        long_help = "How to print the rules:
--format kube-proxy  (the default) the node's kube-proxy tables, each rule as
                     kube-proxy writes it: the jumps it inserts into the built-in
                     chains, then its own chains in the order it declares them
--format restore     what kube-proxy hands to `iptables-restore --noflush` in one
                     sync: its own chains only, -X for chains it deletes
--format kernel      what `iptables-save` on the node prints back, to diff against a
                     real node: addresses first with /32, strings quoted as iptables
                     quotes them, probabilities as the kernel stores them, user chains
                     sorted, and the KUBE-PROXY-CANARY chains kube-proxy creates in the
                     mangle, filter and nat tables"
    )]
    pub format: Option<Format>,

    #[command(flatten)]
    pub features: FeaturesArg,

    /// With --format restore: the objects of the last sync
    #[arg(
        long,
        value_name = "FILE",
        long_help = "With --format restore: the objects of the last sync kube-proxy applied on the
node, files or directories (repeatable, like -f). The payload is then a partial sync:
only the chains of Services that changed since, and -X for chains no longer used"
    )]
    pub previous: Vec<String>,

    /// With --previous: a full resync instead
    #[arg(
        long,
        long_help = "With --previous: a full resync instead (every chain, and -X for chains no longer
used)"
    )]
    pub full_sync: bool,

    #[command(flatten)]
    pub input: InputArgs,
}

/// Print a node's kube-proxy rules in nftables mode
#[derive(Args, Debug, Clone, PartialEq)]
#[command(
    args_override_self = true,
    long_about = "Prints the ip kube-proxy table that kube-proxy in nftables mode writes on NAME, whatever
mode the KubeProxyConfiguration given sets: its clusterCIDR, masqueradeAll and
nodePortAddresses apply. Without --node, the node is the config's hostnameOverride."
)]
pub struct NftArgs {
    #[command(flatten)]
    pub node: NodeArg,

    /// transaction (the default) or ruleset
    #[arg(
        long,
        value_name = "FORMAT",
        hide_possible_values = true,
        value_parser = Checked::new(nft_format, &["transaction", "ruleset"]),
        long_help = "How to print the rules:
--format transaction  (the default) what kube-proxy hands to `nft -f` on a fresh
                      node: add table, sets and maps, chains, rules, elements
--format ruleset      what `nft list table ip kube-proxy` on the node prints back,
                      to diff against a real node (nft 1.0's layout)"
    )]
    pub format: Option<NftFormat>,

    /// The Service range the API server allocates cluster IPs from
    #[arg(
        long,
        value_name = "CIDR",
        value_parser = Checked::new(|s| cidr(s, "--service-cidr"), &[]),
        long_help = "The Service range (the cluster's ServiceCIDR) the API server allocates cluster IPs
from. With it, traffic to an address inside it that no Service holds is dropped
(cluster-ips-check); without it that rule is left out"
    )]
    pub service_cidr: Option<Cidr>,

    #[command(flatten)]
    pub input: InputArgs,
}

/// `--node` of the commands that print a node's rules.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct NodeArg {
    /// The node [default: the config's hostnameOverride]
    #[arg(
        long,
        value_name = "NAME",
        long_help = "The node whose rules to print [default: the hostnameOverride of the
KubeProxyConfiguration given]"
    )]
    pub node: Option<String>,
}

/// `--iptables-features`, shared by iptables-save and trace.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct FeaturesArg {
    /// What the node can do [default: modern]
    #[arg(
        long = "iptables-features",
        value_name = "FEATURES",
        hide_possible_values = true,
        value_parser = Checked::new(features, &["modern", "upstream-test-fake", "none", "random-fully", "nfacct", "tcp-be-liberal"]),
        long_help = "What the node can do, which kube-proxy finds out when it starts: a profile, or
a comma-separated list of features (\"\" for none). Profiles:
  modern              random-fully,nfacct (the default)
  upstream-test-fake  nfacct: the node kube-proxy's own unit tests fake
  none                no optional feature
Features:
  random-fully        MASQUERADE --random-fully
  nfacct              kube-proxy could create its nfacct counters: the INVALID
                      drop and the localhost node ports count packets
  tcp-be-liberal      nf_conntrack_tcp_be_liberal is 1: no DROP of INVALID
                      packets (also what conntrack.tcpBeLiberal sets)"
    )]
    pub iptables_features: Option<NodeFeatures>,
}

/// Follow one packet through a node's rules
#[derive(Args, Debug, Clone, PartialEq)]
#[command(
    args_override_self = true,
    long_about = "Follows one packet (source port 40000) through NAME's rules: arriving at the node, or
sent by the node itself with --from-node. Prints the rules that matched, the verdict, every
endpoint it could reach and whether it is masqueraded; -o json prints {\"verdict\",
\"targets\", \"masquerade\"}. The rules are kube-proxy's in the mode the
KubeProxyConfiguration sets (iptables unless it says nftables), or in --proxy-mode: in
iptables mode its iptables-save lines, in nftables mode the ip kube-proxy table's chains
and rules, each verdict-map look-up followed by the element it found.

With --network vxlan it adds, for each packet that leaves NAME for a Pod on another node,
the VXLAN overlay flannel builds around it; with --handshake, the packets of the TCP
connection and the node's conntrack state after each. -o json then adds \"overlay\" and
\"handshake\"."
)]
pub struct TraceArgs {
    /// The node [default: the config's hostnameOverride]
    #[arg(
        long,
        value_name = "NAME",
        long_help = "The node the packet is at [default: the hostnameOverride of the
KubeProxyConfiguration given]"
    )]
    pub node: Option<String>,

    /// The packet's source address (required)
    #[arg(long, value_name = "IP", value_parser = Checked::new(|s| ipv4(s, "--src"), &[]))]
    pub src: Option<Ipv4Addr>,

    /// The packet's destination address (required)
    #[arg(long, value_name = "IP", value_parser = Checked::new(|s| ipv4(s, "--dst"), &[]))]
    pub dst: Option<Ipv4Addr>,

    /// The packet's destination port (required)
    #[arg(long, value_name = "PORT", value_parser = Checked::new(dport, &[]))]
    pub dport: Option<u16>,

    /// tcp (the default), udp or sctp
    #[arg(long, value_name = "PROTO", hide_possible_values = true, value_parser = Checked::new(protocol, &["tcp", "udp", "sctp"]))]
    pub proto: Option<Protocol>,

    /// Sent by the node itself, not arriving at it
    #[arg(
        long,
        long_help = "The packet is sent by the node itself (it starts in OUTPUT), not arriving at it
(PREROUTING)"
    )]
    pub from_node: bool,

    /// iptables or nftables [default: the config's mode]
    #[arg(
        long,
        value_name = "MODE",
        hide_possible_values = true,
        value_parser = Checked::new(proxy_mode, &["iptables", "nftables"]),
        long_help = "Which of kube-proxy's modes writes the rules: iptables or nftables [default: the
mode of the KubeProxyConfiguration given, else iptables, as kube-proxy has it]. IPVS
mode is not modelled"
    )]
    pub proxy_mode: Option<ProxyMode>,

    /// The Service range (nftables: drops unallocated cluster IPs)
    #[arg(
        long,
        value_name = "CIDR",
        value_parser = Checked::new(|s| cidr(s, "--service-cidr"), &[]),
        long_help = "The Service range (the cluster's ServiceCIDR). In nftables mode a new connection
to an address inside it that no Service holds is dropped (cluster-ips-check); without it
that rule is left out. The iptables mode has no such rule"
    )]
    pub service_cidr: Option<Cidr>,

    #[command(flatten)]
    pub features: FeaturesArg,

    /// routed (the default) or vxlan
    #[arg(
        long,
        value_name = "NETWORK",
        hide_possible_values = true,
        value_parser = Checked::new(network, &["routed", "vxlan"]),
        long_help = "How Pod traffic crosses between nodes:
--network routed  (the default) each node routes the other nodes' Pod ranges via
                  their addresses; nothing is added to the output
--network vxlan   flannel's VXLAN backend with its defaults. For each packet that
                  leaves NAME (after the rules' DNAT and SNAT) for a Pod in another
                  node's spec.podCIDR, the output adds the outer header (node
                  InternalIP to node InternalIP, UDP source port chosen by the kernel
                  in 32768-60998, destination port 8472, VNI 1), the inner packet
                  carried unchanged, flannel.1 on NAME wrapping it, the node owning
                  the destination's Pod range unwrapping it, and the cost: 50 bytes
                  of headers, so flannel.1's MTU is 1450. A Pod on NAME itself is
                  not wrapped. A masqueraded packet leaves from the address of the
                  device it goes out of (flannel.1's, the first of NAME's Pod range)"
    )]
    pub network: Option<PodNetwork>,

    /// The TCP connection's packets and conntrack states
    #[arg(
        long,
        long_help = "TCP only. Instead of one packet, the connection's real packets, as a short
request and response closed by the client: SYN, SYN-ACK, ACK, request, response, FIN,
ACK, FIN, ACK. Each with its direction, its flags (as tcpdump writes them) and NAME's
conntrack entry after it: the state as the kernel names it (SYN_SENT ... TIME_WAIT), its
timeout with kube-proxy's conntrack settings (established 24h, close-wait 1h) and the
[UNREPLIED] and [ASSURED] marks. The rules decide the SYN only; every later packet
matches the conntrack entry. With several endpoints, the connection goes to the one
the matched rules lead to. With --network vxlan each packet that crosses between
nodes, either way, is shown wrapped. UDP and SCTP are refused: a UDP query has one
answer, which the trace without --handshake shows"
    )]
    pub handshake: bool,

    /// json: {"verdict", "targets", "masquerade"}
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FORMAT",
        hide_possible_values = true,
        value_parser = Checked::new(trace_output, &["json"]),
        long_help = "json: {\"verdict\", \"targets\", \"masquerade\"}, and only when they apply: \"mode\" in
nftables mode, \"overlay\" with --network vxlan (the device, VNI, UDP port, MTU and
overhead, and per packet leaving the node its \"delivery\", \"outer\" header and the node
it is \"unwrapped_at\"), \"handshake\" with --handshake (per packet its \"direction\",
\"flags\", conntrack \"state\", \"timeout\" in seconds, \"assured\", \"unreplied\" and
\"decided_by\": rules or conntrack)"
    )]
    pub json: Option<bool>,

    #[command(flatten)]
    pub input: InputArgs,
}

/// Print kubectl's table of Services
#[derive(Args, Debug, Clone, PartialEq)]
#[command(
    args_override_self = true,
    long_about = "Prints kubectl's table of the Services in NAMESPACE (default \"default\") or in all
namespaces, byte for byte as `kubectl get svc` prints it. AGE is measured to --now (default:
the clock) and rounded as kubectl rounds it."
)]
pub struct GetArgs {
    /// svc (or service, services)
    #[arg(value_name = "TYPE", hide_possible_values = true, value_parser = Checked::new(resource, &["svc", "service", "services"]))]
    pub resource: Option<Resource>,

    /// kubehops lists whole namespaces; a name after TYPE is refused.
    #[arg(hide = true)]
    pub extra: Vec<String>,

    /// The namespace [default: default]
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// All namespaces, with a NAMESPACE column
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// wide: add the SELECTOR column
    #[arg(short = 'o', long = "output", value_name = "FORMAT", hide_possible_values = true, value_parser = Checked::new(get_output, &["wide"]))]
    pub wide: Option<bool>,

    /// What AGE is measured to [default: the clock]
    #[arg(
        long,
        value_name = "RFC3339",
        value_parser = Checked::new(now, &[]),
        long_help = "The time AGE is measured to, in RFC 3339 as Kubernetes writes it
(2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00) [default: the clock]"
    )]
    pub now: Option<i64>,

    #[command(flatten)]
    pub input: InputArgs,
}

/// Print CoreDNS's answer for a name
#[derive(Args, Debug, Clone, PartialEq)]
#[command(
    args_override_self = true,
    long_about = "Prints CoreDNS's answer (A, SRV or CNAME) for NAME in the cluster domain cluster.local,
as a Pod in NAMESPACE resolves it: short names go through the Pod's search path. An endpoint
is named by its hostname (a StatefulSet's db-0.db), else by its dashed address; the answer
keeps the question's case."
)]
pub struct DigArgs {
    /// The name to look up
    #[arg(value_name = "NAME")]
    pub name: Option<String>,

    /// A (the default), SRV or CNAME
    #[arg(value_name = "TYPE", hide_possible_values = true, value_parser = Checked::new(qtype, &["A", "SRV", "CNAME"]))]
    pub qtype: Option<QType>,

    /// The namespace of the Pod that asks [default: default]
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    #[command(flatten)]
    pub input: InputArgs,
}

/// Print a shell completion script
#[derive(Args, Debug, Clone, PartialEq)]
pub struct CompletionArgs {
    /// bash, zsh, fish or powershell
    #[arg(value_name = "SHELL", hide_possible_values = true, value_parser = Checked::new(shell, &["bash", "zsh", "fish", "powershell"]))]
    pub shell: Option<clap_complete::Shell>,
}

/// What `completion --help` says, naming the program as it was run.
fn completion_about(program: Program) -> String {
    let (p, b) = (program.name(), program.binary());
    let plugin_note = match program {
        Program::Kubehops => String::new(),
        Program::KubectlPlugin => format!(
            "\n\nThe scripts complete `{b}` run by that name; `kubectl hops` itself is completed by
kubectl, which does not read them."
        ),
    };
    format!(
        "Prints a completion script for SHELL, as `kubectl completion` does. Load it into the
current shell, or install it where the shell looks for completions:
  source <({p} completion bash)
  {p} completion zsh > \"${{fpath[1]}}/_{b}\"
  {p} completion fish > ~/.config/fish/completions/{b}.fish
  {p} completion powershell | Out-String | Invoke-Expression{plugin_note}"
    )
}

/// The resource types `get` lists: Services only, as kubehops models no
/// other kind's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Services,
}

/// The renderings of `nft --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NftFormat {
    Transaction,
    Ruleset,
}

/// The renderings of `iptables-save --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    KubeProxy,
    Restore,
    Kernel,
}

// ------------------------------------------------------------ values

/// A value parser from a function that returns the whole message for a
/// wrong value, and the values completion scripts offer. clap's own value
/// errors would say `invalid value 'x' for '--src <IP>'`; these keep
/// kubectl's `invalid argument "x" for "--src": …`.
#[derive(Clone)]
pub struct Checked<T> {
    parse: fn(&str) -> Result<T, String>,
    values: &'static [&'static str],
}

impl<T> Checked<T> {
    pub fn new(parse: fn(&str) -> Result<T, String>, values: &'static [&'static str]) -> Checked<T> {
        Checked { parse, values }
    }
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Checked<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &clap::Command, _arg: Option<&clap::Arg>, value: &OsStr) -> Result<T, clap::Error> {
        (self.parse)(&value.to_string_lossy()).map_err(|message| {
            let mut e = clap::Error::new(ErrorKind::ValueValidation).with_cmd(cmd);
            e.insert(ContextKind::Custom, ContextValue::String(message));
            e
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        if self.values.is_empty() {
            return None;
        }
        Some(Box::new(self.values.iter().map(|v| PossibleValue::new(*v))))
    }
}

fn port_range(s: &str) -> Result<PortRange, String> {
    PortRange::parse(s).ok_or_else(|| format!("invalid argument \"{s}\" for \"--service-node-port-range\": want FIRST-LAST, such as 30000-32767"))
}

fn format(s: &str) -> Result<Format, String> {
    match s {
        "kube-proxy" => Ok(Format::KubeProxy),
        "restore" => Ok(Format::Restore),
        "kernel" => Ok(Format::Kernel),
        other => Err(format!("invalid argument \"{other}\" for \"--format\": want kube-proxy, restore or kernel")),
    }
}

fn nft_format(s: &str) -> Result<NftFormat, String> {
    match s {
        "transaction" => Ok(NftFormat::Transaction),
        "ruleset" => Ok(NftFormat::Ruleset),
        other => Err(format!("invalid argument \"{other}\" for \"--format\": want transaction or ruleset")),
    }
}

/// kube-proxy's `--proxy-mode` values that are modelled.
fn proxy_mode(s: &str) -> Result<ProxyMode, String> {
    match s {
        "iptables" => Ok(ProxyMode::Iptables),
        "nftables" => Ok(ProxyMode::Nftables),
        "ipvs" => Err("invalid argument \"ipvs\" for \"--proxy-mode\": kubehops models the iptables and nftables modes; IPVS mode, deprecated since Kubernetes 1.35, is not modelled".into()),
        other => Err(format!("invalid argument \"{other}\" for \"--proxy-mode\": want iptables or nftables")),
    }
}

fn cidr(s: &str, flag: &str) -> Result<Cidr, String> {
    s.parse::<Cidr>().map_err(|_| format!("invalid argument \"{s}\" for \"{flag}\": want an IPv4 CIDR such as 10.96.0.0/12"))
}

/// What `--iptables-features` says the node can do: a profile or a list.
fn features(v: &str) -> Result<NodeFeatures, String> {
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

fn ipv4(s: &str, flag: &str) -> Result<Ipv4Addr, String> {
    s.parse().map_err(|_| format!("invalid argument \"{s}\" for \"{flag}\": want an IPv4 address"))
}

fn dport(s: &str) -> Result<u16, String> {
    s.parse::<u16>().ok().filter(|n| *n != 0).ok_or_else(|| format!("invalid argument \"{s}\" for \"--dport\": want a port from 1 to 65535"))
}

fn protocol(s: &str) -> Result<Protocol, String> {
    Protocol::parse(s).ok_or_else(|| format!("invalid argument \"{s}\" for \"--proto\": want tcp, udp or sctp"))
}

/// trace's `--network`: the Pod network between nodes.
fn network(s: &str) -> Result<PodNetwork, String> {
    match s {
        "routed" => Ok(PodNetwork::Routed),
        "vxlan" => Ok(PodNetwork::Vxlan(VxlanConfig::default())),
        other => Err(format!("invalid argument \"{other}\" for \"--network\": want routed or vxlan (flannel's VXLAN backend)")),
    }
}

/// trace's `-o`: `json` is the only format besides the default text.
fn trace_output(s: &str) -> Result<bool, String> {
    match s {
        "json" => Ok(true),
        other => Err(format!("unsupported output format \"{other}\": trace prints text, or JSON with -o json")),
    }
}

/// get's `-o`: `wide` is the only format besides the default table.
fn get_output(s: &str) -> Result<bool, String> {
    match s {
        "wide" => Ok(true),
        other => Err(format!("unsupported output format \"{other}\": use -o wide or leave -o out")),
    }
}

fn resource(s: &str) -> Result<Resource, String> {
    match s {
        "svc" | "service" | "services" => Ok(Resource::Services),
        other => Err(format!("unsupported resource type \"{other}\": kubehops get lists services (svc)")),
    }
}

/// `--now`, in seconds since the Unix epoch.
fn now(s: &str) -> Result<i64, String> {
    crate::time::parse(s).ok_or_else(|| format!("invalid argument \"{s}\" for \"--now\": want an RFC 3339 time such as 2024-05-01T12:00:00Z"))
}

fn qtype(s: &str) -> Result<QType, String> {
    QType::parse(s).ok_or_else(|| format!("unsupported query type \"{s}\": kubehops answers A, SRV and CNAME"))
}

fn shell(s: &str) -> Result<clap_complete::Shell, String> {
    use clap_complete::Shell;
    match s {
        "bash" => Ok(Shell::Bash),
        "zsh" => Ok(Shell::Zsh),
        "fish" => Ok(Shell::Fish),
        "powershell" => Ok(Shell::PowerShell),
        other => Err(format!("unsupported shell type \"{other}\": want bash, zsh, fish or powershell")),
    }
}

// ------------------------------------------------------------ usage

/// Every command's synopsis, after the program's name.
const SYNOPSES: [(&str, &str); 6] = [
    (
        "iptables-save",
        "iptables-save [--node NAME] [--format kube-proxy|restore|kernel] [--iptables-features FEATURES] [--previous FILE... [--full-sync]] [--strict] -f FILE...",
    ),
    ("nft", "nft [--node NAME] [--format transaction|ruleset] [--service-cidr CIDR] [--strict] -f FILE..."),
    (
        "trace",
        "trace [--node NAME] --src IP --dst IP --dport PORT [--proto tcp|udp|sctp] [--from-node] [--proxy-mode iptables|nftables] [--service-cidr CIDR] [--iptables-features FEATURES] [--network routed|vxlan] [--handshake] [-o json] [--strict] -f FILE...",
    ),
    ("get", "get svc [-n NAMESPACE | -A] [-o wide] [--now RFC3339] [--strict] -f FILE..."),
    ("dig", "dig NAME [A|SRV|CNAME] [-n NAMESPACE] [--strict] -f FILE..."),
    ("completion", "completion bash|zsh|fish|powershell"),
];

/// The help layout: usage first, as kubehops has always printed it.
const HELP_TEMPLATE: &str = "{usage-heading} {usage}\n\n{about-with-newline}\n{all-args}{after-help}";

fn synopsis(program: Program, command: &str) -> Option<String> {
    SYNOPSES.iter().find(|(c, _)| *c == command).map(|(_, s)| format!("{} {s}", program.name()))
}

/// The whole command line definition, naming `program`.
pub fn command(program: Program) -> clap::Command {
    let all: Vec<String> = SYNOPSES.iter().map(|(c, _)| synopsis(program, c).unwrap_or_default()).collect();
    let indent = " ".repeat("Usage: ".len());
    let root_usage = format!("{}\n{indent}{} --version", all.join(&format!("\n{indent}")), program.name());
    Cli::command()
        .name(program.binary())
        .bin_name(program.name())
        .display_name(program.name())
        .color(clap::ColorChoice::Never)
        .override_usage(root_usage)
        .help_template(HELP_TEMPLATE)
        .after_help(format!("{ROOT_NOTES}\n\nRun '{} COMMAND --help' for a command's flags.", program.name()))
        .mut_subcommand("completion", |c| c.long_about(completion_about(program)))
        .mut_subcommands(|sub| {
            let usage = synopsis(program, sub.get_name());
            let sub = sub.help_template(HELP_TEMPLATE);
            match usage {
                Some(u) => sub.override_usage(u),
                None => sub,
            }
        })
}

/// A command's usage as a wrong command line shows it: the synopsis and
/// where to read more (kubectl's "See 'kubectl get -h' for help").
pub fn usage(program: Program, command: Option<&str>) -> String {
    let p = program.name();
    match command.and_then(|c| synopsis(program, c).map(|s| (c, s))) {
        Some((c, s)) => format!("Usage: {s}\nRun '{p} {c} --help' for more."),
        None => {
            let lines: Vec<String> = SYNOPSES.iter().map(|(c, _)| format!("  {}", synopsis(program, c).unwrap_or_default())).collect();
            format!("Usage:\n{}\nRun '{p} --help' for more.", lines.join("\n"))
        }
    }
}

/// What reading a command line gives when it does not name work to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotRun {
    /// `--help`, `help` or `--version`: print this on stdout, exit 0.
    Print(String),
    /// A wrong command line: the message, and the usage of the command it
    /// was for (exit code 2).
    Usage { message: String, usage: String },
}

/// Reads `argv` (without the program name).
pub fn parse(program: Program, argv: &[String]) -> Result<Command, NotRun> {
    let args = std::iter::once(program.binary().to_string()).chain(argv.iter().cloned());
    match command(program).try_get_matches_from(args) {
        Ok(m) => {
            use clap::FromArgMatches;
            Cli::from_arg_matches(&m).map(|c| c.command).map_err(|e| wrong_line(program, argv, &e))
        }
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => Err(NotRun::Print(e.render().to_string())),
        Err(e) => Err(wrong_line(program, argv, &e)),
    }
}

/// The command an argument list is for, when its first word names one.
fn command_named(argv: &[String]) -> Option<&str> {
    argv.first().map(String::as_str).filter(|c| synopsis(Program::Kubehops, c).is_some())
}

fn wrong_line(program: Program, argv: &[String], e: &clap::Error) -> NotRun {
    let command = command_named(argv);
    NotRun::Usage { message: message(argv, e), usage: usage(program, command) }
}

fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => v.first().cloned(),
        _ => None,
    }
}

/// The first spelling of an argument as clap shows it (`--node <NAME>`,
/// `-f, --filename <FILE>`, `[TYPE]`): its long name if it has one.
fn flag_name(shown: &str) -> String {
    let words: Vec<&str> = shown.split([',', ' ']).filter(|w| !w.is_empty()).collect();
    words.iter().find(|w| w.starts_with("--")).or(words.first()).map(|w| w.split('=').next().unwrap_or(w).to_string()).unwrap_or_default()
}

/// A wrong command line in kubectl's (pflag's) words.
fn message(argv: &[String], e: &clap::Error) -> String {
    let arg = context(e, ContextKind::InvalidArg).unwrap_or_default();
    let base = match e.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => "no command given".to_string(),
        ErrorKind::InvalidSubcommand => format!("unknown command \"{}\"", context(e, ContextKind::InvalidSubcommand).unwrap_or_default()),
        ErrorKind::UnknownArgument if !arg.starts_with('-') => format!("unexpected argument \"{arg}\""),
        ErrorKind::UnknownArgument if arg.starts_with("--") => format!("unknown flag: {}", arg.split('=').next().unwrap_or(&arg)),
        ErrorKind::UnknownArgument => unknown_short(argv, &arg),
        ErrorKind::ValueValidation => context(e, ContextKind::Custom).unwrap_or_else(|| plain(e)),
        ErrorKind::InvalidValue if context(e, ContextKind::InvalidValue).unwrap_or_default().is_empty() => {
            format!("flag needs an argument: {}", spelling(argv, &arg))
        }
        ErrorKind::TooManyValues | ErrorKind::NoEquals => format!("flag {} takes no value", flag_name(&arg)),
        _ => plain(e),
    };
    match suggestion(e) {
        Some(s) => format!("{base}\n\nDid you mean this?\n\t{s}"),
        None => base,
    }
}

/// `-Ax` where `-x` is unknown: pflag's `unknown shorthand flag: 'x' in
/// -Ax`. clap reads `-A=yes` as `-A` then an unknown `-=`: that is a value
/// given to a switch.
fn unknown_short(argv: &[String], shown: &str) -> String {
    let letter = shown.trim_start_matches('-').chars().next().unwrap_or('-');
    let cluster = argv.iter().take_while(|a| *a != "--").find(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(letter));
    let Some(cluster) = cluster else { return format!("unknown shorthand flag: '{letter}' in -{letter}") };
    let switch = cluster.split_once('=').and_then(|(flags, _)| flags.chars().last());
    match switch.filter(|_| letter == '=').and_then(|c| long_of(argv, c)) {
        Some(long) => format!("flag --{long} takes no value"),
        None => format!("unknown shorthand flag: '{letter}' in {cluster}"),
    }
}

/// The long name of the command's one-letter flag `-c`.
fn long_of(argv: &[String], c: char) -> Option<String> {
    let root = command(Program::Kubehops);
    let sub = root.find_subcommand(command_named(argv)?)?;
    let long = sub.get_arguments().find(|a| a.get_short() == Some(c))?.get_long();
    long.map(String::from)
}

/// How the command line spelled a flag that lacks its value: `-f` or
/// `--filename`, whichever it used last. clap names the flag by its long
/// name only, so its short one is looked up in the definitions.
fn spelling(argv: &[String], shown: &str) -> String {
    let long = flag_name(shown);
    let short = command_named(argv).and_then(|name| {
        let root = command(Program::Kubehops);
        let arg = root.find_subcommand(name)?.get_arguments().find(|a| a.get_long().is_some_and(|l| format!("--{l}") == long))?.get_short();
        arg.map(|c| format!("-{c}"))
    });
    argv.iter().rev().find(|a| **a == long || Some(a.as_str()) == short.as_deref()).cloned().unwrap_or(long)
}

/// A command or flag clap finds close to a mistyped one.
fn suggestion(e: &clap::Error) -> Option<String> {
    context(e, ContextKind::SuggestedSubcommand).or_else(|| context(e, ContextKind::SuggestedArg))
}

/// clap's own message, for the few mistakes that have no kubectl wording:
/// its first line without the `error: ` prefix.
fn plain(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("");
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

// ------------------------------------------------------------ reference

/// The completion script for `shell`, for the program's executable.
pub fn completion(program: Program, shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command(program), program.binary(), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `docs/cli.md`: every command's full `--help`, as the binary prints it.
pub fn reference(program: Program) -> String {
    let mut root = command(program);
    root.build();
    let mut s = format!(
        "# `{p}` command-line reference\n\n\
         Generated from the CLI's own definitions (`crates/kubehops-cli/src/args.rs`): this is what\n\
         `{p} --help` and `{p} COMMAND --help` print. `cargo test -p kubehops-cli` fails when it\n\
         is out of date; `UPDATE_EXPECT=1 cargo test -p kubehops-cli --test reference` rewrites it.\n",
        p = program.name()
    );
    s.push_str(&format!("\n## {}\n\n```text\n{}```\n", program.name(), root.render_long_help()));
    for sub in root.get_subcommands_mut().filter(|c| c.get_name() != "help") {
        let title = format!("{} {}", program.name(), sub.get_name());
        s.push_str(&format!("\n## {title}\n\n```text\n{}```\n", sub.render_long_help()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn get(v: &[&str]) -> GetArgs {
        match parse(Program::Kubehops, &strings(v)) {
            Ok(Command::Get(g)) => g,
            other => panic!("{v:?}: {other:?}"),
        }
    }

    fn wrong(v: &[&str]) -> String {
        match parse(Program::Kubehops, &strings(v)) {
            Err(NotRun::Usage { message, .. }) => message,
            other => panic!("{v:?}: {other:?}"),
        }
    }

    #[test]
    fn values_switches_and_positionals() {
        let g = get(&["get", "svc", "-f", "a.yaml", "-fb.yaml", "-f=c.yaml", "--filename=d.yaml", "--filename", "e.yaml", "-owide", "-A", "-n=prod", "-f", "-"]);
        assert_eq!(g.resource, Some(Resource::Services));
        assert_eq!(g.input.filename, ["a.yaml", "b.yaml", "c.yaml", "d.yaml", "e.yaml", "-"]);
        assert_eq!(g.wide, Some(true));
        assert_eq!(g.namespace.as_deref(), Some("prod"));
        assert!(g.all_namespaces);
        assert!(!g.input.strict);
        // Later flags win, as in kubectl; switches may repeat.
        let g = get(&["get", "svc", "-n", "a", "--namespace", "b", "-A", "-A", "--now=2024-05-01T12:00:00Z", "--now", "1970-01-01T00:01:00Z"]);
        assert_eq!((g.namespace.as_deref(), g.now), (Some("b"), Some(60)));
        // `--` ends the flags.
        assert_eq!(get(&["get", "--", "svc", "-A"]).extra, ["-A"]);
    }

    #[test]
    fn errors_name_the_argument() {
        assert_eq!(wrong(&["get", "--zzz"]), "unknown flag: --zzz");
        assert_eq!(wrong(&["get", "--zzz=3"]), "unknown flag: --zzz");
        assert_eq!(wrong(&["get", "-f"]), "flag needs an argument: -f");
        assert_eq!(wrong(&["get", "svc", "--filename"]), "flag needs an argument: --filename");
        assert_eq!(wrong(&["get", "-A=yes"]), "flag --all-namespaces takes no value");
        assert_eq!(wrong(&["get", "--strict=true"]), "flag --strict takes no value");
        assert_eq!(wrong(&["get", "-Ax"]), "unknown shorthand flag: 'x' in -Ax");
        assert_eq!(wrong(&["iptables-save", "extra"]), "unexpected argument \"extra\"");
        assert_eq!(wrong(&["trace", "--src", "1.2.3"]), "invalid argument \"1.2.3\" for \"--src\": want an IPv4 address");
        assert_eq!(wrong(&[]), "no command given");
        assert_eq!(wrong(&["trac"]), "unknown command \"trac\"\n\nDid you mean this?\n\ttrace");
        assert_eq!(wrong(&["get", "--namespce", "x"]), "unknown flag: --namespce\n\nDid you mean this?\n\t--namespace");
    }

    #[test]
    fn the_plugin_names_itself_kubectl_hops() {
        assert_eq!(usage(Program::KubectlPlugin, Some("dig")).lines().next(), Some("Usage: kubectl hops dig NAME [A|SRV|CNAME] [-n NAMESPACE] [--strict] -f FILE..."));
        let Err(NotRun::Print(help)) = parse(Program::KubectlPlugin, &strings(&["trace", "--help"])) else { panic!("help") };
        assert!(help.starts_with("Usage: kubectl hops trace [--node NAME]"), "{help}");
        assert!(!help.contains("kubehops"), "{help}");
        assert_eq!(Program::from_argv0(Some(OsStr::new("/usr/local/bin/kubectl-hops")), Program::Kubehops), Program::KubectlPlugin);
        assert_eq!(Program::from_argv0(Some(OsStr::new("./target/debug/kubehops")), Program::KubectlPlugin), Program::Kubehops);
        assert_eq!(Program::from_argv0(None, Program::KubectlPlugin), Program::KubectlPlugin);
    }

    #[test]
    fn definitions_are_consistent() {
        command(Program::Kubehops).debug_assert();
        for sub in command(Program::Kubehops).get_subcommands().filter(|c| c.get_name() != "help") {
            assert!(synopsis(Program::Kubehops, sub.get_name()).is_some(), "{} has a synopsis", sub.get_name());
        }
    }
}
