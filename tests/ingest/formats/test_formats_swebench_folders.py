"""A folder of SWE-bench experiments submissions (``evaluation/<split>/<submission>/``, the
layout of the public SWE-bench/experiments repository, FORMATS.md §6): every submission
loads, harness and model come from metadata.yaml or the folder name (one harness however
many submissions it has), and a folder mixing layouts is refused with a message."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from ingest.api import ingest_paths
from ingest.errors import IngestError
from ingest.formats import detect_format, load

from .conftest import check_tables, labels

IIDS = ["django__django-11099", "django__django-11133", "sympy__sympy-20590", "astropy__astropy-12907"]


def _report(iid: str, f2p_ok: bool, p2p_ok: bool) -> dict:
    return {iid: {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
                  "resolved": f2p_ok and p2p_ok,
                  "tests_status": {
                      "FAIL_TO_PASS": {"success": ["test_a"] if f2p_ok else [], "failure": [] if f2p_ok else ["test_a"]},
                      "PASS_TO_PASS": {"success": ["test_b"] if p2p_ok else [], "failure": [] if p2p_ok else ["test_b"]},
                      "FAIL_TO_FAIL": {"success": [], "failure": []},
                      "PASS_TO_FAIL": {"success": [], "failure": []}}}}


def submission(root: Path, split: str, folder: str, meta: dict, resolved: list[str],
               no_generation: list[str] = (), reports: dict | None = None) -> Path:
    d = root / "evaluation" / split / folder
    (d / "results").mkdir(parents=True)
    (d / "metadata.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
    (d / "README.md").write_text(f"# {folder}\n", encoding="utf-8")
    (d / "all_preds.jsonl").write_text("".join(
        json.dumps({"instance_id": i, "model_name_or_path": folder, "model_patch": "diff --git a/x b/x\n"}) + "\n"
        for i in IIDS), encoding="utf-8")
    (d / "results" / "results.json").write_text(json.dumps(
        {"resolved": resolved, "no_generation": list(no_generation), "no_logs": []}), encoding="utf-8")
    for iid, (f2p, p2p) in (reports or {}).items():
        (d / "logs" / iid).mkdir(parents=True)
        (d / "logs" / iid / "report.json").write_text(json.dumps(_report(iid, f2p, p2p)), encoding="utf-8")
        (d / "logs" / iid / "patch.diff").write_text("diff --git a/x b/x\n", encoding="utf-8")
    return d


def _meta(name: str, models: list[str] | None) -> dict:
    meta = {"info": {"name": name, "site": "https://example.invalid", "authors": "A. Person"},
            "assets": {"logs": "s3://example/logs", "trajs": "s3://example/trajs"},
            "tags": {"checked": "true", "org": ["Example"], "os_model": False, "os_system": True,
                     "system": {"attempts": "1"}}}
    if models:
        meta["tags"]["model"] = models
    return meta


@pytest.fixture
def experiments(tmp_path) -> Path:
    submission(tmp_path, "verified", "20250219_mini-SWE-agent_claude-3-7-sonnet",
               _meta("mini-SWE-agent + Claude 3.7 Sonnet (20250219)", ["claude-3-7-sonnet-20250219"]),
               resolved=IIDS[:2], reports={IIDS[2]: (True, False)})
    submission(tmp_path, "verified", "20250726_mini-v1.0.0_o3-2025-04-16",
               _meta("mini-SWE-agent + o3 (2025-04-16)", ["o3-2025-04-16"]), resolved=IIDS[:1])
    # an older folder: flat metadata keys, no model list
    old = submission(tmp_path, "verified", "20240620_sweagent_claude3.5sonnet", {}, resolved=IIDS[1:3],
                     no_generation=[IIDS[3]])
    (old / "metadata.yaml").write_text("name: SWE-agent + Claude 3.5 Sonnet\noss: true\nverified: false\n")
    submission(tmp_path, "verified", "20250101_lingxi", _meta("Lingxi", None), resolved=IIDS[:3])
    submission(tmp_path, "lite", "20240402_sweagent_gpt4", {"name": "SWE-agent + GPT-4", "oss": True},
               resolved=[IIDS[0]])
    return tmp_path / "evaluation"


def test_every_submission_of_a_split_folder_loads_with_one_harness_per_harness(experiments):
    split = experiments / "verified"
    assert detect_format(split) == "swebench"
    batches = load(split, "swebench")
    for b in batches:
        check_tables(b)
    configs = {b.rows["runs"][0]["source_path"].rsplit("/", 1)[1]: b.rows["configs"][0] for b in batches}
    assert sorted(configs) == ["20240620_sweagent_claude3.5sonnet", "20250101_lingxi",
                               "20250219_mini-SWE-agent_claude-3-7-sonnet", "20250726_mini-v1.0.0_o3-2025-04-16"]
    got = {k: (c["harness"], c["model"]) for k, c in configs.items()}
    assert got == {
        "20250219_mini-SWE-agent_claude-3-7-sonnet": ("mini-SWE-agent", "claude-3-7-sonnet-20250219"),
        "20250726_mini-v1.0.0_o3-2025-04-16": ("mini-SWE-agent", "o3-2025-04-16"),
        "20240620_sweagent_claude3.5sonnet": ("SWE-agent", "Claude 3.5 Sonnet"),  # from the display name
        "20250101_lingxi": ("Lingxi", None),
    }
    assert configs["20250726_mini-v1.0.0_o3-2025-04-16"]["harness_version"] == "1.0.0"
    notes = [n for b in batches for n in b.notes]
    assert any("20250101_lingxi" in n and "no model" in n for n in notes), notes
    assert {c["benchmark"] for b in batches for c in b.rows["cases"]} == {"swe-bench-verified"}


def test_per_instance_logs_give_the_test_layers(experiments):
    [b] = load(experiments / "verified" / "20250219_mini-SWE-agent_claude-3-7-sonnet", "swebench")
    t = {r["case_id"]: r for r in b.rows["trials"]}
    assert Counter(r["outcome"] for r in t.values()) == {"accepted": 2, "regression": 1, "target_failed": 1}
    assert labels(t[IIDS[2]])["pass_to_pass_failed"] == 1  # the patch fixed the target, broke a passing test


def test_an_evaluation_folder_loads_every_split_into_one_warehouse(experiments, tmp_path):
    assert detect_format(experiments) == "swebench"
    wh = tmp_path / "wh" / "w.duckdb"
    result = ingest_paths([experiments], wh)
    assert len(result.batches) == 5 and result.rows["trials"] == 20
    import warehouse

    with warehouse.open(wh, read_only=True) as con:
        harnesses = con.execute("SELECT harness, count(DISTINCT run_id) FROM trials GROUP BY 1 ORDER BY 1").fetchall()
        benchmarks = con.execute("SELECT DISTINCT benchmark FROM cases ORDER BY 1").fetchall()
    assert harnesses == [("Lingxi", 1), ("SWE-agent", 2), ("mini-SWE-agent", 2)]
    assert benchmarks == [("swe-bench-lite",), ("swe-bench-verified",)]


def test_a_folder_mixing_layouts_is_refused(experiments):
    logs = experiments / "verified" / "eval-logs" / "run_evaluation" / "r1" / "agent" / IIDS[0]
    logs.mkdir(parents=True)
    (logs / "report.json").write_text(json.dumps(_report(IIDS[0], True, True)))
    with pytest.raises(IngestError, match=r"mixes SWE-bench layouts: .*eval-logs holds harness logs"):
        load(experiments / "verified", "swebench")


def test_half_a_submission_is_refused(experiments):
    half = experiments / "verified" / "20250301_half"
    half.mkdir()
    (half / "metadata.yaml").write_text("info: {name: Half}\n")
    with pytest.raises(IngestError, match=r"20250301_half: half a submission"):
        load(experiments / "verified", "swebench")
