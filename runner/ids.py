"""Run, trial and seed ids, and the order trials run in (docs/runner.md).

Pure functions of the manifest (and, for a run id, the clock): a resumed run and a
remote worker compute the same trial ids and seeds as the run that started them.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from runner.manifest import Case, Manifest, Variant


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def trial_seed(manifest_id: str, case_id: str, rep: int) -> int:
    """Shared by every variant of a case/repetition: paired trials see the same draw."""
    return int(hashlib.sha256(f"{manifest_id}/{case_id}/{rep}".encode()).hexdigest()[:8], 16)


def trial_order(m: Manifest) -> list[tuple[Case, Variant, int]]:
    """Cases × variants × repetitions; variant order reversed on even repetitions."""
    out = []
    for rep in range(1, m.repetitions + 1):
        variants = list(m.variants) if rep % 2 else list(reversed(m.variants))
        for case in m.cases:
            for var in variants:
                out.append((case, var, rep))
    return out


def trial_id(case_id: str, variant_id: str, rep: int) -> str:
    return f"{case_id}__{variant_id}__r{rep}"
