//! How the page is shown, as opposed to what it shows: embedded in another
//! page or full, its theme, how many controls, whether it plays on its
//! own, which parent pages may drive it, and whether this window is the
//! presenter's notes.
//!
//! These options ride in the same link as the scenario
//! (`#/service-types/3/end?tab=nodeport&embed=1&theme=dark&controls=minimal`),
//! under keys no scenario parameter uses ([`KEYS`]). Like the rest of the
//! link they are read leniently: a bad value keeps its default and says so.
//!
//! - [`protocol`]: the `postMessage` protocol between an embedded page and
//!   the page that embeds it;
//! - [`presenter`]: the presenter view's notes and the messages that keep
//!   it in step with the main window.

pub mod presenter;
pub mod protocol;

use serde::{Deserialize, Serialize};

/// The link keys read here; no scenario parameter may use one.
pub const KEYS: [&str; 6] = ["embed", "theme", "controls", "autoplay", "origins", "notes"];

/// The most parent origins one link may list.
pub const MAX_ORIGINS: usize = 8;

/// `theme=`: `auto` (the default) follows `prefers-color-scheme`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Theme {
    #[default]
    Auto,
    Light,
    Dark,
}

impl Theme {
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::Auto => "auto",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    /// The value of the root element's `data-theme` attribute; `None`
    /// (no attribute) lets the stylesheet follow `prefers-color-scheme`.
    pub fn data_theme(self) -> Option<&'static str> {
        match self {
            Theme::Auto => None,
            Theme::Light => Some("light"),
            Theme::Dark => Some("dark"),
        }
    }
}

/// `controls=`: how much of the playback bar an embedded page shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControlsMode {
    /// Restart, Previous, Play/Pause, Next, Speed and the step buttons.
    #[default]
    Full,
    /// Previous, Play/Pause, Next and "step 2 of 5".
    Minimal,
    /// None: the host page or the keyboard drives it.
    None,
}

impl ControlsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ControlsMode::Full => "full",
            ControlsMode::Minimal => "minimal",
            ControlsMode::None => "none",
        }
    }
}

/// A web origin as a browser serializes it (`MessageEvent.origin`):
/// `https://docs.example.com`, `http://127.0.0.1:9000`. Scheme and host in
/// lower case, the port only when it is not the scheme's default.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Origin(String);

impl Origin {
    /// Reads `scheme://host[:port]` (http or https; a trailing `/` is
    /// allowed, a path, query, user or wildcard is not).
    pub fn parse(text: &str) -> Result<Origin, String> {
        let bad = |why: &str| Err(format!("\"{}\" is not an origin ({why}); origins look like https://docs.example.com.", crate::link::short(text)));
        if !text.is_ascii() {
            return bad("write international names in their xn-- form");
        }
        let lower = text.to_ascii_lowercase();
        let (scheme, rest) = match lower.split_once("://") {
            Some((s @ ("http" | "https"), rest)) => (s, rest),
            Some(_) => return bad("only http and https pages can embed it"),
            None => return bad("no scheme"),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@', '*', '\\', ' ']) || rest.is_empty() {
            return bad("an origin is a scheme, a host and a port, nothing else");
        }
        let (host, port) = match rest.rsplit_once(':') {
            // An IPv6 literal keeps its colons inside brackets.
            Some((h, p)) if !p.contains(']') => (h, Some(p)),
            _ => (rest, None),
        };
        let host_ok = if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            !inner.is_empty() && inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        } else {
            !host.is_empty()
                && host.len() <= 253
                && host.split('.').all(|l| !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') && !l.starts_with('-') && !l.ends_with('-'))
        };
        if !host_ok {
            return bad("the host is not a host name or address");
        }
        let default_port = if scheme == "https" { 443 } else { 80 };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()) => (n != default_port).then_some(n),
                _ => return bad("the port is not a number from 1 to 65535"),
            },
        };
        Ok(Origin(match port {
            Some(n) => format!("{scheme}://{host}:{n}"),
            None => format!("{scheme}://{host}"),
        }))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Every display option, as the link gave them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Display {
    /// `embed=1`: only the canvas, the controls and the narration.
    pub embed: bool,
    pub theme: Theme,
    pub controls: ControlsMode,
    /// `autoplay=1`: play on load, unless the reader prefers reduced motion.
    pub autoplay: bool,
    /// `origins=`: the parent pages whose messages are acted on, and the
    /// only ones told the state. Empty: no page can drive it.
    pub origins: Vec<Origin>,
    /// `notes=1`: this window is the presenter view.
    pub notes: bool,
}

/// The link form of a boolean option.
fn flag(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("{key}=\"{}\" is not understood: {key} is 1 or 0. Using 0.", crate::link::short(value))),
    }
}

impl Display {
    /// Reads one `key=value` of the link (the value already decoded).
    /// `None` when the key is not a display option; `Some(Err)` says what
    /// was wrong, and the option keeps its default.
    pub fn read(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        let r = match key {
            "embed" => flag(key, value).map(|b| self.embed = b),
            "autoplay" => flag(key, value).map(|b| self.autoplay = b),
            "notes" => flag(key, value).map(|b| self.notes = b),
            "theme" => match value {
                "auto" => Ok(Theme::Auto),
                "light" => Ok(Theme::Light),
                "dark" => Ok(Theme::Dark),
                _ => Err(format!("theme=\"{}\" is not understood: the themes are light, dark and auto. Using auto.", crate::link::short(value))),
            }
            .map(|t| self.theme = t),
            "controls" => match value {
                "full" => Ok(ControlsMode::Full),
                "minimal" => Ok(ControlsMode::Minimal),
                "none" => Ok(ControlsMode::None),
                _ => Err(format!("controls=\"{}\" is not understood: controls are full, minimal or none. Using full.", crate::link::short(value))),
            }
            .map(|c| self.controls = c),
            "origins" => self.read_origins(value),
            _ => return None,
        };
        Some(r)
    }

    /// A comma list of origins; the good ones are kept, each bad one
    /// reported.
    fn read_origins(&mut self, value: &str) -> Result<(), String> {
        let mut problems = Vec::new();
        let mut list = Vec::new();
        for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match Origin::parse(part) {
                Ok(o) if !list.contains(&o) => list.push(o),
                Ok(_) => {}
                Err(e) => problems.push(e),
            }
        }
        if list.len() > MAX_ORIGINS {
            problems.push(format!("origins lists {} origins; only the first {MAX_ORIGINS} are allowed to drive the page.", list.len()));
            list.truncate(MAX_ORIGINS);
        }
        self.origins = list;
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join(" "))
        }
    }

    /// The link pairs for the options that differ from their defaults.
    pub fn link_pairs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.embed {
            v.push(("embed", "1".to_string()));
        }
        if self.theme != Theme::Auto {
            v.push(("theme", self.theme.as_str().to_string()));
        }
        if self.controls != ControlsMode::Full {
            v.push(("controls", self.controls.as_str().to_string()));
        }
        if self.autoplay {
            v.push(("autoplay", "1".to_string()));
        }
        if !self.origins.is_empty() {
            v.push(("origins", self.origins.iter().map(Origin::as_str).collect::<Vec<_>>().join(",")));
        }
        if self.notes {
            v.push(("notes", "1".to_string()));
        }
        v
    }

    /// Whether a message from `origin` (as `MessageEvent.origin` gives it)
    /// may drive the page. Exact comparison: no wildcard, no suffix match.
    pub fn allows(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o.0 == origin)
    }

    /// The options of the page an "Embed" button offers: embedded, in the
    /// same theme, with nothing else of this page's (no autoplay, no
    /// origins, not the notes).
    pub fn for_embed(&self) -> Display {
        Display { embed: true, theme: self.theme, ..Display::default() }
    }

    /// The options of the presenter view opened from this page.
    pub fn for_notes(&self) -> Display {
        Display { notes: true, theme: self.theme, ..Display::default() }
    }

    /// Whether to start playing: only when asked, and never for a reader
    /// who prefers reduced motion.
    pub fn should_autoplay(&self, reduced_motion: bool) -> bool {
        self.autoplay && !reduced_motion && !self.notes
    }
}

/// Escapes text for an HTML attribute value in double quotes.
fn attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The `<iframe>` that embeds what a link shows: `page` is the address of
/// the page without its hash (`https://example.com/kh/`), `hash` the link
/// with `embed=1` among its options. Sized 720 × 560 until the host page
/// sizes it from the height message.
pub fn snippet(page: &str, hash: &str, title: &str) -> String {
    let page = page.split('#').next().unwrap_or_default();
    format!(
        "<iframe src=\"{}{}\" title=\"{}\" width=\"720\" height=\"560\" allow=\"fullscreen\" loading=\"lazy\"></iframe>",
        attr(page),
        attr(hash),
        attr(&format!("KubeHops: {title}"))
    )
}

/// The height an embedded page asks for, in CSS pixels: the canvas the
/// drawing (`world`) wants at the frame's width (`scene::camera::
/// page_height`: the whole drawing where it is legible, else as tall as
/// the legible scale makes it), plus whatever the page shows around it
/// (`chrome`: controls, caption, narration, padding). Bounded so that a
/// broken measurement cannot ask for a page-long frame.
pub fn preferred_height(frame_width: f64, world: crate::scene::Rect, chrome: f64) -> u32 {
    let finite = |x: f64| if x.is_finite() { x.max(0.0) } else { 0.0 };
    let (w, chrome) = (finite(frame_width), finite(chrome));
    let canvas = if w > 0.0 && world.w > 0.0 { crate::scene::camera::page_height(world, w, MAX_HEIGHT) } else { 0.0 };
    (canvas + chrome).ceil().clamp(MIN_HEIGHT, MAX_HEIGHT) as u32
}

pub const MIN_HEIGHT: f64 = 240.0;
pub const MAX_HEIGHT: f64 = 4000.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalized_as_browsers_serialize_them() {
        for (text, want) in [
            ("https://docs.example.com", "https://docs.example.com"),
            ("HTTPS://Docs.Example.COM/", "https://docs.example.com"),
            ("https://docs.example.com:443", "https://docs.example.com"),
            ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
            ("http://localhost:80", "http://localhost"),
            ("http://[::1]:8080", "http://[::1]:8080"),
            ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ] {
            assert_eq!(Origin::parse(text).map(|o| o.0), Ok(want.to_string()), "{text}");
        }
        for bad in [
            "docs.example.com",
            "*",
            "https://*.example.com",
            "javascript://x",
            "file:///etc",
            "https://example.com/path",
            "https://user@example.com",
            "https://example.com:0",
            "https://example.com:99999",
            "https://example.com:8a",
            "https://",
            "https://exa mple.com",
            "https://-bad.example",
            "https://bücher.example",
            "https://example.com?x=1",
            "https://[zz]:1",
        ] {
            let e = Origin::parse(bad).unwrap_err();
            assert!(e.contains("is not an origin"), "{bad}: {e}");
        }
    }

    #[test]
    fn every_option_reads_and_formats_back() {
        let mut d = Display::default();
        for (k, v) in [("embed", "1"), ("theme", "dark"), ("controls", "minimal"), ("autoplay", "true"), ("origins", "https://a.example,http://127.0.0.1:9000,https://a.example/"), ("notes", "1")] {
            assert_eq!(d.read(k, v), Some(Ok(())), "{k}");
        }
        assert_eq!(d.origins.len(), 2, "duplicates are dropped");
        let pairs = d.link_pairs();
        assert_eq!(
            pairs,
            vec![
                ("embed", "1".to_string()),
                ("theme", "dark".to_string()),
                ("controls", "minimal".to_string()),
                ("autoplay", "1".to_string()),
                ("origins", "https://a.example,http://127.0.0.1:9000".to_string()),
                ("notes", "1".to_string()),
            ]
        );
        let mut again = Display::default();
        for (k, v) in &pairs {
            again.read(k, v).unwrap().unwrap();
        }
        assert_eq!(again, d);
        assert!(Display::default().link_pairs().is_empty(), "defaults stay out of the link");
        assert_eq!(d.read("tab", "x"), None, "not a display key");
    }

    #[test]
    fn bad_values_keep_the_default_and_say_why() {
        let mut d = Display::default();
        for (k, v, says) in [("embed", "yes", "embed is 1 or 0"), ("theme", "blue", "light, dark and auto"), ("controls", "some", "full, minimal or none"), ("autoplay", "", "autoplay is 1 or 0")] {
            let e = d.read(k, v).unwrap().unwrap_err();
            assert!(e.contains(says), "{k}={v}: {e}");
        }
        assert_eq!(d, Display::default());
        let e = d.read("origins", "https://ok.example,*,evil").unwrap().unwrap_err();
        assert_eq!(d.origins, vec![Origin("https://ok.example".into())], "the good origin is kept");
        assert_eq!(e.matches("is not an origin").count(), 2, "{e}");
        let many: Vec<String> = (1..=12).map(|i| format!("https://h{i}.example")).collect();
        assert!(d.read("origins", &many.join(",")).unwrap().is_err());
        assert_eq!(d.origins.len(), MAX_ORIGINS);
        let e = d.read("theme", &"x".repeat(500)).unwrap().unwrap_err();
        assert!(e.len() < 160, "echoed input is cut short: {e}");
    }

    #[test]
    fn only_listed_origins_are_allowed_exactly() {
        let mut d = Display::default();
        assert!(!d.allows("https://docs.example.com"), "nobody by default");
        d.read("origins", "https://docs.example.com").unwrap().unwrap();
        assert!(d.allows("https://docs.example.com"));
        for other in ["https://docs.example.com.evil.example", "http://docs.example.com", "https://evil.example", "null", "", "https://docs.example.com:8443", "*"] {
            assert!(!d.allows(other), "{other}");
        }
    }

    #[test]
    fn autoplay_only_when_asked_and_never_under_reduced_motion() {
        let mut d = Display::default();
        assert!(!d.should_autoplay(false));
        d.autoplay = true;
        assert!(d.should_autoplay(false));
        assert!(!d.should_autoplay(true));
        d.notes = true;
        assert!(!d.should_autoplay(false), "the presenter view never plays");
    }

    #[test]
    fn embed_and_notes_options_derive_from_the_page() {
        let mut d = Display::default();
        d.read("origins", "https://a.example").unwrap().unwrap();
        d.autoplay = true;
        d.theme = Theme::Dark;
        assert_eq!(d.for_embed(), Display { embed: true, theme: Theme::Dark, ..Display::default() });
        assert_eq!(d.for_notes(), Display { notes: true, theme: Theme::Dark, ..Display::default() });
    }

    #[test]
    fn themes_map_to_the_root_attribute() {
        assert_eq!(Theme::Auto.data_theme(), None);
        assert_eq!(Theme::Light.data_theme(), Some("light"));
        assert_eq!(Theme::Dark.data_theme(), Some("dark"));
    }

    #[test]
    fn the_snippet_escapes_what_it_quotes() {
        let s = snippet("https://example.com/kh/#/old", "#/service-types/3/end?tab=nodeport&embed=1", "The \"five\" <types>");
        assert_eq!(
            s,
            "<iframe src=\"https://example.com/kh/#/service-types/3/end?tab=nodeport&amp;embed=1\" title=\"KubeHops: The &quot;five&quot; &lt;types&gt;\" width=\"720\" height=\"560\" allow=\"fullscreen\" loading=\"lazy\"></iframe>"
        );
        assert!(!snippet("https://x/\"><script>", "#/a", "t").contains("\"><script>"));
    }

    #[test]
    fn preferred_height_follows_the_width_and_stays_bounded() {
        let world = crate::scene::Rect { x: 0.0, y: 0.0, w: 1200.0, h: 700.0 };
        // Wide enough to show it all legibly: its height at that width.
        assert_eq!(preferred_height(2400.0, world, 200.0), 1600);
        // Narrower: as tall as legible text makes it, however narrow.
        assert_eq!(preferred_height(600.0, world, 100.0), preferred_height(700.0, world, 100.0));
        assert!(preferred_height(480.0, world, 100.0) > 480);
        assert_eq!(preferred_height(f64::NAN, world, 0.0), MIN_HEIGHT as u32);
        assert_eq!(preferred_height(1e9, world, 0.0), MAX_HEIGHT as u32);
        assert_eq!(preferred_height(500.0, crate::scene::Rect::ZERO, 300.0), 300);
    }
}
