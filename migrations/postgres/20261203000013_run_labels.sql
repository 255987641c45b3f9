-- Issue 14: a run says which refine iteration it belongs to, and which
-- release a re-check ran it on.
ALTER TABLE runs ADD COLUMN iteration INTEGER NULL;
ALTER TABLE runs ADD COLUMN release TEXT NULL;
