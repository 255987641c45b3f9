-- A status page that never contradicts itself (issue 34): a project's data
-- version, moved in the transaction of every write that changes a report's
-- status or figures, so a cached status knows when it is out of date.
ALTER TABLE projects ADD COLUMN data_version BIGINT NOT NULL DEFAULT 0;
