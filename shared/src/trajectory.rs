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

use crate::model::FailureCause;

/// Bytes of a step's output kept; the rest is cut at a character boundary
/// and the step says how long the output was.
pub const OUTPUT_CAP: usize = 16 * 1024;

/// Bytes of a step's input kept (a file the agent wrote, say).
pub const INPUT_CAP: usize = 64 * 1024;

/// Steps a trajectory may have; reading stops past it, so a hostile upload
/// of millions of tiny steps costs no more memory than this many.
pub const MAX_STEPS: usize = 50_000;

/// Entries (events, steps) a file's list may have: an OpenHands list holds
/// an observation and messages beside each action.
const MAX_ENTRIES: usize = 4 * MAX_STEPS;

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

impl TrajectoryFormat {
    pub const ALL: [TrajectoryFormat; 3] = [Self::SweAgent, Self::OpenHands, Self::Steps];

    /// The name the API uses (`?format=`, and in the stored trajectory).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SweAgent => "swe_agent",
            Self::OpenHands => "open_hands",
            Self::Steps => "steps",
        }
    }

    /// The format named `name`, if any.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }
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
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
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
        return Err(err(format!("more than {MAX_STEPS} steps")));
    }
    if raw.is_empty() {
        return Err(err("no steps: the trajectory holds no action"));
    }
    let capped = raw.iter().filter(|r| r.capped).count() as u32;
    let steps: Vec<Step> = raw
        .into_iter()
        .enumerate()
        .map(|(i, r)| Step {
            index: i as u32,
            action: r.action,
            input: r.input,
            output: r.output,
            output_bytes: r.output_bytes,
            thought: r.thought.filter(|t| !t.trim().is_empty()),
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
            cost_usd: r.cost_usd,
            at: r.at,
            seconds: r.seconds,
        })
        .collect();
    let sum_i = |f: fn(&Step) -> Option<i64>| steps.iter().filter_map(f).reduce(i64::saturating_add);
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

/// The shape `text` has: a list is OpenHands'; an object whose first line
/// is a whole object is a line of steps, unless it is a one-line `.traj`
/// (it has `trajectory`); an object spanning lines is a `.traj`. Nothing is
/// kept of what the probe reads.
pub fn detect(text: &str) -> Result<TrajectoryFormat, TrajectoryError> {
    #[derive(Deserialize)]
    struct Probe {
        trajectory: Option<serde::de::IgnoredAny>,
    }
    let start = text.trim_start();
    if start.starts_with('[') {
        return Ok(TrajectoryFormat::OpenHands);
    }
    if start.starts_with('{') {
        let first = start.lines().next().unwrap_or_default();
        return Ok(match serde_json::from_str::<Probe>(first) {
            Ok(Probe { trajectory: Some(_) }) | Err(_) => TrajectoryFormat::SweAgent,
            Ok(Probe { trajectory: None }) => TrajectoryFormat::Steps,
        });
    }
    Err(err("not a trajectory: expected a SWE-agent .traj object, an OpenHands event list or JSON Lines of steps"))
}

/// A JSON list read entry by entry, refused past [`MAX_ENTRIES`] entries
/// before more are read.
struct Bounded<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Bounded<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Entries<T> {
            type Value = Bounded<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a list of at most {MAX_ENTRIES} entries")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = seq.next_element()? {
                    if out.len() == MAX_ENTRIES {
                        return Err(serde::de::Error::custom(format!("more than {MAX_ENTRIES} entries")));
                    }
                    out.push(x);
                }
                Ok(Bounded(out))
            }
        }
        d.deserialize_seq(Entries(std::marker::PhantomData))
    }
}

/// A step as a format gives it, its input and output already capped.
#[derive(Default)]
struct RawStep {
    action: String,
    input: String,
    output: String,
    output_bytes: u64,
    capped: bool,
    thought: Option<String>,
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
    cost_usd: Option<f64>,
    at: Option<DateTime<Utc>>,
    seconds: Option<f64>,
}

impl RawStep {
    fn new(action: String, input: String, output: String) -> Self {
        let output_bytes = output.len() as u64;
        let (input, cut_in) = cap(input, INPUT_CAP);
        let (output, cut_out) = cap(output, OUTPUT_CAP);
        Self { action, input, output, output_bytes, capped: cut_in || cut_out, ..Self::default() }
    }
}

#[derive(Default)]
struct Totals {
    cost_usd: Option<f64>,
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
}

/// SWE-agent: the action's first word is the tool, the rest its input.
fn swe_agent(text: &str) -> Result<(Vec<RawStep>, Totals), TrajectoryError> {
    #[derive(Deserialize)]
    struct Traj {
        trajectory: Bounded<SweStep>,
        #[serde(default)]
        info: Option<Info>,
    }
    #[derive(Deserialize)]
    struct SweStep {
        action: String,
        #[serde(default)]
        observation: Option<String>,
        #[serde(default)]
        thought: Option<String>,
        #[serde(default)]
        execution_time: Option<f64>,
    }
    #[derive(Deserialize)]
    struct Info {
        #[serde(default)]
        model_stats: Option<Stats>,
    }
    #[derive(Deserialize)]
    struct Stats {
        instance_cost: Option<f64>,
        tokens_sent: Option<i64>,
        tokens_received: Option<i64>,
    }
    let t: Traj = serde_json::from_str(text).map_err(|e| err(format!("SWE-agent .traj: {e}")))?;
    let out = t
        .trajectory
        .0
        .into_iter()
        .map(|s| {
            let action = s.action.trim_end();
            let (tool, input) = action.split_once(char::is_whitespace).unwrap_or((action, ""));
            RawStep {
                thought: s.thought,
                seconds: s.execution_time,
                ..RawStep::new(tool.to_owned(), input.trim().to_owned(), s.observation.unwrap_or_default())
            }
        })
        .collect();
    let stats = t.info.and_then(|i| i.model_stats);
    let totals = Totals {
        cost_usd: stats.as_ref().and_then(|s| s.instance_cost),
        tokens_in: stats.as_ref().and_then(|s| s.tokens_sent),
        tokens_out: stats.as_ref().and_then(|s| s.tokens_received),
    };
    Ok((out, totals))
}

/// OpenHands: each agent action is a step; its observation (the event whose
/// `cause` is the action's id) its output. Cost and tokens per step are the
/// differences of the accumulated `llm_metrics` (a step without them has
/// none, and the next step's difference holds its part; a total that falls
/// starts again, as a delegate's own metrics do).
fn open_hands(text: &str) -> Result<Vec<RawStep>, TrajectoryError> {
    #[derive(Deserialize)]
    struct Event {
        #[serde(default)]
        id: Option<i64>,
        #[serde(default)]
        timestamp: Option<String>,
        #[serde(default)]
        source: Option<String>,
        #[serde(default)]
        action: Option<String>,
        #[serde(default)]
        observation: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        cause: Option<i64>,
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        args: Option<Args>,
        #[serde(default)]
        llm_metrics: Option<Metrics>,
    }
    /// The arguments that tell one action from another (a file's edits by
    /// what they replace, its views by their range).
    #[derive(Deserialize, Default)]
    struct Args {
        command: Option<String>,
        code: Option<String>,
        path: Option<String>,
        file_text: Option<String>,
        old_str: Option<String>,
        new_str: Option<String>,
        insert_line: Option<i64>,
        view_range: Option<[i64; 2]>,
        start: Option<i64>,
        end: Option<i64>,
        content: Option<String>,
        url: Option<String>,
        final_thought: Option<String>,
        thought: Option<String>,
    }
    #[derive(Deserialize)]
    struct Metrics {
        accumulated_cost: Option<f64>,
        accumulated_token_usage: Option<Usage>,
    }
    #[derive(Deserialize)]
    struct Usage {
        prompt_tokens: Option<i64>,
        completion_tokens: Option<i64>,
    }
    let events: Bounded<Event> = serde_json::from_str(text).map_err(|e| err(format!("OpenHands events: {e}")))?;
    let mut outputs: std::collections::HashMap<i64, String> = std::collections::HashMap::new();
    for e in &events.0 {
        if let (Some(cause), Some(_)) = (e.cause, &e.observation) {
            outputs.entry(cause).or_insert_with(|| e.content.clone().unwrap_or_default());
        }
    }
    // The change of an accumulated figure since the last step that had it.
    fn delta<T: Copy + PartialOrd + std::ops::Sub<Output = T>>(now: Option<T>, last: &mut Option<T>) -> Option<T> {
        let now = now?;
        let d = match *last {
            Some(l) if now >= l => now - l,
            _ => now,
        };
        *last = Some(now);
        Some(d)
    }
    let (mut cost, mut tin, mut tout) = (None::<f64>, None::<i64>, None::<i64>);
    let mut out = Vec::new();
    for (i, e) in events.0.into_iter().enumerate() {
        let Some(action) = e.action else { continue };
        if e.source.as_deref() != Some("agent") {
            continue;
        }
        let args = e.args.unwrap_or_default();
        let mut input: Vec<String> =
            [args.command, args.code, args.path, args.file_text, args.content, args.url, args.final_thought]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect();
        for (name, value) in [("old_str", args.old_str), ("new_str", args.new_str)] {
            if let Some(v) = value {
                input.push(format!("{name}: {v}"));
            }
        }
        for (name, value) in [("insert_line", args.insert_line), ("start", args.start), ("end", args.end)] {
            if let Some(v) = value {
                input.push(format!("{name}: {v}"));
            }
        }
        if let Some([a, b]) = args.view_range {
            input.push(format!("view_range: {a}-{b}"));
        }
        let metrics = e.llm_metrics;
        let usage = metrics.as_ref().and_then(|m| m.accumulated_token_usage.as_ref());
        let id = e.id.unwrap_or(i as i64);
        let output = outputs.remove(&id).unwrap_or_default();
        out.push(RawStep {
            thought: args.thought,
            tokens_in: delta(usage.and_then(|u| u.prompt_tokens), &mut tin),
            tokens_out: delta(usage.and_then(|u| u.completion_tokens), &mut tout),
            cost_usd: delta(metrics.as_ref().and_then(|m| m.accumulated_cost), &mut cost)
                .map(|d| (d * 1e6).round() / 1e6),
            at: e.timestamp.as_deref().and_then(parse_time),
            ..RawStep::new(action, input.join("\n"), output)
        });
        if out.len() > MAX_STEPS {
            break;
        }
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
        if out.len() == MAX_STEPS {
            return Err(err(format!("more than {MAX_STEPS} steps")));
        }
        let l: Line = serde_json::from_str(line).map_err(|e| err(format!("line {}: {e}", n + 1)))?;
        out.push(RawStep {
            thought: l.thought,
            tokens_in: l.tokens_in,
            tokens_out: l.tokens_out,
            cost_usd: l.cost_usd,
            at: l.at,
            seconds: l.seconds,
            ..RawStep::new(l.action, l.input, l.output)
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
        // An action without input (scrolling, thinking) repeats as a matter of course.
        if steps[i].input.trim().is_empty() {
            i += 1;
            continue;
        }
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

    /// What a hostile upload tries: more steps than kept (refused while
    /// reading, before they are held), more entries than kept, sums past
    /// `i64`, no steps, a byte-order mark.
    #[test]
    fn limits_hold_while_reading() {
        let line = "{\"action\": \"a\", \"input\": \"x\"}\n";
        let too_many = parse(&line.repeat(MAX_STEPS + 1), None, None).unwrap_err().0;
        assert_eq!(too_many, format!("more than {MAX_STEPS} steps"));
        assert_eq!(parse(&line.repeat(MAX_STEPS), None, None).unwrap().steps.len(), MAX_STEPS);
        let events = format!("[{}{{}}]", "{},".repeat(MAX_ENTRIES));
        assert!(parse(&events, None, None).unwrap_err().0.contains(&format!("more than {MAX_ENTRIES} entries")));
        let huge = format!("{{\"action\": \"a\", \"tokens_in\": {}}}\n", i64::MAX).repeat(2);
        assert_eq!(parse(&huge, None, None).unwrap().tokens_in, Some(i64::MAX), "the sum saturates");
        assert!(parse("[]", None, None).unwrap_err().0.starts_with("no steps"));
        assert!(parse("\u{feff}{\"action\": \"a\"}\n", None, None).is_ok(), "a byte-order mark is skipped");
    }

    /// Edits of one file that replace different text are different actions;
    /// actions without input (scrolling) are no loop however often they run.
    #[test]
    fn repeated_tools_with_different_arguments_are_no_loop() {
        let edit = |old: &str| {
            serde_json::json!({"id": 1, "source": "agent", "action": "edit",
                "args": {"path": "/w/a.py", "command": "str_replace", "old_str": old, "new_str": "y"}})
        };
        let events = serde_json::json!([edit("a"), edit("b"), edit("c")]).to_string();
        assert!(parse(&events, None, None).unwrap().loops.is_empty());
        let events = serde_json::json!([edit("a"), edit("a"), edit("a")]).to_string();
        assert_eq!(parse(&events, None, None).unwrap().loops.len(), 1);
        let scrolls = "{\"action\": \"scroll_down\"}\n".repeat(5);
        assert!(parse(&scrolls, None, None).unwrap().loops.is_empty());
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
        let not_a_list = parse("{\"trajectory\": 3}", Some(TrajectoryFormat::SweAgent), None).unwrap_err().0;
        assert!(not_a_list.starts_with("SWE-agent .traj:") && not_a_list.contains("expected a list"), "{not_a_list}");
        assert!(parse("[{]", None, None).unwrap_err().0.starts_with("OpenHands events:"));
    }
}
