"""cgroup v2 (issue 28, item 4): where the runner may use it, and where it may not.

These run only on a host whose /sys/fs/cgroup is the v2 hierarchy with pids, memory and cpu:
``make test-cgroup2`` runs them (with the containment attacks) as root in a guest kernel
booted with cgroup v1 off (tests/vm/cgroup2_vm.py), since this project's machines bind every
controller to v1. Each starts a real ``trialhouse run`` as a subprocess.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from contract.run_events import RunStarted
from contract.trial_events import Budget, TrialFinished
from runner.eventlog import read_events
from runner.sandbox import cgroup2
from tests.runner.attack_support import attacker, host_cgroup, kill_all_with

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or host_cgroup() != "cgroup-v2",
    reason="needs a root runner alone in its cgroup on a cgroup v2 host: make test-cgroup2 runs these in a guest kernel")


def _run(kit, root: Path, variants: list[dict], cgroup: Path | None = None, **overrides):
    """``trialhouse run`` as a subprocess (moved into ``cgroup`` before it starts, where given)."""
    m = kit.make_corpus(root / "corpus", variants=variants, **overrides)

    def enter() -> None:
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text("0")

    done = subprocess.run([sys.executable, "-m", "trialhouse", "run", "--manifest", str(m), "--output",
                           str(root / "o"), "--no-progress"], capture_output=True, text=True, timeout=900,
                          preexec_fn=enter)
    assert done.returncode == 0, done.stderr[-2000:]
    events = read_events(root / "o" / "events.jsonl")
    start = next(e for e in events if isinstance(e, RunStarted))
    return start, events


def _sandbox_cgroups(base: Path) -> list[str]:
    return sorted(d.name for d in base.iterdir() if d.is_dir() and not d.name.startswith(cgroup2.LEAF))


def test_a_runner_below_a_delegated_cgroup_names_the_v2_limit_each_sandbox_reached(kit, tmp_path):
    """The test process gives up its cgroup to a leaf (as a runner does); a runner it starts finds
    itself in that leaf and puts each sandbox in a v2 cgroup of its own beside it: the fork bomb
    ends at ``pids.max``, the allocation at ``memory.max``, each named, and nothing is left.
    (1 GiB of memory: 64 sleeping interpreters need ~600 MB before the process limit.)"""
    base = cgroup2.delegation().base
    assert base is not None, cgroup2.delegation().why_not
    marker = f"v2bomb-{secrets.token_hex(4)}"
    try:
        start, events = _run(kit, tmp_path, [{"id": "bomb", "agent": attacker("fork-bomb", "3000", marker)},
                                             {"id": "alloc", "agent": attacker("allocate", "2048")}],
                             isolation={"limits": {"processes": 64, "memory_mb": 1024}})
    finally:
        assert kill_all_with(marker) == [], "a process of the fork bomb outlived its trial"
    assert start.isolation.limits.mechanism == "cgroup-v2" and start.isolation.limits.why_no_cgroup is None
    fins = {e.trial_id.split("__")[1]: e for e in events if isinstance(e, TrialFinished)}
    budgets = {e.trial_id.split("__")[1]: e.type for e in events if isinstance(e, Budget)}
    assert fins["bomb"].outcome == "budget_exhausted" and "isolation.limits.processes=64" in fins["bomb"].reason
    assert fins["alloc"].outcome == "budget_exhausted" and "isolation.limits.memory_mb=1024" in fins["alloc"].reason
    assert budgets == {"bomb": "processes", "alloc": "memory"}
    assert _sandbox_cgroups(base) == []  # every sandbox's cgroup removed


def test_a_runner_sharing_its_cgroup_falls_back_to_rlimits_and_says_why(kit, tmp_path):
    """A cgroup that holds another process cannot give controllers to children: the runner moves
    back, its sandboxes get rlimits, and the run header says what to change."""
    base = cgroup2.delegation().base
    assert base is not None, cgroup2.delegation().why_not
    shared = base / f"shared-{secrets.token_hex(4)}"
    shared.mkdir()
    other = subprocess.Popen(["sleep", "600"], preexec_fn=lambda: (shared / "cgroup.procs").write_text("0"))
    try:
        start, events = _run(kit, tmp_path, [{"id": "v", "agent": attacker("whoami")}], cgroup=shared)
        assert start.isolation.limits.mechanism == "rlimit"
        why = start.isolation.limits.why_no_cgroup or ""
        assert f"{shared} holds other processes than the runner" in why, why
        assert "systemd-run --scope -p Delegate=yes" in why
        assert (shared / "cgroup.subtree_control").read_text().strip() == ""  # left as it was
        (fin,) = [e for e in events if isinstance(e, TrialFinished)]
        assert fin.outcome == "target_failed", json.dumps(fin.model_dump(mode="json"))[:500]
    finally:
        other.kill()
        other.wait()
        for d in [*shared.iterdir()]:
            if d.is_dir():
                d.rmdir()
        shared.rmdir()


def test_an_ordinary_user_with_a_delegated_cgroup_gets_v2_limits(kit):
    """What cgroup v2 adds over v1: an unprivileged runner given a cgroup of its own (systemd's
    ``Delegate=yes``: the directory and its ``cgroup.procs``, ``cgroup.subtree_control`` and
    ``cgroup.threads`` owned by the user) names the limit its sandbox reached."""
    import shutil

    base = cgroup2.delegation().base
    assert base is not None, cgroup2.delegation().why_not
    uid = 1_999_000_000 + os.getpid() % 100_000
    mine = base / f"user-{uid}"
    mine.mkdir()
    for path in (mine, mine / "cgroup.procs", mine / "cgroup.subtree_control", mine / "cgroup.threads"):
        os.chown(path, uid, uid)
    root = Path(tempfile.mkdtemp(prefix="trialhouse-user-"))  # below /tmp: tmp_path is root's alone
    marker = f"v2userbomb-{secrets.token_hex(4)}"
    try:
        m = kit.make_corpus(root / "corpus", variants=[{"id": "bomb", "agent": attacker("fork-bomb", "3000", marker)}],
                            isolation={"limits": {"processes": 64}})
        # Agents and graders by Debian's interpreter: the test's own may live below a directory
        # only root may search (pyenv in /root), as in test_an_ordinary_user_runner_is_contained_too.
        m.write_text(m.read_text().replace(json.dumps(sys.executable)[1:-1], "/usr/bin/python3"))
        for d, dirs, files in os.walk(root):
            for name in [".", *dirs, *files]:
                os.lchown(os.path.join(d, name), uid, uid)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "LANG": "C.UTF-8"}
        done = subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--",
             sys.executable, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(root / "o"),
             "--no-progress"], capture_output=True, text=True, env=env, cwd=root, timeout=900,
            preexec_fn=lambda: (mine / "cgroup.procs").write_text("0"))
        assert done.returncode == 0, done.stderr[-2000:]
        events = read_events(root / "o" / "events.jsonl")
        start = next(e for e in events if isinstance(e, RunStarted))
        assert start.isolation.sandbox_user == "runner"
        assert (start.isolation.limits.mechanism, start.isolation.limits.why_no_cgroup) == ("cgroup-v2", None)
        (fin,) = [e for e in events if isinstance(e, TrialFinished)]
        assert fin.outcome == "budget_exhausted" and "isolation.limits.processes=64" in fin.reason, fin.reason
        assert [e.type for e in events if isinstance(e, Budget)] == ["processes"]
        assert _sandbox_cgroups(mine) == []
    finally:
        assert kill_all_with(marker) == [], "a process of the fork bomb outlived its trial"
        shutil.rmtree(root, ignore_errors=True)
        for d in sorted(mine.rglob("*"), reverse=True):
            if d.is_dir():
                d.rmdir()
        mine.rmdir()
