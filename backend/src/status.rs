//! The public face: a public project's status (computed from the same
//! figures as the dashboard), its page, trend chart and badges.
//!
//! A status is computed at most once a minute per project, however many
//! people ask, and no visitor waits for it but the very first: [`StatusCache`]
//! serves the last computed status, and when it is older than
//! [`STATUS_TTL_SECONDS`] starts one recomputation in the background (stale
//! while revalidating). Concurrent first requests wait for one computation
//! instead of starting their own. Only public projects are ever
//! computed; every caller sees the same thing (`ProjectScope::PublicOnly`),
//! so a signed-in admin's view of a status page is the public's.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::api::projects::Project;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::api::status::{
    LATEST_VERDICTS, ProjectStatus, RouteShare, STATUS_TTL_SECONDS, StatusIndex, StatusIndexEntry, TREND_WEEKS,
    route_meaning,
};
use failpass_shared::figures::{recent_weeks, throughput_of};
use failpass_shared::model::{GroupBy, Route};

use crate::charts;
use crate::db::{ProjectScope, Storage};
use crate::error::{ApiError, ApiResult};

/// A project's computed status and what is drawn from it once.
#[derive(Debug)]
pub struct Snapshot {
    pub status: ProjectStatus,
    /// The trend chart (the page's figure).
    pub trend_svg: String,
    /// The Open Graph image as PNG (trend and headline figures), drawn on first request.
    trend_png: std::sync::OnceLock<Result<Vec<u8>, String>>,
    computed: std::time::Instant,
    /// The project's data version it was computed at.
    data_version: i64,
    /// This snapshot's number. A status page asks for its chart and badges
    /// with it (`?v=`), so the page and all it shows are one snapshot.
    pub serial: u64,
}

/// The Open Graph image's size: what link previews draw large.
pub const OG_WIDTH: u32 = 1200;
pub const OG_HEIGHT: u32 = 630;

/// After a write, how long a status is still served before it is computed
/// again: a burst of writes rebuilds it once.
pub const DEBOUNCE: Duration = Duration::from_secs(2);

/// How long a served page's snapshot stays available to its images.
const PINNED_FOR: Duration = Duration::from_secs(15 * 60);

static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Snapshot {
    /// The link preview at [`OG_WIDTH`]×[`OG_HEIGHT`] as a PNG (drawn once):
    /// the trend under a title that carries the headline figures and their
    /// sample size.
    pub fn trend_png(&self) -> Result<&[u8], String> {
        self.trend_png
            // Drawn at the page's scale, then enlarged: previews keep its proportions and legible text.
            .get_or_init(|| charts::rasterize(&preview_chart(&self.status, 720, 720 * OG_HEIGHT / OG_WIDTH), OG_WIDTH))
            .as_deref()
            .map_err(Clone::clone)
    }

    fn is_stale(&self) -> bool {
        self.computed.elapsed() >= Duration::from_secs(STATUS_TTL_SECONDS)
    }
}

/// The public projects, and when they were listed.
#[derive(Debug)]
pub struct IndexSnapshot {
    pub index: StatusIndex,
    pub updated_at: chrono::DateTime<Utc>,
}

/// Computed statuses, and the index of public projects.
///
/// A status is computed again when the project's data version moves (a
/// write changed one of its reports; within [`DEBOUNCE`] of the last
/// computation the current one is served and one recomputation follows),
/// and in the background once it is older than [`STATUS_TTL_SECONDS`] (the
/// weeks and ages move with time). Concurrent requests after a change wait
/// for one computation.
#[derive(Clone)]
pub struct StatusCache {
    /// The newest snapshot of each project.
    latest: moka::future::Cache<String, Arc<Snapshot>>,
    /// Snapshots by (project, data version): one computation per change.
    by_version: moka::future::Cache<(String, i64), Arc<Snapshot>>,
    /// Recent snapshots by (project, serial), for the images of a page served.
    pinned: moka::future::Cache<(String, u64), Arc<Snapshot>>,
    /// Projects whose status is being recomputed in the background.
    refreshing: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    index: moka::future::Cache<(), Arc<IndexSnapshot>>,
}

impl Default for StatusCache {
    fn default() -> Self {
        let ttl = Duration::from_secs(STATUS_TTL_SECONDS);
        StatusCache {
            // Kept until replaced; staleness is the snapshot's own (see `of`).
            latest: moka::future::Cache::builder().max_capacity(10_000).build(),
            by_version: moka::future::Cache::builder().max_capacity(10_000).time_to_live(PINNED_FOR).build(),
            pinned: moka::future::Cache::builder().max_capacity(10_000).time_to_live(PINNED_FOR).build(),
            refreshing: Default::default(),
            index: moka::future::Cache::builder().max_capacity(1).time_to_live(ttl).build(),
        }
    }
}

impl StatusCache {
    /// Drops the index of public projects (a project changed visibility or
    /// name), so the next listing reads it again.
    pub fn forget_index(&self) {
        self.index.invalidate_all();
    }

    /// The status of public project `slug`, or `NotFound` (the same for a
    /// private project as for a missing one). Visibility is checked on every
    /// call, so a project made private disappears at once.
    pub async fn project(&self, storage: &Arc<dyn Storage>, slug: &str) -> ApiResult<Arc<Snapshot>> {
        let project = public_project(storage.as_ref(), slug).await?;
        self.of(storage, project).await
    }

    /// The snapshot numbered `serial` when a page served it recently (its
    /// chart and badges ask for it), else the current one.
    pub async fn pinned(
        &self,
        storage: &Arc<dyn Storage>,
        slug: &str,
        serial: Option<u64>,
    ) -> ApiResult<Arc<Snapshot>> {
        let project = public_project(storage.as_ref(), slug).await?;
        if let Some(snap) = match serial {
            Some(n) => self.pinned.get(&(project.slug.clone(), n)).await,
            None => None,
        } {
            return Ok(snap);
        }
        self.of(storage, project).await
    }

    /// The status of `project`, which the caller has just read as public.
    pub async fn of(&self, storage: &Arc<dyn Storage>, project: Project) -> ApiResult<Arc<Snapshot>> {
        if let Some(snap) = self.latest.get(&project.slug).await {
            if snap.data_version == project.data_version {
                if snap.is_stale() {
                    self.refresh_in_background(storage.clone(), project.slug.clone(), Duration::ZERO);
                }
                return Ok(snap);
            }
            let age = snap.computed.elapsed();
            if age < DEBOUNCE {
                self.refresh_in_background(storage.clone(), project.slug.clone(), DEBOUNCE - age);
                return Ok(snap);
            }
        }
        let key = (project.slug.clone(), project.data_version);
        let snap = self.by_version.try_get_with(key, snapshot(storage.clone(), project)).await.map_err(unshare)?;
        self.keep(&snap).await;
        Ok(snap)
    }

    /// Makes `snap` the project's newest (unless a newer one is there) and
    /// keeps it for the images of the pages that show it.
    async fn keep(&self, snap: &Arc<Snapshot>) {
        let slug = snap.status.project.clone();
        self.pinned.insert((slug.clone(), snap.serial), snap.clone()).await;
        let newer = self.latest.get(&slug).await.is_some_and(|l| l.serial > snap.serial);
        if !newer {
            self.latest.insert(slug, snap.clone()).await;
        }
    }

    /// Recomputes `slug`'s status after `delay` unless that is already
    /// under way; the current one is served meanwhile.
    fn refresh_in_background(&self, storage: Arc<dyn Storage>, slug: String, delay: Duration) {
        let Ok(mut running) = self.refreshing.lock() else { return };
        if !running.insert(slug.clone()) {
            return;
        }
        drop(running);
        let cache = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            // Read again after the wait: the version the burst of writes left.
            let computed = match public_project(storage.as_ref(), &slug).await {
                Ok(project) => snapshot(storage, project).await,
                Err(e) => Err(e),
            };
            match computed {
                Ok(snap) => cache.keep(&snap).await,
                Err(e) => {
                    tracing::warn!(project = %slug, error = %e, "status: recomputing failed; the last one is served")
                }
            }
            if let Ok(mut running) = cache.refreshing.lock() {
                running.remove(&slug);
            }
        });
    }

    /// Computes the status of every public project not cached yet, one at a
    /// time (at start, so that their first visitors do not wait for it).
    pub async fn warm(&self, storage: &Arc<dyn Storage>) {
        let Ok(projects) = storage.list_projects(&ProjectScope::PublicOnly).await else { return };
        for p in projects {
            let slug = p.slug.clone();
            if let Err(e) = self.of(storage, p).await {
                tracing::warn!(project = %slug, error = %e, "status: warming failed");
            }
        }
    }

    /// Every public project, by slug.
    pub async fn index(&self, storage: &Arc<dyn Storage>) -> ApiResult<Arc<IndexSnapshot>> {
        let storage = storage.clone();
        self.index
            .try_get_with((), async move {
                let projects = storage.list_projects(&ProjectScope::PublicOnly).await?;
                let projects = projects
                    .into_iter()
                    .map(|p| StatusIndexEntry {
                        project: p.slug,
                        name: p.name,
                        description: p.description.unwrap_or_default(),
                        reports: p.reports.max(0) as u64,
                    })
                    .collect();
                Ok::<_, ApiError>(Arc::new(IndexSnapshot { index: StatusIndex { projects }, updated_at: Utc::now() }))
            })
            .await
            .map_err(unshare)
    }
}

/// Computes `project`'s status and draws its trend. The data version is
/// the one read before computing, so a write meanwhile leaves it outdated.
async fn snapshot(storage: Arc<dyn Storage>, project: Project) -> ApiResult<Arc<Snapshot>> {
    let data_version = project.data_version;
    let status = compute(storage.as_ref(), &project).await?;
    let trend_svg = trend_chart(&status, 720, 300);
    Ok(Arc::new(Snapshot {
        status,
        trend_svg,
        trend_png: Default::default(),
        computed: std::time::Instant::now(),
        data_version,
        serial: NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    }))
}

/// The error of a computation several requests waited for, as each one's own.
fn unshare(e: Arc<ApiError>) -> ApiError {
    Arc::try_unwrap(e).unwrap_or_else(|e| match &*e {
        ApiError::NotFound(m) => ApiError::NotFound(m.clone()),
        ApiError::Unavailable(m) => ApiError::Unavailable(m.clone()),
        other => ApiError::Internal(anyhow::anyhow!("{other}")),
    })
}

/// The project `slug` if it is public; `NotFound` otherwise, worded the same
/// whether it is private or missing.
pub async fn public_project(storage: &dyn Storage, slug: &str) -> ApiResult<Project> {
    storage
        .get_project(slug, &ProjectScope::PublicOnly)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no public project `{slug}`")))
}

/// Computes `project`'s status from the figures every page uses.
pub async fn compute(storage: &dyn Storage, project: &Project) -> ApiResult<ProjectStatus> {
    let scope = ProjectScope::PublicOnly;
    let filter = ReportFilter { project: Some(project.slug.clone()), ..Default::default() };
    // Every report has one route, so the route grouping's contributions,
    // taken together, are the project's: one query serves both.
    let query = FiguresQuery { group_by: GroupBy::Route, filter: filter.clone(), ..Default::default() };
    let started = std::time::Instant::now();
    let by_route = crate::summaries::rows_of(storage, &scope, &query).await?;
    let all = FiguresQuery { group_by: GroupBy::None, ..query.clone() };
    let headline = crate::summaries::rows_of(storage, &scope, &all).await?.into_iter().next();
    let t_figures = started.elapsed();
    let now = Utc::now();
    let read = failpass_shared::figures::throughput_read();
    let flow = throughput_of(&crate::summaries::flow_counts(storage, &scope, &filter, &read).await?, now);
    let t_flow = started.elapsed();
    let oracles = storage.oracle_summary(Some(&project.slug), &scope).await?;
    let t_oracles = started.elapsed();
    let latest = storage.latest_verdicts(&project.slug, LATEST_VERDICTS).await?;
    tracing::debug!(
        project = %project.slug,
        figures_ms = t_figures.as_millis() as u64,
        flow_ms = (t_flow - t_figures).as_millis() as u64,
        oracles_ms = (t_oracles - t_flow).as_millis() as u64,
        latest_ms = (started.elapsed() - t_oracles).as_millis() as u64,
        "status computed"
    );
    let reports = project.reports.max(0) as u64;
    let routes = Route::ALL
        .iter()
        .map(|&route| {
            let n = by_route.iter().find(|r| r.key == route.as_str()).map_or(0, |r| r.reports);
            RouteShare {
                route,
                reports: n,
                share: (reports > 0).then(|| n as f64 / reports as f64),
                meaning: route_meaning(route).to_owned(),
            }
        })
        .collect();
    Ok(ProjectStatus {
        project: project.slug.clone(),
        name: project.name.clone(),
        description: project.description.clone().unwrap_or_default(),
        updated_at: now,
        reports,
        reports_graded: headline.as_ref().map_or(0, |r| r.reports_graded),
        reports_reproduced: headline.as_ref().map_or(0, |r| r.reports_reproduced),
        rate: headline.as_ref().and_then(|r| r.rate),
        rate_low: headline.as_ref().and_then(|r| r.rate_low),
        rate_high: headline.as_ref().and_then(|r| r.rate_high),
        backlog: flow.backlog,
        backlog_oldest_days: flow.backlog_oldest_days,
        backlog_median_days: flow.backlog_median_days,
        time_to_reproduction_n: flow.time_to_reproduction_n,
        time_to_reproduction_median_hours: flow.time_to_reproduction_median_hours,
        oracle_coverage: oracles.coverage,
        in_patch_reference: oracles.in_patch_reference,
        routes,
        weeks: recent_weeks(&flow.weeks, now, TREND_WEEKS),
        latest,
    })
}

/// The link preview: the trend under a title that says the headline
/// figures and their sample size.
pub fn preview_chart(status: &ProjectStatus, width: u32, height: u32) -> String {
    use failpass_shared::format::{percent, thousands};
    let title = format!(
        "{}: {} reproduced ({} of {} graded) · backlog {}",
        status.project,
        percent(status.rate),
        thousands(status.reports_reproduced as i64),
        thousands(status.reports_graded as i64),
        thousands(status.backlog as i64),
    );
    weekly_bars(status, &title, width, height)
}

/// The weekly trend: filed, reached a final state, reproduced.
pub fn trend_chart(status: &ProjectStatus, width: u32, height: u32) -> String {
    weekly_bars(status, &format!("{}: the last 90 days", status.project), width, height)
}

fn weekly_bars(status: &ProjectStatus, title: &str, width: u32, height: u32) -> String {
    if status.weeks.iter().all(|w| w.filed == 0 && w.finished == 0) {
        let why = if status.reports > 0 {
            "Nothing filed or finished on a known day in these weeks"
        } else {
            "No report yet"
        };
        return charts::empty_chart(title, why, width, height);
    }
    let labels: Vec<String> = status.weeks.iter().map(|w| w.week.clone()).collect();
    let series = [
        ("Filed", status.weeks.iter().map(|w| w.filed as f64).collect()),
        ("Reached a final state", status.weeks.iter().map(|w| w.finished as f64).collect()),
        ("Of which reproduced", status.weeks.iter().map(|w| w.reproduced as f64).collect()),
    ];
    charts::grouped_bars(title, "Week starting (UTC)", "Reports", &labels, &series, &charts::whole, width, height)
}
