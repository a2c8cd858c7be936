"""Generate examples/foreign/runs.jsonl and prices.json (invented, seeded values).

Run: .venv/bin/python tests/ingest/formats/gen_foreign_examples.py
3 models × 2 harnesses × 20 tasks × 3 trials, with unknown tokens/steps/versions here
and there, some reported costs, and a model whose prices are unknown.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parents[3] / "examples" / "foreign"

MODELS = {"model-a": 0.62, "model-b": 0.48, "model-c": 0.35}
HARNESSES = {("minimal-shell", "1.2.0"): 0.0, ("planner-editor", "0.9.1"): 0.08}
REPOS = ["acme/widgets", "acme/ledger", "octo/parser", "octo/cli"]
FAILURE_MODES = ["tests_failed", "no_patch", "timeout", "wrong_file"]


def main() -> None:
    rng = random.Random(20260115)
    tasks = [f"task-{i:02d}" for i in range(1, 21)]
    difficulty = {t: rng.uniform(-0.25, 0.25) for t in tasks}
    start = datetime(2026, 1, 20, 9, 0, tzinfo=UTC)
    lines = []
    for model, skill in MODELS.items():
        for (harness, version), boost in HARNESSES.items():
            for t_i, task in enumerate(tasks):
                for trial in (1, 2, 3):
                    p = min(0.95, max(0.05, skill + boost - difficulty[task]))
                    u = rng.random()
                    status = "infra_error" if u < 0.03 else ("solved" if rng.random() < p else "failed")
                    steps = rng.randint(6, 40) if status != "infra_error" else rng.randint(0, 2)
                    inp = steps * rng.randint(2500, 4500) + (20000 if harness == "planner-editor" else 0)
                    out = steps * rng.randint(150, 400)
                    when = start + timedelta(days=t_i + 2 * trial, minutes=rng.randint(0, 600))
                    row = {
                        "model": model,
                        "harness": harness,
                        "harness_version": version,
                        "task_id": task,
                        "trial": trial,
                        "status": status,
                        "input_tokens": inp,
                        "output_tokens": out,
                        "steps": steps,
                        "repo": REPOS[t_i % len(REPOS)],
                        "benchmark": "acme-bugs-v1",
                        "wall_seconds": round(steps * rng.uniform(8, 20), 1),
                        "started_at": when.isoformat(),
                    }
                    if status == "failed":
                        row["failure_mode"] = rng.choice(FAILURE_MODES)
                    if model == "model-b" and rng.random() < 0.08:  # an exporter that sometimes lost usage
                        row["input_tokens"] = None
                        row["output_tokens"] = None
                    if rng.random() < 0.04:
                        row["steps"] = None
                    if harness == "planner-editor" and model == "model-c":
                        row["harness_version"] = None  # an export that lost the version
                    if harness == "planner-editor" and model == "model-c" and trial != 3:
                        # This harness reports its own cost estimate.
                        row["cost_usd"] = round((inp * 0.5 + out * 2.0) / 1e6, 5)
                    lines.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "runs.jsonl", "w", encoding="utf-8") as f:
        for row in lines:
            f.write(json.dumps(row) + "\n")
    prices = {
        "as_of": "2026-02-15",
        "currency": "USD",
        "models": {
            "model-a": [
                {"effective_from": "2025-09-01", "input_per_mtok": 3.0, "output_per_mtok": 15.0,
                 "cached_input_per_mtok": 0.3},
                {"effective_from": "2026-02-01", "input_per_mtok": 2.5, "output_per_mtok": 12.5,
                 "cached_input_per_mtok": 0.25},
            ],
            "model-b": [{"effective_from": "2025-11-01", "input_per_mtok": 0.8, "output_per_mtok": 4.0}],
            "model-c": [{"effective_from": "2025-10-01", "input_per_mtok": None, "output_per_mtok": None,
                         "note": "price not published; cost stays unknown unless reported"}],
        },
    }
    (OUT / "prices.json").write_text(json.dumps(prices, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} lines to {OUT / 'runs.jsonl'}")


if __name__ == "__main__":
    main()
