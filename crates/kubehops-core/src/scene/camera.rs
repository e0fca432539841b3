//! The camera: which part of the drawing a frame of a given size shows,
//! and at what scale.
//!
//! A frame shows the whole drawing when its smallest text is at least the
//! reader's minimum size there. Otherwise it shows less, never smaller:
//! the camera zooms to the scale that keeps the smallest text at the
//! minimum and frames what the current hop needs (see
//! `drawing::camera_with`).
//!
//! Guarantee: `scale * text::MIN_SIZE >= min_px` for every camera that
//! does not show the whole drawing, and the view never leaves the drawing
//! where the drawing is larger than the view.

use super::{pt, Point, Rect};

/// The frame the drawing is shown in: its size in CSS pixels and the
/// smallest text size its reader should get there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    pub width: f64,
    pub height: f64,
    pub min_px: f64,
}

/// The smallest canvas text, in CSS pixels, on a page or in an embed of
/// any size (a phone, a 480-pixel embed: there the camera shows less).
pub const MIN_PX: f64 = 12.0;
/// The same while presenting, at 1080 pixels of screen height.
pub const MIN_PX_PRESENT: f64 = 24.0;

impl Viewport {
    /// A frame on a page or in an embed.
    pub fn new(width: f64, height: f64) -> Viewport {
        let (width, height) = (sane(width), sane(height));
        Viewport { width, height, min_px: MIN_PX }
    }

    /// A frame while presenting on a screen `screen_h` pixels high: the
    /// text grows with the screen (48 pixels on a 4K screen).
    pub fn presenting(width: f64, height: f64, screen_h: f64) -> Viewport {
        let k = (sane(screen_h) / 1080.0).max(1.0);
        Viewport { min_px: MIN_PX_PRESENT * k, ..Viewport::new(width, height) }
    }
}

/// The canvases readers meet, as the built page sizes its canvas there
/// (its SVG's box in CSS pixels, measured in Chromium): embeds at
/// 480×360, 720×560 and 1280×720, the page at 1280×800 and 1920×1080, a
/// 390×844 phone, the page 720 pixels wide, and presenting at 1080p.
/// The geometry and story checks hold at each.
pub fn reader_frames() -> Vec<(&'static str, Viewport)> {
    vec![
        ("embed 480×360", Viewport::new(462.0, 168.0)),
        ("embed 720×560", Viewport::new(702.0, 389.0)),
        ("embed 1280×720", Viewport::new(902.0, 601.0)),
        ("page 1280×800", Viewport::new(766.0, 455.0)),
        ("page 1920×1080", Viewport::new(1140.0, 677.0)),
        ("phone 390×844", Viewport::new(356.0, 280.0)),
        ("page 720", Viewport::new(680.0, 404.0)),
        ("present 1920×1080", Viewport::presenting(1920.0, 931.0, 1080.0)),
    ]
}

/// `v` within `lo..=hi`; the middle of the two when rounding put them
/// the wrong way round (`f64::clamp` would panic).
fn clamp(v: f64, lo: f64, hi: f64) -> f64 {
    if lo > hi {
        (lo + hi) / 2.0
    } else {
        v.max(lo).min(hi)
    }
}

/// A size that is finite and at least one pixel.
fn sane(v: f64) -> f64 {
    if v.is_finite() {
        v.max(1.0)
    } else {
        1.0
    }
}

/// What the frame shows: `view` (drawing units) at `scale` CSS pixels per
/// unit. `view` has the frame's aspect ratio, so the SVG's viewBox is it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    pub view: Rect,
    pub scale: f64,
}

impl Camera {
    /// The viewBox attribute.
    pub fn view_box(&self) -> String {
        use crate::decimal::trimmed;
        format!("{} {} {} {}", trimmed(self.view.x, 1), trimmed(self.view.y, 1), trimmed(self.view.w, 1), trimmed(self.view.h, 1))
    }

    /// Whether `r` is at least partly in view.
    pub fn shows(&self, r: &Rect) -> bool {
        r.intersects(&self.view)
    }
}

/// The whole drawing, fitted into the frame and centred.
pub fn whole(world: Rect, vp: Viewport) -> Camera {
    let scale = (vp.width / world.w).min(vp.height / world.h);
    let (w, h) = (vp.width / scale, vp.height / scale);
    Camera { view: Rect { x: world.center().x - w / 2.0, y: world.center().y - h / 2.0, w, h }, scale }
}

/// The scale at which the smallest text shows at the frame's minimum (a
/// hair above, so a browser's rounding never lands under it).
pub fn legible_scale(vp: Viewport) -> f64 {
    (vp.min_px + 0.02) / super::text::MIN_SIZE
}

/// The camera at the legible scale, centred as near `center` as the
/// drawing's edges allow (centred on the drawing along an axis where the
/// view is larger than it).
pub fn at(world: Rect, vp: Viewport, center: Point) -> Camera {
    let scale = legible_scale(vp);
    let (w, h) = (vp.width / scale, vp.height / scale);
    let axis = |c: f64, size: f64, lo: f64, len: f64| {
        if size >= len {
            lo + len / 2.0 - size / 2.0
        } else {
            clamp(c - size / 2.0, lo, lo + len - size)
        }
    };
    let c = if center.x.is_finite() && center.y.is_finite() { center } else { world.center() };
    Camera { view: Rect { x: axis(c.x, w, world.x, world.w), y: axis(c.y, h, world.y, world.h), w, h }, scale }
}

/// The centre that frames `focus` at the legible scale, or, where it does
/// not fit, keeps `keep` (the token, its card and the box it goes to) in
/// view with as much of `focus` around it as fits, or, where not even
/// that fits, centres on `keep`.
pub fn center_on(vp: Viewport, focus: Rect, keep: Rect) -> Point {
    let scale = legible_scale(vp);
    let (w, h) = (vp.width / scale, vp.height / scale);
    let axis = |lo: f64, len: f64, k0: f64, klen: f64, size: f64| {
        if len <= size {
            return lo + len / 2.0;
        }
        if klen > size {
            return k0 + klen / 2.0;
        }
        let margin = ((size - klen) / 2.0).min(24.0);
        clamp(lo + len / 2.0, k0 + klen - size / 2.0 + margin, k0 + size / 2.0 - margin)
    };
    pt(axis(focus.x, focus.w, keep.x, keep.w, w), axis(focus.y, focus.h, keep.y, keep.h, h))
}

/// How tall a canvas `width` pixels wide is on a page: the whole
/// drawing's height when the drawing is legible at that width, else the
/// drawing's height at the legible scale, at most `max_h` (the camera then
/// follows the hops), and never less than 280 pixels.
pub fn page_height(world: Rect, width: f64, max_h: f64) -> f64 {
    let fit = sane(width) / world.w.max(1.0);
    let legible = legible_scale(Viewport::new(width, 1.0));
    let h = if fit >= legible { world.h * fit } else { (world.h * legible).min(sane(max_h)) };
    h.max(280.0).ceil()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORLD: Rect = Rect { x: 0.0, y: 0.0, w: 1100.0, h: 700.0 };

    #[test]
    fn a_big_frame_shows_everything() {
        let c = whole(WORLD, Viewport::new(2200.0, 1400.0));
        assert_eq!(c.scale, 2.0);
        assert_eq!(c.view, WORLD);
    }

    #[test]
    fn a_small_frame_zooms_to_legible_and_stays_on_the_drawing() {
        let vp = Viewport::new(700.0, 360.0);
        for center in [pt(0.0, 0.0), pt(550.0, 350.0), pt(5000.0, -40.0), pt(f64::NAN, 3.0)] {
            let c = at(WORLD, vp, center);
            assert!(c.scale * crate::scene::text::MIN_SIZE >= vp.min_px - 1e-9);
            assert!(c.view.x >= 0.0 && c.view.right() <= WORLD.w + 1e-9, "{c:?}");
            assert!(c.view.y >= 0.0 && c.view.bottom() <= WORLD.h + 1e-9, "{c:?}");
        }
    }

    #[test]
    fn presenting_asks_more_on_a_bigger_screen() {
        assert_eq!(Viewport::presenting(1920.0, 900.0, 1080.0).min_px, 24.0);
        assert_eq!(Viewport::presenting(3840.0, 1800.0, 2160.0).min_px, 48.0);
        assert_eq!(Viewport::new(480.0, 200.0).min_px, 12.0, "a small frame shows less, never smaller");
        assert_eq!(Viewport::new(f64::NAN, -3.0).width, 1.0);
    }

    #[test]
    fn a_focus_that_does_not_fit_keeps_the_token_in_view() {
        let vp = Viewport::new(400.0, 300.0);
        let focus = Rect { x: 0.0, y: 0.0, w: 1000.0, h: 600.0 };
        let keep = Rect { x: 820.0, y: 500.0, w: 160.0, h: 80.0 };
        let c = center_on(vp, focus, keep);
        let cam = at(WORLD, vp, c);
        assert!(cam.view.contains(pt(keep.x, keep.y)) && cam.view.contains(pt(keep.right(), keep.bottom())), "{cam:?}");
    }
}
