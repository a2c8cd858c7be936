"""Seeded bootstrap over tasks: paired-difference intervals and rank intervals.

The task is the unit of analysis (docs/design.md, "Bootstrap intervals are seeded and
task-clustered"), so every resample draws *tasks* with replacement and keeps all of a
task's pairs or trials together (a cluster bootstrap).
Each function takes an explicit ``seed``: the same data and seed give the same interval
on every run and machine (numpy's PCG64 ``default_rng``). Intervals are percentile
intervals (2.5 %, 97.5 %). Checked against ``scipy.stats.bootstrap`` in the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

RESAMPLES = 1000
"""Resamples per interval: the Monte Carlo error of a 95 % percentile endpoint is then a
few per cent of the interval's width (Efron & Tibshirani's ≥ 1000 for percentile
intervals); more with ``--resamples``."""
SEED = 20260601
_CHUNK = 250


def _resampled_sums(rng: Any, values: Any, resamples: int) -> Any:
    """Σ over a bootstrap resample of tasks of each column of ``values`` (tasks × m), for
    ``resamples`` resamples: a (resamples × m) array. Each resample draws as many tasks as
    there are, with replacement; a task's weight is how often it was drawn (one
    ``bincount`` per resample), so all columns share the same resampled tasks."""
    import numpy as np

    n_tasks = values.shape[0]
    kind = np.uint16 if n_tasks <= np.iinfo(np.uint16).max else np.int32
    out = np.empty((resamples, values.shape[1]))
    for start in range(0, resamples, _CHUNK):
        n = min(_CHUNK, resamples - start)
        draws = rng.integers(0, n_tasks, size=(n, n_tasks), dtype=kind)
        for i in range(n):
            out[start + i] = np.bincount(draws[i], minlength=n_tasks) @ values
    return out


def ratio_intervals(sums: Sequence[Sequence[float]], counts: Sequence[Sequence[float]],
                    seed: int = SEED, resamples: int = RESAMPLES,
                    level: float = 0.95) -> list[tuple[float | None, float | None]]:
    """Cluster-bootstrap percentile intervals of ``Σ sums / Σ counts`` for several metrics.

    ``sums[m][t]`` and ``counts[m][t]`` are metric m's sum and number of pairs on task t
    (the statistic is the mean over pairs, tasks resampled). One set of resampled tasks
    serves every metric. A resample with no pair of a metric is dropped for that metric;
    (None, None) when a metric has no pair or only one task.
    """
    import numpy as np

    s = np.asarray(sums, dtype=float).reshape(len(sums), -1)
    c = np.asarray(counts, dtype=float).reshape(len(counts), -1)
    n_tasks = s.shape[1]
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(s)
    if n_tasks < 2:
        return out
    rng = np.random.default_rng(seed)
    both = _resampled_sums(rng, np.vstack([s, c]).T, resamples)
    nums, dens = both[:, :len(s)], both[:, len(s):]
    alpha = (1 - level) / 2
    for m in range(len(s)):
        ok = dens[:, m] > 0
        if c[m].sum() == 0 or not ok.any():
            continue
        stat = nums[ok, m] / dens[ok, m]
        lo, hi = np.quantile(stat, [alpha, 1 - alpha])
        out[m] = (float(lo), float(hi))
    return out


def rank_intervals(rates: Sequence[Sequence[float]], seed: int = SEED,
                   resamples: int = RESAMPLES, level: float = 0.95) -> dict[str, Any]:
    """Ranks of K configurations by mean per-task rate, with bootstrap rank intervals.

    ``rates[t][k]`` is configuration k's rate on common task t. Rank 1 is the highest
    mean; tied means share the best (smallest) rank. Each resample draws tasks with
    replacement and ranks the K means; a configuration's interval is the
    (α/2, 1 − α/2) quantile pair of its ranks (lower quantile rounded down, upper up).
    Returns ``{"rank": [...], "low": [...], "high": [...], "means": [...]}``.
    """
    import numpy as np

    p = np.asarray(rates, dtype=float)
    n_tasks, k = p.shape
    means = p.mean(axis=0)
    out: dict[str, Any] = {"rank": _ranks(means[None, :])[0].tolist(), "means": means.tolist()}
    if n_tasks < 2:
        out["low"], out["high"] = [None] * k, [None] * k
        return out
    rng = np.random.default_rng(seed)
    r = _ranks(_resampled_sums(rng, p, resamples) / n_tasks)
    alpha = (1 - level) / 2
    out["low"] = [int(np.floor(np.quantile(r[:, j], alpha))) for j in range(k)]
    out["high"] = [int(np.ceil(np.quantile(r[:, j], 1 - alpha))) for j in range(k)]
    return out


def _ranks(means: Any) -> Any:
    """Competition ranks per row (1 = highest; ties share the smallest rank). Means equal
    to 1e-12 relative are ties (sums of the same rates in another order)."""
    import numpy as np

    m = np.round(means, 12)
    return 1 + (m[:, None, :] > m[:, :, None]).sum(axis=2)
