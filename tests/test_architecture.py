"""The data flow is the shape of the code: imports point upstream only.

contract (imported by all, imports none of ours)
runner ──► ingest ──► warehouse ──► analysis ──► (CLI, reports, viewer, notebooks)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["contract", "runner", "ingest", "warehouse", "analysis", "trialhouse", "viewer"]

# package → top-level packages it must never import
FORBIDDEN = {
    "contract": {"runner", "ingest", "warehouse", "analysis", "trialhouse", "viewer"},
    "runner": {"ingest", "warehouse", "analysis", "trialhouse"},
    "ingest": {"runner", "analysis", "trialhouse"},
    "warehouse": {"runner", "ingest", "analysis", "trialhouse"},
    "analysis": {"runner", "ingest", "trialhouse", "viewer"},
    # the viewer reads the warehouse; of ingest only the review rule (the module map says which)
    "viewer": {"runner", "trialhouse"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if "." not in node.module:  # ``from contract import events`` imports ``contract.events``
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_upstream(package: str) -> None:
    offenders = []
    for path in _modules(package):
        if "example/corpus" in path.as_posix():
            continue  # repository sources of the example corpus, not our code
        for name in _imports(path):
            root = name.split(".")[0]
            if root in FORBIDDEN[package]:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("package", ["analysis", "ingest", "warehouse"])
def test_ingest_warehouse_and_analysis_never_import_the_runner(package: str) -> None:
    """They read runs through ``contract`` (events, value rules, chain), never the orchestrator:
    anywhere in a file, lazy imports too."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        for name in _imports(path)
        if name.split(".")[0] == "runner"
    ]
    assert not offenders, "\n".join(offenders)


def test_contract_imports_nothing_of_ours() -> None:
    """``contract`` is the floor: the standard library and declared libraries only, anywhere in
    a file (lazy imports too), besides its own modules."""
    ours = set(PACKAGES) - {"contract"}
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules("contract")
        for name in _imports(path) | _relative_imports(path)
        if name.split(".")[0] in ours or name.startswith(".")
    ]
    assert not offenders, "\n".join(offenders)


def _relative_imports(path: Path) -> set[str]:
    """``from . import x`` / ``from ..y import z``: each as a leading-dot name (never allowed in
    ``contract``, whose modules name each other in full so the rules above can read them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {"." * node.level + (node.module or "") for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level > 0}


PRIVATE_NAME_RULE = tuple(PACKAGES)


def test_no_private_name_crosses_a_module_wall() -> None:
    """``from x import _y`` between our modules is an interface nobody promised: what two
    modules need is public at the lower one."""
    offenders = []
    for pkg in PRIVATE_NAME_RULE:
        for path in _modules(pkg):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                    offenders += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}"
                                  for a in node.names if a.name.startswith("_") and a.name != "__version__"]
    assert not offenders, "\n".join(offenders)


def test_the_cli_never_reaches_into_the_report() -> None:
    """The CLI writes a report through ``analysis.report.write_report`` alone; the tables it
    prints are ``analysis.document``'s, never a report section's or the report's types."""
    offenders = [f"{path.relative_to(ROOT)} imports {name}"
                 for path in _modules("trialhouse") for name in sorted(_project_imports(path))
                 if name.startswith("analysis.report.")]
    assert not offenders, "\n".join(offenders)


CIRCLE_FREE = tuple(PACKAGES)


def test_no_import_circles() -> None:
    """No module imports itself back through others (lazy imports count: a circle is one
    room, whenever it is entered)."""
    graph = {_module_name(p): _project_imports(p) for pkg in CIRCLE_FREE for p in _modules(pkg)}
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        seen[name] = 1
        for dep in sorted(graph.get(name, ())):
            if dep not in graph or dep == name:  # a module naming itself (a child's entry point)
                continue
            if seen.get(dep) == 1:
                circles.append([*path[path.index(dep):], dep])
            elif dep not in seen:
                visit(dep, [*path, dep])
        seen[name] = 2

    for name in sorted(graph):
        if name not in seen:
            visit(name, [name])
    assert not circles, "\n".join(" → ".join(c) for c in circles)


def test_packages_are_listed_in_pyproject() -> None:
    import tomllib

    from setuptools import find_namespace_packages

    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    listed = set(find_namespace_packages(where=str(ROOT), include=found["include"]))
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("__init__.py")
        if "corpus" not in p.parts
    }
    assert on_disk <= listed, f"packages missing from pyproject: {sorted(on_disk - listed)}"


def test_cli_modules_import_library_code_lazily() -> None:
    """Command modules import only click and the stdlib at module level, so start-up stays fast."""
    heavy = {"polars", "duckdb", "pyarrow", "statsmodels", "scipy", "altair", "pydantic",
             "rich", "typer", "runner", "ingest", "warehouse", "analysis"}
    offenders = []
    for path in (ROOT / "trialhouse").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in heavy]
    assert not offenders, "\n".join(offenders)


def test_cli_start_up_imports_only_click() -> None:
    """Loading every command and parsing a command line (not running it) imports no rich,
    pydantic or data library: rich is imported by the functions that print tables, library
    code by the command body."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from trialhouse.cli import app\n"
        "root = app.make_context('trialhouse', ['summarize'])\n"
        "ctx = app.commands['summarize'].make_context(\n"
        "    'summarize', ['--json', '--holdout', 'only', '--run', 'r1'], parent=root)\n"
        "assert ctx.params['holdout'] == 'only' and ctx.params['run'] == ('r1',)\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, check=True)
    loaded = set(proc.stdout.split())
    assert "click" in loaded
    heavy = {"rich", "typer", "pydantic", "polars", "pyarrow", "duckdb", "numpy",
             "runner", "ingest", "warehouse", "analysis"}
    assert not loaded & heavy, sorted(loaded & heavy)


def test_every_third_party_import_is_declared_in_pyproject() -> None:
    """CI installs only what pyproject declares: a library imported directly must be listed,
    not merely arrive as another package's dependency."""
    import importlib.metadata
    import re
    import sys
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    declared = {norm(re.split(r"[<>=!~\[; ]", s, maxsplit=1)[0]) for s in specs}
    dists = importlib.metadata.packages_distributions()
    ours = set(PACKAGES) | {"tests"}
    missing = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            if "corpus" in path.parts or "example" in path.parts:
                continue
            for name in _imports(path):
                top = name.split(".")[0]
                if not top or top in ours or top in sys.stdlib_module_names or top == "__future__":
                    continue
                if not {norm(d) for d in dists.get(top, [top])} & declared:
                    missing.setdefault(top, str(path.relative_to(ROOT)))
    assert not missing, f"imported but not declared in pyproject: {missing}"


# --------------------------------------------------------------------------- the module map
# docs/design.md, "Map of modules": every module is on it, and imports only what its row
# allows. The ingest row is held by the ingest rule above (its own test function).

MAP_HELD_ELSEWHERE = {"ingest.*"}
MODULE_MAX_LINES = 400
SIZED = {"contract": 80, "runner": 80, "ingest": 80, "warehouse": 80, "analysis": 65, "trialhouse": 65,
         "viewer": 65}
"""Package → longest function allowed: 80 everywhere (issue 27), analysis, the CLI and the viewer
keep their earlier ~60."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _design_map() -> list[tuple[list[str], list[str]]]:
    """(module patterns, allowed import patterns) per row, phrases expanded."""
    import re

    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    table = text.split("<!-- module-map:start -->", 1)[1].split("<!-- module-map:end -->", 1)[0]
    rows: list[tuple[list[str], list[str]]] = []
    for line in table.strip().splitlines()[2:]:
        module_cell, _owns, allowed_cell = (c.strip() for c in line.strip("|").split("|"))
        modules = re.findall(r"`([^`]+)`", module_cell)
        allowed = re.findall(r"`([^`]+)`", allowed_cell)
        if "the rows above" in allowed_cell:
            allowed += [m for ms, _ in rows for m in ms if m.startswith("analysis.")]
        if "each other" in allowed_cell:
            allowed += modules
        rows.append((modules, allowed))
    return rows


def _matches(name: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        return name == pattern[:-2] or name.startswith(pattern[:-1])
    return name == pattern


def _project_imports(path: Path) -> set[str]:
    """Project modules imported anywhere in the file (lazy and TYPE_CHECKING imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from analysis import charts` imports the module analysis.charts
            found.update(f"{node.module}.{a.name}" if (ROOT / node.module.replace(".", "/") / a.name).exists()
                         or (ROOT / node.module.replace(".", "/") / f"{a.name}.py").exists()
                         else node.module for a in node.names)
    return {n for n in found if n.split(".")[0] in PACKAGES}


def test_module_map_holds() -> None:
    rows = _design_map()
    assert len(rows) >= 10, "the module map in docs/design.md was not found"
    unmapped, offenders = [], []
    for pkg in PACKAGES:
        for path in _modules(pkg):
            if "example" in path.parts or "corpus" in path.parts:
                continue
            name = _module_name(path)
            hits = [r for r in rows if any(_matches(name, m) for m in r[0])]
            if not hits:
                unmapped.append(name)
                continue
            if any(m in MAP_HELD_ELSEWHERE for m in hits[0][0]):
                continue
            allowed = hits[0][1]
            for imp in sorted(_project_imports(path)):
                if not any(_matches(imp, a) for a in allowed):
                    offenders.append(f"{name} imports {imp} (allowed: {', '.join(allowed) or 'none'})")
    assert not unmapped, f"modules missing from the map in docs/design.md: {unmapped}"
    assert not offenders, "\n".join(offenders)


def test_modules_and_functions_stay_small() -> None:
    """No module over 400 lines, no function over its package's limit (issues 16 and 27;
    docs/design.md)."""
    big = []
    for pkg, function_max in SIZED.items():
        for path in _modules(pkg):
            text = path.read_text(encoding="utf-8")
            if len(text.splitlines()) > MODULE_MAX_LINES:
                big.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = (node.end_lineno or node.lineno) - node.lineno + 1
                    if n > function_max:
                        big.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not big, "\n".join(big)


def test_the_valid_trial_rule_is_written_once() -> None:
    """infra_error and invalid leave the rates in one place: warehouse/sql/trial_status.sql
    (trial_facts.sql, an applied migration, states it for that view; a test in
    tests/analysis checks the two agree)."""
    import re

    rule = re.compile(r"""NOT IN \(\s*'infra_error',\s*'invalid'\s*\)|"""
                      r"""is_in\(\s*\[\s*["']infra_error["'],\s*["']invalid["']""")
    allowed = {"warehouse/sql/trial_status.sql", "warehouse/sql/trial_facts.sql"}
    found = sorted(str(p.relative_to(ROOT)) for pkg in ("analysis", "warehouse", "trialhouse")
                   for p in (ROOT / pkg).rglob("*") if p.suffix in (".py", ".sql")
                   and rule.search(p.read_text(encoding="utf-8")))
    assert set(found) <= allowed, f"the valid-trial rule written again in: {sorted(set(found) - allowed)}"
    assert "warehouse/sql/trial_status.sql" in found
