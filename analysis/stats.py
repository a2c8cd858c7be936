"""Pure statistics (docs/analysis.md): no I/O, no DataFrames, checked against scipy/statsmodels.

Kept dependency-light (math, fractions) so the CLI stays fast; scipy is imported only
for t quantiles.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from math import comb
from statistics import NormalDist
from typing import Any

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval for k of n; (None, None) when n = 0 (nothing to estimate)."""
    if n <= 0:
        return None, None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _t_central(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's t with integer df (Abramowitz & Stegun 26.7.3–4, exact series)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for j in range(2, df, 2):  # (1·3·…(j−1))/(2·4·…j) cos^j θ
            term *= c2 * (j - 1) / j
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term, total = math.cos(theta), math.cos(theta)
    for j in range(3, df - 1, 2):  # (2·4·…(j−1))/(1·3·…j) cos^j θ
        term *= c2 * (j - 1) / j
        total += term
    return 2 / math.pi * (theta + s * total)


@functools.lru_cache(maxsize=256)
def t_crit(df: int, level: float = 0.95) -> float:
    """Two-sided critical value of Student's t (integer df): Newton steps on the exact CDF.

    Own code instead of scipy on purpose: importing scipy.stats costs ~0.5 s of start-up
    on every command; tests check this against ``scipy.stats.t.ppf`` to 1e-10. The start
    is the Cornish–Fisher expansion around the normal quantile, so a few CDF evaluations
    suffice even at df in the hundreds of thousands (each costs O(df)); bisection is the
    fallback should Newton ever fail to settle.
    """
    df = int(df)
    if df < 1:
        raise ValueError("t_crit needs df ≥ 1")
    z = NormalDist().inv_cdf((1 + level) / 2)
    x = z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
    log_c = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
             - 0.5 * math.log(df * math.pi))
    last = math.inf
    for _ in range(100):
        density = 2 * math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))
        step = (_t_central(x, df) - level) / density
        if not (x - step > 0 and math.isfinite(step)):
            break
        if abs(step) <= 1e-14 * x or (abs(step) >= last and abs(step) < 1e-9 * x):
            return x - step  # converged, or at the CDF's rounding floor
        x, last = x - step, abs(step)
    return _t_crit_bisect(df, level)


def _t_crit_bisect(df: int, level: float) -> float:
    lo, hi = 0.0, 1.0
    while _t_central(hi, df) < level:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_central(mid, df) < level:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13 * max(1.0, hi):
            break
    return (lo + hi) / 2


def _binom_cdf_half(m: int, n: int) -> Fraction:
    """P(X ≤ m) for X ~ Bin(n, ½), exactly (binomial coefficients built incrementally)."""
    term, total = 1, 1  # C(n, 0)
    for i in range(m):
        term = term * (n - i) // (i + 1)
        total += term
    return Fraction(total, 2**n)


def sign_test(improvements: int, regressions: int) -> dict:
    """Exact two-sided sign test on W improvements and L regressions (ties dropped).

    p = min(1, 2·P(X ≤ min(W, L))); mid-p = 2·(P(X ≤ m) − ½·P(X = m)); N = 0 → p = 1.
    ``p_reachable`` is False when even the most extreme split could not reach p < 0.05.
    """
    w, l_ = int(improvements), int(regressions)
    n = w + l_
    if n == 0:
        return {"improvements": w, "regressions": l_, "n": 0, "p": 1.0, "mid_p": 1.0,
                "p_reachable": False}
    m = min(w, l_)
    cdf = _binom_cdf_half(m, n)
    p = min(Fraction(1), 2 * cdf)
    pm = Fraction(comb(n, m), 2**n)
    mid = min(Fraction(1), 2 * (cdf - pm / 2))
    best = min(Fraction(1), 2 * Fraction(1, 2**n))
    return {"improvements": w, "regressions": l_, "n": n, "p": float(p), "mid_p": float(mid),
            "p_reachable": best < Fraction(1, 20)}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (same as statsmodels multipletests 'holm')."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adj = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adj[i] = running
    return adj


def direction(c_cand: int, n_cand: int, c_base: int, n_base: int) -> str:
    """Compare p̂ of candidate with baseline as exact fractions (c·n' vs c'·n)."""
    a, b = c_cand * n_base, c_base * n_cand
    return "improvement" if a > b else "regression" if a < b else "tie"


def pass_hat_k(counts: Iterable[tuple[int, int]], k: int) -> Fraction:
    """pass^k = mean over tasks of C(c, k)/C(n, k), exactly; counts are (n, c) per task."""
    items = list(counts)
    total = sum((Fraction(comb(c, k), comb(n, k)) for n, c in items), Fraction(0))
    return total / len(items)


def pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> Fraction:
    """pass@k = mean over tasks of 1 − C(n − c, k)/C(n, k), exactly."""
    items = list(counts)
    total = sum((1 - Fraction(comb(n - c, k), comb(n, k)) for n, c in items), Fraction(0))
    return total / len(items)


def pass_curves(counts: Sequence[tuple[int, int]] | dict[tuple[int, int], int]
                ) -> tuple[list[float], list[float]]:
    """pass^k and pass@k for k = 1..min n, exactly; tasks as (n, c) pairs or {(n, c): tasks}."""
    if isinstance(counts, dict):
        grouped = {k: int(v) for k, v in counts.items() if v}
    else:
        grouped = {}
        for n, c in counts:
            grouped[(n, c)] = grouped.get((n, c), 0) + 1
    if not grouped:
        return [], []
    t = sum(grouped.values())
    kmax = min(n for n, _ in grouped)
    hat, at = [], []
    for k in range(1, kmax + 1):
        h = sum((Fraction(comb(c, k) * w, comb(n, k)) for (n, c), w in grouped.items()),
                Fraction(0))
        a = sum((Fraction((comb(n, k) - comb(n - c, k)) * w, comb(n, k))
                 for (n, c), w in grouped.items()), Fraction(0))
        hat.append(float(h / t))
        at.append(float(a / t))
    return hat, at


def task_mean_ci(rates: Sequence[float]) -> dict:
    """Mean of per-task rates with the CR1 task-clustered SE and a t(G−1) interval.

    For one observation per task (or the 1/n_t-weighted trial-level mean) CR1 reduces
    to sd(p̂, ddof=1)/√G. Fewer than 2 tasks: mean only.
    """
    g = len(rates)
    if g == 0:
        return {"mean": None, "se": None, "ci_low": None, "ci_high": None, "df": None}
    mean = math.fsum(rates) / g  # exactly rounded: the same answer in any order
    if g < 2:
        return {"mean": mean, "se": None, "ci_low": None, "ci_high": None, "df": None}
    var = math.fsum((r - mean) ** 2 for r in rates) / (g - 1)
    se = math.sqrt(var / g)
    tc = t_crit(g - 1)
    return {"mean": mean, "se": se, "ci_low": mean - tc * se, "ci_high": mean + tc * se,
            "df": g - 1}


def paired_difference(cand: Sequence[float], base: Sequence[float]) -> dict:
    """Mean of d_t = cand_t − base_t, SE = sd(d)/√T, t(T−1) interval, correlation of sides."""
    t = len(cand)
    out: dict[str, Any] = {"tasks": t, "baseline_mean": None, "candidate_mean": None, "mean_diff": None,
           "se": None, "df": None, "ci_low": None, "ci_high": None, "correlation": None}
    if t == 0:
        return out
    d = [c - b for c, b in zip(cand, base, strict=True)]
    out["baseline_mean"] = sum(base) / t
    out["candidate_mean"] = sum(cand) / t
    dm = sum(d) / t
    out["mean_diff"] = dm
    if t >= 2:
        sd = math.sqrt(sum((x - dm) ** 2 for x in d) / (t - 1))
        se = sd / math.sqrt(t)
        tc = t_crit(t - 1)
        out.update(se=se, df=t - 1, ci_low=dm - tc * se, ci_high=dm + tc * se)
        out["correlation"] = pearson(cand, base)
    return out


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson correlation; None when either side is constant."""
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def cluster_diff(y: Sequence[float], x: Sequence[float], groups: Sequence[object]) -> dict:
    """OLS y = a + b·x with CR1 cluster-robust SE of b and a t(G−1) interval.

    Used for the known-vs-unknown gap clustered by repository. CR1 factor
    G/(G−1)·(N−1)/(N−K) as in statsmodels' ``cov_type="cluster"``.
    """
    import numpy as np

    yv = np.asarray(y, dtype=float)
    xv = np.asarray(x, dtype=float)
    n = len(yv)
    codes: dict[object, int] = {}
    gidx = np.fromiter((codes.setdefault(g, len(codes)) for g in groups), dtype=np.int64,
                       count=n)
    g = len(codes)
    out: dict[str, Any] = {"b": None, "se": None, "ci_low": None, "ci_high": None, "g": g}
    if n < 3 or g < 2 or xv.min() == xv.max():
        return out
    X = np.column_stack([np.ones(n), xv])
    xtx_inv = np.linalg.inv(X.T @ X)
    beta = xtx_inv @ X.T @ yv
    resid = yv - X @ beta
    scores = np.zeros((g, 2))
    np.add.at(scores, gidx, X * resid[:, None])
    meat = scores.T @ scores
    k = 2
    factor = g / (g - 1) * (n - 1) / (n - k)
    cov = factor * xtx_inv @ meat @ xtx_inv
    se = float(math.sqrt(max(cov[1, 1], 0.0)))
    b = float(beta[1])
    tc = t_crit(g - 1)
    out.update(b=b, se=se, ci_low=b - tc * se, ci_high=b + tc * se)
    return out


def cluster_diff_cells(cells: Iterable[tuple[object, bool, int, int]]) -> dict:
    """``cluster_diff`` for a 0/1 outcome on a 0/1 regressor, from per-cell counts.

    Cells are (cluster, x, n, s): n rows with regressor x in that cluster, s of them
    with y = 1. OLS on a binary x is the difference of group means, and the CR1 scores
    need only per-cluster residual sums, so no per-row data is needed (same numbers as
    ``cluster_diff`` on the expanded rows, to rounding).
    """
    cells = list(cells)
    clusters = {c for c, _, n, _ in cells if n}
    g = len(clusters)
    n1 = sum(n for _, x, n, _ in cells if x)
    n0 = sum(n for _, x, n, _ in cells if not x)
    n = n0 + n1
    out: dict[str, Any] = {"b": None, "se": None, "ci_low": None, "ci_high": None, "g": g}
    if n < 3 or g < 2 or n0 == 0 or n1 == 0:
        return out
    a = sum(s for _, x, _, s in cells if not x) / n0
    b = sum(s for _, x, _, s in cells if x) / n1 - a
    r_all: dict[object, float] = {}
    r_one: dict[object, float] = {}
    for c, x, m, s in cells:
        resid = s - m * (a + b if x else a)
        r_all[c] = r_all.get(c, 0.0) + resid
        if x:
            r_one[c] = r_one.get(c, 0.0) + resid
    det = n * n1 - n1 * n1
    meat = sum(((-n1 * r_all[c] + n * r_one.get(c, 0.0)) / det) ** 2 for c in r_all)
    factor = g / (g - 1) * (n - 1) / (n - 2)
    se = math.sqrt(max(factor * meat, 0.0))
    tc = t_crit(g - 1)
    out.update(b=b, se=se, ci_low=b - tc * se, ci_high=b + tc * se)
    return out


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """a=(cost, rate) dominates b: cost ≤ and rate ≥ with at least one strict."""
    return a[0] <= b[0] and a[1] >= b[1] and (a[0] < b[0] or a[1] > b[1])


def pareto_front(points: Sequence[tuple[float, float]]) -> list[list[int]]:
    """For each point the indices of the points dominating it (empty = on the front)."""
    return [[j for j, q in enumerate(points) if j != i and dominates(q, p)]
            for i, p in enumerate(points)]


def convex_front(points: Sequence[tuple[float, float]], front: Sequence[int]) -> set[int]:
    """Indices of front points on the upper-left convex frontier (HAL presentation).

    Walk the front by increasing cost and keep the upper hull of (cost, rate).
    Points with infinite cost are never on it.
    """
    pts = sorted((points[i][0], points[i][1], i) for i in front if math.isfinite(points[i][0]))
    hull: list[tuple[float, float, int]] = []
    for p in pts:
        while len(hull) >= 2:
            (x1, y1, _), (x2, y2, _) = hull[-2], hull[-1]
            # drop the middle point when it lies on or below the chord to p
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) >= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    return {i for _, _, i in hull}


def intervals_overlap(a: tuple[float | None, float | None],
                      b: tuple[float | None, float | None]) -> bool | None:
    (a0, a1), (b0, b1) = a, b
    if a0 is None or a1 is None or b0 is None or b1 is None:
        return None
    return a0 <= b1 and b0 <= a1


def quantile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolation quantile (numpy default); None for no values."""
    v = sorted(values)
    if not v:
        return None
    pos = (len(v) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def ratio_ci(totals: Sequence[tuple[float, float]]) -> dict:
    """R = ΣM_g / ΣA_g over clusters g (e.g. review minutes over accepted results, per task),
    with the CR1 linearised standard error √(G/(G−1)·Σ(M_g − R·A_g)²) / ΣA_g and a t(G−1)
    interval, the low end cut at 0 (docs/rollout.md). ΣA = 0: no ratio; G < 2: no interval."""
    g = len(totals)
    m_sum = sum(m for m, _ in totals)
    a_sum = sum(a for _, a in totals)
    out: dict[str, Any] = {"value": None, "low": None, "high": None, "clusters": g}
    if a_sum <= 0:
        return out
    r = m_sum / a_sum
    out["value"] = r
    if g < 2:
        return out
    se = math.sqrt(g / (g - 1) * sum((m - r * a) ** 2 for m, a in totals)) / a_sum
    tc = t_crit(g - 1)
    out.update(low=max(0.0, r - tc * se), high=r + tc * se)
    return out
