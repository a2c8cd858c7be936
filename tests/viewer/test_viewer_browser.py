"""``trialhouse view`` in a real headless Chromium, on a warehouse built from a real run.

What a reviewer sees: every page kind renders with no console error and no request leaving
the machine; the trial page shows the diff, a criterion's grader output, a step with its
command, a model call's tokens and a judgment; filters narrow the trial list; a review
recorded in the page reaches ``review summary`` after ``review import``; a trial id with
markup is shown as text; a bundle opens from disk with the network blocked; a non-loopback
``--host`` is refused. Keeps a screenshot of the trial page in test-artifacts/; with
TRIALHOUSE_REFRESH_SCREENSHOTS=1 it refreshes docs/img/viewer-trial.png for the README.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .conftest import MARKUP, ROOT, th

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_spec = importlib.util.spec_from_file_location("reports_kit", ROOT / "tests" / "reports" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_reports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_reports)


class Browser:
    """One headless Chromium for the module; every request off the allowed origin is aborted."""

    def __init__(self, playwright, allowed: str) -> None:
        if not Path(_reports.CHROMIUM).exists():
            pytest.fail("headless Chromium not found: run 'make chromium' (Debian package 'chromium')")
        self.browser = playwright.chromium.launch(executable_path=_reports.CHROMIUM, args=_reports.CHROMIUM_ARGS,
                                                  headless=True)
        self.allowed = allowed
        self.blocked: list[str] = []
        self.errors: list[str] = []

    def page(self, allowed: str | None = None):
        """A new page; the errors and blocked requests seen so far are forgotten (one test's own)."""
        prefix = allowed or self.allowed
        self.blocked.clear()
        self.errors.clear()
        page = self.browser.new_page(viewport={"width": 1300, "height": 1000})

        def route(r):
            if r.request.url.startswith(prefix):
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m: self.errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"{page.url}: {e}"))
        return page


@pytest.fixture(scope="module")
def chromium(served):
    from playwright.sync_api import sync_playwright

    origin = "{0.scheme}://{0.netloc}/".format(urlsplit(served["url"]))
    with sync_playwright() as p:
        b = Browser(p, origin)
        try:
            yield b
        finally:
            b.browser.close()


def _trial(served, variant: str) -> str:
    return f"{served['url']}runs/{served['run_id']}/trials/mul__{variant}__r1/index.html"


def test_every_page_kind_renders_without_console_errors(served, chromium) -> None:
    page = chromium.page()
    run = served["run_id"]
    seen = {}
    for kind, path in [("runs", ""), ("run", f"runs/{run}/"), ("task", f"runs/{run}/tasks/mul/"),
                       ("trial", f"runs/{run}/trials/mul__chat__r1/"),
                       ("compare", f"runs/{run}/trials/mul__chat__r1/compare/{run}/mul__noop__r1.html"),
                       ("trials", "trials/"), ("queues", "queues/")]:
        response = page.goto(served["url"] + path)
        assert response is not None and response.status == 200, (kind, response and response.status)
        page.wait_for_function("document.body.dataset.ready === '1'")
        seen[kind] = page.evaluate("document.body.dataset.page")
    page.goto(served["url"] + f"runs/{run}/")
    page.click("#configs a >> nth=0")  # a configuration page, reached as a reader would
    assert page.evaluate("document.body.dataset.page") == "config"
    assert seen == {k: k for k in seen}
    assert chromium.errors == [], chromium.errors
    assert chromium.blocked == [], f"the viewer tried to reach the network: {chromium.blocked}"


def test_the_trial_page_shows_the_evidence(served, chromium) -> None:
    page = chromium.page()
    page.goto(_trial(served, "chat"))
    diff = page.locator("#diff table.diff").first.inner_text()
    assert "def mul(a, b):" in diff and "except Exception:" in diff
    assert page.locator("#diff table.diff span.k").count() > 0, "the diff is highlighted (Pygments keyword spans)"
    criteria = page.locator("#criteria")
    criteria.locator("details.evidence summary").first.click()
    assert "grader says: calc.mul(2, 3) -> 6" in criteria.inner_text()
    timeline = page.locator("#timeline").inner_text()
    assert "$ python3 -c" in timeline and "exit 0" in timeline  # a step with its command and exit status
    assert "200 in / 20 out" in timeline and "latency" in timeline  # a model call's tokens and latency
    assert "final check, attempt 1: 2 of 2 criteria passed" in timeline
    judgment = page.locator("#judgments tr.judgment").first.inner_text()
    assert "failed" in judgment and "adds a parallel mechanism" in judgment and "uncalibrated" in judgment
    flag = page.locator("a.flag-link").first  # the broad-exception flag links to its line
    target = flag.get_attribute("href")
    assert target and "-n" in target
    assert "flagged" in (page.locator(target).get_attribute("class") or "")
    shot = ROOT / "test-artifacts" / "viewer-trial.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1300, "height": 1500})
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shot), full_page=False)
    if os.environ.get("TRIALHOUSE_REFRESH_SCREENSHOTS"):
        shutil.copyfile(shot, ROOT / "docs" / "img" / "viewer-trial.png")
    assert chromium.errors == []


def test_filters_narrow_the_trial_list(served, chromium) -> None:
    page = chromium.page()
    page.goto(served["url"] + "trials/")
    rows = page.locator("#trial-list tbody tr")
    everything = rows.count()
    assert everything == 3  # two trials of our run and the foreign one
    page.select_option("select[name=outcome]", "accepted")
    page.click("form#filters button[type=submit]")
    page.wait_for_url("**outcome=accepted**")
    outcomes = [rows.nth(i).get_attribute("data-outcome") for i in range(rows.count())]
    assert 0 < len(outcomes) < everything and set(outcomes) == {"accepted"}
    page.goto(served["url"] + "trials/?flag=broad_exception")
    assert [rows.nth(i).get_attribute("data-id") for i in range(rows.count())] == ["mul__chat__r1"]
    page.fill("header input[name=q]", "noop")  # the search box on every page
    page.click("header form.search button")
    page.wait_for_url("**q=noop**")
    assert [rows.nth(i).get_attribute("data-id") for i in range(rows.count())] == ["mul__noop__r1"]


def test_a_review_recorded_in_the_page_reaches_review_summary(served, chromium) -> None:
    page = chromium.page()
    page.goto(_trial(served, "noop"))  # the grader rejected it (target_failed)
    form = page.locator("form.review")
    form.locator("input[name=reviewer]").fill("dana <reviewer>")
    form.locator("input[name=decision][value=accept]").check()
    form.locator("input[name=minutes]").fill("3.5")
    form.locator("button[type=submit]").click()
    assert "reason_code is required" in page.locator("#review-message").inner_text()
    assert not Path(served["reviews"]).exists()  # refused by the import rule: nothing written
    form = page.locator("form.review")
    form.locator("select[name=reason_code]").select_option("grader_too_strict")
    form.locator("select[name=failure_category]").select_option("verification")
    form.locator("input[name='grid.pattern'][value=follows-existing-pattern]").check()
    form.locator("button[type=submit]").click()
    assert page.locator("#review-message").inner_text().startswith("recorded as line 1")
    assert "dana <reviewer> accept (grader_too_strict)" in page.locator("ul.pending").inner_text()
    th("review", "import", str(served["reviews"]), "--rubric", str(served["grid"]), "--warehouse", str(served["wh"]))
    summary = json.loads(th("review", "summary", "--json", "--warehouse", str(served["wh"])).stdout)
    (row,) = [r for r in summary["agreement"] if r["variant"] == "noop"]
    assert (row["reviewed"], row["disagreements"], row["disagreeing_trials"]) == (1, 1, "mul__noop__r1")
    assert ("verification", "reviewer:dana <reviewer>") in {(c["category"], c["assigned_by"])
                                                            for c in summary["categories"]}
    page.reload()
    imported = page.locator("#reviews tr.review").inner_text()
    assert "dana <reviewer>" in imported and "grader_too_strict" in imported and "pattern" in imported
    assert chromium.errors == []


def test_a_trial_id_with_markup_is_shown_as_text(served, chromium) -> None:
    page = chromium.page()
    page.goto(served["url"] + "trials/?q=onerror")
    link = page.locator("#trial-list tbody tr a").first
    assert MARKUP in link.inner_text()
    link.click()
    page.wait_for_function("document.body.dataset.ready === '1'")
    assert MARKUP in page.locator("h1").inner_text()
    assert page.locator("main img, main b").count() == 0  # nothing of the id became an element
    assert page.evaluate("window.__pwned") is None
    assert "not found" in page.locator("dl.facts").inner_text()  # a foreign trial: no evidence, shown so
    assert chromium.errors == []


def test_a_bundle_opens_from_disk_with_the_network_blocked(served, chromium, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    printed = th("view", "--warehouse", str(served["wh"]), "--bundle", str(out)).stdout
    assert f"bundle: {out / 'index.html'}" in printed and "side-by-side pages: 1" in printed
    trial = out / "runs" / str(served["run_id"]) / "trials" / "mul__chat__r1" / "index.html"
    page = chromium.page(allowed="file://")
    page.goto(trial.as_uri())
    page.wait_for_function("document.body.dataset.ready === '1'")
    assert "def mul(a, b):" in page.locator("#diff table.diff").first.inner_text()
    assert (trial.parent / (page.locator("#compare a").first.get_attribute("href") or "-")).is_file()
    page.goto((out / "trials" / "index.html").as_uri() + "?outcome=accepted")  # filtered in the browser
    page.wait_for_function("document.body.dataset.ready === '1'")
    rows = page.locator("#trial-list tbody tr")
    visible = page.locator("#trial-list tbody tr:not([hidden])")
    assert rows.count() == 3 and 0 < visible.count() < rows.count()
    page.select_option("select[name=outcome]", "")
    assert visible.count() == rows.count()
    page.locator("#trial-list tbody tr a", has_text="onerror").first.click()  # the markup id's page, from disk
    page.wait_for_function("document.body.dataset.ready === '1'")
    assert MARKUP in page.locator("h1").inner_text() and page.evaluate("window.__pwned") is None
    for link in ("Runs", "Queues"):
        page.click(f"header.top >> text={link}")
        page.wait_for_function("document.body.dataset.ready === '1'")
    assert chromium.blocked == [] and chromium.errors == [], (chromium.blocked, chromium.errors)


def test_a_remote_host_is_refused_with_one_line(served) -> None:
    proc = th("view", "--warehouse", str(served["wh"]), "--host", "0.0.0.0", "--no-open", check=False, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--allow-remote" in proc.stderr, proc.stderr


def test_another_host_name_and_a_review_without_the_token_are_refused(served) -> None:
    """DNS rebinding (a page elsewhere naming this port under its own host name) gets 421; a
    cross-site form post without the page's token records nothing."""
    import http.client

    parts = urlsplit(served["url"])
    con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    con.request("GET", "/", headers={"Host": f"attacker.example:{parts.port}"})
    assert con.getresponse().status == 421
    con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    before = Path(served["reviews"]).read_text() if Path(served["reviews"]).exists() else ""
    con.request("POST", f"/runs/{served['run_id']}/trials/mul__chat__r1/review",
                body="reviewer=mallory&decision=accept", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert con.getresponse().status == 403
    after = Path(served["reviews"]).read_text() if Path(served["reviews"]).exists() else ""
    assert after == before
