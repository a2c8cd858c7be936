"""Pieces of a harness stage: what is mounted for a CLI, what is read back, what is summed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from runner import sandbox
from runner.agents.harness import HarnessPlan
from runner.agents.harness_stage import StageFiles, collect, gateway_usage, sum_gateway
from runner.gateway.records import CallRecord


def test_a_cli_installed_outside_the_system_runs_in_bubblewrap_with_exactly_the_automatic_mounts(tmp_path):
    # an npm-style install: <prefix>/node_modules/.bin/tool -> ../pkg/bin/tool, which reads
    # a data file of its package; started through a link in another directory (tools/bin)
    prefix = tmp_path / "tools" / "pkg-1.0"
    pkg = prefix / "node_modules" / "pkg"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "data.txt").write_text("the package's own data\n")
    real = pkg / "bin" / "tool"
    real.write_text('#!/bin/sh\ncat "$(dirname "$(readlink -f "$0")")/../data.txt"\n')
    real.chmod(0o755)
    (prefix / "node_modules" / ".bin").mkdir()
    (prefix / "node_modules" / ".bin" / "tool").symlink_to("../pkg/bin/tool")
    (tmp_path / "tools" / "bin").mkdir()
    link = tmp_path / "tools" / "bin" / "tool"
    link.symlink_to("../pkg-1.0/node_modules/.bin/tool")
    found = sandbox.program_mounts(str(link), "/usr/bin:/bin")
    assert found.problem is None and set(found.mounts) == {tmp_path / "tools" / "bin", prefix}
    backend = sandbox.backend("bubblewrap")
    out = tmp_path / "out.txt"
    req = sandbox.Request(argv=[found.path], cwd=Path("/"), env={"PATH": sandbox.SANDBOX_PATH},
                          read_only=list(found.mounts))
    res = sandbox.run(backend, req, timeout=30, stdout_path=out)
    assert res.exit_code == 0 and out.read_text() == "the package's own data\n"
    # without them the program is refused before it starts (not a message the agent could print)
    bare = sandbox.run(backend, sandbox.Request(argv=[found.path], cwd=Path("/"), env={"PATH": sandbox.SANDBOX_PATH}),
                       timeout=30)
    assert bare.could_not_start and "not visible inside the sandbox" in bare.error


def test_collect_copies_rollouts_without_following_links(tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("the operator's private key\n")
    sessions = tmp_path / "home" / ".codex" / "sessions"
    day = sessions / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / "rollout-a.jsonl").write_text('{"type":"session_meta"}\n')
    (day / "rollout-link.jsonl").symlink_to(secret)  # planted by the agent inside its sandbox
    (sessions / "2027").symlink_to(tmp_path)  # a symlinked directory: not walked
    (tmp_path / "rollout-outside.jsonl").write_text("outside\n")
    files = StageFiles(HarnessPlan(["codex"], {}, usage_format="codex-json", trajectory=sessions),
                       tmp_path / "home", tmp_path / "out")
    got = collect(files, tmp_path / "scratch")
    assert sorted(p.name for p in got.iterdir()) == ["rollout-a.jsonl"]
    assert not sessions.exists()  # the next stage starts without this stage's sessions


def test_collect_reads_mini_trajectory_only_as_a_regular_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mini.traj.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    files = StageFiles(HarnessPlan(["mini"], {}, usage_format="mini-trajectory", trajectory=out / "mini.traj.json"),
                       tmp_path / "home", out)
    assert collect(files, tmp_path / "scratch") is None


def _call(i: int, status: int | None, tokens: tuple | None, retries: int = 0) -> CallRecord:
    i_, o, cr, cw = tokens or (None, None, None, None)
    return CallRecord(trial_id="t", call_index=i, ts=datetime.now(UTC), mode="scripted", provider="openai",
                      api="responses", status=status, retries=retries, input_tokens=i_, output_tokens=o,
                      cache_read_tokens=cr, cache_write_tokens=cw, latency_s=0.5, request_sha256="x")


def test_gateway_usage_sums_answered_calls_and_keeps_unknown_unknown():
    calls = [_call(0, 500, None), _call(1, 200, (10, 2, 5, None), retries=1), _call(2, 200, (20, 3, 0, None))]
    u = gateway_usage(calls)
    assert (u.calls, u.failed_calls, u.retries) == (3, 1, 1)
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (30, 5, 5, None)
    assert u.model_s == 1.5
    only_failures = gateway_usage([_call(0, 500, None), _call(1, None, None)])
    assert only_failures.input_tokens is None and only_failures.failed_calls == 2  # unknown, not 0
    total = sum_gateway([u, None, only_failures])
    assert total.calls == 5 and total.input_tokens is None and total.retries == 1
    assert sum_gateway([None, None]) is None
