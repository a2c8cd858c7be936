"""The hash chain of one of our ``events.jsonl`` files, followed while ingest reads it.

The runner writes every line with ``prev`` = sha256 of the line before it (see
``contract.chain``) and seals the head in ``events.seal.json``. Ingest follows the chain as
it reads — one digest per accepted line — and only when something does not line up does
it verify the whole file (``contract.chain.verify_chain``) to decide which lines to refuse.
Those are quarantined with the reason; gaps, reordering and a tail missing against the
seal become notes on the batch and the run's ``integrity`` column. A file written before
the chain existed carries no ``prev`` and is read as it is (``unchained``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from contract.chain import (
    WRONG_MAC,
    ChainLink,
    ChainVerdict,
    Seal,
    chain_digest,
    chain_genesis,
    evidence_changes,
    load_key,
    read_seal,
    retired_paths,
    seal_status,
    verify_chain,
)

INTACT = "intact"
UNCHAINED = "unchained"


@dataclass
class ChainFollower:
    """What the chain looked like over the lines one reader accepted, in file order."""

    seal_head: str | None = None
    first_prev: str | None = None
    """``prev`` of the first line followed (the genesis, for a whole file)."""
    last: str | None = None
    """Digest of the last line followed."""
    lines: int = 0
    unchained: int = 0
    """Lines without ``prev``."""
    breaks: int = 0
    """Lines whose ``prev`` is not the digest of the line before."""
    head_line: int | None = None
    """Line number whose digest is the seal's head."""

    def feed(self, numbers: list[int], raws: list[bytes], events: list) -> None:
        sha = hashlib.sha256
        last, head = self.last, self.seal_head
        for number, raw, event in zip(numbers, raws, events, strict=True):
            prev = event.prev
            digest = sha(raw).hexdigest()
            if prev is None:
                self.unchained += 1
            elif last is None:
                if self.first_prev is None:
                    self.first_prev = prev
            elif prev != last:
                self.breaks += 1
            last = digest
            if digest == head:
                self.head_line = number
        self.last = last
        self.lines += len(raws)

    def then(self, later: ChainFollower) -> ChainFollower:
        """This follower's lines followed by ``later``'s (the two-process split)."""
        joined = ChainFollower(self.seal_head, self.first_prev if self.lines else later.first_prev,
                               later.last if later.lines else self.last, self.lines + later.lines,
                               self.unchained + later.unchained, self.breaks + later.breaks,
                               later.head_line if later.head_line is not None else self.head_line)
        if self.lines and later.lines and later.first_prev != self.last:
            joined.breaks += 1
        return joined


@dataclass
class ChainOutcome:
    """Whether the followed chain vouches for the file, or the file must be verified whole."""

    verify: bool
    integrity: str
    notes: list[str] = field(default_factory=list)


def assess(follower: ChainFollower, run_id: str, seal: Seal | None) -> ChainOutcome:
    """Decide from a follower alone, when it can; else ask for ``verify_file``."""
    notes: list[str] = []
    if seal is not None and seal.run_id != run_id:
        notes.append(f"events.seal.json names run {seal.run_id!r}, not {run_id!r}; ignored")
        seal = None
    if follower.lines == 0:
        return ChainOutcome(False, INTACT, notes)
    if seal is None and 2 * (follower.lines - follower.unchained) <= follower.lines:
        return ChainOutcome(False, UNCHAINED, notes)  # the rule of contract.chain.verify_chain
    if follower.unchained or follower.breaks or follower.first_prev != chain_genesis(run_id):
        return ChainOutcome(True, "", notes)
    if seal is None:
        return ChainOutcome(False, "intact, unsealed",
                            [*notes, "no events.seal.json beside the file: its end cannot be checked"])
    if seal.head == follower.last:
        return ChainOutcome(False, INTACT, notes)
    if follower.head_line is not None and not seal.closed:
        return ChainOutcome(False, "intact, unsealed tail",
                            [*notes, "lines after the last seal: the run did not close (killed?)"])
    return ChainOutcome(True, "", notes)


def verify_file(path: Path, run_id: str) -> ChainVerdict:
    """The whole file's chain (the rare path): every line of ``run_id``, in file order."""
    links: list[ChainLink] = []
    with Path(path).open("rb") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                links.append(ChainLink(number, chain_digest(line), None, readable=False))
                continue
            if not isinstance(obj, dict) or obj.get("run_id") != run_id:
                continue
            prev = obj.get("prev")
            links.append(ChainLink(number, chain_digest(line), prev if isinstance(prev, str) else None))
    seal = read_seal(path)
    if seal is not None and seal.run_id != run_id:
        seal = None
    return verify_chain(links, chain_genesis(run_id), seal)


def integrity_label(verdict: ChainVerdict) -> str:
    if not verdict.chained:
        return UNCHAINED
    if verdict.intact:
        return INTACT
    parts = [f"{len(verdict.rejected)} line(s) refused"] if verdict.rejected else []
    return "tampered or damaged: " + "; ".join(parts + verdict.notes)


def keyed(integrity: str, events_path: Path) -> tuple[str, list[str]]:
    """The run's label once its seal's key and its evidence files are checked: ``intact``
    only when the seal's HMAC verifies with this machine's key (``contract.chain``) and
    every evidence file is what its ``trial_finished`` recorded; else what holds."""
    notes = [f"{events_path}: {p}" for p in evidence_problems(events_path)]
    if notes:
        return f"tampered or damaged: {len(notes)} evidence file(s) changed after the trial", notes
    if integrity != INTACT:
        return integrity, []
    _ok, label = seal_status(read_seal(events_path), load_key())
    if label == WRONG_MAC:
        return f"tampered or damaged: {label}", [f"{events_path}: events.seal.json: {label}"]
    return label, []


def evidence_problems(events_path: Path) -> list[str]:
    """Evidence files beside ``events_path`` (``trials/<id>/``) that are not what the last
    ``trial_finished`` of their trial recorded; nothing when the trials are not there (an
    events file ingested alone)."""
    trials = Path(events_path).parent / "trials"
    if not trials.is_dir():
        return []
    last: dict[str, dict[str, str]] = {}
    with Path(events_path).open("rb") as f:
        for raw in f:
            if b'"trial_finished"' not in raw or b'"evidence"' not in raw:
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            tid, ev = obj.get("trial_id"), obj.get("evidence")
            if isinstance(tid, str) and isinstance(ev, dict):
                last[tid] = {str(k): str(v) for k, v in ev.items()}
    out: list[str] = []
    retired = retired_paths(trials.parent)
    for tid, evidence in sorted(last.items()):
        folder = trials / tid
        if "/" not in tid and tid not in (".", "..") and folder.is_dir():
            out += [f"trials/{tid}/{c} after the trial" for c in evidence_changes(folder, evidence, retired)]
    return out
