-- The verification runner: job timings, per-attempt grading, runners'
-- heartbeats and the environments candidates run in.
ALTER TABLE jobs ADD COLUMN started_at TEXT;
ALTER TABLE jobs ADD COLUMN finished_at TEXT;
ALTER TABLE attempts ADD COLUMN flaky INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN grade TEXT;                       -- JSON: the grading's counts, reason, signatures
CREATE INDEX jobs_finished ON jobs (status, finished_at);

CREATE TABLE runners (
    id             TEXT PRIMARY KEY,
    host           TEXT NOT NULL,
    pid            INTEGER NOT NULL,
    started_at     TEXT NOT NULL,
    last_heartbeat TEXT NOT NULL,
    current_job    INTEGER,
    jobs_done      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE environments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id  INTEGER NOT NULL REFERENCES projects(id),
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,                                    -- buggy | fixed | release
    recipe      TEXT NOT NULL,                                    -- JSON
    recipe_hash TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (project_id, name)
);
