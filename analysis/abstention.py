"""Is a configuration abstaining selectively? Its infra errors beside the others' on the same tasks.

Every rate leaves ``infra_error`` out (docs/design.md, "The denominator rule"), so a
configuration that turns the tasks it would fail into infra errors looks better than it
is. The runner charges what it can recognise to the agent; this question catches the rest
from the data: per configuration, on the tasks it shares with the others, its infra-error
share is compared with theirs, and where its infra errors fall is compared with where
the others fail. A configuration is flagged (``selective``) when its infra errors move
its rate (counted as failures, the rate drops by at least ``MIN_DROP``) and

- its share is **much higher**: at least ``MIN_SHARE`` and at least twice the others'
  share plus ``MARGIN``; or
- its infra errors are **concentrated on tasks the others fail** (their solve rate below
  one half): at least ``MIN_CONCENTRATED`` of them, ``CONCENTRATION`` of them there, and
  that share ``MARGIN`` above the share of its trials there.

The rate drop keeps chance out: a few infra errors spread as the environment spreads
them move no rate (a synthetic warehouse at 2% infra errors flags nothing, whatever the
slice), while an abstainer's move it by the failures they hide.

The flag carries the figures and a sensitivity line (the rate with infra errors counted
as failures); ``analysis.eligibility`` makes a flagged candidate ineligible, so
``summarize``, ``compare``, ``eligibility`` and the report all show it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analysis.data import TRIALS
from analysis.filters import UNIVERSE_SQL, Filters
from analysis.tasks import joins

if TYPE_CHECKING:
    import duckdb

MIN_SHARE = 0.10
MARGIN = 0.05
CONCENTRATION = 0.80
MIN_CONCENTRATED = 3
MIN_DROP = 0.05

_CELLS_SQL = """
SELECT {universe} AS universe, t.case_id, t.config_id, count(*) AS n,
       count(*) FILTER (WHERE t.outcome = 'infra_error') AS infra,
       count(*) FILTER (WHERE t.valid) AS valid, count(*) FILTER (WHERE t.solved) AS solved
FROM {trials} t{joins}
WHERE t.complete AND {where}
GROUP BY ALL"""  # noqa: S608 -- fixed fragments only; values are parameters


@dataclass(frozen=True)
class Abstention:
    """One configuration's infra errors beside the others' on the tasks they share."""

    config_id: str
    trials: int
    infra: int
    others_trials: int
    others_infra: int
    infra_on_failed: int
    """Its infra errors on tasks the others fail."""
    trials_on_failed: int
    solved: int
    valid: int

    @property
    def share(self) -> float:
        return self.infra / self.trials if self.trials else 0.0

    @property
    def others_share(self) -> float:
        return self.others_infra / self.others_trials if self.others_trials else 0.0

    @property
    def much_higher(self) -> bool:
        return self.share >= MIN_SHARE and self.share >= 2 * self.others_share + MARGIN

    @property
    def concentrated(self) -> bool:
        if self.infra < MIN_CONCENTRATED or not self.trials:
            return False
        there = self.infra_on_failed / self.infra
        return there >= CONCENTRATION and there >= self.trials_on_failed / self.trials + MARGIN

    @property
    def rate(self) -> float | None:
        return self.solved / self.valid if self.valid else None

    @property
    def rate_counted(self) -> float | None:
        """The rate with infra errors counted as failures (the sensitivity line)."""
        counted = self.valid + self.infra
        return self.solved / counted if counted else None

    @property
    def drop(self) -> float:
        if self.rate is None or self.rate_counted is None:
            return 0.0
        return self.rate - self.rate_counted

    @property
    def selective(self) -> bool:
        return self.infra > 0 and self.drop >= MIN_DROP and (self.much_higher or self.concentrated)

    def message(self) -> str:
        """The flag with its figures and the sensitivity line."""
        why = " and ".join(w for w, on in (("much higher than the others'", self.much_higher),
                                           ("concentrated on tasks the others fail", self.concentrated)) if on)
        rate = f"{self.solved / self.valid:.0%} ({self.solved}/{self.valid})" if self.valid else "none"
        counted = self.valid + self.infra
        sensitive = f"{self.solved / counted:.0%} ({self.solved}/{counted})" if counted else "none"
        return (f"selective abstention? {self.infra} of {self.trials} trials are infra errors "
                f"({self.share:.0%}) against {self.others_share:.0%} ({self.others_infra}/"
                f"{self.others_trials}) for the other configurations on the same tasks; "
                f"{self.infra_on_failed} of them on tasks the others fail ({why}); rate {rate}, "
                f"{sensitive} with infra errors counted as failures")


def abstentions(con: duckdb.DuckDBPyConnection, filters: Filters) -> dict[str, Abstention]:
    """config_id → its ``Abstention`` over the tasks it shares with another configuration
    of the selection (``filters`` resolved); configurations alone on their tasks are absent."""
    where, params = filters.where()
    sql = _CELLS_SQL.format(universe=UNIVERSE_SQL, trials=TRIALS,
                            joins=joins(filters, [], universe=True), where=where)
    cells: dict[tuple[str, str], dict[str, tuple[int, int, int, int]]] = defaultdict(dict)
    for universe, case, cid, n, infra, valid, solved in con.execute(sql, params).fetchall():
        cells[(str(universe), str(case))][cid] = (int(n), int(infra), int(valid), int(solved))
    totals: dict[str, list[int]] = defaultdict(lambda: [0] * 8)
    for task in cells.values():
        if len(task) < 2:
            continue
        for cid, (n, infra, valid, solved) in task.items():
            others = [v for k, v in task.items() if k != cid]
            o_valid, o_solved = sum(v[2] for v in others), sum(v[3] for v in others)
            failed = o_valid > 0 and 2 * o_solved < o_valid
            t = totals[cid]
            for k, add in enumerate((n, infra, sum(v[0] for v in others), sum(v[1] for v in others),
                                     infra if failed else 0, n if failed else 0, solved, valid)):
                t[k] += add
    return {cid: Abstention(cid, *t) for cid, t in sorted(totals.items())}


def selective(con: duckdb.DuckDBPyConnection, filters: Filters) -> dict[str, Abstention]:
    """The flagged configurations only."""
    return {cid: a for cid, a in abstentions(con, filters).items() if a.selective}
