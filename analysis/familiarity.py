"""Known vs unknown repositories: the pass-rate gap per configuration, clustered by repository."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, ClassVar

from analysis import scope, stats
from analysis.data import COLUMN_SQL, CONFIG_KEYS, TRIALS
from analysis.errors import AnalysisError
from analysis.filters import Filters, case_label, check_by, no_match
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb

SMALL_G = 10


class Familiarity(RowsResult):
    """Per configuration [× slice]: the known − unknown gap, clustered by repository."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "known_valid": "Int64", "known_solved": "Int64",
        "known_rate": "Float64", "unknown_valid": "Int64", "unknown_solved": "Int64",
        "unknown_rate": "Float64", "gap": "Float64", "se": "Float64", "ci_low": "Float64",
        "ci_high": "Float64", "g_known": "Int64", "g_unknown": "Int64", "g": "Int64",
        "small_g": "Boolean"}
NO_LABELS = (
    "no valid trial on a task labelled familiarity known or unknown; supply the labels: a "
    "labels file at ingest (trialhouse ingest PATH --labels labels.yaml, mapping each task "
    "or repository to familiarity: known|unknown), a 'familiarity' field on each runs-jsonl "
    "line, or 'familiarity' on the manifest's cases")


def task_label(key: str) -> str:
    """A task label however it arrived: the case column, the case's labels_json, or the
    trial's labels (a foreign line's extra field, e.g. ``familiarity`` on a runs-jsonl
    line, is kept with the trial)."""
    return (f"coalesce({case_label(key)}, json_extract_string(t.labels_json, '$.{key}'), "
            f"json_extract_string(t.labels_json, '$.extra.{key}'))")


# Slicing by these would split known from unknown (or a cluster from itself).
NOT_SLICEABLE = ("familiarity", "repository")

_SQL = """
WITH f AS (
  SELECT t.config_id,
         {variant} AS variant, {model} AS model, {harness} AS harness,
         {harness_version} AS harness_version,
         coalesce({repository}, 'case:' || t.case_id) AS cluster,
         {familiarity} = 'known' AS known,
         t.solved AS y{by_sel}
  FROM {trials} t
  LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
  LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
  LEFT JOIN runs r ON r.run_id = t.run_id
  WHERE {where}
    AND t.valid
    AND {familiarity} IN ('known', 'unknown')
)
SELECT config_id{by_cols}, cluster, known, count(*) AS n, count(*) FILTER (WHERE y) AS s,
       min(variant), min(model), min(harness), min(harness_version)
FROM f GROUP BY ALL
ORDER BY config_id{by_cols}, cluster, known
"""  # noqa: S608 -- fixed fragments only; values are parameters


def familiarity(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                by: list[str] | str | None = None) -> Familiarity:
    """Per configuration [× slice]: known rate − unknown rate over valid trials, CR1 by
    repository.

    Tasks with no familiarity label are left out; a task without a repository is its own
    cluster. DuckDB reduces the trials to (cluster, known) cells; the regression on a 0/1
    indicator needs nothing more (``stats.cluster_diff_cells``). ``by`` may name task
    attributes other than familiarity and repository.
    """
    filters = scope.resolve(con, filters)
    by_cols = check_by(by)
    bad = [b for b in by_cols if b in NOT_SLICEABLE]
    if bad:
        raise AnalysisError(f"--by {bad[0]}: familiarity compares known with unknown "
                            "repositories; slice by task_class, difficulty, language or "
                            "subsystem instead")
    where, params = filters.where()
    sql = _SQL.format(where=where, trials=TRIALS, familiarity=task_label("familiarity"),
                      repository=task_label("repository"),
                      by_sel="".join(f", {COLUMN_SQL[b]} AS {b}" for b in by_cols),
                      by_cols="".join(f", {b}" for b in by_cols),
                      **{k: COLUMN_SQL[k] for k in CONFIG_KEYS[1:]})
    cells = con.execute(sql, params).fetchall()
    if not cells:
        count_sql = ("SELECT count(*) FROM trials t LEFT JOIN cases c ON c.run_id = t.run_id "  # noqa: S608
                     "AND c.case_id = t.case_id LEFT JOIN runs r ON r.run_id = t.run_id "
                     "WHERE " + where)
        if not con.execute(count_sql, params).fetchall()[0][0]:
            raise no_match(filters)
        raise AnalysisError(NO_LABELS)
    nkey = 1 + len(by_cols)
    rows = []
    for key, group in itertools.groupby(cells, key=lambda r: r[:nkey]):
        part = list(group)
        names = [min((r[nkey + 4 + i] for r in part if r[nkey + 4 + i] is not None),
                     default=None) for i in range(4)]
        cl = [(r[nkey], bool(r[nkey + 1]), r[nkey + 2], r[nkey + 3]) for r in part]
        res = stats.cluster_diff_cells(cl)
        kn = sum(n for _, x, n, _ in cl if x)
        ks = sum(s for _, x, _, s in cl if x)
        un = sum(n for _, x, n, _ in cl if not x)
        us = sum(s for _, x, _, s in cl if not x)
        kr = ks / kn if kn else None
        ur = us / un if un else None
        rows.append({"config_id": key[0], **dict(zip(CONFIG_KEYS[1:], names, strict=True)),
                     **dict(zip(by_cols, key[1:], strict=True)),
                     "known_valid": kn, "known_solved": ks, "known_rate": kr,
                     "unknown_valid": un, "unknown_solved": us, "unknown_rate": ur,
                     "gap": kr - ur if kr is not None and ur is not None else None,
                     "se": res["se"], "ci_low": res["ci_low"], "ci_high": res["ci_high"],
                     "g_known": len({c for c, x, _, _ in cl if x}),
                     "g_unknown": len({c for c, x, _, _ in cl if not x}), "g": res["g"],
                     "small_g": res["g"] < SMALL_G})
    keys = ["model", "harness", "harness_version", "config_id", *by_cols]
    rows.sort(key=lambda r: tuple((r[k] is None, r[k] if r[k] is not None else "") for k in keys))
    return Familiarity(rows, by_cols, _warnings(rows))


def _warnings(rows: list[dict]) -> list[str]:
    """A configuration with no gap because it ran on one class only; few repositories."""
    warnings = []
    one_sided = [r for r in rows if r["known_valid"] == 0 or r["unknown_valid"] == 0]
    if one_sided:
        listed = ", ".join(r["variant"] or r["config_id"][:12] for r in one_sided[:4])
        warnings.append(
            f"{len(one_sided)} of {len(rows)} configuration(s) have valid trials on only known "
            f"or only unknown tasks, so no gap ({listed}{' …' if len(one_sided) > 4 else ''}): "
            "the gap compares one configuration with itself; run it on tasks of both classes")
    if any(r["small_g"] for r in rows):
        warnings.append(f"fewer than {SMALL_G} repositories: the clustered interval is rough "
                        "(t with G−1 df); treat the gap as descriptive")
    return warnings
