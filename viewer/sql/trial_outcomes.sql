-- The trials a review may name: (run, outcome) of every trial with this id.
SELECT run_id, outcome FROM trials WHERE trial_id = $trial
