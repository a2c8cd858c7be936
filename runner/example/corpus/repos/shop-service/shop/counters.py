"""Per-endpoint request counters shared by the worker threads."""

from __future__ import annotations


class RequestCounter:
    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def increment(self, key: str, amount: int = 1) -> int:
        current = self._counts.get(key, 0)
        self._counts[key] = current + amount
        return current + amount

    def get(self, key: str) -> int:
        return self._counts.get(key, 0)

    def snapshot(self) -> dict[str, int]:
        return dict(self._counts)
