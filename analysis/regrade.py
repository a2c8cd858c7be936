"""Old and new evaluator outcomes, trial by trial: what a ``trialhouse regrade`` changed.

A regrade run (``runs.regrade_of``) grades the final states of another run's trials with
the manifest's current graders; each of its trials names the trial it grades again and
that trial's outcome and evaluator (``trials.regraded_from_*``, ``original_outcome``,
``original_fingerprint``). Trials the regrade could not grade (final state not kept, case
not scored under the new evaluator) are its ``skipped_trials`` with the same link. This
module reads those rows alone, so a regrade compares with its original even when the
original run is not in the warehouse (docs/runner.md, "Regrade"; docs/analysis.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analysis.errors import AnalysisError

if TYPE_CHECKING:
    import duckdb

    from analysis.filters import Filters

_RUNS_SQL = """
SELECT run_id, regrade_of, started_at FROM runs
WHERE regrade_of IS NOT NULL
  AND (len(?::VARCHAR[]) = 0 OR run_id IN (SELECT unnest(?::VARCHAR[]))
       OR regrade_of IN (SELECT unnest(?::VARCHAR[])))
ORDER BY started_at, run_id
"""
_TRIALS_SQL = """
SELECT run_id, trial_id, regraded_from_run_id, regraded_from_trial_id, case_id, config_id, variant,
       repetition, original_outcome, outcome, original_fingerprint, case_fingerprint, reason
FROM trials
WHERE regraded_from_run_id IS NOT NULL AND run_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY run_id, case_id, variant, repetition, trial_id
"""
_SKIPPED_SQL = """
SELECT run_id, trial_id, case_id, variant, original_outcome, reason
FROM skipped_trials
WHERE regraded_from_run_id IS NOT NULL AND run_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY run_id, case_id, variant, trial_id
"""


def change_sentence(transitions: Mapping[tuple[str, str], int], total: int) -> str:
    """"regrade changed 7 of 40 outcomes: 5 accepted → target_failed, 2 …" (most first)."""
    changed = {k: n for k, n in transitions.items() if k[0] != k[1] and n}
    n = sum(changed.values())
    if not n:
        return f"regrade changed no outcome of {total} trial(s)"
    parts = ", ".join(f"{c} {old} → {new}" for (old, new), c in
                      sorted(changed.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"regrade changed {n} of {total} outcome{'s' if total != 1 else ''}: {parts}"


@dataclass(frozen=True)
class TrialChange:
    """One trial under the old and the new evaluator."""

    trial_id: str
    original_trial_id: str
    case_id: str
    config_id: str
    variant: str | None
    repetition: int
    old: str | None
    new: str | None
    old_fingerprint: str | None
    new_fingerprint: str | None
    reason: str | None

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def as_dict(self) -> dict[str, Any]:
        return {"trial_id": self.trial_id, "original_trial_id": self.original_trial_id,
                "case_id": self.case_id, "config_id": self.config_id, "variant": self.variant,
                "repetition": self.repetition, "old": self.old, "new": self.new, "changed": self.changed,
                "old_fingerprint": self.old_fingerprint, "new_fingerprint": self.new_fingerprint,
                "reason": self.reason}


@dataclass
class RegradeRun:
    """One regrade run against the run it graded again."""

    run_id: str
    regrade_of: str
    trials: list[TrialChange] = field(default_factory=list)
    not_regraded: list[dict[str, Any]] = field(default_factory=list)

    @property
    def transitions(self) -> Counter[tuple[str, str]]:
        return Counter((t.old or "?", t.new or "?") for t in self.trials)

    def sentence(self) -> str:
        text = f"{change_sentence(self.transitions, len(self.trials))} (run {self.regrade_of} → {self.run_id})"
        if self.not_regraded:
            text += f"; {len(self.not_regraded)} trial(s) not graded again (listed)"
        return text

    def as_dict(self) -> dict[str, Any]:
        changed = [t for t in self.trials if t.changed]
        return {"run_id": self.run_id, "regrade_of": self.regrade_of, "trials": len(self.trials),
                "changed": len(changed), "sentence": self.sentence(),
                "transitions": [{"old": o, "new": n, "trials": c} for (o, n), c in sorted(self.transitions.items())],
                "changes": [t.as_dict() for t in self.trials], "not_regraded": self.not_regraded}


@dataclass
class Regrades:
    runs: list[RegradeRun]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"runs": [r.as_dict() for r in self.runs], "warnings": self.warnings}

    def records(self) -> list[dict[str, Any]]:
        return [{"regrade_run": r.run_id, "regrade_of": r.regrade_of, **t.as_dict()}
                for r in self.runs for t in r.trials]

    def notes(self) -> list[str]:
        return [r.sentence() for r in self.runs]


def regrades(con: duckdb.DuckDBPyConnection, runs: list[str] | tuple[str, ...] = (),
             require: bool = True) -> Regrades:
    """The regrade runs named in ``runs`` (or regrading a run named there; every regrade
    when empty), each compared trial by trial with the outcomes it replaced."""
    named = list(runs)
    if not named and not require:
        return Regrades([])
    found = con.execute(_RUNS_SQL, [named, named, named]).fetchall()
    if not found and require:
        raise AnalysisError("no regrade run " + (f"of or among {', '.join(named)}" if named else "in the warehouse")
                            + "; make one with: trialhouse regrade --manifest M --from RUN_DIR --output DIR")
    ids = [r for r, _of, _at in found]
    out = {r: RegradeRun(r, of) for r, of, _at in found}
    for row in con.execute(_TRIALS_SQL, [ids]).fetchall():
        run, tid, _orun, otid, case, cid, variant, rep, old, new, ofp, nfp, reason = row
        out[run].trials.append(TrialChange(tid, otid, case, cid, variant, rep, old, new, ofp, nfp, reason))
    for run, tid, case, variant, old, reason in con.execute(_SKIPPED_SQL, [ids]).fetchall():
        out[run].not_regraded.append({"trial_id": tid, "case_id": case, "variant": variant,
                                      "original_outcome": old, "reason": reason})
    return Regrades([out[r] for r in ids])


def regrades_in(con: duckdb.DuckDBPyConnection, filters: Filters) -> Regrades:
    """The regrade runs among the runs a selection reads (``filters`` resolved): what
    ``compare`` notes and the report's controls section lays out."""
    from analysis.unscored import selected_runs

    if filters.regrades_present is False:
        return Regrades([])
    return regrades(con, selected_runs(con, filters), require=False)
