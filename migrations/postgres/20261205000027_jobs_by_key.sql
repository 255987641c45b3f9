-- An attempt's verification is found by its job's key (`verify:ID`) after
-- the job has ended too (`GET /api/v1/attempts/{id}/events`, `failpass
-- submit --wait`); `jobs_dedup` holds only the waiting and running ones.
CREATE INDEX jobs_by_key ON jobs (dedup_key, id) WHERE dedup_key IS NOT NULL;
