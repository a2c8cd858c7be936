"""Grader output normalised for comparison (docs/runner.md, "Grading").

Two runs of the same check on the same code print different text: the time, the fresh
temporary directory a grading copy lives in, an object's memory address, a port. To say
whether two gradings failed *the same way* (across trials, repetitions, a regrade), their
output is compared after these are replaced by placeholders; the raw output is kept as
written. ``output_key`` is what a ``grading`` event records.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}|\s?UTC)?\b"),
     "<timestamp>"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(\.\d+)?\b"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s|sec|secs|seconds)\b"), "<duration>"),
    (re.compile(r"(/private)?(/tmp|/var/tmp|/var/folders|/dev/shm)(/[^\s'\"():,;\]]+)+"), "<tmp>"),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<address>"),
    (re.compile(r"\b(\d{1,3}(\.\d{1,3}){3}|localhost|\[::1\]):\d{2,5}\b"), "<host>:<port>"),
)
"""(pattern, placeholder), applied in order: ISO timestamps, clock times, durations,
temporary paths, memory addresses, host:port addresses."""


def normalise(text: str, paths: Mapping[str, str] | None = None) -> str:
    """``text`` with the paths of this grading (``{"<workspace>": "/x/ws", ...}``, longest
    first) and then the volatile shapes of ``_RULES`` replaced by placeholders."""
    for name, path in sorted((paths or {}).items(), key=lambda kv: -len(kv[1])):
        if path:
            text = text.replace(path, name)
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder, text)
    return text


def output_key(stdout: str, stderr: str, paths: Mapping[str, str] | None = None) -> str:
    """sha256 (first 16 hex digits) of the normalised stdout and stderr: equal keys, the same
    output but for the volatile parts."""
    h = hashlib.sha256(normalise(stdout, paths).encode("utf-8", "surrogateescape"))
    h.update(b"\0")
    h.update(normalise(stderr, paths).encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]
