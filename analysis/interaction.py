"""Does the harness effect differ between models? Two tests, each valid or absent.

**Task-level interaction contrasts** (the verdict). With models 0..M−1 and harnesses
0..H−1 on T common tasks and p̂[t, i, j] the rate of model i under harness j on task t,
contrast (i, j) for i, j ≥ 1 is the difference in differences against the first model
and harness: c_t = p̂[t,i,j] − p̂[t,i,0] − p̂[t,0,j] + p̂[t,0,0]. No interaction means
every contrast has mean 0. Each contrast gets a paired-t interval over tasks (t(T−1)) and
an exact two-sided sign test on the signs of c_t (ties dropped); the (M−1)(H−1) sign
tests are Holm-adjusted and the smallest adjusted p is the test of "any interaction"
(Holm controls the family-wise error, so this global test has level α). Nothing here
needs a rate strictly between 0 and 1: a grid of all-0 % or all-100 % cells gives
contrasts of exactly 0, which the sign test reads as "no task differs" (p = 1, and the
result says that p < 0.05 was unreachable), never as a finding.

**Logistic interaction** (log-odds scale; docs/analysis.md, ``matrix``): a binomial GLM
``accepted ~ C(model) * C(harness)`` on per-(task, cell) counts with task-clustered
covariance and a joint Wald test of the interaction terms. The model only has cell
effects, so its maximum-likelihood estimate exists exactly when every cell's rate is
strictly between 0 and 1 (no separation); with a cell at 0 % or 100 % the test is absent
and the note names the cells. It is also absent with no more tasks than parameters
(the clustered covariance cannot be estimated) or a singular covariance. Inputs are
sorted first, so the same data give the same statistic every time.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from analysis import stats


def contrast_tests(models: Sequence[str], harnesses: Sequence[str],
                   counts: dict[tuple[str, str], list[tuple[int, int]]]) -> dict[str, Any]:
    """The task-level interaction contrasts. ``counts[(model, harness)]`` lists the
    per-task (accepted, valid) counts in the same task order for every cell (the common
    tasks). Signs are decided with exact fractions, as the per-task directions are."""
    rates = {k: [Fraction(c, n) for c, n in v] for k, v in counts.items()}
    m0, h0 = models[0], harnesses[0]
    n_tasks = len(rates[(m0, h0)])
    out: dict[str, Any] = {
        "method": "task-level interaction contrasts (difference in differences of per-task "
                  "rates), exact sign tests, Holm-adjusted",
        "reference": {"model": m0, "harness": h0}, "tasks": n_tasks,
        "df": (len(models) - 1) * (len(harnesses) - 1), "chi2": None, "contrasts": [],
        "p": None,
        "p_reachable": False, "estimable": False, "note": None}
    if n_tasks < 2:
        out["note"] = "fewer than 2 common tasks: the data cannot answer"
        return out
    contrasts = []
    for m in models[1:]:
        for h in harnesses[1:]:
            c = [a - b - d + e for a, b, d, e in zip(rates[(m, h)], rates[(m, h0)],
                                                      rates[(m0, h)], rates[(m0, h0)],
                                                      strict=True)]
            pos, neg = sum(x > 0 for x in c), sum(x < 0 for x in c)
            sign = stats.sign_test(pos, neg)
            ci = stats.task_mean_ci([float(x) for x in c])
            contrasts.append({"model": m, "harness": h, "mean": ci["mean"],
                              "ci_low": ci["ci_low"], "ci_high": ci["ci_high"],
                              "positive": pos, "negative": neg, "ties": n_tasks - pos - neg,
                              "n": sign["n"], "p": sign["p"], "mid_p": sign["mid_p"],
                              "p_reachable": sign["p_reachable"]})
    for entry, p in zip(contrasts, stats.holm([e["p"] for e in contrasts]), strict=True):
        entry["p_holm"] = p
    out.update(contrasts=contrasts, p=min(c["p_holm"] for c in contrasts),
               p_reachable=any(c["p_reachable"] for c in contrasts), estimable=True)
    if all(c["n"] == 0 for c in contrasts):
        out["note"] = ("every task shows the same harness effect under every model (all "
                       "contrasts are 0): no interaction in these data, and no test can "
                       "reach p < 0.05")
    elif not out["p_reachable"]:
        out["note"] = "fewer than 6 untied tasks per contrast: p < 0.05 is unreachable"
    return out


def _degenerate(cells: dict[tuple[str, str], tuple[int, int]]) -> list[str]:
    return [f"{m} × {h} ({'all pass' if c == n else 'all fail'})"
            for (m, h), (c, n) in sorted(cells.items()) if c in (0, n)]


def logistic(rows: Sequence[tuple[str, str, str, int, int]]) -> dict[str, Any]:
    """The logistic interaction test on (case_id, model, harness, accepted, valid) rows."""
    out: dict[str, Any] = {
        "method": "binomial GLM accepted ~ C(model) * C(harness), task-clustered Wald",
        "df": None, "chi2": None, "p": None, "estimable": False, "note": None}
    cells: dict[tuple[str, str], tuple[int, int]] = {}
    for _, m, h, c, n in rows:
        a, b = cells.get((m, h), (0, 0))
        cells[(m, h)] = (a + c, b + n)
    bad = _degenerate(cells)
    if bad:
        out["note"] = ("not estimable on the log-odds scale: separation in "
                       + ", ".join(bad[:4]) + (" …" if len(bad) > 4 else "")
                       + " (a rate of 0 % or 100 % has no finite log-odds)")
        return out
    tasks = {r[0] for r in rows}
    if len(tasks) <= len(cells):
        out["note"] = (f"not estimable: {len(tasks)} task cluster(s) for {len(cells)} "
                       "parameters; the clustered covariance needs more tasks")
        return out
    return _fit(sorted(rows), out)


def _design(rows: list[tuple[str, str, str, int, int]]) -> tuple[Any, Any, list[int]]:
    """Response (accepted, failed), the treatment-coded design of ``C(model) * C(harness)``
    (first level of each the reference) and the indices of the interaction columns."""
    import numpy as np

    models = sorted({r[1] for r in rows})
    harnesses = sorted({r[2] for r in rows})
    cols: list[Any] = [np.ones(len(rows))]
    mcols = [np.array([r[1] == m for r in rows], dtype=float) for m in models[1:]]
    hcols = [np.array([r[2] == h for r in rows], dtype=float) for h in harnesses[1:]]
    cols += mcols + hcols
    first = len(cols)
    cols += [a * b for a in mcols for b in hcols]
    y = np.array([[r[3], r[4] - r[3]] for r in rows], dtype=float)
    return y, np.column_stack(cols), list(range(first, len(cols)))


def _fit(rows: list[tuple[str, str, str, int, int]], out: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import statsmodels.api as sm
    from scipy.stats import chi2

    y, x, inter = _design(rows)
    codes = {t: i for i, t in enumerate(sorted({r[0] for r in rows}))}
    groups = np.array([codes[r[0]] for r in rows])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = sm.GLM(y, x, family=sm.families.Binomial()).fit(
                cov_type="cluster", cov_kwds={"groups": groups})
    except (ValueError, np.linalg.LinAlgError) as exc:
        out["note"] = f"not estimable: the model could not be fitted ({exc})"
        return out
    b = np.asarray(res.params)[inter]
    v = np.asarray(res.cov_params())[np.ix_(inter, inter)]
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(v))):
        out["note"] = "not estimable: non-finite estimates"
        return out
    eig = np.linalg.eigvalsh(v)
    if eig.min() <= 1e-12 * max(1.0, eig.max()):
        out["note"] = "not estimable: the clustered covariance of the interaction is singular"
        return out
    stat = float(b @ np.linalg.solve(v, b))
    out.update(df=len(inter), chi2=stat, p=float(chi2.sf(stat, len(inter))), estimable=True)
    return out
