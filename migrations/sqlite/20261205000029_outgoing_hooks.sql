-- Outgoing webhooks (issue 17): a project's hooks, each a URL told of
-- verdict, route and status changes, and every delivery of every hook with
-- how its last try went. A delivery is written in the transaction of the
-- change it tells of, with the job that sends it; its body is fixed then, so
-- a redelivery sends the same body (signed afresh). A removed hook keeps its
-- log (`removed_at`) and is told nothing more. A hook keeps its newest
-- 1,000 ended deliveries (`redelivery_of` may name one no longer kept).
CREATE TABLE hooks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL REFERENCES projects(id),
    url        TEXT NOT NULL,
    format     TEXT NOT NULL,
    events     TEXT NOT NULL,
    secret     TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    removed_at TEXT NULL
);
CREATE INDEX hooks_project ON hooks (project_id);
CREATE TABLE hook_deliveries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    hook_id       INTEGER NOT NULL REFERENCES hooks(id),
    event         TEXT NOT NULL,
    report_id     INTEGER NULL,
    body          TEXT NOT NULL,
    redelivery_of INTEGER NULL,
    state         TEXT NOT NULL,
    tries         INTEGER NOT NULL DEFAULT 0,
    status_code   INTEGER NULL,
    error         TEXT NULL,
    response      TEXT NULL,
    duration_ms   INTEGER NULL,
    created_at    TEXT NOT NULL,
    last_try_at   TEXT NULL
);
CREATE INDEX hook_deliveries_hook ON hook_deliveries (hook_id, id);
CREATE INDEX hook_deliveries_state ON hook_deliveries (hook_id, state);
