//! Query-string parsing shared by the server (which validates requests) and
//! the dashboard (whose URL carries the same filters as the API call).

use std::fmt;
use std::str::FromStr;

/// A query parameter that could not be used, with the parameter's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

/// Parses `value` for `field`, naming the field on failure.
pub fn parse_field<T>(field: &str, value: &str) -> Result<T, FieldError>
where
    T: FromStr,
    T::Err: fmt::Display,
{
    value.parse::<T>().map_err(|e| FieldError::new(field, e.to_string()))
}

/// A time stored for a report, attempt or run must fall in 1970–2199: a
/// date outside it is a typo or garbage, and would sort beyond every figure.
pub fn check_time(field: &str, t: Option<&chrono::DateTime<chrono::Utc>>) -> Result<(), FieldError> {
    use chrono::Datelike;
    match t {
        Some(t) if !(1970..2200).contains(&t.year()) => {
            Err(FieldError::new(field, format!("{} is outside 1970 to 2199", t.to_rfc3339())))
        }
        _ => Ok(()),
    }
}

/// Treats an empty value as absent, so `?route=` from an "any" select is fine.
pub fn non_empty(value: &str) -> Option<&str> {
    let v = value.trim();
    (!v.is_empty()).then_some(v)
}

/// Percent-encodes a query component (RFC 3986 unreserved characters kept).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Joins pairs into `a=1&b=two`, encoding each value.
pub fn to_query_string(pairs: &[(&str, String)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={}", encode_component(v))).collect::<Vec<_>>().join("&")
}

/// Decodes a query component: `+` is a space, `%XX` a byte; invalid UTF-8
/// and stray `%` are kept rather than dropped.
pub fn decode_component(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `a=1&b=two%20words` as decoded pairs, in order; empty parts are skipped.
pub fn parse_query_string(query: &str) -> Vec<(String, String)> {
    query
        .trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode_component(k), decode_component(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_what_it_encodes() {
        for s in ["a b/c&d=é", "route,agent,model", "100%", "%zz", "x%4", ""] {
            assert_eq!(decode_component(&encode_component(s)), s);
        }
        assert_eq!(decode_component("a+b%2Cc"), "a b,c");
        assert_eq!(decode_component("50%"), "50%");
        assert_eq!(decode_component("%4"), "%4");
        assert_eq!(decode_component("%E9"), "\u{fffd}");
        assert_eq!(
            parse_query_string("?project=a%2Fb&&q=nan+loss&flag"),
            [("project".to_owned(), "a/b".to_owned()), ("q".into(), "nan loss".into()), ("flag".into(), String::new())]
        );
    }

    #[test]
    fn encodes_reserved_characters() {
        assert_eq!(encode_component("a b/c&d=é"), "a%20b%2Fc%26d%3D%C3%A9");
        assert_eq!(to_query_string(&[("q", "nan loss".into()), ("limit", "5".into())]), "q=nan%20loss&limit=5");
    }

    #[test]
    fn parse_field_names_the_field() {
        let err = parse_field::<u32>("limit", "ten").unwrap_err();
        assert_eq!(err.field, "limit");
        assert!(err.to_string().starts_with("limit: "));
    }
}
