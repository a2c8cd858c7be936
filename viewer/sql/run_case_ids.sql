SELECT case_id FROM cases WHERE run_id = $run
UNION
SELECT case_id FROM trials WHERE run_id = $run
ORDER BY case_id
