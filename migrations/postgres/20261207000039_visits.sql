-- "Since my last visit" (issue 35): when a person last loaded a page, and
-- when their visit before this one ended (a visit is a run of page loads
-- with less than 30 minutes between them).
ALTER TABLE users ADD COLUMN last_seen_at TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN previous_visit_at TIMESTAMPTZ;
