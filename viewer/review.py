"""Recording a review from a trial page: the form's fields, the same check ``review import``
applies (``ingest.judges.check_review``), and one JSON line appended to the reviews file
the user chose. The warehouse stays the product of ingest: ``trialhouse review import
FILE`` reads the file (the audit trail) like any other review file (docs/viewer.md)."""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.judges import ReviewRubric, check_review, review_rubric
from viewer.errors import ViewerError

if TYPE_CHECKING:
    import duckdb

FIELDS = ("reviewer", "decision", "reason_code", "minutes", "failure_category", "note")
MAX_FIELD = 4000


@dataclass(frozen=True)
class ReviewSetup:
    """Where reviews go (None: the form is read-only) and the rubric the form draws its grid from."""

    file: Path | None
    rubric: ReviewRubric
    rubric_path: Path | None = None


def setup(file: Path | None, rubric: Path | None) -> ReviewSetup:
    """Check the reviews file and read the rubric before the viewer starts (one line on error)."""
    if file is not None:
        if file.suffix != ".jsonl":
            raise ViewerError(f"--reviews {file}: give a .jsonl file (review import reads JSONL by its suffix)")
        if file.exists() and not file.is_file():
            raise ViewerError(f"--reviews {file}: not a regular file; name a .jsonl file to append to")
        if not file.parent.is_dir():
            raise ViewerError(f"--reviews {file}: the directory {file.parent} does not exist; create it first")
        if not os.access(file if file.exists() else file.parent, os.W_OK):
            raise ViewerError(f"--reviews {file}: cannot write there; choose a file you can write")
    return ReviewSetup(file, review_rubric(rubric), rubric)  # a bad rubric: ingest's own one-line error


def record_from_form(form: Any, run: str, trial_id: str, grid: ReviewRubric) -> dict[str, Any]:
    """The review line a form submission makes (the shape ``review import`` reads)."""
    rec: dict[str, Any] = {"trial_id": trial_id, "run_id": run}
    for name in FIELDS:
        value = str(form.get(name, "") or "").strip()[:MAX_FIELD]
        if value:
            rec[name] = value
    chosen = {item: str(form.get(f"grid.{item}", "") or "").strip() for item in grid.items}
    if any(chosen.values()):
        rec["grid"] = {k: v for k, v in chosen.items() if v}
    return rec


def validate(con: duckdb.DuckDBPyConnection, rec: dict[str, Any], grid: ReviewRubric) -> str | None:
    """Why ``review import`` would refuse the line (None: it would import it)."""
    from viewer.queries import rows

    trials = [(r["run_id"], r["outcome"]) for r in rows(con, "trial_outcomes", trial=rec["trial_id"])]
    return check_review(rec, trials, grid)


def append(file: Path, rec: dict[str, Any]) -> int:
    """Append ``rec`` as one JSON line (locked, after a newline if the file lacks one); its line number."""
    line = json.dumps({**rec, "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
                       "recorded_with": "trialhouse view"}, ensure_ascii=False, sort_keys=True)
    fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        prefix = b""
        if size:
            os.lseek(fd, size - 1, os.SEEK_SET)
            prefix = b"" if os.read(fd, 1) == b"\n" else b"\n"
        os.write(fd, prefix + line.encode("utf-8") + b"\n")
        os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_SET)
        with os.fdopen(os.dup(fd), "rb") as fh:
            return sum(1 for _ in fh)
    finally:
        os.close(fd)


def pending(file: Path | None, run: str, trial_id: str, limit: int = 50) -> list[dict[str, Any]]:
    """Reviews of this trial in the reviews file (recorded, perhaps not imported yet)."""
    if file is None or not file.is_file():
        return []
    out = []
    with file.open(encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("trial_id") == trial_id and rec.get("run_id") in (run, None):
                out.append({**rec, "line": n})
    return out[-limit:]
