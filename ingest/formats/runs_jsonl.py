"""runs-jsonl: one JSON line per (configuration, task, trial), plus a prices file.

Each line is ``{model, harness, harness_version, task_id, trial, status, input_tokens,
output_tokens, steps}`` with optional ``cost_usd``, ``repo``, ``benchmark``,
``system_id``, ``wall_seconds``, ``failure_mode``, ``started_at``. ``null`` means
unknown. Bad lines (invalid JSON, wrong types, negative tokens, NaN cost, unknown
status, duplicates) are quarantined with their line number; the rest loads.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from ingest.cost import resolve_cost
from ingest.errors import IngestError
from ingest.formats._common import BatchBuilder, parse_ts
from ingest.identity import path_key
from ingest.prices import PriceTable

FORMAT = "runs-jsonl"
STATUS_TO_OUTCOME = {"solved": "accepted", "failed": "target_failed", "infra_error": "infra_error"}


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


def _reason(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "line"
        if err["type"] == "literal_error" and loc == "status":
            parts.append(f"unknown status {err['input']!r} (expected solved, failed or infra_error)")
        else:
            parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def load(path: Path, prices: PriceTable | None = None) -> list:
    path = Path(path)
    if not path.is_file():
        raise IngestError(f"{path}: runs-jsonl input must be a file")
    run_id = f"runs-jsonl-{path_key(path)}"
    b = BatchBuilder(run_id, FORMAT, [path])
    seen: dict[tuple, int] = {}
    n_lines = 0
    priced = unpriced = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, raw in enumerate(f, 1):
            text = raw.strip()
            if not text:
                continue
            n_lines += 1
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError) as e:
                why = e.msg if isinstance(e, json.JSONDecodeError) else "not valid JSON, or nested too deeply"
                b.quarantine(path, lineno, f"line {lineno}: invalid JSON ({why})", text[:10_000])
                continue
            if not isinstance(obj, dict):
                b.quarantine(path, lineno, f"line {lineno}: not a JSON object", text[:10_000])
                continue
            try:
                r = RunLine.model_validate(obj)
            except ValidationError as e:
                b.quarantine(path, lineno, f"line {lineno}: {_reason(e)}", text[:10_000])
                continue
            task = str(r.task_id)
            settings = {"system_id": r.system_id} if r.system_id else None
            key = (r.model, r.harness, r.harness_version, r.system_id, task, r.trial)
            if key in seen:
                b.quarantine(
                    path,
                    lineno,
                    f"line {lineno}: duplicate (configuration, task, trial) of line {seen[key]}: "
                    f"{r.model} / {r.harness}@{r.harness_version} / {task} / trial {r.trial}",
                    text[:10_000],
                )
                continue
            seen[key] = lineno
            cid, _ = b.config(r.model, r.harness, r.harness_version, settings)
            b.case(task, repository=r.repo, benchmark=r.benchmark)
            started, naive = parse_ts(r.started_at)
            labels: dict = {"line": lineno}
            # A reported 0 is a real 0 here: runs-jsonl writers report a cost only when they computed one.
            cost, source = resolve_cost(prices, r.model, reported=r.cost_usd, input_tokens=r.input_tokens,
                                        output_tokens=r.output_tokens, activity=r.steps, on=started)
            if source == "priced":
                priced += 1
            elif cost is None:
                unpriced += 1
                labels["cost_unpriced"] = True
            if naive:
                labels["naive_timestamp"] = True
            extras = {k: v for k, v in (r.model_extra or {}).items()}
            if extras:
                labels["extra"] = extras
            labels["repository"] = r.repo
            labels["benchmark"] = r.benchmark
            labels["system_id"] = r.system_id
            b.trial(
                trial_id=f"{cid}:{task}:{r.trial}",
                config_id=cid,
                case_id=task,
                repetition=r.trial,
                outcome=STATUS_TO_OUTCOME[r.status],
                source_key=f"line:{lineno}",
                reason=r.failure_mode,
                failure_mode=r.failure_mode,
                started_at=started,
                duration_s=r.wall_seconds,
                agent_s=r.wall_seconds,
                input_tokens=r.input_tokens,
                output_tokens=r.output_tokens,
                steps=r.steps,
                cost_usd=cost,
                cost_source=source,
                labels=labels,
            )
    if n_lines == 0:
        raise IngestError(f"{path}: runs-jsonl file is empty")
    starts = [t["started_at"] for t in b.rows["trials"] if t.get("started_at")]
    b.run(
        path,
        started_at=min(starts) if starts else None,
        finished_at=max(starts) if starts else None,
        prices_as_of=prices.as_of if prices else None,
        details={"lines": n_lines, "prices_file": prices.source if prices else None},
    )
    if unpriced:
        b.note(
            f"{path.name}: {unpriced} trial(s) without a cost (no reported cost_usd and no price/tokens)"
            + ("" if prices else "; pass a prices file to price tokens")
        )
    return [b.finish()]
