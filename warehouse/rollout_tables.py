"""What a rollout records beside the benchmark: ``rule_decisions`` (a stop rule resumed by its
owner), ``drift_decisions`` (canary drift acknowledged) and ``cohort_tickets`` (observational cohorts: agent work on real tickets), assembled
in ``warehouse.schema``; docs/tables.md, docs/rollout.md.

Cohort rows are never trials: no view or question that reads ``trials`` sees them, so a
production or shadow cohort cannot enter a paired comparison or a Pareto front.
"""

from __future__ import annotations

from warehouse.table_spec import Column, table_spec

SPECS = {
    "rule_decisions": table_spec(
        "A stop rule resumed by one of its owners (`trialhouse rules resume`): who, why, and the "
        "evidence the rule had fired on. The same evidence does not fire the rule again; new runs do.",
        Column("rule_id", "string", False),
        Column("rule_sha256", "string", False),  # the rule as declared (metric, threshold, window, scope)
        Column("decision", "string", False),  # resume
        Column("decided_by", "string", False),  # one of the rule's owners
        Column("reason", "string", False),
        Column("evidence_key", "string", False),  # sha256 of the trials the firing evaluation counted
        Column("value", "float64"),  # the metric when it fired
        Column("trials", "int64"),  # trials counted then
        Column("window_json", "string"),  # the window evaluated: runs or since/until
        Column("decided_at", "timestamp", False),
    ),
    "drift_decisions": table_spec(
        "Canary drift acknowledged (`trialhouse report --previous-period --accept-drift REASON`): "
        "why, and the canary trials that drifted. The same evidence no longer blocks the period's "
        "verdicts; a new drift does.",
        Column("decision", "string", False),  # accept_drift
        Column("reason", "string", False),
        Column("evidence_key", "string", False),  # sha256 of the drifted canaries' (configuration, case, trials)
        Column("drifted", "int64", False),  # drifted canary results acknowledged
        Column("cells_json", "string"),  # the drifted canary results: configuration, case, outcomes, fingerprints
        Column("window_json", "string"),  # the period windows compared
        Column("decided_at", "timestamp", False),
    ),
    "cohort_tickets": table_spec(
        "Observational cohorts (`trialhouse ingest --cohort production|shadow FILE`): one row per "
        "ticket an agent configuration worked on outside the benchmark. Never trials: kept out of "
        "paired comparisons and Pareto fronts. `arm` and `assignment_seed` mark a randomised control group.",
        Column("cohort", "string", False),  # production | shadow
        Column("ticket", "string", False),
        Column("repository", "string"),
        Column("config_id", "string"),  # as the file names it, else matched by variant or model/harness
        Column("variant", "string"),
        Column("model", "string"),
        Column("harness", "string"),
        Column("harness_version", "string"),
        Column("arm", "string"),  # treatment | control | null (not randomised)
        Column("assignment_seed", "string"),  # the seed the ticket → arm assignment was drawn with
        Column("opened", "bool", False),  # a change was proposed (pull/merge request opened)
        Column("merged", "bool", False),
        Column("reverted", "bool", False),
        Column("review_minutes", "float64"),  # null: unknown, never 0
        Column("incidents", "int64", False),  # incidents linked to the change
        Column("incident_ids", "string"),  # JSON array of the linked incident ids
        Column("started_at", "timestamp"),  # when the work on the ticket started
        Column("opened_at", "timestamp"),
        Column("merged_at", "timestamp"),
        Column("reverted_at", "timestamp"),
        Column("source_file", "string", False),
        Column("source_line", "int64", False),
    ),
}
