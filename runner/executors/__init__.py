"""Where trials run: the local thread pool (``local``) or a Ray cluster (``ray``).

A trial is ``run_trial(spec, emit)`` either way and the driver stays the single writer
of ``events.jsonl``; an executor only decides where ``run_trial`` executes and how its
events and evidence come back (docs/scale.md).
"""

from __future__ import annotations

EXECUTORS = ("local", "ray")
