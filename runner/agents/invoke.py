"""Turn a variant's agent definition into one sandboxed invocation for one stage.

Agents are always subprocesses inside the isolation backend. Each stage gets a private
directory the runner created: ``in/`` (read-only inside: the prompt, the context, and
for built-in kinds the one input their kind is defined to use — the reference patch,
the recorded patch or the candidate changes of *this* case) and ``out/`` (read-write:
the agent-events and verdict files the agent may write). The trial's HOME and TMP are
per trial. Nothing else of the runner, the run or other trials is visible.

Built-in kinds run the standard-library script ``runner/agents/builtin.py`` (copied into
``in/``) with the base interpreter in isolated mode; ``command`` agents get their argv
placeholders expanded inside single elements (no shell) and an allow-listed environment;
the harness kinds (``claude-code``, ``codex``, ``mini-swe-agent``) run their CLI's plan
(``runner.agents.harness_stage``). An agent that goes through the run's model gateway
gets its own route as ``TRIALHOUSE_MODEL_BASE_URL`` (``{model_base_url}``) and a dummy
key; the provider's key stays with the gateway.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runner import sandbox
from runner.agents.harness import GATEWAY_KEY
from runner.agents.harness_stage import ResolvedHarness, StageFiles, stage_request
from runner.grading import argv_paths, substitute
from runner.manifest import Case, Variant
from runner.paths import Snapshot
from runner.procs import ordinary_env
from runner.visible import CHECKS_ENV, write_checks

BUILTIN_KINDS = ("null", "reference", "replay", "simulated")
BUILTIN_SCRIPT = Path(__file__).with_name("builtin.py")


@dataclass
class StageDirs:
    """The runner-created directories of one stage invocation."""

    root: Path
    home: Path
    tmp: Path
    shm: Path | None = None
    """The trial's ``/dev/shm`` directory (counted with its workspace); None: a size-capped tmpfs."""

    @property
    def inp(self) -> Path:
        return self.root / "in"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def prompt_file(self) -> Path:
        return self.inp / "prompt.md"

    @property
    def events_file(self) -> Path:
        return self.out / "agent-events.jsonl"

    @property
    def verdict_file(self) -> Path:
        return self.out / "verdict.json"

    def create(self, prompt: str) -> None:
        for d in (self.inp, self.out, self.home, self.tmp, *([self.shm] if self.shm else [])):
            d.mkdir(parents=True, exist_ok=True)
        self.prompt_file.write_text(prompt, encoding="utf-8")
        self.events_file.touch()
        gitconfig = self.home / ".gitconfig"
        if not gitconfig.exists():
            gitconfig.write_text("[user]\n\tname = trialhouse agent\n\temail = agent@trialhouse.local\n")


@dataclass
class StageContext:
    """Everything a stage invocation needs to know (also the built-in agents' ctx.json)."""

    kind: str
    stage: str
    attempt: int
    case_id: str
    repetition: int
    variant_id: str
    model: str | None
    seed: int
    workspace: str
    reference_patch: str | None
    patches_dir: str | None
    candidates_dir: str | None
    skill: float | None
    price_per_mtok: float | None
    findings: list[str]
    prompt_file: str
    events_file: str
    verdict_file: str
    labels: dict[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = None
    max_cost_usd: float | None = None
    """The trial's spend limit (None: unlimited); with ``spent_usd``, what the stage may spend."""
    spent_usd: float = 0.0
    """The spend the trial's earlier stages reported."""
    sweep: str | None = None
    """The budget sweep the variant is a point of (the simulated agent seeds on it)."""
    checks_dir: str | None = None
    """The stage's visible checks (``$TRIALHOUSE_CHECKS``), None when the case has none."""
    stages: list[str] = field(default_factory=list)
    """The stages of an attempt, in order (the manifest's)."""


def _builtin_inputs(variant: Variant, case: Case, snapshot: Snapshot, inp: Path) -> dict[str, str | None]:
    """Copy the one input this built-in kind may use into ``in/``; return its paths."""
    kind, agent = variant.agent.kind, variant.agent
    paths: dict[str, str | None] = {"reference_patch": None, "patches_dir": None, "candidates_dir": None}
    if kind == "reference":
        snapshot.materialise(inp / "reference", only=[case.reference_patch])
        paths["reference_patch"] = str(inp / "reference" / case.reference_patch)
    elif kind == "replay" and agent.patches_dir:
        rel = f"{agent.patches_dir.rstrip('/')}/{case.id}.patch"
        snapshot.materialise(inp / "recorded", only=[rel] if rel in snapshot.hashes else [])
        paths["patches_dir"] = str(inp / "recorded" / agent.patches_dir)
    elif kind == "simulated" and agent.candidates_dir:
        prefix = f"{agent.candidates_dir.rstrip('/')}/{case.id}/"
        snapshot.materialise(inp / "candidates", only=[r for r in snapshot.hashes if r.startswith(prefix)])
        paths["candidates_dir"] = str(inp / "candidates" / agent.candidates_dir)
    return paths


@dataclass(frozen=True)
class Invocation:
    request: sandbox.Request
    harness: StageFiles | None = None
    """For the harness kinds: the plan and where its output lands."""


def proxy_env() -> dict[str, str]:
    """The gateway proxy on the sandbox's loopback (``isolation.network: gateway``), for every
    client that reads the usual variables; the gateway itself (loopback) goes direct."""
    url = f"http://127.0.0.1:{sandbox.PROXY_PORT}"
    out = {}
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        out[name] = url
    out["NO_PROXY"] = out["no_proxy"] = "127.0.0.1,::1"
    return out


def build_request(variant: Variant, case: Case, ctx: StageContext, snapshot: Snapshot,
                  dirs: StageDirs, *, network: bool, read_only: list[Path],
                  harness: ResolvedHarness | None = None, base_url: str | None = None,
                  link: Path | None = None) -> Invocation:
    """The sandboxed invocation of this stage (writes ``in/ctx.json`` for built-in kinds,
    the harness's config files into the private HOME for the harness kinds). ``link``: the
    gateway route's socket directory, the sandbox's only way out (``isolation.network: gateway``)."""
    agent = variant.agent
    ws = Path(ctx.workspace)
    env_extra = {
        "TRIALHOUSE_AGENT_EVENTS": ctx.events_file,
        "TRIALHOUSE_VERDICT_FILE": ctx.verdict_file,
        "TRIALHOUSE_PROMPT_FILE": ctx.prompt_file,
        "TRIALHOUSE_STAGE": ctx.stage,
        "TRIALHOUSE_ATTEMPT": str(ctx.attempt),
        "TRIALHOUSE_WORKSPACE": ctx.workspace,
        "TRIALHOUSE_CASE_ID": ctx.case_id,
        "HOME": str(dirs.home),
    }
    if base_url is not None:
        env_extra["TRIALHOUSE_MODEL_BASE_URL"] = base_url
        env_extra["TRIALHOUSE_MODEL_API_KEY"] = GATEWAY_KEY
    if link is not None:
        env_extra.update(proxy_env())
    check_mounts = write_checks(case, snapshot, dirs.inp / "checks", ws)
    if check_mounts:
        ctx.checks_dir = env_extra[CHECKS_ENV] = str(dirs.inp / "checks")
        read_only = [*read_only, *check_mounts]
    rw = [ws, dirs.out, dirs.home]
    if harness is not None:
        req, files = stage_request(
            harness, prompt=dirs.prompt_file.read_text(encoding="utf-8"), workspace=ws, home=dirs.home,
            tmp_inside=dirs.tmp, out=dirs.out, env_extra=env_extra, pass_env=agent.pass_env, base_url=base_url,
            read_only=[dirs.inp, *read_only], read_write=rw, tmp=dirs.tmp, shm=dirs.shm, network=network, link=link)
        return Invocation(req, files)
    if agent.kind in BUILTIN_KINDS:
        for key, value in _builtin_inputs(variant, case, snapshot, dirs.inp).items():
            setattr(ctx, key, value)
        ctx.skill = agent.skill
        ctx.price_per_mtok = agent.price_per_mtok
        data = asdict(ctx)
        data.pop("reasoning_effort")
        ctx_path = dirs.inp / "ctx.json"
        ctx_path.write_text(json.dumps(data, indent=2))
        script = dirs.inp / "builtin_agent.py"
        shutil.copyfile(BUILTIN_SCRIPT, script)
        argv = [sandbox.interpreter(), "-I", "-B", str(script), "--context", str(ctx_path)]
        return Invocation(sandbox.Request(argv=argv, cwd=ws, env=ordinary_env(env_extra),
                                          read_only=[dirs.inp, *check_mounts], read_write=rw,
                                          tmp=dirs.tmp, shm=dirs.shm, network=network, link=link))
    assert agent.argv
    values = {
        "workspace": ctx.workspace,
        "prompt_file": ctx.prompt_file,
        "model": ctx.model or "",
        "stage": ctx.stage,
        "attempt": str(ctx.attempt),
        "case_id": ctx.case_id,
        "reasoning_effort": ctx.reasoning_effort or "",
        "events_file": ctx.events_file,
        "verdict_file": ctx.verdict_file,
        "model_base_url": base_url or "",
        # Last, so placeholders inside the prompt text are left alone.
        "prompt": dirs.prompt_file.read_text(encoding="utf-8"),
    }
    argv = substitute(list(agent.argv), values)
    env = ordinary_env(env_extra, pass_env=agent.pass_env)
    return Invocation(sandbox.Request(argv=argv, cwd=ws, env=env,
                                      read_only=[dirs.inp, *read_only, *argv_paths(argv)],
                                      read_write=rw, tmp=dirs.tmp, shm=dirs.shm, network=network, link=link))
