"""Ray sections of ``bench/runner_bench.py`` (issue 33): every kind of trial on Ray.

* ray_gateway — Claude Code (the pinned CLI) on the scripted model through the gateway:
  the same trial under the local executor and on a local Ray instance (its trial host's
  own gateway); outcome, the harness's and the gateway's tokens and the model calls must
  be identical; the wall time of each;
* ray_disk — the disk a Ray node holds for a large repository: the node's one copy of the
  run (store and workspace seed, shared by its trial hosts) and the trials' workspaces, the
  peak sampled every 0.5 s while trials wait; at 500 MiB with 4 concurrent trials and at
  16 MiB with 32 (32 × 500 MiB workspaces alone would need ≈ 32 GB: this machine has
  less free), so both terms are measured and the 500 MiB × 32 figure is their sum.

Both run inside one Ray instance started by ``runner_bench.ray_section`` when the sections
run together (``--only ray --only ray_gateway --only ray_disk``), else their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.runner_common import git, start_local_ray
from contract.call_events import ModelCall
from contract.trial_events import TrialFinished
from runner.controls import run_controls
from runner.eventlog import read_events
from runner.run import run_trials

PY = sys.executable
TOOLS = Path(__file__).resolve().parent.parent / "tools" / "bin"


def started_ray(jobs: int) -> tuple[object, bool]:
    """(ray, whether this call started it): a local 2-CPU instance unless one is up."""
    import ray

    if ray.is_initialized():
        return ray, False
    start_local_ray(ray, jobs)
    return ray, True


def _observed(run_dir: Path) -> tuple[list[tuple], list[tuple]]:
    events = read_events(run_dir / "events.jsonl")
    fins = [(e.trial_id, e.outcome, e.usage.input_tokens, e.usage.output_tokens,
             e.gateway_usage.model_dump(exclude={"model_s"}) if e.gateway_usage else None)
            for e in events if isinstance(e, TrialFinished)]
    calls = [(e.trial_id, e.call_index, e.input_tokens, e.output_tokens, tuple(e.tool_calls or ()))
             for e in events if isinstance(e, ModelCall)]
    return fins, calls


def ray_gateway(work: Path, quick: bool) -> list[str]:
    from runner.agents.rehearse import scenario_script
    from tests.runner.agents.conftest import harness_corpus

    variant = {"id": "claude", "model": "th-scripted-1",
               "agent": {"kind": "claude-code", "binary": str(TOOLS / "claude"), "allowed_tools": ["Bash"]}}
    manifest = harness_corpus(work / "g", [variant], {"mode": "scripted", "script": "scripts/s.json"},
                              {"s": scenario_script("claude-code", "success")},
                              id="bench-ray-gateway", timeout_seconds=180, resources={"num_cpus": 0.5})
    assert run_controls(manifest, work / "g-ctl", progress=False).ok
    ray, mine = started_ray(4)
    try:
        times = {}
        for name, kw in (("local", {}), ("ray", {"executor": "ray"})):
            t0 = time.perf_counter()
            run_trials(manifest, work / name, progress=False, controls_dir=work / "g-ctl", **kw)
            times[name] = time.perf_counter() - t0
    finally:
        if mine:
            ray.shutdown()  # type: ignore[attr-defined]
    (fa, ca), (fb, cb) = _observed(work / "local"), _observed(work / "ray")
    same = fa == fb and ca == cb
    _tid, outcome, tin, tout, gw = fa[0]
    return [f"Claude Code (pinned CLI) on the scripted model through the gateway, one trial: local "
            f"{times['local']:.1f} s, Ray {times['ray']:.1f} s (a trial host starts and its gateway with it)",
            f"outcome {outcome}, harness tokens in/out {tin}/{tout}, gateway {gw['input_tokens']}/"
            f"{gw['output_tokens']} over {gw['calls']} calls; {len(ca)} model_call events",
            f"local vs Ray: outcome, tokens and model calls {'identical' if same else 'DIFFER: ' + repr((fa, fb))}"]


# ---------------------------------------------------------------- disk per node


def _du(path: Path, *options: str) -> int:
    proc = subprocess.run(["du", "-s", "--block-size=1", *options, str(path)], capture_output=True, text=True)
    return int(proc.stdout.split()[0]) if proc.returncode == 0 and proc.stdout else 0


def _big_sleepy(root: Path, mib: int, trials: int, seconds: float) -> Path:
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    with (repo / "blob.bin").open("wb") as fh:
        for _ in range(mib):
            fh.write(os.urandom(1 << 20))
    git(repo, "-c", "core.compression=0", "add", "-A")
    git(repo, "-c", "core.compression=0", "commit", "-qm", "big")
    sha = git(repo, "rev-parse", "HEAD")
    (repo / "done.txt").write_text("done\n")
    git(repo, "add", "-N", "done.txt")
    (root / "done.patch").write_text(git(repo, "diff") + "\n")
    (repo / "done.txt").unlink()
    check = [PY, "-c", "import os, sys; sys.exit(0 if os.path.exists(os.path.join("
             "os.environ['TRIALHOUSE_WORKSPACE'], 'done.txt')) else 1)"]
    manifest = {"schema_version": 1, "id": "bench-disk", "repository": "repo", "initial_commit": sha,
                "repetitions": trials // min(8, trials), "control_repeats": 1, "stages": ["build"], "timeout_seconds": 300,
                "resources": {"num_cpus": 2 / 32},
                "cases": [{"id": "done", "prompt": "create done.txt", "reference_patch": "done.patch",
                           "criteria": [{"id": "has_done", "layer": "target", "command": check}]}],
                "variants": [{"id": f"sleep{i}", "agent": {"kind": "command", "argv": [
                    PY, "-c", f"import time; time.sleep({seconds})"]}} for i in range(min(8, trials))]}
    path = root / "manifest.json"
    path.write_text(json.dumps(manifest))
    return path


def _disk_run(work: Path, mib: int, trials: int) -> dict[str, float]:
    """Peak bytes on the node (the run's copy: store, seed, inputs, the hosts' private
    directories; the trials: their directories and what they discarded, not yet removed)
    while ``trials`` trials of a ``mib`` MiB repository wait at once."""
    import tempfile

    manifest = _big_sleepy(work / f"d{mib}", mib, trials, seconds=8.0)
    tmp = Path(tempfile.gettempdir())
    peak = {"copy": 0, "trials": 0, "copies": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            roots = [p for p in tmp.glob("trialhouse-node-*") if p.is_dir()]
            peak["copies"] = max(peak["copies"], len(roots))
            for root in roots:  # each measured on its own (trials come and go between two du's)
                cache = root / ".runner" / "store.git.cache" / "node"
                trash = sum(_du(p) for p in cache.glob("trash-*")) if cache.is_dir() else 0
                in_trials = (_du(root / "trials") if (root / "trials").exists() else 0) + trash
                peak["trials"] = max(peak["trials"], in_trials)
                peak["copy"] = max(peak["copy"], _du(root, "--exclude=trials", "--exclude=trash-*"))
            stop.wait(0.5)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        res = run_trials(manifest, work / f"d{mib}-run", jobs=trials, progress=False, executor="ray",
                         controls_dir=None)
    finally:
        stop.set()
        t.join()
    assert sum(res.outcomes.values()) == trials, res.outcomes
    return {k: float(v) for k, v in peak.items()}


def ray_disk(work: Path, quick: bool) -> list[str]:
    ray, mine = started_ray(32)
    big, many = (64, 16) if quick else (500, 16)
    try:
        a = _disk_run(work, big, 4)
        b = _disk_run(work, many, 32)
    finally:
        if mine:
            ray.shutdown()  # type: ignore[attr-defined]
    mb = 1 << 20
    per_trial = a["trials"] / 4
    total = a["copy"] + 32 * per_trial
    return [f"{big} MiB repository, 4 concurrent trials: the node's copy of the run (store + seed, "
            f"shared by its hosts) peaked at {a['copy'] / mb:.0f} MiB, the trials' directories at "
            f"{a['trials'] / mb:.0f} MiB ({per_trial / mb:.0f} MiB a trial: checkout + .git); "
            f"{a['copies']:.0f} copy of the run on the node",
            f"{many} MiB repository, 32 concurrent trials: copy {b['copy'] / mb:.0f} MiB, trials "
            f"{b['trials'] / mb:.0f} MiB; {b['copies']:.0f} copy on the node (not one per host or trial)",
            f"{big} MiB × 32 concurrent trials, per node: {a['copy'] / mb / 1024:.1f} GiB for the run's copy "
            f"+ 32 × {per_trial / mb:.0f} MiB of workspaces = {total / mb / 1024:.1f} GiB (before issue 33: one "
            f"copy per worker process, 32 × {a['copy'] / mb / 1024:.1f} GiB more)"]
