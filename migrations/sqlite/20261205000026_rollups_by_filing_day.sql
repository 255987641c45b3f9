-- The rollups (migrations 22 to 25) as WITHOUT ROWID tables: each is read
-- and written by its primary key only, so the key is the table and an
-- upsert or a range read touches one b-tree instead of the key index and
-- the rows beside it (issue 16: imports and distributions at 1,000,000
-- attempts).
--
-- The figures gain the day reports were filed (figure_cells.filed_day,
-- days since 1970-01-01 UTC), and their groups a span of filing days:
-- span 0 every day (filed 0), span 1 a block of 32 days (filed = its first
-- day, a multiple of 32), span 2 one day (filed = that day). A report is
-- filed on one day, so the groups of the blocks and days inside a window of
-- filing days sum to the window's figures exactly, per-report counts too.
--
-- They are made empty: the oracle facts now count authoring minutes too,
-- and a database with reports but no figure cells has every rollup built
-- again from its rows when failpass starts (`ensure_figures`).

DROP TABLE figure_cells;
CREATE TABLE figure_cells (
    report_id             INTEGER NOT NULL,
    goal                  TEXT NOT NULL,
    agent                 TEXT NOT NULL,
    model                 TEXT NOT NULL,
    cutoff                TEXT NOT NULL,
    project_id            INTEGER NOT NULL,
    route                 TEXT NOT NULL,
    category              TEXT NOT NULL,
    vague                 INTEGER NOT NULL,
    det                   INTEGER NOT NULL,
    in_patch              INTEGER NOT NULL,
    filed_day             INTEGER NOT NULL,
    attempts              INTEGER NOT NULL,
    graded                INTEGER NOT NULL,
    counting              INTEGER NOT NULL,
    leads                 INTEGER NOT NULL,
    errors                INTEGER NOT NULL,
    awaiting              INTEGER NOT NULL,
    cost_usd              REAL NOT NULL,
    cost_counting_usd     REAL NOT NULL,
    without_cost          INTEGER NOT NULL,
    counting_without_cost INTEGER NOT NULL,
    api_calls             INTEGER NOT NULL,
    with_api_calls        INTEGER NOT NULL,
    PRIMARY KEY (report_id, goal, agent, model, cutoff)
) WITHOUT ROWID;

DROP TABLE figure_groups;
CREATE TABLE figure_groups (
    goal                  TEXT NOT NULL,
    level                 INTEGER NOT NULL,
    span                  INTEGER NOT NULL,
    filed                 INTEGER NOT NULL,
    project_id            INTEGER NOT NULL,
    route                 TEXT NOT NULL,
    category              TEXT NOT NULL,
    vague                 INTEGER NOT NULL,
    agent                 TEXT NOT NULL,
    model                 TEXT NOT NULL,
    cutoff                TEXT NOT NULL,
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
    cost_usd              REAL NOT NULL,
    cost_counting_usd     REAL NOT NULL,
    without_cost          INTEGER NOT NULL,
    counting_without_cost INTEGER NOT NULL,
    api_calls             INTEGER NOT NULL,
    with_api_calls        INTEGER NOT NULL,
    PRIMARY KEY (goal, level, span, filed, project_id, route, category, vague, agent, model, cutoff)
) WITHOUT ROWID;

DROP TABLE figure_facts;
CREATE TABLE figure_facts (
    report_id  INTEGER NOT NULL,
    project_id INTEGER NOT NULL,
    fact       TEXT NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (report_id, fact)
) WITHOUT ROWID;

DROP TABLE figure_project_facts;
CREATE TABLE figure_project_facts (
    project_id INTEGER NOT NULL,
    fact       TEXT NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, fact)
) WITHOUT ROWID;

DROP TABLE flow_groups;
CREATE TABLE flow_groups (
    level       INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    project_id  INTEGER NOT NULL,
    route       TEXT NOT NULL,
    route_check INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (level, kind, at, project_id, route, route_check)
) WITHOUT ROWID;

DROP TABLE value_cells;
CREATE TABLE value_cells (
    report_id  INTEGER NOT NULL,
    goal       TEXT NOT NULL,
    agent      TEXT NOT NULL,
    model      TEXT NOT NULL,
    cutoff     TEXT NOT NULL,
    metric     TEXT NOT NULL,
    bin        INTEGER NOT NULL,
    project_id INTEGER NOT NULL,
    route      TEXT NOT NULL,
    n          INTEGER NOT NULL,
    total      REAL NOT NULL,
    PRIMARY KEY (report_id, goal, agent, model, cutoff, metric, bin)
) WITHOUT ROWID;

DROP TABLE value_groups;
CREATE TABLE value_groups (
    goal       TEXT NOT NULL,
    metric     TEXT NOT NULL,
    level      INTEGER NOT NULL,
    project_id INTEGER NOT NULL,
    route      TEXT NOT NULL,
    agent      TEXT NOT NULL,
    model      TEXT NOT NULL,
    cutoff     TEXT NOT NULL,
    bin        INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    total      REAL NOT NULL,
    PRIMARY KEY (goal, metric, level, project_id, route, agent, model, cutoff, bin)
) WITHOUT ROWID;

DROP TABLE period_cells;
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
) WITHOUT ROWID;

DROP TABLE period_groups;
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
) WITHOUT ROWID;
