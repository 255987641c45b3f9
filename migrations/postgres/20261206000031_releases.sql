-- Real releases (issue 32): how a project builds any of its releases (a
-- template with `{version}`), and the buggy and fixed releases each report
-- is graded on, with where each came from (the report's own line, a
-- maintainer, a bisect) and the newest bisect over releases, as JSON.
CREATE TABLE project_releases (
    project_id BIGINT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    template   JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE report_versions (
    report_id    BIGINT PRIMARY KEY REFERENCES reports(id) ON DELETE CASCADE,
    buggy        TEXT NULL,
    buggy_source TEXT NULL,
    fixed        TEXT NULL,
    fixed_source TEXT NULL,
    rejected     TEXT NULL,
    bisect       JSONB NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
