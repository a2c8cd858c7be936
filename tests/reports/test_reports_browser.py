"""The generated report.html in a real headless Chromium, with the network switched off.

Asserts that every chart container holds a drawn SVG, that the page logged no console
error, and that no request left the file (every non-file request is aborted and
recorded). Keeps a screenshot in test-artifacts/report.png.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _open_report(html: Path, screenshot: Path | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("headless Chromium not found: run 'make chromium' (Debian package 'chromium')")
    blocked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})

            def route(r):
                if r.request.url.startswith("file://"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(html.resolve().as_uri(), wait_until="load")
            page.wait_for_function("document.body.dataset.chartsRendered !== undefined", timeout=30_000)
            containers = page.locator("div.chart[data-chart]")
            n = containers.count()
            drawn = {
                containers.nth(i).get_attribute("data-chart"): containers.nth(i).locator("svg.marks, canvas.marks").count()
                for i in range(n)
            }
            rendered = int(page.evaluate("document.body.dataset.chartsRendered"))
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=False)
                for section in ("summary", "pareto", "period"):  # close-ups with charts
                    page.locator(f"#{section}").screenshot(path=str(screenshot.with_name(f"report-{section}.png")))
        finally:
            browser.close()
    return {"blocked": blocked, "errors": errors, "containers": n, "drawn": drawn, "rendered": rendered}


def test_report_renders_offline_in_headless_chromium(built_report) -> None:
    shot = REPO_ROOT / "test-artifacts" / "report.png"
    result = _open_report(built_report.html, shot)
    assert result["blocked"] == [], f"the report tried to reach the network: {result['blocked']}"
    assert result["errors"] == [], f"console errors: {result['errors']}"
    assert result["containers"] == len(built_report.charts) > 0
    assert result["rendered"] == len(built_report.charts)
    not_drawn = [name for name, marks in result["drawn"].items() if marks != 1]
    assert not_drawn == [], f"charts without a drawn SVG: {not_drawn}"
    assert shot.stat().st_size > 10_000


def test_a_broken_chart_is_caught(built_report, tmp_path: Path) -> None:
    """The harness is not vacuous: a spec Vega cannot draw shows up as a console error."""
    html = built_report.html.read_text(encoding="utf-8")
    head, sep, specs = html.partition("const specs = ")
    broken = head + sep + specs.replace('"mark": {"type": "', '"mark": {"type": "no-such-mark-', 1)
    assert broken != html
    page = tmp_path / "broken.html"
    page.write_text(broken, encoding="utf-8")
    result = _open_report(page)
    assert result["errors"], "a broken chart spec should log a console error"
    assert result["rendered"] == len(built_report.charts) - 1
