"""Which configurations are baselines, which are candidates, and what blocks a candidate.

One place for the rule, so ``compare``, ``pareto``, the headline and the report agree:

- **Baselines** are reference points, never contenders: configurations whose agent kind
  is ``null`` (changes nothing: the floor) or ``reference`` (applies the known answer:
  the ceiling). They are never a candidate, never in a Holm family, never a blocker,
  never ranked on a Pareto front, and never the *default* baseline of a comparison (a
  user may still name one with ``--baseline``).
- **Candidates** are every other configuration. ``Eligibility.reasons`` is where gates
  that disqualify a candidate go (issue 13: invalid trials, blocker-severity
  regressions, integrity breaks, leaked secrets); today it stays empty and the blockers
  below are reported, not enforced.
- **Default baseline**: the manifest's first non-baseline variant (lowest
  ``variant_order`` in the earliest run), else the first non-baseline configuration.
- **Blockers** (shown in the report): a candidate with any invalid trial, and a
  candidate that regressed significantly (sign test, Holm-adjusted over the candidates,
  regressions > improvements, p < 0.05) against the baseline or against its own
  previous period.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from analysis import formatting as fmt

if TYPE_CHECKING:
    import duckdb

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

    kind: Literal["invalid_trials", "severe_regression"]
    config_id: str
    message: str
    count: int | None = None
    against: str | None = None
    regressions: int | None = None
    improvements: int | None = None
    p: float | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        keep = (["kind", "config_id", "count", "message"] if self.kind == "invalid_trials"
                else ["kind", "config_id", "against", "regressions", "improvements", "p",
                      "message"])
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
    """The blockers found, plus notes about baselines (reported, never blocking)."""

    found: list[Blocker] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_list(self) -> list[dict[str, Any]]:
        return [b.as_dict() for b in self.found]


SIGNIFICANT = 0.05


def blockers(invalid: Mapping[str, int], names: Mapping[str, Mapping[str, Any]],
             checks: Iterable[RegressionCheck], roles: Mapping[str, Eligibility],
             simulated: frozenset[str] = frozenset()) -> Blockers:
    """Invalid trials and significant regressions of candidates (baselines never block).

    ``invalid``: config_id → number of invalid trials; ``names``: config_id → config
    record (for messages); ``checks``: sign tests to judge (p already Holm-adjusted where
    a family applies).
    """
    out = Blockers()
    for cid in sorted(invalid):
        n = invalid[cid]
        if not n:
            continue
        name = fmt.label(names.get(cid, {"config_id": cid}), simulated)
        if _role(roles, cid).is_baseline:
            out.notes.append(f"Baseline {name} has {n} invalid trial(s): its reference numbers "
                             "cannot be trusted until rerun (a baseline is never a blocker).")
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
            out.found.append(Blocker(
                "severe_regression", cid, against=c.against, regressions=c.regressions,
                improvements=c.improvements, p=c.p,
                message=f"{name} regressed on {c.regressions} task(s) and improved on "
                        f"{c.improvements} against {c.against_label} (sign test p = "
                        f"{fmt.pval(c.p)})."))
    return out
