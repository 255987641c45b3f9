-- The figures of a spend window (issue 36): a year's cells and groups
-- (kind `year`), of each goal and of every goal (`*`: all of a report's
-- attempts in the year, whatever their goal), so a window of a year from
-- its first of January (this year) reads a row a project and route instead
-- of one a report (447 ms at a million attempts). Written here from the
-- month cells, which sum to them.
INSERT INTO period_cells (report_id, goal, kind, period, project_id, route, det, in_patch, attempts, graded, counting, leads, errors, awaiting, without_cost, counting_without_cost, api_calls, with_api_calls, cost_usd, cost_counting_usd)
    SELECT report_id, goal, 'year', CASE WHEN period = 'unknown' THEN period ELSE substr(period, 1, length(period) - 3) END, project_id, route, det, in_patch, SUM(attempts), SUM(graded), SUM(counting), SUM(leads), SUM(errors), SUM(awaiting), SUM(without_cost), SUM(counting_without_cost), SUM(api_calls), SUM(with_api_calls), SUM(cost_usd), SUM(cost_counting_usd)
    FROM period_cells WHERE kind = 'month'
    GROUP BY report_id, goal, CASE WHEN period = 'unknown' THEN period ELSE substr(period, 1, length(period) - 3) END, project_id, route, det, in_patch;
INSERT INTO period_cells (report_id, goal, kind, period, project_id, route, det, in_patch, attempts, graded, counting, leads, errors, awaiting, without_cost, counting_without_cost, api_calls, with_api_calls, cost_usd, cost_counting_usd)
    SELECT report_id, '*', 'year', period, project_id, route, MAX(det), MAX(in_patch), SUM(attempts), SUM(graded), SUM(counting), SUM(leads), SUM(errors), SUM(awaiting), SUM(without_cost), SUM(counting_without_cost), SUM(api_calls), SUM(with_api_calls), SUM(cost_usd), SUM(cost_counting_usd)
    FROM period_cells WHERE kind = 'year'
    GROUP BY report_id, period, project_id, route;
INSERT INTO period_groups (goal, kind, period, project_id, route, reports, reports_graded, reports_reproduced,
        reports_awaiting, reports_with_oracle, reports_in_patch, attempts, graded, counting, leads, errors, awaiting, without_cost, counting_without_cost, api_calls, with_api_calls, cost_usd, cost_counting_usd)
    SELECT goal, kind, period, project_id, route, COUNT(*), SUM(CASE WHEN graded > 0 THEN 1 ELSE 0 END),
        SUM(CASE WHEN counting > 0 THEN 1 ELSE 0 END), SUM(CASE WHEN awaiting > 0 AND counting = 0 THEN 1 ELSE 0 END),
        SUM(det), SUM(in_patch), SUM(attempts), SUM(graded), SUM(counting), SUM(leads), SUM(errors), SUM(awaiting), SUM(without_cost), SUM(counting_without_cost), SUM(api_calls), SUM(with_api_calls), SUM(cost_usd), SUM(cost_counting_usd)
    FROM period_cells WHERE kind = 'year'
    GROUP BY goal, kind, period, project_id, route;
