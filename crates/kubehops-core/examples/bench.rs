//! How long the model takes on a large cluster: one node's full rule set
//! for 1,000 and 10,000 Services with 3 endpoints each, and one packet's
//! trace through it; then one Service with 10,000 and 100,000 endpoints
//! (iptables-save, trace, and dig A and SRV on it as a headless Service),
//! side by side with the ratio, which is about 10 when the cost is linear,
//! and per endpoint the time, the allocations and the peak heap bytes. The
//! endpoint table times the thread's CPU (Linux) and the best of three runs.
//! Prints figures; asserts nothing about time.
//!
//! `cargo run --release -p kubehops-core --example bench`
//!
//! `bench <case> <n>` (case: `save`, `trace`, `dig-a` or `dig-srv`) runs one
//! operation once on one Service with `n` endpoints, inside the function
//! `measured`, so that an instruction counter can be pointed at that alone:
//! `valgrind --tool=callgrind --toggle-collect='*measured*' target/release/examples/bench trace 100000`.

use kubehops_core::api::*;
use kubehops_core::dns::{ClusterDns, DnsConfig, QType};
use kubehops_core::dataplane::kubeproxy::{sync_node, KubeProxyConfig, NodeRules};
use kubehops_core::net::{ip, Packet, Protocol, SockAddr};
use kubehops_core::dataplane::trace::trace;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

fn cluster(n: usize) -> (Vec<Service>, Vec<EndpointSlice>) {
    let mut services = Vec::with_capacity(n);
    let mut slices = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("svc{i}");
        let cip = ip(172, 30, (i / 250) as u8, (i % 250) as u8 + 1);
        services.push(Service {
            name: name.clone(),
            namespace: "bench".into(),
            annotations: Default::default(),
            spec: ServiceSpec {
                type_: if i % 2 == 0 { ServiceType::NodePort } else { ServiceType::ClusterIP },
                ports: vec![ServicePort { name: Some("http".into()), protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: (i % 2 == 0).then_some(30000 + (i / 2 % 2768) as u16) }],
                cluster_ip: Some(cip),
                ..Default::default()
            },
            status: Default::default(),
            created: None,
        });
        slices.push(EndpointSlice {
            name: format!("{name}-x"),
            namespace: "bench".into(),
            service_name: name,
            endpoints: (0..3)
                .map(|k| Endpoint {
                    ip: ip(10, (i / 65536) as u8 + 100, (i / 256 % 256) as u8, (i % 256) as u8).to_bits().wrapping_add(k << 24).into(),
                    node_name: format!("node-{k}"),
                    ready: true,
                    serving: true,
                    terminating: false,
                    target_ref: String::new(),
                    hostname: None,
                })
                .collect(),
            ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
        });
    }
    (services, slices)
}

/// One Service `web` (cluster IP 10.96.0.50, or headless) with `n`
/// endpoints on three nodes, in slices of 1,000 as the controller writes them.
fn one_big_service(n: usize, headless: bool) -> (Service, Vec<EndpointSlice>) {
    let svc = Service {
        name: "web".into(),
        namespace: "bench".into(),
        annotations: Default::default(),
        spec: ServiceSpec {
            ports: vec![ServicePort { name: Some("http".into()), protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: None }],
            cluster_ip: (!headless).then_some(ip(10, 96, 0, 50)),
            headless,
            ..Default::default()
        },
        status: Default::default(),
        created: None,
    };
    let slices = (0..n.div_ceil(1000))
        .map(|k| EndpointSlice {
            name: format!("web-{k}"),
            namespace: "bench".into(),
            service_name: "web".into(),
            endpoints: (k * 1000..n.min((k + 1) * 1000))
                .map(|i| Endpoint {
                    ip: Ipv4Addr::from(u32::from(ip(10, 100, 0, 0)) + i as u32),
                    node_name: format!("node-{}", i % 3),
                    ready: true,
                    serving: true,
                    terminating: false,
                    target_ref: String::new(),
                    hostname: None,
                })
                .collect(),
            ports: vec![EndpointPort { name: Some("http".into()), protocol: Protocol::Tcp, port: 8080 }],
        })
        .collect();
    (svc, slices)
}

/// The best time of three runs of `f` (the others met a busier machine or
/// allocator), on [`cpu_clock`], and what it returned.
fn timed<T>(f: impl Fn() -> T) -> (Duration, T) {
    let mut best = (Duration::MAX, None);
    for _ in 0..3 {
        let t = cpu_clock();
        let r = f();
        best = (best.0.min(cpu_clock().saturating_sub(t)), Some(r));
    }
    (best.0, best.1.expect("ran"))
}

/// The CPU time this thread has used, on Linux: on a shared machine the
/// wall clock also counts the time the scheduler gave to other processes,
/// which has nothing to do with the code. Elsewhere, the wall clock.
fn cpu_clock() -> Duration {
    thread_cpu_time().unwrap_or_else(|| START.with(|s| s.elapsed()))
}

thread_local! {
    static START: Instant = Instant::now();
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn thread_cpu_time() -> Option<Duration> {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, into the one it is given.
    let ok = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then(|| Duration::new(t.sec as u64, t.nsec as u32))
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// The operations of the table, by the name `bench <case> <n>` takes and
/// the name the table prints.
const CASES: [(&str, &str); 4] = [("save", "iptables-save"), ("trace", "trace"), ("dig-a", "dig A (headless)"), ("dig-srv", "dig SRV (headless)")];

/// One operation at one size: the best time, the results, and from one
/// run the allocations and the peak of memory held beyond what was held
/// before (its result included).
#[derive(Clone, Copy)]
struct Run {
    time: Duration,
    results: usize,
    allocations: usize,
    peak_bytes: usize,
}

fn run(case: &str, setup: &Setup) -> Run {
    let (time, results) = timed(|| measured(case, setup));
    let before = heap::start();
    measured(case, setup);
    let (allocations, peak_bytes) = heap::since(before);
    Run { time, results, allocations, peak_bytes }
}

/// Times each operation on one Service with 10,000 and with 100,000
/// endpoints and prints them with the ratio; then per endpoint the time,
/// the allocations and the peak memory, which stay the same at both sizes
/// when the cost is linear. The time per endpoint can still grow while
/// the other two do not: 100,000 endpoints' data no longer fits in the
/// caches (see the README).
fn endpoints_scale(node: &Node, cfg: &KubeProxyConfig) {
    let sizes = [10_000usize, 100_000];
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); CASES.len()];
    for n in sizes {
        let setup = Setup::new(n, node.clone(), cfg.clone());
        for (row, (case, _)) in runs.iter_mut().zip(CASES) {
            let r = run(case, &setup);
            // Every endpoint is reached and answered, or the figures would mislead.
            assert!(case == "save" || r.results == n, "{case}: {} results for {n} endpoints", r.results);
            row.push(r);
        }
    }
    println!("bench: one Service with N endpoints (CPU) {:>20} {:>24}   ratio", format!("N = {}", sizes[0]), format!("N = {}", sizes[1]));
    for (row, (_, name)) in runs.iter().zip(CASES) {
        let cell = |r: &Run| format!("{:>9.1} ms ({:>6})", r.time.as_secs_f64() * 1e3, r.results);
        let ratio = row[1].time.as_secs_f64() / row[0].time.as_secs_f64().max(1e-9);
        println!("bench:   {name:<28} {:>24} {:>24}   {ratio:>5.1}x", cell(&row[0]), cell(&row[1]));
    }
    println!("bench: per endpoint, N = 10000 | 100000:  {:>17} {:>21} {:>21}", "ns", "allocations", "peak bytes");
    for (row, (_, name)) in runs.iter().zip(CASES) {
        // A figure of each run, divided by its size.
        let pair = |total: fn(&Run) -> f64| format!("{:>9.1} |{:>6.1}", total(&row[0]) / sizes[0] as f64, total(&row[1]) / sizes[1] as f64);
        let ns = pair(|r| r.time.as_secs_f64() * 1e9);
        let allocs = pair(|r| r.allocations as f64);
        let bytes = pair(|r| r.peak_bytes as f64);
        println!("bench:   {name:<32} {ns:>17} {allocs:>21} {bytes:>21}");
    }
}

/// Counts the heap: allocations, and the bytes held now and at most, so
/// that the bench can print memory per endpoint, which is the same on
/// every machine (the time is not).
mod heap {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    struct Counting;

    static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
    static HELD: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);

    #[global_allocator]
    static COUNTING: Counting = Counting;

    fn grew(by: usize) {
        ALLOCATIONS.fetch_add(1, Relaxed);
        let held = HELD.fetch_add(by, Relaxed) + by;
        PEAK.fetch_max(held, Relaxed);
    }

    // SAFETY: every call is passed on to the system allocator unchanged;
    // the counters only watch.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                grew(layout.size());
            }
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
            unsafe { System.dealloc(p, layout) };
            HELD.fetch_sub(layout.size(), Relaxed);
        }

        unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
            let q = unsafe { System.realloc(p, layout, size) };
            if !q.is_null() {
                HELD.fetch_sub(layout.size(), Relaxed);
                grew(size);
            }
            q
        }
    }

    /// Starts counting: (allocations so far, bytes held now).
    pub fn start() -> (usize, usize) {
        let held = HELD.load(Relaxed);
        PEAK.store(held, Relaxed);
        (ALLOCATIONS.load(Relaxed), held)
    }

    /// Allocations since `start`, and the peak of bytes held beyond what was held then.
    pub fn since((allocations, held): (usize, usize)) -> (usize, usize) {
        (ALLOCATIONS.load(Relaxed) - allocations, PEAK.load(Relaxed) - held)
    }
}

/// What [`measured`] runs on: one Service with its endpoints, its rules,
/// and the same Service headless in CoreDNS's view.
struct Setup {
    node: Node,
    cfg: KubeProxyConfig,
    svc: Service,
    slices: Vec<EndpointSlice>,
    rules: NodeRules,
    dns: ClusterDns,
    pkt: Packet,
}

/// One operation of the table, run once (`save` is the rule set and its
/// text); how many results it gave. Kept out of line so that a profiler
/// can count it alone.
#[inline(never)]
fn measured(case: &str, s: &Setup) -> usize {
    match case {
        "save" => sync_node(&s.node, std::slice::from_ref(&s.svc), &s.slices, &s.cfg).save().len(),
        "trace" => trace(&s.rules, &s.node, &s.pkt, false).targets.len(),
        "dig-a" => s.dns.query("web.bench.svc.cluster.local.", QType::A).map_or(0, |r| r.answer.len()),
        _ => s.dns.query("_http._tcp.web.bench.svc.cluster.local.", QType::Srv).map_or(0, |r| r.answer.len()),
    }
}

impl Setup {
    fn new(n: usize, node: Node, cfg: KubeProxyConfig) -> Setup {
        let (svc, slices) = one_big_service(n, false);
        let rules = sync_node(&node, std::slice::from_ref(&svc), &slices, &cfg);
        let (headless, hslices) = one_big_service(n, true);
        let dns = ClusterDns::new(DnsConfig::default(), std::slice::from_ref(&headless), &hslices);
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(ip(10, 96, 0, 50), 80));
        Setup { node, cfg, svc, slices, rules, dns, pkt }
    }
}

/// `bench <case> <n>`: sets up, then runs [`measured`] once.
fn one_case(case: &str, n: usize, node: Node, cfg: KubeProxyConfig) {
    let setup = Setup::new(n, node, cfg);
    let (faults, t, heap) = (minor_faults(), cpu_clock(), heap::start());
    let count = measured(case, &setup);
    let el = cpu_clock().saturating_sub(t);
    let (allocations, peak) = heap::since(heap);
    let faults = minor_faults().zip(faults).map_or("unknown".to_string(), |(a, b)| (a - b).to_string());
    println!("bench: {case} on {n} endpoints: {count} results in {:.1} ms of CPU, {allocations} allocations, peak {peak} bytes, {faults} page faults", el.as_secs_f64() * 1e3);
}

/// The process's minor page faults so far (Linux only: `/proc/self/stat`).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; minflt is the 10th field.
    stat.rsplit_once(')')?.1.split_whitespace().nth(7)?.parse().ok()
}

fn main() {
    let node = Node { name: "node-0".into(), internal_ip: ip(192, 168, 0, 2), pod_cidr: None };
    let cfg = KubeProxyConfig { cluster_cidr: Some("10.0.0.0/8".parse().expect("valid")), ..Default::default() };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [case, n] = args.as_slice() {
        let cases = CASES.map(|(c, _)| c);
        match n.parse() {
            Ok(n) if cases.contains(&case.as_str()) => return one_case(case, n, node, cfg),
            _ => {
                eprintln!("usage: bench [<case> <n>], case one of {cases:?}, n a count of endpoints");
                std::process::exit(2);
            }
        }
    }
    for n in [1_000usize, 10_000] {
        let (services, slices) = cluster(n);
        let t0 = Instant::now();
        let rules = sync_node(&node, &services, &slices, &cfg);
        let gen = t0.elapsed();
        let lines = rules.save().len();
        // The last Service's cluster IP: the walk passes every KUBE-SERVICES rule before it.
        let last = services.last().and_then(|s| s.spec.cluster_ip).expect("cluster IP");
        let pkt = Packet::new(Protocol::Tcp, SockAddr::new(ip(10, 0, 0, 5), 40000), SockAddr::new(last, 80));
        let t1 = Instant::now();
        let r = trace(&rules, &node, &pkt, false);
        let tr = t1.elapsed();
        println!(
            "bench: {n:>6} services x 3 endpoints: rule set {:>8.1} ms ({lines} lines), trace {:>7.2} ms ({:?}, {} targets)",
            gen.as_secs_f64() * 1e3,
            tr.as_secs_f64() * 1e3,
            r.verdict,
            r.targets.len()
        );
    }
    endpoints_scale(&node, &cfg);
    scenarios_scale();
}

/// Every scenario built with every combination of its parameters (fixed
/// picks and one seed), as the invariant tests build them: the time per
/// build is what a change of tab, toggle or readiness costs.
fn scenarios_scale() {
    use kubehops_core::scenarios::{combinations, REGISTRY};
    for e in REGISTRY {
        let all = combinations(&(e.params)(), &[None, Some(7)]);
        let t = Instant::now();
        let hops: usize = all.iter().map(|p| (e.build)(p).steps.iter().map(|s| s.hops.len()).sum::<usize>()).sum();
        let took = t.elapsed().as_secs_f64();
        println!(
            "bench: scenario {:<22} {:>5} parameter combinations, {:>6} hops: {:>7.1} ms in all, {:.2} ms per build",
            e.id,
            all.len(),
            hops,
            took * 1e3,
            took * 1e3 / all.len() as f64
        );
        snapshot_cost(e, &all[..all.len().min(200)]);
    }
}

/// What the steps' data-plane snapshots add to a build: each step that
/// carries packets copies the nodes' and hosts' tables once, which costs
/// what cloning them costs.
fn snapshot_cost(e: &kubehops_core::scenarios::Entry, some: &[kubehops_core::scenarios::Params]) {
    let built: Vec<_> = some.iter().map(|p| (e.build)(p)).collect();
    let t = Instant::now();
    let copies: usize = built.iter().map(|s| s.steps.iter().filter_map(|st| st.snapshot.clone()).count()).sum();
    let took = t.elapsed().as_secs_f64();
    println!(
        "bench: scenario {:<22} {:.1} data-plane snapshots per build, {:.3} ms per build to copy them",
        e.id,
        copies as f64 / built.len() as f64,
        took * 1e3 / built.len() as f64
    );
}
