//! The first frame: before the wasm arrives, the page already shows each
//! scenario's opening state, drawn by the core (`scene::drawing`, written
//! out by `scene::svg`: the same drawing the app draws), with its title,
//! its steps, the caption and the narration.
//!
//! Run by Trunk after a build (Trunk.toml's post_build hook), on the
//! staged `index.html`: it writes the frames into the page and a small
//! script, loaded before the body, that shows the frame the link asks for
//! (a scenario's first step), or, for any other link (another step,
//! parameters, an embed), a neutral stand-in of the same layout, never
//! another state presented as this one. The app removes it all when it
//! mounts (`src/main.rs`).
//!
//! It also writes each opening state as data (`opening-<id>-<hash>.bin`:
//! the scenario as the core built it, in postcard, as the worker sends
//! scenarios), and the same script starts fetching the one the link names
//! while the wasm is still on its way. The app then reads that instead of
//! building the scenario on the main thread at start-up (a build runs in
//! the wasm's first, unoptimised code there: 39 ms on CI's machine, where
//! reading the data takes a few).
//!
//!   kubehops-firstframe [DIR]   (DIR: TRUNK_STAGING_DIR, else dist)

use kubehops_core::scenarios::{build_default, Scenario, REGISTRY};
use kubehops_core::embed::KEYS as DISPLAY_KEYS;
use kubehops_core::scene::camera::Viewport;
use kubehops_core::scene::describe::{caption, frame_label};
use kubehops_core::scene::svg::{escape, render};
use kubehops_core::scene::{drawing, frame, Layout};
use std::fmt::Write;
use std::path::PathBuf;

/// Where the frames go in the page, and the marker that says they are there.
const MARK: &str = "<!-- kubehops-firstframe -->";

/// The frame sizes the first pictures are drawn for, one per width class
/// of the stylesheet (`.kh-first-narrow` under 560 px, `-medium` under
/// 1200 px, `-wide` above), each as the canvas is there (16:9.5, at least
/// 280 px high): the app's camera takes over, from the measured size, when
/// it mounts.
const WIDTHS: [(&str, (f64, f64)); 3] = [("narrow", (380.0, 280.0)), ("medium", (700.0, 416.0)), ("wide", (1150.0, 683.0))];

fn main() {
    let dir = std::env::args().nth(1).or_else(|| std::env::var("TRUNK_STAGING_DIR").ok()).map_or_else(|| PathBuf::from("dist"), PathBuf::from);
    let page = dir.join("index.html");
    let html = match std::fs::read_to_string(&page) {
        Ok(h) => h,
        Err(e) => fail(&format!("cannot read {}: {e}", page.display())),
    };
    let scenarios = opening_scenarios();
    let data = openings(&scenarios);
    for o in &data {
        if let Err(e) = std::fs::write(dir.join(&o.file), &o.bytes) {
            fail(&format!("cannot write {}: {e}", o.file));
        }
    }
    let (out, pick) = match write_frames(&html, &scenarios, &data) {
        Ok(x) => x,
        Err(e) => fail(&e),
    };
    if let Err(e) = check_stylesheet(&dir) {
        fail(&e);
    }
    let name = format!("firstframe-{:016x}.js", kubehops_core::hash::fnv1a(pick.as_bytes()));
    if let Err(e) = std::fs::write(dir.join(&name), &pick) {
        fail(&format!("cannot write {name}: {e}"));
    }
    // In the head, before the body is drawn (only once: the pictures have
    // titles of their own).
    let out = out.replacen("</head>", &format!("  <script src=\"./{name}\"></script>\n  </head>"), 1);
    if let Err(e) = std::fs::write(&page, out) {
        fail(&format!("cannot write {}: {e}", page.display()));
    }
    println!("kubehops-firstframe: {} frames and a stand-in written into {}", scenarios.len(), page.display());
    for o in &data {
        println!("kubehops-firstframe: {} ({} bytes)", o.file, o.bytes.len());
    }
}

/// Every scenario but Your cluster (which opens empty), as it opens.
fn opening_scenarios() -> Vec<Scenario> {
    REGISTRY.iter().filter(|e| e.id != "your-cluster").filter_map(|e| build_default(e.id)).collect()
}

/// One scenario's opening state as the app reads it.
struct Opening {
    id: String,
    /// Named by a hash of its bytes, so a cached copy is never stale.
    file: String,
    bytes: Vec<u8>,
}

/// Each scenario as data, without the data-plane snapshots that only a
/// real-kernel replay reads.
fn openings(scenarios: &[Scenario]) -> Vec<Opening> {
    scenarios
        .iter()
        .filter_map(|s| {
            let bytes = postcard::to_allocvec(&s.clone().without_snapshots()).ok()?;
            let file = format!("opening-{}-{:016x}.bin", s.id, kubehops_core::hash::fnv1a(&bytes));
            Some(Opening { id: s.id.clone(), file, bytes })
        })
        .collect()
}

fn fail(why: &str) -> ! {
    eprintln!("kubehops-firstframe: {why}");
    std::process::exit(1);
}

/// The page with the frames in it, and the script that picks one (and
/// fetches its data).
fn write_frames(html: &str, scenarios: &[Scenario], data: &[Opening]) -> Result<(String, String), String> {
    if html.contains(MARK) {
        return Err("the frames are already in the page".into());
    }
    let at = html.find("<body>").ok_or("no <body> in the page")? + "<body>".len();
    let mut frames = String::new();
    let _ = write!(frames, "\n    {MARK}\n    <div id=\"kh-first\" aria-busy=\"true\">");
    for s in scenarios {
        frames.push_str(&page(Some(s)));
    }
    frames.push_str(&page(None));
    frames.push_str("</div>");
    let ids: Vec<String> = scenarios.iter().map(|s| format!("'{}'", s.id)).collect();
    Ok((format!("{}{frames}{}", &html[..at], &html[at..]), pick_script(&ids, data)))
}

/// Every frame is shown only by a rule of the stylesheet naming it: a
/// scenario without one would never show its frame.
fn check_stylesheet(dir: &std::path::Path) -> Result<(), String> {
    let css = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .filter(|f| f.file_name().to_string_lossy().ends_with(".css"))
        .filter_map(|f| std::fs::read_to_string(f.path()).ok())
        .collect::<String>();
    let ids = REGISTRY.iter().filter(|e| e.id != "your-cluster").map(|e| e.id).chain(["standin"]);
    for id in ids {
        let rule = format!(r#"html[data-first="{id}"] [data-first-of="{id}"]"#);
        if !css.contains(&rule) {
            return Err(format!("the stylesheet has no rule `{rule}`: the frame of {id} would never show"));
        }
    }
    Ok(())
}

/// The script that runs before the body is drawn: which frame the link
/// asks for (`#/<id>/1` with nothing after, or no hash at all: the first
/// scenario), else the stand-in; an embed link gets the embed's layout.
///
/// It also starts fetching the opening state of the scenario the link
/// names (any step), when the link sets nothing but display options, and
/// leaves the answer as `window.khOpening = {id, bytes}` (`bytes`: a
/// promise of an ArrayBuffer, or null when it failed) for the app
/// (`src/opening.rs`), which checks the parameters again.
fn pick_script(ids: &[String], data: &[Opening]) -> String {
    let files: Vec<String> = data.iter().map(|o| format!("'{}':'./{}'", o.id, o.file)).collect();
    let keys: Vec<String> = DISPLAY_KEYS.iter().chain(&["view"]).map(|k| format!("'{k}'")).collect();
    format!(
        "(function(){{var h=location.hash,r=document.documentElement,ids=[{}],m=/^#\\/([a-z-]+)\\/1$/.exec(h),id=h===''||h==='#'||h==='#/'?ids[0]:(m&&ids.indexOf(m[1])>=0?m[1]:'standin');if(/[?&]embed=1(&|$)/.test(h)){{r.setAttribute('data-embed','1');id='standin';}}r.setAttribute('data-first',id);\
var files={{{}}},keys=[{}],n=/^#\\/([a-z-]*)/.exec(h),want=n&&n[1]?n[1]:ids[0],q=h.indexOf('?')<0?'':h.slice(h.indexOf('?')+1),plain=q.split('&').every(function(kv){{return kv===''||keys.indexOf(kv.split('=')[0])>=0;}});\
if(files[want]&&plain&&window.fetch){{window.khOpening={{id:want,bytes:fetch(files[want]).then(function(a){{return a.ok?a.arrayBuffer():null;}}).catch(function(){{return null;}})}};}}}})();\n",
        ids.join(","),
        files.join(","),
        keys.join(",")
    )
}

/// The playback bar and the reading tools as the app first draws them
/// (`src/controls.rs`, `src/read.rs`), inert: the same room, so nothing
/// moves when the app takes over.
const CONTROLS: &str = concat!(
    r#"<div class="kh-controls" role="group" aria-label="Playback">"#,
    r#"<button class="kh-btn" type="button" disabled><svg class="kh-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false"><path d="M6 5v14M19 5 9 12l10 7z"></path></svg><span class="kh-btn-text">Restart</span></button>"#,
    r#"<button class="kh-btn" type="button" disabled><svg class="kh-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false"><path d="M15 5 8 12l7 7"></path></svg><span class="kh-btn-text">Previous</span></button>"#,
    r#"<button class="kh-btn kh-btn-primary" type="button" disabled><svg class="kh-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false"><path d="M7 4.5v15L19.5 12z"></path></svg><span class="kh-btn-text">Play</span></button>"#,
    r#"<button class="kh-btn" type="button" disabled><span class="kh-btn-text">Next</span><svg class="kh-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false"><path d="M9 5l7 7-7 7"></path></svg></button>"#,
    r#"<label class="kh-speed"><span>Speed</span><select disabled><option>1×</option></select></label>"#,
    r#"<span class="kh-keys" aria-hidden="true"><span><kbd>Space</kbd> play</span><span><kbd>←</kbd><kbd>→</kbd> step</span><span><kbd>,</kbd><kbd>.</kbd> hop</span></span>"#,
    r#"</div><div class="kh-readtools" role="group" aria-label="Read and export">"#,
    r#"<span class="kh-btn kh-btn-small">Transcript</span><button class="kh-btn kh-btn-small" type="button" disabled>Print</button>"#,
    r#"<button class="kh-btn kh-btn-small" type="button" disabled>Download SVG</button><button class="kh-btn kh-btn-small" type="button" disabled>Download PNG</button></div>"#
);

/// One frame: the page as the app draws it at the scenario's first step,
/// before anything plays; `None`: the stand-in, the same layout with
/// nothing in it that could be mistaken for a state.
fn page(s: Option<&Scenario>) -> String {
    let id = s.map_or("standin", |s| s.id.as_str());
    let mut out = String::new();
    let _ = write!(out, r#"<div class="kh kh-first" data-first-of="{id}">"#);
    out.push_str(&header(s.map(|s| s.id.as_str())));
    let title = s.map_or("KubeHops", |s| s.title.as_str());
    let _ = write!(out, r#"<div class="kh-titlebar"><h1>{}</h1>{}</div>"#, escape(title), s.map(steps).unwrap_or_default());
    out.push_str(&s.map(params).unwrap_or_default());
    out.push_str(r#"<main class="kh-main"><section class="kh-stage" aria-label="Animation">"#);
    out.push_str(&canvas(s));
    out.push_str(CONTROLS);
    out.push_str(&legend());
    out.push_str(&s.map(settings).unwrap_or_default());
    out.push_str("</section>");
    out.push_str(&narration(s));
    out.push_str("</main></div>");
    out
}

fn header(current: Option<&str>) -> String {
    let mut out = String::from(r#"<header class="kh-head"><p class="kh-brand">KubeHops</p><nav class="kh-nav" aria-label="Scenarios"><ul>"#);
    for e in REGISTRY.iter() {
        let here = current == Some(e.id);
        let _ = write!(
            out,
            r##"<li><a href="#/{}/1" class="kh-nav-link{}"{} title="{}">{}</a></li>"##,
            e.id,
            if here { " current" } else { "" },
            if here { r#" aria-current="page""# } else { "" },
            escape(e.blurb),
            escape(e.title)
        );
    }
    out.push_str("</ul></nav></header>");
    out
}

fn steps(s: &Scenario) -> String {
    let n = s.steps.len();
    // As the app's step indicator (src/controls.rs): compact from four
    // steps on a narrow screen, always from six.
    let class = match n {
        0..=3 => "kh-steps",
        4 | 5 => "kh-steps kh-steps-some",
        _ => "kh-steps kh-steps-some kh-steps-many",
    };
    let mut out = format!(r#"<nav class="{class}" aria-label="Steps"><ol>"#);
    for (i, st) in s.steps.iter().enumerate() {
        let cur = i == 0;
        let _ = write!(
            out,
            r#"<li><button class="kh-step{}" type="button" disabled{}><span class="kh-sr">Step </span><span class="kh-step-num">{}</span><span class="kh-sr"> of {n}: </span><span class="kh-step-title">{}</span></button></li>"#,
            if cur { " current" } else { "" },
            if cur { r#" aria-current="step""# } else { "" },
            i + 1,
            escape(&st.title)
        );
    }
    out.push_str("</ol></nav>");
    out
}

/// The scenario's parameter controls as the app first shows them
/// (`src/controls.rs`: tabs, segmented choices, switches, readiness
/// switches; one that does not apply yet in a disabled fieldset), inert
/// until the app takes over.
fn params(s: &Scenario) -> String {
    use kubehops_core::scenarios::{ChoiceStyle, ParamKind};
    let Some(e) = REGISTRY.iter().find(|e| e.id == s.id) else { return String::new() };
    let specs: Vec<_> = (e.params)()
        .into_iter()
        .filter(|sp| !sp.is_setting() && !matches!(sp.kind, ParamKind::Seed | ParamKind::Manifest | ParamKind::Choice { style: ChoiceStyle::Demo | ChoiceStyle::Hidden, .. }))
        .collect();
    if specs.is_empty() {
        return String::new();
    }
    let switch = |label: &str, on: bool, small: bool| {
        format!(
            r#"<label class="kh-switch{}"><input type="checkbox" role="switch" disabled{}><span class="kh-switch-track" aria-hidden="true"><span class="kh-switch-thumb"></span></span><span class="kh-switch-label">{}</span></label>"#,
            if small { " kh-switch-small" } else { "" },
            if on { " checked" } else { "" },
            escape(label)
        )
    };
    let mut out = String::from(r#"<div class="kh-params">"#);
    for sp in &specs {
        let body = match &sp.kind {
            ParamKind::Choice { options, style: ChoiceStyle::Tabs, .. } => {
                let cur = s.params.choice(&sp.key).unwrap_or_default();
                let tabs: String = options.iter().map(|c| format!(r#"<button class="kh-tab" type="button" role="tab" aria-selected="{}" disabled>{}</button>"#, c.value == cur, escape(&c.label))).collect();
                format!(r#"<div class="kh-tabs" role="tablist" aria-label="{}">{tabs}</div>"#, escape(&sp.label))
            }
            ParamKind::Choice { options, style: ChoiceStyle::Menu, .. } if options.is_empty() => String::new(),
            ParamKind::Choice { options, style: ChoiceStyle::Menu, .. } => {
                let opts: String = options.iter().map(|c| format!("<option>{}</option>", escape(&c.label))).collect();
                format!(r#"<div class="kh-menu-param"><span class="kh-param-label">{}</span><select class="kh-menu" disabled>{opts}</select></div>"#, escape(&sp.label))
            }
            ParamKind::Choice { options, .. } => {
                let cur = s.params.choice(&sp.key).unwrap_or_default();
                let btns: String = options.iter().map(|c| format!(r#"<button class="kh-seg-btn" type="button" aria-pressed="{}" disabled>{}</button>"#, c.value == cur, escape(&c.label))).collect();
                format!(r#"<div class="kh-seg-param" role="group" aria-label="{0}"><span class="kh-param-label" aria-hidden="true">{0}</span><div class="kh-seg">{btns}</div></div>"#, escape(&sp.label))
            }
            ParamKind::Toggle { .. } => switch(&sp.label, s.params.toggle(&sp.key), false),
            ParamKind::Set { options } => {
                let all: String = options.iter().map(|c| switch(&format!("{} Ready", c.label), !s.params.set_contains(&sp.key, &c.value), true)).collect();
                format!(r#"<div class="kh-ready-set" role="group" aria-label="Readiness of the Pods">{all}</div>"#)
            }
            ParamKind::Seed | ParamKind::Manifest => String::new(),
        };
        let hint = sp.hint.as_deref().map_or_else(String::new, |h| format!(r#"<span class="kh-param-hint">{}</span>"#, escape(h)));
        if sp.when.is_empty() {
            let _ = write!(out, r#"<div class="kh-param">{body}{hint}</div>"#);
        } else {
            let _ = write!(out, r#"<fieldset class="kh-param"{}>{body}</fieldset>"#, if sp.applies(&s.params) { "" } else { " disabled" });
        }
    }
    out.push_str("</div>");
    out
}

/// The legend under the playback bar (`src/panels.rs`'s `Legend`): each
/// kind's trail, chip and name, from the core's table as the canvas draws them.
fn legend() -> String {
    use kubehops_core::scene::style::{kind_style, KINDS, WHAT_IF_DASH};
    let line = |class: &str, dash: Option<&str>| {
        let dash = dash.map_or_else(String::new, |d| format!(r#" stroke-dasharray="{d}""#));
        format!(r#"<svg viewBox="0 0 40 12" width="40" height="12" aria-hidden="true"><line class="kh-trail {class}"{dash} x1="2" y1="6" x2="38" y2="6"></line></svg>"#)
    };
    let mut out = String::from(r#"<ul class="kh-legend" aria-label="Legend">"#);
    for k in KINDS {
        let ks = kind_style(k);
        let class = format!("kh-{}", ks.class);
        let _ = write!(out, r#"<li class="{class}">{}<span class="kh-chip">{}</span><span>{}</span></li>"#, line(&class, ks.dash.dasharray()), escape(ks.label), escape(ks.name));
    }
    let _ = write!(out, r#"<li class="kh-whatif-key">{}<span>what if (not taken)</span></li></ul>"#, line("kh-request whatif", Some(WHAT_IF_DASH)));
    out
}

/// The settings disclosure, folded, with its summary line as the app
/// first shows it (`src/controls.rs`'s `Settings`).
fn settings(s: &Scenario) -> String {
    let Some(e) = REGISTRY.iter().find(|e| e.id == s.id) else { return String::new() };
    let summary = s.params.settings_summary(&(e.params)());
    if summary.is_empty() {
        return String::new();
    }
    format!(
        r#"<details class="kh-settings"><summary><span class="kh-settings-name">Settings<span class="kh-sr">: </span></span><span class="kh-settings-now">{}</span></summary></details>"#,
        escape(&summary)
    )
}

fn canvas(s: Option<&Scenario>) -> String {
    let Some(s) = s else {
        // Says what is happening, and takes the room the step's caption
        // will take, so the page does not grow when the app draws it.
        return concat!(
            r#"<figure class="kh-canvas"><svg viewBox="0 0 1600 950" role="img" aria-label="Loading the scenario"></svg>"#,
            r#"<figcaption class="kh-status"><span class="kh-status-head">Loading…</span> <span class="kh-status-text">"#,
            "The model of the cluster is starting in your browser: it computes this step from the API server, kube-proxy's rules and conntrack. The picture of the step and what happens in it appear here in a moment.",
            "</span></figcaption></figure>"
        )
        .into();
    };
    let f = frame(s, 0, 0.0);
    let c = caption(s, 0, None);
    // One picture per width class, each with the camera the app would
    // choose there (legible text, the first hop framed where the whole
    // does not fit); the stylesheet shows the one for the page's width.
    let mut svgs = String::new();
    for (class, (w, h)) in WIDTHS {
        // The layout the app's canvas picks at this size.
        let vp = Viewport::new(w, h);
        let d = drawing::draw(s, &Layout::fitting(s, vp), &f, vp);
        let svg = render(&d, &format!("kh-first-{}-{class}", s.id), &frame_label(s, &f));
        svgs.push_str(&svg.replacen("<svg ", &format!(r#"<svg class="kh-first-{class}" "#), 1));
    }
    format!(
        r#"<figure class="kh-canvas">{svgs}<figcaption class="kh-status"><span class="kh-status-head">{}</span> <span class="kh-status-text">{}</span></figcaption></figure>"#,
        escape(&c.head),
        escape(&c.text)
    )
}

fn narration(s: Option<&Scenario>) -> String {
    match s.and_then(|s| s.steps.first().map(|st| (s, st))) {
        Some((s, st)) => format!(
            r#"<section class="kh-card kh-narration"><div class="kh-narr-head"><h2>{}</h2></div><div class="kh-narr-text"><p>{}</p></div></section>"#,
            escape(&format!("Step 1 of {} · {}", s.steps.len(), st.title)),
            escape(&st.narration)
        ),
        None => r#"<section class="kh-card kh-narration"><div class="kh-narr-head"><h2>KubeHops</h2></div></section>"#.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<!doctype html><html><head><title>KubeHops</title></head><body><noscript>x</noscript></body></html>";

    #[test]
    fn the_frames_go_into_the_body_once_with_each_scenario_and_a_stand_in() {
        let scenarios = opening_scenarios();
        let data = openings(&scenarios);
        let (out, pick) = write_frames(PAGE, &scenarios, &data).unwrap();
        assert_eq!(out.matches(MARK).count(), 1);
        for e in REGISTRY.iter().filter(|e| e.id != "your-cluster") {
            assert!(out.contains(&format!(r#"data-first-of="{}""#, e.id)), "{} has no frame", e.id);
            assert!(pick.contains(&format!("'{}'", e.id)));
        }
        assert!(out.contains(r#"data-first-of="standin""#));
        assert!(!out.contains(" style="), "no inline style: the page's CSP refuses it");
        assert!(write_frames(&out, &scenarios, &data).is_err(), "a second run would write them twice");
    }

    #[test]
    fn each_frame_shows_its_first_step_and_narration() {
        let scenarios = opening_scenarios();
        let (out, _) = write_frames(PAGE, &scenarios, &openings(&scenarios)).unwrap();
        let s = build_default("nodeport-loadbalancer").unwrap();
        assert!(out.contains(&escape(&s.steps[0].narration)));
        assert!(out.contains("<svg viewBox="));
    }

    /// What the app reads is what it would have built: every field comes
    /// back (a field serde skipped would come back empty, and differ).
    #[test]
    fn each_opening_reads_back_as_the_scenario_the_core_builds() {
        let scenarios = opening_scenarios();
        let data = openings(&scenarios);
        assert_eq!(data.len(), scenarios.len());
        for (s, o) in scenarios.iter().zip(&data) {
            let read: Scenario = postcard::from_bytes(&o.bytes).unwrap();
            assert_eq!(read, s.clone().without_snapshots(), "{}", s.id);
            assert!(o.file.starts_with(&format!("opening-{}-", s.id)) && o.file.ends_with(".bin"));
        }
    }

    /// The script fetches the named scenario's file, and only for a link
    /// that sets nothing but display options.
    #[test]
    fn the_script_names_each_file_and_the_display_keys() {
        let scenarios = opening_scenarios();
        let data = openings(&scenarios);
        let (_, pick) = write_frames(PAGE, &scenarios, &data).unwrap();
        for o in &data {
            assert!(pick.contains(&format!("'{}':'./{}'", o.id, o.file)));
        }
        for k in DISPLAY_KEYS.iter().chain(&["view"]) {
            assert!(pick.contains(&format!("'{k}'")), "{k}");
        }
    }
}
