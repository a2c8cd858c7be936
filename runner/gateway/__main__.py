"""``python -m runner.gateway``: run a gateway on its own (recipes, benchmarks, debugging).

Prints one line per trial, ``<trial id> <base URL>``, then ``ready``, and serves until
interrupted (SIGINT/SIGTERM). Each model call is appended as one JSON line to
``--calls``. Inside ``trialhouse run`` the runner starts the gateway itself (one per run).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

import click


@click.command()
@click.option("--mode", type=click.Choice(["forward", "record", "replay", "scripted"]), required=True)
@click.option("--trial", "trials", multiple=True, default=("local",), show_default=True,
              help="Trial id to open a route for (repeatable).")
@click.option("--script", "script_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="scripted mode: a JSON or YAML script (runner.gateway.script.Script).")
@click.option("--var", "variables", multiple=True, help="scripted mode: NAME=VALUE for {NAME} in the script.")
@click.option("--recording-dir", type=click.Path(file_okay=False, path_type=Path), help="record/replay: where recordings live.")
@click.option("--anthropic-url", default="https://api.anthropic.com", show_default=True,
              envvar="TRIALHOUSE_GATEWAY_ANTHROPIC_URL", help="Where Anthropic calls go (forward/record).")
@click.option("--anthropic-key-env", default="ANTHROPIC_API_KEY", show_default=True,
              help="Variable holding the Anthropic key the gateway sends ('' passes the agent's through).")
@click.option("--openai-url", default="https://api.openai.com", show_default=True,
              envvar="TRIALHOUSE_GATEWAY_OPENAI_URL", help="Where OpenAI calls go (forward/record).")
@click.option("--openai-key-env", default="OPENAI_API_KEY", show_default=True)
@click.option("--secret-env", multiple=True, help="Variables whose values are redacted from recordings.")
@click.option("--calls", "calls_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Append every model_call record here (JSONL).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=0, show_default=True, help="0 picks a free port.")
def main(mode, trials, script_path, variables, recording_dir, anthropic_url, anthropic_key_env, openai_url,
         openai_key_env, secret_env, calls_path, host, port) -> None:
    """Serve a model gateway until interrupted."""
    import yaml

    from runner.gateway import Gateway, GatewayConfigError, Upstream, load_script
    from runner.gateway.records import Provider

    script = None
    if script_path is not None:
        try:
            script = load_script(yaml.safe_load(script_path.read_text()))
        except (ValueError, yaml.YAMLError) as exc:
            raise click.ClickException(f"{script_path}: not a gateway script: {exc}") from None
    values = dict(v.split("=", 1) for v in variables if "=" in v)
    lock = threading.Lock()
    out = open(calls_path, "a", encoding="utf-8") if calls_path else None  # noqa: SIM115 - closed at exit

    def on_call(call) -> None:
        if out is not None:
            with lock:
                out.write(call.model_dump_json() + "\n")
                out.flush()

    upstreams: dict[Provider, Upstream] = {"anthropic": Upstream(anthropic_url, anthropic_key_env or None),
                                           "openai": Upstream(openai_url, openai_key_env or None)}
    try:
        gateway = Gateway(mode, upstreams=upstreams, script=script, recording_dir=recording_dir, on_call=on_call,
                          secret_env=secret_env, host=host, port=port)
        gateway.start()
        for trial in trials:
            click.echo(f"{trial} {gateway.open_trial(trial, variables=values)}")
    except GatewayConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if gateway.missing_keys:
        click.echo(f"warning: {', '.join(gateway.missing_keys)} not set: forwarded calls carry no key", err=True)
    click.echo("ready")
    sys.stdout.flush()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        gateway.stop()
        if out is not None:
            out.close()
        totals = {t: len(gateway.calls(t)) for t in trials}
        click.echo(json.dumps({"calls": totals}), err=True)


if __name__ == "__main__":
    main()
