"""Within-task and between-task variance, and what a design of T tasks × R repetitions buys.

Definitions (docs/analysis.md, "Noise" and "Plan"). For one configuration, task t has n_t
valid trials with c_t accepted, p̂_t = c_t / n_t.

- Within-task (repetition) variance of one trial on task t: w_t = p̂_t(1 − p̂_t)·n_t/(n_t − 1)
  (the sample variance of its 0/1 outcomes, unbiased for p_t(1 − p_t)); defined for
  n_t ≥ 2. ω² = mean over those tasks. A task with n_t = 1 is given ω².
- Between-task variance of the true rates: τ² = max(0, s²(p̂_t) − mean_t(w_t / n_t)),
  s² with ddof 1: the observed spread of task rates minus what repetition noise alone
  puts there. With equal n this is the one-way random-effects ANOVA (method of
  moments) estimate (MSB − MSW)/n with ω² = MSW; the tests check it against statsmodels.
- A design of T tasks × R repetitions estimates the mean task rate with
  SE(T, R) = √((τ² + ω²/R) / T). R → ∞ leaves √(τ²/T): repetitions only remove ω²/R.

For a paired comparison (candidate − baseline on the same tasks) the same holds for the
per-task difference d_t = p̂_t(cand) − p̂_t(base): ω² is the mean of w_t(cand) + w_t(base)
(the two sides' repetitions are independent given the task) and τ² = max(0, s²(d_t) −
mean_t(w_t(cand)/n_t(cand) + w_t(base)/n_t(base))), the variance of the true per-task
differences. The power of the paired t test on the T differences (what ``compare``
reports as the interval of the task-mean difference) follows from
sd_d(R) = √(τ² + ω²/R): effect size Δ / sd_d(R), statsmodels ``TTestPower``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def _within(c: int, n: int) -> float | None:
    return c * (n - c) / (n * (n - 1)) if n >= 2 else None


def components(tasks: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """τ² and ω² of one configuration from its per-task (accepted, valid) counts."""
    ts = [(c, n) for c, n in tasks if n > 0]
    out: dict[str, Any] = {"tasks": len(ts), "within": None, "between": None,
                           "observed_var": None, "mean_reps": None, "truncated": False}
    if len(ts) < 2:
        return out
    w = [_within(c, n) for c, n in ts]
    known = [x for x in w if x is not None]
    p = [c / n for c, n in ts]
    mean = math.fsum(p) / len(p)
    s2 = math.fsum((x - mean) ** 2 for x in p) / (len(p) - 1)
    out.update(observed_var=s2, mean_reps=sum(n for _, n in ts) / len(ts))
    if not known:
        return out  # one repetition per task: the split cannot be made
    omega = math.fsum(known) / len(known)
    noise = math.fsum((x if x is not None else omega) / n for x, (_, n) in zip(w, ts, strict=True))
    out.update(within=omega, between=max(0.0, s2 - noise / len(ts)),
               truncated=s2 - noise / len(ts) < 0)
    return out


def paired_components(tasks: Sequence[tuple[int, int, int, int]]) -> dict[str, Any]:
    """τ² and ω² of the per-task difference from (c_base, n_base, c_cand, n_cand) rows."""
    ts = [r for r in tasks if r[1] > 0 and r[3] > 0]
    out: dict[str, Any] = {"tasks": len(ts), "within": None, "between": None,
                           "observed_var": None, "mean_reps": None, "truncated": False}
    if len(ts) < 2:
        return out
    d = [cc / nc - cb / nb for cb, nb, cc, nc in ts]
    mean = math.fsum(d) / len(d)
    s2 = math.fsum((x - mean) ** 2 for x in d) / (len(d) - 1)
    out.update(observed_var=s2, mean_reps=sum(nb + nc for _, nb, _, nc in ts) / (2 * len(ts)))
    wb = [_within(cb, nb) for cb, nb, _, _ in ts]
    wc = [_within(cc, nc) for _, _, cc, nc in ts]
    kb, kc = [x for x in wb if x is not None], [x for x in wc if x is not None]
    if not kb or not kc:
        return out
    ob, oc = math.fsum(kb) / len(kb), math.fsum(kc) / len(kc)
    fill_b = [x if x is not None else ob for x in wb]
    fill_c = [x if x is not None else oc for x in wc]
    noise = math.fsum(b / r[1] + c / r[3] for b, c, r in zip(fill_b, fill_c, ts, strict=True))
    out.update(within=ob + oc, between=max(0.0, s2 - noise / len(ts)),
               truncated=s2 - noise / len(ts) < 0)
    return out


def design_se(between: float, within: float, tasks: int, reps: float) -> float:
    """SE of a mean over ``tasks`` tasks with ``reps`` repetitions each (∞ allowed)."""
    per_task = between + (0.0 if math.isinf(reps) else within / reps)
    return math.sqrt(per_task / tasks)


def mde(between: float, within: float, tasks: int, reps: float, alpha: float = 0.05,
        power: float = 0.8) -> float | None:
    """Smallest true mean difference the two-sided paired t test at ``alpha`` detects with
    ``power`` on ``tasks`` tasks × ``reps`` repetitions (None below 2 tasks)."""
    if tasks < 2:
        return None
    sd = math.sqrt(between + (0.0 if math.isinf(reps) else within / reps))
    if sd == 0:
        return 0.0
    return _solve(nobs=tasks, alpha=alpha, power=power) * sd


def tasks_needed(between: float, within: float, target: float, reps: float,
                 alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Tasks the paired t test needs to detect ``target`` with ``reps`` repetitions."""
    sd = math.sqrt(between + (0.0 if math.isinf(reps) else within / reps))
    if sd == 0:
        return 2
    if target <= 0:
        return None
    n = _solve(effect_size=target / sd, alpha=alpha, power=power)
    # statsmodels' root finder fails (NaN) or stops at its lower bound (2) for a huge effect:
    # the answer is then the fewest tasks whose computed power reaches ``power``
    first = 2 if math.isnan(n) else max(2, math.ceil(n - 1e-9))
    return _fewest_tasks(target / sd, alpha, power, first)


def _fewest_tasks(effect: float, alpha: float, power: float, first: int, limit: int = 100_000) -> int | None:
    """The fewest tasks from ``first`` on whose paired t test's power (statsmodels) is known
    and reaches ``power``; None past ``limit``."""
    from statsmodels.stats.power import TTestPower

    for n in range(first, limit):
        p = TTestPower().power(effect_size=effect, nobs=n, alpha=alpha, alternative="two-sided")
        if math.isfinite(p) and p >= power:
            return n
    return None


def reps_needed(between: float, within: float, target: float, tasks: int,
                alpha: float = 0.05, power: float = 0.8, limit: int = 1000) -> int | None:
    """Fewest repetitions with which ``tasks`` tasks detect ``target``; None when even
    infinitely many would not (only more tasks help)."""
    floor = mde(between, within, tasks, math.inf, alpha, power)
    if floor is None or floor > target:
        return None
    lo, hi = 1, limit
    if (mde(between, within, tasks, hi, alpha, power) or 0) > target:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if (mde(between, within, tasks, mid, alpha, power) or 0) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _solve(**kwargs: Any) -> float:
    """statsmodels' paired/one-sample t power equation solved for the missing argument."""
    import warnings

    import numpy as np
    from statsmodels.stats.power import TTestPower

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(np.squeeze(TTestPower().solve_power(alternative="two-sided", **kwargs)))
