"""Human-readable sequential ids for stock movements, e.g. MOV-000001."""

from __future__ import annotations


class IdAllocator:
    def __init__(self, prefix: str = "MOV", start: int = 1) -> None:
        self.prefix = prefix
        self._state = {"next": start}

    def next_id(self) -> str:
        number = self._state["next"]
        self._state["next"] = number + 1
        return f"{self.prefix}-{number:06d}"
