"""What the reader of an ``events.jsonl`` saw besides the events it accepted (``ingest.read``).

Filled while a file is read (lines, duplicates, upgrades, torn bytes, the file's sha256 and
its run, the lines of other runs, quarantined lines) and turned into the batch's notes.
A plain dataclass: it crosses the two-process split by pickle (``ingest.parallel``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ingest.batch import QuarantineRow
from ingest.chain import ChainFollower


@dataclass
class ReadStats:
    """What the reader saw besides accepted events; filled while iterating."""

    path: Path
    lines: int = 0
    accepted: int = 0
    duplicates: int = 0
    upgraded: int = 0
    out_of_order: int = 0
    torn_bytes: int = 0
    bytes_read: int = 0
    sha256: str = ""
    size: int = 0
    quarantine: list[QuarantineRow] = field(default_factory=list)
    min_seq: float = float("inf")
    max_seq: int = -1
    run_id: str | None = None
    """The file's run (``read_blocks``)."""
    own: int = 0
    """Valid lines of the file's run (duplicates included)."""
    foreign: dict[str, int] = field(default_factory=dict)
    """Valid lines of other runs (quarantined), per run id."""
    foreign_first: dict[str, int] = field(default_factory=dict)
    foreign_started: dict[str, int] = field(default_factory=dict)
    """Line of the first line / first ``run_started`` of each other run."""
    chain: ChainFollower | None = None
    """Follows the hash chain over the accepted lines, when set (``ingest.chain``)."""

    def notes(self) -> list[str]:
        out = []
        if self.torn_bytes:
            out.append(
                f"{self.path}: last line is incomplete ({self.torn_bytes} bytes without a newline); "
                "left for the next ingest"
            )
        if self.duplicates:
            out.append(f"{self.path}: {self.duplicates} duplicate event line(s) skipped")
        if self.upgraded:
            out.append(f"{self.path}: {self.upgraded} event(s) upgraded from an older schema version")
        if self.out_of_order:
            out.append(f"{self.path}: {self.out_of_order} event(s) out of seq order (ordered by seq)")
        return out
