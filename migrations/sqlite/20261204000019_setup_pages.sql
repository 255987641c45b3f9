-- Issue 15 (set-up pages): a project's upstream address, and the builds a
-- member asked for with "build now" (what each printed, so the environment
-- page can show why a recipe does not build).
ALTER TABLE projects ADD COLUMN upstream_url TEXT NULL;
CREATE TABLE environment_builds (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id INTEGER NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
    job_id         INTEGER NULL,
    recipe_hash    TEXT NOT NULL,
    status         TEXT NOT NULL,                                    -- running | built | cached | failed
    log            TEXT NOT NULL DEFAULT '',
    started_at     TEXT NOT NULL,
    finished_at    TEXT NULL
);
CREATE INDEX environment_builds_environment ON environment_builds (environment_id, id);
