"""Observational cohorts: loaded apart from trials (never in a paired comparison, a rate or a
Pareto front), shown beside the benchmark with the caveat; a randomised control group's
interval equals an independent computation (statsmodels)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from warehouse import db

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')


def th(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True, timeout=300)


FIELDS = ["ticket", "repository", "config", "opened", "merged", "reverted", "review_minutes", "incidents",
          "started_at", "merged_at", "arm", "assignment_seed"]


def _production(path: Path) -> Path:
    """20 planner tickets (15 merged, 2 of them reverted, 1 incident) and 4 bad rows."""
    rows = []
    for i in range(20):
        merged = i < 15
        rows.append({"ticket": f"OPS-{i}", "repository": "billing", "config": "planner", "opened": "true",
                     "merged": str(merged).lower(), "reverted": str(i < 2).lower(),
                     "review_minutes": str(10 + i), "incidents": "INC-7" if i == 0 else "",
                     "started_at": "2026-03-10T09:00:00Z", "merged_at": "2026-03-11T09:00:00Z" if merged else ""})
    rows += [{"ticket": "OPS-3", "config": "planner", "opened": "true"},  # duplicate
             {"ticket": "OPS-90", "config": "planner", "opened": "false", "merged": "true"},
             {"ticket": "OPS-91", "config": "planner", "review_minutes": "-5"},
             {"ticket": "OPS-92", "config": "planner", "merged": "false", "merged_at": "2026-03-11T09:00:00Z"}]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        w.writerows(rows)
    return path


def _control_group(path: Path, treat: tuple[int, int], control: tuple[int, int]) -> Path:
    """Shadow-mode tickets assigned at random (seed 20260301): landed/tickets per arm."""
    lines = []
    for arm, (landed, n) in (("treatment", treat), ("control", control)):
        for i in range(n):
            lines.append({"ticket": f"{arm[0]}-{i}", "repository": "billing", "arm": arm,
                          "assignment_seed": "20260301", "config": "planner" if arm == "treatment" else None,
                          "opened": True, "merged": i < landed + 1, "reverted": i == landed,
                          "incidents": ["INC-9"] if i == landed else []})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


@pytest.fixture
def bench(tmp_path: Path, rollout_kit) -> Path:
    k = rollout_kit
    wh = tmp_path / "wh" / "trialhouse.duckdb"
    k.write_run(wh, "w1", k.T0, k.week("planner", 8, 1) + k.week("minimal", 5, 0))
    k.write_run(wh, "w2", k.T0 + timedelta(days=7), k.week("planner", 9, 0) + k.week("minimal", 6, 0))
    return wh


def _numbers(wh: Path) -> dict:
    from analysis.compare import compare
    from analysis.filters import Filters
    from analysis.pareto import pareto
    from analysis.summary import summarize

    with closing(db.open(wh, read_only=True)) as con:
        return {"summary": summarize(con, Filters()).as_dict(), "pareto": pareto(con, Filters()).as_dict(),
                "compare": compare(con, Filters(), baseline="minimal").as_dict(),
                "trials": con.execute("SELECT count(*) FROM trials").fetchall()}


def test_a_cohort_never_enters_a_comparison_a_rate_or_a_front(bench: Path, tmp_path: Path) -> None:
    before = _numbers(bench)
    prod = _production(tmp_path / "production.csv")
    proc = th("ingest", "--cohort", "production", str(prod), "-w", str(bench), "--allow-quarantine")
    assert proc.returncode == 0, proc.stderr
    assert th("ingest", "--cohort", "shadow", str(_control_group(tmp_path / "shadow.jsonl", (30, 40), (20, 40))),
              "-w", str(bench)).returncode == 0
    assert _numbers(bench) == before
    with closing(db.open(bench, read_only=True)) as con:
        assert con.execute("SELECT count(*) FROM cohort_tickets").fetchall() == [(100,)]
        assert con.execute("SELECT count(*) FROM trials WHERE trial_id LIKE 'OPS-%'").fetchall() == [(0,)]


def test_bad_rows_are_quarantined_with_their_line_and_reason(bench: Path, tmp_path: Path) -> None:
    prod = _production(tmp_path / "production.csv")
    proc = th("ingest", "--cohort", "production", str(prod), "-w", str(bench))
    assert proc.returncode == 2 and "4 line(s) quarantined" in proc.stderr
    with closing(db.open(bench, read_only=True)) as con:
        got = dict(con.execute("SELECT line, reason FROM quarantine WHERE run_id LIKE 'cohort-%' ORDER BY line")
                   .fetchall())
        kept = con.execute("SELECT count(*), count(*) FILTER (WHERE merged), count(*) FILTER (WHERE reverted), "
                           "sum(incidents), min(config_id) FROM cohort_tickets").fetchall()
    assert got == {22: "ticket 'OPS-3' appears twice in this file",
                   23: "merged but not opened: a merged change was opened first",
                   24: "review_minutes -5 must be a finite number >= 0",
                   25: "merged is false but merged_at is 2026-03-11T09:00:00+00:00"}
    assert kept == [(20, 15, 2, 1, "planner-0123456789")]  # matched to the benchmark's configuration
    again = th("ingest", "--cohort", "production", str(prod), "-w", str(bench), "--json", "--allow-quarantine")
    assert json.loads(again.stdout)["batches"][0]["unchanged"] is True


def test_an_updated_export_replaces_the_previous_one(bench: Path, tmp_path: Path) -> None:
    path = tmp_path / "shadow.jsonl"
    assert th("ingest", "--cohort", "shadow", str(_control_group(path, (3, 4), (1, 4))), "-w", str(bench)).returncode == 0
    assert th("ingest", "--cohort", "shadow", str(_control_group(path, (5, 6), (2, 6))), "-w", str(bench)).returncode == 0
    doc = json.loads(th("cohorts", "-w", str(bench), "--json").stdout)
    (control,) = doc["controls"]
    assert control["arms"]["treatment"]["tickets"] == 6 and control["arms"]["control"]["tickets"] == 6


@pytest.mark.parametrize(("treat", "control"), [((30, 40), (20, 40)), ((7, 9), (2, 11)), ((0, 5), (5, 5))])
def test_the_control_group_interval_equals_statsmodels(bench: Path, tmp_path: Path, treat, control) -> None:
    shadow = _control_group(tmp_path / "shadow.jsonl", treat, control)
    assert th("ingest", "--cohort", "shadow", str(shadow), "-w", str(bench)).returncode == 0
    doc = json.loads(th("cohorts", "-w", str(bench), "--json").stdout)
    (c,) = doc["controls"]
    assert c["seeds"] == ["20260301"] and c["warnings"] == []
    assert (c["arms"]["treatment"]["landed"], c["arms"]["control"]["landed"]) == (treat[0], control[0])
    low, high = confint_proportions_2indep(treat[0], treat[1], control[0], control[1], method="newcomb",
                                           compare="diff")
    assert c["difference"] == pytest.approx(treat[0] / treat[1] - control[0] / control[1])
    assert c["low"] == pytest.approx(low, abs=1e-12) and c["high"] == pytest.approx(high, abs=1e-12)


def test_the_report_shows_cohorts_beside_the_benchmark_with_the_caveat(bench: Path, tmp_path: Path) -> None:
    from analysis.report import write_report

    th("ingest", "--cohort", "production", str(_production(tmp_path / "p.csv")), "-w", str(bench),
       "--allow-quarantine")
    th("ingest", "--cohort", "shadow", str(_control_group(tmp_path / "s.jsonl", (30, 40), (20, 40))), "-w", str(bench))
    paths = write_report(bench, tmp_path / "report", baseline="minimal")
    md = paths.markdown.read_text()
    part = md.split("## Observational cohorts", 1)[1].split("\n## ", 1)[0]
    assert "Observational: these tickets were chosen" in part
    (row,) = [line for line in part.splitlines() if line.startswith("| production")]
    assert "15/20 (75%)" in row and "2/15 (13%)" in row and "16/20 (80%)" in row  # planner accepted 7 + 9 of 20
    assert "| shadow" in part and "20260301" in part
    doc = json.loads(paths.json.read_text())
    assert doc["cohorts"]["controls"][0]["arms"]["treatment"]["landed"] == 30
    assert [s for s in md.splitlines() if s.startswith("## ")].index("## Observational cohorts") > 0


def test_without_cohorts_the_report_has_no_cohort_section(bench: Path, tmp_path: Path) -> None:
    from analysis.report import write_report

    paths = write_report(bench, tmp_path / "report", baseline="minimal")
    assert "## Observational cohorts" not in paths.markdown.read_text()
    assert json.loads(paths.json.read_text())["cohorts"] is None


def test_cohort_options_are_the_library_s_and_refuse_run_options(bench: Path, tmp_path: Path) -> None:
    from ingest.cohorts import COHORTS
    from trialhouse.cmd_warehouse import COHORTS as CLI_COHORTS

    assert CLI_COHORTS == COHORTS
    f = _production(tmp_path / "p.csv")
    proc = th("ingest", "--cohort", "production", str(f), "-w", str(bench), "--prices", str(f))
    assert proc.returncode == 2 and "--cohort takes cohort files only" in proc.stderr
    wrong = tmp_path / "p.txt"
    wrong.write_text("x")
    proc = th("ingest", "--cohort", "shadow", str(wrong), "-w", str(bench))
    assert proc.returncode == 2 and "a cohort file is .jsonl or .csv" in proc.stderr and "Traceback" not in proc.stderr
