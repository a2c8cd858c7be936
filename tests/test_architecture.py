"""The data flow is the shape of the code: imports point upstream only.

runner ──► ingest ──► warehouse ──► analysis ──► (CLI, reports, notebooks)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["runner", "ingest", "warehouse", "analysis", "trialhouse"]

# package → top-level packages it must never import
FORBIDDEN = {
    "runner": {"ingest", "warehouse", "analysis", "trialhouse"},
    "ingest": {"analysis", "trialhouse"},
    "warehouse": {"ingest", "analysis", "trialhouse"},
    "analysis": {"ingest", "trialhouse"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if "." not in node.module:  # ``from runner import events`` imports ``runner.events``
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


@pytest.mark.parametrize("package", ["analysis", "ingest"])
def test_only_the_event_contract_is_imported_from_runner(package: str) -> None:
    """Ingest and analysis read runs through ``runner.events`` alone (never the orchestrator)."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        for name in _runner_modules(path)
        if name != "runner.events"
    ]
    assert not offenders, "\n".join(offenders)


def _runner_modules(path: Path) -> set[str]:
    """The ``runner`` modules a file imports, anywhere in it."""
    return {name for name in _imports(path) if name.split(".")[0] == "runner" and name != "runner"}


def test_no_private_name_crosses_a_module_wall() -> None:
    """``from x import _y`` between our modules is an interface nobody promised."""
    offenders = []
    for pkg in ("ingest", "warehouse"):
        for path in _modules(pkg):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                    offenders += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}"
                                  for a in node.names if a.name.startswith("_") and a.name != "__version__"]
    assert not offenders, "\n".join(offenders)


def test_packages_are_listed_in_pyproject() -> None:
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
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
