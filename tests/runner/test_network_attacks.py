"""Issue 28: agents reach the model gateway and nothing else; graders reach nothing; the
gateway holds each trial to its caps. Every test is a real ``trialhouse run`` with attacking
agents (``tests/runner/agents/net_attacker.py``) beside honest ones, run as whoever runs the
suite (root in CI). docs/security.md maps each guarantee here.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from contract.call_events import NetworkConnection
from contract.run_events import RunStarted
from contract.trial_events import Budget, TrialFinished
from runner.eventlog import read_events
from runner.run import run_trials

PY = sys.executable
NET = str(Path(__file__).parent / "agents" / "net_attacker.py")
SCRIPT = {"steps": [{"text": "add mul"}], "side": {"text": "add mul"}}


def net(mode: str, *args: str, gateway: bool | None = None) -> dict:
    agent: dict = {"kind": "command", "argv": [PY, NET, mode, *args]}
    if gateway is not None:
        agent["gateway"] = gateway
    return agent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def corpus(kit, root: Path, variants: list[dict], network: str | None, *, two_cases: bool = False,
           gateway: bool = True, **extra) -> Path:
    """The tiny corpus with ``variants``, ``isolation.network`` and (``gateway``) a scripted
    gateway every variant goes through; ``two_cases`` adds a case ``sub`` beside ``mul``."""
    if gateway:
        for v in variants:
            v["agent"]["gateway"] = True
    m = kit.make_corpus(root, variants=variants, **extra)
    data = json.loads(m.read_text())
    if network is not None:
        data["isolation"] = {**data.get("isolation", {}), "network": network}
    if gateway:
        (root / "script.json").write_text(json.dumps(SCRIPT))
        data["gateway"] = {"mode": "scripted", "script": "script.json"}
    if two_cases:
        (root / "patches" / "sub.patch").write_text(
            "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,6 @@\n"
            " def add(a, b):\n     return a + b\n+\n+\n+def sub(a, b):\n+    return a - b\n")
        (root / "graders" / "target_sub.py").write_text(
            (root / "graders" / "target_mul.py").read_text().replace("calc.mul(2, 3) == 6", "calc.sub(5, 3) == 2"))
        sub = json.loads(json.dumps(data["cases"][0]))
        sub.update(id="sub", prompt="Add calc.sub(a, b).", reference_patch="patches/sub.patch")
        sub["criteria"][0]["command"] = [PY, "{inputs}/graders/target_sub.py"]
        data["cases"].append(sub)
    m.write_text(json.dumps(data))
    return m


def outputs(out: Path) -> dict[str, str]:
    """Trial id → everything its agent printed."""
    return {t.name: "".join(p.read_text(errors="replace") for p in sorted((t / "logs").glob("*.stdout")))
            for t in sorted((out / "trials").iterdir())}


def finished(events: list) -> dict[str, TrialFinished]:
    return {e.trial_id: e for e in events if isinstance(e, TrialFinished)}


# -- a reference leaked through a grader to a concurrent trial ---------------------------------


@pytest.mark.parametrize("network", ["gateway", "none", "open"])
def test_a_grader_cannot_leak_references_to_a_concurrent_trial(kit, corpus_root, tmp_path, network):
    """The leaker's workspace code, imported by its own grader, sends every input it can read
    to a concurrent copycat over an abstract unix socket and loopback TCP; the leaker's agent
    greets the copycat directly too. Graders see only their own case's inputs and have no
    network, so no reference ever reaches the copycat; agents share nothing but in ``open``."""
    tag, port = secrets.token_hex(4), str(free_port())
    variants = [{"id": "leaker", "agent": net("leaker", tag, port)},
                {"id": "copycat", "agent": net("copycat", tag, port, "10")}]
    m = corpus(kit, corpus_root, variants, network, two_cases=True, gateway=network == "gateway")
    res = run_trials(m, tmp_path / "o", progress=False, jobs=4)
    fins = finished(read_events(res.events_path))
    said = outputs(tmp_path / "o")
    copycats = {t: said[t] for t in fins if "__copycat__" in t}
    assert len(copycats) == 2 and "APPLIED" not in "".join(copycats.values())
    assert {fins[t].outcome for t in copycats} == {"target_failed"}
    if network == "open":  # the channel is real: agents on the host's network reach each other
        assert "hello from the leaker's agent" in "".join(copycats.values())
    else:
        assert "RECEIVED" not in "".join(copycats.values()), copycats
    start = next(e for e in read_events(res.events_path) if isinstance(e, RunStarted))
    assert start.isolation.network_policy == network and start.isolation.network is (network == "open")


# -- the verdict channel: token theft against the example graders ------------------------------

THIEF = str(Path(__file__).parent / "agents" / "thief.py")
ATTACKS = ("frames", "memscan", "helpers")


def example_subset(tmp_path: Path, variants: list[dict]) -> Path:
    """The example corpus cut to one case per repository, one build stage, no judges."""
    from runner.example import write_example

    m = write_example(tmp_path / "example")
    data = json.loads(m.read_text())
    picked, seen = [], set()
    for case in data["cases"]:
        repo = case["labels"]["repository"]
        if repo not in seen and not case.get("holdout"):
            seen.add(repo)
            # a grader's 30 s is for the demo's machine; a loaded CI box must not turn an honest
            # trial into a timed-out one (the attack, not the clock, is under test here)
            case["criteria"] = [{**c, "timeout_seconds": 180} for c in case["criteria"] if "judge" not in c]
            picked.append(case)
    data.update(cases=picked, variants=variants, stages=["build"], max_attempts=1, repetitions=1,
                control_repeats=1)
    m.write_text(json.dumps(data))
    return m


def test_token_theft_fails_against_the_example_graders_and_is_flagged(tmp_path):
    """Workspace code reads its importer's frames, scans its own and its parent's memory, or
    replaces the grader's helpers with no-ops: the example graders decide in a process that
    never imports workspace code, so no attack passes a criterion, and each is flagged."""
    variants = [{"id": "reference", "agent": {"kind": "reference"}},
                *({"id": a, "agent": {"kind": "command", "argv": [PY, THIEF, a]}} for a in ATTACKS)]
    m = example_subset(tmp_path, variants)
    res = run_trials(m, tmp_path / "o", progress=False, jobs=4)
    events = read_events(res.events_path)
    fins = finished(events)
    assert len(fins) == 16 and len({f.variant for f in fins.values()}) == 4
    by_variant: dict[str, set[str]] = {}
    for f in fins.values():
        by_variant.setdefault(f.variant, set()).add(f.outcome)
    assert by_variant["reference"] == {"accepted"}, [  # the graders work, contained
        (f.trial_id, f.outcome, f.reason) for f in fins.values() if f.variant == "reference"]
    for attack in ATTACKS:
        assert by_variant[attack] <= {"target_failed", "regressed"}, (attack, by_variant[attack])
    from contract.trial_events import Flag, Grading

    # no target passed (the behaviour is absent); regressions of untouched code may pass honestly
    stolen = [g for g in events if isinstance(g, Grading) and g.trial_id.split("__")[1] in ATTACKS
              and g.layer == "target" and (g.token_ok or g.verdict == "passed")]
    assert stolen == []
    flags = {(e.trial_id.split("__")[1], e.kind) for e in events if isinstance(e, Flag)}
    assert {("frames", "grader_introspection"), ("memscan", "grader_introspection"),
            ("helpers", "grader_helper")} <= flags
    said = outputs(tmp_path / "o")
    assert not any("memscan refused" in s for s in said.values())  # the agent planted; graders ran it


def test_an_in_process_grader_is_robbed_but_labelled_and_flagged(kit, corpus_root, tmp_path):
    """The documented limit: a grader that imports workspace code in its own process holds
    the token where that code can reach it. Declared ``in_process``, the run header says so
    and the attack is flagged."""
    variants = [{"id": a, "agent": {"kind": "command", "argv": [PY, THIEF, a]}} for a in ("frames", "memscan")]
    m = kit.make_corpus(corpus_root, variants=variants, token=True)
    data = json.loads(m.read_text())
    for crit in data["cases"][0]["criteria"]:
        crit["in_process"] = True
    m.write_text(json.dumps(data))
    res = run_trials(m, tmp_path / "o", progress=False, jobs=2)
    events = read_events(res.events_path)
    assert {f.outcome for f in finished(events).values()} == {"accepted"}  # the limit, stated plainly
    from contract.trial_events import Flag

    assert {(e.trial_id.split("__")[1], e.kind) for e in events if isinstance(e, Flag)} >= {
        ("frames", "grader_introspection"), ("memscan", "grader_introspection")}
    start = next(e for e in events if isinstance(e, RunStarted))
    assert all(k.in_process for k in start.cases[0].criteria)


# -- gateway mode: the gateway and nothing else ----------------------------------------------


class _Listener:
    """A TCP listener on the host's loopback that counts who connects."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_a_gateway_agent_reaches_the_gateway_and_nothing_else(kit, corpus_root, tmp_path):
    """With the default policy of a gateway run, an agent cannot reach the internet (no route,
    no DNS), a listener on the host's loopback, or a concurrent trial's loopback, yet completes
    its trial through the gateway (the scripted model says "add mul")."""
    host, other = _Listener(), str(free_port())
    variants = [{"id": "prober", "agent": net("probe", str(host.port), other)},
                {"id": "listener", "agent": net("copycat", secrets.token_hex(4), other, "8")}]
    m = corpus(kit, corpus_root, variants, None)
    try:
        res = run_trials(m, tmp_path / "o", progress=False, jobs=2)
    finally:
        host.close()
    events = read_events(res.events_path)
    said = outputs(tmp_path / "o")
    probe = said["mul__prober__r1"]
    assert "REACHED" not in probe, probe
    for what in ("the internet by address", "the host loopback", "another trial", "DNS"):
        assert f"refused {what}" in probe, probe
    assert "MODEL said add mul" in probe
    assert host.accepted == 0 and "RECEIVED" not in said["mul__listener__r1"]
    assert finished(events)["mul__prober__r1"].outcome == "accepted"
    start = next(e for e in events if isinstance(e, RunStarted))
    assert start.isolation.network_policy == "gateway"


class _Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        body = f"hello from the allowed host at {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_allow_list_proxy_lets_listed_hosts_through_and_records_every_connection(kit, corpus_root, tmp_path):
    """``isolation.allow_hosts`` names a local site: reachable through the gateway's proxy
    (plain HTTP and a CONNECT tunnel), recorded with its bytes; unlisted names are refused
    (403) and recorded as refused. Ingest keeps them in ``events`` and ``network_connections``."""
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    port = str(site.server_address[1])
    agent = net("fetch-all", f"http://localhost:{port}/plain", "http://refused.invalid/x", "--",
                "localhost", port, "blocked.invalid", "443")
    m = corpus(kit, corpus_root, [{"id": "fetcher", "agent": agent}], "gateway")
    data = json.loads(m.read_text())
    data["isolation"]["allow_hosts"] = [f"localhost:{port}", "*.pypi.org"]
    m.write_text(json.dumps(data))
    try:
        res = run_trials(m, tmp_path / "o", progress=False)
    finally:
        site.shutdown()
    said = outputs(tmp_path / "o")["mul__fetcher__r1"]
    assert f"FETCHED http://localhost:{port}/plain 200 b'hello from the allowed host at /plain'" in said, said
    assert "refused http://refused.invalid/x 403" in said
    assert "CONNECT localhost HTTP/1.1 200" in said and "TUNNELLED HTTP/1.0 200 OK" in said
    assert "CONNECT blocked.invalid HTTP/1.1 403" in said
    conns = [e for e in read_events(res.events_path) if isinstance(e, NetworkConnection)]
    got = sorted((c.method, c.host, c.allowed) for c in conns)
    assert got == [("CONNECT", "blocked.invalid", False), ("CONNECT", "localhost", True),
                   ("GET", "localhost", True), ("GET", "refused.invalid", False)], got
    for c in conns:
        assert (c.bytes_down > 0) is c.allowed and c.stage == "build" and c.attempt == 1
        assert c.reason == (None if c.allowed else "not in isolation.allow_hosts")
    start = next(e for e in read_events(res.events_path) if isinstance(e, RunStarted))
    assert start.isolation.allow_hosts == [f"localhost:{port}", "*.pypi.org"]
    from ingest.api import ingest_paths
    from warehouse import db as warehouse_db

    wh = tmp_path / "w" / "t.duckdb"
    ingest_paths([tmp_path / "o"], wh)
    con = warehouse_db.open(wh, read_only=True)
    try:
        typed = con.execute("SELECT method, host, allowed, bytes_down > 0 FROM network_connections "
                            "ORDER BY method, host").fetchall()
        generic = con.execute("SELECT count(*) FROM events WHERE event = 'network_connection'").fetchall()
    finally:
        con.close()
    assert typed == [("CONNECT", "blocked.invalid", False, False), ("CONNECT", "localhost", True, True),
                     ("GET", "localhost", True, True), ("GET", "refused.invalid", False, False)]
    assert generic == [(4,)]


# -- gateway limits ----------------------------------------------------------------------------


def test_a_connection_flood_ends_the_flooder_and_leaves_the_others_and_the_console_alone(
        kit, corpus_root, tmp_path):
    """20,000 idle connections from one agent to its gateway route: beyond its cap each is
    closed as soon as accepted (the runner's descriptors stay its own); the flooder ends
    ``budget_exhausted`` naming the cap, a concurrent honest trial is accepted, and the
    console says so in one line."""
    variants = [{"id": "flooder", "agent": net("flood", "20000", "3")},
                {"id": "honest", "agent": net("call-model")}]
    m = corpus(kit, corpus_root, variants, None)
    out = tmp_path / "o"
    proc = subprocess.run([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                           "--jobs", "2", "--no-progress"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = read_events(out / "events.jsonl")
    fins = finished(events)
    flooder, honest = fins["mul__flooder__r1"], fins["mul__honest__r1"]
    assert flooder.outcome == "budget_exhausted" and "gateway.max_connections=64" in flooder.reason, flooder.reason
    assert honest.outcome == "accepted", honest.reason
    (budget,) = [e for e in events if isinstance(e, Budget) and e.trial_id == flooder.trial_id]
    assert budget.type == "gateway" and budget.limit == 64 and budget.used > 1000
    console = (proc.stdout + proc.stderr).splitlines()
    capped = [ln for ln in console if "connections cap" in ln]
    assert len(capped) == 1 and "mul__flooder__r1" in capped[0], console
    assert not any("Too many open files" in ln for ln in console)
    assert len(console) < 40, console
    said = outputs(out)["mul__flooder__r1"]
    assert "opened" in said and "flood over" in said
