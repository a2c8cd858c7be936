"""Named conditions (issue 34 item 2), on one real run of the example corpus's cold/warm
cache pair (``conditions.json``: two cases, one simulated configuration under ``cache: cold``
and ``cache: warm``): recorded in the run header and the warehouse, seen by the prepare
command, sliced by ``summarize --by condition.cache``, never pooled, and a paired comparison
across them refused or left out unless ``--pool-conditions``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import closing

import pytest

from contract.run_events import RunStarted
from runner.eventlog import read_events
from warehouse import db

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')


def th(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, timeout=600)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("conditions")
    for args in (("example", str(base / "corpus")),
                 ("run", "--manifest", str(base / "corpus" / "conditions.json"), "--output", str(base / "run")),
                 ("ingest", str(base / "run"), "-w", str(base / "wh" / "t.duckdb"))):
        done = th(*args)
        assert done.returncode == 0, done.stdout + done.stderr
    return {"run": base / "run", "wh": base / "wh" / "t.duckdb"}


def test_conditions_reach_the_run_header_the_prepare_command_and_the_warehouse(pair: dict) -> None:
    (header,) = [e for e in read_events(pair["run"] / "events.jsonl") if isinstance(e, RunStarted)]
    declared = {v.variant: (v.conditions, v.config_id) for v in header.variants}
    assert {k: c for k, (c, _) in declared.items()} == {"sim-alpha-cold": {"cache": "cold"},
                                                        "sim-alpha-warm": {"cache": "warm"}}
    assert declared["sim-alpha-cold"][1] != declared["sim-alpha-warm"][1]  # never one configuration
    said = sorted((p.parent.parent.name.split("__")[1], p.read_text().strip())
                  for p in (pair["run"] / "trials").glob("*/logs/prepare.stdout"))
    assert said == [("sim-alpha-cold", "dependency cache cold: 0 wheel(s)")] * 2 + \
                   [("sim-alpha-warm", "dependency cache warm: 8 wheel(s)")] * 2
    with closing(db.open(pair["wh"], read_only=True)) as con:
        rows = con.execute("SELECT variant, conditions_json, model, harness, harness_version "
                           "FROM configs ORDER BY variant").fetchall()
    assert [r[:2] for r in rows] == [("sim-alpha-cold", '{"cache":"cold"}'), ("sim-alpha-warm", '{"cache":"warm"}')]
    assert rows[0][2:] == rows[1][2:]  # the same model, harness and version: only the condition differs


def test_summarize_by_condition_slices_and_never_pools(pair: dict) -> None:
    done = th("summarize", "-w", str(pair["wh"]), "--by", "condition.cache", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    with closing(db.open(pair["wh"], read_only=True)) as con:
        truth = dict(con.execute(
            "SELECT json_extract_string(f.conditions_json, '$.cache'), "
            "count(*) FILTER (WHERE t.outcome = 'accepted') || '/' || count(*) "
            "FROM trials t JOIN configs f USING (run_id, config_id) GROUP BY 1").fetchall())
    assert {r["condition.cache"]: f"{r['solved']}/{r['valid']}" for r in rows} == truth
    assert len(rows) == 2 and {r["variant"] for r in rows} == {"sim-alpha-cold", "sim-alpha-warm"}
    plain = json.loads(th("summarize", "-w", str(pair["wh"]), "--json").stdout)["rows"]
    assert len(plain) == 2  # without --by too: one row per configuration under its conditions
    bad = th("summarize", "-w", str(pair["wh"]), "--by", "condition.Cache")
    assert bad.returncode == 2 and "condition.<key>" in bad.stderr and "Traceback" not in bad.stderr


def test_paired_comparisons_refuse_mixed_conditions_unless_asked(pair: dict) -> None:
    wh = str(pair["wh"])
    named = th("compare", "-w", wh, "--baseline", "sim-alpha-cold", "--candidate", "sim-alpha-warm")
    assert named.returncode == 2 and len(named.stderr.strip().splitlines()) == 1
    assert "sim-alpha-warm (cache=warm) ran under other named conditions than the baseline " \
           "sim-alpha-cold (cache=cold)" in named.stderr and "--pool-conditions" in named.stderr
    default = th("compare", "-w", wh)
    assert default.returncode == 2 and "no candidate ran under the conditions of" in default.stderr
    pooled = th("compare", "-w", wh, "--pool-conditions", "--json")
    assert pooled.returncode == 0, pooled.stderr
    doc = json.loads(pooled.stdout)
    assert doc["filters"]["pool_conditions"] is True and len(doc["comparisons"]) == 1
    assert any(n.startswith("MIXED CONDITIONS (--pool-conditions): sim-alpha-warm (cache=warm)")
               for n in doc["notes"])


def test_the_report_shows_the_conditions_in_its_controls_section(pair: dict, tmp_path) -> None:
    done = th("report", "-w", str(pair["wh"]), "-o", str(tmp_path / "r"), "--pool-conditions")
    assert done.returncode == 0, done.stdout + done.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    controls = md.split("## Controls: what was run, on what", 1)[1].split("\n## ", 1)[0]
    assert "**Conditions per configuration**" in controls
    assert "| sim-alpha-cold SIMULATED | cold |" in controls and "| sim-alpha-warm SIMULATED | warm |" in controls
    assert "MIXED CONDITIONS (--pool-conditions): sim-alpha-warm (cache=warm)" in md
