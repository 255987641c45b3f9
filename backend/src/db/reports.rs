//! Reports: intake, routing, the keyset-paged list, and the helpers every
//! write of a report shares (its labels, oracle and derived attempts).

use async_trait::async_trait;

use super::{ProjectScope, StorageError, StorageResult};
use chrono::{DateTime, Utc};
use failpass_shared::api::Page;
use failpass_shared::api::import::LifeCycleRecord;
use failpass_shared::api::reports::{CreateReportRequest, Report, ReportListQuery, ReportSummary, RouteCorrection};
use failpass_shared::api::reports::{Order, ReportSort};
use failpass_shared::model::Resolution;
use failpass_shared::model::Route;
use failpass_shared::routing::RoutingDecision;

/// A report ready to store: the request plus the routing rule's decision.
#[derive(Debug, Clone)]
pub struct NewReport {
    pub request: CreateReportRequest,
    pub decision: RoutingDecision,
    /// Who took it in, for its activity timeline.
    pub origin: Origin,
}

/// Who changed a report and through what, for its activity timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    /// A member's name, `upstream` or `import`.
    pub actor: String,
    /// `ui`, `api`, `import`, `webhook`, `sync` or `cli`.
    pub via: &'static str,
}

impl Origin {
    /// A file import (CLI or `POST /api/v1/import`).
    pub fn import() -> Self {
        Self { actor: "import".into(), via: "import" }
    }

    /// The upstream tracker, through a webhook or a sync.
    pub fn upstream(via: &'static str) -> Self {
        Self { actor: "upstream".into(), via }
    }
}

impl NewReport {
    /// Whether its filing date is known: stated, or now (taken in live).
    /// A file import that states none filed it on no known day.
    pub fn filed_stated(&self) -> bool {
        self.request.filed_at.is_some() || self.origin.via != "import"
    }
}

impl Default for Origin {
    fn default() -> Self {
        Self::import()
    }
}

/// Reports: intake with the routing rule's decision, the report page's
/// detail, the keyset-paged list. A report is unique by (project, external id).
#[async_trait]
pub trait ReportStore: Send + Sync {
    /// Stores a report with its labels, oracle and routing in one transaction.
    /// `Invalid` (field `project`) when the project does not exist; `Conflict`
    /// when the project already has a report with that external id.
    async fn create_report(&self, new: &NewReport) -> StorageResult<Report>;

    /// A report with its explanation, or `None` (also when outside `scope`).
    async fn get_report(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<Report>>;

    /// Reports matching the query's filters, in its order, one keyset page at a
    /// time. `Invalid` (field `cursor`) for a cursor that does not parse or was
    /// made for another ordering.
    async fn list_reports(&self, query: &ReportListQuery, scope: &ProjectScope) -> StorageResult<Page<ReportSummary>>;

    /// The engine's plan for [`ReportStore::list_reports`] of `query`, one
    /// line a step (`EXPLAIN QUERY PLAN` / `EXPLAIN`), with PostgreSQL told
    /// to avoid table scans and sorts wherever an index can serve: so the
    /// plan shows whether an index can. For tests and diagnosis.
    async fn explain_list_reports(&self, query: &ReportListQuery, scope: &ProjectScope) -> StorageResult<Vec<String>>;

    /// How many reports the query's filters select (all pages; its cursor and limit ignored).
    async fn count_reports(&self, query: &ReportListQuery, scope: &ProjectScope) -> StorageResult<i64>;

    /// Replaces a report's derived routing (route, flags, category, features,
    /// explanation and a derived oracle) in one transaction and re-derives
    /// its attempts' counting. `NotFound` when the report does not exist.
    /// Hooks are not told (`failpass reroute` moves many reports at once).
    async fn update_routing(&self, report_id: i64, decision: &RoutingDecision) -> StorageResult<()>;

    /// The project (slug) of report `id`, or `None` when it does not exist or is outside `scope`.
    async fn report_project(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<String>>;

    /// A report's id by its natural key, or `None`.
    async fn find_report(&self, project: &str, external_id: &str) -> StorageResult<Option<i64>>;

    /// Sets a maintainer's route on a report: it keeps this route through
    /// re-routing and is no longer flagged for a route check. `NotFound`
    /// when the report does not exist.
    async fn correct_route(&self, report_id: i64, correction: &RouteCorrection, via: &'static str)
    -> StorageResult<()>;

    /// The corrected reports of a project, oldest correction first: the
    /// classifier's training data and evaluation truth.
    async fn corrected_routes(&self, project: &str) -> StorageResult<Vec<CorrectedRoute>>;

    /// A member's resolution of a report (`None` reopens it: back to what
    /// its attempts say, whatever upstream says), recorded in its activity.
    /// `duplicate_of` names the report it duplicates. `NotFound` when the
    /// report does not exist.
    async fn set_resolution(
        &self,
        report_id: i64,
        resolution: Option<Resolution>,
        duplicate_of: Option<i64>,
        reason: Option<&str>,
        origin: &Origin,
    ) -> StorageResult<()>;

    /// Assigns a report to a member (or to nobody), recorded in its activity.
    async fn assign_report(&self, report_id: i64, assignee: Option<&str>, origin: &Origin) -> StorageResult<()>;

    /// Appends a comment to a report's activity.
    async fn comment_report(&self, report_id: i64, text: &str, origin: &Origin) -> StorageResult<()>;

    /// Appends an event of `kind` (`rerun`) to each report's activity, in one
    /// transaction.
    async fn note_reports(&self, events: &[(i64, String)], kind: &str, origin: &Origin) -> StorageResult<()>;

    /// A report's life cycle as the NDJSON export writes it.
    async fn life_cycle(&self, report_id: i64) -> StorageResult<Option<LifeCycleRecord>>;

    /// Restores a report's life cycle (an NDJSON import): its correction
    /// (when given), resolution, assignee, and timeline, which replaces the
    /// report's own; `duplicate_of` is the duplicated report's id.
    async fn import_life_cycle(
        &self,
        report_id: i64,
        record: &LifeCycleRecord,
        duplicate_of: Option<i64>,
    ) -> StorageResult<failpass_shared::api::import::Outcome>;
}

/// A report whose route a maintainer corrected, as training data.
#[derive(Debug, Clone, PartialEq)]
pub struct CorrectedRoute {
    pub external_id: String,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub route: Route,
}

/// The keyset position a report cursor encodes: `sort.order:value:id`.
#[derive(Debug, Clone, PartialEq)]
pub enum CursorValue {
    Time(DateTime<Utc>),
    Float(f64),
    Int(i64),
}

pub fn report_sort_column(sort: ReportSort) -> &'static str {
    match sort {
        ReportSort::FiledAt => "r.filed_at",
        ReportSort::CreatedAt => "r.created_at",
        ReportSort::Cost => "r.cost_usd",
        ReportSort::Attempts => "r.attempts",
        ReportSort::LastActivity => "COALESCE(r.last_activity_at, r.created_at)",
    }
}

fn cursor_prefix(sort: ReportSort, order: Order) -> String {
    format!("{}.{}", sort.as_str(), order.as_str())
}

pub fn encode_report_cursor(sort: ReportSort, order: Order, value: &CursorValue, id: i64) -> String {
    let v = match value {
        CursorValue::Time(t) => t.timestamp().to_string(),
        CursorValue::Float(f) => f.to_string(),
        CursorValue::Int(i) => i.to_string(),
    };
    format!("{}:{v}:{id}", cursor_prefix(sort, order))
}

pub fn decode_report_cursor(cursor: &str, sort: ReportSort, order: Order) -> StorageResult<(CursorValue, i64)> {
    let bad = |why: &str| {
        StorageError::invalid("cursor", format!("`{cursor}` {why}; use the next_cursor of a previous page"))
    };
    let mut parts = cursor.splitn(3, ':');
    let (Some(prefix), Some(value), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("is not a cursor"));
    };
    if prefix != cursor_prefix(sort, order) {
        return Err(bad(&format!("was made for another ordering than {}", cursor_prefix(sort, order))));
    }
    let id: i64 = id.parse().map_err(|_| bad("has no valid id"))?;
    let value = match sort {
        ReportSort::FiledAt | ReportSort::CreatedAt | ReportSort::LastActivity => {
            let ts: i64 = value.parse().map_err(|_| bad("has no valid time"))?;
            CursorValue::Time(DateTime::from_timestamp(ts, 0).ok_or_else(|| bad("has no valid time"))?)
        }
        ReportSort::Cost => CursorValue::Float(
            value.parse().ok().filter(|f: &f64| f.is_finite()).ok_or_else(|| bad("has no valid cost"))?,
        ),
        ReportSort::Attempts => CursorValue::Int(value.parse().map_err(|_| bad("has no valid count"))?),
    };
    Ok((value, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_mismatch() {
        let t = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let c = encode_report_cursor(ReportSort::FiledAt, Order::Desc, &CursorValue::Time(t), 42);
        assert_eq!(decode_report_cursor(&c, ReportSort::FiledAt, Order::Desc).unwrap(), (CursorValue::Time(t), 42));
        let e = decode_report_cursor(&c, ReportSort::Cost, Order::Desc).unwrap_err();
        assert!(e.to_string().starts_with("cursor:"), "{e}");
        assert!(decode_report_cursor("garbage", ReportSort::FiledAt, Order::Desc).is_err());
        let c = encode_report_cursor(ReportSort::Cost, Order::Asc, &CursorValue::Float(0.1 + 0.2), 7);
        assert_eq!(decode_report_cursor(&c, ReportSort::Cost, Order::Asc).unwrap(), (CursorValue::Float(0.1 + 0.2), 7));
        assert!(decode_report_cursor("cost.asc:NaN:1", ReportSort::Cost, Order::Asc).is_err());
    }
}
