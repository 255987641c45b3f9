//! The `snippet` generator: the offline agent (no model, no cost) that turns
//! what a report already holds into a candidate. Its code (fenced blocks,
//! `>>>` sessions, unfenced lines that are plainly code) is the body of the
//! candidate; a value the reporter says is wrong becomes an assertion of the
//! value they expected ("Expected: `[0.5, 0.5]`", "should return 3", "got 2
//! instead of 3"), put on the code's last expression; a crash needs no
//! assertion, since the code raises. It is the baseline every agent must
//! beat, and it can run on every incoming report.

/// The candidate for `iteration`: the first attempt is the report's first
/// runnable code with the expected value asserted; later ones take the
/// next blocks, and the last again once they run out (so the refine loop
/// sees the repeat and stops as stuck).
pub fn snippet(body: &str, iteration: u32) -> Option<String> {
    let mut blocks = code_blocks(body);
    if blocks.is_empty() {
        blocks.extend(unfenced_code(body));
    }
    let i = (iteration.max(1) as usize).min(blocks.len());
    let code = blocks.into_iter().nth(i.checked_sub(1)?)?;
    Some(match expected_value(body) {
        Some(expected) => with_assertion(&code, &expected).unwrap_or(code),
        None => code,
    })
}

/// Fenced code blocks that look like code, in order.
pub fn code_blocks(body: &str) -> Vec<String> {
    fenced(body).into_iter().filter_map(|(lang, lines)| as_code(&lang, &lines)).collect()
}

/// Fenced blocks: their info string (lower-case) and lines.
fn fenced(body: &str) -> Vec<(String, Vec<&str>)> {
    let mut out = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            match current.take() {
                None => current = Some((info.trim().to_lowercase(), Vec::new())),
                Some(block) => out.push(block),
            }
            continue;
        }
        if let Some((_, lines)) = current.as_mut() {
            lines.push(line);
        }
    }
    out
}

fn as_code(lang: &str, lines: &[&str]) -> Option<String> {
    if !matches!(lang, "" | "python" | "py" | "python3" | "pycon") {
        return None;
    }
    let text = lines.join("\n");
    if text.contains("Traceback (most recent call last)") {
        return None;
    }
    let prompts: Vec<&str> =
        lines.iter().filter_map(|l| l.strip_prefix(">>> ").or_else(|| l.strip_prefix("... "))).collect();
    let code = if !prompts.is_empty() { prompts.join("\n") } else { text };
    looks_like_code(&code).then(|| format!("{}\n", code.trim_end()))
}

fn looks_like_code(code: &str) -> bool {
    code.lines().any(|l| {
        let l = l.trim();
        l.starts_with("import ") || l.starts_with("from ") || l.contains('(') || l.contains(" = ")
    })
}

/// Code written without fences: a run of lines from an `import` (or `>>>`)
/// on, as long as they stay code-like (indented, or holding code punctuation).
fn unfenced_code(body: &str) -> Option<String> {
    let mut lines: Vec<&str> = Vec::new();
    for line in body.lines() {
        let t = line.trim_end();
        let prompt = t.strip_prefix(">>> ").or_else(|| t.strip_prefix("... "));
        let starts = t.starts_with("import ") || t.starts_with("from ") || prompt.is_some();
        let codeish = t.starts_with(' ')
            || t.contains(" = ")
            || (t.contains('(') && t.ends_with(')') && !t.contains(". "))
            || t.starts_with("print(");
        if lines.is_empty() {
            if starts {
                lines.push(prompt.unwrap_or(t));
            }
        } else if let Some(p) = prompt {
            lines.push(p);
        } else if starts || codeish {
            lines.push(t);
        } else if !t.is_empty() {
            break;
        }
    }
    let code = lines.join("\n");
    looks_like_code(&code).then(|| format!("{}\n", code.trim_end()))
}

/// The value the reporter expected, as written: from "Expected: `x`",
/// "expected output: x", "should return x", "should be x", "got y instead
/// of x", or an `Expected` line followed by a fenced block of output.
pub fn expected_value(body: &str) -> Option<String> {
    let lines: Vec<&str> = body.lines().collect();
    let mut in_fence = false;
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim();
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(at) = lower.find(" instead of ")
            && (lower.contains("got ") || lower.contains("returns ") || lower.contains("gives "))
        {
            return value_text(&line[at + " instead of ".len()..]);
        }
        for key in [
            "expected output:",
            "expected result:",
            "expected:",
            "should return ",
            "should be ",
            "should give ",
            "expected ",
        ] {
            let Some(at) = lower.find(key) else { continue };
            let rest = line[at + key.len()..].trim();
            if rest.is_empty() {
                // The value is the next fenced block of output.
                let next = lines[i + 1..].iter().position(|l| !l.trim().is_empty()).map(|k| i + 1 + k);
                if let Some(n) = next.filter(|n| lines[*n].trim_start().starts_with("```")) {
                    let block: Vec<&str> =
                        lines[n + 1..].iter().take_while(|l| !l.trim_start().starts_with("```")).copied().collect();
                    let text = block.join("\n").trim().to_owned();
                    if !text.is_empty() && text.len() < 400 {
                        return Some(text);
                    }
                }
                continue;
            }
            if let Some(v) = value_text(rest) {
                return Some(v);
            }
        }
    }
    None
}

/// The value in a phrase: what is in backticks, else the phrase up to its end.
fn value_text(rest: &str) -> Option<String> {
    let rest = rest.trim();
    let v = match rest.strip_prefix('`') {
        Some(r) => r.split('`').next()?.trim().to_owned(),
        None => {
            let v = rest.trim_end_matches(['.', ',', ';']).trim();
            // Prose is not a value: "an error", "the same as before".
            let words = v.split_whitespace().count();
            if words > 4 || v.starts_with(|c: char| c.is_ascii_alphabetic()) && !is_literal_word(v) {
                return None;
            }
            v.to_owned()
        }
    };
    (!v.is_empty() && v.len() < 400).then_some(v)
}

fn is_literal_word(v: &str) -> bool {
    matches!(v, "True" | "False" | "None" | "nan" | "NaN" | "inf")
        || ["float", "int", "uint", "bool", "complex", "object", "datetime64", "str"].iter().any(|p| v.starts_with(p))
}

/// The code with its last expression's value checked against `expected`;
/// `None` when the code ends in no expression to check.
fn with_assertion(code: &str, expected: &str) -> Option<String> {
    let mut lines: Vec<&str> = code.trim_end().lines().collect();
    let last = lines.pop()?.trim_end();
    if last.starts_with(' ') || last.starts_with('\t') {
        return None;
    }
    let expr = match last.strip_prefix("print(").and_then(|r| r.strip_suffix(')')) {
        Some(inner) => inner.to_owned(),
        None => {
            let t = last.trim();
            let statement =
                ["import ", "from ", "def ", "class ", "assert ", "raise ", "return ", "for ", "if ", "with ", "#"]
                    .iter()
                    .any(|k| t.starts_with(k))
                    || assigns(t);
            if statement || t.is_empty() {
                return None;
            }
            t.to_owned()
        }
    };
    let mut out = lines.join("\n");
    out.push_str(&format!(
        "\n__value = ({expr})\n__expected = {:?}\n{CHECK}\nassert __same(__value, __expected), \"got %r, expected %s\" % (__value, __expected)\n",
        expected
    ));
    Some(out.trim_start_matches('\n').to_owned())
}

/// `a = 1`, `a += 1`, but not `a == 1`, `f(x=1)`.
fn assigns(t: &str) -> bool {
    let Some(at) = t.find('=') else { return false };
    let before = &t[..at];
    let after = &t[at + 1..];
    !after.starts_with('=')
        && !before.ends_with(['=', '!', '<', '>'])
        && !before.contains('(')
        && !before.contains('[') | before.trim_end().ends_with(']')
}

/// How a value is compared with the expected text: as a Python literal
/// (numerically, NaN equal to NaN, for arrays and numbers), else as the
/// text the value prints as (`float64`, a frame's repr), spaces aside.
const CHECK: &str = r#"def __same(value, text):
    import ast
    norm = lambda s: " ".join(str(s).split())
    try:
        expected = ast.literal_eval(text)
    except Exception:
        expected = None
    else:
        try:
            import numpy as np
            a, b = np.asarray(value), np.asarray(expected)
            if a.shape == b.shape and a.dtype.kind in "biufc" and b.dtype.kind in "biufc":
                return bool(np.allclose(a, b, equal_nan=True))
        except Exception:
            pass
        try:
            if value == expected:
                return True
        except Exception:
            pass
    return norm(value) == norm(text) or norm(repr(value)) == norm(text)"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_takes_code_blocks_in_order_and_skips_tracebacks() {
        let body = "text\n```python\nimport a\na.f()\n```\n```\nTraceback (most recent call last):\nValueError: x\n```\n```pycon\n>>> import b\n>>> b.g(1)\ninf\n```\n```\n[nan, nan]\n```\n";
        assert_eq!(snippet(body, 1).as_deref(), Some("import a\na.f()\n"));
        assert_eq!(
            snippet(body, 2).as_deref(),
            Some("import b\nb.g(1)\n"),
            "interactive sessions keep their input lines"
        );
        assert_eq!(
            snippet(body, 3).as_deref(),
            Some("import b\nb.g(1)\n"),
            "plain output is not code; the last block repeats"
        );
        assert_eq!(snippet("no code here", 1), None);
    }

    #[test]
    fn expected_values_as_reporters_write_them() {
        assert_eq!(expected_value("Expected: `[0.5, 0.5]`").as_deref(), Some("[0.5, 0.5]"));
        assert_eq!(expected_value("It should return 3.").as_deref(), Some("3"));
        assert_eq!(expected_value("but got 2 instead of `3`").as_deref(), Some("3"));
        assert_eq!(expected_value("The dtype should be float64").as_deref(), Some("float64"));
        assert_eq!(expected_value("Expected output:\n\n```\n   a\n0  1\n```\n").as_deref(), Some("a\n0  1"));
        assert_eq!(expected_value("It should be the same as before, I think"), None);
        assert_eq!(expected_value("```\nexpected: 3\n```"), None, "inside code is not the reporter's claim");
    }

    #[test]
    fn the_expected_value_is_asserted_on_the_last_expression() {
        let body = "pandas version: 2.0.0\n```python\nimport numpy as np\nx = np.array([1.0, 1.0])\nprint(x / x.sum())\n```\nExpected: `[0.5, 0.5]`\n";
        let c = snippet(body, 1).unwrap();
        assert!(c.starts_with("import numpy as np\nx = np.array([1.0, 1.0])\n__value = (x / x.sum())\n"), "{c}");
        assert!(c.contains("__expected = \"[0.5, 0.5]\"") && c.contains("assert __same(__value, __expected)"), "{c}");
        // A last line that is an assignment has nothing to check: the code alone.
        let plain = "```python\nimport a\ny = a.f()\n```\nExpected: `3`\n";
        assert_eq!(snippet(plain, 1).as_deref(), Some("import a\ny = a.f()\n"));
        assert!(!assigns("a == 1") && assigns("a = 1") && assigns("a[0] = 1") && !assigns("f(x=1)"));
    }

    #[test]
    fn unfenced_code_is_taken_when_there_are_no_fences() {
        let body = "Running this:\n\nimport numpy as np\nnp.linspace(0, 1, 3).sum()\n\nfails since 1.25. Thanks!\n";
        assert_eq!(snippet(body, 1).as_deref(), Some("import numpy as np\nnp.linspace(0, 1, 3).sum()\n"));
        let session = ">>> import math\n>>> math.sqrt(4)\n2.0\n";
        assert_eq!(snippet(session, 1).as_deref(), Some("import math\nmath.sqrt(4)\n"));
    }
}
