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
//!   kubehops-firstframe [DIR]   (DIR: TRUNK_STAGING_DIR, else dist)

use kubehops_core::scenarios::{build_default, Scenario, REGISTRY};
use kubehops_core::scene::camera::Viewport;
use kubehops_core::scene::describe::{caption, frame_label};
use kubehops_core::scene::svg::{escape, render};
use kubehops_core::scene::{drawing, frame, Layout};
use std::fmt::Write;
use std::path::PathBuf;

/// Where the frames go in the page, and the marker that says they are there.
const MARK: &str = "<!-- kubehops-firstframe -->";

/// The size the static drawing is made for: its camera shows the whole
/// drawing, which the page's stylesheet fits to the frame (the app's own
/// camera takes over when it mounts).
const FRAME: (f64, f64) = (1600.0, 950.0);

fn main() {
    let dir = std::env::args().nth(1).or_else(|| std::env::var("TRUNK_STAGING_DIR").ok()).map_or_else(|| PathBuf::from("dist"), PathBuf::from);
    let page = dir.join("index.html");
    let html = match std::fs::read_to_string(&page) {
        Ok(h) => h,
        Err(e) => fail(&format!("cannot read {}: {e}", page.display())),
    };
    let (out, pick) = match write_frames(&html) {
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
    let out = out.replace("</title>", &format!("</title>\n    <script src=\"./{name}\"></script>"));
    if let Err(e) = std::fs::write(&page, out) {
        fail(&format!("cannot write {}: {e}", page.display()));
    }
    println!("kubehops-firstframe: {} frames and a stand-in written into {}", REGISTRY.len() - 1, page.display());
}

fn fail(why: &str) -> ! {
    eprintln!("kubehops-firstframe: {why}");
    std::process::exit(1);
}

/// The page with the frames in it, and the script that picks one.
fn write_frames(html: &str) -> Result<(String, String), String> {
    if html.contains(MARK) {
        return Err("the frames are already in the page".into());
    }
    let at = html.find("<body>").ok_or("no <body> in the page")? + "<body>".len();
    let mut frames = String::new();
    let _ = write!(frames, "\n    {MARK}\n    <div id=\"kh-first\" aria-busy=\"true\">");
    let scenarios: Vec<Scenario> = REGISTRY.iter().filter(|e| e.id != "your-cluster").filter_map(|e| build_default(e.id)).collect();
    for s in &scenarios {
        frames.push_str(&page(Some(s)));
    }
    frames.push_str(&page(None));
    frames.push_str("</div>");
    let ids: Vec<String> = scenarios.iter().map(|s| format!("'{}'", s.id)).collect();
    Ok((format!("{}{frames}{}", &html[..at], &html[at..]), pick_script(&ids)))
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
fn pick_script(ids: &[String]) -> String {
    format!(
        "(function(){{var h=location.hash,r=document.documentElement,ids=[{}],m=/^#\\/([a-z-]+)\\/1$/.exec(h),id=h===''||h==='#'||h==='#/'?ids[0]:(m&&ids.indexOf(m[1])>=0?m[1]:'standin');if(/[?&]embed=1(&|$)/.test(h)){{r.setAttribute('data-embed','1');id='standin';}}r.setAttribute('data-first',id);}})();\n",
        ids.join(",")
    )
}

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
    out.push_str(r#"<main class="kh-main"><section class="kh-stage" aria-label="Animation">"#);
    out.push_str(&canvas(s));
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
    let mut out = String::from(r#"<nav class="kh-steps" aria-label="Steps"><ol>"#);
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

fn canvas(s: Option<&Scenario>) -> String {
    let Some(s) = s else {
        return r#"<figure class="kh-canvas"><svg viewBox="0 0 1600 950" role="img" aria-label="Loading the scenario"></svg><figcaption class="kh-status"><span class="kh-status-text">Loading…</span></figcaption></figure>"#.into();
    };
    let l = Layout::for_scenario(s);
    let f = frame(s, 0, 0.0);
    let d = drawing::draw(s, &l, &f, Viewport::new(FRAME.0, FRAME.1));
    let c = caption(s, 0, None);
    format!(
        r#"<figure class="kh-canvas">{}<figcaption class="kh-status"><span class="kh-status-head">{}</span> <span class="kh-status-text">{}</span></figcaption></figure>"#,
        render(&d, &format!("kh-first-{}", s.id), &frame_label(s, &f)),
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
        let (out, pick) = write_frames(PAGE).unwrap();
        assert_eq!(out.matches(MARK).count(), 1);
        for e in REGISTRY.iter().filter(|e| e.id != "your-cluster") {
            assert!(out.contains(&format!(r#"data-first-of="{}""#, e.id)), "{} has no frame", e.id);
            assert!(pick.contains(&format!("'{}'", e.id)));
        }
        assert!(out.contains(r#"data-first-of="standin""#));
        assert!(!out.contains(" style="), "no inline style: the page's CSP refuses it");
        assert!(write_frames(&out).is_err(), "a second run would write them twice");
    }

    #[test]
    fn each_frame_shows_its_first_step_and_narration() {
        let (out, _) = write_frames(PAGE).unwrap();
        let s = build_default("nodeport-loadbalancer").unwrap();
        assert!(out.contains(&escape(&s.steps[0].narration)));
        assert!(out.contains("<svg viewBox="));
    }
}
