//! How a report filter becomes SQL: the `AND …` conditions of the scope,
//! the filter's fields and its window (by filing, reproduction or spend
//! date), written once for both engines (see `mod.rs`).

use crate::db::ProjectScope;
use crate::db::common;
use crate::db::dialect::Dialect;
use failpass_shared::api::reports::{Dated, ReportFilter};

use super::{Db, Engine};

impl Engine {
    /// `AND {alias}.started_at` within the filter's window when it is a spend
    /// window (`dated=spent`), so an attempt condition counts only the
    /// attempts started in it; nothing otherwise.
    pub(in crate::db) fn push_spent_window(qb: &mut sqlx::QueryBuilder<Db>, filter: &ReportFilter, alias: &str) {
        if filter.dated != Dated::Spent {
            return;
        }
        let (since, until) = filter.window(common::now().date_naive());
        // An attempt imported without a time was spent in no period.
        qb.push(format!(" AND {alias}.time_stated"));
        if let Some(t) = since {
            qb.push(format!(" AND {alias}.started_at >= ")).push_bind(t);
        }
        if let Some(t) = until {
            qb.push(format!(" AND {alias}.started_at < ")).push_bind(t);
        }
    }

    /// `AND` the scope (on `p`), the filter's project and its route (on `{alias}.route`).
    pub(in crate::db) fn push_scope_project_route(
        qb: &mut sqlx::QueryBuilder<Db>,
        scope: &ProjectScope,
        filter: &ReportFilter,
        alias: &str,
    ) {
        qb.push(" AND ").push(scope.sql("p"));
        if let Some(v) = &filter.project {
            qb.push(" AND p.slug = ").push_bind(v.clone());
        }
        if let Some(v) = filter.route {
            qb.push(format!(" AND {alias}.route = ")).push_bind(v.as_str());
        }
    }

    /// Appends `AND …` for the scope and the report filter.
    pub(in crate::db) fn push_report_filter(
        qb: &mut sqlx::QueryBuilder<Db>,
        filter: &ReportFilter,
        scope: &ProjectScope,
    ) {
        Self::push_scope_project_route(qb, scope, filter, "r");
        if !filter.status.is_empty() {
            qb.push(" AND r.status IN (");
            let mut sep = qb.separated(", ");
            for s in filter.status.states() {
                sep.push_bind(s.as_str());
            }
            qb.push(")");
        }
        if let Some(v) = filter.verdict {
            qb.push(" AND r.best_verdict = ").push_bind(v.as_str());
        }
        if let Some(v) = filter.route_check {
            qb.push(" AND r.route_check = ").push_bind(v);
        }
        if let Some(v) = &filter.label {
            qb.push(" AND EXISTS (SELECT 1 FROM report_labels l WHERE l.report_id = r.id AND l.label = ")
                .push_bind(v.clone())
                .push(")");
        }
        let (since, until) = filter.window(common::now().date_naive());
        // `dated` says which date a window is of: without one it narrows nothing.
        let dated = if since.is_none() && until.is_none() { Dated::Filed } else { filter.dated };
        match dated {
            Dated::Filed => {
                // A report filed on no stated day is in no window.
                if since.is_some() || until.is_some() {
                    qb.push(" AND r.filed_at_stated");
                }
                if let Some(t) = since {
                    qb.push(" AND r.filed_at >= ").push_bind(t);
                }
                if let Some(t) = until {
                    qb.push(" AND r.filed_at < ").push_bind(t);
                }
            }
            // The report's first counting reproduction ended in the window.
            Dated::Reproduced => {
                let first = "(SELECT MIN(COALESCE(ra.ended_at, ra.started_at)) FROM attempts ra \
                             WHERE ra.report_id = r.id AND ra.counts AND ra.goal = 'reproduce' AND ra.time_stated)";
                qb.push(format!(" AND {first} IS NOT NULL"));
                if let Some(t) = since {
                    qb.push(format!(" AND {first} >= ")).push_bind(t);
                }
                if let Some(t) = until {
                    qb.push(format!(" AND {first} < ")).push_bind(t);
                }
            }
            // Money was spent on it in the window: an attempt started in it.
            Dated::Spent => {
                qb.push(" AND EXISTS (SELECT 1 FROM attempts sa WHERE sa.report_id = r.id");
                Self::push_spent_window(qb, filter, "sa");
                qb.push(")");
            }
        }
        if let Some(q) = &filter.q {
            let pattern = format!("%{}%", q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
            qb.push(" AND (r.title ").push(Self::LIKE).push(" ").push_bind(pattern.clone()).push(" ESCAPE '\\'");
            qb.push(" OR r.external_id ").push(Self::LIKE).push(" ").push_bind(pattern.clone()).push(" ESCAPE '\\'");
            qb.push(" OR r.body ").push(Self::LIKE).push(" ").push_bind(pattern).push(" ESCAPE '\\')");
        }
    }
}
