"""An agent that tries to reach the Ray cluster's own ports from inside its sandbox (issue 33).

usage: ray_port_probe.py JSON   where JSON is a list of [host, port] pairs

For each pair: a direct TCP connection, then a CONNECT through the route's proxy (the
sandbox's ``HTTPS_PROXY``, when it has one). Prints ``REACHED <how> host:port`` for what
answered and ``refused <how> host:port: <why>`` for what did not; never raises.
"""

import json
import os
import socket
import sys


def direct(host: str, port: int) -> str | None:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as exc:
        return str(exc) or type(exc).__name__
    return None


def via_proxy(host: str, port: int) -> str | None:
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy.startswith("http://"):
        return "no proxy"
    phost, _, pport = proxy[len("http://"):].rstrip("/").rpartition(":")
    try:
        with socket.create_connection((phost, int(pport)), timeout=2) as s:
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            head = s.recv(200).decode("latin-1").splitlines()[0:1]
    except OSError as exc:
        return str(exc) or type(exc).__name__
    status = head[0] if head else "no answer"
    return None if " 200" in status else status


for host, port in json.loads(sys.argv[1]):
    for how, probe in (("direct", direct), ("proxy", via_proxy)):
        why = probe(host, port)
        print(f"REACHED {how} {host}:{port}" if why is None else f"refused {how} {host}:{port}: {why}",
              flush=True)
