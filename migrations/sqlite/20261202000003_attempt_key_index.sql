-- One unique index on (report_id, agent, attempt_key) serves the natural-key
-- check, the per-report lookups and uniqueness (NULL keys stay distinct), and
-- keeps bulk inserts, which arrive grouped by report, local in the B-tree.
DROP INDEX attempts_natural_key;
DROP INDEX attempts_report;
CREATE UNIQUE INDEX attempts_report_key ON attempts (report_id, agent, attempt_key);
