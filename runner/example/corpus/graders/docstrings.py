"""The repository's lint: every public function and class of a package has a docstring.

Usage: ``docstrings.py PACKAGE`` (a directory of ``$TRIALHOUSE_WORKSPACE``). Reads the
source with ``ast`` and never imports it. Exit 0 when every public definition is
documented, 1 listing each one that is not, 2 when the package is missing (a grader
problem). The example corpus's ledger repository is already red here on its initial
commit: the case that carries this check shows a pre-existing failure (docs/runner.md).
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path


def undocumented(package: Path) -> list[str]:
    """``path:line: name`` of every public function or class without a docstring."""
    out = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            public = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_")
            if public and ast.get_docstring(node) is None:
                out.append(f"{path.relative_to(package.parent).as_posix()}:{node.lineno}: {node.name} has no docstring")
    return out


def main() -> None:
    workspace = os.environ.get("TRIALHOUSE_WORKSPACE")
    if not workspace or len(sys.argv) != 2 or not (Path(workspace) / sys.argv[1]).is_dir():
        print("grader error: usage docstrings.py PACKAGE with $TRIALHOUSE_WORKSPACE/PACKAGE a directory",
              file=sys.stderr)
        sys.exit(2)
    missing = undocumented(Path(workspace) / sys.argv[1])
    print("\n".join(missing) if missing else "every public definition is documented")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
