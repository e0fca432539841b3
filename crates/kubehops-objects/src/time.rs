//! Times as Kubernetes writes them: `metadata.creationTimestamp`, and the
//! `--now` of `kubehops get svc`. The API server reads them with Go's
//! `time.RFC3339` layout, `2006-01-02T15:04:05Z07:00`: an upper-case `T`,
//! then `Z` or a `±hh:mm` offset, with an optional fraction of a second
//! after the seconds. Parsing is jiff's; this module only states that
//! layout. Fractions are accepted and dropped (rounded down), since AGE is
//! counted in whole seconds.

use jiff::fmt::strtime::{self, BrokenDownTime};
use jiff::tz::Offset;
use jiff::{RoundMode, Timestamp, TimestampRound, Unit};

/// The layout's two spellings of the zone: `Z` for UTC, or an offset.
const IN_UTC: &str = "%Y-%m-%dT%H:%M:%S%.fZ";
const WITH_OFFSET: &str = "%Y-%m-%dT%H:%M:%S%.f%:z";

/// Seconds since the Unix epoch, or `None` if `s` is not an RFC 3339 time
/// that Go's `time.RFC3339` layout accepts.
pub fn parse(s: &str) -> Option<i64> {
    if !within_gos_layout(s) {
        return None;
    }
    let in_utc = || -> Result<Timestamp, jiff::Error> {
        let mut tm = BrokenDownTime::parse(IN_UTC, s)?;
        tm.set_offset(Some(Offset::UTC));
        tm.to_timestamp()
    };
    let t = in_utc().or_else(|_| strtime::parse(WITH_OFFSET, s)?.to_timestamp()).ok()?;
    let whole = t.round(TimestampRound::new().smallest(Unit::Second).mode(RoundMode::Floor)).ok()?;
    Some(whole.as_second())
}

/// Where jiff's reading is wider than Go's layout, which refuses: fields
/// with fewer digits (`2024-5-1T2:00:00Z`) or a signed year; a leap second
/// (jiff reads `:60` as `:59`); and an offset with seconds (`+02:00:00`).
/// Everything else (the calendar, the ranges, the offset) is jiff's check.
fn within_gos_layout(s: &str) -> bool {
    const FIXED: &[u8; 19] = b"0000-00-00T00:00:00";
    let b = s.as_bytes();
    let fixed_width = b.len() > FIXED.len() && b.iter().zip(FIXED).all(|(c, l)| if *l == b'0' { c.is_ascii_digit() } else { c == l });
    let hh_mm_offset = s.ends_with('Z') || (b.len() >= 6 && matches!(b[b.len() - 6], b'+' | b'-'));
    fixed_width && &b[17..19] != b"60" && hh_mm_offset
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn known_instants() {
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse("2000-03-01T00:00:00Z"), Some(951868800));
        assert_eq!(parse("2024-02-29T23:59:59Z"), Some(1709251199));
        assert_eq!(parse("2024-05-01T12:00:00.123456Z"), Some(1714564800));
        assert_eq!(parse("2024-05-01T12:00:00.999999999Z"), Some(1714564800), "fractions round down");
        assert_eq!(parse("2024-05-01T14:00:00+02:00"), Some(1714564800));
        assert_eq!(parse("2024-05-01T07:30:00-04:30"), Some(1714564800));
        assert_eq!(parse("1969-12-31T23:59:59Z"), Some(-1));
        assert_eq!(parse("1969-12-31T23:59:59.5Z"), Some(-1), "down, not toward zero");
    }

    #[test]
    fn rejects_what_go_rejects() {
        for bad in [
            "",
            "2024-05-01",
            "2024-05-01 12:00:00Z",
            "2024-05-01t12:00:00Z",
            "2024-05-01T12:00:00",
            "2024-05-01T12:00Z",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-04-31T00:00:00Z",
            "2024-05-01T24:00:00Z",
            "2024-05-01T12:60:00Z",
            "2024-05-01T12:00:60Z",
            "2024-05-01T12:00:00.Z",
            "2024-05-01T12:00:00+0200",
            "2024-05-01T12:00:00+02",
            "2024-05-01T12:00:00z",
            "2024-05-01T12:00:00Z ",
            "2024-05-01T12:00:00ZZ",
            "2024-5-01T12:00:00Z",
            "2024-05-1T12:00:00Z",
            "2024-05-01T2:00:00Z",
            "2024-05-01T12:00:00+02:00:00",
            "2024-05-01T12:00:00+2:00",
            "+2024-05-01T12:00:00Z",
            "02024-05-01T12:00:00Z",
            "２０２４-05-01T12:00:00Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
