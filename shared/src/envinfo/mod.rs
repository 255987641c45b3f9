//! Environment sections of bug reports: the package versions a report names
//! (`pandas version: 2.0.0`, an issue form's version field, `pip freeze`
//! and `show_versions()` dumps, `pd.__version__` printed in a session,
//! `jax/jaxlib 0.4.13`). One reader of these lines, for grading a report on
//! its own release and, through [`line_versions`], for routing's reading of
//! environment sections (`routing::sections`).
//!
//! A version found here is only a claim: the server checks it against the
//! package index's releases before anything is built with it.

/// How a report named a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// `name==1.2.3`, as `pip freeze` prints it.
    Pinned,
    /// `name: 1.2.3`, `name version: 1.2.3`, `| name | 1.2.3 |`, `name 1.2.3` on a short line.
    Field,
    /// An issue form's version field: a `### … version` heading and its value.
    FormField,
    /// `name.__version__` printed in a session or script's output.
    Printed,
}

/// A package version a report names, and the line it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The name as written, lower-case (`pandas`, `pd`, `jaxlib`); empty for
    /// a form field that names no package (`### Version`).
    pub name: String,
    pub version: String,
    /// 1-based line of the body.
    pub line_no: usize,
    /// The line, trimmed and cut to 120 characters.
    pub line: String,
    pub how: How,
}

impl Named {
    /// Where this came from, for the report page: `line 12: "pandas : 2.0.0"`.
    pub fn source(&self) -> String {
        format!("line {}: \"{}\"", self.line_no, self.line)
    }
}

/// Every name and version the body's lines name, in order.
pub fn named_versions(body: &str) -> Vec<Named> {
    let lines: Vec<&str> = body.lines().collect();
    let mut out = Vec::new();
    let mut form_heading: Option<String> = None;
    let mut printed: Option<String> = None;
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim();
        let named = |name: &str, version: String, how| Named {
            name: name.to_ascii_lowercase(),
            version,
            line_no: i + 1,
            line: line.chars().take(120).collect(),
            how,
        };
        if line.is_empty() || line.starts_with("```") {
            continue;
        }
        // A value under a version heading (an issue form's field).
        if let Some(heading) = form_heading.take()
            && let Some(v) = version_token(line.trim_matches('`'))
            && line.split_whitespace().count() <= 2
        {
            out.push(named(&heading, v, How::FormField));
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let h = h.trim_start_matches('#').trim().to_ascii_lowercase();
            if h.ends_with("version") || h.ends_with("versions") {
                let words: Vec<&str> = h.split_whitespace().collect();
                form_heading = Some(if words.len() == 2 { words[0].to_owned() } else { String::new() });
            }
            continue;
        }
        // The value printed after `>>> pd.__version__` or `print(np.__version__)`.
        if let Some(name) = printed.take() {
            let value = line.trim_start_matches("Out[").split("]: ").last().unwrap_or(line);
            if let Some(v) = version_token(value.trim_matches(|c| c == '\'' || c == '"'))
                && value.split_whitespace().count() == 1
            {
                out.push(named(&name, v, How::Printed));
                continue;
            }
        }
        if let Some((before, after)) = line.split_once(".__version__") {
            let name = before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("");
            if !name.is_empty() {
                // `pd.__version__  # 2.0.0` or `'2.0.0'` on the same line, else on the next.
                let rest = after.trim_start_matches([')', ' ']).trim_start_matches(['#', '=', ':', '-', '>', ' ']);
                let first = rest.split_whitespace().next().unwrap_or("").trim_matches(|c| c == '\'' || c == '"');
                match version_token(first) {
                    Some(v) => out.push(named(name, v, How::Printed)),
                    None => printed = Some(name.to_owned()),
                }
                continue;
            }
        }
        for (name, version, how) in pairs(line) {
            out.push(named(&name, version, how));
        }
    }
    out
}

/// The version the report names for a package known by any of `names`
/// (the index name, the import name, aliases), with where it came from.
/// Pinned and form fields win over printed values, which win over prose
/// fields; the first of the best kind is taken.
pub fn version_of(body: &str, names: &[&str]) -> Option<Named> {
    let wanted: Vec<String> = names.iter().map(|n| normalize(n)).collect();
    let found = named_versions(body);
    let matches = |n: &Named| wanted.contains(&normalize(&n.name));
    let rank = |h: How| match h {
        How::Pinned | How::FormField => 0,
        How::Printed => 1,
        How::Field => 2,
    };
    let mut best: Option<Named> = None;
    for n in found {
        let fits = matches(&n) || (n.how == How::FormField && n.name.is_empty());
        if fits && best.as_ref().is_none_or(|b| rank(n.how) < rank(b.how)) {
            best = Some(n);
        }
    }
    best
}

/// PEP 503 normalisation: lower-case, runs of `-_.` as `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The names and versions one line names (`name==1.2`, `name: 1.2`,
/// `name version 1.2`, `| name | 1.2 |`, `a/b 1.2`), with how.
pub fn line_versions(line: &str) -> Vec<(String, String, How)> {
    pairs(line)
}

/// `name==1.2`, `name: 1.2`, `name version 1.2`, `| name | 1.2 |`, `a/b 1.2` on one line.
fn pairs(line: &str) -> Vec<(String, String, How)> {
    let line = line.trim_start_matches(['-', '*', '+', '>', ' ']).trim();
    if let Some((name, rest)) = line.split_once("==") {
        let name = name.trim();
        if is_name(name)
            && let Some(v) = version_token(rest.split_whitespace().next().unwrap_or(""))
        {
            return vec![(name.to_owned(), v, How::Pinned)];
        }
        return Vec::new();
    }
    // A markdown table row: `| pandas | 2.0.0 |`.
    let cleaned: String = line.replace(['|', '`', '*'], " ");
    let (names, value) = match cleaned.split_once(':') {
        Some((n, v)) => (n.trim().to_owned(), v.trim().to_owned()),
        None => {
            let tokens: Vec<&str> = cleaned.split_whitespace().collect();
            // Only short lines: `jax 0.4.13`, `pandas version 2.0.0`, a conda listing; not prose.
            if tokens.len() < 2 || tokens.len() > 5 {
                return Vec::new();
            }
            let at = tokens.iter().position(|t| version_token(t).is_some());
            match at {
                Some(k) if k >= 1 => (tokens[..k].join(" "), tokens[k..].join(" ")),
                _ => return Vec::new(),
            }
        }
    };
    let names = names.trim_end_matches(" version").trim_end_matches(" Version").trim();
    let Some(version) = value.split_whitespace().next().and_then(version_token) else { return Vec::new() };
    // `jax/jaxlib 0.4.13` names both.
    names
        .split('/')
        .map(str::trim)
        .filter(|n| is_name(n))
        .map(|n| (n.to_owned(), version.clone(), How::Field))
        .collect()
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A token that looks like a version: `2.0.0`, `v1.26`, `0.4.13,`, `2.1.0rc1`,
/// `'2.0.0'`. Not a date, not a bare number.
pub fn version_token(token: &str) -> Option<String> {
    let t = token.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | ',' | ';' | '(' | ')' | '[' | ']'));
    let t = t.strip_suffix('.').unwrap_or(t);
    let t = t.strip_prefix('v').unwrap_or(t);
    let ok = t.chars().next().is_some_and(|c| c.is_ascii_digit())
        && t.contains('.')
        && t.len() <= 40
        && t.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '-' | '_'))
        && !t.contains("..");
    ok.then(|| t.to_owned())
}

#[cfg(test)]
mod tests;
