"""The example rollout files (examples/rollout, used by docs/rollout.md) are valid as shipped."""

from __future__ import annotations

from pathlib import Path

from analysis.stop_rules import load_rules
from ingest.cohorts import cohort_row
from ingest.judges import read_rows
from runner.retention import load_policy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "rollout"


def test_the_example_rules_and_policy_load() -> None:
    rules = load_rules(EXAMPLES / "rules.yaml")
    assert {r.metric for r in rules.rules} == {"regression_free_rate", "accepted_rate", "cost_per_accepted",
                                               "infra_error_rate"}
    policy, _sha = load_policy(EXAMPLES / "retention.yaml")
    assert (policy.raw_output_days, policy.workspace_days) == (30, 7)


def test_every_example_ticket_is_a_valid_row() -> None:
    for cohort, name in (("production", "production.csv"), ("shadow", "shadow.jsonl")):
        path = EXAMPLES / name
        seen: set[str] = set()
        with path.open("rb") as f:
            rows = [cohort_row(rec, cohort, {}, seen, str(path), line) for line, rec, _raw in read_rows(path, f)]
        assert rows and len(seen) == len(rows)
    arms = {r["arm"] for r in rows}
    assert arms == {"treatment", "control"} and {r["assignment_seed"] for r in rows} == {"20261130"}
