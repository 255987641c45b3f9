-- Routing that reads real reports (issue 33): each project's learned
-- boilerplate (lines its reports share, left out of the evidence), and a
-- maintainer's "route is right" confirmation beside the correction.
CREATE TABLE project_routing (
    project_id  BIGINT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    boilerplate JSONB NOT NULL,
    reports     BIGINT NOT NULL,
    learned_at  TIMESTAMPTZ NOT NULL
);
ALTER TABLE reports ADD COLUMN route_confirmation JSONB NULL;
