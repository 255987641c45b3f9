//! The refine loop (RepGen's shape, graded by execution): a generator
//! proposes a candidate for an `agent_first` report, failpass verifies it,
//! feeds the result back, and stops on success, at the try budget, or when a
//! candidate or a failure repeats (`stuck_in_loop`). One attempt records the
//! loop: every iteration's candidate hash, verdict, reason, cost and time in
//! its grade, every iteration's runs, and the totals.
//!
//! Generators: the built-in offline `snippet` (the report's own code blocks,
//! one per iteration, so the loop runs with no model at all), or a configured
//! agent command that reads `{"report", "iteration", "history"}` as JSON on
//! stdin and prints `{"candidate", "cost_usd", "tokens_in", "tokens_out",
//! "model"}` (or just the candidate's text).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use failpass_shared::api::attempts::CreateAttemptRequest;
use failpass_shared::api::jobs::Job;
use failpass_shared::api::reports::Report;
use failpass_shared::grading::{self, GradeRecord, RefineIteration, RefineLog};
use failpass_shared::model::{FailureCause, RefineStop, Route, RunEnvironment, RunTrigger, Verdict, VerdictSource};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tracing::Instrument;

use super::JobError;
use super::verify::Verify;
use crate::db::ProjectScope;
use crate::db::attempts::{Refined, Verification};

/// Iterations a loop may take unless configured otherwise (RepGen's default).
pub const DEFAULT_BUDGET: u32 = 5;

/// Where candidates come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    /// The report's code blocks, offline.
    Snippet,
    /// An external agent: `sh -c COMMAND`, JSON on stdin, candidate on
    /// stdout. It runs sandboxed like a candidate (its own unprivileged user,
    /// its own directory, the whole process tree killed at the timeout) but
    /// with outbound network (it calls a model), the variables in `env`, and
    /// its own files (`files`) read-only at their paths.
    Command { name: String, command: String, timeout: Duration, env: Vec<(String, String)>, files: Vec<PathBuf> },
}

impl Generator {
    pub fn name(&self) -> &str {
        match self {
            Generator::Snippet => "snippet",
            Generator::Command { name, .. } => name,
        }
    }
}

/// What one iteration saw, fed back to the generator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Feedback {
    pub iteration: u32,
    pub candidate: String,
    pub verdict: Verdict,
    pub reason: String,
    pub signals: failpass_shared::api::attempts::Signals,
    /// The end of the buggy side's output (the failure, if any).
    pub buggy_output: String,
    pub fixed_output: String,
}

/// A generator's proposal.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Proposal {
    pub candidate: String,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default)]
    pub tokens_in: i64,
    #[serde(default)]
    pub tokens_out: i64,
    #[serde(default)]
    pub model: Option<String>,
}

/// Runs the loop for the report a refine job names, grading each candidate
/// with [`Verify::grade`].
#[derive(Clone)]
pub struct Refine {
    pub verify: Verify,
    pub generator: Generator,
    /// Iterations the loop may take.
    pub budget: u32,
}

/// Runs and verifications carry this attempt id until the loop's attempt
/// exists (it is created with the job's completion).
const PENDING_ATTEMPT: i64 = 0;

impl Refine {
    /// Carries out one `refine` job (see [`super::Executor`]).
    #[tracing::instrument(name = "refine", skip_all, fields(job = job.id, report = job.payload.report_id))]
    pub async fn execute(&self, job: &Job, runner: &str) -> Result<Verification, JobError> {
        let (generator, budget) = (&self.generator, self.budget);
        let bench = &self.verify.bench;
        let report_id = job.payload.report_id.ok_or_else(|| JobError::permanent("a refine job names no report_id"))?;
        let report = bench
            .storage
            .get_report(report_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("report {report_id} does not exist")))?;
        if report.summary.route != Route::AgentFirst {
            return Err(JobError::permanent(format!(
                "report {report_id} is routed {}, and the refine loop is for agent_first reports",
                report.summary.route
            )));
        }
        let environments = bench.storage.list_environments(&report.summary.project).await?;
        // The loop's attempt, created with its result when the job completes
        // (so a worker that loses its lease leaves nothing behind); keyed by the
        // job, so a retried job finds the same one.
        let mut new_attempt = CreateAttemptRequest {
            started_at: Some(job.created_at),
            attempt_key: Some(format!("refine:{}", job.id)),
            ..CreateAttemptRequest::new(report_id, generator.name(), Verdict::Hypothesis, VerdictSource::Llm)
        };
        let started = Instant::now();
        let mut history: Vec<Feedback> = Vec::new();
        let mut iterations = Vec::new();
        let mut runs = Vec::new();
        let (mut cost, mut tokens_in, mut tokens_out) = (0.0, 0i64, 0i64);
        let mut last: Option<Verification> = None;
        let mut stop = RefineStop::Budget;
        for i in 1..=budget.max(1) {
            let t = Instant::now();
            let span = tracing::info_span!("iteration", iteration = i);
            let proposal = match propose(generator, &report, i, &history, &bench.scratch, &bench.envs.allow_networks)
                .instrument(span.clone())
                .await
            {
                Ok(Some(p)) => p,
                Ok(None) => {
                    stop = RefineStop::NoCandidate;
                    break;
                }
                Err(e) => {
                    stop = RefineStop::GeneratorFailed;
                    iterations.push(RefineIteration { iteration: i, error: Some(e), ..Default::default() });
                    break;
                }
            };
            cost += proposal.cost_usd;
            tokens_in += proposal.tokens_in;
            tokens_out += proposal.tokens_out;
            let hash = failpass_shared::hash::content_hash(&proposal.candidate);
            if history.iter().any(|h| h.candidate == proposal.candidate) {
                iterations.push(RefineIteration {
                    iteration: i,
                    candidate_hash: Some(hash),
                    repeated: Some("candidate".into()),
                    cost_usd: Some(proposal.cost_usd),
                    seconds: Some(t.elapsed().as_secs_f64()),
                    ..Default::default()
                });
                stop = RefineStop::StuckInLoop;
                break;
            }
            let v = self
                .verify
                .grade(runner, PENDING_ATTEMPT, &report, Some(&proposal.candidate), &environments, RunTrigger::Initial)
                .instrument(span)
                .await?;
            let reason = v.grade.reason.clone().unwrap_or_default();
            let tail = |env: RunEnvironment| {
                v.runs.iter().rfind(|r| r.environment == env).map(|r| tail_of(&r.output, 2000)).unwrap_or_default()
            };
            let feedback = Feedback {
                iteration: i,
                candidate: proposal.candidate.clone(),
                verdict: v.verdict,
                reason: reason.clone(),
                signals: v.signals.clone(),
                buggy_output: tail(RunEnvironment::Buggy),
                fixed_output: tail(RunEnvironment::Fixed),
            };
            iterations.push(RefineIteration {
                iteration: i,
                candidate_hash: Some(hash),
                verdict: Some(v.verdict),
                reason: Some(reason),
                flaky: Some(v.flaky),
                cost_usd: Some(proposal.cost_usd),
                seconds: Some(t.elapsed().as_secs_f64()),
                model: proposal.model,
                ..Default::default()
            });
            runs.extend(v.runs.iter().cloned().map(|r| crate::db::NewRun { iteration: Some(i), ..r }));
            let failure_repeats = history.last().is_some_and(|prev| {
                prev.verdict == v.verdict
                    && prev.reason == feedback.reason
                    && grading::failure_signature(&prev.buggy_output)
                        == grading::failure_signature(&feedback.buggy_output)
            });
            let verdict = v.verdict;
            history.push(feedback);
            last = Some(Verification { refined: None, ..v });
            match verdict {
                Verdict::Reproduced => stop = RefineStop::Reproduced,
                _ if failure_repeats => stop = RefineStop::StuckInLoop,
                Verdict::Error => stop = RefineStop::Error,
                _ => continue,
            }
            break;
        }
        let n = iterations.len() as u32;
        // An agent that failed (exited with an error, timed out, printed no
        // proposal) is its own failure, not a poor decision about a candidate.
        let (cause, because) = match stop {
            RefineStop::GeneratorFailed => (FailureCause::Other, "the generator failed before proposing a candidate"),
            _ => (FailureCause::PoorDecision, "the generator proposed no candidate"),
        };
        let mut v = last.unwrap_or_else(|| Verification {
            failure_cause: Some(cause),
            grade: GradeRecord::because(because),
            ..Verification::new(PENDING_ATTEMPT, Verdict::Error)
        });
        // The model the agent said it used (the latest one it named), so the
        // attempt counts in the per-model figures.
        new_attempt.model = iterations.iter().rev().find_map(|it| it.model.clone()).filter(|m| !m.trim().is_empty());
        if stop == RefineStop::StuckInLoop {
            v.failure_cause = Some(FailureCause::StuckInLoop);
        }
        let why = match stop {
            RefineStop::Reproduced => format!("reproduced on iteration {n}"),
            RefineStop::StuckInLoop => {
                format!("stopped after {n} iteration(s): the candidate or its failure repeated")
            }
            RefineStop::NoCandidate => {
                format!("stopped after {n} iteration(s): the generator had no further candidate")
            }
            RefineStop::GeneratorFailed => format!("stopped after {n} iteration(s): the generator failed"),
            RefineStop::Error => format!("stopped after {n} iteration(s): the candidate could not be graded"),
            RefineStop::Budget => format!("stopped at the budget of {budget} iterations"),
        };
        v.grade.reason = Some(format!("{why}; last: {}", v.grade.reason.as_deref().unwrap_or("-")));
        v.grade.refine = Some(RefineLog { generator: generator.name().to_owned(), budget, stop, iterations });
        v.runs = runs;
        v.new_attempt = Some(new_attempt);
        v.refined = Some(Refined {
            candidate: history.last().map(|h| h.candidate.clone()).unwrap_or_default(),
            iterations: n.max(1),
            cost_usd: cost,
            wall_seconds: started.elapsed().as_secs_f64(),
            tokens_in,
            tokens_out,
        });
        Ok(v)
    }
}

fn tail_of(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_owned()
}

async fn propose(
    generator: &Generator,
    report: &Report,
    iteration: u32,
    history: &[Feedback],
    scratch: &std::path::Path,
    networks: &[ipnet::IpNet],
) -> Result<Option<Proposal>, String> {
    match generator {
        Generator::Snippet => {
            Ok(snippet(&report.body, iteration).map(|candidate| Proposal { candidate, ..Default::default() }))
        }
        Generator::Command { command, timeout, env, files, .. } => {
            let input = json!({
                "report": {
                    "id": report.summary.id, "project": report.summary.project, "title": report.summary.title, "body": report.body,
                    "labels": report.summary.labels, "environment": report.environment, "oracle": report.oracle,
                },
                "iteration": iteration,
                "history": history,
            });
            agent_command(command, &input, *timeout, env, scratch, files, networks).await.map(Some)
        }
    }
}

/// What of the host an agent command sees (read-only, at the same paths):
/// the directories given (`--agent-dir`), and each file the command names
/// by an absolute path (`python3 /opt/agent/run.py` shows that file alone;
/// a script that imports its neighbours needs `--agent-dir /opt/agent`).
/// What every run's root holds already (`/usr`, …) is never shown from the host.
pub fn agent_files(command: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let system = |p: &std::path::Path| {
        p == std::path::Path::new("/")
            || ["/usr", "/etc", "/proc", "/sys", "/dev", "/bin", "/sbin", "/lib", "/lib64"]
                .iter()
                .any(|s| p.starts_with(s))
    };
    let named = command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .filter(|w| w.starts_with('/'))
        .map(std::path::Path::new)
        .filter(|p| p.is_file())
        .map(std::path::Path::to_path_buf);
    let mut out: Vec<PathBuf> = dirs.iter().cloned().chain(named).filter(|p| !system(p)).collect();
    out.sort();
    out.dedup();
    out
}

/// Runs an agent command with `input` on stdin; its stdout is a JSON
/// proposal or the candidate's text. Sandboxed: a user of its own (as root),
/// a root of its own with its `files` read-only at their paths, its own
/// directory under `scratch`, outbound network without the host's loopback,
/// and at `timeout` its whole process tree is killed, not just the shell
/// that started it.
pub async fn agent_command(
    command: &str,
    input: &serde_json::Value,
    timeout: Duration,
    env: &[(String, String)],
    scratch: &std::path::Path,
    files: &[PathBuf],
    networks: &[ipnet::IpNet],
) -> Result<Proposal, String> {
    let mut cmd = super::sandbox::Command::new("/bin/sh", ["-c", command]);
    cmd.binds = files.iter().map(|f| (f.clone(), false)).collect();
    cmd.allow_networks = networks.to_vec();
    cmd.stdin = Some(input.to_string().into_bytes());
    cmd.network = true;
    cmd.split_stderr = true;
    cmd.env = env.to_vec();
    cmd.limits.wall = timeout;
    cmd.limits.cpu_seconds = timeout.as_secs().max(1);
    cmd.limits.output_bytes = 4 << 20;
    let out = super::sandbox::run(&cmd, Some(scratch))
        .await
        .map_err(|e| format!("could not start the agent command: {e}"))?;
    if out.timed_out {
        return Err(format!(
            "the agent command took longer than {} s (it and everything it started were stopped)",
            timeout.as_secs()
        ));
    }
    if !out.succeeded() {
        return Err(format!(
            "the agent command exited with {}: {}",
            super::env::describe_exit(out.exit_status, out.signal),
            out.stderr.lines().last().unwrap_or_default()
        ));
    }
    if out.output_truncated {
        return Err(format!("the agent command printed more than {} bytes", cmd.limits.output_bytes));
    }
    let text = out.output;
    let proposal = match serde_json::from_str::<Proposal>(text.trim()) {
        Ok(p) => p,
        Err(_) if !text.trim_start().starts_with('{') => Proposal { candidate: text, ..Default::default() },
        Err(e) => return Err(format!("the agent command printed JSON that is not a proposal: {e}")),
    };
    if proposal.candidate.trim().is_empty() {
        return Err("the agent command proposed an empty candidate".into());
    }
    if !(proposal.cost_usd.is_finite() && proposal.cost_usd >= 0.0) {
        return Err("the agent command's cost_usd must be a non-negative number".into());
    }
    Ok(proposal)
}

pub use super::snippet::{code_blocks, snippet};
