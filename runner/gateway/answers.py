"""How the gateway answers a model call itself (``scripted`` and ``replay`` modes), and records it.

The answer is streamed as the script or recording says (waits and stalls included) and the
call's record is finished before the agent sees the end of the answer (docs/gateway.md).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import aiohttp
from aiohttp import web

from runner.agents.agent_report import short
from runner.gateway import sse
from runner.gateway.calls import AGENT_GONE, CallBook, TrialRoute
from runner.gateway.http import api_error
from runner.gateway.recording import ReplayMismatch, untemplated
from runner.gateway.script import Answer, ScriptMismatch, pick, render
from runner.gateway.wire import RequestInfo, ResponseTap


async def scripted(book: CallBook, request: web.Request, trial: TrialRoute, info: RequestInfo, attempt: int,
                    base: dict[str, Any]) -> web.StreamResponse:
    script = trial.script
    assert script is not None
    try:
        reply, _ = pick(script, info.position, attempt, info.side)
    except ScriptMismatch as exc:
        return refuse(book, trial, info, base, "script_mismatch", str(exc))
    model = script.response_model or info.model or "scripted-model"
    answer = render(info.api, reply, stream=info.stream, model=model, position=info.position,
                    attempt=attempt, variables=trial.variables)
    return await send(book, request, trial, info, answer, base)


async def replayed(book: CallBook, request: web.Request, trial: TrialRoute, info: RequestInfo, attempt: int,
                    base: dict[str, Any]) -> web.StreamResponse:
    assert trial.replay is not None
    try:
        answer = trial.replay.answer(info, attempt)
    except ReplayMismatch as exc:
        return refuse(book, trial, info, base, "replay_mismatch", str(exc))
    if trial.variables:
        answer = replace(answer, chunks=[(w, untemplated(c.decode("utf-8", "replace"), trial.variables).encode())
                                         for w, c in answer.chunks])
    return await send(book, request, trial, info, answer, base)


def refuse(book: CallBook, trial: TrialRoute, info: RequestInfo, base: dict[str, Any], kind: str,
            message: str) -> web.Response:
    # 400: clients do not retry it, so the run ends quickly with the reason visible.
    response = api_error(info.api, 400, f"trialhouse_{kind}", message)
    book.finish(trial, {**base, "status": 400, "error_type": f"trialhouse_{kind}",
                              "error": short(message, 500), "gateway_error": kind})
    return response


async def send(book: CallBook, request: web.Request, trial: TrialRoute, info: RequestInfo, answer: Answer,
                base: dict[str, Any]) -> web.StreamResponse:
    tap = ResponseTap(info.api)
    arrived = base.pop("_arrived")
    response = web.StreamResponse(status=answer.status, headers={"Content-Type": answer.content_type,
                                                                 **answer.headers})
    streamed = answer.content_type.startswith("text/event-stream")
    decoder = sse.SseDecoder()
    first: float | None = None
    body = bytearray()
    started = False
    done = False
    try:
        for wait, chunk in answer.chunks:
            if wait:
                await asyncio.sleep(wait)
            if not started:
                await response.prepare(request)
                started = True
            await response.write(chunk)
            body += chunk
            if streamed:
                for event in decoder.feed(chunk):
                    if tap.on_event(event) and first is None:
                        first = time.monotonic()
        if not started:
            await response.prepare(request)
        # The record exists before the agent sees the end of the answer, so whoever
        # reads the calls after the agent exits never misses its last one.
        done = True
        book.finish_tapped(trial, base, tap, info, answer.status, answer.headers, arrived, first,
                                 streamed, decoder, bytes(body))
        await response.write_eof()
    except (ConnectionResetError, aiohttp.ClientConnectionResetError, asyncio.CancelledError) as exc:
        if not done:  # what was sent before the agent hung up still counts
            book.finish_tapped(trial, {**base, "error": AGENT_GONE}, tap, info,
                                     answer.status if started else None, answer.headers, arrived, first,
                                     streamed, decoder, bytes(body))
        if isinstance(exc, asyncio.CancelledError):
            raise
    return response
