"""The per-configuration table: trial-level Wilson, task-level clustered mean, cost, latency.

Aggregation runs in DuckDB SQL (fast at millions of trials, no DataFrame library needed
on the CLI path); the result is small and becomes a polars DataFrame on demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analysis import scope, stats, tasks
from analysis.checks import staged_counts
from analysis.containment import containment_notes
from analysis.data import CONFIG_KEYS, NAME_KEYS, PAIRS_SQL, TRIALS, config_names, slice_sql
from analysis.errors import AnalysisError
from analysis.filters import UNIVERSE_SQL, Filters, check_by, no_match, slice_names
from analysis.flags import flag_counts
from analysis.formatting import label
from analysis.pre_existing import pre_existing
from analysis.sanity import SanityWarning, sanity
from analysis.scope import coverage_notes
from analysis.tasks import Staged, TaskUniverse
from analysis.unscored import unscored

if TYPE_CHECKING:
    import duckdb
    import polars as pl

    from analysis.checks import TrialCounts
    from analysis.eligibility import Gates
    from analysis.pre_existing import PreExisting
    from analysis.unscored import Unscored

SMALL_TASKS = 10

ROW_KEYS = [
    *CONFIG_KEYS, "universe", "trials", "incomplete", "valid", "solved", "rate", "ci_low", "ci_high",
    "infra", "invalid", "tasks", "task_mean", "task_ci_low", "task_ci_high", "med_steps",
    "med_tokens", "med_duration_s", "cost_usd", "cost_known", "cost_coverage",
    "cost_per_accepted", "cost_p50", "cost_p90", "cost_p95", "latency_p50", "latency_p90",
    "latency_p95", "simulated", "flags", "flagged_trials",
]

JSON_ALIASES = {"cost_per_accepted": "cost_per_solved"}
"""Keys a row's JSON form repeats under an older name, right after the key (docs/analysis.md):
``cost_per_solved`` was this figure's name in ``summarize --json``/``--csv`` and report.json."""


def with_aliases(row: dict) -> dict:
    """A row as JSON writes it: each key of ``JSON_ALIASES`` followed by its old name."""
    out = {}
    for key, value in row.items():
        out[key] = value
        if key in JSON_ALIASES:
            out[JSON_ALIASES[key]] = value
    return out


@dataclass
class Checked:
    """What a summary's checks found about its whole selection, kept for callers that show
    them too (the report reads them here instead of asking again)."""

    gates: dict[str, Gates]  # every configuration of the selection (analysis.eligibility)
    unscored: Unscored
    sanity: list[SanityWarning]
    pre_existing: PreExisting | None = None


@dataclass
class Summary:
    """Rows (one per configuration × task universe [× slice]), the task set of each
    universe (``universes``), and what was left out and why."""

    rows: list[dict]
    by: list[str] = field(default_factory=list)
    excluded_cases: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    universes: list[TaskUniverse] = field(default_factory=list)
    eligibility: list[dict] = field(default_factory=list)  # Eligibility.as_dict per config
    unscored: dict | None = None  # analysis.tasks.Unscored.as_dict
    pre_existing: dict | None = None  # analysis.pre_existing.PreExisting.as_dict
    sanity: list[dict] = field(default_factory=list)  # analysis.sanity warnings
    task_versions: list[dict] = field(default_factory=list)  # cases with 2+ evaluators
    checked: Checked | None = None  # with checks: what they found (not part of the JSON)

    @property
    def table(self) -> pl.DataFrame:
        import polars as pl

        at = len(CONFIG_KEYS) + 1  # the slice columns follow the configuration and universe
        keys = [*ROW_KEYS[:at], *self.by, *ROW_KEYS[at:]]
        return pl.DataFrame(self.rows, schema=None, orient="row", infer_schema_length=None
                            ).select(keys) if self.rows else pl.DataFrame(
                                {k: [] for k in keys})

    def as_dict(self) -> dict:
        from analysis.jsonout import clean

        return clean({"rows": [with_aliases(r) for r in self.rows],
                      "excluded_cases": self.excluded_cases,
                      "universes": [u.as_dict() for u in self.universes],
                      "eligibility": self.eligibility, "unscored": self.unscored,
                      "pre_existing": self.pre_existing,
                      "sanity": self.sanity, "task_versions": self.task_versions,
                      "warnings": self.warnings})

    @property
    def ineligible(self) -> dict[str, list[str]]:
        """config_id → reasons, for the candidates that are ineligible."""
        return {e["config_id"]: e["reasons"] for e in self.eligibility if e["reasons"]}

    def records(self) -> list[dict]:
        """Flat rows for CSV (the JSON rows)."""
        return self.as_dict()["rows"]


_PER_CONFIG = """
       count(p) AS tasks, list(p ORDER BY p) FILTER (WHERE p IS NOT NULL) AS task_rates,
       sum(n_incomplete) AS incomplete,
       sum(n_complete) FILTER (WHERE common) AS trials,
       sum(n_valid) FILTER (WHERE common) AS valid,
       sum(n_solved) FILTER (WHERE common) AS solved,
       sum(n_infra) FILTER (WHERE common) AS infra,
       sum(n_invalid) FILTER (WHERE common) AS invalid,
       fsum(cost_sum) FILTER (WHERE common) AS cost_sum,
       sum(cost_known) FILTER (WHERE common) AS cost_known"""
"""Per configuration [and slice]: task-level mean and spread, incomplete trials, and the
trial counts and known cost over common tasks (what the trial-level columns need)."""

_TASKS_PER_CONFIG_SQL = """
SELECT config_id, universe{by_cols},{per_config}
FROM (
  SELECT config_id, universe{by_cols}, case_id, NOT bool_or(outside) AS common,
         sum(n_incomplete) AS n_incomplete, sum(n_complete) AS n_complete,
         sum(n_valid) AS n_valid, sum(n_solved) AS n_solved, sum(n_infra) AS n_infra,
         sum(n_invalid) AS n_invalid, fsum(cost_sum) AS cost_sum,
         sum(cost_known) AS cost_known,
         CASE WHEN NOT bool_or(outside) AND sum(n_valid) > 0
              THEN sum(n_solved) / sum(n_valid) END AS p
  FROM (SELECT s.*, o.run_id IS NOT NULL AS outside
        FROM task_cells s
        LEFT JOIN task_outside o ON o.run_id = s.run_id AND o.case_id = s.case_id)
  GROUP BY ALL
)
GROUP BY ALL
"""

_TASKS_PER_CONFIG_ONE_RUN_SQL = """
SELECT config_id, universe{by_cols},{per_config}
FROM (
  SELECT *, CASE WHEN common AND n_valid > 0 THEN n_solved / n_valid END AS p
  FROM (SELECT *, {common} AS common FROM task_cells s)
)
GROUP BY ALL
"""
"""The same when every universe is one run (each row is one task already)."""

_EXCLUDED_SQL = """
SELECT s.config_id, s.universe, list(DISTINCT s.case_id ORDER BY s.case_id) AS case_ids
FROM task_cells s SEMI JOIN task_outside o ON o.run_id = s.run_id AND o.case_id = s.case_id
WHERE s.n_complete > 0
GROUP BY s.config_id, s.universe
"""



def _holistic_sql(by: list[str], where: str, joins: str, exclude: bool,
                  universe: bool) -> str:
    """The one pass over trial rows: medians and quantiles need the values themselves.
    ``universe`` groups by task universe too (needed when a configuration spans several)."""
    by_sel = "".join(f',\n    {slice_sql(b)} AS "{b}"' for b in by)  # fixed column map
    outside = """
  AND NOT EXISTS (SELECT 1 FROM task_outside o
                  WHERE o.run_id = t.run_id AND o.raw_case_id = t.case_id)""" if exclude else ""
    return f"""
SELECT
    t.config_id, {UNIVERSE_SQL if universe else 'NULL'} AS universe{by_sel},
    median(t.steps) FILTER (WHERE t.valid) AS med_steps,
    median(t.input_tokens + t.output_tokens) FILTER (WHERE t.valid) AS med_tokens,
    quantile_cont(t.cost_usd, [0.5, 0.9, 0.95]) AS cost_q,
    quantile_cont(t.duration_s, [0.5, 0.9, 0.95]) AS lat_q,
    sum(t.patch_flags) AS flags,
    count(*) FILTER (WHERE t.patch_flags > 0) AS flagged
FROM {TRIALS} t{joins}
WHERE t.complete AND {where}{outside}
GROUP BY ALL
"""  # noqa: S608 -- fixed fragments only; values are parameters


_HOLISTIC_FROM_ROLLUP_SQL = """
SELECT run_id, config_id, med_steps, med_tokens,
       [cost_p50, cost_p90, cost_p95] AS cost_q,
       [latency_p50, latency_p90, latency_p95] AS lat_q
FROM config_rollup
WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
"""
"""The same medians and quantiles, stored per (run, configuration) when trials are written:
exact when the summary's trials are each configuration's complete trials of one run."""


def _row(rec: dict) -> dict:
    valid, solved = rec["valid"], rec["solved"]
    lo, hi = stats.wilson(solved, valid)
    trials, known = rec["trials"], rec["cost_known"]
    cost = rec["cost_sum"] if known == trials else None
    if cost is None:
        per_accepted = None
    else:
        per_accepted = cost / solved if solved else float("inf")
    tasks = rec["tasks"]
    # The task rates come back as a list and are summed exactly (math.fsum): a parallel
    # avg() in the database differs in the last bit from run to run, and one question
    # must give one number (the report's summary equals summarize's).
    ci = stats.task_mean_ci(rec["task_rates"] or [])
    tmean, tlo, thi = ci["mean"], ci["ci_low"], ci["ci_high"]
    if tlo is not None and thi is not None:
        # A mean of task rates lies in [0, 1]: the t interval is cut at the bounds here, once,
        # so the terminal, the report, --json and the notebooks give one interval
        # (docs/design.md, "Intervals are shown within the possible range").
        tlo, thi = max(0.0, tlo), min(1.0, thi)
    cq = rec.get("cost_q") if known else None
    lq = rec.get("lat_q")
    return {
        "trials": trials, "incomplete": rec["incomplete"], "valid": valid, "solved": solved,
        "rate": solved / valid if valid else None, "ci_low": lo, "ci_high": hi,
        "infra": rec["infra"], "invalid": rec["invalid"], "tasks": tasks,
        "task_mean": tmean, "task_ci_low": tlo, "task_ci_high": thi,
        "med_steps": rec.get("med_steps"), "med_tokens": rec.get("med_tokens"),
        # The median wall time is the p50 of all complete trials (docs/analysis.md).
        "med_duration_s": lq[0] if lq else None, "cost_usd": cost, "cost_known": known,
        "cost_coverage": known / trials if trials else None, "cost_per_accepted": per_accepted,
        "cost_p50": cq[0] if cq else None, "cost_p90": cq[1] if cq else None,
        "cost_p95": cq[2] if cq else None,
        "latency_p50": lq[0] if lq else None, "latency_p90": lq[1] if lq else None,
        "latency_p95": lq[2] if lq else None, "simulated": bool(rec["simulated"]),
        # Patch-inspection flags over the same trials; null when none was inspected.
        "flags": None if rec.get("flags") is None else int(rec["flags"]),
        "flagged_trials": None if rec.get("flags") is None else int(rec["flagged"]),
    }


def _per_config(con: duckdb.DuckDBPyConnection, st: Staged, by_list: str) -> list[dict]:
    """Per configuration × universe [× slice] with a complete trial on a common task."""
    per_config = (_TASKS_PER_CONFIG_ONE_RUN_SQL.format(
        by_cols=by_list, per_config=_PER_CONFIG, common=st.common)
        if st.one_run else _TASKS_PER_CONFIG_SQL.format(by_cols=by_list, per_config=_PER_CONFIG))
    cur = con.execute(per_config)
    cols = [d[0] for d in cur.description]
    return [rec for rec in (dict(zip(cols, r, strict=True)) for r in cur.fetchall())
            if rec["trials"]]


def _holistic(con: duckdb.DuckDBPyConnection, st: Staged, filters: Filters, by_cols: list[str],
              from_trials: bool) -> dict[tuple, dict]:
    """Medians, quantiles and flags per configuration [× universe] [× slice], keyed by
    (config_id, universe or None, *slice): from ``config_rollup`` when the selection is
    whole runs (one per configuration, every task common), else one pass over the trials."""
    whole_runs = not (by_cols or filters.needs_cases or filters.needs_runs or st.n_outside
                      or filters.needs_trials or from_trials) and all(
        len(r) == 1 for r in st.config_runs.values())
    if whole_runs:
        pairs = {(next(iter(rs)), cid) for cid, rs in st.config_runs.items()}
        cur = con.execute(_HOLISTIC_FROM_ROLLUP_SQL, [sorted({r for r, _ in pairs})])
        out: dict[tuple, dict] = {
            (r[1], None): dict(zip(["med_steps", "med_tokens", "cost_q", "lat_q"], r[2:],
                                   strict=True))
            for r in cur.fetchall() if r[:2] in pairs}
        for cid, c in flag_counts(con, filters).items():  # whole runs: the same trials
            out.setdefault((cid, None), {}).update(flags=c["flags"], flagged=c["flagged"])
        return out
    where, params = filters.where()
    per_universe = not st.one_universe_per_config
    joins = tasks.joins(filters, by_cols, universe=per_universe)
    sql = _holistic_sql(by_cols, where, joins, bool(st.n_outside), per_universe)
    cur = con.execute(sql, params)
    n = 2 + len(by_cols)
    hcols = [d[0] for d in cur.description][n:]
    return {r[:n]: dict(zip(hcols, r[n:], strict=True)) for r in cur.fetchall()}


def _nothing_common(st: Staged) -> str | None:
    """Why there is no row although complete trials were selected: no task is common to the
    configurations of their universe (each ran other tasks), so nothing can be compared."""
    complete = sum(c for c, _, _ in st.trial_counts.values())
    empty = [u for u in st.universes if u.common == 0]
    if not complete or not empty:
        return None
    named = "; ".join(f"{u.name}: {len(u.config_ids):,} configuration(s) over {u.tasks:,} task(s)"
                      for u in empty[:3]) + (f"; and {len(empty) - 3} more" if len(empty) > 3 else "")
    return (f"{complete:,} complete trial(s) in {len(st.config_runs):,} configuration(s) match, but no "
            f"task is common to all the configurations of their task universe ({named}); summarize "
            "compares configurations on the tasks they all ran (docs/analysis.md, \"Task universes and the task set\"): "
            "select configurations that share tasks (--config, --model, --run)")


def _warnings(rows: list[dict], excluded: list[dict]) -> list[str]:
    out = [f"{label(ex)} ({ex['config_id'][:12]}): "
           f"{len(ex['case_ids'])} task(s) outside the common set of {ex['universe']} excluded"
           for ex in excluded]
    for row in rows:
        if row["tasks"] < SMALL_TASKS:
            out.append(f"{row['config_id'][:12]} ({row['variant'] or row['model']}): "
                       f"{row['tasks']} task(s): descriptive sample, intervals are rough")
        if row["cost_known"] < row["trials"]:
            out.append(f"{row['config_id'][:12]}: cost known for {row['cost_known']}/"
                       f"{row['trials']} trials; total cost and cost per solved are unknown")
    return out


def _sort_key(rec: dict, by_cols: list[str]) -> tuple:
    return (*((rec[k] is None, rec[k] or "") for k in CONFIG_KEYS[2:]), rec["config_id"],
            rec["universe"], *((rec[b] is None, rec[b] or "") for b in by_cols))


def summarize(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
              by: list[str] | str | None = None, full: bool = True,
              from_trials: bool = False, checks: bool = True) -> Summary:
    """Per-configuration summary on common tasks (see docs/analysis.md).

    Tasks are common within a *task universe* (``analysis.tasks``): configurations from
    different sources (our runs, a runs-jsonl export, an Inspect log) sit side by side,
    each on the tasks it shares with the configurations of its own universe; a row is one
    configuration in one universe. ``full=False`` leaves the medians and quantiles null
    (cheaper; for callers that need only counts and cost). ``from_trials`` counts tasks
    from the trials instead of ``task_rollup`` and computes the medians from them instead
    of ``config_rollup`` (same result; the tests compare the two). ``checks`` adds
    eligibility (``analysis.eligibility.assess``), the unscored cases and the seed's
    sanity checks (``analysis.sanity``); callers that only need the numbers skip them.
    """
    filters = scope.resolve(con, filters)
    by_cols = check_by(by, conditions=True)
    with tasks.staged(con, filters, by_cols, from_trials) as st:
        recs = _per_config(con, st, slice_names(by_cols))
        pairs = sorted((run, cid) for cid, runs in st.config_runs.items() for run in runs)
        names = config_names(con, PAIRS_SQL, [[r for r, _ in pairs], [c for _, c in pairs]])
        changed = tasks.versions(con)
        counted = staged_counts(con, filters, st) if checks else None
        found = (sanity(con, filters, staged=True, counts=counted,
                        one_cell=st.one_run and not by_cols) if checks else [])
        excluded_ids = ({(cid, u): ids for cid, u, ids in con.execute(_EXCLUDED_SQL).fetchall()}
                        if st.n_outside else {})
        holistic = _holistic(con, st, filters, by_cols, from_trials) if full else {}
    excluded = [{"config_id": cid, **{k: names[cid][k] for k in CONFIG_KEYS[1:]},
                 "universe": u, "case_ids": excluded_ids[(cid, u)]} for cid, u in sorted(excluded_ids)]
    per_universe = not st.one_universe_per_config
    for rec in recs:
        rec["incomplete"] = int(rec["incomplete"] or 0)
        key = (rec["config_id"], rec["universe"] if per_universe else None,
               *(rec[b] for b in by_cols))
        rec.update(holistic.get(key, {}))
        rec.update({k: names[rec["config_id"]][k] for k in NAME_KEYS})
    recs = sorted((rec for rec in recs if rec["config_id"] is not None),
                  key=lambda r: _sort_key(r, by_cols))
    if not recs:
        common = _nothing_common(st)
        raise AnalysisError(common) if common else no_match(filters, "complete trials")
    rows = [{**{k: rec[k] for k in CONFIG_KEYS}, "universe": rec["universe"],
             **{b: rec[b] for b in by_cols}, **_row(rec)} for rec in recs]
    out = Summary(rows=rows, by=by_cols, excluded_cases=excluded,
                  warnings=[*coverage_notes(con, filters), *containment_notes(con, filters),
                            *tasks.version_warning(changed),
                            *_warnings(rows, excluded)],
                  universes=st.universes, task_versions=[c.as_dict() for c in changed])
    return _checked(con, filters, out, found, counted or {}) if checks else out


def _checked(con: duckdb.DuckDBPyConnection, filters: Filters, out: Summary,
             found: list[SanityWarning], counted: dict[str, TrialCounts]) -> Summary:
    """Add eligibility, the unscored cases and the sanity checks (their notes first); the
    gates come from the counts the sanity checks read (one pass for both)."""
    from analysis.eligibility import assess, gates

    selection = gates(con, filters, counted)
    roles = assess(con, filters, {r["config_id"] for r in out.rows}, selection)
    out.eligibility = [roles[cid].as_dict() for cid in sorted(roles)]
    gone = unscored(con, filters)
    pre = pre_existing(con, filters)
    out.checked = Checked(selection, gone, found, pre)
    out.unscored = gone.as_dict()
    out.pre_existing = pre.as_dict()
    out.sanity = [w.as_dict() for w in found]
    ineligible = [f"INELIGIBLE {cid[:12]}: " + "; ".join(e.reasons)
                  for cid, e in sorted(roles.items()) if e.reasons]
    baseline_notes = [f"baseline {cid[:12]} (never ineligible): " + "; ".join(e.notes)
                      for cid, e in sorted(roles.items()) if e.notes]
    out.warnings = [*gone.notes(), *pre.notes(), *ineligible, *baseline_notes,
                    *(w.message for w in found), *out.warnings]
    return out
