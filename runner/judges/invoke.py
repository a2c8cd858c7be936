"""Run a trial's judge criteria: after the final grading, never before, never deciding.

``JudgeRuntime`` is the run's: one gateway per mode the judges need (scripted when a
variant's judge names a ``script``, forward otherwise), started with the run. For each
judge criterion ``judge_trial`` writes the evidence (``runner.judges.evidence``), opens a
gateway route ``<trial>/judge.<criterion>/<attempt>``, runs the judge host in the sandbox
with the evidence read-only and a private HOME/TMP as the only writable places, and turns
what came back into a ``judgment`` event. Every way it can go wrong — the host timed out,
exited non-zero, answered with something that is not the JSON shape, asked for a tool,
claimed to have edited files, the gateway failed — is an ``inconclusive`` judgment with
the reason. Only one thing is the trial's business: the rubric file changed or vanished
since the run snapshotted it (``rubric_violation``), which makes the trial ``invalid``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.call_events import ModelCall
from contract.redact import Redactor
from contract.stage_events import Judgment
from runner import sandbox
from runner.agents.harness import GATEWAY_KEY, HarnessSettings, plan
from runner.agents.harness_stage import agent_path
from runner.evidence import read_capped
from runner.gateway.records import CallRecord, GatewayMode, gateway_failure, to_event_fields
from runner.gateway.run import upstreams
from runner.gateway.script import Script
from runner.gateway.server import Gateway
from runner.gateway.settings import GatewayConfigError
from runner.grading import argv_paths, substitute
from runner.judges.answer import parse_answer
from runner.judges.config import ResolvedJudge, load_judge_script, resolve
from runner.judges.evidence import Evidence, changed, write_evidence
from runner.manifest import Criterion, Manifest, Variant
from runner.paths import Snapshot
from runner.procs import ordinary_env

ANSWER_LIMIT = 256 * 1024
CLIENT = Path(__file__).with_name("client.py")


@dataclass
class JudgeRuntime:
    """What every judgment of a run shares (built by ``runner.run``; a context manager)."""

    manifest: Manifest
    manifest_dir: Path
    snapshot: Snapshot
    backend: sandbox.Backend
    network: str
    """The run's network policy: ``open`` gives judges the host's network; otherwise each judge
    reaches its gateway route through the route's sockets only (``runner.gateway.links``)."""
    read_only: tuple[Path, ...]
    redactor: Redactor
    gateways: dict[str, Gateway] = field(default_factory=dict)
    scripts: dict[str, Script] = field(default_factory=dict)
    """variant id → its judge script (scripted judges)."""

    @classmethod
    def build(cls, manifest: Manifest, manifest_dir: Path, snapshot: Snapshot, backend: sandbox.Backend, *,
              network: str, read_only: tuple[Path, ...], redactor: Redactor, secrets: list[str]) -> JudgeRuntime:
        rt = cls(manifest, manifest_dir, snapshot, backend, network, read_only, redactor)
        modes: set[GatewayMode] = set()
        for v in manifest.variants:
            rel = v.evaluations.judge.script
            if rel is not None:
                rt.scripts[v.id] = load_judge_script(snapshot.text(rel), f"variant {v.id}: evaluations.judge.script ({rel})")
                modes.add("scripted")
            else:
                modes.add("forward")
        for mode in sorted(modes):
            if mode == "forward" and manifest.gateway is not None and manifest.gateway.mode in ("forward", "record"):
                rt.gateways[mode] = Gateway("forward", upstreams=upstreams(manifest.gateway), secrets=secrets)
            else:
                rt.gateways[mode] = Gateway(mode, secrets=secrets)
        return rt

    def __enter__(self) -> JudgeRuntime:
        for gw in self.gateways.values():
            gw.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for gw in self.gateways.values():
            gw.stop()

    def rubric_violation(self, criterion: Criterion) -> str | None:
        """The rubric as the operator has it now, against the run's snapshot of it."""
        assert criterion.judge is not None
        rel = criterion.judge.rubric
        path = self.manifest_dir / rel
        try:
            now = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return f"rubric {rel} (criterion {criterion.id}) is missing since the run started"
        if now != self.snapshot.hashes.get(rel):
            return f"rubric {rel} (criterion {criterion.id}) changed since the run started"
        return None


@dataclass
class TrialEvidence:
    """What one trial hands its judges."""

    trial_id: str
    variant: Variant
    attempt: int
    diff: str
    results: list[dict[str, Any]]
    files: dict[str, bytes]
    scratch: Path
    """Runner-owned directory for evidence copies and the judges' HOME/TMP (removed after)."""


Emit = Callable[..., None]


def judge_trial(rt: JudgeRuntime, criteria: list[Criterion], te: TrialEvidence, emit: Emit) -> list[str]:
    """Judge every judge criterion; emit ``model_call`` and ``judgment`` events. Returns the
    integrity violations (a rubric changed or missing) — the only effect on the trial."""
    violations = []
    for crit in criteria:
        if crit.judge is None:
            continue
        bad = rt.rubric_violation(crit)
        if bad:
            violations.append(bad)
            judge = resolve(te.variant, crit)
            emit(Judgment, attempt=te.attempt, criterion_id=crit.id, verdict="inconclusive", abstained=True,
                 judge_model=judge.info.model, judge=judge.info, rubric=crit.judge.rubric,
                 rubric_sha256=rt.snapshot.hashes.get(crit.judge.rubric), error=bad)
            continue
        fields = judge_one(rt, crit, te, emit)
        emit(Judgment, attempt=te.attempt, criterion_id=crit.id, **fields)
    shutil.rmtree(te.scratch, ignore_errors=True)
    return violations


def judge_one(rt: JudgeRuntime, crit: Criterion, te: TrialEvidence, emit: Emit) -> dict[str, Any]:
    """One criterion's judgment: the fields of its ``judgment`` event (``model_call`` events
    of the judge's calls go to ``emit``)."""
    assert crit.judge is not None
    judge = resolve(te.variant, crit)
    rubric_rel = crit.judge.rubric
    rubric, hidden = rt.redactor.text(rt.snapshot.text(rubric_rel))
    diff, _ = rt.redactor.text(te.diff)
    files = {rel: rt.redactor.text(data.decode("utf-8", "replace"))[0].encode() for rel, data in te.files.items()}
    base = te.scratch / crit.id
    evidence = write_evidence(base / "evidence", criterion_id=crit.id, description=crit.description,
                              rubric=rubric, diff=diff, results=te.results, files=files)
    common = {"judge_model": judge.info.model, "judge": judge.info, "rubric": rubric_rel,
              "rubric_sha256": rt.snapshot.hashes.get(rubric_rel)}
    mode = "scripted" if te.variant.id in rt.scripts else "forward"
    gw = rt.gateways[mode]
    stage = f"judge.{crit.id}"
    started = time.monotonic()
    linked = rt.network != "open" and rt.backend.isolated
    try:
        url = gw.open_trial(te.trial_id, stage=stage, attempt=te.attempt, script=rt.scripts.get(te.variant.id),
                            variables={"criterion": crit.id, "trial": te.trial_id}, linked=linked)
    except GatewayConfigError as exc:
        return {**common, "verdict": "inconclusive", "abstained": True, "error": f"model gateway: {exc}"}
    try:
        text, problem = _run_host(rt, judge, evidence, base, url, gw.link_of(te.trial_id, stage, te.attempt))
    finally:
        calls = gw.close_trial(te.trial_id, stage, te.attempt)
    for call in calls:
        emit(ModelCall, **to_event_fields(call))
    duration = round(time.monotonic() - started, 3)
    problem = problem or _call_problem(calls) or _edited(evidence)
    parsed = parse_answer(text) if problem is None else None
    error = problem or (parsed.error if parsed else None)
    verdict = parsed.verdict if parsed and not error else "inconclusive"
    reasons = parsed.reasons if parsed else []
    category = parsed.failure_category if parsed and not error else None
    return {**common, "verdict": verdict, "abstained": verdict == "inconclusive", "reasons": reasons,
            "failure_category": category,
            "rationale": "; ".join(reasons)[:2000], "error": error, "duration_s": duration,
            "model_calls": len(calls)}


def _call_problem(calls: list[CallRecord]) -> str | None:
    failure = gateway_failure(calls)
    if failure:
        return failure
    tools = sorted({t for c in calls for t in (c.tool_calls or [])})
    if tools:
        return (f"the judge asked for tools ({', '.join(tools)}); judges run tool-free, so the answer "
                "is not trusted")
    return None


def _edited(evidence: Evidence) -> str | None:
    bad = changed(evidence)
    return f"the evidence changed while the judge ran ({', '.join(bad[:5])})" if bad else None


def _run_host(rt: JudgeRuntime, judge: ResolvedJudge, evidence: Evidence, base: Path, url: str,
              link: Path | None) -> tuple[str | None, str | None]:
    """Run the judge host; (answer text, problem)."""
    home, tmp, out = base / "home", base / "tmp", base / "out"
    for d in (home, tmp, out):
        d.mkdir(parents=True, exist_ok=True)
    prompt_file = evidence.root / "prompt.md"
    info, s = judge.info, judge.settings
    env_extra = {"HOME": str(home), "TRIALHOUSE_MODEL_BASE_URL": url, "TRIALHOUSE_MODEL_API_KEY": GATEWAY_KEY,
                 "TRIALHOUSE_EVIDENCE": str(evidence.root), "PYTHONNOUSERSITE": "1"}
    read_only = [evidence.root, *rt.read_only]
    fmt = "text"
    if info.host in ("builtin", "command"):
        if info.host == "builtin":
            shutil.copyfile(CLIENT, base / "client.py")
            argv = [sys.executable, str(base / "client.py"), str(prompt_file), info.model or "",
                    info.reasoning_effort or ""]
            read_only += [base / "client.py", Path(sys.prefix)]
        else:
            argv = substitute(list(s.argv or []), {"evidence": str(evidence.root), "prompt_file": str(prompt_file),
                                                   "model": info.model or "", "model_base_url": url,
                                                   "inputs": str(rt.snapshot.root)})
            read_only += [rt.snapshot.root, *argv_paths(argv)]
        req = sandbox.Request(argv=argv, cwd=evidence.root, env=ordinary_env(env_extra), read_only=read_only,
                              read_write=[home, out], tmp=tmp, network=rt.network == "open", link=link)
    else:
        req_or_problem = _harness_request(rt, judge, evidence, home, tmp, out, url, env_extra, read_only, link)
        if isinstance(req_or_problem, str):
            return None, req_or_problem
        req, fmt = req_or_problem
    stdout, stderr = out / "stdout", out / "stderr"
    res = sandbox.run(rt.backend, req, timeout=info.timeout_s, stdout_path=stdout, stderr_path=stderr,
                      limit=ANSWER_LIMIT)
    if res.timed_out:
        return None, f"the judge timed out after {info.timeout_s:g}s"
    if res.could_not_start:
        return None, f"the judge could not start: {res.error}"
    if res.exit_code != 0:
        tail, _ = read_capped(stderr, 64 * 1024)
        msg = rt.redactor.text((tail or b"").decode("utf-8", "replace").strip()[-300:])[0]
        return None, f"the judge exited {res.exit_code if res.exit_code is not None else 'by signal ' + str(res.signal)}" \
                     + (f": {msg}" if msg else "")
    data, _ = read_capped(stdout, ANSWER_LIMIT)
    return _answer_text((data or b"").decode("utf-8", "replace"), fmt), None


def _harness_request(rt: JudgeRuntime, judge: ResolvedJudge, evidence: Evidence, home: Path, tmp: Path,
                     out: Path, url: str, env_extra: dict[str, str], read_only: list[Path],
                     link: Path | None) -> tuple[sandbox.Request, str] | str:
    """A tool-free Claude Code (``--tools ""``) or a read-only Codex run on the evidence."""
    info, s = judge.info, judge.settings
    binary = s.binary or {"claude-code": "claude", "codex": "codex"}[info.host]
    if "/" in binary and not Path(binary).is_absolute():
        binary = str((rt.manifest_dir / binary).resolve())
    found = sandbox.program_mounts(binary, agent_path())
    if found.path is None or found.problem:
        return found.problem or f"the judge host {info.host}: {binary!r} is not installed or not on the PATH"
    if info.host == "claude-code":
        settings = HarnessSettings(kind="claude-code", model=info.model or "", binary=found.path,
                                   reasoning_effort=info.reasoning_effort, output_format="json",
                                   permission_mode="default", max_turns=1, extra_args=("--tools", ""))
    else:
        settings = HarnessSettings(kind="codex", model=info.model or "", binary=found.path,
                                   reasoning_effort=info.reasoning_effort, sandbox="read-only"
                                   if not rt.backend.isolated else "danger-full-access")
    p = plan(settings, prompt=evidence.prompt, workspace=evidence.root, home=home,
             tmp=Path("/tmp") if rt.backend.isolated else tmp, model_base_url=url, output_dir=out)
    for path, text in p.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = ordinary_env(env_extra)
    env.update(p.env)
    req = sandbox.Request(argv=list(p.argv), cwd=p.cwd, env=env, read_only=[*read_only, *found.mounts],
                          read_write=[home, out], tmp=tmp, network=rt.network == "open", link=link)
    return req, info.host


def _answer_text(stdout: str, fmt: str) -> str | None:
    """The judge's final text: stdout (builtin/command), Claude's ``result``, Codex's last message."""
    if fmt == "text":
        return stdout
    if fmt == "claude-code":
        try:
            doc = json.loads(stdout)
        except ValueError:
            return None
        if isinstance(doc, list):
            doc = next((d for d in reversed(doc) if isinstance(d, dict) and d.get("type") == "result"), {})
        return doc.get("result") if isinstance(doc, dict) and not doc.get("is_error") else None
    last = None
    for line in stdout.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        item = doc.get("item") if isinstance(doc, dict) else None
        if doc.get("type") == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
            last = item.get("text")
    return last
