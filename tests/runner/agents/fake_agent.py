"""A misbehaving-on-demand command agent for runner tests.

usage: fake_agent.py MODE [ARG]   (cwd = the trial workspace)
modes: noop, exit3, patch PATH, hang, fork MARKER, huge, rmws, edit-inputs, fake-verdict,
       usage COST, review-fail, fix-on-retry PATH, chat BASE_URL
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
elif mode == "chat":
    # A tiny model loop over the gateway (Chat Completions, one bash tool), standard library only:
    # run each tool call in the workspace and send its output back, until the model stops asking.
    import urllib.error
    import urllib.request

    key = os.environ["TRIALHOUSE_MODEL_API_KEY"]
    messages = [{"role": "user", "content": Path(os.environ["TRIALHOUSE_PROMPT_FILE"]).read_text()}]
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    for _turn in range(10):
        body = json.dumps({"model": "chat-model", "messages": messages, "tools": tools}).encode()
        req = urllib.request.Request(f"{arg}/v1/chat/completions", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            sys.exit(f"model call failed: HTTP {exc.code}: {exc.read()[:300]!r}")
        message = answer["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            break
        for call in calls:
            command = json.loads(call["function"]["arguments"])["command"]
            done = subprocess.run(["sh", "-c", command], cwd=ws, capture_output=True, text=True)
            log({"type": "tool_call", "name": "bash", "args": {"command": command}, "exit_code": done.returncode})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": done.stdout + done.stderr})
else:
    sys.exit(f"unknown mode {mode}")
