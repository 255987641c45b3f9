-- The verification runner: job timings, per-attempt grading, runners'
-- heartbeats and the environments candidates run in.
ALTER TABLE jobs ADD COLUMN started_at TIMESTAMPTZ;
ALTER TABLE jobs ADD COLUMN finished_at TIMESTAMPTZ;
ALTER TABLE attempts ADD COLUMN flaky BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE attempts ADD COLUMN grade JSONB;                      -- the grading's counts, reason, signatures
CREATE INDEX jobs_finished ON jobs (status, finished_at);

CREATE TABLE runners (
    id             TEXT PRIMARY KEY,
    host           TEXT NOT NULL,
    pid            BIGINT NOT NULL,
    started_at     TIMESTAMPTZ NOT NULL,
    last_heartbeat TIMESTAMPTZ NOT NULL,
    current_job    BIGINT,
    jobs_done      BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE environments (
    id          BIGSERIAL PRIMARY KEY,
    project_id  BIGINT NOT NULL REFERENCES projects(id),
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,                                    -- buggy | fixed | release
    recipe      JSONB NOT NULL,
    recipe_hash TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (project_id, name)
);
