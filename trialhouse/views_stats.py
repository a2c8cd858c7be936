"""Terminal views of the statistics no other tool ships: ``noise``, ``rank``, ``plan``
(pure functions, laid out with ``trialhouse.views``'s helpers)."""

from __future__ import annotations

from typing import Any

from trialhouse.render import View
from trialhouse.views import name, per_universe, table, task_sets


def noise(res: Any) -> View:
    from analysis import formatting as fmt
    from analysis.noise import REPS

    def pp(v: Any) -> str:
        return fmt.DASH if v is None else f"{100 * v:.1f} pp"

    def cells(r: dict) -> list[str]:
        return [name(r), fmt.count(r["tasks"]), fmt.number(r["mean_reps"], 2),
                fmt.number(r["within_var"], 4), fmt.number(r["between_var"], 4),
                fmt.DASH if r["between_share"] is None else f"{100 * r['between_share']:.0f}%",
                pp(r["se_observed"]),
                " / ".join(pp(v) for v in (r["se_at_reps"] or [])) or fmt.DASH,
                pp(r["se_floor"]), r["verdict"]]

    cols = ["configuration", "tasks", "reps", "within ω²", "between τ²", "τ² share",
            "SE now", "SE at " + "/".join(map(str, REPS)) + " reps", "SE at ∞", "reading"]
    return View(lines=task_sets(res.universes),
                tables=per_universe(res.rows,
                                     "Noise: repetition (ω²) vs task-to-task (τ²) variance",
                                     cols, [False] + [True] * 8 + [False], 1, cells),
                notes=list(res.warnings))


def ranks(res: Any) -> View:
    from analysis import formatting as fmt

    names = {r["config_id"]: name(r) for r in res.rows}
    short = {r["config_id"]: fmt.label(r) for r in res.rows}

    def cells(r: dict) -> list[str]:
        return [names[r["config_id"]], fmt.rate(r["task_mean"]),
                fmt.DASH if r["rank"] is None else str(r["rank"]),
                fmt.DASH if r["rank_low"] is None else f"{r['rank_low']}–{r['rank_high']}",
                "baseline (not ranked)" if r["role"] == "baseline" else
                "INELIGIBLE (not ranked)" if r["role"] == "ineligible" else
                fmt.listing([short.get(t, t[:12]) for t in r["tied_with"]]) or "none"]

    return View(lines=task_sets(res.universes),
                tables=per_universe(res.rows, "Leaderboard: rank by task mean, 95% bootstrap "
                                     "rank interval", ["configuration", "task mean", "rank",
                                                       "rank interval", "tied with"],
                                     [False, True, True, True, False], 1, cells),
                notes=list(res.warnings))


def plan(p: Any) -> View:
    from analysis.plan import REPS, reps_label

    def pp(g: dict) -> str:
        if g.get("mde_bounds"):
            lo, hi = g["mde_bounds"]
            return f"{100 * lo:.1f}–{100 * hi:.1f} pp"
        return "—" if g["mde"] is None else f"{100 * g['mde']:.1f} pp"

    by_tasks: dict[int, dict[float, Any]] = {}
    for g in p.grid:
        by_tasks.setdefault(g["tasks"], {})[g["reps"]] = g
    rows = [[f"{t:,}", *[pp(by_tasks[t][r]) if r in by_tasks[t] else "—" for r in REPS]]
            for t in by_tasks]
    if p.between is None:
        lines = [f"Variance of the single-trial differences ({p.source}, one repetition per "
                 f"task): τ² + ω² = {p.single_var:.5f}; its split is unknown (the columns past "
                 "1 repetition give the range the split allows)."]
    else:
        lines = [f"Components of the per-task difference ({p.source}): between-task τ² = "
                 f"{p.between:.5f}, within-task ω² = {p.within:.5f} per repetition."]
    if p.pilot:
        name = {side: p.pilot[side]["variant"] or p.pilot[side]["config_id"][:12]
                for side in ("candidate", "baseline")}
        lines.append(f"Pilot: {name['candidate']} vs {name['baseline']} on "
                     f"{p.pilot['tasks']} tasks × {p.pilot['mean_reps']:.2f} repetitions.")
    return View(lines=lines,
                tables=[table(f"Minimum detectable difference (α = {p.alpha:g}, power = "
                               f"{p.power:g}, paired t)",
                               ["tasks", *[f"{reps_label(r)} reps" for r in REPS]],
                               rows, [True] * (1 + len(REPS)))],
                after=list(p.verdict), notes=list(p.warnings))


def dashboard(res: Any) -> View:
    """``summarize --rates``: the four dashboard figures side by side (docs/rollout.md)."""
    from analysis.dashboard import dashboard_table

    return View(tables=[dashboard_table(res)],
                after=["Rates per trial over the valid trials (Wilson 95%); review minutes per "
                       "accepted result with a 95% interval over tasks (docs/rollout.md)."],
                notes=list(res.warnings))


def check_tiers(res: Any) -> View:
    """``summarize --checks``: check results by tier or bank tag (docs/rollout.md)."""
    from analysis.check_tiers import checks_table

    return View(tables=[checks_table(res)],
                after=["Final check gradings of the valid trials (Wilson 95% per grading and per trial); "
                       "'graded in' keeps a trial's own grading apart from a scheduled regrade's."],
                notes=list(res.warnings))
