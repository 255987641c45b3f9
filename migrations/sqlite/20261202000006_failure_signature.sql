-- The normalised failure signature a graded attempt showed on buggy, so
-- failures group by signature in SQL (duplicate reports, common breakages).
ALTER TABLE attempts ADD COLUMN failure_signature TEXT;
CREATE INDEX attempts_failure_signature ON attempts (failure_signature) WHERE failure_signature IS NOT NULL;
