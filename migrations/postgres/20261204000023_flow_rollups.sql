-- Issue 16 (figures maintained as data arrives): throughput, the glance and
-- the status pages read counts kept as data arrives, not every report.
--
-- flow_cells: per report, what it adds to the throughput counts: its status,
-- the days (from 1970-01-01, UTC) it was filed, first counted and last
-- graded, and the bin of its time to reproduction.
CREATE TABLE flow_cells (
    report_id   BIGINT PRIMARY KEY,
    project_id  BIGINT NOT NULL,
    route       TEXT NOT NULL,
    route_check BIGINT NOT NULL,
    status      TEXT NOT NULL,
    filed_day   BIGINT NOT NULL,
    counted_day BIGINT,
    graded_day  BIGINT,
    ttr_bin     BIGINT
);

-- flow_groups: reports counted per (kind, day or bin) and group, at eight
-- levels (a bit per dimension kept: 1 route, 2 route check, 4 project; a
-- dimension not kept is '', -1 or project 0). Levels without the project
-- answer callers who see every project; the others, scoped callers. Keyed
-- by (level, kind, at) first, so a level's counts are read in order.
CREATE TABLE flow_groups (
    level       BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    project_id  BIGINT NOT NULL,
    route       TEXT NOT NULL,
    route_check BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    n           BIGINT NOT NULL,
    PRIMARY KEY (level, kind, at, project_id, route, route_check)
);
