"""``report.json``: the run as one document, rebuilt from ``events.jsonl`` alone.

Built from the events (not from in-memory state) so an interrupted, resumed or
partially written run yields the same report as an uninterrupted one. Keys are a
contract read by ``trialhouse compare --report``; see docs/runner.md.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from contract.envelope import OUTCOMES
from contract.run_events import (
    CaseInfo,
    CaseValidated,
    ControlResult,
    RunFinished,
    RunStarted,
    VariantInfo,
    current_controls,
)
from contract.stage_events import StageFinished
from contract.trial_events import (
    AttemptFinished,
    AttemptStarted,
    Checkpoint,
    Flag,
    Grading,
    TrialFinished,
    TrialSkipped,
    TrialStarted,
)

REPORT_VERSION = 1
INFRA = ("infra_error", "invalid")


def _latest_trials(events: list[Any]) -> dict[str, list[Any]]:
    """Trial id → its events from its last ``trial_started`` on (resume re-runs)."""
    trials: dict[str, list[Any]] = {}
    for e in events:
        if e.trial_id is None:
            continue
        if isinstance(e, TrialStarted):
            trials[e.trial_id] = [e]
        elif e.trial_id in trials:
            trials[e.trial_id].append(e)
    return trials


def _attempts(evs: list[Any]) -> list[dict[str, Any]]:
    """One entry per attempt of a trial: its stages, checkpoints, gradings and outcome."""
    attempts: dict[int, dict[str, Any]] = {}

    def att(n: int) -> dict[str, Any]:
        return attempts.setdefault(n, {"attempt": n, "outcome": None, "findings_in": [],
                                       "stages": [], "checkpoints": [], "gradings": []})

    for e in evs:
        if isinstance(e, AttemptStarted):
            att(e.attempt)["findings_in"] = e.findings
        elif isinstance(e, StageFinished):
            att(e.attempt)["stages"].append({
                "stage": e.stage, "exit_code": e.exit_code, "signal": e.signal,
                "timed_out": e.timed_out, "could_not_start": e.could_not_start,
                "duration_s": e.duration_s, "usage": e.usage.model_dump(),
                "verdict_status": e.verdict_status, "verdict_findings": e.verdict_findings,
                "stdout_path": e.stdout_path, "stderr_path": e.stderr_path,
                "stdout_truncated": e.stdout_truncated, "redactions": e.redactions,
                "harness_version": e.harness_version, "session_id": e.session_id,
                "claimed_cost_usd": e.claimed_cost_usd, "cost_basis": e.cost_basis,
                "permission_denials": [d.tool_name for d in e.permission_denials],
                "context_exhausted": e.context_exhausted, "trajectory_steps": e.trajectory_steps,
                "gateway_usage": e.gateway_usage.model_dump() if e.gateway_usage else None,
            })
        elif isinstance(e, Checkpoint):
            att(e.attempt)["checkpoints"].append({"stage": e.stage, "sha": e.sha,
                                                  "files_changed": e.files_changed})
        elif isinstance(e, Grading):
            att(e.attempt)["gradings"].append({
                "criterion_id": e.criterion_id, "layer": e.layer, "verdict": e.verdict,
                "baseline": e.baseline, "exit_code": e.exit_code, "signal": e.signal,
                "timed_out": e.timed_out, "duration_s": e.duration_s, "final": e.final,
            })
        elif isinstance(e, AttemptFinished):
            att(e.attempt)["outcome"] = e.outcome
            att(e.attempt)["findings_out"] = e.findings
    return [attempts[k] for k in sorted(attempts)]


def _trial_entry(evs: list[Any], variants: dict[str, VariantInfo], cases: dict[str, CaseInfo]) -> dict[str, Any] | None:
    start, fin = evs[0], evs[-1]
    if not isinstance(fin, TrialFinished):
        return None
    vi = variants.get(start.variant)
    case = cases.get(fin.case_id)
    return {
        "trial_id": fin.trial_id,
        "order": start.order,
        "case_id": fin.case_id,
        "variant": fin.variant,
        "config_id": fin.config_id,
        "model": vi.model if vi else None,
        "harness": vi.harness if vi else None,
        "harness_version": vi.harness_version if vi else None,
        "repetition": fin.repetition,
        "seed": start.seed,
        "holdout": bool(case and case.holdout),
        "outcome": fin.outcome,
        "reason": fin.reason,
        "duration_s": fin.duration_s,
        "setup_s": fin.setup_s,
        "agent_s": fin.agent_s,
        "verification_s": fin.verification_s,
        "usage": {
            "input_tokens": fin.usage.input_tokens,
            "output_tokens": fin.usage.output_tokens,
            "cost_usd": fin.usage.cost_usd,
            "steps": fin.usage.steps,
            "source": fin.usage.source,
        },
        "gateway_usage": fin.gateway_usage.model_dump() if fin.gateway_usage else None,
        "model_substituted": fin.model_substituted,
        "cost_budget_status": fin.cost_budget_status,
        "layers": fin.layers,
        "flags": [{"kind": e.kind, "path": e.path, "detail": e.detail}
                  for e in evs if isinstance(e, Flag)],
        "simulated": fin.simulated,
        "line": fin.line,
        "attempts": _attempts(evs),
        "regraded_from": fin.regraded_from.model_dump(mode="json") if fin.regraded_from else None,
        "regrade_s": fin.regrade_s,
    }


def _counts(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, int]:
    c = Counter(pairs=0, candidate_only=0, baseline_only=0, both=0, neither=0, infra_excluded=0)
    for base, cand in pairs:
        if base["outcome"] in INFRA or cand["outcome"] in INFRA:
            c["infra_excluded"] += 1
            continue
        c["pairs"] += 1
        b, k = base["outcome"] == "accepted", cand["outcome"] == "accepted"
        c["both" if b and k else "candidate_only" if k else "baseline_only" if b else "neither"] += 1
    return dict(c)


def paired_comparison(trials: list[dict[str, Any]], variant_ids: list[str]) -> dict[str, Any]:
    """Counts of task/repetition pairs against the first variant; holdout pairs apart."""
    if not variant_ids:
        return {"baseline": None, "candidates": []}
    base_id = variant_ids[0]
    by_key = {(t["variant"], t["case_id"], t["repetition"]): t for t in trials}
    out = []
    for vid in variant_ids[1:]:
        main: list[tuple[dict[str, Any], dict[str, Any]]] = []
        hold: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for (v, case, rep), base in sorted(by_key.items()):
            if v != base_id or (vid, case, rep) not in by_key:
                continue
            (hold if base["holdout"] else main).append((base, by_key[(vid, case, rep)]))
        out.append({"variant": vid, **_counts(main), "holdout": _counts(hold)})
    return {"baseline": base_id, "candidates": out}


def build_report(events: list[Any]) -> dict[str, Any]:
    starts = [e for e in events if isinstance(e, RunStarted)]
    if not starts:
        return {"report_version": REPORT_VERSION, "status": "empty", "trials": []}
    first, last = starts[0], starts[-1]
    variants = {v.variant: v for v in last.variants}
    cases = {c.case_id: c for c in last.cases}
    finished = [e for e in events if isinstance(e, RunFinished)]
    controls: dict[str, dict[str, Any]] = {}
    results = [e for e in events if isinstance(e, ControlResult)]
    latest = {e.case_id: e.seq for e in events if isinstance(e, CaseValidated)}
    counted = {e.seq for e, kept in zip(results, current_controls(
        [e.seq for e in starts], latest, [(e.seq, e.case_id) for e in results]), strict=True) if kept}
    for e in events:
        if isinstance(e, ControlResult) and e.seq in counted:
            entry = controls.setdefault(e.case_id, {"case_id": e.case_id, "results": []})
            entry["results"].append({
                "control": e.control, "criterion_id": e.criterion_id, "layer": e.layer,
                "repeat": e.repeat, "verdict": e.verdict, "expected": e.expected, "ok": e.ok,
                "exit_code": e.exit_code, "signal": e.signal, "timed_out": e.timed_out,
                "duration_s": e.duration_s, "pre_existing": e.pre_existing,
            })
        elif isinstance(e, CaseValidated):
            entry = controls.setdefault(e.case_id, {"case_id": e.case_id, "results": []})
            entry.update(ok=e.ok, problems=e.problems, flaky_criteria=e.flaky_criteria,
                         baseline=e.baseline, pre_existing=[p.model_dump() for p in e.pre_existing])
    trials = [t for t in (_trial_entry(evs, variants, cases) for evs in _latest_trials(events).values()) if t]
    trials.sort(key=lambda t: t["order"])
    vids = [v.variant for v in last.variants]
    outcomes = Counter(t["outcome"] for t in trials)
    total = len(cases) * len(vids) * last.repetitions
    if last.regrade_of is not None:  # a regrade owes the trials it selected, not the whole grid
        total = len(trials) + len({e.trial_id for e in events if isinstance(e, TrialSkipped)})
    return {
        "report_version": REPORT_VERSION,
        "run_id": first.run_id,
        "manifest_id": first.manifest_id,
        "manifest_sha256": last.manifest_sha256,
        "validation_only": last.validation_only,
        "status": finished[-1].status if finished else "interrupted",
        "started_at": first.ts.isoformat(),
        "finished_at": finished[-1].ts.isoformat() if finished else None,
        "engine_version": last.engine_version,
        "initial_commit": last.initial_commit,
        "simulated": last.simulated,
        "regrade_of": last.regrade_of,
        "gateway": last.gateway.model_dump() if last.gateway else None,
        "controls": {"ok": all(c.get("ok", False) for c in controls.values()) if controls else None,
                     "cases": [controls[k] for k in sorted(controls)]},
        "variants": [{"name": v.variant, **v.model_dump()} for v in last.variants],
        "trials_total": 0 if last.validation_only else total,
        "trials_finished": len(trials),
        "outcomes": {o: outcomes.get(o, 0) for o in OUTCOMES},
        "trials": trials,
        "comparison": paired_comparison(trials, vids),
    }


def write_report(run_dir: Path, events: list[Any]) -> Path:
    """Write ``report.json`` atomically (temp file + rename) and return its path."""
    path = run_dir / "report.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(build_report(events), indent=2, default=str, allow_nan=False))
    os.replace(tmp, path)
    return path
