//! The SQL of bulk imports, written once for both engines
//! (see `mod.rs`).

use crate::db::attempts::AttemptStore;
use crate::db::common::{PENDING_ID, PreparedAttempt};
use crate::db::dialect::Dialect;
use crate::db::imports::*;
use crate::db::queue::NewJob;
use crate::db::rows::AgentRow;
use crate::db::{NewReport, NewRun, attempts, common};
use async_trait::async_trait;
use failpass_shared::api::attempts::{CreateAttemptRequest, CreateRunRequest};
use failpass_shared::api::import::{AgentRecord, Outcome};
use failpass_shared::api::jobs::PRIORITY_INITIAL;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::hash;

use super::{Db, Engine};
use crate::db::{StorageError, StorageResult};

#[async_trait]
impl ImportStore for Engine {
    async fn import_reports(&self, news: &[NewReport]) -> StorageResult<Vec<StorageResult<Outcome>>> {
        use std::collections::{HashMap, hash_map::Entry};
        let mut tx = self.write.begin().await?;
        // Project ids, then every existing (project, external id) of the batch, in few queries.
        let mut projects: HashMap<String, Option<i64>> = HashMap::new();
        for new in news {
            if !projects.contains_key(&new.request.project) {
                let id: Option<i64> = sqlx::query_scalar("SELECT id FROM projects WHERE slug = $1")
                    .bind(&new.request.project)
                    .fetch_optional(&mut *tx)
                    .await?;
                projects.insert(new.request.project.clone(), id);
            }
        }
        let mut existing: HashMap<(i64, String), (i64, Option<String>)> = HashMap::new();
        for (slug, id) in &projects {
            let Some(project_id) = id else { continue };
            let externals: Vec<&str> =
                news.iter().filter(|n| &n.request.project == slug).map(|n| n.request.external_id.trim()).collect();
            for chunk in externals.chunks(500) {
                let mut qb = sqlx::QueryBuilder::<Db>::new(
                    "SELECT id, external_id, content_hash FROM reports WHERE project_id = ",
                );
                qb.push_bind(*project_id).push(" AND external_id IN (");
                let mut sep = qb.separated(", ");
                for e in chunk {
                    sep.push_bind((*e).to_owned());
                }
                qb.push(")");
                for (id, ext, hash) in qb.build_query_as::<(i64, String, Option<String>)>().fetch_all(&mut *tx).await? {
                    existing.insert((*project_id, ext), (id, hash));
                }
            }
        }
        // New reports are written together at the end (or before a later
        // line of the batch changes one of them), updates in place.
        let mut out = Vec::with_capacity(news.len());
        let mut creates: Vec<((i64, String), &NewReport, String)> = Vec::new();
        for new in news {
            let Some(project_id) = projects[&new.request.project] else {
                out.push(Err(common::no_project(&new.request.project)));
                continue;
            };
            let hash = hash::content_hash(&new.request);
            let key = (project_id, new.request.external_id.trim().to_owned());
            let outcome = match existing.get(&key) {
                Some((_, Some(h))) if *h == hash => Outcome::Unchanged,
                Some((id, _)) => {
                    let mut id = *id;
                    if id == PENDING_ID {
                        Self::create_reports(&mut tx, std::mem::take(&mut creates), &mut existing).await?;
                        id = existing[&key].0;
                    }
                    Self::write_report(&mut tx, Some(id), project_id, new, &hash).await?;
                    existing.insert(key, (id, Some(hash)));
                    Outcome::Updated
                }
                None => {
                    existing.insert(key.clone(), (PENDING_ID, Some(hash.clone())));
                    creates.push((key, new, hash));
                    Outcome::Created
                }
            };
            out.push(Ok(outcome));
        }
        Self::create_reports(&mut tx, creates, &mut existing).await?;
        // Activity, upstream state and status of what was written: the new
        // reports' "taken in" first, all at once.
        let written: Vec<(i64, &NewReport, bool)> = news
            .iter()
            .zip(&out)
            .filter_map(|(new, outcome)| {
                let Ok(outcome @ (Outcome::Created | Outcome::Updated)) = outcome else { return None };
                let project_id = projects[&new.request.project]?;
                let (id, _) = existing.get(&(project_id, new.request.external_id.trim().to_owned()))?;
                Some((*id, new, *outcome == Outcome::Created))
            })
            .collect();
        let taken_in: Vec<_> = written
            .iter()
            .filter(|(.., created)| *created)
            .map(|(id, new, _)| (*id, &new.origin, "created", Self::taken_in(new)))
            .collect();
        Self::add_activities(&mut tx, &taken_in).await?;
        let ids: Vec<i64> = written.iter().map(|(id, ..)| *id).collect();
        // The release each report names, for projects that build releases (one read of each template).
        let mut templates = HashMap::new();
        for (id, new, created) in written {
            Self::apply_upstream_of(&mut tx, id, new, created).await?;
            let Some(project_id) = projects[&new.request.project] else { continue };
            let template = match templates.entry(project_id) {
                Entry::Occupied(seen) => seen.into_mut(),
                Entry::Vacant(slot) => slot.insert(Self::template_in(&mut tx, project_id).await?),
            };
            Self::read_versions(&mut tx, template.as_ref(), id, &new.request).await?;
        }
        Self::refresh_figures(&mut tx, &ids).await?;
        tx.commit().await?;
        Ok(out)
    }

    async fn import_projects(
        &self,
        reqs: &[CreateProjectRequest],
        default_public: bool,
    ) -> StorageResult<Vec<Outcome>> {
        let mut tx = self.write.begin().await?;
        let mut out = Vec::with_capacity(reqs.len());
        for req in reqs {
            if req.benchmark.is_some() || req.public.is_some() {
                // The flags are read under the figures' lock (see `update_project`).
                sqlx::query(Self::FIGURES_LOCK).execute(&mut *tx).await?;
            }
            type Stored = (i64, String, Option<String>, bool, Option<String>, bool);
            let existing: Option<Stored> = sqlx::query_as(
                "SELECT id, name, description, public, upstream_url, benchmark FROM projects WHERE slug = $1",
            )
            .bind(&req.slug)
            .fetch_optional(&mut *tx)
            .await?;
            out.push(match existing {
                Some((id, n, d, p, u, b)) => {
                    // A field the record leaves out keeps its stored value.
                    let name = req.name.clone().unwrap_or(n.clone());
                    let description = req.description.clone().or(d.clone());
                    let public = req.public.unwrap_or(p);
                    let upstream = req.upstream_url.clone().or(u.clone());
                    let benchmark = req.benchmark.unwrap_or(b);
                    if (&name, &description, public, &upstream, benchmark) == (&n, &d, p, &u, b) {
                        Outcome::Unchanged
                    } else {
                        sqlx::query(
                            "UPDATE projects SET name = $1, description = $2, public = $3, upstream_url = $4, \
                             benchmark = $6 WHERE id = $5",
                        )
                        .bind(&name)
                        .bind(&description)
                        .bind(public)
                        .bind(&upstream)
                        .bind(id)
                        .bind(benchmark)
                        .execute(&mut *tx)
                        .await?;
                        if benchmark != b || public != p {
                            Self::refresh_project_flows(&mut tx, id).await?;
                        }
                        Outcome::Updated
                    }
                }
                None => {
                    sqlx::query(
                        "INSERT INTO projects (slug, name, description, public, upstream_url, created_at, benchmark) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(&req.slug)
                    .bind(req.name.clone().unwrap_or_else(|| req.slug.clone()))
                    .bind(&req.description)
                    .bind(req.public.unwrap_or(default_public))
                    .bind(&req.upstream_url)
                    .bind(common::now())
                    .bind(req.benchmark.unwrap_or(false))
                    .execute(&mut *tx)
                    .await?;
                    Outcome::Created
                }
            });
        }
        tx.commit().await?;
        Ok(out)
    }

    async fn import_agents(&self, agents: &[AgentRecord]) -> StorageResult<Vec<Outcome>> {
        let mut tx = self.write.begin().await?;
        let mut out = Vec::with_capacity(agents.len());
        let now = common::now();
        for a in agents {
            let hash = hash::content_hash(a);
            let existing: Option<(i64, String)> = sqlx::query_as("SELECT id, content_hash FROM agents WHERE name = $1")
                .bind(a.name.trim())
                .fetch_optional(&mut *tx)
                .await?;
            let (sql, outcome) = match &existing {
                Some((_, h)) if *h == hash => {
                    out.push(Outcome::Unchanged);
                    continue;
                }
                Some(_) => (
                    "UPDATE agents SET source = $2, model = $3, date = $4, stated_rate = $5, stated_instances = $6, \
                     stated_cost_usd = $7, stated_instance_cost_usd = $8, stated_instance_calls = $9, notes = $10, \
                     content_hash = $11, updated_at = $12 WHERE name = $1",
                    Outcome::Updated,
                ),
                None => (
                    "INSERT INTO agents (name, source, model, date, stated_rate, stated_instances, stated_cost_usd, \
                     stated_instance_cost_usd, stated_instance_calls, notes, content_hash, updated_at, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)",
                    Outcome::Created,
                ),
            };
            sqlx::query(sql)
                .bind(a.name.trim())
                .bind(&a.source)
                .bind(&a.model)
                .bind(&a.date)
                .bind(a.stated_rate)
                .bind(a.stated_instances.map(|n| n.min(i64::MAX as u64) as i64))
                .bind(a.stated_cost_usd)
                .bind(a.stated_instance_cost_usd)
                .bind(a.stated_instance_calls)
                .bind(&a.notes)
                .bind(&hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            out.push(outcome);
        }
        tx.commit().await?;
        Ok(out)
    }

    async fn list_agents(&self) -> StorageResult<Vec<AgentRecord>> {
        let rows: Vec<AgentRow> = sqlx::query_as(
            "SELECT name, source, model, date, stated_rate, stated_instances, stated_cost_usd, \
             stated_instance_cost_usd, stated_instance_calls, notes FROM agents ORDER BY name",
        )
        .fetch_all(&self.read)
        .await?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    async fn import_attempts(&self, reqs: &[CreateAttemptRequest]) -> StorageResult<Vec<StorageResult<Outcome>>> {
        use std::collections::HashMap;
        let mut tx = self.write.begin().await?;
        let mut results: Vec<StorageResult<Outcome>> = Vec::with_capacity(reqs.len());
        // Resolve every report reference of the batch in one query per form.
        let resolved = Self::resolve_reports(&mut tx, reqs).await?;
        let mut prepared: Vec<(usize, PreparedAttempt)> = Vec::with_capacity(reqs.len());
        for (i, (req, report)) in reqs.iter().zip(resolved).enumerate() {
            match report {
                Ok((report_id, vague, _)) => {
                    // Keyless records get their content hash as key, so a re-import is a no-op.
                    let key = req.attempt_key.clone().unwrap_or_else(|| format!("h:{}", hash::content_hash(req)));
                    let mut p = PreparedAttempt::new(req, report_id, vague, Some(key));
                    // An imported attempt without a time has none: it counts in no period.
                    p.time_stated = req.started_at.is_some() || req.ended_at.is_some();
                    prepared.push((i, p));
                    results.push(Ok(Outcome::Created));
                }
                Err(e) => results.push(Err(e)),
            }
        }
        // Which natural keys exist already?
        let mut report_ids: Vec<i64> = prepared.iter().map(|(_, p)| p.report_id).collect();
        report_ids.sort_unstable();
        report_ids.dedup();
        let mut existing: HashMap<(String, i64, String), (i64, String)> = HashMap::new();
        for chunk in report_ids.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<Db>::new(
                "SELECT id, agent, report_id, attempt_key, content_hash FROM attempts WHERE attempt_key IS NOT NULL AND report_id IN (",
            );
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(*id);
            }
            qb.push(")");
            let rows: Vec<(i64, String, i64, String, Option<String>)> = qb.build_query_as().fetch_all(&mut *tx).await?;
            for (id, agent, report_id, key, hash) in rows {
                existing.insert((agent, report_id, key), (id, hash.unwrap_or_default()));
            }
        }
        // New attempts to insert; a key repeated inside the batch replaces its
        // pending row (the later line wins), so only the last version is stored.
        let mut to_insert: Vec<PreparedAttempt> = Vec::with_capacity(prepared.len());
        let mut pending: HashMap<(String, i64, String), usize> = HashMap::new();
        // Which input record each pending row answers for.
        let mut slot_record: Vec<usize> = Vec::new();
        let mut touched: Vec<i64> = Vec::new();
        for (i, p) in prepared {
            let key = (p.agent.clone(), p.report_id, p.attempt_key.clone().unwrap_or_default());
            if let Some(&slot) = pending.get(&key) {
                let same = to_insert[slot].content_hash == p.content_hash;
                results[i] = Ok(if same { Outcome::Unchanged } else { Outcome::Updated });
                to_insert[slot] = p;
                slot_record[slot] = i;
                continue;
            }
            match existing.get(&key) {
                Some((_, hash)) if *hash == p.content_hash => results[i] = Ok(Outcome::Unchanged),
                Some((id, _)) => {
                    let id = *id;
                    Self::update_attempt(&mut tx, id, &p).await?;
                    touched.push(p.report_id);
                    existing.insert(key, (id, p.content_hash.clone()));
                    results[i] = Ok(Outcome::Updated);
                }
                None => {
                    pending.insert(key, to_insert.len());
                    to_insert.push(p);
                    slot_record.push(i);
                }
            }
        }
        // `verify` needs a deterministic oracle and something to run; checked per record.
        let mut verified: Vec<usize> = Vec::new();
        for (slot, p) in to_insert.iter().enumerate() {
            if p.req.verify {
                verified.push(slot);
            }
        }
        if !verified.is_empty() {
            let mut keep = vec![true; to_insert.len()];
            for &slot in &verified {
                let p = &to_insert[slot];
                if let Err(e) = Self::check_verifiable(&mut tx, p.req, p.report_id).await {
                    keep[slot] = false;
                    results[slot_record[slot]] = Err(e);
                }
            }
            let mut slot = 0;
            to_insert.retain(|_| {
                slot += 1;
                keep[slot - 1]
            });
        }
        Self::bulk_insert_attempts(&mut tx, &to_insert).await?;
        // PostgreSQL plans the figures' queries below by what it last learned
        // of the table: a batch that grows it by half or more is learned
        // first (the first batch into a new database took 0.3 to 0.7 s a
        // query planned for an empty table, 25 ms once learned). `ANALYZE`
        // in the transaction counts its own new rows.
        if Self::BACKEND == crate::db::Backend::Postgres && !to_insert.is_empty() {
            let known: f64 = sqlx::query_scalar(
                "SELECT CAST(reltuples AS DOUBLE PRECISION) FROM pg_class WHERE oid = 'attempts'::regclass",
            )
            .fetch_one(&mut *tx)
            .await?;
            if to_insert.len() as f64 > known.max(0.0) / 2.0 {
                sqlx::query("ANALYZE attempts").execute(&mut *tx).await?;
            }
        }
        // Queue their verification in this transaction.
        for p in to_insert.iter().filter(|p| p.req.verify) {
            let id: i64 =
                sqlx::query_scalar("SELECT id FROM attempts WHERE report_id = $1 AND agent = $2 AND attempt_key = $3")
                    .bind(p.report_id)
                    .bind(&p.agent)
                    .bind(&p.attempt_key)
                    .fetch_one(&mut *tx)
                    .await?;
            let job = NewJob::verify(id, PRIORITY_INITIAL, false);
            Self::enqueue_tx(&mut tx, &job, common::now()).await?;
        }
        touched.extend(to_insert.iter().map(|p| p.report_id));
        touched.sort_unstable();
        touched.dedup();
        Self::refresh_reports(&mut tx, &touched).await?;
        tx.commit().await?;
        Ok(results)
    }

    async fn import_run(&self, req: &CreateRunRequest) -> StorageResult<Outcome> {
        let attempt_id = match (&req.attempt_id, &req.attempt) {
            (Some(id), _) => *id,
            (None, Some(k)) => {
                let id: Option<i64> = sqlx::query_scalar(
                    "SELECT a.id FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE p.slug = $1 AND r.external_id = $2 AND a.agent = $3 AND a.attempt_key = $4",
                )
                .bind(&k.report.project)
                .bind(k.report.external_id.trim())
                .bind(k.agent.trim())
                .bind(&k.attempt_key)
                .fetch_optional(&self.read)
                .await?;
                id.ok_or_else(|| StorageError::NotFound(attempts::describe_attempt_ref(req)))?
            }
            (None, None) => return Err(StorageError::invalid("attempt_id", "give attempt_id or attempt")),
        };
        Ok(self.create_run(&NewRun::from_request(attempt_id, req)).await?.1)
    }
}
