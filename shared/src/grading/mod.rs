//! Fail-to-pass grading (docs/domain.md, "Grading"):
//! pure rules over what runs observed, so the runner, the tests and the
//! dashboard agree on what a set of runs means.

use serde::{Deserialize, Serialize};

use crate::model::{EnvironmentRole, FailureCause, OracleKind, Verdict};
use crate::routing::exception_line;

mod record;
pub use record::{EnvironmentUsed, GradeRecord, Recheck, RefineIteration, RefineLog, RunCounts, SetupFailure, Sides};

/// What one run of a candidate showed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Observation {
    pub exit_status: Option<i32>,
    pub timed_out: bool,
    pub output: String,
    pub failing_tests: Vec<String>,
    pub passing_tests: Vec<String>,
}

/// The parts of an oracle grading needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Criteria {
    pub kind: OracleKind,
    /// Tests that must fail on buggy and pass on fixed (empty: the exit status decides).
    pub fail_to_pass: Vec<String>,
    /// Tests that must keep passing on fixed.
    pub pass_to_pass: Vec<String>,
    /// The expected failure, for `crash_signature` oracles.
    pub signature: Option<String>,
    /// The report describes a hang, so a timeout on buggy counts as failing.
    pub expects_hang: bool,
}

/// The outcome of grading a candidate's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Grade {
    pub verdict: Verdict,
    /// Repeats on one side disagreed.
    pub flaky: bool,
    pub buggy_failed: u32,
    pub buggy_runs: u32,
    pub fixed_passed: u32,
    pub fixed_runs: u32,
    /// `pass_to_pass` tests failing on fixed.
    pub new_failures: Vec<String>,
    /// One sentence saying why, for the report page and the refine loop's feedback.
    pub reason: String,
}

/// Why an attempt cannot be graded by execution (verified at intake, rerun,
/// or run by a worker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unverifiable {
    /// The report has no deterministic oracle to grade by.
    NoOracle,
    /// The attempt has no candidate and the oracle no command: nothing to run.
    NothingToRun,
    /// The oracle's command runs the candidate, and the attempt has none.
    NoCandidate { command: String },
    /// The report's project has no buggy and fixed environment to run in.
    NoEnvironments,
}

impl std::fmt::Display for Unverifiable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unverifiable::NoOracle => f.write_str("the report has no deterministic oracle to grade by"),
            Unverifiable::NothingToRun => {
                f.write_str("nothing to run: the attempt has no candidate and the oracle no command")
            }
            Unverifiable::NoCandidate { command } => {
                write!(f, "the oracle's command `{command}` runs the candidate, and the attempt has none")
            }
            Unverifiable::NoEnvironments => f.write_str("the project has no buggy and fixed environment to run in"),
        }
    }
}

/// May an attempt be graded by execution, and if not, why not: its report's
/// oracle (kind and command), whether it has a candidate, and the roles of
/// its project's environments. The route, the storage's selection of rerun
/// targets and the runner all ask this.
pub fn verifiable(
    oracle: Option<(OracleKind, Option<&str>)>,
    has_candidate: bool,
    roles: &[EnvironmentRole],
) -> Result<(), Unverifiable> {
    let Some((_, command)) = oracle.filter(|(kind, _)| kind.is_deterministic()) else {
        return Err(Unverifiable::NoOracle);
    };
    match command {
        _ if has_candidate => {}
        None => return Err(Unverifiable::NothingToRun),
        Some(c) if c.contains("candidate") => return Err(Unverifiable::NoCandidate { command: c.to_owned() }),
        Some(_) => {}
    }
    if !(roles.contains(&EnvironmentRole::Buggy) && roles.contains(&EnvironmentRole::Fixed)) {
        return Err(Unverifiable::NoEnvironments);
    }
    Ok(())
}

/// Whether a run counts as failing under the criteria: listed tests failing,
/// the signature matched, or (with neither) a non-zero exit. A timeout is a
/// failure only when the report describes a hang.
pub fn failed(c: &Criteria, o: &Observation) -> bool {
    if o.timed_out {
        return c.expects_hang;
    }
    if !c.fail_to_pass.is_empty() {
        // Every listed test fails (as SWE-bench grades FAIL_TO_PASS).
        return c.fail_to_pass.iter().all(|t| o.failing_tests.contains(t));
    }
    if let (OracleKind::CrashSignature, Some(sig)) = (c.kind, c.signature.as_deref()) {
        return signature_matches(sig, &o.output);
    }
    o.exit_status != Some(0)
}

/// Whether a run on the fixed side passes: nothing it is graded by fails,
/// listed tests (when there are any) actually ran and passed, no timeout.
pub fn passed(c: &Criteria, o: &Observation) -> bool {
    if o.timed_out {
        return false;
    }
    if !c.fail_to_pass.is_empty() {
        return c.fail_to_pass.iter().all(|t| o.passing_tests.contains(t) && !o.failing_tests.contains(t));
    }
    if let (OracleKind::CrashSignature, Some(sig)) = (c.kind, c.signature.as_deref()) {
        return !signature_matches(sig, &o.output) && o.exit_status == Some(0);
    }
    o.exit_status == Some(0)
}

/// Grades repeated runs on buggy and fixed. `reproduced` exactly when every
/// buggy run failed, every fixed run passed, and no `pass_to_pass` test
/// failed on fixed; a split within a side is `flaky` (and not reproduced).
pub fn grade(c: &Criteria, buggy: &[Observation], fixed: &[Observation]) -> Grade {
    let buggy_failed = buggy.iter().filter(|o| failed(c, o)).count() as u32;
    let fixed_passed = fixed.iter().filter(|o| passed(c, o)).count() as u32;
    let (nb, nf) = (buggy.len() as u32, fixed.len() as u32);
    let mut new_failures: Vec<String> =
        c.pass_to_pass.iter().filter(|t| fixed.iter().any(|o| o.failing_tests.contains(t))).cloned().collect();
    new_failures.dedup();
    // A pass_to_pass test that fails in some fixed repeats but not all is a split too.
    let p2p_split = c.pass_to_pass.iter().any(|t| {
        let failing = fixed.iter().filter(|o| o.failing_tests.contains(t)).count();
        failing > 0 && failing < fixed.len()
    });
    let flaky = (buggy_failed > 0 && buggy_failed < nb) || (fixed_passed > 0 && fixed_passed < nf) || p2p_split;
    let reproduced = nb > 0 && nf > 0 && buggy_failed == nb && fixed_passed == nf && new_failures.is_empty();
    let reason = if nb == 0 || nf == 0 {
        "no runs on one side: nothing to grade".to_owned()
    } else if reproduced {
        format!("fails on buggy ({buggy_failed} of {nb}) and passes on fixed ({fixed_passed} of {nf})")
    } else if !new_failures.is_empty() {
        format!("breaks tests that must keep passing on fixed: {}", new_failures.join(", "))
    } else if buggy_failed < nb {
        match (buggy_failed, buggy.iter().any(|o| o.timed_out && !c.expects_hang)) {
            (_, true) => {
                format!("timed out on buggy ({buggy_failed} of {nb} failed), and the report describes no hang")
            }
            (0, _) => match c.signature.as_deref().filter(|_| c.kind == OracleKind::CrashSignature) {
                Some(sig) if buggy.iter().any(|o| o.exit_status.is_some_and(|s| s != 0)) => {
                    format!("fails on buggy, but not with the reported failure `{sig}`")
                }
                _ => "does not fail on buggy: the candidate does not show the bug".to_owned(),
            },
            _ => format!("fails on buggy only {buggy_failed} of {nb} times (flaky)"),
        }
    } else {
        format!("also fails on fixed ({} of {nf} passed): it fails for another reason than the bug", fixed_passed)
    };
    Grade {
        verdict: if reproduced { Verdict::Reproduced } else { Verdict::NotReproduced },
        flaky,
        buggy_failed,
        buggy_runs: nb,
        fixed_passed,
        fixed_runs: nf,
        new_failures,
        reason,
    }
}

/// Why a candidate that was graded but did not reproduce failed; `None`
/// when it reproduced.
pub fn failure_cause(g: &Grade, buggy: &[Observation]) -> Option<FailureCause> {
    (g.verdict != Verdict::Reproduced).then(|| {
        if g.flaky {
            FailureCause::Other
        } else if buggy.iter().any(|o| o.timed_out) {
            FailureCause::Timeout
        } else if g.buggy_failed == 0 && buggy.iter().any(|o| o.exit_status != Some(0)) {
            FailureCause::WrongFailure // it fails, but not the way the oracle says
        } else if g.buggy_failed == 0 {
            FailureCause::NoFailure
        } else {
            FailureCause::WrongFailure // fails on fixed too, or breaks other tests
        }
    })
}

/// The distinct failure signatures of a side's runs, first seen first.
pub fn signatures(observed: &[Observation]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in observed.iter().filter_map(|o| failure_signature(&o.output)) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Whether `output` shows the failure `signature` describes: some line of the
/// output, normalised, contains the normalised signature.
pub fn signature_matches(signature: &str, output: &str) -> bool {
    let want = normalize(signature.trim());
    !want.is_empty() && output.lines().any(|l| normalize(l.trim()).contains(&want))
}

/// The failure signature of an output: its last exception line, normalised.
pub fn failure_signature(output: &str) -> Option<String> {
    exception_line(output).map(normalize)
}

/// Masks what varies between occurrences of one failure: shapes (`(3, 4)`,
/// `[2, 5]`) become `<shape>`, hex addresses `<addr>`, paths `<path>`,
/// numbers `<n>`, and runs of spaces one space.
pub fn normalize(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let word_start = |i: usize| i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    while i < chars.len() {
        let c = chars[i];
        // A bracketed list of numbers: a shape.
        if (c == '(' || c == '[') && word_start(i) || (c == '(' || c == '[') && i > 0 && chars[i - 1] == ' ' {
            let close = if c == '(' { ')' } else { ']' };
            if let Some(len) = chars[i + 1..].iter().position(|&x| x == close) {
                let inner: String = chars[i + 1..i + 1 + len].iter().collect();
                let parts: Vec<&str> = inner.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
                if !parts.is_empty() && parts.iter().all(|p| p.parse::<i64>().is_ok()) {
                    out.push_str("<shape>");
                    i += len + 2;
                    continue;
                }
            }
        }
        if c == '0' && chars.get(i + 1) == Some(&'x') && chars.get(i + 2).is_some_and(|d| d.is_ascii_hexdigit()) {
            out.push_str("<addr>");
            i += 2;
            while i < chars.len() && chars[i].is_ascii_hexdigit() {
                i += 1;
            }
            continue;
        }
        if c == '/'
            && (i == 0 || matches!(chars[i - 1], ' ' | '"' | '\'' | '(' | '='))
            && chars.get(i + 1).is_some_and(|n| !n.is_whitespace())
        {
            out.push_str("<path>");
            while i < chars.len() && !matches!(chars[i], ' ' | '"' | '\'' | ')' | ',' | ':') {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() && word_start(i) {
            out.push_str("<n>");
            while i < chars.len() {
                let next_digit = |k: usize| chars.get(k).is_some_and(|d| d.is_ascii_digit());
                if chars[i].is_ascii_digit() || chars[i] == '.' && next_digit(i + 1) {
                    i += 1;
                } else if matches!(chars[i], 'e' | 'E')
                    && (next_digit(i + 1) || matches!(chars.get(i + 1), Some('-' | '+')) && next_digit(i + 2))
                {
                    i += 2;
                } else {
                    break;
                }
            }
            continue;
        }
        if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out.trim().to_owned()
}

/// Words in a report that name code: dotted names (`lib.logsumexp`), calls
/// (`logsumexp(`), snake_case or CamelCase identifiers, exception types.
pub fn code_identifiers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
        let word = raw.trim_matches('.');
        if word.len() < 3 || word.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            continue;
        }
        let codeish = word.contains('_')
            || word.contains('.')
                && word.split('.').all(|p| p.len() >= 2 && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
            || word.chars().skip(1).any(|c| c.is_ascii_uppercase()) && word.chars().any(|c| c.is_ascii_lowercase());
        if codeish {
            for part in std::iter::once(word).chain(word.rsplit('.').next()) {
                if part.len() >= 3 && !out.iter().any(|o| o == part) {
                    out.push(part.to_owned());
                }
            }
        }
    }
    out
}

/// The relevance signal: which of the report's code identifiers the
/// candidate uses. Passes when it uses at least one (or the report names none).
pub fn relevance(report_text: &str, candidate: &str) -> (bool, String) {
    let wanted = code_identifiers(report_text);
    if wanted.is_empty() {
        return (true, "the report names no code identifiers".to_owned());
    }
    let used: Vec<&String> = wanted.iter().filter(|w| candidate.contains(w.as_str())).collect();
    let detail = if used.is_empty() {
        format!(
            "uses none of the report's identifiers ({})",
            wanted.iter().take(6).cloned().collect::<Vec<_>>().join(", ")
        )
    } else {
        format!(
            "uses {} of {} report identifiers: {}",
            used.len(),
            wanted.len(),
            used.iter().take(6).map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        )
    };
    (!used.is_empty(), detail)
}

/// Whether a report describes a hang (so a timeout on buggy is the failure).
pub fn describes_hang(text: &str) -> bool {
    let t = text.to_lowercase();
    ["hang", "hangs", "deadlock", "freezes", "stuck forever", "never returns", "never finishes"]
        .iter()
        .any(|w| t.split(|c: char| !c.is_alphanumeric()).any(|word| word == *w) || (w.contains(' ') && t.contains(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(exit: i32, out: &str) -> Observation {
        Observation { exit_status: Some(exit), output: out.into(), ..Default::default() }
    }

    fn timeout() -> Observation {
        Observation { exit_status: None, timed_out: true, ..Default::default() }
    }

    fn tests(failing: &[&str], passing: &[&str]) -> Observation {
        Observation {
            exit_status: Some(if failing.is_empty() { 0 } else { 1 }),
            failing_tests: failing.iter().map(|s| s.to_string()).collect(),
            passing_tests: passing.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn cmd() -> Criteria {
        Criteria { kind: OracleKind::FailToPass, ..Default::default() }
    }

    #[test]
    fn what_may_be_verified() {
        use EnvironmentRole::{Buggy, Fixed, Release};
        let both = [Buggy, Fixed];
        let f2p = Some((OracleKind::FailToPass, None));
        assert_eq!(verifiable(f2p, true, &both), Ok(()));
        assert_eq!(verifiable(Some((OracleKind::CrashSignature, Some("pytest -x"))), false, &both), Ok(()));
        assert_eq!(verifiable(None, true, &both), Err(Unverifiable::NoOracle));
        assert_eq!(verifiable(Some((OracleKind::LlmJudge, None)), true, &both), Err(Unverifiable::NoOracle));
        assert_eq!(verifiable(f2p, false, &both), Err(Unverifiable::NothingToRun));
        assert_eq!(
            verifiable(Some((OracleKind::FailToPass, Some("python3 candidate.py"))), false, &both),
            Err(Unverifiable::NoCandidate { command: "python3 candidate.py".into() })
        );
        assert_eq!(verifiable(f2p, true, &[Buggy, Release]), Err(Unverifiable::NoEnvironments));
        assert_eq!(verifiable(f2p, true, &[]), Err(Unverifiable::NoEnvironments));
    }

    #[test]
    fn truth_table_for_an_exit_status_oracle() {
        let c = cmd();
        // (buggy exits, fixed exits, verdict, flaky)
        let rows: &[(&[i32], &[i32], Verdict, bool)] = &[
            (&[1], &[0], Verdict::Reproduced, false),
            (&[0], &[0], Verdict::NotReproduced, false), // does not show the bug
            (&[1], &[1], Verdict::NotReproduced, false), // fails for another reason
            (&[0], &[1], Verdict::NotReproduced, false), // backwards
            (&[1, 1, 1], &[0, 0, 0], Verdict::Reproduced, false),
            (&[1, 0, 1], &[0, 0, 0], Verdict::NotReproduced, true),
            (&[1, 1, 1], &[0, 1, 0], Verdict::NotReproduced, true),
            (&[], &[0], Verdict::NotReproduced, false),
        ];
        for (b, f, verdict, flaky) in rows {
            let buggy: Vec<_> = b.iter().map(|e| obs(*e, "")).collect();
            let fixed: Vec<_> = f.iter().map(|e| obs(*e, "")).collect();
            let g = grade(&c, &buggy, &fixed);
            assert_eq!((g.verdict, g.flaky), (*verdict, *flaky), "buggy {b:?} fixed {f:?}: {}", g.reason);
        }
        let g = grade(&c, &[obs(1, ""), obs(0, ""), obs(1, "")], &[obs(0, "")]);
        assert_eq!((g.buggy_failed, g.buggy_runs), (2, 3));
        assert!(g.reason.contains("2 of 3"), "{}", g.reason);
    }

    #[test]
    fn timeouts_fail_only_when_the_report_describes_a_hang() {
        let mut c = cmd();
        let g = grade(&c, &[timeout()], &[obs(0, "")]);
        assert_eq!(g.verdict, Verdict::NotReproduced);
        assert!(g.reason.contains("no hang"), "{}", g.reason);
        c.expects_hang = true;
        assert_eq!(grade(&c, &[timeout()], &[obs(0, "")]).verdict, Verdict::Reproduced);
        assert_eq!(grade(&c, &[timeout()], &[timeout()]).verdict, Verdict::NotReproduced, "a timeout never passes");
        assert!(describes_hang("DataLoader hangs with num_workers=4"));
        assert!(describes_hang("the call never returns"));
        assert!(!describes_hang("change the default"));
    }

    #[test]
    fn listed_tests_and_pass_to_pass() {
        let c = Criteria {
            kind: OracleKind::FailToPass,
            fail_to_pass: vec!["t::a".into()],
            pass_to_pass: vec!["t::b".into()],
            ..Default::default()
        };
        assert_eq!(
            grade(&c, &[tests(&["t::a"], &["t::b"])], &[tests(&[], &["t::a", "t::b"])]).verdict,
            Verdict::Reproduced
        );
        let broke = grade(&c, &[tests(&["t::a"], &["t::b"])], &[tests(&["t::b"], &["t::a"])]);
        assert_eq!((broke.verdict, broke.new_failures.clone()), (Verdict::NotReproduced, vec!["t::b".to_string()]));
        assert!(broke.reason.contains("t::b"));
        // a listed test that did not run on fixed does not pass
        assert_eq!(grade(&c, &[tests(&["t::a"], &[])], &[tests(&[], &["t::b"])]).verdict, Verdict::NotReproduced);
        // another test failing on buggy is not the bug
        assert_eq!(grade(&c, &[tests(&["t::z"], &["t::a"])], &[tests(&[], &["t::a"])]).verdict, Verdict::NotReproduced);
        // a pass_to_pass test failing in one fixed repeat of two: not reproduced, and flaky
        let split = grade(
            &c,
            &[tests(&["t::a"], &[]), tests(&["t::a"], &[])],
            &[tests(&["t::b"], &["t::a"]), tests(&[], &["t::a", "t::b"])],
        );
        assert_eq!((split.verdict, split.flaky), (Verdict::NotReproduced, true));
        // with two listed tests, both must fail on buggy
        let two = Criteria { fail_to_pass: vec!["t::a".into(), "t::c".into()], ..c.clone() };
        assert_eq!(
            grade(&two, &[tests(&["t::a"], &["t::c"])], &[tests(&[], &["t::a", "t::c"])]).verdict,
            Verdict::NotReproduced
        );
        assert_eq!(
            grade(&two, &[tests(&["t::a", "t::c"], &[])], &[tests(&[], &["t::a", "t::c"])]).verdict,
            Verdict::Reproduced
        );
    }

    #[test]
    fn crash_signatures_match_on_normalised_output() {
        let c = Criteria {
            kind: OracleKind::CrashSignature,
            signature: Some("RuntimeError: shape mismatch: (3, 4) vs (4, 3) at 0x7f00aa".into()),
            ..Default::default()
        };
        let buggy = obs(
            1,
            "Traceback (most recent call last):\n  File \"/tmp/x/run.py\", line 3\nRuntimeError: shape mismatch: (5, 2) vs (2, 5) at 0x55d0c0ffee\n",
        );
        assert_eq!(grade(&c, std::slice::from_ref(&buggy), &[obs(0, "ok")]).verdict, Verdict::Reproduced);
        let other = obs(1, "ValueError: shape mismatch: (5, 2) vs (2, 5)\n");
        let g = grade(&c, &[other], &[obs(0, "ok")]);
        assert_eq!(g.verdict, Verdict::NotReproduced, "another exception is another failure");
        assert!(g.reason.contains("not with the reported failure"), "{}", g.reason);
        assert_eq!(
            grade(&c, std::slice::from_ref(&buggy), std::slice::from_ref(&buggy)).verdict,
            Verdict::NotReproduced,
            "still crashing on fixed"
        );
    }

    #[test]
    fn normalisation_masks_what_varies() {
        assert_eq!(
            normalize("ValueError: bad shape (3, 4) at 0xdeadbeef in /home/u/x.py"),
            "ValueError: bad shape <shape> at <addr> in <path>"
        );
        assert_eq!(normalize("loss is nan after 1200 steps, lr=1e-3"), "loss is nan after <n> steps, lr=<n>");
        assert_eq!(normalize("torch.Size([2, 5])  vs   [7]"), "torch.Size(<shape>) vs <shape>");
        assert_eq!(normalize("float32 and int64"), "float32 and int64", "digits inside names stay");
        assert_eq!(
            failure_signature("a\nTraceback:\nOverflowError: math range error (12)\n").as_deref(),
            Some("OverflowError: math range error <shape>")
        );
        assert_eq!(failure_signature("all good"), None);
    }

    #[test]
    fn relevance_is_overlap_with_the_report_identifiers() {
        let report =
            "`fastnum.logsumexp` returns nan for large inputs\n```python\nfastnum.logsumexp([1000.0, 1000.0])\n```";
        let ids = code_identifiers(report);
        assert!(ids.contains(&"fastnum.logsumexp".to_string()) && ids.contains(&"logsumexp".to_string()), "{ids:?}");
        let (ok, detail) = relevance(report, "import fastnum\nprint(fastnum.logsumexp([1e3, 1e3]))");
        assert!(ok, "{detail}");
        assert!(
            !code_identifiers("that is, i.e. the e.g. case").iter().any(|w| w.contains('.')),
            "abbreviations are not code"
        );
        let (ok, detail) = relevance(report, "print(1 + 1)");
        assert!(!ok);
        assert!(detail.contains("none"), "{detail}");
    }
}
