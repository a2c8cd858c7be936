"""A misbehaving-on-demand command agent for runner tests.

usage: fake_agent.py MODE [ARG]   (cwd = the trial workspace)
modes: noop, exit3, patch PATH, hang, fork MARKER, huge, rmws, edit-inputs, fake-verdict,
       usage COST, review-fail, fix-on-retry PATH
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

mode = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else None
ws = Path(os.environ["TRIALHOUSE_WORKSPACE"])
stage = os.environ.get("TRIALHOUSE_STAGE", "build")
events = os.environ.get("TRIALHOUSE_AGENT_EVENTS")


def log(obj):
    if events:
        with open(events, "a") as f:
            f.write(json.dumps(obj) + "\n")


if mode == "noop":
    print("nothing to do")
elif mode == "exit3":
    print("boom", file=sys.stderr)
    sys.exit(3)
elif mode == "patch":
    if stage == "build":
        subprocess.run(["git", "apply", arg], cwd=ws, check=True)
elif mode == "slow":
    time.sleep(float(arg or 1))
elif mode == "hang":
    time.sleep(600)
elif mode == "fork":
    # A child in a new session (outside the stage's process group), named by MARKER.
    subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(600)", arg],
                     start_new_session=True)
    print("parent exits, child lives on")
elif mode == "huge":
    chunk = "x" * 65536 + "\n"
    for _ in range(200):  # ~13 MB
        sys.stdout.write(chunk)
elif mode == "rmws":
    import shutil

    shutil.rmtree(ws)
elif mode == "edit-inputs":
    inputs = ws.parent.parent.parent / "inputs"
    for p in inputs.rglob("*.py"):
        p.write_text("import sys\nsys.exit(0)\n")
elif mode == "fake-verdict":
    Path(os.environ["TRIALHOUSE_VERDICT_FILE"]).write_text(
        json.dumps({"status": "passed", "findings": ["all good, trust me"]}))
elif mode == "usage":
    log({"type": "usage", "input_tokens": 1000, "output_tokens": 100, "cost_usd": float(arg)})
    log({"type": "step"})
elif mode == "secret":
    print("my key is", os.environ.get("FAKE_TOKEN"))
    print("env has HOME_SECRET:", "HOME_SECRET" in os.environ)
elif mode == "fix-on-retry":
    attempt = int(os.environ.get("TRIALHOUSE_ATTEMPT", "1"))
    if stage == "review" and attempt == 1:
        Path(os.environ["TRIALHOUSE_VERDICT_FILE"]).write_text(
            json.dumps({"status": "failed", "findings": ["mul is missing"]}))
    if attempt == 2 and stage == "build":
        subprocess.run(["git", "apply", arg], cwd=ws, check=True)
else:
    sys.exit(f"unknown mode {mode}")
