-- Bulk intake: content hashes make re-imports idempotent; agents keep the
-- figures a source states about itself beside what its rows say.
ALTER TABLE reports ADD COLUMN content_hash TEXT;
ALTER TABLE attempts ADD COLUMN content_hash TEXT;
ALTER TABLE attempts ADD COLUMN api_calls INTEGER;

CREATE TABLE agents (
    id                       INTEGER PRIMARY KEY AUTOINCREMENT,
    name                     TEXT NOT NULL UNIQUE,
    source                   TEXT,
    model                    TEXT,
    date                     TEXT,
    stated_rate              REAL,
    stated_instances         INTEGER,
    stated_cost_usd          REAL,
    stated_instance_cost_usd REAL,
    stated_instance_calls    REAL,
    notes                    TEXT,
    content_hash             TEXT NOT NULL,
    created_at               TEXT NOT NULL,
    updated_at               TEXT NOT NULL
);
