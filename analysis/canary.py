"""Canary cases across two periods: evaluator or environment drift, never an agent effect.

A case marked ``canary: true`` runs in every periodic run. For a configuration that is
unchanged (the same ``config_id`` ran in both windows) its canaries should give the same
outcomes period after period; when the set of outcomes of a canary's complete trials
differs between the windows, something the configuration does not own moved: the
evaluator (the case's evaluator fingerprint changed too) or the environment (it did not:
a tool, a cache, a service the trial reaches). The period comparison leaves canaries out of
its per-configuration verdicts and is *blocked* while a drift is not acknowledged; an
acknowledgement (``report --accept-drift REASON``) is a row of ``drift_decisions`` keyed to
the exact canary trials that drifted (``evidence_key``), so the same evidence stays
acknowledged and a new drift blocks again (docs/rollout.md, "Canary cases").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.formatting import when

if TYPE_CHECKING:
    import duckdb

_COLS = ["run_id", "trial_id", "config_id", "variant", "model", "harness", "harness_version",
         "case_id", "case_fingerprint", "outcome", "complete", "canary"]
_UNSCORED_SQL = """
SELECT case_id, any_value(unscored_reason) FROM cases
WHERE coalesce(canary, FALSE) AND scored = FALSE AND run_id IN (SELECT unnest(?::VARCHAR[]))
GROUP BY case_id
"""
"""Canaries a window's runs left unscored (failed controls: no trial ran)."""
_DECISION_SQL = """
SELECT reason, decided_at FROM drift_decisions WHERE evidence_key = ?
ORDER BY decided_at DESC LIMIT 1
"""


@dataclass
class CanaryCell:
    """One canary of one unchanged configuration in both windows."""

    config_id: str
    label: str
    case_id: str
    previous: dict[str, int]  # outcome -> complete trials, previous window
    current: dict[str, int]
    previous_fingerprints: list[str]
    current_fingerprints: list[str]
    trial_ids: list[str]  # both windows' trials (the evidence a decision is keyed to)
    status: str  # steady | drift | not run this period | not run last period
    kind: str | None = None  # evaluator | environment | missing (what drifted, or that it did not run)
    note: str | None = None  # why a canary did not run this period, when its run says (controls)

    def sentence(self) -> str:
        def outcomes(d: dict[str, int]) -> str:
            return ", ".join(f"{k} {n}" for k, n in sorted(d.items())) or "none"

        said = f"{self.label} on canary {self.case_id}: {outcomes(self.previous)} → {outcomes(self.current)}"
        if self.kind == "evaluator":
            return (f"{said}: evaluator drift (the case's evaluator fingerprint changed, "
                    f"{'/'.join(f[:12] for f in self.previous_fingerprints)} → "
                    f"{'/'.join(f[:12] for f in self.current_fingerprints)})")
        if self.kind == "environment":
            return f"{said}: environment drift (same configuration, same evaluator)"
        if self.kind == "missing":
            return (f"{said}: did not run this period ({self.note or 'left out of the run'}), so "
                    "nothing vouches that the evaluator and the environment held")
        return f"{said}: {self.status}"


@dataclass
class Canaries:
    """The canaries of the configurations both windows ran, and whether they block."""

    cells: list[CanaryCell] = field(default_factory=list)
    evidence_key: str | None = None  # sha256 of the drifted cells' trials; None: no drift
    decision: dict[str, Any] | None = None  # the acknowledgement, when one covers the evidence

    @property
    def drifted(self) -> list[CanaryCell]:
        return [c for c in self.cells if c.kind is not None]

    @property
    def blocked(self) -> bool:
        return bool(self.drifted) and self.decision is None

    def headline(self) -> str:
        """One sentence: blocked, acknowledged, steady, or no canary."""
        n = len(self.drifted)
        if not self.cells:
            return "No canary case ran for a configuration of both periods."
        if not n:
            return (f"Canaries steady: {len(self.cells)} canary result(s) of configurations both "
                    "periods ran gave the same outcomes.")
        missing = sum(c.kind == "missing" for c in self.drifted)
        what = (f"{n - missing} canary result(s) drifted" if missing == 0 else
                f"{n - missing} canary result(s) drifted and {missing} did not run")
        if self.decision is None:
            return (f"BLOCKED: {what} for unchanged configurations (evaluator or environment "
                    "drift, not an agent effect); the period's verdicts are withheld until "
                    "acknowledged (trialhouse report … --accept-drift REASON).")
        return (f"Canary drift acknowledged ({n} result(s), evidence {str(self.evidence_key)[:12]}): "
                f"{self.decision['reason']} ({when(self.decision['decided_at'])}).")

    def as_dict(self) -> dict[str, Any]:
        return {"blocked": self.blocked, "evidence_key": self.evidence_key,
                "decision": self.decision, "headline": self.headline(),
                "cells": [asdict(c) for c in self.cells]}


def _side(con: duckdb.DuckDBPyConnection, filters: Filters
          ) -> tuple[dict[tuple[str, str], list[dict]], set[str], list[str]]:
    """A window's canary trials per (configuration, case), its configurations and runs."""
    from analysis.data import load_trials

    df = load_trials(con, filters, columns=_COLS)
    cells: dict[tuple[str, str], list[dict]] = {}
    for r in df.filter(df["canary"] & df["complete"]).iter_rows(named=True):
        cells.setdefault((r["config_id"], r["case_id"]), []).append(r)
    return cells, set(df["config_id"].to_list()), sorted(set(df["run_id"].to_list()))


def _cell(key: tuple[str, str], prev: list[dict], cur: list[dict], simulated: frozenset[str]) -> CanaryCell:
    from analysis.formatting import label

    def counts(rows: list[dict]) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rows:
            out[r["outcome"]] = out.get(r["outcome"], 0) + 1
        return out

    def prints(rows: list[dict]) -> list[str]:
        return sorted({r["case_fingerprint"] for r in rows if r["case_fingerprint"]})

    pc, cc, pf, cf = counts(prev), counts(cur), prints(prev), prints(cur)
    status = ("not run this period" if not cur else "not run last period" if not prev
              else "steady" if set(pc) == set(cc) else "drift")
    kind = ("missing" if status == "not run this period" else None if status != "drift"
            else "evaluator" if pf and cf and pf != cf else "environment")
    return CanaryCell(key[0], label((prev or cur)[0], simulated), key[1], pc, cc, pf, cf,
                      sorted(r["trial_id"] for r in (*prev, *cur)), status, kind)


def evidence_key(cells: list[CanaryCell]) -> str | None:
    """sha256 of the drifted cells (configuration, canary, trials); None when none drifted."""
    drifted = [(c.config_id, c.case_id, c.trial_ids) for c in cells if c.kind is not None]
    if not drifted:
        return None
    return hashlib.sha256(json.dumps(sorted(drifted)).encode()).hexdigest()


def canary_drift(con: duckdb.DuckDBPyConnection, current: Filters, previous: Filters,
                 simulated: frozenset[str] = frozenset()) -> Canaries:
    """The canaries of the configurations both windows ran (``current``, ``previous``:
    resolved selections), with the acknowledgement that covers their drift, if any."""
    (cur, now, runs), (prev, then, _) = _side(con, current), _side(con, previous)
    keys = sorted(k for k in {*cur, *prev} if k[0] in now & then)
    cells = [_cell(k, prev.get(k, []), cur.get(k, []), simulated) for k in keys]
    unscored = dict(con.execute(_UNSCORED_SQL, [runs]).fetchall()) if runs else {}
    for c in cells:
        if c.kind == "missing" and c.case_id in unscored:
            c.note = f"its controls failed: {unscored[c.case_id]}"
    key = evidence_key(cells)
    decision = None
    if key is not None:
        row = con.execute(_DECISION_SQL, [key]).fetchall()
        if row:
            decision = {"reason": row[0][0], "decided_at": row[0][1].isoformat()}
    return Canaries(cells, key, decision)


def drift_decision(canaries: Canaries, reason: str, window: dict[str, str | None],
                   at: datetime | None = None) -> dict[str, Any]:
    """The ``drift_decisions`` row acknowledging ``canaries``' drift; refused (one line)
    when nothing blocks: no drift, or this evidence already acknowledged."""
    if not reason.strip():
        raise AnalysisError("--accept-drift: give the reason (it is recorded), e.g. "
                            "--accept-drift 'grader v3 rolled out on Tuesday'")
    if not canaries.drifted:
        raise AnalysisError("--accept-drift: no canary drifted in this period comparison; "
                            "nothing to acknowledge")
    if canaries.decision is not None:
        raise AnalysisError(f"--accept-drift: this drift (evidence {str(canaries.evidence_key)[:12]}) "
                            f"was already acknowledged: {canaries.decision['reason']}")
    return {"decision": "accept_drift", "reason": reason.strip(),
            "evidence_key": canaries.evidence_key,
            "drifted": len(canaries.drifted),
            "cells_json": json.dumps([asdict(c) for c in canaries.drifted], sort_keys=True),
            "window_json": json.dumps(window, sort_keys=True),
            "decided_at": at or datetime.now(UTC)}
