//! Figures read from the rollups (see `rollups.rs`): the groups a query
//! asks for, from whole blocks of filing days and the days at a window's
//! ends, summed into each group's totals (written once for both engines, see
//! `mod.rs`).

use super::rollup_sums::{BLOCK, COST_SUMS, COUNTS, INT_SUMS};
use crate::db::figures::{FiledDays, figure_level};
use crate::db::{ProjectScope, StorageResult};
use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::figures::GroupTotals;
use failpass_shared::model::GroupBy;

use super::{Db, Engine};

impl Engine {
    /// The totals per group `query` asks for, from the rollups; `None` when
    /// the query needs what they do not keep (a week or month, a status,
    /// label, verdict, text or date filter), which the exact path answers.
    pub(in crate::db) async fn rollup_totals(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<Vec<(String, GroupTotals)>>> {
        let Some((level, window)) = figure_level(query, crate::db::common::now().date_naive()) else {
            return Ok(None);
        };
        let dims = query.dimensions();
        let part = |i: usize| {
            dims.get(i).map_or("CAST(NULL AS TEXT)", |d| match d {
                GroupBy::None => "'all'",
                GroupBy::Project => "p.slug",
                GroupBy::Route => "g.route",
                GroupBy::Category => "g.category",
                GroupBy::Vagueness => "CASE WHEN g.vague = 1 THEN 'vague' ELSE 'clear' END",
                GroupBy::Agent => "g.agent",
                GroupBy::Model => "g.model",
                _ => "g.cutoff",
            })
        };
        let select = summed_totals();
        // One grouped part per span of filing days, summed here: grouped
        // apart, each part sorts its own rows (an agent's window of 106 days
        // sorted 5,385 rows in one piece: 10 ms of SQL, 5 to 6 ms in parts).
        let mut qb = sqlx::QueryBuilder::<Db>::new("");
        for (i, (span, from, to)) in span_parts(window).into_iter().enumerate() {
            if i > 0 {
                qb.push(" UNION ALL ");
            }
            qb.push(format!(
                "SELECT {} AS key, {} AS key1, {} AS key2, {} FROM figure_groups g JOIN projects p ON p.id = g.project_id \
                 WHERE g.goal = ",
                part(0),
                part(1),
                part(2),
                select.join(", ")
            ));
            qb.push_bind(query.goal.as_str());
            qb.push(" AND g.span = ").push_bind(i64::from(span));
            if let Some(from) = from {
                qb.push(" AND g.filed >= ").push_bind(from);
            }
            if let Some(to) = to {
                qb.push(" AND g.filed < ").push_bind(to);
            }
            push_group_filters(&mut qb, query, level, scope);
            qb.push(" GROUP BY 1, 2, 3");
        }
        use sqlx::Row;
        let rows = qb.build().fetch_all(&self.read).await?;
        let mut groups: std::collections::BTreeMap<String, GroupTotals> = std::collections::BTreeMap::new();
        for row in rows {
            let totals = totals_of(&row)?;
            let key = failpass_shared::figures::join_key_parts(
                row.try_get("key")?,
                row.try_get("key1")?,
                row.try_get("key2")?,
            );
            groups.entry(key).or_default().add(&totals);
        }
        // A group whose reports all left keeps a row of zeros: no group.
        let out: Vec<(String, GroupTotals)> = groups.into_iter().filter(|(_, t)| t.reports > 0).collect();
        Ok(Some(out))
    }
}

/// The spans of filing days that make up `window` (every day without
/// one), each `(span, from, to)` a range of the groups' key: the whole
/// blocks inside it and the days at its ends.
fn span_parts(window: Option<FiledDays>) -> Vec<(u8, Option<i64>, Option<i64>)> {
    let Some((from, to)) = window else {
        return vec![(0, None, None)];
    };
    // A window starts after the day of reports filed on no stated day.
    let from = Some(from.unwrap_or(failpass_shared::figures::NO_DAY + 1));
    // Blocks wholly inside: from the first block start at or after `from`
    // to the last at or before `to`.
    let first_block = from.map(|d| (d + BLOCK - 1).div_euclid(BLOCK) * BLOCK);
    let end_block = to.map(|d| d.div_euclid(BLOCK) * BLOCK);
    match (first_block, end_block) {
        (Some(a), Some(b)) if a >= b => vec![(2, from, to)],
        _ => {
            let mut parts = vec![(1, first_block, end_block)];
            if from.is_some() {
                parts.push((2, from, first_block));
            }
            if to.is_some() {
                parts.push((2, end_block, to));
            }
            parts
        }
    }
}

/// `AND …` for a level's groups `g` (with projects `p`) that `query`'s
/// project, route, agent and model select, in `scope`: what the figure and
/// value groups are filtered by alike.
pub(super) fn push_group_filters(
    qb: &mut sqlx::QueryBuilder<Db>,
    query: &FiguresQuery,
    level: u8,
    scope: &ProjectScope,
) {
    qb.push(" AND g.level = ").push_bind(i64::from(level));
    qb.push(" AND ").push(scope.sql("p"));
    if let Some(v) = &query.filter.project {
        qb.push(" AND p.slug = ").push_bind(v.clone());
    }
    if let Some(v) = query.filter.route {
        qb.push(" AND g.route = ").push_bind(v.as_str());
    }
    if let Some(v) = &query.agent {
        qb.push(" AND g.agent = ").push_bind(v.clone());
    }
    if let Some(v) = &query.model {
        qb.push(" AND g.model = ").push_bind(v.clone());
    }
}

/// A group's [`COUNTS`] and [`sums`] summed over rows `g`, named as
/// [`totals_of`] reads them.
pub(super) fn summed_totals() -> Vec<String> {
    let ints = COUNTS.iter().chain(&INT_SUMS);
    let mut select: Vec<String> = ints.map(|c| format!("CAST(SUM(g.{c}) AS BIGINT) AS {c}")).collect();
    select.extend(COST_SUMS.iter().map(|c| format!("CAST(SUM(g.{c}) AS DOUBLE PRECISION) AS {c}")));
    select
}

/// A group's totals from a row naming its [`COUNTS`] and [`sums`].
pub(super) fn totals_of(row: &<Db as sqlx::Database>::Row) -> Result<GroupTotals, sqlx::Error> {
    use sqlx::Row;
    let n = |c: &str| row.try_get::<i64, _>(c).map(|v| v.max(0) as u64);
    Ok(GroupTotals {
        reports: n("reports")?,
        reports_graded: n("reports_graded")?,
        reports_reproduced: n("reports_reproduced")?,
        reports_awaiting_review: n("reports_awaiting")?,
        reports_with_oracle: n("reports_with_oracle")?,
        reports_in_patch_test: n("reports_in_patch")?,
        attempts: n("attempts")?,
        attempts_graded: n("graded")?,
        attempts_counting: n("counting")?,
        attempts_lead: n("leads")?,
        attempts_error: n("errors")?,
        attempts_awaiting_review: n("awaiting")?,
        cost_usd: row.try_get("cost_usd")?,
        cost_counting_usd: row.try_get("cost_counting_usd")?,
        attempts_without_cost: n("without_cost")?,
        attempts_counting_without_cost: n("counting_without_cost")?,
        api_calls: n("api_calls")?,
        attempts_with_api_calls: n("with_api_calls")?,
    })
}
