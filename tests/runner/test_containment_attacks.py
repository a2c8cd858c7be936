"""Containment (issue 28): an agent that attacks the host, the kernel or the runner's resources.

Each test runs ``tests/runner/agents/attacker.py`` as a ``command`` agent in a real trial
and asserts that the attack is refused, or that it ends ``budget_exhausted`` with the limit
named, with the machine unharmed. The floods are bounded by the very limits they test (a
process limit of 64, a memory limit of 128 MB, a workspace cap of 64 MB), so they are cheap
when the limits hold, and every test kills what it started even when it fails. CI runs as
root; ``test_an_ordinary_user_runner_is_contained_too`` runs the same attacks through
``setpriv`` as an unprivileged runner. docs/security.md maps each guarantee to its test.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from contract.run_events import RunStarted
from contract.trial_events import Budget, Flag
from runner.eventlog import read_events
from tests.runner.attack_support import alive_with, attacker, host_cgroup, kill_all_with, trial

PY = sys.executable
ROOT = os.geteuid() == 0


def largest_file(root: Path) -> int:
    """The largest regular file left anywhere under ``root`` (walked without following links)."""
    biggest = 0
    for base, _dirs, files in os.walk(root):
        for name in files:
            try:
                biggest = max(biggest, os.lstat(os.path.join(base, name)).st_size)
            except OSError:
                continue
    return biggest


# -- who the agent is ---------------------------------------------------------------


@pytest.mark.skipif(not ROOT, reason="a root runner's sandboxes get an id of their own")
def test_a_root_runners_agent_runs_as_an_unprivileged_id_of_its_own(kit, corpus_root, tmp_path):
    fin, events, tdir, out = trial(kit, corpus_root, tmp_path / "o", attacker("whoami"))
    start = next(e for e in events if isinstance(e, RunStarted))
    first, count = start.isolation.sandbox_ids
    (line,) = [ln for ln in out.splitlines() if ln.startswith("ID ")]
    uid, gid = int(line.split()[1]), int(line.split()[2])
    assert first <= uid < first + count and gid == uid, line
    assert "CAPEFF 0000000000000000" in out
    assert start.isolation.sandbox_user == "own-id" and start.isolation.seccomp
    lim = start.isolation.limits
    assert lim.mechanism == host_cgroup() and (lim.why_no_cgroup is None) == (lim.mechanism != "rlimit")
    # handed back: nothing the sandbox wrote still belongs to its id
    owners = {os.lstat(os.path.join(b, n)).st_uid for b, ds, fs in os.walk(tmp_path / "o") for n in ds + fs}
    assert uid not in owners and fin.outcome == "target_failed"


def test_a_sysctl_write_is_refused_and_the_host_value_is_unchanged(kit, corpus_root, tmp_path):
    before = Path("/proc/sys/fs/lease-break-time").read_text()
    fin, _, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("sysctl", "fs.lease-break-time", "7"))
    assert "refused /proc/sys/fs/lease-break-time" in out
    assert "FOUND" not in out, out
    assert Path("/proc/sys/fs/lease-break-time").read_text() == before
    assert fin.outcome == "target_failed"


def test_kernel_interfaces_an_agent_never_needs_are_refused(kit, corpus_root, tmp_path):
    fin, _, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("kernel"))
    tried = [ln for ln in out.splitlines() if ln.startswith(("ALLOWED", "refused"))]
    assert len(tried) == 15, out
    assert not [ln for ln in tried if ln.startswith("ALLOWED")], out
    for name in ("ptrace", "process_vm_readv", "unshare(CLONE_NEWUSER)", "mount", "keyctl", "bpf"):
        assert f"refused {name} EPERM" in out, (name, out)
    assert "refused clone3 ENOSYS" in out and "refused unshare -U true" in out


# -- resource floods ------------------------------------------------------------------


def test_3000_processes_end_budget_exhausted_at_the_process_limit(kit, corpus_root, tmp_path):
    marker = f"bomb-{secrets.token_hex(4)}"
    try:
        fin, events, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("fork-bomb", "3000", marker),
                                    isolation={"limits": {"processes": 64}})
        assert "refused after" in out and int(out.split("refused after")[1].split()[0]) < 64
        if ROOT and host_cgroup() != "rlimit":  # the cgroup's counter says which limit it was
            assert fin.outcome == "budget_exhausted", fin.reason
            assert "isolation.limits.processes=64" in fin.reason
            assert [b.type for b in events if isinstance(b, Budget)] == ["processes"]
    finally:
        assert kill_all_with(marker) == [], "a process of the fork bomb outlived its trial"


@pytest.mark.skipif(not ROOT or host_cgroup() == "rlimit", reason="the memory limit is named from a cgroup's counter")
def test_a_2_gib_allocation_ends_budget_exhausted_at_the_memory_limit(kit, corpus_root, tmp_path):
    fin, events, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("allocate", "2048"),
                                isolation={"limits": {"memory_mb": 128}})
    assert "ALLOCATED" not in out
    assert fin.outcome == "budget_exhausted" and "isolation.limits.memory_mb=128" in fin.reason
    assert [b.type for b in events if isinstance(b, Budget)] == ["memory"]


@pytest.mark.parametrize("where", ["/dev/shm", "/tmp"])
def test_2_gib_into_dev_shm_or_tmp_ends_budget_exhausted_at_the_workspace_cap(kit, corpus_root, tmp_path, where):
    fin, events, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("fill", where, "2048"),
                                max_workspace_mb=64)
    assert fin.outcome == "budget_exhausted" and "max_workspace_mb=64" in fin.reason, fin.reason
    (b,) = [b for b in events if isinstance(b, Budget)]
    assert b.type == "workspace" and b.used is not None and 64 < b.used < 2048
    assert largest_file(tmp_path / "o") < 16 * 2**20  # nothing of the flood is left


def test_a_graders_tmp_and_shm_are_size_capped_tmpfs(tmp_path):
    from runner import sandbox

    out = tmp_path / "out"
    out.mkdir()
    code = ("import os\nfor d in ('/tmp', '/dev/shm'):\n"
            "    st = os.statvfs(d); print(d, st.f_blocks * st.f_frsize >> 20)\n"
            "try: open('/dev/x', 'w')\nexcept OSError as e: print('/dev', type(e).__name__)\n")
    backend = sandbox.backend("bubblewrap").configured(sandbox.Limits(tmpfs_bytes=8 * 2**20))
    res = sandbox.run(backend, sandbox.Request(argv=["python3", "-c", code], cwd=out, env={"PATH": "/usr/bin:/bin"},
                                               read_write=[out]), timeout=30, stdout_path=tmp_path / "o.txt")
    assert res.exit_code == 0
    assert (tmp_path / "o.txt").read_text().split("\n")[:3] == ["/tmp 8", "/dev/shm 8", "/dev OSError"]


def test_a_300_mib_file_below_a_path_longer_than_path_max_is_budget_exhausted_and_removed(kit, corpus_root, tmp_path):
    fin, events, tdir, out = trial(kit, corpus_root, tmp_path / "o", attacker("long-path", "300"),
                                   max_workspace_mb=64)
    assert "writing 300 MiB below a path of 5020 bytes" in out  # stopped before it wrote all
    assert fin.outcome == "budget_exhausted" and "max_workspace_mb=64" in fin.reason, fin.reason
    assert [b.type for b in events if isinstance(b, Budget)] == ["workspace"]
    assert largest_file(tmp_path / "o") < 16 * 2**20, "the deep file stayed on disk"


def test_more_files_than_max_workspace_files_is_budget_exhausted(kit, corpus_root, tmp_path):
    fin, events, _, _ = trial(kit, corpus_root, tmp_path / "o", attacker("many-files", "3000"),
                              max_workspace_files=1000)
    assert fin.outcome == "budget_exhausted" and "max_workspace_files=1000" in fin.reason, fin.reason
    (b,) = [b for b in events if isinstance(b, Budget)]
    assert b.type == "workspace_files" and b.limit == 1000 and b.used > 1000


def test_200000_tiny_files_end_the_trial_within_1_2x_its_budget(kit, corpus_root, tmp_path):
    # On a RAM file system where there is room: the files are the test's cost, not its subject.
    base = Path("/dev/shm") if shutil.disk_usage("/dev/shm").free > 2 * 2**30 else tmp_path
    out = Path(tempfile.mkdtemp(prefix="trialhouse-200k-", dir=base))
    budget = 20.0
    try:
        fin, events, _, log = trial(kit, corpus_root, out, attacker("many-files", "200000", "hang"),
                                    timeout_seconds=budget, max_workspace_files=250_000)
        assert fin.outcome == "budget_exhausted", fin.reason
        assert fin.duration_s <= 1.2 * budget, f"the trial took {fin.duration_s:.1f}s of a {budget:g}s budget"
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_a_fifo_gitignore_never_holds_a_runner_slot(kit, corpus_root, tmp_path):
    fin, events, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("fifo-gitignore"),
                                timeout_seconds=120)
    assert "planted FIFOs" in out
    assert fin.duration_s < 60, f"the trial waited {fin.duration_s:.0f}s (a FIFO was opened)"
    flagged = sorted(f.path for f in events if isinstance(f, Flag) and f.kind == "special_file")
    assert [p.rsplit(": ", 1)[-1] for p in flagged] == [".gitignore", "events.pipe"], flagged
    assert fin.flags == 2 and fin.outcome == "target_failed", (fin.outcome, fin.reason)


# -- the runner killed -------------------------------------------------------------------


def _wait_for(path: Path, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {text} in {path}")


def _status(pid: int) -> list[str]:
    """What a survivor is (for the diagnosis): its state, parent, ids and namespaced pids."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return []
    return [ln for ln in lines if ln.startswith(("State", "PPid", "Uid", "NSpid"))]


@pytest.mark.parametrize("delay", [0.0, 0.03, 0.1, None])
def test_no_agent_process_survives_a_runner_sigkill(kit, corpus_root, tmp_path, delay):
    """Killed as the stage starts (bubblewrap still setting up), a moment later, or once the
    agent and its ``setsid`` child run: nothing of the sandbox outlives the runner."""
    marker = f"orphan-{secrets.token_hex(4)}"
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": attacker("hang", marker)}],
                        timeout_seconds=300)
    out = tmp_path / "o"
    proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(out / "events.jsonl", '"stage_started"')
        if delay is None:  # until the agent's own processes run
            deadline = time.monotonic() + 30
            while len([p for p in alive_with(marker) if b"python" in Path(f"/proc/{p}/cmdline").read_bytes()
                       and b"bwrap" not in Path(f"/proc/{p}/cmdline").read_bytes()]) < 2:
                assert time.monotonic() < deadline, "the agent never started"
                time.sleep(0.02)
        else:
            time.sleep(delay)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5
        while alive_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = [(pid, _status(pid), Path(f"/proc/{pid}/cmdline").read_bytes()[:60]) for pid in alive_with(marker)]
        assert survivors == [], f"a sandbox process outlived the runner: {survivors}"
    finally:
        proc.kill()
        kill_all_with(marker)


@pytest.mark.skipif(not ROOT, reason="sandbox ids are a root runner's")
def test_a_process_left_running_as_a_sandbox_id_dies_when_the_id_is_leased_again():
    """The second line behind the lifeline: whatever still runs as an id whose last lease
    was never released outlived its runner, and is killed before the id is used again."""
    from runner.sandbox import ids

    uid = 2_100_000_000 + os.getpid() % 100_000
    left = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                             "sleep", "300"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{left.pid}/status").read_text().count(str(uid)) < 3:
            assert time.monotonic() < deadline, "the leftover never became the sandbox id"
            time.sleep(0.01)
        (ids.lease_dir() / str(uid)).write_text("held\n")  # as a runner killed while holding it leaves it
        with ids.lease(ids.IdRange(uid, 1)) as leased:
            assert leased == uid
            assert left.wait(timeout=10) == -signal.SIGKILL
    finally:
        left.kill()
        left.wait()


@pytest.mark.skipif(not ROOT or host_cgroup() == "rlimit", reason="sandbox cgroups are a cgroup runner's")
def test_the_empty_cgroups_killed_runners_left_are_swept_and_nothing_else():
    """A runner killed mid-stage leaves its sandbox's cgroup (empty once its processes die);
    the next runner removes such leftovers older than ten minutes, never one that still holds
    a process, a younger one (another runner's, about to be joined) or one not trialhouse's."""
    from runner.sandbox import cgroup2

    line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines()
                if (x.split(":")[1] == "pids" if host_cgroup() == "cgroup-v1" else x.startswith("0::")))
    top = Path("/sys/fs/cgroup/pids" if host_cgroup() == "cgroup-v1" else "/sys/fs/cgroup")
    parent = top / line.split(":", 2)[2].lstrip("/") / f"sweep-{secrets.token_hex(4)}"
    parent.mkdir()
    names = ("trialhouse-left", "trialhouse-busy", "other-empty")
    for name in names:
        (parent / name).mkdir()
    busy = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: (parent / "trialhouse-busy" / "cgroup.procs").write_text("0"))
    try:
        assert cgroup2.sweep(parent, time.time()) == 0  # all young
        assert cgroup2.sweep(parent, time.time() + cgroup2.STALE_S + 1) == 1
        assert sorted(d.name for d in parent.iterdir() if d.is_dir()) == ["other-empty", "trialhouse-busy"]
    finally:
        busy.kill()
        busy.wait()
        for name in names:
            for _ in range(100):
                try:
                    (parent / name).rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the killed process leaves its cgroup a moment later
        parent.rmdir()


# -- an ordinary user's runner --------------------------------------------------------------


def _as_user(uid: int, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "NO_COLOR": "1", "LANG": "C.UTF-8"}
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                           "--", *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.skipif(not ROOT or shutil.which("setpriv") is None, reason="starts a runner as another user (root)")
def test_an_ordinary_user_runner_is_contained_too(kit):
    uid = 1_999_000_000 + os.getpid() % 100_000
    root = Path(tempfile.mkdtemp(prefix="trialhouse-user-"))
    marker = f"userbomb-{secrets.token_hex(4)}"
    try:
        probe = _as_user(uid, PY, "-m", "trialhouse", "--help", cwd=root)
        if probe.returncode != 0:
            pytest.skip(f"the test interpreter cannot run as uid {uid}: {probe.stderr.strip()[-200:]}")
        variants = [{"id": "sysctl", "agent": attacker("sysctl", "fs.lease-break-time", "7")},
                    {"id": "kernel", "agent": attacker("kernel")},
                    {"id": "bomb", "agent": attacker("fork-bomb", "3000", marker)}]
        m = kit.make_corpus(root / "corpus", variants=variants, isolation={"limits": {"processes": 64}})
        # Agents and graders by Debian's interpreter: the test's own may live below a directory
        # only root may search (pyenv in /root), which an ordinary user's runner cannot show.
        m.write_text(m.read_text().replace(json.dumps(PY)[1:-1], "/usr/bin/python3"))
        shutil.chown(root, uid, uid)
        for base, dirs, files in os.walk(root):
            for name in dirs + files:
                os.lchown(os.path.join(base, name), uid, uid)
        before = Path("/proc/sys/fs/lease-break-time").read_text()
        done = _as_user(uid, PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(root / "o"),
                        "--no-progress", cwd=root)
        assert done.returncode == 0, done.stderr[-2000:]
        events = read_events(root / "o" / "events.jsonl")
        start = next(e for e in events if isinstance(e, RunStarted))
        assert start.isolation.sandbox_user == "runner" and start.isolation.seccomp
        assert start.isolation.limits.mechanism == "rlimit"
        assert start.isolation.limits.why_no_cgroup.endswith("cgroup v1: needs a root runner")
        logs = {p.parts[-3]: p.read_text() for p in (root / "o" / "trials").glob("*/logs/a1-build.stdout")}
        assert "FOUND" not in logs["mul__sysctl__r1"] and Path("/proc/sys/fs/lease-break-time").read_text() == before
        assert "ALLOWED" not in logs["mul__kernel__r1"], logs["mul__kernel__r1"]
        assert "refused after" in logs["mul__bomb__r1"]  # RLIMIT_NPROC, counted in the sandbox's user namespace
        assert int(logs["mul__bomb__r1"].split("refused after")[1].split()[0]) < 64
        report = json.loads((root / "o" / "report.json").read_text())
        assert report["status"] == "completed"
    finally:
        kill_all_with(marker)
        if not os.environ.get("KEEP_USER_ROOT"):
            shutil.rmtree(root, ignore_errors=True)
