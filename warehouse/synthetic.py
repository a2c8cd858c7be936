"""A synthetic warehouse for tests, notebooks and benchmarks (no runner needed).

N models × H harnesses × T tasks × R repetitions with realistic structure: task
difficulty, model skill, harness effect and a model × harness interaction (the second
harness helps model 0 and hurts model 1, so rankings flip), infrastructure errors, a few
invalid trials, unknown cost on a handful of trials, labels (repository, familiarity,
task class, difficulty, language, holdout) and some failure-category annotations.
Vectorised with numpy and written as Arrow through ``replace_run`` (1M trials in seconds).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


def build(spec: Spec) -> dict[str, pa.Table]:
    """The warehouse tables of one synthetic run as Arrow tables."""
    rng = np.random.default_rng(spec.seed)
    M, H, T, R = spec.models, spec.harnesses, spec.tasks, spec.reps
    models = [f"model-{chr(97 + m)}" for m in range(M)]
    harnesses = [f"harness-{h}" for h in range(H)]
    versions = [f"1.{h}.0" for h in range(H)]
    batch = f"synthetic-{spec.seed}"
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    # Tasks and their labels.
    case_ids = np.array([f"task-{t:05d}" for t in range(T)], dtype=object)
    difficulty = rng.normal(0.0, 1.3, T)
    repo_idx = rng.integers(0, spec.repositories, T)
    repos = np.array([f"org/repo-{r:02d}" for r in range(spec.repositories)], dtype=object)
    known_repo = np.arange(spec.repositories) % 2 == 0
    familiarity = np.where(known_repo[repo_idx], "known", "unknown").astype(object)
    holdout = rng.random(T) < spec.holdout_share
    cls_idx = rng.integers(0, len(TASK_CLASSES), T)
    lang_idx = repo_idx % len(LANGUAGES)
    diff_label = np.select([difficulty < -0.5, difficulty < 0.7], ["easy", "medium"], "hard")

    # Configurations and their effects.
    skill = np.linspace(0.9, -0.3, M)
    h_eff = np.linspace(0.0, -0.4, H)
    inter = np.zeros((M, H))
    if M >= 2 and H >= 2:
        inter[0, 1], inter[1, 1] = 0.9, -0.9
    price_in = np.linspace(3.0, 0.5, M)
    price_out = price_in * 5
    cfg_rows = []
    for m in range(M):
        for h in range(H):
            cfg_rows.append((m, h, config_id(models[m], harnesses[h], versions[h])))

    C = len(cfg_rows)
    n = C * T * R
    cfg_m = np.repeat([c[0] for c in cfg_rows], T * R)
    cfg_h = np.repeat([c[1] for c in cfg_rows], T * R)
    cfg_i = np.repeat(np.arange(C), T * R)
    task = np.tile(np.repeat(np.arange(T), R), C)
    rep = np.tile(np.arange(1, R + 1), C * T).astype(np.int32)

    familiar_boost = np.where(known_repo[repo_idx[task]], 0.3, 0.0)
    logit = skill[cfg_m] + h_eff[cfg_h] + inter[cfg_m, cfg_h] - difficulty[task] + familiar_boost
    p = 1 / (1 + np.exp(-logit))
    u = rng.random(n)
    infra = u < spec.infra_rate
    invalid = (~infra) & (u < spec.infra_rate + spec.invalid_rate)
    accepted = (~infra) & (~invalid) & (rng.random(n) < p)
    fail_kind = rng.integers(0, len(OUTCOME_FAILS), n)
    outcome = np.array(OUTCOME_FAILS, dtype=object)[fail_kind]
    outcome[accepted] = "accepted"
    outcome[invalid] = "invalid"
    outcome[infra] = "infra_error"

    steps = np.maximum(1, rng.poisson(12 + 6 * cfg_h + 4 * (~accepted))).astype(np.int64)
    in_tok = (rng.lognormal(10.3, 0.5, n) * (1 + 0.3 * cfg_h)).astype(np.int64)
    out_tok = (in_tok * rng.uniform(0.03, 0.12, n)).astype(np.int64)
    in_tok[infra] = 0
    out_tok[infra] = 0
    steps[infra] = 0
    cost = (in_tok * price_in[cfg_m] + out_tok * price_out[cfg_m]) / 1e6
    cost_valid = np.ones(n, dtype=bool)
    cost_valid[: min(spec.unknown_cost, n)] = False
    setup = rng.gamma(2.0, 3.0, n)
    agent = rng.gamma(3.0, 40.0, n) * (1 + 0.2 * cfg_h)
    verification = rng.gamma(2.0, 5.0, n)
    duration = setup + agent + verification
    ttfe = np.where(rng.random(n) < 0.8, agent * rng.uniform(0.05, 0.5, n), np.nan)
    complete = np.ones(n, dtype=bool)
    if spec.incomplete:
        complete[rng.choice(n, size=min(spec.incomplete, n), replace=False)] = False
    offsets = np.arange(n) * 0.5
    started = int(start.timestamp()) * 1_000_000 + (offsets * 1e6).astype(np.int64)

    trial_ids = [f"{spec.run_id}-{i:07d}" for i in range(n)]
    cfg_ids = np.array([c[2] for c in cfg_rows], dtype=object)[cfg_i]
    model_col = np.array(models, dtype=object)[cfg_m]
    harness_col = np.array(harnesses, dtype=object)[cfg_h]
    version_col = np.array(versions, dtype=object)[cfg_h]
    variant_col = np.array([f"{models[m]}+{harnesses[h]}" for m, h, _ in cfg_rows],
                           dtype=object)[cfg_i]
    out_col = outcome.copy()
    out_col[~complete] = None
    ts_type = pa.timestamp("us", tz="UTC")
    trials = _table("trials", {
        "run_id": pa.array(np.full(n, spec.run_id, dtype=object), pa.string()),
        "trial_id": trial_ids, "source_format": np.full(n, "synthetic", dtype=object),
        "config_id": cfg_ids, "variant": variant_col, "model": model_col,
        "harness": harness_col, "harness_version": version_col,
        "case_id": case_ids[task], "repetition": rep, "outcome": out_col,
        "complete": complete, "attempts": np.ones(n, dtype=np.int32),
        "started_at": pa.array(started, ts_type),
        "finished_at": pa.array(started + (duration * 1e6).astype(np.int64), ts_type),
        "duration_s": duration, "setup_s": setup, "agent_s": agent,
        "verification_s": verification,
        "time_to_first_edit_s": pa.array(ttfe, pa.float64(), from_pandas=True),
        "input_tokens": in_tok, "output_tokens": out_tok, "steps": steps,
        "cost_usd": pa.array(cost, pa.float64(), mask=~cost_valid),
        "cost_source": pa.array(np.full(n, "priced", dtype=object), pa.string(),
                                mask=~cost_valid),
        "simulated": np.full(n, spec.simulated), "ingest_batch_id": np.full(n, batch,
                                                                            dtype=object),
    }, n)

    cases = _table("cases", {
        "run_id": [spec.run_id] * T, "case_id": case_ids, "holdout": holdout,
        "repository": repos[repo_idx], "familiarity": familiarity,
        "task_class": np.array(TASK_CLASSES, dtype=object)[cls_idx],
        "difficulty": diff_label.astype(object),
        "language": np.array(LANGUAGES, dtype=object)[lang_idx],
        "benchmark": ["synthetic"] * T, "validated": [True] * T,
        "ingest_batch_id": [batch] * T,
    }, T)
    configs = _table("configs", {
        "run_id": [spec.run_id] * C, "config_id": [c[2] for c in cfg_rows],
        "variant": [f"{models[m]}+{harnesses[h]}" for m, h, _ in cfg_rows],
        "model": [models[m] for m, _, _ in cfg_rows],
        "harness": [harnesses[h] for _, h, _ in cfg_rows],
        "harness_version": [versions[h] for _, h, _ in cfg_rows],
        "agent_kind": ["simulated"] * C, "simulated": [spec.simulated] * C,
        "source_format": ["synthetic"] * C, "variant_order": list(range(C)),
        "ingest_batch_id": [batch] * C,
    }, C)
    runs = _table("runs", {
        "run_id": [spec.run_id], "source_format": ["synthetic"], "started_at": [start],
        "finished_at": [start + timedelta(seconds=float(offsets[-1]) if n else 0.0)],
        "status": ["completed"], "repetitions": [R], "simulated": [spec.simulated],
        "ingest_batch_id": [batch],
    }, 1)
    failed = np.flatnonzero(complete & ~accepted & ~infra & ~invalid)
    pick = rng.choice(failed, size=min(spec.annotate, failed.size), replace=False) \
        if failed.size else np.array([], dtype=np.int64)
    k = pick.size
    judgments = _table("judgments", {
        "run_id": [spec.run_id] * k, "trial_id": [trial_ids[i] for i in pick],
        "kind": ["failure_category"] * k,
        "category": list(np.array(CATEGORIES, dtype=object)[rng.integers(0, 7, k)]),
        "annotator": ["synthetic-judge"] * k, "ts": [start] * k,
        "ingest_batch_id": [batch] * k,
    }, k)
    return {"runs": runs, "configs": configs, "cases": cases, "trials": trials,
            "judgments": judgments}


def generate(db_path: str | Path, spec: Spec | None = None) -> dict[str, int]:
    """Write one synthetic run into the warehouse at ``db_path``; returns rows per table."""
    spec = spec or Spec()
    tables = build(spec)
    with db.write_lock(Path(db_path)):
        db.replace_run(Path(db_path), spec.run_id, tables)
        con = db.open(db_path)  # refresh the views over the new partitions
        con.close()
    return {name: t.num_rows for name, t in tables.items()}
