//! The harness rule's evidence, and the small readers of report text the
//! rule shares: words, versions, exception lines.

use super::sections::Reading;
use super::{RoutingConfig, RoutingInput, text};

/// The harness rule's evidence: each signal with its weight, and their sum.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HarnessEvidence {
    pub score: f64,
    pub items: Vec<String>,
}

impl HarnessEvidence {
    fn add(&mut self, weight: f64, what: String) {
        if weight > 0.0 {
            self.score += weight;
            self.items.push(format!("{what} (+{})", trim_float(weight)));
        }
    }
}

pub(super) fn trim_float(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Weighs the harness signals of a report: labels, then words of the title,
/// words of the problem's prose, phrases in its code and tracebacks, and
/// paths. `reading` is the body as [`super::sections::read`] split it: headings,
/// environment sections and dumps, form questions and the project's
/// boilerplate are not evidence, and each piece of evidence names the
/// section it came from.
pub fn harness_evidence(cfg: &RoutingConfig, input: &RoutingInput<'_>, reading: &Reading) -> HarnessEvidence {
    let mut ev = HarnessEvidence::default();
    for label in input.labels {
        if let Some(p) = cfg.harness_labels.iter().find(|p| text::glob_match(p, label)) {
            ev.add(cfg.label_weight, format!("label \"{label}\" matches \"{p}\""));
        }
    }
    let title = input.title.to_lowercase();
    let title_words = text::Words::new(&title);
    let sections: Vec<(String, String, String)> =
        reading.sections.iter().map(|s| (s.name(), s.prose.to_lowercase(), s.code.to_lowercase())).collect();
    let lists = [(&cfg.harness_keywords, 1.0, "keyword"), (&cfg.harness_hints, 0.5, "hint")];
    let lowered: Vec<(Vec<String>, f64, &str)> =
        lists.iter().map(|(l, scale, kind)| (l.iter().map(|k| k.to_lowercase()).collect(), *scale, *kind)).collect();
    // Hints also occur in library bugs: together they weigh at most half
    // the threshold, so they tip a decision but never make one.
    let mut hints = HarnessEvidence::default();
    let mut counted = std::collections::HashSet::new();
    for (list, scale, kind) in &lowered {
        let to = if *kind == "hint" { &mut hints } else { &mut ev };
        for k in list.iter().filter(|k| title_words.find(k)) {
            counted.insert(k.as_str());
            to.add(cfg.title_weight * scale, format!("{kind} \"{k}\" in title"));
        }
    }
    // In the prose, one line is one piece of evidence: "pip install" or a
    // pasted warning that names three build words counts once, at the
    // weight of its strongest word. Only the words a section holds at all
    // are looked for line by line, so a long body costs one pass per word
    // it really contains.
    for (name, prose, _) in &sections {
        let whole = text::Words::new(prose);
        let present: Vec<(&String, f64, &str)> = lowered
            .iter()
            .flat_map(|(list, scale, kind)| {
                list.iter().filter(|k| !counted.contains(k.as_str()) && whole.find(k)).map(move |k| (k, *scale, *kind))
            })
            .collect();
        if present.is_empty() {
            continue;
        }
        for line in prose.lines().filter(|l| !l.trim().is_empty()) {
            let found = present.iter().find(|(k, ..)| !counted.contains(k.as_str()) && text::find_word(line, k));
            if let Some((k, scale, kind)) = found {
                counted.insert(k.as_str());
                let to = if *kind == "hint" { &mut hints } else { &mut ev };
                to.add(cfg.body_weight * scale, format!("{kind} \"{k}\" in {name}"));
            }
            if present.iter().all(|(k, ..)| counted.contains(k.as_str())) {
                break;
            }
        }
    }
    let cap = cfg.harness_threshold / 2.0;
    ev.items.append(&mut hints.items);
    if hints.score > cap {
        ev.score += cap;
        ev.items.push(format!("hints count at most +{} together", trim_float(cap)));
    } else {
        ev.score += hints.score;
    }
    // A marker is found where it starts a word: "ld: " is the linker's, not the end of "field: ".
    for m in &cfg.harness_code_markers {
        let m = m.to_lowercase();
        if let Some((name, ..)) = sections.iter().find(|(_, _, code)| text::find_word(code, &m)) {
            ev.add(cfg.code_weight, format!("\"{}\" in code of {name}", m.trim()));
        } else if let Some((name, ..)) = sections.iter().find(|(_, prose, _)| text::find_word(prose, &m)) {
            ev.add(cfg.body_weight, format!("\"{}\" in {name}", m.trim()));
        }
    }
    for path in input.paths {
        let p = path.to_lowercase();
        if let Some(h) = cfg.harness_paths.iter().find(|h| p.contains(&h.to_lowercase())) {
            ev.add(cfg.path_weight, format!("path \"{path}\" matches \"{h}\""));
        }
    }
    ev
}

/// What the rule did not read, for the explanation: the environment and
/// form sections by heading, dumps, and boilerplate lines.
pub fn set_aside(reading: &Reading) -> Option<String> {
    let mut parts = Vec::new();
    if !reading.set_aside.is_empty() {
        let shown: Vec<String> = reading.set_aside.iter().take(4).map(|h| format!("\"{h}\"")).collect();
        let more = reading.set_aside.len().saturating_sub(4);
        let n = reading.set_aside.len();
        parts.push(format!(
            "{n} environment {} ({}{})",
            if n == 1 { "or form section" } else { "and form sections" },
            shown.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        ));
    } else if !reading.environment.trim().is_empty() {
        parts.push("the environment lines".to_owned());
    }
    if reading.boilerplate_lines > 0 {
        parts.push(format!("{} lines of the project's boilerplate", reading.boilerplate_lines));
    }
    (!parts.is_empty()).then(|| format!("not evidence: {}", parts.join("; ")))
}

/// Whether `needle` occurs in `haystack` with no letter or digit on either side.
pub fn contains_word(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let bytes = haystack.as_bytes();
    let mut start = 0;
    while let Some(pos) = haystack[start..].find(needle) {
        let i = start + pos;
        let j = i + needle.len();
        let before_ok = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let after_ok = j >= bytes.len() || !bytes[j].is_ascii_alphanumeric();
        if before_ok && after_ok {
            return true;
        }
        start = i + needle.len().max(1);
        while !haystack.is_char_boundary(start) {
            start += 1;
        }
    }
    false
}

/// A marker word followed (within a few characters) by a dotted version number.
pub(super) fn states_version(cfg: &RoutingConfig, lower: &str) -> bool {
    cfg.version_markers.iter().any(|m| {
        let m = m.to_lowercase();
        lower.match_indices(&m).any(|(i, _)| {
            let rest = &lower[i + m.len()..];
            let window: String = rest.chars().take(12).collect();
            has_dotted_number(&window)
        })
    })
}

fn has_dotted_number(s: &str) -> bool {
    let b = s.as_bytes();
    (1..b.len().saturating_sub(1)).any(|i| b[i] == b'.' && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit())
}

/// The last `SomeError: message` line of a traceback, if any.
pub fn exception_line(body: &str) -> Option<&str> {
    body.lines().rev().map(str::trim).find(|line| {
        let Some((name, _)) = line.split_once(':') else { return false };
        let ident = name.rsplit('.').next().unwrap_or(name);
        // Java's anonymous subclasses print as `SomeException$6`.
        let ident = ident.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches('$');
        !name.contains(' ')
            && ident.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && ["Error", "Exception", "Failure", "Warning", "Interrupt", "Exit"].iter().any(|s| ident.ends_with(s))
    })
}
