"""Stop rules evaluated on the warehouse: which fired, with the figures (docs/rollout.md).

Each rule reads its configuration's trials in its window through the valid-trial rule
(``analysis.data``), computes its metric with a count next to it (and a Wilson interval for
a rate), and fires when the metric crosses its threshold. A firing that one of the rule's
owners resumed (``rule_decisions``) stays resumed for exactly the trials it was judged on:
a new run in the window makes it fire again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.jsonout import clean
from analysis.layer_rates import regression_free
from analysis.stop_rules import Rule, RulesFile

if TYPE_CHECKING:
    import duckdb
    import polars as pl

_COLUMNS = ["run_id", "trial_id", "config_id", "variant", "model", "harness", "harness_version",
            "run_started_at", "complete", "valid", "solved", "outcome", "cost_usd"]

_DECISIONS_SQL = """
SELECT rule_id, rule_sha256, decided_by, reason, evidence_key, decided_at
FROM rule_decisions WHERE rule_id = ? AND rule_sha256 = ? AND evidence_key = ?
ORDER BY decided_at DESC LIMIT 1
"""


@dataclass(frozen=True)
class RuleResult:
    """One rule's evaluation. ``status``: fired | resumed (fired, and an owner resumed exactly
    this evidence) | ok | not_evaluated (``reason`` says why)."""

    rule: Rule
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    value: float | None = None
    k: int | None = None  # numerator of a rate (accepted, regression-free, infra errors)
    n: int = 0  # its denominator; for cost per accepted: accepted trials
    low: float | None = None
    high: float | None = None
    spend: float | None = None  # cost_per_accepted: the known spend counted
    window: dict[str, Any] = field(default_factory=dict)
    evidence_key: str | None = None
    resumed: dict[str, Any] | None = None
    reason: str | None = None

    @property
    def blocking(self) -> bool:
        return self.status == "fired"

    def as_dict(self) -> dict[str, Any]:
        r = self.rule
        return clean({"rule": r.id, "status": self.status, "metric": r.metric, "direction": r.direction,
                      "threshold": r.threshold, "owner": list(r.owner), "config": self.config,
                      "value": self.value, "k": self.k, "n": self.n, "low": self.low, "high": self.high,
                      "spend": self.spend, "window": self.window, "evidence_key": self.evidence_key,
                      "resumed": self.resumed, "reason": self.reason, "note": r.note})


@dataclass(frozen=True)
class RulesCheck:
    """Every rule of a rules file, fired ones first (then resumed, not evaluated, ok)."""

    at: datetime
    results: list[RuleResult]

    @property
    def fired(self) -> list[RuleResult]:
        return [r for r in self.results if r.blocking]

    def as_dict(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "fired": [r.rule.id for r in self.fired],
                "rules": [r.as_dict() for r in self.results]}


_ORDER = {"fired": 0, "resumed": 1, "not_evaluated": 2, "ok": 3}


def check_rules(con: duckdb.DuckDBPyConnection, rules: RulesFile, at: datetime | None = None) -> RulesCheck:
    """Evaluate every rule at ``at`` (default now): the question ``trialhouse rules check`` asks."""
    at = at or datetime.now(UTC)
    results = [evaluate(con, rule, at) for rule in rules.rules]
    results.sort(key=lambda r: _ORDER[r.status])
    return RulesCheck(at, results)


def _window_trials(con: duckdb.DuckDBPyConnection, rule: Rule, at: datetime
                   ) -> tuple[pl.DataFrame, dict[str, Any]]:
    import polars as pl

    from analysis.data import load_trials
    from analysis.scope import resolve

    w = rule.window
    since = at - timedelta(days=w.last) if w.unit == "days" else None
    filters = Filters(configs=(rule.scope.config,),
                      universes=(rule.scope.universe,) if rule.scope.universe else ())
    try:  # the configuration is named against the whole warehouse, then the window applies
        filters = replace(resolve(con, filters), since=since, until=at)
    except AnalysisError as exc:
        raise AnalysisError(f"rule {rule.id!r}: {exc}") from None
    if filters.config_ids is not None and len(filters.config_ids) > 1:
        raise AnalysisError(f"rule {rule.id!r}: scope.config {rule.scope.config!r} names "
                            f"{len(filters.config_ids)} configurations; give a config_id")
    trials = load_trials(con, filters, columns=_COLUMNS)
    if w.unit == "runs":
        runs = (trials.group_by("run_id").agg(pl.col("run_started_at").min())
                .sort(["run_started_at", "run_id"], descending=True, nulls_last=True)
                .head(w.last)["run_id"].to_list())
        trials = trials.filter(pl.col("run_id").is_in(runs))
        window: dict[str, Any] = {"last": w.last, "unit": "runs", "runs": sorted(runs)}
    else:
        window = {"last": w.last, "unit": "days", "since": since, "until": at,
                  "runs": sorted(set(trials["run_id"].to_list()))}
    return trials, window


def _metric(con: duckdb.DuckDBPyConnection, rule: Rule, trials: pl.DataFrame) -> dict[str, Any]:
    """The metric's figures over the window's trials (value, k, n, spend) and the trials counted."""
    import polars as pl

    complete = trials.filter(pl.col("complete"))
    valid = complete.filter(pl.col("valid"))
    if rule.metric == "accepted_rate":
        return {"k": int(valid["solved"].sum()), "n": valid.height, "counted": valid}
    if rule.metric == "infra_error_rate":
        return {"k": int((complete["outcome"] == "infra_error").sum()), "n": complete.height,
                "counted": complete}
    if rule.metric == "regression_free_rate":
        graded = regression_free(con, valid)  # the one definition (analysis.layer_rates)
        return {"k": int((~graded["broke"]).sum()), "n": graded.height, "counted": graded}
    unknown = complete["cost_usd"].null_count()
    spend = float(complete["cost_usd"].sum() or 0.0)
    solved = int(complete["solved"].sum())
    return {"n": solved, "spend": spend, "unknown": unknown, "counted": complete,
            "value": (spend / solved if solved else (float("inf") if spend > 0 else None))}


def evaluate(con: duckdb.DuckDBPyConnection, rule: Rule, at: datetime) -> RuleResult:
    """One rule at ``at``: its window's trials, its metric, whether it fired, whether resumed."""
    from analysis.data import config_dict
    from analysis.stats import wilson

    trials, window = _window_trials(con, rule, at)
    config = config_dict(trials.row(0, named=True)) if trials.height else {"config_id": None}
    base = RuleResult(rule, "not_evaluated", config=config, window=window)
    m = _metric(con, rule, trials)
    counted: pl.DataFrame = m["counted"]
    if m.get("unknown"):
        return replace(base, n=m["n"], reason=f"cost unknown for {m['unknown']} of {counted.height} "
                       "trials in the window; cost per accepted needs every cost")
    size = counted.height
    if size < rule.min_trials or (rule.metric != "cost_per_accepted" and m["n"] == 0):
        return replace(base, n=m["n"], reason=f"{size} trial(s) in the window; the rule needs "
                       f"at least {max(rule.min_trials, 1)}")
    value = m.get("value")
    low = high = None
    if "k" in m:
        value = m["k"] / m["n"]
        low, high = wilson(m["k"], m["n"])
    if value is None:
        return replace(base, reason="no spend and no accepted trial in the window")
    key = _evidence_key(rule, counted)
    status = "fired" if rule.fires(value) else "ok"
    resumed = _resumed(con, rule, key) if status == "fired" else None
    return replace(base, status="resumed" if resumed else status, value=value, k=m.get("k"),
                   n=m["n"], low=low, high=high, spend=m.get("spend"), evidence_key=key,
                   resumed=resumed)


def _evidence_key(rule: Rule, counted: pl.DataFrame) -> str:
    """The rule as declared and the trials it counted: what a resume is a decision about."""
    h = hashlib.sha256(rule.sha256.encode())
    for run_id, trial_id in sorted(zip(counted["run_id"].to_list(), counted["trial_id"].to_list(),
                                       strict=True)):
        h.update(f"\n{run_id}\t{trial_id}".encode())
    return h.hexdigest()


def _resumed(con: duckdb.DuckDBPyConnection, rule: Rule, key: str) -> dict[str, Any] | None:
    rows = con.execute(_DECISIONS_SQL, [rule.id, rule.sha256, key]).fetchall()
    if not rows:
        return None
    _rid, _sha, by, reason, _key, when = rows[0]
    return {"by": by, "reason": reason, "at": when}


def resume_decision(con: duckdb.DuckDBPyConnection, rules: RulesFile, rule_id: str, by: str,
                    reason: str, at: datetime | None = None) -> dict[str, Any]:
    """The ``rule_decisions`` row recording that ``by`` resumed the fired ``rule_id``.

    Refused (``AnalysisError``) when the rule is unknown, ``by`` is not one of its owners,
    the reason is empty, or the rule has not fired (or was resumed on this evidence already).
    """
    at = at or datetime.now(UTC)
    known = {r.id: r for r in rules.rules}
    if rule_id not in known:
        raise AnalysisError(f"no rule {rule_id!r} in the rules file; its rules: {', '.join(known)}")
    rule = known[rule_id]
    if not rule.may_resume(by):
        raise AnalysisError(f"rule {rule_id!r}: only its owner ({', '.join(rule.owner)}) may resume it; "
                            f"--by {by!r} is not one")
    if not reason.strip():
        raise AnalysisError("--reason is empty; say why the rollout may go on")
    result = evaluate(con, rule, at)
    if result.status == "resumed":
        assert result.resumed is not None
        raise AnalysisError(f"rule {rule_id!r} was resumed on this evidence already, by "
                            f"{result.resumed['by']} at {result.resumed['at']:%Y-%m-%d %H:%M} UTC")
    if result.status != "fired":
        why = result.reason or f"{rule.metric} = {result.value:.4g}, threshold {rule.direction} {rule.threshold}"
        raise AnalysisError(f"rule {rule_id!r} has not fired ({why}); nothing to resume")
    import json

    assert result.evidence_key is not None
    return {"rule_id": rule.id, "rule_sha256": rule.sha256, "decision": "resume",
            "decided_by": by.strip(), "reason": reason.strip(), "evidence_key": result.evidence_key,
            "value": result.value if result.value != float("inf") else None, "trials": result.n,
            "window_json": json.dumps(clean(result.window), sort_keys=True),
            "decided_at": datetime.now(UTC)}  # when it was decided, whatever time the rule was evaluated at
