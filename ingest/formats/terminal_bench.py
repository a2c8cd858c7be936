"""Terminal-Bench legacy ``tb`` run directories (terminal-bench ≤ 0.2.x).

The run ``results.json`` holds every trial inline; ``run_metadata.json`` names the
agent and model; ``tb.lock`` (JSON despite its name) records the tb version. Outcome
comes from ``is_resolved`` first — a timeout that still resolved is accepted — then
from ``failure_mode`` (docs/formats.md, "Terminal-Bench legacy runs"). Tokens 0/0 mean
"not reported" → null.

The public leaderboard (``results/<dataset>@<version>/<YYYYMMDD_agent_model>/<run>/``)
is a folder of such runs, so a folder loads every run below it, one batch each
(``detect.tb_run_sources``). Submissions there often record no model (``model_name:
null``) or keep only ``<run>_results.json`` files; the submission folder's name then
supplies the agent and model, and a note says so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from ingest.batch import SourceBatch
from ingest.cost import resolve_cost
from ingest.errors import IngestError
from ingest.formats import foreign_files
from ingest.formats._common import BatchBuilder, nonneg_int, parse_ts, seconds_between
from ingest.formats.detect import is_tb_run_results, is_tb_trial_results, read_json, tb_run_sources
from ingest.identity import path_key
from ingest.prices import PriceTable

FORMAT = "terminal-bench"
_REP = re.compile(r"\.(\d+)-of-(\d+)(?:\.|$)")  # task.k-of-n.run_id, or task.k-of-n (no run id)
_SUBMISSION = re.compile(r"^(?P<date>\d{8})_(?P<agent>[^_]+)_(?P<model>.+)$")  # 20250902_orchestrator_qwen-3-coder-480B
_RESULTS_FILE = re.compile(r"_+results$")  # 2025-08-29__07-37-19_results.json → run 2025-08-29__07-37-19
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
    """The run directory holding ``run_metadata.json`` at or above ``path`` (reads may reach it:
    ``foreign_files.widen``)."""
    for p in [path, *path.parents][:4]:
        if (p / "run_metadata.json").is_file():
            foreign_files.widen(p)
            return p
    return None


def _trials(path: Path, b: BatchBuilder) -> list[tuple[Path, dict]]:
    if path.is_file():
        obj = foreign_files.load_json(path)  # one that may not be read says why
        if is_tb_run_results(obj):
            return [(path, r) for r in obj["results"]]
        if is_tb_trial_results(obj):
            return [(path, obj)]
        raise IngestError(f"{path}: not a Terminal-Bench results.json")
    results = b.optional_json(path / "results.json")
    if is_tb_run_results(results):
        return [(path / "results.json", r) for r in results["results"]]
    found = []
    for f in sorted(path.glob("*/*/results.json")):
        try:  # a trial's results.json leading outside the run is refused here, unread
            obj = foreign_files.load_json(f)
        except foreign_files.ForeignFileError as e:
            b.quarantine(f, None, str(e), foreign_files.excerpt(f))
            continue
        if is_tb_trial_results(obj):
            found.append((f, obj))
        else:
            b.quarantine(f, None, f"{f}: not a Terminal-Bench trial result", None)
    if not found and not b.batch.quarantine:
        raise IngestError(f"{path}: no Terminal-Bench results.json found")
    return found


_DATASET_DIR = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)[@:](?P<version>\d[\w.-]*)$")  # terminal-bench-core@0.1.1


def _named_ancestor(root: Path, pattern: re.Pattern[str], depth: int = 3) -> re.Match[str] | None:
    """The nearest folder at or above ``root`` whose name matches ``pattern``."""
    for p in [root, *root.parents][:depth]:
        if m := pattern.match(p.name):
            return m
    return None


def load(path: Path, prices: PriceTable | None = None) -> list[SourceBatch]:
    """One run (directory or results file) → one batch; a folder of runs (a submission, a
    dataset folder of submissions, the leaderboard's ``results/``) → one batch per run.
    A run found twice (a copy nested inside another run) is loaded once, with a note."""
    path = Path(path)
    sources = tb_run_sources(path)
    if not sources:
        raise IngestError(f"{path}: no Terminal-Bench run found (a run directory has results.json, "
                          "run_metadata.json or <task>/<trial>/results.json); pass a run or a folder of runs")
    if sources == [path]:
        return [_load_run(path, prices)]
    batches: list[SourceBatch] = []
    first: dict[frozenset[str], tuple[SourceBatch, Path]] = {}
    for src in sources:
        b = _load_run(src, prices)
        ids = frozenset(str(t["trial_id"]) for t in b.rows["trials"])
        if ids and ids in first:
            kept, where = first[ids]
            kept.notes.append(f"{src}: a copy of the run at {where} (the same {len(ids)} trial ids); loaded once")
            continue
        first.setdefault(ids, (b, src))
        batches.append(b)
    return batches


def _model_and_agent(b: BatchBuilder, root: Path, meta: dict, lock: dict) -> tuple[Any, Any, dict[str, Any]]:
    """(model, agent, run labels): from run_metadata.json or tb.lock, else from the submission
    folder's name (with a note and labels saying so)."""
    lock_agent = lock.get("agent") or {}
    model = meta.get("model_name") or lock_agent.get("model_name")
    harness = meta.get("agent_name") or lock_agent.get("name")
    run_labels: dict[str, Any] = {}
    sub = _named_ancestor(root, _SUBMISSION)
    if sub and not (model and harness):
        missing = [w for w, v in (("model", model), ("agent", harness)) if not v]
        model, harness = model or sub["model"], harness or sub["agent"]
        run_labels = {f"{w}_source": "submission folder name" for w in missing}
        b.note(f"{root}: no {' or '.join(missing)} in run_metadata.json/tb.lock; "
               f"{' and '.join(missing)} from the submission folder name {sub.group(0)!r}")
    elif not (model or harness):
        b.note(f"{root}: no run_metadata.json/tb.lock; model and agent unknown")
    return model, harness, run_labels


class _Run(NamedTuple):
    """What every trial of one run shares."""

    name: Any
    config_id: str
    model: Any
    prices: PriceTable | None
    labels: dict[str, Any]
    tb_version: Any
    harness_version: Any
    dataset: Any
    dataset_version: Any


def _trial(b: BatchBuilder, run: _Run, src: Path, r: Any, seen: set[str]) -> None:
    """One trial record as a case and a trial (quarantined without ids, or as a duplicate)."""
    if not isinstance(r, dict) or not r.get("task_id") or not r.get("trial_name"):
        b.quarantine(src, None, f"{src}: trial without task_id/trial_name", str(r)[:2000])
        return
    name = str(r["trial_name"])
    # Without a uuid the trial name is the id; it carries the run id unless the run wrote
    # ``task.k-of-n`` only, and then two runs would share ids: prefix the run's name.
    key = str(r.get("id") or (name if str(run.name) in name else f"{run.name}:{name}"))
    if key in seen:
        b.quarantine(src, None, f"{src}: duplicate trial {key}", None)
        return
    seen.add(key)
    m = _REP.search(name)
    rep = int(m.group(1)) if m else 1
    outcome, reason, labels = outcome_for(r.get("is_resolved"), r.get("failure_mode"))
    labels.update(run.labels)
    if r.get("parser_results"):
        labels["parser_results"] = r["parser_results"]
    labels["tb_version"] = run.tb_version
    labels["harness_version_source"] = "agent_kwargs" if run.harness_version else None
    task = str(r["task_id"])
    b.case(task, benchmark=run.dataset, labels={"dataset_version": run.dataset_version})
    t0, _ = parse_ts(r.get("trial_started_at"))
    t1, _ = parse_ts(r.get("trial_ended_at"))
    a0, _ = parse_ts(r.get("agent_started_at"))
    a1, _ = parse_ts(r.get("agent_ended_at"))
    s0, _ = parse_ts(r.get("test_started_at"))
    s1, _ = parse_ts(r.get("test_ended_at"))
    inp, out = nonneg_int(r.get("total_input_tokens")), nonneg_int(r.get("total_output_tokens"))
    if not inp and not out:
        inp = out = None  # 0/0 = the agent did not report
    cost, source = resolve_cost(run.prices, run.model, input_tokens=inp, output_tokens=out, on=t0)  # tb reports no cost
    if cost is None:
        labels["cost_unpriced"] = True
    b.trial(
        trial_id=key, config_id=run.config_id, case_id=task, repetition=rep, outcome=outcome, reason=reason,
        source_key=key, started_at=t0, finished_at=t1, duration_s=seconds_between(t0, t1),
        setup_s=seconds_between(t0, a0), agent_s=seconds_between(a0, a1),
        verification_s=seconds_between(s0, s1), input_tokens=inp, output_tokens=out,
        cost_usd=cost, cost_source=source,
        failure_mode=r.get("failure_mode"), labels=labels,
    )


def _load_run(path: Path, prices: PriceTable | None) -> SourceBatch:
    run = _run_dir(path if path.is_dir() else path.parent)
    root = run or (path if path.is_dir() else path.parent)
    meta = read_json(run / "run_metadata.json") if run else None
    meta = meta if isinstance(meta, dict) else {}
    lock = read_json(run / "tb.lock") if run and (run / "tb.lock").is_file() else None
    lock = lock if isinstance(lock, dict) else {}
    # ``<run>_results.json`` beside other runs' files (no run directory): the file is the run.
    results_file = path.is_file() and path.name != "results.json" and _RESULTS_FILE.search(path.stem) is not None
    run_name = meta.get("run_id") or (_RESULTS_FILE.sub("", path.stem) if results_file else root.name)
    b = BatchBuilder(f"terminal-bench-{run_name}-{path_key(path if results_file else root)}", FORMAT, [])
    for f, doc in ((run / "run_metadata.json", meta), (run / "tb.lock", lock)) if run else ():
        if not doc:
            b.optional_json(f)  # one there that may not be read is quarantined with the reason
    for f in ([path] if results_file else []) + [root / f for f in ("results.json", "run_metadata.json", "tb.lock")]:
        if f.is_file() and f not in b.batch.source_files and (not results_file or f.name != "results.json"):
            b.batch.source_files.append(f)
    model, harness, run_labels = _model_and_agent(b, root, meta, lock)
    kwargs = meta.get("agent_kwargs") or {}
    harness_version = kwargs.get("version") if isinstance(kwargs, dict) else None
    tb_version = (lock.get("harness") or {}).get("version")
    cid, _ = b.config(model, harness, None if harness_version is None else str(harness_version),
                      {"agent_kwargs": kwargs} if kwargs else None)
    dataset, dataset_version = meta.get("dataset_name"), meta.get("dataset_version")
    if not dataset and (ds := _named_ancestor(root, _DATASET_DIR, depth=4)):
        dataset, dataset_version = ds["name"], dataset_version or ds["version"]
        run_labels["dataset_source"] = "folder name"
    shared = _Run(run_name, cid, model, prices, run_labels, tb_version, harness_version, dataset, dataset_version)
    seen: set[str] = set()
    for src, r in _trials(path if path.is_file() else root, b):
        _trial(b, shared, src, r, seen)
    s, _ = parse_ts(meta.get("start_time"))
    e, _ = parse_ts(meta.get("end_time"))
    b.run(path if results_file else root, started_at=s, finished_at=e, engine_version=tb_version,
          repetitions=meta.get("n_attempts"), initial_commit=meta.get("commit_hash"),
          prices_as_of=prices.as_of if prices else None,
          details={"run_id": run_name, "dataset": dataset, "dataset_version": dataset_version,
                   "accuracy_reported": _accuracy(path if results_file else root / "results.json")})
    return b.finish()


def _accuracy(results: Path) -> Any:
    obj = read_json(results) if results.is_file() else None
    return obj.get("accuracy") if isinstance(obj, dict) else None
