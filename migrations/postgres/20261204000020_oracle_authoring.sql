-- Issue 15 (oracle authoring): a maintainer's draft oracle for a report
-- without a deterministic one, validated on the buggy and the fixed
-- environment before it is stored as the report's oracle. The clock runs
-- from opening the form (`started_at`) while not paused: `active_seconds`
-- holds the time up to `resumed_at` (NULL while paused).
CREATE TABLE oracle_drafts (
    id              BIGSERIAL PRIMARY KEY,
    report_id       BIGINT NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
    author          TEXT NOT NULL,
    route_before    TEXT NOT NULL,
    category        TEXT NOT NULL,
    kind            TEXT NOT NULL DEFAULT 'fail_to_pass',
    command         TEXT NOT NULL DEFAULT '',
    script          TEXT NOT NULL DEFAULT '',
    pass_to_pass    TEXT NOT NULL DEFAULT '',
    signature       TEXT NOT NULL DEFAULT '',
    repeats         INTEGER NOT NULL DEFAULT 1,
    queue_agents    BOOLEAN NOT NULL DEFAULT FALSE,
    status          TEXT NOT NULL,                                    -- open | validating | validated | abandoned | superseded
    started_at      TIMESTAMPTZ NOT NULL,
    resumed_at      TIMESTAMPTZ NULL,
    active_seconds  DOUBLE PRECISION NOT NULL DEFAULT 0,
    tries           INTEGER NOT NULL DEFAULT 0,
    last_result     TEXT NULL,
    validated_at    TIMESTAMPTZ NULL
);
CREATE INDEX oracle_drafts_report ON oracle_drafts (report_id, id);
-- One open draft per maintainer and report (two tabs meet here).
CREATE UNIQUE INDEX oracle_drafts_open ON oracle_drafts (report_id, author) WHERE status IN ('open', 'validating');
