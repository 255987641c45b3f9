-- Issue 16 (figures maintained as data arrives): the cost and wall-time
-- distributions read bins kept as data arrives, not every attempt.
--
-- value_cells: per report and (goal, agent, model, cutoff class), how many
-- of its attempts' values fall in each bin of a metric (a sixteenth of a
-- doubling wide; see failpass_shared::figures::value_bin) and their sum,
-- with the report's project and route as they were counted.
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
);

-- value_groups: the cells summed per group at the figures' eight levels (a
-- bit per attempt dimension kept: 1 agent, 2 model, 4 cutoff class; a
-- dimension not kept is '').
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
);
