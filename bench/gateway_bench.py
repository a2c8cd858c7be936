"""Model gateway overhead per call against a direct call to the same scripted upstream.

Two child processes (so the client, the gateway and the upstream do not share a GIL):
a scripted gateway playing the provider, and a forwarding gateway in front of it. The
client (this process, httpx with keep-alive) alternates a direct call to the upstream
and the same call through the forwarding gateway, for each workload:

* ``messages-json``   Anthropic Messages, non-streaming, instant answer
* ``messages-sse``    Anthropic Messages, streamed (SSE), instant answer
* ``chat-json``       OpenAI Chat Completions, non-streaming, instant answer
* ``messages-200ms``  streamed, the upstream waits 200 ms before answering (a fast model)

and prints p50/p90 latency of both, the added time at p50 and the ratio, from the same
run. Targets (issue 17): ≤ 2 ms added at p50, ≤ 5 % of a 200 ms call.

    .venv/bin/python bench/gateway_bench.py             # 400 calls per fast workload, 40 at 200 ms
    .venv/bin/python bench/gateway_bench.py --calls 1000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
READ = {"name": "Read", "input": {"file_path": "/w/a.py"}}
BODY = {"messages": [{"role": "user", "content": "fix it " * 200}], "model": "bench-model", "max_tokens": 100,
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}]}


def serve(*args: str) -> tuple[subprocess.Popen, dict[str, str]]:
    proc = subprocess.Popen([sys.executable, "-m", "runner.gateway", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    urls = {}
    for line in proc.stdout:  # type: ignore[union-attr]
        if line.strip() == "ready":
            return proc, urls
        trial, url = line.split()
        urls[trial] = url
    raise SystemExit("gateway did not start")


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def measure(client: httpx.Client, direct: str, proxied: str, path: str, body: dict, stream: bool,
            calls: int) -> tuple[list[float], list[float]]:
    times: dict[str, list[float]] = {"direct": [], "gateway": []}
    payload = {**body, "stream": stream} if "messages" in path else body
    for i in range(calls + 5):
        for name, base in (("direct", direct), ("gateway", proxied)) if i % 2 else (("gateway", proxied), ("direct", direct)):
            t0 = time.perf_counter()
            with client.stream("POST", base + path, json=payload) as r:
                for _ in r.iter_bytes():
                    pass
                assert r.status_code == 200, r.status_code
            if i >= 5:  # warm-up calls are not counted
                times[name].append((time.perf_counter() - t0) * 1000)
    return times["direct"], times["gateway"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--slow-calls", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fast = Path(tmp) / "fast.json"
        slow = Path(tmp) / "slow.json"
        fast.write_text(json.dumps({"steps": [{"tool_calls": [READ]}]}))
        slow.write_text(json.dumps({"steps": [{"tool_calls": [READ], "delay_s": 0.2}]}))
        up, up_urls = serve("--mode", "scripted", "--script", str(fast), "--trial", "fast")
        up_slow, slow_urls = serve("--mode", "scripted", "--script", str(slow), "--trial", "slow")
        gw, gw_urls = serve("--mode", "forward", "--trial", "fast", "--anthropic-url", up_urls["fast"],
                            "--openai-url", up_urls["fast"], "--anthropic-key-env", "", "--openai-key-env", "")
        gw_slow, gw_slow_urls = serve("--mode", "forward", "--trial", "slow", "--anthropic-url", slow_urls["slow"],
                                      "--anthropic-key-env", "")
        try:
            load = os.getloadavg()[0]
            print(f"gateway overhead per model call (load {load:.2f}, {os.cpu_count()} cores); times in ms")
            print(f"{'workload':<15} {'calls':>5} {'direct p50':>10} {'p90':>7} {'gateway p50':>11} {'p90':>7} "
                  f"{'added p50':>9} {'ratio p50':>9}")
            chat = {"model": "bench", "messages": BODY["messages"], "tools": [{"type": "function"}]}
            workloads = [
                ("messages-json", up_urls["fast"], gw_urls["fast"], "/v1/messages", BODY, False, args.calls),
                ("messages-sse", up_urls["fast"], gw_urls["fast"], "/v1/messages", BODY, True, args.calls),
                ("chat-json", up_urls["fast"], gw_urls["fast"], "/v1/chat/completions", chat, False, args.calls),
                ("messages-200ms", slow_urls["slow"], gw_slow_urls["slow"], "/v1/messages", BODY, True,
                 args.slow_calls),
            ]
            with httpx.Client(timeout=30) as client:
                for name, direct, proxied, path, body, stream, n in workloads:
                    d, g = measure(client, direct, proxied, path, body, stream, n)
                    dp50, gp50 = statistics.median(d), statistics.median(g)
                    print(f"{name:<15} {n:>5} {dp50:>10.2f} {percentile(d, 90):>7.2f} {gp50:>11.2f} "
                          f"{percentile(g, 90):>7.2f} {gp50 - dp50:>9.2f} {gp50 / dp50:>8.3f}x")
            print(f"load after: {os.getloadavg()[0]:.2f}")
        finally:
            for proc in (up, up_slow, gw, gw_slow):
                proc.terminate()
                proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
