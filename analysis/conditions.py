"""Named conditions: what a configuration ran under (``cache: cold``, ``tools: node-22``).

A run or a variant declares them in the manifest; they are part of the configuration id
when any is declared, so trials under different values are never pooled in a per-
configuration figure (docs/rollout.md, "Named conditions"). What remains is the paired
comparison: a baseline under ``cache: cold`` against a candidate under ``cache: warm``
would mix the conditions' effect with the configurations'. ``same_conditions`` leaves such
a candidate out (with a note) when it was not named, refuses it when it was, and pairs it
anyway, labelled, with ``Filters.pool_conditions`` (``--pool-conditions``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from analysis.errors import AnalysisError

if TYPE_CHECKING:
    import duckdb

    from analysis.comparison import ConfigRef

_SQL = """
SELECT config_id, any_value(conditions_json) FROM configs
WHERE config_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY config_id
"""


def conditions_of(con: duckdb.DuckDBPyConnection, config_ids: list[str]) -> dict[str, dict[str, str]]:
    """Each configuration's named conditions ({} when none was declared)."""
    rows = con.execute(_SQL, [list(config_ids)]).fetchall()
    found = {cid: json.loads(text) if text else {} for cid, text in rows}
    return {cid: found.get(cid, {}) for cid in config_ids}


def describe(conditions: dict[str, str]) -> str:
    """``cache=cold, tools=node-22``, or "no named conditions"."""
    return ", ".join(f"{k}={v}" for k, v in sorted(conditions.items())) or "no named conditions"


def same_conditions(con: duckdb.DuckDBPyConnection, base: ConfigRef, cands: list[ConfigRef],
                    named: bool, pool: bool) -> tuple[list[ConfigRef], list[str]]:
    """The candidates a paired comparison may pair with ``base``, and what it says about
    the others (see the module docstring)."""
    found = conditions_of(con, [base.config_id, *[c.config_id for c in cands]])
    mine = found[base.config_id]
    other = [c for c in cands if found[c.config_id] != mine]
    if not other:
        return cands, []

    def label(c: ConfigRef) -> str:
        return f"{c.variant or c.config_id[:12]} ({describe(found[c.config_id])})"

    listing = ", ".join(label(c) for c in other)
    where = f"the baseline {label(base)}"
    if pool:
        return cands, [f"MIXED CONDITIONS (--pool-conditions): {listing} paired with {where}: "
                       "each difference mixes the conditions' effect with the configurations'"]
    if named:
        raise AnalysisError(
            f"{listing} ran under other named conditions than {where}: a paired comparison "
            "would mix the conditions' effect with the configurations'; compare configurations "
            "under the same conditions, or give --pool-conditions to pair them anyway (labelled)")
    kept = [c for c in cands if c not in other]
    if not kept:
        raise AnalysisError(
            f"no candidate ran under the conditions of {where} ({listing} did not): name a "
            "baseline under the same conditions, or give --pool-conditions to pair them anyway")
    return kept, [f"{len(other)} candidate(s) ran under other named conditions than {where} "
                  f"and are left out of the comparison and the Holm family: {listing} "
                  "(--pool-conditions pairs them anyway, labelled)"]
