-- SQLite rebuilds the rollups as WITHOUT ROWID tables in this migration;
-- PostgreSQL keeps its tables but for the two below.
--
-- The figures gain the day reports were filed (figure_cells.filed_day,
-- days since 1970-01-01 UTC), and their groups a span of filing days:
-- span 0 every day (filed 0), span 1 a block of 32 days (filed = its first
-- day, a multiple of 32), span 2 one day (filed = that day). A report is
-- filed on one day, so the groups of the blocks and days inside a window of
-- filing days sum to the window's figures exactly, per-report counts too.
--
-- The oracle facts now count authoring minutes too. A database with
-- reports but no figure cells has every rollup built again from its rows
-- when failpass starts (`ensure_figures`).
DROP TABLE figure_cells;
DROP TABLE figure_groups;

CREATE TABLE figure_cells (
    report_id             BIGINT NOT NULL,
    goal                  TEXT NOT NULL,
    agent                 TEXT NOT NULL,
    model                 TEXT NOT NULL,
    cutoff                TEXT NOT NULL,
    project_id            BIGINT NOT NULL,
    route                 TEXT NOT NULL,
    category              TEXT NOT NULL,
    vague                 BIGINT NOT NULL,
    det                   BIGINT NOT NULL,
    in_patch              BIGINT NOT NULL,
    filed_day             BIGINT NOT NULL,
    attempts              BIGINT NOT NULL,
    graded                BIGINT NOT NULL,
    counting              BIGINT NOT NULL,
    leads                 BIGINT NOT NULL,
    errors                BIGINT NOT NULL,
    awaiting              BIGINT NOT NULL,
    cost_usd              DOUBLE PRECISION NOT NULL,
    cost_counting_usd     DOUBLE PRECISION NOT NULL,
    without_cost          BIGINT NOT NULL,
    counting_without_cost BIGINT NOT NULL,
    api_calls             BIGINT NOT NULL,
    with_api_calls        BIGINT NOT NULL,
    PRIMARY KEY (report_id, goal, agent, model, cutoff)
);

CREATE TABLE figure_groups (
    goal                  TEXT NOT NULL,
    level                 BIGINT NOT NULL,
    span                  BIGINT NOT NULL,
    filed                 BIGINT NOT NULL,
    project_id            BIGINT NOT NULL,
    route                 TEXT NOT NULL,
    category              TEXT NOT NULL,
    vague                 BIGINT NOT NULL,
    agent                 TEXT NOT NULL,
    model                 TEXT NOT NULL,
    cutoff                TEXT NOT NULL,
    reports               BIGINT NOT NULL,
    reports_graded        BIGINT NOT NULL,
    reports_reproduced    BIGINT NOT NULL,
    reports_awaiting      BIGINT NOT NULL,
    reports_with_oracle   BIGINT NOT NULL,
    reports_in_patch      BIGINT NOT NULL,
    attempts              BIGINT NOT NULL,
    graded                BIGINT NOT NULL,
    counting              BIGINT NOT NULL,
    leads                 BIGINT NOT NULL,
    errors                BIGINT NOT NULL,
    awaiting              BIGINT NOT NULL,
    cost_usd              DOUBLE PRECISION NOT NULL,
    cost_counting_usd     DOUBLE PRECISION NOT NULL,
    without_cost          BIGINT NOT NULL,
    counting_without_cost BIGINT NOT NULL,
    api_calls             BIGINT NOT NULL,
    with_api_calls        BIGINT NOT NULL,
    PRIMARY KEY (goal, level, span, filed, project_id, route, category, vague, agent, model, cutoff)
);
