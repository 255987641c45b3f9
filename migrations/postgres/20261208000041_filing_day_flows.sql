-- The last slow reads (issue 36).
-- The glance counts the reports filed in its period that were reproduced or
-- reached a final state; the throughput rollups now keep those counts by
-- filing day (flow kinds filed_counted and filed_not_reproduced). Emptied
-- here, they are rebuilt from the reports when the server next opens the
-- database (ensure_figures).
DELETE FROM flow_groups;
DELETE FROM flow_cells;
-- The routing alarm counts the reports of the last 30 days by route and
-- correction: the project's filing-date index carries the route (not the correction:
-- an included column is stored whole in the index row, and a correction's
-- reason may be longer than a B-tree row may be).
DROP INDEX reports_project_filed;
CREATE INDEX reports_project_filed ON reports (project_id, filed_at, id) INCLUDE (route);
-- The figures of a spend window (dated=spent) read the period cells of its
-- months and days.
CREATE INDEX period_cells_window ON period_cells (kind, period);
