//! kube-proxy's nftables mode over time: one node's `ip kube-proxy` table
//! from one sync to the next, as the proxier changes it.
//!
//! [`sync_node`] says what the table should hold for a set of Services and
//! slices; [`SyncState`] remembers what it holds and, for the next set,
//! writes the transactions kube-proxy hands to `nft -f` to get there, the
//! way its `syncProxyRules` does (pkg/proxy/nftables/proxier.go; checked
//! against `TestSyncProxyRulesRepeated` of proxier_test.go at commit
//! 81810de635aa13aa0a32992f6def3aa9d6025ebc by `tests/nftables_repeated.rs`):
//!
//! - The first sync is a full one: the whole table is written.
//! - Later syncs are partial. A service port whose Service or slices did
//!   not change since the last sync keeps its chains as they are; a
//!   changed one has each chain added and flushed, then its rules written
//!   again (and its affinity sets added).
//! - The six maps and sets of Service addresses (`cluster-ips`,
//!   `service-ips`, `firewall-ips`, `no-endpoint-services`,
//!   `no-endpoint-nodeports`, `service-nodeports`) are kept in step element
//!   by element (upstream's `nftElementStorage`): a missing element is
//!   added, one whose verdict changed is deleted and added again, one no
//!   port wants any more is deleted. An element whose key and verdict are
//!   already there is left alone, comment and all.
//! - A Service chain (a name with `/`) that exists but that no port uses
//!   is flushed and becomes stale: a kernel before 6.2 may still think a
//!   just-removed map element refers to it, so it is deleted only once it
//!   has been stale for a second, in a transaction of its own at the start
//!   of a later sync. A stale chain that is still unused at a sync is
//!   flushed again and its second starts over; one a port uses again is
//!   no longer stale. Time is not modelled: [`SyncState::age_stale_chains`]
//!   says that the second has passed (as the test's `ageStaleChains`).
//! - An affinity set no endpoint uses is deleted at once.
//!
//! Every operation is typed ([`Op`]); a transaction's text is its
//! operations rendered as knftables writes them, and the table after a sync
//! is the one before with the operations applied, so the two cannot
//! disagree. What is not modelled: the periodic full resync (and one after
//! a failed sync) on a table that already holds rules, which flushes and
//! rewrites everything; a change of settings between syncs (the base
//! chains and `nodeport-ips` are written by the full sync only); and
//! upstream's finer change tracking (a Service or slice counts as changed
//! when its spec, status or endpoints differ at all).

use super::{render_chain, render_set, sync_node, Chain, Element, NftablesConfig, Ruleset, Set, CLUSTER_IPS, FIREWALL_IPS, NO_ENDPOINT_NODEPORTS, NO_ENDPOINT_SERVICES, SERVICE_IPS, SERVICE_NODEPORTS, TABLE};
use super::{quote, Rule};
use crate::api::{EndpointSlice, Node, Service};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The maps and sets kube-proxy keeps in step element by element.
pub const SERVICE_ELEMENT_SETS: [&str; 6] = [CLUSTER_IPS, SERVICE_IPS, FIREWALL_IPS, NO_ENDPOINT_SERVICES, NO_ENDPOINT_NODEPORTS, SERVICE_NODEPORTS];

/// One operation of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `add table ip kube-proxy { comment … }`.
    AddTable { comment: String },
    /// `add chain …`: the chain as declared (its rules are not part of it).
    /// Adding a chain that exists changes nothing.
    AddChain(Chain),
    /// `flush chain …`: drops the chain's rules.
    FlushChain(String),
    /// `delete chain …`.
    DeleteChain(String),
    /// `add rule … CHAIN …`: appended to the chain.
    AddRule { chain: String, rule: Rule },
    /// `add set …` / `add map …`: declared without elements. Adding one
    /// that exists changes nothing.
    AddSet(Set),
    /// `delete set …` / `delete map …`.
    DeleteSet { name: String, map: bool },
    /// `add element …`. Adding a key that is there changes nothing.
    AddElement { set: String, element: Element },
    /// `delete element …`: by key (the element removed, for its key).
    DeleteElement { set: String, element: Element },
}

impl Op {
    /// The line knftables writes for it.
    pub fn render(&self) -> String {
        match self {
            Op::AddTable { comment } => format!("add table ip {TABLE} {{ comment {} ; }}", quote(comment)),
            Op::AddChain(c) => render_chain(c),
            Op::FlushChain(c) => format!("flush chain ip {TABLE} {c}"),
            Op::DeleteChain(c) => format!("delete chain ip {TABLE} {c}"),
            Op::AddRule { chain, rule } => format!("add rule ip {TABLE} {chain} {}", rule.render()),
            Op::AddSet(s) => render_set(s),
            Op::DeleteSet { name, map } => format!("delete {} ip {TABLE} {name}", if *map { "map" } else { "set" }),
            Op::AddElement { set, element } => format!("add element ip {TABLE} {set} {{ {} }}", element.render()),
            Op::DeleteElement { set, element } => format!("delete element ip {TABLE} {set} {{ {} }}", element.key_text()),
        }
    }

    /// What it does to `table`, as the kernel (and knftables' fake) does.
    fn apply(&self, table: &mut Ruleset) {
        match self {
            Op::AddTable { comment } => table.comment = comment.clone(),
            Op::AddChain(c) => {
                if table.chain(&c.name).is_none() {
                    table.chains.push(Chain { rules: Vec::new(), ..c.clone() });
                }
            }
            Op::FlushChain(c) => table.chain_mut(c).rules.clear(),
            Op::DeleteChain(c) => table.chains.retain(|x| x.name != *c),
            Op::AddRule { chain, rule } => table.push_rule(chain, rule.clone()),
            Op::AddSet(s) => table.add_set(Set { elements: Vec::new(), ..s.clone() }),
            Op::DeleteSet { name, .. } => table.sets.retain(|x| x.name != *name),
            Op::AddElement { set, element } => table.add_element(set, element.clone()),
            Op::DeleteElement { set, element } => {
                if let Some(s) = table.sets.iter_mut().find(|s| s.name == *set) {
                    s.elements.retain(|e| e.key != element.key);
                }
            }
        }
    }
}

/// One `nft -f` run: its operations in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

impl Transaction {
    /// Its text, a line per operation.
    pub fn lines(&self) -> Vec<String> {
        self.ops.iter().map(Op::render).collect()
    }

    /// How many operations (knftables' `NumOperations`).
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn push(&mut self, op: Op) {
        self.ops.push(op);
    }
}

/// What one sync sent: the deletion of stale chains, when some had aged
/// (run first, alone), and the sync's own transaction (upstream's
/// `LastTransaction`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sync {
    pub cleanup: Transaction,
    pub main: Transaction,
    /// Whether it was a full sync (the first).
    pub full: bool,
}

impl Sync {
    /// The transactions as `nft -f` runs them, empty ones left out.
    pub fn transactions(&self) -> Vec<&Transaction> {
        [&self.cleanup, &self.main].into_iter().filter(|t| !t.is_empty()).collect()
    }
}

/// What kube-proxy knows of one node between syncs: the table as it last
/// wrote it, its stale chains, and the Services and slices of the last
/// sync (to tell which changed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncState {
    table: Option<Ruleset>,
    /// Stale chains, each with whether its second has passed.
    stale: BTreeMap<String, bool>,
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
}

impl SyncState {
    /// Before the first sync: no table.
    pub fn new() -> SyncState {
        SyncState::default()
    }

    /// The table as the last sync left it (none before the first).
    pub fn table(&self) -> Option<&Ruleset> {
        self.table.as_ref()
    }

    /// The chains flushed and waiting to be deleted, by name.
    pub fn stale_chains(&self) -> Vec<&str> {
        self.stale.keys().map(String::as_str).collect()
    }

    /// Time passes: every stale chain has been stale long enough to be
    /// deleted at the next sync.
    pub fn age_stale_chains(&mut self) {
        for aged in self.stale.values_mut() {
            *aged = true;
        }
    }

    /// The next sync, for these Services and slices: what kube-proxy sends,
    /// and the table it leaves (then [`SyncState::table`]).
    pub fn sync(&mut self, node: &Node, services: &[Service], slices: &[EndpointSlice], cfg: &NftablesConfig) -> Sync {
        let desired = sync_node(node, services, slices, cfg);
        let out = match self.table.take() {
            None => {
                let main = full(&desired);
                let mut table = Ruleset::new(&desired.node);
                main.ops.iter().for_each(|op| op.apply(&mut table));
                table.services = desired.services.clone();
                self.table = Some(table);
                Sync { cleanup: Transaction::default(), main, full: true }
            }
            Some(mut table) => {
                let cleanup = self.delete_aged(&mut table);
                let changed = changed_services(&self.services, &self.slices, services, slices);
                let main = self.partial(&table, &desired, &changed);
                main.ops.iter().for_each(|op| op.apply(&mut table));
                refresh_owners(&mut table, &desired);
                table.services = desired.services.clone();
                table.node = desired.node.clone();
                self.table = Some(table);
                Sync { cleanup, main, full: false }
            }
        };
        self.services = services.to_vec();
        self.slices = slices.to_vec();
        out
    }

    /// Deletes the chains whose second has passed, in a transaction of
    /// their own.
    fn delete_aged(&mut self, table: &mut Ruleset) -> Transaction {
        let mut tx = Transaction::default();
        let aged: Vec<String> = self.stale.iter().filter(|(_, aged)| **aged).map(|(c, _)| c.clone()).collect();
        for c in aged {
            self.stale.remove(&c);
            if table.chain(&c).is_some() {
                tx.push(Op::DeleteChain(c));
            }
        }
        tx.ops.iter().for_each(|op| op.apply(table));
        tx
    }

    /// A partial sync from `table` to `desired`, rewriting the ports of
    /// the `changed` Services (by `namespace/name`).
    fn partial(&mut self, table: &Ruleset, desired: &Ruleset, changed: &BTreeSet<String>) -> Transaction {
        let mut tx = Transaction::default();
        let mut ensured: BTreeSet<(String, String)> = BTreeSet::new();
        for port in &desired.services {
            let service = port.port_name.split(':').next().unwrap_or(&port.port_name);
            let rewrite = changed.contains(service);
            let chains: Vec<&Chain> = port.chains.iter().filter_map(|c| desired.chain(c)).collect();
            if rewrite {
                for c in &chains {
                    tx.push(Op::AddChain(Chain { rules: Vec::new(), ..(*c).clone() }));
                    tx.push(Op::FlushChain(c.name.clone()));
                }
            }
            for s in storage_sets(desired) {
                for e in s.elements.iter().filter(|e| e.owner.as_deref() == Some(port.port_name.as_str())) {
                    ensure_element(&mut tx, table, &s.name, e, &mut ensured);
                }
            }
            if rewrite {
                for name in &port.sets {
                    if let Some(s) = desired.set(name) {
                        tx.push(Op::AddSet(Set { elements: Vec::new(), ..s.clone() }));
                    }
                }
                for c in &chains {
                    for r in &c.rules {
                        tx.push(Op::AddRule { chain: c.name.clone(), rule: r.clone() });
                    }
                }
            }
        }
        // Elements no port claims (none today), kept in step all the same.
        for s in storage_sets(desired) {
            for e in &s.elements {
                ensure_element(&mut tx, table, &s.name, e, &mut ensured);
            }
        }
        // Service chains that exist and that no port uses: flushed, stale.
        for c in table.chains.iter().filter(|c| c.name.contains('/')) {
            if desired.chain(&c.name).is_none() {
                tx.push(Op::FlushChain(c.name.clone()));
                self.stale.insert(c.name.clone(), false);
            } else {
                self.stale.remove(&c.name);
            }
        }
        // Affinity sets no endpoint uses: deleted at once.
        for s in table.sets.iter().filter(|s| s.name.starts_with("affinity-") && desired.set(&s.name).is_none()) {
            tx.push(Op::DeleteSet { name: s.name.clone(), map: s.verdict_map });
        }
        // Elements no port wants any more.
        for s in storage_sets(table) {
            for e in &s.elements {
                if !ensured.contains(&(s.name.clone(), e.key_text())) {
                    tx.push(Op::DeleteElement { set: s.name.clone(), element: e.clone() });
                }
            }
        }
        tx
    }
}

/// The full sync on an empty node: the table, its sets and maps, chains,
/// rules and elements, in [`Ruleset::transaction`]'s order.
fn full(desired: &Ruleset) -> Transaction {
    let mut tx = Transaction::default();
    tx.push(Op::AddTable { comment: desired.comment.clone() });
    for s in &desired.sets {
        tx.push(Op::AddSet(Set { elements: Vec::new(), ..s.clone() }));
    }
    for c in &desired.chains {
        tx.push(Op::AddChain(Chain { rules: Vec::new(), ..c.clone() }));
    }
    for c in &desired.chains {
        for r in &c.rules {
            tx.push(Op::AddRule { chain: c.name.clone(), rule: r.clone() });
        }
    }
    for s in &desired.sets {
        for e in &s.elements {
            tx.push(Op::AddElement { set: s.name.clone(), element: e.clone() });
        }
    }
    tx
}

fn storage_sets(rs: &Ruleset) -> impl Iterator<Item = &Set> {
    rs.sets.iter().filter(|s| SERVICE_ELEMENT_SETS.contains(&s.name.as_str()))
}

/// upstream's `ensureElem`: add the element if its key is missing, delete
/// and add it again if its verdict differs, else nothing (a comment is
/// not compared). Each key once per sync.
fn ensure_element(tx: &mut Transaction, table: &Ruleset, set: &str, e: &Element, ensured: &mut BTreeSet<(String, String)>) {
    if !ensured.insert((set.to_string(), e.key_text())) {
        return;
    }
    let there = table.set(set).and_then(|s| s.elements.iter().find(|x| x.key == e.key));
    match there {
        Some(x) if x.verdict == e.verdict => {}
        Some(x) => {
            tx.push(Op::DeleteElement { set: set.into(), element: x.clone() });
            tx.push(Op::AddElement { set: set.into(), element: e.clone() });
        }
        None => tx.push(Op::AddElement { set: set.into(), element: e.clone() }),
    }
}

/// An element left alone keeps what the kernel holds (its comment), but
/// says whose it is now and why, as the desired one does.
fn refresh_owners(table: &mut Ruleset, desired: &Ruleset) {
    for s in table.sets.iter_mut().filter(|s| SERVICE_ELEMENT_SETS.contains(&s.name.as_str())) {
        let Some(want) = desired.set(&s.name) else { continue };
        for e in &mut s.elements {
            if let Some(w) = want.elements.iter().find(|w| w.key == e.key) {
                e.owner = w.owner.clone();
                e.purpose = w.purpose;
            }
        }
    }
}

/// The Services (`namespace/name`) whose object (spec or status) or
/// slices differ between the two syncs, deleted and new ones included.
fn changed_services(old_svcs: &[Service], old_slices: &[EndpointSlice], svcs: &[Service], slices: &[EndpointSlice]) -> BTreeSet<String> {
    let key = |ns: &str, name: &str| format!("{ns}/{name}");
    let mut names: BTreeSet<String> = BTreeSet::new();
    names.extend(old_svcs.iter().chain(svcs).map(|s| key(&s.namespace, &s.name)));
    names.extend(old_slices.iter().chain(slices).map(|s| key(&s.namespace, &s.service_name)));
    let service = |list: &'_ [Service], n: &str| list.iter().find(|s| key(&s.namespace, &s.name) == n).map(|s| (s.spec.clone(), s.status.clone()));
    let slices_of = |list: &[EndpointSlice], n: &str| {
        let mut v: Vec<EndpointSlice> = list.iter().filter(|s| key(&s.namespace, &s.service_name) == n).cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    };
    names.into_iter().filter(|n| service(old_svcs, n) != service(svcs, n) || slices_of(old_slices, n) != slices_of(slices, n)).collect()
}
