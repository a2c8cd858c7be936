"""What the attack tests share: the attacker agent, one trial of it, and the host processes
a trial left behind. ``test_runner_attacks.py`` (issue 12), ``test_containment_attacks.py``
(issue 28) and ``test_runner_trials.py`` import it as ``tests.runner.attack_support`` (the
repository root is on ``sys.path`` through the editable install; docs/design.md, 'Test
support lives beside the tests'); docs/security.md maps each guarantee to its test.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from contract.trial_events import TrialFinished
from runner.eventlog import read_events
from runner.run import run_trials

ATTACKER = str(Path(__file__).parent / "agents" / "attacker.py")


def attacker(mode: str, *args: str, **extra) -> dict:
    return {"kind": "command", "argv": [sys.executable, ATTACKER, mode, *args], **extra}


def trial(kit, root: Path, out: Path, agent: dict, **overrides):
    """One trial; returns (trial_finished, events, trial dir, the agent's stdout)."""
    m = kit.make_corpus(root, variants=[{"id": "v", "agent": agent}], **overrides)
    res = run_trials(m, out, progress=False)
    events = read_events(res.events_path)
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    tdir = out / "trials" / fin.trial_id
    logs = sorted((tdir / "logs").glob("*.stdout"))
    return fin, events, tdir, "".join(p.read_text() for p in logs)


def alive_with(marker: str) -> list[int]:
    """Host processes whose command line names ``marker`` (zombies excluded)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            state = (proc / "status").read_text()
        except OSError:
            continue
        if marker.encode() in cmd and "State:\tZ" not in state:
            pids.append(int(proc.name))
    return pids


def kill_all_with(marker: str) -> list[int]:
    """SIGKILL every host process ``alive_with(marker)`` finds; returns the ones it found."""
    found = alive_with(marker)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return found


def host_cgroup() -> str:
    """The mechanism a root runner started by this process must use, read without the runner.
    On a cgroup v2 host (/sys/fs/cgroup is ``cgroup2fs`` offering pids, memory and cpu, as in
    the guest of ``make test-cgroup2``): ``cgroup-v2`` when this process is alone in its cgroup
    or already in a runner's leaf, else ``rlimit`` (its cgroup cannot be delegated: pytest-xdist
    workers share one). Elsewhere ``cgroup-v1`` (hybrid hosts, this project's CI)."""
    import subprocess

    kind = subprocess.run(["stat", "-f", "-c", "%T", "/sys/fs/cgroup"], capture_output=True, text=True).stdout
    offered = Path("/sys/fs/cgroup/cgroup.controllers")
    if kind.strip() != "cgroup2fs" or not {"pids", "memory", "cpu"} <= set(offered.read_text().split()):
        return "cgroup-v1"
    own = Path("/sys/fs/cgroup") / Path("/proc/self/cgroup").read_text().split("0::", 1)[1].strip().lstrip("/")
    alone = (own / "cgroup.procs").read_text().split() == [str(os.getpid())]
    return "cgroup-v2" if alone or own.name.startswith("trialhouse-runner-") else "rlimit"
