"""The example's third manifest, ``conditions.json``: one simulated configuration under a
cold and a warm dependency cache, on two of the corpus's cases (docs/rollout.md, "Named
conditions"; docs/example-corpus.md).

Each variant declares ``conditions: {cache: cold|warm}``; the manifest's one prepare command
reads ``TRIALHOUSE_CONDITION_CACHE`` and fills the trial's dependency cache (eight stand-in
wheels under ``$HOME/.cache/example-deps``) or empties it. The cache lives outside the
workspace, so the prepared tree, the controls and the graders are the same under both.
Its own manifest (a task universe of its own) and not part of ``make demo``: the main
manifest's trials stay exactly what they were, and the pair adds 4 trials where it is run.
"""

from __future__ import annotations

import json
from typing import Any

CONDITION_CASES = ("order-quantity-validation", "format-cents-negative")
"""Two easy cases on two repositories."""
DEP_CACHE = """import os, pathlib, shutil
cache = pathlib.Path(os.environ["HOME"], ".cache", "example-deps")
state = os.environ.get("TRIALHOUSE_CONDITION_CACHE", "cold")
shutil.rmtree(cache, ignore_errors=True)
if state == "warm":
    cache.mkdir(parents=True)
    for i in range(8):
        (cache / f"dep{i}-1.0-py3-none-any.whl").write_bytes(bytes(4096))
print(f"dependency cache {state}: {len(list(cache.glob('*'))) if cache.exists() else 0} wheel(s)")
"""
"""The prepare command's program (``python3 -c``): no input file, so the cases' other
inputs are the main manifest's."""


def build_conditions_manifest(main: dict[str, Any]) -> dict[str, Any]:
    """The cold/warm cache pair for the main manifest ``main`` (its repositories and cases)."""
    cases = {c["id"]: c for c in main["cases"]}
    sim = next(v for v in main["variants"] if v["id"] == "sim-alpha-minimal")
    pair = [{**json.loads(json.dumps({k: v for k, v in sim.items() if k != "evaluations"})),
             "id": f"sim-alpha-{state}", "conditions": {"cache": state}} for state in ("cold", "warm")]
    return {
        "schema_version": 1,
        "id": "trialhouse-example-conditions",
        "repository": main["repository"],
        "initial_commit": main["initial_commit"],
        "repetitions": 1,
        "max_attempts": 1,
        "control_repeats": 1,
        "timeout_seconds": 120,
        "stages": ["build"],
        "prepare_commands": [["python3", "-c", DEP_CACHE]],
        "cases": [{**json.loads(json.dumps(cases[cid])),
                   "criteria": [c for c in cases[cid]["criteria"] if "judge" not in c]}
                  for cid in CONDITION_CASES],
        "variants": pair,
    }
