"""Small warehouses built from explicit rows (real Parquet + DuckDB), shared by analysis tests."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from warehouse import db
from warehouse.schema import table_from_rows

T0 = datetime(2026, 2, 1, tzinfo=UTC)


TRIAL_EXTRA = ("case_fingerprint", "scored", "redactions", "secrets_leaked", "reason")
"""Trial columns a test may set directly (issue 13: versions, scoring, secrets)."""


def make_warehouse(path: Path, trials: list[dict], run_id: str = "r1", cases=None,
                   judgments=None, started=T0, run: dict | None = None,
                   extra_tables: dict[str, list[dict]] | None = None) -> Path:
    """Write one run: trials are dicts with at least config/case/rep/outcome. ``run``
    adds columns to the runs row (integrity, isolation, ...); ``extra_tables`` adds rows of
    other tables (criteria, gradings, skipped_trials), run id and batch filled in."""
    batch = "b1"
    cfgs, case_rows = {}, {}
    rows = []
    for i, t in enumerate(trials):
        cid = t.get("config_id", t.get("variant", "cfg"))
        cfgs.setdefault(cid, {"run_id": run_id, "config_id": cid,
                              "variant": t.get("variant", cid), "model": t.get("model", "m"),
                              "harness": t.get("harness", "h"),
                              "harness_version": t.get("harness_version", "1"),
                              "simulated": t.get("simulated", False), "source_format": "test",
                              "agent_kind": t.get("agent_kind"),
                              "variant_order": len(cfgs), "ingest_batch_id": batch})
        case_rows.setdefault(t["case_id"], {"run_id": run_id, "case_id": t["case_id"],
                                            "holdout": False, "ingest_batch_id": batch})
        outcome = t.get("outcome", "accepted")
        rows.append({
            "run_id": run_id, "trial_id": t.get("trial_id", f"{run_id}-t{i}"),
            "source_format": "test", "config_id": cid, "variant": t.get("variant", cid),
            "model": t.get("model", "m"), "harness": t.get("harness", "h"),
            "harness_version": t.get("harness_version", "1"), "case_id": t["case_id"],
            "repetition": t.get("rep", 1), "outcome": outcome,
            "complete": t.get("complete", outcome is not None),
            "duration_s": t.get("duration_s", 10.0), "setup_s": t.get("setup_s"),
            "agent_s": t.get("agent_s"), "verification_s": t.get("verification_s"),
            "time_to_first_edit_s": t.get("ttfe"),
            "input_tokens": t.get("input_tokens", 100), "output_tokens": t.get("output_tokens", 10),
            "steps": t.get("steps", 3), "cost_usd": t.get("cost_usd", 0.01),
            "simulated": t.get("simulated", False), "started_at": t.get("started_at", started),
            "labels_json": t.get("labels_json"), "ingest_batch_id": batch,
            **{k: t[k] for k in TRIAL_EXTRA if k in t},
        })
    for c in cases or []:
        case_rows[c["case_id"]] = {"run_id": run_id, "holdout": False, "ingest_batch_id": batch,
                                   **c}
    tables = {
        "runs": table_from_rows("runs", [{"run_id": run_id, "source_format": "test",
                                          "started_at": started, "ingest_batch_id": batch,
                                          **(run or {})}]),
        "configs": table_from_rows("configs", list(cfgs.values())),
        "cases": table_from_rows("cases", list(case_rows.values())),
        "trials": table_from_rows("trials", rows),
    }
    for name, extra in (extra_tables or {}).items():
        tables[name] = table_from_rows(
            name, [{"run_id": run_id, "ingest_batch_id": batch, **r} for r in extra])
    if judgments is not None:
        tables["judgments"] = table_from_rows(
            "judgments", [{"run_id": run_id, "ingest_batch_id": batch, **j} for j in judgments])
    with db.write_lock(path):
        db.replace_run(path, run_id, tables)
        db.open(path).close()
    return path


@pytest.fixture
def _warehouses(tmp_path):
    """Factory: each call writes runs (make_warehouse keyword sets) into a fresh warehouse
    and returns a read-only connection, closed at teardown."""
    opened = []

    def build(runs: list[dict]):
        path = tmp_path / f"w{len(opened)}" / "t.duckdb"
        for run in runs:
            make_warehouse(path, **run)
        con = db.open(path, read_only=True)
        opened.append(con)
        return con

    yield build
    for con in opened:
        con.close()


@pytest.fixture
def wh(_warehouses):
    """Factory: wh(trials, **kw) -> read-only connection to a fresh one-run warehouse."""
    return lambda trials, **kw: _warehouses([{"trials": trials, **kw}])


@pytest.fixture
def wh_runs(_warehouses):
    """Factory: wh_runs([(run_id, trials, cases), ...]) -> read-only connection to one
    warehouse holding several runs (runs sharing a ``benchmark`` case label pool tasks)."""
    return lambda runs: _warehouses([{"run_id": r, "trials": t, "cases": c} for r, t, c in runs])


def _close(a, b, rel_tol=1e-9, abs_tol=1e-12, path="") -> None:
    """Nested equality with floats compared to ``rel_tol`` (DuckDB may sum in another order)."""
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), path
        for k in a:
            _close(a[k], b[k], rel_tol, abs_tol, f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, rel_tol, abs_tol, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.fixture
def close():
    """``_close`` as a fixture (conftest is not importable in importlib mode)."""
    return _close


def _grid(spec: dict[str, dict[str, list[str]]], **extra) -> list[dict]:
    """{config: {case: [outcome per rep]}} -> trial dicts."""
    out = []
    for cfg, cases in spec.items():
        for case, outcomes in cases.items():
            for rep, o in enumerate(outcomes, 1):
                out.append({"config_id": cfg, "case_id": case, "rep": rep, "outcome": o,
                            **extra})
    return out


@pytest.fixture
def grid():
    """The ``_grid`` helper as a fixture (conftest is not importable in importlib mode)."""
    return _grid


@pytest.fixture
def write_run():
    """``make_warehouse`` as a fixture: write a run into a warehouse path (no connection
    left open, so a test can then change the warehouse, e.g. invalidate a run)."""
    return make_warehouse
