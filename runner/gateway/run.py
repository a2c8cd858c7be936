"""The model gateway of one ``trialhouse run``: started from the manifest, one route per stage.

``RunGateway`` turns the manifest's ``gateway`` section into a running
:class:`~runner.gateway.server.Gateway` and hands each stage invocation its own route
(``open``/``close``). What it reads is the run's own copy of the inputs: scripts and
recordings come from the snapshot taken before any agent started (hashed in
``run_started.input_hashes``), never from the operator's files later. Record mode writes
into ``<run>/gateway/recordings`` (outside every sandbox). Provider keys are read from
the runner's environment by name (``upstreams.<provider>.api_key_env``) and never reach
an agent: agents get a dummy key, the gateway adds the real one. Everything the gateway
stores is redacted with the run's secrets.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract.call_events import Provider
from contract.run_events import GatewayInfo
from runner.errors import RunnerError
from runner.gateway.calls import RouteReport
from runner.gateway.links import Caps
from runner.gateway.recording import route_key
from runner.gateway.script import Script, load_script
from runner.gateway.server import Gateway
from runner.gateway.settings import DEFAULT_UPSTREAMS, GatewayConfigError, Upstream
from runner.manifest import GatewaySettings, Manifest
from runner.paths import Snapshot

RECORDINGS = Path("gateway") / "recordings"
"""Where a record-mode run keeps its recordings, relative to the run directory."""
DEFAULT_SCRIPT = "*"


def parse_script(text: str, where: str) -> Script:
    """A gateway script from YAML or JSON text; ``RunnerError`` naming ``where`` when it is not one."""
    import yaml
    from pydantic import ValidationError

    try:
        return load_script(yaml.safe_load(text))
    except (yaml.YAMLError, ValidationError, ValueError) as exc:
        first = str(exc).strip().splitlines()
        raise RunnerError(f"{where}: not a gateway script ({' '.join(first[:3])[:300]})") from None


def upstreams(settings: GatewaySettings) -> dict[Provider, Upstream]:
    """Provider → upstream: the manifest's, else the public API with its usual key variable."""
    out = dict(DEFAULT_UPSTREAMS)
    for provider, up in settings.upstreams.items():
        out[provider] = Upstream(up.base_url, up.api_key_env)
    return out


def key_names(settings: GatewaySettings) -> list[str]:
    """Variables the gateway reads provider keys from (forward/record), for redaction and checks."""
    if settings.mode not in ("forward", "record"):
        return []
    return sorted({u.api_key_env for u in upstreams(settings).values() if u.api_key_env})


class RunGateway:
    """The run's gateway; ``with RunGateway(...) as gw`` starts and stops it."""

    def __init__(self, manifest: Manifest, snapshot: Snapshot, run_dir: Path, *, secrets: list[str],
                 trial_id: Callable[[str, str, int], str]) -> None:
        settings = manifest.gateway
        assert settings is not None
        self.settings = settings
        self.variants = [v.id for v in manifest.variants if manifest.uses_gateway(v)]
        self.main_loop = {v.id: (v.agent.main_loop or "tools", v.model) for v in manifest.variants}
        self.run_dir = run_dir
        self._trial_id = trial_id
        self.scripts: dict[str, Script] = {}
        self.script_hashes: dict[str, str] = {}
        if settings.mode == "scripted":
            named = {DEFAULT_SCRIPT: settings.script} if settings.script else {}
            named.update(settings.scripts)
            for key, rel in named.items():
                if rel is None:
                    continue
                where = "gateway.script" if key == DEFAULT_SCRIPT else f"gateway.scripts.{key}"
                self.scripts[key] = parse_script(snapshot.text(rel), f"{where} ({rel})")
                self.script_hashes[key] = snapshot.hashes[rel]
        recording_dir = None
        self.recordings_sha256: str | None = None
        if settings.mode == "record":
            recording_dir = run_dir / RECORDINGS
            recording_dir.mkdir(parents=True, exist_ok=True)
        elif settings.mode == "replay":
            # A fresh copy from the snapshot in memory, in the runner's private directory.
            assert settings.recording_dir is not None
            prefix = settings.recording_dir.rstrip("/") + "/"
            copy = run_dir / ".runner" / "gateway-replay"
            if copy.exists():
                import shutil

                shutil.rmtree(copy)
            files = sorted(r for r in snapshot.hashes if r.startswith(prefix))
            snapshot.materialise(copy, only=files)
            recording_dir = copy / settings.recording_dir
            listing = "".join(f"{snapshot.hashes[r]}  {r[len(prefix):]}\n" for r in files)
            self.recordings_sha256 = hashlib.sha256(listing.encode()).hexdigest()
        self.recording_dir = recording_dir
        names = key_names(settings)
        self.missing_keys = [n for n in names if not os.environ.get(n)]
        self.linked = manifest.network_policy == "gateway"
        """Sandboxes reach the gateway only through their route's sockets (``isolation.network``)."""
        self.gateway = Gateway(settings.mode, upstreams=upstreams(settings), recording_dir=recording_dir,
                               secret_env=settings.secret_env, secrets=secrets,
                               idle_timeout_s=settings.idle_timeout_s,
                               caps=Caps(settings.max_connections, settings.max_requests),
                               allow_hosts=manifest.isolation.allow_hosts)

    def __enter__(self) -> RunGateway:
        try:
            self.gateway.start()
        except GatewayConfigError as exc:
            raise RunnerError(f"gateway: {exc}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.gateway.stop()

    def info(self) -> GatewayInfo:
        s = self.settings
        forwarding = s.mode in ("forward", "record")
        ups = upstreams(s)
        recording = None
        if s.mode == "record":
            recording = str(RECORDINGS)
        elif s.mode == "replay":
            recording = s.recording_dir
        return GatewayInfo(
            mode=s.mode,
            upstreams={p: u.base_url for p, u in ups.items()} if forwarding else {},
            key_env={p: u.api_key_env for p, u in ups.items() if u.api_key_env} if forwarding else {},
            script_sha256=dict(self.script_hashes), recording_dir=recording, variants=list(self.variants))

    def open(self, *, trial_id: str, case_id: str, variant: str, repetition: int, stage: str, attempt: int,
             workspace: Path, task: dict[str, Any] | None = None) -> str:
        """The route (base URL, no ``/v1``) for one stage invocation; ``GatewayConfigError``
        when it cannot be opened (e.g. replay with no recording for this trial). With the
        ``gateway`` network policy the route is linked (``link``) and the URL the sandbox's.
        ``task``: the stage's task key (``runner.task_key``), kept in a recording and checked
        against it in replay."""
        kwargs: dict[str, Any] = {"stage": stage, "attempt": attempt, "variables": {"workspace": str(workspace)},
                                  "linked": self.linked, "task": task,
                                  "main_loop": self.main_loop.get(variant, ("tools", None))}
        if self.settings.mode == "scripted":
            script = self.scripts.get(variant) or self.scripts.get(DEFAULT_SCRIPT)
            if script is None:
                raise GatewayConfigError(f"gateway.scripts has no script for variant {variant} and there is "
                                         "no default gateway.script")
            kwargs["script"] = script
        elif self.settings.mode == "replay":
            source = self.settings.replay_from.get(variant, variant)
            kwargs["replay_from"] = route_key(self._trial_id(case_id, source, repetition), stage, attempt)
        return self.gateway.open_trial(trial_id, **kwargs)

    def link(self, trial_id: str, stage: str, attempt: int) -> Path | None:
        """The route's socket directory, for its sandbox (None unless linked)."""
        return self.gateway.link_of(trial_id, stage, attempt)

    def close(self, trial_id: str, stage: str, attempt: int) -> RouteReport:
        return self.gateway.close_route(trial_id, stage, attempt)
