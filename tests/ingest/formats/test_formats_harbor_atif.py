"""Harbor jobs: a trial's ATIF ``agent/trajectory.json`` becomes its steps (one build stage that
starts when ``agent_execution`` does); trials without one have no stage and no steps."""

from __future__ import annotations

import json
import shutil

from ingest.formats import load

from .conftest import FIXTURES, check_tables

JOB = FIXTURES / "harbor" / "2026-01-10__12-00-00"
TRAJECTORY = JOB / "hello-world__00ab1cd" / "agent" / "trajectory.json"
TRIAL = "00000000-0000-4000-8000-000000000000"


def test_atif_steps_of_the_one_trial_that_has_them():
    [b] = load(JOB, "harbor")
    check_tables(b)
    assert {s["trial_id"] for s in b.rows["steps"]} == {TRIAL} and [s["trial_id"] for s in b.rows["stages"]] == [TRIAL]
    steps = b.rows["steps"]
    # three agent steps (the user step is not one), each a model turn followed by its tool calls
    assert [s["kind"] if s["kind"] == "model" else s["action"] for s in steps] == \
        ["model", "search", "run", "model", "edit", "run", "model"]
    assert {s["source"] for s in steps} == {"atif"} and TRAJECTORY in b.source_files
    doc = json.loads(TRAJECTORY.read_text())
    first = doc["steps"][1]["metrics"]  # prompt_tokens include cached_tokens
    assert (steps[0]["input_tokens"], steps[0]["cache_read_tokens"], steps[0]["cache_write_tokens"]) == \
        (first["prompt_tokens"] - first["cached_tokens"], first["cached_tokens"], 300)
    assert steps[4]["paths_json"] == '["/app/hello.txt"]' and steps[4]["command"] == "echo 'Hello, world!' > /app/hello.txt"
    assert steps[1]["exit_code"] is None and steps[1]["ok"] is None  # ATIF observations carry no exit status
    stage = b.rows["stages"][0]
    result = json.loads((JOB / "hello-world__00ab1cd" / "result.json").read_text())
    assert stage["started_at"].isoformat() == result["agent_execution"]["started_at"]
    assert stage["trajectory_steps"] == 7 and stage["steps"] == 3


def test_steps_reach_the_warehouse(tmp_path):
    from ingest.api import ingest_paths
    from warehouse import db

    ingest_paths([JOB], tmp_path / "w.duckdb")
    con = db.open(tmp_path / "w.duckdb", read_only=True)
    try:
        rows = con.sql("SELECT trial_id, count(*), count(started_at), count(ended_at) FROM steps GROUP BY ALL").fetchall()
    finally:
        con.close()
    assert rows == [(TRIAL, 7, 4, 3)]  # tool calls start at their step, model turns end there


def test_a_trajectory_that_is_not_atif_is_a_note_not_an_error(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    (job / "hello-world__00ab1cd" / "agent" / "trajectory.json").write_text('{"schema_version": "other", "steps": []}')
    [b] = load(job, "harbor")
    assert not b.rows.get("steps") and any("not an ATIF v1.x trajectory" in n for n in b.notes)
    assert len(b.rows["trials"]) == 8  # the trial itself is still imported
    (job / "hello-world__00ab1cd" / "agent" / "trajectory.json").write_text("{not json")
    [b] = load(job, "harbor")
    assert not b.rows.get("steps") and len(b.rows["trials"]) == 8


def test_a_credential_in_a_trajectory_command_is_not_stored(tmp_path):
    from ingest.api import ingest_paths
    from warehouse import db

    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    path = job / "hello-world__00ab1cd" / "agent" / "trajectory.json"
    doc = json.loads(path.read_text())
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    doc["steps"][1]["tool_calls"][0]["arguments"]["keystrokes"] = f"OPENAI_API_KEY={secret} ls /app\n"
    path.write_text(json.dumps(doc))
    ingest_paths([job], tmp_path / "w.duckdb")
    con = db.open(tmp_path / "w.duckdb", read_only=True)
    try:
        commands = [c for (c,) in con.sql("SELECT command FROM steps WHERE command IS NOT NULL").fetchall()]
    finally:
        con.close()
    assert len(commands) == 4 and not any(secret in c for c in commands)
    assert any("ls /app" in c for c in commands)
