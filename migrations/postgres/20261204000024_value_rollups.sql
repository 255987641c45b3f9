-- Issue 16 (figures maintained as data arrives): the cost and wall-time
-- distributions read bins kept as data arrives, not every attempt.
--
-- value_cells: per report and (goal, agent, model, cutoff class), how many
-- of its attempts' values fall in each bin of a metric (a sixteenth of a
-- doubling wide; see failpass_shared::figures::value_bin) and their sum,
-- with the report's project and route as they were counted.
CREATE TABLE value_cells (
    report_id  BIGINT NOT NULL,
    goal       TEXT NOT NULL,
    agent      TEXT NOT NULL,
    model      TEXT NOT NULL,
    cutoff     TEXT NOT NULL,
    metric     TEXT NOT NULL,
    bin        BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    route      TEXT NOT NULL,
    n          BIGINT NOT NULL,
    total      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (report_id, goal, agent, model, cutoff, metric, bin)
);

-- value_groups: the cells summed per group at the figures' eight levels (a
-- bit per attempt dimension kept: 1 agent, 2 model, 4 cutoff class; a
-- dimension not kept is '').
CREATE TABLE value_groups (
    goal       TEXT NOT NULL,
    metric     TEXT NOT NULL,
    level      BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    route      TEXT NOT NULL,
    agent      TEXT NOT NULL,
    model      TEXT NOT NULL,
    cutoff     TEXT NOT NULL,
    bin        BIGINT NOT NULL,
    n          BIGINT NOT NULL,
    total      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (goal, metric, level, project_id, route, agent, model, cutoff, bin)
);
