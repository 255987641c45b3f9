-- Issue 15: a report's upstream state and its life cycle. `resolution` is why
-- it left the backlog without a verdict; `resolution_by` is `upstream` when
-- read from the tracker (it yields to a reproduction) or the member who set
-- it (it stands). A member's reopening is kept as `reopened` so upstream does
-- not close it again.
ALTER TABLE reports ADD COLUMN upstream_state TEXT NULL;
ALTER TABLE reports ADD COLUMN upstream_reason TEXT NULL;
ALTER TABLE reports ADD COLUMN upstream_locked INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reports ADD COLUMN upstream_type TEXT NULL;
ALTER TABLE reports ADD COLUMN resolution TEXT NULL;
ALTER TABLE reports ADD COLUMN resolution_by TEXT NULL;
ALTER TABLE reports ADD COLUMN duplicate_of INTEGER NULL REFERENCES reports(id);
ALTER TABLE reports ADD COLUMN assignee TEXT NULL;
ALTER TABLE reports ADD COLUMN last_activity_at TEXT NULL;
UPDATE reports SET last_activity_at = created_at;
CREATE TABLE report_activity (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    report_id INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
    at        TEXT NOT NULL,
    actor     TEXT NOT NULL,
    via       TEXT NOT NULL,
    kind      TEXT NOT NULL,
    text      TEXT NOT NULL
);
CREATE INDEX report_activity_report ON report_activity (report_id, id);
INSERT INTO report_activity (report_id, at, actor, via, kind, text)
    SELECT id, created_at, 'import', 'import', 'created', 'taken in' FROM reports;
