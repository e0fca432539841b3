//! Deep links: the URL hash that opens a walkthrough at a step.
//!
//! Form: `#/<walkthrough>/<step>[/<hop>][?seed=<n>]`, steps and hops
//! counted from 1; `<hop>` may be `end`; `seed` turns on seeded random picks. Parsing never fails: what cannot be understood
//! falls back to a default and is reported in `problems`, so a bad link
//! still opens a working page and says why it looks different.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub walkthrough: String,
    /// 0-based step.
    pub step: usize,
    /// Hops finished; `None` means "play the step from its start".
    pub hop: Option<HopPos>,
    /// Seeded random picks; `None` means the fixed picks.
    pub seed: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HopPos {
    /// This many hops finished.
    After(usize),
    End,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parsed {
    pub link: Link,
    pub problems: Vec<String>,
}

/// Parses a hash against the known walkthroughs and their step counts.
pub fn parse(hash: &str, known: &[(&str, usize)]) -> Parsed {
    let default = known.first().map_or("", |k| k.0).to_string();
    let (path, query) = hash.split_once('?').unwrap_or((hash, ""));
    let mut problems = Vec::new();
    let seed = parse_query(query, &mut problems);
    let body = path.trim_start_matches('#').trim_start_matches('/');
    let mut parts = body.split('/').filter(|p| !p.is_empty());
    let mut link = Link { walkthrough: default.clone(), step: 0, hop: None, seed };
    let Some(id) = parts.next() else { return Parsed { link, problems } };
    let steps = match known.iter().find(|k| k.0 == id) {
        Some(k) => {
            link.walkthrough = id.to_string();
            k.1
        }
        None => {
            problems.push(format!("There is no walkthrough named \"{}\"; showing \"{default}\".", short(id)));
            known.first().map_or(0, |k| k.1)
        }
    };
    if let Some(s) = parts.next() {
        match s.parse::<usize>() {
            Ok(n) if n >= 1 && n <= steps => link.step = n - 1,
            _ => problems.push(format!("Step \"{}\" does not exist; steps run from 1 to {steps}. Showing step 1.", short(s))),
        }
    }
    if let Some(h) = parts.next() {
        match h {
            "end" => link.hop = Some(HopPos::End),
            _ => match h.parse::<usize>() {
                Ok(n) => link.hop = Some(HopPos::After(n)),
                Err(_) => problems.push(format!("Hop \"{}\" is not a number; playing the step from its start.", short(h))),
            },
        }
    }
    Parsed { link, problems }
}

/// Reads `seed=<digits>` from the part after `?`, and complains about
/// anything else. A seed that is not all digits, or too large, is dropped:
/// the fixed picks are used.
fn parse_query(query: &str, problems: &mut Vec<String>) -> Option<u64> {
    let mut seed = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key.is_empty() {
            continue;
        }
        if key != "seed" {
            problems.push(format!("\"{}\" in the link is not understood and was ignored.", short(pair)));
            continue;
        }
        let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
        seed = value.parse::<u64>().ok().filter(|_| digits);
        if seed.is_none() {
            problems.push(format!("The seed \"{}\" is not a number (digits only, as in ?seed=42); showing the fixed picks.", short(value)));
        }
    }
    seed
}

/// The hash for a link.
pub fn format(link: &Link) -> String {
    let mut h = match link.hop {
        None => format!("#/{}/{}", link.walkthrough, link.step + 1),
        Some(HopPos::End) => format!("#/{}/{}/end", link.walkthrough, link.step + 1),
        Some(HopPos::After(n)) => format!("#/{}/{}/{}", link.walkthrough, link.step + 1, n),
    };
    if let Some(seed) = link.seed {
        h.push_str(&format!("?seed={seed}"));
    }
    h
}

/// Keeps echoed user input short and free of markup-looking characters.
fn short(s: &str) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).take(40).collect();
    if s.chars().count() > 40 {
        format!("{clean}…")
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const K: &[(&str, usize)] = &[("nodeport-loadbalancer", 5)];

    #[test]
    fn round_trips() {
        for l in [
            Link { walkthrough: "nodeport-loadbalancer".into(), step: 2, hop: None, seed: None },
            Link { walkthrough: "nodeport-loadbalancer".into(), step: 4, hop: Some(HopPos::End), seed: Some(42) },
            Link { walkthrough: "nodeport-loadbalancer".into(), step: 0, hop: Some(HopPos::After(3)), seed: None },
        ] {
            let p = parse(&format(&l), K);
            assert_eq!(p.link, l);
            assert!(p.problems.is_empty());
        }
    }

    #[test]
    fn bad_links_fall_back_and_say_why() {
        let p = parse("#/nope/9", K);
        assert_eq!(p.link.walkthrough, "nodeport-loadbalancer");
        assert_eq!(p.link.step, 0);
        assert_eq!(p.problems.len(), 2, "{:?}", p.problems);
        let p = parse("#/nodeport-loadbalancer/0/x", K);
        assert_eq!((p.link.step, p.link.hop), (0, None));
        assert_eq!(p.problems.len(), 2);
        let p = parse("", K);
        assert!(p.problems.is_empty());
        let long = format!("#/{}", "a".repeat(500));
        assert!(parse(&long, K).problems[0].len() < 120);
    }

    #[test]
    fn seeds_are_digits_only() {
        assert_eq!(parse("#/nodeport-loadbalancer/3/end?seed=42", K).link.seed, Some(42));
        for bad in ["?seed=abc", "?seed=", "?seed=-1", "?seed=99999999999999999999999", "?seed=+4"] {
            let p = parse(&format!("#/nodeport-loadbalancer/3{bad}"), K);
            assert_eq!(p.link.seed, None, "{bad}");
            assert!(p.problems.len() == 1 && p.problems[0].contains("seed"), "{bad}: {:?}", p.problems);
        }
        let p = parse("#?&&=&seed=5&x=\u{0}?/9", K);
        assert_eq!(p.link.seed, Some(5));
        assert!(p.problems.iter().any(|m| m.contains("not understood")), "{:?}", p.problems);
    }
}
