from __future__ import annotations

import json
import shutil

import pytest

from ingest.formats import FORMATS, detect_format

from .conftest import EXAMPLES, FIXTURES


@pytest.mark.parametrize(
    ("rel", "fmt"),
    [
        ("inspect/mixed.eval", "inspect"),
        ("inspect/mixed.json", "inspect"),
        ("inspect", "inspect"),
        ("harbor/2026-01-10__12-00-00", "harbor"),
        ("harbor/2026-01-10__12-00-00/result.json", "harbor"),
        ("harbor/2026-01-10__12-00-00/hello-world__00ab1cd/result.json", "harbor"),
        ("terminal_bench/2025-06-01__10-00-00", "terminal-bench"),
        ("terminal_bench/2025-06-01__10-00-00/results.json", "terminal-bench"),
        ("swebench/harness", "swebench"),
        ("swebench/harness/acme__agent-x.eval-1.json", "swebench"),
        ("swebench/harness/logs/run_evaluation/eval-1/acme__agent-x/octo__parser-7/report.json", "swebench"),
        ("swebench/20250901_agentx_model-a", "swebench"),
        ("swebench/20250901_agentx_model-a/results/results.json", "swebench"),
    ],
)
def test_fixtures_detected(rel, fmt):
    assert detect_format(FIXTURES / rel) == fmt
    assert fmt in FORMATS


def test_examples_detected():
    assert detect_format(EXAMPLES / "runs.jsonl") == "runs-jsonl"
    assert detect_format(EXAMPLES / "inspect-arith.eval") == "inspect"
    assert detect_format(EXAMPLES / "harbor-job") == "harbor"
    assert detect_format(EXAMPLES / "swebench-submission") == "swebench"
    assert detect_format(EXAMPLES / "prices.json") is None


def test_content_not_names(tmp_path):
    # a Harbor trial result renamed to results.json is still Harbor; a TB trial named result.json is still TB
    h = tmp_path / "results.json"
    shutil.copy(FIXTURES / "harbor/2026-01-10__12-00-00/hello-world__00ab1cd/result.json", h)
    assert detect_format(h) == "harbor"
    t = tmp_path / "result.json"
    shutil.copy(next((FIXTURES / "terminal_bench").glob("*/hello-world/*/results.json")), t)
    assert detect_format(t) == "terminal-bench"
    # an Inspect .eval renamed to .zip is still Inspect
    z = tmp_path / "log.zip"
    shutil.copy(FIXTURES / "inspect/mixed.eval", z)
    assert detect_format(z) == "inspect"


def test_our_own_runs_and_unknown_inputs_are_none(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text('{"event": "run_started"}\n')
    assert detect_format(run) is None
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 10)
    assert detect_format(junk) is None
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"hello": 1}) + "\n")
    assert detect_format(other) is None
    assert detect_format(tmp_path / "missing") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert detect_format(empty) is None


def test_runs_jsonl_beats_other_jsonl(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text(json.dumps({"model": "m", "harness": "h", "task_id": "t", "trial": 1, "status": "solved"}) + "\n" * 2)
    assert detect_format(p) == "runs-jsonl"
