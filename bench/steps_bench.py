"""Steps ingest throughput: ``step`` and ``model_call`` events → the ``steps``/``model_calls`` tables.

Not a test. Writes two hash-chained ``events.jsonl`` files of the same ``--trials`` trials
(one build stage each; the usual ten events per trial with the harness and gateway fields
filled in): the *baseline* without trajectories, and the *steps* file where every trial
also has ``--steps`` ``step`` events and ``--calls`` ``model_call`` events. Each file is
ingested (``ingest.api.ingest_paths``) into a new warehouse in a fresh child process
(wall, CPU of the process tree and peak RSS from ``os.wait4``), the two alternating
``--repeat`` times. Printed per pair: steps/s over the whole ingest of the steps file, and
the marginal rate, steps / (steps-file time − baseline time): what the trajectory rows
cost on top of the trials they belong to. Target (issue 17): ≥ 100k steps/s.

    .venv/bin/python bench/steps_bench.py                              # 1000 trials × 400 steps + 40 calls
    .venv/bin/python bench/steps_bench.py --trials 2000 --steps 500 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 12, 1, tzinfo=UTC)


def generate(path: Path, trials: int, steps: int, calls: int) -> tuple[int, int]:
    """Write the run; returns (lines, step events)."""
    sys.path.insert(0, str(REPO))
    from contract.call_events import ModelCall, TrajectoryStep
    from contract.chain import chain_digest, chain_genesis
    from contract.events import dump_event
    from contract.run_events import CaseInfo, RunFinished, RunStarted, VariantInfo
    from contract.stage_events import (
        GatewayUsage,
        PermissionDenial,
        StageFinished,
        StageStarted,
        Usage,
    )
    from contract.trial_events import (
        AttemptFinished,
        AttemptStarted,
        Checkpoint,
        Grading,
        TrialFinished,
        TrialStarted,
    )

    run_id = "bench-steps"
    prev = chain_genesis(run_id)
    seq = 0
    lines = n_steps = 0
    out = path.open("wb", buffering=1 << 20)

    def emit(cls, trial_id=None, **fields):
        nonlocal prev, seq, lines
        e = cls(run_id=run_id, trial_id=trial_id, seq=seq, ts=T0 + timedelta(milliseconds=seq), prev=prev, **fields)
        line = dump_event(e).encode()
        out.write(line + b"\n")
        prev, seq, lines = chain_digest(line), seq + 1, lines + 1

    emit(RunStarted, manifest_id="bench", manifest_path="m.json", manifest_sha256="a" * 64, engine_version="0",
         os="linux", python="3.11", git_version="2.43", repository="/repo", initial_commit="b" * 40,
         initial_tree="c" * 40, repetitions=1, max_attempts=1, timeout_seconds=600, stages=["build"],
         variants=[VariantInfo(variant=v, config_id=f"cfg-{v}", model="m", harness="claude-code",
                                  harness_version="2.1.332", agent_kind="claude-code") for v in ("a", "b")],
         cases=[CaseInfo(case_id="c1", initial_commit="b" * 40)])
    usage = Usage(input_tokens=30000, output_tokens=4000, cache_read_tokens=90000, cache_write_tokens=0,
                     steps=steps // 2, time_to_first_edit_s=12.5, source="claude-stream-json")
    gw = GatewayUsage(calls=calls, failed_calls=1, retries=1, input_tokens=30000, output_tokens=4000,
                         cache_read_tokens=90000, cache_write_tokens=0, model_s=80.5)
    t_unix = T0.timestamp()
    for i in range(trials):
        tid, var = f"c1__{'ab'[i % 2]}__r{i}", "ab"[i % 2]
        emit(TrialStarted, tid, case_id="c1", variant=var, config_id=f"cfg-{var}", repetition=1, seed=i,
             workspace="/w", order=i)
        emit(AttemptStarted, tid, attempt=1)
        emit(StageStarted, tid, attempt=1, stage="build", time_left_s=600, prompt_sha256="d" * 64)
        for k in range(calls):
            emit(ModelCall, tid, stage="build", attempt=1, call_index=k, mode="record", provider="anthropic",
                 api="messages", model="claude-sonnet-4-5", response_model="claude-sonnet-4-5",
                 request_id=f"req_{i}_{k}", response_id=f"msg_{i}_{k}", status=200, streamed=True, position=k,
                 stop_reason="tool_use", tool_calls=["Bash"], input_tokens=750, output_tokens=100,
                 cache_read_tokens=2250, cache_write_tokens=0,
                 provider_usage={"input_tokens": 750, "output_tokens": 100, "cache_read_input_tokens": 2250},
                 latency_s=2.0125, ttft_s=0.75, request_sha256="e" * 64, started_at_unix=t_unix + k * 3)
        for k in range(steps):
            t = t_unix + k * 0.5
            if k % 2 == 0:
                emit(TrajectoryStep, tid, attempt=1, stage="build", index=k, kind="model",
                     source="claude-stream-json", ok=True, started_at_unix=t, ended_at_unix=t + 0.25,
                     input_tokens=750, output_tokens=100, cache_read_tokens=2250, cache_write_tokens=0,
                     call_id=f"msg_{i}_{k}", tokens_from="gateway")
            else:
                emit(TrajectoryStep, tid, attempt=1, stage="build", index=k, kind="tool",
                     source="claude-stream-json", tool="Bash", action="run",
                     paths=["src/module.py"] if k % 4 == 1 else [], command="python -m pytest -q tests/test_x.py",
                     exit_code=k % 3, ok=k % 3 == 0, started_at_unix=t + 0.25, ended_at_unix=t + 0.5,
                     call_id=f"toolu_{i}_{k}")
        n_steps += steps
        emit(StageFinished, tid, attempt=1, stage="build", exit_code=0, duration_s=300.0, usage=usage,
             harness_version="2.1.332", session_id=f"sess-{i}", tokens_from="result",
             permission_denials=[PermissionDenial(tool_name="Bash", tool_use_id="toolu_x")],
             gateway_usage=gw if calls else None, trajectory_steps=steps or None)
        emit(Checkpoint, tid, attempt=1, stage="build", sha="f" * 40, files_changed=2, tree="f" * 40)
        emit(Grading, tid, attempt=1, criterion_id="t1", layer="target", exit_code=0, verdict="passed",
             duration_s=1.5)
        emit(AttemptFinished, tid, attempt=1, outcome="accepted")
        emit(TrialFinished, tid, case_id="c1", variant=var, config_id=f"cfg-{var}", repetition=1,
             outcome="accepted", attempts=1, duration_s=320.0, usage=usage, gateway_usage=gw if calls else None,
             patch_paths=["src/module.py"])
    emit(RunFinished, status="completed", trials_total=trials, trials_finished=trials, duration_s=1.0)
    out.close()
    return lines, n_steps


def child(events: Path, warehouse: Path) -> tuple[float, float, int]:
    """Ingest in a fresh process: (wall s, CPU s, peak RSS bytes)."""
    code = ("from pathlib import Path; from ingest.api import ingest_paths; "
            f"ingest_paths([Path({str(events)!r})], Path({str(warehouse)!r}))")
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ingest of {events} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=400, help="step events per trial")
    parser.add_argument("--calls", type=int, default=40, help="model_call events per trial")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/trialhouse-steps-bench"))
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    base, full = args.workdir / "baseline" / "events.jsonl", args.workdir / "steps" / "events.jsonl"
    for p in (base, full):
        p.parent.mkdir(parents=True)
    base_lines, _ = generate(base, args.trials, 0, 0)
    lines, n_steps = generate(full, args.trials, args.steps, args.calls)
    n_calls = args.trials * args.calls
    print(f"baseline: {base_lines:,} events ({base.stat().st_size / 2**20:.0f} MB); steps file: {lines:,} events "
          f"({full.stat().st_size / 2**20:.0f} MB) = {n_steps:,} steps + {n_calls:,} model calls; "
          f"load {os.getloadavg()[0]:.1f}")
    print("| run | baseline wall s (CPU s) | steps file wall s (CPU s) | peak RSS MB | steps/s (whole ingest) "
          "| marginal steps/s | load |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in range(args.repeat):
        wb, cb, _ = child(base, args.workdir / f"wb{r}" / "t.duckdb")
        wf, cf, rss = child(full, args.workdir / f"wf{r}" / "t.duckdb")
        marginal = n_steps / (wf - wb) if wf > wb else float("inf")
        print(f"| {r + 1} | {wb:.2f} ({cb:.2f}) | {wf:.2f} ({cf:.2f}) | {rss / 2**20:.0f} | {n_steps / wf:,.0f} | "
              f"{marginal:,.0f} | {os.getloadavg()[0]:.1f} |")
    sys.path.insert(0, str(REPO))
    from warehouse import db

    con = db.open(args.workdir / "wf0" / "t.duckdb", read_only=True)
    got = con.execute("SELECT (SELECT count(*) FROM steps), (SELECT count(*) FROM model_calls)").fetchone()
    con.close()
    print(f"rows in the warehouse (steps, model_calls): {got}; expected ({n_steps}, {n_calls})")
    print(json.dumps({"trials": args.trials, "steps": n_steps, "calls": n_calls}))


if __name__ == "__main__":
    main()
