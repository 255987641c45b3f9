//! One report: its routing explanation, oracle and attempts.

use failpass_shared::api::attempts::AttemptListQuery;
use failpass_shared::api::reports::Report;
use failpass_shared::format::{duration_secs, usd};
use leptos::prelude::*;

use crate::api::{self, ClientError};
use crate::components::progress::{Follow, follow, line};
use crate::components::trajectory::TrajectoryPanel;
use crate::components::{Badge, Empty, ErrorPanel, Loading};
use failpass_shared::api::attempts::{Attempt, AttemptDetail, Run, Signal as Measured};
use failpass_shared::api::jobs::RerunRequest;
use failpass_shared::model::{Review, Route, RunEnvironment, Verdict};

#[component]
pub fn ReportPage() -> impl IntoView {
    let path = crate::router::use_path();
    let id = Memo::new(move |_| path.with(|p| p.strip_prefix("/reports/").and_then(|v| v.parse::<i64>().ok())));
    // Bumped when a job this page started finishes, to show its result.
    let version = RwSignal::new(0u32);
    let done = Callback::new(move |_| version.update(|n| *n += 1));
    provide_context(Refetch(done));
    // Jobs started from this page, followed live beside what started them;
    // they belong to the page, so a refetch keeps them.
    let live = Live::new(done);
    provide_context(live);
    on_cleanup(move || live.close());
    let data = crate::load::Load::new(move || {
        version.track();
        let id = id.get();
        async move {
            let id = id.ok_or_else(|| ClientError::Input("the address has no valid report id".into()))?;
            let report = api::report(id).await?;
            let attempts =
                api::attempts(&AttemptListQuery { report_id: Some(id), limit: 200, ..Default::default() }).await?;
            Ok::<_, ClientError>((report, attempts.items))
        }
    });
    view! {
        <Transition fallback=|| view! { <Loading what="the report"/> }>
            {move || Suspend::new(async move {
                match data.get().await {
                    Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                    Ok((report, attempts)) => view! { <ReportView report=report attempts=attempts/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// Refetches the report page (after a review).
#[derive(Clone, Copy)]
struct Refetch(Callback<()>);

/// Where a job was started on the page, so its progress shows there.
#[derive(Clone, Copy, PartialEq)]
enum Origin {
    /// The report's own buttons (rerun failed, refine, re-check).
    Actions,
    /// An attempt row's Rerun.
    Attempt(i64),
}

/// The jobs this page started and the actions' last message. Both live as
/// long as the page, not the view a refetch replaces.
#[derive(Clone, Copy)]
struct Live {
    owner: StoredValue<Owner, LocalStorage>,
    jobs: RwSignal<Vec<(Origin, i64, RwSignal<String>)>>,
    follows: StoredValue<Vec<Follow>, LocalStorage>,
    message: RwSignal<String>,
    done: Callback<()>,
}

impl Live {
    fn new(done: Callback<()>) -> Self {
        Self {
            owner: StoredValue::new_local(Owner::current().unwrap_or_default()),
            jobs: RwSignal::new(Vec::new()),
            follows: StoredValue::new_local(Vec::new()),
            message: RwSignal::new(String::new()),
            done,
        }
    }

    /// Follows `jobs`, showing their progress at `at`.
    /// Nothing, once the page is gone (a reply that arrives after it left).
    fn add(self, at: Origin, jobs: Vec<i64>) {
        let Some(known) = self.jobs.try_with_untracked(|v| v.iter().map(|(_, j, _)| *j).collect::<Vec<_>>()) else {
            return;
        };
        for job in jobs.into_iter().filter(|j| !known.contains(j)) {
            // Owned by the page, so the line outlives the view that asked.
            let Some(status) = self.owner.try_with_value(|o| o.with(|| RwSignal::new(format!("job {job}: queued…"))))
            else {
                return;
            };
            if let Some(f) = follow(job, status, self.done) {
                self.follows.update_value(|v| v.push(f));
            }
            self.jobs.update(|v| v.push((at, job, status)));
        }
    }

    /// Whether a job was started at `at`.
    fn any(self, at: Origin) -> bool {
        self.jobs.with(|v| v.iter().any(|(o, _, _)| *o == at))
    }

    /// The progress lines of the jobs started at `at`.
    fn lines(self, at: Origin) -> impl IntoView {
        move || self.jobs.with(|v| v.iter().filter(|(o, _, _)| *o == at).map(|(_, _, s)| line(*s)).collect_view())
    }

    fn close(self) {
        self.follows.try_with_value(|v| v.iter().for_each(Follow::close));
    }
}

const NO_ENVIRONMENTS: &str = "This project has no buggy and fixed environment to run in yet: an admin sets them up";

/// Buttons that queue work for the whole report, and the progress they started.
#[component]
fn ReportActions(report: Report) -> impl IntoView {
    let id = report.summary.id;
    let graded = report.oracle.as_ref().is_some_and(|o| o.is_deterministic());
    let refinable = graded && report.summary.route == Route::AgentFirst;
    let live = use_context::<Live>();
    let message = live.map_or_else(|| RwSignal::new(String::new()), |l| l.message);
    let push = move |jobs: Vec<i64>| {
        if let Some(l) = live {
            l.add(Origin::Actions, jobs);
        }
    };
    let rerun_failed = move |_| {
        leptos::task::spawn_local(async move {
            match api::rerun(&RerunRequest { report_id: Some(id), ..Default::default() }).await {
                Ok(r) if r.queued.is_empty() && r.already_queued == 0 => {
                    message.set("Nothing to rerun: no failed or errored attempt with a candidate.".into())
                }
                Ok(r) => {
                    message.set(format!(
                        "{} rerun(s) queued{}.",
                        r.queued.len(),
                        if r.already_queued > 0 {
                            format!(", {} already waiting", r.already_queued)
                        } else {
                            String::new()
                        }
                    ));
                    push(r.queued);
                }
                Err(e) => message.set(format!("Could not queue the reruns: {e}")),
            }
        });
    };
    let refine = move |_| {
        leptos::task::spawn_local(async move {
            match api::refine(id).await {
                Ok(job) => {
                    message.set(
                        "Refine loop queued: the generator proposes, failpass grades, the feedback goes back.".into(),
                    );
                    push(vec![job.id]);
                }
                Err(e) => message.set(format!("Could not start the refine loop: {e}")),
            }
        });
    };
    // Re-check the reproduced attempts against a release environment of the
    // project; reruns and refine need its buggy and fixed environments.
    let runnable = RwSignal::new(true);
    let project = report.summary.project.clone();
    let releases = crate::load::Load::new(move || {
        let project = project.clone();
        async move {
            api::environments(&project).await.map(|envs| {
                use failpass_shared::model::EnvironmentRole::{Buggy, Fixed};
                runnable.set([Buggy, Fixed].iter().all(|r| envs.iter().any(|e| e.role == *r)));
                envs.into_iter()
                    .filter(|e| e.role == failpass_shared::model::EnvironmentRole::Release)
                    .collect::<Vec<_>>()
            })
        }
    });
    let chosen = RwSignal::new(String::new());
    let recheck = move |_| {
        let env = chosen.get_untracked();
        if env.is_empty() {
            message.set("Choose a release to re-check against.".into());
            return;
        }
        leptos::task::spawn_local(async move {
            let req =
                RerunRequest { report_id: Some(id), recheck_environment: Some(env.clone()), ..Default::default() };
            match api::rerun(&req).await {
                Ok(r) if r.queued.is_empty() => message.set(format!(
                    "Nothing to re-check on {env}: no reproduced attempt with a candidate (or already waiting)."
                )),
                Ok(r) => {
                    message.set(format!("Re-checking {} reproduced attempt(s) on {env}.", r.queued.len()));
                    push(r.queued);
                }
                Err(e) => message.set(format!("Could not queue the re-check: {e}")),
            }
        });
    };
    view! {
        <div class="actions" data-testid="report-actions">
            <button type="button" data-testid="rerun-failed" on:click=rerun_failed disabled=move || !graded || !runnable.get()>
                "Rerun failed attempts"
            </button>
            <button type="button" data-testid="refine" on:click=refine disabled=move || !refinable || !runnable.get()>
                "Run refine loop"
            </button>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match releases.get().await {
                        Ok(list) if !list.is_empty() && graded => view! {
                            <label class="inline">
                                <span class="visually-hidden">"Release to re-check against"</span>
                                <select data-testid="recheck-env" on:change=move |ev| chosen.set(event_target_value(&ev))>
                                    <option value="">"Re-check on release…"</option>
                                    {list.into_iter().map(|e| {
                                        let label = e.recipe.version.clone().unwrap_or_else(|| e.name.clone());
                                        view! { <option value=e.name.clone()>{label}</option> }
                                    }).collect_view()}
                                </select>
                            </label>
                            <button type="button" data-testid="recheck" on:click=recheck>"Re-check"</button>
                        }.into_any(),
                        _ => ().into_any(),
                    }
                })}
            </Suspense>
            // Why a button is greyed, said on the page (not only in a hover).
            <p class="hint" data-testid="actions-why">{move || if !runnable.get() {
                NO_ENVIRONMENTS
            } else if !graded {
                "Rerun and refine grade by a deterministic oracle, and this report has none yet: write one (its Oracle panel)."
            } else if !refinable {
                "Rerun failed attempts runs every failed or errored attempt on buggy and fixed. The refine loop is for agent-first reports."
            } else {
                "Rerun failed attempts runs every failed or errored attempt on buggy and fixed; the refine loop generates, grades and feeds back until it reproduces or gives up."
            }}</p>
            <span class="message" role="status" aria-live="polite">{move || message.get()}</span>
            <div class="jobs-live" data-testid="jobs-live">{live.map(|l| l.lines(Origin::Actions))}</div>
        </div>
    }
}

#[component]
fn ReportView(report: Report, attempts: Vec<Attempt>) -> impl IntoView {
    let s = report.summary.clone();
    let actions = report.clone();
    let me = crate::me::use_me();
    let project = s.project.clone();
    let maintains = Memo::new(move |_| me.with(|m| m.maintains(&project)));
    view! {
        <article class="report">
            <p class="crumbs"><a href="/queue">"Triage queue"</a>" / "{s.project.clone()}" #"{s.external_id.clone()}</p>
            <h1>{s.title.clone()}</h1>
            <p class="meta">
                <Badge kind=s.route.as_str() text=s.route.as_str().replace('_', " ")/>
                {s.vague.then(|| view! { <Badge kind="flag" text="vague"/> })}
                {s.llm_only.then(|| view! { <Badge kind="flag" text="llm only"/> })}
                {s.route_check.then(|| view! { <Badge kind="flag" text="route check"/> })}
                {s.route_corrected.then(|| view! { <Badge kind="flag" text="route corrected"/> })}
                " status: "{s.status.as_str().replace('_', " ")}
                " · category: "{s.category.as_str().replace('_', " ")}
                " · filed "{s.filed_at.date_naive().to_string()}
                // Only web addresses become links; anything else could run script.
                {s.url.clone().filter(|u| u.starts_with("https://") || u.starts_with("http://"))
                    .map(|u| view! { " · " <a href=u rel="noopener noreferrer">"original"</a> })}
            </p>
            // The report first, its life cycle beside it; then what was tried.
            <div class="report-top">
            <section class="panel">
                <h2>"Report"</h2>
                <div class="markdown" data-testid="report-body" inner_html=report.body_html.clone()></div>
                {report.environment.clone().map(|e| view! { <p class="env">"Environment: "{e}</p> })}
            </section>
            <section class="panel" data-testid="lifecycle-panel">
                <h2>"Life cycle"</h2>
                // A refused change comes back as `?error=…` (the form posts to the server).
                {move || crate::router::use_query().with(|q| q.iter().find(|(k, _)| k == "error").map(|(_, e)| e.clone()))
                    .map(|e| view! { <p class="state state-error" role="alert" data-testid="lifecycle-error">{e}</p> })}
                // Rendered and escaped by the server (`lifecycle_html`), with
                // the maintainers' form that posts to /reports/{id}/lifecycle.
                <div inner_html=report.lifecycle_html.clone()></div>
            </section>
            </div>
            // Reruns, refine and re-checks are the project's maintainers' to start.
            {move || maintains.get().then(|| view! { <ReportActions report=actions.clone()/> })}
            <section class="panel">
                <h2>"Attempts"</h2>
                {if attempts.is_empty() {
                    view! { <Empty message="No attempt yet."/> }.into_any()
                } else {
                    view! {
                        <div class="table-wrap">
                        <crate::components::AllColumns/>
                        <table class="attempts" data-testid="attempts">
                            <thead><tr>
                                <th scope="col">"Agent"</th><th scope="col" class="opt">"Model"</th><th scope="col" class="opt">"Goal"</th>
                                <th scope="col">"Verdict"</th><th scope="col" class="opt">"Source"</th><th scope="col" class="opt">"Review"</th>
                                <th scope="col" class="opt">"Counts"</th><th scope="col" class="num">"Cost"</th><th scope="col" class="num opt">"Wall time"</th>
                                <th scope="col">"Grading"</th>
                            </tr></thead>
                            <tbody>
                                {attempts.into_iter().map(|a| view! { <AttemptRow a=a maintains=maintains/> }).collect_view()}
                            </tbody>
                        </table>
                        </div>
                    }.into_any()
                }}
            </section>
            <div class="report-pair">
            <section class="panel">
                <h2>"Why this route"</h2>
                {report.route_correction.clone().map(|c| view! {
                    <p class="correction" data-testid="route-correction">
                        {format!("Corrected from {} to {} by {} on {}: {}", c.previous.as_str().replace('_', " "),
                            c.route.as_str().replace('_', " "), c.by, c.at.date_naive(), c.reason)}
                    </p>
                })}
                {s.route_check.then(|| view! {
                    <p class="correction">"The rule was unsure of this route: a maintainer should confirm or correct it."</p>
                })}
                <table class="explanation" data-testid="explanation">
                    <thead><tr><th scope="col">"Rule"</th><th scope="col">"Fired"</th><th scope="col">"Evidence"</th></tr></thead>
                    <tbody>
                        {report.explanation.iter().map(|r| view! {
                            <tr class=if r.fired { "fired" } else { "" }>
                                <th scope="row">{r.rule.replace('_', " ")}</th>
                                <td>{if r.fired { "yes" } else { "no" }}</td>
                                <td>{r.evidence.clone()}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
            <section class="panel">
                <h2>"Oracle"</h2>
                {match report.oracle.clone() {
                    None => view! { <p>"None: agent output on this report is a hypothesis until an oracle exists."</p> }.into_any(),
                    Some(o) => view! {
                        <dl class="oracle">
                            <dt>"Kind"</dt><dd>{o.kind.as_str().replace('_', " ")}</dd>
                            <dt>"Source"</dt><dd>{o.source.map(|s| s.as_str().replace('_', " ")).unwrap_or_else(|| "—".into())}</dd>
                            {o.signature.map(|sig| view! { <dt>"Signature"</dt><dd><code>{sig}</code></dd> })}
                            {(!o.fail_to_pass.is_empty()).then(|| view! { <dt>"Fail to pass"</dt><dd><code>{o.fail_to_pass.join(", ")}</code></dd> })}
                            {(!o.pass_to_pass.is_empty()).then(|| view! { <dt>"Pass to pass"</dt><dd><code>{o.pass_to_pass.join(", ")}</code></dd> })}
                        </dl>
                    }.into_any(),
                }}
            </section>
            </div>
        </article>
    }
}

/// One attempt: a summary row, and on demand its grading, signals, runs and candidate.
#[component]
fn AttemptRow(a: Attempt, maintains: Memo<bool>) -> impl IntoView {
    let open = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let id = a.id;
    let can_rerun = a.candidate.is_some();
    let live = use_context::<Live>();
    let rerun = move |_| {
        leptos::task::spawn_local(async move {
            match api::rerun(&RerunRequest { attempt_id: Some(id), ..Default::default() }).await {
                Ok(r) => {
                    if let Some(l) = live {
                        l.add(Origin::Attempt(id), r.queued);
                    }
                }
                Err(e) => error.set(Some(e.to_string())),
            }
        });
    };
    let reason = a.grade.as_ref().and_then(|g| g.reason.clone());
    // A lead (or a confirmation) is a maintainer's call; so is an unreviewed
    // success that does not count (a vague report's).
    let reviewable = matches!(a.verdict, Verdict::Lead | Verdict::Confirmed)
        || (a.verdict.is_success_for(a.goal) && a.review.is_none() && !a.counts);
    let reviewing = RwSignal::new(false);
    view! {
        <tr data-testid="attempt-row">
            <td>{a.agent.clone()}</td>
            <td class="opt">{a.model.clone().unwrap_or_default()}</td>
            <td class="opt">{a.goal.as_str()}</td>
            <td>
                <Badge kind=a.verdict.as_str() text=a.verdict.as_str().replace('_', " ")/>
                {a.flaky.then(|| view! { " " <Badge kind="flag" text="flaky"/> })}
            </td>
            <td class="opt">{a.verdict_source.as_str()}</td>
            <td class="opt">{a.review.map(|r| r.as_str()).unwrap_or("—")}</td>
            <td class="opt">{if a.counts { "yes" } else { "no" }}</td>
            <td class="num">{a.cost_usd.map_or_else(|| "unknown".to_owned(), |c| usd(Some(c)))}</td>
            <td class="num opt">{duration_secs(a.wall_seconds)}</td>
            <td class="grading">
                <span class="reason">{reason.unwrap_or_else(|| "not graded by a run".into())}</span>
                <span class="row-actions">
                    <button type="button" aria-expanded=move || open.get().to_string() on:click=move |_| open.update(|o| *o = !*o)>
                        {move || if open.get() { "Hide" } else { "Details" }}
                    </button>
                    {move || (can_rerun && maintains.get()).then(|| view! { <button type="button" on:click=rerun data-testid="rerun">"Rerun"</button> })}
                    {move || (reviewable && maintains.get()).then(|| view! {
                        <button type="button" data-testid="review" on:click=move |_| reviewing.update(|r| *r = !*r)>"Review"</button>
                    })}
                </span>
                {a.reviewer.clone().map(|r| view! { <span class="reason">{format!("reviewed by {r}{}", a.review_comment.clone().map(|c| format!(": {c}")).unwrap_or_default())}</span> })}
            </td>
        </tr>
        {move || error.get().map(|e| view! { <tr><td colspan="10" class="state-error">{e}</td></tr> })}
        // The row's rerun reports here, under the button that started it.
        {move || live.filter(|l| l.any(Origin::Attempt(id))).map(|l| view! {
            <tr class="details"><td colspan="10" class="jobs-live">{l.lines(Origin::Attempt(id))}</td></tr>
        })}
        {move || reviewing.get().then(|| view! { <tr class="details"><td colspan="10"><ReviewForm id=id/></td></tr> })}
        {move || open.get().then(|| view! { <tr class="details"><td colspan="10"><AttemptDetails id=id/></td></tr> })}
    }
}

#[component]
fn AttemptDetails(id: i64) -> impl IntoView {
    let data = crate::load::Load::new(move || api::attempt(id));
    view! {
        <Transition fallback=|| view! { <Loading what="the attempt"/> }>
            {move || Suspend::new(async move {
                match data.get().await {
                    Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                    Ok(d) => view! { <DetailView d=d/> }.into_any(),
                }
            })}
        </Transition>
    }
}

fn signal_row(name: &'static str, s: Option<Measured>) -> impl IntoView {
    let (state, source, detail) = match s {
        None => ("not computed".to_owned(), "—".to_owned(), String::new()),
        Some(s) => (
            (if s.passed { "passed" } else { "failed" }).to_owned(),
            s.source.as_str().to_owned(),
            s.detail.unwrap_or_default(),
        ),
    };
    view! { <tr><th scope="row">{name}</th><td>{state}</td><td>{source}</td><td>{detail}</td></tr> }
}

fn run_cell(r: &Run) -> String {
    let status =
        if r.timed_out { "timeout".to_owned() } else { r.exit_status.map_or("killed".into(), |s| format!("exit {s}")) };
    let part = match (r.iteration, &r.release) {
        (_, Some(release)) => format!("{release}: "),
        (Some(i), None) => format!("iteration {i}: "),
        (None, None) => String::new(),
    };
    format!("{part}{status} · {} ms", r.duration_ms)
}

#[component]
fn DetailView(d: AttemptDetail) -> impl IntoView {
    let a = d.attempt;
    let g = a.grade.clone().unwrap_or_default();
    let sides = [RunEnvironment::Buggy, RunEnvironment::Fixed, RunEnvironment::Release];
    let repeats = sides.iter().map(|e| d.runs.iter().filter(|r| r.environment == *e).count()).max().unwrap_or(0);
    let steps = RwSignal::new(false);
    view! {
        <div class="attempt-detail" data-testid="attempt-detail">
            <h3>"Signals"</h3>
            <table class="signals">
                <thead><tr><th scope="col">"Signal"</th><th scope="col">"Result"</th><th scope="col">"Source"</th><th scope="col">"Detail"</th></tr></thead>
                <tbody>
                    {signal_row("syntax", a.signals.syntax.clone())}
                    {signal_row("quality", a.signals.quality.clone())}
                    {signal_row("relevance", a.signals.relevance.clone())}
                    {signal_row("failure behaviour", a.signals.failure_behaviour.clone())}
                </tbody>
            </table>
            {g.counts().map(|c| view! {
                <p class="counts">{format!("Buggy: failed {} of {}. Fixed: passed {} of {}.{}",
                    c.buggy_failed, c.buggy_runs, c.fixed_passed, c.fixed_runs,
                    if a.flaky { " The repeats disagree: flaky." } else { "" })}</p>
            })}
            {g.recheck_history().into_iter().map(|r| view! {
                <p class="recheck" data-testid="recheck">{format!("Re-check on {}: {}", r.version.unwrap_or(r.environment),
                    r.outcome.as_str().replace('_', " "))}</p>
            }).collect_view()}
            {g.refine.map(|r| view! {
                <p class="refine">{format!("Refine loop ({}): {} iteration(s), stopped: {}", r.generator,
                    r.iterations.len(), r.stop.as_str().replace('_', " "))}</p>
            })}
            <h3>"Runs"</h3>
            {if d.runs.is_empty() {
                view! { <Empty message="No run: nothing has executed this candidate."/> }.into_any()
            } else {
                view! {
                    <table class="matrix" data-testid="run-matrix">
                        <thead><tr><th scope="col">"Environment"</th>
                            {(1..=repeats).map(|i| view! { <th scope="col">{format!("run {i}")}</th> }).collect_view()}
                        </tr></thead>
                        <tbody>
                            {sides.iter().filter(|e| d.runs.iter().any(|r| r.environment == **e)).map(|e| view! {
                                <tr><th scope="row">{e.as_str()}</th>
                                    {d.runs.iter().filter(|r| r.environment == *e).map(|r| view! { <td>{run_cell(r)}</td> }).collect_view()}
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                    {d.runs.iter().map(|r| view! {
                        <details class="log">
                            <summary>{format!("{} · {} · {} · {}", r.environment.as_str(), r.trigger.as_str(), run_cell(r), r.runner_id.clone().unwrap_or_default())}</summary>
                            <pre>{if r.output.is_empty() { "(no output)".to_owned() } else { r.output.clone() }}</pre>
                            {r.output_truncated.then(|| view! { <p class="truncated">{format!("Output cut: kept {} of {} bytes.", r.output.len(), r.output_bytes)}</p> })}
                        </details>
                    }).collect_view()}
                }.into_any()
            }}
            {a.candidate.map(|c| view! { <h3>"Candidate"</h3><Candidate source=c/> })}
            <h3>"Trajectory"</h3>
            {move || if steps.get() {
                view! { <TrajectoryPanel id=a.id/> }.into_any()
            } else {
                view! { <button type="button" data-testid="show-trajectory" on:click=move |_| steps.set(true)>"Show the agent's steps"</button> }.into_any()
            }}
        </div>
    }
}

/// Accept or reject an attempt, and why (the reviewer is the signed-in user).
#[component]
fn ReviewForm(id: i64) -> impl IntoView {
    let comment: NodeRef<leptos::html::Textarea> = NodeRef::new();
    let message = RwSignal::new(String::new());
    let refetch = use_context::<Refetch>();
    let send = move |review: Review| {
        let why = comment.get().map(|t| t.value()).filter(|c| !c.trim().is_empty());
        leptos::task::spawn_local(async move {
            let req = failpass_shared::api::attempts::ReviewRequest { review, comment: why };
            match api::review(id, &req).await {
                Ok(_) => {
                    if let Some(Refetch(r)) = refetch {
                        r.run(());
                    }
                }
                Err(e) => message.set(e.to_string()),
            }
        });
    };
    view! {
        <form class="review" data-testid="review-form" on:submit=|ev| ev.prevent_default()>
            <label class="field field-grow"><span>"Comment"</span><textarea node_ref=comment data-testid="review-comment" rows="2" placeholder="why (optional)"></textarea></label>
            <button type="button" data-testid="accept" on:click=move |_| send(Review::Accepted)>"Accept"</button>
            <button type="button" data-testid="reject" on:click=move |_| send(Review::Rejected)>"Reject"</button>
            <span class="message" role="status" aria-live="polite">{move || message.get()}</span>
        </form>
    }
}

/// The candidate script, syntax-highlighted (the text is the script exactly).
#[component]
fn Candidate(source: String) -> impl IntoView {
    let spans = failpass_shared::highlight::tokenize(&source)
        .into_iter()
        .map(|(kind, text)| view! { <span class=kind.class()>{text.to_owned()}</span> })
        .collect_view();
    view! { <pre class="candidate" data-testid="candidate"><code>{spans}</code></pre> }
}
