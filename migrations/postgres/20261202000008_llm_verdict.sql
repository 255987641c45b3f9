-- The LLM's verdict on an attempt that a deterministic check later regraded in
-- place (`lead` or `confirmed`), kept for LLM-verdict precision.
ALTER TABLE attempts ADD COLUMN llm_verdict TEXT;
