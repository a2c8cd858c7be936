"""Who a comparison compares: the baseline, the candidates, and the universe they share.

``sides`` resolves the baseline and the candidates (the Holm family) by the rule of
``analysis.eligibility``; ``universe_of_sides`` narrows the selection to one task
universe (the named baseline's), and ``sharing`` leaves out (or, when named, refuses) a
candidate that shares no task with the baseline, so a comparison never has zero pairs.
``compare``, ``compare_frame`` and ``plan`` use them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from analysis import scope
from analysis.comparison import ConfigRef
from analysis.data import resolve_config
from analysis.eligibility import Eligibility
from analysis.errors import AnalysisError
from analysis.filters import Filters, no_match

if TYPE_CHECKING:
    import duckdb


def sides(configs: list[dict], roles: Mapping[str, Eligibility], baseline: str | None,
           candidates: Sequence[str] | None, default: str | None
           ) -> tuple[ConfigRef, list[ConfigRef], list[ConfigRef]]:
    """Resolve baseline, candidates (the Holm family) and the baselines left out of it."""
    if len(configs) < 2:
        raise AnalysisError("only one configuration in the selected trials: nothing to compare")

    def is_baseline(cid: str) -> bool:
        return cid in roles and roles[cid].is_baseline

    if baseline:
        base = ConfigRef.of(resolve_config(configs, baseline))
    else:
        first = default or next((c["config_id"] for c in configs
                                 if not is_baseline(c["config_id"])), configs[0]["config_id"])
        base = ConfigRef.of(resolve_config(configs, first))
    if candidates:
        cands = [ConfigRef.of(resolve_config(configs, name)) for name in candidates]
        for c in cands:
            if is_baseline(c.config_id):
                raise AnalysisError(
                    f"{c.variant or c.config_id[:12]} is a baseline (agent kind "
                    f"{roles[c.config_id].agent_kind}): a reference point, never a candidate; "
                    "name it with --baseline to compare against it")
    else:
        cands = [ConfigRef.of(r) for r in configs if not is_baseline(r["config_id"])]
    cands = [c for c in cands if c.config_id != base.config_id]
    excluded = [ConfigRef.of(r) for r in configs
                if is_baseline(r["config_id"]) and r["config_id"] != base.config_id]
    if not cands:
        if candidates:
            raise AnalysisError("the candidate is the baseline; name a different --candidate")
        raise AnalysisError("no candidate: every other configuration is a baseline (null or "
                            "reference agent), and baselines are never candidates")
    return base, cands, excluded


_SHARED_SQL = """
SELECT c.config_id, count(DISTINCT c.case_id) FROM {rel} c
WHERE c.complete AND c.config_id <> ?
  AND c.case_id IN (SELECT case_id FROM {rel} WHERE config_id = ? AND complete)
GROUP BY 1
"""  # noqa: S608 -- {rel} is an internal relation name


def universe_of_sides(con: duckdb.DuckDBPyConnection, filters: Filters, baseline: str | None,
                      candidates: Sequence[str] | None, question: str = "compare"
                      ) -> tuple[Filters, list[str], str | None, list[dict]]:
    """One task universe for the comparison (``scope.choose_universe``): the named
    baseline's (or first named candidate's); a named side outside it is an error. Also
    returns the ``config_rows`` of the narrowed selection. ``question`` names the command
    in the messages (``plan`` pairs configurations as ``compare`` does)."""
    from analysis.data import config_list, config_rows

    rows = config_rows(con, filters)
    full = config_list(rows)
    if not full:
        raise no_match(filters)
    named = baseline or (candidates[0] if candidates else None)
    anchor = resolve_config(full, named)["config_id"] if named else None
    narrowed, notes, universe = scope.choose_universe(con, filters, question, anchor)
    if narrowed is not filters:
        rows = config_rows(con, narrowed)
        kept = {r["config_id"] for r in rows}
        for name in [*(candidates or []), *([baseline] if baseline else [])]:
            if resolve_config(full, name)["config_id"] not in kept:
                raise AnalysisError(
                    f"{name!r} shares no task with {named!r}: they are in different task "
                    f"universes (compared within {universe}); compare configurations of one "
                    "universe (see trialhouse summarize) or choose it with --universe")
    return narrowed, notes, universe, rows


def sharing(con: duckdb.DuckDBPyConnection, rel: str, base: ConfigRef, cands: list[ConfigRef],
             named: bool) -> tuple[list[ConfigRef], list[str]]:
    """The candidates that share a task with the baseline; a named one that shares none is
    an error, a default one is left out with a note (never a table of zero pairs)."""
    shared = dict(con.execute(_SHARED_SQL.format(rel=rel),
                              [base.config_id, base.config_id]).fetchall())
    empty = [c for c in cands if not shared.get(c.config_id)]
    if not empty:
        return cands, []
    label = ", ".join(c.variant or c.config_id[:12] for c in empty[:5])
    hint = ("check --run/--universe/--label (trialhouse summarize lists each configuration's "
            "tasks)")
    if named:
        raise AnalysisError(f"{label} share(s) no task with the baseline "
                            f"{base.variant or base.config_id[:12]}: nothing to pair; {hint}")
    kept = [c for c in cands if shared.get(c.config_id)]
    if not kept:
        raise AnalysisError(f"no candidate shares a task with the baseline "
                            f"{base.variant or base.config_id[:12]}: 0 pairs; {hint}")
    return kept, [f"{len(empty)} candidate(s) share no task with the baseline and are left "
                  f"out of the comparison and the Holm family: {label}"]


