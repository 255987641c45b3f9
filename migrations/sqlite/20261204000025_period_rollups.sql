-- Issue 16 (figures maintained as data arrives): the figures by the week
-- or month attempts started in (the Cost & time page's spend), and the
-- spend in a window of days (the glance), read rollups kept as data
-- arrives, not every attempt.
--
-- period_cells: per report, goal and period (kind `week`, `month` or `day`,
-- and the week's Monday, the month or the day, UTC, as the figures key
-- them), the sums
-- of its attempts started in it, with the report's project, route and
-- oracle flags as they were counted.
CREATE TABLE period_cells (
    report_id             INTEGER NOT NULL,
    goal                  TEXT NOT NULL,
    kind                  TEXT NOT NULL,
    period                TEXT NOT NULL,
    project_id            INTEGER NOT NULL,
    route                 TEXT NOT NULL,
    det                   INTEGER NOT NULL,
    in_patch              INTEGER NOT NULL,
    attempts              INTEGER NOT NULL,
    graded                INTEGER NOT NULL,
    counting              INTEGER NOT NULL,
    leads                 INTEGER NOT NULL,
    errors                INTEGER NOT NULL,
    awaiting              INTEGER NOT NULL,
    without_cost          INTEGER NOT NULL,
    counting_without_cost INTEGER NOT NULL,
    api_calls             INTEGER NOT NULL,
    with_api_calls        INTEGER NOT NULL,
    cost_usd              REAL NOT NULL,
    cost_counting_usd     REAL NOT NULL,
    PRIMARY KEY (report_id, goal, kind, period)
);

-- period_groups: the cells summed per (goal, kind, period, project, route),
-- with the per-report counts (each cell is one report's part of its group).
CREATE TABLE period_groups (
    goal                  TEXT NOT NULL,
    kind                  TEXT NOT NULL,
    period                TEXT NOT NULL,
    project_id            INTEGER NOT NULL,
    route                 TEXT NOT NULL,
    reports               INTEGER NOT NULL,
    reports_graded        INTEGER NOT NULL,
    reports_reproduced    INTEGER NOT NULL,
    reports_awaiting      INTEGER NOT NULL,
    reports_with_oracle   INTEGER NOT NULL,
    reports_in_patch      INTEGER NOT NULL,
    attempts              INTEGER NOT NULL,
    graded                INTEGER NOT NULL,
    counting              INTEGER NOT NULL,
    leads                 INTEGER NOT NULL,
    errors                INTEGER NOT NULL,
    awaiting              INTEGER NOT NULL,
    without_cost          INTEGER NOT NULL,
    counting_without_cost INTEGER NOT NULL,
    api_calls             INTEGER NOT NULL,
    with_api_calls        INTEGER NOT NULL,
    cost_usd              REAL NOT NULL,
    cost_counting_usd     REAL NOT NULL,
    PRIMARY KEY (goal, kind, period, project_id, route)
);
