"""Model × harness: the designs people run, on the largest complete sub-grid.

Three designs, decided by what the selection holds:

- **harnesses**: one model under N ≥ 2 harnesses, the harness effects (paired on the
  tasks every cell shares, mean difference with a t interval and an exact sign test,
  Holm over the pairs);
- **models**: M ≥ 2 models under one harness, the model effects likewise;
- **full**: M ≥ 2 × N ≥ 2, both families of effects, the rankings of the models under each
  harness, and the interaction (``analysis.interaction``: task-level contrasts for the
  verdict, the logistic GLM on the log-odds scale where it exists).

An incomplete grid (some model never ran under some harness) is analysed on its largest
complete sub-grid (most cells, then most common tasks), and the cells left out are named.
Equal rates are ties (compared as exact fractions), never an order. The grid never
spans task universes (``scope.choose_universe``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import TYPE_CHECKING, Any

from analysis import formatting as fmt
from analysis import interaction, scope, stats
from analysis.data import CONFIG_KEYS, load_trials, require_trials
from analysis.filters import Filters
from analysis.subgrid import Cells, cells_of, largest_complete

if TYPE_CHECKING:
    import duckdb
    import polars as pl


@dataclass
class Matrix:
    grid: pl.DataFrame
    models: list[str]
    harnesses: list[str]
    common_tasks: int
    model_effects: list[dict]
    harness_effects: list[dict]
    interaction: dict
    rankings: dict[str, list[str]]
    ranking_changes: bool
    verdict: str
    warnings: list[str] = field(default_factory=list)
    design: str = "full"  # full | harnesses | models
    ranking_groups: dict[str, list[list[str]]] = field(default_factory=dict)
    logit: dict | None = None
    dropped_cells: list[dict] = field(default_factory=list)
    universe: str | None = None

    def records(self) -> list[dict]:
        """Flat rows for CSV: the grid cells."""
        from analysis.jsonout import frame_records

        return frame_records(self.grid)

    def as_dict(self) -> dict:
        from analysis.jsonout import clean, frame_records

        return clean({"design": self.design, "universe": self.universe,
                      "grid": frame_records(self.grid), "models": self.models,
                      "harnesses": self.harnesses, "common_tasks": self.common_tasks,
                      "dropped_cells": self.dropped_cells,
                      "model_effects": self.model_effects,
                      "harness_effects": self.harness_effects,
                      "interaction": self.interaction, "logit": self.logit,
                      "rankings": self.rankings, "ranking_groups": self.ranking_groups,
                      "ranking_changes": self.ranking_changes, "verdict": self.verdict,
                      "warnings": self.warnings})


def _effect(per_task: dict[str, dict[str, tuple[int, int]]], tasks: list[str], a: str,
            b: str) -> dict:
    """Paired effect of cell b over cell a on the common tasks: mean difference + sign test."""
    ca, cb = per_task[a], per_task[b]
    dirs = [stats.direction(*cb[t], *ca[t]) for t in tasks]
    diff = stats.paired_difference([cb[t][0] / cb[t][1] for t in tasks],
                                   [ca[t][0] / ca[t][1] for t in tasks])
    sign = stats.sign_test(dirs.count("improvement"), dirs.count("regression"))
    sign["ties"] = dirs.count("tie")
    return {"mean_diff": diff["mean_diff"], "ci_low": diff["ci_low"],
            "ci_high": diff["ci_high"], "tasks": diff["tasks"], "sign_test": sign}


def _family(effects: list[dict]) -> list[dict]:
    for e, p in zip(effects, stats.holm([e["sign_test"]["p"] for e in effects]), strict=True):
        e["sign_test"]["p_holm"] = p
    return effects


def _groups(items: list[str], rate: dict[str, Fraction]) -> list[list[str]]:
    """Best first; equal rates (exact fractions) share a group."""
    out: list[list[str]] = []
    for x in sorted(items, key=lambda i: (-rate[i], i)):
        if out and rate[out[-1][0]] == rate[x]:
            out[-1].append(x)
        else:
            out.append([x])
    return out


def _order(groups: list[list[str]]) -> str:
    return " > ".join(" = ".join(g) for g in groups)


def _reversal(groups: dict[str, list[list[str]]]) -> bool:
    """Whether some pair is strictly ordered one way under one harness and the other way
    under another (a tie against an order is not a reversal)."""
    pos = {h: {x: i for i, g in enumerate(gs) for x in g} for h, gs in groups.items()}
    for a, b in combinations(sorted(next(iter(pos.values()))), 2):
        signs = {(p[a] > p[b]) - (p[a] < p[b]) for p in pos.values()}
        if {1, -1} <= signs:
            return True
    return False


def _p(v: float | None) -> str:
    """``p = 0.452`` or ``p < 0.001``."""
    text = fmt.pval(v)
    return f"p {text[0]} {text[1:]}" if text.startswith("<") else f"p = {text}"


def _effect_sentence(kind: str, within: str, effects: list[dict], a: str, b: str) -> str:
    parts = []
    for e in effects:
        st = e["sign_test"]
        p = st.get("p_holm", st["p"])
        parts.append(f"{e[b]} − {e[a]} {fmt.diff_ci(e['mean_diff'], e['ci_low'], e['ci_high'])}"
                     f" [{st['improvements']} better / {st['regressions']} worse, "
                     f"{_p(p)}{'' if st['p_reachable'] else ', p < 0.05 unreachable'}]")
    return f"{kind} within {within} (Holm): " + "; ".join(parts) + "."


def _ci(e: dict) -> str:
    if e["ci_low"] is None:
        return "no interval"
    return f"95% CI {fmt.signed(e['ci_low'])} to {fmt.signed(e['ci_high'])}"


def _interaction_sentence(inter: dict, logit: dict | None) -> str:
    if not inter["estimable"]:
        return f" Interaction: {inter['note']}."
    k = len(inter["contrasts"])
    c0 = inter["contrasts"][0]
    what = (f"mean contrast {fmt.signed(c0['mean'])} ({_ci(c0)}), exact sign test "
            f"{_p(inter['p'])}" if k == 1 else
            f"smallest Holm-adjusted {_p(inter['p'])} over {k} contrasts")
    if inter["note"]:
        tail = f" — {inter['note']}."
    elif inter["p"] < 0.05:
        tail = " — the harness effect differs between models."
    else:
        tail = " — not distinguishable from noise on these tasks."
    out = f" Interaction (task-level contrasts): {what}{tail}"
    if logit is not None:
        out += (f" Log-odds interaction: chi2 = {logit['chi2']:.2f} on {logit['df']} df, "
                f"{_p(logit['p'])}." if logit["estimable"]
                else f" Log-odds interaction {logit['note']}.")
    return out


def _no_interaction(note: str) -> dict[str, Any]:
    return {"method": None, "df": None, "chi2": None, "p": None, "estimable": False,
            "note": note}


def _analyse(g: Cells, models: list[str], harnesses: list[str], tasks: list[str]
             ) -> dict[str, Any]:
    """Effects, rankings, interaction and verdict on a complete grid."""
    cell = {(m, h): f"{m} × {h}" for m in models for h in harnesses}
    # Only the sub-grid's cells: a dropped cell may lack one of its common tasks.
    per = {c: {t: g.counts[c][t] for t in tasks} for c in cell.values()}
    me = _family([{"harness": h, "model_a": a, "model_b": b,
                   **_effect(per, tasks, cell[(a, h)], cell[(b, h)])}
                  for h in harnesses for a, b in combinations(models, 2)])
    he = _family([{"model": m, "harness_a": a, "harness_b": b,
                   **_effect(per, tasks, cell[(m, a)], cell[(m, b)])}
                  for m in models for a, b in combinations(harnesses, 2)])
    rate = {k: Fraction(sum(per[v][t][0] for t in tasks), sum(per[v][t][1] for t in tasks))
            for k, v in cell.items()}
    out: dict[str, Any] = {"model_effects": me, "harness_effects": he, "logit": None}
    if len(models) == 1:
        groups = {models[0]: _groups(harnesses, {h: rate[(models[0], h)] for h in harnesses})}
        out.update(design="harnesses", groups=groups, changes=False,
                   interaction=_no_interaction("one model: no interaction to test"),
                   verdict=f"Harnesses ranked within {models[0]}: "
                           f"{_order(groups[models[0]])}. "
                           + _effect_sentence("Harness effects", models[0], he, "harness_a",
                                              "harness_b"))
        return out
    groups = {h: _groups(models, {m: rate[(m, h)] for m in models}) for h in harnesses}
    if len(harnesses) == 1:
        out.update(design="models", groups=groups, changes=False,
                   interaction=_no_interaction("one harness: no interaction to test"),
                   verdict=f"Models ranked under {harnesses[0]}: {_order(groups[harnesses[0]])}. "
                           + _effect_sentence("Model effects", harnesses[0], me, "model_a",
                                              "model_b"))
        return out
    changes = _reversal(groups)
    inter = interaction.contrast_tests(models, harnesses,
                                       {k: [per[v][t] for t in tasks] for k, v in cell.items()})
    logit = interaction.logistic([(t, m, h, *per[cell[(m, h)]][t]) for (m, h) in cell
                                  for t in tasks])
    inter["chi2"] = logit["chi2"]  # the log-odds Wald statistic (null when not estimable)
    order = "; ".join(f"{h}: {_order(v)}" for h, v in groups.items())
    head = (f"Yes, the harness changes the model ranking ({order})." if changes else
            f"No harness reverses the order of any two models ({order}).")
    out.update(design="full", groups=groups, changes=changes, interaction=inter, logit=logit,
               verdict=head + _interaction_sentence(inter, logit))
    return out


def _grid(g: Cells, models: list[str], harnesses: list[str], tasks: list[str]) -> list[dict]:
    rows = []
    for m in models:
        for h in harnesses:
            cell = f"{m} × {h}"
            solved = sum(g.counts[cell][t][0] for t in tasks)
            valid = sum(g.counts[cell][t][1] for t in tasks)
            lo, hi = stats.wilson(solved, valid)
            rows.append({**g.configs[cell], "tasks": len(tasks), "valid": valid,
                         "solved": solved, "rate": solved / valid, "ci_low": lo, "ci_high": hi})
    return rows


def matrix(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> Matrix:
    """The model × harness analysis of the selection (see the module docstring)."""
    import polars as pl

    filters, notes, universe = scope.choose_universe(con, scope.resolve(con, filters),
                                                     "matrix")
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "case_id", "outcome", "valid"])
    require_trials(df, filters)
    g = cells_of(df.filter(pl.col("valid")))
    models, harnesses, tasks, dropped = largest_complete(g)
    res = _analyse(g, models, harnesses, tasks)
    warnings = [*notes, *g.notes]
    if dropped:
        warnings.append(f"incomplete grid: analysed the complete {len(models)} × "
                        f"{len(harnesses)} sub-grid; left out: "
                        + "; ".join(f"{d['model']} × {d['harness']} ({d['reason']})"
                                    for d in dropped[:8])
                        + (f"; and {len(dropped) - 8} more" if len(dropped) > 8 else ""))
    if len(tasks) < 10:
        warnings.append(f"{len(tasks)} common task(s): descriptive sample")
    return Matrix(grid=pl.DataFrame(_grid(g, models, harnesses, tasks)), models=models,
                  harnesses=harnesses, common_tasks=len(tasks),
                  model_effects=res["model_effects"], harness_effects=res["harness_effects"],
                  interaction=res["interaction"],
                  rankings={k: [x for grp in v for x in grp] for k, v in res["groups"].items()},
                  ranking_changes=res["changes"], verdict=res["verdict"], warnings=warnings,
                  design=res["design"], ranking_groups=res["groups"], logit=res["logit"],
                  dropped_cells=dropped, universe=universe)
