"""Criterion commands on a pristine state: argv without a shell, a fresh copy per grading.

Exit 0 = passed, 1 = failed (behaviour absent); any other code, a signal or a timeout
= inconclusive, which is a grader/infrastructure problem and never the agent's.

Graders never run on the agent's workspace. Each criterion gets a fresh copy of the
runner-captured tree (plus the ignored files ``prepare_commands`` produced) and a fresh
copy of the input snapshot written from the runner's memory; both run inside the
isolation backend with a clean environment (nothing of the runner's but the
allow-list), after every process of the agent is gone. The input copy is read-only
inside and checked as a whole tree afterwards. A criterion with ``success_token`` is
given a one-time token on stdin and passes only if the grader wrote it to
``$TRIALHOUSE_RESULT_FILE``: workspace code that ends the grader early with
``os._exit(0)`` makes it fail, not pass.
"""

from __future__ import annotations

import secrets
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from runner import sandbox
from runner.capture import TrialGit
from runner.evidence import read_capped
from runner.manifest import Criterion
from runner.paths import Snapshot, verify_tree
from runner.procs import ProcResult, ordinary_env
from runner.redact import Redactor

GRADER_OUTPUT_LIMIT = 256 * 1024


@dataclass(frozen=True)
class GradeResult:
    criterion_id: str
    layer: str
    verdict: str
    exit_code: int | None
    signal: int | None
    timed_out: bool
    duration_s: float
    output_path: str | None = None
    tree: str | None = None
    success_token: bool = False
    token_ok: bool | None = None
    note: str = ""


def verdict_of(result: ProcResult) -> str:
    if result.timed_out or result.signal is not None or result.could_not_start:
        return "inconclusive"
    return {0: "passed", 1: "failed"}.get(result.exit_code, "inconclusive")  # type: ignore[arg-type]


def substitute(argv: list[str], values: dict[str, str]) -> list[str]:
    """Replace ``{name}`` placeholders inside each element; no splitting, no shell."""
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def argv_paths(argv: list[str]) -> list[Path]:
    """Absolute paths an argv names that exist on the host (shown read-only inside),
    and the interpreter a script's ``#!`` line names."""
    paths = [Path(a) for a in argv if a.startswith("/") and Path(a).exists()]
    if argv:
        interp = sandbox.shebang(argv[0])
        if interp and interp.startswith("/") and Path(interp).exists():
            paths.append(Path(interp))
    return paths


@dataclass
class GradingContext:
    """What every grading of one trial (or control) shares."""

    backend: sandbox.Backend
    snapshot: Snapshot
    git: TrialGit
    scratch: Path
    """Runner-owned directory for the fresh copies (never visible to an agent)."""
    network: bool = True
    read_only: tuple[Path, ...] = ()
    redactor: Redactor | None = None
    """Applied to every grader output kept as evidence."""


@dataclass(frozen=True)
class GradingRun:
    """The results of grading one state, and any integrity problem found while doing it."""

    results: list[GradeResult]
    violations: list[str]


def grade_tree(ctx: GradingContext, criteria: list[Criterion], tree: str, *,
               overlay: str | None, log_dir: Path | None, tag: str = "",
               deadline_s: float | None = None) -> GradingRun:
    """Grade ``tree`` with every deterministic criterion, each on its own fresh copy."""
    scratch = ctx.scratch
    if scratch.exists():
        shutil.rmtree(scratch)
    inputs = ctx.snapshot.materialise(scratch / "inputs")
    results: list[GradeResult] = []
    violations: list[str] = []
    for index, crit in enumerate(c for c in criteria if c.command is not None):
        ws = scratch / f"ws-{index}"
        ctx.git.materialise(tree, ws, overlay=overlay, timeout=deadline_s)
        results.append(_grade_one(ctx, crit, ws, inputs, scratch / f"run-{index}", log_dir, tag,
                                  tree))
        shutil.rmtree(ws, ignore_errors=True)
        bad = verify_tree(inputs, ctx.snapshot.hashes)
        if bad:
            violations += [f"inputs/{b} (during {crit.id})" for b in bad]
            break
    shutil.rmtree(scratch, ignore_errors=True)
    return GradingRun(results, violations)


def _grade_one(ctx: GradingContext, crit: Criterion, ws: Path, inputs: Path, run_dir: Path,
               log_dir: Path | None, tag: str, tree: str) -> GradeResult:
    assert crit.command is not None, "judge criteria are not graded here"
    home = run_dir / "home"
    home.mkdir(parents=True)
    result_file = run_dir / "result" / "result"
    result_file.parent.mkdir()
    ws_s, inp = str(ws), str(inputs)
    argv = substitute(crit.command, {"inputs": inp, "workspace": ws_s})
    env = ordinary_env({"TRIALHOUSE_WORKSPACE": ws_s, "TRIALHOUSE_INPUTS": inp,
                        "TRIALHOUSE_RESULT_FILE": str(result_file), "HOME": str(home),
                        "PYTHONNOUSERSITE": "1"})
    token = secrets.token_hex(16) if crit.success_token else None
    out = err = None
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        out = log_dir / f"{crit.id}{tag}.out"
        err = log_dir / f"{crit.id}{tag}.err"
    req = sandbox.Request(
        argv=argv, cwd=inputs, env=env,
        read_only=[inputs, Path(sys.prefix), *ctx.read_only, *argv_paths(argv)],
        read_write=[ws, home, result_file.parent], tmp=None, network=ctx.network,
    )
    res = sandbox.run(ctx.backend, req, timeout=crit.timeout_seconds, stdout_path=out,
                      stderr_path=err, limit=GRADER_OUTPUT_LIMIT,
                      stdin_bytes=(token + "\n").encode() if token else None)
    verdict, token_ok, note = verdict_of(res), None, ""
    if res.could_not_start:
        note = res.error or "could not start"
    if token is not None:
        written, _cut = read_capped(result_file, 4096)
        token_ok = written is not None and token in written.decode("utf-8", "replace")
        if verdict == "passed" and not token_ok:
            verdict = "failed"
            note = ("exited 0 without writing its success token to $TRIALHOUSE_RESULT_FILE "
                    "(ended early, e.g. by os._exit in the code under test)")
    shutil.rmtree(run_dir, ignore_errors=True)
    if ctx.redactor is not None:
        for path in (out, err):
            if path is not None:
                ctx.redactor.file(path, GRADER_OUTPUT_LIMIT)
    return GradeResult(
        criterion_id=crit.id, layer=crit.layer, verdict=verdict, exit_code=res.exit_code,
        signal=res.signal, timed_out=res.timed_out, duration_s=round(res.duration_s, 3),
        output_path=str(out) if out else None, tree=tree, success_token=token is not None,
        token_ok=token_ok, note=note,
    )
