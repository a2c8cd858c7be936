"""Write a ``mini-extra swebench`` output directory from real mini-swe-agent 2.4.6 trajectories.

The trajectories are the real CLI's, recorded against the scripted gateway
(tests/runner/agents/fixtures/real/mini-swe-agent-2.4.6/*/trajectory.json); this lays them out
as the SWE-bench batch runner does (FORMATS.md §7): ``<iid>/<iid>.traj.json`` with
``instance_id`` and the patch as ``info.submission``, ``preds.json``, and the SWE-bench
evaluation's run report beside them (mini does not grade). The workspace path becomes
``/testbed`` as in SWE-bench images. Run: .venv/bin/python tests/ingest/formats/gen_mini_fixtures.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

REAL = Path(__file__).resolve().parents[2] / "runner" / "agents" / "fixtures" / "real" / "mini-swe-agent-2.4.6"
OUT = Path(__file__).parent / "fixtures" / "mini_swe_agent" / "run1"
PATCH = ("diff --git a/calc.py b/calc.py\nindex 1b2c3d4..5e6f7a8 100644\n--- a/calc.py\n+++ b/calc.py\n"
         "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n")

# instance id, recorded scenario, submitted patch, graded (resolved / unresolved / not evaluated)
INSTANCES = [
    ("calc__calc-1", "success", PATCH, "resolved"),
    ("calc__calc-2", "success", PATCH, "unresolved"),
    ("calc__calc-3", "turn-limit", "", None),  # LimitsExceeded, no patch: budget_exhausted
    ("calc__calc-4", "http-500", "", None),  # InternalServerError, no patch: infra_error
    ("calc__calc-5", "success", PATCH, None),  # a patch nobody graded: not a trial
]


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    preds = {}
    for iid, scenario, patch, _ in INSTANCES:
        text = (REAL / scenario / "trajectory.json").read_text(encoding="utf-8")
        doc = json.loads(text)
        workspace = doc["info"]["config"]["environment"]["cwd"]
        doc = json.loads(text.replace(workspace, "/testbed"))
        doc["instance_id"] = iid
        doc["info"]["submission"] = patch
        for message in doc["messages"]:
            if message.get("role") == "exit":
                message.setdefault("extra", {})["submission"] = patch
        (OUT / iid).mkdir()
        (OUT / iid / f"{iid}.traj.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        preds[iid] = {"model_name_or_path": doc["info"]["config"]["model"]["model_name"], "instance_id": iid,
                      "model_patch": patch}
    (OUT / "preds.json").write_text(json.dumps(preds, indent=2) + "\n", encoding="utf-8")
    graded = [i for i in INSTANCES if i[3] is not None]
    report = {"total_instances": len(graded), "submitted_instances": len(graded),
              "completed_instances": len(graded), "resolved_instances": sum(i[3] == "resolved" for i in graded),
              "submitted_ids": [i[0] for i in graded], "resolved_ids": [i[0] for i in graded if i[3] == "resolved"],
              "unresolved_ids": [i[0] for i in graded if i[3] == "unresolved"], "error_ids": [],
              "empty_patch_ids": [], "schema_version": 2}
    (OUT / "th-scripted-1.run1.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
