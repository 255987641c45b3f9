-- The last slow reads (issue 36): the value groups' key puts agent, model,
-- cutoff class and bin before the project and route, so a distribution by
-- agent, model or cutoff class (or of everything) sums its rows in the key's
-- order (on SQLite: without sorting them first).
ALTER TABLE value_groups DROP CONSTRAINT value_groups_pkey;
ALTER TABLE value_groups ADD PRIMARY KEY (goal, metric, level, agent, model, cutoff, bin, project_id, route);
