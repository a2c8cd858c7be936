"""Token-bucket rate limiting per partner, shared by the worker threads."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    def __init__(
        self, capacity: int, refill_per_second: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.capacity = capacity
        self.refill_per_second = refill_per_second
        self._clock = clock
        self._state = {"tokens": float(capacity), "updated": clock()}

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._state["updated"])
        refilled = self._state["tokens"] + elapsed * self.refill_per_second
        self._state["tokens"] = min(float(self.capacity), refilled)
        self._state["updated"] = now

    def try_acquire(self) -> bool:
        """Take one token if one is available."""
        self._refill()
        tokens = self._state["tokens"]
        if tokens < 1:
            return False
        self._state["tokens"] = tokens - 1
        return True

    def available(self) -> float:
        self._refill()
        return self._state["tokens"]
