-- Issue 14: a report whose reproduction fails again on a later release after
-- a re-check found it fixed is `regressed` until a later re-check says otherwise.
ALTER TABLE reports ADD COLUMN regressed BOOLEAN NOT NULL DEFAULT FALSE;
