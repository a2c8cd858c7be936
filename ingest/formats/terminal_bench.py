"""Terminal-Bench legacy ``tb`` run directories (terminal-bench ≤ 0.2.x).

The run ``results.json`` holds every trial inline; ``run_metadata.json`` names the
agent and model; ``tb.lock`` (JSON despite its name) records the tb version. Outcome
comes from ``is_resolved`` first — a timeout that still resolved is accepted — then
from ``failure_mode`` (FORMATS.md §4). Tokens 0/0 mean "not reported" → null.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ingest.batch import SourceBatch
from ingest.cost import resolve_cost
from ingest.errors import IngestError
from ingest.formats._common import BatchBuilder, nonneg_int, parse_ts, seconds_between
from ingest.formats.detect import is_tb_run_results, is_tb_trial_results, read_json
from ingest.identity import path_key
from ingest.prices import PriceTable

FORMAT = "terminal-bench"
_REP = re.compile(r"\.(\d+)-of-(\d+)\.")
_INFRA = {"test_timeout", "parse_error", "agent_installation_failed"}
_AGENT_FAULT = {"unknown_agent_error", "fatal_llm_parse_error", "context_length_exceeded", "output_length_exceeded"}


def outcome_for(is_resolved: Any, failure_mode: Any) -> tuple[str, str | None, dict]:
    mode = failure_mode if isinstance(failure_mode, str) else None
    labels: dict[str, Any] = {"failure_mode": mode} if mode and mode not in {"none", "unset"} else {}
    if is_resolved is True:
        if mode == "agent_timeout":
            labels["limit_hit"] = "time"
        return "accepted", None, labels
    if mode == "agent_timeout":
        labels["limit_hit"] = "time"
        return "budget_exhausted", mode, labels
    if mode in _INFRA:
        return "infra_error", mode, labels
    if is_resolved is False:  # validly graded as failing (agent faults like context_length_exceeded too)
        return "target_failed", mode if mode in _AGENT_FAULT else None, labels
    return "infra_error", mode or "not graded", labels


def _run_dir(path: Path) -> Path | None:
    """The run directory holding ``run_metadata.json`` at or above ``path``."""
    for p in [path, *path.parents][:4]:
        if (p / "run_metadata.json").is_file():
            return p
    return None


def _trials(path: Path, b: BatchBuilder) -> list[tuple[Path, dict]]:
    if path.is_file():
        obj = read_json(path)
        if is_tb_run_results(obj):
            return [(path, r) for r in obj["results"]]
        if is_tb_trial_results(obj):
            return [(path, obj)]
        raise IngestError(f"{path}: not a Terminal-Bench results.json")
    results = read_json(path / "results.json") if (path / "results.json").is_file() else None
    if is_tb_run_results(results):
        return [(path / "results.json", r) for r in results["results"]]
    found = []
    for f in sorted(path.glob("*/*/results.json")):
        obj = read_json(f)
        if is_tb_trial_results(obj):
            found.append((f, obj))
        else:
            b.quarantine(f, None, f"{f}: not a Terminal-Bench trial result", None)
    if not found and not b.batch.quarantine:
        raise IngestError(f"{path}: no Terminal-Bench results.json found")
    return found


def load(path: Path, prices: PriceTable | None = None) -> list[SourceBatch]:
    path = Path(path)
    run = _run_dir(path if path.is_dir() else path.parent)
    root = run or (path if path.is_dir() else path.parent)
    meta = read_json(run / "run_metadata.json") if run else None
    meta = meta if isinstance(meta, dict) else {}
    lock = read_json(run / "tb.lock") if run and (run / "tb.lock").is_file() else None
    lock = lock if isinstance(lock, dict) else {}
    run_name = meta.get("run_id") or root.name
    b = BatchBuilder(f"terminal-bench-{run_name}-{path_key(root)}", FORMAT, [])
    for f in ("results.json", "run_metadata.json", "tb.lock"):
        if (root / f).is_file():
            b.batch.source_files.append(root / f)
    lock_agent = lock.get("agent") or {}
    model = meta.get("model_name") or lock_agent.get("model_name")
    harness = meta.get("agent_name") or lock_agent.get("name")
    kwargs = meta.get("agent_kwargs") or {}
    harness_version = kwargs.get("version") if isinstance(kwargs, dict) else None
    tb_version = (lock.get("harness") or {}).get("version")
    if not (model or harness):
        b.note(f"{root}: no run_metadata.json/tb.lock; model and agent unknown")
    cid, _ = b.config(model, harness, None if harness_version is None else str(harness_version),
                      {"agent_kwargs": kwargs} if kwargs else None)
    dataset = meta.get("dataset_name")
    seen: set[str] = set()
    for src, r in _trials(path if path.is_file() else root, b):
        if not isinstance(r, dict) or not r.get("task_id") or not r.get("trial_name"):
            b.quarantine(src, None, f"{src}: trial without task_id/trial_name", str(r)[:2000])
            continue
        key = str(r.get("id") or r["trial_name"])
        if key in seen:
            b.quarantine(src, None, f"{src}: duplicate trial {key}", None)
            continue
        seen.add(key)
        m = _REP.search(r["trial_name"])
        rep = int(m.group(1)) if m else 1
        outcome, reason, labels = outcome_for(r.get("is_resolved"), r.get("failure_mode"))
        if r.get("parser_results"):
            labels["parser_results"] = r["parser_results"]
        labels["tb_version"] = tb_version
        labels["harness_version_source"] = "agent_kwargs" if harness_version else None
        task = str(r["task_id"])
        b.case(task, benchmark=dataset, labels={"dataset_version": meta.get("dataset_version")})
        t0, _ = parse_ts(r.get("trial_started_at"))
        t1, _ = parse_ts(r.get("trial_ended_at"))
        a0, _ = parse_ts(r.get("agent_started_at"))
        a1, _ = parse_ts(r.get("agent_ended_at"))
        s0, _ = parse_ts(r.get("test_started_at"))
        s1, _ = parse_ts(r.get("test_ended_at"))
        inp, out = nonneg_int(r.get("total_input_tokens")), nonneg_int(r.get("total_output_tokens"))
        if not inp and not out:
            inp = out = None  # 0/0 = the agent did not report
        cost, source = resolve_cost(prices, model, input_tokens=inp, output_tokens=out, on=t0)  # tb reports no cost
        if cost is None:
            labels["cost_unpriced"] = True
        b.trial(
            trial_id=key, config_id=cid, case_id=task, repetition=rep, outcome=outcome, reason=reason,
            source_key=key, started_at=t0, finished_at=t1, duration_s=seconds_between(t0, t1),
            setup_s=seconds_between(t0, a0), agent_s=seconds_between(a0, a1),
            verification_s=seconds_between(s0, s1), input_tokens=inp, output_tokens=out,
            cost_usd=cost, cost_source=source,
            failure_mode=r.get("failure_mode"), labels=labels,
        )
    s, _ = parse_ts(meta.get("start_time"))
    e, _ = parse_ts(meta.get("end_time"))
    b.run(root, started_at=s, finished_at=e, engine_version=tb_version,
          repetitions=meta.get("n_attempts"), initial_commit=meta.get("commit_hash"),
          prices_as_of=prices.as_of if prices else None,
          details={"run_id": run_name, "dataset": dataset, "dataset_version": meta.get("dataset_version"),
                   "accuracy_reported": (read_json(root / "results.json") or {}).get("accuracy")
                   if (root / "results.json").is_file() else None})
    return [b.finish()]
