"""The sandbox's first process (PID 1 of its PID namespace): the runner's own, before the program.

Bubblewrap starts it as PID 1 (``--as-pid-1``). It holds the sandbox's *lifeline*: the
reading end of a pipe whose writing end only the runner holds, one per sandbox. PID 1
never starts the program once the lifeline reads closed, and while the program runs it
waits for whichever comes first, the program's end or the lifeline's: the runner ending
the sandbox (a timeout, a limit) or dying, however it dies (the kernel closes the pipe
then). When PID 1 exits, the kernel kills every process of its namespace, ``setsid``
daemons included. Nothing of this waits on a parent-death signal, whose arming races
with a runner killed while bubblewrap sets up (a sandbox used to outlive such a runner).
The watcher of the lifeline is PID 1's own child: when the program kills it (it can where
it runs as the runner's own id), PID 1 ends the sandbox just the same.

Before that it sets the rlimits it is given (``runner.sandbox.limits``) and reports
"ready" on a second pipe: an exit without that report is a sandbox failure, never the
program's exit code, and nothing the program prints can fake either. The program runs in
a process group of its own with the default signal dispositions; PID 1 exits with its
status (``NOT_STARTED`` when the lifeline ended first). bash (2 ms) where there is one,
else the base interpreter (13 ms). docs/security.md, "Processes".
"""

from __future__ import annotations

import shutil

from runner.sandbox.request import SANDBOX_PATH, interpreter

NOT_STARTED = 125
"""PID 1's exit status when the program did not run to its end: the lifeline ended first,
or a limit could not be set."""

BASH_INIT = (
    'r=$1 l=$2; shift 2\n'
    'while [ "$1" != -- ]; do ulimit "$1" "$2" || exit 125; shift 2; done; shift\n'
    'if read -t 0 -u "$l"; then exit 125; fi\n'
    'printf ready >&"$r"; eval "exec $r>&-"\n'
    'set -m\n'
    '"$@" & a=$!\n'
    'read -r -u "$l" & w=$!\n'
    'eval "exec $l<&- 2>/dev/null"\n'
    'wait -n -p done "$a" "$w"; s=$?\n'
    '[ "$done" = "$a" ] || exit 125\n'
    'exit $s\n'
)
"""argv: READY_FD LIFELINE_FD [ULIMIT_OPTION VALUE]... -- PROGRAM [ARG]..."""

PYTHON_INIT = (
    "import os,resource,select,sys\n"
    "r,l=int(sys.argv[1]),int(sys.argv[2]);a=sys.argv[3:];i=a.index('--');argv=a[i+1:]\n"
    "k={'-u':resource.RLIMIT_NPROC,'-d':resource.RLIMIT_DATA,'-f':resource.RLIMIT_FSIZE}\n"
    "for o,v in zip(a[:i:2],a[1:i:2]):\n"
    "    n=int(v)*(1 if o=='-u' else 1024); resource.setrlimit(k[o],(n,n))\n"
    "if select.select([l],[],[],0)[0]: os._exit(125)\n"
    "os.write(r,b'ready');os.close(r)\n"
    "pid=os.fork()\n"
    "if pid==0:\n"
    "    os.close(l); os.setpgid(0,0)\n"
    "    try: os.execvp(argv[0],argv)\n"
    "    except OSError as e:\n"
    "        sys.stderr.write(f'trialhouse: cannot start {argv[0]}: {e}\\n'); os._exit(127)\n"
    "while True:\n"
    "    if select.select([l],[],[],0.2)[0]: os._exit(125)\n"
    "    while True:\n"
    "        p,s=os.waitpid(-1,os.WNOHANG)\n"
    "        if p==0: break\n"
    "        if p==pid:\n"
    "            c=os.waitstatus_to_exitcode(s); os._exit(c if c>=0 else 128-c)\n"
)
"""The same in Python (``-I -S``): the lifeline polled, every orphan reaped."""


def init_argv(ready_fd: int, lifeline_fd: int, ulimits: list[str]) -> list[str]:
    """argv prefix of PID 1, up to (and with) the ``--`` before the program."""
    bash = shutil.which("bash", path=SANDBOX_PATH)
    head = ([bash, "--norc", "--noprofile", "-c", BASH_INIT, "trialhouse-init"] if bash
            else [interpreter(), "-I", "-S", "-c", PYTHON_INIT])
    return [*head, str(ready_fd), str(lifeline_fd), *ulimits, "--"]
