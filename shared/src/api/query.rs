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
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

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
