from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from ingest.errors import IngestError
from ingest.formats import detect_format, load
from ingest.formats.swebench import repository_of

from .conftest import EXAMPLES, FIXTURES, check_tables, labels

TB = FIXTURES / "terminal_bench" / "2025-06-01__10-00-00"
SWE = FIXTURES / "swebench"


def test_terminal_bench_run():
    assert detect_format(TB) == "terminal-bench"
    [b] = load(TB, "terminal-bench")
    check_tables(b)
    t = {(r["case_id"], r["repetition"]): r for r in b.rows["trials"]}
    assert {k: r["outcome"] for k, r in t.items()} == {
        ("hello-world", 1): "accepted",
        ("hello-world", 2): "target_failed",
        ("fix-permissions", 1): "accepted",  # resolved despite agent_timeout
        ("fix-permissions", 2): "budget_exhausted",
        ("csv-report", 1): "infra_error",  # test_timeout: grader inconclusive
        ("csv-report", 2): "target_failed",  # context_length_exceeded is the agent's
        ("install-deps", 1): "infra_error",
        ("install-deps", 2): "infra_error",  # null with unknown
    }
    assert labels(t[("fix-permissions", 1)])["limit_hit"] == "time"
    # 0/0 tokens = not reported → null
    assert t[("csv-report", 1)]["input_tokens"] is None and t[("csv-report", 1)]["output_tokens"] is None
    assert t[("hello-world", 1)]["input_tokens"] == 12000
    assert t[("hello-world", 1)]["agent_s"] == 300.0 and t[("hello-world", 1)]["verification_s"] == 50.0
    assert all(r["cost_usd"] is None for r in t.values())
    [cfg] = b.rows["configs"]
    assert (cfg["model"], cfg["harness"], cfg["harness_version"]) == ("acme/model-b", "terminus", "1.4.0")
    assert b.rows["runs"][0]["engine_version"] == "0.2.18"


def test_terminal_bench_trial_files_without_run_results(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(TB, run)
    (run / "results.json").unlink()
    [b] = load(run, "terminal-bench")
    assert len(b.rows["trials"]) == 8
    one = next(run.glob("hello-world/*/results.json"))
    assert detect_format(one) == "terminal-bench"
    [single] = load(one, "terminal-bench")
    assert len(single.rows["trials"]) == 1 and single.rows["configs"][0]["model"] == "acme/model-b"


def test_swebench_harness_reports_give_regression():
    assert detect_format(SWE / "harness") == "swebench"
    [b] = load(SWE / "harness", "swebench")
    check_tables(b)
    t = {r["case_id"]: r for r in b.rows["trials"]}
    assert {k: r["outcome"] for k, r in t.items()} == {
        "acme__widgets-101": "accepted",
        "acme__widgets-102": "regression",
        "octo__parser-7": "target_failed",
        "octo__parser-8": "target_failed",
        "octo__parser-9": "target_failed",
        "acme__widgets-103": "infra_error",  # error_ids in the run report: no report.json
    }
    assert labels(t["octo__parser-8"])["patch_apply_failed"] is True
    assert labels(t["octo__parser-9"])["empty_patch"] is True
    repos = {c["case_id"]: c["repository"] for c in b.rows["cases"]}
    assert repos["octo__parser-7"] == "octo/parser"
    assert all(r.get("input_tokens") is None and r.get("cost_usd") is None and r["repetition"] == 1 for r in t.values())
    assert b.rows["configs"][0]["harness"] == "acme/agent-x"
    assert any("incomplete_ids" in n for n in b.notes)


def test_swebench_run_report_alone_cannot_see_regression():
    f = SWE / "harness" / "acme__agent-x.eval-1.json"
    assert detect_format(f) == "swebench"
    [b] = load(f, "swebench")
    out = Counter(r["outcome"] for r in b.rows["trials"])
    assert out == {"accepted": 1, "target_failed": 4, "infra_error": 1}


def test_swebench_submission_folder():
    folder = SWE / "20250901_agentx_model-a"
    assert detect_format(folder) == "swebench"
    [b] = load(folder, "swebench")
    check_tables(b)
    out = Counter(r["outcome"] for r in b.rows["trials"])
    # 20 predicted: 9 resolved, 2 no_generation, 1 no_logs, 8 unresolved
    assert out == {"accepted": 9, "target_failed": 10, "infra_error": 1}
    [cfg] = b.rows["configs"]
    assert (cfg["model"], cfg["harness"], cfg["harness_version"]) == ("model-a", "AgentX", folder.name)
    r0 = b.rows["trials"][0]
    assert labels(r0)["best_of_n"] == "2"  # system attempts are a label, not repetitions
    assert {r["repetition"] for r in b.rows["trials"]} == {1}


def test_swebench_submission_with_per_instance_cost(tmp_path):
    folder = tmp_path / "bash-only" / "20250901_x"
    shutil.copytree(SWE / "20250901_agentx_model-a", folder)
    (folder / "per_instance_details.json").write_text(json.dumps({
        "acme__widgets-200": {"resolved": True, "cost": 0.42, "api_calls": 17},
        "acme__widgets-201": {"resolved": True, "cost": 0, "api_calls": 12},
    }))
    [b] = load(folder, "swebench")
    t = {r["case_id"]: r for r in b.rows["trials"]}
    assert t["acme__widgets-200"]["cost_usd"] == 0.42 and t["acme__widgets-200"]["cost_source"] == "reported"
    assert t["acme__widgets-200"]["steps"] == 17
    assert t["acme__widgets-201"]["cost_usd"] is None  # 0 with API calls = unpriced
    assert b.rows["cases"][0]["benchmark"] == "swe-bench-bash-only"


@pytest.mark.parametrize(
    ("iid", "repo"),
    [("django__django-11099", "django/django"), ("scikit-learn__scikit-learn-25570", "scikit-learn/scikit-learn"),
     ("pydata__xarray-4094", "pydata/xarray"), ("weird", None)],
)
def test_repository_from_instance_id(iid, repo):
    assert repository_of(iid) == repo


def test_not_swebench(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    with pytest.raises(IngestError, match="not a SWE-bench"):
        load(p, "swebench")


def test_example_submission():
    [b] = load(EXAMPLES / "swebench-submission", "swebench")
    assert len(b.rows["trials"]) == 20
