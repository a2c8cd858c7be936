"""Real command agents through whole trials: stand-ins for ``claude`` and ``codex``.

Each stand-in is an executable script that behaves like the real CLI's headless mode:
it reads the prompt from its argv, edits the workspace for real, and prints the
recorded output format from tests/runner/fixtures/agents. The runner parses usage
from that output, grades by the criteria, redacts secrets, and ingest carries the
same numbers into the warehouse.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from contract.stage_events import StageFinished
from contract.trial_events import TrialFinished
from runner.eventlog import read_events
from runner.run import run_trials

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
SECRET = "sk-qa-4f9c2b7e1d3a5c6b8e0f"

FAKE_CLI = '''#!{python}
"""Stand-in for the {name} CLI's headless mode (test fixture)."""
import json, os, pathlib, sys

args = sys.argv[1:]
name = pathlib.Path(sys.argv[0]).name
prompt = args[args.index("-p") + 1] if "-p" in args else args[-1]
if "mul" not in prompt:
    print("prompt not received", file=sys.stderr)
    sys.exit(3)
body = "a * b" if not name.endswith("-liar") else "a + b"
ws = pathlib.Path.cwd()
src = (ws / "calc.py").read_text()
(ws / "calc.py").write_text(src + "\\n\\ndef mul(a, b):\\n    return " + body + "\\n")
print("QA_HIDDEN visible:", "QA_HIDDEN" in os.environ, file=sys.stderr)
key = os.environ.get("QA_API_KEY", "<missing>")
fixtures = pathlib.Path({fixtures!r})
if name.startswith("claude") and "stream-json" in args:
    sys.stdout.write((fixtures / "claude_stream.jsonl").read_text())
    print(json.dumps({{"type": "system", "subtype": "note", "text": "key " + key}}))
elif name.startswith("claude"):
    out = json.loads((fixtures / "claude_json_object.json").read_text())
    out["result"] = "Done, all tests pass (used key " + key + ")"
    print(json.dumps(out))
else:
    lines = (fixtures / "codex_exec_success.jsonl").read_text().splitlines()
    msg = {{"type": "item.completed", "item": {{"id": "item_99", "type": "agent_message",
                                              "text": "used key " + key}}}}
    print("\\n".join(lines[:-1] + [json.dumps(msg), lines[-1]]))
'''


def _fake(bin_dir: Path, name: str) -> str:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(FAKE_CLI.format(python=sys.executable, name=name, fixtures=str(FIXTURES)))
    path.chmod(0o755)  # a root runner's sandbox runs it as an id of its own
    return str(path)


@pytest.fixture
def trial_run(kit, corpus_root, tmp_path, monkeypatch):
    """Four command variants through one run, with a cost budget set."""
    monkeypatch.setenv("QA_API_KEY", SECRET)
    monkeypatch.setenv("QA_HIDDEN", "must-not-leak")
    bin_dir = tmp_path / "bin"
    common = {"kind": "command", "pass_env": ["QA_API_KEY"]}
    variants = [
        {"id": "claude-json", "model": "claude-sonnet-4-5", "agent": {
            **common, "usage_format": "claude-json",
            "argv": [_fake(bin_dir, "claude"), "-p", "{prompt}", "--output-format", "json"]}},
        {"id": "claude-stream", "model": "claude-sonnet-4-5", "agent": {
            **common, "usage_format": "claude-stream-json",
            "argv": [_fake(bin_dir, "claude"), "-p", "{prompt}", "--output-format", "stream-json", "--verbose"]}},
        {"id": "codex", "model": "gpt-5.1-codex", "agent": {
            **common, "usage_format": "codex-json",
            "argv": [_fake(bin_dir, "codex"), "exec", "--json", "{prompt}"]}},
        {"id": "claude-liar", "model": "claude-sonnet-4-5", "agent": {
            **common, "usage_format": "claude-json",
            "argv": [_fake(bin_dir, "claude-liar"), "-p", "{prompt}", "--output-format", "json"]}},
    ]
    # The stand-ins read their recorded output from the fixtures folder: a tool install
    # the sandbox must be told about, as a real CLI's install directory would be.
    manifest = kit.make_corpus(corpus_root, variants=variants, max_cost_usd=5.0,
                               isolation={"read_only_paths": [str(FIXTURES)]})
    out = tmp_path / "run"
    res = run_trials(manifest, out, progress=False)
    events = read_events(res.events_path)
    by_variant = {}
    for e in events:
        if isinstance(e, TrialFinished):
            by_variant[e.variant] = e
    stages = {e.trial_id: e for e in events if isinstance(e, StageFinished)}
    return out, res, by_variant, stages


def _stored(out: Path, fin: TrialFinished, st: StageFinished, attr: str) -> str:
    return (out / "trials" / fin.trial_id / getattr(st, attr)).read_text()


# (variant, input, output, cache read, cache write, cost, steps) worked out in test_usage.py
EXPECTED = {
    "claude-json": (1255, 3216, 182340, 21877, 0.22314, 14),
    "claude-stream": (15, 240, 16450, 8650, 0.04892, 4),
    "codex": (8320, 1873, 44800, None, None, 5),
}


def test_usage_reaches_stage_and_trial(trial_run):
    out, res, fins, stages = trial_run
    assert set(fins) == {"claude-json", "claude-stream", "codex", "claude-liar"}
    for variant, (inp, outp, cr, cw, cost, steps) in EXPECTED.items():
        fin = fins[variant]
        st = stages[fin.trial_id]
        for u in (st.usage, fin.usage):
            assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (inp, outp, cr, cw), variant
            assert u.steps == steps, variant
            if cost is None:
                assert u.cost_usd is None, variant  # unknown, never 0
            else:
                assert u.cost_usd == pytest.approx(cost), variant


def test_cost_budget_status(trial_run):
    _, _, fins, _ = trial_run
    assert fins["claude-json"].cost_budget_status == "within"
    # Codex reports tokens but no cost: against a budget the status is unknown
    assert fins["codex"].usage.cost_usd is None
    assert fins["codex"].cost_budget_status == "unknown"


def test_outcome_is_graded_not_claimed(trial_run):
    _, res, fins, _ = trial_run
    for variant in EXPECTED:
        assert fins[variant].outcome == "accepted", (variant, fins[variant].reason)
    # claims "all tests pass" in its result, but mul adds: the grader decides
    assert fins["claude-liar"].outcome == "target_failed", fins["claude-liar"].reason


def test_secret_redacted_and_env_allow_listed(trial_run):
    out, _, fins, stages = trial_run
    for variant in ("claude-json", "claude-stream", "codex"):
        fin = fins[variant]
        st = stages[fin.trial_id]
        stdout = _stored(out, fin, st, "stdout_path")
        assert SECRET not in stdout and "[REDACTED]" in stdout, variant
        assert "<missing>" not in stdout  # the pass_env variable did reach the agent
        assert st.redactions >= 1
        stderr = _stored(out, fin, st, "stderr_path")
        assert "QA_HIDDEN visible: False" in stderr, stderr
    events_text = (out / "events.jsonl").read_text()
    assert SECRET not in events_text and "must-not-leak" not in events_text


def test_warehouse_rows_match_events(trial_run, tmp_path):
    from ingest.api import ingest_paths
    from warehouse import db

    out, _, fins, stages = trial_run
    wh = tmp_path / "wh.duckdb"
    ingest_paths([out], wh)
    con = db.open(wh, read_only=True)
    try:
        trials = {r[0]: r[1:] for r in con.execute(
            """
            SELECT trial_id, outcome, input_tokens, output_tokens, cache_read_tokens,
                   cost_usd, cost_source, steps
            FROM trials
            """).fetchall()}
        stage_rows = {r[0]: r[1:] for r in con.execute(
            "SELECT trial_id, input_tokens, output_tokens, cost_usd, steps FROM stages").fetchall()}
    finally:
        con.close()
    for variant, (inp, outp, cr, _cw, cost, steps) in EXPECTED.items():
        fin = fins[variant]
        outcome, i, o, c, usd, source, n = trials[fin.trial_id]
        assert (outcome, i, o, c, n) == (fin.outcome, inp, outp, cr, steps), variant
        if cost is None:
            assert usd is None and source is None, (variant, usd, source)
        else:
            assert usd == pytest.approx(cost) and source == "reported", (variant, source)
        si, so, susd, sn = stage_rows[fin.trial_id]
        assert (si, so, sn) == (inp, outp, steps)
        assert (susd is None) if cost is None else susd == pytest.approx(cost)
