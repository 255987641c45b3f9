//! Throughput as counts (issue 16): what each report adds to the weekly
//! flows, the backlog and the time to reproduction, as events on whole days
//! and histogram bins. Storage keeps these counts summed per group as data
//! arrives, and the exact path folds every report into the same counts, so
//! both answer through [`throughput_of`] and agree by construction.
//!
//! Two figures are read from counts rather than exact values:
//! - backlog ages are counted from the middle of the filing day (UTC), so
//!   each is within 12 hours of the exact age;
//! - times to reproduction fall in bins [`BINS_PER_DOUBLING`] to a doubling
//!   from one minute (bin 0 holds everything under a minute), each read as
//!   its geometric middle: within 2.2% of the exact time (30 s under a
//!   minute; times past [`BINS`] bins, about ten years, read as the last).

use std::collections::BTreeMap;

use super::ReportFlow;
use crate::api::figures::{Throughput, WeekFlow};
use crate::model::ReportStatus;

crate::model::string_enum!(
    /// What a report adds to the throughput counts, and on which day or bin.
    FlowKind, "flow kind" {
        /// Every report, once (at 0).
        Reports => "reports",
        /// Regressed (at 0).
        Regressed => "regressed",
        /// In a final state other than a reproduction (at 0).
        Resolved => "resolved",
        /// Not yet final (at 0).
        Backlog => "backlog",
        /// On its filing day.
        Filed => "filed",
        /// On the day its first counting attempt ended, whatever its status.
        Counted => "counted",
        /// Graded and not reproduced, on the day its last graded attempt ended.
        NotReproduced => "not_reproduced",
        /// In the week it was filed (at the day of its Monday).
        FiledWeek => "filed_week",
        /// Reproduced or regressed, in the week its first counting attempt ended.
        ReproducedWeek => "reproduced_week",
        /// Graded and not reproduced, in the week its last graded attempt ended.
        NotReproducedWeek => "not_reproduced_week",
        /// Not yet final, on its filing day.
        Open => "open",
        /// Reproduced, in the bin of its time to reproduction.
        TimeToReproduction => "time_to_reproduction",
        /// On its filing day, once its first counting attempt has ended
        /// (whatever its status): the glance's reports by filing date.
        FiledCounted => "filed_counted",
        /// On its filing day, once graded and not reproduced.
        FiledNotReproduced => "filed_not_reproduced",
    }
);

/// What a reader of the counts needs: each kind, whole or on the days
/// `from..=to` only.
pub type FlowRead = Vec<(FlowKind, Option<(i64, i64)>)>;

/// What [`throughput_of`] reads.
pub fn throughput_read() -> FlowRead {
    use FlowKind::*;
    [Reports, Regressed, Resolved, FiledWeek, ReproducedWeek, NotReproducedWeek, Backlog, Open, TimeToReproduction]
        .into_iter()
        .map(|k| (k, None))
        .collect()
}

/// What a glance over the days `from..=to` reads: the day kinds on those
/// days, and the backlog with its ages.
pub fn glance_read(from: chrono::NaiveDate, to: chrono::NaiveDate) -> FlowRead {
    let days = Some((day_of_date(from), day_of_date(to)));
    vec![
        (FlowKind::Counted, days),
        (FlowKind::NotReproduced, days),
        (FlowKind::Filed, days),
        (FlowKind::Backlog, None),
        (FlowKind::Open, None),
    ]
}

/// What a glance reads of the reports filed on the days `from..=to`: how
/// many were reproduced, and how many reached a final state, whenever.
pub fn cohort_read(from: chrono::NaiveDate, to: chrono::NaiveDate) -> FlowRead {
    let days = Some((day_of_date(from), day_of_date(to)));
    vec![(FlowKind::FiledCounted, days), (FlowKind::FiledNotReproduced, days)]
}

/// Every kind, whole.
pub fn everything() -> FlowRead {
    FlowKind::ALL.iter().map(|k| (*k, None)).collect()
}

/// The day of [`day_of`] that is `d`.
fn day_of_date(d: chrono::NaiveDate) -> i64 {
    d.and_hms_opt(0, 0, 0).map_or(0, |t| day_of(t.and_utc()))
}

/// The Monday of the week holding `day` (1970-01-01 was a Thursday).
pub fn monday_of(day: i64) -> i64 {
    day - (day + 3).rem_euclid(7)
}

/// What the counts round, for the pages that show medians read from them.
pub const RESOLUTION_NOTE: &str = "Backlog ages count from the middle of the filing day (within 12 hours); \
     times to reproduction are read from bins a sixteenth of a doubling wide from one minute (within 2.2%).";

/// Bins of the time to reproduction to a doubling.
pub const BINS_PER_DOUBLING: i64 = 16;

/// The last bin: times from about ten years on.
pub const BINS: i64 = 360;

/// Seconds in a day.
const DAY: i64 = 86_400;

/// The day (UTC, counted from 1970-01-01) holding `t`.
pub fn day_of(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp().div_euclid(DAY)
}

/// The date of a day of [`day_of`].
pub fn date_of_day(day: i64) -> chrono::NaiveDate {
    chrono::DateTime::from_timestamp(day * DAY, 0).map_or(chrono::NaiveDate::MIN, |t| t.date_naive())
}

/// The bin of a time to reproduction of `hours`.
pub fn hours_bin(hours: f64) -> i64 {
    let minutes = hours * 60.0;
    if !minutes.is_finite() || minutes < 1.0 {
        return if minutes.is_finite() { 0 } else { BINS };
    }
    (1 + (minutes.log2() * BINS_PER_DOUBLING as f64).floor() as i64).clamp(1, BINS)
}

/// The hours a bin of [`hours_bin`] reads as: the geometric middle of its
/// edges (half a minute for bin 0).
pub fn bin_hours(bin: i64) -> f64 {
    if bin <= 0 {
        return 0.5 / 60.0;
    }
    2f64.powf((bin as f64 - 0.5) / BINS_PER_DOUBLING as f64) / 60.0
}

/// A report as the throughput counts see it: its status and days.
/// The day of a report filed on no known day (an import that stated none):
/// it counts in no period and has no age.
pub const NO_DAY: i64 = -1_000_000_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowFacts {
    pub status: ReportStatus,
    /// The day it was filed; [`NO_DAY`] when nobody stated it.
    pub filed_day: i64,
    /// The day its first counting attempt ended.
    pub counted_day: Option<i64>,
    /// The day its last graded attempt ended.
    pub graded_day: Option<i64>,
    /// The bin of its time to reproduction, when it has one.
    pub ttr_bin: Option<i64>,
    /// A benchmark's instance: not final is not a backlog.
    pub benchmark: bool,
}

impl FlowFacts {
    pub fn of(flow: &ReportFlow) -> Self {
        let reproduced = matches!(flow.status, ReportStatus::Reproduced | ReportStatus::Regressed);
        FlowFacts {
            status: flow.status,
            filed_day: if flow.filed_stated { day_of(flow.filed_at) } else { NO_DAY },
            counted_day: flow.first_counting_at.map(day_of),
            graded_day: flow.last_graded_at.map(day_of),
            ttr_bin: flow
                .first_counting_at
                .filter(|_| reproduced)
                .zip(flow.known_intake())
                .map(|(t, intake)| hours_bin(((t - intake).num_seconds() as f64 / 3600.0).max(0.0))),
            benchmark: flow.benchmark,
        }
    }

    /// The counts the report adds, each once.
    pub fn events(&self) -> Vec<(FlowKind, i64)> {
        use ReportStatus::*;
        let mut out = vec![(FlowKind::Reports, 0)];
        // A benchmark's instance is a report, and no part of the team's flow:
        // not filed into the intake, not a reproduction of it, not a backlog.
        if self.benchmark {
            return out;
        }
        let filed = (self.filed_day != NO_DAY).then_some(self.filed_day);
        if let Some(d) = filed {
            out.push((FlowKind::Filed, d));
            out.push((FlowKind::FiledWeek, monday_of(d)));
        }
        if let Some(d) = self.counted_day {
            out.push((FlowKind::Counted, d));
            if let Some(f) = filed {
                out.push((FlowKind::FiledCounted, f));
            }
        }
        match self.status {
            Reproduced | Regressed => {
                if self.status == Regressed {
                    out.push((FlowKind::Regressed, 0));
                }
                if let Some(d) = self.counted_day {
                    out.push((FlowKind::ReproducedWeek, monday_of(d)));
                }
                if let Some(b) = self.ttr_bin {
                    out.push((FlowKind::TimeToReproduction, b));
                }
            }
            NotReproduced => {
                if let Some(d) = self.graded_day {
                    out.push((FlowKind::NotReproduced, d));
                    out.push((FlowKind::NotReproducedWeek, monday_of(d)));
                    if let Some(f) = filed {
                        out.push((FlowKind::FiledNotReproduced, f));
                    }
                }
            }
            New | InProgress | NeedsReview => {
                out.push((FlowKind::Backlog, 0));
                // Its age is unknown without a filing day.
                if let Some(d) = filed {
                    out.push((FlowKind::Open, d));
                }
            }
            Closed | Duplicate | WontFix | NotABug | ClosedUpstream => out.push((FlowKind::Resolved, 0)),
        }
        out
    }
}

/// Reports counted per (kind, day or bin).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowCounts(pub BTreeMap<(FlowKind, i64), u64>);

impl FlowCounts {
    /// Adds a report.
    pub fn add(&mut self, flow: &ReportFlow) {
        for e in FlowFacts::of(flow).events() {
            *self.0.entry(e).or_default() += 1;
        }
    }

    /// Every report of `kind`.
    pub fn total(&self, kind: FlowKind) -> u64 {
        self.of(kind).map(|(_, n)| n).sum()
    }

    /// The reports of `kind` on the days `from..=to`.
    /// None when `from` is after `to`.
    pub fn within(&self, kind: FlowKind, from: chrono::NaiveDate, to: chrono::NaiveDate) -> u64 {
        if from > to {
            return 0;
        }
        self.0.range((kind, day_of_date(from))..=(kind, day_of_date(to))).map(|(_, n)| *n).sum()
    }

    /// `(day or bin, reports)` of `kind`, in order.
    fn of(&self, kind: FlowKind) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.0.range((kind, i64::MIN)..=(kind, i64::MAX)).map(|((_, at), n)| (*at, *n))
    }
}

impl From<&[ReportFlow]> for FlowCounts {
    fn from(flows: &[ReportFlow]) -> Self {
        let mut counts = FlowCounts::default();
        flows.iter().for_each(|f| counts.add(f));
        counts
    }
}

/// Values with how often each occurs, ascending: the sorted list they
/// stand for, without writing it out.
pub(super) struct Weighted(pub(super) Vec<(f64, u64)>);

impl Weighted {
    pub(super) fn n(&self) -> u64 {
        self.0.iter().map(|(_, k)| k).sum()
    }

    /// The `i`th value (from 0) of the sorted list.
    fn at(&self, i: u64) -> f64 {
        let mut seen = 0;
        for (v, k) in &self.0 {
            seen += k;
            if i < seen {
                return *v;
            }
        }
        self.0.last().map_or(f64::NAN, |(v, _)| *v)
    }

    /// As `median_sorted` of the list.
    pub(super) fn median(&self) -> Option<f64> {
        let n = self.n();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(self.at(n / 2)),
            _ => Some((self.at(n / 2 - 1) + self.at(n / 2)) / 2.0),
        }
    }

    /// As `quantile` of the list.
    pub(super) fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.n();
        (n > 0).then(|| self.at(((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n) - 1))
    }
}

/// docs/domain.md's throughput from the counts: reports reaching a final
/// state per week (a reproduction when its first counting verdict lands; a
/// report graded and not reproduced when its last graded attempt ends), the
/// backlog and its age (since filing) at `now`, and the time from intake to
/// the first counting verdict, read as the module says.
pub fn throughput_of(counts: &FlowCounts, now: chrono::DateTime<chrono::Utc>) -> Throughput {
    let mut weeks: BTreeMap<String, WeekFlow> = BTreeMap::new();
    let moves = [FlowKind::FiledWeek, FlowKind::NotReproducedWeek, FlowKind::ReproducedWeek];
    for (kind, (day, n)) in moves.into_iter().flat_map(|k| counts.of(k).map(move |e| (k, e))) {
        let key = date_of_day(day).format("%Y-%m-%d").to_string();
        let w = weeks.entry(key.clone()).or_insert(WeekFlow { week: key, filed: 0, finished: 0, reproduced: 0 });
        match kind {
            FlowKind::FiledWeek => w.filed += n,
            FlowKind::NotReproducedWeek => w.finished += n,
            _ => {
                w.finished += n;
                w.reproduced += n;
            }
        }
    }
    // Backlog ages from the middle of each filing day, oldest last (reports
    // filed on no stated day have none).
    let ages = Weighted(
        counts
            .of(FlowKind::Open)
            .map(|(d, n)| (((now.timestamp() - d * DAY - DAY / 2) as f64 / DAY as f64).max(0.0), n))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect(),
    );
    let ttr = Weighted(counts.of(FlowKind::TimeToReproduction).map(|(b, n)| (bin_hours(b), n)).collect());
    Throughput {
        reports: counts.total(FlowKind::Reports),
        regressed: counts.total(FlowKind::Regressed),
        weeks: weeks.into_values().collect(),
        // Every open report; its age is known for those filed on a stated day.
        backlog: counts.total(FlowKind::Backlog),
        resolved: counts.total(FlowKind::Resolved),
        backlog_oldest_days: ages.0.last().map(|(v, _)| *v),
        backlog_median_days: ages.median(),
        time_to_reproduction_n: ttr.n(),
        time_to_reproduction_median_hours: ttr.median(),
        time_to_reproduction_p90_hours: ttr.quantile(0.9),
    }
}
