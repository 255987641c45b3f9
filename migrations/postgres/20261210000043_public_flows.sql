-- The last slow reads (issue 36): the throughput rollups' levels without a
-- project now sum the public projects only, so a visitor's throughput and
-- glance read one row a day instead of one a project and day; a caller who
-- also sees private projects adds their rows at the project's level. The
-- cells keep the project's visibility, so a change of it moves the counts.
-- Emptied here, they are rebuilt from the reports when the server next
-- opens the database (ensure_figures).
ALTER TABLE flow_cells ADD COLUMN public BIGINT NOT NULL DEFAULT 1;
DELETE FROM flow_groups;
DELETE FROM flow_cells;
