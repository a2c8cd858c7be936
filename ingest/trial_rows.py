"""One trial's events → its row tuples for the per-trial tables (``ingest.normalize``).

Only the events after a trial's last ``trial_started`` count (a resumed trial starts
again); a trial without ``trial_finished`` is ``complete = false`` with a null outcome
(incomplete, not failed). Cost follows the one rule in ``ingest.cost.resolve_cost``:
reported by the agent wins (``cost_source = 'reported'``), else priced from known tokens
with the price table (``'priced'``), else null — never 0.
"""

from __future__ import annotations

from operator import attrgetter, itemgetter

from ingest import steps as trajectory
from ingest.batch import QuarantineRow
from ingest.cost import Prices, resolve_cost
from ingest.fastdecode import to_model
from ingest.line_validation import exact_micros
from ingest.run_rows import compact_json

TRIAL_TABLES = ("trials", "attempts", "stages", "gradings", "judgments", "flags", *trajectory.TABLES)

_STAGE_FIN = ("exit_code", "signal", "timed_out", "could_not_start", "duration_s", "verdict_status")
_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "steps",
          "time_to_first_edit_s", "source")
_GRADING = ("attempt", "final", "criterion_id", "layer", "exit_code", "signal", "timed_out", "verdict",
            "baseline", "duration_s", "output_key")
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
"""The order of the values in the row tuples emitted for each per-trial table (timestamps as
microseconds since the epoch); columns not named are null. The order follows the event
fields read together (one ``operator.attrgetter`` per group)."""
# hook (issue 17): steps, model_calls and the harness/gateway columns of stages and trials
_STAGE_BASE = len(TRIAL_COLUMNS["stages"])
TRIAL_COLUMNS.update(trajectory.COLUMNS)
TRIAL_COLUMNS["stages"] += trajectory.STAGE_COLUMNS
TRIAL_COLUMNS["trials"] += trajectory.TRIAL_COLUMNS
REGRADE_COLUMNS = ("regrade_s", "regraded_from_run_id", "regraded_from_trial_id", "original_outcome",
                   "original_fingerprint")
"""Appended to the ``trials`` row tuples: a ``trialhouse regrade`` trial's link to the trial it
grades again (null for every other trial)."""
TRIAL_COLUMNS["trials"] += REGRADE_COLUMNS


_get_stage_fin, _get_usage, _get_usage_t, _get_grading, _get_trial_fin = (
    attrgetter(*f) for f in (_STAGE_FIN, _USAGE, _USAGE[:6], _GRADING, _TRIAL_FIN)
)
_get_start = attrgetter("variant", "case_id", "config_id", "repetition", "order", "seed")
_get_fin = attrgetter("usage", "flags", "simulated", "reason")
_STAGE_KINDS = frozenset({"stage_started", "stage_finished", "checkpoint"})
_TRAJECTORY_KINDS = trajectory.KINDS
_STAGE_NULLS = (None,) * (len(TRIAL_COLUMNS["stages"]) - 3)
_TRIAL_FIN_NULLS = (None,) * (len(_TRIAL_FIN) - 2 + 6) + trajectory.TRIAL_NULLS + (None,) * len(REGRADE_COLUMNS)

_first = itemgetter(0)
_second = itemgetter(1)
_NO_VARIANT = (None, None, None, False)


def regrade_values(fin) -> tuple:
    """The ``REGRADE_COLUMNS`` of one ``trial_finished`` event."""
    link = fin.regraded_from
    if link is None:
        return (fin.regrade_s, None, None, None, None)
    return (fin.regrade_s, link.run_id, link.trial_id, link.outcome, link.case_fingerprint)


def variant_keys(variants: dict) -> dict[str, tuple]:
    """variant → (model, harness, harness_version, simulated) for the trial rows, from
    variant → ``VariantInfo``."""
    return {k: (v.model, v.harness, v.harness_version, bool(v.simulated)) for k, v in variants.items()}


class TrialRows:
    """Resolves trials into row tuples (``TRIAL_COLUMNS``); what cannot be a row (events of a
    trial that never started) goes to ``quarantine``, what is worth telling to ``notes``.

    Events are compiled structs (``ingest.fastdecode``) or, for lines only pydantic accepts,
    models: both are read by attribute (several at once with ``attrgetter``). This runs once
    per trial (≈ a third of the normaliser's time), so the common shape — one
    ``trial_started`` first, ``trial_finished`` last — is found with list methods on the
    kinds rather than Python loops.
    """

    def __init__(self, source_file: str, prices: Prices | None, quarantine: list[QuarantineRow],
                 notes: list[str]) -> None:
        self.source_file, self.prices, self.quarantine, self.notes = source_file, prices, quarantine, notes

    def cost(self, u, model: str | None, event) -> tuple[float | None, str | None]:
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

    def resolve(self, trial_id: str, events: list[tuple], variants: dict, out: dict[str, list]) -> bool:
        """One trial's ``(seq, kind, event, µs)`` entries as row tuples in ``out``; whether it finished
        (a trial without a start is quarantined, and counts as finished: it is no incomplete trial)."""
        counted = self._since_last_start(trial_id, events)
        if counted is None:
            return True
        events, kinds = counted
        _s, _k, ts, ts_m = events[0]
        variant, case_id, config_id, repetition, order, seed = _get_start(ts)
        if kinds[-1] == "trial_finished":
            _s, _k, fin, fin_m = events[-1]
        elif "trial_finished" in kinds:
            _s, _k, fin, fin_m = events[len(kinds) - 1 - kinds[::-1].index("trial_finished")]
        else:
            fin = fin_m = None
        model, harness, harness_version, simulated = variants.get(variant, _NO_VARIANT)
        attempts, nflags = self._event_rows(trial_id, case_id, model, events, out)
        # Both are exact ints (contract-checked; pydantic turns true/1.0 into int 1): the same text
        # as compact_json({"seed":…, "order":…}), cheaper (no format spec: ``:d`` takes a slower path).
        labels = f'{{"order":{order},"seed":{seed}}}'
        head = (trial_id, "trialhouse", trial_id, config_id, variant, model,
                harness, harness_version, case_id, repetition)
        if fin is not None:
            u, fin_flags, fin_simulated, reason = _get_fin(fin)
            link = fin.regraded_from
            if link is not None:  # a regraded trial keeps the time its agent ran
                ts_m = exact_micros(link.started_at) if link.started_at is not None else ts_m
                fin_m = exact_micros(link.finished_at) if link.finished_at is not None else fin_m
            out["trials"].append((
                *head, True, ts_m, labels, max(fin_flags, nflags), fin_simulated or simulated,
                reason or None, fin_m, *self.cost(u, model, fin), *_get_trial_fin(fin), *_get_usage_t(u),
                *trajectory.trial_values(fin), *regrade_values(fin),
            ))
        else:
            out["trials"].append((
                *head, False, ts_m, labels, nflags, simulated, None, None, None, None,
                None, attempts or None, *_TRIAL_FIN_NULLS,
            ))
        return fin is not None

    def _since_last_start(self, trial_id: str, events: list[tuple]) -> tuple[list[tuple], list[str]] | None:
        """The entries from the trial's last ``trial_started`` on, in seq order, with their kinds;
        None when it has none (its events are quarantined)."""
        events.sort(key=_first)
        kinds = list(map(_second, events))
        n_starts = kinds.count("trial_started")
        if not n_starts:
            for _s, _k, e, _m in events:
                self.quarantine.append(QuarantineRow(
                    self.source_file, None,
                    f"{e.event} seq {e.seq}: trial {trial_id!r} has no trial_started event",
                    to_model(e).model_dump_json()[:4096]))
            return None
        if n_starts > 1:
            self.notes.append(f"trial {trial_id}: started {n_starts} times; only the last start counts")
            last = len(kinds) - 1 - kinds[::-1].index("trial_started")
            events, kinds = events[last:], kinds[last:]
        elif kinds[0] != "trial_started":
            first = kinds.index("trial_started")
            events, kinds = events[first:], kinds[first:]
        return events, kinds

    def _event_rows(self, trial_id: str, case_id: str, model: str | None, events: list[tuple],
                    out: dict[str, list]) -> tuple[int, int]:
        """The rows of every event after the start but the trial's own (attempts, stages, gradings,
        judgments, flags, steps, model calls) into ``out``: (attempts, flags) counted."""
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
                    s[6:8] = self.cost(u, model, e)
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
                    a[4], a[3] = m, compact_json(f) if f else "[]"
                else:
                    a[2], a[5], a[3] = e.outcome, m, compact_json(f) if f else "[]"
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
        return len(attempts), nflags
