//! The domain's closed vocabularies (docs/domain.md), each with `as_str`/`FromStr`
//! so the database, the URL query and the JSON all spell them one way.

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        // By hand through `as_str`/`FromStr` rather than derived: one
        // spelling, and a fraction of the derive's code in the dashboard.
        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let s = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                s.parse().map_err(|_| ::serde::de::Error::unknown_variant(&s, &[$($s),+]))
            }
        }

        // The OpenAPI schema: a string, one of the spellings.
        #[cfg(feature = "openapi")]
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($s),+]))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::ToSchema for $name {}

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::error::ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($s => Ok($name::$variant),)+
                    _ => Err($crate::error::ParseEnumError {
                        what: $what,
                        value: s.to_owned(),
                        expected: [$($s),+].join(", "),
                    }),
                }
            }
        }
    };
}

pub(crate) use string_enum;

string_enum!(
    /// Where the triage rule sends a report.
    Route, "route" {
        HumanFirst => "human_first",
        AgentFirst => "agent_first",
        Hypothesis => "hypothesis",
    }
);

string_enum!(
    /// What a report is about: harness and plumbing, patch logic, or unclear.
    Category, "category" {
        Harness => "harness",
        PatchLogic => "patch_logic",
        Unknown => "unknown",
    }
);

string_enum!(
    /// How a candidate is graded for a report.
    OracleKind, "oracle kind" {
        FailToPass => "fail_to_pass",
        CrashSignature => "crash_signature",
        LlmJudge => "llm_judge",
        None => "none",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for OracleKind {
    fn default() -> Self {
        OracleKind::None
    }
}

impl OracleKind {
    /// Deterministic oracles grade by execution; the others do not.
    pub const fn is_deterministic(self) -> bool {
        matches!(self, OracleKind::FailToPass | OracleKind::CrashSignature)
    }
}

string_enum!(
    /// Where a deterministic oracle came from.
    OracleSource, "oracle source" {
        InPatchTest => "in_patch_test",
        Authored => "authored",
        Reporter => "reporter",
        Derived => "derived",
    }
);

string_enum!(
    /// What an attempt is for. Figures are computed per goal.
    Goal, "goal" {
        Reproduce => "reproduce",
        Fix => "fix",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for Goal {
    fn default() -> Self {
        Goal::Reproduce
    }
}

string_enum!(
    /// The outcome of an attempt (docs/domain.md, "Verdicts and what counts").
    Verdict, "verdict" {
        Reproduced => "reproduced",
        Confirmed => "confirmed",
        Lead => "lead",
        NotReproduced => "not_reproduced",
        Hypothesis => "hypothesis",
        Error => "error",
        Resolved => "resolved",
        Unresolved => "unresolved",
    }
);

impl Verdict {
    /// Graded: anything but `hypothesis` and `error`. A lead is graded (an LLM
    /// judged it) but does not count.
    pub const fn is_graded(self) -> bool {
        !matches!(self, Verdict::Hypothesis | Verdict::Error)
    }

    /// Whether the verdict itself is a success for `goal`, before any review rule.
    pub const fn is_success_for(self, goal: Goal) -> bool {
        match goal {
            Goal::Reproduce => matches!(self, Verdict::Reproduced | Verdict::Confirmed),
            Goal::Fix => matches!(self, Verdict::Resolved),
        }
    }

    /// Whether an attempt with `goal` may carry this verdict.
    pub const fn allowed_for(self, goal: Goal) -> bool {
        match goal {
            Goal::Reproduce => !matches!(self, Verdict::Resolved | Verdict::Unresolved),
            Goal::Fix => matches!(self, Verdict::Resolved | Verdict::Unresolved | Verdict::Error),
        }
    }

    /// Higher is better; a report's best verdict is its attempts' highest.
    pub const fn rank(self) -> u8 {
        match self {
            Verdict::Reproduced => 8,
            Verdict::Confirmed => 7,
            Verdict::Resolved => 6,
            Verdict::Lead => 5,
            Verdict::NotReproduced => 4,
            Verdict::Unresolved => 3,
            Verdict::Hypothesis => 2,
            Verdict::Error => 1,
        }
    }
}

string_enum!(
    /// Who or what decided a verdict.
    VerdictSource, "verdict source" {
        Deterministic => "deterministic",
        Llm => "llm",
        Human => "human",
    }
);

string_enum!(
    /// A maintainer's decision on an attempt's verdict.
    Review, "review" {
        Accepted => "accepted",
        Rejected => "rejected",
    }
);

string_enum!(
    /// Why an attempt failed (after BugCraft's taxonomy).
    FailureCause, "failure cause" {
        PoorDecision => "poor_decision",
        StuckInLoop => "stuck_in_loop",
        EnvSetup => "env_setup",
        Timeout => "timeout",
        WrongFailure => "wrong_failure",
        NoFailure => "no_failure",
        Other => "other",
    }
);

string_enum!(
    /// Where a report stands in triage, derived from its attempts.
    ReportStatus, "status" {
        New => "new",
        InProgress => "in_progress",
        NeedsReview => "needs_review",
        Reproduced => "reproduced",
        NotReproduced => "not_reproduced",
        /// Reproduced, found fixed by a re-check on a release, then failing
        /// again on a later one; until a later re-check finds it fixed.
        Regressed => "regressed",
        /// Closed by a maintainer.
        Closed => "closed",
        /// A maintainer found it a duplicate of another report.
        Duplicate => "duplicate",
        /// A maintainer decided not to fix it.
        WontFix => "wont_fix",
        /// Not a bug: a maintainer said so, or its upstream labels or type do
        /// (`not_a_bug_labels`) and no reproduction says otherwise.
        NotABug => "not_a_bug",
        /// Closed upstream before failpass reproduced it or found it not reproducible.
        ClosedUpstream => "closed_upstream",
    }
);

impl ReportStatus {
    /// A report that left the backlog without a verdict (closed, duplicate, …).
    pub const fn is_resolved(self) -> bool {
        matches!(self, Self::Closed | Self::Duplicate | Self::WontFix | Self::NotABug | Self::ClosedUpstream)
    }
}

string_enum!(
    /// A report's state in its upstream tracker.
    UpstreamState, "upstream state" {
        Open => "open",
        Closed => "closed",
        /// A pull request merged upstream.
        Merged => "merged",
    }
);

string_enum!(
    /// Why a report left the backlog without a verdict. A maintainer's
    /// resolution stands over everything; one read from upstream (closed
    /// there, or labelled not a bug) stands only until failpass reproduces
    /// the report or grades it not reproduced.
    Resolution, "resolution" {
        Closed => "closed",
        Duplicate => "duplicate",
        WontFix => "wont_fix",
        NotABug => "not_a_bug",
        ClosedUpstream => "closed_upstream",
    }
);

string_enum!(
    /// Where a verification signal's value came from.
    SignalSource, "signal source" {
        Static => "static",
        Deterministic => "deterministic",
        Llm => "llm",
        Human => "human",
    }
);

string_enum!(
    /// What started a run.
    RunTrigger, "trigger" {
        Initial => "initial",
        Rerun => "rerun",
        Scheduled => "scheduled",
    }
);

string_enum!(
    /// Which side of a fail-to-pass check a run executed on.
    RunEnvironment, "environment" {
        Buggy => "buggy",
        Fixed => "fixed",
        /// A newer release a reproduced report is re-checked against.
        Release => "release",
    }
);

string_enum!(
    /// How `/api/v1/figures` groups its rows.
    GroupBy, "group_by" {
        None => "none",
        Project => "project",
        Route => "route",
        Agent => "agent",
        Model => "model",
        Category => "category",
        Cutoff => "cutoff",
        Week => "week",
        /// The calendar month (UTC) an attempt started in, `YYYY-MM`.
        Month => "month",
        Vagueness => "vagueness",
    }
);

string_enum!(
    /// Where a job stands (docs/job-queue.md has the state diagram).
    JobStatus, "job status" {
        Queued => "queued",
        Running => "running",
        Done => "done",
        Failed => "failed",
        Cancelled => "cancelled",
    }
);

string_enum!(
    /// What a job does.
    JobKind, "job kind" {
        /// Grade one attempt's candidate on buggy and fixed.
        Verify => "verify",
        /// Re-check a reproduced report's attempt against another environment.
        Recheck => "recheck",
        /// Run the refine loop for a report: generate, verify, feed back.
        Refine => "refine",
        /// Build an environment's recipe now and keep its log ("build now").
        Build => "build",
        /// Validate a maintainer's draft oracle on buggy and fixed.
        Oracle => "oracle",
        /// Post one change to one outgoing webhook.
        Deliver => "deliver",
        /// Run a report's reproduction on the releases after its buggy one to find the first that passes.
        Bisect => "bisect",
    }
);

string_enum!(
    /// How an environment build asked for on the set-up page went.
    BuildStatus, "build status" {
        Running => "running",
        /// Built by this build.
        Built => "built",
        /// Already built from the same recipe: the cached build's log.
        Cached => "cached",
        Failed => "failed",
    }
);

string_enum!(
    /// An environment's part in grading.
    EnvironmentRole, "environment role" {
        Buggy => "buggy",
        Fixed => "fixed",
        /// A newer release that reproduced reports are re-checked against.
        Release => "release",
    }
);

string_enum!(
    /// What re-checking a reproduced attempt against a newer release found.
    RecheckOutcome, "re-check outcome" {
        /// The candidate still fails there: the bug is still in the release.
        StillReproduces => "still_reproduces",
        /// It passes there: the release fixed the bug.
        NoLongerReproduces => "no_longer_reproduces",
        /// It fails again after an earlier re-check found it fixed.
        Regressed => "regressed",
        /// The repeats disagreed.
        Flaky => "flaky",
        /// The release's environment could not be built.
        Error => "error",
    }
);

impl RecheckOutcome {
    /// The outcome of `failed` failing runs out of `runs`, given whether the
    /// previous re-check found the bug fixed.
    pub fn of(failed: u32, runs: u32, was_fixed: bool) -> Self {
        match (failed == runs, failed == 0) {
            (true, _) if was_fixed => RecheckOutcome::Regressed,
            (true, _) => RecheckOutcome::StillReproduces,
            (_, true) => RecheckOutcome::NoLongerReproduces,
            _ => RecheckOutcome::Flaky,
        }
    }
}

string_enum!(
    /// Why a refine loop stopped.
    RefineStop, "refine stop" {
        /// A candidate reproduced the bug.
        Reproduced => "reproduced",
        /// A candidate, or its failure, repeated.
        StuckInLoop => "stuck_in_loop",
        /// The generator had no further candidate.
        NoCandidate => "no_candidate",
        /// The generator failed.
        GeneratorFailed => "generator_failed",
        /// A candidate could not be graded (an `error` verdict).
        Error => "error",
        /// The try budget ran out.
        Budget => "budget",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for RunTrigger {
    fn default() -> Self {
        RunTrigger::Initial
    }
}

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for GroupBy {
    fn default() -> Self {
        GroupBy::None
    }
}

impl GroupBy {
    /// Groups keyed by an attempt property: a report belongs to every group one
    /// of its attempts falls in, and reports without attempts belong to none.
    pub const fn is_per_attempt(self) -> bool {
        matches!(self, GroupBy::Agent | GroupBy::Model | GroupBy::Cutoff | GroupBy::Week | GroupBy::Month)
    }
}

/// Whether an attempt counts towards the reproduction (or resolution) figures.
///
/// The verdict must be a success for the goal; a maintainer's rejection
/// cancels it; and on a report flagged `vague` a human must have accepted a
/// reproduction (or a human produced it) before it counts: with a vague
/// report nobody can tell whether the failure shown is the one meant. A
/// `fix` is graded by the oracle's own tests, so the flag does not hold it.
pub fn attempt_counts(
    goal: Goal,
    verdict: Verdict,
    source: VerdictSource,
    review: Option<Review>,
    report_vague: bool,
) -> bool {
    if !verdict.is_success_for(goal) || review == Some(Review::Rejected) {
        return false;
    }
    !report_vague || goal == Goal::Fix || source == VerdictSource::Human || review == Some(Review::Accepted)
}

/// Whether an attempt is waiting for a maintainer: an unreviewed lead, or an
/// unreviewed success on a vague report.
pub fn attempt_awaits_review(
    goal: Goal,
    verdict: Verdict,
    source: VerdictSource,
    review: Option<Review>,
    report_vague: bool,
) -> bool {
    review.is_none()
        && (verdict == Verdict::Lead
            || (report_vague
                && goal == Goal::Reproduce
                && verdict.is_success_for(goal)
                && source != VerdictSource::Human))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_through_strings() {
        for v in Verdict::ALL {
            assert_eq!(v.as_str().parse::<Verdict>().unwrap(), *v);
            assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{}\"", v.as_str()));
        }
        for g in GroupBy::ALL {
            assert_eq!(g.as_str().parse::<GroupBy>().unwrap(), *g);
        }
    }

    #[test]
    fn unknown_value_names_what_and_choices() {
        let err = "reproducd".parse::<Verdict>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("verdict"), "{msg}");
        assert!(msg.contains("reproducd"), "{msg}");
        assert!(msg.contains("not_reproduced"), "{msg}");
    }

    #[test]
    fn graded_excludes_hypothesis_and_error_only() {
        let graded: Vec<_> = Verdict::ALL.iter().filter(|v| v.is_graded()).collect();
        assert_eq!(graded.len(), Verdict::ALL.len() - 2);
        assert!(Verdict::Lead.is_graded());
        assert!(!Verdict::Error.is_graded());
    }

    #[test]
    fn counting_rules() {
        use Goal::*;
        use Verdict::*;
        use VerdictSource::*;
        assert!(attempt_counts(Reproduce, Reproduced, Deterministic, None, false));
        assert!(attempt_counts(Reproduce, Confirmed, Llm, Some(Review::Accepted), false));
        assert!(!attempt_counts(Reproduce, Lead, Llm, None, false));
        assert!(!attempt_counts(Reproduce, Resolved, Deterministic, None, false));
        assert!(attempt_counts(Fix, Resolved, Deterministic, None, false));
        // vague: a human must accept before it counts
        assert!(!attempt_counts(Reproduce, Reproduced, Deterministic, None, true));
        assert!(attempt_counts(Reproduce, Reproduced, Deterministic, Some(Review::Accepted), true));
        assert!(attempt_counts(Reproduce, Reproduced, Human, None, true));
        assert!(attempt_counts(Fix, Resolved, Deterministic, None, true), "a fix is graded by the tests, vague or not");
        // a rejection cancels a success
        assert!(!attempt_counts(Reproduce, Reproduced, Deterministic, Some(Review::Rejected), false));
    }
}

string_enum!(
    /// A user's role in one project (an admin's global role covers every project).
    ProjectRole, "role" {
        /// Writes reports, attempts, reviews and reruns, and manages the project's tokens.
        Maintainer => "maintainer",
        /// Reads the project, also when it is private.
        Viewer => "viewer",
    }
);

string_enum!(
    /// What an API token may do.
    TokenScope, "scope" {
        /// Creates attempts and runs in its project.
        Agent => "agent",
        /// An agent's rights, plus imports and JUnit uploads.
        Ci => "ci",
        /// Reads its project.
        Read => "read",
        /// A personal token: acts as the user it belongs to (for scripts and the command line).
        User => "user",
    }
);
