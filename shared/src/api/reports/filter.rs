//! The reports list's and the figures' query: filters, periods, sorting,
//! paging, and the parsing of their parameters (each refusal names its field).

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::super::query::{FieldError, non_empty, parse_field};
use super::super::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::model::{ReportStatus, Route, Verdict};

/// Filters shared by the reports list and the figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReportFilter {
    /// Project slug.
    pub project: Option<String>,
    pub route: Option<Route>,
    /// Reports in one of these states (none: any).
    #[serde(default, skip_serializing_if = "Statuses::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub status: Statuses,
    /// Reports carrying this label.
    pub label: Option<String>,
    /// Reports whose best verdict is this.
    pub verdict: Option<Verdict>,
    /// Free text over title, body and external id (case-insensitive).
    pub q: Option<String>,
    /// Reports filed on or after this day (UTC).
    #[cfg_attr(target_arch = "wasm32", serde(default, deserialize_with = "crate::time::date_opt"))]
    pub since: Option<NaiveDate>,
    /// Reports filed on or before this day (UTC).
    #[cfg_attr(target_arch = "wasm32", serde(default, deserialize_with = "crate::time::date_opt"))]
    pub until: Option<NaiveDate>,
    /// Reports whose route the rule was unsure of (`true`), or sure of (`false`).
    pub route_check: Option<bool>,
    /// A window relative to today (this month, the last 30 days…), instead
    /// of `since` and `until`.
    #[serde(default)]
    pub period: Option<Period>,
    /// Which date the window (`since`/`until` or `period`) is of: filing
    /// (the default), the first counting reproduction, or spend (attempts
    /// started in it; the figures then count only those attempts).
    #[serde(default)]
    pub dated: Dated,
}

/// The states a filter keeps: one (`new`), several (`new,needs_review`),
/// or `open`: not in a final state (new, in progress, needs review). A set
/// of bits in [`ReportStatus::ALL`]'s order (a copy costs nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Statuses(u32);

impl Statuses {
    /// Not in a final state: the backlog's states.
    pub const OPEN: [ReportStatus; 3] = [ReportStatus::New, ReportStatus::InProgress, ReportStatus::NeedsReview];

    fn bit(s: ReportStatus) -> u32 {
        ReportStatus::ALL.iter().position(|a| *a == s).map_or(0, |i| 1 << i)
    }

    /// These states.
    pub fn of(states: &[ReportStatus]) -> Self {
        Self(states.iter().fold(0, |bits, s| bits | Self::bit(*s)))
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The states, in their own order.
    pub fn states(self) -> impl Iterator<Item = ReportStatus> {
        ReportStatus::ALL.iter().copied().filter(move |s| self.0 & Self::bit(*s) != 0)
    }

    /// `open`, or states separated by commas, each named when wrong.
    pub fn parse(field: &str, value: &str) -> Result<Self, FieldError> {
        let mut out = Self::default();
        for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            out.0 |= if part == "open" { Self::of(&Self::OPEN).0 } else { Self::bit(parse_field(field, part)?) };
        }
        Ok(out)
    }
}

impl std::fmt::Display for Statuses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == Self::of(&Self::OPEN) {
            return f.write_str("open");
        }
        for (i, s) in self.states().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(s.as_str())?;
        }
        Ok(())
    }
}

impl Serialize for Statuses {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Statuses {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = String::deserialize(d)?;
        Self::parse("status", &v).map_err(serde::de::Error::custom)
    }
}

crate::model::string_enum!(
    /// A window relative to today (UTC); weeks start on Monday.
    Period, "period" {
        ThisWeek => "this_week",
        LastWeek => "last_week",
        Last30Days => "last_30_days",
        ThisMonth => "this_month",
        LastMonth => "last_month",
        Last90Days => "last_90_days",
        ThisQuarter => "this_quarter",
        LastQuarter => "last_quarter",
        ThisYear => "this_year",
    }
);

impl Period {
    /// The period's days as `[first, last]`, on the day `today`.
    pub fn days(self, today: NaiveDate) -> (NaiveDate, NaiveDate) {
        use chrono::{Datelike, Duration};
        let month_start = |y: i32, m: u32| NaiveDate::from_ymd_opt(y, m, 1).unwrap_or(today);
        let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
        let this_month = month_start(today.year(), today.month());
        let quarter = month_start(today.year(), (today.month() - 1) / 3 * 3 + 1);
        let months_back = |d: NaiveDate, n: u32| d.checked_sub_months(chrono::Months::new(n)).unwrap_or(d);
        let day_before = |d: NaiveDate| d.pred_opt().unwrap_or(d);
        match self {
            Period::ThisWeek => (monday, today),
            Period::LastWeek => (monday - Duration::days(7), monday - Duration::days(1)),
            Period::Last30Days => (today - Duration::days(29), today),
            Period::ThisMonth => (this_month, today),
            Period::LastMonth => (months_back(this_month, 1), day_before(this_month)),
            Period::Last90Days => (today - Duration::days(89), today),
            Period::ThisQuarter => (quarter, today),
            Period::LastQuarter => (months_back(quarter, 3), day_before(quarter)),
            Period::ThisYear => (month_start(today.year(), 1), today),
        }
    }

    /// The period in words, as a page's heading says it.
    pub fn label(self) -> String {
        let s = self.as_str().replace('_', " ");
        s[..1].to_uppercase() + &s[1..]
    }
}

crate::model::string_enum!(
    /// Which date a filter's window is of.
    #[derive(Default)]
    Dated, "dated" {
        /// When the report was filed.
        #[default]
        Filed => "filed",
        /// When its first counting reproduction ended.
        Reproduced => "reproduced",
        /// When money was spent on it: attempts started in the window.
        Spent => "spent",
    }
);

impl ReportFilter {
    /// Its query parameters, as error messages list them.
    pub const PARAMETERS: &'static str =
        "project, route, status, label, verdict, q, since, until, period, dated, route_check";

    /// Takes `key=value` if it is one of the filter's parameters.
    /// `Ok(false)` means the key is not a filter parameter.
    pub fn take(&mut self, key: &str, value: &str) -> Result<bool, FieldError> {
        let v = non_empty(value);
        match key {
            "project" => self.project = v.map(str::to_owned),
            "route" => self.route = v.map(|v| parse_field(key, v)).transpose()?,
            "status" => self.status = v.map(|v| Statuses::parse(key, v)).transpose()?.unwrap_or_default(),
            "label" => self.label = v.map(str::to_owned),
            "verdict" => self.verdict = v.map(|v| parse_field(key, v)).transpose()?,
            "q" => {
                if v.is_some_and(|v| v.len() > 200) {
                    return Err(FieldError::new("q", "is longer than 200 characters"));
                }
                self.q = v.map(str::to_owned)
            }
            "since" => self.since = v.map(|v| parse_day(key, v)).transpose()?,
            "until" => self.until = v.map(|v| parse_day(key, v)).transpose()?,
            "period" => self.period = v.map(|v| parse_field(key, v)).transpose()?,
            "dated" => self.dated = v.map(|v| parse_field(key, v)).transpose()?.unwrap_or_default(),
            "route_check" => {
                self.route_check = v
                    .map(|v| match v {
                        "true" => Ok(true),
                        "false" => Ok(false),
                        _ => Err(FieldError::new(key, format!("`{v}` is not true or false"))),
                    })
                    .transpose()?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(v) = &self.project {
            out.push(("project", v.clone()));
        }
        if let Some(v) = self.route {
            out.push(("route", v.to_string()));
        }
        if !self.status.is_empty() {
            out.push(("status", self.status.to_string()));
        }
        if let Some(v) = &self.label {
            out.push(("label", v.clone()));
        }
        if let Some(v) = self.verdict {
            out.push(("verdict", v.to_string()));
        }
        if let Some(v) = &self.q {
            out.push(("q", v.clone()));
        }
        if let Some(v) = self.since {
            out.push(("since", v.to_string()));
        }
        if let Some(v) = self.until {
            out.push(("until", v.to_string()));
        }
        if let Some(v) = self.period {
            out.push(("period", v.to_string()));
        }
        if self.dated != Dated::Filed {
            out.push(("dated", self.dated.to_string()));
        }
        if let Some(v) = self.route_check {
            out.push(("route_check", v.to_string()));
        }
        out
    }

    /// A window that ends before it starts is a mistake worth naming.
    pub fn check_window(&self) -> Result<(), FieldError> {
        if self.period.is_some() && (self.since.is_some() || self.until.is_some()) {
            return Err(FieldError::new("period", "give a period or since and until, not both"));
        }
        match (self.since, self.until) {
            (Some(s), Some(u)) if s > u => {
                Err(FieldError::new("since", format!("{s} is after until ({u}): the window holds no day")))
            }
            _ => Ok(()),
        }
    }

    /// The time window as instants, on the day `today` (for a `period`):
    /// `[since 00:00, until+1 00:00)` UTC.
    pub fn window(&self, today: NaiveDate) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
        let start = |d: NaiveDate| d.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
        let (since, until) = match self.period {
            Some(p) => {
                let (first, last) = p.days(today);
                (Some(first), Some(last))
            }
            None => (self.since, self.until),
        };
        (since.and_then(start), until.and_then(|d| d.succ_opt()).and_then(start))
    }
}

/// A day as `YYYY-MM-DD`, naming the parameter when it is anything else.
pub fn parse_day(field: &str, value: &str) -> Result<NaiveDate, FieldError> {
    // By hand: chrono's general format parser would weigh on the dashboard's bundle.
    let mut parts = value.split('-');
    let mut num = |len: usize| {
        parts
            .next()
            .filter(|p| p.len() == len && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok())
    };
    let day = match (num(4), num(2), num(2), parts.next()) {
        (Some(y), Some(m), Some(d), None) => NaiveDate::from_ymd_opt(y as i32, m, d),
        _ => None,
    };
    day.filter(|d| (1970..=9999).contains(&d.year()))
        .ok_or_else(|| FieldError::new(field, format!("`{value}` is not a day: expected YYYY-MM-DD, e.g. 2026-11-30")))
}

crate::model::string_enum!(
    /// What the reports list can be ordered by; ties break on id.
    ReportSort, "sort" {
        FiledAt => "filed_at",
        CreatedAt => "created_at",
        Cost => "cost",
        Attempts => "attempts",
        /// The last change to the report or its attempts (`last_activity_at`).
        LastActivity => "last_activity",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for ReportSort {
    fn default() -> Self {
        ReportSort::FiledAt
    }
}

crate::model::string_enum!(
    /// `asc` or `desc`.
    Order, "order" {
        Asc => "asc",
        Desc => "desc",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for Order {
    fn default() -> Self {
        Order::Desc
    }
}

crate::model::string_enum!(
    /// Which reports are new to the reader: arrived in failpass in the last
    /// 24 hours, or since their last visit ended.
    Arrived, "arrived" {
        Day => "24h",
        Visit => "visit",
    }
);

/// `GET /api/v1/reports` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportListQuery {
    pub filter: ReportFilter,
    /// Reports with an attempt by this agent.
    pub agent: Option<String>,
    /// Reports with an attempt by this model.
    pub model: Option<String>,
    /// Stuck reports: not in a final state, and nothing happened to them
    /// (no change, no attempt) for this many days.
    pub stuck_days: Option<u32>,
    /// Reports assigned to this member; `me` is the caller, `none` nobody.
    pub assignee: Option<String>,
    /// Reports new to the reader (`24h`, or since their last `visit`).
    pub arrived: Option<Arrived>,
    /// The time `arrived` stands for, as the server works it out: reports
    /// that arrived after it (never read from an address).
    #[serde(skip)]
    pub arrived_after: Option<chrono::DateTime<chrono::Utc>>,
    pub sort: ReportSort,
    pub order: Order,
    pub limit: u32,
    pub cursor: Option<String>,
}

impl Default for ReportListQuery {
    fn default() -> Self {
        Self {
            filter: ReportFilter::default(),
            agent: None,
            model: None,
            stuck_days: None,
            assignee: None,
            arrived: None,
            arrived_after: None,
            sort: ReportSort::default(),
            order: Order::default(),
            limit: DEFAULT_LIMIT,
            cursor: None,
        }
    }
}

impl ReportListQuery {
    /// Parses query pairs; an unknown parameter is an error so typos do not
    /// silently widen a list.
    pub fn from_pairs<'a, I>(pairs: I) -> Result<Self, FieldError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut q = Self::default();
        for (k, v) in pairs {
            if q.filter.take(k, v)? {
                continue;
            }
            let val = non_empty(v);
            match k {
                "sort" => q.sort = val.map(|v| parse_field(k, v)).transpose()?.unwrap_or_default(),
                "order" => q.order = val.map(|v| parse_field(k, v)).transpose()?.unwrap_or_default(),
                "limit" => q.limit = val.map(parse_limit).transpose()?.unwrap_or(DEFAULT_LIMIT),
                "cursor" => q.cursor = val.map(str::to_owned),
                "agent" => q.agent = val.map(str::to_owned),
                "model" => q.model = val.map(str::to_owned),
                "assignee" => q.assignee = val.map(|v| v.trim().to_owned()),
                "arrived" => q.arrived = val.map(|v| parse_field(k, v)).transpose()?,
                "stuck_days" => {
                    q.stuck_days = val
                        .map(|v| {
                            v.parse::<u32>().ok().filter(|d| (1..=3650).contains(d)).ok_or_else(|| {
                                FieldError::new(k, format!("`{v}` is not a number of days from 1 to 3650"))
                            })
                        })
                        .transpose()?
                }
                _ => {
                    return Err(unknown_parameter(
                        k,
                        &format!(
                            "{}, agent, model, stuck_days, assignee, arrived, sort, order, limit, cursor",
                            ReportFilter::PARAMETERS
                        ),
                    ));
                }
            }
        }
        q.filter.check_window()?;
        Ok(q)
    }

    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = self.filter.pairs();
        for (k, v) in [("agent", &self.agent), ("model", &self.model)] {
            if let Some(v) = v {
                out.push((k, v.clone()));
            }
        }
        if let Some(v) = self.stuck_days {
            out.push(("stuck_days", v.to_string()));
        }
        if let Some(v) = &self.assignee {
            out.push(("assignee", v.clone()));
        }
        if let Some(v) = self.arrived {
            out.push(("arrived", v.as_str().to_owned()));
        }
        if self.sort != ReportSort::default() {
            out.push(("sort", self.sort.as_str().to_owned()));
        }
        if self.order != Order::default() {
            out.push(("order", self.order.as_str().to_owned()));
        }
        if self.limit != DEFAULT_LIMIT {
            out.push(("limit", self.limit.to_string()));
        }
        if let Some(c) = &self.cursor {
            out.push(("cursor", c.clone()));
        }
        out
    }
}

/// `limit`: 1 to [`MAX_LIMIT`].
pub fn parse_limit(v: &str) -> Result<u32, FieldError> {
    match v.parse::<u32>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(FieldError::new("limit", format!("`{v}` is not a whole number between 1 and {MAX_LIMIT}"))),
    }
}

pub fn unknown_parameter(key: &str, known: &str) -> FieldError {
    FieldError::new(key, format!("unknown query parameter `{key}`; known: {known}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_take_several_states_and_open() {
        use ReportStatus::*;
        let open = Statuses::parse("status", "open").unwrap();
        assert_eq!(open.states().collect::<Vec<_>>(), Statuses::OPEN);
        assert_eq!(open.to_string(), "open");
        let two = Statuses::parse("status", "needs_review, new,new").unwrap();
        assert_eq!(two.states().collect::<Vec<_>>(), [New, NeedsReview], "each once, in their own order");
        assert_eq!(two.to_string(), "new,needs_review");
        assert_eq!(Statuses::parse("status", "open,new").unwrap(), open);
        assert_eq!(Statuses::parse("status", "open,stale").unwrap_err().field, "status");
        assert!(Statuses::parse("status", "").unwrap().is_empty());
    }

    #[test]
    fn periods_are_days_relative_to_today() {
        let day = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let today = day("2026-12-03"); // a Thursday
        let cases = [
            (Period::ThisWeek, "2026-11-30", "2026-12-03"),
            (Period::LastWeek, "2026-11-23", "2026-11-29"),
            (Period::Last30Days, "2026-11-04", "2026-12-03"),
            (Period::ThisMonth, "2026-12-01", "2026-12-03"),
            (Period::LastMonth, "2026-11-01", "2026-11-30"),
            (Period::ThisQuarter, "2026-10-01", "2026-12-03"),
            (Period::LastQuarter, "2026-07-01", "2026-09-30"),
            (Period::ThisYear, "2026-01-01", "2026-12-03"),
            (Period::Last90Days, "2026-09-05", "2026-12-03"),
        ];
        for (p, first, last) in cases {
            assert_eq!(p.days(today), (day(first), day(last)), "{p}");
        }
        assert_eq!(Period::LastMonth.days(day("2026-01-15")), (day("2025-12-01"), day("2025-12-31")));
        // a week starts on Monday, on a Monday and on a Sunday alike
        assert_eq!(Period::ThisWeek.days(day("2026-11-30")), (day("2026-11-30"), day("2026-11-30")));
        assert_eq!(Period::ThisWeek.days(day("2026-12-06")), (day("2026-11-30"), day("2026-12-06")));
        assert_eq!(Period::LastWeek.days(day("2026-12-06")), (day("2026-11-23"), day("2026-11-29")));
        assert_eq!(Period::LastQuarter.days(day("2026-02-01")), (day("2025-10-01"), day("2025-12-31")));
        assert_eq!(Period::Last30Days.label(), "Last 30 days");
    }

    #[test]
    fn a_period_and_a_dated_window_parse_and_round_trip() {
        let mut f = ReportFilter::default();
        assert!(f.take("period", "this_month").unwrap());
        assert!(f.take("dated", "reproduced").unwrap());
        assert_eq!((f.period, f.dated), (Some(Period::ThisMonth), Dated::Reproduced));
        assert_eq!(f.pairs(), [("period", "this_month".to_owned()), ("dated", "reproduced".to_owned())]);
        assert_eq!(f.take("period", "fortnight").unwrap_err().field, "period");
        assert_eq!(f.take("dated", "closed").unwrap_err().field, "dated");
        f.since = NaiveDate::from_ymd_opt(2026, 1, 1);
        assert!(f.check_window().unwrap_err().message.contains("not both"));
        let (from, to) = ReportFilter { period: Some(Period::LastWeek), ..Default::default() }
            .window(NaiveDate::from_ymd_opt(2026, 12, 3).unwrap());
        assert_eq!(from.unwrap().to_rfc3339(), "2026-11-23T00:00:00+00:00");
        assert_eq!(to.unwrap().to_rfc3339(), "2026-11-30T00:00:00+00:00");
    }

    #[test]
    fn days_parse_strictly() {
        assert_eq!(parse_day("since", "2026-02-28").unwrap().to_string(), "2026-02-28");
        for bad in [
            "2026-02-30",
            "2026-2-28",
            "26-02-28",
            "2026-02-28x",
            "2026-02-28-01",
            "",
            "1969-12-31",
            "+202-01-01",
            "2026-0a-01",
        ] {
            let e = parse_day("since", bad).unwrap_err();
            assert_eq!(e.field, "since", "{bad}");
        }
    }

    #[test]
    fn list_query_round_trips() {
        let q = ReportListQuery::from_pairs([
            ("route", "agent_first"),
            ("q", "nan"),
            ("sort", "cost"),
            ("order", "asc"),
            ("limit", "10"),
            ("status", ""),
        ])
        .unwrap();
        assert_eq!(q.filter.route, Some(Route::AgentFirst));
        assert_eq!(q.filter.status, Statuses::default());
        assert_eq!(q.sort, ReportSort::Cost);
        let pairs = q.pairs();
        let back = ReportListQuery::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(back, q);
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let e = ReportListQuery::from_pairs([("route", "robot")]).unwrap_err();
        assert_eq!(e.field, "route");
        assert!(e.message.contains("human_first"), "{}", e.message);
        assert_eq!(ReportListQuery::from_pairs([("limit", "0")]).unwrap_err().field, "limit");
        assert_eq!(ReportListQuery::from_pairs([("limit", "9999")]).unwrap_err().field, "limit");
        assert_eq!(ReportListQuery::from_pairs([("rout", "x")]).unwrap_err().field, "rout");
        assert_eq!(ReportListQuery::from_pairs([("sort", "title")]).unwrap_err().field, "sort");
    }
}
