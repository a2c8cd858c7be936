"""Patch inspection for a rollout's reviewer: public-API changes and new migrations
(docs/agents.md, patch inspection).

A change that removes an exported name or changes its signature breaks callers the task's
checks may never exercise; a new migration changes a database when it is deployed. Neither
fails a trial: each is a ``flag`` for review. Python modules are read with ``ast`` (the file
as it was in the prepared tree and as the agent left it); a module that does not parse on
either side is not compared. Migrations are added files under a known migration folder.
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from runner.flags import FlagFinding

if TYPE_CHECKING:
    from runner.trees import GitTrees

MIGRATION_DIRS = (("migrations",), ("migration",), ("alembic", "versions"), ("db", "migrate"))
"""Folders (as consecutive path components) whose new files are migrations: Django and most
frameworks (``migrations/``), Flyway (``db/migration/``), Alembic (``alembic/versions/``),
Rails (``db/migrate/``)."""
API_SOURCE_LIMIT = 1024 * 1024
"""Bytes of a module read on each side; a larger module is not compared."""


def migration_findings(added: list[str]) -> list[FlagFinding]:
    """A ``migration_added`` finding per added file under a known migration folder."""
    out = []
    for path in added:
        parts = PurePosixPath(path).parts[:-1]
        for folder in MIGRATION_DIRS:
            n = len(folder)
            if any(parts[i:i + n] == folder for i in range(len(parts) - n + 1)):
                out.append(FlagFinding("migration_added", path, f"new file under {'/'.join(folder)}/"))
                break
    return out


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``(a, b=…, *args, c, **kw)``: names, kinds and which have defaults; not the default
    values or annotations (a changed default is not a changed signature)."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    parts = [p.arg + ("=…" if i >= first_default else "") for i, p in enumerate(positional)]
    if a.posonlyargs:
        parts.insert(len(a.posonlyargs), "/")
    if a.vararg:
        parts.append("*" + a.vararg.arg)
    elif a.kwonlyargs:
        parts.append("*")
    parts += [k.arg + ("=…" if d is not None else "") for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        parts.append("**" + a.kwarg.arg)
    return "(" + ", ".join(parts) + ")"


def _all_names(tree: ast.Module) -> set[str] | None:
    """The literal ``__all__`` of a module, if it declares one."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return {str(v) for v in value} if isinstance(value, list | tuple) else None
    return None


def exported(source: str) -> dict[str, str] | None:
    """Exported name → signature (``class`` for a class, ``value`` for an assignment) of a
    module: its ``__all__``, else its top-level names without a leading underscore, plus
    the public methods of exported classes (``Class.method``). None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names[node.name] = _signature(node)
        elif isinstance(node, ast.ClassDef):
            names[node.name] = "class"
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                        not item.name.startswith("_") or item.name == "__init__"):
                    names[f"{node.name}.{item.name}"] = _signature(item)
        elif isinstance(node, ast.Assign):
            names.update({t.id: "value" for t in node.targets if isinstance(t, ast.Name)})
    public = _all_names(tree)
    top = public if public is not None else {n for n in names if "." not in n and not n.startswith("_")}
    return {n: s for n, s in names.items() if n.split(".")[0] in top}


def api_findings(path: str, before: str | None, after: str | None) -> list[FlagFinding]:
    """``public_api_change`` for a Python module whose exported names were removed or
    re-signatured (a removed module counts as every name removed; an added one changes nothing)."""
    if not path.endswith(".py") or before is None or _private_module(path):
        return []
    old = exported(before)
    new = exported(after) if after is not None else {}
    if old is None or new is None:
        return []
    removed = sorted(n for n in old if n not in new)
    changed = sorted(f"{n}{old[n]} → {n}{new[n]}" for n in old
                     if n in new and old[n] != new[n] and "class" not in (old[n], new[n]))
    if not removed and not changed:
        return []
    detail = "; ".join(part for part in (
        "removed: " + ", ".join(removed[:5]) + (f" and {len(removed) - 5} more" if len(removed) > 5 else "")
        if removed else "",
        "signature changed: " + "; ".join(changed[:3]) if changed else "") if part)
    return [FlagFinding("public_api_change", path, detail)]


def tree_findings(trees: GitTrees, old: str, new: str, timeout: float | None = None
                  ) -> list[FlagFinding]:
    """The findings of this module for the change from tree ``old`` to tree ``new``."""
    before = {rel for _mode, _sha, rel in trees.entries(old)}
    changed = trees.changed_names(old, new)
    findings = migration_findings([rel for rel in changed if rel not in before])
    modules = [rel for rel in changed if rel in before and rel.endswith(".py") and not _private_module(rel)]
    if not modules:
        return findings
    old_src = trees.read_files(old, modules, API_SOURCE_LIMIT + 1, timeout)
    new_src = trees.read_files(new, modules, API_SOURCE_LIMIT + 1, timeout)
    for rel in modules:
        a, b = old_src.get(rel), new_src.get(rel)
        if a is None or len(a) > API_SOURCE_LIMIT or (b is not None and len(b) > API_SOURCE_LIMIT):
            continue
        findings += api_findings(rel, a.decode("utf-8", "replace"),
                                 b.decode("utf-8", "replace") if b is not None else None)
    return findings


def _private_module(path: str) -> bool:
    """Tests and private modules export nothing a caller relies on."""
    from runner.flags import is_test_path

    p = PurePosixPath(path)
    return is_test_path(path) or any(part.startswith("_") and part != "__init__.py" for part in p.parts)
