"""Paired comparison of candidates against a baseline (docs/analysis.md, "compare").

``compare`` asks it of the warehouse: it chooses the sides and the task universe, stages
the compared trials and hands them to the one engine, ``analysis.paired.compare_relation``,
which ``compare_frame``/``compare_report`` (``analysis.runreport``: a trial frame, a runner
report.json) and the period comparison use too, so the CLI, the report and its headline
agree by construction. Which configurations are baselines and candidates is
``analysis.eligibility``'s rule. Result types are in ``analysis.comparison``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from analysis import scope
from analysis.comparison import Comparison, ComparisonSet, ConfigRef
from analysis.conditions import same_conditions
from analysis.eligibility import assess, default_baseline, eligibility_from_kinds
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by
from analysis.paired import compare_relation
from analysis.regrade import regrades_in
from analysis.resampling import SEED
from analysis.sides import sharing, sides, universe_of_sides
from analysis.tasks import evaluator_changes
from analysis.unscored import unscored

if TYPE_CHECKING:
    import duckdb
    import polars as pl

    from analysis.summary import Checked



def compare_report(report_json_path: str | Path, baseline: str | None = None,
                   candidates: Sequence[str] | None = None) -> ComparisonSet:
    """The same comparison straight from a runner ``report.json`` (``analysis.runreport``)."""
    from analysis.runreport import compare_report as from_report

    return from_report(report_json_path, baseline, candidates)


# Per-trial columns a comparison reads (names come from the configuration table).
_COLS = ["config_id", "case_id", "case_fingerprint", "outcome", "complete", "valid", "solved", "holdout",
         "duration_s", "cost_usd", "input_tokens", "output_tokens", "steps"]


def _run(con: duckdb.DuckDBPyConnection, rel: str, base: ConfigRef, cands: list[ConfigRef],
         holdout_mode: str, by_cols: list[str], seed: int = SEED) -> list[Comparison]:
    if not by_cols:
        return compare_relation(con, rel, base, cands, holdout_mode, seed=seed)
    cols = ", ".join(by_cols)  # from SLICE_COLUMNS (check_by)
    present: dict[tuple, set[str]] = {}
    for *values, cid in con.execute(
            f"SELECT DISTINCT {cols}, config_id FROM {rel} "  # noqa: S608
            f"ORDER BY {cols} NULLS LAST").fetchall():
        present.setdefault(tuple(values), set()).add(cid)
    out: list[Comparison] = []
    for key, cids in present.items():
        if base.config_id not in cids:
            continue
        here = [c for c in cands if c.config_id in cids]
        if here:
            out.extend(compare_relation(con, rel, base, here, holdout_mode,
                                        dict(zip(by_cols, key, strict=True)), seed))
    if not out:
        raise AnalysisError(f"no {' × '.join(by_cols)} slice holds trials of both the baseline "
                            "and a candidate")
    return out


def compare(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
            baseline: str | None = None, candidates: Sequence[str] | None = None,
            by: list[str] | str | None = None, seed: int = SEED, question: str = "compare",
            checked: Checked | None = None) -> ComparisonSet:
    """Candidates against a baseline over the warehouse, within one task universe.

    Default baseline: the manifest's first non-baseline variant; default candidates:
    every configuration that is not a baseline (``analysis.eligibility``) and shares a
    task with the baseline. A selection spanning several universes is narrowed to the
    named baseline's (``scope.choose_universe``) or refused with the universes listed.
    The compared configurations' trials (with ``rep``) are staged once in a temporary
    table; every block is aggregated in DuckDB and only per-task rows reach Python. With
    ``by``, each slice value gets its own comparisons (``Comparison.slice``), each equal
    to an unsliced comparison of that slice's trials; slices where the baseline or a
    candidate has no trial are skipped, and Holm adjusts within a slice. ``seed`` seeds
    the bootstrap intervals of the paired deltas; ``question`` names the asking command in
    messages (``plan`` asks through here). ``checked``: what the selection's checks found
    (``Summary.checked``; a report has them), used unless the comparison narrows the
    selection to one universe (then its gates and unscored cases are its own).
    """
    from analysis.data import config_list, trials_sql

    selection = scope.resolve(con, filters)
    filters, notes, universe, cfg_rows = universe_of_sides(con, selection, baseline, candidates,
                                                            question)
    known = checked if filters is selection else None
    table = config_list(cfg_rows)
    roles = eligibility_from_kinds({r["config_id"]: r.get("agent_kind") for r in cfg_rows})
    base, cands, excluded = sides(table, roles, baseline, candidates,
                                   None if baseline else default_baseline(cfg_rows, roles))
    cands, mixed = same_conditions(con, base, cands, bool(candidates), filters.pool_conditions)
    by_cols = check_by(by)
    ids = [base.config_id, *[c.config_id for c in cands]]
    sql, params = trials_sql(filters, columns=[*_COLS, *by_cols], with_rep=True,
                             config_ids=ids)
    rel = f"cmp_trials_{uuid.uuid4().hex}"  # internal name, no user input
    con.execute(f"CREATE TEMP TABLE {rel} AS {sql}", params)
    try:
        changed = evaluator_changes(con, rel, filters.allow_evaluator_change)
        cands, left_out = sharing(con, rel, base, cands, bool(candidates))
        comps = _run(con, rel, base, cands, filters.holdout, by_cols, seed)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {rel}")
    simulated = frozenset(r["config_id"] for r in cfg_rows if r.get("simulated"))
    gated = {cid: list(e.reasons) for cid, e in assess(
        con, filters, ids, known.gates if known else None).items() if e.reasons}
    gone = known.unscored if known else unscored(con, filters)
    said = [f"INELIGIBLE {cid[:12]}: {'; '.join(why)}" for cid, why in sorted(gated.items())]
    return ComparisonSet(base, cands, comps, "requested" if baseline else "default", excluded,
                         by_cols, simulated, universe,
                         [*changed, *mixed, *said, *notes, *left_out, *scope.coverage_notes(con, filters),
                          *gone.notes(), *regrades_in(con, filters).notes()], gated)


def compare_frame(df: pl.DataFrame, baseline: str | None = None,
                  candidates: Sequence[str] | None = None, holdout_mode: str = "include"
                  ) -> ComparisonSet:
    """Compare on a trial frame (``analysis.runreport.compare_frame``): the same SQL as
    ``compare`` in an in-memory DuckDB, through the same valid-trial rule."""
    from analysis.runreport import compare_frame as from_frame

    return from_frame(df, baseline, candidates, holdout_mode)
