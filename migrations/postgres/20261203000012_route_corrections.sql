-- Issue 14: a route decided with low confidence is flagged for a human look,
-- and a maintainer's correction of a route sticks through re-routing.
ALTER TABLE reports ADD COLUMN route_check BOOLEAN NOT NULL DEFAULT FALSE;
-- The corrected route; while set, re-routing keeps it.
ALTER TABLE reports ADD COLUMN route_override TEXT NULL;
-- JSON RouteCorrection: route, previous, reason, by, at.
ALTER TABLE reports ADD COLUMN route_correction JSONB NULL;
CREATE INDEX reports_route_check ON reports (project_id, route_check);
