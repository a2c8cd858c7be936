"""Run this task's visible checks on the workspace, the way the graders will.

usage: python3 "$TRIALHOUSE_CHECKS/run_check.py" [CHECK_ID ...]   (no id: every visible check)

Copied by trialhouse into each stage's read-only ``$TRIALHOUSE_CHECKS`` next to
``checks.json`` and the files the visible checks read (docs/runner.md, "Visible and hidden
checks"). Each check runs as its grader does: its argv without a shell, cwd the checks
directory, ``TRIALHOUSE_WORKSPACE``/``TRIALHOUSE_INPUTS``/``TRIALHOUSE_RESULT_FILE`` set,
and a one-time token on stdin when the check needs one. Prints ``<id>: passed|failed|
inconclusive`` and the end of the check's output; exits 0 when every check run passed,
1 when one did not, 2 on a usage error. Standard library only. Hidden checks are not here.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TAIL = 2000


def _run(check: dict, workspace: str) -> tuple[str, str]:
    """(verdict, the end of the output) of one check."""
    token = secrets.token_hex(16) if check.get("success_token") else None
    with tempfile.TemporaryDirectory(prefix="trialhouse-check-") as tmp:
        result = os.path.join(tmp, "result")
        env = dict(os.environ, TRIALHOUSE_WORKSPACE=workspace, TRIALHOUSE_INPUTS=HERE,
                   TRIALHOUSE_RESULT_FILE=result, PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1")
        try:
            done = subprocess.run(check["argv"], cwd=HERE, env=env, input=(token + "\n") if token else "",
                                  capture_output=True, text=True, timeout=check.get("timeout_seconds", 60))
        except subprocess.TimeoutExpired:
            return "inconclusive", "timed out"
        except OSError as exc:
            return "inconclusive", f"could not start: {exc}"
        verdict = {0: "passed", 1: "failed"}.get(done.returncode, "inconclusive")
        if token is not None and verdict == "passed":
            try:
                with open(result, encoding="utf-8", errors="replace") as fh:
                    written = fh.read(4096)
            except OSError:
                written = ""
            if token not in written:
                verdict = "failed"
    return verdict, (done.stdout + done.stderr)[-TAIL:]


def main(argv: list[str]) -> int:
    with open(os.path.join(HERE, "checks.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    checks = {c["id"]: c for c in doc["checks"]}
    unknown = [a for a in argv if a not in checks]
    if unknown:
        print(f"run_check: unknown check(s) {', '.join(unknown)}; visible checks: {', '.join(checks)}",
              file=sys.stderr)
        return 2
    workspace = os.environ.get("TRIALHOUSE_WORKSPACE") or doc["workspace"]
    failed = 0
    for cid in argv or list(checks):
        verdict, output = _run(checks[cid], workspace)
        failed += verdict != "passed"
        print(f"{cid}: {verdict}")
        for line in output.strip().splitlines():
            print(f"    {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
