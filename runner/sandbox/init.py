"""The sandbox's first process (PID 1 of its PID namespace): the runner's own, before the program.

Bubblewrap starts it as PID 1 (``--as-pid-1``) with ``--die-with-parent``, so it dies when
bubblewrap's monitor dies, and with it (being the namespace's init) every process of the
sandbox, ``setsid`` daemons included. That chain only holds if the runner was alive when
each link was armed: a runner killed while bubblewrap was still setting up used to leave
the sandbox running with nothing to end it. So PID 1 first checks the *lifeline*, a pipe
whose writing end only the runner process holds: if it reads as closed, the runner is gone
and it exits before starting anything. Otherwise every link was armed while the runner
lived, and the runner's death now ends the whole sandbox, deterministically.

It then sets the rlimits it is given (``runner.sandbox.limits``), reports "ready" on a
second pipe (an exit without that report is a sandbox failure, never the program's exit
code, and nothing the program prints can fake either), closes both pipes and runs the
program as its child, reaping every orphan until the program ends, and exits with the
program's status. bash (2 ms) where there is one, else the base interpreter (13 ms).
docs/security.md, "Processes".
"""

from __future__ import annotations

import shutil

from runner.sandbox.request import SANDBOX_PATH, interpreter

NOT_STARTED = 125
"""PID 1's exit status when it started nothing (the runner was gone, or a limit could not be set)."""

BASH_INIT = (
    'r=$1 l=$2; shift 2\n'
    'while [ "$1" != -- ]; do ulimit "$1" "$2" || exit 125; shift 2; done; shift\n'
    'if read -t 0 -u "$l"; then exit 125; fi\n'
    'printf ready >&"$r"; eval "exec $r>&- $l<&-"\n'
    '"$@"\n'
    's=$?; exit $s\n'
)
"""argv: READY_FD LIFELINE_FD [ULIMIT_OPTION VALUE]... -- PROGRAM [ARG]..."""

PYTHON_INIT = (
    "import os,resource,select,sys\n"
    "r,l=int(sys.argv[1]),int(sys.argv[2]);a=sys.argv[3:];i=a.index('--');argv=a[i+1:]\n"
    "k={'-u':resource.RLIMIT_NPROC,'-d':resource.RLIMIT_DATA,'-f':resource.RLIMIT_FSIZE}\n"
    "for o,v in zip(a[:i:2],a[1:i:2]):\n"
    "    n=int(v)*(1 if o=='-u' else 1024); resource.setrlimit(k[o],(n,n))\n"
    "if select.select([l],[],[],0)[0]: os._exit(125)\n"
    "os.write(r,b'ready');os.close(r);os.close(l)\n"
    "pid=os.fork()\n"
    "if pid==0:\n"
    "    try: os.execvp(argv[0],argv)\n"
    "    except OSError as e:\n"
    "        sys.stderr.write(f'trialhouse: cannot start {argv[0]}: {e}\\n'); os._exit(127)\n"
    "while True:\n"
    "    p,s=os.wait()\n"
    "    if p==pid:\n"
    "        c=os.waitstatus_to_exitcode(s); os._exit(c if c>=0 else 128-c)\n"
)
"""The same in Python (``-I -S``), reaping children with ``wait``."""


def init_argv(ready_fd: int, lifeline_fd: int, ulimits: list[str]) -> list[str]:
    """argv prefix of PID 1, up to (and with) the ``--`` before the program."""
    bash = shutil.which("bash", path=SANDBOX_PATH)
    head = ([bash, "--norc", "--noprofile", "-c", BASH_INIT, "trialhouse-init"] if bash
            else [interpreter(), "-I", "-S", "-c", PYTHON_INIT])
    return [*head, str(ready_fd), str(lifeline_fd), *ulimits, "--"]
