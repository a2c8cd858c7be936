"""Where each page lives: one path scheme for the local server and the static bundle.

Every page has a path relative to the site root (``runs/<run>/trials/<trial>/index.html``),
and every link is written relative to the page it is on, so the same HTML works when
served and when opened from disk (file://). Ids become path segments through ``slug``:
an id made of safe characters is used as it is; any other id (markup, slashes, spaces,
dots alone) is written ``~<hex of its UTF-8>``, or ``~~<sha256 prefix>`` when long, so no
id can name a path outside its own directory (docs/viewer.md).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@=-]{0,119}")
_HEX_MAX = 60
"""Ids up to this many UTF-8 bytes are written in hex (reversible); longer ones are hashed."""


def slug(value: str) -> str:
    """A path segment naming ``value`` (see the module docstring)."""
    if _SAFE.fullmatch(value) and not value.startswith("~"):
        return value
    raw = value.encode("utf-8")
    if len(raw) <= _HEX_MAX:
        return "~" + raw.hex()
    return "~~" + hashlib.sha256(raw).hexdigest()[:32]


def unslug(segment: str) -> tuple[str | None, str | None]:
    """(the id, None) for a plain or hex segment; (None, hash prefix) for a hashed one,
    which the caller resolves against the ids it knows (``matches``)."""
    if segment.startswith("~~"):
        return None, segment[2:]
    if segment.startswith("~"):
        try:
            return bytes.fromhex(segment[1:]).decode("utf-8"), None
        except ValueError:
            return None, None
    return (segment, None) if _SAFE.fullmatch(segment) else (None, None)


def matches(segment: str, candidates: list[str]) -> str | None:
    """The id among ``candidates`` that ``segment`` names, or None."""
    found = [c for c in candidates if slug(c) == segment]
    return found[0] if len(found) == 1 else None


RUNS = "index.html"
TRIALS = "trials/index.html"
QUEUES = "queues/index.html"
CSS = "static/viewer.css"
JS = "static/viewer.js"


def run_page(run: str) -> str:
    return f"runs/{slug(run)}/index.html"


def config_page(run: str, config: str) -> str:
    return f"runs/{slug(run)}/configs/{slug(config)}/index.html"


def task_page(run: str, case: str) -> str:
    return f"runs/{slug(run)}/tasks/{slug(case)}/index.html"


def trial_page(run: str, trial: str) -> str:
    return f"runs/{slug(run)}/trials/{slug(trial)}/index.html"


def compare_page(run: str, trial: str, other_run: str, other: str) -> str:
    return f"runs/{slug(run)}/trials/{slug(trial)}/compare/{slug(other_run)}/{slug(other)}.html"


def file_page(run: str, trial: str, rel: str) -> str:
    """A trial's evidence file, shown as text by the server (``rel`` inside the trial directory)."""
    return f"runs/{slug(run)}/trials/{slug(trial)}/files/" + "/".join(slug(p) for p in rel.split("/"))


def review_action(run: str, trial: str) -> str:
    return f"runs/{slug(run)}/trials/{slug(trial)}/review"


def trial_href(*, viewer_url: str | None = None, bundle: Path | None = None,
               from_dir: Path | None = None) -> Callable[[str, str], str]:
    """(run id, trial id) → the href of the trial's page: under a running viewer's URL
    (``http://127.0.0.1:8765/runs/…/trials/…/index.html``), or in a bundle directory as a
    path relative to ``from_dir`` (a report's directory), so it opens from disk. The report
    links trial ids with it (``trialhouse report --viewer-url/--bundle``)."""
    if viewer_url:
        root = viewer_url.rstrip("/") + "/"
        return lambda run, trial: root + trial_page(run, trial)
    if bundle is None or from_dir is None:
        raise ValueError("trial_href needs viewer_url, or bundle and from_dir")
    up = quote(Path(os.path.relpath(bundle.resolve(), from_dir.resolve())).as_posix(), safe="/@+=~")
    return lambda run, trial: posixpath.join(up, trial_page(run, trial))


def relative(from_page: str, to_page: str) -> str:
    """A link from one page to another, relative (works from file:// and over HTTP)."""
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")


@dataclass(frozen=True)
class Route:
    """What a requested path asks for: a page kind and its (still slugged) segments."""

    kind: str
    segments: dict[str, str] = field(default_factory=dict)


_PATTERNS = [
    ("runs", re.compile(r"(index\.html)?")),
    ("trials", re.compile(r"trials/(index\.html)?")),
    ("queues", re.compile(r"queues/(index\.html)?")),
    ("static", re.compile(r"static/(?P<name>viewer\.(css|js))")),
    ("run", re.compile(r"runs/(?P<run>[^/]+)/(index\.html)?")),
    ("config", re.compile(r"runs/(?P<run>[^/]+)/configs/(?P<config>[^/]+)/(index\.html)?")),
    ("task", re.compile(r"runs/(?P<run>[^/]+)/tasks/(?P<case>[^/]+)/(index\.html)?")),
    ("trial", re.compile(r"runs/(?P<run>[^/]+)/trials/(?P<trial>[^/]+)/(index\.html)?")),
    ("review", re.compile(r"runs/(?P<run>[^/]+)/trials/(?P<trial>[^/]+)/review")),
    ("compare", re.compile(r"runs/(?P<run>[^/]+)/trials/(?P<trial>[^/]+)/compare/"
                           r"(?P<other_run>[^/]+)/(?P<other>[^/]+)\.html")),
    ("file", re.compile(r"runs/(?P<run>[^/]+)/trials/(?P<trial>[^/]+)/files/(?P<rel>.+)")),
]


def route(path: str) -> Route | None:
    """The page a request path (without the leading slash) names, or None."""
    for kind, pattern in _PATTERNS:
        m = pattern.fullmatch(path)
        if m:
            return Route(kind, {k: v for k, v in m.groupdict().items() if v is not None})
    return None
