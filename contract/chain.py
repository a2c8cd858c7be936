"""The hash chain of ``events.jsonl``, its keyed seal, and the evidence files it covers.

Each line's ``prev`` is the sha256 of the line before it (the first line's, of the run id),
and ``events.seal.json`` records the head the runner last vouched for; ``verify_chain``
decides which lines of a file the chain vouches for. The seal carries an HMAC of the head
with a key kept outside the run directory (``chain_key``): rewriting the whole file and the
chain no longer gives a seal that verifies. Each ``trial_finished`` lists the sha256 of
every evidence file its trial kept (``evidence_hashes``), so the chain covers those files
too (docs/security.md, "The evidence chain and its key").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
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
    key: str | None = None
    """Fingerprint of the key that made ``mac`` (None: an unkeyed seal)."""
    mac: str | None = None
    """HMAC-SHA256 of (run_id, lines, head, closed) with that key."""


NOT_ON_CHAIN = "not on the run's hash chain (inserted, altered, duplicated or out of order)"

SEAL_NAME = "events.seal.json"
"""Beside ``events.jsonl``: ``{"run_id", "lines", "head", "closed"}``, rewritten atomically."""


def read_seal(events_path: Path) -> Seal | None:
    """The seal beside ``events_path``; None when absent or unreadable."""
    try:
        raw = json.loads((Path(events_path).parent / SEAL_NAME).read_bytes())
        return Seal(str(raw["run_id"]), int(raw["lines"]), str(raw["head"]), bool(raw.get("closed")),
                    _text(raw.get("key")), _text(raw.get("mac")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


# -- the key ----------------------------------------------------------------------------
KEY_NAME = "chain.key"
CONFIG_ENV = "TRIALHOUSE_CONFIG_DIR"
"""Overrides the config folder (tests point it at a temporary directory)."""


def config_dir() -> Path:
    """The user's trialhouse config folder: ``$TRIALHOUSE_CONFIG_DIR``, else
    ``$XDG_CONFIG_HOME/trialhouse``, else ``~/.config/trialhouse``."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "trialhouse"


def key_fingerprint(key: bytes) -> str:
    """What the run header and the seal record of a key (never the key)."""
    return "sha256:" + hashlib.sha256(b"trialhouse chain key\0" + key).hexdigest()[:32]


def load_key() -> bytes | None:
    """The chain key from the config folder, or None when there is none (or unreadable)."""
    try:
        key = bytes.fromhex((config_dir() / KEY_NAME).read_text("ascii").strip())
    except (OSError, ValueError):
        return None
    return key if len(key) >= 16 else None


def chain_key() -> bytes:
    """The chain key, made on first use (32 random bytes, mode 0600, its folder 0700)."""
    key = load_key()
    if key is not None:
        return key
    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = folder / f".{KEY_NAME}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    try:
        os.link(tmp, folder / KEY_NAME)  # never replaces a key another process made first
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    key = load_key()
    assert key is not None, f"{folder / KEY_NAME} could not be read back"
    return key


def seal_mac(key: bytes, run_id: str, lines: int, head: str, closed: bool) -> str:
    body = json.dumps([run_id, lines, head, closed], separators=(",", ":")).encode("utf-8", "surrogatepass")
    return hmac.new(key, b"trialhouse seal\0" + body, hashlib.sha256).hexdigest()


KEYED = "intact"
NO_KEY = "chain intact, key not available"
UNKEYED = "chain intact, unkeyed seal"
WRONG_MAC = "the seal's keyed signature does not verify (rewritten by someone without the key)"


def seal_status(seal: Seal | None, key: bytes | None) -> tuple[bool, str]:
    """(verified, label) of a seal whose chain is otherwise intact: ``intact`` only when
    its HMAC verifies with the key; else which of the weaker statements holds."""
    if seal is None or seal.mac is None:
        return False, UNKEYED
    if key is None or key_fingerprint(key) != seal.key:
        return False, NO_KEY
    good = hmac.compare_digest(seal.mac, seal_mac(key, seal.run_id, seal.lines, seal.head, seal.closed))
    return good, KEYED if good else WRONG_MAC


# -- evidence files ----------------------------------------------------------------------
EVIDENCE_SKIPPED = ("workspace", ".runner", ".sandbox")
"""Top-level entries of a trial directory the evidence hashes leave out: the kept workspace
(covered through ``changes.patch``: what was graded is the initial commit plus the patch)
and the runner's and sandbox's scratch, removed when the trial ends."""


def evidence_hashes(trial_dir: Path) -> dict[str, str]:
    """Relative path → sha256 of every regular file a trial keeps as evidence (symlinks
    are listed as ``symlink``, never followed)."""
    out: dict[str, str] = {}
    for base, dirs, files in os.walk(trial_dir):
        rel_base = Path(base).relative_to(trial_dir)
        if rel_base == Path("."):
            dirs[:] = [d for d in dirs if d not in EVIDENCE_SKIPPED]
            files = [f for f in files if f not in EVIDENCE_SKIPPED]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(base, d))]:
            path = Path(base) / name
            rel = (rel_base / name).as_posix()
            if path.is_symlink() or not path.is_file():
                out[rel] = "symlink" if path.is_symlink() else "special"
                continue
            digest = hashlib.sha256()
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            out[rel] = digest.hexdigest()
    return dict(sorted(out.items()))


RETENTION_LOG = "retention.jsonl"
"""A run's record of what retention removed (``trialhouse gc``, docs/rollout.md)."""


def retired_paths(run_dir: Path) -> set[str]:
    """Paths (relative to the run directory) that retention recorded as removed: a file
    missing below one of them was collected by policy, not tampered with. Only missing
    files are excused this way; a changed or added file is still reported."""
    log = Path(run_dir) / RETENTION_LOG
    out: set[str] = set()
    if not log.is_file() or log.is_symlink():
        return out
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            removed = json.loads(line).get("removed", [])
        except (ValueError, AttributeError, RecursionError):
            continue
        out |= {str(r["path"]) for r in removed if isinstance(r, dict) and isinstance(r.get("path"), str)}
    return out


def evidence_changes(trial_dir: Path, recorded: dict[str, str], retired: set[str] | None = None) -> list[str]:
    """Evidence files of a trial that are not what its ``trial_finished`` recorded:
    changed, missing (unless below a path in ``retired``, the run's ``retired_paths``) or
    added after the trial."""
    now = evidence_hashes(trial_dir)
    changed = [f"{rel} changed" for rel in recorded if rel in now and now[rel] != recorded[rel]]
    prefix = f"trials/{trial_dir.name}/"
    gone = {p.removeprefix(prefix) for p in retired or () if p.startswith(prefix)}
    missing = [f"{rel} missing" for rel in recorded
               if rel not in now and not any(rel == g or rel.startswith(g + "/") for g in gone)]
    added = [f"{rel} added" for rel in now if rel not in recorded]
    return changed + missing + added


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
