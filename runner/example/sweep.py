"""The example's second manifest, ``sweep.json``: one budget sweep of a simulated agent and
one visible check, on a few of the corpus's cases (docs/example-corpus.md, "The budget
sweep and the visible check").

Its own manifest (id ``trialhouse-example-sweep``, a task universe of its own), so the main
manifest's trials, outcomes and common task set stay exactly what they were, and ``make
demo`` stays about as fast: six cases × three budgets × two repetitions.
"""

from __future__ import annotations

import json
from typing import Any

SWEEP_CASES = ("order-quantity-validation", "sku-format-validation", "format-cents-negative",
               "transfer-insufficient-funds", "request-counter-thread-safe", "ledger-thread-safe-deposits")
"""Two easy, two medium and two hard cases, on three repositories."""
SWEEP_BUDGETS = [0.1, 0.2, 0.4]
"""``max_cost_usd`` per trial: the hard cases cannot finish on the first, the agent buys
more build rounds with each (``runner.agents.builtin.affordable_rounds``)."""
CONTROL_REPEATS = 2
"""The controls run each criterion twice, not the default five: these cases' controls are
proven stable by the main manifest's (docs/example-corpus.md), and they were most of this
run's time."""
VISIBLE_CASE = "transfer-insufficient-funds"
VISIBLE_CRITERION = {
    "id": "raises-on-overdraft",
    "description": "transfer raises InsufficientFunds when the source balance is too low",
    "layer": "target",
    "command": ["python3", "{inputs}/graders/visible_ledger.py", "transfer_raises_on_overdraft"],
    "files": ["graders/visible_ledger.py", "graders/_harness.py"],
    "timeout_seconds": 30,
    "success_token": True,
    "visible": True,
}


def _case(case: dict[str, Any]) -> dict[str, Any]:
    """A copy of a main-manifest case without its judge criteria (no judges in this run),
    with the visible check added to ``VISIBLE_CASE``."""
    out = json.loads(json.dumps(case))
    out["criteria"] = [c for c in out["criteria"] if "judge" not in c]
    if out["id"] == VISIBLE_CASE:
        out["criteria"].append(dict(VISIBLE_CRITERION))
    return out


def build_sweep_manifest(main: dict[str, Any]) -> dict[str, Any]:
    """The sweep manifest for the main manifest ``main`` (its repositories and cases)."""
    cases = {c["id"]: c for c in main["cases"]}
    return {
        "schema_version": 1,
        "id": "trialhouse-example-sweep",
        "repository": main["repository"],
        "initial_commit": main["initial_commit"],
        "repetitions": 2,
        "max_attempts": 1,
        "control_repeats": CONTROL_REPEATS,
        "timeout_seconds": 120,
        "stages": ["build", "qa", "review"],
        "benchmark_policy": main["benchmark_policy"],
        "cases": [_case(cases[cid]) for cid in SWEEP_CASES],
        "variants": [{
            "id": "sim-alpha-budget", "model": "sim-alpha-SIMULATED", "harness": "sim-minimal",
            "harness_version": "1.4.0", "settings": {"simulated": True},
            "agent": {"kind": "simulated", "skill": 0.5, "candidates_dir": "candidates", "price_per_mtok": 3.0},
            "max_cost_usd": list(SWEEP_BUDGETS),
        }],
    }
