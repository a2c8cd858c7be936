"""What a sandbox gets: the containment every trial and control of a run shares.

Built once per run on the driver (``runner.setup``) and once per worker process by a
remote executor (``runner.executors.remote``) from the manifest alone, so both sides
contain agents and graders the same way (docs/security.md, docs/scale.md). This module
never imports the run driver: executors import it, never ``runner.run``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.redact import Redactor
from runner import sandbox
from runner.capture import DEFAULT_EXCLUDES
from runner.manifest import Manifest
from runner.run_store import RunStore


@dataclass(frozen=True)
class Containment:
    """What every trial of a run shares about containing agents and graders."""

    backend: sandbox.Backend
    store: RunStore
    network: bool = True
    """Agents (and prepare commands, judges) get the host's network: ``network_policy`` open.
    Graders never do."""
    network_policy: str = "open"
    """``none`` | ``gateway`` | ``open`` (``Manifest.network_policy``; docs/security.md, "Network")."""
    read_only: tuple[Path, ...] = ()
    excludes: tuple[str, ...] = DEFAULT_EXCLUDES
    max_workspace_bytes: int = 4096 * 1024 * 1024
    redactor: Redactor = field(default_factory=Redactor)
    """Applied to every text the trial stores (docs/security.md, "Secrets")."""
    gateway: Any = None
    """The run's model gateway (``runner.gateway.run.RunGateway``) when any variant uses one."""
    judges: Any = None
    """The run's judges (``runner.judges.invoke.JudgeRuntime``) when any case has a judge criterion."""


def run_secrets(manifest: Manifest) -> list[str]:
    """Values of every variable any variant passes to its agent or marks secret, and of
    the gateway's provider keys and ``secret_env``: redacted from everything stored."""
    names = {n for v in manifest.variants for n in (*v.agent.pass_env, *v.agent.secret_env)}
    if manifest.gateway is not None:
        from runner.gateway.run import key_names

        names |= {*key_names(manifest.gateway), *manifest.gateway.secret_env}
    return [os.environ[n] for n in sorted(names) if os.environ.get(n)]


def sandbox_limits(manifest: Manifest) -> sandbox.Limits:
    """The limits every sandbox of the run gets (``isolation.limits`` and the workspace caps)."""
    lim = manifest.isolation.limits
    return sandbox.Limits(processes=lim.processes, memory_bytes=lim.memory_mb * 2**20, cpus=lim.cpus,
                          tmpfs_bytes=lim.tmpfs_mb * 2**20, write_bytes=int(manifest.max_workspace_mb * 2**20),
                          write_entries=manifest.max_workspace_files)


def build_containment(manifest: Manifest, run_dir: Path, redactor: Redactor,
                      gateway: Any = None, *, shared_store: bool = False) -> Containment:
    """The manifest's isolation settings over the run store in ``run_dir`` (``shared_store``:
    one several processes use at once, a Ray node's, ``RunStore(shared=True)``)."""
    backend = sandbox.backend(manifest.isolation.backend).configured(
        sandbox_limits(manifest), (manifest.isolation.sandbox_ids.first, manifest.isolation.sandbox_ids.count))
    excludes = tuple(manifest.checkpoint_exclude) if manifest.checkpoint_exclude is not None else DEFAULT_EXCLUDES
    return Containment(
        backend=backend, store=RunStore(run_dir / ".runner" / "store.git", shared=shared_store),
        network=manifest.network_policy == "open", network_policy=manifest.network_policy,
        read_only=tuple(Path(p) for p in manifest.isolation.read_only_paths),
        excludes=excludes, max_workspace_bytes=int(manifest.max_workspace_mb * 2**20),
        redactor=redactor, gateway=gateway,
    )
