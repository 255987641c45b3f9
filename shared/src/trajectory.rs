//! What an agent did on its way to a candidate: its trajectory, as steps
//! (an action or tool call, its input and output, tokens, cost, time), read
//! from the shapes agents write: a SWE-agent `.traj` file, an OpenHands
//! event list, or failpass's own JSON Lines of steps (docs/agents.md).
//!
//! Reading marks what a maintainer looks for: repeated identical actions (a
//! loop, proposed as the `stuck_in_loop` failure cause) and the step where
//! the candidate first appears. Outputs are capped ([`OUTPUT_CAP`]) with
//! their full size kept, so a trajectory of 10,000 steps stays small.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::FailureCause;

/// Bytes of a step's output kept; the rest is cut at a character boundary
/// and the step says how long the output was.
pub const OUTPUT_CAP: usize = 16 * 1024;

/// Bytes of a step's input kept (a file the agent wrote, say).
pub const INPUT_CAP: usize = 64 * 1024;

/// Steps a trajectory may have.
pub const MAX_STEPS: usize = 100_000;

/// Repeats of one action (or of one pair of actions) in a row that make a loop.
pub const LOOP_REPEATS: usize = 3;

/// The shapes a trajectory is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TrajectoryFormat {
    /// SWE-agent's `.traj`: `{"trajectory": [{"action", "observation", …}], "info": {"model_stats"}}`.
    SweAgent,
    /// OpenHands' event list: actions and observations, paired by `cause`.
    OpenHands,
    /// One JSON object per line: `{"action", "input", "output", "tokens_in", "tokens_out", "cost_usd", "at"}`.
    Steps,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Step {
    /// From 0, in the order the agent took them.
    pub index: u32,
    /// The action or tool: `bash`, `edit`, `open`, …
    pub action: String,
    /// What the action was given (a command, a file's text), capped at [`INPUT_CAP`].
    pub input: String,
    /// What came back, capped at [`OUTPUT_CAP`].
    pub output: String,
    /// The output's size before the cap.
    pub output_bytes: u64,
    /// The agent's stated reason, where the format keeps one.
    pub thought: Option<String>,
    pub tokens_in: Option<i64>,
    pub tokens_out: Option<i64>,
    pub cost_usd: Option<f64>,
    /// When the step began, where the format says.
    pub at: Option<DateTime<Utc>>,
    /// Seconds the action took to run, where the format says.
    pub seconds: Option<f64>,
}

/// Steps repeated in a row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Loop {
    pub first: u32,
    pub last: u32,
    /// Times the action (or pair of actions) ran in a row.
    pub repeats: u32,
    pub action: String,
}

/// A trajectory as read, with what reading it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Trajectory {
    pub format: TrajectoryFormat,
    pub steps: Vec<Step>,
    /// Outputs cut at [`OUTPUT_CAP`] bytes (and inputs at [`INPUT_CAP`]).
    pub output_cap: u64,
    pub capped: u32,
    pub loops: Vec<Loop>,
    /// The first step whose input holds the candidate (its longest line).
    pub candidate_step: Option<u32>,
    /// Totals the format states (SWE-agent's `model_stats`), else the steps' sums.
    pub cost_usd: Option<f64>,
    pub tokens_in: Option<i64>,
    pub tokens_out: Option<i64>,
}

impl Trajectory {
    /// The failure cause the trajectory suggests: `stuck_in_loop` when it
    /// holds a loop. A proposal for a maintainer, never set on its own.
    pub fn proposed_cause(&self) -> Option<FailureCause> {
        (!self.loops.is_empty()).then_some(FailureCause::StuckInLoop)
    }
}

/// Why a trajectory could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct TrajectoryError(pub String);

fn err(message: impl Into<String>) -> TrajectoryError {
    TrajectoryError(message.into())
}

/// Reads `text` in `format`, or in the shape it has when `format` is `None`
/// (a JSON object with `trajectory`: SWE-agent; a JSON array: OpenHands;
/// else JSON Lines of steps), and marks loops and the candidate's step.
pub fn parse(
    text: &str,
    format: Option<TrajectoryFormat>,
    candidate: Option<&str>,
) -> Result<Trajectory, TrajectoryError> {
    let format = match format {
        Some(f) => f,
        None => detect(text)?,
    };
    let (raw, totals) = match format {
        TrajectoryFormat::SweAgent => swe_agent(text)?,
        TrajectoryFormat::OpenHands => (open_hands(text)?, Totals::default()),
        TrajectoryFormat::Steps => (json_lines(text)?, Totals::default()),
    };
    if raw.len() > MAX_STEPS {
        return Err(err(format!("{} steps; at most {MAX_STEPS} are kept", raw.len())));
    }
    let mut capped = 0u32;
    let steps: Vec<Step> = raw
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let output_bytes = r.output.len() as u64;
            let (input, cut_in) = cap(r.input, INPUT_CAP);
            let (output, cut_out) = cap(r.output, OUTPUT_CAP);
            capped += u32::from(cut_in || cut_out);
            Step {
                index: i as u32,
                action: r.action,
                input,
                output,
                output_bytes,
                thought: r.thought.filter(|t| !t.trim().is_empty()),
                tokens_in: r.tokens_in,
                tokens_out: r.tokens_out,
                cost_usd: r.cost_usd,
                at: r.at,
                seconds: r.seconds,
            }
        })
        .collect();
    let sum_i = |f: fn(&Step) -> Option<i64>| steps.iter().filter_map(f).reduce(|a, b| a + b);
    let sum_cost = steps.iter().filter_map(|s| s.cost_usd).reduce(|a, b| a + b);
    Ok(Trajectory {
        format,
        loops: loops(&steps),
        candidate_step: candidate.and_then(|c| candidate_step(&steps, c)),
        cost_usd: totals.cost_usd.or(sum_cost),
        tokens_in: totals.tokens_in.or_else(|| sum_i(|s| s.tokens_in)),
        tokens_out: totals.tokens_out.or_else(|| sum_i(|s| s.tokens_out)),
        output_cap: OUTPUT_CAP as u64,
        capped,
        steps,
    })
}

/// The shape `text` has.
pub fn detect(text: &str) -> Result<TrajectoryFormat, TrajectoryError> {
    let start = text.trim_start();
    if start.starts_with('[') {
        return Ok(TrajectoryFormat::OpenHands);
    }
    if start.starts_with('{') {
        // One object spanning the file with a `trajectory` array, or lines of objects.
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text)
            && o.get("trajectory").is_some_and(Value::is_array)
        {
            return Ok(TrajectoryFormat::SweAgent);
        }
        return Ok(TrajectoryFormat::Steps);
    }
    Err(err("not a trajectory: expected a SWE-agent .traj object, an OpenHands event list or JSON Lines of steps"))
}

/// A step as a format gives it, before caps and numbering.
#[derive(Default)]
struct RawStep {
    action: String,
    input: String,
    output: String,
    thought: Option<String>,
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
    cost_usd: Option<f64>,
    at: Option<DateTime<Utc>>,
    seconds: Option<f64>,
}

#[derive(Default)]
struct Totals {
    cost_usd: Option<f64>,
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// SWE-agent: the action's first word is the tool, the rest its input.
fn swe_agent(text: &str) -> Result<(Vec<RawStep>, Totals), TrajectoryError> {
    let v: Value = serde_json::from_str(text).map_err(|e| err(format!("SWE-agent .traj: {e}")))?;
    let steps = v["trajectory"].as_array().ok_or_else(|| err("SWE-agent .traj: no `trajectory` array"))?;
    let mut out = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let action = s.get("action").and_then(Value::as_str).ok_or_else(|| err(format!("step {i}: no `action`")))?;
        let action = action.trim_end();
        let (tool, input) = action.split_once(char::is_whitespace).unwrap_or((action, ""));
        out.push(RawStep {
            action: tool.to_owned(),
            input: input.trim().to_owned(),
            output: text_of(s.get("observation")),
            thought: s.get("thought").and_then(Value::as_str).map(str::to_owned),
            seconds: s.get("execution_time").and_then(Value::as_f64),
            ..RawStep::default()
        });
    }
    let stats = &v["info"]["model_stats"];
    let totals = Totals {
        cost_usd: stats["instance_cost"].as_f64(),
        tokens_in: stats["tokens_sent"].as_i64(),
        tokens_out: stats["tokens_received"].as_i64(),
    };
    Ok((out, totals))
}

/// OpenHands: each agent action is a step; its observation (the event whose
/// `cause` is the action's id) its output. Cost and tokens per step are the
/// differences of the accumulated `llm_metrics`.
fn open_hands(text: &str) -> Result<Vec<RawStep>, TrajectoryError> {
    let events: Vec<Value> = serde_json::from_str(text).map_err(|e| err(format!("OpenHands events: {e}")))?;
    let mut outputs: std::collections::HashMap<i64, String> = std::collections::HashMap::new();
    for e in &events {
        if let (Some(cause), Some(_)) = (e.get("cause").and_then(Value::as_i64), e.get("observation")) {
            outputs.entry(cause).or_insert_with(|| text_of(e.get("content")));
        }
    }
    let (mut cost, mut tin, mut tout) = (0.0, 0i64, 0i64);
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let Some(action) = e.get("action").and_then(Value::as_str) else { continue };
        if e.get("source").and_then(Value::as_str) != Some("agent") {
            continue;
        }
        let args = &e["args"];
        let input = ["command", "code", "file_text", "path", "content", "final_thought", "url"]
            .iter()
            .filter_map(|k| args.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
            .collect::<Vec<_>>()
            .join("\n");
        let metrics = &e["llm_metrics"];
        let step_cost = metrics["accumulated_cost"].as_f64().map(|c| {
            let d = c - cost;
            cost = c;
            (d * 1e6).round() / 1e6
        });
        let usage = &metrics["accumulated_token_usage"];
        let d_in = usage["prompt_tokens"].as_i64().map(|t| std::mem::replace(&mut tin, t)).map(|prev| tin - prev);
        let d_out =
            usage["completion_tokens"].as_i64().map(|t| std::mem::replace(&mut tout, t)).map(|prev| tout - prev);
        let id = e.get("id").and_then(Value::as_i64).unwrap_or(i as i64);
        out.push(RawStep {
            action: action.to_owned(),
            input,
            output: outputs.remove(&id).unwrap_or_default(),
            thought: args.get("thought").and_then(Value::as_str).map(str::to_owned),
            tokens_in: d_in,
            tokens_out: d_out,
            cost_usd: step_cost,
            at: e.get("timestamp").and_then(Value::as_str).and_then(parse_time),
            seconds: None,
        });
    }
    Ok(out)
}

/// An OpenHands or RFC 3339 time; OpenHands writes local times without an
/// offset, read as UTC.
fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok().map(|t| t.and_utc()))
}

/// failpass's own JSON Lines: every line a step; blank lines skipped.
fn json_lines(text: &str) -> Result<Vec<RawStep>, TrajectoryError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        action: String,
        #[serde(default)]
        input: String,
        #[serde(default)]
        output: String,
        #[serde(default)]
        thought: Option<String>,
        tokens_in: Option<i64>,
        tokens_out: Option<i64>,
        cost_usd: Option<f64>,
        at: Option<DateTime<Utc>>,
        seconds: Option<f64>,
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(line).map_err(|e| err(format!("line {}: {e}", n + 1)))?;
        out.push(RawStep {
            action: l.action,
            input: l.input,
            output: l.output,
            thought: l.thought,
            tokens_in: l.tokens_in,
            tokens_out: l.tokens_out,
            cost_usd: l.cost_usd,
            at: l.at,
            seconds: l.seconds,
        });
    }
    Ok(out)
}

/// `s` cut to at most `max` bytes at a character boundary; whether it was cut.
fn cap(mut s: String, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    (s, true)
}

/// Runs of one action (tool and input) [`LOOP_REPEATS`] or more times in a
/// row, and of one pair of actions alternating that many times.
fn loops(steps: &[Step]) -> Vec<Loop> {
    fn key(s: &Step) -> (&str, &str) {
        (s.action.as_str(), s.input.trim())
    }
    let mut found = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        // A single action repeated.
        let mut j = i + 1;
        while j < steps.len() && key(&steps[j]) == key(&steps[i]) {
            j += 1;
        }
        if j - i >= LOOP_REPEATS {
            found.push(Loop {
                first: i as u32,
                last: (j - 1) as u32,
                repeats: (j - i) as u32,
                action: steps[i].action.clone(),
            });
            i = j;
            continue;
        }
        // A pair alternating: a b a b a b.
        if i + 1 < steps.len() && key(&steps[i]) != key(&steps[i + 1]) {
            let mut k = i + 2;
            while k < steps.len() && key(&steps[k]) == key(&steps[k - 2]) {
                k += 1;
            }
            let pairs = (k - i) / 2;
            if pairs >= LOOP_REPEATS {
                let last = i + pairs * 2 - 1;
                let action = format!("{} / {}", steps[i].action, steps[i + 1].action);
                found.push(Loop { first: i as u32, last: last as u32, repeats: pairs as u32, action });
                i = last + 1;
                continue;
            }
        }
        i += 1;
    }
    found
}

/// The first step whose input holds the candidate's longest line.
fn candidate_step(steps: &[Step], candidate: &str) -> Option<u32> {
    let line = candidate.lines().map(str::trim).filter(|l| l.len() >= 8).max_by_key(|l| l.len())?;
    steps.iter().find(|s| s.input.contains(line)).map(|s| s.index)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWE: &str = include_str!("../fixtures/trajectories/swe-agent.traj");
    const OPEN_HANDS: &str = include_str!("../fixtures/trajectories/openhands-events.json");
    const STEPS: &str = include_str!("../fixtures/trajectories/steps.jsonl");
    const CANDIDATE: &str = "import math\nimport fastnum\n\nprobs = fastnum.softmax([1000.0, 1000.0])\n\
        assert not any(math.isnan(p) for p in probs), f\"probabilities contain nan: {probs}\"\n";

    #[test]
    fn a_swe_agent_traj_reads_as_steps_with_its_totals_and_its_loop() {
        let t = parse(SWE, None, Some(CANDIDATE)).unwrap();
        assert_eq!(t.format, TrajectoryFormat::SweAgent);
        assert_eq!(t.steps.len(), 11);
        assert_eq!(
            (t.steps[1].action.as_str(), t.steps[1].input.as_str()),
            ("search_file", "\"def softmax\" fastnum/__init__.py")
        );
        assert!(t.steps[2].output.contains("math.exp(x)"));
        assert_eq!(t.steps[0].seconds, Some(0.3));
        assert_eq!((t.cost_usd, t.tokens_in, t.tokens_out), (Some(0.4213), Some(118432), Some(2210)));
        // The same command run four times in a row after reading the code.
        assert_eq!(t.loops, vec![Loop { first: 3, last: 6, repeats: 4, action: "python".into() }]);
        assert_eq!(t.proposed_cause(), Some(FailureCause::StuckInLoop));
        // The candidate appears where the agent wrote it into repro.py.
        assert_eq!(t.candidate_step, Some(8));
        assert_eq!(t.steps[8].action, "edit");
    }

    #[test]
    fn openhands_events_pair_actions_with_observations_and_split_the_cost() {
        let t = parse(OPEN_HANDS, None, Some(CANDIDATE)).unwrap();
        assert_eq!(t.format, TrajectoryFormat::OpenHands);
        let actions: Vec<&str> = t.steps.iter().map(|s| s.action.as_str()).collect();
        assert_eq!(actions, ["run", "run", "edit", "run", "finish"], "the user's message is not a step");
        assert_eq!(t.steps[0].output, "README.md\nfastnum\nsetup.py\n");
        assert!(t.steps[3].output.contains("AssertionError: probabilities contain nan"));
        assert_eq!(
            (t.steps[0].cost_usd, t.steps[1].cost_usd, t.steps[4].cost_usd),
            (Some(0.011), Some(0.011), Some(0.004))
        );
        assert_eq!((t.steps[1].tokens_in, t.steps[1].tokens_out), (Some(4200), Some(160)));
        assert_eq!(t.tokens_in, Some(4 * 4200 + 900));
        assert_eq!(t.steps[2].at.unwrap().to_rfc3339(), "2025-03-02T10:00:21.500+00:00");
        assert_eq!(t.candidate_step, Some(2));
        assert!(t.loops.is_empty());
        assert_eq!(t.proposed_cause(), None);
    }

    #[test]
    fn json_lines_of_steps_read_with_their_own_figures() {
        let t = parse(STEPS, None, None).unwrap();
        assert_eq!(t.format, TrajectoryFormat::Steps);
        assert_eq!(t.steps.len(), 4);
        assert_eq!(t.cost_usd.map(|c| (c * 1000.0).round()), Some(13.0));
        assert_eq!((t.tokens_in, t.tokens_out), (Some(5400), Some(250)));
        assert_eq!(t.candidate_step, None);
        let bad = parse("{\"action\": \"bash\"}\n{\"action\": 3}\n", None, None).unwrap_err();
        assert!(bad.0.starts_with("line 2:"), "{bad}");
        let unknown =
            parse("{\"action\": \"bash\", \"outptu\": \"x\"}\n", Some(TrajectoryFormat::Steps), None).unwrap_err();
        assert!(unknown.0.contains("outptu"), "{unknown}");
    }

    #[test]
    fn outputs_are_capped_at_a_character_boundary_with_their_size_kept() {
        let long = "é".repeat(OUTPUT_CAP); // two bytes each
        let line = serde_json::json!({"action": "bash", "input": "cat big", "output": long}).to_string();
        let t = parse(&line, None, None).unwrap();
        assert_eq!(t.steps[0].output_bytes, (OUTPUT_CAP * 2) as u64);
        assert_eq!(t.steps[0].output.len(), OUTPUT_CAP);
        assert_eq!(t.capped, 1);
    }

    #[test]
    fn alternating_pairs_are_loops_and_three_different_steps_are_not() {
        let steps = |names: &[&str]| {
            names
                .iter()
                .map(|n| serde_json::json!({"action": "bash", "input": n}).to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let t = parse(&steps(&["a", "b", "a", "b", "a", "b", "c"]), None, None).unwrap();
        assert_eq!(t.loops, vec![Loop { first: 0, last: 5, repeats: 3, action: "bash / bash".into() }]);
        assert!(parse(&steps(&["a", "b", "c", "a", "b"]), None, None).unwrap().loops.is_empty());
        assert!(parse(&steps(&["a", "a", "b"]), None, None).unwrap().loops.is_empty(), "twice is not a loop");
    }

    #[test]
    fn ten_thousand_steps_read_and_the_wrong_shape_is_named() {
        let many: String = (0..10_000)
            .map(|i| {
                serde_json::json!({"action": "bash", "input": format!("step {i}"), "output": "ok"}).to_string() + "\n"
            })
            .collect();
        assert_eq!(parse(&many, None, None).unwrap().steps.len(), 10_000);
        assert!(detect("hello").unwrap_err().0.contains("not a trajectory"));
        assert!(
            parse("{\"trajectory\": 3}", Some(TrajectoryFormat::SweAgent), None)
                .unwrap_err()
                .0
                .contains("no `trajectory`")
        );
        assert!(parse("[{]", None, None).unwrap_err().0.starts_with("OpenHands events:"));
    }
}
