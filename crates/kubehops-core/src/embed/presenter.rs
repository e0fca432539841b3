//! The presenter view: a second window with the current and the next
//! step's narration and the step's hops, taken from the scenario (never
//! from what the main window drew), and the messages on the windows'
//! `BroadcastChannel` that keep the two in step.
//!
//! Both windows send `{type: "kubehops:sync", version: 1, from, link, done}`:
//! who sends it (`"main"` or `"notes"`), the link hash of the state it
//! shows (scenario, step, hop at rest, parameters) and the hops finished.
//! The main window sends it whenever its state changes; the presenter
//! view when its presenter steps. A main window acts only on the notes'
//! messages and the notes only on a main window's, so two main windows
//! never drive each other. A window that receives a state it does not
//! show opens it, keeping its own display options ([`adopt`]).
//! `{type: "kubehops:hello", version: 1}` asks the main window for its
//! state.

use super::protocol::Data;
use super::Display;
use crate::link;
use crate::scenarios::Scenario;
use crate::sim::{HopKind, Leg};

/// The channel's name.
pub const CHANNEL: &str = "kubehops-presenter";

#[derive(Clone, Debug, PartialEq)]
pub struct StepNote {
    /// 1-based.
    pub number: usize,
    pub title: String,
    pub narration: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopState {
    Done,
    /// The hop shown last, or in flight.
    Current,
    Coming,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HopNote {
    /// 1-based.
    pub number: usize,
    pub kind: HopKind,
    pub back: bool,
    pub what_if: bool,
    pub arp: bool,
    pub from: String,
    pub to: String,
    pub caption: String,
    pub state: HopState,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Notes {
    pub title: String,
    pub steps: usize,
    pub current: StepNote,
    pub next: Option<StepNote>,
    pub hops: Vec<HopNote>,
}

fn step_note(s: &Scenario, i: usize) -> Option<StepNote> {
    s.steps.get(i).map(|st| StepNote { number: i + 1, title: st.title.clone(), narration: st.narration.clone() })
}

/// The presenter's notes for `step` (0-based, clamped) after `progress`
/// beats of it: a hop in flight is current, and at rest the last one
/// finished.
pub fn notes(s: &Scenario, step: usize, progress: f64) -> Notes {
    let step = step.min(s.steps.len().saturating_sub(1));
    let hops = s.steps.get(step).map_or(&[][..], |st| &st.hops[..]);
    let p = if progress.is_finite() { progress.clamp(0.0, hops.len() as f64) } else { 0.0 };
    // Hop i is current while it flies (i < p < i + 1) or when it finished last (p == i + 1).
    let current = if p > 0.0 { Some(p.ceil() as usize - 1) } else { None };
    let name = |id| s.actor(id).map(|a| a.short.clone()).unwrap_or_default();
    Notes {
        title: s.title.clone(),
        steps: s.steps.len(),
        current: step_note(s, step).unwrap_or(StepNote { number: 1, title: String::new(), narration: String::new() }),
        next: step_note(s, step + 1),
        hops: hops
            .iter()
            .enumerate()
            .map(|(i, h)| HopNote {
                number: i + 1,
                kind: h.kind,
                back: h.leg == Leg::Back,
                what_if: h.what_if,
                arp: h.arp.is_some(),
                from: name(h.from),
                to: name(h.to),
                caption: h.caption.clone(),
                state: match current {
                    Some(c) if i == c => HopState::Current,
                    Some(c) if i < c => HopState::Done,
                    _ => HopState::Coming,
                },
            })
            .collect(),
    }
}

/// A message on the presenter channel.
#[derive(Clone, Debug, PartialEq)]
pub enum Sync {
    Hello,
    State { from_notes: bool, link: String, done: usize },
}

impl Sync {
    pub fn parse(d: &Data) -> Option<Sync> {
        let Data::Map(m) = d else { return None };
        let get = |k: &str| m.iter().find(|(key, _)| key == k).map(|(_, v)| v);
        if get("version") != Some(&Data::Num(1.0)) {
            return None;
        }
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        match get("type") {
            Some(Data::Text(t)) if t == "kubehops:hello" && keys.len() == 2 => Some(Sync::Hello),
            Some(Data::Text(t)) if t == "kubehops:sync" && keys.len() == 5 => {
                let from_notes = match get("from") {
                    Some(Data::Text(f)) if f == "notes" => true,
                    Some(Data::Text(f)) if f == "main" => false,
                    _ => return None,
                };
                let Some(Data::Text(link)) = get("link") else { return None };
                let Some(Data::Num(n)) = get("done") else { return None };
                (link.starts_with("#/") && link.len() <= 2048 && n.is_finite() && n.fract() == 0.0 && *n >= 0.0 && *n <= 10_000.0)
                    .then(|| Sync::State { from_notes, link: link.clone(), done: *n as usize })
            }
            _ => None,
        }
    }

    pub fn data(&self) -> Data {
        let head = |t: &str| vec![("type".to_string(), Data::Text(t.into())), ("version".to_string(), Data::Num(1.0))];
        Data::Map(match self {
            Sync::Hello => head("kubehops:hello"),
            Sync::State { from_notes, link, done } => [
                head("kubehops:sync"),
                vec![
                    ("from".into(), Data::Text(if *from_notes { "notes" } else { "main" }.into())),
                    ("link".into(), Data::Text(link.clone())),
                    ("done".into(), Data::Num(*done as f64)),
                ],
            ]
            .concat(),
        })
    }
}

/// The state another window sent, as this window's link: its scenario,
/// step, hop and parameters, with this window's display options.
pub fn adopt(received: &str, own: &Display) -> String {
    // Read without counting its steps (the sender showed it; the page
    // that opens it checks them against the scenario).
    let mut l = link::parse_with(received, crate::scenarios::CATALOG, |_, _| usize::MAX).link;
    l.display = own.clone();
    link::format(&l)
}


/// `HH:MM:SS` for a count of seconds (the clock and the time elapsed).
pub fn clock(seconds: f64) -> String {
    let s = if seconds.is_finite() { seconds.max(0.0) as u64 } else { 0 };
    format!("{:02}:{:02}:{:02}", s / 3600 % 100, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::build_default;

    #[test]
    fn notes_come_from_the_scenario() {
        let s = build_default("nodeport-loadbalancer").unwrap();
        let n = notes(&s, 1, 0.0);
        assert_eq!((n.current.number, n.current.title.as_str()), (2, s.steps[1].title.as_str()));
        assert_eq!(n.current.narration, s.steps[1].narration);
        assert_eq!(n.next.as_ref().map(|x| x.narration.as_str()), Some(s.steps[2].narration.as_str()));
        assert_eq!(n.hops.len(), s.steps[1].hops.len());
        assert!(n.hops.iter().all(|h| h.state == HopState::Coming), "nothing played yet");
        assert_eq!(n.hops[0].from, "Laptop");
        assert_eq!(n.hops[0].caption, s.steps[1].hops[0].caption);
        // At rest after two hops, the second is current; in flight, the third.
        let n = notes(&s, 1, 2.0);
        assert_eq!(n.hops.iter().map(|h| h.state).collect::<Vec<_>>()[..3], [HopState::Done, HopState::Current, HopState::Coming]);
        let n = notes(&s, 1, 2.4);
        assert_eq!(n.hops[2].state, HopState::Current);
        // The last step has no next; out of range is clamped.
        let last = notes(&s, 99, f64::NAN);
        assert_eq!((last.current.number, last.next), (5, None));
    }

    #[test]
    fn sync_messages_round_trip_and_odd_ones_are_ignored() {
        for m in [Sync::Hello, Sync::State { from_notes: true, link: "#/service-types/2/end?tab=nodeport".into(), done: 3 }, Sync::State { from_notes: false, link: "#/a".into(), done: 0 }] {
            assert_eq!(Sync::parse(&m.data()), Some(m));
        }
        let t = |s: &str| Data::Text(s.into());
        for bad in [
            Data::Null,
            Data::Map(vec![("type".into(), t("kubehops:sync")), ("version".into(), Data::Num(1.0)), ("from".into(), t("main")), ("link".into(), t("https://evil.example/")), ("done".into(), Data::Num(1.0))]),
            Data::Map(vec![("type".into(), t("kubehops:sync")), ("version".into(), Data::Num(1.0)), ("from".into(), t("main")), ("link".into(), t("#/a")), ("done".into(), Data::Num(-1.0))]),
            Data::Map(vec![("type".into(), t("kubehops:sync")), ("version".into(), Data::Num(2.0)), ("from".into(), t("main")), ("link".into(), t("#/a")), ("done".into(), Data::Num(1.0))]),
            Data::Map(vec![("type".into(), t("kubehops:sync")), ("version".into(), Data::Num(1.0)), ("from".into(), t("other")), ("link".into(), t("#/a")), ("done".into(), Data::Num(1.0))]),
            Data::Map(vec![("type".into(), t("kubehops:sync")), ("version".into(), Data::Num(1.0)), ("link".into(), t("#/a")), ("done".into(), Data::Num(1.0))]),
            Data::Map(vec![("type".into(), t("kubehops:hello")), ("version".into(), Data::Num(1.0)), ("x".into(), Data::Null)]),
        ] {
            assert_eq!(Sync::parse(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_received_state_keeps_the_own_display() {
        let main = Display::default();
        let notes = Display { notes: true, theme: super::super::Theme::Dark, ..Display::default() };
        let got = link::parse(&adopt("#/service-types/3/end?tab=nodeport&notes=1&theme=dark", &main)).link;
        let sent = link::parse("#/service-types/3/end?tab=nodeport").link;
        assert_eq!(got, sent, "same state, the main window's display");
        assert_eq!(adopt("#/nodeport-loadbalancer/2", &notes), "#/nodeport-loadbalancer/2?theme=dark&notes=1");
        assert_eq!(adopt("garbage", &main), "#/nodeport-loadbalancer/1");
    }


    #[test]
    fn clock_reads_hours_minutes_seconds() {
        assert_eq!(clock(0.0), "00:00:00");
        assert_eq!(clock(3725.9), "01:02:05");
        assert_eq!(clock(f64::NAN), "00:00:00");
    }
}
