"""Write a Harbor job directory from the documented format (FORMATS.md §3).

Harbor needs Docker, which is unavailable here, so the job is written by hand with
invented values. Run: .venv/bin/python tests/ingest/formats/gen_harbor_fixtures.py
Writes tests/ingest/formats/fixtures/harbor/2026-01-10__12-00-00/ and a copy to
examples/foreign/harbor-job/.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).parent / "fixtures" / "harbor"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "foreign"
JOB = "2026-01-10__12-00-00"
T0 = datetime(2026, 1, 10, 12, 0, 5, tzinfo=UTC)

POLICY_VALID = {"should_retry": False, "should_grade": True, "has_valid_reward": True}
POLICY_NO_REWARD = {"should_retry": False, "should_grade": True, "has_valid_reward": False}
POLICY_INFRA = {"should_retry": True, "should_grade": False, "has_valid_reward": False}

# (task, start offset min, reward or None, reward file, exception type or None, policy, tokens (in, cache, out), cost)
TRIALS = [
    ("hello-world", 0, 1.0, "txt", None, None, (52000, 30000, 2100), 0.0912),
    ("hello-world", 30, 0.0, "txt", None, None, (61000, 41000, 2600), 0.1044),
    ("fix-git-history-after-bad-rebase", 5, 1.0, "txt", "AgentTimeoutError", POLICY_VALID, (240000, 180000, 9000), 0.4100),
    ("fix-git-history-after-bad-rebase", 40, 0.0, "txt", "AgentTimeoutError", POLICY_VALID, (250000, 190000, 9500), 0.4300),
    ("build-kernel", 10, None, None, "RewardFileNotFoundError", POLICY_NO_REWARD, (90000, None, 4000), None),
    ("build-kernel", 50, None, None, "EnvironmentStartTimeoutError", POLICY_INFRA, (None, None, None), None),
    ("parse-logs", 15, 0.5, "json", None, None, (70000, 50000, 3000), 0.0),
    ("parse-logs", 55, 1.0, "json", "NonZeroAgentExitCodeError", POLICY_VALID, (65000, 45000, 2800), 0.1200),
]


def _iso(dt: datetime) -> str:
    return dt.isoformat()


def _phase(start: datetime, seconds: float) -> tuple[dict, datetime]:
    end = start + timedelta(seconds=seconds)
    return {"started_at": _iso(start), "finished_at": _iso(end)}, end


def _atif(start: datetime) -> dict:
    """An ATIF v1.4 trajectory (harbor docs/rfcs/0001-trajectory-format.md) of the agent stage
    that starts at ``start``: look, a failing check, an edit, a passing check."""
    def at(s: float) -> str:
        return (start + timedelta(seconds=s)).isoformat().replace("+00:00", "Z")

    def call(cid: str, keys: str) -> dict:
        return {"tool_call_id": cid, "function_name": "bash_command", "arguments": {"keystrokes": keys, "duration": 1}}

    return {
        "schema_version": "ATIF-v1.4", "session_id": "5b0c5f7e-1d2a-4c3b-9e8f-000000000000",
        "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "acme/model-a"},
        "steps": [
            {"step_id": 1, "timestamp": at(0), "source": "user", "message": "Write hello.txt containing Hello, world!"},
            {"step_id": 2, "timestamp": at(6), "source": "agent", "model_name": "acme/model-a", "message": "Look first.",
             "tool_calls": [call("call_1", "ls /app\n"), call("call_2", "bash /app/check.sh\n")],
             "observation": {"results": [{"source_call_id": "call_1", "content": "check.sh\n"},
                                         {"source_call_id": "call_2", "content": "missing hello.txt\n"}]},
             "metrics": {"prompt_tokens": 2400, "completion_tokens": 80, "cached_tokens": 2000,
                         "extra": {"cache_creation_input_tokens": 300}}},
            {"step_id": 3, "timestamp": at(15), "source": "agent", "message": "Write it and check.",
             "tool_calls": [call("call_3", "echo 'Hello, world!' > /app/hello.txt\n"), call("call_4", "bash /app/check.sh\n")],
             "observation": {"results": [{"source_call_id": "call_3", "content": ""},
                                         {"source_call_id": "call_4", "content": "ok\n"}]},
             "metrics": {"prompt_tokens": 2700, "completion_tokens": 60, "cached_tokens": 2400}},
            {"step_id": 4, "timestamp": at(20), "source": "agent", "message": "Done.",
             "metrics": {"prompt_tokens": 2800, "completion_tokens": 10, "cached_tokens": 2700}},
        ],
        "final_metrics": {"total_prompt_tokens": 7900, "total_completion_tokens": 150, "total_cached_tokens": 7100,
                          "total_steps": 4},
    }


def write_job(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    agent = {"name": "terminus-2", "import_path": None, "model_name": "acme/model-a", "kwargs": {}}
    (root / "config.json").write_text(json.dumps({
        "job_name": JOB, "jobs_dir": "jobs", "n_attempts": 2, "timeout_multiplier": 1.0,
        "retry": {"max_retries": 1}, "agents": [agent],
        "datasets": [{"name": "terminal-bench", "version": "2.0"}], "tasks": [],
        "environment": {"type": "docker"}, "verifier": {}, "metrics": [],
    }, indent=2))
    lock_trials = []
    seen: dict[str, int] = {}
    for i, (task, off, reward, rfile, exc, policy, tokens, cost) in enumerate(TRIALS):
        seen[task] = seen.get(task, 0) + 1
        short = f"{i:02d}ab{seen[task]}cd"[:7]
        trial_name = f"{task[:32]}__{short}"
        tdir = root / trial_name
        (tdir / "agent").mkdir(parents=True)
        (tdir / "verifier").mkdir()
        start = T0 + timedelta(minutes=off)
        env, t = _phase(start, 40)
        agent_setup, t = _phase(t, 15)
        agent_exec, t = _phase(t, 900 if exc == "AgentTimeoutError" else 300 + 20 * i)
        verifier, t = (None, t) if exc == "EnvironmentStartTimeoutError" else _phase(t, 25)
        if exc == "EnvironmentStartTimeoutError":
            agent_setup = agent_exec = None
        n_in, n_cache, n_out = tokens
        rewards = None
        if reward is not None:
            if rfile == "txt":
                (tdir / "verifier" / "reward.txt").write_text(f"{reward}\n")
                rewards = {"reward": reward}
            else:
                rewards = {"reward": reward, "tests_passed": int(reward * 4), "tests_total": 4}
                (tdir / "verifier" / "reward.json").write_text(json.dumps(rewards))
        exception_info = None
        if exc:
            exception_info = {
                "exception_type": exc,
                "exception_message": f"{exc}: invented message for trial {i}",
                "exception_traceback": "Traceback (most recent call last):\n  ...",
                "occurred_at": _iso(t),
                "policy": policy,
            }
            (tdir / "exception.txt").write_text(exception_info["exception_traceback"])
        reward_valid = rewards is not None and (policy is None or policy["has_valid_reward"])
        result = {
            "id": f"00000000-0000-4000-8000-{i:012d}",
            "trial_name": trial_name,
            "task_name": task,
            "task_id": {"git_url": "https://example.invalid/tasks.git", "git_commit_id": "abc1234", "path": f"tasks/{task}"},
            "source": "terminal-bench",
            "task_checksum": f"sha256:{i:064x}",
            "config": {"agent": agent, "trial_name": trial_name},
            "agent_info": {"name": "terminus-2", "version": "2.0.0",
                           "model_info": {"name": "model-a", "provider": "acme"}},
            "agent_result": None if n_in is None and n_out is None else {
                "n_input_tokens": n_in, "n_cache_tokens": n_cache, "n_output_tokens": n_out,
                "cost_usd": cost, "model_usage": None, "rollout_details": None, "metadata": {},
            },
            "verifier_result": {"rewards": rewards} if rewards is not None else None,
            "exception_info": exception_info,
            "started_at": _iso(start),
            "finished_at": _iso(t),
            "environment_setup": env,
            "agent_setup": agent_setup,
            "agent_execution": agent_exec,
            "verifier": verifier,
            "step_results": None,
            "reward_valid": reward_valid,
        }
        (tdir / "result.json").write_text(json.dumps(result, indent=2))
        (tdir / "config.json").write_text(json.dumps(result["config"], indent=2))
        (tdir / "trial.log").write_text("invented log\n")
        if i == 0:  # one trial with its ATIF trajectory (agent/trajectory.json)
            exec_start = datetime.fromisoformat(agent_exec["started_at"])
            (tdir / "agent" / "trajectory.json").write_text(json.dumps(_atif(exec_start), indent=2))
        lock_trials.append({"task": {"name": task, "digest": result["task_checksum"]}, "agent": agent})
    # a trial still running: no result.json yet → not a trial
    (root / "still-running__zz99zz9" / "agent").mkdir(parents=True)
    (root / "still-running__zz99zz9" / "trial.log").write_text("started\n")
    (root / "lock.json").write_text(json.dumps({"harbor": {"version": "0.26.0", "is_editable": False},
                                                "trials": lock_trials}, indent=2))
    (root / "result.json").write_text(json.dumps({
        "id": "11111111-0000-4000-8000-000000000000",
        "started_at": _iso(T0), "finished_at": _iso(T0 + timedelta(hours=2)),
        "n_total_trials": len(TRIALS) + 1,
        "stats": {"n_completed_trials": 6, "n_errored_trials": 2, "n_cancelled_trials": 0, "n_retries": 1,
                  "n_input_tokens": 828000, "n_cache_tokens": 536000, "n_output_tokens": 33000,
                  "cost_usd": 1.2056,
                  "evals": {"terminus-2__model-a__terminal-bench": {"n_trials": 8, "n_errors": 2, "metrics": [],
                                                                   "pass_at_k": {}, "reward_stats": {}, "exception_stats": {}}}},
    }, indent=2))
    (root / "job.log").write_text("invented job log\n")


def main() -> None:
    write_job(HERE / JOB)
    write_job(EXAMPLES / "harbor-job")
    print(f"wrote {HERE / JOB} and {EXAMPLES / 'harbor-job'}")


if __name__ == "__main__":
    main()
