"""Observational cohorts: agent work on real tickets (``trialhouse ingest --cohort
production|shadow FILE``) into ``cohort_tickets``, never into ``trials`` (docs/rollout.md,
"Observational cohorts", documents the file).

A cohort file is JSONL or CSV, one ticket per row: ``ticket``; ``repository``; the
configuration (``config``: a variant name or config_id the warehouse knows, else ``model``,
``harness``, ``harness_version``); ``opened``/``merged``/``reverted`` (true/false, or implied
by ``opened_at``/``merged_at``/``reverted_at``); ``review_minutes``; ``incidents`` (ids, a
JSON list or ``;``-separated); ``started_at``; and for a randomised control group ``arm``
(treatment | control) with its ``assignment_seed``. A row that contradicts itself (merged
but not opened, a duplicate ticket, negative minutes, …) is quarantined with its line.
Each file is its own partition, keyed by cohort and path, so an updated export replaces
the previous one.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingest.api import IngestInputError, IngestQuarantined, IngestResult
from ingest.batch import QuarantineRow
from ingest.csv_records import TooManyRecords
from ingest.judges import read_rows
from ingest.write import file_meta, new_batch_id, unchanged, write_batch
from warehouse import db
from warehouse.schema import TableRows

COHORTS = ("production", "shadow")
ARMS = ("treatment", "control")
_TRUE, _FALSE = {"true", "1", "yes", "y"}, {"false", "0", "no", "n", ""}


def _flag(s: dict[str, str], name: str, when: datetime | None) -> bool:
    text = s.get(name, "").lower()
    if text not in _TRUE | _FALSE:
        raise ValueError(f"{name} {s[name]!r} is not true or false")
    if text in _FALSE and text and when is not None:
        raise ValueError(f"{name} is false but {name}_at is {when.isoformat()}")
    return text in _TRUE or when is not None


def _time(s: dict[str, str], name: str) -> datetime | None:
    text = s.get(name, "")
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{name} {text!r} is not an ISO time (YYYY-MM-DDTHH:MM:SSZ)") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _minutes(s: dict[str, str]) -> float | None:
    text = s.get("review_minutes", "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"review_minutes {text!r} is not a number") from None
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"review_minutes {text} must be a finite number >= 0")
    return value


def _incidents(rec: dict[str, Any]) -> list[str]:
    raw = rec.get("incidents")
    if isinstance(raw, list):
        return [str(i).strip() for i in raw if str(i).strip()]
    return [i.strip() for i in str(raw or "").split(";") if i.strip()]


def _config(s: dict[str, str], known: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The configuration a row names, matched to the warehouse's when it can be."""
    name = s.get("config_id") or s.get("config") or ""
    if name:
        hits = [c for cid, c in known.items() if cid == name or c.get("variant") == name]
        hits = hits or [c for cid, c in known.items() if cid.startswith(name)]
        if len({c["config_id"] for c in hits}) == 1:
            return dict(hits[0])
        return {"config_id": s.get("config_id") or None, "variant": s.get("config") or None,
                "model": s.get("model") or None, "harness": s.get("harness") or None,
                "harness_version": s.get("harness_version") or None}
    keys = ("model", "harness", "harness_version")
    want = {k: s.get(k) or None for k in keys}
    hits = [c for c in known.values() if all(c.get(k) == v for k, v in want.items() if v)]
    if want["model"] and len(hits) == 1:
        return dict(hits[0])
    return {"config_id": None, "variant": None, **want}


def cohort_row(rec: dict[str, Any], cohort: str, known: dict[str, dict[str, Any]], seen: set[str],
               source: str, line: int) -> dict[str, Any]:
    """One ``cohort_tickets`` row, or ``ValueError`` saying why the row is quarantined."""
    if "_bad" in rec:
        raise ValueError(rec["_bad"])
    s = {k: ("" if v is None else str(v)).strip() for k, v in rec.items() if not isinstance(v, list | dict)}
    ticket = s.get("ticket", "")
    if not ticket:
        raise ValueError("ticket is empty")
    if ticket in seen:
        raise ValueError(f"ticket {ticket!r} appears twice in this file")
    times = {k: _time(s, k) for k in ("started_at", "opened_at", "merged_at", "reverted_at")}
    opened, merged = _flag(s, "opened", times["opened_at"]), _flag(s, "merged", times["merged_at"])
    reverted = _flag(s, "reverted", times["reverted_at"])
    if merged and not opened:
        raise ValueError("merged but not opened: a merged change was opened first")
    if reverted and not merged:
        raise ValueError("reverted but not merged")
    arm, seed = s.get("arm", "").lower() or None, s.get("assignment_seed") or None
    if arm is not None and arm not in ARMS:
        raise ValueError(f"arm {s['arm']!r} is not treatment or control")
    if arm is not None and seed is None:
        raise ValueError("arm without assignment_seed: a randomised assignment records its seed")
    config = _config(s, known)
    if arm != "control" and not (config.get("config_id") or config.get("variant") or config.get("model")):
        raise ValueError("no configuration: give config (a variant name or config_id) or model/harness")
    incidents = _incidents(rec)
    seen.add(ticket)
    return {"cohort": cohort, "ticket": ticket, "repository": s.get("repository") or None,
            **{k: config.get(k) for k in ("config_id", "variant", "model", "harness", "harness_version")},
            "arm": arm, "assignment_seed": seed, "opened": opened, "merged": merged, "reverted": reverted,
            "review_minutes": _minutes(s), "incidents": len(incidents),
            "incident_ids": json.dumps(incidents) if incidents else None, **times,
            "source_file": source, "source_line": line}


_KNOWN_SQL = ("SELECT config_id, any_value(variant) AS variant, any_value(model) AS model, "
              "any_value(harness) AS harness, any_value(harness_version) AS harness_version "
              "FROM configs GROUP BY config_id")


def import_cohort(path: Path, warehouse: Path, cohort: str, *, allow_quarantine: bool = False) -> IngestResult:
    """Load one cohort file as partition ``cohort-<cohort>-<path hash>``; unchanged input writes nothing."""
    path, warehouse = Path(path), Path(warehouse)
    if cohort not in COHORTS:
        raise IngestInputError(f"--cohort {cohort!r}: give production or shadow")
    if not path.is_file():
        raise IngestInputError(f"{path}: no such file")
    if path.suffix.lower() not in (".jsonl", ".csv"):
        raise IngestInputError(f"{path}: a cohort file is .jsonl or .csv (docs/rollout.md)")
    db.check_warehouse_path(warehouse)
    files = file_meta([path])
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    partition = f"cohort-{cohort}-{key}"
    result = IngestResult()
    with db.write_lock(warehouse):
        db.prepare(warehouse)
        same = unchanged(warehouse, partition, files)
        if same is not None:
            result.batches.append(same)
        else:
            known = _known(warehouse)
            rows, quarantine, seen = TableRows("cohort_tickets"), TableRows("quarantine"), set[str]()
            unmatched = 0
            with path.open("rb") as f:
                try:
                    for line, rec, raw in read_rows(path.with_suffix(path.suffix.lower()), f):
                        try:
                            row = cohort_row(rec, cohort, known, seen, str(path), line)
                        except ValueError as exc:
                            quarantine.append(QuarantineRow(str(path), line, str(exc), raw[:4096]).as_row())
                            continue
                        rows.append(row)
                        unmatched += row["config_id"] is None and row["arm"] != "control"
                except TooManyRecords as e:
                    raise IngestInputError(f"{path}: {e}") from None
            notes = [f"{unmatched} ticket(s) name a configuration the warehouse does not know; "
                     "they are shown without benchmark figures"] if unmatched else []
            result.batches.append(write_batch(warehouse, partition, new_batch_id(), f"cohort-{cohort}", files,
                                              {"cohort_tickets": rows}, quarantine, None, notes))
        db.refresh(warehouse)
    if result.quarantined and not allow_quarantine:
        raise IngestQuarantined(result)
    return result


def _known(warehouse: Path) -> dict[str, dict[str, Any]]:
    if not warehouse.is_file():
        return {}
    con = db.open(warehouse, read_only=True)
    try:
        cur = con.execute(_KNOWN_SQL)
        names = [d[0] for d in cur.description]
        return {r[0]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    finally:
        con.close()


def import_cohorts(paths: list[Path], warehouse: Path, cohort: str, *,
                   allow_quarantine: bool = False) -> IngestResult:
    """``import_cohort`` for each file; quarantined rows raise after every file is written."""
    result = IngestResult()
    for path in paths:
        result.batches += import_cohort(path, warehouse, cohort, allow_quarantine=True).batches
    if result.quarantined and not allow_quarantine:
        raise IngestQuarantined(result)
    return result
