"""The model gateway and judges a Ray trial host runs for the trials it hosts.

Locally one gateway (``runner.gateway.run.RunGateway``) and one ``JudgeRuntime`` serve the
whole run from the driver's loopback, out of a Ray node's reach. On Ray each trial host
process starts its own from the same manifest and input snapshot (the same modes,
scripts, recordings to replay, caps and proxy allow-list), so a trial's sandbox reaches
a gateway on its own node exactly as a local one does. Provider keys are read by name
from the host's own environment (the node's: ``ray start``'s), never from the payload;
a key the node lacks fails the host's trials with the variable's name. A record-mode
host writes its recordings into its private directory; ``take_recordings`` moves a
trial's into its evidence (``RECORDINGS``), and the driver moves them on into the run's
``gateway/recordings/`` (docs/scale.md, docs/gateway.md).
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from runner.errors import RunnerError

RECORDINGS = ".ray-gateway-recordings"
"""A trial's recordings inside its evidence on the way to the driver (then moved out)."""


def start_gateway(manifest: Any, snapshot: Any, private: Path, secrets: list[str]) -> Any:
    """The host's running gateway, or None when no variant uses one."""
    if not any(manifest.uses_gateway(v) for v in manifest.variants):
        return None
    from runner.gateway.recording import route_key
    from runner.gateway.run import RunGateway
    from runner.ids import trial_id

    class HostGateway(RunGateway):
        """``RunGateway`` that remembers each trial's routes (to find its recordings)."""

        routes: dict[str, list[str]]
        routes_lock: threading.Lock

        def open(self, **kw: Any) -> str:
            url = super().open(**kw)
            with self.routes_lock:
                self.routes[kw["trial_id"]].append(route_key(kw["trial_id"], kw["stage"], kw["attempt"]))
            return url

    gw = HostGateway(manifest, snapshot, private, secrets=secrets, trial_id=trial_id)
    gw.routes, gw.routes_lock = defaultdict(list), threading.Lock()
    if gw.missing_keys:
        raise RunnerError(f"the model gateway's key variable(s) {', '.join(gw.missing_keys)} are not set "
                          "in this Ray node's environment; set them where 'ray start' runs on every "
                          "node (docs/scale.md, 'Credentials')")
    return gw.__enter__()


def start_judges(manifest: Any, snapshot: Any, containment: Any, secrets: list[str]) -> Any:
    """The host's judge runtime (started), or None when no case has a judge criterion.
    Rubrics are checked against the node's snapshot copy (hash-checked on arrival)."""
    from runner.judges.config import judge_criteria
    from runner.judges.invoke import JudgeRuntime

    if not judge_criteria(manifest):
        return None
    rt = JudgeRuntime.build(manifest, snapshot.root, snapshot, containment.backend,
                            network=containment.network_policy, read_only=containment.read_only,
                            redactor=containment.redactor, secrets=secrets)
    return rt.__enter__()


def take_recordings(gateway: Any, trial_id: str, trial_dir: Path) -> None:
    """Move the recordings a record-mode gateway made for ``trial_id`` into its evidence."""
    if gateway is None:
        return
    with gateway.routes_lock:
        keys = gateway.routes.pop(trial_id, [])
    if gateway.settings.mode != "record" or gateway.recording_dir is None:
        return
    from runner.gateway.recording import recording_path

    for key in keys:
        path = recording_path(gateway.recording_dir, key)
        if path.is_file():
            dest = trial_dir / RECORDINGS
            dest.mkdir(exist_ok=True)
            os.replace(path, dest / path.name)


def place_recordings(trial_dir: Path, run_dir: Path) -> None:
    """Driver side: a trial's recordings from its evidence into ``<run>/gateway/recordings``
    (plain files only; whatever else the directory holds is dropped)."""
    src = trial_dir / RECORDINGS
    if not src.is_dir() or src.is_symlink():
        return
    from runner.gateway.run import RECORDINGS as RUN_RECORDINGS
    from runner.pristine import remove_tree

    dest = run_dir / RUN_RECORDINGS
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.iterdir()):
        if path.is_file() and not path.is_symlink() and path.suffix == ".jsonl":
            os.replace(path, dest / path.name)
    remove_tree(src)


def stop(service: Any) -> None:
    if service is not None:
        service.__exit__(None, None, None)
