"""The run's ``events.jsonl``: one writer, a hash chain, and a seal.

Worker threads never write the file; they hand events to the driver's ``EventLog``,
which assigns the per-run ``seq`` and the chain link ``prev`` under a lock. A crash can
therefore only tear the last line, and ``repair_tail`` truncates that before a resume
appends more. After every finished trial and at close the log rewrites
``events.seal.json`` (atomically) with the chain head it vouches for, so a forged,
altered, reordered or truncated file is detected when it is read back
(``read_verified``) here and by ingest.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.chain import (
    CONFIG_ENV,
    KEY_NAME,
    NO_KEY,
    SEAL_NAME,
    WRONG_MAC,
    ChainLink,
    ChainVerdict,
    chain_digest,
    chain_genesis,
    chain_key,
    config_dir,
    evidence_changes,
    key_fingerprint,
    load_key,
    read_seal,
    retired_paths,
    seal_mac,
    seal_status,
    verify_chain,
)
from contract.envelope import BaseEvent, utc_now
from contract.events import dump_event, parse_event
from contract.redact import Redactor
from contract.run_events import CaseValidated, RunStarted
from contract.trial_events import TrialFinished
from runner.errors import RunnerError
from runner.evidence import write_atomic

Emit = Callable[..., object]
"""``emit(EventClass, **fields)`` records one event. The driver's ``EventLog.emit`` returns
the event as written (run_id/seq/ts/prev filled in); a remote worker's emit only forwards
the fields to the driver (``runner.executors.on_ray``), so no caller relies on the result."""

def seal_path(events_path: Path) -> Path:
    return events_path.with_name(SEAL_NAME)


def repair_tail(path: Path) -> int:
    """Drop a torn (unterminated or unparsable) last line; returns bytes removed."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    keep = len(data)
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
    else:
        # A complete but unparsable last line (e.g. a partial flush) is also torn.
        start = data.rfind(b"\n", 0, max(len(data) - 1, 0)) + 1
        last = data[start:keep]
        if last.strip():
            try:
                parse_event(last)
            except ValueError:
                keep = start
    if keep != len(data):
        with path.open("r+b") as f:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
    return len(data) - keep


@dataclass
class VerifiedEvents:
    """The events of a file the chain vouches for, and what was refused."""

    events: list[Any] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)
    """(line number, reason) of every line not taken as data."""
    notes: list[str] = field(default_factory=list)
    last_line: bytes | None = None
    """The last line the chain vouches for (a resume chains its first line to it)."""
    lines: int = 0
    """How many lines the chain vouches for."""
    seal: str = ""
    """What the keyed seal says when the chain is intact (``contract.chain.seal_status``):
    ``intact`` only when its HMAC verifies with this machine's key."""

    @property
    def intact(self) -> bool:
        return not self.refused and not self.notes

    def problems(self) -> str:
        parts = [f"line {n}: {why}" for n, why in self.refused[:5]]
        more = len(self.refused) - 5
        return "; ".join(self.notes + parts + ([f"and {more} more"] if more > 0 else []))


def read_verified(path: Path, run_id: str | None = None) -> VerifiedEvents:
    """Parse ``path`` and keep the lines its hash chain and seal vouch for.

    Lines that do not parse are refused with the parser's reason; lines of another
    run are refused; the chain decides the rest (``contract.chain.verify_chain``).
    """
    out = VerifiedEvents()
    parsed: list[tuple[int, Any, bytes]] = []
    garbled: list[ChainLink] = []
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                event = parse_event(line)
            except (ValueError, RecursionError) as exc:
                out.refused.append((number, f"not a valid event: {str(exc).splitlines()[0][:200]}"))
                garbled.append(ChainLink(number, chain_digest(line), None, readable=False))
                continue
            parsed.append((number, event, line))
    if not parsed:
        return out
    rid = run_id or next((e.run_id for _n, e, _l in parsed if e.event == "run_started"), parsed[0][1].run_id)
    mine = []
    for number, event, line in parsed:
        if event.run_id != rid:
            out.refused.append((number, f"belongs to run {event.run_id!r}, not {rid!r}"))
        else:
            mine.append((number, event, line))
    seal = read_seal(path)
    if seal is not None and seal.run_id != rid:
        out.notes.append(f"{SEAL_NAME} names run {seal.run_id!r}, not {rid!r}; ignored")
        seal = None
    links = sorted([ChainLink(n, chain_digest(line), e.prev) for n, e, line in mine] + garbled,
                   key=lambda link: link.line)
    verdict: ChainVerdict = verify_chain(links, chain_genesis(rid), seal)
    out.notes += verdict.notes
    verified, out.seal = seal_status(seal, load_key())
    if not verified and seal is not None and seal.mac is not None and out.seal != NO_KEY:
        out.notes.append(f"{SEAL_NAME}: {out.seal}")
    out.refused += sorted(verdict.rejected.items())
    out.refused.sort()
    kept = [(n, e, line) for n, e, line in mine if n not in verdict.rejected]
    out.events = [e for _n, e, _l in kept]
    out.last_line = kept[-1][2] if kept else None
    out.lines = len(kept)
    return out


def read_events(path: Path) -> list[Any]:
    """Every event the hash chain vouches for, in file order."""
    return read_verified(path).events


def run_key() -> bytes:
    """The chain key (``contract.chain.chain_key``), a ``RunnerError`` when it cannot be made."""
    try:
        return chain_key()
    except OSError as exc:
        raise RunnerError(f"{config_dir() / KEY_NAME}: cannot create the chain key ({exc.strerror}); "
                          f"make the folder writable or set {CONFIG_ENV}") from exc


def check_evidence(run_dir: Path, verified: VerifiedEvents) -> None:
    """Refuse to continue a run whose seal or evidence was changed after the fact."""
    problems = [n for n in verified.notes if WRONG_MAC in n]
    last = {str(e.trial_id): e for e in verified.events if isinstance(e, TrialFinished)}
    retired = retired_paths(run_dir)
    for tid, fin in last.items():
        if fin.evidence is not None and (run_dir / "trials" / tid).is_dir():
            problems += [f"trials/{tid}/{c}" for c in evidence_changes(run_dir / "trials" / tid, fin.evidence, retired)]
    if problems:
        raise RunnerError(f"{run_dir}: changed after the fact ({'; '.join(problems[:5])}); "
                          "it cannot be resumed: start a new run")


class EventLog:
    """Append-only writer. Thread-safe; the sole owner of ``seq`` and the chain."""

    def __init__(self, path: Path, run_id: str, next_seq: int = 0,
                 listener: Callable[[BaseEvent], None] | None = None, last_line: bytes | None = None,
                 lines: int = 0, redactor: Redactor | None = None, key: bytes | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self._seq = next_seq
        self._prev = chain_digest(last_line) if last_line is not None else chain_genesis(run_id)
        self._lines = lines
        self._lock = threading.Lock()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        self._file = os.fdopen(fd, "ab")
        self._listener = listener
        self._redactor = redactor
        self._key = key
        """The chain key (``contract.chain.chain_key``): each seal carries an HMAC of its head."""
        self.key_id = key_fingerprint(key) if key is not None else None
        """The key's fingerprint, for the run header (never the key)."""
        self.redactions = 0

    def emit(self, cls: type[BaseEvent], **fields: Any) -> BaseEvent:
        with self._lock:
            event = cls(run_id=self.run_id, seq=self._seq, ts=utc_now(), prev=self._prev, **fields)
            if self._redactor is not None:  # no secret reaches the record, whatever field it hides in
                data, count = self._redactor.value(event.model_dump(mode="json"))
                if count:
                    self.redactions += count
                    event = cls.model_validate(data)
            line = dump_event(event).encode()
            self._file.write(line + b"\n")
            self._file.flush()
            self._seq += 1
            self._lines += 1
            self._prev = chain_digest(line)
            if isinstance(event, TrialFinished | RunStarted | CaseValidated):
                self._seal(closed=False)
        if self._listener is not None:
            self._listener(event)
        return event

    def _seal(self, closed: bool) -> None:
        seal: dict[str, Any] = {"run_id": self.run_id, "lines": self._lines, "head": self._prev, "closed": closed}
        if self._key is not None:
            seal["key"] = key_fingerprint(self._key)
            seal["mac"] = seal_mac(self._key, self.run_id, self._lines, self._prev, closed)
        write_atomic(seal_path(self.path), json.dumps(seal).encode() + b"\n", durable=True)

    def close(self, sealed: bool = True) -> None:
        with self._lock:
            if not self._file.closed:
                os.fsync(self._file.fileno())
                self._file.close()
                self._seal(closed=sealed)
