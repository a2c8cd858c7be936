"""The foreign importers on mutated copies of their fixtures (``tests/fuzz/foreign_fuzz.py``;
``make fuzz`` runs many more): a value of the wrong JSON type, a huge number, a removed key
or a truncated file gives a clear error or a quarantined record, never a traceback. The
first run of this fuzz found 20 tracebacks in 150 cases (SWE-bench results lists holding
numbers or objects, Harbor and Inspect records with a string where an object belongs)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

_path = Path(__file__).resolve().parents[2] / "fuzz" / "foreign_fuzz.py"
_spec = importlib.util.spec_from_file_location("foreign_fuzz", _path)
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["foreign_fuzz"] = fuzz
_spec.loader.exec_module(fuzz)


@pytest.mark.parametrize("fmt, fixture", fuzz.SOURCES)
def test_mutated_fixtures_never_raise_a_traceback(tmp_path, fmt, fixture):
    findings = [f for seed in range(8) if (f := fuzz.one_case(fmt, fixture, seed, tmp_path)) is not None]
    assert findings == []


def _copy(tmp_path, fixture):
    src = fuzz.FIXTURES / fixture
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def test_swebench_results_entries_that_are_not_ids_are_quarantined(tmp_path):
    from ingest.formats import swebench

    sub = _copy(tmp_path, "swebench/20250901_agentx_model-a")
    results = sub / "results" / "results.json"
    doc = json.loads(results.read_text())
    doc["resolved"] = [*doc["resolved"], 5, {"id": "x"}, ""]
    results.write_text(json.dumps(doc))
    [b] = swebench.load(sub)
    reasons = [q.reason for q in b.quarantine]
    assert [r for r in reasons if "not an instance id" in r] == [
        f"results.json: resolved[{len(doc['resolved']) - 3}] is 5, not an instance id",
        f"results.json: resolved[{len(doc['resolved']) - 2}] is {{'id': 'x'}}, not an instance id",
        f"results.json: resolved[{len(doc['resolved']) - 1}] is '', not an instance id"]
    assert len(b.table_rows("trials")) == len(swebench.load(_copy(tmp_path / "orig", "swebench/20250901_agentx_model-a"))[0].table_rows("trials"))


def test_a_harbor_trial_with_a_field_of_the_wrong_type_is_quarantined_and_the_rest_loads(tmp_path):
    from ingest.formats import harbor

    job = _copy(tmp_path, "harbor/2026-01-10__12-00-00")
    [good] = harbor.load(job)
    target = job / "hello-world__00ab1cd" / "result.json"
    doc = json.loads(target.read_text())
    doc["agent_info"] = 3.5
    target.write_text(json.dumps(doc))
    [b] = harbor.load(job)
    assert len(b.rows["trials"]) == len(good.rows["trials"]) - 1
    assert any("field agent_info must be an object, not float" in q.reason for q in b.quarantine)


def test_an_inspect_sample_with_usage_of_the_wrong_shape_is_quarantined(tmp_path):
    from ingest.formats import inspect_ai

    src = fuzz.FIXTURES / "inspect" / "mixed.json"
    doc = json.loads(src.read_text())
    [good] = inspect_ai.load(src)
    sample = next(s for s in doc["samples"] if s.get("model_usage"))
    sample["model_usage"] = {"mockllm/model": "x"}
    (tmp_path / "log.json").write_text(json.dumps(doc))
    [b] = inspect_ai.load(tmp_path / "log.json")
    assert len(b.rows["trials"]) == len(good.rows["trials"]) - 1
    assert any("field model_usage.mockllm/model must be an object, not str" in q.reason for q in b.quarantine)


def test_a_number_column_refuses_an_integer_arrow_cannot_read():
    from ingest.rows import value_problem

    assert value_problem("float64", 2**63) is not None
    assert value_problem("float64", 2**63 - 1) is None
    assert value_problem("float64", 1.5e300) is None
