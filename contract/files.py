"""File hashing and the engine version: what events record about inputs and about us."""

from __future__ import annotations

import hashlib
from pathlib import Path


def engine_version() -> str:
    """This trialhouse's version, from its package metadata (the one source of it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trialhouse")
    except PackageNotFoundError:
        return "0+unknown"


def file_sha256(path: Path) -> tuple[str, int]:
    """sha256 (hex) and size of the bytes of a file, read in chunks: the hashes events record."""
    h = hashlib.sha256()
    size = 0
    with Path(path).open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size
