"""A trial's evidence on disk: where its directory is, and its files read within bounds.

The runner keeps a trial's evidence in ``<run dir>/trials/<trial id>/`` (docs/runner.md):
``changes.patch``, ``checkpoints/a<N>-<stage>.patch``, ``grading/a<N>/<criterion>.out|.err``,
``logs/a<N>-<stage>.stdout|.stderr``, ``prompts/``, ``verdicts/``, ``agent-events/``,
``trajectories/``. The warehouse records where the run was ingested from
(``runs.source_path``, as given to ``ingest``); ``analysis.flags.evidence_dir`` turns it
into the trial's directory. A warehouse moved away from its runs is helped by
``--runs-root``: a run directory, or a directory of run directories. A file that is not
there is *missing* (shown as such), never an error; a file is read up to a bound (head
and tail), and a symlink is not followed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from analysis.flags import evidence_dir


@dataclass(frozen=True)
class Text:
    """A file's text within a bound: ``text`` is None when the file is missing."""

    rel: str
    text: str | None
    size: int = 0
    truncated: bool = False
    note: str | None = None

    @property
    def missing(self) -> bool:
        return self.text is None


def locate(source_path: str | None, trial_id: str, runs_roots: tuple[Path, ...] = ()) -> Path | None:
    """The trial's evidence directory, or None when no candidate holds it."""
    recorded = evidence_dir(source_path, trial_id)
    candidates: list[Path] = []
    if recorded:
        candidates.append(Path(recorded))
    run_name = PurePosixPath(recorded).parent.parent.name if recorded else None
    for root in runs_roots:
        candidates.append(root / "trials" / trial_id)
        if run_name:
            candidates.append(root / run_name / "trials" / trial_id)
    for c in candidates:
        try:
            if c.is_dir() and not c.is_symlink():
                return c.resolve()
        except OSError:
            continue
    return None


def _inside(base: Path, rel: str) -> Path | None:
    """``base/rel`` when it stays inside ``base`` and is no symlink; else None."""
    parts = PurePosixPath(rel).parts
    if not parts or any(p in ("..", "") or p.startswith("/") for p in parts):
        return None
    path = base.joinpath(*parts)
    cur = base
    for p in parts:
        cur = cur / p
        if cur.is_symlink():
            return None
    return path


def read(base: Path | None, rel: str, limit: int) -> Text:
    """Up to ``limit`` bytes of ``base/rel`` (head and tail when larger), decoded as UTF-8."""
    path = _inside(base, rel) if base is not None else None
    if path is None:
        return Text(rel, None, note="no evidence directory" if base is None else "not a plain path")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return Text(rel, None, note="missing")
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size <= limit:
            data = fh.read(limit)
            return Text(rel, data.decode("utf-8", "replace"), size)
        head = fh.read(limit // 2)
        fh.seek(size - limit // 2)
        tail = fh.read(limit // 2)
    gap = size - len(head) - len(tail)
    text = (head.decode("utf-8", "replace") + f"\n… {gap:,} bytes not shown …\n"
            + tail.decode("utf-8", "replace"))
    return Text(rel, text, size, truncated=True)


def read_prefix(base: Path | None, rel: str, limit: int) -> Text:
    """The first ``limit`` bytes (for a patch: whole files are cut later, never mid-line)."""
    path = _inside(base, rel) if base is not None else None
    if path is None:
        return Text(rel, None, note="no evidence directory" if base is None else "not a plain path")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return Text(rel, None, note="missing")
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(limit)
    return Text(rel, data.decode("utf-8", "replace"), size, truncated=size > limit)


def listing(base: Path | None, sub: str) -> list[str]:
    """Names in a subdirectory of the evidence (sorted; empty when it is not there)."""
    path = _inside(base, sub) if base is not None else None
    if path is None or not path.is_dir():
        return []
    return sorted(p.name for p in path.iterdir())


def stage_tag(attempt: int, stage: str) -> str:
    """The runner's file tag of one stage invocation: ``a<attempt>-<stage>``."""
    return f"a{attempt}-{stage}"
