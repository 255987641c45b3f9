//! Reading a report's structure: what the reporter says about the problem
//! apart from what they were asked to fill in.
//!
//! A report body is split at its headings (`### Heading` of an issue form or
//! a Markdown template, a line in bold such as `**Describe the bug**`). Each
//! section is the problem (description, steps, code, log output), an
//! environment section (`## Environment`, `System information`, `### Bazel
//! version` and the other version and platform fields), or a form question
//! that is not about the problem at all (`### Issue type`, checklists).
//! Environment dumps (`collect_env`, `tf_env_collect`,
//! `jax.print_environment_info()`, `pip freeze`, `nvidia-smi`,
//! `show_versions()` and their look-alikes) are environment wherever they
//! stand, and so are runs of `OS: …`, `Python version: …` lines.
//!
//! Headings are never evidence, and neither is the environment: evidence
//! comes from the title, the problem's prose, its code and tracebacks, and
//! the labels. Lines a project's reports all share (its template, learned as
//! [`Boilerplate`]) are left out too.

use std::collections::HashSet;

use super::text;

/// What a section is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// What the reporter says about the problem: evidence.
    Problem,
    /// Versions, platform, hardware, an environment dump: not evidence.
    Environment,
    /// A form question that is not about the problem (issue type,
    /// checklists, "have you searched"): not evidence.
    Form,
}

/// One section of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The heading as written, without its markup; `None` for the text
    /// before the first heading.
    pub heading: Option<String>,
    pub kind: Kind,
    /// The reporter's prose (not code, not tracebacks, not environment lines).
    pub prose: String,
    /// Code blocks and tracebacks that are not environment dumps.
    pub code: String,
    /// Fenced code blocks in `code`, and indented code lines.
    pub blocks: u32,
    pub indented: u32,
}

impl Section {
    fn new(heading: Option<String>, kind: Kind) -> Self {
        Self { heading, kind, prose: String::new(), code: String::new(), blocks: 0, indented: 0 }
    }

    /// Whether the reporter stated what they expected or got under a
    /// heading that says so (`Expected behavior`, `Actual results`).
    pub fn states_expected_actual(&self) -> bool {
        self.heading.as_deref().is_some_and(|h| {
            let h = h.to_lowercase();
            h.contains("expected") || h.contains("actual") || h.contains("current behavio")
        }) && !(self.prose.trim().is_empty() && self.code.trim().is_empty())
    }

    /// How the explanation names it: `"Current behavior"`, or `description`.
    pub fn name(&self) -> String {
        match &self.heading {
            Some(h) => format!("\"{h}\""),
            None => "description".to_owned(),
        }
    }
}

/// A report body read for routing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// The problem's sections, in order (environment and form sections are
    /// not kept here).
    pub sections: Vec<Section>,
    /// The environment: environment sections, dumps and environment lines,
    /// as they were written.
    pub environment: String,
    /// The headings of environment and form sections, for the explanation.
    pub set_aside: Vec<String>,
    /// How many lines were left out as the project's boilerplate.
    pub boilerplate_lines: usize,
}

impl Reading {
    /// All the problem's prose, one section after another.
    pub fn prose(&self) -> String {
        self.sections.iter().map(|s| s.prose.as_str()).collect()
    }

    /// All the problem's code and tracebacks.
    pub fn code(&self) -> String {
        self.sections.iter().map(|s| s.code.as_str()).collect()
    }
}

/// Lines and headings that recur across a project's reports, normalised
/// by [`normalize_line`]: its template, signatures and checklists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Boilerplate {
    lines: HashSet<String>,
}

impl Boilerplate {
    pub fn new(lines: impl IntoIterator<Item = String>) -> Self {
        Self { lines: lines.into_iter().map(|l| normalize_line(&l)).filter(|l| !l.is_empty()).collect() }
    }

    /// The boilerplate of lines [`learn`] found.
    pub fn from_learned(lines: &[LearnedLine]) -> Self {
        Self::new(lines.iter().map(|l| l.line.clone()))
    }

    pub fn contains(&self, line: &str) -> bool {
        !self.lines.is_empty() && self.lines.contains(&normalize_line(line))
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }
}

/// One learned line of boilerplate: as first written, and in how many of
/// the reports it was learned from it occurs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LearnedLine {
    pub line: String,
    pub reports: u32,
}

/// Learns a project's boilerplate from its reports' bodies: every line
/// outside code blocks (headings included) that at least `share` of them
/// carry, once there are `min_reports`; most frequent first, at most 300.
pub fn learn(bodies: &[&str], min_reports: usize, share: f64) -> Vec<LearnedLine> {
    use std::collections::HashMap;
    if bodies.len() < min_reports.max(1) {
        return Vec::new();
    }
    let mut counts: HashMap<String, (String, u32)> = HashMap::new();
    for body in bodies {
        let mut seen = HashSet::new();
        let mut fenced = false;
        for line in body.lines() {
            let t = line.trim_start();
            if t.starts_with("```") || t.starts_with("~~~") {
                fenced = !fenced;
                continue;
            }
            let key = normalize_line(line);
            if fenced || key.is_empty() || !seen.insert(key.clone()) {
                continue;
            }
            counts.entry(key).or_insert_with(|| (line.trim().chars().take(200).collect(), 0)).1 += 1;
        }
    }
    let need = ((bodies.len() as f64 * share).ceil() as u32).max(3);
    let mut out: Vec<LearnedLine> =
        counts.into_values().filter(|(_, n)| *n >= need).map(|(line, reports)| LearnedLine { line, reports }).collect();
    out.sort_by(|a, b| b.reports.cmp(&a.reports).then_with(|| a.line.cmp(&b.line)));
    out.truncate(300);
    out
}

/// A line as boilerplate is compared: lower case, markup and list marks
/// dropped, whitespace collapsed. Lines under 12 characters (`Yes`, `N/A`,
/// a version) are never boilerplate: they are answers, not the template.
pub fn normalize_line(line: &str) -> String {
    let t = line.trim().trim_start_matches(['#', '>', '-', '*', '+', ' ']).trim();
    let t = t.trim_start_matches("[x]").trim_start_matches("[X]").trim_start_matches("[ ]").trim();
    let t: String = t.chars().filter(|c| !matches!(c, '*' | '_' | '`')).collect();
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    if t.chars().count() < 12 { String::new() } else { t }
}

/// A heading line's text (`### Current behavior?`, `**Describe the bug**`,
/// `**System information**:`), or `None` for any other line.
pub fn heading(line: &str) -> Option<String> {
    let t = line.trim();
    let text = if let Some(h) = t.strip_prefix('#') {
        let h = h.trim_start_matches('#');
        // `#123` is an issue reference, not a heading.
        if !h.starts_with(' ') {
            return None;
        }
        h.trim().to_owned()
    } else {
        let inner = t.trim_end_matches(':').trim_end();
        let inner = inner
            .strip_prefix("**")
            .and_then(|s| s.strip_suffix("**"))
            .or_else(|| inner.strip_prefix("__").and_then(|s| s.strip_suffix("__")))?;
        if inner.contains("**") || inner.is_empty() {
            return None;
        }
        inner.to_owned()
    };
    let text = text.trim_end_matches(':').trim().to_owned();
    (!text.is_empty() && text.chars().count() <= 80).then_some(text)
}

/// Headings that are environment fields whatever else they say.
const ENV_HEADING_STRONG: &[&str] = &[
    "environment",
    "system info",
    "platform",
    "operating system",
    "hardware",
    "installed",
    "dependencies",
    "collect_env",
    "pip freeze",
    "pip list",
    "conda list",
    "setup info",
];

/// Words that make a heading an environment field unless it is about the
/// problem ("Code to reproduce" is not an environment field).
const ENV_HEADING: &[&str] = &[
    "version",
    "versions",
    "os",
    "gpu",
    "cuda",
    "cudnn",
    "compiler",
    "bazel",
    "gcc",
    "python",
    "installation",
    "install method",
    "source",
    "custom code",
    "mobile device",
    "device",
    "conda",
    "env",
    "setup",
    "system",
    "machine",
    "driver",
    "backend",
    "accelerator",
    "configuration",
    "libraries",
    "packages",
];

/// Headings of form questions that are not about the problem.
const FORM_HEADING: &[&str] = &[
    "issue type",
    "type of issue",
    "have you reproduced",
    "checklist",
    "before submitting",
    "prerequisite",
    "code of conduct",
    "existing issue",
    "search before",
    "searched",
    "willing",
    "who can help",
    "contribut",
    "would you like",
    "i have",
    "please confirm",
    "bug type",
    "priority",
    "severity",
    "custom code",
];

/// What a heading's section is for.
pub fn heading_kind(heading: &str) -> Kind {
    let h = heading.to_lowercase();
    let h = h.trim_end_matches(['?', '.', ' ']);
    // The problem's own headings: "Steps to reproduce", "Code to reproduce
    // the issue", "Expected behavior", "Relevant log output".
    const PROBLEM: &[&str] = &[
        "describe",
        "description",
        "behavior",
        "behaviour",
        "reproduc",
        "expected",
        "actual",
        "log",
        "traceback",
        "error",
        "what happened",
        "problem",
        "bug",
        "issue",
        "summary",
        "context",
        "details",
        "example",
        "snippet",
        "code",
        "output",
        "steps",
        "motivation",
        "current",
        "result",
    ];
    let env_word = |w: &&str| text::find_word(h, w);
    if FORM_HEADING.iter().any(|w| h.contains(w)) || h == "information" || h == "tasks" {
        Kind::Form
    } else if ENV_HEADING_STRONG.iter().any(|w| h.contains(w)) || h.ends_with("version") || h.ends_with("versions") {
        Kind::Environment
    } else if PROBLEM.iter().any(|w| h.contains(w)) {
        Kind::Problem
    } else if ENV_HEADING.iter().any(env_word) {
        Kind::Environment
    } else {
        Kind::Problem
    }
}

/// Phrases only environment dumps print: a block that carries one is a
/// dump (unless it holds a traceback).
const DUMP_HEADERS: &[&str] = &[
    "collecting environment information",
    "pytorch version:",
    "is debug build:",
    "cuda used to build pytorch:",
    "versions of relevant libraries",
    "installed versions",
    "== tensorflow import",
    "== check python",
    "tf_env_collect",
    "python dependencies:",
    "`transformers` version",
    "`datasets` version",
    "huggingface_hub version",
    "system:\n    python:",
    "| nvidia-smi ",
];

/// Phrases of environment listings that also occur in code and logs: a
/// line that carries one is an environment line, and a block is a dump only
/// when most of its lines are.
const DUMP_MARKERS: &[&str] = &[
    "collect_env",
    "nvidia-smi",
    "driver version:",
    "jaxlib:",
    "jax.devices",
    "process_count:",
    "platform.platform()",
    "sys.version",
    "[pip3]",
    "[conda]",
    "show_versions",
    "print_environment_info",
    "numpy.show_config",
    "np.show_config",
    "build_info",
];

/// Keys of `key: value` lines that describe an environment.
const ENV_KEYS: &[&str] = &[
    "os",
    "platform",
    "python",
    "cuda",
    "cudnn",
    "gpu",
    "gpus",
    "driver",
    "compiler",
    "gcc",
    "clang",
    "bazel",
    "cmake",
    "device",
    "hardware",
    "cpu",
    "ram",
    "memory",
    "architecture",
    "arch",
    "kernel",
    "distribution",
    "source",
    "installed",
    "install",
    "conda",
    "pip",
    "virtualenv",
    "environment",
    "nvidia",
    "rocm",
    "xla",
    "tpu",
    "machine",
    "system",
    "backend",
    "libc",
    "mkl",
    "blas",
    "lapack",
    "openmp",
    "processor",
    "commit",
    "byteorder",
    "locale",
    "lang",
    "lc_all",
    "executable",
    "mobile device",
    "custom code",
    "accelerator",
];

/// Whether a line reads as one line of an environment listing:
/// `name==1.2`, `- OS: Ubuntu 22.04`, `Python version: 3.11`, `numpy  1.26.4`.
pub fn env_line(line: &str) -> bool {
    let t = line.trim().trim_start_matches(['-', '*', '+', '|', '•']).trim();
    let lower = t.to_lowercase();
    if lower.is_empty() {
        return false;
    }
    if DUMP_HEADERS.iter().chain(DUMP_MARKERS).any(|m| lower.contains(m)) {
        return true;
    }
    let key = lower.split_once(':').map(|(k, _)| k.trim().trim_matches(['*', '`', '_']).trim());
    let key_words: Vec<&str> =
        key.unwrap_or("").split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
    // `Expected: 1.5` and `Got: 2.5` state the problem, whatever their values.
    if key_words.iter().any(|w| STATES_RESULT.contains(w)) {
        return false;
    }
    // A package and its version, as the releases work reads them: `pip
    // freeze`, conda and pip lists, `name version: 1.2.3`, `| name | 1.2 |`.
    if !crate::envinfo::line_versions(t).is_empty() {
        return true;
    }
    let Some((_, value)) = lower.split_once(':') else { return false };
    let value = value.trim();
    if key_words.is_empty() || key_words.len() > 6 || value.is_empty() || value.starts_with("//") {
        return false;
    }
    // `OS: Ubuntu 22.04`, `GPU: A100`: a known key.
    key_words.last().is_some_and(|w| *w == "version" || *w == "versions")
        || key_words.iter().any(|w| ENV_KEYS.contains(w))
}

/// Keys that state a result, never an environment.
const STATES_RESULT: &[&str] =
    &["expected", "actual", "got", "result", "results", "output", "returns", "return", "should", "instead", "error"];

/// Whether a line is how the reporter set up (`pip install tensorflow==2.15`,
/// `$ conda install …`, `docker run …`): environment, not the problem.
pub fn setup_command(line: &str) -> bool {
    let t = line.trim().trim_start_matches(['-', '*', '>', '$', '`', ' ']).trim_start_matches("!").to_lowercase();
    const COMMANDS: &[&str] = &[
        "pip install",
        "pip3 install",
        "python -m pip install",
        "python3 -m pip install",
        "conda install",
        "conda create",
        "mamba install",
        "uv pip install",
        "apt install",
        "apt-get install",
        "sudo apt",
        "brew install",
        "docker run",
        "docker pull",
        "nvidia-docker run",
    ];
    COMMANDS.iter().any(|c| t.starts_with(c))
}

/// Whether a pasted block is an environment dump: it carries a phrase only
/// dumps print, or most of its lines are environment lines.
pub fn is_env_dump(block: &str) -> bool {
    let lower = block.to_lowercase();
    if lower.contains("traceback (most recent call last)") || super::exception_line(block).is_some() {
        return false;
    }
    if DUMP_HEADERS.iter().any(|m| lower.contains(m)) {
        return true;
    }
    let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.len() >= 2 && lines.iter().filter(|l| env_line(l)).count() * 10 >= lines.len() * 7
}

/// Reads a body: its sections, the environment set apart, and the
/// project's boilerplate left out.
pub fn read(body: &str, boilerplate: &Boilerplate) -> Reading {
    let mut out = Reading::default();
    let mut current = Section::new(None, Kind::Problem);
    // Prose lines of the current section waiting to be told apart from a
    // run of environment lines.
    let mut env_run: Vec<&str> = Vec::new();
    let mut block: Option<(&str, Vec<&str>)> = None;
    let mut in_traceback = false;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if let Some((fence, lines)) = &mut block {
            if trimmed.starts_with(*fence) {
                let (_, lines) = block.take().unwrap_or_default();
                place_block(&mut out, &mut current, &lines);
            } else {
                lines.push(line);
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            flush_run(&mut out, &mut current, &mut env_run);
            block = Some((&trimmed[..3], Vec::new()));
            continue;
        }
        if trimmed.starts_with("Traceback (most recent call last)") {
            in_traceback = true;
        }
        let indented = line.starts_with("    ") || line.starts_with('\t');
        if in_traceback || indented {
            flush_run(&mut out, &mut current, &mut env_run);
            if current.kind == Kind::Environment && !in_traceback {
                push_line(&mut current.prose, line);
            } else {
                current.indented += u32::from(indented && !in_traceback);
                push_line(&mut current.code, line);
            }
            let continues = line.starts_with(char::is_whitespace) || trimmed.starts_with("Traceback");
            if in_traceback && !continues && !trimmed.is_empty() {
                in_traceback = false;
            }
            continue;
        }
        if let Some(h) = heading(line) {
            flush_run(&mut out, &mut current, &mut env_run);
            let kind = heading_kind(&h);
            let next = Section::new(Some(h), kind);
            finish(&mut out, std::mem::replace(&mut current, next));
            continue;
        }
        if boilerplate.contains(line) {
            out.boilerplate_lines += 1;
            continue;
        }
        match current.kind {
            Kind::Environment => push_line(&mut current.prose, line),
            Kind::Form => {}
            Kind::Problem if setup_command(line) => {
                flush_run(&mut out, &mut current, &mut env_run);
                push_line(&mut out.environment, line);
            }
            Kind::Problem if env_line(line) => env_run.push(line),
            Kind::Problem => {
                flush_run(&mut out, &mut current, &mut env_run);
                push_line(&mut current.prose, line);
            }
        }
    }
    if let Some((_, lines)) = block.take() {
        place_block(&mut out, &mut current, &lines);
    }
    flush_run(&mut out, &mut current, &mut env_run);
    finish(&mut out, current);
    out
}

/// A pasted block goes to the environment when it is a dump or stands in
/// an environment section, else to the section's code.
fn place_block(out: &mut Reading, current: &mut Section, lines: &[&str]) {
    let text: String = lines.iter().flat_map(|l| [*l, "\n"]).collect();
    if current.kind == Kind::Form {
        return;
    }
    if current.kind == Kind::Environment {
        current.prose.push_str(&text);
    } else if is_env_dump(&text) {
        out.environment.push_str(&text);
    } else {
        current.blocks += 1;
        current.code.push_str(&text);
    }
}

/// Two or more environment lines in a row are the environment; one alone
/// is prose (`Python: the slicing below returns a view`).
fn flush_run(out: &mut Reading, current: &mut Section, run: &mut Vec<&str>) {
    let to = if run.len() >= 2 { &mut out.environment } else { &mut current.prose };
    for l in run.drain(..) {
        push_line(to, l);
    }
}

fn finish(out: &mut Reading, mut section: Section) {
    // A traceback pasted under an environment or form heading is still the problem's.
    if section.kind != Kind::Problem && !section.code.trim().is_empty() {
        let mut kept = Section::new(section.heading.clone(), Kind::Problem);
        kept.code = std::mem::take(&mut section.code);
        out.sections.push(kept);
    }
    match section.kind {
        Kind::Problem => {
            if !(section.prose.trim().is_empty() && section.code.trim().is_empty()) {
                out.sections.push(section);
            }
        }
        Kind::Environment => {
            // `Bazel version: 6.1.0` from a form's field and its answer.
            let lines: Vec<&str> = section
                .prose
                .lines()
                .map(str::trim_end)
                .filter(|l| !l.trim().is_empty() && !NO_ANSWER.contains(&l.trim()))
                .collect();
            match (&section.heading, lines.as_slice()) {
                (Some(h), [one]) => push_line(&mut out.environment, &format!("{h}: {}", one.trim())),
                (Some(h), many) if !many.is_empty() => {
                    push_line(&mut out.environment, &format!("{h}:"));
                    many.iter().for_each(|l| push_line(&mut out.environment, l));
                }
                _ => many_lines(&mut out.environment, &lines),
            }
            out.set_aside.extend(section.heading);
        }
        Kind::Form => out.set_aside.extend(section.heading),
    }
}

/// What an issue form prints for a field left empty.
const NO_ANSWER: &[&str] = &["_No response_", "No response", "N/A", "n/a", "-"];

fn many_lines(to: &mut String, lines: &[&str]) {
    for l in lines {
        push_line(to, l);
    }
}

fn push_line(s: &mut String, line: &str) {
    s.push_str(line);
    s.push('\n');
}

#[cfg(test)]
#[path = "sections_tests.rs"]
pub(crate) mod tests;
