-- Issue 14: an attempt without a cost is unknown, not $0. Its cost_usd stays 0
-- (so sums need no care) and cost_known says it is not a figure.
ALTER TABLE attempts ADD COLUMN cost_known INTEGER NOT NULL DEFAULT 1;
