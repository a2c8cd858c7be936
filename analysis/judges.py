"""Judge calibration statistics, and whether a judgment's judge is calibrated for its rubric.

Agreement and Cohen's kappa are computed over the examples the judge answered (pass or
fail); abstentions are reported as their own rate, never counted as agreement or as a
wrong answer. Kappa and its 95% interval come from statsmodels
(``statsmodels.stats.inter_rater.cohens_kappa``, asymptotic standard error). A
calibration holds for a judgment only when rubric hash, host, provider, model and effort
are all equal; otherwise the judgment is ``stale`` (calibrated for something else) or
``uncalibrated``, and every judgment stays labelled advisory. Stale: the same judge host was
calibrated for the rubric (by path), but not for this rubric version, model, provider and
effort; a host never calibrated for the rubric is uncalibrated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import polars as pl

LABELS = ("pass", "fail")
ANSWERS = ("pass", "fail", "inconclusive")


@dataclass(frozen=True)
class CalibrationStats:
    examples: int
    answered: int
    abstained: int
    agreement: float | None
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    confusion: dict[str, dict[str, int]]
    per_label: dict[str, dict[str, float | int | None]]
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def abstention_rate(self) -> float | None:
        return self.abstained / self.examples if self.examples else None


def kappa_interval(table: np.ndarray) -> tuple[float | None, float | None, float | None]:
    """Cohen's kappa and its 95% interval for a 2 × 2 table (rows: one rater, columns: the
    other), the interval cut to [-1, 1]; all None when either rater used one label only: kappa is then 0 by
    construction (observed = chance agreement) and its variance degenerate, which says
    nothing about agreement."""
    from statsmodels.stats.inter_rater import cohens_kappa

    if (table.sum(axis=0) > 0).sum() < 2 or (table.sum(axis=1) > 0).sum() < 2:
        return None, None, None
    with np.errstate(divide="ignore", invalid="ignore"):
        res = cohens_kappa(table)
    vals = (float(res.kappa), float(res.kappa_low), float(res.kappa_upp))
    if not all(math.isfinite(x) for x in vals):
        return None, None, None
    return vals[0], max(vals[1], -1.0), min(vals[2], 1.0)  # shown within the possible range


def calibration_stats(pairs: list[tuple[str, str, str]]) -> CalibrationStats:
    """``pairs``: (example id, human label, judge answer)."""
    confusion = {h: {j: 0 for j in ANSWERS} for h in LABELS}
    for _eid, human, judge in pairs:
        confusion[human][judge] += 1
    answered = [(h, j) for _e, h, j in pairs if j != "inconclusive"]
    table = np.array([[confusion[h][j] for j in LABELS] for h in LABELS], dtype=float)
    n = len(answered)
    agreement = float(np.trace(table) / n) if n else None
    kappa = low = high = None
    kappa, low, high = kappa_interval(table)
    per_label: dict[str, dict[str, float | int | None]] = {}
    for i, label in enumerate(LABELS):
        said = table[:, i].sum()
        truth = table[i, :].sum()
        per_label[label] = {"precision": float(table[i, i] / said) if said else None,
                            "recall": float(table[i, i] / truth) if truth else None, "support": int(truth)}
    dis = [{"example_id": e, "human": h, "judge": j} for e, h, j in pairs if j != h]
    return CalibrationStats(len(pairs), n, len(pairs) - n, agreement, kappa, low, high, confusion, per_label, dis)


JUDGMENT_STATUS_SQL = """
WITH cal AS (
  SELECT *, row_number() OVER (PARTITION BY rubric_sha256, judge_host, coalesce(judge_provider, ''),
                                             coalesce(judge_model, ''), coalesce(judge_effort, '')
                               ORDER BY calibrated_at DESC) AS k
  FROM judge_calibrations
), latest AS (SELECT * FROM cal WHERE k = 1),
any_cal AS (SELECT DISTINCT rubric, judge_host FROM judge_calibrations)
SELECT j.run_id, j.trial_id, t.config_id, j.criterion_id, j.verdict, j.annotator AS judge_model, j.judge_host,
       j.judge_effort, j.rubric_sha256, j.error,
       CASE WHEN l.kappa IS NOT NULL THEN 'calibrated'
            WHEN a.rubric IS NOT NULL THEN 'stale' ELSE 'uncalibrated' END AS calibration,
       l.kappa, l.kappa_low, l.kappa_high, l.calibration_id
FROM judgments j
LEFT JOIN trials t ON t.run_id = j.run_id AND t.trial_id = j.trial_id
LEFT JOIN latest l ON l.rubric_sha256 = j.rubric_sha256 AND l.judge_host = j.judge_host
     AND coalesce(l.judge_provider, '') = coalesce(j.judge_provider, '')
     AND coalesce(l.judge_model, '') = coalesce(j.annotator, '')
     AND coalesce(l.judge_effort, '') = coalesce(j.judge_effort, '')
LEFT JOIN any_cal a ON a.rubric = j.rubric AND a.judge_host = j.judge_host
WHERE j.kind = 'judge' AND ($run IS NULL OR j.run_id = $run)
ORDER BY j.trial_id, j.criterion_id
"""


def judgment_status(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pl.DataFrame:
    """Every judge judgment with its calibration status (``calibrated``/``stale``/``uncalibrated``).
    All judgments are advisory; ``calibrated`` says how well (kappa and interval) only."""
    return con.sql(JUDGMENT_STATUS_SQL, params={"run": run_id}).pl()
