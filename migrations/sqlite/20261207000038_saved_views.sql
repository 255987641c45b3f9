-- Saved views (issue 35): a person's named filter sets, each an address of
-- the dashboard (so a view is a link to share).
CREATE TABLE saved_views (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    address    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (user_id, name)
);
