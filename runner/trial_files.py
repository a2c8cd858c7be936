"""What stays of a trial: its directory, the evidence directories checked, the patch, the kept workspace.

A trial owns ``<run_dir>/trials/<trial_id>/`` and nothing else. The evidence directories
are created before any agent runs and checked (same inode, still a directory) before
every write, so a planted symlink is a violation instead of a path the runner writes
through. At the end the patch is written (redacted) and inspected for flags, and the
workspace's changed files are kept, redacted; the agent's ``.git`` and the runner's
private git directory are not (docs/design.md, "What stays of a trial").

Layout of the trial directory (only ``workspace/`` and ``.sandbox/`` are ever visible to
the agent, and only inside its sandbox):

* ``workspace/``: the agent's repository (its ``.git`` is the agent's; never trusted);
* ``.sandbox/home``, ``.sandbox/tmp``: the trial's private HOME and /tmp;
* ``.sandbox/<stage>/in`` (read-only) and ``out`` (read-write): one stage's files;
* ``.runner/``: the runner's private git directory and grading scratch;
* ``prompts/``, ``logs/``, ``agent-events/``, ``verdicts/``, ``grading/``, ``checkpoints/``,
  ``trajectories/``, ``changes.patch``: evidence, written by the runner only.

Everything here takes ``emit`` and its time limits as arguments and never imports the
trial that calls it.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from contract.redact import Redactor
from contract.trial_events import Checkpoint, Flag, IntegrityCheck
from runner.api_flags import tree_findings
from runner.budget import TrialEmit
from runner.capture import TrialGit
from runner.evidence import read_capped, write_atomic
from runner.flags import GraderNames, grader_names, inspect_patch
from runner.git import GitError, git
from runner.patchnames import quote
from runner.paths import Snapshot
from runner.pristine import remove_tree
from runner.run_store import RunStore
from runner.trees import PatchInfo
from runner.walk import regular_files

EVIDENCE_DIRS = ("prompts", "logs", "agent-events", "verdicts", "grading", "checkpoints", "trajectories",
                 ".runner", ".sandbox")
"""Directories of a trial the runner writes into: created before any agent runs, and
checked (same inode, still a directory) before every write, so a planted symlink is a
violation instead of a path the runner writes through."""

PATCH_PATHS = 1000
"""Paths of the final patch recorded in ``trial_finished``."""
KEPT_FILE_LIMIT = 16 * 1024 * 1024
"""A changed workspace file larger than this is not kept (it is named in
``workspace-removed.txt``); ``changes.patch`` summarises it too."""


def create_workspace(store: RunStore, commit: str, dest: Path) -> None:
    """Make ``dest`` a new repository holding only ``commit`` (detached), no remote.

    Its ``.git`` is a copy of the run store's seed for ``commit`` (what ``git init`` and a
    depth-1 fetch leave, built once per run), checked out by git; never the source
    repository. The agent owns it after.
    """
    dest.mkdir(parents=True, exist_ok=False)
    shutil.copytree(store.seed(commit), dest / ".git")
    git(dest, "checkout", "-q", "--detach", commit)


@dataclass(frozen=True)
class Kept:
    """What the end of a trial left: the patch, its flags and paths, the redactions made."""

    patch: PatchInfo | None = None
    flags: int = 0
    patch_paths: list[str] | None = None
    redactions: int = 0


class TrialFiles:
    """A trial's directory; its evidence directories are made (and their identity noted) here."""

    def __init__(self, trial_dir: Path) -> None:
        self.dir = trial_dir
        self.ws = trial_dir / "workspace"
        self.home = trial_dir / ".sandbox" / "home"
        self.tmp = trial_dir / ".sandbox" / "tmp"
        self.kept = False
        """The workspace was redacted and the private directories discarded (``keep``)."""
        self.dir_ids: dict[str, tuple[int, int]] = {}
        for name in ("", *EVIDENCE_DIRS):
            (self.dir / name).mkdir(exist_ok=True)
            st = os.lstat(self.dir / name)
            self.dir_ids[name] = (st.st_dev, st.st_ino)

    def problems(self) -> list[str]:
        """Evidence directories that are no longer the ones the runner created."""
        bad = []
        for name, ident in self.dir_ids.items():
            try:
                st = os.lstat(self.dir / name)
                same = stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == ident
            except OSError:
                same = False
            if not same:
                bad.append(f"evidence directory {name or '(trial)'}/ replaced")
        return bad

    def integrity(self, snapshot: Snapshot, phase: str, emit: TrialEmit) -> list[str]:
        """What an agent or grader reached that it must not have (empty when nothing):
        the run's inputs, the workspace itself, the evidence directories."""
        bad = [f"inputs/{p}" for p in snapshot.verify()]
        if bad:  # put the run's reference copy back so no other trial sees the change
            remove_tree(snapshot.root)
            snapshot.materialise(snapshot.root)
        if os.path.islink(self.ws) or not self.ws.is_dir():
            bad.append("workspace (replaced or removed)")
        bad += self.problems()
        emit(IntegrityCheck, phase=phase, ok=not bad, mismatches=bad)
        return bad

    def save_patch(self, tgit: TrialGit, old: str, new: str, dest: Path, redactor: Redactor,
                   timeout: float) -> tuple[PatchInfo | None, int]:
        """A bounded, redacted diff between two captured trees, written into place; with
        the number of secrets redacted from it."""
        tmp = self.dir / ".runner" / f"{dest.name}.tmp"
        try:
            info = tgit.diff_to_file(old, new, tmp, timeout=timeout)
        except GitError:
            return None, 0
        data, _cut = read_capped(tmp, info.bytes + 1)
        text, hidden = redactor.text((data or b"").decode("utf-8", errors="surrogateescape"))
        if hidden:
            text = (f"# trialhouse: {hidden} secret(s) redacted from this patch; those lines no "
                    "longer apply as they were written\n") + text
        write_atomic(dest, text.encode("utf-8", errors="surrogateescape"))
        tmp.unlink(missing_ok=True)
        return info, hidden

    def checkpoint(self, tgit: TrialGit, parent: str | None, previous: str, tree: str, label: tuple[str, int],
                   redactor: Redactor, emit: TrialEmit, timeout: Callable[[], float]) -> tuple[str, int]:
        """The runner's checkpoint commit of ``tree`` on ``parent`` (named, not written), its
        ``checkpoint`` event, and its patch against ``previous`` kept as evidence
        (docs/design.md, "Checkpoints are the runner's commits"); (sha, redactions).
        ``label`` = (stage, attempt)."""
        stage, attempt = label
        sha = tgit.commit(tree, parent, f"trialhouse checkpoint: {stage} (attempt {attempt})")
        emit(Checkpoint, attempt=attempt, stage=stage, sha=sha,
             files_changed=tgit.changed_paths(previous, tree), tree=tree)
        _info, hidden = self.save_patch(tgit, previous, tree, self.dir / "checkpoints" / f"a{attempt}-{stage}.patch",
                                        redactor, timeout())
        return sha, hidden

    def keep(self, tgit: TrialGit, store: RunStore, redactor: Redactor, trees: tuple[str | None, str | None],
             final_tree: str | None, allowed_paths: list[str] | None, emit: TrialEmit,
             timeout: Callable[[], float], graders: Mapping[str, bytes] | None = None) -> Kept:
        """The end of a trial: ``changes.patch`` against the prepared tree and its flags, the
        changed paths, then the workspace's files (redacted). Nothing is written when the
        evidence directories were replaced. ``trees`` = (prepared, ignored by git);
        ``graders``: the case's grader inputs, whose modules and helpers the flags look for."""
        prepared, _ignored = trees
        if self.problems():
            return Kept()
        patch, redactions, flags = None, 0, 0
        if final_tree is not None and prepared is not None:
            patch, redactions = self.save_patch(tgit, prepared, final_tree, self.dir / "changes.patch",
                                                redactor, timeout())
            if patch is not None:
                data, _cut = read_capped(self.dir / "changes.patch", 2 * patch.bytes + 4096)
                flags = flag(data, allowed_paths, emit, grader_names(graders) if graders else None)
                flags += review_flags(tgit, prepared, final_tree, emit, timeout())
        paths = None  # read before the runner's git directory goes
        if final_tree is not None and prepared is not None:
            try:
                paths = [quote(p) for p in tgit.changed_names(prepared, final_tree)[:PATCH_PATHS]]
            except GitError:
                paths = None
        store.discard(self.dir / ".sandbox")
        redactions += self.keep_workspace(tgit, store, redactor, trees)
        return Kept(patch, flags, paths, redactions)

    def keep_workspace(self, tgit: TrialGit, store: RunStore, redactor: Redactor,
                       trees: tuple[str | None, str | None]) -> int:
        """What stays of the workspace: its files, redacted; not the agent's ``.git``, not
        the runner's private git (both hold content compressed, where no redaction sees).
        Called only when the evidence directories were found intact; returns redactions."""
        if os.path.islink(self.ws) or not self.ws.is_dir():
            return 0
        pristine: dict[str, str] = {}
        for tree in trees:
            if tree:
                pristine.update({rel: sha for _m, sha, rel in tgit.entries(tree)})
        removed: list[str] = []
        redactions = 0
        for path in regular_files(self.ws):
            rel = path.relative_to(self.ws).as_posix()
            cached = tgit.cached(rel, path)
            if cached is not None and pristine.get(rel) == cached:
                continue  # the operator's content, unchanged since the checkout
            size = path.lstat().st_size
            if size > KEPT_FILE_LIMIT:  # not read back whole (nor redacted) by the runner
                path.unlink()
                removed.append(f"{rel}: {size} bytes")
                continue
            redactions += redactor.workspace_file(path)
        if removed:
            write_atomic(self.dir / "workspace-removed.txt",
                         ("Files the agent left that were too large to keep (over "
                          f"{KEPT_FILE_LIMIT} bytes):\n" + "".join(f"{r}\n" for r in removed)).encode())
        store.discard(self.ws / ".git")
        store.discard(self.dir / ".runner")
        self.kept = True
        return redactions

    def scrub(self, store: RunStore) -> None:
        """Unless ``keep`` finished (or this ran already): remove the workspace, the sandbox's HOME/TMP and the
        runner's scratch, unredacted as they are (the ``finally`` of every trial: whatever
        raised, no secret stays at rest in the run directory; docs/security.md)."""
        if self.kept:
            return
        self.kept = True  # once: the trial's evidence is hashed after it
        for path in (self.ws, self.dir / ".sandbox", self.dir / ".runner"):
            try:
                store.discard(path)
            except Exception:  # noqa: BLE001 - the background removal failed: remove it here
                remove_tree(path)
        if not os.path.lexists(self.ws):
            write_atomic(self.dir / "workspace-removed.txt",
                         b"The trial did not finish normally: its workspace was removed unredacted.\n")


def review_flags(tgit: TrialGit, old: str, new: str, emit: TrialEmit, timeout: float) -> int:
    """Public-API changes and new migrations (``runner.api_flags``) as ``flag`` events."""
    try:
        findings = tree_findings(tgit, old, new, timeout)
    except GitError:
        return 0  # the trees could not be read: the patch's own flags stand
    for f in findings:
        emit(Flag, kind=f.kind, path=f.path, detail=f.detail)
    return len(findings)


def flag(patch: bytes | None, allowed_paths: list[str] | None, emit: TrialEmit,
         graders: GraderNames | None = None) -> int:
    """Patch-inspection findings (``runner.flags``) as ``flag`` events; returns how many."""
    findings = inspect_patch((patch or b"").decode("utf-8", errors="replace"), allowed_paths, graders)
    for f in findings:
        emit(Flag, kind=f.kind, path=f.path, detail=f.detail)
    return len(findings)
