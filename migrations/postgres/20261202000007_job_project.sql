-- The project a job works for, so job lists follow the viewer's scope
-- (private projects' jobs stay out of public views).
ALTER TABLE jobs ADD COLUMN project_id BIGINT REFERENCES projects(id);
CREATE INDEX jobs_project ON jobs (project_id);
