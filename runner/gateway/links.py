"""A route's socket directory and the gateway's caps: how sandboxes reach the gateway, and how much.

With ``isolation.network: gateway`` a sandbox has its own network namespace and sees the
run's gateway only through its route's directory (``RouteLink``): ``model.sock`` (the model
API, served by the gateway's aiohttp application) and ``proxy.sock`` (the HTTP(S) proxy of
``runner.gateway.proxy``), mounted read-only into the sandbox where a forwarder relays its
loopback ports to them (``runner.sandbox.forwarder``). The gateway knows which trial every
connection belongs to by the socket it arrived on, so it can hold each trial to its caps:
``max_connections`` open at once (one more is closed as soon as it is accepted, costing the
runner no descriptor it keeps) and ``max_requests`` per route. The first breach is the
route's ``limit`` (the trial ends ``budget_exhausted`` with it) and one console line; the
TCP listener (``open`` networks, judges) has one run-wide cap instead, since an idle
connection carries no route. docs/gateway.md, "Limits".
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.sandbox.forwarder import MODEL_SOCKET, PROXY_SOCKET

log = logging.getLogger("runner.gateway")

DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_MAX_REQUESTS = 5000
DEFAULT_MAX_TCP_CONNECTIONS = 1024
"""Connections the gateway's TCP listener holds at once, all routes together."""
SOCKET_PATH_MAX = 107
"""``sun_path`` holds 108 bytes with its NUL."""


@dataclass(frozen=True)
class Caps:
    """A route's caps (``GatewaySettings.max_connections``/``max_requests``)."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_requests: int = DEFAULT_MAX_REQUESTS


@dataclass
class Breach:
    """The first cap a route went over: which, its limit, and how far (``used``)."""

    kind: str
    """``connections`` (open at once) or ``requests`` (per route)."""
    limit: int
    used: int
    refused: int = 0
    """Connections refused over the cap (``connections``)."""

    @property
    def reason(self) -> str:
        if self.kind == "connections":
            return (f"model gateway: more than {self.limit} connections open at once "
                    f"(gateway.max_connections={self.limit}); {self.refused} beyond it refused")
        return (f"model gateway: more than {self.limit} requests in one stage "
                f"(gateway.max_requests={self.limit}); {self.used - self.limit} beyond it refused")


@dataclass
class Counter:
    """Connections open at once against a cap; the peak and the refusals, for the record."""

    cap: int
    open: int = 0
    peak: int = 0
    refused: int = 0

    def admit(self) -> bool:
        if self.open >= self.cap:
            self.refused += 1
            return False
        self.open += 1
        self.peak = max(self.peak, self.open)
        return True

    def release(self) -> None:
        self.open -= 1


class CountedProtocol(asyncio.Protocol):
    """An admitted connection: everything goes to the real protocol; its slot is freed when lost."""

    def __init__(self, inner: asyncio.Protocol, release: Callable[[], None],
                 live: set[asyncio.BaseTransport]) -> None:
        self.inner, self.release, self.live = inner, release, live
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.live.add(transport)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self.inner.connection_lost(exc)
        finally:
            if self.transport is not None:
                self.live.discard(self.transport)
            self.release()


class RefusedProtocol(asyncio.Protocol):
    """A connection over its cap: closed at once, so it holds no descriptor of the runner."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()  # type: ignore[attr-defined]


def counted(factory: Callable[[], asyncio.Protocol], counter: Counter, live: set[asyncio.BaseTransport],
            on_refused: Callable[[], None] | None = None) -> Callable[[], asyncio.Protocol]:
    """A protocol factory that admits connections against ``counter`` (``live``: the
    admitted connections' transports, to end them when their route closes)."""
    def make() -> asyncio.Protocol:
        if not counter.admit():
            if on_refused is not None:
                on_refused()
            return RefusedProtocol()
        return CountedProtocol(factory(), counter.release, live)
    return make


@dataclass
class RouteLink:
    """One route's socket directory, its listeners and the connections they admitted."""

    dir: Path
    counter: Counter
    servers: list[asyncio.AbstractServer] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    """The proxy's connection handlers still running."""
    live: set[asyncio.BaseTransport] = field(default_factory=set)
    """The model socket's admitted connections still open."""

    @property
    def model_socket(self) -> str:
        return str(self.dir / MODEL_SOCKET)

    async def close(self) -> None:
        """Stop listening and end every connection still open (the stage is over)."""
        for server in self.servers:
            server.close()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=5)
        for transport in list(self.live):
            transport.abort()  # type: ignore[attr-defined]
        shutil.rmtree(self.dir, ignore_errors=True)


async def open_link(path: Path, caps: Caps, model: Callable[[], asyncio.Protocol], proxy: Any,
                    on_refused: Callable[[RouteLink], None]) -> RouteLink:
    """Listen on ``path``'s ``model.sock`` (``model``: the gateway's aiohttp protocol factory)
    and ``proxy.sock`` (``proxy.handle``), both counted against one ``max_connections``."""
    from runner.gateway.proxy import HEAD_LIMIT

    link = RouteLink(path, Counter(caps.max_connections))
    loop = asyncio.get_running_loop()
    link.servers.append(await loop.create_unix_server(
        counted(model, link.counter, link.live, lambda: on_refused(link)), sock=bind_socket(path / MODEL_SOCKET)))

    async def on_proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not link.counter.admit():
            on_refused(link)
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        link.tasks.add(task)
        try:
            await proxy.handle(reader, writer)
        finally:
            link.tasks.discard(task)
            link.counter.release()

    link.servers.append(await asyncio.start_unix_server(on_proxy, sock=bind_socket(path / PROXY_SOCKET),
                                                        limit=HEAD_LIMIT))
    return link


class LinkRoot:
    """The gateway's directory of route links: short (socket paths), private to the runner's
    user except for traversal (the sandbox is given one route's directory, by its random name)."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def new_dir(self) -> Path:
        if self.path is None:
            base = "/tmp" if os.path.isdir("/tmp") else None
            self.path = Path(tempfile.mkdtemp(prefix="trialhouse-gw-", dir=base))
            os.chmod(self.path, 0o711)
        path = self.path / secrets.token_hex(8)
        path.mkdir(mode=0o711)
        os.chmod(path, 0o711)  # not the umask's: an unprivileged sandbox user must traverse it
        if len(str(path / PROXY_SOCKET)) > SOCKET_PATH_MAX:
            raise OSError(f"socket path too long under {path}")
        return path

    def remove(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


def bind_socket(path: Path) -> socket.socket:
    """A listening unix socket at ``path`` any user may connect to (the sandbox's is not ours)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o666)
    sock.listen(128)
    sock.setblocking(False)
    return sock


class OnceLog:
    """A console line per key, once: a flood is one line, not a million (docs/gateway.md)."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def warn(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            log.warning("%s", message)


class RateLimitFilter(logging.Filter):
    """At most one record per (logger, message template) every ``every_s`` seconds; the
    next one that passes says how many were left out. Installed on the loggers a descriptor
    or connection flood makes talk (asyncio's accept errors, aiohttp's server)."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._last: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        last, dropped = self._last.get(key, (-1e18, 0))
        if now - last < self.every_s:
            self._last[key] = (last, dropped + 1)
            return False
        self._last[key] = (now, 0)
        if dropped:
            record.msg = f"{record.msg} ({dropped} more like it in the last {self.every_s:g} s left out)"
        return True


FLOOD_LOGGERS = ("asyncio", "aiohttp.server", "aiohttp.access", "aiohttp.internal", "aiohttp.web")
_installed: list[RateLimitFilter] = []


def quiet_floods() -> None:
    """Install the rate limit on the flood-prone loggers (once per process)."""
    if _installed:
        return
    flt = RateLimitFilter()
    for name in FLOOD_LOGGERS:
        logging.getLogger(name).addFilter(flt)
    _installed.append(flt)
