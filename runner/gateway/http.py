"""The gateway's HTTP vocabulary: size limit, headers never passed on, and its own error answers.

An error the gateway answers itself has the shape of the API the agent called, so the
agent's client reports it as it would a provider's (docs/gateway.md).
"""

from __future__ import annotations

from aiohttp import web

from runner.gateway.records import Api

MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""Long agent sessions resend the whole conversation: aiohttp's 1 MiB default is too small."""
HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                         "proxy-connection", "host", "content-length", "content-encoding",
                         "accept-encoding"})
"""Headers of one hop, never passed on between the agent and the provider."""


def json_error(status: int, kind: str, message: str) -> web.Response:
    """An Anthropic-shaped error (also the shape of answers to no API at all)."""
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)


def api_error(api: Api, status: int, kind: str, message: str) -> web.Response:
    """An error in ``api``'s own shape."""
    if api == "messages":
        return json_error(status, kind, message)
    return web.json_response({"error": {"message": message, "type": kind, "param": None, "code": kind}},
                             status=status)
