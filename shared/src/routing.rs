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

/// Keyword lists and thresholds of the rule. Every list is matched
/// case-insensitively; keywords match whole words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// Words in title or body that mark harness and plumbing reports.
    pub harness_keywords: Vec<String>,
    /// Labels that mark harness and plumbing reports.
    pub harness_labels: Vec<String>,
    /// Path fragments that mark harness and plumbing reports.
    pub harness_paths: Vec<String>,
    /// Title plus body shorter than this many characters is "short".
    pub short_length: u32,
    /// Phrases that state expected versus actual behaviour.
    pub expected_actual_markers: Vec<String>,
    /// Words that, followed by a version number, state versions.
    pub version_markers: Vec<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self {
            harness_keywords: strings(&[
                "distributed",
                "ddp",
                "fsdp",
                "nccl",
                "gloo",
                "torchrun",
                "torch.distributed",
                "launcher",
                "accelerate launch",
                "deepspeed",
                "multi-node",
                "multi-gpu",
                "slurm",
                "mpi",
                "horovod",
                "ci",
                "continuous integration",
                "github actions",
                "test harness",
                "flaky test",
                "conftest",
                "training loop",
                "trainer",
                "dataloader worker",
                "checkpointing",
                "elastic",
            ]),
            harness_labels: strings(&[
                "distributed",
                "oncall: distributed",
                "module: ddp",
                "module: fsdp",
                "ci",
                "module: ci",
                "infra",
                "testing",
                "module: tests",
                "build",
                "trainer",
            ]),
            harness_paths: strings(&[
                ".github/",
                "ci/",
                "scripts/",
                "tools/",
                "torch/distributed/",
                "launcher",
                "conftest.py",
                "trainer.py",
                "accelerate/",
            ]),
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
        }
    }
}

impl RoutingDecision {
    pub fn oracle_kind(&self) -> OracleKind {
        self.oracle.as_ref().map_or(OracleKind::None, |o| o.kind)
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

/// Runs the rule.
pub fn decide(cfg: &RoutingConfig, input: &RoutingInput<'_>) -> RoutingDecision {
    let f = features(cfg, input.title, input.body, input.environment);
    let mut explanation = Vec::new();

    // 1. harness and plumbing
    let harness_evidence = harness_evidence(cfg, input);
    let harness = !harness_evidence.is_empty();
    explanation.push(RuleOutcome {
        rule: "harness_or_plumbing".into(),
        fired: harness,
        evidence: if harness { harness_evidence.join("; ") } else { "no harness keyword, label or path".into() },
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

    RoutingDecision { route, category, vague, llm_only, features: f, oracle, explanation }
}

fn missing(items: &[(bool, &str)]) -> String {
    items.iter().filter(|(on, _)| *on).map(|(_, s)| *s).collect::<Vec<_>>().join(", ")
}

fn harness_evidence(cfg: &RoutingConfig, input: &RoutingInput<'_>) -> Vec<String> {
    let mut ev = Vec::new();
    let title = input.title.to_lowercase();
    let body = input.body.to_lowercase();
    for k in &cfg.harness_keywords {
        let k = k.to_lowercase();
        if contains_word(&title, &k) {
            ev.push(format!("keyword \"{k}\" in title"));
        } else if contains_word(&body, &k) {
            ev.push(format!("keyword \"{k}\" in body"));
        }
    }
    for label in input.labels {
        if cfg.harness_labels.iter().any(|h| h.eq_ignore_ascii_case(label)) {
            ev.push(format!("label \"{label}\""));
        }
    }
    for path in input.paths {
        let p = path.to_lowercase();
        if let Some(h) = cfg.harness_paths.iter().find(|h| p.contains(&h.to_lowercase())) {
            ev.push(format!("path \"{path}\" matches \"{h}\""));
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
        RoutingInput { title, body, labels, paths: &[], environment: None, oracle: None }
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
