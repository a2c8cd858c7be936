"""Our events → rows per warehouse table (``runs``, ``configs``, ``cases``, ``trials``, …).

Events are collected per trial and resolved at the end, ordered by ``seq``, so
out-of-order lines and resumed trials come out right: when a trial has several
``trial_started`` events only the events after the last one count (``ingest.trial_rows``).
A trial without ``trial_finished`` is ``complete = false`` with a null outcome
(incomplete, not failed). The run-level rows come from the run's own events
(``ingest.run_rows``).

Every event fed in belongs to one run: the reader decides the file's run and quarantines
the others' lines (``ingest.read.read_blocks``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from contract.run_events import CaseValidated, RunFinished, RunStarted
from contract.trial_events import TrialSkipped
from ingest.batch import QuarantineRow
from ingest.block import Block, ReadEvent
from ingest.cost import Prices
from ingest.line_validation import exact_micros
from ingest.run_rows import (
    case_rows,
    config_rows,
    control_gradings,
    criterion_rows,
    run_row,
    skipped_rows,
)
from ingest.seen import TrialIds
from ingest.trial_rows import TRIAL_TABLES, TrialRows, variant_keys

_RUN_KINDS = frozenset({"run_started", "run_finished", "case_validated", "control_result", "trial_skipped"})


class NeedsBufferedPass(Exception):
    """Streaming mode met an event for a trial it already wrote out: re-read buffered."""


@dataclass
class NormalizerState:
    """What a normaliser holds besides its resolved rows: handed from one half of a file read
    in two processes to the other (``ingest.parallel``) and merged with ``RunNormalizer.merge``."""

    started: list = field(default_factory=list)
    finished: Any = None
    validated: dict = field(default_factory=dict)
    controls: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)
    pending: dict[str, list] = field(default_factory=dict)
    """Trials not resolved yet: id → their ``(seq, kind, event, µs)`` entries."""
    resolved: TrialIds = field(default_factory=TrialIds)
    incomplete: int = 0
    run_level_other: int = 0
    notes: list[str] = field(default_factory=list)
    quarantine: list[QuarantineRow] = field(default_factory=list)


class RunNormalizer:
    """Feed it blocks of events (any order); ``rows()`` returns the rows per table.

    Per-trial tables come as tuples in ``TRIAL_COLUMNS`` order, the run-level ones
    (``runs``, ``configs``, ``cases``) as dicts. With ``streaming=True`` a trial is
    resolved as soon as its ``trial_finished`` arrives and its rows are put in
    ``ready`` (the caller drains it), so memory holds only trials in flight. An event
    for an already resolved trial (a resumed finished trial, or a late out-of-order
    line) raises ``NeedsBufferedPass``: the caller reads the file again with
    ``streaming=False``, which resolves everything at the end. Trial events are kept
    as ``(seq, kind, event, ts in µs)`` tuples, controls as ``(event, ts in µs)``.
    """

    def __init__(self, source_file: str, prices: Prices | None = None, *, streaming: bool = False,
                 run_id: str | None = None) -> None:
        self.source_file = source_file
        self.prices = prices
        self.streaming = streaming
        self.ready: dict[str, list[tuple]] = {t: [] for t in TRIAL_TABLES}
        self.n_ready = 0
        self._resolved = TrialIds()
        self._incomplete = 0
        self.run_id: str | None = run_id
        self.quarantine: list[QuarantineRow] = []
        self.notes: list[str] = []
        self._started: list[RunStarted] = []
        self._finished: RunFinished | None = None
        self._validated: dict[str, CaseValidated] = {}
        self._controls: list[tuple] = []
        self._skipped: dict[str, TrialSkipped] = {}
        self._trials: dict[str, list[tuple]] = defaultdict(list)
        self._run_level_other = 0
        self.need_start = False
        """Resolve only trials whose trial_started was seen (the second half of a split file)."""
        self._trial_rows = TrialRows(source_file, prices, self.quarantine, self.notes)
        self._variants_for = -1
        self._variants_map: dict[str, tuple] = {}

    def add(self, re: ReadEvent) -> None:
        """Accept one event (of this run)."""
        self.add_block(Block([re.event], [re.line], [re.raw], None, [exact_micros(re.event.ts)]))

    def add_block(self, block: Block) -> Block:
        """Accept a block of events of this run (the reader keeps other runs' lines out); returns it
        with its envelope read."""
        events = block.events
        if self.run_id is None and events:
            self.run_id = events[0].run_id
        env = block.envelope()
        if block.env is None:
            block = block._replace(env=env)
        trials = self._trials
        streaming, resolved = self.streaming, self._resolved
        assert block.micros is not None, "the reader gives every event its µs"
        for (seq, kind, tid, _rid), e, m in zip(env, events, block.micros, strict=True):
            if kind in _RUN_KINDS:
                self._run_event(e, m, kind)
                continue
            if tid is None:
                self._run_level_other += 1
                continue
            evs = trials.get(tid)
            if evs is None:  # a trial not in flight: new, unless already resolved (streaming)
                if streaming and tid in resolved:
                    raise NeedsBufferedPass(tid)
                evs = trials[tid] = []
            evs.append((seq, kind, e, m))
            if streaming and kind == "trial_finished" and self._started and (
                not self.need_start or any(x[1] == "trial_started" for x in evs)
            ):
                self._resolve(tid)
        return block

    def _run_event(self, e, m: int | None, kind: str) -> None:
        if kind == "run_started":
            self._started.append(e)
        elif kind == "run_finished":
            if self._finished is None or e.seq > self._finished.seq:
                self._finished = e
        elif kind == "case_validated":
            old = self._validated.get(e.case_id)
            if old is None or e.seq > old.seq:
                self._validated[e.case_id] = e
        elif kind == "trial_skipped":
            self._skipped[e.trial_id] = e
        else:
            self._controls.append((e, m))

    def _variants(self) -> dict[str, tuple]:
        """Variants of the latest run_started (cached until another one arrives), see ``ingest.trial_rows.variant_keys``."""
        if self._variants_for != len(self._started):
            latest = max(self._started, key=lambda e: e.seq)
            self._variants_map = variant_keys({v.variant: v for v in latest.variants})
            self._variants_for = len(self._started)
        return self._variants_map

    def _resolve(self, trial_id: str) -> None:
        variants = self._variants()
        ready = self.ready
        before = len(ready["steps"]) + len(ready["model_calls"])
        if not self._trial_rows.resolve(trial_id, self._trials.pop(trial_id), variants, ready):
            self._incomplete += 1
        self._resolved.add(trial_id)
        # hook (issue 17): a harness trial brings hundreds of step rows; count every ten as
        # one more trial, so the caller drains (``n_ready``) at about the same number of rows
        self.n_ready += 1 + (len(ready["steps"]) + len(ready["model_calls"]) - before) // 10

    def drain(self) -> dict[str, list[tuple]]:
        """Take the rows of trials resolved so far (streaming mode)."""
        out, self.ready, self.n_ready = self.ready, {t: [] for t in TRIAL_TABLES}, 0
        return out

    # ------------------------------------------------------------ two halves (ingest.parallel)

    def continue_from(self, run_started: RunStarted) -> None:
        """Read the second half of a file whose first line is ``run_started``: resolve only
        trials whose ``trial_started`` this half holds (the others are merged at the end)."""
        self.need_start = True
        self.run_id = run_started.run_id
        self._started.append(run_started)

    @property
    def starts(self) -> int:
        """``run_started`` events seen (the one given to ``continue_from`` included)."""
        return len(self._started)

    @property
    def resolved(self) -> TrialIds:
        return self._resolved

    def pending_ids(self) -> set[str]:
        return set(self._trials)

    def state(self) -> NormalizerState:
        """Everything but the resolved rows (the second half's ``run_started`` context left out)."""
        return NormalizerState(
            started=self._started[1:] if self.need_start else list(self._started), finished=self._finished,
            validated=self._validated, controls=self._controls, skipped=self._skipped,
            pending=dict(self._trials),
            resolved=self._resolved, incomplete=self._incomplete, run_level_other=self._run_level_other,
            notes=self.notes, quarantine=self.quarantine,
        )

    def merge(self, other: NormalizerState) -> None:
        """Take in the state of the file's other half, as if this normaliser had read it too."""
        self._started += other.started
        if other.finished is not None and (self._finished is None or other.finished.seq > self._finished.seq):
            self._finished = other.finished
        for case_id, e in other.validated.items():
            old = self._validated.get(case_id)
            if old is None or e.seq > old.seq:
                self._validated[case_id] = e
        self._controls += other.controls
        self._skipped.update(other.skipped)
        for trial_id, evs in other.pending.items():
            self._trials[trial_id].extend(evs)
        self._resolved.update(other.resolved)
        self._incomplete += other.incomplete
        self._run_level_other += other.run_level_other
        self.notes += other.notes
        self.quarantine += other.quarantine

    def rows(self) -> dict[str, list]:
        """Rows per table (without run_id / ingest_batch_id, which the writer stamps): dicts for
        ``runs``/``configs``/``cases``, ``TRIAL_COLUMNS`` tuples for the per-trial tables."""
        started = sorted(self._started, key=lambda e: e.seq)
        rs = started[-1] if started else None
        if rs is None:
            self.notes.append(f"{self.source_file}: no run_started event; run metadata is unknown")
        infos = rs.variants if rs else []
        runs, configs = [run_row(started, self._finished, self.source_file, self.prices)], config_rows(infos)
        cases, criteria = case_rows(rs, self._validated), criterion_rows(rs)
        variants = variant_keys({v.variant: v for v in infos})
        out = self.drain() if self.streaming else {t: [] for t in TRIAL_TABLES}
        incomplete = self._incomplete
        for trial_id in sorted(self._trials):
            if not self._trial_rows.resolve(trial_id, self._trials[trial_id], variants, out):
                incomplete += 1
        if incomplete:
            self.notes.append(f"{incomplete} trial(s) have no trial_finished event: incomplete, not failed")
        out["gradings"] += control_gradings(self._controls, started, self._validated)
        return {"runs": runs, "configs": configs, "cases": cases, "criteria": criteria,
                "skipped_trials": skipped_rows(self._skipped), **out}
