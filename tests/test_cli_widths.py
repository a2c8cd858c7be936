"""Every table every command prints fits the terminal (issue 31, item 1).

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
    manifest["repetitions"] = 2
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
    run_id = json.loads((run / "report.json").read_text())["run_id"]
    return {"wh": str(wh), "run": run_id}


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
