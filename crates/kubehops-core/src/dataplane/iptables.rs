//! iptables rules as data: tables, chains, rules, matches and targets.
//!
//! A [`Rule`] keeps its matches in the order kube-proxy writes them, so
//! [`Rule::render`] produces the same `-A` line `iptables-save` prints.
//! Text exists only at that edge; the netfilter walk reads the typed form.

// What a rule shows is shared by both proxy modes; the views read it.
pub use crate::dataplane::rules::{Purpose, RuleLine};
use crate::dataplane::rules::{Field, RuleTable};
use crate::net::{Cidr, Protocol, SockAddr};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TableName {
    Filter,
    Nat,
    /// kube-proxy writes no rules here; only its canary chain lives in it.
    Mangle,
}

impl TableName {
    pub fn as_str(self) -> &'static str {
        match self {
            TableName::Filter => "filter",
            TableName::Nat => "nat",
            TableName::Mangle => "mangle",
        }
    }

    /// The built-in chains of the table, in the order iptables-save lists them.
    pub fn builtin_chains(self) -> &'static [&'static str] {
        match self {
            TableName::Filter => &["INPUT", "FORWARD", "OUTPUT"],
            TableName::Nat => &["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
            TableName::Mangle => &["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Match {
    /// `-m comment --comment TEXT`: no effect on the packet.
    Comment(String),
    /// `-m tcp -p tcp`.
    Protocol(Protocol),
    /// `-s CIDR`, or `! -s CIDR` when negated.
    Source { cidr: Cidr, negate: bool },
    /// `-d CIDR`, or `! -d CIDR` when negated.
    Destination { cidr: Cidr, negate: bool },
    /// `--dport N` (follows a protocol match).
    DestinationPort(u16),
    /// `-i NAME`, or `! -i NAME`: the interface the packet came in on
    /// (none for a packet the machine sends itself). Docker writes these;
    /// kube-proxy does not.
    InInterface { name: String, negate: bool },
    /// `-o NAME`, or `! -o NAME`: the interface routing sends it out of.
    OutInterface { name: String, negate: bool },
    /// `-m addrtype --dst-type LOCAL`: the destination is an address of this node.
    DstTypeLocal { negate: bool },
    /// `-m mark --mark VALUE/MASK`.
    Mark { value: u32, mask: u32, negate: bool },
    /// `-m statistic --mode random --probability P`.
    Probability(f64),
    /// `-m conntrack --ctstate A,B`, or `! --ctstate` when negated.
    CtState { states: Vec<CtState>, negate: bool },
    /// `-m addrtype --src-type LOCAL`: the source is an address of this node.
    SrcTypeLocal { negate: bool },
    /// `-m recent --name NAME --set`: remember the source address.
    RecentSet { name: String },
    /// `-m recent --name NAME --rcheck --seconds S --reap`: the source was
    /// remembered within S seconds.
    RecentCheck { name: String, seconds: u32 },
    /// `-m nfacct --nfacct-name NAME`: counts the packet in the named
    /// nfacct object and always matches. The object must exist before the
    /// rule is loaded (kube-proxy creates its counters first).
    Nfacct(String),
}

/// A connection tracking state, as `--ctstate` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CtState {
    New,
    Related,
    Established,
    Invalid,
    /// The connection's destination was rewritten (a virtual state).
    Dnat,
}

impl CtState {
    pub fn as_str(self) -> &'static str {
        match self {
            CtState::New => "NEW",
            CtState::Related => "RELATED",
            CtState::Established => "ESTABLISHED",
            CtState::Invalid => "INVALID",
            CtState::Dnat => "DNAT",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Target {
    Jump(String),
    Return,
    Accept,
    Drop,
    Reject,
    /// `-j DNAT --to-destination IP:PORT`.
    Dnat(SockAddr),
    /// `-j MASQUERADE`, with `--random-fully` when the node's iptables
    /// supports it.
    Masquerade { random_fully: bool },
    /// `-j MARK --or-mark V`.
    OrMark(u32),
    /// `-j MARK --xor-mark V`.
    XorMark(u32),
    /// No `-j`: the rule only counts packets (kube-proxy uses one as a
    /// marker at the end of a KUBE-FW chain).
    Nothing,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub matches: Vec<Match>,
    pub target: Target,
    /// Not rendered; see [`Purpose`]. (Fields are always written, `None`
    /// too: the page's worker sends scenarios, whose snapshots hold rules,
    /// in postcard, where a field left out would shift the ones after it.)
    #[serde(default)]
    pub purpose: Option<Purpose>,
    /// The service port kube-proxy wrote it for (`default/web`), if any.
    #[serde(default)]
    pub owner: Option<String>,
}

impl Rule {
    pub fn new(matches: Vec<Match>, target: Target) -> Rule {
        Rule { matches, target, purpose: None, owner: None }
    }

    /// The same rule, tagged with what it is for.
    pub fn for_(mut self, purpose: Purpose) -> Rule {
        self.purpose = Some(purpose);
        self
    }

    /// The rule as `iptables-save` prints it, after `-A CHAIN`.
    pub fn render(&self, chain: &str) -> String {
        let mut s = format!("-A {chain}");
        for m in &self.matches {
            match m {
                Match::DstTypeLocal { .. } | Match::SrcTypeLocal { .. } | Match::Mark { .. } | Match::CtState { .. } => shared_module(m, &mut s),
                Match::Comment(c) => {
                    let _ = write!(s, " -m comment --comment {}", quote(c));
                }
                Match::Protocol(p) => {
                    let _ = write!(s, " -m {0} -p {0}", p.lower());
                }
                Match::Source { cidr, negate } => {
                    let _ = write!(s, "{} -s {}", neg(*negate), addr(cidr));
                }
                Match::Destination { cidr, negate } => {
                    let _ = write!(s, "{} -d {}", neg(*negate), addr(cidr));
                }
                Match::DestinationPort(p) => {
                    let _ = write!(s, " --dport {p}");
                }
                Match::InInterface { name, negate } => {
                    let _ = write!(s, "{} -i {name}", neg(*negate));
                }
                Match::OutInterface { name, negate } => {
                    let _ = write!(s, "{} -o {name}", neg(*negate));
                }
                Match::Probability(p) => {
                    let _ = write!(s, " -m statistic --mode random --probability {}", crate::decimal::fixed(*p, 10));
                }
                Match::RecentSet { name } => {
                    let _ = write!(s, " -m recent --name {name} --set");
                }
                Match::RecentCheck { name, seconds } => {
                    let _ = write!(s, " -m recent --name {name} --rcheck --seconds {seconds} --reap");
                }
                Match::Nfacct(name) => {
                    let _ = write!(s, " -m nfacct --nfacct-name {name}");
                }
            }
        }
        match &self.target {
            Target::Jump(c) => {
                let _ = write!(s, " -j {c}");
            }
            Target::Return => s.push_str(" -j RETURN"),
            Target::Accept => s.push_str(" -j ACCEPT"),
            Target::Drop => s.push_str(" -j DROP"),
            Target::Reject => s.push_str(" -j REJECT"),
            Target::Dnat(to) => {
                let _ = write!(s, " -j DNAT --to-destination {to}");
            }
            Target::Masquerade { random_fully } => s.push_str(if *random_fully { " -j MASQUERADE --random-fully" } else { " -j MASQUERADE" }),
            Target::OrMark(v) => {
                let _ = write!(s, " -j MARK --or-mark {v:#x}");
            }
            Target::XorMark(v) => {
                let _ = write!(s, " -j MARK --xor-mark {v:#x}");
            }
            Target::Nothing => {}
        }
        s
    }

    /// The rule as the kernel's `iptables-save` prints it back: addresses
    /// and the protocol first (`-s`, `-d` with their prefix length, `-p`),
    /// then each match module in order, strings quoted as iptables quotes
    /// them, probabilities as the kernel stores them, and MARK targets as
    /// `--set-xmark`.
    pub fn render_kernel(&self, chain: &str) -> String {
        let mut s = format!("-A {chain}");
        for m in &self.matches {
            if let Match::Source { cidr, negate } = m {
                let _ = write!(s, "{} -s {cidr}", neg(*negate));
            }
        }
        for m in &self.matches {
            if let Match::Destination { cidr, negate } = m {
                let _ = write!(s, "{} -d {cidr}", neg(*negate));
            }
        }
        // Interfaces come after the addresses and before the protocol.
        for m in &self.matches {
            if let Match::InInterface { name, negate } = m {
                let _ = write!(s, "{} -i {name}", neg(*negate));
            }
        }
        for m in &self.matches {
            if let Match::OutInterface { name, negate } = m {
                let _ = write!(s, "{} -o {name}", neg(*negate));
            }
        }
        let dport = self.matches.iter().find_map(|m| if let Match::DestinationPort(p) = m { Some(*p) } else { None });
        if let Some(p) = self.matches.iter().find_map(|m| if let Match::Protocol(p) = m { Some(*p) } else { None }) {
            let _ = write!(s, " -p {}", p.lower());
        }
        for m in &self.matches {
            match m {
                Match::Source { .. } | Match::Destination { .. } | Match::DestinationPort(_) | Match::InInterface { .. } | Match::OutInterface { .. } => {}
                Match::DstTypeLocal { .. } | Match::SrcTypeLocal { .. } | Match::Mark { .. } | Match::CtState { .. } => shared_module(m, &mut s),
                Match::Comment(c) => {
                    let _ = write!(s, " -m comment --comment {}", save_string(c));
                }
                Match::Protocol(p) => {
                    let _ = write!(s, " -m {}", p.lower());
                    if let Some(d) = dport {
                        let _ = write!(s, " --dport {d}");
                    }
                }
                Match::Probability(p) => {
                    let _ = write!(s, " -m statistic --mode random --probability {}", crate::decimal::fixed(kernel_probability(*p), 11));
                }
                Match::RecentSet { name } => {
                    let _ = write!(s, " -m recent --set --name {name} --mask 255.255.255.255 --rsource");
                }
                Match::RecentCheck { name, seconds } => {
                    let _ = write!(s, " -m recent --rcheck --seconds {seconds} --reap --name {name} --mask 255.255.255.255 --rsource");
                }
                Match::Nfacct(name) => {
                    // libxt_nfacct prints the option with its own space, and
                    // the name with another.
                    let _ = write!(s, " -m nfacct --nfacct-name  {}", save_string(name));
                }
            }
        }
        match &self.target {
            Target::Reject => s.push_str(" -j REJECT --reject-with icmp-port-unreachable"),
            Target::OrMark(v) => {
                let _ = write!(s, " -j MARK --set-xmark {v:#x}/{v:#x}");
            }
            Target::XorMark(v) => {
                let _ = write!(s, " -j MARK --set-xmark {v:#x}/0x0");
            }
            _ => {
                // The other targets print the same either way.
                let plain = Rule::new(vec![], self.target.clone()).render("");
                s.push_str(plain.trim_start_matches("-A "));
            }
        }
        s
    }

    /// The comment, if the rule has one.
    pub fn comment(&self) -> Option<&str> {
        self.matches.iter().find_map(|m| match m {
            Match::Comment(c) => Some(c.as_str()),
            _ => None,
        })
    }
}

/// Match modules that kube-proxy writes and iptables-save prints alike.
fn shared_module(m: &Match, s: &mut String) {
    let _ = match m {
        Match::DstTypeLocal { negate } => write!(s, " -m addrtype{} --dst-type LOCAL", neg(*negate)),
        Match::SrcTypeLocal { negate } => write!(s, " -m addrtype{} --src-type LOCAL", neg(*negate)),
        Match::Mark { value, mask, negate } => write!(s, " -m mark{} --mark {value:#x}/{mask:#x}", neg(*negate)),
        Match::CtState { states, negate } => {
            let list: Vec<&str> = states.iter().map(|c| c.as_str()).collect();
            write!(s, " -m conntrack{} --ctstate {}", neg(*negate), list.join(","))
        }
        _ => Ok(()),
    };
}

fn neg(n: bool) -> &'static str {
    if n {
        " !"
    } else {
        ""
    }
}

/// The probability the kernel keeps for `--probability`, as iptables-save
/// reads it back. kube-proxy writes 1/n with ten decimals; libxt_statistic
/// stores `lround(0x80000000 * p)` in a u32, and prints that count divided
/// by 0x80000000 with `%.11f`. So 1/3 comes back as 0.33333333349.
pub fn kernel_probability(p: f64) -> f64 {
    const SCALE: f64 = 2_147_483_648.0; // 0x80000000
    // The ten decimals kube-proxy writes, read back: an integer count of
    // 1e-10 divided by 1e10 is the nearest f64, as parsing the text gives.
    let written = if p.is_finite() { crate::decimal::scaled(p, 10) as f64 / 1e10 * p.signum() } else { p };
    // f64::round rounds halves away from zero, as C's lround does.
    (written * SCALE).round().clamp(0.0, u32::MAX as f64) / SCALE
}

/// A string argument as iptables-save prints it (xtables_save_string):
/// bare when it is non-empty and only letters, digits, `_` and `-`;
/// otherwise in double quotes with `"`, `'` and `\` escaped by a backslash.
fn save_string(v: &str) -> String {
    let bare = !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        if matches!(c, '"' | '\'' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// iptables prints a /32 as the bare address.
fn addr(c: &Cidr) -> String {
    if c.prefix == 32 {
        c.addr.to_string()
    } else {
        c.to_string()
    }
}

/// iptables-save quotes a comment that has anything but plain characters.
fn quote(c: &str) -> String {
    if !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric() || "/:._-=".contains(ch)) {
        c.to_string()
    } else {
        format!("\"{}\"", c.replace('"', "\\\""))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chain {
    pub name: String,
    pub rules: Vec<Rule>,
}

impl Chain {
    pub fn is_builtin(&self) -> bool {
        is_builtin(&self.name)
    }
}

/// The chains netfilter itself provides.
pub fn is_builtin(name: &str) -> bool {
    matches!(name, "PREROUTING" | "INPUT" | "FORWARD" | "OUTPUT" | "POSTROUTING")
}

/// One table with its chains in creation order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Table {
    pub name: TableName,
    /// Add chains with [`Table::ensure_chain`] or [`Table::append`] so the
    /// name index stays right.
    pub chains: Vec<Chain>,
    /// Chain name → position, so large rule sets stay fast to build and walk.
    #[serde(skip)]
    index: std::collections::HashMap<String, usize>,
    /// While set, appended rules are marked as written for this service port.
    #[serde(skip)]
    writing_for: Option<String>,
}

impl PartialEq for Table {
    fn eq(&self, o: &Table) -> bool {
        self.name == o.name && self.chains == o.chains
    }
}

/// Where a rule sits: the position of its line in `iptables-save` output
/// is derived from this, so matched rules can be highlighted.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RuleRef {
    pub table: TableName,
    pub chain: String,
    pub index: usize,
}

impl Table {
    pub fn new(name: TableName) -> Table {
        Table { name, chains: Vec::new(), index: Default::default(), writing_for: None }
    }

    fn position(&self, name: &str) -> Option<usize> {
        if self.index.len() == self.chains.len() {
            self.index.get(name).copied()
        } else {
            // The index is missing (a deserialised table): search.
            self.chains.iter().position(|c| c.name == name)
        }
    }

    pub fn chain(&self, name: &str) -> Option<&Chain> {
        self.position(name).and_then(|i| self.chains.get(i))
    }

    /// Adds a chain if it is missing.
    pub fn ensure_chain(&mut self, name: &str) {
        if self.position(name).is_none() {
            if self.index.len() != self.chains.len() {
                self.index = self.chains.iter().enumerate().map(|(i, c)| (c.name.clone(), i)).collect();
            }
            self.index.insert(name.to_string(), self.chains.len());
            self.chains.push(Chain { name: name.to_string(), rules: Vec::new() });
        }
    }

    /// Marks the rules appended from now on as written for one service
    /// port (`None` to stop), so a display can pick a Service's rules by
    /// owner rather than by reading comments.
    pub fn write_for(&mut self, owner: Option<String>) {
        self.writing_for = owner;
    }

    /// Appends a rule, creating the chain if needed (`iptables -A`).
    pub fn append(&mut self, chain: &str, mut rule: Rule) {
        if rule.owner.is_none() {
            rule.owner = self.writing_for.clone();
        }
        self.ensure_chain(chain);
        if let Some(i) = self.position(chain) {
            self.chains[i].rules.push(rule);
        }
    }

    pub fn rule(&self, r: &RuleRef) -> Option<&Rule> {
        self.chain(&r.chain)?.rules.get(r.index)
    }

    /// The table in `iptables-save` format: `*nat`, chain headers, rules, `COMMIT`.
    pub fn save(&self) -> Vec<String> {
        let mut out = vec![format!("*{}", self.name.as_str())];
        for c in &self.chains {
            let policy = if c.is_builtin() { "ACCEPT" } else { "-" };
            out.push(format!(":{} {} [0:0]", c.name, policy));
        }
        for c in &self.chains {
            for r in &c.rules {
                out.push(r.render(&c.name));
            }
        }
        out.push("COMMIT".into());
        out
    }

    /// The table as the kernel's `iptables-save` prints it: every
    /// built-in chain of the table in the kernel's order, then user chains
    /// sorted by name (with `empty_chains`, created outside this table's
    /// rules, among them), rules grouped by chain in that order, each in
    /// [`Rule::render_kernel`] form.
    pub fn save_kernel(&self, empty_chains: &[&str]) -> Vec<String> {
        let builtins = self.name.builtin_chains();
        let mut user: Vec<&str> = self.chains.iter().map(|c| c.name.as_str()).filter(|n| !builtins.contains(n)).collect();
        user.extend(empty_chains.iter().filter(|n| self.position(n).is_none()));
        user.sort_unstable();
        let mut out = vec![format!("*{}", self.name.as_str())];
        out.extend(builtins.iter().map(|c| format!(":{c} ACCEPT [0:0]")));
        out.extend(user.iter().map(|c| format!(":{c} - [0:0]")));
        for name in builtins.iter().chain(&user) {
            if let Some(c) = self.chain(name) {
                out.extend(c.rules.iter().map(|r| r.render_kernel(&c.name)));
            }
        }
        out.push("COMMIT".into());
        out
    }

    /// The `save()` line index of a rule.
    pub fn line_of(&self, r: &RuleRef) -> Option<usize> {
        let mut line = 1 + self.chains.len();
        for c in &self.chains {
            if c.name == r.chain {
                return (r.index < c.rules.len()).then_some(line + r.index);
            }
            line += c.rules.len();
        }
        None
    }
}

impl From<TableName> for RuleTable {
    fn from(t: TableName) -> RuleTable {
        match t {
            TableName::Filter => RuleTable::Filter,
            TableName::Nat => RuleTable::Nat,
            TableName::Mangle => RuleTable::Mangle,
        }
    }
}

impl Target {
    /// The field of the packet this target rewrites, if any: a DNAT the
    /// destination, a MASQUERADE the source (at the end of the walk).
    pub fn rewrites(&self) -> Option<Field> {
        match self {
            Target::Dnat(_) => Some(Field::Destination),
            Target::Masquerade { .. } => Some(Field::Source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ip;

    #[test]
    fn kernel_form_matches_what_iptables_save_prints_on_a_node() {
        // kubeadm's `kubernetes` Service, as seen on real nodes.
        let svc = crate::dataplane::kubeproxy::service_chain("default/kubernetes:https", "tcp");
        assert_eq!(svc, "KUBE-SVC-NPX46M4PTMTKRN6Y");
        let m = vec![
            Match::Comment("default/kubernetes:https cluster IP".into()),
            Match::Protocol(Protocol::Tcp),
            Match::Destination { cidr: Cidr::new(ip(10, 96, 0, 1), 32), negate: false },
            Match::DestinationPort(443),
        ];
        assert_eq!(
            Rule::new(m.clone(), Target::Jump(svc.clone())).render_kernel("KUBE-SERVICES"),
            "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment \"default/kubernetes:https cluster IP\" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y"
        );
        let mut masq = m;
        masq.push(Match::Source { cidr: "10.244.0.0/16".parse().unwrap(), negate: true });
        assert_eq!(
            Rule::new(masq, Target::Jump("KUBE-MARK-MASQ".into())).render_kernel(&svc),
            "-A KUBE-SVC-NPX46M4PTMTKRN6Y ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m comment --comment \"default/kubernetes:https cluster IP\" -m tcp --dport 443 -j KUBE-MARK-MASQ"
        );
        assert_eq!(Rule::new(vec![], Target::OrMark(0x4000)).render_kernel("KUBE-MARK-MASQ"), "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000");
        assert_eq!(Rule::new(vec![], Target::XorMark(0x4000)).render_kernel("KUBE-POSTROUTING"), "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0");
        let sep = Rule::new(
            vec![Match::Comment("default/kubernetes:https".into()), Match::Protocol(Protocol::Tcp)],
            Target::Dnat(crate::net::SockAddr::new(ip(172, 18, 0, 2), 6443)),
        );
        assert_eq!(sep.render_kernel("KUBE-SEP-X"), "-A KUBE-SEP-X -p tcp -m comment --comment \"default/kubernetes:https\" -m tcp -j DNAT --to-destination 172.18.0.2:6443");
        let stat = Rule::new(vec![Match::Probability(0.5)], Target::Jump("KUBE-SEP-Y".into()));
        assert_eq!(stat.render_kernel("C"), "-A C -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-Y");
    }

    #[test]
    fn probabilities_and_strings_as_the_kernel_gives_them_back() {
        // Read back from iptables-save (legacy and nft, iptables 1.8.9)
        // after loading kube-proxy's ten-decimal values.
        let back = |n: f64| format!("{:.11}", kernel_probability(1.0 / n));
        assert_eq!(back(2.0), "0.50000000000");
        assert_eq!(back(3.0), "0.33333333349");
        assert_eq!(back(5.0), "0.20000000019");
        assert_eq!(back(6.0), "0.16666666651");
        // Rounded, not truncated: 0x80000000/3 = 715827882.67 is kept as 715827883.
        assert_eq!(kernel_probability(1.0 / 3.0) * 2_147_483_648.0, 715_827_883.0);
        // The ten decimals are read back as parsing the written text would.
        for n in 1..=3000 {
            let p = 1.0 / n as f64;
            let parsed: f64 = format!("{p:.10}").parse().unwrap();
            assert_eq!(kernel_probability(p), (parsed * 2_147_483_648.0).round() / 2_147_483_648.0, "1/{n}");
        }
        let r = |c: &str| Rule::new(vec![Match::Comment(c.into())], Target::Drop).render_kernel("C");
        assert_eq!(r("a"), "-A C -m comment --comment a -j DROP");
        assert_eq!(r("a_b-9"), "-A C -m comment --comment a_b-9 -j DROP");
        assert_eq!(r("ns1/svc1:p80"), "-A C -m comment --comment \"ns1/svc1:p80\" -j DROP");
        assert_eq!(r("a b"), "-A C -m comment --comment \"a b\" -j DROP");
        assert_eq!(r("x\"y"), "-A C -m comment --comment \"x\\\"y\" -j DROP");
        assert_eq!(r("a'b"), "-A C -m comment --comment \"a\\'b\" -j DROP");
        assert_eq!(r(""), "-A C -m comment --comment \"\" -j DROP");
        let counted = Rule::new(vec![Match::Nfacct("ct_state_invalid_dropped_pkts".into())], Target::Drop);
        assert_eq!(counted.render("C"), "-A C -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP");
        assert_eq!(counted.render_kernel("C"), "-A C -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP");
    }

    #[test]
    fn well_known_cluster_chain_names() {
        // CoreDNS's Service in every kubeadm cluster.
        assert_eq!(crate::dataplane::kubeproxy::service_chain("kube-system/kube-dns:dns", "udp"), "KUBE-SVC-TCOU7JCQXEZGVUNU");
        assert_eq!(crate::dataplane::kubeproxy::service_chain("kube-system/kube-dns:dns-tcp", "tcp"), "KUBE-SVC-ERIFXISQEP7F7OF4");
        assert_eq!(crate::dataplane::kubeproxy::service_chain("kube-system/kube-dns:metrics", "tcp"), "KUBE-SVC-JD5MR3NA4I4DYORP");
    }

    #[test]
    fn renders_like_iptables_save() {
        let r = Rule::new(
            vec![
                Match::Comment("ns1/svc1:p80 cluster IP".into()),
                Match::Protocol(Protocol::Tcp),
                Match::Destination { cidr: Cidr::new(ip(172, 30, 0, 41), 32), negate: false },
                Match::DestinationPort(80),
                Match::Source { cidr: "10.0.0.0/8".parse().unwrap(), negate: true },
            ],
            Target::Jump("KUBE-MARK-MASQ".into()),
        );
        assert_eq!(
            r.render("KUBE-SVC-XPGD46QRK7WJZT7O"),
            "-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ"
        );
        let r = Rule::new(vec![Match::Comment("ns1/svc1:p80".into()), Match::Probability(1.0 / 3.0)], Target::Jump("KUBE-SEP-X".into()));
        assert_eq!(r.render("C"), "-A C -m comment --comment ns1/svc1:p80 -m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-X");
        let r = Rule::new(vec![Match::Mark { value: 0x4000, mask: 0x4000, negate: true }], Target::Return);
        assert_eq!(r.render("KUBE-POSTROUTING"), "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN");
    }

    #[test]
    fn save_lists_headers_then_rules_and_locates_lines() {
        let mut t = Table::new(TableName::Nat);
        t.ensure_chain("PREROUTING");
        t.append("KUBE-A", Rule::new(vec![], Target::Return));
        t.append("KUBE-A", Rule::new(vec![], Target::Accept));
        let lines = t.save();
        assert_eq!(lines, ["*nat", ":PREROUTING ACCEPT [0:0]", ":KUBE-A - [0:0]", "-A KUBE-A -j RETURN", "-A KUBE-A -j ACCEPT", "COMMIT"]);
        let at = t.line_of(&RuleRef { table: TableName::Nat, chain: "KUBE-A".into(), index: 1 }).unwrap();
        assert_eq!(lines[at], "-A KUBE-A -j ACCEPT");
        assert_eq!(t.line_of(&RuleRef { table: TableName::Nat, chain: "KUBE-A".into(), index: 2 }), None);
    }
}
