//! The SQL of what figures are computed from, written once for both engines
//! (see `mod.rs`).

use crate::db::dialect::Dialect;
use crate::db::figures::*;
use crate::db::figures::{AGENT, MODEL};
use crate::db::rows::{ContributionRow, FlowRow};
use async_trait::async_trait;
use failpass_shared::api::figures::{DistributionQuery, Facets, FiguresQuery, KEY_SEPARATOR};
use failpass_shared::api::oracles::OracleSummary;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::figures;
use failpass_shared::figures::{ReportContribution, ReportFlow};

use super::{Db, Engine};
use crate::db::{ProjectScope, StorageError, StorageResult};

#[async_trait]
impl FigureStore for Engine {
    async fn oracle_summary(&self, project: Option<&str>, scope: &ProjectScope) -> StorageResult<OracleSummary> {
        use crate::db::rows::{parse, parse_opt};
        use failpass_shared::figures::{OracleCounts, oracle_summary};
        let visible = scope.sql("p");
        // The counts, from the facts the writes maintain per project.
        let facts: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT f.fact, CAST(SUM(f.n) AS BIGINT) FROM figure_project_facts f JOIN projects p ON p.id = f.project_id \
             WHERE {visible} AND ($1 IS NULL OR p.slug = $1) GROUP BY f.fact HAVING SUM(f.n) <> 0",
        )))
        .bind(project)
        .fetch_all(&self.read)
        .await?;
        let (mut reports, mut causes, mut minutes, mut judged, mut right) = (Vec::new(), Vec::new(), Vec::new(), 0, 0);
        for (fact, n) in facts {
            if let Some(oracle) = fact.strip_prefix("oracle:") {
                let (kind, source) = oracle.split_once('|').unwrap_or((oracle, ""));
                let none = |v: &str| (!v.is_empty()).then(|| v.to_owned());
                reports.push((
                    parse_opt(none(kind).as_deref(), "oracles.kind")?,
                    parse_opt(none(source).as_deref(), "oracles.source")?,
                    n,
                ));
            } else if let Some(value) = fact.strip_prefix("minutes:") {
                // How many oracles took this many minutes to write.
                let value: f64 = value.parse().map_err(|_| {
                    StorageError::Corrupt(format!("figure_project_facts: {fact:?} is not a number of minutes"))
                })?;
                minutes.extend(std::iter::repeat_n(value, usize::try_from(n).unwrap_or(0)));
            } else if let Some(cause) = fact.strip_prefix("cause:") {
                causes.push((parse(cause, "attempts.failure_cause")?, n));
            } else if fact == "llm_judged" {
                judged = n;
            } else if fact == "llm_right" {
                right = n;
            }
        }
        causes.sort_by(|a: &(failpass_shared::model::FailureCause, i64), b| {
            b.1.cmp(&a.1).then_with(|| a.0.as_str().cmp(b.0.as_str()))
        });
        Ok(oracle_summary(OracleCounts {
            reports,
            authoring_minutes: minutes,
            failure_causes: causes,
            llm_judged: judged,
            llm_right: right,
        }))
    }

    async fn figure_contributions(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<ReportContribution>> {
        let mut qb = Self::contributions_query(query, scope);
        let rows: Vec<ContributionRow> = qb.build_query_as().fetch_all(&self.read).await?;
        Ok(rows.into_iter().map(ContributionRow::into_contribution).collect())
    }

    async fn figure_fold(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<(String, failpass_shared::figures::GroupTotals)>> {
        use futures_util::TryStreamExt;
        let mut qb = Self::contributions_query(query, scope);
        let mut rows = qb.build_query_as::<ContributionRow>().fetch(&self.read);
        let mut groups = std::collections::BTreeMap::new();
        while let Some(row) = rows.try_next().await? {
            figures::fold_contribution(&mut groups, row.into_contribution());
        }
        Ok(groups.into_iter().collect())
    }

    async fn figure_totals(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<Vec<(String, failpass_shared::figures::GroupTotals)>>> {
        match self.rollup_totals(query, scope).await? {
            Some(totals) => Ok(Some(totals)),
            None => match self.period_totals(query, scope).await? {
                Some(totals) => Ok(Some(totals)),
                None => self.spent_totals(query, scope).await,
            },
        }
    }

    async fn check_figures(&self, repair: bool) -> StorageResult<crate::db::figures::FigureCheck> {
        self.check_figures_now(repair).await
    }

    async fn metric_values(
        &self,
        query: &DistributionQuery,
        scope: &ProjectScope,
    ) -> StorageResult<std::collections::BTreeMap<String, Vec<f64>>> {
        use failpass_shared::api::figures::Metric;
        let column = match query.metric {
            Metric::CostUsd => "a.cost_usd",
            Metric::WallSeconds => "a.wall_seconds",
        };
        let q = &query.figures;
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT {} AS key, CAST({column} AS DOUBLE PRECISION) AS value \
             FROM reports r JOIN projects p ON p.id = r.project_id",
            Self::group_key(q).join(&format!(" || '{}' || ", KEY_SEPARATOR))
        ));
        Self::push_attempt_join(&mut qb, q, "JOIN");
        qb.push(format!(" WHERE {column} IS NOT NULL"));
        if query.metric == Metric::CostUsd {
            // An unknown cost is not a $0 attempt.
            qb.push(" AND a.cost_known");
        }
        Self::push_report_filter(&mut qb, &q.filter, scope);
        // Grouped as the rows stream in: one key per group, not per value.
        use futures_util::TryStreamExt;
        let mut rows = qb.build_query_as::<(String, f64)>().fetch(&self.read);
        let mut groups: std::collections::BTreeMap<String, Vec<f64>> = std::collections::BTreeMap::new();
        while let Some((key, value)) = rows.try_next().await? {
            match groups.get_mut(&key) {
                Some(values) => values.push(value),
                None => {
                    groups.insert(key, vec![value]);
                }
            }
        }
        Ok(groups)
    }

    async fn first_ranks(&self, filter: &ReportFilter, scope: &ProjectScope) -> StorageResult<Vec<(String, u32)>> {
        let mut qb = sqlx::QueryBuilder::<Db>::new(
            "SELECT a.agent, MIN(a.success_rank) FROM attempts a JOIN reports r ON r.id = a.report_id \
             JOIN projects p ON p.id = r.project_id \
             WHERE a.goal = 'reproduce' AND a.counts AND a.success_rank IS NOT NULL",
        );
        Self::push_report_filter(&mut qb, filter, scope);
        qb.push(" GROUP BY a.agent, a.report_id");
        let rows: Vec<(String, i32)> = qb.build_query_as().fetch_all(&self.read).await?;
        Ok(rows.into_iter().filter_map(|(a, k)| u32::try_from(k).ok().map(|k| (a, k))).collect())
    }

    async fn facets(&self, scope: &ProjectScope) -> StorageResult<Facets> {
        // From the rollups: the agent level's groups name every agent with
        // an attempt, the model level's every model (an attempt without one
        // is `unknown` there, and no facet). Every goal is named, so that
        // the key's first columns (goal, level, span) are a range.
        let visible = scope.sql("p");
        let goals = failpass_shared::model::Goal::ALL.iter().map(|g| format!("'{}'", g.as_str())).collect::<Vec<_>>();
        let goals = goals.join(", ");
        let distinct = |column: &str, level: u8, unknown: &str| {
            format!(
                "SELECT DISTINCT g.{column} FROM figure_groups g JOIN projects p ON p.id = g.project_id \
                 WHERE g.goal IN ({goals}) AND g.level = {level} AND g.span = 0 AND g.reports > 0 \
                 AND {visible}{unknown}"
            )
        };
        let mut agents: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(distinct("agent", AGENT, ""))).fetch_all(&self.read).await?;
        let mut models: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(distinct("model", MODEL, " AND g.model <> 'unknown'")))
                .fetch_all(&self.read)
                .await?;
        // Sorted here: PostgreSQL's collation and SQLite's byte order differ.
        agents.sort();
        models.sort();
        Ok(Facets { agents, models })
    }

    async fn spend_usd(&self, filter: &ReportFilter, scope: &ProjectScope) -> StorageResult<f64> {
        use failpass_shared::api::reports::Dated;
        if let Some(spent) = self.period_spend(filter, scope).await? {
            return Ok(spent);
        }
        let mut qb = sqlx::QueryBuilder::<Db>::new(
            "SELECT CAST(COALESCE(SUM(a.cost_usd), 0.0) AS DOUBLE PRECISION) FROM attempts a \
             JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id WHERE a.goal = 'reproduce'",
        );
        Self::push_spent_window(&mut qb, &ReportFilter { dated: Dated::Spent, ..filter.clone() }, "a");
        let rest = ReportFilter { since: None, until: None, period: None, dated: Dated::Filed, ..filter.clone() };
        Self::push_report_filter(&mut qb, &rest, scope);
        Ok(qb.build_query_scalar().fetch_one(&self.read).await?)
    }

    async fn report_flows(&self, filter: &ReportFilter, scope: &ProjectScope) -> StorageResult<Vec<ReportFlow>> {
        // The dates are the report's own counters, kept with its attempts.
        let mut qb = sqlx::QueryBuilder::<Db>::new(
            "SELECT r.filed_at AS filed_at, r.created_at AS created_at, r.status AS status, \
             r.first_attempt_at AS first_attempt_at, r.first_counting_at AS first_counting_at, \
             r.filed_at_stated AS filed_at_stated, p.benchmark AS benchmark, \
             r.last_graded_at AS last_graded_at FROM reports r JOIN projects p ON p.id = r.project_id WHERE 1 = 1",
        );
        Self::push_report_filter(&mut qb, filter, scope);
        let rows: Vec<FlowRow> = qb.build_query_as().fetch_all(&self.read).await?;
        rows.into_iter().map(FlowRow::into_flow).collect()
    }

    async fn flow_totals(
        &self,
        filter: &ReportFilter,
        scope: &ProjectScope,
        read: &failpass_shared::figures::FlowRead,
    ) -> StorageResult<Option<failpass_shared::figures::FlowCounts>> {
        self.flow_totals_now(filter, scope, read).await
    }

    async fn value_totals(
        &self,
        query: &DistributionQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<std::collections::BTreeMap<String, failpass_shared::figures::ValueBins>>> {
        self.value_totals_now(query, scope).await
    }
}

impl Engine {
    /// The query of the contributions `query` asks for (see
    /// `FigureStore::figure_contributions`).
    fn contributions_query(query: &FiguresQuery, scope: &ProjectScope) -> sqlx::QueryBuilder<Db> {
        // Each dimension its own column, so no name can blur two groups.
        let dims = Self::group_key(query);
        let part = |i: usize| dims.get(i).map_or_else(|| "CAST(NULL AS TEXT)".to_owned(), |d| d.to_string());
        let key = format!("{} AS key, {} AS key1, {}", part(0), part(1), part(2));
        let join =
            if query.is_per_attempt() || query.agent.is_some() || query.model.is_some() { "JOIN" } else { "LEFT JOIN" };
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT {key} AS key2, r.has_det_oracle AS det, \
             CASE WHEN r.oracle_source = 'in_patch_test' THEN TRUE ELSE FALSE END AS in_patch, \
             COUNT(a.id) AS attempts, \
             COALESCE(SUM(CASE WHEN a.graded THEN 1 ELSE 0 END), 0) AS graded, \
             COALESCE(SUM(CASE WHEN a.counts THEN 1 ELSE 0 END), 0) AS counting, \
             COALESCE(SUM(CASE WHEN a.verdict = 'lead' THEN 1 ELSE 0 END), 0) AS leads, \
             COALESCE(SUM(CASE WHEN a.verdict = 'error' THEN 1 ELSE 0 END), 0) AS errors, \
             COALESCE(SUM(CASE WHEN a.awaiting THEN 1 ELSE 0 END), 0) AS awaiting, \
             COALESCE(SUM(a.cost_usd), 0.0) AS cost, \
             COALESCE(SUM(CASE WHEN a.counts THEN a.cost_usd ELSE 0.0 END), 0.0) AS cost_counting, \
             COALESCE(SUM(CASE WHEN a.id IS NULL OR a.cost_known THEN 0 ELSE 1 END), 0) AS without_cost, \
             COALESCE(SUM(CASE WHEN a.counts AND NOT a.cost_known THEN 1 ELSE 0 END), 0) AS counting_without_cost, \
             CAST(COALESCE(SUM(a.api_calls), 0) AS BIGINT) AS api_calls, \
             COUNT(a.api_calls) AS with_api_calls \
             FROM reports r JOIN projects p ON p.id = r.project_id"
        ));
        Self::push_attempt_join(&mut qb, query, join);
        qb.push(" WHERE 1 = 1");
        Self::push_report_filter(&mut qb, &query.filter, scope);
        qb.push(" GROUP BY 1, 2, 3, r.id, r.has_det_oracle, r.oracle_source");
        qb
    }

    /// The SQL giving a row's group key, one expression per dimension.
    pub(in crate::db) fn group_key(query: &FiguresQuery) -> Vec<&'static str> {
        use failpass_shared::model::GroupBy;
        let dimension = |d: GroupBy| match d {
            GroupBy::None => "'all'",
            GroupBy::Project => "p.slug",
            GroupBy::Route => "r.route",
            GroupBy::Category => "r.category",
            GroupBy::Agent => "a.agent",
            GroupBy::Model => "COALESCE(a.model, 'unknown')",
            GroupBy::Cutoff => super::rollup_sums::CUTOFF_KEY,
            GroupBy::Week => Self::WEEK_KEY,
            GroupBy::Month => Self::MONTH_KEY,
            GroupBy::Vagueness => "CASE WHEN r.vague THEN 'vague' ELSE 'clear' END",
        };
        query.dimensions().into_iter().map(dimension).collect()
    }

    /// `JOIN attempts a` for the query's goal, agent and model.
    pub(in crate::db) fn push_attempt_join(qb: &mut sqlx::QueryBuilder<Db>, query: &FiguresQuery, join: &str) {
        qb.push(format!(" {join} attempts a ON a.report_id = r.id AND a.goal = "));
        qb.push_bind(query.goal.as_str());
        if let Some(v) = &query.agent {
            qb.push(" AND a.agent = ").push_bind(v.clone());
        }
        if let Some(v) = &query.model {
            qb.push(" AND a.model = ").push_bind(v.clone());
        }
        // A spend window counts only the attempts started in it.
        Self::push_spent_window(qb, &query.filter, "a");
    }
}
