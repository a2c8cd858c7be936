"""Our events → rows per warehouse table (``runs``, ``configs``, ``cases``, ``trials``, …).

Events are collected per trial and resolved at the end, ordered by ``seq``, so
out-of-order lines and resumed trials come out right: when a trial has several
``trial_started`` events only the events after the last one count. A trial without
``trial_finished`` is ``complete = false`` with a null outcome (incomplete, not
failed). Cost follows the one rule in ``ingest.cost.resolve_cost``: reported by the
agent wins (``cost_source = 'reported'``), else priced from known tokens with the price
table (``'priced'``), else null — never 0.

Every event fed in belongs to one run: the reader decides the file's run and quarantines
the others' lines (``ingest.read.read_blocks``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import pyarrow as pa

from contract.envelope import SCHEMA_VERSION
from contract.run_events import CaseValidated, RunFinished, RunStarted, VariantInfo
from contract.trial_events import TrialSkipped
from ingest import steps as trajectory
from ingest.batch import QuarantineRow
from ingest.block import Block, ReadEvent
from ingest.cost import Prices, resolve_cost
from ingest.fastdecode import to_model
from ingest.line_validation import exact_micros
from ingest.seen import TrialIds
from warehouse.schema import TABLES


def _j(obj: Any) -> str:
    if not obj and isinstance(obj, list | dict):
        return "[]" if isinstance(obj, list) else "{}"
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


class EventsColumns:
    """The ``events`` table, built block by block as Arrow batches and handed out ``chunk`` rows at a time."""

    def __init__(self, run_id: str, source_file: str, batch_id: str, chunk: int = 100_000) -> None:
        self.run_id, self.source_file, self.batch_id, self.chunk = run_id, source_file, batch_id, chunk
        self.schema = pa.schema([f for f in TABLES["events"] if f.name != "run_id"])
        self._source_file, self._batch_id = pa.scalar(source_file, pa.string()), pa.scalar(batch_id, pa.string())
        self.batches: list[pa.RecordBatch] = []
        self.n = 0

    def add(self, re: ReadEvent) -> pa.Table | None:
        return self.add_block(Block([re.event], [re.line], [re.raw], None if re.version == SCHEMA_VERSION
                                    else [re.version], [exact_micros(re.event.ts)]))

    def add_block(self, block: Block) -> pa.Table | None:
        """Append a block's accepted events; a full chunk comes back as a table to write."""
        events, n = block.events, len(block.events)
        v1 = SCHEMA_VERSION
        if block.versions is None:
            payload = block.payload if block.payload is not None else block.raws
            versions = pa.repeat(pa.scalar(v1, pa.int32()), n)
        else:  # v1 lines are stored as read; upgraded ones re-dumped
            payload = [raw if v == v1 else to_model(e).model_dump_json().encode()
                       for raw, v, e in zip(block.raws, block.versions, events, strict=True)]
            versions = pa.array(block.versions, pa.int32())
        seqs, kinds, trial_ids, _rids = zip(*block.envelope(), strict=True)
        cols = {
            "seq": pa.array(seqs, pa.int64()),
            "event": pa.array(kinds, pa.string()),
            "schema_version": versions,
            "trial_id": pa.array(trial_ids, pa.string()),
            "ts": pa.array(block.micros, pa.int64()),
            # constant columns by repetition: a list of n references costs a UTF-8 copy per row
            "source_file": pa.repeat(self._source_file, n),
            "line": pa.array(block.lines, pa.int64()),
            # bytes → UTF-8 checked by Arrow (large_binary: pyarrow builds binary from many bytes slowly)
            "payload_json": payload if isinstance(payload, pa.Array) else pa.array(payload, pa.large_binary()),
            "ingest_batch_id": pa.repeat(self._batch_id, n),
        }
        arrays = [cols[f.name] if cols[f.name].type == f.type else cols[f.name].cast(f.type) for f in self.schema]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.n += n
        return self.flush() if self.n >= self.chunk else None

    def flush(self) -> pa.Table | None:
        """The buffered rows as one table (without the run_id partition column)."""
        if not self.batches:
            return None
        out = pa.Table.from_batches(self.batches, schema=self.schema)
        self.batches, self.n = [], 0
        return out


class NeedsBufferedPass(Exception):
    """Streaming mode met an event for a trial it already wrote out: re-read buffered."""


TRIAL_TABLES = ("trials", "attempts", "stages", "gradings", "judgments", "flags", *trajectory.TABLES)

_STAGE_FIN = ("exit_code", "signal", "timed_out", "could_not_start", "duration_s", "verdict_status")
_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "steps",
          "time_to_first_edit_s", "source")
_GRADING = ("attempt", "final", "criterion_id", "layer", "exit_code", "signal", "timed_out", "verdict",
            "baseline", "duration_s")
_CONTROL = ("case_id", "control", "criterion_id", "layer", "exit_code", "signal", "timed_out", "verdict",
            "duration_s")
_TRIAL_FIN = ("outcome", "attempts", "duration_s", "setup_s", "agent_s", "verification_s", "cost_budget_status",
              "case_fingerprint", "scored", "redactions", "secrets_leaked")

TRIAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "trials": (
        "trial_id", "source_format", "source_key", "config_id", "variant", "model", "harness", "harness_version",
        "case_id", "repetition", "complete", "started_at", "labels_json", "flags", "simulated",
        "reason", "finished_at", "cost_usd", "cost_source", *_TRIAL_FIN, *_USAGE[:6],
    ),
    "attempts": ("trial_id", "attempt", "outcome", "findings_json", "started_at", "finished_at"),
    "stages": (
        "trial_id", "attempt", "stage", "started_at", "finished_at", "checkpoint_sha", "cost_usd", "cost_source",
        *_STAGE_FIN, *(c if c != "source" else "usage_source" for c in _USAGE),
    ),
    "gradings": ("trial_id", "case_id", "control", "ts", *_GRADING),
    "judgments": ("trial_id", "criterion_id", "kind", "verdict", "category", "note", "annotator", "ts",
                  "attempt", "judge_host", "judge_provider", "judge_effort", "rubric_sha256", "error", "rubric"),
    "flags": ("trial_id", "kind", "path", "detail"),
}
"""The order of the values in the row tuples ``RunNormalizer`` emits for each per-trial table
(timestamps as microseconds since the epoch); columns not named are null. The order follows
the event fields read together (one ``operator.attrgetter`` per group)."""
# hook (issue 17): steps, model_calls and the harness/gateway columns of stages and trials
_STAGE_BASE = len(TRIAL_COLUMNS["stages"])
TRIAL_COLUMNS.update(trajectory.COLUMNS)
TRIAL_COLUMNS["stages"] += trajectory.STAGE_COLUMNS
TRIAL_COLUMNS["trials"] += trajectory.TRIAL_COLUMNS


_get_stage_fin, _get_usage, _get_usage_t, _get_grading, _get_control, _get_trial_fin = (
    attrgetter(*f) for f in (_STAGE_FIN, _USAGE, _USAGE[:6], _GRADING, _CONTROL, _TRIAL_FIN)
)
_get_start = attrgetter("variant", "case_id", "config_id", "repetition", "order", "seed")
_get_fin = attrgetter("usage", "flags", "simulated", "reason")
_RUN_KINDS = frozenset({"run_started", "run_finished", "case_validated", "control_result", "trial_skipped"})
_STAGE_KINDS = frozenset({"stage_started", "stage_finished", "checkpoint"})
_TRAJECTORY_KINDS = trajectory.KINDS
_STAGE_NULLS = (None,) * (len(TRIAL_COLUMNS["stages"]) - 3)
_TRIAL_FIN_NULLS = (None,) * (len(_TRIAL_FIN) - 2 + 6) + trajectory.TRIAL_NULLS

_first = itemgetter(0)
_second = itemgetter(1)
_NO_VARIANT = (None, None, None, False)


def _variant_keys(variants: dict[str, VariantInfo]) -> dict[str, tuple]:
    """variant → (model, harness, harness_version, simulated) for the trial rows."""
    return {k: (v.model, v.harness, v.harness_version, bool(v.simulated)) for k, v in variants.items()}


def _seq(pair: tuple) -> int:
    return pair[0].seq


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
        self._criteria: list[dict] = []
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
        """Variants of the latest run_started (cached until another one arrives), see ``_variant_keys``."""
        if self._variants_for != len(self._started):
            latest = max(self._started, key=lambda e: e.seq)
            self._variants_map = _variant_keys({v.variant: v for v in latest.variants})
            self._variants_for = len(self._started)
        return self._variants_map

    def _resolve(self, trial_id: str) -> None:
        variants = self._variants()
        ready = self.ready
        before = len(ready["steps"]) + len(ready["model_calls"])
        if not self._trial(trial_id, self._trials.pop(trial_id), variants, ready):
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

    # ------------------------------------------------------------ run level

    def _run_rows(self) -> tuple[list[dict], list[dict], list[dict], dict[str, VariantInfo]]:
        started = sorted(self._started, key=lambda e: e.seq)
        rs = started[-1] if started else None
        fin = self._finished
        if rs is None:
            self.notes.append(f"{self.source_file}: no run_started event; run metadata is unknown")
        status = fin.status if fin else "running"
        details: dict[str, Any] = {}
        if rs is not None:
            details = {
                "manifest_path": rs.manifest_path,
                "input_hashes": rs.input_hashes,
                "stages": rs.stages,
                "jobs": rs.jobs,
                "resumed": any(s.resumed for s in started),
                "starts": len(started),
            }
            kinds = [s.executor.kind if s.executor else None for s in started]
            if len(set(kinds)) > 1:  # resumed under another executor: each session's, in order
                details["executors"] = kinds
        if fin is not None:
            details.update(trials_total=fin.trials_total, trials_finished=fin.trials_finished,
                           outcomes=fin.outcomes, duration_s=fin.duration_s)
        run: dict[str, Any] = {
            "source_format": "trialhouse",
            "source_path": self.source_file,
            "manifest_id": rs and rs.manifest_id,
            "manifest_sha256": rs and rs.manifest_sha256,
            "started_at": started[0].ts if started else None,
            "finished_at": fin.ts if fin else None,
            "status": status,
            "prices_as_of": self.prices.as_of if self.prices is not None else None,
            "details_json": _j(details),
        }
        if rs is not None:
            for k in ("engine_version", "os", "python", "git_version", "repository", "initial_commit",
                      "initial_tree", "repetitions", "max_attempts", "timeout_seconds", "max_cost_usd",
                      "validation_only", "simulated", "control_repeats", "controls_from", "grading_semantics"):
                run[k] = getattr(rs, k)
            iso = rs.isolation
            if iso is not None:
                run.update(isolation_backend=iso.backend, isolated=iso.isolated, network=iso.network)
            ex = rs.executor
            if ex is not None:
                run.update(executor=ex.kind, executor_address=ex.address, ray_version=ex.ray_version)
        if fin is not None:
            run["trials_skipped"] = fin.trials_skipped
        variants = {v.variant: v for v in (rs.variants if rs else [])}
        configs = [
            {
                "config_id": v.config_id, "variant": v.variant, "model": v.model, "harness": v.harness,
                "harness_version": v.harness_version, "reasoning_effort": v.reasoning_effort,
                "service_tier": v.service_tier, "settings_json": _j(v.settings),
                "agent_kind": v.agent_kind, "simulated": v.simulated, "source_format": "trialhouse",
                "variant_order": i,
            }
            for i, v in enumerate(rs.variants if rs else [])
        ]
        cases = []
        for c in rs.cases if rs else []:
            lab = c.labels
            val = self._validated.get(c.case_id)
            cases.append({
                "case_id": c.case_id, "holdout": c.holdout, "repository": lab.get("repository"),
                "familiarity": lab.get("familiarity"), "task_class": lab.get("task_class"),
                "difficulty": lab.get("difficulty"), "language": lab.get("language"),
                "subsystem": lab.get("subsystem"), "benchmark": lab.get("benchmark"),
                "initial_commit": c.initial_commit, "labels_json": _j(lab),
                "validated": val.ok if val else None,
                "fingerprint": c.fingerprint,
                "scored": val.ok if val else None,
                "unscored_reason": "; ".join(val.problems) or "controls failed" if val and not val.ok else None,
            })
        criteria = [
            {"case_id": c.case_id, "criterion_id": k.criterion_id, "layer": k.layer, "kind": k.kind,
             "severity": k.severity, "description": k.description or None, "case_fingerprint": c.fingerprint}
            for c in (rs.cases if rs else []) for k in c.criteria
        ]
        self._criteria = criteria
        return [run], configs, cases, variants

    # ------------------------------------------------------------ trial level

    def _cost(self, u, model: str | None, event) -> tuple[float | None, str | None]:
        """``resolve_cost`` for a validated ``Usage``; prices apply from the date of ``event``.

        A 0 our agents report is a real 0 (they report a cost only when they computed one).
        The date is parsed only when the cost will be priced (it costs a parse per event).
        """
        if self.prices is None and u.cost_usd is None:
            return None, None
        on = event.ts.date() if u.cost_usd is None else None
        return resolve_cost(self.prices, model, reported=u.cost_usd, input_tokens=u.input_tokens,
                            output_tokens=u.output_tokens, cache_read_tokens=u.cache_read_tokens,
                            cache_write_tokens=u.cache_write_tokens, activity=u.steps, on=on)

    def _trial(self, trial_id: str, events: list[tuple], variants: dict, out: dict[str, list]) -> bool:
        """Resolve one trial's ``(seq, kind, event, µs)`` entries into row tuples (``TRIAL_COLUMNS``) in ``out``.

        Events are compiled structs (``ingest.fastdecode``) or, for lines only pydantic
        accepts, models: both are read by attribute (several at once with ``attrgetter``).
        This runs once per trial (≈ a third of the normaliser's time), so the common shape —
        one ``trial_started`` first, ``trial_finished`` last — is found with list methods
        on the kinds rather than Python loops. Costs follow the one rule (``_cost``).
        """
        events.sort(key=_first)
        kinds = list(map(_second, events))
        n_starts = kinds.count("trial_started")
        if not n_starts:
            for _s, _k, e, _m in events:
                self.quarantine.append(QuarantineRow(
                    self.source_file, None,
                    f"{e.event} seq {e.seq}: trial {trial_id!r} has no trial_started event",
                    to_model(e).model_dump_json()[:4096]))
            return True
        if n_starts > 1:
            self.notes.append(f"trial {trial_id}: started {n_starts} times; only the last start counts")
            last = len(kinds) - 1 - kinds[::-1].index("trial_started")
            events, kinds = events[last:], kinds[last:]
        elif kinds[0] != "trial_started":
            first = kinds.index("trial_started")
            events, kinds = events[first:], kinds[first:]
        _s, _k, ts, ts_m = events[0]
        variant, case_id, config_id, repetition, order, seed = _get_start(ts)
        if kinds[-1] == "trial_finished":
            _s, _k, fin, fin_m = events[-1]
        elif "trial_finished" in kinds:
            _s, _k, fin, fin_m = events[len(kinds) - 1 - kinds[::-1].index("trial_finished")]
        else:
            fin = fin_m = None
        model, harness, harness_version, simulated = variants.get(variant, _NO_VARIANT)
        attempts: dict[int, list] = {}
        stages: dict[tuple[int, str], list] = {}
        nflags = 0
        gradings, judgments, flags = out["gradings"], out["judgments"], out["flags"]
        add_step = trajectory.add
        for _s, k, e, m in events[1:]:
            if k in _TRAJECTORY_KINDS:  # first: a harness trial holds hundreds of them
                add_step(k, e, trial_id, out)
            elif k in _STAGE_KINDS:
                attempt, stage = e.attempt, e.stage
                s = stages.get((attempt, stage))
                if s is None:
                    s = stages[(attempt, stage)] = [trial_id, attempt, stage, *_STAGE_NULLS]
                if k == "stage_finished":
                    u = e.usage
                    s[6:8] = self._cost(u, model, e)
                    s[8:14] = _get_stage_fin(e)
                    s[14:21] = _get_usage(u)
                    s[_STAGE_BASE:] = trajectory.stage_values(e)
                    s[4] = m
                elif k == "stage_started":
                    s[3] = m
                else:  # checkpoint
                    s[5] = e.sha
            elif k == "attempt_started" or k == "attempt_finished":
                attempt = e.attempt
                a = attempts.get(attempt)
                if a is None:
                    a = attempts[attempt] = [trial_id, attempt, None, None, None, None]
                f = e.findings  # a list (contract-checked)
                if k == "attempt_started":
                    a[4], a[3] = m, _j(f) if f else "[]"
                else:
                    a[2], a[5], a[3] = e.outcome, m, _j(f) if f else "[]"
            elif k == "grading":
                gradings.append((trial_id, case_id, None, m, *_get_grading(e)))
            elif k == "judgment":
                judgments.append((
                    trial_id, e.criterion_id, "judge", "abstained" if e.abstained else e.verdict, e.failure_category,
                    e.rationale or None, e.judge_model, m, e.attempt,
                    *((e.judge.host, e.judge.provider, e.judge.reasoning_effort) if e.judge else (None, None, None)),
                    e.rubric_sha256, e.error, e.rubric,
                ))
            elif k == "flag":
                nflags += 1
                flags.append((trial_id, e.kind, e.path, e.detail))
        if attempts:
            out["attempts"] += attempts.values()
        if stages:
            out["stages"] += stages.values()
        # Both are exact ints (contract-checked; pydantic turns true/1.0 into int 1): the same text
        # as _j({"seed":…, "order":…}), cheaper (no format spec: ``:d`` takes a slower path).
        labels = f'{{"order":{order},"seed":{seed}}}'
        head = (trial_id, "trialhouse", trial_id, config_id, variant, model,
                harness, harness_version, case_id, repetition)
        if fin is not None:
            u, fin_flags, fin_simulated, reason = _get_fin(fin)
            out["trials"].append((
                *head, True, ts_m, labels, max(fin_flags, nflags), fin_simulated or simulated,
                reason or None, fin_m, *self._cost(u, model, fin), *_get_trial_fin(fin), *_get_usage_t(u),
                *trajectory.trial_values(fin),
            ))
        else:
            out["trials"].append((
                *head, False, ts_m, labels, nflags, simulated, None, None, None, None,
                None, len(attempts) or None, *_TRIAL_FIN_NULLS,
            ))
        return fin is not None

    def rows(self) -> dict[str, list]:
        """Rows per table (without run_id / ingest_batch_id, which the writer stamps): dicts for
        ``runs``/``configs``/``cases``, ``TRIAL_COLUMNS`` tuples for the per-trial tables."""
        runs, configs, cases, infos = self._run_rows()
        variants = _variant_keys(infos)
        out = self.drain() if self.streaming else {t: [] for t in TRIAL_TABLES}
        incomplete = self._incomplete
        for trial_id in sorted(self._trials):
            if not self._trial(trial_id, self._trials[trial_id], variants, out):
                incomplete += 1
        if incomplete:
            self.notes.append(f"{incomplete} trial(s) have no trial_finished event: incomplete, not failed")
        for e, m in sorted(self._controls, key=_seq):
            c = _get_control(e)
            # (attempt, final, criterion_id, layer, exit_code, signal, timed_out, verdict, baseline, duration_s)
            out["gradings"].append((None, c[0], c[1], m, None, None, *c[2:8], None, c[8]))
        skipped = [
            {"trial_id": e.trial_id, "case_id": e.case_id, "variant": e.variant, "config_id": e.config_id,
             "repetition": e.repetition, "reason": e.reason, "case_fingerprint": e.case_fingerprint}
            for _t, e in sorted(self._skipped.items())
        ]
        return {"runs": runs, "configs": configs, "cases": cases, "criteria": self._criteria,
                "skipped_trials": skipped, **out}
