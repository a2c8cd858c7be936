"""Terminal views: how each analysis result is laid out as tables (pure functions).

Numbers are written by ``analysis.formatting`` (the report's formatters), configuration
names carry the id prefix ``--baseline``/``--candidate`` accept and SIMULATED where it
applies. Library code is imported inside each function (the CLI starts on click alone).
"""

from __future__ import annotations

from typing import Any

from trialhouse.render import View


def table(caption: str, names: list[str], rows: list[list[Any]], numeric: list[bool],
           identifying: int = 1) -> Any:
    """An ``analysis.document.Table``; its first ``identifying`` columns name the row."""
    from analysis.document import Table, columns

    return Table(caption, columns(names, numeric, identifying), rows)


def cell_slice(row: Any, key: str) -> str:
    """A ``--by`` slice value as a cell: a task without the label is a dash, not a blank."""
    from analysis import formatting as fmt

    return fmt.DASH if row[key] is None else str(row[key])


def name(row: Any, simulated: frozenset[str] = frozenset()) -> str:
    from analysis import formatting as fmt

    return fmt.label_with_id(row, simulated)


def task_sets(universes: list[Any]) -> list[str]:
    """The task set of each universe, one line each (summarize and consistency print the
    same lines for the same selection)."""
    return [u.sentence() for u in universes]


def per_universe(rows: list[dict], caption: str, cols: list[str], numeric: list[bool],
                  lead: int, cells: Any) -> list[Any]:
    """One table per task universe (numbers of different universes are never compared, and
    a table without a universe column fits a terminal better); ``cells(row)`` lays a row."""
    found = list(dict.fromkeys(r.get("universe") for r in rows)) or [None]
    return [table(caption + (f" — universe {uni}" if len(found) > 1 else ""), cols,
                  [cells(r) for r in rows if r.get("universe") == uni], numeric, lead)
            for uni in found]


def _summary_row(r: dict, by: list[str]) -> list[str]:
    from analysis import formatting as fmt

    flags = ("unknown" if r.get("flags") is None else
             f"{fmt.count(r['flags'])} ({fmt.count(r['flagged_trials'])})")
    return [
        name(r), *[cell_slice(r, b) for b in by],
        fmt.pct(r["solved"], r["valid"]),
        f"{fmt.rate(r['task_mean'])} [{fmt.interval(r['task_ci_low'], r['task_ci_high'])}]",
        fmt.DASH if not r["solved"] else fmt.usd(r["cost_per_accepted"]),
        fmt.interval(r["ci_low"], r["ci_high"]), fmt.count(r["tasks"]),
        fmt.count(r["infra"]), fmt.count(r["invalid"]), fmt.count(r["incomplete"]),
        fmt.usd(r["cost_usd"]), fmt.pct(r["cost_known"], r["trials"]),
        fmt.number(r["med_steps"], unknown="unknown"),
        fmt.number(r["med_tokens"], unknown="unknown"), fmt.secs(r["latency_p50"]), flags]


def summary(s: Any) -> View:
    """One table per task universe (numbers of different universes are never compared;
    a table without a universe column fits a terminal better)."""
    cols = ["configuration", *s.by, "solved/valid", "task mean [95% CI]", "cost/solved",
            "95% CI per trial", "tasks", "infra", "invalid", "incompl.", "cost", "cost known",
            "med steps", "med tokens", "p50 wall", "flags (trials)"]
    lead = 1 + len(s.by)
    numeric = [False] * lead + [True] * (len(cols) - lead)
    tables = per_universe(s.rows, "Summary on the common tasks", cols, numeric, lead,
                           lambda r: _summary_row(r, s.by))
    after = (["SIMULATED agents: these numbers measure the simulator, not a model."]
             if any(r["simulated"] for r in s.rows) else [])
    lines = task_sets(s.universes)
    if s.unscored is not None and not s.unscored["count"]:
        lines.append("Unscored cases: 0 (every selected case passed its controls, or its "
                     "source records none).")
    return View(lines=lines, tables=tables, after=after, notes=list(s.warnings))


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
        ["excluded (infra/invalid) / incomplete",
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
        name = f"{label} Δ (pairs both accepted)"
        if d.status != "ok":
            out.append([name, d.status])
            continue
        mean = fmt.signed(d.mean_diff, unit=unit, money=money)
        lo, hi = (fmt.signed(v, unit=unit, money=money) for v in (d.ci_low, d.ci_high))
        med = " → ".join(fmt.usd(v) if money else fmt.number(v)
                         for v in (d.baseline_median, d.candidate_median))
        out.append([name, f"mean {mean} [95% bootstrap {lo} to {hi}] over "
                          f"{fmt.count(d.pairs)} pairs; medians {med}"])
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
        view.tables.append(table(
            f"{name(c.candidate.as_dict(), sim)} vs baseline "
            f"{name(c.baseline.as_dict(), sim)}{where}",
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

    def cells(r: dict) -> list[str]:
        return [name(r), *[cell_slice(r, b) for b in res.by],
                fmt.pct(r["consistent"], r["tasks"]), fmt.interval(r["ci_low"], r["ci_high"]),
                str(r["min_n"]) if r["equal_n"] else f"{r['min_n']}–{r['max_n']}",
                " ".join(fmt.prob(v) for v in r["pass_hat_k"]),
                " ".join(fmt.prob(v) for v in r["pass_at_k"])]

    cols = ["configuration", *res.by, "consistent", "95% CI", "reps", "pass^k (k = 1…)",
            "pass@k (k = 1…)"]
    lead = 1 + len(res.by)
    return View(lines=task_sets(res.universes),
                tables=per_universe(res.rows, "Consistency (k = 1..min n)", cols,
                                     [False] * lead + [True] * 5, lead, cells),
                notes=list(res.warnings))


def pareto(res: Any) -> View:
    from analysis import formatting as fmt

    names = {r["config_id"]: name(r) for r in res.rows}
    x = res.rows[0]["x_name"] if res.rows else "cost"
    steps = x == "median_steps"

    def cells(r: dict) -> list[str]:
        return [names[r["config_id"]], *[cell_slice(r, b) for b in res.by],
                fmt.number(r["x"], unknown="unknown") if steps else fmt.usd(r["x"]),
                fmt.pct(r["solved"], r["valid"]), fmt.interval(r["ci_low"], r["ci_high"]),
                fmt.front_status(r.get("role"), r["on_front"]),
                fmt.listing([names.get(d, d[:12]) for d in r["dominated_by"]]),
                "yes" if r["overlap"] else "no",
                "" if r["convex"] is None else ("yes" if r["convex"] else "no")]

    cols = ["configuration", *res.by, x, "rate", "95% CI", "status", "dominated by",
            "CI overlap", "convex"]
    lead = 1 + len(res.by)
    return View(lines=task_sets(res.universes),
                tables=per_universe(res.rows, f"Pareto front ({x} ↓, rate ↑)", cols,
                                     [False] * lead + [True] * 3 + [False] * 4, lead, cells),
                notes=list(res.warnings))


def matrix(m: Any) -> View:
    from analysis import formatting as fmt

    cell = {(r["model"], r["harness"]): r for r in m.grid.iter_rows(named=True)}
    rows = [[mod, *[fmt.pct(cell[(mod, h)]["solved"], cell[(mod, h)]["valid"])
                    for h in m.harnesses]] for mod in m.models]
    design = {"full": "Model × harness", "harnesses": "One model × harnesses",
              "models": "Models × one harness"}[m.design]
    tables = [table(f"{design} on {m.common_tasks} common tasks", ["model", *m.harnesses],
                     rows, [False] + [True] * len(m.harnesses))]
    for key, within, a, b, effects in (
            ("harness", "harness", "model_a", "model_b", m.model_effects),
            ("model", "model", "harness_a", "harness_b", m.harness_effects)):
        if effects:
            tables.append(table(
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
    """Outcome classes, then failure categories with who assigned them, then the trials
    whose assigners disagree (the terminal's three tables of one result)."""
    from analysis import formatting as fmt

    def lost(r: dict) -> str:
        return (fmt.DASH if r["lost_spend_usd"] is None and r["cost_coverage"] is None
                else fmt.usd(r["lost_spend_usd"]))

    lead = 1 + len(res.by)
    outcomes = [[name(r), *[cell_slice(r, b) for b in res.by], r["value"],
                 fmt.pct(r["count"], r["total"]), lost(r)]
                for r in res.rows if r["dimension"] == "outcome"]
    tables = [table("Outcomes (lost spend: the cost of the trials in a failure class)",
                     ["configuration", *res.by, "outcome", "trials", "lost spend"], outcomes,
                     [False] * (lead + 1) + [True, True], lead + 1)]
    cats = [[name(r), *[cell_slice(r, b) for b in res.by], r["value"],
             f"{r['assigned_by']}: {r['annotator']}", fmt.pct(r["count"], r["total"]), lost(r)]
            for r in res.rows if r["dimension"] == "category"]
    if cats:
        tables.append(table("Failure categories (first decisive wrong choice) by who "
                             "assigned them", ["configuration", *res.by, "category",
                                               "assigned by", "trials", "lost spend"],
                             cats, [False] * (lead + 2) + [True, True], lead + 1))
    dis = res.category_disagreements or []
    if dis:
        tables.append(table(f"Trials whose assigners disagree on the category ({len(dis)})",
                             ["configuration", "trial", "categories (who = what)"],
                             [[name(r), r["trial_id"], "; ".join(r["categories"])] for r in dis],
                             [False] * 3, 2))
    return View(tables=tables, notes=list(res.warnings))


def disagreements(res: Any) -> View:
    rows = [[name(r), r["trial_id"], r["case_id"], r["outcome"], r["review"],
             r["annotator"] or "", r["reason_code"] or "", r["note"] or ""] for r in res.rows]
    return View(tables=[table(f"Reviewer vs grader disagreements ({len(res.rows)})",
                               ["configuration", "trial", "case", "outcome", "review",
                                "reviewer", "reason", "note"], rows, [False] * 8, 2)])


def familiarity(res: Any) -> View:
    from analysis import formatting as fmt

    rows = [[name(r), *[cell_slice(r, b) for b in res.by], fmt.pct(r["known_solved"], r["known_valid"]),
             fmt.pct(r["unknown_solved"], r["unknown_valid"]),
             fmt.diff_ci(r["gap"], r["ci_low"], r["ci_high"]),
             f"{r['g_known']}+{r['g_unknown']}"] for r in res.rows]
    cols = ["configuration", *res.by, "known", "unknown", "gap (95% CI, by repository)",
            "repos"]
    return View(tables=[table("Known vs unknown repositories", cols, rows,
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

    rows = [[name(r), *[cell_slice(r, b) for b in res.by], fmt.count(r["trials"]),
             *[phase(r, p) for p in PHASES]] for r in res.rows]
    return View(tables=[table("Latency p50 / p90 / p95 (s)",
                               ["configuration", *res.by, "trials", *PHASES], rows,
                               [False] * (1 + len(res.by)) + [True] * (1 + len(PHASES)),
                               1 + len(res.by))])


def eligibility(res: Any) -> View:
    from analysis import formatting as fmt

    rows = []
    sim = frozenset(r["config_id"] for r in res.rows if r.get("simulated"))
    for r in res.rows:
        status = ("baseline (reference point)" if r["role"] == "baseline" else
                  "eligible" if r["eligible"] else "INELIGIBLE")
        why = "; ".join(r["reasons"] or r["notes"]) or fmt.DASH
        rows.append([name(r, sim), status, fmt.count(r["invalid"]),
                     fmt.count(r["blocker_regressions"]), fmt.count(r["secrets_leaked"]),
                     fmt.listing(r["tampered_runs"]) or fmt.DASH, why])
    cols = ["configuration", "status", "invalid", "blocker regr.", "secrets leaked",
            "tampered runs", "reasons"]
    return View(tables=[table("Eligibility per configuration", cols, rows,
                               [False, False, True, True, True, False, False])],
                notes=list(res.warnings))


def trajectory(res: Any) -> View:
    from analysis.layouts import NOT_A_SCORE, trajectory_table

    return View(tables=[trajectory_table(res.rows, name)], after=[NOT_A_SCORE],
                notes=list(res.warnings))

