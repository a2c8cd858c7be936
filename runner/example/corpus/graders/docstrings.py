"""The repository's lint: every public function and class of a package has a docstring.

Usage: ``docstrings.py PACKAGE`` (a directory of ``$TRIALHOUSE_WORKSPACE``). Exit 0 when
every public definition is documented, 1 listing each one that is not (or each file that
does not parse), 2 when the package is missing (a grader problem). The example corpus's
ledger repository is already red here on its initial commit: the case that carries this
check shows a pre-existing failure (docs/runner.md, "Pre-existing failures").

It reads the source with ``ast`` and never imports or runs it, so this process is its own
trusted parent (``_harness.decide_without_workspace_code``; docs/security.md, "The verdict
channel"): it holds the success token and writes it only when the lint passes.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

from _harness import _infra, decide_without_workspace_code


def undocumented(package: Path) -> list[str]:
    """``path:line: name`` of every public function or class without a docstring."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # not lintable: red
            out.append(f"{rel}: does not parse ({type(exc).__name__})")
            continue
        for node in ast.walk(tree):
            public = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_")
            if public and ast.get_docstring(node) is None:
                out.append(f"{rel}:{node.lineno}: {node.name} has no docstring")
    return out


def main() -> None:
    sys.dont_write_bytecode = True  # never leave __pycache__ beside the graders
    workspace = os.environ.get("TRIALHOUSE_WORKSPACE")
    if not workspace or len(sys.argv) != 2 or not (Path(workspace) / sys.argv[1]).is_dir():
        _infra("usage: docstrings.py PACKAGE with $TRIALHOUSE_WORKSPACE/PACKAGE a directory")

    def decide() -> tuple[bool, str]:
        missing = undocumented(Path(workspace) / sys.argv[1])
        return not missing, "\n".join(missing) if missing else "every public definition is documented"

    decide_without_workspace_code(decide)


if __name__ == "__main__":
    main()
