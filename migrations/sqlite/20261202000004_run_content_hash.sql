-- A run's content hash: importing the same run twice (JUnit, NDJSON) stores
-- it once. Runs written before this have none (NULLs stay distinct).
ALTER TABLE runs ADD COLUMN content_hash TEXT;
CREATE UNIQUE INDEX runs_content ON runs (attempt_id, content_hash);
