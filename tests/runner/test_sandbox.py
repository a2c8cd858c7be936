"""The isolation backends on their own: what a sandboxed program sees and cannot fake."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from runner import sandbox

PY = sys.executable


def run(req: sandbox.Request, backend: str = "bubblewrap", **kw):
    return sandbox.run(sandbox.backend(backend), req, timeout=30, **kw)


def request(tmp_path: Path, code: str, **kw) -> sandbox.Request:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return sandbox.Request(argv=["python3", "-c", code], cwd=out, env={"PATH": "/usr/bin:/bin"},
                           read_write=[out], **kw)


def test_only_listed_paths_are_visible(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    shown = tmp_path / "shown"
    shown.mkdir()
    (shown / "a.txt").write_text("visible")
    code = (f"import os; print(os.path.exists({str(secret)!r}), open({str(shown / 'a.txt')!r}).read());"
            f"open({str(shown / 'b.txt')!r}, 'w')")
    res = run(request(tmp_path, code, read_only=[shown]), stdout_path=tmp_path / "o.txt",
              stderr_path=tmp_path / "e.txt")
    assert (tmp_path / "o.txt").read_text().startswith("False visible")
    assert res.exit_code == 1 and "Read-only file system" in (tmp_path / "e.txt").read_text()


def test_pid_1_environment_holds_nothing_of_the_runner(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_SECRET", "do-not-leak")
    # PID 1 is the runner's init, started with the sandbox's own environment; a root runner's
    # PID 1 keeps the runner's id, so the sandbox (an id of its own) cannot even read it.
    code = ("import os\ntry: print(open('/proc/1/environ','rb').read())\n"
            "except PermissionError: print('unreadable')\nprint(sorted(os.environ))")
    run(request(tmp_path, code), stdout_path=tmp_path / "o.txt")
    out = (tmp_path / "o.txt").read_text()
    assert "do-not-leak" not in out and "RUNNER_SECRET" not in out
    assert ("unreadable" in out) if os.geteuid() == 0 else ("b'PATH=" in out)


_PID1_PROGRAM = """
import os, sys, time
for _ in range(20):  # orphans: their parent exits at once, so they are the sandbox PID 1's to reap
    if os.fork() == 0:
        if os.fork() == 0:
            time.sleep(0.05)
        os._exit(0)
    os.wait()
time.sleep(0.5)
zombies = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        zombies += "State:\tZ" in open(f"/proc/{pid}/status").read()
    except OSError:
        pass
print(sys.stdin.read(), os.getpgid(0) == os.getpid(), zombies)
sys.exit(3)
"""


@pytest.mark.parametrize("pid1", ["bash", "interpreter"])
def test_pid_1_keeps_stdin_reaps_orphans_passes_the_status_and_ends_on_the_lifeline(tmp_path, monkeypatch, pid1):
    """Both PID 1s (bash where the sandbox has it, else the base interpreter;
    ``runner.sandbox.init``): the program reads the runner's stdin in a process group of its
    own, orphans are reaped, its status is the result's; a timeout closes the lifeline and
    PID 1 ends the sandbox at once."""
    if pid1 == "interpreter":
        from types import SimpleNamespace

        from runner.sandbox import init

        monkeypatch.setattr(init, "shutil", SimpleNamespace(which=lambda *_a, **_k: None))
    res = run(request(tmp_path, _PID1_PROGRAM), stdin_bytes=b"token", stdout_path=tmp_path / "o.txt",
              stderr_path=tmp_path / "e.txt")
    assert (res.exit_code, (tmp_path / "o.txt").read_text().split()) == (3, ["token", "True", "0"]), \
        (tmp_path / "e.txt").read_text()
    slow = sandbox.run(sandbox.backend("bubblewrap"), request(tmp_path, "import time; time.sleep(120)"),
                       timeout=0.5)
    assert slow.timed_out and slow.duration_s < 5


def test_a_sandbox_setup_failure_is_could_not_start_never_an_exit_code(tmp_path, monkeypatch):
    real = sandbox.Bubblewrap.command

    def broken(self, req, session=None):  # a bind whose source vanished between check and start
        argv, env = real(self, req, session)
        return [argv[0], "--ro-bind", str(tmp_path / "gone"), "/gone", *argv[1:]], env

    monkeypatch.setattr(sandbox.Bubblewrap, "command", broken)
    res = run(request(tmp_path, "print(1)"), stderr_path=tmp_path / "e.txt")
    assert res.could_not_start and res.exit_code is None
    assert "sandbox could not start" in (res.error or "")


def test_a_program_cannot_fake_a_sandbox_failure(tmp_path):
    res = run(request(tmp_path, "import sys; print('bwrap: Can\\'t find source path', file=sys.stderr); sys.exit(1)"),
              stderr_path=tmp_path / "e.txt")
    assert res.exit_code == 1 and not res.could_not_start


def test_a_missing_program_could_not_start(tmp_path):
    req = sandbox.Request(argv=["no-such-program-xyz"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    res = run(req)
    assert res.could_not_start and "program not found" in res.error


def test_a_program_outside_the_sandbox_could_not_start_with_the_fix(tmp_path):
    prog = tmp_path / "tool.sh"
    prog.write_text("#!/bin/sh\necho hi\n")
    prog.chmod(0o755)
    req = sandbox.Request(argv=[str(tmp_path / "tool.sh")], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    hidden = sandbox.Request(**{**req.__dict__, "argv": ["tool.sh"],
                                "env": {"PATH": f"{tmp_path}:/usr/bin:/bin"}})
    res = run(hidden)
    assert res.could_not_start and "isolation.read_only_paths" in res.error
    assert run(sandbox.Request(**{**req.__dict__, "read_only": [prog]})).exit_code == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="a root runner's sandbox runs as an id of its own")
def test_a_program_only_its_owner_may_run_could_not_start_with_the_fix(tmp_path):
    prog = tmp_path / "tool.sh"
    prog.write_text("#!/bin/sh\necho hi\n")
    prog.chmod(0o744)
    req = sandbox.Request(argv=[str(prog)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, read_only=[prog])
    res = run(req)
    assert res.could_not_start and "chmod a+rx" in res.error, res
    prog.chmod(0o755)
    assert run(req).exit_code == 0


@pytest.mark.parametrize("network", [True, False])
def test_the_network_switch(tmp_path, network):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')"
    res = run(request(tmp_path, code, network=network), stdout_path=tmp_path / "o.txt")
    server.close()
    assert ("connected" in (tmp_path / "o.txt").read_text()) is network
    assert (res.exit_code == 0) is network


def test_capabilities_are_dropped_and_the_root_is_read_only(tmp_path):
    code = ("import os; print(open('/proc/self/status').read().split('CapEff:')[1].split()[0]);"
            "\ntry:\n open('/new-file','w')\nexcept OSError as e: print('refused', e.errno)")
    run(request(tmp_path, code), stdout_path=tmp_path / "o.txt")
    out = (tmp_path / "o.txt").read_text().split()
    assert out[0] == "0000000000000000" and out[1] == "refused"


@pytest.mark.skipif(not Path("/etc/shadow").exists(), reason="this host has no /etc/shadow to mask")
def test_host_credential_files_are_masked(tmp_path):
    code = ("\ntry:\n print(len(open('/etc/shadow','rb').read()))\n"
            "except OSError as e:\n print('unreadable', e.errno)")
    run(request(tmp_path, code), stdout_path=tmp_path / "o.txt")
    assert Path("/etc/shadow").stat().st_size > 0
    assert (tmp_path / "o.txt").read_text().split()[0] in ("0", "unreadable")


def test_an_unknown_backend_is_a_clear_error():
    with pytest.raises(sandbox.SandboxUnavailable, match="unknown isolation backend"):
        sandbox.backend("docker")


def test_a_missing_bwrap_names_the_install_and_the_opt_out(monkeypatch):
    monkeypatch.setattr(sandbox.discovery, "_probed", {})
    monkeypatch.setattr(sandbox.discovery.shutil, "which", lambda name, **kw: None)
    with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap.*backend.*none"):
        sandbox.backend("bubblewrap")
