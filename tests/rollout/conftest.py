"""Small real warehouses (Parquet + DuckDB through ``replace_run``) for the rollout tests:
runs of one or two configurations, each trial with its final regression grading."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from warehouse import db
from warehouse.schema import table_from_rows

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def write_run(path: Path, run_id: str, started: datetime, trials: list[dict]) -> None:
    """One run. A trial: ``config``, ``case``, ``outcome`` (default accepted), ``broke``
    (a regression criterion that passed on the initial commit failed; None: no regression
    criterion graded), ``cost`` (None: unknown)."""
    batch = "b1"
    configs, cases, trows, grows = {}, {}, [], []
    for i, t in enumerate(trials):
        cfg, case = t["config"], t["case"]
        configs[cfg] = {"run_id": run_id, "config_id": f"{cfg}-0123456789", "variant": cfg,
                        "model": f"model-{cfg}", "harness": "h", "harness_version": "1",
                        "source_format": "trialhouse", "variant_order": len(configs), "simulated": False,
                        "ingest_batch_id": batch}
        cases[case] = {"run_id": run_id, "case_id": case, "holdout": False, "ingest_batch_id": batch}
        tid = f"{run_id}-{cfg}-{case}-{i}"
        outcome = t.get("outcome", "accepted")
        trows.append({"run_id": run_id, "trial_id": tid, "source_format": "trialhouse",
                      "config_id": f"{cfg}-0123456789", "variant": cfg, "model": f"model-{cfg}",
                      "harness": "h", "harness_version": "1", "case_id": case, "repetition": 1,
                      "outcome": outcome, "complete": True, "duration_s": 5.0,
                      "cost_usd": t.get("cost", 0.5), "started_at": started + timedelta(seconds=i), "simulated": False,
                      "ingest_batch_id": batch})
        if t.get("broke") is not None:
            grows.append({"run_id": run_id, "trial_id": tid, "case_id": case, "attempt": 1, "final": True,
                          "criterion_id": "keeps-working", "layer": "regression", "baseline": "passed",
                          "verdict": "failed" if t["broke"] else "passed", "ingest_batch_id": batch})
    tables = {
        "runs": table_from_rows("runs", [{"run_id": run_id, "source_format": "trialhouse",
                                          "manifest_id": "bench", "started_at": started,
                                          "ingest_batch_id": batch}]),
        "configs": table_from_rows("configs", list(configs.values())),
        "cases": table_from_rows("cases", list(cases.values())),
        "trials": table_from_rows("trials", trows),
        "gradings": table_from_rows("gradings", grows),
    }
    with db.write_lock(path):
        db.replace_run(path, run_id, tables)
        db.open(path).close()


def week(config: str, accepted: int, broke: int, total: int = 10, cost: float | None = 0.5) -> list[dict]:
    """``total`` trials of ``config`` on cases c0..: the first ``accepted`` accepted, and the
    first ``broke`` of them broke a regression criterion (outcome regression)."""
    out = []
    for i in range(total):
        outcome = "regression" if i < broke else ("accepted" if i < accepted else "target_failed")
        out.append({"config": config, "case": f"c{i}", "outcome": outcome, "broke": i < broke, "cost": cost})
    return out


@pytest.fixture
def rollout_kit():
    return SimpleNamespace(write_run=write_run, week=week, T0=T0)
