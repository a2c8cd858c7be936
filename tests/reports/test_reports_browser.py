"""The generated report.html in a real headless Chromium, with the network switched off.

Asserts what a reader sees: the headline at the top with one sentence per candidate (the
same sentences as report.json), every chart container holding a drawn SVG, no escaped HTML
anywhere in the page text (the ``&lt;span class="sim"&gt;`` bug), the SIMULATED badge in
table cells, no console error, and no request leaving the file (every non-file request is
aborted and recorded). Keeps a full-page screenshot in test-artifacts/report-full.png.

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


if __name__ == "__main__":  # refresh docs/img/report.png: HTML path, PNG path
    from conftest import open_offline  # this directory is on sys.path when run as a script

    out = open_report(open_offline, Path(sys.argv[1]), REPO_ROOT / "test-artifacts" / "report-full.png",
                      Path(sys.argv[2]))
    print(f"{sys.argv[2]}: {out['rendered']} chart(s) drawn, {len(out['errors'])} console error(s)")
