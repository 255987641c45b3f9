//! The triage decision rule of docs/domain.md ("Routing"), as a pure function.
//!
//! Rules run in order; the first route that applies wins and flags
//! accumulate. Every rule is recorded with whether it fired and on what
//! evidence, so the report page can say why. Keyword lists and thresholds are
//! [`RoutingConfig`], deserialisable from a configuration file, with the
//! defaults below.

use serde::{Deserialize, Serialize};

use crate::api::reports::{Oracle, ReportFeatures, RuleOutcome};
use crate::model::{Category, OracleKind, OracleSource, Route};

pub mod classifier;
pub mod eval;
pub mod text;

pub use classifier::{Classifier, Example};

/// Keyword lists, weights and thresholds of the rule. Every list is matched
/// case-insensitively; keywords match whole words, and a trailing `*`
/// matches any ending (`compil*`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// Words that mark harness and plumbing reports, in the title (weight
    /// `title_weight`) or the prose of the body (`body_weight`).
    pub harness_keywords: Vec<String>,
    /// Words that hint at harness and plumbing but also occur in library
    /// bugs (a device, an operating system): half the weight of a keyword.
    pub harness_hints: Vec<String>,
    /// Label patterns that mark harness and plumbing reports: `*` matches any
    /// run of characters, `?` one (`module: build*`, `oncall: *`).
    pub harness_labels: Vec<String>,
    /// Phrases looked for inside code blocks and tracebacks (weight
    /// `code_weight`): compiled-extension import errors, `CUDA error`,
    /// linker and compiler output, pip resolution failures.
    pub harness_code_markers: Vec<String>,
    /// Path fragments that mark harness and plumbing reports.
    pub harness_paths: Vec<String>,
    pub label_weight: f64,
    pub title_weight: f64,
    pub body_weight: f64,
    pub code_weight: f64,
    pub path_weight: f64,
    /// The harness rule fires when its evidence weighs at least this much.
    pub harness_threshold: f64,
    /// With a trained classifier, its evidence is added to the rule's:
    /// this weight times how far its log-odds of harness move from
    /// `harness_prior`, at most `harness_threshold` either way (so a sure
    /// classifier can fire the rule alone, or hold back one weak signal).
    pub classifier_weight: f64,
    /// A project's classifier is trained once maintainers have corrected this
    /// many of its routes (from the shipped examples and the corrections).
    pub classifier_min_corrections: u32,
    /// The share of harness reports the classifier assumes before reading a
    /// report (its examples are balanced; trackers are not).
    pub harness_prior: f64,
    /// A route decided with less confidence than this is flagged for a
    /// human look (`route_check`).
    pub min_confidence: f64,
    /// Title plus body shorter than this many characters is "short".
    pub short_length: u32,
    /// Phrases that state expected versus actual behaviour.
    pub expected_actual_markers: Vec<String>,
    /// Words that, followed by a version number, state versions.
    pub version_markers: Vec<String>,
    /// Label patterns (and upstream issue types) that say a report is not a
    /// bug: a feature request, a question, documentation. Such a report
    /// leaves the backlog as `not_a_bug` until failpass reproduces it.
    pub not_a_bug_labels: Vec<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self {
            harness_keywords: strings(&[
                // distribution and launchers
                "distributed",
                "ddp",
                "fsdp",
                "nccl",
                "gloo",
                "mpi",
                "horovod",
                "torchrun",
                "launcher",
                "launch script",
                "accelerate launch",
                "deepspeed",
                "multi-node",
                "multi-gpu",
                "multi-machine",
                "multiple gpus",
                "slurm",
                "allreduce",
                "all_reduce",
                "parameter server",
                "ps-lite",
                "pslite",
                "elastic",
                // CI and test harness
                "ci",
                "continuous integration",
                "github actions",
                "jenkins",
                "circleci",
                "test harness",
                "flaky",
                "conftest",
                "nightly build*",
                "nightlies",
                "sanity pipeline",
                "cd pipeline",
                // build and install
                "build",
                "builds",
                "building",
                "build system",
                "rebuild",
                "compil*",
                "cmake*",
                "bazel",
                "ninja",
                "makefile",
                "msvc",
                "visual studio",
                "gcc",
                "clang",
                "nvcc",
                "linker",
                "linking",
                "link error",
                "toolchain",
                "setup.py",
                "pip",
                "conda",
                "wheel*",
                "install*",
                "packaging",
                "docker*",
                "dll",
                "dylib",
                "shared object",
                "shared library",
                "static library",
                "undefined symbol",
                "undefined reference",
                "cross-compil*",
                // accelerator libraries and drivers
                "hipify",
                "driver",
                "drivers",
                "compute capability",
                "cuda arch*",
                "cuda version",
                "jetson",
                "openmp",
                ".so",
                ".dll",
                ".dylib",
                "undef symbol",
                "auditwheel",
                "manylinux",
                ".yml",
                ".yaml",
                // platforms and dependencies
                "windows",
                "macos",
                "osx",
                "mac os",
                "os x",
                "os_x",
                "python 2",
                "python 3*",
                "python-2*",
                "python-3*",
                "aarch64",
                "arm64",
                "armv7",
                "android",
                "ios",
                "raspberry",
                "apple silicon",
                "glibc",
                "jdk",
                "jvm",
                "java 9",
                "protobuf",
                "dependency",
                "dependencies",
                "training loop",
                "trainer",
                "dataloader worker",
                "checkpointing",
            ]),
            harness_hints: strings(&[
                "cuda",
                "gpu",
                "gpus",
                "rocm",
                "cudnn",
                "cublas",
                "mkl",
                "mkldnn",
                "onednn",
                "openblas",
                "lapack",
                "blas",
                "tensorrt",
                "linux",
                "ubuntu",
                "centos",
                "platform",
                "numpy version",
                "import error",
                "importerror",
                "library",
                "libraries",
                "header*",
                "cpu",
                "hardware",
                "arch",
                "x86",
                "avx*",
                "sse",
                "omp",
                "thread*",
                "process",
                "multiprocessing",
                "fork",
                "subprocess",
                "config*",
                "cpp",
                "c++",
                "jni",
                "native",
                "binary",
                "binaries",
            ]),
            harness_labels: strings(&[
                "*distributed*",
                "oncall: *",
                "*ddp*",
                "*fsdp*",
                "ci",
                "ci*",
                "*: ci",
                "*: ci *",
                "*infra*",
                "*testing*",
                "module: tests",
                "*flaky*",
                "*build*",
                "*install*",
                "*packaging*",
                "*docker*",
                "*cuda*",
                "*rocm*",
                "*gpu*",
                "*windows*",
                "*macos*",
                "*platform*",
                "*dependenc*",
                "*launcher*",
                "*trainer*",
            ]),
            harness_code_markers: strings(&[
                "cuda error",
                "cudnn_status",
                "cublas_status",
                "nccl error",
                "ncclinternalerror",
                "no cuda gpus",
                "cuda driver version",
                "driver version is insufficient",
                "nvidia-smi",
                "undefined reference",
                "undefined symbol",
                "cannot open shared object file",
                "dll load failed",
                "image not found",
                "library not loaded",
                "unsatisfiedlinkerror",
                "collect2",
                "ld: ",
                "cmake error",
                "error: command",
                "fatal error:",
                "nvcc fatal",
                "compilation terminated",
                "failed building wheel",
                "subprocess-exited-with-error",
                "no matching distribution",
                "could not find a version",
                "resolutionimpossible",
                "conflicting dependencies",
                "packagesnotfounderror",
                "illegal instruction",
                "glibc",
                "_c.so",
                "torch._c",
                "libcuda",
                "libcudart",
                "libtorch",
                "libmxnet",
                "nd4j-native",
            ]),
            harness_paths: strings(&[
                ".github/",
                ".circleci/",
                ".jenkins/",
                "ci/",
                "scripts/",
                "tools/",
                "docker",
                "cmake",
                "cmakelists.txt",
                "setup.py",
                "setup.cfg",
                "pyproject.toml",
                "requirements",
                "makefile",
                ".bazel",
                "build",
                "third_party/",
                "pom.xml",
                ".gradle",
                "torch/distributed/",
                "launcher",
                "conftest.py",
                "trainer.py",
                "accelerate/",
            ]),
            label_weight: 3.0,
            title_weight: 2.0,
            body_weight: 1.0,
            code_weight: 2.0,
            path_weight: 2.0,
            harness_threshold: 2.0,
            classifier_weight: 1.0,
            classifier_min_corrections: 10,
            harness_prior: 0.2,
            min_confidence: 0.7,
            short_length: 300,
            expected_actual_markers: strings(&[
                "expected",
                "actual",
                "instead of",
                "should be",
                "should return",
                "but got",
                "returns",
            ]),
            version_markers: strings(&[
                "version",
                "torch",
                "pytorch",
                "tensorflow",
                "jax",
                "jaxlib",
                "numpy",
                "transformers",
                "python",
                "cuda",
                "keras",
                "==",
                "v",
            ]),
            not_a_bug_labels: strings(&[
                "enhancement",
                "feature",
                "feature request",
                "feature-request",
                "new feature",
                "*: feature*",
                "kind/feature",
                "*: enhancement",
                "question",
                "*: question",
                "kind/support",
                "documentation",
                "docs",
                "*: doc*",
                "kind/documentation",
                "task",
                "invalid",
            ]),
        }
    }
}

/// What the rule looks at.
#[derive(Debug, Clone, Copy)]
pub struct RoutingInput<'a> {
    pub title: &'a str,
    pub body: &'a str,
    pub labels: &'a [String],
    pub paths: &'a [String],
    pub environment: Option<&'a str>,
    /// An oracle supplied with the report (benchmark tests, an authored check).
    pub oracle: Option<&'a Oracle>,
    /// The upstream tracker's own type of the issue (`Bug`, `Feature`).
    pub upstream_kind: Option<&'a str>,
}

/// What the rule decided, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingDecision {
    pub route: Route,
    pub category: Category,
    pub vague: bool,
    pub llm_only: bool,
    pub features: ReportFeatures,
    /// The supplied oracle, or one derived from the report (a crash signature
    /// from a traceback).
    pub oracle: Option<Oracle>,
    pub explanation: Vec<RuleOutcome>,
    /// How sure the harness decision is, 0.5 to 1.
    pub confidence: f64,
    /// Confidence fell under `min_confidence`: a human should look at the route.
    pub route_check: bool,
    /// The label or upstream type that says the report is not a bug.
    pub not_a_bug: Option<String>,
}

impl<'a> RoutingInput<'a> {
    /// What the rule reads from a report as submitted.
    pub fn from_request(req: &'a crate::api::reports::CreateReportRequest) -> Self {
        Self {
            title: &req.title,
            body: &req.body,
            labels: &req.labels,
            paths: &req.paths,
            environment: req.environment.as_deref(),
            oracle: req.oracle.as_ref(),
            upstream_kind: req.upstream.as_ref().and_then(|u| u.kind.as_deref()),
        }
    }
}

impl RoutingDecision {
    pub fn oracle_kind(&self) -> OracleKind {
        self.oracle.as_ref().map_or(OracleKind::None, |o| o.kind)
    }

    /// The decision as stored for a report whose route a maintainer
    /// corrected: the corrected route, its category, no route check.
    pub fn keep_correction(&mut self, route: Route) {
        self.route = route;
        if route == Route::HumanFirst {
            self.category = Category::Harness;
        } else if self.category == Category::Harness {
            self.category = Category::Unknown;
        }
        self.route_check = false;
        mark_corrected(&mut self.explanation);
    }
}

/// Report features derived from the text.
pub fn features(cfg: &RoutingConfig, title: &str, body: &str, environment: Option<&str>) -> ReportFeatures {
    let lower = body.to_lowercase();
    let has_code_block =
        body.contains("```") || body.lines().filter(|l| l.starts_with("    ") && !l.trim().is_empty()).count() >= 2;
    let has_traceback = body.contains("Traceback (most recent call last)") || exception_line(body).is_some();
    let has_versions = environment.is_some_and(|e| !e.trim().is_empty()) || states_version(cfg, &lower);
    let has_expected_actual = cfg.expected_actual_markers.iter().any(|m| contains_word(&lower, &m.to_lowercase()));
    ReportFeatures {
        has_code_block,
        has_traceback,
        has_versions,
        has_expected_actual,
        length: (title.chars().count() + body.chars().count()) as u32,
    }
}

/// Runs the explicit rule alone.
pub fn decide(cfg: &RoutingConfig, input: &RoutingInput<'_>) -> RoutingDecision {
    decide_with(cfg, None, input)
}

/// Runs the rule, with a trained classifier beside the explicit harness
/// signals when there is one.
pub fn decide_with(cfg: &RoutingConfig, model: Option<&Classifier>, input: &RoutingInput<'_>) -> RoutingDecision {
    let f = features(cfg, input.title, input.body, input.environment);
    let mut explanation = Vec::new();

    // 1. harness and plumbing: weighed signals, and the classifier
    let ev = harness_evidence(cfg, input);
    let prediction = model.map(|m| m.predict(input.title, input.body, input.labels));
    let learned = prediction.as_ref().map_or(0.0, |p| {
        let t = cfg.harness_threshold;
        let l = cfg.classifier_weight * (logit(p.p_harness) - logit(cfg.harness_prior));
        // Against the explicit signals it speaks only when it is sure, and
        // never outweighs more than half the threshold.
        if l < 0.0 && l > -1.0 { 0.0 } else { l.clamp(-t / 2.0, t) }
    });
    let total = ev.score + learned;
    let harness = total >= cfg.harness_threshold;
    let mut weighed = format!("weight {}", trim_float(ev.score));
    if prediction.is_some() {
        weighed =
            format!("{weighed} {} classifier {}", if learned < 0.0 { "-" } else { "+" }, trim_float(learned.abs()));
    }
    explanation.push(RuleOutcome {
        rule: "harness_or_plumbing".into(),
        fired: harness,
        evidence: format!(
            "{weighed} {} {}{}",
            if harness { ">=" } else { "<" },
            trim_float(cfg.harness_threshold),
            if ev.items.is_empty() {
                ": no harness keyword, label, code marker or path".to_owned()
            } else {
                format!(": {}", ev.items.join("; "))
            }
        ),
    });
    if let Some(p) = &prediction {
        explanation.push(RuleOutcome {
            rule: "harness_classifier".into(),
            fired: learned > 0.0,
            evidence: p.explain(),
        });
    }
    // Sure when the evidence is far from the threshold either way, unsure
    // within about one keyword's weight of it.
    let margin = (total - (cfg.harness_threshold - 0.5)).abs();
    let confidence = ((1.0 / (1.0 + (-2.0 * margin).exp())) * 100.0).round() / 100.0;
    let route_check = confidence < cfg.min_confidence;
    explanation.push(RuleOutcome {
        rule: "route_check".into(),
        fired: route_check,
        evidence: format!(
            "confidence {confidence:.2} {} {:.2}{}",
            if route_check { "<" } else { ">=" },
            cfg.min_confidence,
            if route_check { ": a human should look at the route" } else { "" }
        ),
    });

    // 2. oracle: supplied, derivable, or cheap to write
    let supplied = input.oracle.filter(|o| o.kind != OracleKind::None).cloned();
    let derived = if supplied.as_ref().is_some_and(Oracle::is_deterministic) {
        None
    } else if f.has_traceback && f.has_code_block {
        exception_line(input.body).map(|sig| Oracle {
            kind: OracleKind::CrashSignature,
            source: Some(OracleSource::Derived),
            command: None,
            fail_to_pass: Vec::new(),
            pass_to_pass: Vec::new(),
            signature: Some(sig.to_owned()),
            repeats: None,
            authoring_minutes: None,
        })
    } else {
        None
    };
    let oracle = derived.or(supplied);
    let deterministic = oracle.as_ref().is_some_and(Oracle::is_deterministic);
    let cheap = f.has_code_block && (f.has_traceback || f.has_expected_actual);
    let (oracle_fired, oracle_evidence) = match &oracle {
        Some(o) if o.is_deterministic() => (
            true,
            match (o.kind, o.source) {
                (OracleKind::CrashSignature, Some(OracleSource::Derived)) => format!(
                    "crash signature derived from the traceback: {}",
                    o.signature.as_deref().unwrap_or_default()
                ),
                (kind, source) => format!(
                    "{kind} oracle from {}{}",
                    source.map_or("unknown source", |s| s.as_str()),
                    if o.fail_to_pass.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} fail-to-pass tests)", o.fail_to_pass.len())
                    }
                ),
            },
        ),
        _ if cheap => (
            true,
            format!(
                "no oracle yet, but one can be written in under an hour: code block and {}",
                if f.has_traceback { "traceback" } else { "stated expected/actual behaviour" }
            ),
        ),
        _ => (
            false,
            missing(&[
                (!f.has_code_block, "no code block"),
                (!f.has_traceback, "no traceback"),
                (!f.has_expected_actual, "no expected/actual behaviour"),
            ]),
        ),
    };
    explanation.push(RuleOutcome {
        rule: "deterministic_oracle".into(),
        fired: oracle_fired,
        evidence: oracle_evidence,
    });

    let route = if harness {
        Route::HumanFirst
    } else if deterministic || cheap {
        Route::AgentFirst
    } else {
        Route::Hypothesis
    };
    explanation.push(RuleOutcome {
        rule: "no_oracle".into(),
        fired: route == Route::Hypothesis,
        evidence: if route == Route::Hypothesis {
            "no oracle and no cheap way to build one: agent output is a hypothesis".into()
        } else {
            "an earlier rule routed the report".into()
        },
    });

    // Flags
    let short = f.length < cfg.short_length;
    let vague = !f.has_code_block && !f.has_traceback && (short || !f.has_versions);
    explanation.push(RuleOutcome {
        rule: "vague".into(),
        fired: vague,
        evidence: if vague {
            missing(&[
                (short, &format!("short ({} < {} characters)", f.length, cfg.short_length)),
                (!f.has_code_block, "no code block"),
                (!f.has_traceback, "no traceback"),
                (!f.has_versions, "no versions"),
            ])
        } else {
            let mut has = Vec::new();
            if f.has_code_block {
                has.push("code block")
            }
            if f.has_traceback {
                has.push("traceback")
            }
            if f.has_versions {
                has.push("versions")
            }
            if !short {
                has.push("long enough")
            }
            format!("has {}", has.join(", "))
        },
    });
    let llm_only = !deterministic && oracle.as_ref().is_some_and(|o| o.kind == OracleKind::LlmJudge);
    explanation.push(RuleOutcome {
        rule: "llm_only".into(),
        fired: llm_only,
        evidence: if llm_only {
            "the only grading is an LLM judge: a human must accept its verdict".into()
        } else if deterministic {
            "a deterministic oracle grades it".into()
        } else {
            "no LLM judge configured".into()
        },
    });

    let category = if harness {
        Category::Harness
    } else if deterministic || f.has_traceback || f.has_code_block || !input.paths.is_empty() {
        Category::PatchLogic
    } else {
        Category::Unknown
    };

    // Not a bug: a label or the tracker's type says so.
    let not_a_bug = input
        .labels
        .iter()
        .map(|l| ("label", l.as_str()))
        .chain(input.upstream_kind.map(|k| ("upstream type", k)))
        .find_map(|(what, v)| {
            cfg.not_a_bug_labels
                .iter()
                .find(|p| text::glob_match(p, v))
                .map(|p| format!("{what} \"{v}\" matches \"{p}\""))
        });
    explanation.push(RuleOutcome {
        rule: "not_a_bug".into(),
        fired: not_a_bug.is_some(),
        evidence: match &not_a_bug {
            Some(why) => format!("{why}: it leaves the backlog as not a bug unless it is reproduced"),
            None => "no label or upstream type says it is not a bug".into(),
        },
    });

    RoutingDecision {
        route,
        category,
        vague,
        llm_only,
        features: f,
        oracle,
        explanation,
        confidence,
        route_check,
        not_a_bug,
    }
}

/// A corrected report's explanation: the rule's, with its route check
/// answered by the correction.
pub fn mark_corrected(explanation: &mut [RuleOutcome]) {
    for r in explanation.iter_mut().filter(|r| r.rule == "route_check") {
        r.fired = false;
        r.evidence = format!("{}; a maintainer set the route", r.evidence.split(':').next().unwrap_or_default());
    }
}

fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln()
}

fn missing(items: &[(bool, &str)]) -> String {
    items.iter().filter(|(on, _)| *on).map(|(_, s)| *s).collect::<Vec<_>>().join(", ")
}

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

fn trim_float(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Weighs the harness signals of a report: labels, then words of the title,
/// words of the prose, phrases in code and tracebacks, and paths.
pub fn harness_evidence(cfg: &RoutingConfig, input: &RoutingInput<'_>) -> HarnessEvidence {
    let mut ev = HarnessEvidence::default();
    for label in input.labels {
        if let Some(p) = cfg.harness_labels.iter().find(|p| text::glob_match(p, label)) {
            ev.add(cfg.label_weight, format!("label \"{label}\" matches \"{p}\""));
        }
    }
    let title = input.title.to_lowercase();
    let body = text::split(input.body);
    let prose = body.prose.to_lowercase();
    let code = body.code.to_lowercase();
    // Every keyword is looked up in the same two texts: split them once.
    let (title_words, prose_words) = (text::Words::new(&title), text::Words::new(&prose));
    for (list, scale, kind) in [(&cfg.harness_keywords, 1.0, "keyword"), (&cfg.harness_hints, 0.5, "hint")] {
        for k in list {
            let k = k.to_lowercase();
            if title_words.find(&k) {
                ev.add(cfg.title_weight * scale, format!("{kind} \"{k}\" in title"));
            } else if prose_words.find(&k) {
                ev.add(cfg.body_weight * scale, format!("{kind} \"{k}\" in body"));
            }
        }
    }
    for m in &cfg.harness_code_markers {
        let m = m.to_lowercase();
        if code.contains(&m) {
            ev.add(cfg.code_weight, format!("\"{}\" in code", m.trim()));
        } else if prose.contains(&m) {
            ev.add(cfg.body_weight, format!("\"{}\" in body", m.trim()));
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
fn states_version(cfg: &RoutingConfig, lower: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(title: &'a str, body: &'a str, labels: &'a [String]) -> RoutingInput<'a> {
        RoutingInput { title, body, labels, paths: &[], environment: None, oracle: None, upstream_kind: None }
    }

    const TRACE: &str = "Running on torch 2.3.1\n```python\nimport torch\ntorch.logsumexp(x, 0)\n```\nTraceback (most recent call last):\n  File \"a.py\", line 2\nRuntimeError: value cannot be converted to type float without overflow\n";

    #[test]
    fn traceback_and_code_route_to_agent_with_derived_signature() {
        let cfg = RoutingConfig::default();
        let d = decide(&cfg, &input("logsumexp overflows", TRACE, &[]));
        assert_eq!(d.route, Route::AgentFirst);
        assert_eq!(d.category, Category::PatchLogic);
        assert!(!d.vague);
        let o = d.oracle.unwrap();
        assert_eq!(o.kind, OracleKind::CrashSignature);
        assert_eq!(o.source, Some(OracleSource::Derived));
        assert_eq!(
            o.signature.as_deref(),
            Some("RuntimeError: value cannot be converted to type float without overflow")
        );
        assert!(d.explanation.iter().any(|r| r.rule == "deterministic_oracle" && r.fired));
    }

    #[test]
    fn harness_wins_first_and_names_its_evidence() {
        let cfg = RoutingConfig::default();
        let labels = vec!["oncall: distributed".to_owned()];
        let d = decide(&cfg, &input("DDP hangs with torchrun on 2 nodes", TRACE, &labels));
        assert_eq!(d.route, Route::HumanFirst);
        assert_eq!(d.category, Category::Harness);
        let ev = &d.explanation[0].evidence;
        assert!(ev.contains("\"ddp\" in title"), "{ev}");
        assert!(ev.contains("label \"oncall: distributed\""), "{ev}");
    }

    #[test]
    fn namespaced_labels_fire_by_pattern() {
        let cfg = RoutingConfig::default();
        for label in ["module: build", "Module: CUDA", "oncall: jit", "ci: sev", "topic: windows"] {
            let labels = vec![label.to_owned()];
            let d = decide(&cfg, &input("something is off", "", &labels));
            assert_eq!(d.route, Route::HumanFirst, "{label}: {:?}", d.explanation[0]);
            assert!(d.explanation[0].evidence.contains(&format!("label \"{label}\" matches")), "{label}");
        }
        let labels = vec!["module: nn".to_owned(), "bug".to_owned()];
        assert_ne!(decide(&cfg, &input("something is off", "", &labels)).route, Route::HumanFirst);
    }

    #[test]
    fn one_word_in_the_prose_of_a_numeric_bug_does_not_route_it_to_a_human() {
        let cfg = RoutingConfig::default();
        // The two silent numeric bugs of the issue: the body mentions the training loop, or distributed.
        for body in [
            "In my training loop the loss of `fastnum.logsumexp` is NaN for inputs above 88 in float32.",
            "We use distributed training, but this happens on one process: `var(x, ddof=1)` is off by 1e-3.",
        ] {
            let d = decide(&cfg, &input("logsumexp returns nan for large inputs", body, &[]));
            assert_ne!(d.route, Route::HumanFirst, "{:?}", d.explanation[0]);
            assert!(d.explanation[0].evidence.contains(" < 2: "), "{}", d.explanation[0].evidence);
        }
    }

    #[test]
    fn code_and_tracebacks_are_read_for_their_own_evidence() {
        let cfg = RoutingConfig::default();
        let body = "Importing fails:\n```\nTraceback (most recent call last):\n  File \"a.py\", line 1\nImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n```\n";
        let d = decide(&cfg, &input("import fails after upgrade", body, &[]));
        assert_eq!(d.route, Route::HumanFirst, "{:?}", d.explanation[0]);
        assert!(
            d.explanation[0].evidence.contains("\"cannot open shared object file\" in code (+2)"),
            "{}",
            d.explanation[0].evidence
        );
        // A keyword inside code is not prose: `import torch.distributed` alone does not fire.
        let d = decide(
            &cfg,
            &input("sum is wrong", "```python\nimport torch.distributed\nx.sum()\n```\nreturns 3 instead of 4", &[]),
        );
        assert_ne!(d.route, Route::HumanFirst, "{:?}", d.explanation[0]);
    }

    #[test]
    fn words_are_words_and_build_words_count() {
        let cfg = RoutingConfig::default();
        assert_eq!(decide(&cfg, &input("CMake cannot find cuDNN", "", &[])).route, Route::HumanFirst);
        assert_eq!(decide(&cfg, &input("Fix compilation on Windows with MSVC", "", &[])).route, Route::HumanFirst);
        // "ci" inside "precision" or "decision" is not CI.
        assert_ne!(decide(&cfg, &input("precision decision", "", &[])).route, Route::HumanFirst);
    }

    #[test]
    fn a_classifier_adds_its_evidence_and_names_its_words() {
        let cfg = RoutingConfig::default();
        let ex = |t: &str, h: bool| Example { title: t.into(), body: String::new(), labels: vec![], harness: h };
        let mut data = Vec::new();
        for i in 0..6 {
            data.push(ex(&format!("sccache breaks the job {i}"), true));
            data.push(ex(&format!("softmax gives nan {i}"), false));
        }
        let model = Classifier::train(&data, Some(cfg.harness_prior)).unwrap();
        let d = decide_with(&cfg, Some(&model), &input("sccache breaks again", "", &[]));
        assert_eq!(d.route, Route::HumanFirst, "{:?}", d.explanation);
        let c = d.explanation.iter().find(|r| r.rule == "harness_classifier").unwrap();
        assert!(c.fired && c.evidence.contains("\"sccache\""), "{c:?}");
        assert!(d.explanation[0].evidence.contains("+ classifier"), "{}", d.explanation[0].evidence);
        // Without it, the explicit rule alone does not know the word.
        assert_ne!(decide(&cfg, &input("sccache breaks again", "", &[])).route, Route::HumanFirst);
    }

    #[test]
    fn evidence_near_the_threshold_is_flagged_for_a_human_look() {
        let cfg = RoutingConfig::default();
        // Hints at half weight: "cuda" in the title (1) and "gpu" in the body (0.5) sum to 1.5.
        let d = decide(&cfg, &input("cuda matmul wrong", "only on the gpu", &[]));
        assert!(d.route_check, "{:?}", d.explanation);
        assert!(d.confidence < cfg.min_confidence);
        let r = d.explanation.iter().find(|r| r.rule == "route_check").unwrap();
        assert!(r.fired && r.evidence.contains("a human should look"), "{r:?}");
        // Nothing at all, or a label: sure.
        assert!(!decide(&cfg, &input("sum is wrong", "", &[])).route_check);
        let labels = vec!["module: build".to_owned()];
        assert!(!decide(&cfg, &input("x", "", &labels)).route_check);
    }

    #[test]
    fn vague_report_goes_to_hypothesis_and_says_what_is_missing() {
        let cfg = RoutingConfig::default();
        let d = decide(&cfg, &input("model is slow", "It got slower after upgrading.", &[]));
        assert_eq!(d.route, Route::Hypothesis);
        assert!(d.vague);
        assert_eq!(d.category, Category::Unknown);
        let v = d.explanation.iter().find(|r| r.rule == "vague").unwrap();
        assert!(v.evidence.contains("no code block") && v.evidence.contains("no versions"), "{}", v.evidence);
    }

    #[test]
    fn supplied_in_patch_test_routes_to_agent() {
        let cfg = RoutingConfig::default();
        let o = Oracle {
            kind: OracleKind::FailToPass,
            source: Some(OracleSource::InPatchTest),
            command: None,
            fail_to_pass: vec!["tests/test_ops.py::test_sum".into()],
            pass_to_pass: vec![],
            signature: None,
            repeats: None,
            authoring_minutes: None,
        };
        let mut i = input("sum is wrong", "sum returns wrong value", &[]);
        i.oracle = Some(&o);
        let d = decide(&cfg, &i);
        assert_eq!(d.route, Route::AgentFirst);
        assert_eq!(d.oracle_kind(), OracleKind::FailToPass);
        assert!(!d.llm_only);
    }

    #[test]
    fn llm_judge_only_sets_flag() {
        let cfg = RoutingConfig::default();
        let o = Oracle {
            kind: OracleKind::LlmJudge,
            source: None,
            command: None,
            fail_to_pass: vec![],
            pass_to_pass: vec![],
            signature: None,
            repeats: None,
            authoring_minutes: None,
        };
        let mut i =
            input("loss diverges", "After a few steps the loss diverges with transformers 4.40.1 on my data.", &[]);
        i.oracle = Some(&o);
        let d = decide(&cfg, &i);
        assert!(d.llm_only);
        assert_eq!(d.route, Route::Hypothesis);
    }

    #[test]
    fn exception_lines_in_python_and_java() {
        assert_eq!(exception_line("x\nValueError: bad"), Some("ValueError: bad"));
        assert!(exception_line("junit.framework.ComparisonFailure: expected:<a> but was:<b>").is_some());
        assert!(exception_line("org.apache.commons.math.MathRuntimeException$6: map modified").is_some());
        assert_eq!(exception_line("Note: this is fine"), None);
    }

    #[test]
    fn words_match_whole_words_only() {
        assert!(contains_word("fails on ci today", "ci"));
        assert!(!contains_word("precision loss", "ci"));
        assert!(contains_word("ci", "ci"));
        assert!(!contains_word("décision", "ci"));
    }

    #[test]
    fn versions_are_detected() {
        let cfg = RoutingConfig::default();
        assert!(features(&cfg, "t", "using torch==2.1.0 on linux", None).has_versions);
        assert!(features(&cfg, "t", "no numbers here", Some("jax 0.4.30")).has_versions);
        assert!(!features(&cfg, "t", "no numbers here", None).has_versions);
    }
}
