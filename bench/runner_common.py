"""What the runner benchmarks share (``bench/runner_bench.py`` and its Ray sections in
``bench/ray_bench.py``): git with a fixed identity, and a local Ray instance started the
way ``--executor ray`` starts one (bench/README.md, Runner)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def start_local_ray(ray, jobs: int) -> float:
    """``ray.init`` of a local 2-CPU instance with the options ``--executor ray`` uses (idle
    workers kept), tried up to five times: the raylet's 15 s dashboard-agent window can pass
    under load (ray issue 65983). Returns the seconds it took (the import before not counted)."""
    from runner.executors.on_ray import local_options

    t0 = time.perf_counter()
    for attempt in (1, 2, 3, 4, 5):
        try:
            ray.init(num_cpus=2, **local_options(jobs))
            break
        except Exception:
            ray.shutdown()
            if attempt == 5:
                raise
    return time.perf_counter() - t0
