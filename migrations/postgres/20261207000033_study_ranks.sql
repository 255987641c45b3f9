-- Figures a team can quote (issue 34): where an attempt's first success
-- ranked among its candidates (a study's ranking: 1 is the first shown),
-- NULL when not ranked.
ALTER TABLE attempts ADD COLUMN success_rank INTEGER;
