"""Our events → rows per warehouse table (``runs``, ``configs``, ``cases``, ``trials``, …).

Events are collected per trial and resolved at the end, ordered by ``seq``, so
out-of-order lines and resumed trials come out right: when a trial has several
``trial_started`` events only the events after the last one count. A trial without
``trial_finished`` is ``complete = false`` with a null outcome (incomplete, not
failed). Cost: reported by the agent wins (``cost_source = 'reported'``), else priced
from known tokens with the price table (``'priced'``), else null — never 0.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from ingest.batch import QuarantineRow
from ingest.read import ReadEvent
from runner import events as ev
from warehouse.schema import TABLES


class Prices(Protocol):
    as_of: str | None

    def cost(self, model, input_tokens, output_tokens, cache_read_tokens=None, on=None) -> float | None: ...


def _j(obj: Any) -> str:
    if not obj and isinstance(obj, list | dict):
        return "[]" if isinstance(obj, list) else "{}"
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_FLOAT_EXACT_S = 2**32
"""Below this many seconds from the epoch a float timestamp still resolves single microseconds."""


def _seconds(t: datetime | None) -> float | None:
    if t is None:
        return None
    return t.timestamp() if t.tzinfo is not None else t.replace(tzinfo=UTC).timestamp()


def ts_array(values: list, type_: pa.DataType) -> pa.Array:
    """Datetimes (naive ones read as UTC, like pyarrow) → an Arrow timestamp array.

    pyarrow's own conversion asks each aware datetime for its offset (~3 µs a value);
    ``datetime.timestamp`` in C is far cheaper and exact to the microsecond while the
    seconds fit in 2**32 (before 2106); otherwise fall back to exact integer arithmetic.
    """
    secs = pa.array([t.timestamp() if t is not None and t.tzinfo is not None else _seconds(t) for t in values], pa.float64())
    lo, hi = pc.min_max(secs).values()
    if lo.is_valid and max(abs(lo.as_py()), abs(hi.as_py())) >= _FLOAT_EXACT_S:
        micros = pa.array(
            [None if t is None else ((t if t.tzinfo else t.replace(tzinfo=UTC)) - _EPOCH) // _US for t in values],
            pa.int64(),
        )
    else:
        micros = pc.cast(pc.round(pc.multiply(secs, 1e6)), pa.int64())
    return micros.cast(type_)


class EventsColumns:
    """Column buffers for the ``events`` table, handed out as Arrow batches of ``chunk`` rows."""

    def __init__(self, run_id: str, source_file: str, batch_id: str, chunk: int = 100_000) -> None:
        self.run_id, self.source_file, self.batch_id, self.chunk = run_id, source_file, batch_id, chunk
        self.schema = pa.schema([f for f in TABLES["events"] if f.name != "run_id"])
        self._reset()

    def _reset(self) -> None:
        self.cols: dict[str, list] = {k: [] for k in ("seq", "event", "schema_version", "trial_id", "ts", "line", "payload_json")}

    def add(self, re: ReadEvent) -> pa.RecordBatch | None:
        return self.add_block([re])

    def add_block(self, block: list[ReadEvent]) -> pa.RecordBatch | None:
        """Append accepted events; a full chunk comes back as a batch to write."""
        c = self.cols
        v1 = ev.SCHEMA_VERSION
        events = [re.event for re in block]
        c["seq"] += [e.seq for e in events]
        c["event"] += [e.event for e in events]
        c["trial_id"] += [e.trial_id for e in events]
        c["ts"] += [e.ts for e in events]
        c["line"] += [re.line for re in block]
        c["schema_version"] += [re.version for re in block]
        # v1 lines are stored as read (bytes, UTF-8 checked by Arrow); upgraded ones re-dumped.
        c["payload_json"] += [re.raw if re.version == v1 else re.event.model_dump_json().encode() for re in block]
        return self.flush() if len(c["seq"]) >= self.chunk else None

    def flush(self) -> pa.RecordBatch | None:
        """The buffered rows as one batch (without the run_id partition column)."""
        cols = self.cols
        n = len(cols["seq"])
        if not n:
            return None
        arrays = []
        for f in self.schema:
            if f.name == "ingest_batch_id":
                arrays.append(pa.array([self.batch_id] * n, f.type))
            elif f.name == "source_file":
                arrays.append(pa.array([self.source_file] * n, f.type))
            elif f.name == "payload_json":
                arrays.append(pa.array(cols[f.name], pa.binary()).cast(f.type))
            elif f.name == "ts":
                arrays.append(ts_array(cols[f.name], f.type))
            else:
                arrays.append(pa.array(cols[f.name], f.type))
        self._reset()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class NeedsBufferedPass(Exception):
    """Streaming mode met an event for a trial it already wrote out: re-read buffered."""


TRIAL_TABLES = ("trials", "attempts", "stages", "gradings", "judgments", "flags")


class RunNormalizer:
    """Feed it events (any order); ``rows()`` returns the rows per table.

    With ``streaming=True`` a trial is resolved as soon as its ``trial_finished``
    arrives and its rows are put in ``ready`` (the caller drains it), so memory holds
    only trials in flight. An event for an already resolved trial (a resumed finished
    trial, or a late out-of-order line) raises ``NeedsBufferedPass``: the caller reads
    the file again with ``streaming=False``, which resolves everything at the end.
    """

    def __init__(self, source_file: str, prices: Prices | None = None, *, streaming: bool = False) -> None:
        self.source_file = source_file
        self.prices = prices
        self.streaming = streaming
        self.ready: dict[str, list[dict]] = {t: [] for t in TRIAL_TABLES}
        self.n_ready = 0
        self._resolved: set[str] = set()
        self._incomplete = 0
        self.run_id: str | None = None
        self.quarantine: list[QuarantineRow] = []
        self.notes: list[str] = []
        self._started: list[ev.RunStarted] = []
        self._finished: ev.RunFinished | None = None
        self._validated: dict[str, ev.CaseValidated] = {}
        self._controls: list[ev.ControlResult] = []
        self._trials: dict[str, list] = defaultdict(list)
        self._run_level_other = 0
        self.need_start = False
        """Resolve only trials whose trial_started was seen (the second half of a split file)."""
        self._variants_for = -1
        self._variants_map: dict[str, ev.VariantInfo] = {}

    def add(self, re: ReadEvent) -> bool:
        """Accept one event; False (and a quarantine row) when it belongs to another run."""
        e = re.event
        if self.run_id is None:
            self.run_id = e.run_id
        elif e.run_id != self.run_id:
            self.quarantine.append(QuarantineRow(
                self.source_file, re.line,
                f"run_id {e.run_id!r} differs from this file's run {self.run_id!r}",
                re.raw[:4096].decode("utf-8", errors="replace"),
            ))
            return False
        kind = e.event
        if kind == "run_started":
            self._started.append(e)
        elif kind == "run_finished":
            if self._finished is None or e.seq > self._finished.seq:
                self._finished = e
        elif kind == "case_validated":
            old = self._validated.get(e.case_id)
            if old is None or e.seq > old.seq:
                self._validated[e.case_id] = e
        elif kind == "control_result":
            self._controls.append(e)
        elif e.trial_id is not None:
            if self.streaming:
                if e.trial_id in self._resolved:
                    raise NeedsBufferedPass(e.trial_id)
                evs = self._trials[e.trial_id]
                evs.append(e)
                if kind == "trial_finished" and self._started and (
                    not self.need_start or any(x.event == "trial_started" for x in evs)
                ):
                    self._resolve(e.trial_id)
            else:
                self._trials[e.trial_id].append(e)
        else:
            self._run_level_other += 1
        return True

    def _variants(self) -> dict[str, ev.VariantInfo]:
        """Variants of the latest run_started (cached until another one arrives)."""
        if self._variants_for != len(self._started):
            latest = max(self._started, key=lambda e: e.seq)
            self._variants_map = {v.variant: v for v in latest.variants}
            self._variants_for = len(self._started)
        return self._variants_map

    def _resolve(self, trial_id: str) -> None:
        variants = self._variants()
        if not self._trial(trial_id, self._trials.pop(trial_id), variants, self.ready):
            self._incomplete += 1
        self._resolved.add(trial_id)
        self.n_ready += 1

    def drain(self) -> dict[str, list[dict]]:
        """Take the rows of trials resolved so far (streaming mode)."""
        out, self.ready, self.n_ready = self.ready, {t: [] for t in TRIAL_TABLES}, 0
        return out

    # ------------------------------------------------------------ run level

    def _run_rows(self) -> tuple[list[dict], list[dict], list[dict], dict[str, ev.VariantInfo]]:
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
        if fin is not None:
            details.update(trials_total=fin.trials_total, trials_finished=fin.trials_finished,
                           outcomes=fin.outcomes, duration_s=fin.duration_s)
        run = {
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
                      "validation_only", "simulated"):
                run[k] = getattr(rs, k)
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
            })
        return [run], configs, cases, variants

    # ------------------------------------------------------------ trial level

    def _cost(self, usage: ev.Usage, model: str | None, on: datetime | None) -> tuple[float | None, str | None]:
        if usage.cost_usd is not None:
            return usage.cost_usd, "reported"
        if self.prices is not None and usage.input_tokens is not None and usage.output_tokens is not None:
            cost = self.prices.cost(model, usage.input_tokens, usage.output_tokens,
                                    usage.cache_read_tokens, on=on.date() if on else None)
            if cost is not None:
                return cost, "priced"
        return None, None

    def _trial(self, trial_id: str, events: list, variants: dict, out: dict[str, list]) -> bool:
        events.sort(key=lambda e: e.seq)
        starts = [i for i, e in enumerate(events) if e.event == "trial_started"]
        if not starts:
            for e in events:
                self.quarantine.append(QuarantineRow(
                    self.source_file, None,
                    f"{e.event} seq {e.seq}: trial {trial_id!r} has no trial_started event", e.model_dump_json()[:4096]))
            return True
        if len(starts) > 1:
            self.notes.append(f"trial {trial_id}: started {len(starts)} times; only the last start counts")
        events = events[starts[-1]:]
        ts: ev.TrialStarted = events[0]
        fin = next((e for e in reversed(events) if e.event == "trial_finished"), None)
        v = variants.get(ts.variant)
        model = v.model if v else None
        attempts: dict[int, dict] = {}
        stages: dict[tuple[int, str], dict] = {}
        nflags = 0
        for e in events[1:]:
            k = e.event
            if k == "attempt_started":
                attempts.setdefault(e.attempt, {"trial_id": trial_id, "attempt": e.attempt})
                attempts[e.attempt].update(started_at=e.ts, findings_json=_j(e.findings))
            elif k == "attempt_finished":
                a = attempts.setdefault(e.attempt, {"trial_id": trial_id, "attempt": e.attempt})
                a.update(outcome=e.outcome, finished_at=e.ts, findings_json=_j(e.findings))
            elif k == "stage_started":
                s = stages.setdefault((e.attempt, e.stage), {"trial_id": trial_id, "attempt": e.attempt, "stage": e.stage})
                s["started_at"] = e.ts
            elif k == "stage_finished":
                s = stages.setdefault((e.attempt, e.stage), {"trial_id": trial_id, "attempt": e.attempt, "stage": e.stage})
                u = e.usage
                cost, src = self._cost(u, model, e.ts)
                s.update(
                    exit_code=e.exit_code, signal=e.signal, timed_out=e.timed_out,
                    could_not_start=e.could_not_start, duration_s=e.duration_s,
                    input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                    cache_read_tokens=u.cache_read_tokens, cache_write_tokens=u.cache_write_tokens,
                    cost_usd=cost, cost_source=src, steps=u.steps,
                    time_to_first_edit_s=u.time_to_first_edit_s, usage_source=u.source,
                    verdict_status=e.verdict_status, finished_at=e.ts,
                )
            elif k == "checkpoint":
                s = stages.setdefault((e.attempt, e.stage), {"trial_id": trial_id, "attempt": e.attempt, "stage": e.stage})
                s["checkpoint_sha"] = e.sha
            elif k == "grading":
                out["gradings"].append({
                    "trial_id": trial_id, "case_id": ts.case_id, "attempt": e.attempt, "final": e.final,
                    "control": None, "criterion_id": e.criterion_id, "layer": e.layer,
                    "exit_code": e.exit_code, "signal": e.signal, "timed_out": e.timed_out,
                    "verdict": e.verdict, "baseline": e.baseline, "duration_s": e.duration_s, "ts": e.ts,
                })
            elif k == "judgment":
                out["judgments"].append({
                    "trial_id": trial_id, "criterion_id": e.criterion_id, "kind": "judge",
                    "verdict": "abstained" if e.abstained else e.verdict, "category": None,
                    "note": e.rationale or None, "annotator": e.judge_model, "ts": e.ts,
                })
            elif k == "flag":
                nflags += 1
                out["flags"].append({"trial_id": trial_id, "kind": e.kind, "path": e.path, "detail": e.detail})
        out["attempts"].extend(attempts.values())
        out["stages"].extend(stages.values())
        row = {
            "trial_id": trial_id, "source_format": "trialhouse", "source_key": trial_id,
            "config_id": ts.config_id, "variant": ts.variant, "model": model,
            "harness": v.harness if v else None, "harness_version": v.harness_version if v else None,
            "case_id": ts.case_id, "repetition": ts.repetition, "complete": fin is not None,
            "started_at": ts.ts, "simulated": bool(v.simulated) if v else False, "flags": nflags,
            # Both are ints (model-checked): the same text as _j({"seed":…, "order":…}), cheaper.
            "labels_json": f'{{"order":{ts.order:d},"seed":{ts.seed:d}}}',
        }
        if fin is not None:
            u = fin.usage
            cost, src = self._cost(u, model, fin.ts)
            row.update(
                outcome=fin.outcome, reason=fin.reason or None, attempts=fin.attempts,
                finished_at=fin.ts, duration_s=fin.duration_s, setup_s=fin.setup_s,
                agent_s=fin.agent_s, verification_s=fin.verification_s,
                time_to_first_edit_s=u.time_to_first_edit_s, input_tokens=u.input_tokens,
                output_tokens=u.output_tokens, cache_read_tokens=u.cache_read_tokens,
                cache_write_tokens=u.cache_write_tokens, steps=u.steps, cost_usd=cost,
                cost_source=src, cost_budget_status=fin.cost_budget_status,
                flags=max(fin.flags, nflags), simulated=fin.simulated or row["simulated"],
            )
        else:
            row["attempts"] = len(attempts) or None
        out["trials"].append(row)
        return fin is not None

    def rows(self) -> dict[str, list[dict]]:
        """Rows per table (without run_id / ingest_batch_id, which the writer stamps)."""
        runs, configs, cases, variants = self._run_rows()
        out = self.drain() if self.streaming else {t: [] for t in TRIAL_TABLES}
        incomplete = self._incomplete
        for trial_id in sorted(self._trials):
            if not self._trial(trial_id, self._trials[trial_id], variants, out):
                incomplete += 1
        if incomplete:
            self.notes.append(f"{incomplete} trial(s) have no trial_finished event: incomplete, not failed")
        for e in sorted(self._controls, key=lambda e: e.seq):
            out["gradings"].append({
                "trial_id": None, "case_id": e.case_id, "attempt": None, "final": None,
                "control": e.control, "criterion_id": e.criterion_id, "layer": e.layer,
                "exit_code": e.exit_code, "signal": e.signal, "timed_out": e.timed_out,
                "verdict": e.verdict, "baseline": None, "duration_s": e.duration_s, "ts": e.ts,
            })
        return {"runs": runs, "configs": configs, "cases": cases, **out}
