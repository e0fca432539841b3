//! A plain-text account of a scenario, for golden files and for people:
//! every step's narration and hops, with packets, rewrites, payloads and
//! matched rules, and the kubectl output and conntrack tables after it.

use super::Scenario;
use crate::sim::ActorId;
use std::fmt::Write as _;

/// Wraps narration at 100 columns so golden diffs stay readable.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        if line > 0 && line + 1 + word.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}

pub fn render_text(s: &Scenario) -> String {
    let name = |a: ActorId| s.actor(a).map_or_else(|| format!("{a:?}"), |a| a.label.clone());
    let mut out = format!("# {} ({})\n", s.title, s.id);
    for (i, st) in s.steps.iter().enumerate() {
        let _ = writeln!(out, "\n## Step {}: {}", i + 1, st.title);
        let _ = writeln!(out, "{}", wrap(&st.narration, 100));
        let changes: Vec<String> = st.manifest.changed.iter().filter_map(|&l| st.manifest.lines.get(l)).map(|l| l.trim().to_string()).collect();
        let _ = writeln!(out, "manifest {}, changes: {}", st.manifest.file, changes.join(" | "));
        for (j, h) in st.hops.iter().enumerate() {
            let what_if = match (&s.what_if, h.what_if) {
                (Some(w), true) => format!(" (what if: {w})"),
                (None, true) => " (what if)".into(),
                _ => String::new(),
            };
            let _ = writeln!(out, "{}. [{:?}] {} -> {}{}: {}", j + 1, h.kind, name(h.from), name(h.to), what_if, h.caption);
            if let Some(r) = &h.dropped {
                let _ = writeln!(out, "   dropped: {r:?}");
            }
            if let Some(a) = &h.arp {
                let _ = writeln!(out, "   arp on {}: {}", a.iface, a.summary());
            }
            let Some(p) = &h.packet else { continue };
            if p.before != p.after {
                let _ = writeln!(out, "   before {}", p.before);
            }
            let _ = writeln!(out, "   wire   {}", p.after);
            if let Some(pl) = &p.payload {
                let _ = writeln!(out, "   carries {}", pl.summary());
            }
            for r in &p.rewrites {
                let _ = writeln!(out, "   {:?} {:?} {} => {}", r.kind, r.field, r.from, r.to);
            }
            if p.by_conntrack {
                let _ = writeln!(out, "   (by conntrack)");
            }
            for m in &p.matched {
                let _ = writeln!(out, "   rule {:>3}: {}", m.line, m.text);
            }
            if !p.could_reach.is_empty() {
                let _ = writeln!(out, "   could reach: {}", p.could_reach.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "));
            }
        }
        for e in &st.evidence {
            let _ = writeln!(out, "evidence: {} ({})", e.command, e.purpose);
            for l in e.stderr.lines().chain(e.stdout.lines()) {
                let _ = writeln!(out, "  | {l}");
            }
        }
        if let Some(v) = st.views.last() {
            let _ = write!(out, "$ {}\n{}", v.kubectl.command, v.kubectl.render());
            for nv in &v.nodes {
                for c in &nv.conntrack {
                    let _ = writeln!(out, "conntrack {}: {}", name(nv.node), c.text);
                }
            }
            for hv in &v.hosts {
                for c in &hv.conntrack {
                    let _ = writeln!(out, "conntrack {}: {}", name(hv.host), c.text);
                }
                for n in &hv.neighbours {
                    let _ = writeln!(out, "neighbour {}: {n}", name(hv.host));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn wrap_keeps_words_whole() {
        assert_eq!(super::wrap("aaa bbb ccc", 7), "aaa bbb\nccc");
        assert_eq!(super::wrap("", 7), "");
    }
}
