"""``step``, ``model_call`` and ``network_connection`` events → the ``steps``, ``model_calls`` and
``network_connections`` tables, and the harness/gateway columns of ``stages`` and ``trials``
(warehouse/trajectory_tables.py).

Called from ``ingest.trial_rows`` (three hooks there: the table list, the
per-event branch of ``TrialRows._event_rows`` and the stage/trial rows), for the events of a trial after
its last ``trial_started``, exactly like the other per-trial tables. Rows are tuples in
``COLUMNS`` order with timestamps as microseconds since the epoch, which is what the
writer (``ingest.api._tuples_batch``) takes. Events are read by attribute, so the compiled
structs (``ingest.fastdecode``) and pydantic models both work.

The event contract carries step and call times as Unix seconds (``*_unix``): the compiled
decoder reads them as plain floats, and here they become microsecond timestamps.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec

_json = msgspec.json.Encoder().encode

TABLES = ("steps", "model_calls", "network_connections")
KINDS = frozenset({"step", "model_call", "network_connection"})

_STEP = ("attempt", "stage", "index", "kind", "source", "tool", "action", "command", "exit_code", "ok",
         "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "call_id", "tokens_from")
"""Step fields copied as they are (one ``attrgetter``); paths and times are converted."""
_CALL = ("attempt", "stage", "call_index", "started_at_unix", "mode", "provider", "api", "model", "response_model",
         "service_tier", "request_id", "response_id", "status", "streamed", "position", "side_request", "retries",
         "stop_reason", "tool_calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
         "reasoning_tokens", "latency_s", "ttft_s", "error_type", "error", "gateway_error", "usage_note")

_CONN = ("attempt", "stage", "host", "port", "method", "allowed", "reason", "bytes_up", "bytes_down", "duration_s")

COLUMNS: dict[str, tuple[str, ...]] = {
    "steps": ("trial_id", "attempt", "stage", "step_index", "kind", "source", "tool", "action", "command",
              "exit_code", "ok", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
              "call_id", "tokens_from", "paths_json", "started_at", "ended_at", "duration_s"),
    "model_calls": ("trial_id", "attempt", "stage", "call_index", "started_at", *_CALL[4:18], "tool_calls_json",
                    *_CALL[19:]),
    "network_connections": ("trial_id", *_CONN, "started_at"),
}
"""Column order of the row tuples per table (``ingest.trial_rows.TRIAL_COLUMNS`` takes them in)."""

STAGE_COLUMNS = ("harness_version", "session_id", "cost_basis", "claimed_cost_usd", "claimed_cost_basis",
                 "permission_denials", "denied_tools_json", "context_exhausted", "tokens_from", "trajectory_steps",
                 "gateway_calls", "gateway_failed_calls", "gateway_retries", "gateway_input_tokens",
                 "gateway_output_tokens", "gateway_cache_read_tokens", "gateway_cache_write_tokens", "gateway_model_s")
"""Appended to the ``stages`` row tuples, filled from ``stage_finished``."""
TRIAL_COLUMNS = ("cost_basis", "gateway_calls", "gateway_input_tokens", "gateway_output_tokens",
                 "gateway_cache_read_tokens", "gateway_cache_write_tokens", "gateway_model_s", "patch_paths_json",
                 "gateway_models_json", "model_substituted")
"""Appended to the ``trials`` row tuples, filled from ``trial_finished``."""
TRIAL_NULLS = (None,) * len(TRIAL_COLUMNS)

_get_step = attrgetter(*_STEP)
_get_step_conv = attrgetter("paths", "started_at_unix", "ended_at_unix")
_get_call_head = attrgetter(*_CALL[:3])
_get_call_mid = attrgetter(*_CALL[4:18])
_get_call_tail = attrgetter(*_CALL[19:])
_get_conn = attrgetter(*_CONN)
_get_stage = attrgetter("harness_version", "session_id", "claimed_cost_usd", "cost_basis", "permission_denials",
                        "context_exhausted", "tokens_from", "trajectory_steps", "gateway_usage")
_get_gateway = attrgetter("calls", "failed_calls", "retries", "input_tokens", "output_tokens", "cache_read_tokens",
                          "cache_write_tokens", "model_s")
_GATEWAY_NULLS = (None,) * 8


def _list(values: list[str]) -> str:
    """A JSON list (msgspec: several times faster than ``json.dumps`` on this path)."""
    return _json(values).decode() if values else "[]"


def add(kind: str, event: Any, trial_id: str, out: dict[str, list]) -> None:
    """One ``step``, ``model_call`` or ``network_connection`` event → one row tuple in ``out[table]``.

    Unix seconds become microseconds (rounded half up; the sources carry milliseconds)."""
    if kind == "network_connection":
        out["network_connections"].append((trial_id, *_get_conn(event), int(event.started_at_unix * 1_000_000 + 0.5)))
        return
    if kind == "step":
        paths, start, end = _get_step_conv(event)
        if start is None or end is None:
            duration = None
            start = None if start is None else int(start * 1_000_000 + 0.5)
            end = None if end is None else int(end * 1_000_000 + 0.5)
        else:
            duration = end - start if end > start else 0.0
            start, end = int(start * 1_000_000 + 0.5), int(end * 1_000_000 + 0.5)
        out["steps"].append((trial_id, *_get_step(event), _list(paths) if paths else "[]", start, end, duration))
        return
    tools = event.tool_calls
    out["model_calls"].append((trial_id, *_get_call_head(event), int(event.started_at_unix * 1_000_000 + 0.5),
                               *_get_call_mid(event), _list(tools) if tools else "[]", *_get_call_tail(event)))


def stage_values(event: Any) -> tuple:
    """The ``STAGE_COLUMNS`` of one ``stage_finished`` event."""
    version, session, claimed, claimed_basis, denials, context, tokens_from, n_steps, gw = _get_stage(event)
    usage_basis = event.usage.cost_basis
    names = [d.tool_name for d in denials] if denials else []
    gateway = _get_gateway(gw) if gw is not None else _GATEWAY_NULLS
    if version is None and not names:  # not a harness stage: nobody said what was denied
        return (None, session, usage_basis, claimed, claimed_basis, None, None, None, tokens_from, n_steps, *gateway)
    return (version, session, usage_basis, claimed, claimed_basis, len(names),
            _list(names), context, tokens_from, n_steps, *gateway)


def trial_values(event: Any) -> tuple:
    """The ``TRIAL_COLUMNS`` of one ``trial_finished`` event."""
    gw, paths = event.gateway_usage, event.patch_paths
    patch = None if paths is None else _list(paths)
    if gw is None:
        return (event.usage.cost_basis, *TRIAL_NULLS[1:-3], patch, None, event.model_substituted)
    return (event.usage.cost_basis, gw.calls, gw.input_tokens, gw.output_tokens, gw.cache_read_tokens,
            gw.cache_write_tokens, gw.model_s, patch, _list(gw.models), event.model_substituted)
