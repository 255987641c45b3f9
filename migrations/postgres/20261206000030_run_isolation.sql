-- What the sandbox gave each run (issue 31): its own user, PID namespace,
-- built root, network (none, outbound or the host's), system-call filter and
-- pids cgroup, as JSON. NULL for imported runs and runs graded before.
ALTER TABLE runs ADD COLUMN isolation JSONB NULL;
