-- Issue 14: live GitHub intake. A project's webhook secret (GitHub signs each
-- delivery with it), and the deliveries received (idempotent by their id).
ALTER TABLE projects ADD COLUMN webhook_secret TEXT NULL;
CREATE TABLE webhook_deliveries (
    delivery_id TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    event       TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    received_at TEXT NOT NULL
);
