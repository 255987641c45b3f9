-- Group commit (issue 36): a write that appends attempts to a report moves
-- the oracle figures by those attempts alone, but whether an LLM's lead was
-- checked by a deterministic grade depends on the report's newest such
-- grade. This reads it without reading the report's every attempt.
CREATE INDEX attempts_judged ON attempts (report_id, started_at)
    WHERE goal = 'reproduce' AND verdict_source = 'deterministic' AND verdict IN ('reproduced', 'not_reproduced');
