//! JUnit XML (pytest `--junitxml`, Maven Surefire, …) → one run of an attempt:
//! the failing and passing tests, the summed duration, and the failure
//! messages as output (capped, with the cap recorded).

use failpass_shared::model::{RunEnvironment, RunTrigger};
use quick_xml::Reader;
use quick_xml::events::Event;
use tokio::io::AsyncBufRead;

use super::Importer;
use crate::db::{NewRun, StorageError};

/// Bytes of failure text kept in a run's output.
pub const OUTPUT_CAP: usize = 64 * 1024;

#[derive(Debug, Default, PartialEq)]
pub struct Results {
    pub failing: Vec<String>,
    pub passing: Vec<String>,
    pub skipped: u64,
    pub duration_ms: i64,
    pub output: String,
    pub output_bytes: usize,
    /// The first suite's `timestamp`, when it has one (local times are taken as UTC).
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
}

fn attr(e: &quick_xml::events::BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

/// Parses JUnit XML. Test ids are `classname::name`. A document whose root
/// is not `<testsuites>` or `<testsuite>`, or that lists no test case, is an
/// error: it must never pass for a run in which nothing failed.
pub fn parse(xml: &str) -> Result<Results, String> {
    let mut reader = Reader::from_str(xml);
    let mut r = Results::default();
    let mut root: Option<String> = None;
    let mut current: Option<(String, bool, bool)> = None; // (id, failed, skipped)
    let mut in_failure = false;
    loop {
        let event = reader.read_event();
        if root.is_none() {
            match &event {
                Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                    root = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned())
                }
                Ok(Event::Text(t)) if !t.iter().all(|b| b.is_ascii_whitespace()) => {
                    return Err(
                        "not a JUnit XML document: text where its <testsuites> or <testsuite> element should be".into(),
                    );
                }
                _ => {}
            }
            if let Some(name) = &root
                && name != "testsuites"
                && name != "testsuite"
            {
                return Err(format!(
                    "not a JUnit XML document: its root element is <{name}>, not <testsuites> or <testsuite>"
                ));
            }
        }
        match event {
            Err(e) => return Err(format!("XML at byte {}: {e}", reader.buffer_position())),
            Ok(Event::Eof) => break,
            // An open <testcase> waits for its children; a self-closing one passed.
            Ok(Event::Start(e)) if e.name().as_ref() == b"testcase" => current = Some(start_case(&e, &mut r)?),
            Ok(Event::Start(e)) if e.name().as_ref() == b"testsuite" && r.started_at.is_none() => {
                r.started_at = attr(&e, b"timestamp").and_then(|t| parse_timestamp(&t));
            }
            Ok(Event::Empty(e)) if e.name().as_ref() == b"testcase" => {
                let case = start_case(&e, &mut r)?;
                finish(&mut r, Some(case));
            }
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) if matches!(e.name().as_ref(), b"failure" | b"error") => {
                if let Some(c) = current.as_mut() {
                    c.1 = true;
                    let msg = attr(&e, b"message").unwrap_or_default();
                    push_output(&mut r, &format!("{}: {msg}\n", c.0));
                }
                in_failure = true;
            }
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) if e.name().as_ref() == b"skipped" => {
                if let Some(c) = current.as_mut() {
                    c.2 = true;
                }
            }
            Ok(Event::Text(t)) if in_failure => {
                if let Ok(text) = t.decode() {
                    push_output(&mut r, &text);
                }
            }
            Ok(Event::End(e)) => match e.name().as_ref() {
                b"failure" | b"error" => {
                    in_failure = false;
                    push_output(&mut r, "\n");
                }
                b"testcase" => finish(&mut r, current.take()),
                _ => {}
            },
            Ok(_) => {}
        }
    }
    if root.is_none() {
        return Err("not a JUnit XML document: it is empty (expected <testsuites> or <testsuite>)".into());
    }
    if r.failing.is_empty() && r.passing.is_empty() && r.skipped == 0 {
        return Err("the JUnit document lists no test cases, so it says nothing about the run".into());
    }
    // A NUL character (`&#0;`) cannot be stored: it becomes U+FFFD.
    for text in r.failing.iter_mut().chain(r.passing.iter_mut()).chain(std::iter::once(&mut r.output)) {
        if text.contains('\0') {
            *text = text.replace('\0', "\u{FFFD}");
        }
    }
    Ok(r)
}

/// JUnit timestamps: RFC 3339, or ISO 8601 without an offset (Ant, Maven).
fn parse_timestamp(t: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(t)
        .map(|d| d.with_timezone(&chrono::Utc))
        .ok()
        .or_else(|| chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f").ok().map(|d| d.and_utc()))
}

/// A test case's id (`classname::name`), adding its time to the total.
fn start_case(e: &quick_xml::events::BytesStart<'_>, r: &mut Results) -> Result<(String, bool, bool), String> {
    let class = attr(e, b"classname").unwrap_or_default();
    let name = attr(e, b"name").ok_or("a <testcase> has no name")?;
    let secs: f64 = attr(e, b"time").and_then(|t| t.parse().ok()).unwrap_or(0.0);
    r.duration_ms += (secs * 1000.0).round() as i64;
    let id = if class.is_empty() { name } else { format!("{class}::{name}") };
    Ok((id, false, false))
}

fn finish(r: &mut Results, case: Option<(String, bool, bool)>) {
    match case {
        Some((id, true, _)) => r.failing.push(id),
        Some((_, false, true)) => r.skipped += 1,
        Some((id, false, false)) => r.passing.push(id),
        None => {}
    }
}

fn push_output(r: &mut Results, text: &str) {
    r.output_bytes += text.len();
    let room = OUTPUT_CAP.saturating_sub(r.output.len());
    if room > 0 {
        let mut cut = text.len().min(room);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        r.output.push_str(&text[..cut]);
    }
}

/// Stores the file's results as one run of `attempt_id`.
pub async fn import_junit<R: AsyncBufRead + Unpin>(
    importer: &mut Importer<'_>,
    input: R,
    attempt_id: Option<i64>,
    environment: Option<RunEnvironment>,
) -> anyhow::Result<()> {
    let attempt_id = attempt_id.ok_or_else(|| {
        anyhow::anyhow!("JUnit results need the attempt they belong to (`--attempt ID`, or `?attempt=ID` on the API)")
    })?;
    let environment = environment.ok_or_else(|| {
        anyhow::anyhow!(
            "JUnit results need where they ran (`--environment buggy|fixed`, or `?environment=` on the API)"
        )
    })?;
    let text = crate::input::read_document(input, "a JUnit report").await?;
    let r = match parse(&text) {
        Ok(r) => r,
        Err(e) => {
            importer.reject(1, None, e);
            return Ok(());
        }
    };
    let run = NewRun {
        attempt_id,
        trigger: RunTrigger::Initial,
        environment,
        exit_status: Some(if r.failing.is_empty() { 0 } else { 1 }),
        timed_out: false,
        duration_ms: r.duration_ms,
        output_truncated: r.output_bytes > r.output.len(),
        output_bytes: r.output_bytes as i64,
        output: r.output,
        failing_tests: r.failing,
        passing_tests: r.passing,
        runner_id: Some("junit-import".into()),
        started_at: r.started_at,
        iteration: None,
        release: None,
        isolation: None,
    };
    if let Some((field, message)) = importer.may_add_run(attempt_id).await? {
        importer.reject(1, Some(field), message);
        return Ok(());
    }
    match importer.storage().create_run(&run).await {
        Ok((_, outcome)) => importer.count(outcome),
        Err(StorageError::NotFound(what)) => {
            importer.reject(1, Some("attempt".into()), format!("{what} does not exist"))
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_junit_output() {
        let xml = include_str!("../../tests/fixtures/pytest-junit.xml");
        let r = parse(xml).unwrap();
        assert_eq!(r.failing, ["test_ops::test_logsumexp_large", "test_ops::test_errors"]);
        assert_eq!(
            r.passing,
            ["test_ops::test_logsumexp_small", "test_ops::test_sum_axis[1]", "test_ops::test_sum_axis[2]"]
        );
        assert_eq!(r.skipped, 1);
        assert!(r.output.contains("OverflowError: math range error"), "{}", r.output);
        assert!(r.output.contains("ValueError: bad shape (3, 4)"));
        assert_eq!(
            r.started_at,
            Some(
                "2026-12-02T11:18:29Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap()
                    + chrono::Duration::microseconds(95438)
            )
        );
        assert_eq!(parse_timestamp("2024-03-01T10:00:00"), Some("2024-03-01T10:00:00Z".parse().unwrap()));
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn broken_xml_is_an_error_with_a_position() {
        let e = parse("<testsuite><testcase name=\"a\"></testsuite>").unwrap_err();
        assert!(e.starts_with("XML at byte"), "{e}");
        assert!(parse("<testsuite><testcase classname=\"x\"/></testsuite>").unwrap_err().contains("no name"));
    }

    #[test]
    fn what_is_not_junit_is_refused() {
        for (doc, says) in [
            ("", "empty"),
            ("   \n", "empty"),
            ("hello, I am not XML", "text where"),
            ("<html><body>no</body></html>", "root element is <html>"),
            ("<testsuites></testsuites>", "no test cases"),
            ("<?xml version=\"1.0\"?><testsuite name=\"s\"/>", "no test cases"),
        ] {
            let e = parse(doc).unwrap_err();
            assert!(e.contains(says), "{doc:?}: {e}");
        }
        assert!(parse("\u{feff}<testsuite><testcase name=\"a\"/></testsuite>".trim_start_matches('\u{feff}')).is_ok());
    }

    #[test]
    fn output_is_capped_and_the_cap_recorded() {
        let mut r = Results::default();
        push_output(&mut r, &"é".repeat(OUTPUT_CAP));
        assert!(r.output.len() <= OUTPUT_CAP);
        assert_eq!(r.output_bytes, 2 * OUTPUT_CAP);
    }
}
