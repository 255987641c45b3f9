-- One row that `/healthz` writes, so a full disk or a read-only database
-- shows as unhealthy rather than only a failing write later.
CREATE TABLE health (
    id         INTEGER PRIMARY KEY,
    checked_at TEXT NOT NULL
);
