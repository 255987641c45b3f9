//! `failpass submit`: the client agents and CI run against a failpass
//! server (the same binary). `attempt` sends an agent's candidate for a
//! report; `junit` uploads test results as an attempt's runs. With
//! `--wait`, the verification is followed over server-sent events and the
//! exit code is the verdict, so a CI step can gate on it.
//!
//! Every request is retried with backoff when the server answers 5xx or
//! 429 or cannot be reached; an attempt is idempotent through its key, so a
//! retry after a lost answer stores nothing twice.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use failpass_shared::model::{JobStatus, Verdict};
use serde_json::{Value, json};
use sha2::Digest;

use crate::config::{SubmitArgs, SubmitAttemptArgs, SubmitCommand, SubmitJunitArgs};

/// How long a request (not an event stream) may take before it is tried again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Exit codes of `failpass submit … --wait`.
pub const REPRODUCED: i32 = 0;
pub const NOT_REPRODUCED: i32 = 1;
pub const FAILED: i32 = 2;

/// Runs the command; returns its exit code (errors are printed, code 2).
pub async fn run(args: SubmitArgs) -> i32 {
    match submit(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("failpass: error: {e:#}");
            FAILED
        }
    }
}

async fn submit(args: SubmitArgs) -> anyhow::Result<i32> {
    let client = Client::new(&args)?;
    match &args.command {
        SubmitCommand::Attempt(a) => attempt(&client, a, args.json).await,
        SubmitCommand::Junit(j) => junit(&client, j, args.json).await,
    }
}

/// The server, the token and how often to try.
struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    tries: u32,
}

impl Client {
    fn new(args: &SubmitArgs) -> anyhow::Result<Self> {
        let base = args.server.trim_end_matches('/').to_owned();
        let url = reqwest::Url::parse(&base).with_context(|| format!("--server: `{base}` is not an address"))?;
        if !matches!(url.scheme(), "http" | "https") {
            bail!("--server: `{base}` is not an http or https address");
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("failpass-submit/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        let token = args.token.clone().filter(|t| !t.trim().is_empty());
        Ok(Self { http, base, token, tries: args.tries.max(1) })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t.trim()),
            None => r,
        }
    }

    /// Sends what `request` builds, again after 0.5 s, 1 s, 2 s … (or the
    /// server's `Retry-After`) while the server answers 5xx or 429 or cannot
    /// be reached; any other answer is returned, an error status as an error
    /// naming the server's message.
    async fn send(
        &self,
        what: &str,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> anyhow::Result<reqwest::Response> {
        let mut wait = Duration::from_millis(500);
        for n in 1..=self.tries {
            let last = n == self.tries;
            let pause = match request().send().await {
                Ok(r) if r.status().is_server_error() || r.status() == reqwest::StatusCode::TOO_MANY_REQUESTS => {
                    if last {
                        return Err(refusal(what, r).await);
                    }
                    let after = retry_after(&r).unwrap_or(wait);
                    eprintln!(
                        "failpass: {what}: the server answered {}; trying again in {:.1} s",
                        r.status(),
                        after.as_secs_f64()
                    );
                    after
                }
                Ok(r) if r.status().is_success() => return Ok(r),
                Ok(r) => return Err(refusal(what, r).await),
                Err(e) if !last && (e.is_connect() || e.is_timeout() || e.is_request()) => {
                    eprintln!("failpass: {what}: {} ({e}); trying again in {:.1} s", self.base, wait.as_secs_f64());
                    wait
                }
                Err(e) => return Err(anyhow!(e).context(format!("{what}: {}", self.base))),
            };
            tokio::time::sleep(pause).await;
            wait *= 2;
        }
        unreachable!("the last try returns")
    }
}

/// The server's `Retry-After`, in seconds (at most a minute).
fn retry_after(r: &reqwest::Response) -> Option<Duration> {
    let secs: u64 = r.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs.min(60)))
}

/// An error answer as an error: its status and the server's message.
async fn refusal(what: &str, r: reqwest::Response) -> anyhow::Error {
    let status = r.status();
    let text = r.text().await.unwrap_or_default();
    let message = serde_json::from_str::<failpass_shared::error::ApiErrorBody>(&text)
        .map(|b| b.message)
        .unwrap_or_else(|_| text.chars().take(500).collect());
    anyhow!("{what}: the server answered {status}: {message}")
}

/// A file's text, or standard input's for `-`.
async fn read_text(path: &Path, flag: &str) -> anyhow::Result<String> {
    let bytes = if path == Path::new("-") {
        use tokio::io::AsyncReadExt;
        let mut buf = Vec::new();
        tokio::io::stdin().read_to_end(&mut buf).await.with_context(|| format!("{flag}: standard input"))?;
        buf
    } else {
        tokio::fs::read(path).await.with_context(|| format!("{flag}: {}", path.display()))?
    };
    String::from_utf8(bytes).map_err(|_| anyhow!("{flag}: {} is not UTF-8 text", path.display()))
}

/// The key of an attempt sent without one: a hash of everything it says
/// (one binary writes the same body alike each time), so the same command sent again (a
/// retry after a lost answer) is the same attempt, and an attempt that says
/// anything else (another candidate, cost or time) is another.
fn default_key(body: &Value) -> String {
    let digest = sha2::Sha256::digest(body.to_string().as_bytes());
    format!("submit:{}", &hex::encode(digest)[..32])
}

async fn attempt(client: &Client, a: &SubmitAttemptArgs, as_json: bool) -> anyhow::Result<i32> {
    let verdict: Verdict = a.verdict.parse().map_err(|e| anyhow!("--verdict: {e}"))?;
    let candidate = read_text(&a.candidate, "--candidate").await?;
    let verify = a.verify || a.wait;
    // Read before anything is sent, so a missing file sends nothing.
    let trajectory = match &a.trajectory {
        Some(path) => Some(read_text(path, "--trajectory").await?),
        None => None,
    };
    let mut body = json!({
        "report": {"project": a.project, "external_id": a.report},
        "agent": a.agent,
        "model": a.model,
        "candidate": candidate,
        "cost_usd": a.cost_usd,
        "tokens_in": a.tokens_in,
        "tokens_out": a.tokens_out,
        "wall_seconds": a.wall_seconds,
        "verdict": verdict.as_str(),
        "verdict_source": "llm",
        "verify": verify,
    });
    body["attempt_key"] = Value::String(a.attempt_key.clone().unwrap_or_else(|| default_key(&body)));
    let response = client
        .send("submitting the attempt", || {
            client.request(reqwest::Method::POST, "/api/v1/attempts").timeout(REQUEST_TIMEOUT).json(&body)
        })
        .await?;
    let created = response.status() == reqwest::StatusCode::CREATED;
    let stored: Value = response.json().await.context("reading the stored attempt")?;
    let id = stored["id"].as_i64().ok_or_else(|| anyhow!("the server's answer names no attempt id"))?;
    let how = if created { "stored" } else { "already stored (same key)" };
    let path = format!("/api/v1/attempts/{id}/trajectory");
    // The same command again (a retry, a re-run): the trajectory sent with
    // the attempt the first time stays (a token may add one, not replace it).
    let sent_before = !created
        && trajectory.is_some()
        && client
            .request(reqwest::Method::GET, &path)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
    if sent_before {
        eprintln!("attempt {id}: its trajectory was sent with it before; kept");
    } else if let Some(text) = trajectory {
        let response = client
            .send("sending the trajectory", || {
                client
                    .request(reqwest::Method::PUT, &path)
                    .timeout(REQUEST_TIMEOUT)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(text.clone())
            })
            .await
            .with_context(|| format!("attempt {id} is stored, but not its trajectory"))?;
        let read: Value = response.json().await.context("reading the trajectory's summary")?;
        let loops = read["loops"].as_array().map_or(0, Vec::len);
        eprintln!(
            "attempt {id}: trajectory of {} steps stored{}",
            read["steps"],
            if loops > 0 { format!("; {loops} loop(s): proposed cause stuck_in_loop") } else { String::new() }
        );
    }
    if !a.wait {
        if as_json {
            println!("{stored}");
        } else {
            let queued = if verify { "; its verification is queued" } else { "" };
            println!(
                "attempt {id} {how} for {}#{}: {}{queued}",
                a.project,
                a.report,
                stored["verdict"].as_str().unwrap_or("?")
            );
        }
        return Ok(0);
    }
    eprintln!("attempt {id} {how}; waiting for its verification");
    let deadline = Instant::now() + Duration::from_secs(a.timeout);
    let done = follow(client, id, deadline).await?;
    let status: Option<JobStatus> = done["job"]["status"].as_str().and_then(|s| s.parse().ok());
    let graded = &done["attempt"];
    if as_json {
        println!("{graded}");
    }
    if status != Some(JobStatus::Done) {
        let why = done["job"]["last_error"].as_str().unwrap_or("no reason given");
        eprintln!("failpass: the verification of attempt {id} ended {}: {why}", status.map_or("?", |s| s.as_str()));
        return Ok(FAILED);
    }
    let verdict: Option<Verdict> = graded["verdict"].as_str().and_then(|v| v.parse().ok());
    let code = match verdict {
        Some(Verdict::Reproduced | Verdict::Confirmed) => REPRODUCED,
        Some(Verdict::Error) | None => FAILED,
        Some(_) => NOT_REPRODUCED,
    };
    if !as_json {
        let cause = graded["failure_cause"].as_str().map(|c| format!(" ({c})")).unwrap_or_default();
        println!("attempt {id}: {}{cause}", graded["verdict"].as_str().unwrap_or("?"));
    }
    Ok(code)
}

/// Follows `GET /api/v1/attempts/{id}/events` until its `done` event
/// (`{job, attempt}`), reconnecting when the stream breaks, until `deadline`.
async fn follow(client: &Client, id: i64, deadline: Instant) -> anyhow::Result<Value> {
    let path = format!("/api/v1/attempts/{id}/events");
    loop {
        if Instant::now() >= deadline {
            bail!("attempt {id}: no verdict before the timeout (--timeout)");
        }
        let mut response = client
            .send("following the verification", || {
                client.request(reqwest::Method::GET, &path).header(reqwest::header::ACCEPT, "text/event-stream")
            })
            .await?;
        let mut events = EventReader::default();
        loop {
            // The deadline holds across chunks: keep-alive comments every
            // 15 s are chunks too.
            let chunk = match tokio::time::timeout_at(deadline.into(), response.chunk()).await {
                Err(_) => bail!("attempt {id}: no verdict before the timeout (--timeout)"),
                Ok(Ok(Some(c))) => c,
                // The stream ended or broke without `done`: connect again.
                Ok(Ok(None)) | Ok(Err(_)) => break,
            };
            for (event, data) in events.push(&chunk) {
                if event == "done" {
                    return serde_json::from_str(&data).context("reading the verification's end");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Server-sent events from a byte stream: `(event, data)` per event, as the
/// blank line that ends each arrives (`event:` and `data:` fields; comments
/// and other fields are skipped; `\r\n` or `\n` line ends).
#[derive(Default)]
struct EventReader {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl EventReader {
    fn push(&mut self, bytes: &[u8]) -> Vec<(String, String)> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    let event =
                        if self.event.is_empty() { "message".to_owned() } else { std::mem::take(&mut self.event) };
                    out.push((event, self.data.join("\n")));
                }
                self.event.clear();
                self.data.clear();
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = value.to_owned(),
                "data" => self.data.push(value.to_owned()),
                _ => {}
            }
        }
        out
    }
}

async fn junit(client: &Client, j: &SubmitJunitArgs, as_json: bool) -> anyhow::Result<i32> {
    let role: failpass_shared::model::EnvironmentRole =
        j.environment.parse().map_err(|e| anyhow!("--environment: {e}"))?;
    let xml = read_text(&j.file, "FILE").await?;
    let path = format!("/api/v1/import?format=junit&attempt={}&environment={}", j.attempt, role.as_str());
    let response = client
        .send("uploading the results", || {
            client
                .request(reqwest::Method::POST, &path)
                .timeout(REQUEST_TIMEOUT)
                .header(reqwest::header::CONTENT_TYPE, "application/xml")
                .body(xml.clone())
        })
        .await?;
    let summary: failpass_shared::api::import::ImportSummary =
        response.json().await.context("reading the import summary")?;
    if as_json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        println!(
            "attempt {}: {} runs stored, {} unchanged, {} rejected",
            j.attempt,
            summary.created + summary.updated,
            summary.unchanged,
            summary.rejected
        );
        for r in &summary.rejections {
            eprintln!("  record {}: {}", r.record, r.message);
        }
    }
    Ok(if summary.rejected > 0 { FAILED } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_across_chunks_and_line_ends() {
        let mut r = EventReader::default();
        assert!(r.push(b"event: job\r\ndata: {\"a\"").is_empty());
        let got = r.push(b":1}\r\n\r\n: keep-alive\n\nevent: done\ndata: x\ndata: y\n\n");
        assert_eq!(got, vec![("job".into(), "{\"a\":1}".into()), ("done".into(), "x\ny".into())]);
    }

    #[test]
    fn an_attempt_sent_again_shares_its_key_and_another_does_not() {
        let body = |cost: f64| json!({"agent": "x", "candidate": "print(1)", "cost_usd": cost, "verify": true});
        assert_eq!(default_key(&body(0.5)), default_key(&body(0.5)));
        assert_ne!(default_key(&body(0.5)), default_key(&body(0.6)));
        assert!(default_key(&body(0.5)).starts_with("submit:"));
    }
}
