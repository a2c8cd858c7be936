"""Canary cases (issue 34 item 1), on two real periodic runs of a tiny corpus.

Period 1 runs cases smoke (canary), a and b; period 2 runs smoke, b and c (a retired, c
added). Both periods run the same two configurations (``noop`` and ``fixer``, command
agents: the same argv, so the same config ids). Between the periods the tool ``fixer``
runs (a file outside the manifest, not part of its configuration) changes so that the
canary's check fails: for an unchanged configuration the canary's outcome moved, which is
environment drift. The report blocks (exit 1, headline BLOCKED, verdicts withheld) until
``--accept-drift REASON``, which is recorded in ``drift_decisions``; the comparison uses the
overlap of the two task sets and says which tasks retired and which were added.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.runner.conftest import FAKE, GRADER, make_corpus
from warehouse import db

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')

PY = sys.executable
CHECKS = {"smoke": "calc.mul(0, 5) == 0", "edge": "calc.mul(1, 1) == 1", "gone": "calc.mul(1, 2) == 2",
          "a": "calc.mul(2, 3) == 6", "b": "calc.mul(3, 3) == 9", "c": "calc.mul(4, 5) == 20"}
CANARIES = ("smoke", "edge", "gone")
STRICTER = "calc.mul(1, 1) == 1 and calc.mul(0, 0) == 0"  # edge's grader in period 2
BROKEN = "    return a * b if a else 1\n"  # what the upgraded tool writes: wrong for a = 0


def th(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, timeout=600)
    assert not check or done.returncode == 0, done.stdout + done.stderr
    return done


def corpus(root: Path) -> tuple[str, str]:
    """The runner tests' tiny corpus (``tests/runner/conftest.py``: a repository with calc.add,
    the patch that adds calc.mul) and one grader per case: (initial commit, patch text)."""
    commit = json.loads(make_corpus(root).read_text())["initial_commit"]
    for cid, check in CHECKS.items():
        (root / "graders" / f"{cid}.py").write_text(GRADER.format(check=check))
    return commit, (root / "patches" / "mul.patch").read_text()


def manifest(commit: str, cases: list[str], tool: Path) -> str:
    return json.dumps({
        "schema_version": 1, "id": "canary-bench", "repository": "repo", "initial_commit": commit,
        "repetitions": 1, "control_repeats": 1, "stages": ["build"], "timeout_seconds": 60,
        "cases": [{"id": cid, "prompt": "Add calc.mul(a, b) returning the product.",
                   "canary": cid in CANARIES, "reference_patch": "patches/mul.patch",
                   "criteria": [{"id": "mul_works", "description": "calc.mul multiplies",
                                 "layer": "target", "command": [PY, f"{{inputs}}/graders/{cid}.py"]}]}
                  for cid in cases],
        "variants": [{"id": "noop", "agent": {"kind": "command", "argv": [PY, FAKE, "noop"]}},
                     {"id": "fixer", "agent": {"kind": "command", "argv": [PY, FAKE, "patch", str(tool)]}}],
    })


@pytest.fixture(scope="module")
def periods(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("canary")
    root = base / "corpus"
    commit, good = corpus(root)
    tool = base / "tool" / "mul.patch"  # the tool's data: outside the manifest and its config id
    tool.parent.mkdir()
    tool.write_text(good)
    wh, runs, m = base / "wh" / "trialhouse.duckdb", base / "runs", root / "manifest.json"
    m.write_text(manifest(commit, ["smoke", "edge", "gone", "a", "b"], tool))
    th("run", "--manifest", str(m), "--output", str(runs / "p1"), check=True)
    time.sleep(1.0)
    mid = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    time.sleep(1.5)
    tool.write_text(good.replace("+    return a * b\n", "+" + BROKEN))  # the tool upgraded
    (root / "graders" / "edge.py").write_text(GRADER.format(check=STRICTER))  # the evaluator changed
    m.write_text(manifest(commit, ["smoke", "edge", "b", "c"], tool))  # a and canary gone retired, c added
    th("run", "--manifest", str(m), "--output", str(runs / "p2"), check=True)
    th("ingest", str(runs / "p1"), str(runs / "p2"), "-w", str(wh), check=True)
    window = ["--since", mid.isoformat(), "--until", (mid + timedelta(hours=1)).isoformat(),
              "--previous-period"]
    blocked = th("report", "-w", str(wh), "-o", str(base / "r-blocked"), *window)
    return {"wh": wh, "root": base, "window": window, "blocked": blocked}


def _doc(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())["previous_period"]


def test_the_run_header_and_the_warehouse_carry_the_canary(periods: dict) -> None:
    with closing(db.open(periods["wh"], read_only=True)) as con:
        rows = con.execute("SELECT case_id, bool_and(canary) FROM cases GROUP BY 1 ORDER BY 1").fetchall()
        configs = con.execute("SELECT count(DISTINCT config_id), count(DISTINCT run_id) FROM configs").fetchall()
    assert rows == [("a", False), ("b", False), ("c", False), ("edge", True), ("gone", True), ("smoke", True)]
    assert configs == [(2, 2)]  # the same two configurations in both periods: unchanged


def test_a_drifting_canary_blocks_the_period(periods: dict) -> None:
    done = periods["blocked"]
    assert done.returncode == 1, done.stdout + done.stderr
    said = "BLOCKED: 2 canary result(s) drifted and 2 did not run for unchanged configurations"
    assert f"blocked: {said}" in done.stderr
    doc = _doc(periods["root"] / "r-blocked")
    c = doc["canaries"]
    assert doc["blocked"] is True and c["blocked"] is True and c["decision"] is None
    cells = {(cell["label"].split()[0], cell["case_id"]): cell for cell in c["cells"]}
    assert {k: (v["kind"], v["previous"], v["current"]) for k, v in cells.items()} == {
        ("fixer", "smoke"): ("environment", {"accepted": 1}, {"target_failed": 1}),  # the tool changed
        ("fixer", "edge"): ("evaluator", {"accepted": 1}, {"target_failed": 1}),  # so did the grader
        ("fixer", "gone"): ("missing", {"accepted": 1}, {}),
        ("noop", "smoke"): (None, {"target_failed": 1}, {"target_failed": 1}),  # steady
        ("noop", "edge"): (None, {"target_failed": 1}, {"target_failed": 1}),
        ("noop", "gone"): ("missing", {"target_failed": 1}, {}),
    }
    edge = cells[("fixer", "edge")]
    assert edge["previous_fingerprints"] != edge["current_fingerprints"]
    assert cells[("fixer", "smoke")]["previous_fingerprints"] == cells[("fixer", "smoke")]["current_fingerprints"]
    verdicts = {r["variant"]: r["verdict"] for r in doc["rows"]}
    assert all(v.startswith("withheld: canary drift") for v in verdicts.values()), verdicts
    md = (periods["root"] / "r-blocked" / "report.md").read_text()
    headline = md.split("## Headline", 1)[1].split("\n## ", 1)[0]
    assert said in headline
    assert "smoke: accepted 1 → target_failed 1: environment drift (same configuration, same evaluator)" in md
    assert "edge: accepted 1 → target_failed 1: evaluator drift (the case's evaluator fingerprint changed" in md


def test_retired_tasks_the_comparison_uses_the_overlap_and_says_so(periods: dict) -> None:
    doc = _doc(periods["root"] / "r-blocked")
    assert doc["tasks"] == {"previous": 2, "current": 2, "common": 1, "retired": ["a"], "added": ["c"]}
    # the canary is never an agent effect: fixer's paired comparison holds b only (1 task)
    fixer = next(r for r in doc["rows"] if r["variant"] == "fixer")
    assert fixer["common_tasks"] == 1
    assert (fixer["previous_solved"], fixer["previous_valid"], fixer["current_solved"], fixer["current_valid"]) == (1, 1, 1, 1)
    md = (periods["root"] / "r-blocked" / "report.md").read_text()
    assert ("Tasks changed between the periods: 1 retired (a), 1 added (c); the comparison uses "
            "the overlap, the 1 task(s) both periods ran") in md


def test_accept_drift_records_the_reason_and_unblocks(periods: dict) -> None:
    wh, root, window = periods["wh"], periods["root"], periods["window"]
    reason = "mul tool upgraded to 2.0 on the build hosts; canary fixed upstream"
    done = th("report", "-w", str(wh), "-o", str(root / "r-accepted"), *window, "--accept-drift", reason)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"drift acknowledged (recorded in drift_decisions): {reason}" in done.stdout
    with closing(db.open(wh, read_only=True)) as con:
        rows = con.execute("SELECT reason, drifted, evidence_key FROM drift_decisions").fetchall()
    assert len(rows) == 1 and rows[0][:2] == (reason, 4)
    doc = _doc(root / "r-accepted")
    assert doc["blocked"] is False and doc["canaries"]["decision"]["reason"] == reason
    assert doc["canaries"]["evidence_key"] == rows[0][2]
    assert not any(r["verdict"].startswith("withheld") for r in doc["rows"])
    assert "Canary drift acknowledged" in (root / "r-accepted" / "report.md").read_text()
    again = th("report", "-w", str(wh), "-o", str(root / "r-twice"), *window, "--accept-drift", "again")
    assert again.returncode == 2 and "was already acknowledged: " + reason in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
