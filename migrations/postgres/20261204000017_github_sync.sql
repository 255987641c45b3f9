-- Issue 14: `failpass sync github`. Per project, where the last sync ended
-- (`since`: the newest `updated_at` stored) and the ETag of the last first
-- page with the address it answered (a 304 to it means nothing changed).
CREATE TABLE github_sync (
    project   TEXT PRIMARY KEY,
    repo      TEXT NOT NULL,
    since     TEXT NULL,
    etag      TEXT NULL,
    etag_url  TEXT NULL,
    synced_at TIMESTAMPTZ NOT NULL
);
