"""Criterion commands: argv without a shell, ``{inputs}``/``{workspace}`` substitution,
working directory in the input snapshot, and the exit-code contract.

Exit 0 = passed, 1 = failed (behaviour absent); any other code, a signal or a timeout
= inconclusive, which is a grader/infrastructure problem and never the agent's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.manifest import Criterion
from runner.procs import ProcResult, ordinary_env, run_bounded

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


def grade(
    criterion: Criterion,
    *,
    workspace: Path,
    inputs_dir: Path,
    log_dir: Path | None = None,
    tag: str = "",
) -> GradeResult:
    """Run one deterministic criterion against ``workspace``; output kept in ``log_dir``."""
    assert criterion.command is not None, "judge criteria are not graded here"
    ws, inp = str(workspace.resolve()), str(inputs_dir.resolve())
    argv = substitute(criterion.command, {"inputs": inp, "workspace": ws})
    env = ordinary_env({"TRIALHOUSE_WORKSPACE": ws, "TRIALHOUSE_INPUTS": inp})
    out = err = None
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        out = log_dir / f"{criterion.id}{tag}.out"
        err = log_dir / f"{criterion.id}{tag}.err"
    res = run_bounded(
        argv, cwd=inputs_dir, env=env, timeout=criterion.timeout_seconds,
        stdout_path=out, stderr_path=err, limit=GRADER_OUTPUT_LIMIT,
    )
    return GradeResult(
        criterion_id=criterion.id,
        layer=criterion.layer,
        verdict=verdict_of(res),
        exit_code=res.exit_code,
        signal=res.signal,
        timed_out=res.timed_out,
        duration_s=round(res.duration_s, 3),
        output_path=str(out) if out else None,
    )
