use super::*;

fn input<'a>(title: &'a str, body: &'a str, labels: &'a [String]) -> RoutingInput<'a> {
    RoutingInput {
        title,
        body,
        labels,
        paths: &[],
        environment: None,
        oracle: None,
        upstream_kind: None,
        boilerplate: None,
    }
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
    assert_eq!(o.signature.as_deref(), Some("RuntimeError: value cannot be converted to type float without overflow"));
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
        d.explanation[0].evidence.contains("\"cannot open shared object file\" in code of description (+2)"),
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
    // A keyword in the body (1) and a hint at half weight on another line (0.5) sum to 1.5.
    let d = decide(&cfg, &input("matmul wrong", "only with the new driver\nand only on the gpu", &[]));
    assert!(d.route_check, "{:?}", d.explanation);
    assert!(d.confidence < cfg.min_confidence);
    let r = d.explanation.iter().find(|r| r.rule == "route_check").unwrap();
    assert!(r.fired && r.evidence.contains("a human should look"), "{r:?}");
    // Hints alone weigh at most half the threshold: they never fire the rule.
    let d = decide(&cfg, &input("inconsistent result on CPU and GPU", "only on linux x86 with cuda", &[]));
    assert!(d.explanation[0].evidence.starts_with("weight 1 < 2"), "{}", d.explanation[0].evidence);
    assert!(d.explanation[0].evidence.contains("hints count at most +1 together"));
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
    let mut i = input("loss diverges", "After a few steps the loss diverges with transformers 4.40.1 on my data.", &[]);
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

/// TensorFlow's bug form filled for a build from source that fails to link.
const TF_FORM_BUILD: &str = "### Issue type\n\nBuild/Install\n\n### Have you reproduced the bug with TensorFlow Nightly?\n\nYes\n\n### Source\n\nsource\n\n### TensorFlow version\n\n2.15.0\n\n### Custom code\n\nNo\n\n### OS platform and distribution\n\nUbuntu 22.04\n\n### Python version\n\n3.11\n\n### Bazel version\n\n6.1.0\n\n### GCC/compiler version\n\nclang 17\n\n### CUDA/cuDNN version\n\n12.2 / 8.9\n\n### GPU model and memory\n\n_No response_\n\n### Current behavior?\n\nBuilding the pip package from source fails at the link step of `_pywrap_tensorflow_internal.so`.\n\n### Standalone code to reproduce the issue\n\n```shell\nbazel build --config=cuda //tensorflow/tools/pip_package:build_pip_package\n```\n\n### Relevant log output\n\n```shell\nERROR: /tensorflow/python/BUILD:1234:1: Linking tensorflow/python/_pywrap_tensorflow_internal.so failed\nld.lld: error: undefined reference to absl::lts_20230802::log_internal::LogMessage\nclang: error: linker command failed with exit code 1\n```\n";

#[test]
fn a_filled_framework_template_with_a_numerical_bug_goes_to_an_agent() {
    let cfg = RoutingConfig::default();
    let body = sections::tests::TF_FORM_NUMERICAL;
    let d = decide(&cfg, &input("tf.math.reduce_logsumexp returns inf for large inputs", body, &[]));
    assert!(matches!(d.route, Route::AgentFirst | Route::Hypothesis), "{:?}", d.explanation);
    let harness = &d.explanation[0].evidence;
    assert!(harness.starts_with("weight 0 < 2"), "{harness}");
    // It says what it did not read, by section.
    assert!(harness.contains("not evidence: 12 environment and form sections (\"Issue type\""), "{harness}");
    assert_eq!(d.category, Category::PatchLogic);
    assert!(d.features.has_code_block && d.features.has_expected_actual && d.features.has_versions);
    assert!(d.environment.contains("Bazel version: 6.1.0"), "{}", d.environment);
    assert!(!d.environment.contains("_No response_"));
    // The same with PyTorch's template and its collect_env dump.
    let d = decide(&cfg, &input("cumsum of float16 is wrong on CPU", sections::tests::TORCH_COLLECT_ENV, &[]));
    assert_eq!(d.route, Route::AgentFirst, "{:?}", d.explanation);
    let harness = &d.explanation[0].evidence;
    assert!(
        harness.starts_with(
            "weight 1 < 2: hint \"cpu\" in title (+1) (not evidence: 1 environment or form section (\"Versions\"))"
        ),
        "{harness}"
    );
}

#[test]
fn a_real_build_failure_on_the_same_template_goes_to_a_human_naming_its_sections() {
    let cfg = RoutingConfig::default();
    let d = decide(&cfg, &input("Build from source fails to link _pywrap_tensorflow_internal.so", TF_FORM_BUILD, &[]));
    assert_eq!(d.route, Route::HumanFirst, "{:?}", d.explanation);
    let harness = &d.explanation[0].evidence;
    assert!(harness.contains("keyword \"build\" in title (+2)"), "{harness}");
    assert!(harness.contains("in \"Current behavior?\""), "{harness}");
    assert!(harness.contains("\"undefined reference\" in code of \"Relevant log output\" (+2)"), "{harness}");
    // Its environment answers are not what made it harness.
    for env in ["bazel\" in", "ubuntu", "\"cuda\"", "clang\" in \"GCC"] {
        assert!(!harness.contains(env), "{env}: {harness}");
    }
}

#[test]
fn code_markers_start_a_word() {
    let cfg = RoutingConfig::default();
    let log = "```\nInvalidArgumentError: field: shape must be rank 4\n```\n";
    let d = decide(&cfg, &input("shape check fails", log, &[]));
    assert!(!d.explanation[0].evidence.contains("ld:"), "{}", d.explanation[0].evidence);
    let link = "```\n/usr/bin/ld: cannot find -lcudart\n```\n";
    let d = decide(&cfg, &input("link fails", link, &[]));
    assert!(d.explanation[0].evidence.contains("\"ld:\" in code of description (+2)"), "{}", d.explanation[0].evidence);
}
