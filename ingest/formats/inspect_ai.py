"""Inspect AI eval logs (``.eval`` zip and ``.json``): one trial per (sample, epoch).

The log is read by ``ingest.formats.inspect_log`` (header and sample records, a damaged
sample member quarantined by name while the rest of the log still imports); here each
sample epoch becomes a case and a trial, the log a run. Mapping and outcomes:
docs/formats.md, "Inspect AI".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from ingest.batch import SourceBatch
from ingest.cost import resolve_cost
from ingest.errors import IngestError
from ingest.formats import foreign_files
from ingest.formats._common import (
    BatchBuilder,
    field,
    finite_cost,
    nonneg_int,
    parse_ts,
    shape_problem,
)
from ingest.formats.inspect_log import log_files, read_log
from ingest.identity import path_key
from ingest.prices import PriceTable

FORMAT = "inspect"
BUDGET_LIMITS = {"time", "working", "token", "message", "turn", "cost", "custom"}
PASS_VALUES = {"C", "c"}


def _text(value: Any) -> str | None:
    """Error/limit fields are objects in full samples, plain strings in summaries."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value.get("message") or value.get("type") or json.dumps(value)
    return str(value)


def _limit_type(sample: dict) -> str | None:
    limit = sample.get("limit")
    if isinstance(limit, dict):
        return limit.get("type")
    return limit


def _primary_scorer(header: dict, sample: dict) -> str | None:
    scores = (header.get("results") or {}).get("scores") or []
    if scores:
        return scores[0].get("scorer") or scores[0].get("name")
    scorers = (header.get("eval") or {}).get("scorers") or []
    if scorers:
        return scorers[0].get("name")
    return next(iter(sample.get("scores") or {}), None)


def _grade(value: Any) -> tuple[bool | None, bool]:
    """(passed, partial) for a score value; passed None when it cannot be read."""
    if isinstance(value, bool):
        return value, False
    if isinstance(value, str):
        v = value.strip().upper()
        if v in {"C", "I", "N"}:
            return v == "C", False
        if v == "P":
            return False, True
        try:
            value = float(v)
        except ValueError:
            return None, False
    if isinstance(value, int | float):
        if value != value:  # NaN
            return None, False
        return value == 1, 0 < value < 1
    return None, False


def outcome_for(header: dict, sample: dict, scorer: str | None) -> tuple[str, str | None, dict]:
    """(outcome, reason, labels) as docs/formats.md, "Inspect AI", maps them (first match wins)."""
    labels: dict[str, Any] = {}
    scores = sample.get("scores") or {}
    score = scores.get(scorer) if scorer else None
    if score is None and scores:
        score = next(iter(scores.values()))
    value = score.get("value") if isinstance(score, dict) else None
    passed, partial = _grade(value) if score is not None else (None, False)
    if score is not None:
        labels["score"] = value
    error = _text(sample.get("error"))
    limit = _limit_type(sample)
    if error:
        labels["error"] = error[:500]
    if limit:
        labels["limit_hit"] = limit
        if sample.get("limit_reason") or isinstance(sample.get("limit"), dict):
            labels["limit_reason"] = sample.get("limit_reason") or sample["limit"].get("reason")
    if partial:
        labels["partial"] = True
    if sample.get("invalidation"):
        labels["invalidation"] = _text(sample["invalidation"])
        return "invalid", "sample invalidated", labels
    if error and score is None:
        return "infra_error", error[:200], labels
    if limit == "operator":
        return "infra_error", "interrupted by operator", labels
    if limit in BUDGET_LIMITS:
        return ("accepted", None, labels) if passed else ("budget_exhausted", f"{limit} limit", labels)
    if limit == "context":
        return ("accepted", None, labels) if passed else ("target_failed", "context window", labels)
    if score is None:
        return "infra_error", "no score and no error", labels
    if passed is None:
        labels["unreadable_score"] = True  # NaN, dict or list: no trustworthy grade
        return "infra_error", "score value not pass/fail", labels
    return ("accepted", None, labels) if passed else ("target_failed", None, labels)


def _harness(ev: dict, plan: dict) -> tuple[str | None, str | None, str]:
    meta = ev.get("metadata") or {}
    if meta.get("harness"):
        return str(meta["harness"]), _opt_str(meta.get("harness_version")), "eval.metadata"
    solvers = [s.get("solver") for s in (plan.get("steps") or []) if s.get("solver")]
    if not solvers:
        return None, None, "none"
    name = "+".join(solvers)
    version = None
    packages = ev.get("packages") or {}
    for s in solvers:
        pkg = s.split("/", 1)[0] if "/" in s else None
        if pkg and pkg in packages:
            version = str(packages[pkg])
    return name, version, "plan (heuristic)"


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


def _usage(sample: dict, model: str | None) -> tuple[dict | None, dict]:
    usage = sample.get("model_usage") or {}
    if not usage:
        return None, {}
    if model in usage:
        others = {k: v for k, v in usage.items() if k != model}
        return usage[model], ({"other_model_usage": others} if others else {})
    if len(usage) == 1:
        return next(iter(usage.values())), {"usage_model": next(iter(usage))}
    return None, {"usage_models_unattributed": sorted(usage)}


_HEADER_OBJECTS = ("eval", "eval.config", "eval.dataset", "eval.packages", "eval.model_generate_config",
                   "eval.metadata", "eval.model_roles", "plan", "results", "stats", "stats.model_usage", "error")
_HEADER_TEXTS = ("status", "eval.eval_id", "eval.model", "eval.task", "eval.run_id", "eval.eval_set_id",
                 "eval.dataset.name", "stats.started_at", "stats.completed_at", "eval.created")
_SAMPLE_OBJECTS = ("metadata", "scores", "model_usage", "output", "role_usage")  # error, limit: text or object
_SAMPLE_TEXTS = ("started_at", "completed_at", "uuid")
_SAMPLE_LISTS = ("messages", "error_retries", "events")


def _usage_problem(usage: Any, name: str) -> str | None:
    """A ``model_usage`` mapping must map each model to an object of counts."""
    for model, counts in (usage or {}).items():
        if not isinstance(counts, dict):
            return f"field {name}.{model} must be an object, not {type(counts).__name__}"
    return None


def _checked_header(path: Path, header: dict) -> tuple[dict, str]:
    """The log's ``eval`` object and eval id; IngestError when the header's shape is wrong."""
    if problem := (shape_problem(header, objects=_HEADER_OBJECTS, texts=_HEADER_TEXTS)
                   or _usage_problem(field(header, "stats.model_usage"), "stats.model_usage")):
        raise IngestError(f"{path}: {problem}")
    ev = header.get("eval") or {}
    eval_id = ev.get("eval_id")
    if not eval_id:
        raise IngestError(f"{path}: field eval.eval_id is missing")
    return ev, eval_id


def _settings(ev: dict, config: dict) -> dict[str, Any]:
    """The configuration's settings: generate config, the limits set, model roles."""
    settings = {
        "generate_config": ev.get("model_generate_config") or {},
        "limits": {k: v for k, v in config.items() if k.endswith("_limit") and v is not None},
    }
    if ev.get("model_roles"):
        settings["model_roles"] = ev["model_roles"]
    return settings


class _Log(NamedTuple):
    """What every sample of one log shares."""

    path: Path
    header: dict
    eval_id: str
    config_id: str
    model: str | None
    task: str
    task_version: Any
    dataset: str | None
    harness_source: str
    prices: PriceTable | None


def _sample_id(b: BatchBuilder, path: Path, s: Any, at: str, seen: set[tuple[str, int]]) -> tuple[Any, int] | None:
    """A sample record's (id, epoch) when it is a trial; else it is quarantined (or noted, when
    it did not complete) and None."""
    if not isinstance(s, dict):
        b.quarantine(path, None, f"{at}: a sample record must be an object", json.dumps(s, default=str)[:2000])
        return None
    if problem := (shape_problem(s, objects=_SAMPLE_OBJECTS, texts=_SAMPLE_TEXTS, lists=_SAMPLE_LISTS)
                   or _usage_problem(s.get("model_usage"), "model_usage")):
        b.quarantine(path, None, f"{at}: {problem}", json.dumps(s, default=str)[:2000])
        return None
    sid, epoch = s.get("id"), s.get("epoch")
    if sid is None or not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
        b.quarantine(path, None, f"{at}: missing id or epoch", json.dumps(s, default=str)[:2000])
        return None
    if (str(sid), epoch) in seen:
        b.quarantine(path, None, f"{at}: sample {sid} epoch {epoch} is a duplicate", None)
        return None
    seen.add((str(sid), epoch))
    if s.get("completed") is False:
        b.note(f"{path.name}: sample {sid} epoch {epoch} did not complete; not a trial")
        return None
    return sid, epoch


def _tokens_and_cost(usage: dict | None, labels: dict, log: _Log, started: Any) -> tuple:
    """(input, output, cache read, cache write tokens, cost, cost source) of a sample's usage."""
    inp = out = cread = cwrite = None
    cost = source = None
    if usage is not None:
        inp = nonneg_int(usage.get("input_tokens"))
        out = nonneg_int(usage.get("output_tokens"))
        cread = nonneg_int(usage.get("input_tokens_cache_read"))
        cwrite = nonneg_int(usage.get("input_tokens_cache_write"))
        if usage.get("reasoning_tokens") is not None:
            labels["reasoning_tokens"] = usage["reasoning_tokens"]
        # Inspect writes total_cost 0 when it has no price for the model: a 0 next to tokens is unknown.
        cost, source = resolve_cost(
            log.prices, log.model, reported=usage.get("total_cost"), input_tokens=inp, output_tokens=out,
            cache_read_tokens=cread, cache_write_tokens=cwrite, on=started, zero_is_unpriced=True)
    if cost is None:
        labels["cost_unpriced"] = True
    return inp, out, cread, cwrite, cost, source


def _sample_trial(b: BatchBuilder, log: _Log, s: dict, sid: Any, epoch: int) -> None:
    """One sample epoch as a case and a trial."""
    task, tv = log.task, log.task_version
    prefix = f"{task}@{tv}" if tv not in (None, 0, "0", "") else task
    case_id = f"{prefix}/{sid}"
    meta = s.get("metadata") or {}
    repo = meta.get("repo") or meta.get("repository")
    b.case(
        case_id,
        repository=_opt_str(repo),
        benchmark=log.dataset or task,
        labels={"task": task, "task_version": tv, "sample_id": str(sid),
                **{k: v for k, v in meta.items() if isinstance(v, str | int | float | bool)}},
    )
    outcome, reason, labels = outcome_for(log.header, s, _primary_scorer(log.header, s))
    usage, usage_labels = _usage(s, log.model)
    labels.update(usage_labels)
    retries = s.get("retries")
    if retries is None and isinstance(s.get("error_retries"), list):
        retries = len(s["error_retries"])
    if retries:
        labels["retries"] = retries
    started, naive1 = parse_ts(s.get("started_at"))
    finished, naive2 = parse_ts(s.get("completed_at"))
    if naive1 or naive2:
        labels["naive_timestamp"] = True
    inp, out, cread, cwrite, cost, source = _tokens_and_cost(usage, labels, log, started)
    labels["harness_source"] = log.harness_source
    b.trial(
        trial_id=f"{log.eval_id}:{sid}:{epoch}",
        config_id=log.config_id,
        case_id=case_id,
        repetition=epoch,
        outcome=outcome,
        reason=reason,
        source_key=s.get("uuid") or f"{log.eval_id}:{sid}:{epoch}",
        started_at=started,
        finished_at=finished,
        duration_s=s.get("total_time"),
        agent_s=s.get("working_time"),
        input_tokens=inp,
        output_tokens=out,
        cache_read_tokens=cread,
        cache_write_tokens=cwrite,
        steps=nonneg_int(s.get("turn_count")),
        cost_usd=cost,
        cost_source=source,
        labels=labels,
    )


def _log_run(b: BatchBuilder, log: _Log, ev: dict, config: dict) -> None:
    """The log as the batch's run (and a note when the log did not finish)."""
    header, path, prices = log.header, log.path, log.prices
    status = header.get("status")
    stats = header.get("stats") or {}
    run_usage = stats.get("model_usage") or {}
    costs = [finite_cost(u.get("total_cost")) for u in run_usage.values()]
    run_started, _ = parse_ts(stats.get("started_at") or ev.get("created"))
    run_finished, _ = parse_ts(stats.get("completed_at"))
    if status in {"error", "cancelled", "started"}:
        planned = (ev.get("dataset") or {}).get("samples")
        epochs = config.get("epochs") or 1
        b.note(
            f"{path.name}: log status {status!r}; imported {len(b.rows['trials'])} trial(s)"
            + (f" of {planned * epochs} planned" if isinstance(planned, int) else "")
            + ("; error: " + (_text(header.get("error")) or "")[:200] if header.get("error") else "")
        )
    b.run(
        path,
        started_at=run_started,
        finished_at=run_finished,
        status="imported",
        repetitions=config.get("epochs"),
        prices_as_of=prices.as_of if prices else None,
        run_cost_usd=sum(c for c in costs if c is not None) if costs and all(c is not None for c in costs) else None,
        engine_version=(ev.get("packages") or {}).get("inspect_ai"),
        details={
            "log_status": status,
            "log_error": _text(header.get("error")),
            "task": log.task,
            "task_version": log.task_version,
            "eval_run_id": ev.get("run_id"),
            "eval_set_id": ev.get("eval_set_id"),
            "dataset": ev.get("dataset"),
            "tags": ev.get("tags"),
            "run_model_usage": run_usage,
            "headline": (header.get("results") or {}).get("headline"),
        },
    )


def _load_one(path: Path, prices: PriceTable | None) -> SourceBatch:
    header, samples, where, notes, unreadable = read_log(path)
    ev, eval_id = _checked_header(path, header)
    b = BatchBuilder(f"inspect-{eval_id}", FORMAT, [path])
    for n in notes:
        b.note(n)
    for member, why in unreadable:
        b.quarantine(path, None, f"{member}: unreadable ({why}); the log's other samples were imported")
    model = ev.get("model")
    harness, harness_version, harness_source = _harness(ev, header.get("plan") or {})
    config = ev.get("config") or {}
    cid, _ = b.config(model, harness, harness_version, _settings(ev, config))
    log = _Log(path, header, eval_id, cid, model, ev.get("task") or "task", ev.get("task_version"),
               (ev.get("dataset") or {}).get("name"), harness_source, prices)
    seen: set[tuple[str, int]] = set()
    for s, at in zip(samples, where, strict=True):
        if (key := _sample_id(b, path, s, at, seen)) is not None:
            _sample_trial(b, log, s, *key)
    _log_run(b, log, ev, config)
    return b.finish()


def load(path: Path, prices: PriceTable | None = None) -> list[SourceBatch]:
    files = log_files(Path(path))
    if not files:
        raise IngestError(f"{path}: no Inspect logs (.eval or .json) found")
    outside = {f: why for f in files if (why := foreign_files.outside(f))}
    batches = [_load_one(f, prices) for f in files if f not in outside]
    if outside:  # symlinks out of the folder: quarantined with the reason, never read
        b = BatchBuilder(f"inspect-outside-{path_key(Path(path))}", FORMAT, [])
        for f, why in outside.items():
            b.quarantine(f, None, f"{f}: {why}")
        batches.append(b.finish())
    return batches
