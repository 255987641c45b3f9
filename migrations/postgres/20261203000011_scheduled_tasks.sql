-- When each periodic task last ran (the re-check schedule), so its period
-- holds across restarts rather than starting over with the server.
CREATE TABLE scheduled_tasks (
    name     TEXT PRIMARY KEY,
    last_run TIMESTAMPTZ NOT NULL
);
