"""The behaviour bank: which of the manifest's bank checks each case grades (docs/rollout.md,
"Check tiers and the behaviour bank").

A case's ``bank`` draws every check whose tags match (for each key it names, the check's
tag is one of the listed values) plus a seeded sample of ``sample`` checks from the rest of
the bank, which catches what the tags did not foresee. The sample is a pure function of the
bank's seed, the case id and the check ids: each remaining check is ranked by
``sha256("<seed>/<case id>/<check id>")`` and the lowest are drawn, so the same manifest
draws the same checks on any machine, in any run and on resume. ``run_started.bank``
records both parts. The drawn checks join the case's criteria for the whole run (controls,
grading, fingerprint), marked ``banked`` in the run header.
"""

from __future__ import annotations

import hashlib

from contract.run_events import BankInfo
from runner.manifest import BankDraw, Criterion, Manifest


def matches(check: Criterion, draw: BankDraw) -> bool:
    """Whether ``check``'s tags satisfy every key ``draw.tags`` names (no key: no match)."""
    if not draw.tags:
        return False
    tags = check.tags.model_dump()
    return all(tags.get(key) in values for key, values in draw.tags.items())


def sample(ids: list[str], k: int, seed: int, case_id: str) -> list[str]:
    """``k`` of ``ids`` drawn for ``case_id`` under ``seed``, in the order given."""
    def rank(cid: str) -> str:
        return hashlib.sha256(f"{seed}/{case_id}/{cid}".encode()).hexdigest()

    drawn = set(sorted(ids, key=rank)[:k])
    return [cid for cid in ids if cid in drawn]


def draw(manifest: Manifest) -> tuple[Manifest, BankInfo | None]:
    """The manifest this run grades with (each drawing case's bank checks appended to its
    criteria, in bank order) and what ``run_started.bank`` records."""
    bank = manifest.bank
    if bank is None or not any(c.bank is not None for c in manifest.cases):
        return manifest, None
    info = BankInfo(seed=bank.seed)
    cases = []
    for case in manifest.cases:
        if case.bank is None:
            cases.append(case)
            continue
        matched = [c.id for c in bank.checks if matches(c, case.bank)]
        rest = [c.id for c in bank.checks if c.id not in matched]
        sampled = sample(rest, case.bank.sample, bank.seed, case.id)
        info.matched[case.id], info.sampled[case.id] = matched, sampled
        chosen = set(matched) | set(sampled)
        cases.append(case.model_copy(update={
            "criteria": [*case.criteria, *(c for c in bank.checks if c.id in chosen)]}))
    return manifest.model_copy(update={"cases": cases}), info
