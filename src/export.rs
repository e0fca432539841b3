//! Download SVG and Download PNG: the current frame as a file that stands
//! on its own. The canvas is cloned, the stylesheet's rules that style it
//! are copied into a `<style>` of its own (with the theme's colours
//! resolved), its background drawn as a rect, and its text kept as text
//! in the system font stack. The PNG is that SVG drawn on a canvas at
//! twice its size. The file name comes from the core.

use crate::room::Ctx;
use kubehops_core::scene::describe::file_stem;
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Element, HtmlAnchorElement, HtmlCanvasElement, HtmlImageElement};

#[derive(Clone, Copy, PartialEq)]
pub enum Format {
    Svg,
    Png,
}

const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// Whether any element of `svg` matches `selector` (selectors the DOM
/// cannot run, such as pseudo-elements, do not).
fn styles_it(svg: &Element, selector: &str) -> bool {
    svg.query_selector(selector).ok().flatten().is_some()
}

/// The custom properties `css` refers to (`var(--name`).
fn variables(css: &str) -> Vec<String> {
    let mut out: Vec<String> = css.split("var(").skip(1).filter_map(|r| r.split([')', ',']).next()).map(|v| v.trim().to_string()).filter(|v| v.starts_with("--")).collect();
    out.sort();
    out.dedup();
    out
}

/// The stylesheet rules that style the canvas, and the custom properties
/// they use resolved on the canvas (so the theme in use is kept).
fn canvas_css(svg: &Element) -> String {
    let mut rules = String::new();
    let sheets = document().style_sheets();
    for i in 0..sheets.length() {
        let Some(sheet) = sheets.item(i).and_then(|s| s.dyn_into::<web_sys::CssStyleSheet>().ok()) else { continue };
        let Ok(list) = sheet.css_rules() else { continue };
        for j in 0..list.length() {
            let Some(rule) = list.item(j).and_then(|r| r.dyn_into::<web_sys::CssStyleRule>().ok()) else { continue };
            if styles_it(svg, &rule.selector_text()) {
                rules.push_str(&rule.css_text());
                rules.push('\n');
            }
        }
    }
    let mut root = String::from("svg {");
    if let Ok(Some(style)) = window().get_computed_style(svg) {
        for v in variables(&rules) {
            let value = style.get_property_value(&v).unwrap_or_default();
            if !value.trim().is_empty() {
                root.push_str(&format!(" {v}: {};", value.trim()));
            }
        }
        let font = style.get_property_value("font-family").unwrap_or_default();
        root.push_str(&format!(" font-family: {font};"));
    }
    root.push_str(" }\n");
    root + &rules
}

/// The canvas as a standalone SVG document, and its size.
fn standalone_svg() -> Option<(String, f64, f64)> {
    let svg = document().query_selector(".kh-stage .kh-canvas svg").ok()??;
    let copy: Element = svg.clone_node_with_deep(true).ok()?.dyn_into().ok()?;
    let view_box = svg.get_attribute("viewBox")?;
    // The view box's width and height as the core printed them, copied;
    // read as numbers by the browser, so the page links no float parser
    // or printer of its own for this alone.
    let mut dims = view_box.split_whitespace().skip(2);
    let (w_text, h_text) = (dims.next()?, dims.next()?);
    let (w, h) = (js_sys::parse_float(w_text), js_sys::parse_float(h_text));
    if !(w.is_finite() && h.is_finite()) {
        return None;
    }
    copy.set_attribute("xmlns", SVG_NS).ok()?;
    copy.set_attribute("width", w_text).ok()?;
    copy.set_attribute("height", h_text).ok()?;
    let doc = document();
    let style = doc.create_element_ns(Some(SVG_NS), "style").ok()?;
    // The card behind the canvas, in the theme's colour, by a rule of the
    // file's own style sheet: a style attribute set in the page breaks the
    // page's Content-Security-Policy (style-src-attr; found by monkey.mjs).
    style.set_text_content(Some(&format!("{}\n.kh-export-card{{fill:var(--card)}}", canvas_css(&svg))));
    let bg = doc.create_element_ns(Some(SVG_NS), "rect").ok()?;
    for (k, v) in [("width", "100%"), ("height", "100%"), ("class", "kh-export-card")] {
        bg.set_attribute(k, v).ok()?;
    }
    let first = copy.first_child();
    copy.insert_before(&bg, first.as_ref()).ok()?;
    copy.insert_before(&style, Some(&bg)).ok()?;
    let text = web_sys::XmlSerializer::new().ok()?.serialize_to_string(&copy).ok()?;
    Some((format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{text}"), w, h))
}

fn blob(parts: &str, kind: &str) -> Option<web_sys::Blob> {
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(kind);
    let seq = js_sys_array(parts);
    web_sys::Blob::new_with_str_sequence_and_options(&seq, &opts).ok()
}

fn js_sys_array(s: &str) -> JsValue {
    // A one-element array of the text, without pulling in js-sys's Array helpers.
    let arr = wasm_bindgen::JsValue::from(vec![JsValue::from_str(s)].into_boxed_slice());
    arr
}

/// Saves `blob` under `name` through a temporary link.
fn save(blob: &web_sys::Blob, name: &str) {
    let Ok(url) = web_sys::Url::create_object_url_with_blob(blob) else { return };
    if let Some(a) = document().create_element("a").ok().and_then(|e| e.dyn_into::<HtmlAnchorElement>().ok()) {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    // Revoked later: some browsers read the URL after the click returns.
    set_timeout(move || { let _ = web_sys::Url::revoke_object_url(&url); }, std::time::Duration::from_secs(10));
}

/// Draws the SVG on a canvas at twice its size and saves it as PNG;
/// `failed` is called if the browser cannot draw or encode it.
fn save_png(svg: String, w: f64, h: f64, name: String, failed: impl Fn() + Clone + 'static) {
    let Some(b) = blob(&svg, "image/svg+xml") else { return failed() };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&b) else { return failed() };
    let Ok(img) = HtmlImageElement::new() else { return failed() };
    let image = img.clone();
    let src = url.clone();
    let on_error = failed.clone();
    let onload = Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&src);
        let Some(canvas) = document().create_element("canvas").ok().and_then(|c| c.dyn_into::<HtmlCanvasElement>().ok()) else { return failed() };
        let scale = 2.0;
        canvas.set_width((w * scale) as u32);
        canvas.set_height((h * scale) as u32);
        let Some(g) = canvas.get_context("2d").ok().flatten().and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok()) else { return failed() };
        if g.draw_image_with_html_image_element_and_dw_and_dh(&image, 0.0, 0.0, w * scale, h * scale).is_err() {
            return failed();
        }
        let not_encoded = failed.clone();
        let done = Closure::once_into_js(move |b: Option<web_sys::Blob>| match b {
            Some(b) => save(&b, &name),
            None => not_encoded(),
        });
        if canvas.to_blob(done.unchecked_ref()).is_err() {
            failed();
        }
    });
    let onerror = Closure::once_into_js(move || on_error());
    img.set_onload(Some(onload.unchecked_ref()));
    img.set_onerror(Some(onerror.unchecked_ref()));
    img.set_src(&url);
}

/// Saves the current frame.
pub fn download(ctx: Ctx, format: Format) {
    let stem = ctx.with_scenario(|s| file_stem(s, &ctx.frame.get_untracked()));
    let notices = ctx.player.notices;
    let failed = move |what: &'static str| crate::browser::tell(notices, format!("This browser could not make the {what}; nothing was downloaded."));
    let Some((svg, w, h)) = standalone_svg() else { return failed("picture") };
    match format {
        Format::Svg => match blob(&svg, "image/svg+xml") {
            Some(b) => save(&b, &format!("{stem}.svg")),
            None => failed("SVG file"),
        },
        Format::Png => save_png(svg, w, h, format!("{stem}.png"), move || failed("PNG file")),
    }
}
