SELECT kind, path, detail FROM {flags} WHERE run_id = $run AND trial_id = $trial ORDER BY path, kind
