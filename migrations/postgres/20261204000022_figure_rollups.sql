-- Issue 16 (figures maintained as data arrives): the figures are read from
-- rollups written in the same transaction as every write that changes them.
--
-- figure_cells: per report and goal, one base cell (agent = '') carrying the
-- report's own dimensions, and one cell per (agent, model, cutoff class) of
-- its attempts with their sums.
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

-- figure_groups: the sums of the cells per group at each level (a bit per
-- attempt dimension kept: 1 agent, 2 model, 4 cutoff class; a dimension not
-- kept is ''), with the per-report counts (graded, reproduced, awaiting).
CREATE TABLE figure_groups (
    goal                  TEXT NOT NULL,
    level                 BIGINT NOT NULL,
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
    PRIMARY KEY (goal, level, project_id, route, category, vague, agent, model, cutoff)
);

-- The dates throughput reads, kept on the report with its other counters
-- (reproduction attempts only): its flows are then one row per report,
-- with no attempt to read.
ALTER TABLE reports ADD COLUMN first_attempt_at TIMESTAMPTZ;
ALTER TABLE reports ADD COLUMN last_graded_at TIMESTAMPTZ;
UPDATE reports SET
    first_attempt_at = (SELECT MIN(a.started_at) FROM attempts a WHERE a.report_id = reports.id AND a.goal = 'reproduce'),
    last_graded_at = (SELECT MAX(CASE WHEN a.graded THEN COALESCE(a.ended_at, a.started_at) END) FROM attempts a
                      WHERE a.report_id = reports.id AND a.goal = 'reproduce');

-- Spend in a window (the glance's "spent this month") reads the window's
-- attempts only.
CREATE INDEX attempts_started ON attempts (started_at);

-- The oracle figures' counts, maintained alike: per report its facts
-- (`oracle:KIND|SOURCE` once, `cause:CAUSE` per failed reproduction with
-- that cause, `llm_judged` and `llm_right` for the LLM verdicts a
-- deterministic check graded), and their sums per project.
CREATE TABLE figure_facts (
    report_id  BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    fact       TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (report_id, fact)
);
CREATE TABLE figure_project_facts (
    project_id BIGINT NOT NULL,
    fact       TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (project_id, fact)
);
