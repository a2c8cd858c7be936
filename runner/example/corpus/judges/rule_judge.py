"""A deterministic rule-based judge (the `command` judge host), used to show calibration.

Reads the evidence directory (argv[1]) and prints one answer in the judge JSON shape.
Fails a change that catches broad exceptions, leaves print() debugging or adds a second
validation helper; passes a non-empty change otherwise; abstains on an empty diff.
"""

import json
import re
import sys
from pathlib import Path

evidence = Path(sys.argv[1])
added = [line[1:] for line in (evidence / "diff.patch").read_text(encoding="utf-8").splitlines()
         if line.startswith("+") and not line.startswith("+++")]
reasons = []
if not added:
    print(json.dumps({"verdict": "inconclusive", "reasons": ["empty diff"]}))
    sys.exit(0)
if any(re.search(r"except\s+(Exception|BaseException)?\s*:", line) for line in added):
    reasons.append("catches a broad exception")
if any(re.search(r"^\s*print\(", line) for line in added):
    reasons.append("leaves print() debugging")
if any(re.search(r"def _?validate_\w+", line) for line in added):
    reasons.append("adds a parallel validation helper")
verdict = "fail" if reasons else "pass"
print(json.dumps({"verdict": verdict, "reasons": reasons or ["no rule fired"]}))
