"""The seccomp filter every bubblewrap sandbox runs under: the system calls an agent never needs.

Built with libseccomp through ``pyseccomp`` (a maintained binding; no hand-packed BPF),
compiled once per process and handed to bubblewrap (``--seccomp FD``), which loads it
just before the sandbox's first program starts, so everything in the sandbox runs under
it. Everything not listed is allowed; a listed call fails with ``EPERM`` (``ENOSYS`` for
the calls a program must be able to fall back from). ``clone3`` fails with ``ENOSYS`` so
that C libraries fall back to ``clone``, whose flags a filter can read: a ``clone`` or
``unshare`` asking for a new user namespace is refused. System calls of other
architectures (32-bit x86, x32) kill the process: the filter cannot be sidestepped
through another ABI (docs/security.md, "System calls").
"""

from __future__ import annotations

import errno
import os
import threading

from runner.sandbox.request import SandboxUnavailable

CLONE_NEWUSER = 0x10000000

REFUSED: dict[str, str] = {
    "ptrace": "tracing another process", "process_vm_readv": "reading another process's memory",
    "process_vm_writev": "writing another process's memory", "pidfd_getfd": "taking another process's files",
    "kcmp": "comparing another process's kernel objects",
    "keyctl": "the kernel keyring", "add_key": "the kernel keyring", "request_key": "the kernel keyring",
    "mount": "mounting", "umount2": "unmounting", "pivot_root": "changing the root", "chroot": "changing the root",
    "move_mount": "mounting", "open_tree": "mounting", "fsopen": "mounting", "fsconfig": "mounting",
    "fsmount": "mounting", "fspick": "mounting", "mount_setattr": "mounting",
    "setns": "joining another namespace",
    "init_module": "loading a kernel module", "finit_module": "loading a kernel module",
    "delete_module": "unloading a kernel module",
    "bpf": "BPF programs", "perf_event_open": "performance counters",
    "kexec_load": "replacing the kernel", "kexec_file_load": "replacing the kernel", "reboot": "rebooting",
    "userfaultfd": "user page-fault handling (a race-widening primitive)",
    "swapon": "swap", "swapoff": "swap", "acct": "process accounting", "quotactl": "disk quotas",
    "syslog": "the kernel log", "lookup_dcookie": "kernel profiling",
    "open_by_handle_at": "opening files by handle", "iopl": "I/O ports", "ioperm": "I/O ports",
    "settimeofday": "the clock", "clock_settime": "the clock", "clock_adjtime": "the clock",
    "vhangup": "terminals", "uselib": "obsolete library loading",
}
"""Calls refused with ``EPERM``, with what each would reach (docs/security.md)."""
ABSENT = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
"""Calls that fail as if the kernel lacked them (``ENOSYS``): programs fall back.
``io_uring`` is a large kernel attack surface that no agent needs."""
CLONE_FLAGS_REFUSED = {"clone": 0, "unshare": 0}
"""Calls refused when their flags (argument ``n``) ask for a new user namespace."""

_lock = threading.Lock()
_program: bytes | None = None


def program() -> bytes:
    """The compiled filter (BPF), built once per process."""
    global _program
    with _lock:
        if _program is None:
            _program = _build()
        return _program


def _build() -> bytes:
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # the binding, or libseccomp itself, is missing
        raise SandboxUnavailable(
            f"the sandbox's seccomp filter needs libseccomp ({exc}): install it "
            "(Debian/Ubuntu: apt-get install libseccomp2; `make bubblewrap` does it)") from exc
    f = sc.SyscallFilter(sc.ALLOW)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    f.set_attr(sc.Attr.CTL_NNP, 0)  # bubblewrap sets no_new_privs itself
    for name in REFUSED:
        f.add_rule(sc.ERRNO(errno.EPERM), name)
    for name in ABSENT:
        f.add_rule(sc.ERRNO(errno.ENOSYS), name)
    for name, arg in CLONE_FLAGS_REFUSED.items():
        f.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(arg, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    read_fd = os.memfd_create("trialhouse-seccomp", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(read_fd), "wb") as out:
            f.export_bpf(out)
        os.lseek(read_fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(read_fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(read_fd)


def program_fd() -> int:
    """A new descriptor (not inheritable) from which bubblewrap reads the filter once."""
    data = program()
    r, w = os.pipe()
    try:
        os.write(w, data)  # a few hundred bytes: within any pipe's buffer
    finally:
        os.close(w)
    return r
