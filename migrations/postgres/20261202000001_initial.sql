-- failpass initial schema (PostgreSQL). Forward-only: never edit once applied.
-- Timestamps are TIMESTAMPTZ; JSON columns are JSONB.

CREATE TABLE projects (
    id          BIGSERIAL PRIMARY KEY,
    slug        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    description TEXT,
    public      BOOLEAN NOT NULL DEFAULT TRUE,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE reports (
    id                 BIGSERIAL PRIMARY KEY,
    project_id         BIGINT NOT NULL REFERENCES projects(id),
    external_id        TEXT NOT NULL,
    url                TEXT,
    title              TEXT NOT NULL,
    body               TEXT NOT NULL,
    labels             JSONB NOT NULL,           -- JSON array, mirrored in report_labels
    paths              JSONB NOT NULL,           -- JSON array
    filed_at           TIMESTAMPTZ NOT NULL,
    reporter           TEXT,
    environment        TEXT,
    features           JSONB NOT NULL,           -- JSON ReportFeatures
    category           TEXT NOT NULL,
    vague              BOOLEAN NOT NULL,
    llm_only           BOOLEAN NOT NULL,
    route              TEXT NOT NULL,
    explanation        JSONB NOT NULL,           -- JSON [RuleOutcome]
    oracle_kind        TEXT NOT NULL,
    oracle_source      TEXT,
    has_det_oracle     BOOLEAN NOT NULL,
    -- Derived from attempts, updated in the attempt's transaction.
    status             TEXT NOT NULL,
    best_verdict       TEXT,
    attempts           BIGINT NOT NULL DEFAULT 0,
    attempts_graded    BIGINT NOT NULL DEFAULT 0,
    attempts_counting  BIGINT NOT NULL DEFAULT 0,
    attempts_awaiting  BIGINT NOT NULL DEFAULT 0,
    cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,
    first_counting_at  TIMESTAMPTZ,
    created_at         TIMESTAMPTZ NOT NULL,
    UNIQUE (project_id, external_id)
);
CREATE INDEX reports_filed ON reports (filed_at, id);
CREATE INDEX reports_project_filed ON reports (project_id, filed_at, id);
CREATE INDEX reports_route ON reports (route, filed_at, id);
CREATE INDEX reports_status ON reports (status, filed_at, id);

CREATE TABLE report_labels (
    report_id BIGINT NOT NULL REFERENCES reports(id),
    label     TEXT NOT NULL,
    PRIMARY KEY (label, report_id)
);

CREATE TABLE oracles (
    id                BIGSERIAL PRIMARY KEY,
    report_id         BIGINT NOT NULL UNIQUE REFERENCES reports(id),
    kind              TEXT NOT NULL,
    source            TEXT,
    command           TEXT,
    fail_to_pass      JSONB NOT NULL,            -- JSON array
    pass_to_pass      JSONB NOT NULL,            -- JSON array
    signature         TEXT,
    repeats           INTEGER,
    authoring_minutes DOUBLE PRECISION,
    created_at        TIMESTAMPTZ NOT NULL
);

CREATE TABLE attempts (
    id             BIGSERIAL PRIMARY KEY,
    report_id      BIGINT NOT NULL REFERENCES reports(id),
    goal           TEXT NOT NULL,
    agent          TEXT NOT NULL,
    model          TEXT,
    model_cutoff   DATE,
    started_at     TIMESTAMPTZ NOT NULL,
    ended_at       TIMESTAMPTZ,
    wall_seconds   DOUBLE PRECISION,
    cost_usd       DOUBLE PRECISION NOT NULL,
    tokens_in      BIGINT NOT NULL,
    tokens_out     BIGINT NOT NULL,
    iterations     INTEGER NOT NULL,
    candidate      TEXT,
    signals        JSONB NOT NULL,               -- JSON Signals
    verdict        TEXT NOT NULL,
    verdict_source TEXT NOT NULL,
    failure_cause  TEXT,
    review         TEXT,
    reviewer       TEXT,
    review_comment TEXT,
    attempt_key    TEXT,
    graded         BOOLEAN NOT NULL,
    counts         BOOLEAN NOT NULL,
    awaiting       BOOLEAN NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX attempts_report ON attempts (report_id, id);
CREATE INDEX attempts_agent ON attempts (agent, id);
CREATE UNIQUE INDEX attempts_natural_key ON attempts (agent, report_id, attempt_key) WHERE attempt_key IS NOT NULL;

CREATE TABLE runs (
    id               BIGSERIAL PRIMARY KEY,
    attempt_id       BIGINT NOT NULL REFERENCES attempts(id),
    trigger          TEXT NOT NULL,
    environment      TEXT NOT NULL,
    exit_status      INTEGER,
    timed_out        BOOLEAN NOT NULL,
    duration_ms      BIGINT NOT NULL,
    output           TEXT NOT NULL,
    output_truncated BOOLEAN NOT NULL,
    output_bytes     BIGINT NOT NULL,
    failing_tests    JSONB NOT NULL,             -- JSON array
    passing_tests    JSONB NOT NULL,             -- JSON array
    runner_id        TEXT,
    started_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX runs_attempt ON runs (attempt_id, id);

CREATE TABLE jobs (
    id               BIGSERIAL PRIMARY KEY,
    kind             TEXT NOT NULL,
    payload          JSONB NOT NULL,             -- JSON
    status           TEXT NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    attempts         BIGINT NOT NULL DEFAULT 0,
    max_attempts     BIGINT NOT NULL DEFAULT 3,
    run_after        TIMESTAMPTZ NOT NULL,
    lease_owner      TEXT,
    lease_expires_at TIMESTAMPTZ,
    last_error       TEXT,
    dedup_key        TEXT,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX jobs_claim ON jobs (status, priority, run_after, id);
CREATE UNIQUE INDEX jobs_dedup ON jobs (dedup_key) WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running');
