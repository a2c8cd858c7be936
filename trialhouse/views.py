"""Terminal views: how each analysis result is laid out as tables (pure functions).

Numbers are written by ``analysis.formatting`` (the report's formatters), configuration
names carry the id prefix ``--baseline``/``--candidate`` accept and SIMULATED where it
applies. Library code is imported inside each function (the CLI starts on click alone).
"""

from __future__ import annotations

from typing import Any

from trialhouse.render import View


def _table(caption: str, columns: list[str], rows: list[list[Any]], numeric: list[bool]) -> Any:
    from analysis.report.document import Table

    return Table(caption, columns, rows, numeric)


def _name(row: Any, simulated: frozenset[str] = frozenset()) -> str:
    from analysis import formatting as fmt

    return fmt.label_with_id(row, simulated)


def summary(s: Any) -> View:
    from analysis import formatting as fmt

    cols = ["configuration", *s.by, "solved/valid", "95% CI per trial", "tasks",
            "task mean [95% CI]", "infra", "invalid", "incompl.", "med steps", "med tokens",
            "cost", "cost/solved", "cost known", "p50 wall", "flags (trials)"]
    rows = []
    for r in s.rows:
        flags = ("unknown" if r.get("flags") is None else
                 f"{fmt.count(r['flags'])} ({fmt.count(r['flagged_trials'])})")
        rows.append([
            _name(r), *[r[b] if r[b] is not None else fmt.DASH for b in s.by],
            fmt.pct(r["solved"], r["valid"]), fmt.interval(r["ci_low"], r["ci_high"]),
            fmt.count(r["tasks"]),
            f"{fmt.rate(r['task_mean'])} [{fmt.interval(r['task_ci_low'], r['task_ci_high'])}]",
            fmt.count(r["infra"]), fmt.count(r["invalid"]), fmt.count(r["incomplete"]),
            fmt.number(r["med_steps"], unknown="unknown"),
            fmt.number(r["med_tokens"], unknown="unknown"), fmt.usd(r["cost_usd"]),
            fmt.DASH if not r["solved"] else fmt.usd(r["cost_per_solved"]),
            fmt.pct(r["cost_known"], r["trials"]), fmt.secs(r["latency_p50"]), flags])
    numeric = [False] * (1 + len(s.by)) + [True] * (len(cols) - 1 - len(s.by))
    after = (["SIMULATED agents: these numbers measure the simulator, not a model."]
             if any(r["simulated"] for r in s.rows) else [])
    return View(tables=[_table("Summary (tasks common within each benchmark)", cols, rows,
                               numeric)], after=after, notes=list(s.warnings))


def _comparison_rows(c: Any) -> list[list[str]]:
    from analysis import formatting as fmt

    p, st, diff, cons = c.main.pairs, c.sign_test, c.paired_difference, c.main.consistency
    test = (f"p = {fmt.pval(st.p)} (mid-p {fmt.pval(st.mid_p)}, Holm {fmt.pval(st.p_holm)})"
            if st.p_reachable else
            f"p < 0.05 unreachable with N = {st.n} < 6 (p = {fmt.pval(st.p)})")
    cost = (fmt.signed(c.cost.mean_diff_usd, money=True) if c.cost.status == "ok"
            else c.cost.status)
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
        ["wall-time difference (both accepted, mean)",
         fmt.signed(c.main.duration.mean_diff_s, unit=" s")],
        ["cost difference (both accepted, mean)", cost],
        ["cost per accepted, baseline → candidate",
         f"{fmt.usd(c.cost.baseline_per_accepted)} → {fmt.usd(c.cost.candidate_per_accepted)}"],
    ]


def comparisons(result: Any) -> View:
    from analysis import formatting as fmt
    from analysis.headline import headline

    head = headline(result)
    view = View(lines=[head.intro, *[ln.sentence for ln in head.lines]])
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

    rows = [[_name(r), *[r[b] for b in res.by], fmt.pct(r["consistent"], r["tasks"]),
             fmt.interval(r["ci_low"], r["ci_high"]),
             str(r["min_n"]) if r["equal_n"] else f"{r['min_n']}–{r['max_n']}",
             " ".join(fmt.prob(v) for v in r["pass_hat_k"]),
             " ".join(fmt.prob(v) for v in r["pass_at_k"])] for r in res.rows]
    cols = ["configuration", *res.by, "consistent", "95% CI", "reps", "pass^k (k = 1…)",
            "pass@k (k = 1…)"]
    return View(tables=[_table("Consistency (k = 1..min n)", cols, rows,
                               [False] * (1 + len(res.by)) + [True] * 5)],
                notes=list(res.warnings))


def pareto(res: Any) -> View:
    from analysis import formatting as fmt

    names = {r["config_id"]: _name(r) for r in res.rows}
    x = res.rows[0]["x_name"] if res.rows else "cost"
    rows = [[names[r["config_id"]], *[r[b] for b in res.by], fmt.usd(r["x"]),
             fmt.pct(r["solved"], r["valid"]), fmt.interval(r["ci_low"], r["ci_high"]),
             fmt.front_status(r.get("role"), r["on_front"]), fmt.listing([names.get(d, d[:12]) for d in r["dominated_by"]]),
             "yes" if r["overlap"] else "no",
             "" if r["convex"] is None else ("yes" if r["convex"] else "no")] for r in res.rows]
    cols = ["configuration", *res.by, x, "rate", "95% CI", "status", "dominated by",
            "CI overlap", "convex"]
    return View(tables=[_table(f"Pareto front ({x} ↓, rate ↑)", cols, rows,
                               [False] * (1 + len(res.by)) + [True] * 3 + [False] * 4)],
                notes=list(res.warnings))


def matrix(m: Any) -> View:
    from analysis import formatting as fmt

    cell = {(r["model"], r["harness"]): r for r in m.grid.iter_rows(named=True)}
    rows = [[mod, *[fmt.pct(cell[(mod, h)]["solved"], cell[(mod, h)]["valid"])
                    for h in m.harnesses]] for mod in m.models]
    return View(tables=[_table(f"Model × harness on {m.common_tasks} common tasks",
                               ["model", *m.harnesses], rows,
                               [False] + [True] * len(m.harnesses))],
                after=[m.verdict], notes=list(m.warnings))


def failures(res: Any) -> View:
    from analysis import formatting as fmt

    rows = [[_name(r), *[r[b] for b in res.by], r["dimension"], r["value"],
             r["annotator"] or "", fmt.pct(r["count"], r["total"]), fmt.usd(r["lost_spend_usd"])]
            for r in res.rows]
    cols = ["configuration", *res.by, "kind", "class", "annotator", "count", "lost spend"]
    return View(tables=[_table("Failures", cols, rows,
                               [False] * (4 + len(res.by)) + [True, True])],
                notes=list(res.warnings))


def disagreements(res: Any) -> View:
    rows = [[_name(r), r["trial_id"], r["case_id"], r["outcome"], r["review"],
             r["annotator"] or "", r["note"] or ""] for r in res.rows]
    return View(tables=[_table(f"Reviewer vs grader disagreements ({len(res.rows)})",
                               ["configuration", "trial", "case", "outcome", "review",
                                "annotator", "note"], rows, [False] * 7)])


def familiarity(res: Any) -> View:
    from analysis import formatting as fmt

    rows = [[_name(r), *[r[b] for b in res.by], fmt.pct(r["known_solved"], r["known_valid"]),
             fmt.pct(r["unknown_solved"], r["unknown_valid"]),
             fmt.diff_ci(r["gap"], r["ci_low"], r["ci_high"]),
             f"{r['g_known']}+{r['g_unknown']}"] for r in res.rows]
    cols = ["configuration", *res.by, "known", "unknown", "gap (95% CI, by repository)",
            "repos"]
    return View(tables=[_table("Known vs unknown repositories", cols, rows,
                               [False] * (1 + len(res.by)) + [True] * 4)],
                notes=list(res.warnings))


def latency(res: Any) -> View:
    from analysis import formatting as fmt
    from analysis.latency import PHASES

    def phase(r: dict, p: str) -> str:
        if not r[f"{p}_n"]:
            return fmt.DASH
        out = " / ".join(fmt.number(r[f"{p}_{q}"]) for q in ("p50", "p90", "p95"))
        return out + ("" if r[f"{p}_n"] == r["trials"] else f" (n={fmt.count(r[f'{p}_n'])})")

    rows = [[_name(r), *[r[b] for b in res.by], fmt.count(r["trials"]),
             *[phase(r, p) for p in PHASES]] for r in res.rows]
    return View(tables=[_table("Latency p50 / p90 / p95 (s)",
                               ["configuration", *res.by, "trials", *PHASES], rows,
                               [False] * (1 + len(res.by)) + [True] * (1 + len(PHASES)))])


def trajectory(res: Any) -> View:
    from analysis.report.sections.trajectory import NOT_A_SCORE, table

    return View(tables=[table(res.rows, _name)], after=[NOT_A_SCORE], notes=list(res.warnings))
