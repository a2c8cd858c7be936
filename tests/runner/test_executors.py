"""The executor parts that need no cluster: bad input, the run payload, the evidence round trip."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from collections import Counter

import pytest

from contract.trial_events import TrialFinished
from runner.errors import RunnerError
from runner.eventlog import read_verified
from runner.executors import archive, remote
from runner.executors.on_ray import connect
from runner.run import run_trials


class _Done:
    def __init__(self, exit_code: int, output: str) -> None:
        self.exit_code, self.output = exit_code, output


@pytest.fixture
def cli(capsys):
    from trialhouse.cli import main

    def run(*args: str) -> _Done:
        with pytest.raises(SystemExit) as done:
            main(list(args))
        out = capsys.readouterr()
        return _Done(done.value.code, out.out + out.err)

    return run


def test_ray_not_installed_names_the_install_command(cli, kit, corpus_root, tmp_path, monkeypatch):
    manifest = kit.make_corpus(corpus_root)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    res = cli("run", "-m", str(manifest), "-o", str(tmp_path / "run"), "--executor", "ray")
    assert res.exit_code == 2, res.output
    assert "pip install 'trialhouse[ray]'" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "run").exists()  # refused before any output was made


@pytest.mark.parametrize("address, says", [
    ("127.0.0.1:1", "no Ray cluster reachable there"),
    ("no-such-host.invalid:6379", "no Ray cluster reachable there"),
    ("headnode", "expected host:port"),
])
def test_an_unreachable_ray_address_is_one_clear_message(cli, kit, corpus_root, tmp_path, address, says):
    pytest.importorskip("ray", reason="the ray extra is installed by `make venv`")
    manifest = kit.make_corpus(corpus_root)
    res = cli("run", "-m", str(manifest), "-o", str(tmp_path / "run"), "--executor", "ray",
               "--ray-address", address)
    assert res.exit_code == 2, res.output
    assert f"--ray-address {address}: {says}" in res.output and "ray start --head" in res.output
    assert "Traceback" not in res.output


def test_connect_refuses_without_starting_anything():
    pytest.importorskip("ray")
    import ray

    with pytest.raises(RunnerError, match="Connection refused"):
        connect("127.0.0.1:1")
    assert not ray.is_initialized()


@pytest.mark.parametrize("args, says", [
    (["--rerun", "infra_error"], "--rerun applies to --resume"),
    (["--ray-address", "10.0.0.5:6379"], "--ray-address applies to --executor ray"),
    (["--validation-only", "--executor", "ray"], "--validation-only runs the controls on this machine"),
])
def test_option_combinations_that_make_no_sense(cli, kit, corpus_root, tmp_path, args, says):
    manifest = kit.make_corpus(corpus_root)
    res = cli("run", "-m", str(manifest), "-o", str(tmp_path / "run"), *args)
    assert res.exit_code == 2 and says in res.output, res.output


def test_a_trial_run_from_the_payload_matches_the_local_trial(cli, kit, corpus_root, tmp_path):
    """What a worker does, in-process: build the run from its payload alone, run, pack."""
    manifest = kit.make_corpus(corpus_root)
    local = run_trials(manifest, tmp_path / "local", progress=False)
    fins = {e.trial_id: e for e in read_verified(local.events_path).events
            if isinstance(e, TrialFinished)}

    from runner.setup import open_run

    s = open_run(manifest, tmp_path / "driver", resume=False, validation_only=False, jobs=1)
    s.log.close()
    payload = remote.make_payload(s.run_id, s.manifest, s.snapshot, s.containment.store,
                                  [s.manifest.initial_commit])
    assert bytes(payload.bundle[:15]) == b"# v2 git bundle"
    run = remote.WorkerRun(payload, tmp_path / "worker")
    assert run.containment.store.tree_of(s.manifest.initial_commit)
    for tid, fin in fins.items():
        case_id, variant, _r = tid.split("__")
        t = remote.TrialSlice(s.run_id, tid, 0, case_id, variant, s.config_ids[variant], 1, 1,
                              s.manifest.initial_commit, s.texts[variant], {}, None, True)
        seen: list[str] = []
        chunks: list[bytes] = []
        outcome, omitted = run.run(t, lambda cls, seen=seen, **_f: seen.append(cls.__name__),
                                   chunks.append)
        assert outcome.outcome == fin.outcome, (tid, outcome.reason)
        assert seen[0] == "TrialStarted" and seen[-1] == "TrialFinished"
        assert not (tmp_path / "worker" / "trials" / tid).exists()  # packed, then removed
        # The repository's untouched files stay behind: the driver has them already.
        assert (".gitignore" in omitted, "calc.py" in omitted) == (True, variant == "noop"), omitted
        dest = tmp_path / "unpacked" / tid
        archive.unpack(chunks, dest)
        archive.restore(s.containment.store.path, s.manifest.initial_commit, omitted,
                        dest / "workspace")
        src = local.run_dir / "trials" / tid
        local_files = {p.relative_to(src).as_posix() for p in src.rglob("*")}
        assert {p.relative_to(dest).as_posix() for p in dest.rglob("*")} == local_files
        ws = [p.relative_to(src).as_posix() for p in (src / "workspace").rglob("*") if p.is_file()]
        assert ws and all((dest / rel).read_bytes() == (src / rel).read_bytes() for rel in ws)
        assert all((dest / rel).stat().st_mode == (src / rel).stat().st_mode for rel in ws)


def test_a_damaged_payload_is_refused_on_the_worker(cli, kit, corpus_root, tmp_path):
    manifest = kit.make_corpus(corpus_root)
    from runner.setup import open_run

    s = open_run(manifest, tmp_path / "driver", resume=False, validation_only=False, jobs=1)
    s.log.close()
    payload = remote.make_payload(s.run_id, s.manifest, s.snapshot, s.containment.store, [])
    rel = sorted(payload.input_contents)[0]
    bad = remote.RunPayload(payload.run_id, payload.manifest, payload.input_hashes,
                            {**payload.input_contents, rel: b"import sys; sys.exit(0)\n"},
                            payload.bundle, payload.commits)
    with pytest.raises(RunnerError, match=f"arrived damaged on this worker \\({rel}"):
        remote.WorkerRun(bad, tmp_path / "worker")


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def test_unpack_never_writes_outside_the_trial_directory(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    data = _tar([
        _file("logs/ok.txt", b"kept"),
        _file("../escape.txt"),
        _file("/abs.txt"),
        _link("workspace/out", str(outside)),
        _file("workspace/out/planted.txt"),  # below a symlink member: never written through
        _link("workspace/etc", "/etc/passwd"),  # an agent's symlink stays a symlink
    ])
    dest = tmp_path / "trial"
    archive.unpack(data, dest)
    assert (dest / "logs" / "ok.txt").read_bytes() == b"kept"
    assert not (tmp_path / "escape.txt").exists() and not list(outside.iterdir())
    assert (dest / "workspace" / "etc").is_symlink()
    assert Counter(p.name for p in dest.rglob("*")) == Counter(["logs", "ok.txt", "workspace", "out", "etc"])


def test_pack_keeps_symlinks_as_links(tmp_path):
    src = tmp_path / "src"
    (src / "workspace").mkdir(parents=True)
    (src / "workspace" / "a.txt").write_text("a")
    (src / "workspace" / "link").symlink_to("/etc")
    dest = tmp_path / "dest"
    archive.unpack(archive.pack_bytes(src), dest)
    assert (dest / "workspace" / "a.txt").read_text() == "a"
    assert (dest / "workspace" / "link").is_symlink()
    assert os.readlink(dest / "workspace" / "link") == "/etc"


def test_a_pinned_commit_with_history_reaches_the_worker(kit, corpus_root, tmp_path):
    """The run store holds the pinned commit at depth 1; its parents stay behind. The worker's
    store must take the bundle all the same (the example corpus pins root commits only, so
    only a commit with a parent shows this)."""
    manifest = kit.make_corpus(corpus_root)
    repo = corpus_root / "repo"
    (repo / "notes.txt").write_text("a second commit\n")
    kit.git(repo, "add", "notes.txt")
    kit.git(repo, "commit", "-qm", "second")
    data = json.loads(manifest.read_text())
    data["initial_commit"] = kit.git(repo, "rev-parse", "HEAD")
    manifest.write_text(json.dumps(data))
    from runner.setup import open_run

    s = open_run(manifest, tmp_path / "driver", resume=False, validation_only=False, jobs=1)
    s.log.close()
    payload = remote.make_payload(s.run_id, s.manifest, s.snapshot, s.containment.store,
                                  [s.manifest.initial_commit])
    assert payload.shallow == (s.manifest.initial_commit,)
    run = remote.WorkerRun(payload, tmp_path / "worker")
    assert run.containment.store.tree_of(s.manifest.initial_commit) == \
        s.containment.store.tree_of(s.manifest.initial_commit)


def _store_with(kit, tmp_path, files: dict[str, bytes]):
    """A bare run store holding one commit of ``files``; returns (store, commit)."""
    from runner.run_store import RunStore

    repo = tmp_path / "src"
    repo.mkdir()
    kit.git(repo, "init", "-q")
    for rel, data in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    (repo / "run.sh").chmod(0o755)
    kit.git(repo, "add", "-A")
    kit.git(repo, "commit", "-qm", "c")
    commit = kit.git(repo, "rev-parse", "HEAD")
    store = RunStore(tmp_path / "store.git")
    store.pin(repo, commit)
    return store, commit, repo


def test_evidence_leaves_out_only_the_commits_own_files_and_streams_in_chunks(kit, tmp_path,
                                                                              monkeypatch):
    files = {"a.txt": b"a\n", "dir/b.bin": os.urandom(300_000), "run.sh": b"#!/bin/sh\n",
             "c.txt": b"c\n", "d.txt": b"d\n"}
    store, commit, repo = _store_with(kit, tmp_path, files)
    trial = tmp_path / "trial"
    ws = trial / "workspace"
    (trial / "logs").mkdir(parents=True)
    (trial / "logs" / "x.log").write_text("log\n")
    ws.mkdir()
    for rel, data in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    (ws / "run.sh").chmod(0o755)
    (ws / "c.txt").write_bytes(b"C\n")  # changed: shipped
    (ws / "d.txt").chmod(0o755)  # same bytes, another mode: shipped
    (ws / "new.txt").write_text("new\n")
    (ws / "made.bin").write_bytes(os.urandom(200_000))  # the agent's: shipped, in several chunks
    monkeypatch.setattr(archive, "CHUNK", 64 * 1024)
    chunks: list[bytes] = []
    omitted = archive.pack(trial, chunks.append, archive.listing(store.path, commit))
    assert omitted == ["a.txt", "dir/b.bin", "run.sh"]
    assert len(chunks) > 1 and max(map(len, chunks)) <= 64 * 1024
    assert files["dir/b.bin"] not in b"".join(chunks)  # the large file stayed behind
    dest = tmp_path / "dest"
    archive.unpack(iter(chunks), dest)
    archive.restore(store.path, commit, omitted, dest / "workspace")
    for p in trial.rglob("*"):
        rel = p.relative_to(trial)
        assert (dest / rel).exists(), rel
        if p.is_file():
            assert (dest / rel).read_bytes() == p.read_bytes(), rel
            assert (dest / rel).stat().st_mode == p.stat().st_mode, rel
    assert sorted(p.relative_to(dest) for p in dest.rglob("*")) == sorted(p.relative_to(trial) for p in trial.rglob("*"))


@pytest.mark.parametrize("name", ["not-in-commit.txt", "link/a.txt", "../a.txt", "a.txt"])
def test_restore_refuses_names_that_are_not_the_commits_own(kit, tmp_path, name):
    store, commit, _repo = _store_with(kit, tmp_path, {"a.txt": b"a", "link/a.txt": b"x", "run.sh": b""})
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)  # a directory replaced by a symlink: never written through
    (ws / "a.txt").write_text("the agent's")  # already there: never overwritten
    with pytest.raises(RunnerError, match="which it is not"):
        archive.restore(store.path, commit, [name], ws)
    assert not list(outside.iterdir()) and (ws / "a.txt").read_text() == "the agent's"


@pytest.mark.parametrize("ending", ["error", "bad evidence"])
def test_a_trial_whose_evidence_does_not_arrive_whole_is_never_recorded_finished(kit, tmp_path, ending):
    """The driver holds a task's trial_finished back until the trial directory is whole: a
    task that fails after its last event, or whose evidence does not fit the trial, is one
    infra_error (recorded by the run), never a finished trial plus a second finish."""
    import threading
    from types import SimpleNamespace

    from runner.executors.on_ray import RayExecutor, TrialLost

    store, commit, _repo = _store_with(kit, tmp_path, {"a.txt": b"a", "run.sh": b""})
    emitted: list[str] = []
    ex = object.__new__(RayExecutor)
    ex.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=type("RayError", (Exception,), {})))
    ex.run_dir, ex.stop, ex._listings, ex._lock = tmp_path / "run", threading.Event(), {}, threading.Lock()
    ex.emit = lambda cls, **_f: emitted.append(cls.__name__)
    spec = SimpleNamespace(trial_id="t1", trial_dir=tmp_path / "run" / "trials" / "t1", initial_commit=commit,
                           containment=SimpleNamespace(store=store))
    src = tmp_path / "src-trial"
    (src / "workspace").mkdir(parents=True)
    events = ("events", "/w", [("TrialStarted", {"trial_id": "t1"}), ("StageStarted", {}),
                               ("TrialFinished", {"trial_id": "t1"})])
    tail = ([("error", "/w", "RuntimeError: boom")] if ending == "error" else
            [("evidence", "/w", archive.pack_bytes(src)), ("result", "/w", ("outcome", ["not-in-commit.txt"]))])
    with pytest.raises(TrialLost):
        ex.relay(spec, iter([events, *tail]))
    assert emitted == ["TrialStarted", "StageStarted"]
    assert (spec.trial_dir / "lost.txt").exists()


def test_scratch_copies_of_workers_that_are_gone_are_swept(tmp_path):
    """A worker Ray kills runs no atexit: the next worker to start a run removes the copies
    whose process is gone, and only those."""
    import subprocess

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"trialhouse-20260101T000000Z-abcdef-pid{gone.pid}-x1y2"
    alive = tmp_path / f"trialhouse-20260101T000000Z-abcdef-pid{os.getpid()}-z3w4"
    other = tmp_path / "trialhouse-not-a-copy"
    for d in (dead, alive, other):
        (d / "store").mkdir(parents=True)
    remote.sweep_stale(tmp_path)
    assert not dead.exists() and alive.exists() and other.exists()


def test_workers_sweeping_at_once_never_fail_and_leave_nothing(tmp_path):
    """Workers that start a run together sweep the same stale copies at once (a clean
    clone's CI run lost a trial to this: one worker's rmtree found a directory the other
    had just removed). Eight real processes sweep 40 stale copies of dead workers."""
    import subprocess

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for i in range(40):
        d = tmp_path / f"trialhouse-20260101T000000Z-abcdef-pid{gone.pid}-c{i:03d}"
        for j in range(20):
            (d / "store" / f"objects{j}").mkdir(parents=True)
            (d / "store" / f"objects{j}" / "blob").write_text("x" * 100)
    code = ("import sys; from pathlib import Path; from runner.executors import remote; "
            "remote.sweep_stale(Path(sys.argv[1]))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stderr=subprocess.PIPE)
             for _ in range(8)]
    errors = [p.communicate()[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    assert sorted(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- a node's shared copy, host plan

_JOIN = """
import os, sys, time
from pathlib import Path
from runner.executors import node_copy

tmp, run_id, hold = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])

def build(root):
    with open(tmp / "builds.log", "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    time.sleep(0.3)  # the others arrive while it builds
    (root / "store").write_text("the run's store")

copy = node_copy.join(tmp, run_id, build)
assert (copy.root / "store").read_text() == "the run's store"
print("joined", flush=True)
time.sleep(hold)
print("removed" if node_copy.leave(copy) else "left", flush=True)
"""


def test_a_nodes_copy_is_built_once_shared_and_removed_by_its_last_user(tmp_path):
    """Four host processes join one run at once: one builds, all use that copy, the last
    to leave removes it; a copy whose users were all killed is swept, a used one never."""
    import subprocess

    from runner.executors import node_copy

    procs = [subprocess.Popen([sys.executable, "-c", _JOIN, str(tmp_path), "run-a", str(0.2 * i)],
                              stdout=subprocess.PIPE, text=True) for i in range(4)]
    said = [p.communicate(timeout=60)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4
    assert len((tmp_path / "builds.log").read_text().split()) == 1  # built once
    assert sorted(s[-1] for s in said) == ["left", "left", "left", "removed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["builds.log"]

    killed = subprocess.Popen([sys.executable, "-c", _JOIN, str(tmp_path), "run-b", "60"],
                              stdout=subprocess.PIPE, text=True)
    assert killed.stdout.readline().strip() == "joined"
    mine = node_copy.join(tmp_path, "run-c", lambda root: None)
    assert node_copy.sweep(tmp_path) == []  # run-b's and run-c's users are alive
    killed.kill()
    killed.wait()
    gone = node_copy.sweep(tmp_path, keep="run-c")
    assert [p.name for p in gone] == [f"trialhouse-node-run-b-u{os.getuid()}"] and mine.root.is_dir()
    assert node_copy.leave(mine) and not mine.root.exists()


def test_host_plan_spreads_jobs_over_nodes_by_their_room():
    from runner.executors.host_pool import ACTORS_PER_NODE, host_plan

    one = host_plan([("n1", 2.0)], 32, 1 / 16)
    assert [(h.threads, h.num_cpus) for h in one] == [(16, 1.0), (16, 1.0)] and ACTORS_PER_NODE == 2
    assert [h.threads for h in host_plan([("n1", 2.0)], 1, 0.25)] == [1]
    # the hint caps a node: 2 CPUs at 1 CPU a trial take 2 trials, whatever --jobs says
    assert [(h.threads, h.num_cpus) for h in host_plan([("n1", 2.0)], 32, 1.0)] == [(1, 1.0), (1, 1.0)]
    two = host_plan([("a", 2.0), ("b", 6.0)], 8, 0.5, memory_mb=100)
    assert {n: sum(h.threads for h in two if h.node_id == n) for n in "ab"} == {"a": 2, "b": 6}
    assert all(h.memory == h.threads * 100 * 2**20 for h in two)
    assert host_plan([("dead", 0.0)], 4, 1.0) == []


def test_a_trials_recordings_travel_in_its_evidence_to_the_runs_recordings(tmp_path):
    """A record-mode host moves a trial's recordings into its evidence; the driver moves them
    on into ``gateway/recordings`` (plain files only) and leaves nothing in the trial."""
    import threading
    from types import SimpleNamespace

    from runner.executors import node_services
    from runner.gateway.recording import recording_path, route_key

    rec = tmp_path / "host" / "recordings"
    rec.mkdir(parents=True)
    keys = [route_key("t1", "build", 1), route_key("t1", "review", 1)]
    other = recording_path(rec, route_key("t10", "build", 1))
    for key in keys:
        recording_path(rec, key).write_text('{"v": 1}\n')
    other.write_text("another trial's\n")
    gw = SimpleNamespace(routes={"t1": keys}, routes_lock=threading.Lock(), recording_dir=rec,
                         settings=SimpleNamespace(mode="record"))
    trial = tmp_path / "worker-trial"
    trial.mkdir()
    node_services.take_recordings(gw, "t1", trial)
    assert sorted(p.name for p in (trial / node_services.RECORDINGS).iterdir()) == \
           sorted(recording_path(rec, k).name for k in keys)
    assert [p.name for p in rec.iterdir()] == [other.name]
    (trial / node_services.RECORDINGS / "evil.jsonl").symlink_to("/etc/passwd")
    run = tmp_path / "run"
    node_services.place_recordings(trial, run)
    assert sorted(p.name for p in (run / "gateway" / "recordings").iterdir()) == \
           sorted(recording_path(rec, k).name for k in keys)
    assert not (trial / node_services.RECORDINGS).exists()
