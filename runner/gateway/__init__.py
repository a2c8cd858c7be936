"""Model gateway: a loopback proxy that measures, records, replays or scripts model calls.

See :mod:`runner.gateway.server` for the modes and docs/gateway.md for the recipes.
"""

from runner.gateway.recording import recording_path, route_key
from runner.gateway.records import CallRecord, gateway_failure
from runner.gateway.script import Reply, Script, Step, Tokens, ToolCall, load_script
from runner.gateway.server import Gateway
from runner.gateway.settings import DEFAULT_UPSTREAMS, MODES, GatewayConfigError, Upstream

__all__ = [
    "DEFAULT_UPSTREAMS",
    "MODES",
    "Gateway",
    "GatewayConfigError",
    "CallRecord",
    "Reply",
    "Script",
    "Step",
    "Tokens",
    "ToolCall",
    "gateway_failure",
    "Upstream",
    "load_script",
    "recording_path",
    "route_key",
]
