-- Benchmarks (issue 34): a project can be a benchmark (the SWE-bench
-- importers mark theirs). Its instances are graded against the benchmark;
-- they are not reports waiting for a maintainer, so they are in no backlog
-- (the throughput cells keep the flag, to count them out).
ALTER TABLE projects ADD COLUMN benchmark BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE flow_cells ADD COLUMN benchmark BIGINT NOT NULL DEFAULT 0;
