"""The isolation seam: every agent invocation and every grader runs through a backend.

A backend turns "run this argv with this environment, seeing only these paths" into
the argv/env handed to ``subprocess``. Two backends exist:

* ``bubblewrap`` (the default): a new mount namespace built from nothing but the paths
  listed (system directories and declared tool installs read-only, the workspace and
  the invocation's private HOME/TMP/output directories read-write), new PID, IPC, UTS,
  cgroup and user namespaces with every capability dropped, the root remounted
  read-only, and the runner's own PID 1 holding a lifeline (``init``): when the
  invocation ends (or the runner dies) every process it started dies with it, ``setsid``
  daemons included. Nothing of the
  runner is visible: not its environment, its interpreter's virtualenv, the input
  snapshot, other trials, the run directory or the source repository.
* ``none``: a plain subprocess in its own session (the process group is killed at the
  end). It hides nothing; runs that use it are recorded and reported as not isolated.

Both share one request shape, so the trial and grading code never branch on the
backend. docs/security.md states what each backend hides and what it does not.

The package is cut along that seam: ``request`` (what an invocation is: ``Request``,
``Backend``, the sandbox's PATH and interpreter), ``bubblewrap`` (how bubblewrap builds its
argv, and what it shows), ``discovery`` (which backend runs here, checked once per
process), ``programs`` (which program a request starts and what must be visible for it to
start) and ``launch`` (running a request). Callers import the names below from here.
"""

from runner.sandbox.bubblewrap import (
    MASKED,
    SYSTEM_LINK_DIRS,
    SYSTEM_READ_ONLY,
    Bubblewrap,
    Session,
    visible,
)
from runner.sandbox.discovery import BACKENDS, backend
from runner.sandbox.forwarder import LINK_MOUNT, MODEL_PORT, PROXY_PORT
from runner.sandbox.init import INIT, init_argv
from runner.sandbox.launch import run, writable_dirs
from runner.sandbox.limits import Limits
from runner.sandbox.programs import (
    ProgramMounts,
    canonical_dir,
    install_root,
    program_mounts,
    resolve_program,
    shebang,
)
from runner.sandbox.request import (
    SANDBOX_PATH,
    Backend,
    NoIsolation,
    Request,
    SandboxUnavailable,
    interpreter,
    interpreter_paths,
    sandbox_path,
)

__all__ = [
    "BACKENDS", "INIT", "LINK_MOUNT", "MASKED", "MODEL_PORT", "PROXY_PORT", "SANDBOX_PATH",
    "SYSTEM_LINK_DIRS", "SYSTEM_READ_ONLY", "Backend", "Bubblewrap", "Limits", "NoIsolation", "ProgramMounts",
    "Request", "SandboxUnavailable", "Session", "backend", "canonical_dir", "init_argv", "install_root",
    "interpreter", "interpreter_paths", "program_mounts", "resolve_program", "run", "sandbox_path", "shebang",
    "visible", "writable_dirs",
]
