"""Reading Inspect AI eval logs (``.eval`` zip and ``.json``) into their header and sample records.

``.eval`` members are usually Zstandard-compressed (ZIP method 93), which Python 3.11's
``zipfile`` cannot open, so members are read raw and decompressed with ``zstandard``.
Inspect's own ``read_eval_log`` works too but costs ~1–2 s of imports per process; the
direct reader needs only the header and ``summaries.json`` (thinned samples, enough for
trials), falling back to the journal and then to full ``samples/*.json`` members; a
damaged sample member is set aside by name and the rest of the log still imports.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, NamedTuple

from ingest.errors import IngestError
from ingest.formats import foreign_files
from ingest.formats.detect import is_inspect_eval_zip, is_inspect_json

ZSTD = 93
MEMBER_MAX = foreign_files.DOCUMENT_MAX
"""Largest member read, compressed or decompressed: a member declaring more is refused
before it is read, and decompression stops past the size the member declares."""


class MemberRefused(ValueError):
    """A member that is not read (too large, a bomb) or is not JSON; the message says why."""


def read_member(z: zipfile.ZipFile, name: str) -> Any:
    """One member of a ``.eval`` archive as JSON; never more than ``MEMBER_MAX`` bytes in or out
    (a zip bomb is refused, not inflated): ``MemberRefused`` with the reason."""
    info = z.getinfo(name)
    try:
        for n, what in ((info.file_size, "inflates to"), (info.compress_size, "takes")):
            if n > MEMBER_MAX:
                raise foreign_files.ForeignFileError(name, f"{what} {n:,} bytes, more than the "
                                                           f"{foreign_files.size_text(MEMBER_MAX)} a member may have; not read")
        return foreign_files.parse_json(_member_bytes(z, info), name)
    except foreign_files.ForeignFileError as e:
        raise MemberRefused(f"{name}: {e.reason}") from None


def _member_bytes(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytearray:
    """A member's bytes, decompressed a block at a time up to its declared size; Zstandard
    members (which Python's ``zipfile`` cannot open) from their raw bytes."""
    name = info.filename
    if info.compress_type != ZSTD:
        with z.open(info) as f:  # zipfile stops at the declared size (then the CRC fails)
            return foreign_files.read_stream(f, info.file_size, name, "the member")
    import zstandard

    assert z.fp is not None
    z.fp.seek(info.header_offset)
    header = z.fp.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {name}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    z.fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = z.fp.read(info.compress_size)
    if len(raw) != info.compress_size:
        raise zipfile.BadZipFile(f"{name} is truncated")
    reader = zstandard.ZstdDecompressor().stream_reader(raw)
    data = foreign_files.read_stream(reader, info.file_size, name, "the member (past its declared size)")
    if len(data) != info.file_size:
        raise zipfile.BadZipFile(f"{name} is truncated")
    return data


class LogContents(NamedTuple):
    """What a log holds for trials: its header, its sample records and where each came
    from (a member name, or ``summaries.json #i``), notes, and the members that could not
    be read — each one quarantined by name, the rest of the log imported."""

    header: dict
    samples: list[Any]
    where: list[str]
    notes: list[str]
    unreadable: list[tuple[str, str]]


def _member_problem(e: Exception) -> str | None:
    """Why a member could not be read, for the errors a damaged member raises (else None)."""
    if isinstance(e, zipfile.BadZipFile | zlib.error | EOFError | ValueError | KeyError | OSError):
        return str(e) or type(e).__name__
    if type(e).__name__ == "ZstdError":  # zstandard.ZstdError has no stable import path across versions
        return f"corrupt Zstandard data ({e})"
    return None


def _read_each(z: zipfile.ZipFile, members: list[str], *, lists: bool) -> tuple[list[Any], list[str], list[tuple[str, str]]]:
    """(records, where each came from, unreadable members with the reason), member by member:
    a damaged member is set aside by name and the others still count. ``lists``: each
    member holds a list of records (journal summaries), else one record (a sample)."""
    records: list[Any] = []
    where: list[str] = []
    unreadable: list[tuple[str, str]] = []
    for n in members:
        try:
            got = read_member(z, n)
        except Exception as e:
            if (why := _member_problem(e)) is None:
                raise
            unreadable.append((n, why))
            continue
        if not lists:
            records.append(_thin(got))
            where.append(n)
        elif isinstance(got, list):
            records += got
            where += [f"{n} #{i}" for i in range(len(got))]
        else:
            unreadable.append((n, "not a list of sample summaries"))
    return records, where, unreadable


_HEAVY = frozenset({"messages", "events", "output", "attachments", "store", "input", "target", "choices",
                    "sandbox", "setup", "files"})
"""Fields of a full sample record that trials do not use: emptied as each member is read (their
shape kept for the importer's checks), so a log's sample members are not all held at once."""


def _thin(sample: Any) -> Any:
    if not isinstance(sample, dict):
        return sample
    return {k: type(v)() if k in _HEAVY and isinstance(v, list | dict) else v for k, v in sample.items()}


def _records(z: zipfile.ZipFile, names: list[str], path: Path) -> tuple[list[Any], list[str], list[str], list[tuple[str, str]]]:
    """The sample records, cheapest source first: ``summaries.json`` (thinned samples,
    written at the end), else the journal's flushed summaries, else every ``samples/``
    member (a running or crashed log). A source that cannot be read in full gives way to
    the next, with a note; the last source there is is read member by member, and what
    cannot be read of it is quarantined by member name while the rest still imports."""
    notes: list[str] = []
    failed: list[tuple[str, str]] = []
    if "summaries.json" in names:
        try:
            records = read_member(z, "summaries.json")
        except Exception as e:
            if (why := _member_problem(e)) is None:
                raise
            failed.append(("summaries.json", why))
        else:
            if isinstance(records, list):
                return records, [f"summaries.json #{i}" for i in range(len(records))], notes, []
            failed.append(("summaries.json", "not a list of sample summaries"))
    parts = sorted(
        (n for n in names if n.startswith("_journal/summaries/") and n.endswith(".json")),
        key=lambda n: int(Path(n).stem) if Path(n).stem.isdigit() else 0,
    )
    journal, journal_where, bad_parts = _read_each(z, parts, lists=True)
    if parts and not bad_parts:
        return journal, journal_where, [f"{path.name}: {n} unreadable ({why}); read the journal instead"
                                        for n, why in failed], []
    failed += bad_parts
    members = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
    if members:
        records, where, unreadable = _read_each(z, members, lists=False)
        notes += [f"{path.name}: {n} unreadable ({why}); read the sample members instead" for n, why in failed]
        return records, where, notes, unreadable
    return journal, journal_where, notes, failed  # no sample members: what the journal had, the rest quarantined


def read_eval_zip(path: Path) -> LogContents:
    """The header and sample records of a ``.eval`` file; raises IngestError when the
    archive or its header cannot be read (a damaged sample member is only set aside)."""
    try:
        with foreign_files.open_zip(path) as z:
            names = z.namelist()
            notes: list[str] = []
            if "header.json" in names:
                header = read_member(z, "header.json")
            elif "_journal/start.json" in names:
                header = read_member(z, "_journal/start.json")
                if isinstance(header, dict):
                    header.setdefault("status", "started")
                notes.append(f"{path.name}: no header.json (log still running or crashed); read the journal")
            else:
                raise IngestError(f"{path}: not an Inspect log (no header.json or _journal/start.json)")
            if not isinstance(header, dict):
                raise ValueError("header.json is not an object")
            samples, where, more, unreadable = _records(z, names, path)
    except IngestError:
        raise
    except Exception as e:
        if (why := _member_problem(e)) is None:
            raise
        raise IngestError(
            f"{path}: not a readable Inspect .eval log ({why}); if it is still being written, "
            "wait for it or run `inspect log recover`"
        ) from e
    return LogContents(header, samples, where, notes + more, unreadable)


def read_log(path: Path) -> LogContents:
    """The header and sample records of a log, ``.eval`` or ``.json``; IngestError when it is not one."""
    if is_inspect_eval_zip(path):
        return read_eval_zip(path)
    try:  # Python's json accepts the bare NaN Inspect writes
        obj = foreign_files.load_json(path)
    except foreign_files.ForeignFileError as e:
        hint = "; write the log as .eval (inspect log convert --to eval), which is read a member at a time" \
            if "bytes, more than" in e.reason else ""
        raise IngestError(f"{path}: not a readable Inspect .json log ({e.reason}){hint}") from None
    if not is_inspect_json(obj):
        raise IngestError(f"{path}: JSON without version/status/eval.eval_id/eval.task is not an Inspect log")
    samples = obj.get("samples") or []
    return LogContents(obj, samples, [f"samples #{i}" for i in range(len(samples))], [], [])


def log_files(path: Path) -> list[Path]:
    """The Inspect logs at ``path`` (a log file, or a directory of them), with any ``.eval`` or
    ``.json`` that leads outside the folder (``foreign_files.outside``: the importer quarantines it)."""
    if path.is_file():
        return [path]
    found = []
    for p in sorted(path.rglob("*")):
        if p.suffix in (".eval", ".json") and foreign_files.outside(p):
            found.append(p)  # a log leading out of the folder: listed so the import quarantines it, unread
        elif p.is_file() and p.suffix == ".eval" and is_inspect_eval_zip(p):
            found.append(p)
        elif p.is_file() and p.suffix == ".json" and p.name not in {"logs.json", "eval-set.json"}:
            if b'"eval_id"' in foreign_files.head(p, 4096):
                found.append(p)
    return found
