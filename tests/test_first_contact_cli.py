"""What a first user sees, on one real warehouse: every table fits the terminal (issue 31,
item 1), and every surface gives one answer to one question (item 6; issue 32, item 4).

A real warehouse (the example corpus cut to three cases × two repetitions, run by the real
runner; the foreign results beside it; the corpus's reviews imported; a categories CSV
annotated) and every command's tables rendered at 80, 100 and 120 columns through the
real CLI (click's runner, in process, with the terminal width in COLUMNS): no line is wider
than the terminal, every column header appears whole, and every identifying value appears
whole, or cut in the middle with its full form listed under the table. The tables each
command laid out are taken from ``trialhouse.fit.draw`` as it is called (a spy that calls
the real function), so the assertions cover exactly what was drawn.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = ROOT / "examples" / "foreign"
CASES = ["order-quantity-validation", "order-empty-items", "format-cents-negative"]
WIDTHS = (80, 100, 120)
LEGEND = "Shortened above, in full:"


def th(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", *map(str, args)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, f"trialhouse {' '.join(map(str, args))}: {proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("widths")
    corpus = base / "corpus"
    th("example", corpus)
    manifest = json.loads((corpus / "manifest.json").read_text())
    manifest["cases"] = [c for c in manifest["cases"] if c["id"] in CASES]
    manifest.update(repetitions=2, control_repeats=1)  # flaky-control detection is tested elsewhere
    small = corpus / "small.json"
    small.write_text(json.dumps(manifest))
    run = base / "run"
    th("run", "--manifest", small, "--output", run, "--jobs", "2", "--no-progress")
    wh = base / "wh" / "trialhouse.duckdb"
    th("ingest", run, FOREIGN / "runs.jsonl", FOREIGN / "inspect-arith.eval",
       FOREIGN / "harbor-job", FOREIGN / "swebench-submission", "--prices",
       FOREIGN / "prices.json", "--warehouse", wh)
    th("review", "import", corpus / "reviews" / "reviews.csv", "--rubric",
       corpus / "reviews" / "grid.yaml", "--allow-quarantine", "-w", wh)
    trials = json.loads(th("sql", "-w", wh, "--json", "SELECT trial_id FROM trials WHERE "
                           "outcome <> 'accepted' AND run_id NOT LIKE '%-%-%-%' "
                           "ORDER BY trial_id LIMIT 3").stdout)
    cats = base / "categories.csv"
    cats.write_text("trial_id,category,annotator\n" + "".join(
        f"{t['trial_id']},verification,carol\n" for t in trials))
    th("annotate", "--csv", cats, "--allow-quarantine", "-w", wh)
    # a decision recorded by annotate (not review import) that disagrees with the grader
    decisions = base / "decisions.csv"
    decisions.write_text(f"trial_id,decision,annotator\n{trials[0]['trial_id']},accept,dana\n")
    th("annotate", "--csv", decisions, "--kind", "review_decision", "-w", wh)
    run_id = json.loads((run / "report.json").read_text())["run_id"]
    report = base / "report"
    th("report", "-w", wh, "--run", run_id, "--baseline", "sim-alpha-minimal", "-o", report)
    return {"wh": str(wh), "run": run_id, "report": str(report / "report.json")}


def commands(run: str) -> dict[str, list[str]]:
    pilot = ["--run", run, "--baseline", "sim-alpha-minimal", "--candidate", "sim-beta-minimal"]
    return {
        "summarize": ["summarize"], "summarize-by": ["summarize", "--by", "task_class"],
        "compare": ["compare", *pilot], "consistency": ["consistency"], "pareto": ["pareto"],
        "eligibility": ["eligibility"], "matrix": ["matrix", "--run", run], "noise": ["noise"],
        "rank": ["rank"], "plan": ["plan", *pilot], "failures": ["failures"],
        "disagreements": ["failures", "--disagreements"], "familiarity": ["familiarity"],
        "latency": ["latency"], "trajectory": ["trajectory"], "runs": ["runs"],
        "tables": ["tables"], "review-summary": ["review", "summary"],
        "inspect-queue": ["inspect-queue"],
        "sql": ["sql", "SELECT run_id, trial_id, config_id, case_id, outcome, duration_s, "
                       "cost_usd FROM trials ORDER BY trial_id LIMIT 12"],
    }


def render(argv: list[str], wh: str, width: int, monkeypatch) -> tuple[str, list]:
    """The command's terminal output at ``width`` and the tables it drew."""
    from trialhouse import fit
    from trialhouse.cli import app  # registers every command

    drawn: list = []
    real = fit.draw

    def spy(table, w, text):
        drawn.append(table)
        return real(table, w, text)

    monkeypatch.setattr(fit, "draw", spy)
    env = {"COLUMNS": str(width), "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "FORCE_COLOR": None,
           "TRIALHOUSE_WAREHOUSE": None}
    res = CliRunner().invoke(app, [*argv, "-w", wh], env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", res.output), drawn


def _body_and_legend(out: str) -> tuple[list[str], list[str]]:
    body, legend, inside = [], [], False
    for line in out.splitlines():
        if line.startswith(LEGEND):
            inside = True
        elif inside and line.startswith("  "):
            legend.append(line.strip())
        else:
            inside = False
            body.append(line)
    return body, legend


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(commands("r")))
def test_every_table_fits_and_names_every_row(world, name, width, monkeypatch):
    from analysis.document import cell_text

    out, drawn = render(commands(world["run"])[name], world["wh"], width, monkeypatch)
    assert drawn, f"{name} drew no table"
    too_wide = [ln for ln in out.splitlines() if cell_len(ln) > width]
    assert not too_wide, f"{name} at {width}: {len(too_wide)} line(s) wider, e.g. {too_wide[0]!r}"
    body, legend = _body_and_legend(out)
    text = "\n".join(body)
    for table in drawn:
        for col in table.columns:
            assert col.name in text, f"{name} at {width}: header {col.name!r} missing"
        ids = [i for i, c in enumerate(table.columns) if c.identifying]
        assert ids, f"{name}: table {table.caption!r} names no identifying column"
        for row in table.rows:
            for i in ids:
                value = cell_text(row[i])
                if not value or value in text:
                    continue
                assert value in legend, (f"{name} at {width}: {value!r} neither shown whole "
                                         "nor listed in full under the table")
                head = value[:4]
                assert any(head in ln and "…" in ln for ln in body), \
                    f"{name} at {width}: {value!r} is listed, but no cut form of it is shown"


def test_piped_output_stays_whole(world):
    """Not a terminal: every row whole on one line, whatever COLUMNS says."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "FORCE_COLOR")}
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "summarize", "-w", world["wh"]],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**env, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(th("summarize", "-w", world["wh"], "--json").stdout)
    from analysis import formatting as fmt

    for row in doc["rows"]:
        line = next(ln for ln in proc.stdout.splitlines() if fmt.label_with_id(row) in ln)
        assert "│" in line and cell_len(line) > 80  # one row, one line: nothing cut or wrapped


# ------------------------------------------------------------------ one answer per question


def as_json(*args: str) -> object:
    return json.loads(th(*args, "--json").stdout)


def test_review_disagreements_are_one_set_on_every_surface(world):
    """failures --disagreements, review summary and inspect-queue: the same reviewer
    decisions disagree with the grader (review import and annotate alike)."""
    wh = world["wh"]
    listed = {(r["trial_id"], r["annotator"]) for r in as_json("failures", "--disagreements",
                                                                 "-w", wh)["rows"]}
    summary = as_json("review", "summary", "-w", wh)["agreement"]
    queue = [q for q in as_json("inspect-queue", "-w", wh) if q["kind"] == "review_disagreement"]
    assert len(listed) >= 2 and ("dana" in {who for _, who in listed})
    assert sum(r["disagreements"] for r in summary) == len(listed) == len(queue)
    trials = {t for r in summary for t in r["disagreeing_trials"].split(", ") if t}
    assert trials == {t for t, _ in listed} == {q["trial_id"] for q in queue}
    assert {(q["trial_id"], q["detail"].split(" said ")[0]) for q in queue} == listed


def test_lost_spend_is_the_same_in_the_cli_and_the_report(world):
    """Lost spend only on failure classes, never on accepted rows, in failures --json, its
    terminal table and report.json alike."""
    cli = as_json("failures", "-w", world["wh"], "--run", world["run"])["rows"]
    report = json.loads(Path(world["report"]).read_text())["failures"]
    key = ("config_id", "dimension", "value", "assigned_by", "annotator")
    assert {tuple(r[k] for k in key): r["lost_spend_usd"] for r in cli} == \
        {tuple(r.get(k) for k in key): r["lost_spend_usd"] for r in report}
    accepted = [r for r in cli if r["value"] == "accepted"]
    assert accepted and all(r["lost_spend_usd"] is None for r in accepted)
    assert any(r["lost_spend_usd"] for r in cli if r["value"] != "accepted")
    table = th("failures", "-w", world["wh"], "--run", world["run"]).stdout
    for line in table.splitlines():
        if "│ accepted " in line:
            assert line.rstrip().endswith("— │"), line


def test_categories_reach_failures_the_report_and_review_summary_alike(world):
    """Categories from review import (reviewer), annotate (annotator) and the judges (judge)
    reach failures and the report with who assigned them, and review summary counts the
    same trials and lost spend per category and assigner."""
    wh = world["wh"]
    rows = [r for r in as_json("failures", "-w", wh)["rows"] if r["dimension"] == "category"]
    assert {"reviewer", "annotator"} <= {r["assigned_by"] for r in rows}
    summed: dict = {}
    for r in rows:
        key = (r["value"], f"{r['assigned_by']}:{r['annotator']}")
        count, lost = summed.get(key, (0, 0.0))
        summed[key] = (count + r["count"], None if lost is None or r["lost_spend_usd"] is None
                       else lost + r["lost_spend_usd"])
    summary = {(r["category"], r["assigned_by"]): (r["trials"], r["lost_spend_usd"])
               for r in as_json("review", "summary", "-w", wh)["categories"]}
    assert set(summed) == set(summary)
    for key, (count, lost) in summed.items():
        assert summary[key][0] == count, key
        assert summary[key][1] == (pytest.approx(lost) if lost is not None else None), key
    report = json.loads(Path(world["report"]).read_text())["failures"]
    mine = {(r["value"], r["assigned_by"], r["annotator"], r["count"])
            for r in as_json("failures", "-w", wh, "--run", world["run"])["rows"]
            if r["dimension"] == "category"}
    assert mine and mine == {(r["value"], r["assigned_by"], r["annotator"], r["count"])
                             for r in report if r["dimension"] == "category"}


def test_seed_format_tells_the_baselines_apart(world):
    """null and reference share harness trialhouse-builtin 1 and record no model: the seed
    layout keys them by variant name, never as two rows of ``None``."""
    lines = th("summarize", "-w", world["wh"], "--run", world["run"], "--format", "seed").stdout
    keys = [tuple(ln.split("\t")[:3]) for ln in lines.splitlines()[1:]]
    assert ("null", "trialhouse-builtin", "1") in keys
    assert ("reference", "trialhouse-builtin", "1") in keys
    assert len(set(keys)) == len(keys) and not any(k[0] == "None" for k in keys)
