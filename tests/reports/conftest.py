"""A small, deterministic warehouse for the report, chart and notebook tests (built once).

Two runs a week apart (so ``--previous-period`` has something to compare), a 2 models ×
2 harnesses grid, 12 tasks over 3 repositories (known and unknown), 3 repetitions,
infra errors, one invalid trial, unknown costs on a few trials, failure-category
annotations and one simulated configuration. Written through the warehouse contract
(``table_from_rows`` + ``replace_run``), exactly as ingest writes.

Set ``TRIALHOUSE_TEST_WAREHOUSE`` to run these tests against another warehouse
(e.g. one built by the real pipeline).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

MODELS = ["model-a", "model-b"]
HARNESSES = ["harness-x", "harness-y"]
REPOS = {"repo-known-1": "known", "repo-known-2": "known", "repo-new": "unknown"}
CASES = [f"case-{i:02d}" for i in range(12)]
REPS = 3
CATEGORIES = ["implementation", "verification", "task interpretation"]

# Start of each run: the "current" week and the one before it.
WEEK1 = datetime(2026, 11, 16, 9, 0, tzinfo=UTC)
WEEK2 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def _skill(model: str, harness: str, week: int) -> float:
    base = {"model-a": 0.45, "model-b": 0.7}[model]
    base += {"harness-x": 0.0, "harness-y": 0.1 if model == "model-a" else -0.15}[harness]
    return min(0.95, base + (0.1 if week == 2 and model == "model-a" else 0.0))


def _write_run(
    db: Path, run_id: str, start: datetime, week: int, rng: random.Random, models=MODELS, harnesses=HARNESSES
) -> None:
    from warehouse.db import replace_run, write_lock
    from warehouse.schema import table_from_rows

    batch = f"batch-{run_id}"
    common = {"run_id": run_id, "ingest_batch_id": batch}
    configs, trials, cases, judgments, flags = [], [], [], [], []
    for order, (model, harness) in enumerate((m, h) for m in models for h in harnesses):
        simulated = model == "model-b" and harness == "harness-y"
        cid = hashlib.sha256(f"{model}|{harness}|1.0".encode()).hexdigest()[:32]
        configs.append(
            {
                **common,
                "config_id": cid,
                "variant": f"{model}+{harness}",
                "model": model,
                "harness": harness,
                "harness_version": "1.0",
                "simulated": simulated,
                "source_format": "trialhouse",
                "variant_order": order,
                "agent_kind": "command",
            }
        )
    for i, case in enumerate(CASES):
        repo = list(REPOS)[i % len(REPOS)]
        cases.append(
            {
                **common,
                "case_id": case,
                "holdout": i == 11,
                "repository": repo,
                "familiarity": REPOS[repo],
                "task_class": ["bugfix", "feature"][i % 2],
                "difficulty": ["easy", "medium", "hard"][i % 3],
                "language": "python",
                "initial_commit": "a" * 40,
                "validated": True,
            }
        )
    n = 0
    for cfg in configs:
        for i, case in enumerate(CASES):
            repo = list(REPOS)[i % len(REPOS)]
            for rep in range(1, REPS + 1):
                n += 1
                p = _skill(cfg["model"], cfg["harness"], week) - (
                    0.2 if REPOS[repo] == "unknown" else 0
                )
                p -= 0.1 * (i % 3)
                u = rng.random()
                if u < 0.04:
                    outcome = "infra_error"
                elif rng.random() < p:
                    outcome = "accepted"
                else:
                    outcome = rng.choice(
                        ["target_failed", "target_failed", "regression", "budget_exhausted"]
                    )
                if run_id == "run-week2" and n == 7:
                    outcome = "invalid"
                started = start + timedelta(minutes=n)
                duration = round(60 + 240 * rng.random(), 3)
                tokens_in = rng.randint(2_000, 40_000)
                tokens_out = rng.randint(200, 4_000)
                cost = None if (cfg["simulated"] and n % 29 == 0) else round((tokens_in * 3 + tokens_out * 15) / 1e6, 6)
                tid = f"{run_id}-{cfg['config_id']}-{case}-{rep}"
                # Patch-inspection findings: on every regression, and a second kind now and then.
                found = [("broad_exception", "src/app.py")] if outcome == "regression" else []
                found += [("tests_deleted", "tests/test_app.py")] if n % 11 == 0 else []
                flags += [{**common, "trial_id": tid, "kind": k, "path": p, "detail": "fixture"}
                          for k, p in found]
                trials.append(
                    {
                        **common,
                        "trial_id": tid,
                        "source_format": "trialhouse",
                        "source_key": tid,
                        "config_id": cfg["config_id"],
                        "variant": cfg["variant"],
                        "model": cfg["model"],
                        "harness": cfg["harness"],
                        "harness_version": "1.0",
                        "case_id": case,
                        "repetition": rep,
                        "outcome": outcome,
                        "complete": True,
                        "attempts": 1,
                        "started_at": started,
                        "finished_at": started + timedelta(seconds=duration),
                        "duration_s": duration,
                        "setup_s": round(duration * 0.1, 3),
                        "agent_s": round(duration * 0.7, 3),
                        "verification_s": round(duration * 0.2, 3),
                        "time_to_first_edit_s": round(duration * 0.3, 3),
                        "input_tokens": tokens_in,
                        "output_tokens": tokens_out,
                        "steps": rng.randint(3, 40),
                        "cost_usd": cost,
                        "cost_source": None if cost is None else "reported",
                        "simulated": cfg["simulated"],
                        "flags": len(found),
                    }
                )
                if outcome in ("target_failed", "regression"):
                    judgments.append(
                        {
                            **common,
                            "trial_id": tid,
                            "kind": "failure_category",
                            "category": rng.choice(CATEGORIES),
                            "annotator": "reviewer@example.com",
                            "ts": started + timedelta(hours=1),
                        }
                    )
    runs = [
        {
            **common,
            "source_format": "trialhouse",
            "source_path": f"runs/{run_id}",
            "manifest_id": "example-bench",
            "manifest_sha256": "f" * 64,
            "started_at": start,
            "finished_at": start + timedelta(hours=2),
            "status": "completed",
            "engine_version": "0.1.0",
            "os": "Linux-6.1-x86_64",
            "python": "3.11.9",
            "git_version": "2.39.5",
            "repository": "example-service",
            "initial_commit": "a" * 40,
            "repetitions": REPS,
            "max_attempts": 1,
            "timeout_seconds": 300.0,
            "validation_only": False,
            "simulated": True,
            "prices_as_of": "2026-11-01",
            "details_json": json.dumps({"note": "test fixture"}),
        }
    ]
    tables = {
        "runs": table_from_rows("runs", runs),
        "configs": table_from_rows("configs", configs),
        "cases": table_from_rows("cases", cases),
        "trials": table_from_rows("trials", trials),
        "judgments": table_from_rows("judgments", judgments),
        "flags": table_from_rows("flags", flags),
    }
    with write_lock(db):
        replace_run(db, run_id, tables)


def build_small_warehouse(db: Path, models=MODELS, harnesses=HARNESSES) -> Path:
    """Write the two-run fixture warehouse at ``db`` and return its path."""
    from warehouse import db as wdb

    rng = random.Random(20261130)
    _write_run(db, "run-week1", WEEK1, 1, rng, models, harnesses)
    _write_run(db, "run-week2", WEEK2, 2, rng, models, harnesses)
    con = wdb.open(db)
    con.close()
    return db


@pytest.fixture(scope="session")
def make_warehouse():
    """The builder itself, for tests that need a differently shaped warehouse."""
    return build_small_warehouse


@pytest.fixture(scope="session")
def fixture_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Always the fixture above (tests that check its planted facts use this one)."""
    return build_small_warehouse(tmp_path_factory.mktemp("wh") / "trialhouse.duckdb")


@pytest.fixture(scope="session")
def small_warehouse(fixture_warehouse: Path) -> Path:
    """The warehouse notebooks and the browser check run on (env override, else the fixture)."""
    override = os.environ.get("TRIALHOUSE_TEST_WAREHOUSE")
    return Path(override) if override else fixture_warehouse


@pytest.fixture(scope="session")
def fixture_report(fixture_warehouse: Path, tmp_path_factory: pytest.TempPathFactory):
    """The fixture's current week against the previous one (built once)."""
    from analysis.report import write_report

    out = tmp_path_factory.mktemp("report")
    return write_report(fixture_warehouse, out, since="2026-11-23", until="2026-11-30", previous_period=True)


@pytest.fixture(scope="session")
def built_report(small_warehouse: Path, fixture_warehouse: Path, fixture_report, tmp_path_factory):
    """The report the browser opens: the fixture's, or the whole override warehouse's."""
    from analysis.report import write_report

    if small_warehouse == fixture_warehouse:
        return fixture_report
    return write_report(small_warehouse, tmp_path_factory.mktemp("report-override"))


# --------------------------------------------------------------------------- headless Chromium

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def open_offline(html: Path, inspect, *, ready: str, viewport=(1200, 900)) -> dict:
    """Open ``html`` in headless Chromium with every non-file request aborted, wait until the
    JS expression ``ready`` is true, then return ``inspect(page)`` plus the aborted requests
    (``blocked``) and the console errors (``errors``)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("headless Chromium not found: run 'make chromium' (Debian package 'chromium')")
    blocked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})

            def route(r):
                if r.request.url.startswith("file://"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(html.resolve().as_uri(), wait_until="load")
            page.wait_for_function(ready, timeout=60_000)
            found = inspect(page)
        finally:
            browser.close()
    return {"blocked": blocked, "errors": errors, **found}


@pytest.fixture(scope="session")
def offline():
    """``open_offline`` as a fixture."""
    return open_offline
