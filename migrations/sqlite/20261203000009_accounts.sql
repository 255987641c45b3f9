-- Accounts: users with a global role, per-project memberships, sessions
-- behind a cookie, API tokens (stored as hashes only) and failed sign-ins for
-- rate limiting.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,                  -- argon2id PHC string
    admin         INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL
);

CREATE TABLE memberships (
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('maintainer', 'viewer')),
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, project_id)
);

-- A session's id is kept as its SHA-256 only: a copy of the database holds
-- no cookie that signs anyone in.
CREATE TABLE sessions (
    id_hash    TEXT PRIMARY KEY,
    user_id    INTEGER REFERENCES users(id) ON DELETE CASCADE,
    data       TEXT NOT NULL,                     -- JSON session record data
    expires_at TEXT NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,            -- SHA-256 of the whole token
    prefix       TEXT NOT NULL,                   -- the first characters, to recognise it in lists
    scope        TEXT NOT NULL CHECK (scope IN ('agent', 'ci', 'read', 'user')),
    project_id   INTEGER REFERENCES projects(id) ON DELETE CASCADE,
    user_id      INTEGER REFERENCES users(id) ON DELETE CASCADE,  -- `user` tokens act as this user
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    last_used_at TEXT,
    revoked_at   TEXT,
    CHECK ((scope = 'user') = (user_id IS NOT NULL AND project_id IS NULL)),
    CHECK (scope = 'user' OR project_id IS NOT NULL)
);
CREATE INDEX api_tokens_project ON api_tokens (project_id);

CREATE TABLE signin_failures (
    id  INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,                            -- `user:NAME` or `addr:IP`
    at  TEXT NOT NULL
);
CREATE INDEX signin_failures_key ON signin_failures (key, at);
