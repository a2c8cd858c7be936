"""CLI commands for the analysis area (thin: parse options, call one library function, print).

Library code is imported inside each command so ``trialhouse --help`` stays fast.
JSON keys are documented in docs/analysis.md.
"""

from __future__ import annotations

from pathlib import Path

import click

from trialhouse.app import Choice, app, echo_json, json_option, listed, option, warehouse_option

Many = tuple[str, ...]  # a repeatable option's values (empty when not given)

# Same values as analysis.pareto.X_CHOICES (tests/test_cli_docs.py checks).
PARETO_X = ("cost_per_accepted", "cost_per_trial")


def filter_options(by: bool = True):
    """The filters every analysis command takes: --run, --since, --until, --label, --holdout
    and (unless ``by=False``) --by."""
    opts = [
        option("--run", multiple=True, help="Run id (repeatable)."),
        option("--since", help="From this ISO date/time (UTC)."),
        option("--until", help="Before this ISO date/time."),
        option("--label", multiple=True, help="Case label key=value (repeatable, all must match)."),
        option("--holdout", type=Choice(("include", "exclude", "only")), default="include",
               help="Holdout tasks: include | exclude | only."),
    ]
    if by:
        opts.append(option("--by", multiple=True, help="Slice by task_class | repository | "
                                                       "difficulty | language | familiarity."))

    def decorate(f):
        for o in reversed(opts):
            f = o(f)
        return f

    return decorate


def _open(warehouse: Path, runs, since, until, labels, holdout):
    from analysis.filters import Filters
    from warehouse import db

    filters = Filters.parse(runs=listed(runs), since=since, until=until, labels=listed(labels),
                            holdout=holdout)
    return db.open(warehouse, read_only=True), filters


def _console():
    import sys

    from rich.console import Console

    from trialhouse.app import no_color

    # Piped output keeps full rows instead of rich's 80-column default.
    return Console(no_color=no_color(), width=None if sys.stdout.isatty() else 200)


def _pct(k, n) -> str:
    if n is None or not n:
        return f"{k}/{n or 0}"
    return f"{k}/{n} ({100 * k / n:.0f}%)"


def _num(v, fmt: str = "{:.2f}") -> str:
    if v is None:
        return "unknown"
    if v == float("inf"):
        return "∞"
    return fmt.format(v)


def _ci(lo, hi, fmt: str = "{:.2f}", bounds: tuple[float, float] | None = None) -> str:
    """Format an interval; ``bounds`` truncates it to the possible range for display.

    t intervals on means of proportions can cross [0, 1] (or [-1, 1] for differences);
    ``--json`` keeps the exact values.
    """
    if lo is None or hi is None:
        return "—"
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return f"{fmt.format(lo)}–{fmt.format(hi)}"


def _name(row: dict) -> str:
    label = row.get("variant") or row.get("model") or row["config_id"][:12]
    return f"{label} [{row['config_id'][:8]}]"


def _table(title: str, columns: list[str], rows: list[list[str]]):
    from rich.table import Table

    t = Table(title=title, show_lines=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def _warnings(console, warnings: list[str]) -> None:
    for w in warnings:
        console.print(f"[yellow]note:[/yellow] {w}", markup=True, highlight=False)


def _frame_json(df, filters, key: str = "rows", **extra) -> None:
    from analysis.jsonout import frame_records

    echo_json({"filters": filters.as_dict(), key: frame_records(df), **extra})


def _rows_json(rows: list[dict], filters) -> None:
    from analysis.jsonout import clean

    echo_json({"filters": filters.as_dict(), "rows": clean(rows)})


@app.command()
@warehouse_option
@filter_options()
@option("--format", "fmt", type=Choice(("table", "seed")), default="table",
        help="table | seed (tab-separated columns of the per-run summary script).")
@json_option()
def summarize(warehouse: Path,
              run: Many, since: str | None, until: str | None, label: Many, holdout: str,
              by: Many, fmt: str, json_out: bool) -> None:
    """Per-configuration table: pass rate with Wilson and task-clustered intervals, cost, latency.

    Example: trialhouse summarize --warehouse w.duckdb --run r1 --by task_class
    """
    from analysis.summary import seed_lines
    from analysis.summary import summarize as _summarize

    con, filters = _open(warehouse, run, since, until, label, holdout)
    s = _summarize(con, filters, by=listed(by))
    if json_out:
        echo_json({"filters": filters.as_dict(), **s.as_dict()})
        return
    if fmt == "seed":
        click.echo("\n".join(seed_lines(s)))
        return
    cols = ["configuration", *s.by, "solved/valid", "ci95 per trial", "tasks",
            "task mean [ci95]", "infra", "invalid", "incompl.", "med steps", "med tokens",
            "cost $", "$/solved", "cost cover", "p50 s"]
    rows = []
    for r in s.rows:
        rows.append([
            _name(r), *[r[b] for b in s.by], _pct(r["solved"], r["valid"]),
            _ci(r["ci_low"], r["ci_high"]), r["tasks"],
            f"{_num(r['task_mean'], '{:.3f}')} [{_ci(r['task_ci_low'], r['task_ci_high'], bounds=(0.0, 1.0))}]",
            r["infra"], r["invalid"], r["incomplete"], _num(r["med_steps"], "{:g}"),
            _num(r["med_tokens"], "{:g}"), _num(r["cost_usd"], "{:.4f}"),
            "—" if not r["solved"] else _num(r["cost_per_solved"], "{:.4f}"),
            _pct(r["cost_known"], r["trials"]), _num(r["latency_p50"], "{:.1f}")])
    console = _console()
    console.print(_table("Summary (tasks common to every configuration)", cols, rows))
    if any(r["simulated"] for r in s.rows):
        console.print("[yellow]simulated agents: these numbers measure the simulator[/yellow]")
    _warnings(console, s.warnings)


@app.command()
@warehouse_option
@option("--baseline", help="Variant name or config id (default: first variant).")
@option("--candidate", multiple=True,
        help="Variant name or config id (repeatable; default: all others).")
@option("--report", type=click.Path(path_type=Path),
        help="Compare from RUN_DIR/report.json instead of the warehouse.")
@filter_options()
@json_option()
def compare(warehouse: Path, baseline: str | None, candidate: Many, report: Path | None,
            run: Many, since: str | None, until: str | None, label: Many, holdout: str,
            by: Many,
            json_out: bool) -> None:
    """Paired comparison of candidates against a baseline: pairs, sign test, paired difference.

    With --by, one comparison per slice (directions and sign test within the slice).

    Example: trialhouse compare --warehouse w.duckdb --baseline baseline --candidate tuned
    """
    from analysis import compare as cmp

    if report is not None:
        from analysis.filters import Filters

        if by:
            raise click.UsageError("--by needs the warehouse (case labels); drop --report")
        filters = Filters()
        comps = cmp.compare_report(report, baseline, listed(candidate))
    else:
        con, filters = _open(warehouse, run, since, until, label, holdout)
        comps = cmp.compare(con, filters, baseline, listed(candidate), by=listed(by))
    if json_out:
        echo_json({"filters": filters.as_dict(), "comparisons": [c.as_dict() for c in comps]})
        return
    console = _console()
    for c in comps:
        d = c.as_dict()
        p, st, pdiff = d["pairs"], d["sign_test"], d["paired_difference"]
        where = ("" if c.slice is None else " — " + ", ".join(
            f"{k} = {v}" for k, v in c.slice.items()))
        console.print(f"[bold]{_name(d['candidate'])}[/bold] vs baseline "
                      f"[bold]{_name(d['baseline'])}[/bold]{where}", highlight=False)
        rows = [
            ["pairs (task, rep) both valid", p["pairs"]],
            ["candidate-only / baseline-only successes",
             f"{p['candidate_only']} / {p['baseline_only']}"],
            ["both / neither", f"{p['both']} / {p['neither']}"],
            ["excluded pairs (infra/invalid) / incomplete trials",
             f"{p['excluded']} / {p['incomplete']}"],
            ["tasks compared / excluded", f"{d['tasks']['common']} / "
                                          f"{len(d['tasks']['excluded'])}"],
            ["tasks improved / regressed / tied",
             f"{st['improvements']} / {st['regressions']} / {st['ties']}"],
            ["sign test p (mid-p, Holm)",
             (f"{st['p']:.4g} (mid-p {st['mid_p']:.4g}, Holm {st['p_holm']:.4g})"
              if st["p_reachable"] else
              f"p < 0.05 unreachable with N = {st['n']} < 6 (p = {st['p']:.4g})")],
            ["task-mean difference [95% t]",
             f"{_num(pdiff['mean_diff'], '{:+.3f}')} "
             f"[{_ci(pdiff['ci_low'], pdiff['ci_high'], '{:+.3f}', bounds=(-1.0, 1.0))}]"],
            ["consistent tasks base / cand",
             f"{_pct(d['consistency']['baseline']['consistent'], d['tasks']['common'])} / "
             f"{_pct(d['consistency']['candidate']['consistent'], d['tasks']['common'])}"
             + ("" if d["consistency"]["comparable"] else " (not comparable: reps differ)")],
            ["duration diff (both accepted, mean)",
             _num(d["duration"]["mean_diff_s"], "{:+.1f} s")],
            ["cost diff (both accepted, mean)",
             _num(d["cost"]["mean_diff_usd"], "{:+.4f} $") if d["cost"]["status"] == "ok"
             else d["cost"]["status"]],
        ]
        console.print(_table("", ["", "value"], rows))
        if d["holdout"]:
            h = d["holdout"]
            console.print(f"holdout: {h['tasks']['common']} task(s), improved "
                          f"{h['sign_test']['improvements']} / regressed "
                          f"{h['sign_test']['regressions']} / tied {h['sign_test']['ties']}",
                          highlight=False)
        _warnings(console, d["warnings"])


@app.command()
@warehouse_option
@filter_options()
@json_option()
def consistency(warehouse: Path,
                run: Many, since: str | None, until: str | None, label: Many, holdout: str,
                by: Many, json_out: bool) -> None:
    """Tasks passed on every repetition (Wilson over tasks), pass^k and pass@k for k ≤ min n.

    Example: trialhouse consistency --warehouse w.duckdb --run r1
    """
    from analysis.consistency import consistency_rows

    con, filters = _open(warehouse, run, since, until, label, holdout)
    df = consistency_rows(con, filters, by=listed(by))
    if json_out:
        _rows_json(df, filters)
        return
    by = by or []
    rows = [[_name(r), *[r[b] for b in by], _pct(r["consistent"], r["tasks"]),
             _ci(r["ci_low"], r["ci_high"]),
             str(r["min_n"]) if r["equal_n"] else f"{r['min_n']}–{r['max_n']}",
             " ".join(f"{v:.3f}" for v in r["pass_hat_k"]),
             " ".join(f"{v:.3f}" for v in r["pass_at_k"])] for r in df]
    console = _console()
    console.print(_table("Consistency (k = 1..min n)", ["configuration", *by, "consistent",
                                                        "ci95", "reps", "pass^k", "pass@k"],
                         rows))
    if len({r["min_n"] for r in df}) > 1 or not all(r["equal_n"] for r in df):
        _warnings(console, ["repetition counts differ: consistency counts are not comparable "
                            "across these rows; compare pass^k at a common k"])


@app.command()
@warehouse_option
@option("--x", type=Choice(PARETO_X), default="cost_per_accepted",
        help="Cost axis of the front.")
@option("--convex", is_flag=True, help="Also mark the convex frontier.")
@filter_options()
@json_option()
def pareto(warehouse: Path, x: str, convex: bool,
           run: Many, since: str | None, until: str | None, label: Many, holdout: str,
           by: Many, json_out: bool) -> None:
    """Cost/quality Pareto front: non-dominated configurations and who dominates the rest.

    With --by, one front per slice.

    Example: trialhouse pareto --warehouse w.duckdb --x cost_per_trial --convex
    """
    from analysis.pareto import pareto_rows

    con, filters = _open(warehouse, run, since, until, label, holdout)
    df = pareto_rows(con, filters, x=x, convex=convex, by=listed(by))
    if json_out:
        _rows_json(df, filters)
        return
    names = {r["config_id"]: _name(r) for r in df}
    rows = []
    for r in df:
        status = ("baseline (reference point)" if r.get("role") == "baseline" else
                  "unknown cost" if r["on_front"] is None else
                  "front" if r["on_front"] else "dominated")
        rows.append([_name(r), *[r[b] for b in by or []], _num(r["x"], "{:.4f}"),
                     _pct(r["solved"], r["valid"]),
                     _ci(r["ci_low"], r["ci_high"]), status,
                     ", ".join(names[d] for d in r["dominated_by"]) or "—",
                     "yes" if r["overlap"] else "no",
                     "" if r["convex"] is None else ("yes" if r["convex"] else "no")])
    _console().print(_table(f"Pareto front ({x} ↓, rate ↑)",
                            ["configuration", *(by or []), x, "rate", "ci95", "status",
                             "dominated by",
                             "ci overlap", "convex"], rows))


@app.command()
@warehouse_option
@filter_options(by=False)
@json_option()
def matrix(warehouse: Path,
           run: Many, since: str | None, until: str | None, label: Many, holdout: str,
           json_out: bool) -> None:
    """Model × harness grid, effects within rows and columns, and the interaction test.

    Example: trialhouse matrix --warehouse w.duckdb --run r1
    """
    from analysis.matrix import matrix as _matrix

    con, filters = _open(warehouse, run, since, until, label, holdout)
    m = _matrix(con, filters)
    if json_out:
        echo_json({"filters": filters.as_dict(), **m.as_dict()})
        return
    rate = {(r["model"], r["harness"]): r for r in m.grid.iter_rows(named=True)}
    rows = [[mod, *[_pct(rate[(mod, h)]["solved"], rate[(mod, h)]["valid"])
                    for h in m.harnesses]] for mod in m.models]
    console = _console()
    console.print(_table(f"Model × harness on {m.common_tasks} common tasks",
                         ["model", *m.harnesses], rows))
    console.print(m.verdict, highlight=False)
    _warnings(console, m.warnings)


@app.command()
@warehouse_option
@option("--disagreements", is_flag=True,
        help="List reviewer decisions that disagree with the grader.")
@filter_options()
@json_option()
def failures(warehouse: Path, disagreements: bool,
             run: Many, since: str | None, until: str | None, label: Many, holdout: str,
             by: Many, json_out: bool) -> None:
    """Outcome classes and first-decisive-wrong-choice categories with shares and lost spend.

    Example: trialhouse failures --warehouse w.duckdb --by task_class
    """
    from analysis import failures as f

    con, filters = _open(warehouse, run, since, until, label, holdout)
    if disagreements:
        df = f.review_disagreements(con, filters)
        if json_out:
            _frame_json(df, filters)
            return
        rows = [[_name(r), r["trial_id"], r["case_id"], r["outcome"], r["review"],
                 r["annotator"] or "", r["note"] or ""] for r in df.iter_rows(named=True)]
        _console().print(_table(f"Reviewer vs grader disagreements ({df.height})",
                                ["configuration", "trial", "case", "outcome", "review",
                                 "annotator", "note"], rows))
        return
    df = f.failures(con, filters, by=listed(by))
    if json_out:
        _frame_json(df, filters)
        return
    by = by or []
    rows = [[_name(r), *[r[b] for b in by], r["dimension"], r["value"], r["annotator"] or "",
             _pct(r["count"], r["total"]), _num(r["lost_spend_usd"], "{:.4f}")]
            for r in df.iter_rows(named=True)]
    _console().print(_table("Failures", ["configuration", *by, "kind", "class", "annotator",
                                         "count", "spend $"], rows))


@app.command()
@warehouse_option
@filter_options()
@json_option()
def familiarity(warehouse: Path,
                run: Many, since: str | None, until: str | None, label: Many, holdout: str,
                by: Many, json_out: bool) -> None:
    """Known vs unknown repository gap per configuration, interval clustered by repository.

    --by takes task_class, difficulty, language or subsystem.

    Example: trialhouse familiarity --warehouse w.duckdb --by task_class
    """
    from analysis.familiarity import familiarity as _fam

    con, filters = _open(warehouse, run, since, until, label, holdout)
    df = _fam(con, filters, by=listed(by))
    if json_out:
        _frame_json(df, filters)
        return
    by = by or []
    rows = [[_name(r), *[r[b] for b in by], _pct(r["known_solved"], r["known_valid"]),
             _pct(r["unknown_solved"], r["unknown_valid"]), _num(r["gap"], "{:+.3f}"),
             _ci(r["ci_low"], r["ci_high"], "{:+.3f}", bounds=(-1.0, 1.0)),
             f"{r['g_known']}+{r['g_unknown']}"]
            for r in df.iter_rows(named=True)]
    console = _console()
    console.print(_table("Known vs unknown repositories",
                         ["configuration", *by, "known", "unknown", "gap", "ci95 (by repo)",
                          "repos"], rows))
    if df.height and df["small_g"].any():
        _warnings(console, ["fewer than 10 repositories: the clustered interval is rough "
                            "(t with G−1 df); descriptive"])


@app.command()
@warehouse_option
@filter_options()
@json_option()
def latency(warehouse: Path,
            run: Many, since: str | None, until: str | None, label: Many, holdout: str,
            by: Many, json_out: bool) -> None:
    """Latency by phase (setup, agent, verification, total) and time to first edit: p50/p90/p95.

    Example: trialhouse latency --warehouse w.duckdb --by difficulty
    """
    from analysis.latency import PHASES
    from analysis.latency import latency as _latency

    con, filters = _open(warehouse, run, since, until, label, holdout)
    df = _latency(con, filters, by=listed(by))
    if json_out:
        _frame_json(df, filters)
        return
    by = by or []
    rows = []
    for r in df.iter_rows(named=True):
        rows.append([_name(r), *[r[b] for b in by], r["trials"],
                     *[("—" if not r[f"{p}_n"] else
                        f"{r[f'{p}_p50']:.1f}/{r[f'{p}_p90']:.1f}/{r[f'{p}_p95']:.1f}"
                        + ("" if r[f"{p}_n"] == r["trials"] else f" (n={r[f'{p}_n']})"))
                       for p in PHASES]])
    _console().print(_table("Latency p50/p90/p95 (s)", ["configuration", *by, "trials",
                                                         *PHASES], rows))
