"""Stable identities for foreign results: configuration ids and source hashes.

A configuration (model + harness + harness version + settings) is the unit of
comparison, so foreign rows get a ``config_id`` derived the same way every time the
same source is ingested: re-ingesting never creates a second configuration.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from contract.values import ID_MAX, id_problem


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def config_id_for(
    model: str | None,
    harness: str | None,
    harness_version: str | None,
    settings: dict | None = None,
) -> str:
    """Short sha256 of the canonical JSON of the configuration key."""
    payload = {
        "model": model,
        "harness": harness,
        "harness_version": harness_version,
        "settings": settings or {},
    }
    return hashlib.sha256(_canonical(payload).encode()).hexdigest()[:16]


def short_hash(*parts: Any) -> str:
    """12 hex characters of sha256 over the canonical JSON of ``parts``."""
    return hashlib.sha256(_canonical(list(parts)).encode()).hexdigest()[:12]


def path_key(path: Path) -> str:
    """Hash of the resolved path: the stable key of a source that has no id of its own."""
    return short_hash(str(Path(path).resolve()))


def run_key(name: str) -> str:
    """A stable safe partition key for a run: ``name`` itself when it is a safe id
    (``contract.values.id_problem``), else a readable slug of it and a hash of the whole.

    Every batch's run id goes through this (foreign sources name their runs from file and
    directory names, which may hold ``=``, quotes, newlines or 300 characters).
    """
    if id_problem(name) is None:
        return name
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).lstrip("-._")[: ID_MAX - 20].rstrip("-._") or "run"
    return f"{slug}-{short_hash(name)}"


def variant_label(
    model: str | None, harness: str | None, harness_version: str | None
) -> str:
    """Readable name of a foreign configuration, e.g. ``minimal-shell@1.2.0 / model-a``."""
    h = harness or "unknown-harness"
    if harness_version:
        h = f"{h}@{harness_version}"
    return f"{h} / {model or 'unknown-model'}"
