"""Write judge calibrations and human reviews into the warehouse (``judge_calibrations``,
``judge_calibration_items``, ``reviews``), each import its own partition.

A review file (CSV or JSONL) has per row: ``trial_id`` [, ``run_id``], ``reviewer``,
``decision`` (accept/reject), ``reason_code`` (required when the decision disagrees with
the grader: the trial's outcome ``accepted`` is the grader's accept), ``minutes`` (≥ 0),
``failure_category`` (optional, ``ingest.annotations.CATEGORIES``), ``note``, and the
anchored grid: one ``grid.<item>`` column per item of the review rubric (a YAML file with
``id``, ``version``, ``reason_codes`` and ``items: {item: [choice, ...]}``). Rows naming
unknown trials, missing a reason code for a disagreement, with negative or non-numeric
minutes, or grid choices the rubric does not define are quarantined with their line, and so
are records that cannot be read (a field past 128 KiB, a record past 1 MiB, not UTF-8, not
CSV): the file is read a bounded record at a time (``ingest.csv_records``; docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from ingest.annotations import CATEGORIES, DECISIONS
from ingest.api import IngestInputError, IngestQuarantined, IngestResult
from ingest.batch import QuarantineRow
from ingest.csv_records import TooManyRecords, csv_records, jsonl_records
from ingest.write import file_meta, new_batch_id, unchanged, write_batch
from warehouse import db
from warehouse.schema import TableRows


def store_calibration(warehouse: Path, summary: dict[str, Any], items: list[dict[str, Any]],
                      files: list[dict[str, Any]]) -> str:
    """One calibration as a partition ``calibration-<id>``; returns the calibration id."""
    cid = summary["calibration_id"]
    with db.write_lock(warehouse):
        db.prepare(warehouse)
        write_batch(warehouse, f"calibration-{cid}", new_batch_id(), "calibrate-judge", files,
                    {"judge_calibrations": [summary], "judge_calibration_items": items}, [], None, [])
        db.refresh(warehouse)
    return cid


def _grid_rubric(path: Path | None) -> tuple[str | None, dict[str, list[str]], list[str]]:
    if path is None:
        return None, {}, []
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise IngestInputError(f"{path}: cannot read the review rubric ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), dict) or "version" not in doc:
        raise IngestInputError(f"{path}: a review rubric needs id, version and items: {{item: [choices]}}")
    items = {str(k): [str(c) for c in v] for k, v in doc["items"].items() if isinstance(v, list)}
    return f"{doc.get('id', path.stem)}@{doc['version']}", items, [str(c) for c in doc.get("reason_codes", [])]


def read_rows(path: Path, f: BinaryIO) -> Iterator[tuple[int, dict[str, Any], str]]:
    """``(line, record, raw text)`` of every row (review, cohort ticket), a bounded record at a time
    (``ingest.csv_records``); a record that cannot be read is ``{"_bad": why}``."""
    if path.suffix == ".jsonl":
        for line, text, problem, raw in jsonl_records(f):
            rec = None
            if text is not None:
                try:
                    rec = json.loads(text)
                except (ValueError, RecursionError):
                    pass
            yield line, rec if isinstance(rec, dict) else {"_bad": problem or "not a JSON object"}, raw
        return
    try:
        _names, records = csv_records(f)
    except ValueError as e:
        raise IngestInputError(f"{path}: {e}") from None
    for r in records:
        yield r.line, r.fields if r.fields is not None else {"_bad": r.problem}, r.raw


def import_reviews(path: Path, warehouse: Path, *, rubric: Path | None = None,
                   allow_quarantine: bool = False) -> IngestResult:
    path, warehouse = Path(path), Path(warehouse)
    if not path.is_file():
        raise IngestInputError(f"{path}: no such file")
    if not warehouse.is_file():
        raise IngestInputError(f"{warehouse}: no warehouse here; ingest the runs first")
    grid_id, grid, codes = _grid_rubric(rubric)
    files = file_meta([path] if rubric is None else [path, Path(rubric)])
    run_id = f"reviews-{hashlib.sha256(''.join(str(f['sha256']) for f in files).encode()).hexdigest()[:12]}"
    result = IngestResult()
    with db.write_lock(warehouse):
        db.prepare(warehouse)
        same = unchanged(warehouse, run_id, files)
        if same is not None:
            result.batches.append(same)
        else:
            con = db.open(warehouse, read_only=True)
            try:
                known: dict[str, list[tuple[str, str]]] = {}
                for tid, rid, outcome in con.execute("SELECT trial_id, run_id, outcome FROM trials").fetchall():
                    known.setdefault(tid, []).append((rid, outcome))
            finally:
                con.close()
            rows, quarantine, now = TableRows("reviews"), TableRows("quarantine"), datetime.now(UTC)
            with path.open("rb") as f:
                try:
                    for line, rec, raw in read_rows(path, f):
                        reason, row = _review_row(rec, known, grid, codes, grid_id, now, line)
                        if reason:
                            quarantine.append(QuarantineRow(str(path), line, reason, raw).as_row())
                        else:
                            rows.append(row)
                except TooManyRecords as e:
                    raise IngestInputError(f"{path}: {e}") from None
            result.batches.append(write_batch(warehouse, run_id, new_batch_id(), "reviews", files,
                                              {"reviews": rows}, quarantine, None, []))
        db.refresh(warehouse)
    if result.quarantined and not allow_quarantine:
        raise IngestQuarantined(result)
    return result


def _review_row(rec: dict[str, Any], known: dict[str, list[tuple[str, str]]], grid: dict[str, list[str]],
                codes: list[str], grid_id: str | None, now: datetime, line: int) -> tuple[str | None, dict]:
    if "_bad" in rec:
        return rec["_bad"], {}
    s = {k: ("" if v is None else str(v)).strip() for k, v in rec.items() if not isinstance(v, dict)}
    tid, want = s.get("trial_id", ""), s.get("run_id") or None
    runs = [r for r in known.get(tid, []) if want is None or r[0] == want]
    decision = s.get("decision", "").lower()
    if not tid:
        return "trial_id is empty", {}
    if not runs:
        return f"unknown trial_id {tid!r}" + (f" in run {want!r}" if want else ""), {}
    if len(runs) > 1:
        return f"trial_id {tid!r} is in several runs; add a run_id column", {}
    if not s.get("reviewer"):
        return "reviewer is empty (who said it is required)", {}
    if decision not in DECISIONS:
        return f"decision {decision!r} is not one of {', '.join(DECISIONS)}", {}
    grader = "accept" if runs[0][1] == "accepted" else "reject"
    code = s.get("reason_code") or None
    if decision != grader and code is None:
        return f"reason_code is required: the decision {decision} disagrees with the grader ({grader})", {}
    if code is not None and codes and code not in codes:
        return f"reason_code {code!r} is not one of the rubric's ({', '.join(codes)})", {}
    minutes = None
    if s.get("minutes"):
        try:
            minutes = float(s["minutes"])
        except ValueError:
            return f"minutes {s['minutes']!r} is not a number", {}
        if not minutes >= 0 or minutes == float("inf"):
            return f"minutes {s['minutes']} must be a finite number >= 0", {}
    category = (s.get("failure_category") or "").lower() or None
    if category is not None and category not in CATEGORIES:
        return f"failure_category {category!r} is not one of {', '.join(CATEGORIES)}", {}
    chosen = {k.removeprefix("grid."): v for k, v in s.items() if k.startswith("grid.") and v}
    if isinstance(rec.get("grid"), dict):
        chosen.update({str(k): str(v) for k, v in rec["grid"].items()})
    for item, choice in chosen.items():
        if item not in grid:
            return f"grid item {item!r} is not in the review rubric ({', '.join(grid) or 'none given: pass --rubric'})", {}
        if choice not in grid[item]:
            return f"grid.{item}: {choice!r} is not one of {', '.join(grid[item])}", {}
    return None, {"trial_id": tid, "trial_run_id": runs[0][0], "reviewer": s["reviewer"], "decision": decision,
                  "grader_verdict": grader, "reason_code": code, "minutes": minutes,
                  "grid_json": json.dumps(chosen, sort_keys=True) if chosen else None,
                  "grid_rubric": grid_id if chosen else None, "failure_category": category,
                  "note": s.get("note") or None, "reviewed_at": now, "source_line": line}


@dataclass(frozen=True)
class ReviewRubric:
    """What a review row may say: the anchored grid (``items``: item → choices), the reason
    codes, decisions and failure categories. ``trialhouse view`` draws its review form from it."""

    grid_id: str | None
    items: dict[str, list[str]]
    reason_codes: list[str]
    decisions: tuple[str, ...] = DECISIONS
    categories: tuple[str, ...] = CATEGORIES


def review_rubric(path: Path | None) -> ReviewRubric:
    """The review rubric at ``path`` (None: no grid, any reason code), read as ``import_reviews`` reads it."""
    grid_id, items, codes = _grid_rubric(path)
    return ReviewRubric(grid_id, items, codes)


def check_review(rec: dict[str, Any], trials: list[tuple[str, str]], rubric: ReviewRubric) -> str | None:
    """Why ``import_reviews`` would quarantine the review ``rec`` (None: it would import it).

    ``trials`` are (run_id, outcome) of every trial in the warehouse named ``rec["trial_id"]``:
    the same rule decides, so a review recorded in the viewer imports as it was checked.
    """
    tid = str(rec.get("trial_id") or "").strip()
    reason, _row = _review_row(rec, {tid: trials}, rubric.items, rubric.reason_codes, rubric.grid_id,
                               datetime.now(UTC), 0)
    return reason
