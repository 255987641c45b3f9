//! Input that cannot hurt: the checks every way in (API bodies, queries,
//! paths, forms, imports) shares.
//!
//! - **NUL characters.** PostgreSQL stores no `\0` in text or JSON, so a
//!   value holding one is refused up front, naming its field, on both
//!   engines alike (SQLite would take it; a backup restored into PostgreSQL
//!   would not).
//! - **Bounded reads.** A streamed format is read one line at a time, each at
//!   most [`LINE_LIMIT`]; a longer line is skipped (not buffered) and
//!   rejected with its number. Formats read whole are capped at
//!   [`DOCUMENT_LIMIT`].
//! - **Byte-order marks.** A UTF-8 BOM at the start of any text input is dropped.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt};

/// Longest line a streamed import format takes (NDJSON, JSON Lines, GitHub issues).
pub const LINE_LIMIT: usize = 8 << 20;
/// Largest input read whole (a JSON array, a CSV file, a leaderboard, a JUnit report).
pub const DOCUMENT_LIMIT: u64 = 32 << 20;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why a value cannot be stored, for a field.
pub fn nul_message(field: &str) -> String {
    format!("{field}: contains a NUL character (\\u0000), which failpass does not store")
}

/// The path (`oracle.signature`, `labels[2]`) of the first string or key in
/// `v` holding a NUL character.
pub fn nul_path(v: &Value) -> Option<String> {
    fn walk(v: &Value, path: &mut String) -> bool {
        match v {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            Value::Object(map) => map.iter().any(|(k, item)| {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&k.replace('\0', "\\u0000"));
                let found = k.contains('\0') || walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            _ => false,
        }
    }
    let mut path = String::new();
    walk(v, &mut path).then(|| if path.is_empty() { "body".to_owned() } else { path })
}

/// Whether JSON text may hold a NUL character: only as the escape `\u0000`
/// (JSON forbids a raw control character inside a string). A cheap test
/// before the exact one, [`nul_path`].
pub fn may_hold_nul(json: &[u8]) -> bool {
    json.windows(6).any(|w| w.eq_ignore_ascii_case(b"\\u0000"))
}

/// The field of a serialisable record holding a NUL character, if any.
pub fn record_nul_field<T: serde::Serialize>(record: &T) -> Option<String> {
    let text = serde_json::to_vec(record).ok()?;
    if !may_hold_nul(&text) {
        return None;
    }
    nul_path(&serde_json::from_slice(&text).ok()?)
}

/// Drops a UTF-8 byte-order mark at the start of `input`.
pub async fn skip_bom<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<()> {
    let head = input.fill_buf().await?;
    if head.starts_with(BOM) {
        input.consume(BOM.len());
    }
    Ok(())
}

/// Text without a leading byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// One line (with its `\n`, if any) into `bytes`, at most [`LINE_LIMIT`] of
/// it kept: `Ok(None)` at the end of the input, `Ok(Some(false))` for a line
/// longer than the limit (read to its end and dropped, never held whole).
pub async fn read_line_capped<R: AsyncBufRead + Unpin>(
    input: &mut R,
    bytes: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    bytes.clear();
    let mut read_any = false;
    let mut too_long = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(read_any.then_some(!too_long));
        }
        read_any = true;
        let (chunk, done) = match memchr_newline(buf) {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if !too_long {
            if bytes.len() + n > LINE_LIMIT {
                too_long = true;
                bytes.clear();
                bytes.shrink_to(64 << 10);
            } else {
                bytes.extend_from_slice(chunk);
            }
        }
        input.consume(n);
        if done {
            return Ok(Some(!too_long));
        }
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|b| *b == b'\n')
}

/// The whole input as text, refused beyond [`DOCUMENT_LIMIT`] (`what` names the format).
pub async fn read_document<R: AsyncRead + Unpin>(input: R, what: &str) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    input.take(DOCUMENT_LIMIT + 1).read_to_end(&mut bytes).await?;
    if bytes.len() as u64 > DOCUMENT_LIMIT {
        anyhow::bail!(
            "{what} is read whole, and this one is larger than the {} MiB limit; send JSON Lines (one record per line) instead, which streams",
            DOCUMENT_LIMIT >> 20
        );
    }
    let text = String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("{what} is not UTF-8 ({})", e.utf8_error()))?;
    Ok(strip_bom(&text).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_paths_name_the_field() {
        let v: Value =
            serde_json::from_str(r#"{"title":"ok","oracle":{"signature":"a\u0000b"},"labels":["x","y"]}"#).unwrap();
        assert_eq!(nul_path(&v).as_deref(), Some("oracle.signature"));
        let v: Value = serde_json::from_str(r#"{"labels":["x","y\u0000"]}"#).unwrap();
        assert_eq!(nul_path(&v).as_deref(), Some("labels[1]"));
        assert_eq!(nul_path(&serde_json::json!({"a": "\\u0000 is text here"})), None);
        assert!(may_hold_nul(br#"{"a":"\U0000"}"#) && !may_hold_nul(br#"{"a":"\u0001"}"#));
    }

    #[tokio::test]
    async fn long_lines_are_dropped_without_being_held() {
        let long = "x".repeat(LINE_LIMIT + 10);
        let text = format!("\u{feff}first\n{long}\nlast");
        let mut input = tokio::io::BufReader::with_capacity(4096, text.as_bytes());
        skip_bom(&mut input).await.unwrap();
        let mut line = Vec::new();
        assert_eq!(read_line_capped(&mut input, &mut line).await.unwrap(), Some(true));
        assert_eq!(line, b"first\n");
        assert_eq!(read_line_capped(&mut input, &mut line).await.unwrap(), Some(false));
        assert!(line.capacity() <= 64 << 10 || line.is_empty(), "the long line is not kept");
        assert_eq!(read_line_capped(&mut input, &mut line).await.unwrap(), Some(true));
        assert_eq!(line, b"last");
        assert_eq!(read_line_capped(&mut input, &mut line).await.unwrap(), None);
    }
}
