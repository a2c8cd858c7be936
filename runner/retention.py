"""Retention: remove what a finished run no longer needs, keep what its numbers rest on
(docs/rollout.md, "Retention").

A policy file names, in days after a run finished, when its **raw stage output** (each
trial's ``logs/``, ``agent-events/``, ``trajectories/``, grader output in ``grading/``,
leftover ``.runner/``/``.sandbox/``, the controls' ``*-logs/``) and its **workspaces** (each
trial's ``workspace/``, the controls' ``negative/``/``positive/`` copies) go. Never touched:
``events.jsonl`` and its seal (every warehouse row is rebuilt from them), ``report.json``,
``inputs/`` (the evaluator versions), ``changes.patch``, ``checkpoints/``, ``verdicts/``,
``prompts/``; and the warehouse itself (aggregates, labels, reviews, calibrations). A run
without a closed seal is never collected: it may still be written or resumed.

Nothing is removed without ``apply``; what is removed is appended to the run's
``retention.jsonl`` (path, kind, files, bytes, the policy and its sha256). A symlink where a
directory should be is removed as a link, never followed.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from contract.chain import RETENTION_LOG
from contract.files import engine_version, file_sha256
from runner.errors import RunnerError
from runner.pristine import remove_tree

RAW_OUTPUT = ("logs", "agent-events", "trajectories", "grading", ".runner", ".sandbox")
"""A trial's directories of raw stage output (runner.trial_files.EVIDENCE_DIRS minus what is kept)."""
KEPT = ("prompts", "verdicts", "checkpoints", "changes.patch", "workspace-removed.txt")
"""What stays of a trial after any policy (besides the run's events, seal, report and inputs)."""
LOG_NAME = RETENTION_LOG


class Policy(BaseModel):
    """How long after a run finished its raw stage output and its workspaces are kept."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    raw_output_days: float | None = Field(default=None, ge=0)
    workspace_days: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _something(self) -> Policy:
        if self.raw_output_days is None and self.workspace_days is None:
            raise ValueError("give raw_output_days, workspace_days or both (days after a run finished)")
        return self


def load_policy(path: Path) -> tuple[Policy, str]:
    """The policy and the sha256 of its file; a ``RunnerError`` names the file and field."""
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunnerError(f"{path}: cannot read the retention policy ({exc.strerror})") from None
    except yaml.YAMLError:
        raise RunnerError(f"{path}: the retention policy is not YAML or JSON; fix the file") from None
    try:
        policy = Policy.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        raise RunnerError(f"{path}: {where}: {str(err['msg']).removeprefix('Value error, ')}") from None
    return policy, file_sha256(Path(path))[0]


@dataclass(frozen=True)
class Removal:
    path: str  # relative to the run directory
    kind: str  # raw_output | workspace
    files: int
    bytes: int


@dataclass
class RunRetention:
    run_dir: Path
    run_id: str | None
    finished_at: datetime | None
    skipped: str | None = None
    removals: list[Removal] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "run_id": self.run_id,
                "finished_at": self.finished_at.isoformat() if self.finished_at else None,
                "skipped": self.skipped, "removed": [r.__dict__ for r in self.removals],
                "files": sum(r.files for r in self.removals), "bytes": sum(r.bytes for r in self.removals)}


@dataclass
class Collection:
    """What a policy removes (``applied``) or would remove (a dry run), per run."""

    policy: Policy
    policy_path: Path
    policy_sha256: str
    at: datetime
    applied: bool
    runs: list[RunRetention]

    @property
    def bytes(self) -> int:
        return sum(r.bytes for run in self.runs for r in run.removals)

    @property
    def files(self) -> int:
        return sum(r.files for run in self.runs for r in run.removals)

    def as_dict(self) -> dict[str, Any]:
        return {"policy": {"path": str(self.policy_path), "sha256": self.policy_sha256,
                           **self.policy.model_dump()},
                "at": self.at.isoformat(), "applied": self.applied, "files": self.files,
                "bytes": self.bytes, "runs": [r.as_dict() for r in self.runs]}


def find_runs(paths: list[Path], depth: int = 3) -> list[Path]:
    """Run directories (holding ``events.jsonl``) at or below ``paths``; links are not followed."""
    found: list[Path] = []

    def visit(p: Path, left: int) -> None:
        if p.is_symlink() or not p.is_dir():
            return
        if (p / "events.jsonl").is_file():
            found.append(p)
            return
        if left:
            for child in sorted(p.iterdir()):
                if child.name not in ("trials", "inputs"):
                    visit(child, left - 1)

    for p in paths:
        if not Path(p).is_dir():
            raise RunnerError(f"{p}: no such directory; give run directories or a directory of runs")
        visit(Path(p), depth)
    return found


def _finished(run_dir: Path) -> tuple[str | None, datetime | None, str | None]:
    """(run id, when its last event was written, why it is skipped) from the seal and the last line."""
    try:
        seal = json.loads((run_dir / "events.seal.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        seal = None
    if not isinstance(seal, dict) or not seal.get("closed"):
        return None, None, "run not finished (no closed seal): it may still be written or resumed"
    with (run_dir / "events.jsonl").open("rb") as fh:
        fh.seek(max(0, fh.seek(0, os.SEEK_END) - 65536))
        lines = [ln for ln in fh.read().splitlines() if ln.strip()]
    try:
        ts = datetime.fromisoformat(json.loads(lines[-1])["ts"].replace("Z", "+00:00"))
    except (IndexError, ValueError, KeyError, TypeError):
        return seal.get("run_id"), None, "the last event of events.jsonl has no time; not collected"
    return seal.get("run_id"), ts, None


def _dirs(run_dir: Path, parent: str, names: tuple[str, ...] | None, suffix: str = "") -> list[Path]:
    """``run_dir/parent/<entry>/<name>`` for each real directory entry (a symlinked entry is skipped)."""
    root = run_dir / parent
    if root.is_symlink() or not root.is_dir():
        return []
    out = []
    for entry in sorted(root.iterdir()):
        if entry.is_symlink() or not entry.is_dir():
            continue
        if names is None:
            out += [c for c in sorted(entry.iterdir()) if c.name.endswith(suffix)]
        else:
            out += [entry / n for n in names if os.path.lexists(entry / n)]
    return out


def candidates(run_dir: Path, policy: Policy, age: timedelta) -> list[tuple[Path, str]]:
    """What ``policy`` removes from a run that finished ``age`` ago: (path, kind)."""
    days = age / timedelta(days=1)
    out: list[tuple[Path, str]] = []
    if policy.raw_output_days is not None and days >= policy.raw_output_days:
        out += [(p, "raw_output") for p in _dirs(run_dir, "trials", RAW_OUTPUT)]
        out += [(p, "raw_output") for p in _dirs(run_dir, "controls", None, "-logs")]
    if policy.workspace_days is not None and days >= policy.workspace_days:
        out += [(p, "workspace") for p in _dirs(run_dir, "trials", ("workspace",))]
        out += [(p, "workspace") for p in _dirs(run_dir, "controls", ("negative", "positive"))]
    return out


def _measure(path: Path) -> tuple[int, int]:
    """(files, bytes) under ``path`` without following links (a link counts as one file)."""
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        return 1, st.st_size
    files = size = 0
    for top, dirs, names in os.walk(path, followlinks=False):
        for n in [*names, *(d for d in dirs if os.path.islink(os.path.join(top, d)))]:
            files += 1
            size += os.lstat(os.path.join(top, n)).st_size
    return files, size


def collect(paths: list[Path], policy_path: Path, *, apply: bool = False,
            at: datetime | None = None) -> Collection:
    """Apply (or, by default, only list) the retention policy to the runs at or below ``paths``."""
    policy, sha = load_policy(policy_path)
    at = at or datetime.now(UTC)
    result = Collection(policy, Path(policy_path), sha, at, apply, [])
    for run_dir in find_runs([Path(p) for p in paths]):
        run_id, finished, skipped = _finished(run_dir)
        run = RunRetention(run_dir, run_id, finished, skipped)
        result.runs.append(run)
        if finished is None:
            continue
        for path, kind in candidates(run_dir, policy, at - finished):
            files, size = _measure(path)
            run.removals.append(Removal(str(path.relative_to(run_dir)), kind, files, size))
        if apply and run.removals:
            _remove(run_dir, run, result)
    return result


def _remove(run_dir: Path, run: RunRetention, result: Collection) -> None:
    """Record, then remove: the log line is written first, so a crash leaves a record of
    everything that may be gone (a second gc finds what is left and records it again)."""
    record = {"removed_at": datetime.now(UTC).isoformat(), "policy": str(result.policy_path),
              "policy_sha256": result.policy_sha256, **result.policy.model_dump(),
              "trialhouse_version": engine_version(), "run_id": run.run_id,
              "removed": [r.__dict__ for r in run.removals]}
    with (run_dir / LOG_NAME).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
    for r in run.removals:
        remove_tree(run_dir / r.path)
