//! A drawing as SVG text: the static first frame the build writes into the
//! page, files, and the web canvas, which writes each group's and the
//! token's insides from here (one `innerHTML` each, rather than an element
//! and its attributes per call into the DOM) and keeps only the elements
//! that change on their own (groups, trails, the token's position).
//!
//! Guarantee: everything written is escaped; the output is one `<svg>`
//! element whose look comes from the page's stylesheet (classes only, no
//! inline style, so it runs under the page's Content-Security-Policy).

use super::drawing::{Drawing, Group, Span, Text, Token, Trail, ARROW_LEN, ARROW_W};
use super::style::{kind_style, KINDS, WHAT_IF_DASH};
use crate::decimal::trimmed;
use std::fmt::Write;

/// Text for XML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn n(v: f64) -> String {
    trimmed(v, 2)
}

/// The `<svg>` of a drawing. `id` prefixes the arrowheads' ids, so that
/// several drawings can share a page; `label` is its accessible name.
pub fn render(d: &Drawing, id: &str, label: &str) -> String {
    let mut out = String::new();
    let _ = write!(out, r#"<svg viewBox="{}" role="img" aria-label="{}" preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg"><defs>"#, d.camera.view_box(), escape(label));
    for k in KINDS {
        let class = kind_style(k).class;
        let _ = write!(
            out,
            r#"<marker id="{id}-arrow-{class}" class="kh-arrow kh-{class}" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="{}" markerHeight="{}" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"></path></marker>"#,
            n(ARROW_LEN),
            n(ARROW_W)
        );
    }
    out.push_str("</defs>");
    for g in &d.groups {
        group(&mut out, g);
    }
    out.push_str(r#"<g class="kh-trails">"#);
    for t in &d.trails {
        trail(&mut out, t, id);
    }
    out.push_str("</g>");
    if let Some(t) = &d.token {
        token(&mut out, t);
    }
    out.push_str("</svg>");
    out
}

fn span_class(s: &Span) -> String {
    match s.class {
        Some(c) => format!("{} {c}", s.role.class()),
        None => s.role.class().to_string(),
    }
}

fn text(out: &mut String, t: &Text) {
    let _ = write!(out, r#"<text x="{}" y="{}" text-anchor="{}" font-size="{}""#, n(t.x), n(t.y), t.anchor.as_str(), n(t.size()));
    if let [one] = t.spans.as_slice() {
        let _ = write!(out, r#" class="{}">{}</text>"#, span_class(one), escape(&one.text));
        return;
    }
    out.push('>');
    for s in &t.spans {
        let _ = write!(out, r#"<tspan class="{}" font-size="{}">{}</tspan>"#, span_class(s), n(s.role.size()), escape(&s.text));
    }
    out.push_str("</text>");
}

fn group(out: &mut String, g: &Group) {
    let _ = write!(out, r#"<g class="{}""#, escape(&g.class));
    if let Some((k, v)) = &g.data {
        let _ = write!(out, r#" data-{k}="{}""#, escape(v));
    }
    out.push('>');
    group_body(out, g);
    out.push_str("</g>");
}

/// What goes inside a group's `<g>`: its title, shapes, texts and the
/// groups it holds.
pub fn group_inner(g: &Group) -> String {
    written(|out| group_body(out, g))
}

fn group_body(out: &mut String, g: &Group) {
    if let Some(t) = &g.title {
        let _ = write!(out, "<title>{}</title>", escape(t));
    }
    for s in &g.shapes {
        let r = s.rect;
        let class = if s.class.is_empty() { String::new() } else { format!(r#" class="{}""#, escape(&s.class)) };
        let _ = write!(out, r#"<rect{class} x="{}" y="{}" width="{}" height="{}" rx="{}"></rect>"#, n(r.x), n(r.y), n(r.w), n(r.h), n(s.rx));
    }
    for t in &g.texts {
        text(out, t);
    }
    for c in &g.children {
        group(out, c);
    }
}

fn trail(out: &mut String, t: &Trail, id: &str) {
    let pts: Vec<String> = t.points.iter().map(|p| format!("{},{}", trimmed(p.x, 1), trimmed(p.y, 1))).collect();
    let dash = if t.what_if { Some(WHAT_IF_DASH) } else { t.style.dash.dasharray() };
    let dash = dash.map(|d| format!(r#" stroke-dasharray="{d}""#)).unwrap_or_default();
    let _ = write!(out, r#"<polyline class="{}" points="{}"{dash} marker-end="url(#{id}-arrow-{})"></polyline>"#, t.class(), pts.join(" "), t.style.class);
}

fn token(out: &mut String, t: &Token) {
    let _ = write!(out, r#"<g class="{}" transform="translate({} {})">"#, t.class(), trimmed(t.at.x, 1), trimmed(t.at.y, 1));
    token_body(out, t);
    out.push_str("</g>");
}

/// What goes inside the token's `<g>` (which is moved to `t.at`): the
/// leader, the card and the pill, around the origin. It does not depend on
/// `t.at`, so it stays the same while the token moves along its hop.
pub fn token_inner(t: &Token) -> String {
    written(|out| token_body(out, t))
}

/// What `write` writes, as a string of its own.
fn written(write: impl FnOnce(&mut String)) -> String {
    let mut out = String::new();
    write(&mut out);
    out
}

fn token_body(out: &mut String, t: &Token) {
    let c = &t.card;
    let tone = c.tone.map(|x| format!(" tone-{x}")).unwrap_or_default();
    if let Some((a, b)) = c.leader(&t.pill) {
        let _ = write!(out, r#"<line class="kh-leader" x1="{}" y1="{}" x2="{}" y2="{}"></line>"#, n(a.x), n(a.y), n(b.x), n(b.y));
    }
    let _ = write!(out, r#"<g class="kh-card{tone}" transform="translate({} {})"><rect width="{}" height="{}" rx="7"></rect>"#, n(c.offset.x), n(c.offset.y), n(c.w), n(c.h));
    for x in &c.texts {
        text(out, x);
    }
    let p = &t.pill;
    let _ = write!(
        out,
        r#"</g><g class="kh-pill"><rect x="{}" y="{}" width="{}" height="{}" rx="{}"></rect><text y="4.5" text-anchor="middle" font-size="13">{}</text></g>"#,
        n(-p.w / 2.0),
        n(-p.h / 2.0),
        n(p.w),
        n(p.h),
        n(p.h / 2.0),
        escape(p.label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::build_default;
    use crate::scene::camera::Viewport;
    use crate::scene::{drawing, frame, Layout};

    #[test]
    fn a_drawing_becomes_one_escaped_svg_with_every_text() {
        let s = build_default("nodeport-loadbalancer").unwrap();
        let l = Layout::for_scenario(&s);
        let d = drawing::draw(&s, &l, &frame(&s, 1, 2.0), Viewport::new(1200.0, 700.0));
        let svg = render(&d, "kh", "Step 2 <of> 5 & more");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
        assert!(svg.contains(r#"aria-label="Step 2 &lt;of&gt; 5 &amp; more""#));
        for t in d.texts() {
            for sp in &t.spans {
                assert!(svg.contains(&escape(&sp.text)), "{:?} is missing", sp.text);
            }
        }
        assert_eq!(svg.matches("<polyline").count(), d.trails.len());
        assert!(!svg.contains("style="), "no inline style: the page's CSP refuses it");
    }

    /// The canvas sets these as `innerHTML`: a name from a pasted cluster
    /// must stay text there.
    #[test]
    fn a_group_s_insides_keep_hostile_names_as_text() {
        let s = build_default("nodeport-loadbalancer").unwrap();
        let l = Layout::for_scenario(&s);
        let d = drawing::draw(&s, &l, &frame(&s, 1, 2.0), Viewport::new(1200.0, 700.0));
        let mut g = d.groups.iter().find(|g| !g.texts.is_empty()).expect("a group with texts").clone();
        g.title = Some("</title><script>alert(1)</script>".into());
        g.texts[0].spans[0].text = "</text></g><img src=x onerror=alert(1)>".into();
        let inner = group_inner(&g);
        assert!(!inner.contains("<script") && !inner.contains("<img"), "{inner}");
        assert!(inner.contains("&lt;/text&gt;&lt;/g&gt;&lt;img src=x onerror=alert(1)&gt;"));
        assert_eq!(inner.matches("<text").count(), inner.matches("</text>").count());
    }

    #[test]
    fn the_token_s_insides_do_not_move_with_it() {
        let s = build_default("nodeport-loadbalancer").unwrap();
        let l = Layout::for_scenario(&s);
        let vp = Viewport::new(1200.0, 700.0);
        let a = drawing::draw(&s, &l, &frame(&s, 1, 1.2), vp).token.expect("a token in flight");
        let b = drawing::draw(&s, &l, &frame(&s, 1, 1.7), vp).token.expect("a token in flight");
        assert_ne!(a.at, b.at, "the token moved");
        assert_eq!(token_inner(&a), token_inner(&b));
        let whole = render(&drawing::draw(&s, &l, &frame(&s, 1, 1.2), vp), "kh", "x");
        assert!(whole.contains(&token_inner(&a)), "the page's first frame and the canvas write the same token");
    }

    #[test]
    fn escaping_covers_markup() {
        assert_eq!(escape(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
