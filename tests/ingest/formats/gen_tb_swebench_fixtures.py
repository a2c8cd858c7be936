"""Write Terminal-Bench legacy and SWE-bench fixtures from the documented formats.

Neither tool runs offline here (both need Docker), so the files are written by hand
with invented values (FORMATS.md §4–6). Run:
.venv/bin/python tests/ingest/formats/gen_tb_swebench_fixtures.py
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "foreign"
RUN = "2025-06-01__10-00-00"
T0 = datetime(2025, 6, 1, 10, 0, tzinfo=UTC)

# task, k, is_resolved, failure_mode, tokens in/out
TB_TRIALS = [
    ("hello-world", 1, True, "none", 12000, 800),
    ("hello-world", 2, False, "none", 15000, 900),
    ("fix-permissions", 1, True, "agent_timeout", 90000, 4000),
    ("fix-permissions", 2, False, "agent_timeout", 95000, 4100),
    ("csv-report", 1, None, "test_timeout", 0, 0),
    ("csv-report", 2, False, "context_length_exceeded", 200000, 1000),
    ("install-deps", 1, None, "agent_installation_failed", None, None),
    ("install-deps", 2, None, "unknown", None, None),
]


def write_tb(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    results = []
    for i, (task, k, resolved, mode, tin, tout) in enumerate(TB_TRIALS):
        name = f"{task}.{k}-of-2.{RUN}"
        start = T0 + timedelta(minutes=10 * i)
        r = {
            "id": f"22222222-0000-4000-8000-{i:012d}", "trial_name": name, "task_id": task,
            "instruction": f"Invented instruction for {task}", "is_resolved": resolved, "failure_mode": mode,
            "parser_results": None if resolved is None else {"test_outputs": "passed" if resolved else "failed"},
            "recording_path": f"{task}/{name}/sessions/agent.cast",
            "total_input_tokens": tin, "total_output_tokens": tout,
            "trial_started_at": start.isoformat(), "trial_ended_at": (start + timedelta(seconds=400)).isoformat(),
            "agent_started_at": (start + timedelta(seconds=30)).isoformat(),
            "agent_ended_at": (start + timedelta(seconds=330)).isoformat(),
            "test_started_at": (start + timedelta(seconds=340)).isoformat(),
            "test_ended_at": (start + timedelta(seconds=390)).isoformat(),
        }
        results.append(r)
        d = root / task / name
        d.mkdir(parents=True)
        (d / "results.json").write_text(json.dumps(r, indent=2))
        (d / "commands.txt").write_text("ls\n")
    resolved = [r["task_id"] for r in results if r["is_resolved"]]
    (root / "results.json").write_text(json.dumps({
        "id": "33333333-0000-4000-8000-000000000000", "results": results,
        "n_resolved": len(resolved), "n_unresolved": len(results) - len(resolved),
        "resolved_ids": resolved, "unresolved_ids": [r["task_id"] for r in results if not r["is_resolved"]],
        "accuracy": len(resolved) / len(results), "pass_at_k": {},
    }, indent=2))
    (root / "run_metadata.json").write_text(json.dumps({
        "run_id": RUN, "uuid": "44444444-0000-4000-8000-000000000000", "agent_name": "terminus",
        "model_name": "acme/model-b", "agent_kwargs": {"version": "1.4.0"}, "dataset_name": "terminal-bench-core",
        "dataset_version": "0.1.1", "n_attempts": 2, "task_ids": sorted({t[0] for t in TB_TRIALS}),
        "start_time": T0.isoformat(), "end_time": (T0 + timedelta(hours=2)).isoformat(), "commit_hash": "deadbee",
    }, indent=2))
    (root / "tb.lock").write_text(json.dumps({
        "harness": {"package": "terminal-bench", "version": "0.2.18"},
        "agent": {"name": "terminus", "import_path": None, "model_name": "acme/model-b", "extra_kwargs": {}},
        "run_config": {"n_attempts": 2, "global_agent_timeout_sec": 360}, "dataset": {"name": "terminal-bench-core"},
    }, indent=2))
    (root / "run.log").write_text("invented\n")


def _tests(f2p_ok, f2p_fail, p2p_ok, p2p_fail):
    return {"FAIL_TO_PASS": {"success": f2p_ok, "failure": f2p_fail},
            "PASS_TO_PASS": {"success": p2p_ok, "failure": p2p_fail},
            "FAIL_TO_FAIL": {"success": [], "failure": []}, "PASS_TO_FAIL": {"success": [], "failure": []}}


SWE = {
    "acme__widgets-101": dict(patch_is_None=False, patch_exists=True, patch_successfully_applied=True, resolved=True,
                              tests_status=_tests(["t_a"], [], ["t_b", "t_c"], [])),
    "acme__widgets-102": dict(patch_is_None=False, patch_exists=True, patch_successfully_applied=True, resolved=False,
                              tests_status=_tests(["t_a"], [], ["t_b"], ["t_c"])),  # regression
    "octo__parser-7": dict(patch_is_None=False, patch_exists=True, patch_successfully_applied=True, resolved=False,
                           tests_status=_tests([], ["t_x"], ["t_y"], [])),
    "octo__parser-8": dict(patch_is_None=False, patch_exists=True, patch_successfully_applied=False, resolved=False,
                           tests_status=_tests([], [], [], [])),
    "octo__parser-9": dict(patch_is_None=True, patch_exists=False, patch_successfully_applied=False, resolved=False,
                           tests_status=_tests([], [], [], [])),
}


def write_swebench_logs(root: Path) -> None:
    """Harness output: logs/run_evaluation/<run_id>/<model>/<iid>/report.json + run report."""
    if root.exists():
        shutil.rmtree(root)
    base = root / "logs" / "run_evaluation" / "eval-1" / "acme__agent-x"
    for iid, rep in SWE.items():
        d = base / iid
        d.mkdir(parents=True)
        (d / "report.json").write_text(json.dumps({iid: rep}, indent=2))
        (d / "patch.diff").write_text("" if rep["patch_is_None"] else "diff --git a/x b/x\n")
    (root / "logs" / "run_evaluation" / "eval-1" / "run.json").write_text(
        json.dumps({"dataset": "princeton-nlp/SWE-bench_Lite", "split": "test", "created_at": "2025-09-01T08:00:00Z"}))
    ids = sorted(SWE) + ["acme__widgets-103"]
    (root / "acme__agent-x.eval-1.json").write_text(json.dumps({
        "total_instances": 300, "submitted_instances": 6, "completed_instances": 5, "resolved_instances": 1,
        "unresolved_instances": 4, "empty_patch_instances": 1, "error_instances": 1,
        "submitted_ids": ids, "completed_ids": sorted(SWE), "incomplete_ids": ["acme__widgets-104"],
        "resolved_ids": ["acme__widgets-101"],
        "unresolved_ids": ["acme__widgets-102", "octo__parser-7", "octo__parser-8"],
        "empty_patch_ids": ["octo__parser-9"], "error_ids": ["acme__widgets-103"],
        "infra_failure_ids": [], "ambiguous_failure_ids": [], "failure_reasons": {}, "schema_version": 2,
    }, indent=2))


def write_submission(root: Path) -> None:
    """SWE-bench/experiments folder: metadata.yaml + results/results.json + a split instance list."""
    if root.exists():
        shutil.rmtree(root)
    (root / "results").mkdir(parents=True)
    (root / "metadata.yaml").write_text(
        "info:\n  name: AgentX + Model-A\n  site: https://example.invalid\n"
        "tags:\n  checked: 'true'\n  model:\n    - model-a\n  org:\n    - Acme\n"
        "  os_model: false\n  os_system: true\n  system:\n    attempts: '2'\n")
    instances = [f"acme__widgets-{n}" for n in range(200, 212)] + [f"octo__parser-{n}" for n in range(30, 38)]
    (root / "results" / "results.json").write_text(json.dumps({
        "resolved": instances[:9], "no_generation": instances[9:11], "no_logs": instances[11:12]}, indent=2))
    with open(root / "all_preds.jsonl", "w") as f:
        for iid in instances:
            patch = "" if iid in instances[9:11] else "diff --git a/x b/x\n"
            f.write(json.dumps({"instance_id": iid, "model_name_or_path": "agentx", "model_patch": patch}) + "\n")
    (root / "README.md").write_text("Invented submission for tests.\n")


def main() -> None:
    write_tb(HERE / "terminal_bench" / RUN)
    write_swebench_logs(HERE / "swebench" / "harness")
    write_submission(HERE / "swebench" / "20250901_agentx_model-a")
    write_submission(EXAMPLES / "swebench-submission")
    print("wrote terminal-bench and swebench fixtures")


if __name__ == "__main__":
    main()
