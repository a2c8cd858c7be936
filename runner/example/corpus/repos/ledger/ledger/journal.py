"""An append-only journal of ledger entries, one JSON object per line."""

from __future__ import annotations

import json
from pathlib import Path


class JournalCorrupt(ValueError):
    """A journal line before the end of the file is not valid JSON."""


def append_entry(path: str | Path, entry: dict) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")


def load_journal(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise JournalCorrupt(f"{path}:{number}: {exc}") from None
    return entries
