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


def th(*args: str, check: bool = True):
    """``trialhouse ARGS`` in a subprocess (the real command line)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"trialhouse {' '.join(args)} exited {proc.returncode}\n{proc.stderr}")
    return proc


REAL_CASES = ["order-quantity-validation", "json-store-atomic-save"]


def _small_manifest(corpus: Path) -> Path:
    """The example corpus cut to two cases, the reference and a weak simulated configuration
    (skill 0.05: a retry, a regression and a target failure), one repetition, two attempts."""
    import copy
    import json

    m = json.loads((corpus / "manifest.json").read_text())
    m["cases"] = [c for c in m["cases"] if c["id"] in REAL_CASES]
    beta = next(v for v in m["variants"] if v["id"] == "sim-beta-minimal")
    weak = copy.deepcopy(beta)
    weak["id"], weak["agent"]["skill"] = "sim-weak", 0.05
    m["variants"] = [v for v in m["variants"] if v["id"] == "reference"] + [weak]
    m.update(repetitions=1, control_repeats=1, max_attempts=2, stages=["build"])
    for case in m["cases"]:  # judges are advisory and slow; tiers are about command checks
        case["criteria"] = [k for k in case["criteria"] if k.get("command")]
    _tiers_and_bank(m)
    path = corpus / "rollout-small.json"
    path.write_text(json.dumps(m, indent=1))
    return path


BANK = [("bank-orders", "orders_existing", "orders", "validation", "bad-order", "INC-106"),
        ("bank-billing", "billing_existing", "billing", "arithmetic", "wrong-charge", "INC-101"),
        ("bank-counters", "counter_existing", "counters", "race", "lost-count", "INC-102"),
        ("bank-inventory", "inventory_existing", "inventory", "partial-update", "oversell", "INC-103"),
        ("bank-webhooks", "webhooks_existing", "webhooks", "parsing", "rejected-event", "INC-104"),
        ("bank-tenants", "tenants_existing", "tenants", "access-check", "data-leak", "INC-105")]
DRAWS = {"order-quantity-validation": {"tags": {"subsystem": ["orders", "billing"]}, "sample": 1},
         "json-store-atomic-save": {"tags": {"mechanism": ["race"]}, "sample": 1}}


def _tiers_and_bank(m: dict) -> None:
    """Every regression criterion ``broad`` and tagged, a ``scheduled`` copy of each target
    check, and a behaviour bank of shop-service checks (broad) the shop cases draw from."""
    files = ["graders/shop_service.py", "graders/_harness.py"]
    m["bank"] = {"seed": 20261206, "checks": [
        {"id": cid, "description": f"{sub} keep working ({inc})", "layer": "regression", "tier": "broad",
         "command": ["python3", "{inputs}/graders/shop_service.py", check], "files": files,
         "timeout_seconds": 30, "success_token": True,
         "tags": {"subsystem": sub, "mechanism": mech, "consequence": cons, "incident": inc}}
        for cid, check, sub, mech, cons, inc in BANK]}
    for case in m["cases"]:
        sub = case["labels"].get("subsystem")
        for k in case["criteria"]:
            if k.get("command") and k["layer"] == "regression":
                k.update(tier="broad", tags={"subsystem": sub, "mechanism": "side-effect"})
        target = next(k for k in case["criteria"] if k["layer"] == "target")
        case["criteria"].append({**target, "id": f"{target['id']}-nightly", "tier": "scheduled",
                                 "tags": {"subsystem": sub, "consequence": "slow-path"}})
        if case["id"] in DRAWS:
            case["bank"] = DRAWS[case["id"]]


@pytest.fixture(scope="session")
def real_rollout(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One real run of a small cut of the example corpus with check tiers and a behaviour bank,
    and its scheduled-tier regrade, both ingested: one run asserted from several angles
    (tests/rollout/test_tiers_and_rates.py)."""
    import json

    base = tmp_path_factory.mktemp("rollout-real")
    corpus = base / "corpus"
    th("example", str(corpus))
    manifest = _small_manifest(corpus)
    run_dir, nightly = base / "runs" / "main", base / "runs" / "nightly"
    th("run", "--manifest", str(manifest), "--output", str(run_dir), "--jobs", "2", "--no-progress")
    th("run", "--tier", "scheduled", "--from", str(run_dir), "--manifest", str(manifest), "--output", str(nightly),
       "--jobs", "2", "--no-progress")
    wh = base / "wh" / "trialhouse.duckdb"
    th("ingest", str(run_dir), str(nightly), "-w", str(wh))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    scheduled = [json.loads(line) for line in (nightly / "events.jsonl").read_text().splitlines()]
    return SimpleNamespace(base=base, corpus=corpus, manifest=manifest, run_dir=run_dir, wh=wh,
                           events=events, run_id=events[0]["run_id"], scheduled=scheduled,
                           scheduled_id=scheduled[0]["run_id"])
