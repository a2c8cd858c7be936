"""A synthetic warehouse for tests, notebooks and benchmarks (no runner needed).

N models × H harnesses × T tasks × R repetitions with realistic structure: task
difficulty, model skill, harness effect and a model × harness interaction (the second
harness helps model 0 and hurts model 1, so rankings flip), infrastructure errors, a few
invalid trials, unknown cost on a handful of trials, labels (repository, familiarity,
task class, difficulty, language, holdout) and some failure-category annotations.
Vectorised with numpy and written as Arrow through ``replace_run`` (1M trials in seconds).

Test support, not product code: it lives beside the tests (``tests/support``), which import
it as ``tests.support.synthetic_warehouse``, and ``bench/analysis_bench.py`` imports it the
same way (the repository root is on ``sys.path`` through the editable install).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa

from warehouse import db
from warehouse.schema import TABLES

OUTCOME_FAILS = ("target_failed", "regression", "budget_exhausted")
CATEGORIES = ("environment discovery", "task interpretation", "source of truth",
              "dependency choice", "impact analysis", "implementation", "verification")
TASK_CLASSES = ("bugfix", "feature", "refactor", "migration")
LANGUAGES = ("python", "go", "typescript")
DIFFICULTY = ("easy", "medium", "hard")
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Spec:
    models: int = 4
    harnesses: int = 3
    tasks: int = 500
    reps: int = 5
    repositories: int = 20
    infra_rate: float = 0.02
    invalid_rate: float = 0.003
    incomplete: int = 2  # trials with no finish event
    unknown_cost: int = 3  # trials (of the first configuration) with unknown cost
    holdout_share: float = 0.1
    annotate: int = 200  # failed trials given a failure category
    seed: int = 0
    run_id: str = "synthetic"
    simulated: bool = True
    abstain: float = 0.0
    """Share of the first configuration's failures recorded as ``infra_error`` instead (a
    selective abstainer, for ``analysis.abstention``)."""


def config_id(model: str, harness: str, version: str) -> str:
    return hashlib.sha256(f"{model}|{harness}|{version}".encode()).hexdigest()[:16]


def _table(name: str, cols: dict, n: int) -> pa.Table:
    schema = TABLES[name]
    arrays = []
    for f in schema:
        if f.name in cols:
            arrays.append(pa.array(cols[f.name], type=f.type))
        else:
            arrays.append(pa.nulls(n, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _tasks(rng: np.random.Generator, spec: Spec) -> SimpleNamespace:
    """Tasks and their labels (draws from ``rng`` first, in this order)."""
    T = spec.tasks
    t = SimpleNamespace()
    t.case_ids = np.array([f"task-{i:05d}" for i in range(T)], dtype=object)
    t.difficulty = rng.normal(0.0, 1.3, T)
    t.repo_idx = rng.integers(0, spec.repositories, T)
    t.repos = np.array([f"org/repo-{r:02d}" for r in range(spec.repositories)], dtype=object)
    t.known_repo = np.arange(spec.repositories) % 2 == 0
    t.familiarity = np.where(t.known_repo[t.repo_idx], "known", "unknown").astype(object)
    t.holdout = rng.random(T) < spec.holdout_share
    t.cls_idx = rng.integers(0, len(TASK_CLASSES), T)
    t.lang_idx = t.repo_idx % len(LANGUAGES)
    t.diff_label = np.select([t.difficulty < -0.5, t.difficulty < 0.7], ["easy", "medium"], "hard")
    return t


def _configs(spec: Spec) -> SimpleNamespace:
    """Configurations and their effects (no draws)."""
    M, H = spec.models, spec.harnesses
    c = SimpleNamespace()
    c.models = [f"model-{chr(97 + m)}" for m in range(M)]
    c.harnesses = [f"harness-{h}" for h in range(H)]
    c.versions = [f"1.{h}.0" for h in range(H)]
    c.skill = np.linspace(0.9, -0.3, M)
    c.h_eff = np.linspace(0.0, -0.4, H)
    c.inter = np.zeros((M, H))
    if M >= 2 and H >= 2:
        c.inter[0, 1], c.inter[1, 1] = 0.9, -0.9
    c.price_in = np.linspace(3.0, 0.5, M)
    c.price_out = c.price_in * 5
    c.rows = [(m, h, config_id(c.models[m], c.harnesses[h], c.versions[h])) for m in range(M) for h in range(H)]
    return c


def _outcomes(rng: np.random.Generator, spec: Spec, t: SimpleNamespace, c: SimpleNamespace) -> SimpleNamespace:
    """Every trial's configuration, task, outcome, usage and timing (the draws after the tasks')."""
    T, R = spec.tasks, spec.reps
    C = len(c.rows)
    n = C * T * R
    o = SimpleNamespace(n=n)
    o.cfg_m = np.repeat([r[0] for r in c.rows], T * R)
    o.cfg_h = np.repeat([r[1] for r in c.rows], T * R)
    o.cfg_i = np.repeat(np.arange(C), T * R)
    o.task = np.tile(np.repeat(np.arange(T), R), C)
    o.rep = np.tile(np.arange(1, R + 1), C * T).astype(np.int32)
    cfg_m, cfg_h = o.cfg_m, o.cfg_h
    familiar_boost = np.where(t.known_repo[t.repo_idx[o.task]], 0.3, 0.0)
    logit = c.skill[cfg_m] + c.h_eff[cfg_h] + c.inter[cfg_m, cfg_h] - t.difficulty[o.task] + familiar_boost
    p = 1 / (1 + np.exp(-logit))
    u = rng.random(n)
    o.infra = u < spec.infra_rate
    o.invalid = (~o.infra) & (u < spec.infra_rate + spec.invalid_rate)
    o.accepted = (~o.infra) & (~o.invalid) & (rng.random(n) < p)
    fail_kind = rng.integers(0, len(OUTCOME_FAILS), n)
    o.outcome = np.array(OUTCOME_FAILS, dtype=object)[fail_kind]
    o.outcome[o.accepted] = "accepted"
    o.outcome[o.invalid] = "invalid"
    if spec.abstain:  # the first configuration hides some of its failures as infra errors
        hidden = (o.cfg_i == 0) & ~o.accepted & ~o.invalid & (rng.random(n) < spec.abstain)
        o.infra = o.infra | hidden
    o.outcome[o.infra] = "infra_error"
    o.steps = np.maximum(1, rng.poisson(12 + 6 * cfg_h + 4 * (~o.accepted))).astype(np.int64)
    o.in_tok = (rng.lognormal(10.3, 0.5, n) * (1 + 0.3 * cfg_h)).astype(np.int64)
    o.out_tok = (o.in_tok * rng.uniform(0.03, 0.12, n)).astype(np.int64)
    o.in_tok[o.infra] = 0
    o.out_tok[o.infra] = 0
    o.steps[o.infra] = 0
    o.cost = (o.in_tok * c.price_in[cfg_m] + o.out_tok * c.price_out[cfg_m]) / 1e6
    o.cost_valid = np.ones(n, dtype=bool)
    o.cost_valid[: min(spec.unknown_cost, n)] = False
    o.setup = rng.gamma(2.0, 3.0, n)
    o.agent = rng.gamma(3.0, 40.0, n) * (1 + 0.2 * cfg_h)
    o.verification = rng.gamma(2.0, 5.0, n)
    o.duration = o.setup + o.agent + o.verification
    o.ttfe = np.where(rng.random(n) < 0.8, o.agent * rng.uniform(0.05, 0.5, n), np.nan)
    o.complete = np.ones(n, dtype=bool)
    if spec.incomplete:
        o.complete[rng.choice(n, size=min(spec.incomplete, n), replace=False)] = False
    o.offsets = np.arange(n) * 0.5
    o.started = int(START.timestamp()) * 1_000_000 + (o.offsets * 1e6).astype(np.int64)
    o.trial_ids = [f"{spec.run_id}-{i:07d}" for i in range(n)]
    return o


def _trials_table(spec: Spec, t: SimpleNamespace, c: SimpleNamespace, o: SimpleNamespace, batch: str) -> pa.Table:
    n = o.n
    variants = np.array([f"{c.models[m]}+{c.harnesses[h]}" for m, h, _ in c.rows], dtype=object)
    out_col = o.outcome.copy()
    out_col[~o.complete] = None
    ts_type = pa.timestamp("us", tz="UTC")
    return _table("trials", {
        "run_id": pa.array(np.full(n, spec.run_id, dtype=object), pa.string()),
        "trial_id": o.trial_ids, "source_format": np.full(n, "synthetic", dtype=object),
        "config_id": np.array([r[2] for r in c.rows], dtype=object)[o.cfg_i], "variant": variants[o.cfg_i],
        "model": np.array(c.models, dtype=object)[o.cfg_m],
        "harness": np.array(c.harnesses, dtype=object)[o.cfg_h],
        "harness_version": np.array(c.versions, dtype=object)[o.cfg_h],
        "case_id": t.case_ids[o.task], "repetition": o.rep, "outcome": out_col,
        "complete": o.complete, "attempts": np.ones(n, dtype=np.int32),
        "started_at": pa.array(o.started, ts_type),
        "finished_at": pa.array(o.started + (o.duration * 1e6).astype(np.int64), ts_type),
        "duration_s": o.duration, "setup_s": o.setup, "agent_s": o.agent,
        "verification_s": o.verification,
        "time_to_first_edit_s": pa.array(o.ttfe, pa.float64(), from_pandas=True),
        "input_tokens": o.in_tok, "output_tokens": o.out_tok, "steps": o.steps,
        "cost_usd": pa.array(o.cost, pa.float64(), mask=~o.cost_valid),
        "cost_source": pa.array(np.full(n, "priced", dtype=object), pa.string(), mask=~o.cost_valid),
        "simulated": np.full(n, spec.simulated), "ingest_batch_id": np.full(n, batch, dtype=object),
    }, n)


def _run_tables(spec: Spec, t: SimpleNamespace, c: SimpleNamespace, o: SimpleNamespace,
                batch: str) -> dict[str, pa.Table]:
    """The ``runs``, ``configs`` and ``cases`` tables."""
    T, C = spec.tasks, len(c.rows)
    cases = _table("cases", {
        "run_id": [spec.run_id] * T, "case_id": t.case_ids, "holdout": t.holdout,
        "repository": t.repos[t.repo_idx], "familiarity": t.familiarity,
        "task_class": np.array(TASK_CLASSES, dtype=object)[t.cls_idx],
        "difficulty": t.diff_label.astype(object),
        "language": np.array(LANGUAGES, dtype=object)[t.lang_idx],
        "benchmark": ["synthetic"] * T, "validated": [True] * T,
        "ingest_batch_id": [batch] * T,
    }, T)
    configs = _table("configs", {
        "run_id": [spec.run_id] * C, "config_id": [r[2] for r in c.rows],
        "variant": [f"{c.models[m]}+{c.harnesses[h]}" for m, h, _ in c.rows],
        "model": [c.models[m] for m, _, _ in c.rows],
        "harness": [c.harnesses[h] for _, h, _ in c.rows],
        "harness_version": [c.versions[h] for _, h, _ in c.rows],
        "agent_kind": ["simulated"] * C, "simulated": [spec.simulated] * C,
        "source_format": ["synthetic"] * C, "variant_order": list(range(C)),
        "ingest_batch_id": [batch] * C,
    }, C)
    runs = _table("runs", {
        "run_id": [spec.run_id], "source_format": ["synthetic"], "started_at": [START],
        "finished_at": [START + timedelta(seconds=float(o.offsets[-1]) if o.n else 0.0)],
        "status": ["completed"], "repetitions": [spec.reps], "simulated": [spec.simulated],
        "ingest_batch_id": [batch],
    }, 1)
    return {"runs": runs, "configs": configs, "cases": cases}


def _judgments_table(rng: np.random.Generator, spec: Spec, o: SimpleNamespace, batch: str) -> pa.Table:
    """Failure categories for some failed trials (the last draws)."""
    failed = np.flatnonzero(o.complete & ~o.accepted & ~o.infra & ~o.invalid)
    pick = rng.choice(failed, size=min(spec.annotate, failed.size), replace=False) \
        if failed.size else np.array([], dtype=np.int64)
    k = pick.size
    return _table("judgments", {
        "run_id": [spec.run_id] * k, "trial_id": [o.trial_ids[i] for i in pick],
        "kind": ["failure_category"] * k,
        "category": list(np.array(CATEGORIES, dtype=object)[rng.integers(0, 7, k)]),
        "annotator": ["synthetic-judge"] * k, "ts": [START] * k,
        "ingest_batch_id": [batch] * k,
    }, k)


def build(spec: Spec) -> dict[str, pa.Table]:
    """The warehouse tables of one synthetic run as Arrow tables."""
    rng = np.random.default_rng(spec.seed)
    batch = f"synthetic-{spec.seed}"
    tasks = _tasks(rng, spec)
    configs = _configs(spec)
    trials = _outcomes(rng, spec, tasks, configs)
    run = _run_tables(spec, tasks, configs, trials, batch)
    return {"runs": run["runs"], "configs": run["configs"], "cases": run["cases"],
            "trials": _trials_table(spec, tasks, configs, trials, batch),
            "judgments": _judgments_table(rng, spec, trials, batch)}


def generate(db_path: str | Path, spec: Spec | None = None) -> dict[str, int]:
    """Write one synthetic run into the warehouse at ``db_path``; returns rows per table."""
    spec = spec or Spec()
    tables = build(spec)
    with db.write_lock(Path(db_path)):
        db.replace_run(Path(db_path), spec.run_id, tables)
        con = db.open(db_path)  # refresh the views over the new partitions
        con.close()
    return {name: t.num_rows for name, t in tables.items()}
