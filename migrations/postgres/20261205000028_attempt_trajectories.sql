-- An attempt's trajectory (issue 17): its steps as failpass read them
-- (`shared::trajectory`: capped, loops and the candidate's step marked), as
-- gzip-compressed JSON, one per attempt; sent again, it is replaced.
CREATE TABLE attempt_trajectories (
    attempt_id BIGINT PRIMARY KEY REFERENCES attempts(id),
    format     TEXT NOT NULL,
    steps      BIGINT NOT NULL,
    raw_bytes  BIGINT NOT NULL,
    body       BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
