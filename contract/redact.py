"""Keep secrets out of stored evidence, and keep captured output bounded.

Agents print whatever they like, including the credentials we passed them. Every
stored stdout/stderr goes through :func:`redact_file`: secret values and common
token shapes become ``[REDACTED]``, and files above the limit keep their head and
tail around a marker. Files are streamed, so a multi-GB output is never loaded whole.
"""

from __future__ import annotations

import codecs
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 4
"""Shorter secret values are ignored: redacting "1" or "abc" would shred the text."""

TOKEN_PATTERNS: tuple[str, ...] = (
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----[\s\S]{0,MAX}?-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----",
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,MAX}",  # Anthropic / OpenAI API keys
    r"\bgh[pousr]_[A-Za-z0-9]{30,MAX}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{22,MAX}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bxox[baprs]-[A-Za-z0-9-]{10,MAX}",  # Slack
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
    r"\bglpat-[A-Za-z0-9_\-]{20,MAX}",  # GitLab
    r"(?P<bearer>\bBearer\s{1,8})[A-Za-z0-9\-._~+/]{12,MAX}={0,3}",
    # password=…-style assignments (also "key": "value" in JSON/YAML): the name is kept.
    r"(?P<assign>\b(?i:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|access[_-]?token"
    r"|auth[_-]?token|client[_-]?secret|private[_-]?key|aws_secret_access_key)[\"']?\s{0,8}[:=]\s{0,8}"
    r"[\"']?)(?!\[REDACTED\])[^\s\"',;&<>]{4,MAX}",
)
"""``MAX`` is replaced by ``_MAX_TOKEN_CHARS``: every match has a bounded length, so
streaming with an overlap longer than any match finds exactly what one pass would."""
_MAX_TOKEN_CHARS = 16384

_CHUNK_CHARS = 1 << 20
_OVERLAP_CHARS = 64 * 1024
"""Text kept back between chunks so a match is never split (> the longest match)."""
_LINE_SEARCH_BYTES = 64 * 1024
"""How far a truncation cut may move to land on a line break (tokens never span lines)."""


_PATTERN_FIRST_CHARS = "-sgAxBpPSaAcC"
"""First character of every token pattern: a lookahead on these lets ``re`` skip
quickly over ordinary text (about 5x faster than trying each branch everywhere)."""


def compile_redactor(secrets: Sequence[str]) -> re.Pattern[str]:
    """One alternation: literal secret values (longest first), then token patterns."""
    values = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LEN}, key=len, reverse=True)
    bound = str(_MAX_TOKEN_CHARS)
    parts = [re.escape(v) for v in values] + [
        p.replace("MAX", bound) if p.startswith("(?P") else f"(?:{p.replace('MAX', bound)})"
        for p in TOKEN_PATTERNS
    ]
    first = "".join(sorted(set(_PATTERN_FIRST_CHARS) | {v[0] for v in values}))
    return re.compile(f"(?=[{re.escape(first)}])(?:{'|'.join(parts)})")


def replacement(match: re.Match[str]) -> str:
    """The text a match becomes: ``[REDACTED]``, after the kept name of a bearer token or an
    assignment (the gateway redacts recorded bodies with the same text as stored stdout)."""
    prefix = match.group("bearer") or match.group("assign")
    return f"{prefix}{REDACTED}" if prefix else REDACTED


def redact(text: str, secrets: Sequence[str]) -> tuple[str, int]:
    """Replace secret values and token-shaped strings with ``[REDACTED]``; return the count."""
    return compile_redactor(secrets).subn(replacement, text)


def redact_file(path: Path, secrets: Sequence[str], limit_bytes: int) -> tuple[bool, int]:
    """Bound ``path`` to about ``limit_bytes`` and redact it in place, streaming.

    Above the limit the file keeps its head and tail (cut at line breaks when one is
    near) around a marker line naming the dropped byte count. Returns
    ``(truncated, redactions)``; a missing file is ``(False, 0)``. The result may
    exceed the limit by the marker and by redactions longer than the secret.
    """
    return _redact_file(Path(path), compile_redactor(secrets), secrets, limit_bytes)


def _redact_file(path: Path, pattern: re.Pattern[str], secrets: Sequence[str],
                 limit_bytes: int) -> tuple[bool, int]:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False, 0
    overlap = max([_OVERLAP_CHARS, 2 * _MAX_TOKEN_CHARS + 256] + [2 * len(s) for s in secrets])
    truncated = size > limit_bytes
    with open(path, "rb") as src:
        if truncated:
            head_end = _cut_after_newline(src, max(limit_bytes // 2, 0), backwards=True)
            tail_start = _cut_after_newline(src, max(size - (limit_bytes - limit_bytes // 2), head_end), backwards=False)
            ranges = [(0, head_end), (tail_start, size)]
            src.seek(max(head_end - 1, 0))
            lead = "" if head_end == 0 or src.read(1) == b"\n" else "\n"
            marker = f"{lead}[... trialhouse: {tail_start - head_end} bytes truncated ...]\n"
        else:
            ranges = [(0, size)]
            marker = ""
        fd, tmp_name = tempfile.mkstemp(prefix=".th-redact.", dir=path.parent)  # any name fits
        count = 0
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as dst:
                for i, (start, end) in enumerate(ranges):
                    if i:
                        dst.write(marker)
                    count += _redact_stream(_read_text(src, start, end), pattern, dst.write, overlap)
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    return truncated, count


def _redact_stream(chunks: Iterator[str], pattern: re.Pattern[str], write, overlap: int) -> int:
    """Redact a stream of text chunks, holding back an overlap so no match is split."""
    count = 0
    pending = ""
    context = ""  # last emitted character, so \b at a chunk start sees its neighbour
    for chunk in chunks:
        pending += chunk
        if len(pending) < _CHUNK_CHARS + overlap:
            continue
        safe = len(pending) - overlap
        text = context + pending
        cut = safe + len(context)
        out: list[str] = []
        pos = len(context)
        for match in pattern.finditer(text, len(context)):
            if match.start() >= cut:
                break
            out.append(text[pos : match.start()])
            out.append(replacement(match))
            count += 1
            pos = match.end()
            cut = max(cut, pos)
        out.append(text[pos:cut])
        write("".join(out))
        context = text[cut - 1 : cut] if cut > 0 else ""
        pending = text[cut:]
    if pending:
        text = context + pending
        out_text, n = _subn_from(pattern, text, len(context))
        write(out_text)
        count += n
    return count


def _subn_from(pattern: re.Pattern[str], text: str, start: int) -> tuple[str, int]:
    out: list[str] = []
    pos = start
    n = 0
    for match in pattern.finditer(text, start):
        out.append(text[pos : match.start()])
        out.append(replacement(match))
        pos = match.end()
        n += 1
    out.append(text[pos:])
    return "".join(out), n


def _read_text(src, start: int, end: int) -> Iterator[str]:
    """Decode bytes [start, end) incrementally; invalid bytes round-trip unchanged."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    src.seek(start)
    remaining = end - start
    while remaining > 0:
        block = src.read(min(_CHUNK_CHARS, remaining))
        if not block:
            break
        remaining -= len(block)
        yield decoder.decode(block)
    yield decoder.decode(b"", final=True)


def _cut_after_newline(src, offset: int, backwards: bool) -> int:
    """Move ``offset`` to just after a nearby line break, so no token is cut in two."""
    if backwards:
        lo = max(offset - _LINE_SEARCH_BYTES, 0)
        src.seek(lo)
        window = src.read(offset - lo)
        nl = window.rfind(b"\n")
        return lo + nl + 1 if nl >= 0 else offset
    src.seek(offset)
    window = src.read(_LINE_SEARCH_BYTES)
    nl = window.find(b"\n")
    return offset + nl + 1 if nl >= 0 else offset


class Redactor:
    """One compiled redaction for a run: its secret values plus the token shapes.

    The runner builds one from every variant's ``pass_env`` and ``secret_env`` values
    and applies it to everything it stores: events, stage output, agent files, verdicts,
    prompts, grader output, patches and the kept workspace (docs/security.md).
    """

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LEN},
                              key=len, reverse=True)
        self.pattern = compile_redactor(self.secrets)

    def text(self, text: str) -> tuple[str, int]:
        return self.pattern.subn(replacement, text)

    def scan(self, text: str) -> tuple[str, int, int]:
        """Like ``text``, also counting how many matches were the run's own secret values
        (a leak) rather than shapes that look like credentials (maybe an example)."""
        known = set(self.secrets)
        hits = [0]

        def replace(match: re.Match[str]) -> str:
            if match.group(0) in known:
                hits[0] += 1
            return replacement(match)

        clean, total = self.pattern.subn(replace, text)
        return clean, total, hits[0]

    def value(self, obj: object) -> tuple[object, int]:
        """Redact every string inside a JSON-like value (dict keys included)."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, list):
            total, out = 0, []
            for item in obj:
                clean, n = self.value(item)
                out.append(clean)
                total += n
            return out, total
        if isinstance(obj, dict):
            total, result = 0, {}
            for key, item in obj.items():
                ckey, n1 = self.text(key) if isinstance(key, str) else (key, 0)
                clean, n2 = self.value(item)
                result[ckey] = clean
                total += n1 + n2
            return result, total
        return obj, 0

    def jsonl(self, data: bytes) -> tuple[bytes, int]:
        """Redact a JSON-lines file line by line: parsed values where a line is JSON (a
        secret inside a JSON string is escaped there, so the text form may not match)."""
        import json

        out, total = [], 0
        for raw in data.splitlines(keepends=True):
            line = raw.decode("utf-8", errors="replace")
            try:
                parsed = json.loads(line)
            except ValueError:
                clean, n = self.text(line)
                out.append(clean)
            else:
                value, n = self.value(parsed)
                out.append(line if n == 0 else json.dumps(value, ensure_ascii=False) + "\n")
            total += n
        return "".join(out).encode("utf-8"), total

    def file(self, path: Path, limit_bytes: int) -> tuple[bool, int]:
        return _redact_file(path, self.pattern, self.secrets, limit_bytes)

    def binary(self, data: bytes) -> tuple[bytes, int]:
        """Literal secret values in bytes that are not text (token shapes need text)."""
        total = 0
        for secret in self.secrets:
            raw = secret.encode("utf-8")
            total += data.count(raw)
            data = data.replace(raw, REDACTED.encode())
        return data, total

    def workspace_file(self, path: Path) -> int:
        """Redact one kept workspace file in place (text: everything; binary: values)."""
        try:
            data = path.read_bytes()
        except OSError:
            return 0
        if b"\0" in data[:8192]:
            clean, n = self.binary(data)
            if n:
                path.write_bytes(clean)
            return n
        _truncated, n = self.file(path, max(len(data) * 2, 1 << 20))
        return n
