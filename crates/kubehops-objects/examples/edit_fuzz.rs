//! Fuzzes the manifest editor's reading natively: random and mutated
//! manifests through `edit::build` on every scenario, which reads,
//! validates, dry-runs and (when admitted) plays them, and `compact`'s
//! link packing. A panic aborts the run; the count of cases, refused and
//! admitted, is printed.
//!
//!     cargo run --release -p kubehops-objects --example edit_fuzz -- [cases] [seed]

use kubehops_core::compact;
use kubehops_core::scenarios::{Params, Value, REGISTRY};
use kubehops_objects::edit;

/// xorshift64*: repeatable from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Pieces a manifest is made of, good and bad.
const TOKENS: &[&str] = &[
    "type: NodePort", "type: LoadBalancer", "type: ExternalName", "type: ClusterIP", "type: Bogus", "clusterIP: None", "clusterIP: 10.96.0.1",
    "clusterIP: 300.1.1.1", "nodePort: 29000", "nodePort: 30080", "nodePort: 65536", "nodePort: -1", "port: 0", "port: 80", "targetPort: http",
    "targetPort: nope", "targetPort: 8080", "protocol: UDP", "protocol: SCTP", "protocol: ICMP", "externalName: mydb.example.com", "externalName: \"\"",
    "externalTrafficPolicy: Local", "internalTrafficPolicy: Local", "sessionAffinity: ClientIP", "sessionAffinity: Sticky", "externalIPs: [192.0.2.9]",
    "loadBalancerSourceRanges: [10.0.0.0/33]", "loadBalancerSourceRanges: [192.0.2.0/24]", "selector: {app: api}", "selector: {}", "ports: []",
    "- port: 81", "- {port: 82, name: b}", "name: UPPER", "namespace: kube-system", "&a [*a]", "*b", "!!binary AAAA", "{", "}", "[", "]", "\"", "'",
    ": :", "- - -", "---", "...", "\t", "#", "%YAML 1.2", "?", "|", ">", "\u{feff}", "\u{0}", "é", "9999999999999999999999",
];

fn mutate(rng: &mut Rng, base: &str) -> String {
    let mut lines: Vec<String> = base.lines().map(String::from).collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(lines.len() + 1);
        let indent = " ".repeat(rng.below(4) * 2);
        match rng.below(6) {
            0 if !lines.is_empty() => {
                lines.remove(at.min(lines.len() - 1));
            }
            1 => lines.insert(at, format!("{indent}{}", rng.pick(TOKENS))),
            2 if !lines.is_empty() => {
                let i = at.min(lines.len() - 1);
                let cut = rng.below(lines[i].len() + 1);
                let keep: String = lines[i].chars().take(cut).collect();
                lines[i] = format!("{keep}{}", rng.pick(TOKENS));
            }
            3 if !lines.is_empty() => {
                let i = rng.below(lines.len());
                let l = lines[i].clone();
                lines.insert(at, l);
            }
            4 => {
                let bytes: String = (0..rng.below(12)).map(|_| char::from(32 + rng.below(95) as u8)).collect();
                lines.insert(at, bytes);
            }
            _ => lines.insert(at, format!("{indent}{}: {}", rng.pick(&["spec", "ports", "metadata", "x"]), rng.pick(TOKENS))),
        }
    }
    lines.join("\n")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let cases: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0x5eed_cafe);
    let mut rng = Rng(seed | 1);
    let own: Vec<(&str, String)> = REGISTRY.iter().filter(|e| e.edit.is_some()).map(|e| (e.id, edit::starting_text(e.id, &Params::default()))).collect();
    let t0 = std::time::Instant::now();
    let (mut admitted, mut refused) = (0usize, 0usize);
    for i in 0..cases {
        let (id, base) = &own[i % own.len()];
        let text = if i % 10 == 0 { (0..rng.below(200)).map(|_| char::from(rng.below(128) as u8)).collect() } else { mutate(&mut rng, base) };
        if let Ok(packed) = compact::pack(&text) {
            assert_eq!(compact::unpack(&packed).as_deref(), Ok(text.as_str()));
        }
        let b = edit::build(id, &Params::default().with("manifest", Value::Manifest(text))).expect("known scenario");
        match (b.scenario, b.refusal) {
            (Some(_), None) => admitted += 1,
            (None, Some(r)) => {
                assert!(!r.problems.is_empty() && !r.headline.is_empty());
                refused += 1;
            }
            _ => panic!("a build is either a scenario or a refusal"),
        }
    }
    println!("edit fuzz: {cases} cases (seed {seed}), none panicked: {admitted} admitted and played, {refused} refused; {:.1} s", t0.elapsed().as_secs_f64());
}
