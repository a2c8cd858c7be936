"""The built-in judge host: one tool-free Anthropic Messages call, the answer text on stdout.

Run inside the sandbox as ``python -m runner.judges.client PROMPT_FILE MODEL`` with
``TRIALHOUSE_MODEL_BASE_URL`` / ``TRIALHOUSE_MODEL_API_KEY`` pointing at a gateway route.
Standard library only (it runs with the sandbox's view of the interpreter). Offers no
tools, so in the gateway's scripted mode it is answered by the script's ``side`` reply.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request


def main(argv: list[str]) -> int:
    prompt_file, model = argv[0], argv[1]
    effort = argv[2] if len(argv) > 2 else ""
    with open(prompt_file, encoding="utf-8") as f:
        prompt = f.read()
    body: dict[str, object] = {"model": model, "max_tokens": 2048,
                               "messages": [{"role": "user", "content": prompt}]}
    if effort:
        body["metadata"] = {"user_id": f"trialhouse-judge-effort-{effort}"}
    req = urllib.request.Request(
        os.environ["TRIALHOUSE_MODEL_BASE_URL"].rstrip("/") + "/v1/messages",
        data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "anthropic-version": "2023-06-01",
                 "x-api-key": os.environ.get("TRIALHOUSE_MODEL_API_KEY", "")})
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            doc = json.loads(resp.read())
    except (urllib.error.URLError, ValueError) as exc:
        print(f"judge client: {exc}", file=sys.stderr)
        return 2
    text = "".join(b.get("text", "") for b in doc.get("content", []) if isinstance(b, dict))
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
