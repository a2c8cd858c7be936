"""Which configurations are baselines, which are candidates, and what blocks a candidate.

One place for the rule, so ``compare``, ``pareto``, the headline and the report agree:

- **Baselines** are reference points, never contenders: configurations whose agent kind
  is ``null`` (changes nothing: the floor) or ``reference`` (applies the known answer:
  the ceiling). They are never a candidate, never in a Holm family, never ineligible,
  never ranked on a Pareto front, and never the *default* baseline of a comparison (a
  user may still name one with ``--baseline``).
- **Candidates** are every other configuration. A candidate is **ineligible** (never on
  a Pareto front, never named best, listed with its reasons by summarize, compare,
  pareto, ``eligibility`` and the report) when, among its selected trials (``assess``):
  any is ``invalid``; any failed a criterion of severity ``blocker`` that passed on the
  initial commit (a blocker regression: the agent broke it); any comes from a run whose
  events chain is tampered or damaged (``runs.integrity``); any leaked one of the run's
  secrets into its evidence (``trials.secrets_leaked > 0``); its infra errors are
  selective (``analysis.abstention``: much higher than the other configurations' on the
  same tasks, or concentrated on the tasks they fail). Baselines are never
  ineligible: their problems are notes.
- **Default baseline**: the manifest's first non-baseline variant (lowest
  ``variant_order`` in the earliest run), else the first non-baseline configuration.
- **Ineligible** is the one word for a disqualified candidate on every surface (the
  ``eligibility`` command, ``compare``'s headline, the report); ``blockers`` lists one
  message per gate it failed ("blocker" alone names a criterion's severity).
- **Significant regressions** (shown in the report beside the gates, never one of them): a
  candidate that regressed significantly (sign test, Holm-adjusted over the candidates,
  regressions > improvements, p < 0.05) against the baseline or against its own previous
  period. Its trials are sound, so it stays eligible: it is distinguishably worse, never
  the pick (``analysis.decision``), yet it may still be the cheap end of the Pareto front.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from analysis import formatting as fmt

if TYPE_CHECKING:
    import duckdb

    from analysis.checks import TrialCounts
    from analysis.filters import Filters

BASELINE_KINDS = ("null", "reference")
"""Agent kinds that are reference points, not contenders."""

Role = Literal["baseline", "candidate"]


@dataclass(frozen=True)
class Eligibility:
    """The role of one configuration and, for a candidate, what disqualifies it."""

    config_id: str
    role: Role
    agent_kind: str | None = None
    reasons: tuple[str, ...] = ()

    @property
    def is_baseline(self) -> bool:
        return self.role == "baseline"

    @property
    def is_candidate(self) -> bool:
        return self.role == "candidate" and not self.reasons

    @property
    def eligible(self) -> bool:
        """A baseline is a reference point (never ineligible); a candidate without reasons."""
        return not self.reasons

    def as_dict(self) -> dict[str, Any]:
        return {"config_id": self.config_id, "role": self.role, "agent_kind": self.agent_kind,
                "eligible": self.eligible, "reasons": list(self.reasons),
                "notes": list(self.notes)}

    notes: tuple[str, ...] = ()
    """Problems of a baseline (reported, never disqualifying)."""


def eligibility_from_kinds(kinds: Mapping[str, str | None]) -> dict[str, Eligibility]:
    """config_id → Eligibility from each configuration's agent kind (None = unknown, a
    candidate: foreign sources record no agent kind)."""
    return {cid: Eligibility(cid, "baseline" if kind in BASELINE_KINDS else "candidate", kind)
            for cid, kind in kinds.items()}


_KINDS_SQL = """
SELECT config_id, min(agent_kind) FROM configs
WHERE config_id IN (SELECT unnest(?::VARCHAR[]))
GROUP BY config_id
"""


def eligibility(con: duckdb.DuckDBPyConnection, config_ids: Iterable[str]
                ) -> dict[str, Eligibility]:
    """config_id → Eligibility for the given configurations, from the ``configs`` table."""
    ids = sorted(set(config_ids))
    kinds: dict[str, str | None] = dict.fromkeys(ids)
    kinds.update(dict(con.execute(_KINDS_SQL, [ids]).fetchall()))
    return eligibility_from_kinds(kinds)


def baseline_ids(roles: Mapping[str, Eligibility]) -> frozenset[str]:
    return frozenset(cid for cid, e in roles.items() if e.is_baseline)


def default_baseline(rows: Sequence[Mapping[str, Any]], roles: Mapping[str, Eligibility]
                     ) -> str | None:
    """The config id of the manifest's first non-baseline variant.

    ``rows`` are (config_id, variant_order, run_started_at, run_id) records, one per
    configuration and run; the earliest run with an ordered non-baseline variant decides,
    then its lowest variant order. None when no row carries a variant order (foreign
    sources): the caller falls back to its first non-baseline configuration.
    """
    ordered = [r for r in rows if r.get("variant_order") is not None
               and not _role(roles, r["config_id"]).is_baseline]
    if not ordered:
        return None
    first = min(ordered, key=lambda r: (r.get("run_started_at") is None,
                                        r.get("run_started_at") or 0,
                                        r.get("run_id") is None, r.get("run_id") or "",
                                        r["variant_order"]))
    return str(first["config_id"])


def _role(roles: Mapping[str, Eligibility], cid: str) -> Eligibility:
    return roles.get(cid) or Eligibility(cid, "candidate")


# --------------------------------------------------------------------------- blockers


@dataclass(frozen=True)
class Blocker:
    """One reason a candidate should not be shipped (report.json ``blockers[]``)."""

    kind: Literal["invalid_trials", "severe_regression", "blocker_regression", "integrity",
                  "secrets_leaked"]
    config_id: str
    message: str
    count: int | None = None
    against: str | None = None
    regressions: int | None = None
    improvements: int | None = None
    p: float | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        keep = (["kind", "config_id", "against", "regressions", "improvements", "p", "message"]
                if self.kind == "severe_regression" else ["kind", "config_id", "count", "message"])
        return {k: d[k] for k in keep}


@dataclass(frozen=True)
class RegressionCheck:
    """A candidate's sign test against something (the baseline or its previous period)."""

    config: Mapping[str, Any]
    against: str
    improvements: int
    regressions: int
    p: float
    against_label: str = "the baseline"


@dataclass
class Blockers:
    """Why candidates are ineligible (one per gate), their significant regressions
    (reported, never disqualifying), and notes about baselines (never ineligible)."""

    found: list[Blocker] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    regressions: list[Blocker] = field(default_factory=list)

    def as_list(self) -> list[dict[str, Any]]:
        return [b.as_dict() for b in self.found]

    def regression_list(self) -> list[dict[str, Any]]:
        return [b.as_dict() for b in self.regressions]


SIGNIFICANT = 0.05


def blockers(invalid: Mapping[str, int], names: Mapping[str, Mapping[str, Any]],
             checks: Iterable[RegressionCheck], roles: Mapping[str, Eligibility],
             simulated: frozenset[str] = frozenset(),
             found_gates: Mapping[str, Gates] | None = None) -> Blockers:
    """Invalid trials and the other eligibility gates (``found_gates``: blocker regressions,
    integrity, leaked secrets) of candidates, in ``found``; their significant regressions,
    in ``regressions`` (baselines are never ineligible: their invalid trials are notes).

    ``invalid``: config_id → number of invalid trials; ``names``: config_id → config
    record (for messages); ``checks``: sign tests to judge (p already Holm-adjusted where
    a family applies).
    """
    out = Blockers()
    for cid in sorted(found_gates or {}):
        g = found_gates[cid]  # type: ignore[index]
        if _role(roles, cid).is_baseline:
            continue
        name = fmt.label(names.get(cid, {"config_id": cid}), simulated)
        for crit, n in g.blocker_regressions:
            out.found.append(Blocker("blocker_regression", cid, count=n, message=(
                f"{name}: broke blocker criterion {crit} in {n} trial(s) (it passed on the "
                "initial commit)")))
        if g.tampered_runs:
            out.found.append(Blocker("integrity", cid, count=len(g.tampered_runs), message=(
                f"{name}: run(s) {', '.join(g.tampered_runs)} have a tampered or damaged "
                "events chain; their results cannot be trusted")))
        if g.leaked:
            out.found.append(Blocker("secrets_leaked", cid, count=g.leaked, message=(
                f"{name}: {g.leaked} trial(s) wrote a run secret into their evidence")))
    for cid in sorted(invalid):
        n = invalid[cid]
        if not n:
            continue
        name = fmt.label(names.get(cid, {"config_id": cid}), simulated)
        if _role(roles, cid).is_baseline:
            out.notes.append(f"Baseline {name} has {n} invalid trial(s): its reference numbers "
                             "cannot be trusted until rerun (a baseline is never ineligible).")
            continue
        out.found.append(Blocker(
            "invalid_trials", cid, count=n,
            message=f"{name}: {n} invalid trial(s) — the grading inputs or the checkout's "
                    "integrity were violated; these results cannot be trusted until rerun."))
    for c in checks:
        cid = str(c.config["config_id"])
        if _role(roles, cid).is_baseline:
            continue
        if c.regressions > c.improvements and c.p < SIGNIFICANT:
            name = fmt.label(c.config, simulated)
            out.regressions.append(Blocker(
                "severe_regression", cid, against=c.against, regressions=c.regressions,
                improvements=c.improvements, p=c.p,
                message=f"{name} regressed on {c.regressions} task(s) and improved on "
                        f"{c.improvements} against {c.against_label} (sign test p = "
                        f"{fmt.pval(c.p)})."))
    return out


# --------------------------------------------------------------------------- gates

_BREAKS_SQL = """
SELECT t.config_id, g.criterion_id, count(DISTINCT t.trial_id) AS n
FROM {trials} t{joins}
JOIN gradings g ON g.run_id = t.run_id AND g.trial_id = t.trial_id AND g.final
JOIN criteria k ON k.run_id = g.run_id AND k.case_id = t.case_id
               AND k.criterion_id = g.criterion_id
WHERE {where} AND k.severity = 'blocker' AND g.verdict = 'failed' AND g.baseline = 'passed'
GROUP BY ALL
ORDER BY t.config_id, g.criterion_id
"""  # noqa: S608 -- fixed fragments only; values are parameters
"""Blocker regressions: final gradings that failed a blocker criterion which passed on the
initial commit (asked only when some criterion is declared a blocker)."""

_TAMPERED_SQL = """
SELECT run_id FROM runs
WHERE integrity LIKE 'tampered%' AND run_id IN (SELECT unnest(?::VARCHAR[]))
"""


@dataclass(frozen=True)
class Gates:
    """What one configuration's selected trials did that disqualifies a candidate."""

    invalid: int = 0
    leaked: int = 0
    tampered_runs: tuple[str, ...] = ()
    blocker_regressions: tuple[tuple[str, int], ...] = ()  # (criterion, trials)

    def reasons(self) -> tuple[str, ...]:
        out = []
        if self.invalid:
            out.append(f"{self.invalid} invalid trial(s): grading inputs or the checkout's "
                       "integrity were violated")
        for crit, n in self.blocker_regressions:
            out.append(f"blocker regression: criterion {crit} (severity blocker) passed on the "
                       f"initial commit and failed in {n} trial(s)")
        if self.tampered_runs:
            out.append("run integrity broken (events tampered or damaged): "
                       + ", ".join(self.tampered_runs))
        if self.leaked:
            out.append(f"{self.leaked} trial(s) leaked a run secret into their evidence")
        return tuple(out)


def gates(con: duckdb.DuckDBPyConnection, filters: Filters,
          counts: Mapping[str, TrialCounts] | None = None) -> dict[str, Gates]:
    """config_id → Gates over the trials ``filters`` selects (resolved), for every
    configuration of the selection. ``counts`` (``analysis.checks``) when the caller has
    counted the selection already; otherwise one pass counts it here."""
    from analysis.checks import counts as count_trials

    found = count_trials(con, filters) if counts is None else counts
    runs = sorted({r for c in found.values() for r in c.runs})
    tampered = {r for (r,) in con.execute(_TAMPERED_SQL, [runs]).fetchall()} if runs else set()
    breaks: dict[str, list[tuple[str, int]]] = {}
    if found and con.execute("SELECT count(*) FROM criteria WHERE severity = 'blocker'"
                             ).fetchall()[0][0]:
        from analysis.data import TRIALS
        from analysis.tasks import joins

        where, params = filters.where()
        sql = _BREAKS_SQL.format(trials=TRIALS, joins=joins(filters, []), where=where)
        for cid, crit, n in con.execute(sql, params).fetchall():
            breaks.setdefault(cid, []).append((str(crit), int(n)))
    return {cid: Gates(c.invalid, c.leaked, tuple(r for r in c.runs if r in tampered),
                       tuple(breaks.get(cid, ())))
            for cid, c in found.items()}


def assess(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
           config_ids: Iterable[str] | None = None,
           found: Mapping[str, Gates] | None = None) -> dict[str, Eligibility]:
    """config_id → Eligibility with its reasons: the one eligibility rule (module doc).

    Every configuration of the selection (or ``config_ids``) gets a role; a candidate
    with a gate gets the reasons, a baseline gets them as notes. ``found``: the selection's
    ``gates`` when the caller has them already (a report asks them once).
    """
    from analysis.abstention import selective
    from analysis.filters import Filters as AnyFilters
    from analysis.scope import resolve

    filters = resolve(con, filters or AnyFilters())
    found = gates(con, filters) if found is None else found
    ids = set(found) if config_ids is None else set(config_ids)
    roles = eligibility(con, ids)
    abstaining = selective(con, filters)
    out = {}
    for cid, e in roles.items():
        reasons = found.get(cid, Gates()).reasons()
        if cid in abstaining:
            reasons = (*reasons, abstaining[cid].message())
        out[cid] = (Eligibility(cid, e.role, e.agent_kind, notes=reasons) if e.is_baseline
                    else Eligibility(cid, e.role, e.agent_kind, reasons))
    return out


def ineligible_ids(roles: Mapping[str, Eligibility]) -> frozenset[str]:
    return frozenset(cid for cid, e in roles.items() if not e.eligible)


def eligibility_report(con: duckdb.DuckDBPyConnection, filters: Filters | None = None
                       ) -> Any:
    """Per configuration of the selection: its role, whether it is eligible, the reasons
    and the gate counts (``trialhouse eligibility``); the warnings say which cases were
    left out as unscored."""
    from analysis.data import config_list, config_rows
    from analysis.filters import Filters as AnyFilters
    from analysis.results import EligibilityRows
    from analysis.scope import resolve
    from analysis.unscored import unscored

    filters = resolve(con, filters or AnyFilters())
    records = config_rows(con, filters)
    simulated = {r["config_id"] for r in records if r.get("simulated")}
    configs = config_list(records)
    if not configs:
        from analysis.filters import no_match

        raise no_match(filters)
    found = gates(con, filters)
    roles = assess(con, filters, [c["config_id"] for c in configs], found)
    rows = []
    for c in configs:
        e, g = roles[c["config_id"]], found.get(c["config_id"], Gates())
        rows.append({**c, "simulated": c["config_id"] in simulated, "role": e.role,
                     "eligible": e.eligible, "reasons": list(e.reasons),
                     "notes": list(e.notes), "invalid": g.invalid, "secrets_leaked": g.leaked,
                     "tampered_runs": list(g.tampered_runs),
                     "blocker_regressions": sum(n for _, n in g.blocker_regressions)})
    return EligibilityRows(rows, warnings=unscored(con, filters).notes())
