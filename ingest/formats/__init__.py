"""Adapters for other tools' result formats (one module per format).

``load(path, fmt)`` turns a foreign source into ``SourceBatch``es, reading nothing outside
the folder given and nothing past a bound (``foreign_files``); ``detect_format`` (in
``detect``) picks ``fmt`` from the content. Importer modules are imported lazily
so detecting one format never pays for another's dependencies.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.errors import IngestError

if TYPE_CHECKING:
    from ingest.batch import SourceBatch
    from ingest.prices import PriceTable

FORMATS: dict[str, str] = {
    "runs-jsonl": "ingest.formats.runs_jsonl",
    "inspect": "ingest.formats.inspect_ai",
    "harbor": "ingest.formats.harbor",
    "terminal-bench": "ingest.formats.terminal_bench",
    "swebench": "ingest.formats.swebench",
    "mini-swe-agent": "ingest.formats.mini_swe_agent",
}
"""Foreign format name → importer module (each has ``load(path, prices)``)."""


def load(path: Path, fmt: str, prices: PriceTable | None = None) -> list[SourceBatch]:
    """Import ``path`` as format ``fmt``; bad records are quarantined, bad sources raise."""
    if fmt not in FORMATS:
        raise IngestError(
            f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}"
        )
    path = Path(path)
    if not path.exists():
        raise IngestError(f"{path}: no such file or directory")
    from ingest.formats.foreign_files import confined

    module = importlib.import_module(FORMATS[fmt])
    with confined(path):  # nothing outside the folder given is read (docs/security.md)
        return module.load(path, prices=prices)


def detect_format(path: Path) -> str | None:
    from ingest.formats.detect import detect_format as _detect

    return _detect(path)


__all__ = ["FORMATS", "load", "detect_format"]
