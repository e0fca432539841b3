//! How wide a line of canvas text is, measured with the metrics of the
//! fonts the canvas asks for.
//!
//! The canvas's sans-serif text is measured as DejaVu Sans (regular and
//! bold) and its monospace text as DejaVu Sans Mono: the fonts Debian's
//! Chromium, Firefox and WebKit draw `system-ui` and `monospace` with, and
//! among the widest of the fonts a browser picks for those names (Segoe
//! UI, San Francisco, Roboto and Helvetica are narrower; Menlo, Consolas
//! and SF Mono are no wider than 0.602 em). So a text that fits by these
//! widths fits in every browser the project tests and in the common
//! system fonts.
//!
//! Guarantee: `width` never under-measures a character: anything outside
//! printable ASCII and the few symbols the canvas writes counts a full
//! em, wider than any glyph of these fonts but a few CJK ones.

use serde::{Deserialize, Serialize};

/// Which font a text is set in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Face {
    Sans,
    SansBold,
    Mono,
    MonoBold,
}

impl Face {
    pub fn is_mono(self) -> bool {
        matches!(self, Face::Mono | Face::MonoBold)
    }

    pub fn is_bold(self) -> bool {
        matches!(self, Face::SansBold | Face::MonoBold)
    }
}

/// Units per em of the tables below (TrueType's 2048).
const UPM: f64 = 2048.0;

/// Advance widths of ASCII 32..=126 in DejaVu Sans, in 1/2048 em.
const SANS: [u16; 95] = [
    651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690, //
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087, //
    2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612, //
    1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799, 690, 799, 1716, 1024, //
    1024, 1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253, //
    1300, 1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075, 1303, 690, 1303, 1716,
];

/// The same for DejaVu Sans Bold.
const SANS_BOLD: [u16; 95] = [
    713, 934, 1067, 1716, 1425, 2052, 1786, 627, 936, 936, 1071, 1716, 778, 850, 778, 748, //
    1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 819, 819, 1716, 1716, 1716, 1188, //
    2048, 1585, 1561, 1503, 1700, 1399, 1399, 1681, 1714, 762, 762, 1587, 1305, 2038, 1714, 1741, //
    1501, 1741, 1577, 1475, 1397, 1663, 1585, 2259, 1579, 1483, 1485, 936, 748, 936, 1716, 1024, //
    1024, 1382, 1466, 1214, 1466, 1389, 891, 1466, 1458, 702, 702, 1362, 702, 2134, 1458, 1407, //
    1466, 1466, 1010, 1219, 979, 1458, 1335, 1892, 1321, 1335, 1192, 1458, 748, 1458, 1716,
];

/// Every glyph of DejaVu Sans Mono is this wide.
const MONO: u16 = 1233;

/// The symbols the canvas writes beyond ASCII, in DejaVu Sans (regular,
/// bold); arrows, ticks and crosses are 1716 in both.
fn symbol(c: char, bold: bool) -> Option<u16> {
    Some(match c {
        '→' | '←' | '✓' | '✕' | '−' | '×' | '≈' | '≥' | '≤' => 1716,
        '▶' => 1575,
        '·' => if bold { 778 } else { 651 },
        '…' => 2048,
        '—' => 2048,
        '–' => 1024,
        '’' => if bold { 778 } else { 651 },
        '“' | '”' => if bold { 1346 } else { 1061 },
        _ => return None,
    })
}

/// One character's advance in 1/2048 em.
fn advance(c: char, face: Face) -> u16 {
    if face.is_mono() {
        // A few symbols fall back to a proportional font even in monospace text.
        return if c.is_ascii() { MONO } else { symbol(c, face.is_bold()).map_or(2048, |w| w.max(MONO)) };
    }
    let table = if face.is_bold() { &SANS_BOLD } else { &SANS };
    match c as u32 {
        32..=126 => table[c as usize - 32],
        _ => symbol(c, face.is_bold()).unwrap_or(2048),
    }
}

/// The width of `text` set at `size` (font size in drawing units) in `face`.
pub fn width(text: &str, size: f64, face: Face) -> f64 {
    let em: u32 = text.chars().map(|c| u32::from(advance(c, face))).sum();
    f64::from(em) / UPM * size
}

/// The longest prefix of `text` that fits in `room` at this size, cut at a
/// character and ended with an ellipsis when anything was cut.
pub fn fit(text: &str, size: f64, face: Face, room: f64) -> String {
    if width(text, size, face) <= room {
        return text.to_string();
    }
    let ellipsis = width("…", size, face);
    let mut used = 0.0;
    let mut out = String::new();
    for c in text.chars() {
        let w = f64::from(advance(c, face)) / UPM * size;
        if used + w + ellipsis > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// The height of a line of text at `size`: ascent plus descent of DejaVu
/// Sans (0.928 + 0.236 em), which the canvas uses for hit boxes.
pub fn line_height(size: f64) -> f64 {
    size * 1.164
}

/// How far above its baseline a text's ink reaches (DejaVu's cap height
/// and ascenders, 0.76 em; accents above are rare in the canvas).
pub fn ascent(size: f64) -> f64 {
    size * 0.76
}

/// How far below its baseline the descenders reach (0.24 em).
pub fn descent(size: f64) -> f64 {
    size * 0.24
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_fonts_tables() {
        // "W" is 2025/2048 em in DejaVu Sans, 2259 in bold.
        assert!((width("W", 2048.0, Face::Sans) - 2025.0).abs() < 1e-9);
        assert!((width("W", 2048.0, Face::SansBold) - 2259.0).abs() < 1e-9);
        // Monospace: 0.602 em a character.
        assert!((width("10.96.0.50:80", 10.0, Face::Mono) - 13.0 * 1233.0 / 2048.0 * 10.0).abs() < 1e-9);
        assert!(width("Wide", 14.0, Face::SansBold) > width("Wide", 14.0, Face::Sans));
    }

    #[test]
    fn unknown_characters_count_a_full_em() {
        assert_eq!(width("漢", 10.0, Face::Sans), 10.0);
        assert_eq!(width("漢", 10.0, Face::Mono), 10.0);
    }

    #[test]
    fn fit_cuts_with_an_ellipsis_and_never_overflows() {
        let t = "api-7c9d8f5b6-r8t6w";
        assert_eq!(fit(t, 14.0, Face::Sans, 1000.0), t);
        for room in [20.0, 40.0, 80.0, 120.0] {
            let f = fit(t, 14.0, Face::Sans, room);
            assert!(f.ends_with('…'), "{f}");
            assert!(width(&f, 14.0, Face::Sans) <= room, "{f} at {room}");
        }
    }
}
