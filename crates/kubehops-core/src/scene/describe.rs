//! Words for what is on screen: the canvas's accessible name at a frame,
//! and what the live region announces as a step and its hops play. Both
//! come from the frame and the hop's typed fields, like the picture.

use super::transcript::{hop_summary, kind_name, rewrite_name, short};
use super::Frame;
use crate::scenarios::Scenario;
use crate::sim::Hop;

/// The hop in a few words: `request from Node-2 to Node-3, DNAT to
/// 10.244.3.9:8080, SNAT to 10.0.0.12:36632`.
fn hop_words(s: &Scenario, h: &Hop) -> String {
    let route = if h.from == h.to { format!("on {}", short(s, h.from)) } else { format!("from {} to {}", short(s, h.from), short(s, h.to)) };
    let mut out = format!("{} {route}", kind_name(h));
    if h.what_if {
        out.push_str(" (what if)");
    }
    match (&h.packet, &h.arp) {
        (Some(p), _) if !p.rewrites.is_empty() => {
            for r in &p.rewrites {
                out.push_str(&format!(", {} to {}", rewrite_name(r.kind), r.to));
            }
        }
        (Some(p), _) => out.push_str(&format!(", {}", p.after)),
        (None, Some(a)) => out.push_str(&format!(", {}", a.summary())),
        (None, None) => out.push_str(&format!(", {}", h.caption)),
    }
    if h.dropped.is_some() && h.packet.is_some() {
        out.push_str(", dropped");
    }
    out
}

/// The canvas's label at a frame: `Step 2 of 5, Dial Node-2: hop 3 of 6,
/// request from Node-2 to Node-3, DNAT to 10.244.3.9:8080`.
pub fn frame_label(s: &Scenario, f: &Frame) -> String {
    let Some(st) = s.steps.get(f.step) else { return s.title.clone() };
    let head = format!("Step {} of {}, {}", f.step + 1, s.steps.len(), st.title);
    let n = st.hops.len();
    match f.current.and_then(|i| st.hops.get(i).map(|h| (i, h))) {
        Some((i, h)) => {
            let end = if f.done == n { " (the end of the step)" } else { "" };
            format!("{head}: hop {} of {n}, {}{end}", i + 1, hop_words(s, h))
        }
        None if n == 0 => format!("{head}: no hops"),
        None => format!("{head}: {n} hop{}, none played yet", if n == 1 { "" } else { "s" }),
    }
}

/// What the live region says when the frame reaches (`step`, `current`):
/// a step's title and narration as it starts, then each hop as it is
/// played (the first hop together with the step, so a quick start does
/// not cut the narration off).
pub fn announcement(s: &Scenario, step: usize, current: Option<usize>) -> String {
    let Some(st) = s.steps.get(step) else { return String::new() };
    let intro = format!("Step {} of {}: {}. {}", step + 1, s.steps.len(), st.title, st.narration);
    let hop = |i: usize| st.hops.get(i).map(|h| format!("Hop {} of {}: {}. {}", i + 1, st.hops.len(), hop_summary(s, h), h.detail));
    match current {
        None => intro,
        Some(0) => hop(0).map_or(intro.clone(), |h| format!("{intro} {h}")),
        Some(i) => hop(i).unwrap_or_default(),
    }
}

/// The line under the canvas: what the hop on screen does, in the core's
/// own sentence for it, or, before a step plays, what the step holds and
/// what to press.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Caption {
    /// `Hop 2 of 6 · request`, `Step 1 of 5 · Type NodePort`.
    pub head: String,
    pub text: String,
}

/// The caption at (`step`, `current`).
pub fn caption(s: &Scenario, step: usize, current: Option<usize>) -> Caption {
    let Some(st) = s.steps.get(step) else { return Caption::default() };
    let n = st.hops.len();
    match current.and_then(|i| st.hops.get(i).map(|h| (i, h))) {
        Some((i, h)) => {
            let what_if = if h.what_if { s.what_if.as_ref().map_or_else(|| " · what if".to_string(), |w| format!(" · what if: {w}")) } else { String::new() };
            Caption { head: format!("Hop {} of {n} · {}{what_if}", i + 1, kind_name(h)), text: h.detail.clone() }
        }
        None if n == 0 => Caption { head: format!("Step {} of {} · {}", step + 1, s.steps.len(), st.title), text: format!("Nothing moves in this step: read what it says{}", go_on(s, step, ", then go on with →.", ".")) },
        None if step == 0 => Caption { head: format!("Step 1 of {} · {}", s.steps.len(), st.title), text: intro(s, step, n) },
        None => {
            let first = &st.hops[0];
            let who = if first.from == first.to { format!("on {}", short(s, first.from)) } else { format!("from {} to {}", short(s, first.from), short(s, first.to)) };
            Caption {
                head: format!("Step {} of {} · {}", step + 1, s.steps.len(), st.title),
                text: format!("{n} hop{} to watch, the first {} {who}. Press Play or Space to send it{}", if n == 1 { "" } else { "s" }, kind_name(first), go_on(s, step, "; → opens the next step.", ".")),
            }
        }
    }
}

/// What the first screen says: what the scenario is about (its
/// registry's line), what the picture shows, column by column as the
/// scenario has them, and what to press.
fn intro(s: &Scenario, step: usize, hops: usize) -> String {
    // `about`, not the registry: the page's wasm must not reach the
    // builders (the registry's entries point to them; the catalog does not).
    let about = crate::scenarios::about(&s.id).map_or_else(String::new, |e| format!("{}. ", e.blurb.trim_end_matches('.')));
    format!("{about}{}", picture(s, step, hops))
}

/// What the picture shows and what to press.
fn picture(s: &Scenario, step: usize, hops: usize) -> String {
    use crate::sim::Zone;
    let has = |z: Zone| s.actors.iter().any(|a| a.zone == z);
    let mut parts = Vec::new();
    if has(Zone::Outside) {
        parts.push("what is outside the cluster on the left");
    }
    if has(Zone::ControlPlane) {
        parts.push("its control plane");
    }
    parts.push("each node with its Pods and the rules kube-proxy wrote there, which the node's kernel applies to every packet");
    let what = match parts.as_slice() {
        [one] => one.to_string(),
        [init @ .., last] => format!("{}, then {last}", init.join(", ")),
        [] => String::new(),
    };
    format!("The picture is the cluster: {what}. Press Play or Space to watch this step's {hops} hop{} one by one{}", if hops == 1 { "" } else { "s" }, go_on(s, step, "; → opens the next step.", "."))
}

/// How a caption ends: with the way to the next step where there is one
/// (`more`), else with `last` (the last step has nowhere to go).
fn go_on(s: &Scenario, step: usize, more: &'static str, last: &'static str) -> &'static str {
    if step + 1 < s.steps.len() {
        more
    } else {
        last
    }
}

/// A file name for the frame, without its extension:
/// `kubehops-nodeport-loadbalancer-step2-hop3` (`-start`, or `-end`).
pub fn file_stem(s: &Scenario, f: &Frame) -> String {
    let n = s.steps.get(f.step).map_or(0, |st| st.hops.len());
    let at = match f.current {
        None => "start".to_string(),
        Some(_) if f.done == n => "end".to_string(),
        Some(i) => format!("hop{}", i + 1),
    };
    let id: String = s.id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    format!("kubehops-{id}-step{}-{at}", f.step + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::build_default;
    use crate::scene::frame;

    #[test]
    fn the_label_names_the_step_the_hop_and_its_rewrites() {
        let s = build_default("nodeport-loadbalancer").unwrap();
        // Step 2, hop 2: Node-2 DNATs to the Pod on Node-3 and masquerades.
        let f = frame(&s, 1, 2.0);
        let label = frame_label(&s, &f);
        assert!(label.starts_with("Step 2 of 5, Dial Node-2: hop 2 of 6, request from Node-2 to Node-3"), "{label}");
        assert!(label.contains("DNAT to 10.244.3.9:8080") && label.contains("SNAT to 10.0.0.12:"), "{label}");
        let start = frame_label(&s, &frame(&s, 1, 0.0));
        assert_eq!(start, "Step 2 of 5, Dial Node-2: 6 hops, none played yet");
        let end = frame_label(&s, &frame(&s, 1, 6.0));
        assert!(end.contains("hop 6 of 6") && end.ends_with("(the end of the step)"), "{end}");
        // Halfway along hop 3, it is hop 3 that is shown.
        assert!(frame_label(&s, &frame(&s, 1, 2.5)).contains("hop 3 of 6"));
        assert_eq!(file_stem(&s, &frame(&s, 1, 2.5)), "kubehops-nodeport-loadbalancer-step2-hop3");
        assert_eq!(file_stem(&s, &frame(&s, 1, 6.0)), "kubehops-nodeport-loadbalancer-step2-end");
        assert_eq!(file_stem(&s, &frame(&s, 0, 0.0)), "kubehops-nodeport-loadbalancer-step1-start");
    }

    #[test]
    fn announcements_start_with_the_narration_then_follow_the_hops() {
        let s = build_default("nodeport-loadbalancer").unwrap();
        let st = &s.steps[1];
        let intro = announcement(&s, 1, None);
        assert!(intro.starts_with("Step 2 of 5: Dial Node-2. ") && intro.ends_with(&st.narration), "{intro}");
        let first = announcement(&s, 1, Some(0));
        assert!(first.starts_with(&intro) && first.contains("Hop 1 of 6: Request from Laptop to Node-2"), "{first}");
        let third = announcement(&s, 1, Some(2));
        assert!(third.starts_with("Hop 3 of 6: ") && third.ends_with(&st.hops[2].detail), "{third}");
        assert_eq!(announcement(&s, 99, None), "");
    }

    #[test]
    fn the_first_screen_says_what_the_scenario_shows_and_what_to_press() {
        use crate::scenarios::REGISTRY;
        let mut read = 0;
        for e in REGISTRY {
            let s = build_default(e.about.id).unwrap();
            let Some(first) = s.steps.first() else { continue };
            if first.hops.is_empty() {
                continue;
            }
            let text = caption(&s, 0, None).text;
            assert!(text.starts_with(e.about.blurb) && text.contains("Press Play"), "{}: {text}", e.about.id);
            assert!(text.contains("rules kube-proxy wrote there, which the node's kernel applies"), "{}: who applies the rules is not said: {text}", e.about.id);
            read += 1;
        }
        assert!(read >= 3, "only {read} scenarios open on a step with hops");
    }

    #[test]
    fn only_a_step_with_a_next_one_points_to_it() {
        use crate::scenarios::REGISTRY;
        for e in REGISTRY {
            let s = build_default(e.about.id).unwrap();
            let last = s.steps.len().saturating_sub(1);
            for step in 0..s.steps.len() {
                let text = caption(&s, step, None).text;
                assert_eq!(text.contains("→"), step < last, "{} step {}: {text}", e.about.id, step + 1);
            }
        }
    }
}
