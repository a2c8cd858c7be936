"""The sandbox's first process (PID 1 of its PID namespace): the runner's own, before the program.

Bubblewrap starts it as PID 1 (``--as-pid-1``). It holds the sandbox's *lifeline*: the
reading end of a pipe whose writing end only the runner holds, one per sandbox. PID 1
never starts the program once the lifeline reads closed, and while the program runs it
waits for whichever comes first, the program's end or the lifeline's: the runner ending
the sandbox (a timeout, a limit) or dying, however it dies (the kernel closes the pipe
then). When PID 1 exits, the kernel kills every process of its namespace, ``setsid``
daemons included. Nothing of this waits on a parent-death signal, whose arming races
with a runner killed while bubblewrap sets up (a sandbox used to outlive such a runner).
PID 1 watches the lifeline itself: no process of the sandbox can signal it (the kernel
drops signals to a namespace's init that it has no handler for), so none can cut it.

Before that it sets the rlimits it is given (``runner.sandbox.limits``) and reports
"ready" on a second pipe: an exit without that report is a sandbox failure, never the
program's exit code, and nothing the program prints can fake either. The program runs in
a process group of its own with the default signal dispositions; PID 1 exits with its
status (``NOT_STARTED`` when the lifeline ended first). It is the base interpreter
(``-I -S``, 13 ms): bash's traps could not end PID 1 with a status of its own from a
``CHLD`` trap (measured: bash 5.2 exited 0), nor wait on the program and the lifeline at
once without a race. docs/security.md, "Processes".
"""

from __future__ import annotations

from runner.sandbox.request import interpreter

NOT_STARTED = 125
"""PID 1's exit status when the program did not run to its end: the lifeline ended first,
or a limit could not be set."""

INIT = (
    "import os,resource,select,signal,sys\n"
    "r,l=int(sys.argv[1]),int(sys.argv[2]);a=sys.argv[3:];i=a.index('--');argv=a[i+1:]\n"
    "k={'-u':resource.RLIMIT_NPROC,'-d':resource.RLIMIT_DATA,'-f':resource.RLIMIT_FSIZE}\n"
    "for o,v in zip(a[:i:2],a[1:i:2]):\n"
    "    n=int(v)*(1 if o=='-u' else 1024); resource.setrlimit(k[o],(n,n))\n"
    "if select.select([l],[],[],0)[0]: os._exit(125)\n"
    "os.write(r,b'ready');os.close(r)\n"
    "pid=os.fork()\n"
    "if pid==0:\n"
    "    os.close(l); os.setpgid(0,0)\n"
    "    for g in (signal.SIGPIPE,signal.SIGXFSZ): signal.signal(g,signal.SIG_DFL)\n"
    "    try: os.execvp(argv[0],argv)\n"
    "    except OSError as e:\n"
    "        sys.stderr.write(f'trialhouse: cannot start {argv[0]}: {e}\\n'); os._exit(127)\n"
    "f=os.pidfd_open(pid)\n"
    "while True:\n"
    "    if l in select.select([l,f],[],[],1.0)[0]: os._exit(125)\n"
    "    while True:\n"
    "        try: p,s=os.waitpid(-1,os.WNOHANG)\n"
    "        except ChildProcessError: break\n"
    "        if p==0: break\n"
    "        if p==pid:\n"
    "            c=os.waitstatus_to_exitcode(s); os._exit(c if c>=0 else 128-c)\n"
)
"""argv: READY_FD LIFELINE_FD [ULIMIT_OPTION VALUE]... -- PROGRAM [ARG]... (``-u`` processes,
``-d`` data KiB, ``-f`` file KiB). The lifeline and the program's end are watched at once
(a pidfd), every orphan is reaped; the program gets the default SIGPIPE and SIGXFSZ back."""


def init_argv(ready_fd: int, lifeline_fd: int, ulimits: list[str]) -> list[str]:
    """argv prefix of PID 1, up to (and with) the ``--`` before the program."""
    return [interpreter(), "-I", "-S", "-c", INIT, str(ready_fd), str(lifeline_fd), *ulimits, "--"]
