//! Times as Kubernetes writes them: `metadata.creationTimestamp`, and the
//! `--now` of `kubehops get svc`. The API server reads them with Go's
//! `time.RFC3339` layout, `2006-01-02T15:04:05Z07:00`: an upper-case `T`,
//! then `Z` or a `±hh:mm` offset, with an optional fraction of a second
//! after the seconds. Fractions are accepted and dropped (rounded down),
//! since AGE is counted in whole seconds.
//!
//! The layout is small enough to read by hand, which keeps a date library
//! out of the browser's download (the reader is shared with the app).

/// Seconds since the Unix epoch, or `None` if `s` is not an RFC 3339 time
/// that Go's `time.RFC3339` layout accepts.
pub fn parse(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || !b.is_ascii() {
        return None;
    }
    let (date, rest) = b.split_at(19);
    let field = |at: usize, len: usize| digits(&date[at..at + len]);
    if [date[4], date[7], date[10], date[13], date[16]] != [b'-', b'-', b'T', b':', b':'] {
        return None;
    }
    let (year, month, day) = (field(0, 4)?, field(5, 2)?, field(8, 2)?);
    let (hour, minute, second) = (field(11, 2)?, field(14, 2)?, field(17, 2)?);
    let valid = (1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day) && hour < 24 && minute < 60 && second < 60;
    if !valid {
        return None;
    }
    let zone = skip_fraction(rest)?;
    let offset = zone_offset(zone)?;
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second - offset)
}

/// The digits of `b` as a number; `None` unless every byte is a digit.
fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |n, c| c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0')))
}

/// What follows an optional `.ddd` fraction (at least one digit).
fn skip_fraction(rest: &[u8]) -> Option<&[u8]> {
    match rest {
        [b'.', tail @ ..] => {
            let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
            (n > 0).then(|| &tail[n..])
        }
        _ => Some(rest),
    }
}

/// The zone's offset east of UTC in seconds: `Z`, or `±hh:mm` with hours
/// below 24 and minutes below 60, as Go's reader insists.
fn zone_offset(zone: &[u8]) -> Option<i64> {
    match zone {
        [b'Z'] => Some(0),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (h, m) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if h > 23 || m > 59 {
                return None;
            }
            let east = h * 3_600 + m * 60;
            Some(if *sign == b'-' { -east } else { east })
        }
        _ => None,
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar,
/// counting from March so that the leap day ends a year (the usual
/// era-of-400-years method).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
        assert_eq!(parse("0001-01-01T00:00:00Z"), Some(-62135596800));
        assert_eq!(parse("9999-12-31T23:59:59Z"), Some(253402300799));
        assert_eq!(parse("2100-02-28T00:00:00+23:59"), Some(4107369660));
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
            "2024-05-01T12:00:00+24:00",
            "2024-05-01T12:00:00+02:60",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
