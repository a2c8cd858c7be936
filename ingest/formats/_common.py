"""Row builders shared by the foreign-format importers.

Every importer produces the same shapes (runs, configs, cases, trials, attempts), so
the defaults that matter — ``complete=True``, ``simulated=False``, unknown stays
null, labels as JSON — live in one place.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.files import file_sha256
from contract.values import as_amount, as_count, as_text
from ingest.batch import QuarantineRow, SourceBatch
from ingest.errors import IngestError
from ingest.formats import foreign_files
from ingest.identity import config_id_for, run_key, variant_label

STEP_COMMAND_MAX = 2000
"""Longest command kept on a step row (as the ``step`` event's ``command``)."""


def labels_json(labels: dict[str, Any]) -> str | None:
    """Labels with null values dropped, as sorted JSON (None when empty)."""
    kept = {k: v for k, v in labels.items() if v is not None}
    return json.dumps(kept, sort_keys=True, default=str) if kept else None


def parse_ts(value: Any) -> tuple[datetime | None, bool]:
    """ISO timestamp → aware UTC datetime; second item is True when the input was naive.
    A timestamp that cannot be read, or has no UTC datetime, is ``None``."""
    if value is None or value == "":
        return None, False
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None, False
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC), True
    try:
        return dt.astimezone(UTC), False
    except OverflowError:  # e.g. 9999-12-31T23:00-14:00, which is in year 10000 in UTC
        return None, False


def seconds_between(a: datetime | None, b: datetime | None) -> float | None:
    if a is None or b is None:
        return None
    return (b - a).total_seconds()


def nonneg_int(value: Any) -> int | None:
    """A reported count: an int ≥ 0 within int64, or None for anything else (unknown, not zero).
    The same rule as the runner's for agent-reported numbers (``contract.values.as_count``)."""
    return as_count(value)


def finite_cost(value: Any) -> float | None:
    """A reported amount: finite and ≥ 0, or None (``contract.values.as_amount``)."""
    return as_amount(value)


class BatchBuilder:
    """Collects rows for one foreign run and deduplicates configs and cases."""

    def __init__(self, run_id: str, source_format: str, source_files: list[Path]) -> None:
        self.batch = SourceBatch(
            run_id=run_key(run_id), source_format=source_format, source_files=list(source_files)
        )
        self.rows: dict[str, list[dict]] = {
            t: [] for t in ("runs", "configs", "cases", "trials", "attempts")
        }
        self._configs: dict[str, dict] = {}
        self._cases: dict[str, dict] = {}
        self._trial_ids: set[str] = set()

    @property
    def run_id(self) -> str:
        return self.batch.run_id

    def run(self, source_path: Path, **fields: Any) -> None:
        details = fields.pop("details", {}) or {}
        if "source_files" not in details:  # an importer that hashed the bytes it read gives them
            details["source_files"] = [{"path": str(p), "sha256": file_sha256(p)[0]}
                                       for p in _readable(self.batch.source_files)]
        row = {
            "run_id": self.run_id,
            "source_format": self.batch.source_format,
            "source_path": str(source_path),
            "status": "imported",
            "simulated": False,
            "validation_only": False,
            "details_json": json.dumps(details, sort_keys=True, default=str),
        }
        row.update(fields)
        self.rows["runs"] = [row]

    def config(
        self,
        model: str | None,
        harness: str | None,
        harness_version: str | None,
        settings: dict | None = None,
    ) -> tuple[str, str]:
        """Register a configuration; returns (config_id, variant label)."""
        cid = config_id_for(model, harness, harness_version, settings)
        variant = variant_label(model, harness, harness_version)
        if settings and settings.get("system_id"):
            variant = f"{settings['system_id']} ({variant})"
        if cid not in self._configs:
            row = {
                "run_id": self.run_id,
                "config_id": cid,
                "variant": variant,
                "model": model,
                "harness": harness,
                "harness_version": harness_version,
                "settings_json": json.dumps(settings or {}, sort_keys=True, default=str),
                "agent_kind": "foreign",
                "simulated": False,
                "source_format": self.batch.source_format,
                "variant_order": len(self._configs),
            }
            self._configs[cid] = row
            self.rows["configs"].append(row)
        return cid, variant

    def case(
        self,
        case_id: str,
        repository: str | None = None,
        benchmark: str | None = None,
        labels: dict[str, Any] | None = None,
        **fields: Any,
    ) -> None:
        if case_id in self._cases:
            row = self._cases[case_id]
            if repository and not row.get("repository"):
                row["repository"] = repository
            if benchmark and not row.get("benchmark"):
                row["benchmark"] = benchmark
            return
        all_labels = dict(labels or {})
        all_labels.setdefault("repository", repository)
        all_labels.setdefault("benchmark", benchmark)
        row = {
            "run_id": self.run_id,
            "case_id": case_id,
            "holdout": False,
            "repository": repository,
            "familiarity": None,
            "benchmark": benchmark,
            "labels_json": labels_json(all_labels),
        }
        row.update(fields)
        self._cases[case_id] = row
        self.rows["cases"].append(row)

    def has_trial(self, trial_id: str) -> bool:
        return trial_id in self._trial_ids

    def trial(self, *, trial_id: str, config_id: str, case_id: str, repetition: int, outcome: str, **fields: Any) -> None:
        if trial_id in self._trial_ids:  # importers check ``has_trial`` and quarantine the repeat
            raise IngestError(f"duplicate trial id {trial_id!r} in one {self.batch.source_format} source")
        self._trial_ids.add(trial_id)
        labels = fields.pop("labels", None) or {}
        cfg = self._configs[config_id]
        row = {
            "run_id": self.run_id,
            "trial_id": trial_id,
            "source_format": self.batch.source_format,
            "config_id": config_id,
            "variant": cfg["variant"],
            "model": cfg["model"],
            "harness": cfg["harness"],
            "harness_version": cfg["harness_version"],
            "case_id": case_id,
            "repetition": repetition,
            "outcome": outcome,
            "complete": True,
            "attempts": 1,
            "flags": 0,
            "simulated": False,
            "labels_json": labels_json(labels),
        }
        row.update(fields)
        self.rows["trials"].append(row)
        self.rows["attempts"].append(
            {
                "run_id": self.run_id,
                "trial_id": trial_id,
                "attempt": 1,
                "outcome": outcome,
                "started_at": row.get("started_at"),
                "finished_at": row.get("finished_at"),
            }
        )

    def trajectory(self, trial_id: str, steps: list[dict[str, Any]], source: str, *, stage: str = "build",
                   started_at: datetime | None = None, finished_at: datetime | None = None) -> None:
        """A foreign trial's trajectory (``contract.trajectory`` reader output) as its one stage
        (attempt 1) and that stage's ``steps`` rows, so the trajectory metrics read imported
        trials like ours. No steps: no stage row (the trial has no trajectory, not an empty one)."""
        if not steps:
            return
        self.rows.setdefault("stages", []).append({
            "trial_id": trial_id, "attempt": 1, "stage": stage, "started_at": started_at,
            "finished_at": finished_at, "steps": sum(1 for s in steps if s["kind"] == "model"),
            "trajectory_steps": len(steps)})
        out = self.rows.setdefault("steps", [])
        for i, s in enumerate(steps):
            start, end = s.get("started_at"), s.get("ended_at")
            command = s.get("command")
            out.append({
                "trial_id": trial_id, "attempt": 1, "stage": stage, "step_index": i, "kind": s["kind"],
                "source": source, "tool": s.get("tool"), "action": s.get("action"),
                "paths_json": json.dumps(list(s.get("paths") or ())),
                "command": None if command is None else as_text(command, STEP_COMMAND_MAX),
                "exit_code": s.get("exit_code"), "ok": s.get("ok"), "started_at": start, "ended_at": end,
                "duration_s": max((end - start).total_seconds(), 0.0) if start and end else None,
                **{k: s.get(k) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")},
                "call_id": None if s.get("call_id") is None else str(s["call_id"]),
                "tokens_from": "harness" if s["kind"] == "model" else None})

    def quarantine(self, source_file: Path | str, line: int | None, reason: str, raw: str | None = None) -> None:
        q = QuarantineRow(source_file=str(source_file), line=line, reason=reason, raw_text=raw)
        self.batch.quarantine.append(q)

    def note(self, message: str) -> None:
        self.batch.notes.append(message)

    def finish(self) -> SourceBatch:
        """The batch; its source files only those the import may read (they are hashed after)."""
        self.batch.rows = self.rows
        self.batch.source_files = _readable(list(dict.fromkeys(self.batch.source_files)))
        return self.batch

    def optional_json(self, path: Path, *, not_json_ok: bool = False) -> Any | None:
        """A JSON file the format may have: None when there is none; when one is there but may
        not be read (outside the folder, not a regular file, too large) or (unless
        ``not_json_ok``: a file found by its name that may be another tool's) is not JSON, it
        is quarantined with the reason and None."""
        if not foreign_files.present(path):
            return None
        try:
            return foreign_files.load_json(path)
        except foreign_files.ForeignFileError as e:
            if e.unread or not not_json_ok:
                self.quarantine(path, None, str(e), foreign_files.excerpt(path))
            return None


def _readable(paths: list[Path]) -> list[Path]:
    """The regular files among ``paths`` that lie inside the folder being imported."""
    return [p for p in paths if p.is_file() and foreign_files.outside(p) is None]


def field(obj: Any, dotted: str) -> Any:
    """``obj["a"]["b"]`` for ``"a.b"``, or None where a level is missing or not an object."""
    for key in dotted.split("."):
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def shape_problem(obj: dict, objects: tuple[str, ...] = (), texts: tuple[str, ...] = (),
                  lists: tuple[str, ...] = ()) -> str | None:
    """Why a foreign record cannot be read as its format documents it (a field present with
    the wrong JSON type: an object, a string or a list expected), or None. Importers check
    a record with this before reading it, so bad input is quarantined with the field named
    instead of failing somewhere inside."""
    for names, kind, name_of in ((objects, dict, "an object"), (texts, str, "a string"), (lists, list, "a list")):
        for name in names:
            if (v := field(obj, name)) is not None and not isinstance(v, kind):
                return f"field {name} must be {name_of}, not {type(v).__name__}"
    return None


def instance_ids(value: Any, key: str, b: BatchBuilder, source: Path) -> list[str]:
    """The instance ids of a SWE-bench-style id list (``resolved``, ``error_ids``, …): an
    entry that is not one (a number, an object, an empty string) is quarantined with its
    place; a value that is not a list is a clear error."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise IngestError(f"{source}: {key} must be a list of instance ids, not {type(value).__name__}")
    ids = []
    for i, iid in enumerate(value):
        if isinstance(iid, str) and iid.strip():
            ids.append(iid)
        else:
            b.quarantine(source, None, f"{source.name}: {key}[{i}] is {iid!r:.80}, not an instance id", repr(iid)[:2000])
    return ids
