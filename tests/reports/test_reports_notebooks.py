"""The four notebooks: stored without outputs, and each executes cleanly against the test warehouse."""

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


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name: str, small_warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbclient import NotebookClient

    monkeypatch.setenv("TRIALHOUSE_WAREHOUSE", str(small_warehouse))
    # The kernel imports analysis/warehouse from the checkout, whatever the install.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    nb = _load(name)
    client = NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # Every notebook draws at least one chart (a Vega-Lite bundle in the outputs).
    assert any("application/vnd.vegalite.v6+json" in o.get("data", {}) or
               "application/vnd.vegalite.v5+json" in o.get("data", {}) or
               "text/html" in o.get("data", {}) for o in outputs if o.get("output_type") in
               ("execute_result", "display_data"))
