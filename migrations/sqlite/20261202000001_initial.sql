-- failpass initial schema (SQLite). Forward-only: never edit once applied.
-- Timestamps are UTC RFC 3339 text truncated to whole seconds, so text order is time order.

CREATE TABLE projects (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    slug        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    description TEXT,
    public      INTEGER NOT NULL DEFAULT 1,
    created_at  TEXT NOT NULL
);

CREATE TABLE reports (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id         INTEGER NOT NULL REFERENCES projects(id),
    external_id        TEXT NOT NULL,
    url                TEXT,
    title              TEXT NOT NULL,
    body               TEXT NOT NULL,
    labels             TEXT NOT NULL,           -- JSON array, mirrored in report_labels
    paths              TEXT NOT NULL,           -- JSON array
    filed_at           TEXT NOT NULL,
    reporter           TEXT,
    environment        TEXT,
    features           TEXT NOT NULL,           -- JSON ReportFeatures
    category           TEXT NOT NULL,
    vague              INTEGER NOT NULL,
    llm_only           INTEGER NOT NULL,
    route              TEXT NOT NULL,
    explanation        TEXT NOT NULL,           -- JSON [RuleOutcome]
    oracle_kind        TEXT NOT NULL,
    oracle_source      TEXT,
    has_det_oracle     INTEGER NOT NULL,
    -- Derived from attempts, updated in the attempt's transaction.
    status             TEXT NOT NULL,
    best_verdict       TEXT,
    attempts           INTEGER NOT NULL DEFAULT 0,
    attempts_graded    INTEGER NOT NULL DEFAULT 0,
    attempts_counting  INTEGER NOT NULL DEFAULT 0,
    attempts_awaiting  INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    first_counting_at  TEXT,
    created_at         TEXT NOT NULL,
    UNIQUE (project_id, external_id)
);
CREATE INDEX reports_filed ON reports (filed_at, id);
CREATE INDEX reports_project_filed ON reports (project_id, filed_at, id);
CREATE INDEX reports_route ON reports (route, filed_at, id);
CREATE INDEX reports_status ON reports (status, filed_at, id);

CREATE TABLE report_labels (
    report_id INTEGER NOT NULL REFERENCES reports(id),
    label     TEXT NOT NULL,
    PRIMARY KEY (label, report_id)
);

CREATE TABLE oracles (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    report_id         INTEGER NOT NULL UNIQUE REFERENCES reports(id),
    kind              TEXT NOT NULL,
    source            TEXT,
    command           TEXT,
    fail_to_pass      TEXT NOT NULL,            -- JSON array
    pass_to_pass      TEXT NOT NULL,            -- JSON array
    signature         TEXT,
    repeats           INTEGER,
    authoring_minutes REAL,
    created_at        TEXT NOT NULL
);

CREATE TABLE attempts (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    report_id      INTEGER NOT NULL REFERENCES reports(id),
    goal           TEXT NOT NULL,
    agent          TEXT NOT NULL,
    model          TEXT,
    model_cutoff   TEXT,
    started_at     TEXT NOT NULL,
    ended_at       TEXT,
    wall_seconds   REAL,
    cost_usd       REAL NOT NULL,
    tokens_in      INTEGER NOT NULL,
    tokens_out     INTEGER NOT NULL,
    iterations     INTEGER NOT NULL,
    candidate      TEXT,
    signals        TEXT NOT NULL,               -- JSON Signals
    verdict        TEXT NOT NULL,
    verdict_source TEXT NOT NULL,
    failure_cause  TEXT,
    review         TEXT,
    reviewer       TEXT,
    review_comment TEXT,
    attempt_key    TEXT,
    graded         INTEGER NOT NULL,
    counts         INTEGER NOT NULL,
    awaiting       INTEGER NOT NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX attempts_report ON attempts (report_id, id);
CREATE INDEX attempts_agent ON attempts (agent, id);
CREATE UNIQUE INDEX attempts_natural_key ON attempts (agent, report_id, attempt_key) WHERE attempt_key IS NOT NULL;

CREATE TABLE runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id       INTEGER NOT NULL REFERENCES attempts(id),
    trigger          TEXT NOT NULL,
    environment      TEXT NOT NULL,
    exit_status      INTEGER,
    timed_out        INTEGER NOT NULL,
    duration_ms      INTEGER NOT NULL,
    output           TEXT NOT NULL,
    output_truncated INTEGER NOT NULL,
    output_bytes     INTEGER NOT NULL,
    failing_tests    TEXT NOT NULL,             -- JSON array
    passing_tests    TEXT NOT NULL,             -- JSON array
    runner_id        TEXT,
    started_at       TEXT NOT NULL
);
CREATE INDEX runs_attempt ON runs (attempt_id, id);

CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT NOT NULL,
    payload          TEXT NOT NULL,             -- JSON
    status           TEXT NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 3,
    run_after        TEXT NOT NULL,
    lease_owner      TEXT,
    lease_expires_at TEXT,
    last_error       TEXT,
    dedup_key        TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX jobs_claim ON jobs (status, priority, run_after, id);
CREATE UNIQUE INDEX jobs_dedup ON jobs (dedup_key) WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running');
