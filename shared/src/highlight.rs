//! A small Python tokenizer for syntax highlighting candidate scripts.
//!
//! Lossless: the tokens' texts joined give back the input exactly, so a
//! page that shows them shows the script. It knows comments, strings
//! (prefixed, triple-quoted, escaped), numbers, keywords and builtins, and
//! leaves everything else plain; anything it does not understand stays text.

/// What a run of characters is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Plain,
    Keyword,
    Builtin,
    String,
    Comment,
    Number,
}

impl TokenKind {
    /// The CSS class the dashboard styles it with.
    pub const fn class(self) -> &'static str {
        match self {
            TokenKind::Plain => "tok",
            TokenKind::Keyword => "tok-kw",
            TokenKind::Builtin => "tok-bi",
            TokenKind::String => "tok-str",
            TokenKind::Comment => "tok-com",
            TokenKind::Number => "tok-num",
        }
    }
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

const BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "enumerate",
    "Exception",
    "float",
    "getattr",
    "int",
    "isinstance",
    "len",
    "list",
    "max",
    "min",
    "open",
    "print",
    "range",
    "repr",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "zip",
];

/// `source` as `(kind, text)` runs, in order, adjacent plain runs merged.
pub fn tokenize(source: &str) -> Vec<(TokenKind, &str)> {
    let bytes = source.as_bytes();
    // (kind, start, end) spans; a plain span right after a plain one extends it.
    let mut spans: Vec<(TokenKind, usize, usize)> = Vec::new();
    let push = |kind: TokenKind, start: usize, end: usize, spans: &mut Vec<(TokenKind, usize, usize)>| match spans
        .last_mut()
    {
        _ if start == end => {}
        Some((TokenKind::Plain, _, prev_end)) if kind == TokenKind::Plain => *prev_end = end,
        _ => spans.push((kind, start, end)),
    };
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            push(TokenKind::Comment, start, i, &mut spans);
        } else if c == b'\'' || c == b'"' {
            i = string_end(bytes, i);
            push(TokenKind::String, start, i, &mut spans);
        } else if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_') {
                i += 1;
            }
            push(TokenKind::Number, start, i, &mut spans);
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80) {
                i += 1;
            }
            let word = &source[start..i];
            // String prefixes: r"…", b'…', f"""…""", rb"…".
            let prefix =
                word.len() <= 2 && word.chars().all(|c| matches!(c.to_ascii_lowercase(), 'r' | 'b' | 'f' | 'u'));
            if prefix && i < bytes.len() && (bytes[i] == b'\'' || bytes[i] == b'"') {
                i = string_end(bytes, i);
                push(TokenKind::String, start, i, &mut spans);
            } else {
                let kind = if KEYWORDS.contains(&word) {
                    TokenKind::Keyword
                } else if BUILTINS.contains(&word) {
                    TokenKind::Builtin
                } else {
                    TokenKind::Plain
                };
                push(kind, start, i, &mut spans);
            }
        } else {
            i += 1;
            while i < bytes.len() && !source.is_char_boundary(i) {
                i += 1;
            }
            push(TokenKind::Plain, start, i, &mut spans);
        }
    }
    spans.into_iter().map(|(kind, start, end)| (kind, &source[start..end])).collect()
}

/// The end of the string literal opening at `i` (a quote): past its closing
/// quote, or the end of the line (single-quoted) or input (triple-quoted)
/// when it never closes.
fn string_end(bytes: &[u8], i: usize) -> usize {
    let q = bytes[i];
    let triple = bytes.get(i + 1) == Some(&q) && bytes.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'\n' if !triple => return j,
            b if b == q && (!triple || (bytes.get(j + 1) == Some(&q) && bytes.get(j + 2) == Some(&q))) => {
                return j + if triple { 3 } else { 1 };
            }
            _ => j += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, &str)> {
        tokenize(src).into_iter().filter(|(k, _)| *k != TokenKind::Plain).collect()
    }

    #[test]
    fn classifies_a_candidate() {
        let src = "import torch  # the lib\nx = torch.ones(3, dtype=None)\nif len(x) != 3.5e1:\n    raise ValueError(f\"bad {x!r}\")\n";
        use TokenKind::*;
        assert_eq!(
            kinds(src),
            [
                (Keyword, "import"),
                (Comment, "# the lib"),
                (Number, "3"),
                (Keyword, "None"),
                (Keyword, "if"),
                (Builtin, "len"),
                (Number, "3.5e1"),
                (Keyword, "raise"),
                (String, "f\"bad {x!r}\""),
            ]
        );
    }

    #[test]
    fn is_lossless_on_anything() {
        for src in [
            "s = '''multi\nline''' + \"esc\\\"aped\" + 'open\nnext",
            "rb'\\x00' r\"\\d\" u'é' ∑ = 1_000 .5 0x1F",
            "\"\"\"never closed",
            "'",
            "",
            "a#b\n#c",
        ] {
            let joined: String = tokenize(src).iter().map(|(_, t)| *t).collect();
            assert_eq!(joined, src);
        }
        assert_eq!(kinds("'''a\n'b'''"), [(TokenKind::String, "'''a\n'b'''")]);
        assert_eq!(kinds("x = 'unclosed\ny"), [(TokenKind::String, "'unclosed")]);
    }
}
