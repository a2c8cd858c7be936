"""The sandbox's first process (PID 1 of its PID namespace): the runner's own, before the program.

Bubblewrap starts it as PID 1 (``--as-pid-1``). It holds the sandbox's *lifeline*: the
reading end of a pipe whose writing end only the runner holds, one per sandbox. PID 1
never starts the program once the lifeline reads closed, and while the program runs it
waits for whichever comes first, the program's end or the lifeline's: the runner ending
the sandbox (a timeout, a limit) or dying, however it dies (the kernel closes the pipe
then). When PID 1 exits, the kernel kills every process of its namespace, ``setsid``
daemons included. Nothing of this waits on a parent-death signal, whose arming races
with a runner killed while bubblewrap sets up (a sandbox used to outlive such a runner).
PID 1 watches the lifeline itself, out of the program's reach: under a root runner the
program runs as another id without ``CAP_KILL`` and cannot signal it at all; otherwise the
kernel drops every signal PID 1 has no handler for, and those it has can at most end the
sandbox early or delay PID 1's exit by a bounded poll (``INIT_BASH``), never keep the
sandbox alive once the lifeline is closed.

Before that it sets the rlimits it is given (``runner.sandbox.limits``) and reports
"ready" on a second pipe: an exit without that report is a sandbox failure, never the
program's exit code, and nothing the program prints can fake either. The program runs in
a process group of its own (a signal to its group never reaches PID 1) with the signal
dispositions bubblewrap started with; PID 1 exits with its status (``NOT_STARTED`` when
the lifeline ended first).

PID 1 is bash where the sandbox has one (``INIT_BASH``, ~2 ms to start) and otherwise the
base interpreter (``INIT``, ``-I -S``: ~15-25 ms, measured by ``bench/sandbox_start.py``).
bash blocks reading the lifeline itself; a child of its own runs the program and, when it
ends, signals PID 1 (``USR1``, trapped), which collects that child's status and exits
with it. (Measured on bash 5.2: ``wait -n`` races, it forgets a job that ended before it is
called; a ``CHLD`` trap does not interrupt a blocking ``read``; a ``USR1`` trap does.) docs/security.md,
"Processes".
"""

from __future__ import annotations

import shutil

from runner.sandbox.request import SANDBOX_PATH, interpreter

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
    "w,x=os.pipe();os.set_blocking(x,False);os.set_blocking(w,False)\n"
    "signal.set_wakeup_fd(x);signal.signal(signal.SIGCHLD,lambda *_:None)\n"
    "pid=os.fork()\n"
    "if pid==0:\n"
    "    os.close(l); os.setpgid(0,0)\n"
    "    for g in (signal.SIGPIPE,signal.SIGXFSZ): signal.signal(g,signal.SIG_DFL)\n"
    "    try: os.execvp(argv[0],argv)\n"
    "    except OSError as e:\n"
    "        sys.stderr.write(f'trialhouse: cannot start {argv[0]}: {e}\\n'); os._exit(127)\n"
    "f=os.pidfd_open(pid)\n"
    "while True:\n"
    "    if l in select.select([l,f,w],[],[],1.0)[0]: os._exit(125)\n"
    "    try: os.read(w,4096)\n"
    "    except BlockingIOError: pass\n"
    "    while True:\n"
    "        try: p,s=os.waitpid(-1,os.WNOHANG)\n"
    "        except ChildProcessError: break\n"
    "        if p==0: break\n"
    "        if p==pid:\n"
    "            c=os.waitstatus_to_exitcode(s); os._exit(c if c>=0 else 128-c)\n"
)
"""argv: READY_FD LIFELINE_FD [ULIMIT_OPTION VALUE]... -- PROGRAM [ARG]... (``-u`` processes,
``-d`` data KiB, ``-f`` file KiB). The lifeline and the program's end are watched at once
(a pidfd), and every orphan is reaped as it ends (``SIGCHLD`` wakes the ``select`` through
the wakeup pipe); the program gets the default SIGPIPE and SIGXFSZ back."""


INIT_BASH = (
    'r=$1 l=$2; shift 2\n'
    'while [ "$1" != -- ]; do ulimit "$1" "$2" || exit 125; shift 2; done; shift\n'
    'ended() { for _ in {1..1000}; do kill -0 "$!" 2>/dev/null || { wait "$!"; exit "$?"; }\n'
    '  read -t 0.001 -u "$l" _; [ $? -gt 128 ] || exit 125; done; }\n'
    'trap ended USR1\n'
    'read -t 0 -u "$l" && exit 125\n'
    'printf ready >&"$r"; exec {r}>&-\n'
    '(exec {e}>&2 2>/dev/null {l}<&-; set -m; "$@" 2>&"$e" {e}>&-; s=$?; kill -USR1 $$; exit "$s") <&0 &\n'
    'read -r -u "$l" _\n'
    'exit 125\n'
)
"""``INIT`` in bash, same argv (``ulimit`` takes ``-u`` processes, ``-d`` and ``-f`` KiB).
PID 1 reads the lifeline (nothing is ever written to it: the read returns once the runner's
end is closed). The child that runs the program keeps stdin (``<&0``: an asynchronous list
would get ``/dev/null``), gives the program its own process group (``set -m``) and its own
stderr (bash's job messages go to ``/dev/null``), then signals PID 1 and exits: ``ended``
exits with that child's status once it is gone (it looks every millisecond for up to a
second, watching the lifeline meanwhile), so a ``USR1`` from anything else (only a
runner that is not root shares PID 1's id) holds nothing up. Orphans are reaped by bash's own ``SIGCHLD`` handler."""


def init_argv(ready_fd: int, lifeline_fd: int, ulimits: list[str]) -> list[str]:
    """argv prefix of PID 1, up to (and with) the ``--`` before the program."""
    bash = shutil.which("bash", path=SANDBOX_PATH)
    if bash:
        return [bash, "--norc", "--noprofile", "-c", INIT_BASH, "trialhouse-init", str(ready_fd),
                str(lifeline_fd), *ulimits, "--"]
    return [interpreter(), "-I", "-S", "-c", INIT, str(ready_fd), str(lifeline_fd), *ulimits, "--"]
