"""Inspect AI eval logs (``.eval`` zip and ``.json``): one trial per (sample, epoch).

``.eval`` members are usually Zstandard-compressed (ZIP method 93), which Python 3.11's
``zipfile`` cannot open, so members are read raw and decompressed with ``zstandard``.
Inspect's own ``read_eval_log`` works too but costs ~1–2 s of imports per process; the
direct reader needs only the header and ``summaries.json`` (thinned samples, enough for
trials), falling back to the journal and then to full ``samples/*.json`` members; a
damaged sample member is quarantined by name and the rest of the log still imports.
Mapping: docs/formats.md § Inspect (outcomes per FORMATS.md §2).
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, NamedTuple

from ingest.batch import SourceBatch
from ingest.cost import resolve_cost
from ingest.errors import IngestError
from ingest.formats._common import (
    BatchBuilder,
    field,
    finite_cost,
    nonneg_int,
    parse_ts,
    shape_problem,
)
from ingest.formats.detect import is_inspect_eval_zip, is_inspect_json
from ingest.prices import PriceTable

FORMAT = "inspect"
ZSTD = 93
BUDGET_LIMITS = {"time", "working", "token", "message", "turn", "cost", "custom"}
PASS_VALUES = {"C", "c"}


# ------------------------------------------------------------------ reading


def _member(z: zipfile.ZipFile, name: str) -> Any:
    info = z.getinfo(name)
    if info.compress_type != ZSTD:
        data = z.read(name)
    else:
        import zstandard

        assert z.fp is not None
        z.fp.seek(info.header_offset)
        header = z.fp.read(30)
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"bad local header for {name}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        z.fp.seek(info.header_offset + 30 + name_len + extra_len)
        raw = z.fp.read(info.compress_size)
        if len(raw) != info.compress_size:
            raise zipfile.BadZipFile(f"{name} is truncated")
        data = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        if len(data) != info.file_size:
            raise zipfile.BadZipFile(f"{name} is truncated")
    return json.loads(data)


class LogContents(NamedTuple):
    """What a log holds for trials: its header, its sample records and where each came
    from (a member name, or ``summaries.json #i``), notes, and the members that could not
    be read — each one quarantined by name, the rest of the log imported."""

    header: dict
    samples: list[Any]
    where: list[str]
    notes: list[str]
    unreadable: list[tuple[str, str]]


def _member_problem(e: Exception) -> str | None:
    """Why a member could not be read, for the errors a damaged member raises (else None)."""
    if isinstance(e, zipfile.BadZipFile | zlib.error | EOFError | ValueError | KeyError | OSError):
        return str(e) or type(e).__name__
    if type(e).__name__ == "ZstdError":  # zstandard.ZstdError has no stable import path across versions
        return f"corrupt Zstandard data ({e})"
    return None


def _read_each(z: zipfile.ZipFile, members: list[str], *, lists: bool) -> tuple[list[Any], list[str], list[tuple[str, str]]]:
    """(records, where each came from, unreadable members with the reason), member by member:
    a damaged member is set aside by name and the others still count. ``lists``: each
    member holds a list of records (journal summaries), else one record (a sample)."""
    records: list[Any] = []
    where: list[str] = []
    unreadable: list[tuple[str, str]] = []
    for n in members:
        try:
            got = _member(z, n)
        except Exception as e:
            if (why := _member_problem(e)) is None:
                raise
            unreadable.append((n, why))
            continue
        if not lists:
            records.append(got)
            where.append(n)
        elif isinstance(got, list):
            records += got
            where += [f"{n} #{i}" for i in range(len(got))]
        else:
            unreadable.append((n, "not a list of sample summaries"))
    return records, where, unreadable


def _records(z: zipfile.ZipFile, names: list[str], path: Path) -> tuple[list[Any], list[str], list[str], list[tuple[str, str]]]:
    """The sample records, cheapest source first: ``summaries.json`` (thinned samples,
    written at the end), else the journal's flushed summaries, else every ``samples/``
    member (a running or crashed log). A source that cannot be read in full gives way to
    the next, with a note; the last source there is is read member by member, and what
    cannot be read of it is quarantined by member name while the rest still imports."""
    notes: list[str] = []
    failed: list[tuple[str, str]] = []
    if "summaries.json" in names:
        try:
            records = _member(z, "summaries.json")
        except Exception as e:
            if (why := _member_problem(e)) is None:
                raise
            failed.append(("summaries.json", why))
        else:
            if isinstance(records, list):
                return records, [f"summaries.json #{i}" for i in range(len(records))], notes, []
            failed.append(("summaries.json", "not a list of sample summaries"))
    parts = sorted(
        (n for n in names if n.startswith("_journal/summaries/") and n.endswith(".json")),
        key=lambda n: int(Path(n).stem) if Path(n).stem.isdigit() else 0,
    )
    journal, journal_where, bad_parts = _read_each(z, parts, lists=True)
    if parts and not bad_parts:
        return journal, journal_where, [f"{path.name}: {n} unreadable ({why}); read the journal instead"
                                        for n, why in failed], []
    failed += bad_parts
    members = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
    if members:
        records, where, unreadable = _read_each(z, members, lists=False)
        notes += [f"{path.name}: {n} unreadable ({why}); read the sample members instead" for n, why in failed]
        return records, where, notes, unreadable
    return journal, journal_where, notes, failed  # no sample members: what the journal had, the rest quarantined


def read_eval_zip(path: Path) -> LogContents:
    """The header and sample records of a ``.eval`` file; raises IngestError when the
    archive or its header cannot be read (a damaged sample member is only set aside)."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            notes: list[str] = []
            if "header.json" in names:
                header = _member(z, "header.json")
            elif "_journal/start.json" in names:
                header = _member(z, "_journal/start.json")
                if isinstance(header, dict):
                    header.setdefault("status", "started")
                notes.append(f"{path.name}: no header.json (log still running or crashed); read the journal")
            else:
                raise IngestError(f"{path}: not an Inspect log (no header.json or _journal/start.json)")
            if not isinstance(header, dict):
                raise ValueError("header.json is not an object")
            samples, where, more, unreadable = _records(z, names, path)
    except IngestError:
        raise
    except Exception as e:
        if (why := _member_problem(e)) is None:
            raise
        raise IngestError(
            f"{path}: not a readable Inspect .eval log ({why}); if it is still being written, "
            "wait for it or run `inspect log recover`"
        ) from e
    return LogContents(header, samples, where, notes + more, unreadable)


def read_log(path: Path) -> LogContents:
    if is_inspect_eval_zip(path):
        return read_eval_zip(path)
    try:
        obj = json.loads(path.read_bytes())  # Python's json accepts the bare NaN Inspect writes
    except (OSError, ValueError) as e:
        raise IngestError(f"{path}: not a readable Inspect .json log ({e})") from e
    if not is_inspect_json(obj):
        raise IngestError(f"{path}: JSON without version/status/eval.eval_id/eval.task is not an Inspect log")
    samples = obj.get("samples") or []
    return LogContents(obj, samples, [f"samples #{i}" for i in range(len(samples))], [], [])


# ------------------------------------------------------------------ mapping


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
    """(outcome, reason, labels) per FORMATS.md §2."""
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


def _load_one(path: Path, prices: PriceTable | None) -> SourceBatch:
    header, samples, where, notes, unreadable = read_log(path)
    if problem := (shape_problem(header, objects=_HEADER_OBJECTS, texts=_HEADER_TEXTS)
                   or _usage_problem(field(header, "stats.model_usage"), "stats.model_usage")):
        raise IngestError(f"{path}: {problem}")
    ev = header.get("eval") or {}
    plan = header.get("plan") or {}
    eval_id = ev.get("eval_id")
    if not eval_id:
        raise IngestError(f"{path}: field eval.eval_id is missing")
    b = BatchBuilder(f"inspect-{eval_id}", FORMAT, [path])
    for n in notes:
        b.note(n)
    for member, why in unreadable:
        b.quarantine(path, None, f"{member}: unreadable ({why}); the log's other samples were imported")
    model = ev.get("model")
    harness, harness_version, harness_source = _harness(ev, plan)
    config = ev.get("config") or {}
    settings = {
        "generate_config": ev.get("model_generate_config") or {},
        "limits": {k: v for k, v in config.items() if k.endswith("_limit") and v is not None},
    }
    if ev.get("model_roles"):
        settings["model_roles"] = ev["model_roles"]
    cid, _ = b.config(model, harness, harness_version, settings)
    task = ev.get("task") or "task"
    tv = ev.get("task_version")
    prefix = f"{task}@{tv}" if tv not in (None, 0, "0", "") else task
    dataset = (ev.get("dataset") or {}).get("name")
    status = header.get("status")
    seen: set[tuple[str, int]] = set()
    for s, at in zip(samples, where, strict=True):
        if not isinstance(s, dict):
            b.quarantine(path, None, f"{at}: a sample record must be an object", json.dumps(s, default=str)[:2000])
            continue
        if problem := (shape_problem(s, objects=_SAMPLE_OBJECTS, texts=_SAMPLE_TEXTS, lists=_SAMPLE_LISTS)
                       or _usage_problem(s.get("model_usage"), "model_usage")):
            b.quarantine(path, None, f"{at}: {problem}", json.dumps(s, default=str)[:2000])
            continue
        sid, epoch = s.get("id"), s.get("epoch")
        if sid is None or not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
            b.quarantine(path, None, f"{at}: missing id or epoch", json.dumps(s, default=str)[:2000])
            continue
        if (str(sid), epoch) in seen:
            b.quarantine(path, None, f"{at}: sample {sid} epoch {epoch} is a duplicate", None)
            continue
        seen.add((str(sid), epoch))
        if s.get("completed") is False:
            b.note(f"{path.name}: sample {sid} epoch {epoch} did not complete; not a trial")
            continue
        case_id = f"{prefix}/{sid}"
        meta = s.get("metadata") or {}
        repo = meta.get("repo") or meta.get("repository")
        b.case(
            case_id,
            repository=_opt_str(repo),
            benchmark=dataset or task,
            labels={"task": task, "task_version": tv, "sample_id": str(sid),
                    **{k: v for k, v in meta.items() if isinstance(v, str | int | float | bool)}},
        )
        scorer = _primary_scorer(header, s)
        outcome, reason, labels = outcome_for(header, s, scorer)
        usage, usage_labels = _usage(s, model)
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
                prices, model, reported=usage.get("total_cost"), input_tokens=inp, output_tokens=out,
                cache_read_tokens=cread, cache_write_tokens=cwrite, on=started, zero_is_unpriced=True)
        if cost is None:
            labels["cost_unpriced"] = True
        labels["harness_source"] = harness_source
        b.trial(
            trial_id=f"{eval_id}:{sid}:{epoch}",
            config_id=cid,
            case_id=case_id,
            repetition=epoch,
            outcome=outcome,
            reason=reason,
            source_key=s.get("uuid") or f"{eval_id}:{sid}:{epoch}",
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
            "task": task,
            "task_version": tv,
            "eval_run_id": ev.get("run_id"),
            "eval_set_id": ev.get("eval_set_id"),
            "dataset": ev.get("dataset"),
            "tags": ev.get("tags"),
            "run_model_usage": run_usage,
            "headline": (header.get("results") or {}).get("headline"),
        },
    )
    return b.finish()


def log_files(path: Path) -> list[Path]:
    """The Inspect logs at ``path`` (a log file, or a directory of them)."""
    if path.is_file():
        return [path]
    found = []
    for p in sorted(path.rglob("*")):
        if p.is_file() and p.suffix == ".eval" and is_inspect_eval_zip(p):
            found.append(p)
        elif p.is_file() and p.suffix == ".json" and p.name not in {"logs.json", "eval-set.json"}:
            head = p.open("rb").read(4096)
            if b'"eval_id"' in head:
                found.append(p)
    return found


def load(path: Path, prices: PriceTable | None = None) -> list[SourceBatch]:
    files = log_files(Path(path))
    if not files:
        raise IngestError(f"{path}: no Inspect logs (.eval or .json) found")
    return [_load_one(f, prices) for f in files]
