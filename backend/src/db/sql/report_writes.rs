//! The writes of reports shared by creating, editing and importing them:
//! a report's row with its labels and oracle, many new reports at once,
//! and the reports an attempt names (written once for both engines, see
//! `mod.rs`).

use crate::db::common::{self, ORACLE_INSERT, REPORT_INSERT};
use crate::db::dialect::Dialect;
use crate::db::{NewReport, StorageError, StorageResult, attempts};
use failpass_shared::api::attempts::CreateAttemptRequest;
use failpass_shared::api::reports::Oracle;
use failpass_shared::model::ReportStatus;

use super::{Db, Engine, Tx};

impl Engine {
    /// Inserts a report (`existing` = None) or rewrites one in place, with
    /// its labels and oracle; a rewrite re-derives its attempts' counting.
    pub(in crate::db) async fn write_report(
        tx: &mut Tx,
        existing: Option<i64>,
        project_id: i64,
        new: &NewReport,
        hash: &str,
    ) -> StorageResult<i64> {
        use sqlx::types::Json;
        let req = &new.request;
        let d = &new.decision;
        let now = common::now();
        let labels = common::clean_labels(&req.labels);
        let sql = match existing {
            None => format!("{} RETURNING id", REPORT_INSERT),
            Some(_) => format!(
                "UPDATE reports SET url = $3, title = $4, body = $5, labels = $6, paths = $7, filed_at = COALESCE($8, filed_at), \
                 filed_at_stated = CASE WHEN $8 IS NULL THEN filed_at_stated ELSE TRUE END, \
                 reporter = $9, environment = $10, features = $11, vague = $13, llm_only = $14, {}, \
                 explanation = $16, oracle_kind = $17, oracle_source = $18, has_det_oracle = $19, content_hash = $21 \
                 WHERE project_id = $1 AND external_id = $2 RETURNING id",
                common::routing_assignments("$15", "$12", "$20")
            ),
        };
        let query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(project_id)
            .bind(req.external_id.trim())
            .bind(&req.url)
            .bind(req.title.trim())
            .bind(&req.body)
            .bind(Json(&labels))
            .bind(Json(&req.paths))
            // A new report without a date was filed when it came in; an update without one keeps its date.
            .bind(match existing {
                None => Some(req.filed_at.map(common::secs).unwrap_or(now)),
                Some(_) => req.filed_at.map(common::secs),
            })
            .bind(&req.reporter)
            .bind(d.environment_for(req.environment.as_deref()));
        let query = Self::bind_routing(query, d).bind(hash);
        // Only a new report starts its status and creation time.
        let query = match existing {
            // One report taken in live: filed when it came in, unless it says.
            None => query.bind(ReportStatus::New.as_str()).bind(now).bind(true),
            Some(_) => query,
        };
        let id: i64 = query.fetch_one(&mut **tx).await.map_err(common::conflict_on_unique(format!(
            "project `{}` already has a report `{}`",
            req.project,
            req.external_id.trim()
        )))?;
        if existing.is_some() {
            sqlx::query("DELETE FROM report_labels WHERE report_id = $1").bind(id).execute(&mut **tx).await?;
        }
        if !labels.is_empty() {
            let mut qb = sqlx::QueryBuilder::<Db>::new("INSERT INTO report_labels (report_id, label) ");
            qb.push_values(&labels, |mut b, label| {
                b.push_bind(id).push_bind(label.clone());
            });
            qb.build().execute(&mut **tx).await?;
        }
        Self::write_oracle(tx, id, d.oracle.as_ref(), existing.is_some()).await?;
        if existing.is_some() {
            Self::rederive_attempts(tx, id, d.vague).await?;
        }
        Ok(id)
    }

    /// Inserts new reports with multi-row statements, their labels and
    /// oracles likewise, and returns their ids in order: PostgreSQL's bulk
    /// path (a statement per report was a round trip per report, 1,661
    /// reports/s). SQLite's takes prepared statements instead, so this
    /// module's SQLite copy of it goes unused.
    #[allow(dead_code)]
    pub(in crate::db) async fn insert_reports_multi(
        tx: &mut Tx,
        rows: &[(i64, &NewReport, &str)],
    ) -> StorageResult<Vec<i64>> {
        use sqlx::types::Json;
        use std::collections::HashMap;
        // 24 binds a row, under PostgreSQL's 65,535.
        const CHUNK: usize = 1000;
        let columns = REPORT_INSERT.split(" VALUES").next().unwrap_or(REPORT_INSERT);
        let now = common::now();
        let mut ids = Vec::with_capacity(rows.len());
        for chunk in rows.chunks(CHUNK) {
            let labels: Vec<Vec<String>> =
                chunk.iter().map(|(_, new, _)| common::clean_labels(&new.request.labels)).collect();
            let mut qb = sqlx::QueryBuilder::<Db>::new(format!("{columns} "));
            qb.push_values(chunk.iter().zip(&labels), |mut b, ((project_id, new, hash), labels)| {
                let (req, d) = (&new.request, &new.decision);
                b.push_bind(*project_id)
                    .push_bind(req.external_id.trim())
                    .push_bind(&req.url)
                    .push_bind(req.title.trim())
                    .push_bind(&req.body)
                    .push_bind(Json(labels))
                    .push_bind(Json(&req.paths))
                    .push_bind(req.filed_at.map(common::secs).unwrap_or(now))
                    .push_bind(&req.reporter)
                    .push_bind(d.environment_for(req.environment.as_deref()))
                    .push_bind(Json(&d.features))
                    .push_bind(d.category.as_str())
                    .push_bind(d.vague)
                    .push_bind(d.llm_only)
                    .push_bind(d.route.as_str())
                    .push_bind(Json(&d.explanation))
                    .push_bind(d.oracle_kind().as_str())
                    .push_bind(d.oracle.as_ref().and_then(|o| o.source).map(|s| s.as_str()))
                    .push_bind(d.oracle.as_ref().is_some_and(|o| o.is_deterministic()))
                    .push_bind(d.route_check)
                    .push_bind(*hash)
                    .push_bind(ReportStatus::New.as_str())
                    .push_bind(now)
                    .push_bind(new.filed_stated());
            });
            // Matched back by key, not by the order rows come back in.
            qb.push(" RETURNING id, project_id, external_id");
            let back: Vec<(i64, i64, String)> = qb
                .build_query_as()
                .fetch_all(&mut **tx)
                .await
                .map_err(common::conflict_on_unique("a report of this batch exists already"))?;
            let by_key: HashMap<(i64, &str), i64> = back.iter().map(|(id, p, e)| ((*p, e.as_str()), *id)).collect();
            let chunk_ids = chunk
                .iter()
                .map(|(p, new, _)| {
                    by_key.get(&(*p, new.request.external_id.trim())).copied().ok_or_else(|| {
                        StorageError::Corrupt(format!("report `{}` was not stored", new.request.external_id.trim()))
                    })
                })
                .collect::<StorageResult<Vec<i64>>>()?;
            let pairs: Vec<(i64, &String)> =
                chunk_ids.iter().zip(&labels).flat_map(|(id, ls)| ls.iter().map(move |l| (*id, l))).collect();
            for part in pairs.chunks(10_000) {
                let mut qb = sqlx::QueryBuilder::<Db>::new("INSERT INTO report_labels (report_id, label) ");
                qb.push_values(part, |mut b, (id, label)| {
                    b.push_bind(*id).push_bind(*label);
                });
                qb.build().execute(&mut **tx).await?;
            }
            let oracles: Vec<(i64, &Oracle)> = chunk_ids
                .iter()
                .zip(chunk)
                .filter_map(|(id, (_, new, _))| new.decision.oracle.as_ref().map(|o| (*id, o)))
                .collect();
            Self::insert_oracles(tx, &oracles).await?;
            ids.extend(chunk_ids);
        }
        Ok(ids)
    }

    /// Inserts new reports of an import batch and records their ids under their keys.
    pub(in crate::db) async fn create_reports(
        tx: &mut Tx,
        creates: Vec<((i64, String), &NewReport, String)>,
        existing: &mut std::collections::HashMap<(i64, String), (i64, Option<String>)>,
    ) -> StorageResult<()> {
        if creates.is_empty() {
            return Ok(());
        }
        let rows: Vec<(i64, &NewReport, &str)> = creates.iter().map(|((p, _), n, h)| (*p, *n, h.as_str())).collect();
        let ids = Self::bulk_insert_reports(tx, &rows).await?;
        for ((key, _, hash), id) in creates.into_iter().zip(ids) {
            existing.insert(key, (id, Some(hash)));
        }
        Ok(())
    }

    /// Stores a report's oracle, replacing any it had.
    pub(in crate::db) async fn write_oracle(
        tx: &mut Tx,
        report_id: i64,
        oracle: Option<&Oracle>,
        replace: bool,
    ) -> StorageResult<()> {
        if replace {
            sqlx::query("DELETE FROM oracles WHERE report_id = $1").bind(report_id).execute(&mut **tx).await?;
        }
        if let Some(o) = oracle {
            Self::insert_oracles(tx, &[(report_id, o)]).await?;
        }
        Ok(())
    }

    /// Inserts oracles (report id, oracle) in multi-row statements.
    pub(in crate::db) async fn insert_oracles(tx: &mut Tx, oracles: &[(i64, &Oracle)]) -> StorageResult<()> {
        use sqlx::types::Json;
        let columns = ORACLE_INSERT.split(" VALUES").next().unwrap_or(ORACLE_INSERT);
        let now = common::now();
        // 10 binds a row, under PostgreSQL's 65,535.
        for part in oracles.chunks(1000) {
            let mut qb = sqlx::QueryBuilder::<Db>::new(format!("{columns} "));
            qb.push_values(part, |mut b, (id, o)| {
                b.push_bind(*id)
                    .push_bind(o.kind.as_str())
                    .push_bind(o.source.map(|s| s.as_str()))
                    .push_bind(&o.command)
                    .push_bind(Json(&o.fail_to_pass))
                    .push_bind(Json(&o.pass_to_pass))
                    .push_bind(&o.signature)
                    .push_bind(o.repeats.map(|r| r as i32))
                    .push_bind(o.authoring_minutes)
                    .push_bind(now);
            });
            qb.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Re-applies the counting rule to a report's attempts (its `vague` flag changed or may have).
    pub(in crate::db) async fn rederive_attempts(tx: &mut Tx, report_id: i64, vague: bool) -> StorageResult<()> {
        use failpass_shared::model::{Goal, Review, Verdict, VerdictSource, attempt_awaits_review, attempt_counts};
        let rows: Vec<(i64, String, String, String, Option<String>)> =
            sqlx::query_as("SELECT id, goal, verdict, verdict_source, review FROM attempts WHERE report_id = $1")
                .bind(report_id)
                .fetch_all(&mut **tx)
                .await?;
        use crate::db::rows::{parse, parse_opt};
        for (id, goal, verdict, source, review) in rows {
            let goal: Goal = parse(&goal, "attempts.goal")?;
            let verdict: Verdict = parse(&verdict, "attempts.verdict")?;
            let source: VerdictSource = parse(&source, "attempts.verdict_source")?;
            let review: Option<Review> = parse_opt(review.as_deref(), "attempts.review")?;
            sqlx::query("UPDATE attempts SET counts = $1, awaiting = $2 WHERE id = $3")
                .bind(attempt_counts(goal, verdict, source, review, vague))
                .bind(attempt_awaits_review(goal, verdict, source, review, vague))
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        Self::refresh_reports(tx, &[report_id]).await
    }

    /// The report an attempt names, with its `vague` flag.
    pub(in crate::db) async fn resolve_report(
        tx: &mut Tx,
        req: &CreateAttemptRequest,
    ) -> StorageResult<(i64, bool, bool)> {
        let row: Option<(i64, bool, bool)> = match (&req.report_id, &req.report) {
            (Some(id), _) => sqlx::query_as("SELECT id, vague, has_det_oracle FROM reports WHERE id = $1").bind(*id).fetch_optional(&mut **tx).await?,
            (None, Some(k)) => sqlx::query_as(
                "SELECT r.id, r.vague, r.has_det_oracle FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = $1 AND r.external_id = $2",
            )
            .bind(&k.project)
            .bind(&k.external_id)
            .fetch_optional(&mut **tx)
            .await?,
            (None, None) => None,
        };
        let (id, vague, det) = row.ok_or_else(|| StorageError::NotFound(attempts::describe_report_ref(req)))?;
        attempts::check_grading(req, det)?;
        Ok((id, vague, det))
    }

    /// Resolves each request's report; a missing one is that request's error.
    pub(in crate::db) async fn resolve_reports(
        tx: &mut Tx,
        reqs: &[impl std::borrow::Borrow<CreateAttemptRequest>],
    ) -> StorageResult<Vec<StorageResult<(i64, bool, bool)>>> {
        use std::collections::HashMap;
        let reqs: Vec<&CreateAttemptRequest> = reqs.iter().map(|r| r.borrow()).collect();
        let mut by_id: HashMap<i64, (i64, bool, bool)> = HashMap::new();
        let mut by_key: HashMap<(String, String), (i64, bool, bool)> = HashMap::new();
        let ids: Vec<i64> = reqs.iter().filter_map(|r| r.report_id).collect();
        for chunk in ids.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<Db>::new("SELECT id, vague, has_det_oracle FROM reports WHERE id IN (");
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(*id);
            }
            qb.push(")");
            for (id, vague, det) in qb.build_query_as::<(i64, bool, bool)>().fetch_all(&mut **tx).await? {
                by_id.insert(id, (id, vague, det));
            }
        }
        let mut projects: HashMap<&str, Vec<&str>> = HashMap::new();
        for k in reqs.iter().filter(|r| r.report_id.is_none()).filter_map(|r| r.report.as_ref()) {
            projects.entry(k.project.as_str()).or_default().push(k.external_id.as_str());
        }
        for (project, mut externals) in projects {
            externals.sort_unstable();
            externals.dedup();
            for chunk in externals.chunks(500) {
                let mut qb = sqlx::QueryBuilder::<Db>::new(
                    "SELECT r.id, r.vague, r.has_det_oracle, r.external_id FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = ",
                );
                qb.push_bind(project.to_owned()).push(" AND r.external_id IN (");
                let mut sep = qb.separated(", ");
                for e in chunk {
                    sep.push_bind((*e).to_owned());
                }
                qb.push(")");
                for (id, vague, det, ext) in
                    qb.build_query_as::<(i64, bool, bool, String)>().fetch_all(&mut **tx).await?
                {
                    by_key.insert((project.to_owned(), ext), (id, vague, det));
                }
            }
        }
        Ok(reqs
            .iter()
            .map(|r| {
                let hit = match (&r.report_id, &r.report) {
                    (Some(id), _) => by_id.get(id).copied(),
                    (None, Some(k)) => by_key.get(&(k.project.clone(), k.external_id.clone())).copied(),
                    (None, None) => None,
                };
                let (id, vague, det) = hit.ok_or_else(|| StorageError::NotFound(attempts::describe_report_ref(r)))?;
                attempts::check_grading(r, det)?;
                Ok((id, vague, det))
            })
            .collect())
    }
}
