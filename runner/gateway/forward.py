"""``forward`` and ``record`` modes: the agent's call passed to the real provider, streaming through.

The provider key comes from the gateway's own environment (``Upstream.api_key_env``) and
replaces whatever key the agent sent, so the agent can run with a dummy key; it is never
stored. What comes back is written to the agent as it arrives and tapped on the way
(``runner.gateway.wire.ResponseTap``); however the call ends — answered, the agent hanging up,
the upstream silent, reset or unreachable — it becomes one record with the reason
(docs/gateway.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp import web

from runner.agents.agent_report import short
from runner.gateway import sse
from runner.gateway.calls import AGENT_GONE, CallBook, TrialRoute
from runner.gateway.http import HOP_HEADERS, api_error, json_error
from runner.gateway.recording import RECORD_BODY_LIMIT
from runner.gateway.records import Provider
from runner.gateway.settings import Upstream
from runner.gateway.wire import RequestInfo, ResponseTap


class Forwarder:
    """Sends calls upstream with the gateway's keys; ``session`` is set while the gateway serves."""

    def __init__(self, upstreams: Mapping[Provider, Upstream], env: Mapping[str, str], book: CallBook, *,
                 upstream_timeout_s: float, idle_timeout_s: float) -> None:
        self.upstreams = upstreams
        self._env = env
        self._book = book
        self.upstream_timeout_s, self.idle_timeout_s = upstream_timeout_s, idle_timeout_s
        self.session: aiohttp.ClientSession | None = None

    def open_session(self) -> None:
        """The client every forwarded call uses (inside the gateway's event loop)."""
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=self.upstream_timeout_s, sock_read=self.idle_timeout_s),
        )

    async def close_session(self) -> None:
        if self.session is not None:
            await self.session.close()

    async def forward(self, request: web.Request, trial: TrialRoute, info: RequestInfo, path: str, body: bytes,
                      base: dict[str, Any]) -> web.StreamResponse:
        """One model call, streamed through; its record (and recording) made however it ends."""
        arrived = base.pop("_arrived")
        upstream = self.upstreams.get(info.provider)
        if upstream is None:
            message = f"no upstream configured for provider {info.provider}"
            self._book.finish(trial, {**base, "status": 502, "error": message, "gateway_error": "upstream_unreachable",
                                      "latency_s": time.monotonic() - arrived})
            return api_error(info.api, 502, "api_error", message)
        assert self.session is not None
        exchange = _Exchange(self._book, trial, info, request, body, base, arrived)
        try:
            async with self.session.post(self._url(upstream, path, request), data=body,
                                         headers=self.upstream_headers(request, info.provider, upstream)) as up:
                await exchange.relay(up)
                return exchange.prepared_response()
        except asyncio.CancelledError:
            # The agent hung up (often right after the last event, before the upstream's
            # end): the tokens and tools already seen are still the call's.
            exchange.agent_gone()
            raise
        except TimeoutError:
            base.update(gateway_error="upstream_timeout",
                        error=f"upstream sent nothing for {self.idle_timeout_s:g} s or took over "
                              f"{self.upstream_timeout_s:g} s")
        except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:
            if exchange.response is None:
                base.update(gateway_error="upstream_unreachable", error=short(f"upstream reset: {exc}", 500))
            else:
                base.update(error="connection reset mid-stream")
        except aiohttp.ClientError as exc:
            base.update(gateway_error="upstream_unreachable", error=short(f"{type(exc).__name__}: {exc}", 500))
        return await exchange.failed()

    async def forward_other(self, request: web.Request, path: str) -> web.StreamResponse:
        """Anything else under /v1 (model lists, token counts): passed through, not a model call."""
        provider: Provider = "anthropic" if "anthropic-version" in request.headers else "openai"
        upstream = self.upstreams.get(provider)
        if upstream is None or self.session is None:
            return json_error(404, "not_found_error", f"{path}: no upstream for {provider}")
        body = await request.read()
        try:
            async with self.session.request(request.method, self._url(upstream, path, request), data=body or None,
                                            headers=self.upstream_headers(request, provider, upstream)) as up:
                data = await up.read()
                headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP_HEADERS}
                return web.Response(status=up.status, body=data, headers=headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return json_error(502, "api_error", self._book.redact(f"upstream failed: {exc}"))

    def upstream_headers(self, request: web.Request, provider: Provider, upstream: Upstream) -> dict[str, str]:
        """The agent's headers for the provider: hop headers dropped, the gateway's key in."""
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        headers["Accept-Encoding"] = "identity"
        if upstream.api_key_env:
            for name in list(headers):
                if name.lower() in ("x-api-key", "authorization"):
                    del headers[name]
            key = self._env.get(upstream.api_key_env, "")
            if provider == "anthropic":
                headers["x-api-key"] = key
            else:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    @staticmethod
    def _url(upstream: Upstream, path: str, request: web.Request) -> str:
        return upstream.base_url.rstrip("/") + path + (f"?{request.query_string}" if request.query_string else "")


class _Exchange:
    """One forwarded call in flight: what the upstream said so far, and how to record it."""

    def __init__(self, book: CallBook, trial: TrialRoute, info: RequestInfo, request: web.Request, body: bytes,
                 base: dict[str, Any], arrived: float) -> None:
        self.book, self.trial, self.info, self.request, self.body = book, trial, info, request, body
        self.base, self.arrived = base, arrived
        self.tap = ResponseTap(info.api)
        self.decoder = sse.SseDecoder()
        self.first: float | None = None
        self.kept = bytearray()
        self.response: web.StreamResponse | None = None
        self.status: int | None = None
        self.up_headers: dict[str, str] = {}
        self.streamed = False
        self.done = False

    async def relay(self, up: aiohttp.ClientResponse) -> None:
        """Stream the upstream's answer to the agent, tapping it; record it before the end."""
        self.status = up.status
        self.up_headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP_HEADERS}
        self.streamed = up.headers.get("Content-Type", "").startswith("text/event-stream")
        self.response = web.StreamResponse(status=up.status, headers=self.up_headers)
        await self.response.prepare(self.request)
        async for chunk in up.content.iter_any():
            await self.response.write(chunk)
            if len(self.kept) < RECORD_BODY_LIMIT:
                self.kept += chunk[: RECORD_BODY_LIMIT - len(self.kept)]
            if self.streamed:
                for event in self.decoder.feed(chunk):
                    if self.tap.on_event(event) and self.first is None:
                        self.first = time.monotonic()
        self.done = True
        self._finish(self.base)
        await self.response.write_eof()

    def prepared_response(self) -> web.StreamResponse:
        assert self.response is not None  # relay() prepared it
        return self.response

    def agent_gone(self) -> None:
        if not self.done:
            self._finish({**self.base, "error": AGENT_GONE})

    async def failed(self) -> web.StreamResponse:
        """The upstream failed (``base`` says how): an error answer, or the truncated stream ended."""
        if self.done:  # the agent went away while the answer's end was being written
            return self.prepared_response()
        base = self.base
        if self.response is None:
            gateway_status = 504 if base.get("gateway_error") == "upstream_timeout" else 502
            message = self.book.redact(base.get("error") or "upstream failed")
            fields = {**base, "status": gateway_status, "latency_s": time.monotonic() - self.arrived, "error": message}
            self.book.finish(self.trial, fields)
            self._record(gateway_status, {}, b"")
            return api_error(self.info.api, gateway_status, "api_error", message)
        # Failed mid-stream: record what arrived, then end the (truncated) answer.
        self._finish(base)
        try:
            await self.response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            pass
        return self.response

    def _finish(self, base: dict[str, Any]) -> None:
        self.book.finish_tapped(self.trial, base, self.tap, self.info, self.status, self.up_headers, self.arrived,
                                self.first, self.streamed, self.decoder, bytes(self.kept))
        self._record(self.status, self.up_headers, bytes(self.kept))

    def _record(self, status: int | None, headers: dict[str, str], response_body: bytes) -> None:
        self.book.record(self.trial, self.info, self.request.match_info["tail"], self.request.headers, self.body,
                         status, headers, response_body)
