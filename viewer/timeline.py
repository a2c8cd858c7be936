"""A trial's trajectory as a timeline: per attempt and stage, its steps in order (model
turns with tokens and the gateway's latency, tool calls, commands with their exit status),
the model calls no step stands for (side requests, judges, failed calls), the first edit,
and the final check (the last attempt's gradings). Pure: rows in, groups out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class Entry:
    kind: str  # model | tool | call | first_edit | check
    label: str
    at_s: float | None = None  # seconds since the trial started
    detail: str | None = None
    command: str | None = None
    exit_code: int | None = None
    ok: bool | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cache_read: int | None = None
    latency_s: float | None = None
    duration_s: float | None = None
    first_edit: bool = False
    paths: list[str] = field(default_factory=list)


@dataclass
class Group:
    attempt: int | None
    stage: str
    entries: list[Entry] = field(default_factory=list)
    stage_row: dict[str, Any] | None = None


def _offset(at: datetime | None, start: datetime | None) -> float | None:
    if at is None or start is None:
        return None
    return (at - start).total_seconds()


def _paths(raw: str | None) -> list[str]:
    try:
        found = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(p) for p in found][:10] if isinstance(found, list) else []


def _step(s: dict[str, Any], start: datetime | None) -> Entry:
    if s["kind"] == "model":
        label = "model turn" + (f" ({s['call_model']})" if s.get("call_model") else "")
        return Entry("model", label, _offset(s["started_at"], start), ok=s["ok"],
                     tokens_in=s["input_tokens"], tokens_out=s["output_tokens"], cache_read=s["cache_read_tokens"],
                     latency_s=s.get("latency_s"), duration_s=s["duration_s"],
                     detail=f"tokens from {s['tokens_from']}" if s.get("tokens_from") else None)
    label = " ".join(x for x in (s["tool"] or "tool", f"[{s['action']}]" if s["action"] else "") if x)
    return Entry("tool", label, _offset(s["started_at"], start), command=s["command"], exit_code=s["exit_code"],
                 ok=s["ok"], duration_s=s["duration_s"], paths=_paths(s["paths_json"]))


def _call(c: dict[str, Any], start: datetime | None) -> Entry:
    what = "side request" if c["side_request"] else "model call"
    status = c["status"]
    err = c["gateway_error"] or c["error_type"] or c["error"]
    return Entry("call", f"{what} #{c['call_index']} {c['model'] or ''}".strip(), _offset(c["started_at"], start),
                 ok=status == 200 if status is not None else None, tokens_in=c["input_tokens"],
                 tokens_out=c["output_tokens"], cache_read=c["cache_read_tokens"], latency_s=c["latency_s"],
                 detail=" · ".join(str(x) for x in (f"HTTP {status}" if status is not None else "no answer",
                                                     c["stop_reason"], err, c["usage_note"]) if x))


def build(trial: dict[str, Any], stages: list[dict], steps: list[dict], calls: list[dict],
          criteria: list[dict]) -> list[Group]:
    """The timeline groups in the order the stages ran; judges' calls after the agent's."""
    start = trial.get("started_at")
    groups: dict[tuple[int | None, str], Group] = {}
    for st in stages:
        groups[(st["attempt"], st["stage"])] = Group(st["attempt"], st["stage"], stage_row=st)

    def group(attempt: int | None, stage: str) -> Group:
        return groups.setdefault((attempt, stage), Group(attempt, stage))

    seen_calls = set()
    for s in steps:
        group(s["attempt"], s["stage"]).entries.append(_step(s, start))
        if s["kind"] == "model" and s.get("call_index") is not None:
            seen_calls.add((s["attempt"], s["stage"], s["call_index"]))
    for c in calls:
        if (c["attempt"], c["stage"], c["call_index"]) not in seen_calls:
            _insert(group(c["attempt"], c["stage"] or "?").entries, _call(c, start))
    ordered = sorted(groups.values(), key=lambda g: (g.stage.startswith("judge."), g.attempt or 0))
    _mark_first_edit(ordered, start)
    check = final_check(criteria, start)
    if check is not None:
        ordered.append(Group(None, "final check", [check]))
    return ordered


def _insert(entries: list[Entry], entry: Entry) -> None:
    """Steps keep their recorded order; a call goes before the first step that started after it."""
    if entry.at_s is not None:
        for i, e in enumerate(entries):
            if e.at_s is not None and e.at_s > entry.at_s:
                entries.insert(i, entry)
                return
    entries.append(entry)


def _mark_first_edit(groups: list[Group], start: datetime | None) -> None:
    for g in groups:
        for e in g.entries:
            if e.kind == "tool" and ("[edit]" in e.label):
                e.first_edit = True
                return
    for g in groups:  # no edit step: the stage's own first-edit time, when it reported one
        row = g.stage_row or {}
        if row.get("time_to_first_edit_s") is not None:
            at = _offset(row.get("started_at"), start)
            g.entries.insert(0, Entry("first_edit", "first edit (reported by the stage)",
                                      None if at is None else at + row["time_to_first_edit_s"], first_edit=True))
            return


def final_check(criteria: list[dict], start: datetime | None) -> Entry | None:
    """The gradings of the final state (``final``): how many criteria passed, which did not."""
    final = [c for c in criteria if c.get("final")]
    if not final:
        return None
    passed = [c for c in final if c["verdict"] == "passed"]
    failing = [f"{c['criterion_id']} ({c['verdict']})" for c in final if c["verdict"] != "passed"]
    last = max((c["ts"] for c in final if c.get("ts") is not None), default=None)
    return Entry("check", f"final check, attempt {final[0]['attempt']}: {len(passed)} of {len(final)} criteria passed",
                 _offset(last, start), ok=not failing, detail="; ".join(failing) or None)
