"""build_report and `trialhouse report`: files, offline HTML, numbers checked against the warehouse."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from scipy.stats import binomtest

REPO_ROOT = Path(__file__).resolve().parents[2]

TOP_KEYS = ["schema", "title", "generated_at", "trialhouse_version", "warehouse", "filters", "window",
            "baseline_requested", "simulated_configs", "headline", "controls", "blockers", "regressions",
            "summary",
            "comparison", "comparisons", "comparison_absent", "consistency", "pareto", "matrix",
            "matrix_absent", "failures", "flags", "familiarity", "latency", "trajectory", "budget_curve",
            "budget_curve_absent", "visibility", "previous_period",
            "judgments_and_review", "stop_rules", "cohorts", "dashboard", "checks", "charts",
            "charts_skipped"]
SECTIONS = ["headline", "controls", "eligibility", "summary", "dashboard", "comparison", "consistency", "pareto", "matrix",
            "failures", "flags", "judgments", "familiarity", "distributions", "period", "glossary"]


def _sql(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    from warehouse import db as wdb

    con = wdb.open(db, read_only=True)
    try:
        return con.sql(sql, params=params or []).fetchall()
    finally:
        con.close()


def _counts(db: Path, since: str, until: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(config, case) -> (accepted, valid) in a window, straight from the trials view."""
    rows = _sql(db, """
SELECT config_id, case_id, count(*) FILTER (WHERE outcome = 'accepted'), count(*)
FROM trials
WHERE complete AND outcome NOT IN ('infra_error', 'invalid')
  AND started_at >= ?::TIMESTAMPTZ AND started_at < ?::TIMESTAMPTZ
GROUP BY ALL
""", [since, until])
    return {(r[0], r[1]): (r[2], r[3]) for r in rows}


@pytest.fixture(scope="module")
def doc(fixture_report) -> dict:
    return json.loads(fixture_report.json.read_text(encoding="utf-8"))


def test_writes_html_markdown_json_and_every_chart_as_png_and_svg(fixture_report) -> None:
    for path in (fixture_report.html, fixture_report.markdown, fixture_report.json):
        assert path.is_file() and path.stat().st_size > 1000
    assert len(fixture_report.charts) >= 10
    for name, files in fixture_report.charts.items():
        assert files["png"].read_bytes()[:4] == b"\x89PNG", name
        assert files["svg"].read_text(encoding="utf-8").lstrip().startswith("<svg"), name


def test_html_is_self_contained(fixture_report) -> None:
    html = fixture_report.html.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", html, re.I), "no external scripts"
    assert not re.search(r"<link[^>]+href=\"?https?:", html, re.I), "no external stylesheets"
    assert not re.search(r"<img[^>]+src=\"?https?:", html, re.I)
    assert "vegaEmbed" in html and len(html) > 500_000, "the Vega bundle is inlined"
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in html, sid
    assert html.count('class="chart"') == len(fixture_report.charts)
    assert '<span class="sim">SIMULATED</span>' in html


def test_json_has_stable_keys_and_no_nan(doc) -> None:
    assert list(doc) == TOP_KEYS
    assert doc["schema"] == "trialhouse.report/1"
    text = json.dumps(doc)
    assert "NaN" not in text and "Infinity" not in text


def test_summary_counts_match_the_warehouse(fixture_warehouse, doc) -> None:
    counts = _counts(fixture_warehouse, "2026-11-23", "2026-11-30")
    for row in doc["summary"]["rows"]:
        cid = row["config_id"]
        solved = sum(c for (k, _), (c, n) in counts.items() if k == cid)
        valid = sum(n for (k, _), (c, n) in counts.items() if k == cid)
        assert (row["solved"], row["valid"]) == (solved, valid)


def test_markdown_puts_counts_beside_percentages(fixture_report, doc) -> None:
    md = fixture_report.markdown.read_text(encoding="utf-8")
    for row in doc["summary"]["rows"]:
        assert f"{row['solved']}/{row['valid']} ({100 * row['solved'] / row['valid']:.0f}%)" in md
    table_lines = [ln for ln in md.splitlines() if ln.startswith("| ") and "%" in ln]
    assert table_lines
    for ln in table_lines:  # every bare percentage in a table cell is a count's or an interval's
        for cell in ln.strip("|").split(" | "):
            if re.fullmatch(r"\s*\d+(\.\d+)?%\s*", cell):
                pytest.fail(f"percentage without its count: {ln}")
    assert "SIMULATED" in md


def test_previous_period_is_paired_by_task_and_matches_scipy(fixture_warehouse, doc) -> None:
    """The period comparison is compare's: one direction per shared non-holdout task."""
    from statsmodels.stats.multitest import multipletests

    w = doc["window"]
    assert w["previous_since"].startswith("2026-11-16") and w["previous_until"].startswith("2026-11-23")
    prev = _counts(fixture_warehouse, "2026-11-16", "2026-11-23")
    cur = _counts(fixture_warehouse, "2026-11-23", "2026-11-30")
    holdout = {r[0] for r in _sql(fixture_warehouse, "SELECT DISTINCT case_id FROM cases WHERE holdout")}
    assert holdout, "the fixture has a holdout task"
    rows = doc["previous_period"]["rows"]
    assert {r["config_id"] for r in rows} == {k for k, _ in cur}
    ps = [r["sign_test"]["p"] for r in rows]
    assert [r["sign_test"]["p_holm"] for r in rows] == pytest.approx(list(multipletests(ps, method="holm")[1]))
    for r in rows:
        cid = r["config_id"]
        tasks = sorted(({t for k, t in cur if k == cid} & {t for k, t in prev if k == cid}) - holdout)
        up = sum(Fraction(*cur[cid, t]) > Fraction(*prev[cid, t]) for t in tasks)
        down = sum(Fraction(*cur[cid, t]) < Fraction(*prev[cid, t]) for t in tasks)
        assert (r["common_tasks"], r["sign_test"]["improvements"], r["sign_test"]["regressions"]) == (
            len(tasks), up, down)
        assert r["sign_test"]["ties"] == len(tasks) - up - down
        expected_p = binomtest(up, up + down, 0.5).pvalue if up + down else 1.0
        assert r["sign_test"]["p"] == pytest.approx(expected_p, rel=1e-9)
        assert r["previous_valid"] == sum(n for (k, _), (c, n) in prev.items() if k == cid)
        assert r["verdict"] in {"improved", "regressed", "no clear change"}


def test_blockers_list_every_invalid_trial(fixture_warehouse, doc) -> None:
    rows = _sql(fixture_warehouse, """
SELECT config_id, count(*) FROM trials
WHERE outcome = 'invalid' AND started_at >= '2026-11-23'::TIMESTAMPTZ AND started_at < '2026-11-30'::TIMESTAMPTZ
GROUP BY ALL
""")
    assert rows, "the fixture plants one invalid trial"
    got = {(b["config_id"], b["count"]) for b in doc["blockers"] if b["kind"] == "invalid_trials"}
    assert got == set(rows)


def test_comparison_pareto_and_matrix_are_present_for_a_two_by_two_grid(doc, fixture_report) -> None:
    assert len(doc["comparisons"]) == 3 and doc["comparison_absent"] is None
    assert doc["matrix"] is not None and doc["matrix_absent"] is None
    assert {"pareto", "pareto_trial", "matrix", "directions", "period"} <= set(fixture_report.charts)
    placed = [p for p in doc["pareto"]["cost_per_accepted"] if p["on_front"] is not None]
    assert any(p["on_front"] for p in placed)


def test_cli_single_configuration_says_why_sections_are_absent(tmp_path: Path, make_warehouse) -> None:
    db = make_warehouse(tmp_path / "one" / "trialhouse.duckdb", models=["model-a"], harnesses=["harness-x"])
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "report", "--warehouse", str(db), "--output", str(out),
                           "--run", "run-week1", "--json"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    paths = json.loads(proc.stdout)
    doc = json.loads(Path(paths["json"]).read_text(encoding="utf-8"))
    assert doc["comparisons"] == [] and doc["comparison_absent"]
    assert doc["matrix"] is None and "two models or two harnesses" in doc["matrix_absent"]
    assert doc["previous_period"] is None
    md = Path(paths["markdown"]).read_text(encoding="utf-8")
    assert "No model × harness grid:" in md and "No paired comparison:" in md


@pytest.mark.parametrize(("args", "message"), [
    (["--previous-period"], "trialhouse: --previous-period needs --since"),
    (["--since", "2026-11-30", "--until", "2026-11-23", "--previous-period"], "trialhouse: --until 2026-11-23 is not after"),
    (["--run", "run-week1", "--baseline", "no-such-config"], "trialhouse: configuration 'no-such-config' not found"),
    (["--run", "no-such-run"], "trialhouse: --run 'no-such-run': no run of that name in the warehouse; known: run-week1"),
])
def test_cli_errors_are_one_line(tmp_path: Path, fixture_warehouse: Path, args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "report", "--warehouse", str(fixture_warehouse),
                           "--output", str(tmp_path / "x"), *args],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(message), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_flags_section_counts_per_configuration_and_kind(fixture_warehouse, doc, fixture_report) -> None:
    """Patch-inspection flags: per (configuration, kind) in the section, per configuration in
    the summary, both recomputed from the flags table."""
    window = "started_at >= '2026-11-23'::TIMESTAMPTZ AND started_at < '2026-11-30'::TIMESTAMPTZ"
    expected = {(c, k): (n, t) for c, k, n, t in _sql(fixture_warehouse, f"""
SELECT t.config_id, f.kind, count(*), count(DISTINCT f.trial_id)
FROM flags f JOIN trials t USING (run_id, trial_id)
WHERE t.complete AND t.{window} GROUP BY ALL""")}
    assert expected and len({k for _, k in expected}) == 2, "the fixture plants two kinds"
    got = {(r["config_id"], r["kind"]): (r["flags"], r["trials_flagged"]) for r in doc["flags"]}
    assert got == expected
    per_config = dict(_sql(fixture_warehouse, f"SELECT config_id, sum(flags) FROM trials "
                                              f"WHERE complete AND {window} GROUP BY 1"))
    assert {r["config_id"]: r["flags"] for r in doc["summary"]["rows"]} == per_config
    md = fixture_report.markdown.read_text(encoding="utf-8")
    assert "## Patch-inspection flags" in md and "broad_exception" in md and "tests_deleted" in md


def test_a_source_without_cost_draws_no_cost_chart_and_says_why(tmp_path: Path) -> None:
    """Foreign results without prices: cost unknown everywhere, so no empty cost chart or
    front; the report says why instead, and flags are unknown, not zero."""
    from analysis.report import write_report
    from ingest.api import ingest_paths

    lines = [{"model": m, "harness": "h", "harness_version": "1", "task_id": f"t{t}", "trial": 1,
              "status": "solved" if (t + len(m)) % 3 else "failed"}
             for m in ("ma", "mbb") for t in range(6)]
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(x) + "\n" for x in lines))
    wh = tmp_path / "w" / "t.duckdb"
    ingest_paths([runs], wh, format="runs-jsonl")
    paths = write_report(wh, tmp_path / "out")
    doc = json.loads(paths.json.read_text(encoding="utf-8"))
    assert "cost" not in paths.charts and "pareto" not in paths.charts
    assert set(doc["charts_skipped"]) >= {"cost", "pareto", "pareto_trial"}
    assert doc["charts_skipped"]["cost"] == "no trial has a known cost_usd"
    assert all(r["flags"] is None for r in doc["summary"]["rows"])
    md = paths.markdown.read_text(encoding="utf-8")
    assert "Not drawn: cost (no trial has a known cost_usd)" in md


def test_glossary_terms_link_once_from_their_first_use(fixture_report) -> None:
    """Jargon is explained in the Glossary; the first use of each term in the prose links to
    its entry, later uses stay plain, and every link has its target."""
    from analysis.report.render import Glossary
    from analysis.report.sections.glossary import TERMS

    html = fixture_report.html.read_text(encoding="utf-8")
    links = re.findall(r'<a class="term" href="#term-([a-z-]+)">', html)
    assert links and len(links) == len(set(links)), "one link per term"
    for term in links:
        assert f'<dt id="term-{term}">' in html, term
    head = html[html.index('<section id="headline">'):html.index('<section id="controls">')]
    assert '<a class="term" href="#term-baseline">baseline</a>' in head
    linker = Glossary(list(TERMS))
    first = str(linker("Holm <b> and holm, then sign test; SIMULATED"))
    assert first == ('<a class="term" href="#term-holm">Holm</a> &lt;b&gt; and holm, then '
                     '<a class="term" href="#term-sign-test">sign test</a>; '
                     '<span class="sim">SIMULATED</span>')
    assert str(linker("Holm again")) == "Holm again"
