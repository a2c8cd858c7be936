"""Visible and hidden checks apart: how often an agent passes the checks it could run, and the
ones it could not (docs/analysis.md, "visibility").

A criterion is visible when the agent could run it (``criteria.visible``; docs/runner.md,
"Visible and hidden checks"). Per configuration, over its valid trials of the cases that
have a visible check, on the final state: the trials that passed every visible check, the
trials that passed every hidden one (a failure already present on the initial commit,
outside the target layer, is not the agent's: layered grading's rule), each with its
Wilson interval, and the gap. Trials passing the visible checks but failing a hidden one
are the over-fitting signal; the exact sign test (McNemar's, on the discordant trials)
says whether they outnumber the reverse more than chance would.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, ClassVar

from analysis import scope, stats
from analysis.data import CONFIG_KEYS, trials_sql
from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb

_LAYERS_SQL = """
WITH g AS (
  SELECT t.config_id, t.trial_id, coalesce(k.visible, FALSE) AS visible,
         g.verdict = 'passed' OR (g.verdict = 'failed' AND g.baseline = 'failed' AND g.layer <> 'target') AS ok
  FROM {rel} t
  JOIN gradings g ON g.run_id = t.run_id AND g.trial_id = t.trial_id
  JOIN criteria k ON k.run_id = g.run_id AND k.case_id = g.case_id AND k.criterion_id = g.criterion_id
  WHERE t.valid AND g.final AND g.control IS NULL
),
per AS (
  SELECT config_id, trial_id,
         bool_and(ok) FILTER (WHERE visible) AS vis_ok, bool_and(ok) FILTER (WHERE NOT visible) AS hid_ok,
         count(*) FILTER (WHERE visible) AS vis_n, count(*) FILTER (WHERE visible AND ok) AS vis_passed,
         count(*) FILTER (WHERE NOT visible) AS hid_n, count(*) FILTER (WHERE NOT visible AND ok) AS hid_passed
  FROM g GROUP BY ALL HAVING count(*) FILTER (WHERE visible) > 0 AND count(*) FILTER (WHERE NOT visible) > 0
)
SELECT config_id, count(*) AS trials,
       count(*) FILTER (WHERE vis_ok) AS visible_pass, count(*) FILTER (WHERE hid_ok) AS hidden_pass,
       count(*) FILTER (WHERE vis_ok AND NOT hid_ok) AS visible_only,
       count(*) FILTER (WHERE hid_ok AND NOT vis_ok) AS hidden_only,
       sum(vis_n)::BIGINT AS visible_checks, sum(vis_passed)::BIGINT AS visible_checks_passed,
       sum(hid_n)::BIGINT AS hidden_checks, sum(hid_passed)::BIGINT AS hidden_checks_passed
FROM per GROUP BY config_id ORDER BY config_id
"""  # noqa: S608 -- {rel} is an internal relation name

_NAMES_SQL = """
SELECT config_id, any_value(variant), any_value(model), any_value(harness), any_value(harness_version),
       min(variant_order)
FROM {rel} GROUP BY config_id
"""  # noqa: S608 -- {rel} is an internal relation name


class Visibility(RowsResult):
    """Per configuration: visible and hidden checks passed, their gap, the discordant trials."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "trials": "Int64",
        "visible_pass": "Int64", "visible_rate": "Float64", "visible_ci_low": "Float64", "visible_ci_high": "Float64",
        "hidden_pass": "Int64", "hidden_rate": "Float64", "hidden_ci_low": "Float64", "hidden_ci_high": "Float64",
        "gap": "Float64", "visible_only": "Int64", "hidden_only": "Int64", "p": "Float64",
        "visible_checks": "Int64", "visible_checks_passed": "Int64",
        "hidden_checks": "Int64", "hidden_checks_passed": "Int64"}


def _row(rec: dict[str, Any], names: tuple) -> dict[str, Any]:
    n = rec["trials"]
    out: dict[str, Any] = dict(zip(CONFIG_KEYS, names[:len(CONFIG_KEYS)], strict=True))
    out["trials"] = n
    for side in ("visible", "hidden"):
        k = rec[f"{side}_pass"]
        lo, hi = stats.wilson(k, n)
        out.update({f"{side}_pass": k, f"{side}_rate": k / n, f"{side}_ci_low": lo, f"{side}_ci_high": hi})
    out["gap"] = out["visible_rate"] - out["hidden_rate"]
    out["visible_only"], out["hidden_only"] = rec["visible_only"], rec["hidden_only"]
    out["p"] = stats.sign_test(rec["visible_only"], rec["hidden_only"])["p"]
    for k in ("visible_checks", "visible_checks_passed", "hidden_checks", "hidden_checks_passed"):
        out[k] = rec[k]
    return out


def visibility(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> Visibility:
    """Visible against hidden checks per configuration (the cases with both; final states)."""
    filters = scope.resolve(con, filters)
    sql, params = trials_sql(filters, columns=[*CONFIG_KEYS, "variant_order", "run_id", "trial_id", "valid"])
    rel = f"vis_trials_{uuid.uuid4().hex}"  # internal name, no user input
    con.execute(f"CREATE TEMP TABLE {rel} AS {sql}", params)
    try:
        cur = con.execute(_LAYERS_SQL.format(rel=rel))
        cols = [d[0] for d in cur.description]
        recs = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
        names = {r[0]: r for r in con.execute(_NAMES_SQL.format(rel=rel)).fetchall()}
    finally:
        con.execute(f"DROP TABLE IF EXISTS {rel}")
    if not recs:
        raise AnalysisError("no visible check in the selection: a criterion with visible: true is one the agent "
                            "could run (docs/runner.md, 'Visible and hidden checks')")
    recs.sort(key=lambda r: (names[r["config_id"]][-1] is None, names[r["config_id"]][-1] or 0, r["config_id"]))
    rows = [_row(r, names[r["config_id"]]) for r in recs]  # in the manifest's variant order
    warnings = [f"{r['visible_only']} trial(s) of {fmt_name(r)} passed every visible check and failed a hidden one"
                for r in rows if r["visible_only"]]
    return Visibility(rows, [], warnings)


def fmt_name(row: dict[str, Any]) -> str:
    return str(row.get("variant") or row["config_id"][:12])
