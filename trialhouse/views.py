"""Terminal views: how each analysis result is laid out as tables (pure functions).

Numbers are written by ``analysis.formatting`` (the report's formatters), configuration
names carry the id prefix ``--baseline``/``--candidate`` accept and SIMULATED where it
applies. Library code is imported inside each function (the CLI starts on click alone).
"""

from __future__ import annotations

from typing import Any

from trialhouse.render import View


def _table(caption: str, names: list[str], rows: list[list[Any]], numeric: list[bool],
           identifying: int = 1) -> Any:
    """An ``analysis.document.Table``; its first ``identifying`` columns name the row."""
    from analysis.document import Table, columns

    return Table(caption, columns(names, numeric, identifying), rows)


def _slice(row: Any, key: str) -> str:
    """A ``--by`` slice value as a cell: a task without the label is a dash, not a blank."""
    from analysis import formatting as fmt

    return fmt.DASH if row[key] is None else str(row[key])


def _name(row: Any, simulated: frozenset[str] = frozenset()) -> str:
    from analysis import formatting as fmt

    return fmt.label_with_id(row, simulated)


def _task_sets(universes: list[Any]) -> list[str]:
    """The task set of each universe, one line each (summarize and consistency print the
    same lines for the same selection)."""
    return [u.sentence() for u in universes]


def _universe(rows: list[dict]) -> list[str]:
    """The universe column, shown when the rows span several universes."""
    return ["universe"] if len({r.get("universe") for r in rows}) > 1 else []


def summary(s: Any) -> View:
    from analysis import formatting as fmt

    uni = _universe(s.rows)
    cols = ["configuration", *uni, *s.by, "solved/valid", "95% CI per trial", "tasks",
            "task mean [95% CI]", "infra", "invalid", "incompl.", "med steps", "med tokens",
            "cost", "cost/solved", "cost known", "p50 wall", "flags (trials)"]
    rows = []
    for r in s.rows:
        flags = ("unknown" if r.get("flags") is None else
                 f"{fmt.count(r['flags'])} ({fmt.count(r['flagged_trials'])})")
        rows.append([
            _name(r), *[r[u] for u in uni], *[_slice(r, b) for b in s.by],
            fmt.pct(r["solved"], r["valid"]), fmt.interval(r["ci_low"], r["ci_high"]),
            fmt.count(r["tasks"]),
            f"{fmt.rate(r['task_mean'])} [{fmt.interval(r['task_ci_low'], r['task_ci_high'])}]",
            fmt.count(r["infra"]), fmt.count(r["invalid"]), fmt.count(r["incomplete"]),
            fmt.number(r["med_steps"], unknown="unknown"),
            fmt.number(r["med_tokens"], unknown="unknown"), fmt.usd(r["cost_usd"]),
            fmt.DASH if not r["solved"] else fmt.usd(r["cost_per_accepted"]),
            fmt.pct(r["cost_known"], r["trials"]), fmt.secs(r["latency_p50"]), flags])
    lead = 1 + len(uni) + len(s.by)
    numeric = [False] * lead + [True] * (len(cols) - lead)
    after = (["SIMULATED agents: these numbers measure the simulator, not a model."]
             if any(r["simulated"] for r in s.rows) else [])
    lines = _task_sets(s.universes)
    if s.unscored is not None and not s.unscored["count"]:
        lines.append("Unscored cases: 0 (every selected case passed its controls, or its "
                     "source records none).")
    return View(lines=lines,
                tables=[_table("Summary (common tasks within each task universe)", cols, rows,
                               numeric, lead)], after=after, notes=list(s.warnings))


def _comparison_rows(c: Any) -> list[list[str]]:
    from analysis import formatting as fmt

    p, st, diff, cons = c.main.pairs, c.sign_test, c.paired_difference, c.main.consistency
    test = (f"p = {fmt.pval(st.p)} (mid-p {fmt.pval(st.mid_p)}, Holm {fmt.pval(st.p_holm)})"
            if st.p_reachable else
            f"p < 0.05 unreachable with N = {st.n} < 6 (p = {fmt.pval(st.p)})")
    return [
        ["pairs (task, rep) both valid", fmt.count(p.pairs)],
        ["candidate-only / baseline-only successes",
         f"{fmt.count(p.candidate_only)} / {fmt.count(p.baseline_only)}"],
        ["both / neither", f"{fmt.count(p.both)} / {fmt.count(p.neither)}"],
        ["excluded pairs (infra/invalid) / incomplete trials",
         f"{fmt.count(p.excluded)} / {fmt.count(p.incomplete)}"],
        ["tasks compared / excluded", f"{c.tasks.common} / {len(c.tasks.excluded)}"],
        ["tasks improved / regressed / tied", f"{st.improvements} / {st.regressions} / {st.ties}"],
        ["sign test", test],
        ["task-mean difference [95% t]", fmt.diff_ci(diff.mean_diff, diff.ci_low, diff.ci_high)],
        ["consistent tasks base / cand",
         f"{fmt.pct(cons.baseline.consistent, c.tasks.common)} / "
         f"{fmt.pct(cons.candidate.consistent, c.tasks.common)}"
         + ("" if cons.comparable else " (not comparable: reps differ)")],
        ["cost per accepted, baseline → candidate",
         f"{fmt.usd(c.cost.baseline_per_accepted)} → {fmt.usd(c.cost.candidate_per_accepted)}"],
        *_delta_rows(c.main.deltas),
    ]


_DELTA_LABELS = {"duration_s": ("wall time", " s"), "cost_usd": ("cost", ""),
                 "tokens": ("tokens", " tokens"), "steps": ("steps", " steps")}


def _delta_rows(deltas: Any) -> list[list[str]]:
    """Paired deltas (both accepted) with their bootstrap interval and the medians."""
    from analysis import formatting as fmt

    if deltas is None:
        return []
    out = []
    for metric, (label, unit) in _DELTA_LABELS.items():
        d = getattr(deltas, metric)
        money = metric == "cost_usd"
        if d.status != "ok":
            out.append([f"{label} Δ, pairs both accepted", d.status])
            continue
        mean = fmt.signed(d.mean_diff, unit=unit, money=money)
        lo, hi = (fmt.signed(v, unit=unit, money=money) for v in (d.ci_low, d.ci_high))
        med = " → ".join(fmt.usd(v) if money else fmt.number(v)
                         for v in (d.baseline_median, d.candidate_median))
        out.append([f"{label} Δ, pairs both accepted: mean [95% bootstrap]; medians",
                    f"{mean} [{lo} to {hi}] over {fmt.count(d.pairs)} pairs; {med}"])
    return out


def comparisons(result: Any) -> View:
    from analysis import formatting as fmt
    from analysis.headline import headline

    head = headline(result)
    view = View(lines=[head.intro, *[ln.sentence for ln in head.lines]],
                notes=list(getattr(result, "notes", [])))
    for c in result:
        where = "" if c.slice is None else " — " + ", ".join(f"{k} = {v}"
                                                             for k, v in c.slice.items())
        sim = result.simulated
        view.tables.append(_table(
            f"{_name(c.candidate.as_dict(), sim)} vs baseline "
            f"{_name(c.baseline.as_dict(), sim)}{where}",
            ["", "value"], _comparison_rows(c), [False, False]))
        if c.holdout is not None:
            h = c.holdout.sign_test
            view.tables[-1].rows.append(
                ["holdout tasks: improved / regressed / tied",
                 f"{h.improvements} / {h.regressions} / {h.ties} of {c.holdout.tasks.common}"])
        view.notes += [f"{fmt.label(c.candidate.as_dict(), sim)}: {w}" for w in c.warnings]
    return view


def consistency(res: Any) -> View:
    from analysis import formatting as fmt

    uni = _universe(res.rows)
    rows = [[_name(r), *[r[u] for u in uni], *[_slice(r, b) for b in res.by],
             fmt.pct(r["consistent"], r["tasks"]),
             fmt.interval(r["ci_low"], r["ci_high"]),
             str(r["min_n"]) if r["equal_n"] else f"{r['min_n']}–{r['max_n']}",
             " ".join(fmt.prob(v) for v in r["pass_hat_k"]),
             " ".join(fmt.prob(v) for v in r["pass_at_k"])] for r in res.rows]
    cols = ["configuration", *uni, *res.by, "consistent", "95% CI", "reps", "pass^k (k = 1…)",
            "pass@k (k = 1…)"]
    return View(lines=_task_sets(res.universes),
                tables=[_table("Consistency (k = 1..min n)", cols, rows,
                               [False] * (1 + len(uni) + len(res.by)) + [True] * 5,
                               1 + len(uni) + len(res.by))],
                notes=list(res.warnings))


def pareto(res: Any) -> View:
    from analysis import formatting as fmt

    names = {r["config_id"]: _name(r) for r in res.rows}
    x = res.rows[0]["x_name"] if res.rows else "cost"
    uni = _universe(res.rows)
    steps = x == "median_steps"
    rows = [[names[r["config_id"]], *[r[u] for u in uni], *[_slice(r, b) for b in res.by],
             fmt.number(r["x"], unknown="unknown") if steps else fmt.usd(r["x"]),
             fmt.pct(r["solved"], r["valid"]), fmt.interval(r["ci_low"], r["ci_high"]),
             fmt.front_status(r.get("role"), r["on_front"]), fmt.listing([names.get(d, d[:12]) for d in r["dominated_by"]]),
             "yes" if r["overlap"] else "no",
             "" if r["convex"] is None else ("yes" if r["convex"] else "no")] for r in res.rows]
    cols = ["configuration", *uni, *res.by, x, "rate", "95% CI", "status", "dominated by",
            "CI overlap", "convex"]
    return View(lines=_task_sets(res.universes),
                tables=[_table(f"Pareto front per task universe ({x} ↓, rate ↑)", cols, rows,
                               [False] * (1 + len(uni) + len(res.by)) + [True] * 3
                               + [False] * 4, 1 + len(uni) + len(res.by))],
                notes=list(res.warnings))


def matrix(m: Any) -> View:
    from analysis import formatting as fmt

    cell = {(r["model"], r["harness"]): r for r in m.grid.iter_rows(named=True)}
    rows = [[mod, *[fmt.pct(cell[(mod, h)]["solved"], cell[(mod, h)]["valid"])
                    for h in m.harnesses]] for mod in m.models]
    design = {"full": "Model × harness", "harnesses": "One model × harnesses",
              "models": "Models × one harness"}[m.design]
    tables = [_table(f"{design} on {m.common_tasks} common tasks", ["model", *m.harnesses],
                     rows, [False] + [True] * len(m.harnesses))]
    for key, within, a, b, effects in (
            ("harness", "harness", "model_a", "model_b", m.model_effects),
            ("model", "model", "harness_a", "harness_b", m.harness_effects)):
        if effects:
            tables.append(_table(
                f"{'Model' if key == 'harness' else 'Harness'} effects within each {within} "
                "(paired by task, Holm)", [within, "A", "B", "B − A [95% CI]",
                                           "better / worse / tied", "p (Holm)"],
                [[e[key], e[a], e[b], fmt.diff_ci(e["mean_diff"], e["ci_low"], e["ci_high"]),
                  f"{e['sign_test']['improvements']} / {e['sign_test']['regressions']} / "
                  f"{e['sign_test']['ties']}",
                  f"{fmt.pval(e['sign_test']['p'])} ({fmt.pval(e['sign_test']['p_holm'])})"]
                 for e in effects], [False, False, False, True, True, True], 3))
    return View(tables=tables, after=[m.verdict], notes=list(m.warnings))


def failures(res: Any) -> View:
    from analysis import formatting as fmt

    def who(r: dict) -> str:
        return f"{r['assigned_by']}: {r['annotator']}" if r["assigned_by"] else ""

    rows = [[_name(r), *[_slice(r, b) for b in res.by], r["dimension"], r["value"], who(r),
             fmt.pct(r["count"], r["total"]),
             fmt.DASH if r["lost_spend_usd"] is None and r["cost_coverage"] is None
             else fmt.usd(r["lost_spend_usd"])] for r in res.rows]
    cols = ["configuration", *res.by, "kind", "class", "assigned by", "count", "lost spend"]
    tables = [_table("Failures (lost spend: the cost of the trials in a failure class)", cols,
                     rows, [False] * (4 + len(res.by)) + [True, True], 3 + len(res.by))]
    dis = res.category_disagreements or []
    if dis:
        tables.append(_table(f"Trials whose assigners disagree on the category ({len(dis)})",
                             ["configuration", "trial", "categories (who = what)"],
                             [[_name(r), r["trial_id"], "; ".join(r["categories"])] for r in dis],
                             [False] * 3, 2))
    return View(tables=tables, notes=list(res.warnings))


def disagreements(res: Any) -> View:
    rows = [[_name(r), r["trial_id"], r["case_id"], r["outcome"], r["review"],
             r["annotator"] or "", r["reason_code"] or "", r["note"] or ""] for r in res.rows]
    return View(tables=[_table(f"Reviewer vs grader disagreements ({len(res.rows)})",
                               ["configuration", "trial", "case", "outcome", "review",
                                "reviewer", "reason", "note"], rows, [False] * 8, 2)])


def familiarity(res: Any) -> View:
    from analysis import formatting as fmt

    rows = [[_name(r), *[_slice(r, b) for b in res.by], fmt.pct(r["known_solved"], r["known_valid"]),
             fmt.pct(r["unknown_solved"], r["unknown_valid"]),
             fmt.diff_ci(r["gap"], r["ci_low"], r["ci_high"]),
             f"{r['g_known']}+{r['g_unknown']}"] for r in res.rows]
    cols = ["configuration", *res.by, "known", "unknown", "gap (95% CI, by repository)",
            "repos"]
    return View(tables=[_table("Known vs unknown repositories", cols, rows,
                               [False] * (1 + len(res.by)) + [True] * 4, 1 + len(res.by))],
                notes=list(res.warnings))


def latency(res: Any) -> View:
    from analysis import formatting as fmt
    from analysis.latency import PHASES

    def phase(r: dict, p: str) -> str:
        if not r[f"{p}_n"]:
            return fmt.DASH
        out = " / ".join(fmt.number(r[f"{p}_{q}"]) for q in ("p50", "p90", "p95"))
        return out + ("" if r[f"{p}_n"] == r["trials"] else f" (n={fmt.count(r[f'{p}_n'])})")

    rows = [[_name(r), *[_slice(r, b) for b in res.by], fmt.count(r["trials"]),
             *[phase(r, p) for p in PHASES]] for r in res.rows]
    return View(tables=[_table("Latency p50 / p90 / p95 (s)",
                               ["configuration", *res.by, "trials", *PHASES], rows,
                               [False] * (1 + len(res.by)) + [True] * (1 + len(PHASES)),
                               1 + len(res.by))])


def noise(res: Any) -> View:
    from analysis import formatting as fmt
    from analysis.noise import REPS

    def pp(v: Any) -> str:
        return fmt.DASH if v is None else f"{100 * v:.1f} pp"

    rows = [[_name(r), *([r["universe"]] if len({x["universe"] for x in res.rows}) > 1 else []),
             fmt.count(r["tasks"]), fmt.number(r["mean_reps"], 2),
             fmt.number(r["within_var"], 4), fmt.number(r["between_var"], 4),
             fmt.DASH if r["between_share"] is None else f"{100 * r['between_share']:.0f}%",
             pp(r["se_observed"]), " / ".join(pp(v) for v in (r["se_at_reps"] or [])) or fmt.DASH,
             pp(r["se_floor"]), r["verdict"]] for r in res.rows]
    uni = ["universe"] if len({x["universe"] for x in res.rows}) > 1 else []
    cols = ["configuration", *uni, "tasks", "reps", "within ω²", "between τ²", "τ² share",
            "SE now", "SE at " + "/".join(map(str, REPS)) + " reps", "SE at ∞", "reading"]
    return View(lines=_task_sets(res.universes),
                tables=[_table("Noise: repetition (ω²) vs task-to-task (τ²) variance", cols, rows,
                               [False] * (1 + len(uni)) + [True] * 8 + [False], 1 + len(uni))],
                notes=list(res.warnings))


def ranks(res: Any) -> View:
    from analysis import formatting as fmt

    names = {r["config_id"]: _name(r) for r in res.rows}
    short = {r["config_id"]: fmt.label(r) for r in res.rows}
    rows = [[r["universe"], names[r["config_id"]], fmt.rate(r["task_mean"]),
             fmt.DASH if r["rank"] is None else str(r["rank"]),
             fmt.DASH if r["rank_low"] is None else f"{r['rank_low']}–{r['rank_high']}",
             "baseline (not ranked)" if r["role"] == "baseline" else
             "INELIGIBLE (not ranked)" if r["role"] == "ineligible" else
             fmt.listing([short.get(t, t[:12]) for t in r["tied_with"]]) or "none"]
            for r in res.rows]
    return View(lines=_task_sets(res.universes),
                tables=[_table("Leaderboard: rank by task mean, 95% bootstrap rank interval",
                               ["universe", "configuration", "task mean", "rank",
                                "rank interval", "tied with"], rows,
                               [False, False, True, True, True, False], 2)],
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
                tables=[_table(f"Minimum detectable difference (α = {p.alpha:g}, power = "
                               f"{p.power:g}, paired t)",
                               ["tasks", *[f"{reps_label(r)} reps" for r in REPS]],
                               rows, [True] * (1 + len(REPS)))],
                after=list(p.verdict), notes=list(p.warnings))


def eligibility(res: Any) -> View:
    from analysis import formatting as fmt

    rows = []
    sim = frozenset(r["config_id"] for r in res.rows if r.get("simulated"))
    for r in res.rows:
        status = ("baseline (reference point)" if r["role"] == "baseline" else
                  "eligible" if r["eligible"] else "INELIGIBLE")
        why = "; ".join(r["reasons"] or r["notes"]) or fmt.DASH
        rows.append([_name(r, sim), status, fmt.count(r["invalid"]),
                     fmt.count(r["blocker_regressions"]), fmt.count(r["secrets_leaked"]),
                     fmt.listing(r["tampered_runs"]) or fmt.DASH, why])
    cols = ["configuration", "status", "invalid", "blocker regr.", "secrets leaked",
            "tampered runs", "reasons"]
    return View(tables=[_table("Eligibility per configuration", cols, rows,
                               [False, False, True, True, True, False, False])],
                notes=list(res.warnings))


def trajectory(res: Any) -> View:
    from analysis.layouts import NOT_A_SCORE, trajectory_table

    return View(tables=[trajectory_table(res.rows, _name)], after=[NOT_A_SCORE],
                notes=list(res.warnings))
