-- Issue 16 (lists from indexes): every sort of the triage queue, alone and
-- within a project, is read from an index in its order, so a page is the
-- LIMIT rows at the cursor's position however many reports there are (the
-- queue sorted by cost took 98 ms at 100,000 reports, sorting them all).
-- Filing time has its indexes since the first migration; the route and
-- status filters walk the sort's index and stop at the page.
CREATE INDEX reports_created ON reports (created_at, id);
CREATE INDEX reports_cost ON reports (cost_usd, id);
CREATE INDEX reports_attempts ON reports (attempts, id);
CREATE INDEX reports_last_activity ON reports ((COALESCE(last_activity_at, created_at)), id);
CREATE INDEX reports_project_created ON reports (project_id, created_at, id);
CREATE INDEX reports_project_cost ON reports (project_id, cost_usd, id);
CREATE INDEX reports_project_attempts ON reports (project_id, attempts, id);
CREATE INDEX reports_project_last_activity ON reports (project_id, (COALESCE(last_activity_at, created_at)), id);
-- The route and status filters with every other sort: a route is a third
-- of the reports, too many to sort for a page.
CREATE INDEX reports_route_created ON reports (route, created_at, id);
CREATE INDEX reports_route_cost ON reports (route, cost_usd, id);
CREATE INDEX reports_route_attempts ON reports (route, attempts, id);
CREATE INDEX reports_route_last_activity ON reports (route, (COALESCE(last_activity_at, created_at)), id);
CREATE INDEX reports_status_created ON reports (status, created_at, id);
CREATE INDEX reports_status_cost ON reports (status, cost_usd, id);
CREATE INDEX reports_status_attempts ON reports (status, attempts, id);
CREATE INDEX reports_status_last_activity ON reports (status, (COALESCE(last_activity_at, created_at)), id);
