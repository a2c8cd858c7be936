"""The four notebooks: stored without outputs, each executes cleanly against the test warehouse,
and their charts draw offline — in the outputs JupyterLab shows and in the HTML that
``jupyter nbconvert --to html`` exports (opened in headless Chromium, network blocked)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO_ROOT / "notebooks"
NAMES = ["01_explore", "02_compare", "03_cost_and_pareto", "04_failures_and_familiarity"]


def _load(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stored_without_outputs(name: str) -> None:
    nb = _load(name)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook without code"
    assert all(c.outputs == [] and c.execution_count is None for c in code), "strip outputs before committing"
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and "TRIALHOUSE_WAREHOUSE" in params[0].source


@pytest.fixture(scope="module")
def executed(small_warehouse: Path) -> dict[str, nbformat.NotebookNode]:
    """Every notebook executed once with nbclient (a real kernel) on the test warehouse."""
    from nbclient import NotebookClient

    saved = {k: os.environ.get(k) for k in ("TRIALHOUSE_WAREHOUSE", "PYTHONPATH")}
    os.environ["TRIALHOUSE_WAREHOUSE"] = str(small_warehouse)
    # The kernel imports analysis/warehouse from the checkout, whatever the install.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), saved["PYTHONPATH"]]))
    try:
        out = {}
        for name in NAMES:
            nb = _load(name)
            NotebookClient(nb, timeout=180, kernel_name="python3",
                           resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
            out[name] = nb
        return out
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _chart_outputs(nb: nbformat.NotebookNode) -> list[str]:
    return [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if o.get("output_type") in ("execute_result", "display_data")
            and "trialhouse-chart" in o.get("data", {}).get("text/html", "")]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes_and_its_charts_carry_vega_inline(executed, name: str) -> None:
    nb = executed[name]
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    charts = _chart_outputs(nb)
    assert charts, "every notebook draws at least one chart"
    for html in charts:
        assert "window.vegaEmbed" in html and "https://" not in html.split("<script", 1)[0]
        assert "cdn.jsdelivr.net" not in html and "<script src" not in html


@pytest.mark.slow
@pytest.mark.browser
def test_exported_notebooks_draw_every_chart_offline(executed, offline, tmp_path: Path) -> None:
    """nbconvert's HTML, opened with every network request aborted: each chart is drawn.

    nbconvert's own page template asks CDNs for MathJax and require.js; those requests
    are aborted like any other, and the charts must draw regardless.
    """
    from nbconvert import HTMLExporter

    for name, nb in executed.items():
        body, _ = HTMLExporter().from_notebook_node(nb)
        assert "cdn.jsdelivr.net/npm/vega" not in body
        page = tmp_path / f"{name}.html"
        page.write_text(body, encoding="utf-8")
        n = len(_chart_outputs(nb))

        def inspect(p) -> dict:
            divs = p.locator("div.trialhouse-chart")
            return {"divs": divs.count(),
                    "drawn": [divs.nth(i).locator("svg.marks").count() for i in range(divs.count())]}

        seen = offline(page, inspect, ready=(
            "Array.from(document.querySelectorAll('div.trialhouse-chart'))"
            f".filter(d => d.querySelector('svg.marks')).length >= {n}"))
        assert seen["divs"] == n and seen["drawn"] == [1] * n, (name, seen)
        assert not [e for e in seen["errors"] if "vega" in e.lower() or "chart" in e.lower()], seen["errors"]
        assert not [u for u in seen["blocked"] if "vega" in u], seen["blocked"]


def _specs(nb: nbformat.NotebookNode) -> list[dict]:
    """The Vega-Lite spec of each chart a notebook drew (from the offline renderer's HTML)."""
    import json

    out = []
    for html in _chart_outputs(nb):
        at = html.index('window.vegaEmbed("#')
        at = html.index('", ', at) + 3
        spec, _ = json.JSONDecoder().raw_decode(html.replace("<\\/", "</"), at)
        out.append(spec)
    return out


def _title(spec: dict) -> str:
    """A chart's title, or its first layer's (a layered chart keeps it there)."""
    title = spec.get("title") or next((la["title"] for la in spec.get("layer", [])
                                       if la.get("title")), "")
    return title.get("text", "") if isinstance(title, dict) else str(title)


@pytest.fixture(scope="module")
def two_universes(tmp_path_factory) -> Path:
    """A warehouse of two task universes (a runs log and an Inspect log), ingested for real."""
    import subprocess
    import sys

    wh = tmp_path_factory.mktemp("universes") / "w.duckdb"
    foreign = REPO_ROOT / "examples" / "foreign"
    subprocess.run([sys.executable, "-m", "trialhouse", "ingest", str(foreign / "runs.jsonl"),
                    str(foreign / "inspect-arith.eval"), "--prices", str(foreign / "prices.json"),
                    "-w", str(wh)], check=True, capture_output=True, cwd=REPO_ROOT, timeout=300)
    return wh


@pytest.mark.slow
def test_notebooks_chart_one_task_universe_at_a_time(two_universes: Path) -> None:
    """01 and 03 draw one chart per task universe (the CLI never compares across them): each
    chart's rows come from one universe, named in its title."""
    from nbclient import NotebookClient

    from analysis import scope
    from warehouse import db

    con = db.open(two_universes, read_only=True)
    try:
        names = {u.name for u in scope.universes(con)}
    finally:
        con.close()
    assert len(names) == 2
    saved = os.environ.get("TRIALHOUSE_WAREHOUSE")
    os.environ["TRIALHOUSE_WAREHOUSE"] = str(two_universes)
    try:
        ran = {}
        for nb_name in ("01_explore", "03_cost_and_pareto"):
            nb = _load(nb_name)
            NotebookClient(nb, timeout=180, kernel_name="python3",
                           resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
            ran[nb_name] = nb
    finally:
        if saved is None:
            os.environ.pop("TRIALHOUSE_WAREHOUSE", None)
        else:
            os.environ["TRIALHOUSE_WAREHOUSE"] = saved
    for nb_name, nb in ran.items():
        specs = _specs(nb)
        assert specs, nb_name
        for spec in specs:
            title = _title(spec)
            assert any(title.endswith(f"universe {n}") for n in names), (nb_name, title)
            rows = [r for data in spec.get("datasets", {}).values() for r in data]
            assert len({r["universe"] for r in rows if "universe" in r}) <= 1, (nb_name, title)
    rates = [s for s in _specs(ran["01_explore"]) if _title(s).startswith("Acceptance rate")]
    assert sorted(_title(s).rsplit(" ", 1)[1] for s in rates) == sorted(names)


@pytest.mark.slow
def test_failures_notebook_chart_is_compact(executed) -> None:
    """04's failure chart: one row per configuration (it was ~2,000 px of mostly white)."""
    (spec,) = [s for s in _specs(executed["04_failures_and_familiarity"])
               if _title(s).startswith("Failure classes")]
    assert spec["height"] == {"step": 22}
