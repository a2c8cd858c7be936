"""Trajectory step readers: what each harness's trajectory format says an agent did.

Two harness trajectory formats are read both by the runner (its mini-swe-agent agent kind)
and by the importers (mini-swe-agent run directories, Harbor's ATIF
``agent/trajectory.json``), and what a shell command did is the same rule for every source
of ``step`` events, so each rule is written once, here, in the contract both import.
Readers are pure functions of parsed JSON and return the step fields as dicts
(``runner.agents.steps.Step`` keyword arguments, minus ``index``/``source``/``stage``);
unknown fields are ignored and missing ones stay None. docs/trajectories.md documents the
heuristics.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.call_events import Action
from contract.values import as_count

STEP_READ_COMMANDS = frozenset({"cat", "head", "tail", "nl", "less", "more", "wc", "file", "stat", "bat", "view"})
STEP_SEARCH_COMMANDS = frozenset({"grep", "rg", "ag", "find", "ls", "tree", "fd", "locate", "which"})
_PATTERN_FIRST = frozenset({"sed", "grep", "rg", "ag", "awk", "perl", "egrep", "fgrep"})
SUBMIT_MARKER = re.compile(r"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT")
"""mini-swe-agent's submit command (never executed as a check)."""
EDIT_COMMAND = re.compile(
    r"(^|[;&|]\s*)(sed\s+(-[a-zA-Z]*i|--in-place)|perl\s+-[a-zA-Z]*i|patch\b|git\s+apply\b|tee\b|truncate\b"
    r"|touch\b|mv\b|cp\b|rm\b)|(?<![<>&0-9])>{1,2}\s*(?!&|/dev/null)[\w./-]",
)
"""A shell command that changes files: in-place editors, patch tools, redirections into
a file. A heuristic: ``python -c "open(...,'w')"`` is not recognised."""
CLAUDE_ACTIONS: dict[str, Action] = {
    "Read": "read", "NotebookRead": "read",
    "Edit": "edit", "MultiEdit": "edit", "Write": "edit", "NotebookEdit": "edit",
    "Bash": "run", "BashOutput": "run",
    "Grep": "search", "Glob": "search", "LS": "search", "WebSearch": "search", "WebFetch": "search",
}
"""Claude Code's structured tools → what they do."""
ATIF_FILE_TOOLS: dict[str, Action] = {
    "read_file": "read", "view": "read", "open_file": "read",
    "write_file": "edit", "edit_file": "edit", "str_replace_editor": "edit", "create_file": "edit",
    "apply_patch": "edit", "search": "search", "grep": "search", "find_file": "search",
}


def relative_path(path: str, workspace: str | Path | None) -> str:
    """``path`` relative to the workspace when it lies inside, else as given."""
    from pathlib import PurePosixPath

    if workspace is None:
        return path
    try:
        return PurePosixPath(path).relative_to(PurePosixPath(str(workspace))).as_posix()
    except ValueError:
        return path


def classify_command(command: str) -> tuple[Action, tuple[str, ...]]:
    """What a shell command does and the files it names (a heuristic).

    Edits: in-place editors, patch tools, redirections into a file (``EDIT_COMMAND``).
    Reads: ``cat``/``head``/``tail``/``nl``/``sed -n`` …; searches: ``grep``/``find``/``ls`` ….
    Anything else is ``run`` (tests, builds, scripts). A submit marker is ``other``.
    """
    import shlex
    from pathlib import PurePosixPath

    if SUBMIT_MARKER.search(command):
        return "other", ()
    paths = _shell_paths(command)
    if "apply_patch" in command or EDIT_COMMAND.search(command):
        return "edit", tuple(re.findall(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", command, re.M)) or paths
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    head = PurePosixPath(words[0]).name if words else ""
    if head in STEP_READ_COMMANDS or (head == "sed" and "-n" in words):
        return "read", paths
    if head in STEP_SEARCH_COMMANDS or words[:2] == ["git", "grep"]:
        return "search", paths
    return "run", ()


def _shell_paths(command: str) -> tuple[str, ...]:
    import shlex
    from pathlib import PurePosixPath

    try:
        words = shlex.split(command)
    except ValueError:
        return ()
    out = []
    skip_pattern = False
    for word in words:
        if word in ("&&", "||", ";", "|"):
            skip_pattern = False
            continue
        if PurePosixPath(word).name in _PATTERN_FIRST:  # the first operand is a pattern or script, not a file
            skip_pattern = True
            continue
        if word.startswith("-") or "=" in word:
            continue
        if skip_pattern:
            skip_pattern = False
            continue
        if re.fullmatch(r"[\w./-]+\.[A-Za-z0-9]+|[\w.-]+/[\w./-]*", word) and not word.startswith("http"):
            out.append(word)
    return tuple(dict.fromkeys(out))


def iso_time(value: object) -> datetime | None:
    """An ISO 8601 timestamp with a zone, or None."""
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo is not None else None


def epoch_time(value: object) -> datetime | None:
    """Seconds since the epoch → UTC datetime, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def mini_commands(message: dict[str, Any]) -> list[str]:
    """The shell commands a mini-swe-agent assistant message asked for (``extra.actions``)."""
    actions = _obj(message.get("extra")).get("actions")
    return [str(a.get("command")) for a in actions or [] if isinstance(a, dict) and a.get("command")]


def mini_trajectory_steps(doc: Any, workspace: str | Path | None = None) -> list[dict[str, Any]]:
    """A mini-swe-agent 2.x trajectory (``*.traj.json``): each assistant message is a model
    turn (usage from its raw response: ``prompt_tokens`` include ``cached_tokens``) followed by
    its ``extra.actions``, each finished by the tool message that answers it (``returncode``,
    ``timestamp``). The submit marker is never executed: no exit status."""
    messages = [m for m in _obj(doc).get("messages") or [] if isinstance(m, dict)]
    observations = {m["tool_call_id"]: _obj(m.get("extra")) for m in messages
                    if m.get("role") in ("tool", "user") and isinstance(m.get("tool_call_id"), str)}
    steps: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        extra = _obj(message.get("extra"))
        response = _obj(extra.get("response"))
        usage = _obj(response.get("usage"))
        total = as_count(usage.get("prompt_tokens"))
        cached = as_count(_obj(usage.get("prompt_tokens_details")).get("cached_tokens"))
        at = epoch_time(extra.get("timestamp"))
        steps.append({"kind": "model", "ok": True, "ended_at": at, "call_id": response.get("id"),
                      "input_tokens": None if total is None else max(total - (cached or 0), 0),
                      "output_tokens": as_count(usage.get("completion_tokens")), "cache_read_tokens": cached})
        listed = extra.get("actions")
        actions: list[Any] = listed if isinstance(listed, list) else []
        for action_obj, command in zip(actions, mini_commands(message), strict=False):
            seen = observations.get(str(action_obj.get("tool_call_id")), {})
            action, paths = classify_command(command)
            code = seen.get("returncode")
            code = code if isinstance(code, int) and not isinstance(code, bool) else None
            if SUBMIT_MARKER.search(command):
                code = None  # the submit marker is never executed (returncode -1): not a failure
            steps.append({"kind": "tool", "tool": "bash", "action": action,
                          "paths": tuple(relative_path(p, workspace) for p in paths), "command": command,
                          "exit_code": code, "ok": None if code is None else code == 0, "started_at": at,
                          "ended_at": epoch_time(seen.get("timestamp")), "call_id": action_obj.get("tool_call_id")})
    return steps


def atif_trajectory_steps(doc: Any, workspace: str | Path | None = None) -> list[dict[str, Any]]:
    """Harbor ``agent/trajectory.json`` (ATIF v1.x): agent steps → a model turn plus its tool
    calls; anything that is not ``ATIF-v1*`` gives no steps.

    ATIF's ``prompt_tokens`` include ``cached_tokens``; ``metrics.extra`` may carry
    ``cache_creation_input_tokens``. A step has one timestamp (when it occurred): it is
    the model turn's end and its tool calls' start. Observations carry no exit status.
    """
    if not str(_obj(doc).get("schema_version", "")).startswith("ATIF-v1"):
        return []
    steps: list[dict[str, Any]] = []
    for item in doc.get("steps") or []:
        if not isinstance(item, dict) or item.get("source") != "agent":
            continue
        at = iso_time(item.get("timestamp"))
        metrics = _obj(item.get("metrics"))
        total, cached = as_count(metrics.get("prompt_tokens")), as_count(metrics.get("cached_tokens"))
        steps.append({"kind": "model", "ok": True, "ended_at": at, "call_id": str(item.get("step_id")),
                      "input_tokens": None if total is None else max(total - (cached or 0), 0),
                      "output_tokens": as_count(metrics.get("completion_tokens")), "cache_read_tokens": cached,
                      "cache_write_tokens": as_count(_obj(metrics.get("extra")).get("cache_creation_input_tokens"))})
        for call in item.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            name = str(call.get("function_name") or "tool")
            args = _obj(call.get("arguments"))
            command = next((args[k] for k in ("command", "cmd", "keystrokes") if isinstance(args.get(k), str)), None)
            named = [args[k] for k in ("path", "file_path", "file", "notebook_path") if isinstance(args.get(k), str)]
            if command is not None:
                action, paths = classify_command(command.strip())
            else:  # structured tools: Harbor keeps the harness's own names (Claude's Read/Edit …)
                action, paths = ATIF_FILE_TOOLS.get(name) or CLAUDE_ACTIONS.get(name, "other"), ()
            steps.append({"kind": "tool", "tool": name, "action": action,
                          "paths": tuple(relative_path(p, workspace) for p in (named or paths)),
                          "command": command.strip() if command else None, "started_at": at,
                          "call_id": call.get("tool_call_id")})
    return steps
