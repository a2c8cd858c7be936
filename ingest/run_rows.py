"""Our run-level events → the ``runs``, ``configs``, ``cases``, ``criteria`` and ``skipped_trials``
rows, and the controls' ``gradings`` rows (``ingest.normalize``).

The run's metadata comes from its latest ``run_started`` (a resumed run has several; the
first one's time is the run's start), its status from its latest ``run_finished``, each
case's validation from its latest ``case_validated``.
"""

from __future__ import annotations

import json
from operator import attrgetter
from typing import Any

import msgspec

from contract.run_events import (
    CaseValidated,
    RunFinished,
    RunStarted,
    VariantInfo,
    current_controls,
)
from contract.trial_events import TrialSkipped
from ingest.cost import Prices

_get_control = attrgetter("case_id", "control", "criterion_id", "layer", "exit_code", "signal", "timed_out",
                          "verdict", "duration_s")
_RUN_FIELDS = ("engine_version", "os", "python", "git_version", "repository", "initial_commit",
               "initial_tree", "repetitions", "max_attempts", "timeout_seconds", "max_cost_usd",
               "validation_only", "simulated", "control_repeats", "controls_from", "grading_semantics",
               "regrade_of")
"""``run_started`` fields copied to the ``runs`` row as they are."""


def compact_json(obj: Any) -> str:
    """The text of a JSON column of our rows: sorted keys, no spaces (``[]``/``{}`` when empty)."""
    if not obj and isinstance(obj, list | dict):
        return "[]" if isinstance(obj, list) else "{}"
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _details(started: list[RunStarted], fin: RunFinished | None) -> dict[str, Any]:
    """The ``runs.details_json`` of a run (``started`` in seq order)."""
    details: dict[str, Any] = {}
    if started:
        rs = started[-1]
        details = {
            "manifest_path": rs.manifest_path,
            "input_hashes": rs.input_hashes,
            "stages": rs.stages,
            "jobs": rs.jobs,
            "resumed": any(s.resumed for s in started),
            "starts": len(started),
        }
        for key in ("rotation", "bank"):  # the hidden pools' and the behaviour bank's draws
            if getattr(rs, key) is not None:  # a compiled struct or the model (ingest.fastdecode)
                details[key] = msgspec.to_builtins(getattr(rs, key)) if not hasattr(
                    getattr(rs, key), "model_dump") else getattr(rs, key).model_dump(mode="json")
        if rs.tier is not None:  # run --tier scheduled
            details["tier"] = rs.tier
        kinds = [s.executor.kind if s.executor else None for s in started]
        if len(set(kinds)) > 1:  # resumed under another executor: each session's, in order
            details["executors"] = kinds
    if fin is not None:
        details.update(trials_total=fin.trials_total, trials_finished=fin.trials_finished,
                       outcomes=fin.outcomes, duration_s=fin.duration_s)
    return details


def run_row(started: list[RunStarted], fin: RunFinished | None, source_file: str,
            prices: Prices | None) -> dict[str, Any]:
    """The ``runs`` row (``started`` in seq order; its last one is the run's metadata)."""
    rs = started[-1] if started else None
    run: dict[str, Any] = {
        "source_format": "trialhouse",
        "source_path": source_file,
        "manifest_id": rs and rs.manifest_id,
        "manifest_sha256": rs and rs.manifest_sha256,
        "started_at": started[0].ts if started else None,
        "finished_at": fin.ts if fin else None,
        "status": fin.status if fin else "running",
        "prices_as_of": prices.as_of if prices is not None else None,
        "details_json": compact_json(_details(started, fin)),
    }
    if rs is not None:
        for k in _RUN_FIELDS:
            run[k] = getattr(rs, k)
        iso = rs.isolation
        if iso is not None:
            run.update(isolation_backend=iso.backend, isolated=iso.isolated, network=iso.network,
                       network_policy=iso.network_policy or ("open" if iso.network else "none"))
        ex = rs.executor
        if ex is not None:
            run.update(executor=ex.kind, executor_address=ex.address, ray_version=ex.ray_version)
    if fin is not None:
        run["trials_skipped"] = fin.trials_skipped
    return run


def config_rows(variants: list[VariantInfo]) -> list[dict[str, Any]]:
    """The ``configs`` rows, in the manifest's variant order."""
    return [
        {
            "config_id": v.config_id, "variant": v.variant, "model": v.model, "harness": v.harness,
            "harness_version": v.harness_version, "reasoning_effort": v.reasoning_effort,
            "service_tier": v.service_tier, "settings_json": compact_json(v.settings),
            "agent_kind": v.agent_kind, "simulated": v.simulated, "source_format": "trialhouse",
            "variant_order": i, "timeout_seconds": v.timeout_seconds, "max_cost_usd": v.max_cost_usd,
            "sweep": v.sweep, "sweep_budget": v.sweep_budget, "sweep_value": v.sweep_value,
            "conditions_json": compact_json(v.conditions) if v.conditions else None,
        }
        for i, v in enumerate(variants)
    ]


def case_rows(rs: RunStarted | None, validated: dict[str, CaseValidated]) -> list[dict[str, Any]]:
    """The ``cases`` rows, each with its latest validation."""
    cases = []
    for c in rs.cases if rs else []:
        lab = c.labels
        val = validated.get(c.case_id)
        cases.append({
            "case_id": c.case_id, "holdout": c.holdout, "canary": c.canary, "repository": lab.get("repository"),
            "familiarity": lab.get("familiarity"), "task_class": lab.get("task_class"),
            "difficulty": lab.get("difficulty"), "language": lab.get("language"),
            "subsystem": lab.get("subsystem"), "benchmark": lab.get("benchmark"),
            "initial_commit": c.initial_commit, "labels_json": compact_json(lab),
            "validated": val.ok if val else None,
            "fingerprint": c.fingerprint,
            "scored": val.ok if val else None,
            "unscored_reason": "; ".join(val.problems) or "controls failed" if val and not val.ok else None,
            "timeout_seconds": c.timeout_seconds, "max_cost_usd": c.max_cost_usd,
            "pre_existing": len(val.pre_existing) if val else None,
            "pre_existing_json": compact_json([
                {"criterion_id": p.criterion_id, "layer": p.layer, "output": p.output,
                 "output_path": p.output_path} for p in val.pre_existing]) if val else None,
        })
    return cases


def criterion_rows(rs: RunStarted | None) -> list[dict[str, Any]]:
    """The ``criteria`` rows: every criterion of every case."""
    return [
        {"case_id": c.case_id, "criterion_id": k.criterion_id, "layer": k.layer, "kind": k.kind,
         "severity": k.severity, "description": k.description or None, "case_fingerprint": c.fingerprint,
         "visible": k.visible, "pooled": k.pooled, "in_process": k.in_process, "tier": k.tier,
         "subsystem": k.subsystem, "mechanism": k.mechanism, "consequence": k.consequence,
         "incident": k.incident, "banked": k.banked}
        for c in (rs.cases if rs else []) for k in c.criteria
    ]


def control_gradings(controls: list[tuple], starts: list[RunStarted],
                     validated: dict[str, CaseValidated]) -> list[tuple]:
    """The controls' ``(event, µs)`` entries as ``gradings`` row tuples (``TRIAL_COLUMNS`` order),
    by seq: of each case, only the set its latest validation came from (``current_controls``:
    a killed runner's partial set is not counted next to the one ``--resume`` ran again)."""
    ordered = sorted(controls, key=lambda pair: pair[0].seq)
    keep = current_controls([e.seq for e in starts], {k: v.seq for k, v in validated.items()},
                            [(e.seq, e.case_id) for e, _m in ordered])
    out = []
    for (e, m), kept in zip(ordered, keep, strict=True):
        if not kept:
            continue
        c = _get_control(e)
        # (attempt, final, criterion_id, layer, exit_code, signal, timed_out, verdict, baseline, duration_s,
        #  output_key)
        out.append((None, c[0], c[1], m, None, None, *c[2:8], None, c[8], None))
    return out


def _regraded(link: Any) -> dict[str, Any]:
    """The ``regraded_from`` link of a regrade's skipped trial as columns."""
    if link is None:
        return {"regraded_from_run_id": None, "regraded_from_trial_id": None, "original_outcome": None}
    return {"regraded_from_run_id": link.run_id, "regraded_from_trial_id": link.trial_id,
            "original_outcome": link.outcome}


def skipped_rows(skipped: dict[str, TrialSkipped]) -> list[dict[str, Any]]:
    """The ``skipped_trials`` rows, by trial id."""
    return [
        {"trial_id": e.trial_id, "case_id": e.case_id, "variant": e.variant, "config_id": e.config_id,
         "repetition": e.repetition, "reason": e.reason, "case_fingerprint": e.case_fingerprint,
         **_regraded(e.regraded_from)}
        for _t, e in sorted(skipped.items())
    ]
