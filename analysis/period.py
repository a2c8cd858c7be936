"""This period against the previous one: each configuration compared with itself.

The window ``[since, until)`` is compared with the window of the same length that ends at
``since``. Each configuration's trials of the two windows become the two sides of the
ordinary paired comparison (``analysis.paired.compare_relation``: the same SQL, the same
per-task directions and sign test, holdout tasks reported apart as in ``compare``), so a
period change is judged exactly as a candidate against a baseline. Holm adjusts over the
configurations that are candidates (baselines are shown, never judged).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from analysis import formatting as fmt
from analysis import stats
from analysis.canary import Canaries
from analysis.comparison import Comparison, ConfigRef
from analysis.eligibility import Eligibility
from analysis.errors import AnalysisError
from analysis.filters import Filters

if TYPE_CHECKING:
    import duckdb

SIGNIFICANT = 0.05
_COLS = ["config_id", "case_id", "case_fingerprint", "outcome", "complete", "valid", "solved", "holdout",
         "duration_s", "cost_usd", "input_tokens", "output_tokens", "steps", "canary"]
_TASKS_SQL = """
SELECT DISTINCT case_id, config_id LIKE '%@current' AS now FROM {rel} WHERE NOT canary
"""  # noqa: S608 -- internal relation name


def previous_window(since: datetime, until: datetime) -> tuple[datetime, datetime]:
    """The window of the same length that ends where ``since`` begins."""
    if until <= since:
        raise AnalysisError(
            f"--until {until.date()} is not after --since {since.date()}; give a non-empty window"
        )
    return since - (until - since), since


@dataclass
class PeriodRow:
    """One configuration in both windows; ``comparison`` is None unless it ran in both."""

    config: ConfigRef
    label: str
    previous_valid: int
    previous_solved: int
    current_valid: int
    current_solved: int
    comparison: Comparison | None
    verdict: str
    baseline: bool = False

    @staticmethod
    def _rate(k: int, n: int) -> float | None:
        return k / n if n else None

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        c = self.comparison
        st = (asdict(c.sign_test) if c is not None else
              {"improvements": 0, "regressions": 0, "ties": 0, "n": 0, "p": 1.0, "mid_p": 1.0,
               "p_reachable": False, "p_holm": None})
        return {**self.config.as_dict(), "previous_valid": self.previous_valid,
                "previous_solved": self.previous_solved,
                "previous_rate": self._rate(self.previous_solved, self.previous_valid),
                "current_valid": self.current_valid, "current_solved": self.current_solved,
                "current_rate": self._rate(self.current_solved, self.current_valid),
                "common_tasks": c.tasks.common if c is not None else 0, "sign_test": st,
                "paired_difference": asdict(c.paired_difference) if c is not None else None,
                "verdict": self.verdict, "baseline": self.baseline, "label": self.label}


@dataclass
class Period:
    window: dict[str, str | None]
    rows: list[PeriodRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. an allowed evaluator change
    canaries: Canaries | None = None  # canary drift (analysis.canary); blocks the verdicts
    tasks: dict[str, Any] = field(default_factory=dict)  # the two task sets and their overlap

    @property
    def blocked(self) -> bool:
        return self.canaries is not None and self.canaries.blocked

    def overlap_sentence(self) -> str | None:
        """What retired and what was added, when the two task sets differ."""
        t = self.tasks
        if not (t.get("retired") or t.get("added")):
            return None
        return (f"Tasks changed between the periods: {len(t['retired'])} retired "
                f"({', '.join(t['retired'][:5]) or 'none'}), {len(t['added'])} added "
                f"({', '.join(t['added'][:5]) or 'none'}); the comparison uses the overlap, the "
                f"{t['common']} task(s) both periods ran (canaries apart).")

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        return clean({"window": self.window, "rows": [r.as_dict() for r in self.rows],
                      "notes": self.notes, "blocked": self.blocked, "tasks": self.tasks,
                      "canaries": self.canaries.as_dict() if self.canaries else None})


_STAGE = """
CREATE TEMP TABLE {rel} AS
SELECT config_id || '@previous' AS config_id, * EXCLUDE (config_id) FROM ({prev})
UNION ALL
SELECT config_id || '@current' AS config_id, * EXCLUDE (config_id) FROM ({cur})
"""  # noqa: S608 -- internal relation name and fixed SELECTs; values are parameters


def _verdict(c: Comparison | None, in_prev: bool, in_cur: bool) -> str:
    if not in_prev:
        return "new this period"
    if not in_cur:
        return "not run this period"
    if c is None or c.tasks.common == 0:
        return "no tasks in common: not comparable"
    st = c.sign_test
    if st.p_family < SIGNIFICANT and st.improvements != st.regressions:
        return "improved" if st.improvements > st.regressions else "regressed"
    return "no clear change"


def period_changes(con: duckdb.DuckDBPyConnection, current: Filters, previous: Filters,
                   roles: dict[str, Eligibility], window: dict[str, str | None],
                   simulated: frozenset[str] = frozenset()) -> Period:
    """Per configuration present in either window: accepted/valid in each and, where both
    ran, the paired comparison current vs previous (see the module docstring)."""
    from analysis.canary import canary_drift
    from analysis.data import config_list, config_rows, trials_sql
    from analysis.paired import compare_relation
    from analysis.scope import resolve
    from analysis.tasks import evaluator_changes

    current, previous = resolve(con, current), resolve(con, previous)
    names = {c["config_id"]: c for c in config_list(config_rows(con, current)
                                                     + config_rows(con, previous))}
    cur_sql, cur_p = trials_sql(current, columns=_COLS, with_rep=True)
    prev_sql, prev_p = trials_sql(previous, columns=_COLS, with_rep=True)
    rel = f"period_trials_{uuid.uuid4().hex}"  # internal name, no user input
    con.execute(_STAGE.format(rel=rel, prev=prev_sql, cur=cur_sql), [*prev_p, *cur_p])
    try:
        tasks = _overlap(con, rel)
        changed = evaluator_changes(con, rel, current.allow_evaluator_change)
        counts = {cid: (v, s) for cid, v, s in con.execute(
            f"SELECT config_id, count(*) FILTER (WHERE valid), count(*) FILTER (WHERE solved) "  # noqa: S608
            f"FROM {rel} GROUP BY config_id").fetchall()}
        present = set(counts)
        rows = []
        for cid in sorted(names):
            prev, cur = counts.get(f"{cid}@previous"), counts.get(f"{cid}@current")
            comp = None
            if prev is not None and cur is not None:
                (comp,) = compare_relation(con, rel, ConfigRef(f"{cid}@previous"),
                                           [ConfigRef(f"{cid}@current")], current.holdout)
                comp.sign_test.p_holm = None  # set below, over the candidates only
            (pv, ps), (cv, cs) = prev or (0, 0), cur or (0, 0)
            rows.append(PeriodRow(ConfigRef.of(names[cid]), fmt.label(names[cid], simulated),
                                  pv, ps, cv, cs, comp, "",
                                  cid in roles and roles[cid].is_baseline))
    finally:
        con.execute(f"DROP TABLE IF EXISTS {rel}")
    judged = [(r, r.comparison) for r in rows if r.comparison is not None and not r.baseline]
    for (_, c), p in zip(judged, stats.holm([c.sign_test.p for _, c in judged]), strict=True):
        c.sign_test.p_holm = p
    canaries = canary_drift(con, current, previous, simulated)
    for r in rows:
        cid = r.config.config_id
        r.verdict = _verdict(r.comparison, f"{cid}@previous" in present,
                             f"{cid}@current" in present)
        if canaries.blocked and r.comparison is not None:
            r.verdict = f"withheld: canary drift ({r.verdict})"
    return Period(window, rows, changed, canaries, tasks)


def _overlap(con: duckdb.DuckDBPyConnection, rel: str) -> dict[str, Any]:
    """The two windows' task sets (canaries apart); when they differ (tasks retired or
    added), every trial outside their overlap leaves ``rel``, and canaries always do (they
    are read apart, as drift: ``analysis.canary``)."""
    seen: dict[str, set[bool]] = {}
    for case, now in con.execute(_TASKS_SQL.format(rel=rel)).fetchall():
        seen.setdefault(case, set()).add(now)
    common = sorted(c for c, s in seen.items() if len(s) == 2)
    out = {"previous": sum(False in s for s in seen.values()),
           "current": sum(True in s for s in seen.values()), "common": len(common),
           "retired": sorted(c for c, s in seen.items() if s == {False}),
           "added": sorted(c for c, s in seen.items() if s == {True})}
    keep = common if (out["retired"] or out["added"]) else None
    con.execute(f"DELETE FROM {rel} WHERE canary"  # noqa: S608 -- internal name
                + (" OR case_id NOT IN (SELECT unnest(?::VARCHAR[]))" if keep is not None else ""),
                [keep] if keep is not None else [])
    return out
