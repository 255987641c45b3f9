//! The demo's recorded history: five projects with reports on every route,
//! attempts with every verdict, reviews and leads. Deterministic (a fixed
//! seed), dated relative to now so the weekly charts show recent weeks, and
//! written through the same `Storage` methods as the API, so every derived
//! field is real.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use failpass_shared::api::attempts::{CreateAttemptRequest, Signal, Signals};
use failpass_shared::api::import::AgentRecord;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::{CreateReportRequest, Oracle};
use failpass_shared::model::{
    FailureCause, Goal, OracleKind, OracleSource, Review, Route, RunEnvironment, RunTrigger, SignalSource, Verdict,
    VerdictSource,
};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};

use crate::db::{NewReport, NewRun, Storage};

use super::DemoSummary;

/// splitmix64: small, deterministic, good enough for demo variety.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(super) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub(super) fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(super) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

pub(super) const PROJECTS: &[(&str, &str, bool)] = &[
    ("pytorch/pytorch", "Tensors and dynamic neural networks in Python with strong GPU acceleration", true),
    ("huggingface/transformers", "State-of-the-art machine learning for PyTorch, TensorFlow and JAX", true),
    ("jax-ml/jax", "Composable transformations of Python+NumPy programs", true),
    ("keras-team/keras", "Deep learning for humans", true),
    ("acme/trainer-internal", "The team's private training harness", false),
];

/// (kind, title, op, error) — `kind` picks the body template.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// Code block and traceback: a crash signature can be derived.
    Crash,
    /// Code block and expected/actual behaviour: an oracle is cheap to write.
    Numeric,
    /// Benchmark-style: an in-patch fail-to-pass test comes with it.
    InPatch,
    /// Harness and plumbing.
    Harness,
    /// Short, no code, no versions.
    Vague,
    /// Prose only, judged by an LLM.
    Judged,
}

pub(super) const REPORTS: &[(usize, Kind, &str, &str, &str)] = &[
    (
        0,
        Kind::Crash,
        "torch.logsumexp returns NaN instead of inf for large inputs in float16",
        "torch.logsumexp",
        "RuntimeError: value cannot be converted to type at::Half without overflow",
    ),
    (0, Kind::Numeric, "nn.functional.cross_entropy with label_smoothing ignores ignore_index", "F.cross_entropy", ""),
    (
        0,
        Kind::Crash,
        "torch.compile fails on boolean mask indexing with dynamic shapes",
        "torch.compile",
        "torch._dynamo.exc.Unsupported: dynamic shape operator: aten.nonzero.default",
    ),
    (0, Kind::Harness, "DDP hangs at first all_reduce when using torchrun with 2 nodes", "torch.distributed", ""),
    (0, Kind::InPatch, "torch.sum over dim=-1 of a channels_last tensor gives wrong result", "torch.sum", ""),
    (0, Kind::Vague, "training got slower after upgrade", "", ""),
    (
        0,
        Kind::Crash,
        "index_add_ on MPS raises for int64 source",
        "index_add_",
        "RuntimeError: MPS does not support index_add with int64 source",
    ),
    (0, Kind::Numeric, "torch.cumsum on bfloat16 accumulates in bfloat16 and drifts", "torch.cumsum", ""),
    (0, Kind::Harness, "FSDP checkpointing saves empty optimizer state on rank 1", "FSDP", ""),
    (0, Kind::InPatch, "torch.nn.functional.interpolate antialias wrong for scale 0.5", "F.interpolate", ""),
    (
        1,
        Kind::Crash,
        "generate() crashes with past_key_values and beam search",
        "model.generate",
        "IndexError: index 4 is out of bounds for dimension 0 with size 4",
    ),
    (
        1,
        Kind::Numeric,
        "LlamaRotaryEmbedding gives different outputs in fp32 and bf16 beyond tolerance",
        "LlamaRotaryEmbedding",
        "",
    ),
    (1, Kind::Harness, "accelerate launch with deepspeed zero3 fails to resume from checkpoint", "Trainer", ""),
    (1, Kind::Judged, "Whisper transcription quality regressed on long audio", "WhisperForConditionalGeneration", ""),
    (1, Kind::InPatch, "Tokenizer fast and slow disagree on added tokens with lstrip", "AutoTokenizer", ""),
    (1, Kind::Vague, "model outputs garbage", "", ""),
    (
        1,
        Kind::Crash,
        "AutoModel.from_pretrained with device_map=auto fails on CPU-only machine",
        "from_pretrained",
        "ValueError: You can't pass `load_in_8bit` or any other `BitsAndBytesConfig` argument",
    ),
    (1, Kind::Numeric, "DataCollatorForLanguageModeling masks padding tokens", "DataCollatorForLanguageModeling", ""),
    (
        1,
        Kind::Judged,
        "Loss diverges when fine-tuning with gradient checkpointing",
        "gradient_checkpointing_enable",
        "",
    ),
    (
        2,
        Kind::Crash,
        "jnp.linalg.eigh returns NaN for repeated eigenvalues on GPU",
        "jnp.linalg.eigh",
        "FloatingPointError: invalid value (nan) encountered in eigh",
    ),
    (2, Kind::Numeric, "jax.nn.softmax with where= gives wrong result for all-masked rows", "jax.nn.softmax", ""),
    (2, Kind::InPatch, "lax.scan with unroll drops the last carry", "lax.scan", ""),
    (2, Kind::Harness, "multi-node jax.distributed.initialize times out on SLURM", "jax.distributed", ""),
    (
        2,
        Kind::Crash,
        "jit of a function with a static list argument raises TypeError",
        "jax.jit",
        "TypeError: unhashable type: 'list'",
    ),
    (2, Kind::Vague, "pmap slow", "", ""),
    (2, Kind::Judged, "Memory usage grows every step with donated buffers", "jax.jit", ""),
    (
        3,
        Kind::Crash,
        "keras.ops.argmax on torch backend returns int32 instead of int64",
        "keras.ops.argmax",
        "AssertionError: expected dtype int64, got int32",
    ),
    (3, Kind::Numeric, "BatchNormalization momentum is inverted on the JAX backend", "BatchNormalization", ""),
    (3, Kind::InPatch, "Model.fit with validation_split shuffles before splitting", "Model.fit", ""),
    (3, Kind::Harness, "CI flaky test for mixed precision on TPU", "mixed_precision", ""),
    (3, Kind::Vague, "saving broken", "", ""),
    (
        3,
        Kind::Crash,
        "Conv1DTranspose output_padding ignored with dilation",
        "Conv1DTranspose",
        "ValueError: Negative dimension size caused by subtracting 3 from 2",
    ),
    (4, Kind::Harness, "Training loop resumes at wrong step after preemption", "training loop", ""),
    (4, Kind::Numeric, "Gradient clipping applied before loss scaling", "clip_grad_norm_", ""),
    (
        4,
        Kind::Crash,
        "EMA weights loaded as float16 truncate to zero",
        "ema.load_state_dict",
        "RuntimeError: expected scalar type Float but found Half",
    ),
    (4, Kind::Judged, "Eval accuracy lower than offline evaluation", "evaluate", ""),
];

const AGENTS: &[(&str, &str, (i32, u32, u32))] = &[
    ("repgen", "gpt-4o-2024-08-06", (2023, 10, 1)),
    ("swe-agent", "claude-3-5-sonnet-20241022", (2024, 4, 1)),
    ("openhands", "gpt-5", (2026, 10, 15)),
];

pub(super) fn body(
    project: usize,
    kind: Kind,
    title: &str,
    op: &str,
    error: &str,
    rng: &mut Rng,
) -> (String, Vec<String>, Option<String>) {
    let versions: &[&str] = match project {
        0 => &["torch 2.4.1", "torch 2.5.0+cu121", "torch 2.6.0.dev20241020"],
        1 => &["transformers 4.44.2, torch 2.4.1", "transformers 4.46.0, torch 2.5.0"],
        2 => &["jax 0.4.31, jaxlib 0.4.31+cuda12", "jax 0.4.35"],
        3 => &["keras 3.5.0, tensorflow 2.17", "keras 3.6.0, torch 2.5.0 backend"],
        _ => &["torch 2.5.0, internal trainer 1.8"],
    };
    let env = Some(format!("{}, Python 3.11, Ubuntu 22.04, CUDA 12.1", versions[rng.below(versions.len())]));
    match kind {
        Kind::Crash => (
            format!(
                "### Describe the bug\n{title}.\n\n### Reproduction\n```python\nimport torch\nx = torch.randn(4, 8)\n\
                 out = {op}(x)\nprint(out)\n```\n\n### Traceback\n```\nTraceback (most recent call last):\n  \
                 File \"repro.py\", line 3, in <module>\n    out = {op}(x)\n{error}\n```\n\nVersions: see environment."
            ),
            vec!["bug".into()],
            env,
        ),
        Kind::Numeric => (
            format!(
                "{title}.\n\n```python\nimport numpy as np\nref = np.float64(1.0)\nout = {op}(inputs)\n```\n\n\
                 Expected the result to match the float64 reference within 1e-5, but got a difference of 3e-2 \
                 instead. This silently changes training curves."
            ),
            vec!["bug".into(), "numerical".into()],
            env,
        ),
        Kind::InPatch => (
            format!(
                "{title}.\n\n```python\nout = {op}(x)\nassert out.shape == ref.shape\n```\n\nThe fix PR adds a \
                 regression test for `{op}` that fails before the change and passes after it; the existing tests \
                 in the same file keep passing."
            ),
            vec!["bug".into(), "has-test".into()],
            env,
        ),
        Kind::Harness => (
            format!(
                "{title}. It works on a single GPU but not with the launcher; logs attached. \
                 Happens on our cluster with NCCL 2.20 and 8 GPUs per node."
            ),
            vec!["distributed".into()],
            env,
        ),
        Kind::Vague => (format!("{title}, not sure why."), vec![], None),
        Kind::Judged => (
            format!(
                "{title}. Over the last two releases we see it on our internal data, which we cannot share. \
                 It does not crash and we have no small example yet; it shows up after a few thousand steps \
                 of `{op}` on long sequences. Happy to run experiments if you tell us what to try."
            ),
            vec!["bug".into(), "needs-repro".into()],
            env,
        ),
    }
}

/// What an attempt on a report of this route came to: verdict, its
/// source, the failure's cause and a maintainer's review. `turn` cycles the
/// hypothesis verdicts; `judged_first` lets an agent's own LLM judgement
/// precede the oracle's check (the pairs LLM-verdict precision is measured on).
pub(super) fn outcome(
    route: Route,
    vague: bool,
    has_oracle: bool,
    turn: usize,
    judged_first: bool,
    rng: &mut Rng,
) -> (Verdict, VerdictSource, Option<FailureCause>, Option<Review>) {
    let (verdict, source, cause, review) = match (route, vague) {
        (Route::AgentFirst, _) => match rng.below(10) {
            0..=4 => (Verdict::Reproduced, VerdictSource::Deterministic, None, None),
            5..=7 => (
                Verdict::NotReproduced,
                VerdictSource::Deterministic,
                Some([FailureCause::WrongFailure, FailureCause::NoFailure, FailureCause::PoorDecision][rng.below(3)]),
                None,
            ),
            8 => (Verdict::Error, VerdictSource::Deterministic, Some(FailureCause::EnvSetup), None),
            // An agent's own LLM judgement first, the oracle's check after it:
            // the pairs LLM-verdict precision is measured on.
            _ if judged_first => (Verdict::Lead, VerdictSource::Llm, None, None),
            _ => (Verdict::NotReproduced, VerdictSource::Deterministic, Some(FailureCause::StuckInLoop), None),
        },
        (Route::HumanFirst, _) => match rng.below(4) {
            0 => (Verdict::NotReproduced, VerdictSource::Deterministic, Some(FailureCause::PoorDecision), None),
            1 => (Verdict::Error, VerdictSource::Deterministic, Some(FailureCause::Timeout), None),
            _ => (Verdict::Hypothesis, VerdictSource::Llm, None, None),
        },
        (Route::Hypothesis, true) => match rng.below(3) {
            0 => (
                Verdict::Reproduced,
                VerdictSource::Deterministic,
                None,
                if rng.chance(0.5) { Some(Review::Accepted) } else { None },
            ),
            _ => (Verdict::Hypothesis, VerdictSource::Llm, None, None),
        },
        (Route::Hypothesis, false) => match turn % 4 {
            0 => (Verdict::Lead, VerdictSource::Llm, None, None),
            1 => (Verdict::Confirmed, VerdictSource::Llm, None, Some(Review::Accepted)),
            2 => (Verdict::Lead, VerdictSource::Llm, None, Some(Review::Rejected)),
            _ => (Verdict::Hypothesis, VerdictSource::Llm, None, None),
        },
    };
    // Without a deterministic oracle nothing grades by execution: a person ran it.
    let source = if !has_oracle && matches!(verdict, Verdict::Reproduced | Verdict::NotReproduced) {
        VerdictSource::Human
    } else {
        source
    };
    (verdict, source, cause, review)
}

/// The oracle a report of `kind` comes with: a fail-to-pass test of its
/// patch (`test_issue_{test}`), a script a maintainer wrote in `minutes()`
/// minutes (a numeric report; `None`: none written), or an LLM judge.
pub(super) fn oracle(kind: Kind, test: u64, minutes: impl FnOnce() -> Option<f64>) -> Option<Oracle> {
    let base = |kind| Oracle {
        kind,
        source: None,
        command: None,
        fail_to_pass: vec![],
        pass_to_pass: vec![],
        signature: None,
        repeats: None,
        authoring_minutes: None,
    };
    match kind {
        Kind::InPatch => Some(Oracle {
            source: Some(OracleSource::InPatchTest),
            command: Some("python -m pytest -x tests/test_regressions.py".into()),
            fail_to_pass: vec![format!("tests/test_regressions.py::test_issue_{test}")],
            pass_to_pass: vec!["tests/test_regressions.py::test_basic".into()],
            ..base(OracleKind::FailToPass)
        }),
        Kind::Numeric => minutes().map(|m| Oracle {
            source: Some(OracleSource::Authored),
            command: Some("python repro.py".into()),
            repeats: Some(3),
            authoring_minutes: Some(m),
            ..base(OracleKind::FailToPass)
        }),
        Kind::Judged => Some(base(OracleKind::LlmJudge)),
        _ => None,
    }
}

pub(super) fn signals(rng: &mut Rng, failure_seen: bool) -> Signals {
    let s = |passed: bool, source: SignalSource, detail: &str| {
        Some(Signal { passed, source, detail: Some(detail.to_owned()) })
    };
    Signals {
        syntax: s(true, SignalSource::Static, "compiles with python -m py_compile"),
        quality: s(rng.chance(0.85), SignalSource::Static, "pyflakes"),
        relevance: s(rng.chance(0.8), SignalSource::Deterministic, "token overlap with the report's identifiers"),
        failure_behaviour: s(failure_seen, SignalSource::Deterministic, "signature match on buggy output"),
    }
}

/// Loads the demo with every date relative to `now` (fixed in tests, so two
/// databases seeded alike hold the same data).
pub async fn seed(storage: &dyn Storage, routing: &RoutingConfig, now: DateTime<Utc>) -> anyhow::Result<DemoSummary> {
    let mut rng = Rng(0x5EED_FA11_9A55);
    let mut summary = DemoSummary { projects: 0, reports: 0, attempts: 0 };

    for (slug, description, public) in PROJECTS {
        storage
            .create_project(&CreateProjectRequest {
                slug: (*slug).into(),
                name: None,
                description: Some((*description).into()),
                public: Some(*public),
                upstream_url: None,
                benchmark: None,
            })
            .await?;
        summary.projects += 1;
    }

    for (i, (project, kind, title, op, error)) in REPORTS.iter().enumerate() {
        let (body, labels, environment) = body(*project, *kind, title, op, error, &mut rng);
        let oracle = oracle(*kind, 1000 + i as u64, || Some(rng.range(12.0, 55.0).round()));
        let filed_at =
            now - Duration::hours(6 + (i as i64 * 37) % (10 * 7 * 24)) - Duration::minutes(rng.below(60) as i64);
        let mut request = CreateReportRequest {
            project: PROJECTS[*project].0.into(),
            external_id: format!("{}", 120_000 + i * 137),
            url: Some(format!("https://github.com/{}/issues/{}", PROJECTS[*project].0, 120_000 + i * 137)),
            title: (*title).into(),
            body,
            labels,
            filed_at: Some(filed_at),
            reporter: Some(format!("user{}", rng.below(900) + 100)),
            environment,
            paths: vec![],
            oracle,
            upstream: None,
        };
        request.normalize();
        let decision = decide(routing, &RoutingInput::from_request(&request));
        let route = decision.route;
        let has_oracle = decision.oracle.as_ref().is_some_and(Oracle::is_deterministic);
        let vague = decision.vague;
        let report = storage.create_report(&NewReport { request, decision, origin: Default::default() }).await?;
        summary.reports += 1;

        // The newest few reports wait untouched in the queue.
        if i % 9 == 8 {
            continue;
        }
        let tries = 1 + rng.below(3);
        for t in 0..tries {
            let (agent, model, (y, m, d)) = AGENTS[rng.below(AGENTS.len())];
            let started_at =
                (filed_at + Duration::hours(2 + rng.below(72) as i64 + t as i64 * 5)).min(now - Duration::hours(1));
            let wall = rng.range(40.0, 1500.0).round().min((now - started_at).num_seconds() as f64);
            let cost = (rng.range(0.04, 1.8) * 100.0).round() / 100.0;
            let (verdict, source, cause, review) =
                outcome(route, vague, has_oracle, i + t, t == 0 && tries > 1, &mut rng);
            let failure_seen = verdict == Verdict::Reproduced;
            let (attempt, _) = storage
                .create_attempt(&CreateAttemptRequest {
                    model: Some(model.into()),
                    model_cutoff: NaiveDate::from_ymd_opt(y, m, d),
                    started_at: Some(started_at),
                    ended_at: Some(started_at + Duration::seconds(wall as i64)),
                    wall_seconds: Some(wall),
                    cost_usd: Some(cost),
                    tokens_in: (cost * 180_000.0) as i64,
                    tokens_out: (cost * 22_000.0) as i64,
                    api_calls: Some(2 + rng.below(30) as i64),
                    iterations: 1 + rng.below(5) as u32,
                    candidate: Some(format!("import torch\n# candidate {t} for {title}\nraise SystemExit(1)\n")),
                    signals: signals(&mut rng, failure_seen),
                    failure_cause: cause,
                    review,
                    reviewer: review.map(|_| "maintainer".to_owned()),
                    review_comment: review.map(|r| match r {
                        Review::Accepted => "Ran it locally; matches the report.".to_owned(),
                        Review::Rejected => "Shows a different failure than the report.".to_owned(),
                    }),
                    attempt_key: Some(format!("demo-{i}-{t}")),
                    ..CreateAttemptRequest::new(report.summary.id, agent, verdict, source)
                })
                .await?;
            summary.attempts += 1;
            if source == VerdictSource::Deterministic {
                for (env, exit, out) in [
                    (
                        RunEnvironment::Buggy,
                        if failure_seen { 1 } else { 0 },
                        if error.is_empty() { "AssertionError: outputs differ" } else { error },
                    ),
                    (RunEnvironment::Fixed, 0, "ok"),
                ] {
                    storage
                        .create_run(&NewRun {
                            attempt_id: attempt.id,
                            trigger: RunTrigger::Initial,
                            environment: env,
                            exit_status: Some(exit),
                            timed_out: false,
                            duration_ms: (wall * 40.0) as i64,
                            output: out.to_owned(),
                            output_truncated: false,
                            output_bytes: out.len() as i64,
                            failing_tests: vec![],
                            passing_tests: vec![],
                            runner_id: Some("demo-runner".into()),
                            started_at: None,
                            iteration: None,
                            release: None,
                            isolation: None,
                        })
                        .await?;
                }
            }
        }

        // Benchmark-style fix attempts on the reports that carry in-patch tests.
        if matches!(kind, Kind::InPatch) {
            let resolved = i % 2 == 0;
            storage
                .create_attempt(&CreateAttemptRequest {
                    goal: Goal::Fix,
                    model: Some("claude-3-5-sonnet-20241022".into()),
                    model_cutoff: NaiveDate::from_ymd_opt(2024, 4, 1),
                    started_at: Some(filed_at + Duration::days(1)),
                    wall_seconds: Some(rng.range(200.0, 900.0).round()),
                    cost_usd: Some((rng.range(0.3, 2.5) * 100.0).round() / 100.0),
                    tokens_in: 400_000,
                    tokens_out: 30_000,
                    api_calls: Some(40),
                    attempt_key: Some(format!("demo-fix-{i}")),
                    ..CreateAttemptRequest::new(
                        report.summary.id,
                        "swe-agent",
                        if resolved { Verdict::Resolved } else { Verdict::Unresolved },
                        VerdictSource::Deterministic,
                    )
                })
                .await?;
            summary.attempts += 1;
        }
    }
    // A published claim beside the team's own rows, so the stated-against-computed view has something to say.
    storage
        .import_agents(&[AgentRecord {
            name: "repgen".into(),
            source: Some("paper: RepGen, 85 of 106 DL bugs with an LLM-assisted final verdict".into()),
            model: Some("gpt-4o-2024-08-06".into()),
            date: None,
            stated_rate: Some(0.8019),
            stated_instances: None,
            stated_cost_usd: None,
            stated_instance_cost_usd: None,
            stated_instance_calls: None,
            notes: Some("a different benchmark: the gap is expected, and worth watching".into()),
        }])
        .await?;
    Ok(summary)
}
