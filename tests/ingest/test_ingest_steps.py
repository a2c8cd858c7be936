"""``step`` and ``model_call`` events into the ``steps`` and ``model_calls`` tables, and the
harness/gateway columns of ``stages`` and ``trials`` (ingest/steps.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from contract.call_events import ModelCall, TrajectoryStep
from contract.run_events import RunFinished
from contract.stage_events import GatewayUsage, PermissionDenial, StageFinished, Usage
from contract.trial_events import AttemptFinished
from ingest.api import ingest_paths
from warehouse import db

T = 1764590400.0  # 2025-12-01T12:00:00Z
TS = datetime.fromtimestamp(T, UTC)


def harness_trial(gen, s, trial_id: str) -> list:
    """A harness trial: two model calls, three steps, a stage with the harness's account."""
    usage = Usage(input_tokens=30, output_tokens=7, cache_read_tokens=100, cost_usd=0.02, cost_basis="reported",
                     source="claude-stream-json")
    gw = GatewayUsage(calls=3, failed_calls=1, retries=1, input_tokens=30, output_tokens=7, cache_read_tokens=100,
                         cache_write_tokens=None, model_s=1.25)
    start, *middle, fin = [e for e in gen.trial_events(s, trial_id, "c1", "cand", 1, usage=usage)
                           if not isinstance(e, StageFinished | AttemptFinished)]
    call = dict(stage="build", attempt=1, mode="record", provider="anthropic", api="messages", model="m",
                request_sha256="0" * 64, streamed=True)
    extra = [
        ModelCall(**s.env(trial_id), **call, call_index=0, status=529, retries=0, latency_s=0.25,
                     error_type="overloaded_error", error="overloaded", started_at_unix=T),
        ModelCall(**s.env(trial_id), **call, call_index=1, status=200, retries=1, latency_s=0.5, ttft_s=0.1,
                     response_id="msg_1", input_tokens=10, output_tokens=3, cache_read_tokens=0,
                     tool_calls=["Read", "Bash"], stop_reason="tool_use", started_at_unix=T + 1),
        TrajectoryStep(**s.env(trial_id), attempt=1, stage="build", index=0, kind="model", source="claude-stream-json",
                          ok=True, started_at_unix=T + 1, ended_at_unix=T + 1.5, input_tokens=10, output_tokens=3,
                          cache_read_tokens=0, call_id="msg_1", tokens_from="gateway"),
        TrajectoryStep(**s.env(trial_id), attempt=1, stage="build", index=1, kind="tool", source="claude-stream-json",
                          tool="Read", action="read", paths=["src/a.py", "README.md"], ok=True,
                          started_at_unix=T + 1.5, ended_at_unix=T + 1.75, call_id="toolu_1"),
        TrajectoryStep(**s.env(trial_id), attempt=1, stage="build", index=2, kind="tool", source="claude-stream-json",
                          tool="Bash", action="run", command="pytest -q", exit_code=1, ok=False),
        StageFinished(**s.env(trial_id), attempt=1, stage="build", exit_code=0, duration_s=4.0, usage=usage,
                         harness_version="2.1.332", session_id="sess-1", claimed_cost_usd=0.02, cost_basis="reported",
                         permission_denials=[PermissionDenial(tool_name="Bash", tool_use_id="toolu_9")],
                         context_exhausted=False, tokens_from="result", gateway_usage=gw, trajectory_steps=3),
        AttemptFinished(**s.env(trial_id), attempt=1, outcome="accepted"),
    ]
    fin = fin.model_copy(update={"seq": s.env(trial_id)["seq"], "usage": usage, "gateway_usage": gw,
                                 "patch_paths": ["src/a.py"]})
    return [start, *middle, *extra, fin]


@pytest.fixture
def ingested(gen, tmp_path, wh):
    s = gen.Seq("run-h")
    events = [gen.run_started(s, variants=("base", "cand"), cases=("c1",), repetitions=1)]
    events += gen.trial_events(s, "run-h-t001", "c1", "base", 1, outcome="target_failed")  # no harness, no gateway
    events += harness_trial(gen, s, "run-h-t002")
    events.append(RunFinished(**s.env(), status="completed", trials_total=2, trials_finished=2, duration_s=9.0))
    gen.write_jsonl(tmp_path / "run" / "events.jsonl", events)
    ingest_paths([tmp_path / "run"], wh)
    con = db.open(wh, read_only=True)
    yield con
    con.close()


def rows(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def test_steps_rows(ingested):
    got = rows(ingested, "SELECT * EXCLUDE (ingest_batch_id) FROM steps ORDER BY step_index")
    assert [r["step_index"] for r in got] == [0, 1, 2] and {r["trial_id"] for r in got} == {"run-h-t002"}
    model, read, check = got
    assert (model["kind"], model["input_tokens"], model["output_tokens"], model["call_id"], model["tokens_from"]) == (
        "model", 10, 3, "msg_1", "gateway")
    assert model["started_at"] == TS.replace(second=1) and model["duration_s"] == 0.5
    assert json.loads(read["paths_json"]) == ["src/a.py", "README.md"] and read["duration_s"] == 0.25
    assert (check["command"], check["exit_code"], check["ok"], check["started_at"], check["duration_s"]) == (
        "pytest -q", 1, False, None, None)  # no times: unknown, not 0
    assert check["input_tokens"] is None and check["run_id"] == "run-h" and check["attempt"] == 1


def test_model_calls_rows(ingested):
    got = rows(ingested, "SELECT * FROM model_calls ORDER BY call_index")
    failed, ok = got
    assert (failed["status"], failed["error_type"], failed["input_tokens"], failed["tool_calls_json"]) == (
        529, "overloaded_error", None, "[]")
    assert (ok["status"], ok["retries"], ok["input_tokens"], ok["output_tokens"], ok["ttft_s"]) == (200, 1, 10, 3, 0.1)
    assert json.loads(ok["tool_calls_json"]) == ["Read", "Bash"] and ok["started_at"] == TS.replace(second=1)
    assert (ok["mode"], ok["provider"], ok["api"], ok["stage"], ok["response_id"]) == (
        "record", "anthropic", "messages", "build", "msg_1")


def test_stage_and_trial_columns(ingested):
    stages = {r["trial_id"]: r for r in rows(ingested, "SELECT * FROM stages")}
    h, plain = stages["run-h-t002"], stages["run-h-t001"]
    assert (h["harness_version"], h["session_id"], h["cost_basis"], h["claimed_cost_usd"], h["claimed_cost_basis"]) == (
        "2.1.332", "sess-1", "reported", 0.02, "reported")
    assert (h["permission_denials"], json.loads(h["denied_tools_json"]), h["tokens_from"], h["trajectory_steps"]) == (
        1, ["Bash"], "result", 3)
    assert (h["gateway_calls"], h["gateway_failed_calls"], h["gateway_retries"], h["gateway_input_tokens"],
            h["gateway_cache_write_tokens"], h["gateway_model_s"]) == (3, 1, 1, 30, None, 1.25)
    assert plain["gateway_calls"] is None and plain["harness_version"] is None
    assert plain["permission_denials"] is None and plain["context_exhausted"] is None  # not a harness: unknown
    trials = {r["trial_id"]: r for r in rows(ingested, "SELECT * FROM trials")}
    t = trials["run-h-t002"]
    assert (t["cost_basis"], t["gateway_calls"], t["gateway_output_tokens"], json.loads(t["patch_paths_json"])) == (
        "reported", 3, 7, ["src/a.py"])
    assert trials["run-h-t001"]["gateway_calls"] is None and trials["run-h-t001"]["patch_paths_json"] is None
    # the existing columns are untouched by the additions
    assert (t["input_tokens"], t["output_tokens"], t["cost_usd"], t["cost_source"]) == (30, 7, 0.02, "reported")


def test_a_resumed_trial_keeps_only_its_last_attempt_at_steps(gen, tmp_path, wh):
    """Events before a trial's last trial_started are not its data (buffered pass)."""
    s = gen.Seq("run-r")
    events = [gen.run_started(s, variants=("cand",), cases=("c1",), repetitions=1)]
    first = harness_trial(gen, s, "run-r-t001")
    events += first[:-1]  # interrupted before trial_finished
    events += harness_trial(gen, s, "run-r-t001")
    gen.write_jsonl(tmp_path / "run" / "events.jsonl", events)
    ingest_paths([tmp_path / "run"], wh)
    con = db.open(wh, read_only=True)
    assert con.execute("SELECT count(*) FROM steps").fetchone()[0] == 3
    assert con.execute("SELECT count(*) FROM model_calls").fetchone()[0] == 2
    con.close()
