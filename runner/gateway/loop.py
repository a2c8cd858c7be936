"""An asyncio event loop in a background thread, so synchronous runner code can serve from it.

The gateway runs its aiohttp server, its route sockets and its proxy on one such loop
(``runner.gateway.server``); the runner's threads reach it through ``call``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Start with ``start_loop(setup)``; ``call(coro)`` runs a coroutine on it and waits."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start_loop(self, setup: Callable[[], Awaitable[None]], name: str) -> BaseException | None:
        """Run ``setup()`` on a new loop in a daemon thread, then serve; the failure, if any."""
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(setup())
            except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name=name, daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            return failure[0]
        return None

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run ``coro`` on the loop and wait for its result."""
        assert self._loop is not None, "the loop is not running"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout)

    def stop_loop(self, shutdown: Coroutine[Any, Any, None]) -> None:
        """Run ``shutdown`` on the loop, then stop it and join its thread."""
        if self._thread is None or self._loop is None:
            shutdown.close()
            return
        self.call(shutdown)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._thread = None
