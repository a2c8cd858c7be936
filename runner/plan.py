"""The trials a run still owes: every case × variant × repetition (``runner.ids``) less
what an earlier attempt finished, the cases its controls left unscored recorded as
``trial_skipped``, and a ``TrialSpec`` for each of the rest (docs/runner.md).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contract.run_events import CaseValidated
from contract.trial_events import TrialFinished, TrialSkipped
from runner.ids import trial_id, trial_order, trial_seed
from runner.pool import Tally
from runner.setup import RunSetup, case_source
from runner.trial import TrialSpec


@dataclass(frozen=True)
class Earlier:
    """What earlier attempts at this run (before ``--resume``) left behind."""

    finished: dict[str, TrialFinished] = field(default_factory=dict)
    """Trial id → its last ``trial_finished``, except those ``--rerun`` runs again."""
    skipped: frozenset[tuple[str, str, int]] = frozenset()
    """(case, variant, repetition) of every ``trial_skipped``."""

    def tally(self) -> Tally:
        """The tally a resumed run starts from: the finished trials' outcomes, the skipped."""
        return Tally(outcomes=Counter(e.outcome for e in self.finished.values()), skipped=len(self.skipped))


def earlier(prior: list[Any], rerun: tuple[str, ...]) -> Earlier:
    """What ``prior`` (a resumed run's events) finished and skipped; trials whose last
    outcome is in ``rerun`` count as not finished."""
    last = {e.trial_id: e for e in prior if isinstance(e, TrialFinished) and e.trial_id is not None}
    return Earlier({tid: e for tid, e in last.items() if e.outcome not in rerun},
                   frozenset((e.case_id, e.variant, e.repetition) for e in prior if isinstance(e, TrialSkipped)))


def unscored_cases(validated: Mapping[str, CaseValidated]) -> dict[str, str]:
    """Case id → why it is not scored: its controls failed or a criterion is flaky."""
    return {cid: "; ".join(v.problems) or "controls failed" for cid, v in validated.items() if not v.ok}


def plan_trials(s: RunSetup, before: Earlier, validated: Mapping[str, CaseValidated],
                unscored: Mapping[str, str], *, score_unvalidated: bool, stop: threading.Event,
                tally: Tally) -> list[TrialSpec]:
    """The specs of the trials to run now, in trial order; the trials of an unscored case
    are recorded as ``trial_skipped`` (once: counted in ``tally``) unless
    ``score_unvalidated`` runs them with ``scored: false``."""
    m = s.manifest
    specs = []
    for idx, (case, var, rep) in enumerate(trial_order(m)):
        tid = trial_id(case.id, var.id, rep)
        if tid in before.finished:
            continue
        if case.id in unscored and not score_unvalidated:
            if (case.id, var.id, rep) not in before.skipped:
                s.log.emit(TrialSkipped, trial_id=tid, case_id=case.id, variant=var.id,
                           config_id=s.config_ids[var.id], repetition=rep,
                           reason=f"case not scored: {unscored[case.id]}",
                           case_fingerprint=s.fingerprints[case.id])
                tally.skipped += 1
            continue
        _repo, commit = case_source(m, s.manifest_dir, case)
        specs.append(TrialSpec(
            run_id=s.run_id, trial_id=tid, order=idx, manifest=m, manifest_dir=s.manifest_dir,
            case=case, variant=var, config_id=s.config_ids[var.id], repetition=rep,
            seed=trial_seed(m.id, case.id, rep), initial_commit=commit,
            snapshot=s.snapshot, trial_dir=s.run_dir / "trials" / tid,
            containment=s.containment, case_fingerprint=s.fingerprints[case.id],
            scored=case.id not in unscored,
            instruction_texts=s.texts[var.id], baseline=dict(validated[case.id].baseline), stop=stop,
            harness=s.harnesses.get(var.id), uses_gateway=m.uses_gateway(var),
        ))
    return specs
