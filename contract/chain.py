"""The hash chain of ``events.jsonl`` and its seal.

Each line's ``prev`` is the sha256 of the line before it (the first line's, of the run id),
and ``events.seal.json`` records the head the runner last vouched for; ``verify_chain``
decides which lines of a file the chain vouches for. Unkeyed: anyone who can rewrite the
whole file can rewrite the chain too (docs/design.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


def chain_genesis(run_id: str) -> str:
    """The ``prev`` of a run's first line: binds the chain to its run id."""
    return hashlib.sha256(b"trialhouse events chain\0" + run_id.encode("utf-8", "surrogatepass")).hexdigest()


def chain_digest(line: bytes) -> str:
    """The ``prev`` the line after ``line`` must carry."""
    return hashlib.sha256(line.rstrip(b"\r\n")).hexdigest()


@dataclass(frozen=True)
class ChainLink:
    """One line of a file, as far as the hash chain is concerned."""

    line: int
    digest: str
    prev: str | None
    readable: bool = True
    """False for a line that is not even JSON (its ``prev`` cannot be read)."""


@dataclass
class ChainVerdict:
    """What ``verify_chain`` found: lines to refuse (with the reason) and run-level notes."""

    rejected: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    chained: bool = True
    """False for files written before the chain existed (no line carries ``prev``)."""

    @property
    def intact(self) -> bool:
        return not self.rejected and not self.notes


@dataclass(frozen=True)
class Seal:
    """``events.seal.json``: the chain head the runner last vouched for."""

    run_id: str
    lines: int
    head: str
    closed: bool = False


NOT_ON_CHAIN = "not on the run's hash chain (inserted, altered, duplicated or out of order)"

SEAL_NAME = "events.seal.json"
"""Beside ``events.jsonl``: ``{"run_id", "lines", "head", "closed"}``, rewritten atomically."""


def read_seal(events_path: Path) -> Seal | None:
    """The seal beside ``events_path``; None when absent or unreadable."""
    try:
        raw = json.loads((Path(events_path).parent / SEAL_NAME).read_bytes())
        return Seal(str(raw["run_id"]), int(raw["lines"]), str(raw["head"]), bool(raw.get("closed")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def verify_chain(links: Sequence[ChainLink], genesis: str, seal: Seal | None = None) -> ChainVerdict:
    """Which lines of one run's file the hash chain vouches for.

    The chain is walked backwards from an anchor (the seal's head; without a usable
    seal, the file's last line), so a forged line inserted anywhere is a dead branch
    and is rejected. Where the backward walk stops short of ``genesis`` (lines removed
    or altered), the lines that chain forward from ``genesis`` up to the break are kept
    too, except the last of them: it cannot be told apart from an altered line. Past a
    seal's head the chain is followed forwards only while the run was not closed.
    """
    verdict = ChainVerdict()
    readable = [link for link in links if link.readable]
    linked = sum(link.prev is not None for link in readable)
    if not readable or (seal is None and 2 * linked <= len(readable)):
        # Written before the chain existed (most lines carry no link, and there is no seal):
        # read as it is; a stray ``prev`` on a few lines means nothing.
        verdict.chained = False
        return verdict
    by_digest: dict[str, ChainLink] = {}
    for link in links:
        if link.readable and link.prev is None:
            verdict.rejected[link.line] = "carries no hash-chain link (prev) in a chained file"
            continue
        if link.digest in by_digest:
            verdict.rejected[link.line] = f"duplicate of line {by_digest[link.digest].line}; {NOT_ON_CHAIN}"
        else:
            by_digest[link.digest] = link
    live = [link for link in links if link.line not in verdict.rejected]
    anchor = by_digest.get(seal.head) if seal is not None else None
    if seal is not None and anchor is None:
        verdict.notes.append(
            f"events.jsonl lacks the chain head its seal vouches for ({seal.lines} lines sealed): "
            "lines were removed or the file was truncated")
    if anchor is None:
        anchor = live[-1]
    accepted: set[int] = set()
    path: list[int] = []
    cur: ChainLink | None = anchor
    oldest = anchor
    while cur is not None and cur.line not in accepted:
        accepted.add(cur.line)
        path.append(cur.line)
        oldest = cur
        cur = None if cur.prev == genesis else by_digest.get(cur.prev or "")
    if path != sorted(path, reverse=True):
        verdict.notes.append("lines of events.jsonl are out of their hash-chain order (reordered)")
    if oldest.prev != genesis:
        verdict.notes.append(f"the hash chain is broken before line {oldest.line}: "
                             "lines were removed or altered")
        forward: list[ChainLink] = []
        expected = genesis
        for link in live:
            if link.line >= oldest.line:
                break
            if link.prev == expected:
                forward.append(link)
                expected = link.digest
        accepted |= {link.line for link in forward[:-1]}
        garbled = forward and any(not link.readable and forward[-1].line < link.line < oldest.line
                                  for link in links)
        if forward and garbled:  # the unreadable line in between is the altered one
            accepted.add(forward[-1].line)
        elif forward:
            verdict.rejected[forward[-1].line] = (
                "last line before a break in the hash chain (cannot be verified)")
    tail = anchor
    if seal is not None and by_digest.get(seal.head) is anchor and not seal.closed:
        for link in live:
            if link.line > tail.line and link.prev == tail.digest:
                accepted.add(link.line)
                tail = link
    for link in live:
        if not link.readable:
            continue  # the reader refuses it with its own reason
        if link.line not in accepted and link.line not in verdict.rejected:
            late = seal is not None and seal.closed and link.line > anchor.line
            verdict.rejected[link.line] = (
                f"appended after the run was sealed closed; {NOT_ON_CHAIN}" if late else NOT_ON_CHAIN)
    return verdict
