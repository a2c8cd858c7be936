"""Criterion commands on a pristine state: argv without a shell, a fresh copy per grading.

Exit 0 = passed, 1 = failed (behaviour absent); any other code, a signal or a timeout
= inconclusive, which is a grader/infrastructure problem and never the agent's.

Graders never run on the agent's workspace. Each criterion gets a fresh copy of the
runner-captured tree (plus the ignored files ``prepare_commands`` produced) and a fresh
copy of its own case's inputs (``case_inputs``: the files its criteria name, never another
case's reference patch or graders) written from the runner's memory; both run inside the
isolation backend with a clean environment (nothing of the runner's but the allow-list),
after every process of the agent is gone, contained like an agent: no network (its own
network namespace, loopback only), the workspace and the inputs read-only, a private
size-capped /tmp (Python's byte-code goes there: ``PYTHONPYCACHEPREFIX``) and an empty
HOME as the only writable places. The input copy is checked as a whole tree afterwards. A
criterion with ``success_token`` is given a one-time token on stdin and passes only if the
grader wrote it to ``$TRIALHOUSE_RESULT_FILE``: workspace code that ends the grader early
with ``os._exit(0)`` makes it fail, not pass (docs/security.md, "The verdict channel").
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.grader_output import normalise, output_key
from contract.redact import Redactor
from contract.trial_events import Grading
from runner import sandbox
from runner.capture import TrialGit
from runner.evidence import read_capped, write_atomic
from runner.manifest import Case, Criterion
from runner.paths import Snapshot, inputs_in_argv, sha256_file, verify_tree
from runner.pristine import Pristine, remove_tree
from runner.procs import ProcResult, ordinary_env

GRADER_OUTPUT_LIMIT = 256 * 1024
GRADER_TMP_BYTES = 512 * 1024 * 1024
"""Size of a grader's private /tmp (a tmpfs: memory, so capped)."""
GRADER_TAIL = 2000
"""Characters of grader output handed to a retry when ``reveal_grader_output`` is set."""


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
    output_key: str | None = None
    """``contract.grader_output.output_key`` of the kept output (None: no output kept)."""


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
    read_only: tuple[Path, ...] = ()
    redactor: Redactor | None = None
    """Applied to every grader output kept as evidence."""
    verified: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """``verify_tree``'s stat keys of the input copy between criteria."""
    _records: dict[str, Pristine] = field(default_factory=dict)
    """The scratch directories written so far (``inputs``, ``run``), reused while intact."""

    def fresh(self, name: str, write: Any, content_ok: Any = None) -> Path:
        """``scratch/name`` as ``write(path)`` makes it: the copy from last time when it is
        provably untouched (``runner.pristine``), else written afresh. Handed out on return."""
        path = self.scratch / name
        record = self._records.get(name)
        if record is None or not record.intact():
            self._records.pop(name, None)
            self.git.store.discard(path)
            write(path)
            record = Pristine(path, content_ok or (lambda _rel, _path: False))
            if record.record():
                self._records[name] = record
        record.expose()
        return path

    def close(self) -> None:
        """Remove the scratch directory (the last grading is done)."""
        self._records.clear()
        remove_tree(self.scratch)


@dataclass(frozen=True)
class GradingRun:
    """The results of grading one state, and any integrity problem found while doing it."""

    results: list[GradeResult]
    violations: list[str]


def case_inputs(snapshot: Snapshot, case: Case) -> Snapshot:
    """The inputs ``case``'s graders may see: the files its command criteria name (``files``
    and ``{inputs}/…`` in their argv), never another case's, nor any reference patch."""
    wanted: set[str] = set()
    for crit in case.criteria:
        if crit.command is not None:
            wanted |= set(crit.files) | set(inputs_in_argv(crit.command))
    keep = sorted(r for r in snapshot.hashes if r in wanted)
    return Snapshot(snapshot.root, {r: snapshot.hashes[r] for r in keep}, {r: snapshot.contents[r] for r in keep})


def grade_tree(ctx: GradingContext, criteria: list[Criterion], tree: str, *,
               overlay: str | None, log_dir: Path | None, tag: str = "",
               deadline_s: float | None = None) -> GradingRun:
    """Grade ``tree`` with every deterministic criterion, each on a pristine copy.

    Each criterion gets the captured tree, the input snapshot and an empty HOME exactly
    as the runner wrote them: the copies of the previous criterion (or grading) when they
    are provably untouched, fresh ones otherwise (``GradingContext.fresh``). The inputs
    are checked as a whole tree after every criterion. ``ctx.close()`` removes them.
    """
    snap = ctx.snapshot
    results: list[GradeResult] = []
    violations: list[str] = []
    for crit in (c for c in criteria if c.command is not None):
        inputs = ctx.fresh("inputs", snap.materialise,
                           lambda rel, path: snap.hashes.get(rel) == sha256_file(path))
        run_dir = ctx.fresh("run", _grader_dirs)
        ws = ctx.scratch / "ws"
        ctx.git.materialise(tree, ws, overlay=overlay, timeout=deadline_s, reuse=True)
        results.append(_grade_one(ctx, crit, ws, inputs, run_dir, log_dir, tag, tree))
        bad = verify_tree(inputs, snap.hashes, ctx.verified)
        if bad:
            violations += [f"inputs/{b} (during {crit.id})" for b in bad]
            break
    return GradingRun(results, violations)


def _grader_dirs(run_dir: Path) -> None:
    """A grader's private HOME and the directory of its result file (both empty)."""
    (run_dir / "home").mkdir(parents=True)
    (run_dir / "result").mkdir()


def _grade_one(ctx: GradingContext, crit: Criterion, ws: Path, inputs: Path, run_dir: Path,
               log_dir: Path | None, tag: str, tree: str) -> GradeResult:
    assert crit.command is not None, "judge criteria are not graded here"
    home = run_dir / "home"
    result_file = run_dir / "result" / "result"
    ws_s, inp = str(ws), str(inputs)
    argv = substitute(crit.command, {"inputs": inp, "workspace": ws_s})
    # The workspace is read-only: byte-code a grader writes (compileall) goes to its own /tmp.
    pycache = "/tmp/.pycache" if ctx.backend.isolated else str(home / ".pycache")
    env = ordinary_env({"TRIALHOUSE_WORKSPACE": ws_s, "TRIALHOUSE_INPUTS": inp,
                        "TRIALHOUSE_RESULT_FILE": str(result_file), "HOME": str(home),
                        "PYTHONNOUSERSITE": "1", "PYTHONPYCACHEPREFIX": pycache})
    token = secrets.token_hex(16) if crit.success_token else None
    out = err = None
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        out = log_dir / f"{crit.id}{tag}.out"
        err = log_dir / f"{crit.id}{tag}.err"
    req = sandbox.Request(
        argv=argv, cwd=inputs, env=env,
        read_only=[inputs, ws, Path(sys.prefix), *ctx.read_only, *argv_paths(argv)],
        read_write=[home, result_file.parent], tmp=None, network=False, tmp_bytes=GRADER_TMP_BYTES,
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
    try:
        result_file.unlink()  # the next criterion's directory is checked to be empty again
    except OSError:
        pass
    if ctx.redactor is not None:
        for path in (out, err):
            if path is not None:
                ctx.redactor.file(path, GRADER_OUTPUT_LIMIT)
    key = _normalised(out, err, {"<workspace>": ws_s, "<inputs>": inp, "<home>": str(home),
                                 "<scratch>": str(ctx.scratch)})
    return GradeResult(
        criterion_id=crit.id, layer=crit.layer, verdict=verdict, exit_code=res.exit_code,
        signal=res.signal, timed_out=res.timed_out, duration_s=round(res.duration_s, 3),
        output_path=str(out) if out else None, tree=tree, success_token=token is not None,
        token_ok=token_ok, note=note, output_key=key,
    )


def _normalised(out: Path | None, err: Path | None, paths: dict[str, str]) -> str | None:
    """The grader's output normalised for comparison (``contract.grader_output``), written
    beside the raw output (``<criterion>.normalized``, the raw files untouched); its key."""
    if out is None or err is None:
        return None
    texts = []
    for path in (out, err):
        data, _cut = read_capped(path, GRADER_OUTPUT_LIMIT)
        texts.append((data or b"").decode("utf-8", "replace"))
    write_atomic(out.with_suffix(".normalized"),
                 ("--- stdout\n" + normalise(texts[0], paths) + "\n--- stderr\n"
                  + normalise(texts[1], paths)).encode("utf-8", "replace"))
    return output_key(texts[0], texts[1], paths)


def retry_findings(stage_findings: list[str], results: list[GradeResult], criteria: list[Criterion],
                   reveal_output: bool) -> list[str]:
    """Concrete findings for the next attempt: the stages' verdict findings, then each
    criterion that did not pass with its description (and the tail of its output when
    the manifest reveals grader output)."""
    out = list(stage_findings)
    crit = {c.id: c for c in criteria}
    for r in results:
        if r.verdict == "passed":
            continue
        desc = crit[r.criterion_id].description or "(no description)"
        text = f"criterion {r.criterion_id} ({r.layer}) did not pass: {desc}"
        if reveal_output and r.output_path:
            data, _cut = read_capped(Path(r.output_path), GRADER_TAIL * 64)
            if data is not None:
                text += f"\ngrader output:\n{data.decode('utf-8', 'replace')[-GRADER_TAIL:]}"
        out.append(text)
    return out


def emit_gradings(emit: Callable[..., object], attempt: int, results: list[GradeResult], final: bool,
                  baseline: dict[str, str]) -> None:
    """One ``grading`` event per result, with the criterion's verdict on the initial commit."""
    for r in results:
        emit(Grading, attempt=attempt, final=final, criterion_id=r.criterion_id,
             layer=r.layer, exit_code=r.exit_code, signal=r.signal, timed_out=r.timed_out,
             verdict=r.verdict, duration_s=r.duration_s, baseline=baseline.get(r.criterion_id), tree=r.tree,
             success_token=r.success_token, token_ok=r.token_ok, note=r.note, output_key=r.output_key)
