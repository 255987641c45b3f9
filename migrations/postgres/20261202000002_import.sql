-- Bulk intake: content hashes make re-imports idempotent; agents keep the
-- figures a source states about itself beside what its rows say.
ALTER TABLE reports ADD COLUMN content_hash TEXT;
ALTER TABLE attempts ADD COLUMN content_hash TEXT;
ALTER TABLE attempts ADD COLUMN api_calls BIGINT;

CREATE TABLE agents (
    id                       BIGSERIAL PRIMARY KEY,
    name                     TEXT NOT NULL UNIQUE,
    source                   TEXT,
    model                    TEXT,
    date                     TEXT,
    stated_rate              DOUBLE PRECISION,
    stated_instances         BIGINT,
    stated_cost_usd          DOUBLE PRECISION,
    stated_instance_cost_usd DOUBLE PRECISION,
    stated_instance_calls    DOUBLE PRECISION,
    notes                    TEXT,
    content_hash             TEXT NOT NULL,
    created_at               TIMESTAMPTZ NOT NULL,
    updated_at               TIMESTAMPTZ NOT NULL
);
