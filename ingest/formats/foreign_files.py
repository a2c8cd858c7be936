"""Reading a foreign source's files: never outside the folder given, never past a bound.

Foreign results come from other tools and other people, so a file may be hostile: a
symlink to a file outside the folder (whose text would end up in the ``quarantine``
table), a FIFO that blocks a read forever, a sparse file of a gigabyte, a zip member that
inflates a thousandfold. Every importer reads through this module (docs/security.md,
"Foreign files"):

- **Inside the folder.** ``ingest.formats.load`` and ``detect_format`` confine every read to
  the folder given (for a file given, its folder; an importer that reads the run folder
  above a file it was given widens the root to it, ``widen``). A path whose real location
  (symlinks resolved) is outside that root is refused; nothing of it is read.
- **Regular files only.** A FIFO, socket or device is refused (opened without blocking,
  checked with ``fstat``).
- **Within bounds.** A document read whole (a JSON or YAML file, an archive member) is at
  most ``DOCUMENT_MAX`` bytes — checked on the size before anything is read, and again on
  what is read; a line at most the caller's bound; a quarantine excerpt ``EXCERPT_MAX``
  characters, read as that many bytes.

The root is a context variable rather than an argument because the readers sit deep in
the shared detection predicates (``ingest.formats.detect``), which every importer calls:
one root, set where a foreign source is entered, holds for all of them. Refusals raise
``ForeignFileError`` (an ``IngestError``), whose message names the file and the reason, so
an importer quarantines the record with it or lets it stop the import with one clear line.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
import struct
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from ingest.errors import IngestError

MiB = 1024 * 1024
DOCUMENT_MAX = 256 * MiB
"""Largest JSON or YAML document read whole (a file or a decompressed archive member)."""
EXCERPT_MAX = 2000
"""Characters of a foreign file kept as a quarantined record's raw text."""

_ROOT: ContextVar[str | None] = ContextVar("foreign_root", default=None)
_JSON_START = re.compile(rb"\S")


class ForeignFileError(IngestError):
    """A foreign file that is not read: outside the folder, not a regular file, too large,
    or not the JSON it should be. The message is ``<path>: <reason>``."""

    def __init__(self, path: Path | str, reason: str, *, unread: bool = True) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = str(path), reason
        self.unread = unread
        """True when nothing of the file was read (where it is, what it is, its size); False when
        it was read and is not what it should be (not JSON)."""


def size_text(n: int) -> str:
    """``268,435,456 bytes`` as people read a bound: ``256 MiB``."""
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n:,} bytes"


@contextmanager
def confined(path: Path) -> Iterator[Path]:
    """Confine the reads inside the block to ``path`` (a folder) or, for a file, its folder;
    yields the root. The path given is the user's choice, so it is resolved first: a symlink
    the user names is followed, one found inside is not followed out."""
    real = Path(os.path.realpath(path))
    root = real if real.is_dir() else real.parent
    token = _ROOT.set(str(root))
    try:
        yield root
    finally:
        _ROOT.reset(token)


def widen(folder: Path) -> None:
    """Let the reads reach ``folder`` too, when it is a real ancestor of the current root
    (an importer given a file that belongs to the run folder above it); else nothing."""
    current = _ROOT.get()
    real = os.path.realpath(folder)
    if current is not None and not _within(current, real) and _within(real, current):
        _ROOT.set(real)


def root() -> Path | None:
    """The folder reads are confined to (None outside ``confined``)."""
    current = _ROOT.get()
    return None if current is None else Path(current)


def _within(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def present(path: Path) -> bool:
    """Whether anything is at ``path`` (a FIFO or a dangling symlink too: reading it says why not)."""
    return os.path.lexists(path)


def outside(path: Path) -> str | None:
    """Why ``path`` may not be read because of where it is (None: it may)."""
    current = _ROOT.get()
    if current is None:
        return None
    real = os.path.realpath(path)
    if _within(current, real):
        return None
    return f"leads outside the folder being imported ({current}) through a symlink; not read"


def open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading when it is a regular file inside the root; else
    ``ForeignFileError`` (a FIFO is opened without blocking, so it cannot hang the read)."""
    if why := outside(path):
        raise ForeignFileError(path, why)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ForeignFileError(path, f"cannot be read ({e.strerror or e})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ForeignFileError(path, "not a regular file (a FIFO, socket or device); not read")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, limit: int = DOCUMENT_MAX, what: str = "a document") -> bytes:
    """The whole file when it is at most ``limit`` bytes (else ``ForeignFileError``, read nothing)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise ForeignFileError(path, f"{size:,} bytes, more than the {size_text(limit)} {what} may have; not read")
        data = f.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise ForeignFileError(path, f"more than the {size_text(limit)} {what} may have; not read")
    return data


def head(path: Path, n: int) -> bytes:
    """The first ``n`` bytes (b"" when the file may not or cannot be read)."""
    try:
        with open_regular(path) as f:
            return f.read(n)
    except ForeignFileError:
        return b""


def excerpt(path: Path, n: int = EXCERPT_MAX) -> str | None:
    """The first ``n`` characters of a file as quarantined raw text (``n`` bytes read), or
    None when it may not be read."""
    data = head(path, n)
    return data.decode("utf-8", errors="replace")[:n] if data else None


def parse_json(data: bytes | bytearray, path: Path | str) -> Any:
    """A JSON document (UTF-8, as RFC 8259 has it), or ``ForeignFileError`` saying why it is
    not one. Text that does not start like JSON is refused before it is decoded (a file of
    NUL bytes costs no copy)."""
    first = _JSON_START.search(data, 3 if data.startswith(codecs.BOM_UTF8) else 0)
    if first is None or data[first.start():first.start() + 1] not in b'{["-0123456789tfnNI':
        raise ForeignFileError(path, "not JSON (it does not start with a JSON value)", unread=False)
    try:
        return json.loads(data)
    except RecursionError:
        raise ForeignFileError(path, "not readable JSON (nested too deeply)", unread=False) from None
    except ValueError as e:
        why = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
        raise ForeignFileError(path, f"not readable JSON ({why[:200]})", unread=False) from None


def load_json(path: Path, limit: int = DOCUMENT_MAX) -> Any:
    """A JSON file read within the bounds, or ``ForeignFileError`` with the reason."""
    return parse_json(read_bytes(path, limit, "a JSON document"), path)


def read_json(path: Path, limit: int = DOCUMENT_MAX) -> Any | None:
    """``load_json``, or None whatever the reason (for detection and optional files)."""
    try:
        return load_json(path, limit)
    except ForeignFileError:
        return None


def text_lines(path: Path, max_line: int) -> Iterator[tuple[int, str | None, str]]:
    """``(line number, text, excerpt)`` of every line of a text file, read a block at a time:
    a line longer than ``max_line`` bytes has text None (it is never held whole) and its
    first ``EXCERPT_MAX`` characters as the excerpt."""
    with open_regular(path) as f:
        n = 0
        while True:
            line = f.readline(max_line + 1)
            if not line:
                return
            n += 1
            if len(line) > max_line and not line.endswith(b"\n"):
                cut = line[:EXCERPT_MAX].decode("utf-8", errors="replace")
                del line
                while (rest := f.readline(MiB)) and not rest.endswith(b"\n"):
                    pass
                yield n, None, cut
                continue
            text = line.decode("utf-8", errors="replace")
            yield n, text, text[:EXCERPT_MAX]


YAML_NODES_MAX = 1_000_000
"""Most nodes a YAML document may expand to, its aliases followed (a few nested anchors
can otherwise stand for billions of values: the "billion laughs")."""


def load_yaml(path: Path, limit: int = DOCUMENT_MAX) -> Any:
    """A YAML file read within the bounds and parsed safely, or ``ForeignFileError``: over
    ``limit`` bytes, not YAML, or expanding (aliases followed) to more than ``YAML_NODES_MAX``
    nodes — checked on the composed nodes before any value is built."""
    import yaml

    text = read_bytes(path, limit, "a YAML document").decode("utf-8", errors="replace")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None and _expanded(node, YAML_NODES_MAX) > YAML_NODES_MAX:
            raise ForeignFileError(path, f"a YAML document that expands (aliases followed) to more than "
                                         f"{YAML_NODES_MAX:,} values; not read", unread=False)
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ForeignFileError(path, f"not readable YAML ({str(e).splitlines()[0][:200]})", unread=False) from None
    except RecursionError:
        raise ForeignFileError(path, "not readable YAML (nested too deeply)", unread=False) from None


def _expanded(node: Any, budget: int) -> int:
    """Nodes under ``node`` counting every alias again, stopping once past ``budget``."""
    count, stack = 0, [node]
    while stack and count <= budget:
        n = stack.pop()
        count += 1
        value = n.value
        if isinstance(value, list):
            stack.extend(x for item in value for x in (item if isinstance(item, tuple) else (item,)))
    return count


CENTRAL_DIRECTORY_MAX = 16 * MiB
"""Largest zip central directory read (about 200,000 members): Python holds every member's
entry in memory, so the member count is bounded before the archive is opened."""


@contextmanager
def open_zip(path: Path) -> Iterator[zipfile.ZipFile]:
    """A zip archive inside the root, its central directory checked against
    ``CENTRAL_DIRECTORY_MAX`` first (``ForeignFileError``; a damaged archive raises
    ``zipfile.BadZipFile`` as ``zipfile`` does)."""
    with open_regular(path) as f:
        size = _central_directory_size(f)
        if size is not None and size > CENTRAL_DIRECTORY_MAX:
            raise ForeignFileError(path, f"a zip archive whose member list takes {size:,} bytes, more than "
                                         f"{size_text(CENTRAL_DIRECTORY_MAX)}; not read")
        f.seek(0)
        with zipfile.ZipFile(f) as z:
            yield z


def _central_directory_size(f: IO[bytes]) -> int | None:
    """The central directory's size from the end record (ZIP64 too); None when there is none."""
    end = f.seek(0, os.SEEK_END)
    tail_len = min(end, 65535 + 22)
    f.seek(end - tail_len)
    tail = f.read(tail_len)
    i = tail.rfind(b"PK\x05\x06")
    if i < 0 or len(tail) < i + 22:
        return None
    entries, size = struct.unpack("<HI", tail[i + 10:i + 16])
    if (entries == 0xFFFF or size == 0xFFFFFFFF) and i >= 20 and tail[i - 20:i - 16] == b"PK\x06\x07":
        (offset,) = struct.unpack("<Q", tail[i - 12:i - 4])
        f.seek(offset)
        record = f.read(56)
        if record[:4] == b"PK\x06\x06" and len(record) == 56:
            (size,) = struct.unpack("<Q", record[40:48])
    return size


def read_stream(stream: IO[bytes], limit: int, where: Path | str, what: str) -> bytearray:
    """Everything ``stream`` gives (a decompressing reader), refused once past ``limit``
    bytes: the output is bounded whatever the input claims."""
    out = bytearray()
    while chunk := stream.read(MiB):
        out += chunk
        if len(out) > limit:
            raise ForeignFileError(where, f"{what} inflates past {size_text(limit)}; not read")
    return out
