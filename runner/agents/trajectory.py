"""Trajectories to step rows: one :class:`~runner.agents.steps.Step` per model turn and tool call.

Pure functions over the files harnesses leave behind, each checked on real recordings
(tests/runner/agents/fixtures/real) or on the format's documented example (ATIF):

===================  =========================================================
Claude Code          ``stream-json`` stdout: ``assistant`` lines (one model turn
                     per message id; ``tool_use`` blocks) and ``user`` lines
                     (``tool_result`` with ``is_error``).
Codex CLI            the session rollout (timestamps, per-call usage, parsed
                     commands) when present, else ``--json`` ``item.*`` events
                     (no timestamps, no per-call usage).
mini-swe-agent       the trajectory file: assistant messages with their raw
                     response and ``extra.actions``; tool messages with
                     ``returncode`` and ``timestamp``.
agent-events file    ``step``, ``tool_call``, ``file_edit`` lines (docs/agent-events.md).
gateway              ``model_call`` records: model turns with exact tokens and times.
Harbor ATIF          ``agent/trajectory.json`` (schema ``ATIF-v1.x``).
===================  =========================================================

What each step *did* (read, edit, run, search) comes from the tool's name for
structured tools and from the command for shell tools; the latter is a heuristic
(:func:`classify_command`), documented in docs/trajectories.md. Unknown fields are
ignored and missing ones stay None: a trajectory from a newer CLI version yields fewer
filled fields, never an error.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from contract.trajectory import (
    CLAUDE_ACTIONS,
    atif_trajectory_steps,
    classify_command,
    mini_trajectory_steps,
)
from contract.trajectory import epoch_time as epoch
from contract.trajectory import relative_path as relative
from runner.agents.agent_report import as_object, count, iter_json_lines, timestamp
from runner.agents.steps import Action, Step

# ---------------------------------------------------------------- shared helpers


def unwrap_shell(command: str) -> str:
    """``/bin/bash -lc 'cat x'`` → ``cat x`` (Codex wraps every command this way)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and PurePosixPath(words[0]).name in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
        return words[2]
    return command


def _renumber(steps: list[Step]) -> list[Step]:
    return [replace(s, index=i) for i, s in enumerate(steps)]


# ---------------------------------------------------------------- Claude Code


def claude_steps(path: Path, *, workspace: str | Path | None = None, stage: str | None = None) -> list[Step]:
    """Claude Code ``stream-json`` → steps (``json`` output has no per-step data)."""
    models: dict[str, dict[str, Any]] = {}
    order: list[tuple[str, str]] = []  # ("model", message id) | ("tool", tool_use id)
    tools: dict[str, dict[str, Any]] = {}
    results: dict[str, tuple[datetime | None, bool, str]] = {}
    denied: set[str] = set()
    for obj in iter_json_lines(Path(path)):
        if obj is None:
            continue
        ts = timestamp(obj.get("timestamp"))
        message = obj.get("message") if isinstance(obj.get("message"), dict) else None
        if obj.get("type") == "assistant" and message is not None and obj.get("parent_tool_use_id") is None:
            mid = str(message.get("id"))
            if mid not in models:
                models[mid] = {"usage": message.get("usage") or {}, "ended": ts}
                order.append(("model", mid))
            elif ts is not None:
                models[mid]["ended"] = ts
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    tid = str(block.get("id"))
                    tools[tid] = {"name": block.get("name"), "input": block.get("input") or {}, "started": ts}
                    order.append(("tool", tid))
        elif obj.get("type") == "user" and message is not None:
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = block.get("content")
                    text = text if isinstance(text, str) else json.dumps(text)
                    results[str(block.get("tool_use_id"))] = (ts, block.get("is_error") is True, text)
        elif obj.get("type") == "result":
            for denial in obj.get("permission_denials") or []:
                if isinstance(denial, dict):
                    denied.add(str(denial.get("tool_use_id")))
    steps: list[Step] = []
    for kind, key in order:
        if kind == "model":
            usage = models[key]["usage"]
            steps.append(Step(
                index=0, kind="model", source="claude-stream-json", stage=stage, ok=True,
                ended_at=models[key]["ended"], call_id=key,
                input_tokens=count(usage.get("input_tokens")),
                output_tokens=None,  # the line carries message_start's snapshot, not the final count
                cache_read_tokens=count(usage.get("cache_read_input_tokens")),
                cache_write_tokens=count(usage.get("cache_creation_input_tokens")),
            ))
            continue
        call = tools[key]
        name = str(call["name"])
        args = call["input"] if isinstance(call["input"], dict) else {}
        done, failed, text = results.get(key, (None, False, ""))
        file_path = args.get("file_path") or args.get("notebook_path") or args.get("path")
        command = args.get("command") if name == "Bash" else None
        exit_code = None
        if name == "Bash" and key in results and key not in denied:
            match = re.match(r"Exit code (\d+)", text)
            exit_code = int(match.group(1)) if match else (None if failed else 0)
        steps.append(Step(
            index=0, kind="tool", source="claude-stream-json", stage=stage, tool=name,
            action=CLAUDE_ACTIONS.get(name, "other"),
            paths=(relative(str(file_path), workspace),) if isinstance(file_path, str) else (),
            command=command if isinstance(command, str) else None,
            exit_code=exit_code,
            ok=None if key not in results else not (failed or key in denied),
            started_at=call["started"], ended_at=done, call_id=key,
        ))
    return _renumber(steps)


# ---------------------------------------------------------------- Codex


_CODEX_ACTIONS: dict[str, Action] = {"read": "read", "search": "search", "list_files": "search"}


def codex_steps(stdout: Path, *, rollout: Path | None = None, workspace: str | Path | None = None,
                stage: str | None = None) -> list[Step]:
    """Codex → steps: from the rollout when there is one (times, per-call tokens), else ``--json``."""
    if rollout is not None and Path(rollout).is_file():
        return _codex_rollout_steps(Path(rollout), workspace, stage)
    steps: list[Step] = []
    for obj in iter_json_lines(Path(stdout)):
        if obj is None or obj.get("type") != "item.completed" or not isinstance(obj.get("item"), dict):
            continue
        item = obj["item"]
        kind = item.get("type", item.get("item_type"))
        if kind == "command_execution":
            command = unwrap_shell(str(item.get("command") or ""))
            action, paths = classify_command(command)
            exit_code = count(item.get("exit_code"))
            steps.append(Step(0, "tool", "codex-json", stage, "exec_command", action,
                              tuple(relative(p, workspace) for p in paths), command, exit_code,
                              item.get("status") == "completed" and exit_code == 0, call_id=item.get("id")))
        elif kind == "file_change":
            paths = tuple(relative(str(c.get("path")), workspace) for c in item.get("changes") or [] if isinstance(c, dict))
            steps.append(Step(0, "tool", "codex-json", stage, "apply_patch", "edit", paths,
                              ok=item.get("status") == "completed", call_id=item.get("id")))
        elif kind in ("mcp_tool_call", "web_search"):
            name = f"{item.get('server')}.{item.get('tool')}" if kind == "mcp_tool_call" else "web_search"
            steps.append(Step(0, "tool", "codex-json", stage, name, "search" if kind == "web_search" else "other",
                              ok=item.get("status") in ("completed", None), call_id=item.get("id")))
    return _renumber(steps)


def _codex_rollout_steps(path: Path, workspace: str | Path | None, stage: str | None) -> list[Step]:
    timed: list[tuple[datetime | None, int, Step]] = []
    clock = _CallClock()
    for n, obj in enumerate(iter_json_lines(path)):
        if obj is None or not isinstance(obj.get("payload"), dict):
            continue
        payload, ts = obj["payload"], timestamp(obj.get("timestamp"))
        if obj.get("type") == "response_item" or payload.get("type") == "task_started":
            clock.see(payload, ts)
        elif obj.get("type") == "token_usage_record" and isinstance(payload.get("usage"), dict):
            u = payload["usage"]
            total, cached = count(u.get("input_tokens")), count(u.get("cached_input_tokens"))
            timed.append((ts, n, Step(
                0, "model", "codex-rollout", stage, ok=True, started_at=clock.asked(ts), ended_at=ts,
                call_id=payload.get("response_id"),
                input_tokens=None if total is None else max(total - (cached or 0), 0),
                output_tokens=count(u.get("output_tokens")), cache_read_tokens=cached,
                cache_write_tokens=count(u.get("cache_write_input_tokens")))))
        elif (obj.get("type") == "event_msg" and payload.get("type") == "item_completed"
              and isinstance(payload.get("item"), dict)):
            step = _rollout_item(payload, workspace, stage)
            if step is not None:
                step = clock.time(step)
                timed.append((step.ended_at or ts, n, step))
    # token_usage_record is written when a call ends; items when the tool ends. Sort by time.
    timed.sort(key=lambda t: (t[0] is None, t[0] or datetime.min.replace(tzinfo=UTC), t[1]))
    return _renumber([s for _, _, s in timed])


COLLAPSED_S = 0.001
"""A tool item whose recorded start and end are at most this far apart (the rollout's
millisecond resolution) did not record its start."""


class _CallClock:
    """When the model's open tool call was issued, from the rollout's ``response_item`` lines.

    Codex 0.171 inside a sandbox writes most items with ``started_at_ms == completed_at_ms``
    (a duration of a few microseconds, measured), although the command ran for a tenth of a
    second: read as is, every tool takes 0 s and the model's share of the time is a fake 1.0.
    The rollout does stamp when the model's call (``function_call``, ``custom_tool_call`` …)
    was written and when its output came back; an item that did not record its start started
    when that call was issued, or when the item before it in the same call ended. Without an
    open call its start stays unknown. A model turn starts when the task started or the last
    call output was written (what Codex sends next), when the gateway did not time it
    (docs/trajectories.md)."""

    def __init__(self) -> None:
        self.issued: datetime | None = None
        self.last_end: datetime | None = None
        self.ready: datetime | None = None

    def see(self, payload: dict[str, Any], ts: datetime | None) -> None:
        kind = payload.get("type")
        if not isinstance(kind, str):
            return
        if kind.endswith("_call_output") or kind == "task_started":
            self.issued = self.last_end = None
            self.ready = ts
        elif kind.endswith("_call"):
            self.issued, self.last_end = ts, None

    def asked(self, answered: datetime | None) -> datetime | None:
        """When the model turn answered at ``answered`` was asked for (None: not known)."""
        start, self.ready = self.ready, None
        return start if start is not None and answered is not None and start <= answered else None

    def time(self, step: Step) -> Step:
        start, end = step.started_at, step.ended_at
        if end is not None and (start is None or (end - start).total_seconds() <= COLLAPSED_S):
            begun = self.last_end or self.issued
            start = begun if begun is not None and begun <= end else None
            step = replace(step, started_at=start)
        self.last_end = end or self.last_end
        return step


def _rollout_item(payload: dict[str, Any], workspace: str | Path | None, stage: str | None) -> Step | None:
    item = payload["item"]
    started = _ms(payload.get("started_at_ms"))
    ended = _ms(payload.get("completed_at_ms"))
    kind = item.get("type")
    if kind == "CommandExecution":
        argv = item.get("command")
        command = argv[-1] if isinstance(argv, list) and argv else str(argv or "")
        parsed = [p for p in item.get("parsed_cmd") or [] if isinstance(p, dict)]
        action, paths = classify_command(command)
        if parsed and parsed[0].get("type") in _CODEX_ACTIONS:
            action = _CODEX_ACTIONS[parsed[0]["type"]]
            paths = tuple(str(p["path"]) for p in parsed if p.get("path")) or paths
        exit_code = count(item.get("exit_code"))
        return Step(0, "tool", "codex-rollout", stage, "exec_command", action,
                    tuple(relative(p, workspace) for p in paths), command, exit_code,
                    item.get("status") == "completed" and exit_code == 0, started, ended, call_id=item.get("id"))
    if kind == "FileChange":
        changes = item.get("changes") if isinstance(item.get("changes"), dict) else {}
        return Step(0, "tool", "codex-rollout", stage, "apply_patch", "edit",
                    tuple(relative(p, workspace) for p in changes), ok=item.get("status") == "completed",
                    started_at=started, ended_at=ended, call_id=item.get("id"))
    if kind in ("McpToolCall", "WebSearch"):
        return Step(0, "tool", "codex-rollout", stage, str(item.get("tool") or kind),
                    "search" if kind == "WebSearch" else "other", ok=item.get("status") == "completed",
                    started_at=started, ended_at=ended, call_id=item.get("id"))
    return None


def _ms(value: object) -> datetime | None:
    moment = epoch(value / 1000) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return moment


# ---------------------------------------------------------------- mini-swe-agent


def mini_steps(path: Path, *, workspace: str | Path | None = None, stage: str | None = None) -> list[Step]:
    """A mini-swe-agent trajectory file (``contract.trajectory.mini_trajectory_steps``)."""
    return _from_fields(_read_json(path), mini_trajectory_steps, "mini-trajectory", workspace, stage)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_bytes().decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None


def _from_fields(doc: Any, reader: Any, source: str, workspace: str | Path | None, stage: str | None) -> list[Step]:
    return [Step(index=i, source=source, stage=stage, **fields) for i, fields in enumerate(reader(doc, workspace))]


# ---------------------------------------------------------------- agent events, gateway, ATIF


def agent_events_steps(path: Path, *, stage_started_at: datetime | None = None,
                       stage: str | None = None) -> list[Step]:
    """Our agent-events file: ``step`` → model turn, ``tool_call`` → tool, ``file_edit`` → edit."""
    steps: list[Step] = []
    for obj in iter_json_lines(Path(path)):
        if obj is None or not isinstance(obj.get("type"), str):
            continue
        at = timestamp(obj.get("ts"))
        elapsed = obj.get("elapsed_s")
        if at is None and stage_started_at is not None and isinstance(elapsed, int | float) and not isinstance(elapsed, bool):
            at = stage_started_at + timedelta(seconds=float(elapsed))
        kind = obj["type"]
        if kind == "step":
            steps.append(Step(0, "model", "agent-events", stage, tool=None, ended_at=at))
        elif kind == "tool_call":
            args = as_object(obj.get("args"))
            command = args.get("command") if isinstance(args.get("command"), str) else None
            named = [args[k] for k in ("path", "file", "file_path") if isinstance(args.get(k), str)]
            action, paths = classify_command(command) if command else ("other", ())
            name = str(obj.get("name") or "tool")
            if not command:
                action = "edit" if re.search(r"edit|write|patch", name, re.I) else \
                    "read" if re.search(r"read|open|view|cat", name, re.I) else \
                    "search" if re.search(r"search|grep|find|glob|list", name, re.I) else "other"
            exit_code = count(obj.get("exit_code"))
            steps.append(Step(0, "tool", "agent-events", stage, name, action, tuple(named) or paths, command,
                              exit_code, None if exit_code is None else exit_code == 0, ended_at=at))
        elif kind == "file_edit" and isinstance(obj.get("path"), str):
            steps.append(Step(0, "tool", "agent-events", stage, "file_edit", "edit", (obj["path"],), ok=True,
                              ended_at=at))
    return _renumber(steps)


def gateway_steps(calls: Iterable[Any], *, stage: str | None = None) -> list[Step]:
    """Gateway ``model_call`` records (models or dicts) → model turns; side requests left out."""
    steps = []
    for call in calls:
        c = call if isinstance(call, Mapping) else call.model_dump()
        if c.get("side_request"):
            continue
        started = c["ts"] if isinstance(c["ts"], datetime) else timestamp(c["ts"])
        ended = started + timedelta(seconds=float(c["latency_s"])) if started is not None else None
        steps.append(Step(0, "model", "gateway", stage, ok=c.get("status") == 200, started_at=started,
                          ended_at=ended, input_tokens=c.get("input_tokens"), output_tokens=c.get("output_tokens"),
                          cache_read_tokens=c.get("cache_read_tokens"), cache_write_tokens=c.get("cache_write_tokens"),
                          call_id=c.get("response_id") or c.get("request_id")))
    return _renumber(steps)


def attach_gateway(steps: list[Step], calls: Iterable[Any]) -> list[Step]:
    """Fill model turns' tokens and times from the gateway records they quote (by response id).

    Harness logs either lack per-turn output tokens (Claude) or times (Codex ``--json``);
    the gateway saw each call on the wire. Turns without a matching record stay as they are.
    A tool call without a start time gets the end of the gateway-measured turn before it.
    """
    by_id = {s.call_id: s for s in gateway_steps(calls) if s.call_id}
    out: list[Step] = []
    turn_end = None
    for step in steps:
        seen = by_id.get(step.call_id) if step.kind == "model" and step.call_id is not None else None
        if seen is not None:
            step = replace(step, started_at=seen.started_at, ended_at=seen.ended_at, ok=seen.ok,
                           input_tokens=seen.input_tokens, output_tokens=seen.output_tokens,
                           cache_read_tokens=seen.cache_read_tokens, cache_write_tokens=seen.cache_write_tokens)
        if step.kind == "model":
            turn_end = step.ended_at if seen is not None else None
        elif step.started_at is None and turn_end is not None and step.ended_at is not None:
            # A tool call starts when the turn that asked for it ended (Claude 2.1.197 stamps
            # only tool results): inferred only from a gateway-measured turn end.
            step = replace(step, started_at=min(turn_end, step.ended_at))
        out.append(step)
    return out


def atif_steps(path: Path, *, workspace: str | Path | None = None, stage: str | None = None) -> list[Step]:
    """Harbor ``agent/trajectory.json`` (``contract.trajectory.atif_trajectory_steps``)."""
    return _from_fields(_read_json(path), atif_trajectory_steps, "atif", workspace, stage)
