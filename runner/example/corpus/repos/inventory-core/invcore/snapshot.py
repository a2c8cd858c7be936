"""Periodic stock snapshots written to disk and read back at start-up."""

from __future__ import annotations

import json
from pathlib import Path

FORMAT_VERSION = 1


def write_snapshot(path: str | Path, stock: dict[str, int]) -> None:
    document = {"version": FORMAT_VERSION, "stock": stock}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(document, fh, sort_keys=True)


def read_snapshot(path: str | Path) -> dict[str, int]:
    with open(path, encoding="utf-8") as fh:
        document = json.load(fh)
    if document.get("version") != FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported snapshot version {document.get('version')!r}")
    return dict(document["stock"])
