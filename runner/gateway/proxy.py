"""The gateway's HTTP(S) proxy: the only way from a ``gateway`` sandbox to a host beyond the gateway.

Agents in a sandbox with ``isolation.network: gateway`` get ``HTTPS_PROXY``/``HTTP_PROXY``
pointing at the forwarder on their own loopback, which relays to their route's
``proxy.sock`` (``runner.gateway.links``). Here each connection's request head is read
(``CONNECT host:port`` for HTTPS, an absolute ``http://`` URL for plain HTTP), the host is
checked against ``isolation.allow_hosts`` and either refused (403) or connected from the
runner's side and relayed byte for byte. Every connection, allowed or refused, becomes one
:class:`~runner.gateway.records.ConnectionRecord` (host, port, method, allowed, reason,
bytes each way, duration): the ``network_connection`` events of the stage. The agent never
resolves a name itself: the sandbox has no DNS. docs/gateway.md, "The proxy".
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
DEFAULT_PORTS = (80, 443)
"""Ports an allow-list entry without ``:port`` opens."""
_DROP = (b"proxy-connection:", b"proxy-authorization:", b"connection:", b"keep-alive:")


def allowed(host: str, port: int, allow: Sequence[str]) -> bool:
    """Whether ``host:port`` is on the list: ``name`` (ports 80 and 443), ``*.domain`` (any
    name below the domain, not the domain itself), either with ``:port`` (that port only)."""
    host = host.lower().rstrip(".")
    for entry in allow:
        name, _, want = entry.lower().partition(":")
        if (int(want) != port) if want else (port not in DEFAULT_PORTS):
            continue
        if name.startswith("*.") and host.endswith(name[1:]):
            return True
        if host == name:
            return True
    return False


@dataclass(frozen=True)
class Target:
    """What one proxy request asks for."""

    method: str
    host: str
    port: int
    head: bytes
    """The head to send upstream (plain HTTP: in origin form, ``Connection: close``); CONNECT: empty."""


def parse_head(head: bytes) -> Target | None:
    """The target of a proxy request head, or None when it is not one we serve."""
    first, _, rest = head.partition(b"\r\n")
    parts = first.decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    method, target, version = parts
    if method == "CONNECT":
        host, sep, digits = target.rpartition(":")
        if not sep or not digits.isdigit() or not host:
            return None
        return Target(method, host.strip("[]").lower(), int(digits), b"")
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return None
    try:
        port = url.port or 80
    except ValueError:
        return None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    lines = [ln for ln in rest.split(b"\r\n") if ln and not ln.lower().startswith(_DROP)]
    upstream = b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *lines, b"Connection: close"])
    return Target(method, url.hostname.lower(), port, upstream + b"\r\n\r\n")


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: list[int]) -> None:
    try:
        while data := await reader.read(65536):
            count[0] += len(data)
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()


def _answer(writer: asyncio.StreamWriter, status: str, why: str) -> None:
    body = f"trialhouse gateway: {why}\n".encode()
    writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)


class Proxy:
    """Serves one route's proxy connections; ``record`` gets each finished connection's fields."""

    def __init__(self, allow: Sequence[str], record: Callable[[dict[str, object]], None],
                 admit_request: Callable[[], str | None]) -> None:
        self.allow = list(allow)
        self.record = record
        self.admit_request = admit_request
        """None to go on, else why the route refuses another request (its cap)."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        started, t0 = time.time(), time.monotonic()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            writer.close()
            return
        target = parse_head(head)
        if target is None:
            _answer(writer, "400 Bad Request", "not a proxy request (CONNECT host:port, or an http:// URL)")
            writer.close()
            return
        fields: dict[str, object] = {"host": target.host, "port": target.port, "method": target.method,
                                     "allowed": allowed(target.host, target.port, self.allow),
                                     "started_at_unix": started}
        up = [0]
        down = [0]
        try:
            fields["reason"] = await self._serve(target, fields, reader, writer, up, down)
        finally:
            fields.update(bytes_up=up[0], bytes_down=down[0], duration_s=round(time.monotonic() - t0, 6))
            writer.close()
            self.record(fields)

    async def _serve(self, target: Target, fields: dict[str, object], reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter, up: list[int], down: list[int]) -> str | None:
        """Refuse, fail or relay the connection; returns the reason when it was not relayed."""
        capped = self.admit_request()
        if capped is not None:
            _answer(writer, "429 Too Many Requests", capped)
            return capped
        if not fields["allowed"]:
            why = f"{target.host}:{target.port} is not in isolation.allow_hosts"
            _answer(writer, "403 Forbidden", why)
            return "not in isolation.allow_hosts"
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(target.host, target.port),
                                                          CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            why = f"could not connect: {exc or type(exc).__name__}"
            _answer(writer, "502 Bad Gateway", why)
            return why[:300]
        try:
            if target.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                up_writer.write(target.head)
                up[0] += len(target.head)
            await asyncio.gather(_pump(reader, up_writer, up), _pump(up_reader, writer, down))
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                up_writer.close()
        return None
