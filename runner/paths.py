"""Operator-owned input files: canonical paths, one snapshot per run, sha256 re-checks.

Graders, reference patches, rubrics and stage instructions are copied once into
``<run_dir>/inputs/`` (outside every workspace) and hashed. Trials read only the
snapshot, and the hashes are re-checked after every agent invocation and around
grading: a changed grader invalidates the trial instead of silently grading it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

MAX_INPUT_BYTES = 1024 * 1024
"""Size bound of one operator input file."""
MAX_RECORDING_BYTES = 64 * 1024 * 1024
"""Size bound of one gateway recording file (``gateway.recording_dir``): a recording holds
every request of a session, and agents resend the whole conversation each turn."""

INPUT_PLACEHOLDER = "{inputs}"


def sha256_file(path: Path) -> str:
    from contract.files import file_sha256

    return file_sha256(path)[0]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_problem(rel: str) -> str | None:
    """Why ``rel`` is not a canonical relative POSIX path (None when it is)."""
    if not rel or rel.strip() != rel:
        return "must be a non-empty relative path without surrounding spaces"
    if "\\" in rel:
        return "must use forward slashes"
    if PurePosixPath(rel).is_absolute() or (len(rel) > 1 and rel[1] == ":"):
        return "must be relative to the manifest directory, not absolute"
    if ".." in PurePosixPath(rel).parts:
        return "must not contain '..' (inputs live under the manifest directory)"
    if posixpath.normpath(rel) != rel or rel.startswith("./"):
        return f"must be normalised (write {posixpath.normpath(rel)!r})"
    return None


def check_input(base: Path, rel: str, *, kind: str = "file", limit: int = MAX_INPUT_BYTES) -> str | None:
    """Why ``base/rel`` is not a usable input of ``kind`` (file|dir); None when it is."""
    problem = canonical_problem(rel)
    if problem:
        return problem
    path = base / rel
    root = base.resolve()
    try:
        resolved = path.resolve(strict=True)
    except (FileNotFoundError, RuntimeError, OSError):
        return f"{kind} not found: {path}"
    if not resolved.is_relative_to(root):
        return "resolves outside the manifest directory (symlink escape)"
    if kind == "dir":
        if not resolved.is_dir():
            return f"must be a directory: {path}"
        for child in sorted(resolved.rglob("*")):
            if child.is_symlink() and not child.resolve().is_relative_to(root):
                return f"contains a symlink leaving the manifest directory: {child}"
            if child.is_file() and child.stat().st_size > limit:
                return f"contains a file over {limit} bytes: {child}"
        return None
    if not resolved.is_file():
        return f"must be a regular file: {path}"
    if resolved.stat().st_size > limit:
        return f"is larger than the {limit}-byte input bound"
    return None


def inputs_in_argv(argv: list[str]) -> list[str]:
    """Input paths an argv refers to as ``{inputs}/<path>``."""
    found = []
    for arg in argv:
        idx = arg.find(INPUT_PLACEHOLDER + "/")
        if idx >= 0:
            rest = arg[idx + len(INPUT_PLACEHOLDER) + 1 :]
            if rest:
                found.append(rest)
    return found


@dataclass
class InputRef:
    """One input path and where it was named (a JSON location for messages)."""

    location: str
    rel: str
    kind: str = "file"
    limit: int = MAX_INPUT_BYTES


def input_refs(raw: dict[str, Any]) -> list[InputRef]:
    """Every operator input named by a manifest (works on the raw dict, leniently)."""
    refs: list[InputRef] = []

    def add(loc: str, value: Any, kind: str = "file", limit: int = MAX_INPUT_BYTES) -> None:
        if isinstance(value, str):
            refs.append(InputRef(loc, value, kind, limit))

    named: list[tuple[str, Any]] = []
    for ci, case in enumerate(_list(raw.get("cases"))):
        if not isinstance(case, dict):
            continue
        add(f"cases[{ci}].reference_patch", case.get("reference_patch"))
        pool = case.get("hidden_pool")
        pooled = _list(pool.get("criteria")) if isinstance(pool, dict) else []
        named += [(f"cases[{ci}].criteria[{ki}]", c) for ki, c in enumerate(_list(case.get("criteria")))]
        named += [(f"cases[{ci}].hidden_pool.criteria[{ki}]", c) for ki, c in enumerate(pooled)]
    bank = raw.get("bank")  # the behaviour bank's checks (runner.bank): any case may draw one
    named += [(f"bank.checks[{ki}]", c) for ki, c in enumerate(_list(bank.get("checks") if isinstance(bank, dict)
                                                                     else None))]
    for loc, crit in named:
        if not isinstance(crit, dict):
            continue
        for fi, f in enumerate(_list(crit.get("files"))):
            add(f"{loc}.files[{fi}]", f)
        cmd = crit.get("command")
        if isinstance(cmd, list):
            for ai, arg in enumerate(cmd):
                if isinstance(arg, str):
                    for rel in inputs_in_argv([arg]):
                        add(f"{loc}.command[{ai}]", rel)
        judge = crit.get("judge")
        if isinstance(judge, dict):
            add(f"{loc}.judge.rubric", judge.get("rubric"))
            add(f"{loc}.judge.calibration", judge.get("calibration"))
    for vi, var in enumerate(_list(raw.get("variants"))):
        if not isinstance(var, dict):
            continue
        instr = var.get("stage_instructions")
        if isinstance(instr, dict):
            for stage, paths in instr.items():
                for pi, p in enumerate(_list(paths)):
                    add(f"variants[{vi}].stage_instructions.{stage}[{pi}]", p)
        evaluations = var.get("evaluations")
        judge = evaluations.get("judge") if isinstance(evaluations, dict) else None
        if isinstance(judge, dict):
            add(f"variants[{vi}].evaluations.judge.script", judge.get("script"))
            argv = judge.get("argv")
            if isinstance(argv, list):
                for ai, arg in enumerate(argv):
                    if isinstance(arg, str):
                        for rel in inputs_in_argv([arg]):
                            add(f"variants[{vi}].evaluations.judge.argv[{ai}]", rel)
        agent = var.get("agent")
        if isinstance(agent, dict):
            add(f"variants[{vi}].agent.patches_dir", agent.get("patches_dir"), "dir")
            add(f"variants[{vi}].agent.candidates_dir", agent.get("candidates_dir"), "dir")
    gateway = raw.get("gateway")
    if isinstance(gateway, dict):
        add("gateway.script", gateway.get("script"))
        scripts = gateway.get("scripts")
        if isinstance(scripts, dict):
            for name, path in scripts.items():
                add(f"gateway.scripts.{name}", path)
        add("gateway.recording_dir", gateway.get("recording_dir"), "dir", MAX_RECORDING_BYTES)
    return refs


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass
class Snapshot:
    """The run's input snapshot: sha256 and content of every operator-owned input.

    The content is held in the runner's memory, read once before any agent starts.
    Graders never run in ``root`` (the copy kept in the run directory for people to
    read): each grading gets a fresh copy written from memory and checked as a whole
    tree, so an agent that changed, added or planted anything (a shadowing module, a
    ``.pyc``, a ``.pth``) in any copy can neither affect a later trial nor go unseen.
    """

    root: Path
    hashes: dict[str, str] = field(default_factory=dict)
    contents: dict[str, bytes] = field(default_factory=dict, repr=False)
    verified: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False)
    """Stat keys of ``root``'s files as last verified (``verify_tree``'s ``known``)."""

    def path(self, rel: str) -> Path:
        return self.root / rel

    def text(self, rel: str) -> str:
        return self.contents[rel].decode("utf-8")

    def verify(self) -> list[str]:
        """What differs between ``root`` and the recorded hashes (empty when intact)."""
        return verify_tree(self.root, self.hashes, self.verified)

    def materialise(self, dest: Path, only: list[str] | None = None) -> Path:
        """Write a fresh copy (of every input, or the ``only`` ones) into ``dest``."""
        for rel in sorted(self.hashes if only is None else only):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(self.contents[rel])
        dest.mkdir(parents=True, exist_ok=True)
        return dest

    @classmethod
    def load(cls, root: Path, hashes: dict[str, str]) -> tuple[Snapshot, list[str]]:
        """Read a snapshot back from ``root``; the second value lists what does not match."""
        bad = verify_tree(root, hashes)
        contents = {}
        if not bad:
            contents = {rel: (root / rel).read_bytes() for rel in hashes}
        return cls(root, dict(hashes), contents), bad


def verify_tree(root: Path, hashes: dict[str, str],
                known: dict[str, tuple[int, ...]] | None = None) -> list[str]:
    """Whole-tree check: exactly the recorded files, each with its recorded sha256.

    Anything else anywhere under ``root`` is reported: an unknown file (a module that
    would shadow the standard library, a planted ``.pyc`` or ``.pth``), a symlink, a
    special file, a missing or changed input.

    ``known`` (path → stat key, kept by the caller between checks of the same directory)
    saves re-hashing files unchanged since an earlier check: a file is hashed again unless
    its stat key is the one it had when its content last matched, and a key is kept only
    for a file whose ctime was older than ``RACY_NS`` when that check began (a change
    after it gets a new ctime; see ``runner.pristine``).
    """
    from runner.pristine import RACY_NS, stat_key

    started = time.time_ns()
    problems: list[str] = []
    seen: set[str] = set()
    stack = [root]
    if os.path.islink(root) or not root.is_dir():
        return [f"{root}: not a directory"]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for entry in it:
                rel = Path(entry.path).relative_to(root).as_posix()
                if entry.is_symlink():
                    problems.append(f"{rel}: unexpected symlink")
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif not entry.is_file(follow_symlinks=False):
                    problems.append(f"{rel}: unexpected special file")
                elif rel not in hashes:
                    problems.append(f"{rel}: unexpected file")
                else:
                    seen.add(rel)
                    st = entry.stat(follow_symlinks=False)
                    key = stat_key(st)
                    if known is not None and known.get(rel) == key:
                        continue
                    if sha256_file(Path(entry.path)) != hashes[rel]:
                        problems.append(f"{rel}: changed")
                    elif known is not None and st.st_ctime_ns < started - RACY_NS:
                        known[rel] = key
    problems += [f"{rel}: missing" for rel in sorted(set(hashes) - seen)]
    return sorted(problems)


def snapshot_inputs(manifest_dir: Path, refs: list[InputRef], dest: Path) -> Snapshot:
    """Read every referenced input (directories recursively), hash it, keep it in memory,
    and write the run's reference copy into ``dest``."""
    snap = read_inputs(manifest_dir, refs, dest)
    snap.materialise(dest)
    return snap


def read_inputs(manifest_dir: Path, refs: list[InputRef], root: Path) -> Snapshot:
    """Every referenced input read and hashed into memory; nothing is written."""
    snap = Snapshot(root)
    files: set[str] = set()
    for ref in refs:
        src = manifest_dir / ref.rel
        if src.is_dir():
            for child in sorted(src.resolve().rglob("*")):
                if child.is_file():
                    files.add(str(PurePosixPath(ref.rel) / child.relative_to(src.resolve()).as_posix()))
        else:
            files.add(ref.rel)
    for rel in sorted(files):
        data = (manifest_dir / rel).read_bytes()
        snap.contents[rel] = data
        snap.hashes[rel] = sha256_bytes(data)
    return snap
