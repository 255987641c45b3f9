-- Routing that reads real reports (issue 33): each project's learned
-- boilerplate (lines its reports share, left out of the evidence), and a
-- maintainer's "route is right" confirmation beside the correction.
CREATE TABLE project_routing (
    project_id  INTEGER PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    boilerplate TEXT NOT NULL,              -- JSON [{line, reports}]
    reports     INTEGER NOT NULL,           -- how many reports it was learned from
    learned_at  TEXT NOT NULL
);
ALTER TABLE reports ADD COLUMN route_confirmation TEXT NULL;  -- JSON {route, by, at}
