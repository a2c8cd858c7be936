"""--executor ray on a real local Ray instance (2 CPUs, started once for this module).

The same trials under both executors must give the same outcomes, final trees, event
kinds and evidence files; a worker killed mid-trial makes that trial infra_error and
``--resume --rerun infra_error`` runs it again; an agent on a worker finds no credential
of the driver's and nothing of the payload; a large repository's bundle is put in the
object store once per run and memory stays bounded (500 MB under ``make test-scale``).
"""

from __future__ import annotations

import json
import os
import pickle
import secrets
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from contract.call_events import ModelCall
from contract.run_events import ExecutorInfo, RunStarted
from contract.stage_events import Judgment, StageFinished
from contract.trial_events import TrialFinished, TrialStarted
from runner.controls import run_controls
from runner.eventlog import read_verified
from runner.executors.on_ray import local_options
from runner.run import run_trials
from runner.validate import ManifestInvalid

pytestmark = pytest.mark.ray_cluster  # make test (one instance for the module) and make test-scale

ray = pytest.importorskip("ray", reason="the ray extra is installed by `make venv`")


DRIVER_SECRET = "sk-" + "attack-" + secrets.token_hex(16)
"""Set only in the driver's environment, before Ray starts: Ray's workers inherit it."""
ALLOWED = "allowed-" + secrets.token_hex(16)
"""A credential the variant's allow-list (pass_env + secret_env) passes to the agent."""
_ENV = {"TRIALHOUSE_ATTACK_DRIVER_SECRET": DRIVER_SECRET, "ALLOWED_TOKEN": ALLOWED}


@pytest.fixture(scope="module")
def ray_instance():
    saved = {k: os.environ.get(k) for k in _ENV}
    os.environ.update(_ENV)
    # Ray's raylet gives its dashboard agent a fixed 15 s window to write its port file
    # (ray-project/ray issue 65983, no setting lifts it); on a loaded 2-core machine that can
    # miss, so starting is tried up to three times. A start that fails every time fails the
    # tests (never a skip).
    for attempt in (1, 2, 3):
        try:
            ray.init(num_cpus=2, **local_options(jobs=4))
            break
        except Exception:
            ray.shutdown()
            if attempt == 3:
                raise
    yield ray
    ray.shutdown()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """Two cases of the example corpus (two repositories, one with a judge criterion) × four
    variants, controls run once. The judges run through each trial host's own gateway
    (scripted judges) or as a command (the rule judge)."""
    from runner.example import write_example
    from runner.example.generator import JUDGED_CASES

    root = tmp_path_factory.mktemp("example")
    manifest = write_example(root / "corpus")
    data = json.loads(manifest.read_text())
    cases, repos = [], set()
    for case in sorted(data["cases"], key=lambda c: c["id"] not in JUDGED_CASES):
        repo = case.get("repository") or data["repository"]
        if repo not in repos and "thread" not in case["id"]:
            repos.add(repo)
            cases.append(case)
    assert any("judge" in c for c in cases[0]["criteria"])
    # Four variants: the baselines, a rule judge (sim-alpha-planner), a scripted one that rambles.
    keep = ("null", "reference", "sim-alpha-planner", "sim-beta-minimal")
    data.update(cases=cases[:2], repetitions=1, control_repeats=1, resources={"num_cpus": 0.25},
                variants=[v for v in data["variants"] if v["id"] in keep])
    small = manifest.parent / "small.json"
    small.write_text(json.dumps(data))
    ctl = run_controls(small, root / "controls", jobs=2, progress=False)
    assert ctl.ok, ctl.cases
    return small, root / "controls"


def _finished(events_path: Path) -> dict[str, TrialFinished]:
    verified = read_verified(events_path)
    assert verified.intact, verified.problems()
    return {e.trial_id: e for e in verified.events if isinstance(e, TrialFinished)}


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def _files(trials: Path) -> set[str]:
    return {p.relative_to(trials).as_posix() for p in trials.rglob("*")}


def test_ray_gives_the_local_outcomes_trial_for_trial(ray_instance, example, tmp_path):
    manifest, controls = example
    local = run_trials(manifest, tmp_path / "local", jobs=2, progress=False, controls_dir=controls)
    remote = run_trials(manifest, tmp_path / "ray", jobs=4, progress=False, controls_dir=controls,
                        executor="ray")
    a, b = _finished(local.events_path), _finished(remote.events_path)
    assert len(a) == 8 and set(a) == set(b)
    for tid in a:
        assert (b[tid].outcome, b[tid].layers, b[tid].final_tree, b[tid].flags) == \
               (a[tid].outcome, a[tid].layers, a[tid].final_tree, a[tid].flags), tid
    assert {e.outcome for e in a.values()} >= {"accepted", "target_failed"}
    kinds = [Counter(e.event for e in read_verified(r.events_path).events) for r in (local, remote)]
    assert kinds[0] == kinds[1]
    assert _files(local.run_dir / "trials") == _files(remote.run_dir / "trials")
    # Paths in the events name the driver's run directory, never a worker's scratch copy.
    text = remote.events_path.read_text()
    assert "trialhouse-node-" not in text
    # The judges judged on the trial hosts as they do locally (verdicts and their calls).
    judged = [sorted((e.trial_id, e.criterion_id, e.verdict) for e in read_verified(r.events_path).events
                     if isinstance(e, Judgment)) for r in (local, remote)]
    assert judged[0] and judged[0] == judged[1]
    assert {v for _t, _c, v in judged[0]} >= {"passed", "failed"}
    for e in read_verified(remote.events_path).events:
        if isinstance(e, TrialStarted):
            assert e.workspace == str(remote.run_dir / "trials" / e.trial_id / "workspace")
    assert json.loads(remote.report_path.read_text())["outcomes"] == \
           json.loads(local.report_path.read_text())["outcomes"]
    # Where the trials ran is recorded, and reaches the warehouse's runs table.
    starts = [next(e for e in read_verified(r.events_path).events if isinstance(e, RunStarted))
              for r in (local, remote)]
    assert starts[0].executor == ExecutorInfo(kind="local")
    assert (starts[1].executor.kind, starts[1].executor.address, starts[1].executor.ray_version,
            starts[1].executor.nodes, starts[1].executor.cpus) == ("ray", None, ray.__version__, 1, 2.0)
    from ingest.api import ingest_paths
    from warehouse import db

    wh = tmp_path / "wh" / "w.duckdb"
    ingest_paths([local.run_dir, remote.run_dir], wh)
    with db.open(wh, read_only=True) as con:
        got = dict((r[0], r[1:]) for r in con.execute(
            "SELECT run_id, executor, executor_address, ray_version FROM runs").fetchall())
    assert got == {local.run_id: ("local", None, None), remote.run_id: ("ray", None, ray.__version__)}


def _host_pids() -> list[int]:
    """Ray trial host processes (their title names the actor class)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if cmd.startswith(b"ray::TrialHost"):
            pids.append(int(d.name))
    return pids


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            pid = int((Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1]).split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid == ancestor:
            return True
    return False


def _agents(marker: bytes) -> list[int]:
    """The waiting agents' Python processes (not the bubblewrap processes that start them)."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            args = (d / "cmdline").read_bytes().split(b"\0") if d.name.isdigit() else []
        except OSError:
            continue
        if marker in args and args[0].rsplit(b"/", 1)[-1].startswith(b"python"):
            out.append(int(d.name))
    return out


def test_a_killed_host_fails_only_its_trials_and_they_rerun(ray_instance, kit, corpus_root, tmp_path):
    """Four trials at once on two trial hosts (two threads each): one host is killed while
    every trial waits; the trials it hosted are infra_error, the other host's finish, and
    ``--resume --rerun infra_error`` runs the lost ones again."""
    gate = tmp_path / "gate"
    gate.mkdir()
    flag = gate / "hold"
    flag.write_text("the agent waits while this file exists\n")
    marker = "waiting-agent-" + secrets.token_hex(4)
    wait_agent = {"kind": "command", "argv": [
        sys.executable, "-c",
        f"import os, time\nwhile os.path.exists({str(flag)!r}): time.sleep(0.05)\n", marker]}
    manifest = kit.make_corpus(corpus_root, variants=[{"id": "waiter", "agent": wait_agent}],
                               isolation={"read_only_paths": [str(gate)]}, repetitions=4,
                               resources={"num_cpus": 0.25})
    out = tmp_path / "run"
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(
        res=run_trials(manifest, out, jobs=4, progress=False, executor="ray")))
    runner.start()
    deadline = time.monotonic() + 90
    while len(_agents(marker.encode())) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    hosts = _host_pids()
    assert len(hosts) == 2, hosts
    waiting = _agents(marker.encode())
    victim = max(hosts, key=lambda h: sum(_descends(a, h) for a in waiting))
    lost = sum(_descends(a, victim) for a in waiting)
    assert len(waiting) == 4 and 1 <= lost < 4, (waiting, lost)
    os.kill(victim, signal.SIGKILL)
    time.sleep(1.0)
    flag.unlink()  # now the other host's agents return
    runner.join(120)
    fins = _finished(out / "events.jsonl")
    outcomes = Counter(f.outcome for f in fins.values())
    assert outcomes == {"infra_error": lost, "target_failed": 4 - lost}, outcomes
    for f in fins.values():
        if f.outcome == "infra_error":
            assert "Ray worker lost" in f.reason, f.reason
            assert (out / "trials" / f.trial_id / "lost.txt").exists()
    assert _nonzero(json.loads(result["res"].report_path.read_text())["outcomes"]) == dict(outcomes)
    # The run's end released the node's copy of the run: nothing of it is left behind.
    assert not list(Path(tempfile.gettempdir()).glob(f"trialhouse-node-{result['res'].run_id}*"))

    again = run_trials(manifest, out, jobs=4, progress=False, executor="ray", resume=True,
                       rerun=("infra_error",))
    assert again.outcomes == {"target_failed": 4}  # the run's tally: kept trials and re-run ones
    verified = read_verified(out / "events.jsonl")
    assert verified.intact
    assert Counter(_finished(out / "events.jsonl")[t].outcome for t in fins) == {"target_failed": 4}


def test_a_missing_agent_cli_on_the_worker_is_infra_error(ray_instance, kit, corpus_root, tmp_path):
    """On a cluster an absolute path names a worker's file system, so the head does not refuse
    it; the worker that lacks it records the trial as could-not-start. Run locally, the same
    manifest is refused before any trial (``validate`` checks this machine)."""
    manifest = kit.make_corpus(corpus_root, variants=[{"id": "ghost", "agent": {
        "kind": "command", "argv": ["/opt/no-such-agent/bin/agent-cli", "--run"]}}],
        resources={"num_cpus": 0.5})
    res = run_trials(manifest, tmp_path / "run", progress=False, executor="ray")
    fin = _finished(res.events_path)["mul__ghost__r1"]
    assert fin.outcome == "infra_error", fin
    stages = [e for e in read_verified(res.events_path).events if isinstance(e, StageFinished)]
    assert stages and stages[0].could_not_start
    with pytest.raises(ManifestInvalid, match="agent-cli: does not exist on this machine"):
        run_trials(manifest, tmp_path / "local", progress=False)


def test_a_worker_without_bubblewrap_is_infra_error_with_the_reason(ray_instance, kit, corpus_root,
                                                                    tmp_path, monkeypatch):
    """The task body a worker runs, here in-process with a PATH that has no bwrap."""
    from runner import sandbox
    from runner.executors import ray_host, remote

    manifest = kit.make_corpus(corpus_root)
    payload = remote.RunPayload("run-without-bwrap", json.loads(manifest.read_text()), {}, {}, b"", ())
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(sandbox.discovery, "_probed", {})
    t = remote.TrialSlice("run-without-bwrap", "mul__noop__r1", 0, "mul", "noop", "cfg", 1, 7,
                          "0" * 40, {}, {}, None, True)
    items = list(ray_host.trial_stream(t, [ray.put(payload)]))
    assert [k for k, _r, _i in items] == ["error"]
    assert "bwrap" in items[0][2] and "apt-get install bubblewrap" in items[0][2]


PROBE = str(Path(__file__).parent / "agents" / "ray_port_probe.py")


def _ray_ports() -> list[tuple[str, int]]:
    """The head's ports (GCS, raylet, object manager, metrics) at its address and loopback."""
    node = next(n for n in ray.nodes() if n.get("Alive"))
    host, _, gcs = ray.get_runtime_context().gcs_address.rpartition(":")
    ports = {int(gcs), node["NodeManagerPort"], node["ObjectManagerPort"]}
    if int(node.get("MetricsExportPort") or 0) > 0:
        ports.add(int(node["MetricsExportPort"]))
    return [(h, p) for h in sorted({host, node["NodeManagerAddress"], "127.0.0.1"}) for p in sorted(ports)]


def test_a_gateway_backed_cli_trial_runs_on_ray_as_locally_and_reaches_no_ray_port(ray_instance, tmp_path):
    """Claude Code on the scripted model through the trial host's own gateway: the outcome,
    the harness's and the gateway's tokens and the model calls equal the local run's. In
    the same run an agent in the gateway network mode tries every port of the Ray head,
    directly and through its route's proxy, and reaches none (the test first reaches the
    GCS port itself: the attack is real)."""
    from runner.agents.rehearse import scenario_script
    from tests.runner.agents.conftest import harness_corpus, harness_variant

    targets = _ray_ports()
    assert any(_reachable(h, p) for h, p in targets)
    variants = [harness_variant("claude", "claude-code", allowed_tools=["Bash"]),
                {"id": "probe", "agent": {"kind": "command", "gateway": True,  # its route's proxy too
                                          "argv": [sys.executable, PROBE, json.dumps(targets)]}}]
    manifest = harness_corpus(tmp_path / "corpus", variants, {"mode": "scripted", "script": "scripts/s.json"},
                              {"s": scenario_script("claude-code", "success")}, resources={"num_cpus": 0.5})
    ctl = run_controls(manifest, tmp_path / "ctl", progress=False)
    assert ctl.ok, ctl.cases
    runs = [run_trials(manifest, tmp_path / name, jobs=2, progress=False, controls_dir=tmp_path / "ctl",
                       **kw) for name, kw in (("local", {}), ("ray", {"executor": "ray"}))]
    a, b = (_finished(r.events_path) for r in runs)
    ta, tb = a["fix-add__claude__r1"], b["fix-add__claude__r1"]
    assert ta.outcome == tb.outcome == "accepted", (ta.reason, tb.reason)
    timing = {"model_s"}  # measured, never equal twice
    assert (tb.usage.input_tokens, tb.usage.output_tokens, tb.gateway_usage.model_dump(exclude=timing)) == \
           (ta.usage.input_tokens, ta.usage.output_tokens, ta.gateway_usage.model_dump(exclude=timing))
    assert tb.usage.input_tokens == 1600
    calls = [[(c.call_index, c.input_tokens, c.output_tokens, c.tool_calls, c.gateway_error)
              for c in read_verified(r.events_path).events if isinstance(c, ModelCall)] for r in runs]
    assert calls[0] and calls[0] == calls[1]
    (stage,) = [e for e in read_verified(runs[1].events_path).events
                if isinstance(e, StageFinished) and e.trial_id == "fix-add__probe__r1"]
    said = (runs[1].run_dir / "trials" / stage.trial_id / stage.stdout_path).read_text()
    assert said.count("refused ") == 2 * len(targets) and "REACHED" not in said, said
    assert "403" in said  # the route's proxy refused the head (not on isolation.allow_hosts)


def _reachable(host: str, port: int) -> bool:
    import socket

    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


# ---------------------------------------------------------------- credentials (attack)

THIEF = str(Path(__file__).parent / "agents" / "ray_thief.py")


def test_a_worker_agent_finds_no_credential_and_nothing_of_the_payload(ray_instance, kit,
                                                                        corpus_root, tmp_path):
    """The agent on a Ray worker hunts for the driver's secret (in the worker process's own
    environment: inherited from the driver), the payload's contents (a marker inside a grader,
    which travels through the object store) and Ray's own files (auth token, session
    directory, object store): it finds none of them, only the allow-listed variable."""
    # The attack is real only if the worker process does hold the secret.
    holds = ray.get(ray.remote(num_cpus=0.25)(
        lambda: os.environ.get("TRIALHOUSE_ATTACK_DRIVER_SECRET")).remote())
    assert holds == DRIVER_SECRET
    marker = "PAYLOAD-" + "MARKER-" + secrets.token_hex(8)
    manifest = kit.make_corpus(corpus_root, variants=[{"id": "thief", "agent": {
        "kind": "command", "argv": [sys.executable, THIEF],
        "pass_env": ["ALLOWED_TOKEN"], "secret_env": ["ALLOWED_TOKEN"]}}],
        resources={"num_cpus": 0.5}, timeout_seconds=600)  # its search is slow on a loaded machine
    grader = corpus_root / "graders" / "target_mul.py"
    grader.write_text(grader.read_text() + f"# {marker}\n")
    puts: list[bytes] = []
    real_put = ray.put

    def put(value, **kw):
        puts.append(pickle.dumps(value))
        return real_put(value, **kw)

    ray.put = put  # what goes into the object store, byte for byte
    try:
        res = run_trials(manifest, tmp_path / "run", progress=False, executor="ray")
    finally:
        ray.put = real_put
    fin = _finished(res.events_path)["mul__thief__r1"]
    (stage,) = [e for e in read_verified(res.events_path).events if isinstance(e, StageFinished)]
    out = (res.run_dir / "trials" / fin.trial_id / stage.stdout_path).read_text()
    assert "canary found: True" in out, out  # the search itself works
    assert "found " not in out.replace("canary found", ""), out
    assert "allowed token visible: True" in out and "[REDACTED]" in out, out
    # Nothing the run stored holds either credential, nor did the object store get one.
    stored = b"".join(p.read_bytes() for p in res.run_dir.rglob("*") if p.is_file())
    assert DRIVER_SECRET.encode() not in stored and ALLOWED.encode() not in stored
    assert puts and marker.encode() in b"".join(puts)  # the payload did carry the grader …
    assert not any(DRIVER_SECRET.encode() in p or ALLOWED.encode() in p for p in puts)  # … no credential


# ---------------------------------------------------------------- a large repository


def _mem_kib(pid: int) -> dict[str, int]:
    """A process's resident memory by kind (KiB, /proc/<pid>/status): ``RssAnon`` is its own
    heap (private), ``RssShmem`` the object store's shared pages it has mapped (one copy on
    the machine, however many processes map it), ``VmRSS`` both plus mapped files, and
    ``VmHWM`` the peak of ``VmRSS``."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssShmem"):
                out[key] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    return out


def _ray_workers() -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(b"ray::"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def _big_repository(kit, root: Path, mib: int, trials: int) -> Path:
    """The tiny corpus with an incompressible ``mib`` MiB blob committed (stored uncompressed:
    random bytes do not shrink, and zlib at level 0 keeps the setup fast)."""
    manifest = kit.make_corpus(root, repetitions=trials, resources={"num_cpus": 0.5},
                               variants=[{"id": "noop", "agent": kit.agent("noop")}])
    repo = root / "repo"
    with (repo / "blob.bin").open("wb") as fh:
        for _ in range(mib):
            fh.write(os.urandom(1 << 20))
    kit.git(repo, "-c", "core.compression=0", "add", "blob.bin")
    kit.git(repo, "-c", "core.compression=0", "commit", "-qm", "a large file")
    data = json.loads(manifest.read_text())
    data["initial_commit"] = kit.git(repo, "rev-parse", "HEAD")
    manifest.write_text(json.dumps(data))
    return manifest


def _bundle_once_memory_bounded(ray_instance, kit, root: Path, out: Path, mib: int, trials: int):
    manifest = _big_repository(kit, root, mib, trials)
    ctl = run_controls(manifest, out / "ctl", progress=False)
    assert ctl.ok, ctl.cases
    puts: list[int] = []
    real_put = ray.put

    def put(value, **kw):
        puts.append(len(getattr(value, "bundle", b"")))
        return real_put(value, **kw)

    driver: dict[str, int] = {}
    workers: dict[int, dict[str, int]] = {}
    copies: set[frozenset[str]] = set()
    stop = threading.Event()
    me = os.getpid()
    before = _mem_kib(me)

    def sample() -> None:
        while not stop.is_set():
            now = _mem_kib(me)
            for key in ("VmRSS", "RssAnon", "RssShmem"):
                driver[key] = max(driver.get(key, 0), now.get(key, 0) - before.get(key, 0))
            copies.add(frozenset(p.name for p in Path(tempfile.gettempdir()).glob("trialhouse-node-*")
                                 if p.is_dir()))
            for pid in _ray_workers():
                peak = workers.setdefault(pid, {})
                for key, value in _mem_kib(pid).items():
                    peak[key] = max(peak.get(key, 0), value)
            stop.wait(0.02)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    ray.put = put
    try:
        res = run_trials(manifest, out / "run", jobs=1, progress=False, executor="ray",
                         controls_dir=out / "ctl")
    finally:
        ray.put = real_put
        stop.set()
        thread.join()
    assert res.outcomes == {"target_failed": trials}, res.outcomes
    # Shipped once per run: one object holds the bundle, the tasks carry a reference to it.
    assert len(puts) == 1 and puts[0] >= mib << 20, puts
    # The node held one copy of the run (its hosts share it), never one per trial or host,
    # and the run's end removed it.
    ours = {name for seen in copies for name in seen if res.run_id in name}
    assert len(ours) == 1 and max(len(seen) for seen in copies) >= 1, copies
    assert not [p for p in Path(tempfile.gettempdir()).glob(f"trialhouse-node-{res.run_id}*")]
    big = mib << 10  # KiB
    worker = {key: max((w.get(key, 0) for w in workers.values()), default=0)
              for key in ("VmHWM", "RssAnon", "RssShmem")}
    return driver, worker, big


def _assert_bounded(driver: dict[str, int], worker: dict[str, int], big: int) -> None:
    """Bounded means: no process holds the bundle on its own heap (its anonymous memory
    stays far below one bundle at 500 MiB), and the object store's pages each maps are the
    one bundle (put once; the evidence streams in 4 MiB chunks and leaves out the
    repository's untouched files), never one per trial."""
    assert driver["RssAnon"] < 96 << 10, (driver, big)
    assert driver["RssShmem"] < big + (32 << 10), (driver, big)
    assert driver["VmRSS"] < 2 * big + (96 << 10), (driver, big)
    assert worker["RssAnon"] < 256 << 10, (worker, big)
    assert worker["RssShmem"] < big + (32 << 10), (worker, big)
    assert worker["VmHWM"] < 2 * big + (400 << 10), (worker, big)


def _mib(kib: dict[str, int]) -> str:
    return ", ".join(f"{k} {v >> 10} MiB" for k, v in sorted(kib.items()))


def test_a_large_repository_bundle_is_put_once_and_memory_stays_bounded(ray_instance, kit,
                                                                       corpus_root, tmp_path):
    driver, worker, big = _bundle_once_memory_bounded(ray_instance, kit, corpus_root, tmp_path,
                                                      mib=48, trials=3)
    print(f"48 MiB bundle: driver growth {_mib(driver)}; worker peak {_mib(worker)}")
    _assert_bounded(driver, worker, big)


@pytest.mark.scale
def test_a_500_mb_repository_is_shipped_once_with_memory_bounded(ray_instance, kit, corpus_root,
                                                                 tmp_path):
    driver, worker, big = _bundle_once_memory_bounded(ray_instance, kit, corpus_root, tmp_path,
                                                      mib=500, trials=3)
    print(f"500 MiB bundle: driver growth {_mib(driver)}; worker peak {_mib(worker)}")
    _assert_bounded(driver, worker, big)
