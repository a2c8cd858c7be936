"""Hidden-check rotation: which criteria of each case's ``hidden_pool`` a run grades.

The subset is a pure function of a *key* and the case: every pool criterion is ranked by
``sha256("<key>/<case id>/<criterion id>")`` and the ``pick`` lowest are drawn (listed in
pool order). The key is the manifest's ``rotation.seed``, joined by the run's period
(``2026-W07``, ``2026-02-11``, ``2026-02``: UTC, when the run starts) or by the run id;
``period: none`` keeps the seed alone. So the same seed and period give the same subset on
any machine and in any Python, and a new seed (or period) usually another one.

A run records its key and subsets in ``run_started.rotation``; a resumed run draws again
from the recorded key, never from today's date. The drawn criteria join the case's
criteria for the whole run (controls, grading, the evaluator fingerprint: a different
subset is a different task version, docs/analysis.md "Task"). docs/runner.md, "Visible
and hidden checks".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from contract.run_events import RotationInfo, RunStarted
from runner.errors import RunnerError
from runner.manifest import Manifest, Rotation


def rotation_key(rotation: Rotation, run_id: str, when: datetime) -> str:
    """The key a run with ``run_id`` starting at ``when`` draws its subsets with."""
    when = when.astimezone(UTC)
    match rotation.period:
        case "run":
            return f"{rotation.seed}/{run_id}"
        case "day":
            return f"{rotation.seed}/{when:%Y-%m-%d}"
        case "week":
            year, week, _day = when.isocalendar()
            return f"{rotation.seed}/{year}-W{week:02d}"
        case "month":
            return f"{rotation.seed}/{when:%Y-%m}"
    return str(rotation.seed)


def choose(pool: Sequence[str], pick: int, key: str, case_id: str) -> list[str]:
    """The ``pick`` criteria of ``pool`` drawn for ``case_id`` under ``key``, in pool order."""
    def rank(cid: str) -> str:
        return hashlib.sha256(f"{key}/{case_id}/{cid}".encode()).hexdigest()

    drawn = set(sorted(pool, key=rank)[:pick])
    return [cid for cid in pool if cid in drawn]


def _recorded_key(prior: list[Any]) -> str | None:
    starts = [e for e in prior if isinstance(e, RunStarted)]
    return starts[0].rotation.key if starts and starts[0].rotation is not None else None


def rotate(manifest: Manifest, run_id: str, prior: list[Any],
           now: datetime | None = None) -> tuple[Manifest, RotationInfo | None]:
    """The manifest this run grades with: each pooled case's drawn criteria appended to its
    criteria (its pool dropped), and what ``run_started.rotation`` records. A resumed run
    (``prior``: its earlier events) draws with its recorded key."""
    pooled = [c for c in manifest.cases if c.hidden_pool is not None]
    if not pooled:
        return manifest, None
    key = _recorded_key(prior) if prior else None
    if prior and key is None:
        raise RunnerError("this run recorded no hidden-check rotation, but its manifest has a hidden_pool; "
                          "resume needs the same manifest")
    key = key or rotation_key(manifest.rotation, run_id, now or datetime.now(UTC))
    chosen: dict[str, list[str]] = {}
    pools: dict[str, list[str]] = {}
    cases = []
    for case in manifest.cases:
        if case.hidden_pool is None:
            cases.append(case)
            continue
        ids = [c.id for c in case.hidden_pool.criteria]
        pools[case.id] = ids
        chosen[case.id] = choose(ids, case.hidden_pool.pick, key, case.id)
        drawn = [c for c in case.hidden_pool.criteria if c.id in chosen[case.id]]
        cases.append(case.model_copy(update={"criteria": [*case.criteria, *drawn], "hidden_pool": None}))
    info = RotationInfo(seed=manifest.rotation.seed, period=manifest.rotation.period, key=key,
                        chosen=chosen, pools=pools)
    return manifest.model_copy(update={"cases": cases}), info
