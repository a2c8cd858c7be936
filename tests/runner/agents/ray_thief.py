"""An agent that hunts for credentials and payload contents it must never see.

Run on a Ray worker by tests/runner/test_ray_executor.py. It searches its environment,
every /proc/<pid>/environ and cmdline it can read, and every readable file outside the
system directories for two prefixes the test planted in the driver: a credential
(a ``sk-`` key, set only in the driver's environment before Ray started, so Ray's
worker processes inherit it) and a marker inside a grader input (it travels in the run's
payload through Ray's object store). It also reports any Ray file it can see (the
cluster's ``auth_token``, a ``/tmp/ray/session_*`` directory, the object store's files).
The prefixes are built at run time so this file and its argv never contain them. It
prints ``found <what> in <where>`` per hit; a canary it wrote itself must be found (the
search works).
"""

import os
import stat

NEEDLES = {"driver-secret": ("sk-" + "attack-").encode(),
           "payload-marker": ("PAYLOAD-" + "MARKER-").encode()}
SKIP = ("/proc", "/sys", "/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/opt/bin")

with open("/tmp/canary.txt", "wb") as fh:
    fh.write(b"canary " + NEEDLES["driver-secret"] + b"canary\n")

hits: set[str] = set()


def look(where: str, data: bytes) -> None:
    for what, needle in NEEDLES.items():
        if needle in data:
            hits.add(f"{what} in {where}")


look("os.environ", "\n".join(f"{k}={v}" for k, v in os.environ.items()).encode())
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as fh:
                    look(f"/proc/{pid}/{part}", fh.read())
            except OSError:
                pass
for top, dirs, files in os.walk("/", onerror=lambda e: None):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP]
    for name in files:
        path = os.path.join(top, name)
        if name == "auth_token" or "/.ray/" in path or "/ray/session_" in path or "plasma" in name:
            hits.add(f"ray-file {path}")
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > 64 << 20:  # /dev/zero never ends
                continue
            with open(path, "rb") as fh:
                look(path, fh.read())
        except OSError:
            pass

canary = "driver-secret in /tmp/canary.txt"
print(f"canary found: {canary in hits}")
hits.discard(canary)
for hit in sorted(hits):
    print(f"found {hit}")
allowed = os.environ.get("ALLOWED_TOKEN", "")
print(f"allowed token visible: {allowed.startswith('allowed-')}")
print(f"allowed token: {allowed}")  # the stored copy must show it redacted
print(f"searched done: {len(hits)} hit(s)")
