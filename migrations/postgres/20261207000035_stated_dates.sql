-- Unknown is unknown (issue 34): whether a report's filing date and an
-- attempt's time were stated, or are only when failpass took them in (an
-- import that gave none). A record counts in a period by its own dates, and
-- in none when it has none; its time to reproduction is unknown.
ALTER TABLE reports ADD COLUMN filed_at_stated BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE attempts ADD COLUMN time_stated BOOLEAN NOT NULL DEFAULT TRUE;
