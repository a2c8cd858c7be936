"""runs-jsonl's row path: one line judged as a Python object (``json.loads`` + ``RunLine``).

Every line the columnar path (``ingest.formats.runs_jsonl``) cannot prove valid comes
here: it is quarantined with the reason, or handed back as a record of the columns both
paths produce (``RECORD``), so both paths give the same rows (docs/formats.md,
"runs-jsonl at engine speed"). ``RunLine`` is the judge both paths follow.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from contract.redact import Redactor
from ingest.formats._common import BatchBuilder, parse_ts
from ingest.identity import config_id_for, variant_label
from ingest.rows import row_problem, value_problem

FORMAT = "runs-jsonl"
RAW_MAX = 10_000
"""Characters of a quarantined line kept as its raw text."""


class RunLine(BaseModel):
    """One line of a runs-jsonl file; unknown extra keys are kept as labels."""

    model_config = ConfigDict(extra="allow")

    model: StrictStr
    harness: StrictStr
    harness_version: StrictStr | None = None
    task_id: StrictStr | StrictInt
    trial: StrictInt = Field(ge=0)
    status: Literal["solved", "failed", "infra_error"]
    input_tokens: StrictInt | None = Field(default=None, ge=0)
    output_tokens: StrictInt | None = Field(default=None, ge=0)
    steps: StrictInt | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    repo: StrictStr | None = None
    benchmark: StrictStr | None = None
    system_id: StrictStr | None = None
    wall_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    failure_mode: StrictStr | None = None
    started_at: datetime | None = None


# The columns both paths produce (one record per valid line), in this order.
RECORD = pa.schema([
    ("lineno", pa.int64()), ("model", pa.string()), ("harness", pa.string()),
    ("harness_version", pa.string()), ("system_id", pa.string()), ("task", pa.string()),
    ("trial", pa.int64()), ("status", pa.string()), ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()), ("steps", pa.int64()), ("cost_reported", pa.float64()),
    ("repo", pa.string()), ("benchmark", pa.string()), ("wall_seconds", pa.float64()),
    ("failure_mode", pa.string()), ("started_at", pa.timestamp("us", tz="UTC")),
    ("naive", pa.bool_()), ("extra_json", pa.string()),
])


def _reason(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "line"
        if err["type"] == "literal_error" and loc == "status":
            parts.append(f"unknown status {err['input']!r} (expected solved, failed or infra_error)")
        else:
            parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


_REDACTOR = Redactor()


def redact(value: str | None) -> str | None:
    """Free text as the row path stores it: secrets redacted (``contract.redact``)."""
    return None if value is None else _REDACTOR.text(value)[0]


def row_record(lineno: int, text: str, b: BatchBuilder, path: Path) -> dict | None:
    """The row path for one line: quarantined with the reason (None), or its record."""
    raw = text[:RAW_MAX]
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as e:
        why = e.msg if isinstance(e, json.JSONDecodeError) else "not valid JSON, or nested too deeply"
        b.quarantine(path, lineno, f"line {lineno}: invalid JSON ({why})", raw)
        return None
    if not isinstance(obj, dict):
        b.quarantine(path, lineno, f"line {lineno}: not a JSON object", raw)
        return None
    try:
        r = RunLine.model_validate(obj)
    except ValidationError as e:
        b.quarantine(path, lineno, f"line {lineno}: {_reason(e)}", raw)
        return None
    task = str(r.task_id)
    started, naive = parse_ts(r.started_at)
    if r.started_at is not None and started is None:
        b.quarantine(path, lineno, f"line {lineno}: started_at: {r.started_at.isoformat()} has no UTC time "
                                   "(out of range once moved to UTC)", raw)
        return None
    settings = {"system_id": r.system_id} if r.system_id else None
    cid = config_id_for(r.model, r.harness, r.harness_version, settings)
    extra = json.dumps(r.model_extra, sort_keys=True, default=str) if r.model_extra else None
    # Values a column cannot hold (integers past int64, lone surrogates, control characters
    # in an id): judged by the table's value rules, as every importer's rows are.
    probe = {"trial_id": f"{cid}:{task}:{r.trial}", "config_id": cid, "case_id": task,
             "variant": variant_label(r.model, r.harness, r.harness_version), "model": r.model,
             "harness": r.harness, "harness_version": r.harness_version, "repetition": r.trial,
             "outcome": "accepted", "source_format": FORMAT, "complete": True, "simulated": False,
             "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "steps": r.steps,
             "reason": r.failure_mode, "failure_mode": r.failure_mode, "started_at": started,
             "duration_s": r.wall_seconds}  # labels_json is ASCII JSON: always storable
    for k in ("repo", "benchmark", "system_id"):  # stored in labels and cases
        if (problem := value_problem("string", getattr(r, k))) is not None:
            b.quarantine(path, lineno, f"line {lineno}: trials row: {k} {problem}", raw)
            return None
    if problem := row_problem("trials", probe):
        b.quarantine(path, lineno, f"line {lineno}: trials row: {problem}", raw)
        return None
    return {"lineno": lineno, "model": r.model, "harness": r.harness,
            "harness_version": r.harness_version, "system_id": r.system_id, "task": task,
            "trial": r.trial, "status": r.status, "input_tokens": r.input_tokens,
            "output_tokens": r.output_tokens, "steps": r.steps, "cost_reported": r.cost_usd,
            "repo": r.repo, "benchmark": r.benchmark, "wall_seconds": r.wall_seconds,
            "failure_mode": r.failure_mode, "started_at": started, "naive": naive,
            "extra_json": redact(extra)}
