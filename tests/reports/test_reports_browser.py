"""The generated report.html in a real headless Chromium, with the network switched off.

Asserts what a reader sees: the headline at the top, its first sentence the decision (the
best configuration with rate, interval and dollars, or that none is distinguishably better,
with the same numbers as report.json), one sentence per candidate (report.json's), every
chart container holding a drawn SVG, no escaped HTML anywhere in the page text (the
``&lt;span class="sim"&gt;`` bug), the SIMULATED badge in table cells, no console error, and
no request leaving the file (every non-file request is aborted and recorded). At 1400 px:
no table's or chart's box is wider than its column (a wide table scrolls inside its box), no
trajectory row of dashes only is shown unfolded, the Pareto names' boxes overlap neither
each other nor a point, and no time is printed below the minute. Keeps a full-page
screenshot in test-artifacts/report-full.png.

The same code refreshes the README's picture from the demo report:

    .venv/bin/python tests/reports/test_reports_browser.py demo/reports/latest/report.html docs/img/report.png
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TAG_IN_TEXT = re.compile(r"</?(span|div|a|b|i|p|td|tr|table|script|svg)\b[^>]*>", re.I)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _inspect(full_page: Path | None, top: Path | None):
    def inspect(page) -> dict:
        containers = page.locator("div.chart[data-chart]")
        n = containers.count()
        found = {
            "containers": n,
            "drawn": {containers.nth(i).get_attribute("data-chart"):
                      containers.nth(i).locator("svg.marks, canvas.marks").count() for i in range(n)},
            "rendered": int(page.evaluate("document.body.dataset.chartsRendered")),
            "text": page.inner_text("body"), "dom": page.content(),
            "headline": [li.inner_text() for li in page.locator("#headline li").all()],
            "first_section": page.evaluate("document.querySelector('section').id"),
            "badges_in_cells": page.locator("td span.sim").count(),
            "cells_with_simulated": page.locator("td", has_text="SIMULATED").count(),
        }
        if full_page is not None:
            full_page.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(full_page), full_page=True)
        if top is not None:  # the README picture: headline, controls and the summary
            top.parent.mkdir(parents=True, exist_ok=True)
            page.set_viewport_size({"width": 1200, "height": 1500})
            page.screenshot(path=str(top), full_page=False)
        return found

    return inspect


def open_report(offline, html: Path, full_page: Path | None = None, top: Path | None = None) -> dict:
    """Load the report offline, wait for the charts, and say what a reader would see."""
    return offline(html, _inspect(full_page, top),
                   ready="document.body.dataset.chartsRendered !== undefined")


@pytest.fixture(scope="module")
def seen(built_report, offline) -> dict:
    return open_report(offline, built_report.html, REPO_ROOT / "test-artifacts" / "report-full.png")


def test_report_renders_offline_in_headless_chromium(built_report, seen) -> None:
    assert seen["blocked"] == [], f"the report tried to reach the network: {seen['blocked']}"
    assert seen["errors"] == [], f"console errors: {seen['errors']}"
    assert seen["containers"] == len(built_report.charts) > 0
    assert seen["rendered"] == len(built_report.charts)
    not_drawn = [name for name, marks in seen["drawn"].items() if marks != 1]
    assert not_drawn == [], f"charts without a drawn SVG: {not_drawn}"
    assert (REPO_ROOT / "test-artifacts" / "report-full.png").stat().st_size > 50_000


def test_no_escaped_html_anywhere_and_badges_in_cells(seen) -> None:
    tags = TAG_IN_TEXT.findall(seen["text"])
    assert not tags, f"HTML tags shown as text: {tags[:5]}"
    assert "&lt;span" not in seen["dom"] and "&lt;/span" not in seen["dom"]
    assert seen["cells_with_simulated"] > 0, "the fixture has a simulated configuration"
    assert seen["badges_in_cells"] >= seen["cells_with_simulated"]


def test_headline_opens_the_page_with_one_sentence_per_candidate(built_report, seen) -> None:
    doc = json.loads(built_report.json.read_text(encoding="utf-8"))
    assert seen["first_section"] == "headline"
    sentences = [ln["sentence"] for ln in doc["headline"]["lines"]]
    assert len(sentences) == len(doc["comparisons"]) > 0
    assert seen["headline"] == sentences


def test_a_broken_chart_is_caught(built_report, offline, tmp_path: Path) -> None:
    """The harness is not vacuous: a spec Vega cannot draw shows up as a console error."""
    html = built_report.html.read_text(encoding="utf-8")
    head, sep, specs = html.partition("const specs = ")
    broken = head + sep + specs.replace('"mark": {"type": "', '"mark": {"type": "no-such-mark-', 1)
    assert broken != html
    page = tmp_path / "broken.html"
    page.write_text(broken, encoding="utf-8")
    result = open_report(offline, page)
    assert result["errors"], "a broken chart spec should log a console error"
    assert result["rendered"] == len(built_report.charts) - 1


def test_escaped_markup_is_caught(built_report, offline, tmp_path: Path) -> None:
    """The check is not vacuous: the old template's escaped badge would fail it."""
    html = built_report.html.read_text(encoding="utf-8")
    broken = html.replace('<span class="sim">SIMULATED</span>',
                          '&lt;span class="sim"&gt;SIMULATED&lt;/span&gt;', 3)
    assert broken != html
    page = tmp_path / "escaped.html"
    page.write_text(broken, encoding="utf-8")
    result = open_report(offline, page)
    assert TAG_IN_TEXT.findall(result["text"]) and "&lt;span" in result["dom"]


# --------------------------------------------------------------------------- layout at 1400 px

WIDE = (1400, 900)
LAYOUT_JS = """() => {
  const rect = (e) => { const r = e.getBoundingClientRect();
                        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width}; };
  const boxes = [...document.querySelectorAll('.table-box, div.chart')].map((box) => {
    const col = box.closest('section'), out = {kind: box.classList[0], section: col.id,
                                               box: rect(box), column: rect(col),
                                               overflows: box.scrollWidth > box.clientWidth + 1,
                                               hinted: box.classList.contains('scrolls')};
    const th = box.querySelector('thead th:last-child');
    if (th) {  // the last column is reachable: scrolled to the right end, it is inside the box
      box.scrollLeft = box.scrollWidth;
      out.last = rect(th); out.boxAfterScroll = rect(box); box.scrollLeft = 0;
    }
    return out;
  });
  const dashOnly = [...document.querySelectorAll('#trajectory table tbody tr')]
    .filter((tr) => !tr.closest('details') || tr.closest('details').open)
    .filter((tr) => [...tr.cells].slice(3, 6).every((td) => td.innerText.trim() === '\u2014'))
    .map((tr) => tr.innerText);
  const folded = document.querySelectorAll('#trajectory details tbody tr').length;
  const marks = (sel) => [...document.querySelectorAll(sel)].map(rect);
  const charts = {};
  for (const name of ['pareto', 'pareto_trial']) {
    charts[name] = {labels: marks('#chart-' + name + ' g.pareto_labels_marks text'),
                    points: marks('#chart-' + name + ' g.mark-symbol.role-mark path'),
                    front: marks('#chart-' + name + ' g.mark-line.role-mark path')};
  }
  return {boxes, dashOnly, folded, charts, scrollWidth: document.documentElement.scrollWidth,
          innerWidth: window.innerWidth,
          lead: (document.querySelector('#headline p.lead') || {innerText: ''}).innerText};
}"""


def measure(offline, html: Path) -> dict:
    """The report's layout as Chromium lays it out at 1400 px (LAYOUT_JS)."""
    return offline(html, lambda page: page.evaluate(LAYOUT_JS),
                   ready="document.body.dataset.chartsRendered !== undefined", viewport=WIDE)


def first_sentence(text: str) -> str:
    """Up to the first full stop followed by a capital (a price's or a rate's point is not one)."""
    found = re.match(r"(.+?\.)(?=\s+[A-Z]|\s*$)", text.strip(), re.S)
    assert found is not None, text
    return found.group(1)


def overlaps(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (a["left"] < b["right"] - slack and b["left"] < a["right"] - slack
            and a["top"] < b["bottom"] - slack and b["top"] < a["bottom"] - slack)


def too_wide(found: dict) -> list[str]:
    """Boxes wider than (or reaching past) their column, and last columns out of reach."""
    out = []
    for b in found["boxes"]:
        if b["box"]["right"] > b["column"]["right"] + 0.5 or b["box"]["width"] > b["column"]["width"] + 0.5:
            out.append(f"{b['section']} {b['kind']}: {b['box']['width']:.0f} px in {b['column']['width']:.0f}")
        if "last" in b and b["last"]["right"] > b["boxAfterScroll"]["right"] + 1:
            out.append(f"{b['section']} {b['kind']}: last column out of reach")
    if found["scrollWidth"] > found["innerWidth"]:
        out.append(f"the page scrolls sideways ({found['scrollWidth']} > {found['innerWidth']} px)")
    return out


@pytest.fixture(scope="module")
def wide(built_report, offline) -> dict:
    return measure(offline, built_report.html)


def test_no_table_or_chart_box_exceeds_its_column_at_1400_px(wide) -> None:
    assert any(b["kind"] == "table-box" for b in wide["boxes"])
    assert too_wide(wide) == []
    tables = [b for b in wide["boxes"] if b["kind"] == "table-box"]
    assert all(b["hinted"] == b["overflows"] for b in tables), "a box that scrolls says so"


def test_a_table_wider_than_its_column_is_caught(built_report, offline, tmp_path: Path) -> None:
    """The measurement is not vacuous: without the scrolling box a long Runs row pushes the
    table (and the page) past the column."""
    html = built_report.html.read_text(encoding="utf-8")
    broken = html.replace(".table-box { max-width: 100%; overflow-x: auto;", ".table-box {", 1)
    first_cell = broken.index("<td>", broken.index('<section id="controls">'))
    broken = broken[:first_cell] + "<td>" + "run-id-" * 60 + broken[first_cell + 4:]
    assert broken != html and broken.count("run-id-run-id") > 0
    page = tmp_path / "wide.html"
    page.write_text(broken, encoding="utf-8")
    assert too_wide(measure(offline, page))


def test_the_headline_first_sentence_gives_the_decision_with_its_numbers(built_report, wide) -> None:
    from analysis import formatting as fmt

    doc = json.loads(built_report.json.read_text(encoding="utf-8"))
    if doc["headline"] is None:  # a warehouse of several task universes: no comparison
        assert wide["lead"] == "" and doc["comparison_absent"]
        return
    decision = doc["headline"]["decision"]
    sentence = first_sentence(wide["lead"])
    assert sentence == first_sentence(decision["sentence"]) and len(sentence) > 60
    if decision["verdict"] == "best":
        who = decision["best"]
        assert sentence.startswith(f"Best: {who['config']['variant']}")
        assert decision["runner_up"] is None or decision["runner_up"]["config"]["variant"] in sentence
    else:
        assert decision["verdict"] == "none_better", decision["verdict"]
        who = decision["baseline"]
        assert sentence.startswith("No configuration is distinguishably better than the baseline "
                                   f"{who['config']['variant']}")
    assert f"{100 * who['rate']:.1f}%" in sentence
    assert f"95% CI {fmt.interval(who['ci_low'], who['ci_high'])}" in sentence
    assert f"{fmt.usd(who['cost_per_accepted'])} per accepted" in sentence and "$" in sentence
    assert "cost known for" in sentence


def test_pareto_names_overlap_neither_each_other_nor_a_point(wide) -> None:
    drawn = [c for c in wide["charts"].values() if c["labels"]]
    assert drawn, "the fixture draws a Pareto chart"
    for chart in drawn:
        labels = chart["labels"]
        assert len(labels) == len(chart["points"]) > 1
        clashes = [(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))
                   if overlaps(labels[i], labels[j])]
        assert clashes == []
        assert not [lab for lab in labels for pt in chart["points"] + chart["front"] if overlaps(lab, pt)]


def test_crowded_pareto_names_are_spread_and_the_check_would_catch_them(offline, tmp_path) -> None:
    """Five configurations at nearly one point: the names stand apart; the same chart with
    each name at its point's height (the old layout) is caught overprinting."""
    import polars as pl

    from analysis import charts
    from analysis.theme import vega_bundle

    df = pl.DataFrame({"label": [f"configuration-{i} SIMULATED" for i in range(5)],
                       "x": [0.10, 0.101, 0.102, 0.103, 0.3], "rate": [0.8, 0.801, 0.802, 0.799, 0.5],
                       "on_front": [True, False, False, False, False]})
    spec = charts.pareto_chart(df).to_dict()
    old = json.loads(json.dumps(spec).replace('"field": "label_rate"', '"field": "rate"'))
    found = {}
    for name, chart in (("spread", spec), ("old", old)):
        page = tmp_path / f"{name}.html"
        page.write_text(
            "<!DOCTYPE html><html><head><meta charset='utf-8'><script>" + vega_bundle()
            + "</script></head><body><div id='chart-pareto'></div><script>vegaEmbed('#chart-pareto', "
            + json.dumps(chart) + ", {renderer: 'svg', actions: false}).then(() => "
            "{ document.body.dataset.chartsRendered = '1'; });</script></body></html>", encoding="utf-8")
        found[name] = offline(page, lambda p: p.evaluate(LAYOUT_JS)["charts"]["pareto"],
                              ready="document.body.dataset.chartsRendered !== undefined", viewport=WIDE)
    for name, chart in found.items():
        labels = chart["labels"]
        assert len(labels) == 5, name
        clash = any(overlaps(labels[i], labels[j]) for i in range(5) for j in range(i + 1, 5))
        assert clash == (name == "old"), name


@pytest.fixture(scope="module")
def steps_report(tmp_path_factory):
    """A report over runs that recorded steps (real ingest of a mini-swe-agent run directory
    and a Harbor job with an ATIF trajectory): some metrics measured, some never."""
    from analysis.report import write_report
    from ingest.api import ingest_paths

    formats = REPO_ROOT / "tests" / "ingest" / "formats" / "fixtures"
    base = tmp_path_factory.mktemp("steps-report")
    ingest_paths([formats / "mini_swe_agent" / "run1", formats / "harbor" / "2026-01-10__12-00-00"],
                 base / "w.duckdb")
    return write_report(base / "w.duckdb", base / "report")


def test_trajectory_rows_without_data_are_folded(steps_report, offline) -> None:
    found = measure(offline, steps_report.html)
    doc = json.loads(steps_report.json.read_text(encoding="utf-8"))
    assert doc["trajectory"], "the runs recorded steps"
    assert found["dashOnly"] == [], found["dashOnly"][:3]
    assert found["folded"] > 0, "the fixture has metrics no stage recorded"
    assert too_wide(found) == []


def test_times_are_printed_to_the_minute(seen) -> None:
    assert not re.search(r"\d{2}:\d{2}:\d{2}", seen["text"]), "a time with seconds on the page"
    assert "generated" in seen["text"]


if __name__ == "__main__":  # refresh docs/img/report.png: HTML path, PNG path
    from conftest import open_offline  # this directory is on sys.path when run as a script

    out = open_report(open_offline, Path(sys.argv[1]), REPO_ROOT / "test-artifacts" / "report-full.png",
                      Path(sys.argv[2]))
    print(f"{sys.argv[2]}: {out['rendered']} chart(s) drawn, {len(out['errors'])} console error(s)")
