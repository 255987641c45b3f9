//! Timestamps and days read without chrono's general parser.
//!
//! chrono's `Deserialize` for `DateTime` and `NaiveDate` goes through its
//! format-item parser (RFC 2822, weekday and month names, …), about 5 KB of
//! the dashboard's gzipped WebAssembly. The server only ever writes RFC 3339
//! timestamps and ISO days, so the WebAssembly build reads API fields with the
//! small parsers here (`#[cfg_attr(target_arch = "wasm32", serde(deserialize_with = …))]`);
//! the server keeps chrono's. A test holds the two to the same answers.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use serde::de::Error;
use serde::{Deserialize, Deserializer};

fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// `YYYY-MM-DD`.
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    NaiveDate::from_ymd_opt(digits(&b[..4])? as i32, digits(&b[5..7])?, digits(&b[8..])?)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (RFC 3339; `t`, `z` and a
/// space for `T` accepted, as chrono accepts them).
pub fn parse_rfc3339(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let date = parse_date(&s[..10])?;
    let (h, m, sec) = (digits(&b[11..13])?, digits(&b[14..16])?, digits(&b[17..19])?);
    let mut rest = &b[19..];
    let mut nanos = 0;
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        // Nanoseconds: the first nine digits, padded.
        nanos = frac[..n.min(9)].iter().fold(0, |v, d| v * 10 + u32::from(d - b'0')) * 10u32.pow(9 - n.min(9) as u32);
        rest = &frac[n..];
    }
    let offset_seconds = match rest {
        [b'Z' | b'z'] => 0,
        // `±HH:MM`, or `±HHMM` as chrono also takes.
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] | [sign @ (b'+' | b'-'), h1, h2, m1, m2] => {
            let (oh, om) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if oh > 23 || om > 59 {
                return None;
            }
            let v = (oh * 3600 + om * 60) as i64;
            if *sign == b'-' { -v } else { v }
        }
        _ => return None,
    };
    // A leap second (60) is kept as chrono keeps it.
    let time = if sec == 60 {
        NaiveTime::from_hms_nano_opt(h, m, 59, 1_000_000_000 + nanos)?
    } else {
        NaiveTime::from_hms_nano_opt(h, m, sec, nanos)?
    };
    let local = date.and_time(time).and_utc();
    Some(local - chrono::Duration::seconds(offset_seconds))
}

/// A required RFC 3339 timestamp.
pub fn utc<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let s = String::deserialize(d)?;
    parse_rfc3339(&s).ok_or_else(|| D::Error::custom(format_args!("`{s}` is not an RFC 3339 timestamp")))
}

/// An optional RFC 3339 timestamp (use with `#[serde(default)]`).
pub fn utc_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(s) => parse_rfc3339(&s)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format_args!("`{s}` is not an RFC 3339 timestamp"))),
    }
}

/// An optional `YYYY-MM-DD` day (use with `#[serde(default)]`).
pub fn date_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(s) => {
            parse_date(&s).map(Some).ok_or_else(|| D::Error::custom(format_args!("`{s}` is not a YYYY-MM-DD day")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_small_parsers_agree_with_chrono() {
        for s in [
            "2026-12-04T05:33:47Z",
            "2026-12-04T05:33:47.123Z",
            "2026-12-04T05:33:47.123456789Z",
            "2026-12-04T05:33:47.1234567891Z",
            "2026-12-04t05:33:47z",
            "2026-12-04 05:33:47+02:00",
            "2026-12-04T05:33:47-07:30",
            "2016-12-31T23:59:60Z",
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-12-04T24:00:00Z",
            "2026-12-04T05:33:47",
            "2026-12-04T05:33:47.Z",
            "2026-12-04T05:33Z",
            "2026-12-04",
            "",
            "not a time",
            "2026-12-04T05:33:47+0200",
            "2026-12-04T05:33:47+99:00",
            "2026-12-04T05:33:47+02:60",
        ] {
            let chrono = s.parse::<DateTime<chrono::FixedOffset>>().ok().map(|t| t.with_timezone(&Utc));
            assert_eq!(parse_rfc3339(s), chrono, "{s:?}");
        }
        // chrono also takes a signed year and one-digit months, which the server never writes.
        assert_eq!(parse_rfc3339("+2026-12-04T05:33:47Z"), None);
        assert_eq!(parse_date("2026-1-04"), None);
        for s in ["2026-12-04", "2024-02-29", "2023-02-29", "20261204", "2026-12-04T00", ""] {
            assert_eq!(parse_date(s), s.parse::<NaiveDate>().ok(), "{s:?}");
        }
    }

    #[test]
    fn fields_read_as_chrono_reads_them() {
        #[derive(Deserialize)]
        struct T {
            #[serde(deserialize_with = "utc")]
            at: DateTime<Utc>,
            #[serde(default, deserialize_with = "utc_opt")]
            maybe: Option<DateTime<Utc>>,
            #[serde(default, deserialize_with = "date_opt")]
            day: Option<NaiveDate>,
        }
        let t: T = serde_json::from_str(r#"{"at": "2026-12-04T05:33:47.5Z", "day": "2026-12-04"}"#).unwrap();
        assert_eq!(t.at, "2026-12-04T05:33:47.5Z".parse::<DateTime<Utc>>().unwrap());
        assert_eq!((t.maybe, t.day), (None, NaiveDate::from_ymd_opt(2026, 12, 4)));
        let t: T = serde_json::from_str(r#"{"at": "2026-12-04T05:33:47Z", "maybe": null}"#).unwrap();
        assert_eq!(t.maybe, None);
        let e = serde_json::from_str::<T>(r#"{"at": "yesterday"}"#).err().unwrap().to_string();
        assert!(e.contains("`yesterday` is not an RFC 3339 timestamp"), "{e}");
    }
}
