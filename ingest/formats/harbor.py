"""Harbor job directories (also Terminal-Bench 2.x): one trial per ``*/result.json``.

Outcome follows the exception embedded in each trial result and its policy
(docs/formats.md, "Harbor job directories"): a valid reward is graded (an agent timeout that still fails is
``budget_exhausted``), a missing or invalid reward is ``infra_error``. Harbor's
``n_input_tokens`` includes cache reads, so uncached input = input − cache. A trial's
ATIF ``agent/trajectory.json``, when there, becomes its ``steps`` (one ``build`` stage).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from contract.trajectory import atif_trajectory_steps
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
    seconds_between,
    shape_problem,
)
from ingest.formats.detect import is_harbor_job_result, is_harbor_trial_result, read_json
from ingest.identity import path_key
from ingest.prices import PriceTable

FORMAT = "harbor"
REWARD_KEY = "reward"
TIME_LIMIT_ERRORS = {"AgentTimeoutError"}
BUDGET_ERRORS = {"BudgetExceededError"}


def _phase_s(block: Any) -> float | None:
    if not isinstance(block, dict):
        return None
    a, _ = parse_ts(block.get("started_at"))
    b, _ = parse_ts(block.get("finished_at"))
    return seconds_between(a, b)


def _sum(*xs: float | None) -> float | None:
    known = [x for x in xs if x is not None]
    return sum(known) if known else None


REWARD_FILE_MAX = 64 * 1024
"""Largest ``verifier/reward.txt`` read (it holds one number)."""


def _rewards(result: dict, trial_dir: Path) -> dict | None:
    """The trial's rewards: from its result, else its verifier's reward file. A reward file
    that may not be read raises ``ForeignFileError`` (the trial is quarantined with it)."""
    vr = result.get("verifier_result")
    if isinstance(vr, dict) and isinstance(vr.get("rewards"), dict):
        return vr["rewards"]
    txt = trial_dir / "verifier" / "reward.txt"
    js = trial_dir / "verifier" / "reward.json"
    if foreign_files.present(txt):
        data = foreign_files.read_bytes(txt, REWARD_FILE_MAX, "a reward file")
        try:
            return {"reward": float(data.decode("utf-8", errors="replace").strip())}
        except ValueError:
            return None
    if foreign_files.present(js):
        obj = foreign_files.load_json(js, REWARD_FILE_MAX)
        return obj if isinstance(obj, dict) else None
    return None


def _reward_value(rewards: dict | None, key: str) -> float | None:
    if not rewards:
        return None
    value = rewards.get(key)
    if value is None and len(rewards) == 1:
        value = next(iter(rewards.values()))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def outcome_for(result: dict, reward: float | None) -> tuple[str, str | None, dict]:
    """(outcome, reason, labels) from a trial result and its chosen reward."""
    labels: dict[str, Any] = {}
    exc = result.get("exception_info") or None
    etype = exc.get("exception_type") if isinstance(exc, dict) else None
    policy: dict[str, Any] = {}
    if isinstance(exc, dict):
        policy = exc.get("policy_override") or exc.get("policy") or {}
        labels["exception"] = etype
        if exc.get("exception_message"):
            labels["error"] = str(exc["exception_message"])[:500]
    if "reward_valid" in result:
        valid = bool(result["reward_valid"]) and reward is not None
    else:
        valid = reward is not None and (exc is None or bool(policy.get("has_valid_reward")))
    if reward is not None:
        labels["reward"] = reward
        if 0 < reward < 1:
            labels["partial"] = True
    passed = valid and reward == 1.0
    if etype in BUDGET_ERRORS:
        labels["limit_hit"] = "cost"
        return ("accepted", None, labels) if passed else ("budget_exhausted", etype, labels)
    if etype in TIME_LIMIT_ERRORS:
        labels["limit_hit"] = "time"
        if passed:
            return "accepted", None, labels
        if valid:
            return "budget_exhausted", etype, labels
        return "infra_error", f"{etype} without a valid reward", labels
    if not valid:
        return "infra_error", etype or "no valid reward", labels
    return ("accepted", None, labels) if passed else ("target_failed", etype, labels)


def _trajectory(b: BatchBuilder, trial_id: str, trial_dir: Path, execution: Any) -> None:
    """The trial's ATIF ``agent/trajectory.json`` as its agent stage's steps (docs/trajectories.md);
    the stage runs from ``agent_execution``'s start. Paths stay as the agent wrote them (ATIF
    does not say where the workspace is)."""
    path = trial_dir / "agent" / "trajectory.json"
    if not foreign_files.present(path):
        return
    b.batch.source_files.append(path)
    try:
        doc = foreign_files.load_json(path)
    except foreign_files.ForeignFileError as e:  # the trial stands; its steps are set aside
        b.quarantine(path, None, f"{e}; the trial is kept without its steps", foreign_files.excerpt(path))
        return
    steps = atif_trajectory_steps(doc)
    if not steps:
        b.note(f"{path}: not an ATIF v1.x trajectory with agent steps; the trial has no steps")
        return
    block = execution if isinstance(execution, dict) else {}
    b.trajectory(trial_id, steps, "atif", stage="build", started_at=parse_ts(block.get("started_at"))[0],
                 finished_at=parse_ts(block.get("finished_at"))[0])


def _job_dirs(path: Path) -> list[Path]:
    if path.is_file():
        path = path.parent
    if (path / "result.json").is_file():
        return [path]  # a job, or a single trial directory
    jobs = [p for p in sorted(path.iterdir())
            if p.is_dir() and foreign_files.outside(p) is None and is_harbor_job_result(read_json(p / "result.json"))]
    return jobs or [path]


_OBJECTS = ("agent_info", "agent_info.model_info", "config", "config.agent", "agent_result", "task_id",
            "verifier_result", "exception_info", "environment_setup", "agent_setup", "agent_execution", "verifier")
_TEXTS = ("task_name", "source", "task_checksum", "id", "started_at", "finished_at", "agent_info.name",
          "agent_info.version", "agent_info.model_info.name", "agent_info.model_info.provider",
          "config.agent.model_name", "task_id.path", "exception_info.exception_type")


def _trial_results(b: BatchBuilder, trial_files: list[Path]) -> list[tuple[Path, dict]]:
    """The job's trial results that are trials: (file, result); the others quarantined or noted."""
    parsed: list[tuple[Path, dict]] = []
    for f in trial_files:
        if not foreign_files.present(f):
            b.note(f"{f.parent.name}: no result.json (still running or killed); not a trial")
            continue
        b.batch.source_files.append(f)
        try:  # a trial folder or result.json leading outside the job is refused here, unread
            obj = foreign_files.load_json(f)
        except foreign_files.ForeignFileError as e:
            b.quarantine(f, None, f"{e}; not a trial", foreign_files.excerpt(f))
            continue
        if not is_harbor_trial_result(obj):
            b.quarantine(f, None, f"{f}: not a Harbor trial result (missing trial_name/agent_info)",
                         foreign_files.excerpt(f))
            continue
        if not obj.get("task_name"):
            b.quarantine(f, None, f"{f}: field task_name is missing", None)
            continue
        if problem := shape_problem(obj, objects=_OBJECTS, texts=_TEXTS):
            b.quarantine(f, None, f"{f}: {problem}", foreign_files.excerpt(f))
            continue
        parsed.append((f, obj))
    return parsed


def _model_of(r: dict) -> tuple[str | None, str | None]:
    """A trial's (model, provider)."""
    info = (r.get("agent_info") or {}).get("model_info") or {}
    if info.get("name"):
        return info["name"], info.get("provider")
    name = ((r.get("config") or {}).get("agent") or {}).get("model_name")
    return name, None


def _repetitions(parsed: list[tuple[Path, dict]]) -> dict[Path, int]:
    """Each trial's repetition: its place by started_at within (task, agent, model)."""
    groups: dict[tuple, list[tuple[Path, dict]]] = {}
    for f, r in parsed:
        model, _ = _model_of(r)
        groups.setdefault((r["task_name"], (r.get("agent_info") or {}).get("name"), model), []).append((f, r))
    repetition: dict[Path, int] = {}
    for items in groups.values():
        items.sort(key=lambda fr: (str(fr[1].get("started_at") or ""), str(fr[1].get("id"))))
        for k, (f, _) in enumerate(items, 1):
            repetition[f] = k
    return repetition


def _tokens(ar: dict, labels: dict) -> tuple[int | None, int | None, int | None, int | None]:
    """(uncached input, cache reads, input as Harbor counts it, output) of an ``agent_result``:
    Harbor's ``n_input_tokens`` includes cache reads."""
    n_in, n_cache, n_out = (nonneg_int(ar.get(k)) for k in ("n_input_tokens", "n_cache_tokens", "n_output_tokens"))
    uncached: int | None
    cache_read: int | None
    if n_in is not None and n_cache is not None and n_cache <= n_in:
        uncached, cache_read = n_in - n_cache, n_cache
    else:
        uncached, cache_read = n_in, None
        if n_in is not None:
            labels["input_includes_unknown_cache"] = True
    return uncached, cache_read, n_in, n_out


class _Job(NamedTuple):
    """What every trial of one job shares."""

    prices: PriceTable | None
    reward_key: str
    harbor_version: str | None


def _admitted(b: BatchBuilder, f: Path, r: dict) -> tuple[str, dict | None] | None:
    """The trial's id and rewards, or None when it is quarantined instead: an id another
    result of the job has, or a reward file that may not be read."""
    trial_id = str(r.get("id") or f.parent.name)
    if b.has_trial(trial_id):
        b.quarantine(f, None, f"{f}: duplicate trial id {trial_id!r} (another result.json of this job "
                              "has it); not a trial", None)
        return None
    try:
        return trial_id, _rewards(r, f.parent)
    except foreign_files.ForeignFileError as e:
        b.quarantine(f, None, f"{e}; the trial's reward is unknown, so it is not a trial", None)
        return None


def _trial(b: BatchBuilder, job: _Job, f: Path, r: dict, repetition: int, trial_id: str,
           rewards: dict | None) -> None:
    """One trial result as a configuration, a case and a trial (with its trajectory)."""
    model, provider = _model_of(r)
    agent = r.get("agent_info") or {}
    cid, _ = b.config(model, agent.get("name"), agent.get("version"),
                      {"provider": provider} if provider else None)
    task = str(r["task_name"])
    b.case(task, benchmark=r.get("source"),
           labels={"task_checksum": r.get("task_checksum"), "task_path": (r.get("task_id") or {}).get("path")})
    outcome, reason, labels = outcome_for(r, _reward_value(rewards, job.reward_key))
    if rewards and len(rewards) > 1:
        labels["rewards"] = rewards
    ar = r.get("agent_result") or {}
    uncached, cache_read, n_in, n_out = _tokens(ar, labels)
    started, naive1 = parse_ts(r.get("started_at"))
    finished, naive2 = parse_ts(r.get("finished_at"))
    if naive1 or naive2:
        labels["naive_timestamp"] = True
    # Harbor writes cost_usd 0 for models litellm cannot price: a 0 next to tokens is unknown.
    # Without the cache split the uncached input is unknown, so such a trial is not priced.
    cost, source = resolve_cost(
        job.prices, model, reported=ar.get("cost_usd"),
        input_tokens=None if "input_includes_unknown_cache" in labels else uncached,
        output_tokens=n_out, cache_read_tokens=cache_read, activity=n_in, on=started,
        zero_is_unpriced=True)
    if cost is None:
        labels["cost_unpriced"] = True
    labels["harbor_version"] = job.harbor_version
    b.trial(
        trial_id=trial_id,
        config_id=cid,
        case_id=task,
        repetition=repetition,
        outcome=outcome,
        reason=reason,
        source_key=str(r.get("id") or f.parent.name),
        started_at=started,
        finished_at=finished,
        duration_s=seconds_between(started, finished),
        setup_s=_sum(_phase_s(r.get("environment_setup")), _phase_s(r.get("agent_setup"))),
        agent_s=_phase_s(r.get("agent_execution")),
        verification_s=_phase_s(r.get("verifier")),
        input_tokens=uncached,
        output_tokens=n_out,
        cache_read_tokens=cache_read,
        cost_usd=cost,
        cost_source=source,
        failure_mode=(r.get("exception_info") or {}).get("exception_type"),
        labels=labels,
    )
    _trajectory(b, trial_id, f.parent, r.get("agent_execution"))


def _job_run(b: BatchBuilder, job_dir: Path, job: _Job, job_result: Any, config: Any, single: bool) -> None:
    """The job as the batch's run (``single``: a trial directory, a run without the job's files)."""
    stats = (job_result or {}).get("stats") if not single else None
    stats = stats if isinstance(stats, dict) else {}
    run_started, _ = parse_ts((job_result or {}).get("started_at")) if not single else (None, False)
    run_finished, _ = parse_ts((job_result or {}).get("finished_at")) if not single else (None, False)
    for extra in ("config.json", "lock.json", "result.json"):
        if not single and (job_dir / extra).is_file():
            b.batch.source_files.append(job_dir / extra)
    if stats.get("n_retries"):
        b.note(f"{job_dir.name}: Harbor retried {stats['n_retries']} trial(s); their failed tries were deleted")
    b.run(
        job_dir,
        started_at=run_started,
        finished_at=run_finished,
        engine_version=job.harbor_version,
        repetitions=(config or {}).get("n_attempts") if isinstance(config, dict) else None,
        prices_as_of=job.prices.as_of if job.prices else None,
        run_cost_usd=finite_cost(stats.get("cost_usd")),
        details={"job_name": job_dir.name, "n_retries": stats.get("n_retries"),
                 "n_total_trials": (job_result or {}).get("n_total_trials") if not single else None,
                 "reward_key": job.reward_key},
    )


def _load_job(job_dir: Path, prices: PriceTable | None, reward_key: str) -> SourceBatch:
    b = BatchBuilder(f"harbor-{job_dir.name}-{path_key(job_dir)}", FORMAT, [])
    job_result = b.optional_json(job_dir / "result.json")
    single = is_harbor_trial_result(job_result)
    if single:
        trial_files = [job_dir / "result.json"]
    else:  # a trial folder that is a symlink is listed, and refused when its result is read
        trial_files = sorted(p / "result.json" for p in job_dir.iterdir() if p.is_dir())
    config = b.optional_json(job_dir / "config.json") if not single else None
    lock = b.optional_json(job_dir / "lock.json") if not single else None
    version = field(lock, "harbor.version")
    job = _Job(prices, reward_key, version if isinstance(version, str) else None)
    parsed = _trial_results(b, trial_files)
    if not parsed and not b.batch.quarantine:
        raise IngestError(f"{job_dir}: no Harbor trial results (*/result.json) found")
    repetition = _repetitions(parsed)
    for f, r in parsed:
        if (admitted := _admitted(b, f, r)) is not None:
            _trial(b, job, f, r, repetition[f], *admitted)
    _job_run(b, job_dir, job, job_result, config, single)
    return b.finish()


def load(path: Path, prices: PriceTable | None = None, reward_key: str = REWARD_KEY) -> list[SourceBatch]:
    path = Path(path)
    if path.is_file() and path.name != "result.json":
        raise IngestError(f"{path}: expected a Harbor job directory or a result.json")
    jobs = _job_dirs(path)
    batches = [_load_job(j, prices, reward_key) for j in jobs]
    folder = path.parent if path.is_file() else path
    if jobs != [folder] and (out := [p for p in sorted(folder.iterdir()) if p.is_dir() and foreign_files.outside(p)]):
        b = BatchBuilder(f"harbor-outside-{path_key(folder)}", FORMAT, [])  # a jobs folder: a job that leads out
        for p in out:
            b.quarantine(p, None, f"{p}: {foreign_files.outside(p)}")
        batches.append(b.finish())
    return batches
