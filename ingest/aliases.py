"""Aliases and labels files: what a user tells trialhouse about imported results.

**Aliases** map the spellings of one model or harness to one canonical name, so that a
model published under four spellings is one model in ``matrix`` and ``compare``::

    models:
      claude-3-7-sonnet-20250219:        # canonical name
        - claude-3.7-sonnet
        - Claude 3.7 Sonnet
    harnesses:
      mini-SWE-agent: [mini, mini-swe-agent]

Spellings match case-insensitively with runs of whitespace collapsed (``"Claude 3.7
Sonnet"`` is ``"claude 3.7  sonnet"``); a canonical name also matches itself.

**Labels** give tasks labels their source does not carry (familiarity ``known`` or
``unknown``, repository, difficulty, task class, …), by task id or by repository::

    tasks:
      django__django-11099: {familiarity: known, difficulty: "15 min - 1 hour"}
    repositories:
      django/django: {familiarity: known}

or as CSV with a ``task`` or ``repository`` column and one column per label. A task's own
labels win over its repository's, except familiarity: a task in two familiarity classes
(its own line and its repository's disagree) is an error.

Both files are YAML or JSON (JSON is read by the same YAML parser, so line numbers are
exact for both). Every problem is an ``AliasesError`` located as ``FILE:LINE: what is
wrong; what to do``: a malformed file, an unknown section, a spelling listed under two
canonical names, a canonical name that is another's alias, an unknown familiarity, a task
or repository listed twice with different labels. Whether a file names anything that
exists can only be checked against the data: ``check_against`` (called by the importer
after reading the sources) fails when nothing matches and returns a note per entry that
matched nothing. Pure: the standard library and PyYAML only.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAMILIARITY = ("known", "unknown")
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
_ALIAS_SECTIONS = ("models", "harnesses")
_ONE = {"models": "model", "harnesses": "harness"}
_LABEL_SECTIONS = ("tasks", "repositories")


class AliasesError(Exception):
    """A problem in an aliases or labels file; the CLI prints it as one line."""

    user_error = True
    exit_code = 2


def spelling(name: str) -> str:
    """The form two spellings are compared in: lower case, whitespace collapsed."""
    return " ".join(str(name).split()).casefold()


# --------------------------------------------------------------------------- YAML nodes


def _compose(path: Path) -> Any:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AliasesError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AliasesError(f"{path}: cannot read ({exc})") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise AliasesError(f"{where}: not valid YAML or JSON "
                           f"({getattr(exc, 'problem', None) or exc})") from None
    if node is None:
        raise AliasesError(f"{path}: the file is empty")
    return node


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1


def _mapping(path: Path, node: Any, what: str) -> list[tuple[Any, Any]]:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        raise AliasesError(f"{path}:{_line(node)}: {what} must be a mapping (name: value)")
    return list(node.value)


def _scalar(path: Path, node: Any, what: str) -> str:
    import yaml

    if not isinstance(node, yaml.ScalarNode) or not str(node.value).strip():
        raise AliasesError(f"{path}:{_line(node)}: {what} must be a non-empty name")
    return str(node.value).strip()


def _sections(path: Path, root: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in _mapping(path, root, "the file"):
        name = _scalar(path, key, "a section name")
        if name not in allowed:
            raise AliasesError(f"{path}:{_line(key)}: unknown section {name!r}; the sections "
                               f"are {' and '.join(allowed)}")
        if name in out:
            raise AliasesError(f"{path}:{_line(key)}: section {name!r} appears twice")
        out[name] = value
    return out


# --------------------------------------------------------------------------- aliases


@dataclass(frozen=True)
class Alias:
    canonical: str
    line: int


@dataclass
class AliasMap:
    """Spelling → canonical name, per kind (``models``, ``harnesses``)."""

    path: Path
    kinds: dict[str, dict[str, Alias]] = field(default_factory=dict)

    def canonical(self, kind: str, name: str | None) -> str | None:
        """The canonical name of ``name`` (``name`` itself when the file does not map it)."""
        if name is None:
            return None
        hit = self.kinds.get(kind, {}).get(spelling(name))
        return hit.canonical if hit else name

    def as_dict(self) -> dict[str, dict[str, str]]:
        """For the batch record: kind → {spelling: canonical}."""
        return {k: {s: a.canonical for s, a in v.items()} for k, v in self.kinds.items()}

    def check_against(self, models: Iterable[str | None], harnesses: Iterable[str | None]
                      ) -> list[str]:
        """Notes for entries that match no name in the data; an error when none matches."""
        seen = {"models": {spelling(m) for m in models if m},
                "harnesses": {spelling(h) for h in harnesses if h}}
        unused: list[tuple[str, Alias]] = []
        used = 0
        for kind, entries in self.kinds.items():
            by_canonical: dict[str, list[str]] = {}
            for s, a in entries.items():
                by_canonical.setdefault(a.canonical, []).append(s)
            for spellings in by_canonical.values():
                if any(s in seen[kind] for s in spellings):
                    used += 1
                else:
                    unused.append((kind, entries[spellings[0]]))
        if not used:
            raise AliasesError(
                f"{self.path}: none of its names appears in the data (models seen: "
                f"{', '.join(sorted(seen['models'])[:6]) or 'none'}); check the spelling, or "
                "that the file belongs to these results")
        return [f"{self.path}:{a.line}: {kind} {a.canonical!r} matches no name in the data"
                for kind, a in unused]


def load_aliases(path: Path | str) -> AliasMap:
    """Read and validate an aliases file (see the module docstring)."""
    import yaml

    path = Path(path)
    out = AliasMap(path)
    for kind, section in _sections(path, _compose(path), _ALIAS_SECTIONS).items():
        entries: dict[str, Alias] = {}
        canon_lines: dict[str, int] = {}
        for key, value in _mapping(path, section, f"{kind}"):
            canonical = _scalar(path, key, f"a canonical {_ONE[kind]} name")
            names = [value] if isinstance(value, yaml.ScalarNode) else (
                list(value.value) if isinstance(value, yaml.SequenceNode) else None)
            if names is None:
                raise AliasesError(f"{path}:{_line(value)}: the aliases of {canonical!r} must "
                                   "be a name or a list of names")
            if spelling(canonical) in canon_lines:
                raise AliasesError(f"{path}:{_line(key)}: {_ONE[kind]} {canonical!r} is listed "
                                   f"twice (also line {canon_lines[spelling(canonical)]}); "
                                   "merge the two entries")
            canon_lines[spelling(canonical)] = _line(key)
            for n in [key, *names]:
                s = spelling(_scalar(path, n, f"an alias of {canonical!r}"))
                prior = entries.get(s)
                if prior is not None and prior.canonical != canonical and n is key:
                    raise AliasesError(
                        f"{path}:{prior.line}: {_ONE[kind]} {n.value!r} is a canonical name "
                        f"(line {_line(key)}) and an alias of {prior.canonical!r}; a name "
                        "maps to one canonical name: merge the two entries")
                if prior is not None and prior.canonical != canonical:
                    raise AliasesError(
                        f"{path}:{_line(n)}: {_ONE[kind]} spelling {n.value!r} is an alias of "
                        f"both {prior.canonical!r} (line {prior.line}) and {canonical!r}; "
                        "keep it under one canonical name")
                entries[s] = Alias(canonical, _line(n))
        for s, a in entries.items():
            if s in canon_lines and spelling(a.canonical) != s:
                raise AliasesError(
                    f"{path}:{a.line}: {_ONE[kind]} {s!r} is a canonical name (line "
                    f"{canon_lines[s]}) and an alias of {a.canonical!r}; a name maps to one "
                    "canonical name: merge the two entries")
        out.kinds[kind] = entries
    return out


# --------------------------------------------------------------------------- labels


@dataclass(frozen=True)
class LabelEntry:
    labels: dict[str, str]
    line: int


@dataclass
class LabelSet:
    """Labels by task id and by repository, with the line each came from."""

    path: Path
    tasks: dict[str, LabelEntry] = field(default_factory=dict)
    repositories: dict[str, LabelEntry] = field(default_factory=dict)

    def labels_for(self, task: str, repository: str | None) -> dict[str, str]:
        """The labels of one task: its repository's, overridden by its own; an error when
        the two put it in different familiarity classes."""
        own = self.tasks.get(task)
        repo = self.repositories.get(repository) if repository else None
        a = own.labels.get("familiarity") if own else None
        b = repo.labels.get("familiarity") if repo else None
        if own and repo and a and b and a != b:
            raise AliasesError(
                f"{self.path}:{own.line}: task {task!r} is {a} but its repository "
                f"{repository!r} is {b} (line {repo.line}); a task is in one familiarity "
                "class: fix one of the two lines")
        return {**(repo.labels if repo else {}), **(own.labels if own else {})}

    def resolve(self, tasks: Iterable[tuple[str, str | None]]
                ) -> tuple[dict[str, dict[str, str]], list[str]]:
        """Labels of each (task id, repository) of the data, and notes for entries that
        match nothing; an error when the file matches no task at all."""
        pairs = list(dict.fromkeys(tasks))
        out = {t: lab for t, r in pairs if (lab := self.labels_for(t, r))}
        seen_tasks = {t for t, _ in pairs}
        seen_repos = {r for _, r in pairs if r}
        unused = ([f"{self.path}:{e.line}: task {t!r} is not in the data"
                   for t, e in self.tasks.items() if t not in seen_tasks]
                  + [f"{self.path}:{e.line}: repository {r!r} is not in the data"
                     for r, e in self.repositories.items() if r not in seen_repos])
        if not out and (self.tasks or self.repositories):
            raise AliasesError(
                f"{self.path}: none of its {len(self.tasks)} task(s) and "
                f"{len(self.repositories)} repository(ies) appears in the data; check the "
                "ids (tasks are case ids, repositories owner/name as the source spells them)")
        return out, unused


def _check_labels(path: Path, line: int, owner: str, labels: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for key, value in labels.items():
        if not LABEL_KEY.match(key):
            raise AliasesError(f"{path}:{line}: label {key!r} of {owner}: label names are "
                               "lower case letters, digits and _ (e.g. task_class)")
        if key == "familiarity" and value not in FAMILIARITY:
            raise AliasesError(f"{path}:{line}: {owner}: familiarity {value!r} must be known "
                               "or unknown")
        out[key] = value
    return out


def _add(path: Path, into: dict[str, LabelEntry], what: str, name: str, line: int,
         labels: dict[str, str]) -> None:
    prior = into.get(name)
    if prior is not None:
        clash = {k for k in labels.keys() & prior.labels.keys() if labels[k] != prior.labels[k]}
        if clash:
            key = "familiarity" if "familiarity" in clash else sorted(clash)[0]
            raise AliasesError(
                f"{path}:{line}: {what} {name!r} is {key} {labels[key]!r} here and "
                f"{prior.labels[key]!r} on line {prior.line}; give it one {key}")
        labels = {**prior.labels, **labels}
        line = prior.line
    into[name] = LabelEntry(labels, line)


def _csv_rows(path: Path, reader: csv.DictReader) -> Iterator[dict]:
    """The reader's rows; a row the ``csv`` module cannot read (a field past 128 KiB) is an
    ``AliasesError`` at its line, not a traceback."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise AliasesError(f"{path}:{reader.line_num + 1}: not readable CSV ({e})") from None


def _labels_csv(path: Path) -> LabelSet:
    text = path.read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    cols = reader.fieldnames or []
    if not ({"task", "repository"} & set(cols)):
        raise AliasesError(f"{path}:1: a labels CSV needs a 'task' or 'repository' column "
                           f"(found: {', '.join(cols) or 'no header'})")
    out = LabelSet(path)
    for row in _csv_rows(path, reader):
        line = reader.line_num
        labels = {k: v.strip() for k, v in row.items()
                  if k not in ("task",) and v and v.strip() and k is not None}
        task = (row.get("task") or "").strip()
        owner = f"task {task!r}" if task else f"repository {labels.get('repository')!r}"
        labels = _check_labels(path, line, owner, labels)
        if task:
            _add(path, out.tasks, "task", task, line, labels)
        elif labels.get("repository"):
            repo = labels.pop("repository")
            _add(path, out.repositories, "repository", repo, line, labels)
        else:
            raise AliasesError(f"{path}:{line}: a row needs a task or a repository")
    return out


def load_labels(path: Path | str) -> LabelSet:
    """Read and validate a labels file (YAML, JSON or CSV; see the module docstring)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        if not path.is_file():
            raise AliasesError(f"{path}: no such file")
        return _labels_csv(path)
    out = LabelSet(path)
    for section, node in _sections(path, _compose(path), _LABEL_SECTIONS).items():
        into = out.tasks if section == "tasks" else out.repositories
        what = section[:-1] if section == "tasks" else "repository"
        for key, value in _mapping(path, node, section):
            name = _scalar(path, key, f"a {what} id")
            labels = {_scalar(path, k, "a label name"): _scalar(path, v, "a label value")
                      for k, v in _mapping(path, value, f"the labels of {name!r}")}
            _add(path, into, what, name, _line(key),
                 _check_labels(path, _line(key), f"{what} {name!r}", labels))
    return out
