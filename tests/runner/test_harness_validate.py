"""Harness kinds and the gateway in ``validate``: each bad setup is one clear located problem.

Fake CLIs (a shell script that prints the version line the real CLI prints) keep these
fast; the real CLIs are exercised in tests/runner/agents/test_harness_trials.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.validate import validate_manifest

VERSION = {"claude-code": "2.1.332 (Claude Code)", "codex": "codex-cli 0.171.0",
           "mini-swe-agent": "This is mini-swe-agent version 2.4.6."}


def fake_cli(prefix: Path, kind: str, name: str | None = None) -> Path:
    """``<prefix>/bin/<name>``: prints ``kind``'s version line for ``--version``."""
    path = prefix / "bin" / (name or {"claude-code": "claude", "codex": "codex", "mini-swe-agent": "mini"}[kind])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{VERSION[kind]}'\n")
    path.chmod(0o755)
    return path


def manifest(kit, root: Path, variant: dict, **top) -> Path:
    path = kit.make_corpus(root, variants=[variant])
    data = json.loads(path.read_text())
    data.update(top)
    path.write_text(json.dumps(data))
    return path


def problems(path: Path) -> list[str]:
    return [str(p) for p in validate_manifest(path).problems]


@pytest.fixture
def cli_dir(tmp_path):
    return tmp_path / "opt" / "agent-cli"


GATEWAY = {"mode": "scripted", "script": "patches/mul.patch"}  # any snapshotted file; parsed below


def scripted(root: Path) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    (root / "script.json").write_text(json.dumps({"steps": [{"text": "done"}]}))
    return {"mode": "scripted", "script": "script.json"}


def test_a_harness_variant_is_valid_and_validate_prints_version_and_mounts(kit, corpus_root, cli_dir):
    binary = fake_cli(cli_dir, "claude-code")
    m = manifest(kit, corpus_root, {"id": "c", "model": "m", "agent": {"kind": "claude-code", "binary": str(binary)}},
                 gateway=scripted(corpus_root))
    report = validate_manifest(m)
    assert report.ok, report.problems
    assert report.notes == [f"variants[0] c: claude-code 2.1.332 at {binary} (visible in the sandbox: {cli_dir})",
                            "gateway: scripted mode for c",
                            "isolation.network: gateway (agents reach the model gateway only; graders have no network)"]
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "validate", "--manifest", str(m)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "claude-code 2.1.332 at" in proc.stdout


def test_a_missing_cli_is_a_located_problem_with_the_fix(kit, corpus_root):
    m = manifest(kit, corpus_root, {"id": "c", "model": "m", "agent": {"kind": "codex",
                                                                       "binary": "trialhouse-no-such-codex"}},
                 gateway=scripted(corpus_root))
    (problem,) = problems(m)
    assert problem.startswith("variants[0].agent.binary: codex: 'trialhouse-no-such-codex' is not installed")
    assert "make tools" in problem
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "validate", "--manifest", str(m)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr
    # and a run refuses to start (no trial), naming the same problem
    run = subprocess.run([sys.executable, "-m", "trialhouse", "run", "--manifest", str(m), "--output",
                          str(corpus_root.parent / "out")], capture_output=True, text=True)
    assert run.returncode == 2 and "is not installed" in run.stderr and "Traceback" not in run.stderr


def test_a_cli_that_prints_no_known_version_is_refused(kit, corpus_root, cli_dir):
    binary = cli_dir / "bin" / "claude"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\necho 'claude, some new format'\n")
    binary.chmod(0o755)
    m = manifest(kit, corpus_root, {"id": "c", "model": "m", "agent": {"kind": "claude-code", "binary": str(binary)}},
                 gateway=scripted(corpus_root))
    (problem,) = problems(m)
    assert "printed no version this trialhouse recognises (claude, some new format)" in problem


def test_the_manifest_version_must_be_the_installed_one(kit, corpus_root, cli_dir):
    binary = fake_cli(cli_dir, "mini-swe-agent")
    m = manifest(kit, corpus_root, {"id": "c", "model": "m", "harness_version": "2.0.0",
                                    "agent": {"kind": "mini-swe-agent", "binary": str(binary)}},
                 gateway=scripted(corpus_root))
    assert problems(m) == [f"variants[0].harness_version: the manifest says 2.0.0, but {binary} is "
                           "mini-swe-agent 2.4.6"]


@pytest.mark.parametrize(("agent", "where", "needle"), [
    ({"kind": "codex", "max_turns": 5}, "variants[0].agent.max_turns", "codex exec has no turn limit"),
    ({"kind": "codex", "codex_sandbox": "workspace-write"}, "variants[0].agent.codex_sandbox",
     "cannot start inside trialhouse's bubblewrap sandbox"),
    ({"kind": "mini-swe-agent", "allowed_tools": ["Bash"]}, "variants[0].agent.allowed_tools",
     "only claude-code has tool permissions"),
])
def test_settings_that_do_not_fit_the_kind(kit, corpus_root, cli_dir, agent, where, needle):
    binary = fake_cli(cli_dir, agent["kind"])
    m = manifest(kit, corpus_root, {"id": "c", "model": "m", "agent": {**agent, "binary": str(binary)}},
                 gateway=scripted(corpus_root))
    (problem,) = problems(m)
    assert problem.startswith(where + ":") and needle in problem


def test_codex_keeps_its_own_sandbox_without_bubblewrap(kit, corpus_root, cli_dir):
    from runner.agents.harness_stage import resolve
    from runner.manifest import Manifest

    binary = fake_cli(cli_dir, "codex")
    m = manifest(kit, corpus_root, {"id": "c", "model": "m", "agent": {"kind": "codex", "binary": str(binary)}},
                 gateway=scripted(corpus_root), isolation={"backend": "none"})
    assert problems(m) == []
    variant = Manifest.model_validate_json(m.read_text()).variants[0]
    for isolated, mode in ((True, "danger-full-access"), (False, "workspace-write")):
        found = resolve(variant, corpus_root, uses_gateway=True, isolated=isolated)
        assert found.harness.settings.sandbox == mode


@pytest.mark.parametrize(("variant", "needle"), [
    ({"id": "c", "agent": {"kind": "claude-code"}}, "a claude-code agent needs the variant's model"),
    ({"id": "c", "model": "m", "agent": {"kind": "claude-code", "argv": ["claude"]}},
     "argv: a claude-code agent's argv is built by trialhouse"),
    ({"id": "c", "agent": {"kind": "command", "argv": ["x"], "max_turns": 3}},
     "max_turns: only for the harness kinds"),
    ({"id": "c", "agent": {"kind": "null", "gateway": True}}, "gateway: null agents call no model"),
])
def test_shape_problems_of_the_harness_fields(kit, corpus_root, variant, needle):
    m = manifest(kit, corpus_root, variant, gateway=scripted(corpus_root))
    assert any(needle in p for p in problems(m)), problems(m)


def test_without_a_gateway_the_key_must_be_passed_and_is_then_in_the_sandbox(kit, corpus_root, cli_dir):
    binary = fake_cli(cli_dir, "claude-code")
    m = manifest(kit, corpus_root, {"id": "c", "model": "m", "agent": {"kind": "claude-code", "binary": str(binary)}})
    (problem,) = problems(m)
    assert problem.startswith("variants[0].agent.pass_env:") and "ANTHROPIC_API_KEY" in problem
    m = manifest(kit, corpus_root / "b", {"id": "c", "model": "m", "agent": {
        "kind": "claude-code", "binary": str(binary), "pass_env": ["ANTHROPIC_API_KEY"]}})
    assert problems(m) == []


def test_gateway_problems(kit, corpus_root, cli_dir, monkeypatch):
    binary = fake_cli(cli_dir, "claude-code")
    variant = {"id": "c", "model": "m", "agent": {"kind": "claude-code", "binary": str(binary)}}
    monkeypatch.delenv("TH_TEST_ANTHROPIC_KEY", raising=False)
    forward = {"mode": "forward", "upstreams": {"anthropic": {"base_url": "http://127.0.0.1:9",
                                                              "api_key_env": "TH_TEST_ANTHROPIC_KEY"}}}
    m = manifest(kit, corpus_root / "a", variant, gateway=forward)
    assert problems(m) == ["gateway.upstreams.anthropic.api_key_env: TH_TEST_ANTHROPIC_KEY is not set in this "
                           "environment: the gateway sends it to http://127.0.0.1:9 for the agents' anthropic calls"]
    monkeypatch.setenv("TH_TEST_ANTHROPIC_KEY", "sk-ant-test-0123456789abcdef0123")
    assert problems(m) == []
    # no network at all leaves no way to the gateway (false is the old spelling of none)
    for off in (False, "none"):
        m = manifest(kit, corpus_root / f"b{off}", variant, gateway=forward, isolation={"network": off})
        assert any("isolation.network: none leaves no way to the model gateway, which variant(s) c use" in p
                   for p in problems(m)), problems(m)
    # a script that is not one, and a mode without its inputs
    root = corpus_root / "c"
    m = manifest(kit, root, variant, gateway={"mode": "scripted", "script": "script.json"})
    (root / "script.json").write_text(json.dumps({"steps": [{"text": "x", "status": 500}]}))
    (problem,) = problems(m)
    assert problem.startswith("gateway.script: script.json: not a gateway script")
    m = manifest(kit, corpus_root / "d", variant, gateway={"mode": "replay"})
    assert any("replay mode needs recording_dir" in p for p in problems(m))
    m = manifest(kit, corpus_root / "e", variant, gateway={"mode": "scripted", "script": "nope.yaml"})
    assert any(p.startswith("gateway.script: file not found") for p in problems(m))


def test_an_installation_holding_the_manifest_directory_is_never_mounted(kit, tmp_path):
    # an npm install at the top of a project whose manifest lives inside it: the automatic
    # rule would mount the project (graders, reference patches) — refused, narrower instead
    project = tmp_path / "project"
    package = project / "node_modules" / "@scope" / "cli"
    fake_cli(package, "claude-code")
    link = project / "node_modules" / ".bin" / "claude"
    link.parent.mkdir(parents=True)
    link.symlink_to("../@scope/cli/bin/claude")
    m = manifest(kit, project / "bench", {"id": "c", "model": "m", "agent": {"kind": "claude-code",
                                                                             "binary": str(link)}},
                 gateway=scripted(project / "bench"))
    report = validate_manifest(m)
    assert report.ok, report.problems
    (note,) = [n for n in report.notes if n.startswith("variants")]
    assert note.endswith(f"(visible in the sandbox: {project / 'node_modules'})")  # not the project


def test_an_install_prefix_that_is_home_gives_way_to_its_bin(tmp_path, monkeypatch):
    from runner.sandbox import program_mounts

    home = tmp_path / "home"
    binary = fake_cli(home, "codex")  # ~/bin/codex
    monkeypatch.setenv("HOME", str(home))
    found = program_mounts(str(binary), os.environ["PATH"])
    assert found.mounts == (home / "bin",) and found.problem is None


def test_a_mount_that_would_expose_a_protected_path_is_a_problem(tmp_path):
    from runner.sandbox import program_mounts

    prefix = tmp_path / "tools"
    binary = fake_cli(prefix, "codex")
    found = program_mounts(str(binary), "/usr/bin", protected=(prefix / "bin" / "secrets",))
    assert found.problem and "agents must not see" in found.problem


def test_mini_with_a_cost_budget_on_a_model_litellm_does_not_price_is_refused_with_the_fix(kit, corpus_root):
    """The pinned mini-swe-agent and its own litellm price list: an unpriced model with
    max_budget_usd stops at its first call (tests/runner/agents fixture unpriced-budget)."""
    mini = str(Path(__file__).resolve().parents[2] / "tools" / "bin" / "mini")
    assert Path(mini).exists(), "run `make tools`"

    def variant(model: str, **agent) -> dict:
        return {"id": "m", "model": model, "agent": {"kind": "mini-swe-agent", "binary": mini, **agent}}

    m = manifest(kit, corpus_root / "a", variant("th-unpriced-1", max_budget_usd=2.0),
                 gateway=scripted(corpus_root / "a"))
    (problem,) = problems(m)
    assert problem.startswith("variants[0].agent.max_budget_usd: mini-swe-agent's litellm has no price for "
                              "openai/th-unpriced-1")
    assert "remove max_budget_usd" in problem and "use a model litellm prices" in problem
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "validate", "--manifest", str(m)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "max_budget_usd" in proc.stdout + proc.stderr
    fine = (variant("gpt-5-mini", max_budget_usd=2.0), variant("anthropic/claude-sonnet-4-5", max_budget_usd=2.0),
            variant("th-unpriced-1"))  # priced, priced under its provider prefix, or no budget at all
    for n, ok in enumerate(fine):
        assert problems(manifest(kit, corpus_root / f"ok{n}", ok, gateway=scripted(corpus_root / f"ok{n}"))) == []
