"""Renaming a run's new partitions into place, all or none, under a journal (``warehouse.partitions``).

A writer killed mid-swap leaves the journal; the next writer's sweep reads it and undoes
what was done (``PartitionSwap.recover``), so the warehouse is always either as it was or
fully written.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any


def remove_path(path: Path) -> None:
    """Remove a file or a directory tree (a symlink as a file); nothing when it is not there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)



class PartitionSwap:
    """Renames a run's new partitions into place, all or none, under a journal file.

    ``steps``: (new directory, partition directory). Before the first rename the journal
    lists every step and whether its partition existed; an existing partition is first
    renamed aside (``.old-*``), so each step can be undone. Any failure undoes the steps
    done; a writer killed mid-swap leaves the journal, and the next writer's ``sweep`` undoes
    them (``recover``). Once every rename is done the journal says so, and recovery only
    removes what was renamed aside.
    """

    def __init__(self, root: Path, steps: list[tuple[Path, Path]]) -> None:
        self.journal = root / f".swap-{uuid.uuid4().hex}.json"
        self.steps: list[dict[str, Any]] = [{"new": str(new), "target": str(target), "existed": target.exists(),
                       "old": str(target.with_name(f".old-{uuid.uuid4().hex}"))} for new, target in steps]

    def _write(self, state: str) -> None:
        tmp = self.journal.with_name(self.journal.name + ".tmp")
        tmp.write_text(json.dumps({"state": state, "steps": self.steps}), encoding="utf-8")
        os.replace(tmp, self.journal)

    def run(self) -> None:
        self._write("swapping")
        try:
            for step in self.steps:
                if step["existed"]:
                    Path(step["target"]).rename(step["old"])
                Path(step["new"]).rename(step["target"])
            self._write("done")  # from here on the new partitions stay, whatever happens
        except BaseException:
            self.recover(self.journal)
            raise
        try:
            self.recover(self.journal)  # only tidies now (removes what was renamed aside)
        except OSError:
            pass  # the next writer's sweep finishes it

    @staticmethod
    def recover(journal: Path) -> None:
        """Undo an unfinished swap (or tidy a finished one), then remove the journal."""
        try:
            doc = json.loads(journal.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # unreadable: it was being written, before any rename
            journal.unlink(missing_ok=True)
            return
        for step in reversed(doc["steps"]):
            new, target, old = Path(step["new"]), Path(step["target"]), Path(step["old"])
            if doc["state"] == "done":
                remove_path(old)
            elif old.exists():  # the original was renamed aside (and maybe the new one in): restore it
                if target.exists():
                    remove_path(target)
                old.rename(target)
            elif not step["existed"] and not new.exists() and target.exists():
                remove_path(target)  # a partition that did not exist before was renamed in: remove it
            remove_path(new)
        journal.unlink(missing_ok=True)
