"""Server-sent events: an incremental decoder for tapping a stream, and an encoder.

The gateway passes a provider's stream through byte for byte and reads it on the side
(usage, first token, tool names), so it needs a decoder that takes chunks as they
arrive. aiohttp has no SSE parser; httpx-sse has one but keeps it private and tied to
httpx's line iterator. The format is small (WHATWG HTML "interpreting an event stream":
``event:``/``data:``/``id:`` fields, ``:`` comments, events end at a blank line, lines
end in LF, CR or CRLF), so it is implemented here and tested against split chunks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class SseEvent:
    event: str
    """The ``event:`` field, ``message`` when absent (the spec's default)."""
    data: str

    def json(self) -> object | None:
        """The data as JSON, or None when it is not JSON (``[DONE]``, garbage)."""
        try:
            return json.loads(self.data)
        except ValueError:
            return None


MAX_EVENT_BYTES = 16 * 1024 * 1024
"""An event larger than this is dropped (counted in ``oversized``), never buffered whole."""


class SseDecoder:
    """Feed bytes in any chunking, get back the events completed so far."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        self.oversized = 0
        self.lines = 0
        """Lines seen; a "stream" of zero event lines is garbage, not an empty answer."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buffer += chunk
        out: list[SseEvent] = []
        while True:
            cut, width = _line_end(self._buffer)
            if cut < 0:
                break
            line = self._buffer[:cut]
            self._buffer = self._buffer[cut + width :]
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                out.append(event)
        if len(self._buffer) > MAX_EVENT_BYTES:
            self._buffer = b""
            self._reset()
            self.oversized += 1
        return out

    def close(self) -> list[SseEvent]:
        """End of stream: a last event without its blank line still counts."""
        out = self.feed(b"\n") if self._buffer else []
        if self._data:
            out.append(SseEvent(self._event or "message", "\n".join(self._data)))
            self._reset()
        return out

    def _line(self, line: str) -> SseEvent | None:
        self.lines += 1
        if line == "":
            if not self._data:
                self._event = ""
                return None
            event = SseEvent(self._event or "message", "\n".join(self._data))
            self._reset()
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._size += len(value)
            if self._size > MAX_EVENT_BYTES:
                self.oversized += 1
                self._reset()
            else:
                self._data.append(value)
        return None

    def _reset(self) -> None:
        self._event = ""
        self._data = []
        self._size = 0


def _line_end(buffer: bytes) -> tuple[int, int]:
    """Index and width of the first line terminator (LF, CRLF or a lone CR)."""
    lf = buffer.find(b"\n")
    cr = buffer.find(b"\r")
    if cr < 0 or (0 <= lf < cr):
        return lf, 1
    if cr == len(buffer) - 1:
        return -1, 0  # a CR at the end may be the start of CRLF: wait for more
    return cr, 2 if buffer[cr + 1 : cr + 2] == b"\n" else 1


def encode(event: str | None, data: object) -> bytes:
    """One SSE event; ``data`` is JSON-encoded unless it is already a string."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return (head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()
