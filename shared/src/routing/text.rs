//! Reading a report's text: prose apart from code and tracebacks, words
//! matched as words, and label patterns.

/// A report body split into what the reporter wrote and what they pasted:
/// fenced or indented code blocks and tracebacks.
#[derive(Debug, Default, PartialEq)]
pub struct Split {
    pub prose: String,
    pub code: String,
}

/// Splits a Markdown body into prose and code. Code is a fenced block
/// (```` ``` ```` or `~~~`), a line indented by four spaces or a tab, or a
/// traceback from its header to the exception line.
pub fn split(body: &str) -> Split {
    let mut out = Split::default();
    let mut fence: Option<&str> = None;
    let mut in_traceback = false;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            } else {
                push_line(&mut out.code, line);
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            continue;
        }
        if trimmed.starts_with("Traceback (most recent call last)") {
            in_traceback = true;
        }
        let indented = line.starts_with("    ") || line.starts_with('\t');
        if in_traceback || indented {
            push_line(&mut out.code, line);
            let continues = line.starts_with(char::is_whitespace) || trimmed.starts_with("Traceback");
            if in_traceback && !continues && !trimmed.is_empty() {
                // The exception line ends the traceback.
                in_traceback = false;
            }
        } else {
            push_line(&mut out.prose, line);
        }
    }
    out
}

fn push_line(s: &mut String, line: &str) {
    s.push_str(line);
    s.push('\n');
}

/// Whether `pattern` occurs in lowercase `haystack` as a word: no letter or
/// digit on either side. A trailing `*` matches any ending (`compil*` finds
/// "compiler" and "compilation"). `pattern` must be lowercase.
pub fn find_word(haystack: &str, pattern: &str) -> bool {
    let (needle, prefix) = match pattern.strip_suffix('*') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    if needle.is_empty() {
        return false;
    }
    let bytes = haystack.as_bytes();
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b >= 0x80;
    let mut start = 0;
    while let Some(pos) = haystack[start..].find(needle) {
        let i = start + pos;
        let j = i + needle.len();
        let first = needle.as_bytes()[0];
        let last = needle.as_bytes()[needle.len() - 1];
        // A pattern that starts or ends with punctuation (".so", "ld:") is
        // bounded by that punctuation already.
        let before_ok = i == 0 || !word_byte(first) || !word_byte(bytes[i - 1]);
        let after_ok = prefix || j >= bytes.len() || !word_byte(last) || !word_byte(bytes[j]);
        if before_ok && after_ok {
            return true;
        }
        start = i + 1;
        while !haystack.is_char_boundary(start) {
            start += 1;
        }
    }
    false
}

/// A lowercase text's words (runs of letters, digits and non-ASCII
/// characters, as [`find_word`] bounds them), sorted, for looking many
/// patterns up in one text: a pattern that is one word, or one word and
/// `*`, is a binary search; any other (a phrase, `.so`) falls back to
/// [`find_word`]. Answers exactly as [`find_word`] does.
pub struct Words<'a> {
    text: &'a str,
    words: Vec<&'a str>,
}

impl<'a> Words<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut words: Vec<&str> = split_words(text).collect();
        words.sort_unstable();
        words.dedup();
        Self { text, words }
    }

    /// [`find_word`]`(text, pattern)`.
    pub fn find(&self, pattern: &str) -> bool {
        let needle = pattern.strip_suffix('*').unwrap_or(pattern);
        let prefix = needle.len() < pattern.len();
        let tokens: Vec<&str> = split_words(needle).collect();
        let Some(last) = tokens.len().checked_sub(1) else { return find_word(self.text, pattern) };
        // Every word of a match is a word of the text, but a last word left
        // open (`cross-compil*`) may be the start of one: any missing, no match.
        let open_end = prefix && needle.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric() || b >= 0x80);
        if !tokens.iter().enumerate().all(|(k, t)| self.has(t, k == last && open_end)) {
            return false;
        }
        // One word alone is answered; a phrase (`.so`, `link error`) is checked in place.
        (tokens.len() == 1 && tokens[0].len() == needle.len()) || find_word(self.text, pattern)
    }

    fn has(&self, word: &str, prefix: bool) -> bool {
        // Words starting with `word` sort from the first word not below it.
        let i = self.words.partition_point(|w| *w < word);
        self.words.get(i).is_some_and(|w| if prefix { w.starts_with(word) } else { *w == word })
    }
}

fn split_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_ascii() && !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty())
}

/// Whether a label matches a pattern, case-insensitively: `*` matches any
/// run of characters and `?` one character, anywhere in the pattern
/// (`module: build*`, `oncall: *`, `*cuda*`). A pattern without either must
/// match the whole label.
pub fn glob_match(pattern: &str, label: &str) -> bool {
    let label = label.trim();
    if pattern.is_ascii() && label.is_ascii() {
        // Most labels and patterns: compared in place, nothing allocated.
        return wildcard(pattern.as_bytes(), label.as_bytes(), b'*', b'?', |a, b| a.eq_ignore_ascii_case(b));
    }
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let s: Vec<char> = label.to_lowercase().chars().collect();
    wildcard(&p, &s, '*', '?', |a, b| a == b)
}

/// Iterative wildcard matching with one backtrack point.
fn wildcard<T: Copy + PartialEq>(p: &[T], s: &[T], star_: T, any: T, eq: impl Fn(&T, &T) -> bool) -> bool {
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == any || eq(&p[pi], &s[si])) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == star_ {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == star_ {
        pi += 1;
    }
    pi == p.len()
}

/// Words of a text for the classifier: lowercase runs of letters and digits
/// (dots and underscores inside a word split it), at least two characters,
/// not only digits, not a stop word.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
}

const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "with", "this", "that", "from", "are", "was", "were", "not", "but", "when", "what", "which",
    "into", "its", "has", "have", "had", "been", "can", "will", "would", "should", "could", "there", "their", "then",
    "than", "also", "some", "any", "all", "one", "two", "if", "in", "on", "of", "to", "is", "it", "be", "as", "at",
    "by", "or", "an", "we", "you", "my", "me", "so", "do", "does", "did", "no", "yes", "up", "out", "after", "before",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_and_code_are_told_apart() {
        let body = "It fails.\n```python\nimport torch.distributed\n```\nThen:\nTraceback (most recent call last):\n  File \"a.py\", line 1\nImportError: libcudart.so.12: cannot open shared object file\nThat is all.\n    indented code\n";
        let s = split(body);
        assert_eq!(s.prose, "It fails.\nThen:\nThat is all.\n");
        assert!(s.code.contains("import torch.distributed"));
        assert!(s.code.contains("ImportError: libcudart.so.12"));
        assert!(s.code.contains("indented code"));
        assert!(!s.code.contains("That is all"));
    }

    #[test]
    fn words_match_as_words_with_optional_prefix() {
        assert!(find_word("fails on ci today", "ci"));
        assert!(!find_word("precision loss", "ci"));
        assert!(!find_word("décision", "ci"));
        assert!(find_word("the compiler crashed", "compil*"));
        assert!(!find_word("recompile it", "compil*"));
        assert!(find_word("libfoo.so: undefined symbol", ".so"));
        assert!(find_word("ld: cannot find -lcuda", "ld:"));
        assert!(!find_word("build", "builds"));
        assert!(!find_word("", "x"));
    }

    #[test]
    fn word_sets_answer_as_find_word_does() {
        let texts = [
            "fails on ci today",
            "precision loss",
            "décision, ci-build and the compiler crashed",
            "libfoo.so: undefined symbol; ld: cannot find -lcuda",
            "build builds rebuild nccl_timeout oom-killer",
            "cross-compiling for arm; the cross-compiler",
            "",
            "x",
        ];
        let patterns = [
            "ci",
            "compil*",
            ".so",
            "ld:",
            "builds",
            "build",
            "build*",
            "nccl",
            "nccl*",
            "oom",
            "out of memory",
            "cision",
            "décision",
            "d",
            "x",
            "*",
            "",
            "symbol;",
            "undefined symbol",
            "cross-compil*",
            "ci-build",
            "ci-b*",
            "libfoo.so:",
            "-lcuda",
            "cannot find -lcuda",
            "ld:*",
            "rebuild nccl*",
            "nccl_timeout",
            "timeout",
            "oom-killer",
            "the compil*",
            "on ci",
        ];
        for text in texts {
            let words = Words::new(text);
            for p in patterns {
                assert_eq!(words.find(p), find_word(text, p), "{p:?} in {text:?}");
            }
        }
    }

    #[test]
    fn labels_match_globs_case_insensitively() {
        assert!(glob_match("module: build*", "module: build"));
        assert!(glob_match("module: build*", "Module: Build-System"));
        assert!(glob_match("oncall: *", "oncall: distributed"));
        assert!(glob_match("*cuda*", "module: cuda graphs"));
        assert!(glob_match("ci", "CI"));
        assert!(!glob_match("ci", "ci: sev"));
        assert!(!glob_match("oncall: *", "module: oncall"));
        assert!(glob_match("modulé: *", "MODULÉ: x") && glob_match("?uda", "  CUDA "));
        assert!(glob_match("platform: ?sx", "platform: osx"));
    }

    #[test]
    fn words_drop_numbers_and_stop_words() {
        let w: Vec<String> = words("Fix the CMake build for CUDA 12.1 on Windows_x64").collect();
        assert_eq!(w, ["fix", "cmake", "build", "cuda", "windows", "x64"]);
    }
}
