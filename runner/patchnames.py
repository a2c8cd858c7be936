"""File names in a git patch and in events, represented exactly (docs/design.md, "The
denominator rule").

Git writes a name with a control character, a quote, a backslash or a byte over 0x7f
C-quoted (``"bad\\377name"``), and a name with a space unquoted (``diff --git a/x b/y
b/x b/y``, ``+++ b/x b/y<TAB>``). A parser that splits the header line on spaces gets such
a patch wrong (``unidiff`` refuses it), so ``placeholders`` rewrites every file header into
names no parser can misread and hands back the real names. ``quote`` is the same quoting
for an event field: an event is UTF-8 JSON, a file name is bytes, and the quoted form is
exact and reversible (``unquote``).
"""

from __future__ import annotations

import re

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_BY_BYTE = {v: k for k, v in _ESCAPES.items()}
_OCTAL = re.compile(r"[0-7]{3}")


def quote(rel: str) -> str:
    """``rel`` (a path as Python holds it: undecodable bytes as surrogates) as text that is
    valid UTF-8: unchanged when it is printable and valid, else git's C-quoting."""
    raw = rel.encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
        plain = not any(b < 0x20 or b == 0x7F or b in (0x22, 0x5C) for b in raw)
    except UnicodeDecodeError:
        plain = False
    if plain:
        return rel
    out = []
    for b in raw:
        if b in _BY_BYTE:
            out.append("\\" + _BY_BYTE[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def unquote(name: str) -> bytes:
    """A name as git wrote it (C-quoted or not) back to its bytes."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name.encode("utf-8", "surrogateescape")
    body, out, k = name[1:-1], bytearray(), 0
    while k < len(body):
        ch = body[k]
        if ch == "\\" and k + 1 < len(body):
            nxt = body[k + 1]
            if _OCTAL.fullmatch(body[k + 1:k + 4]):
                out.append(int(body[k + 1:k + 4], 8))
                k += 4
                continue
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                k += 2
                continue
        out += ch.encode("utf-8", "surrogateescape")
        k += 1
    return bytes(out)


def _side(text: str, prefix: str) -> str | None:
    """The path a ``---``/``+++``/``rename`` value names (git's ``a/``/``b/`` dropped: either
    one, ``git diff -R`` swaps them; none when ``prefix`` is empty), quoted for display;
    None for ``/dev/null``."""
    text = text[:-1] if text.endswith("\t") else text
    if text == "/dev/null":
        return None
    name = unquote(text).decode("utf-8", "surrogateescape")
    if prefix and name[:2] in ("a/", "b/"):
        name = name[2:]
    return quote(name)


def _header_names(rest: str) -> tuple[str, str]:
    """Source and target of ``diff --git <rest>`` when nothing else names them: quoted
    names split at the quote, unquoted ones at the middle (without renames both sides
    are the same path)."""
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        src, dst = rest[:end + 1], rest[end + 2:]
    else:
        half = (len(rest) - 1) // 2
        src, dst = rest[:half], rest[half + 1:]
    return _side(src, "a/") or "", _side(dst, "b/") or ""


def placeholders(diff_text: str) -> tuple[str, dict[str, str | None]]:
    """``diff_text`` with every file's names replaced by ``f<N>s``/``f<N>t`` (``/dev/null``
    kept), and placeholder → real name (quoted as ``quote`` does; None for /dev/null)."""
    lines = diff_text.splitlines(keepends=True)
    names: dict[str, str | None] = {}
    in_header = False  # between a ``diff --git`` line and its first hunk
    n = 0
    for k, line in enumerate(lines):
        body = line.rstrip("\n")
        if body.startswith("diff --git "):
            n += 1
            in_header = True
            src, dst = _header_names(body[len("diff --git "):])
            names[f"f{n}s"], names[f"f{n}t"] = src, dst
            lines[k] = f"diff --git a/f{n}s b/f{n}t\n"
        elif not in_header:
            continue
        elif body.startswith(("@@", "GIT binary patch", "Binary files ")):
            in_header = False
        elif body.startswith(("--- ", "+++ ")):
            key, prefix = (f"f{n}s", "a/") if body[0] == "-" else (f"f{n}t", "b/")
            side = _side(body[4:], prefix)
            if side is not None:
                names[key] = side
            lines[k] = f"{body[:4]}{prefix + key if side is not None else '/dev/null'}\n"
        elif body.startswith(("rename from ", "copy from ", "rename to ", "copy to ")):
            verb, _, where = body.partition(" ")
            direction, _, value = where.partition(" ")
            key = f"f{n}s" if direction == "from" else f"f{n}t"
            names[key] = _side(value, "")
            lines[k] = f"{verb} {direction} {key}\n"
    return "".join(lines), names
