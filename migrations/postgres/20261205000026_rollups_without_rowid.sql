-- SQLite rebuilds the rollups as WITHOUT ROWID tables in this migration;
-- PostgreSQL's tables stay as they are. The oracle facts now count
-- authoring minutes too: a database with reports but no figure cells has
-- every rollup built again from its rows when failpass starts
-- (`ensure_figures`).
DELETE FROM figure_cells;
