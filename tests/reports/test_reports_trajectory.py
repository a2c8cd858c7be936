"""The report's trajectory section: there, with the metrics beside acceptance, when the runs
recorded steps (a warehouse built by the real ingest path from a mini-swe-agent run directory
and a Harbor job with an ATIF trajectory); left out when they did not (the fixture report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FORMATS = REPO / "tests" / "ingest" / "formats" / "fixtures"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from analysis.filters import Filters
    from analysis.report.gather import gather
    from ingest.api import ingest_paths
    from warehouse import db

    wh = tmp_path_factory.mktemp("trajectory-report") / "w.duckdb"
    ingest_paths([FORMATS / "mini_swe_agent" / "run1", FORMATS / "harbor" / "2026-01-10__12-00-00"], wh)
    con = db.open(wh, read_only=True)
    try:
        yield gather(con, Filters(), window={"since": None, "until": None})
    finally:
        con.close()


def test_the_section_shows_the_metrics_beside_acceptance(data):
    from analysis.report import sections
    from analysis.report.render import document

    doc = document(data, title="t", version="v", warehouse="w", generated_at="now", charts={}, skipped={})
    rows = {(r["harness"], r["metric"], r["category"]): r for r in doc["trajectory"]}
    # mini: calc-1 (accepted) and calc-2 (not) ran the same recorded trajectory; calc-3 hit its turn limit
    mini = rows[("mini-swe-agent", "tokens_per_step", None)]
    assert (mini["accepted_n"], mini["other_n"]) == (1, 2) and mini["accepted_median"] is not None
    passed = rows[("mini-swe-agent", "final_check", "passed_after_last_edit")]
    assert (passed["accepted_share"], passed["other_share"]) == (1.0, 0.5)
    # Harbor: the ATIF edit's step is stamped 15 s after agent_execution started
    assert rows[("terminus-2", "time_to_first_edit_s", None)]["median"] == 15.0
    page = {s.id: s for s in sections.build(data)}
    s = page["trajectory"]
    assert list(page).index("trajectory") == list(page).index("familiarity") + 1
    assert any("not quality scores" in p for p in s.paragraphs)
    cells = {(r[0], r[2]): r for r in s.tables[0].rows}
    assert any(metric == "final_check: passed_after_last_edit" for _, metric in cells)
    # Rows with data are shown; the ones no stage recorded are folded, none dropped.
    shown, folded = s.tables[0].rows, [r for t in s.folded for r in t.rows]
    assert len(shown) + len(folded) == len(doc["trajectory"]) and folded
    assert all(any(c != "—" for c in r[3:6]) for r in shown)
    assert all(all(c == "—" for c in r[3:6]) for r in folded)


def test_without_steps_the_section_is_left_out(fixture_report):
    doc = json.loads(Path(fixture_report.json).read_text(encoding="utf-8"))
    assert doc["trajectory"] is None
    assert 'id="trajectory"' not in Path(fixture_report.html).read_text(encoding="utf-8")
    assert "How the agents worked" not in Path(fixture_report.markdown).read_text(encoding="utf-8")
