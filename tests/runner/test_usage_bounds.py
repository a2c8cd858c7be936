"""An agent can never make its own run un-ingestable: a number it reports that the event contract
cannot hold (``output_tokens: 1e308``, a sum past 2^63, NaN) becomes unknown with a note."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from contract.stage_events import Usage, reported_usage
from contract.values import INT64_MAX
from runner.agents.agent_report import AgentReport
from runner.agents.usage import merge_reports, parse_agent_output


def _events(tmp_path: Path, *lines: dict) -> Path:
    p = tmp_path / "agent-events.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def test_an_out_of_range_value_is_ignored_with_a_note(tmp_path):
    p = _events(tmp_path, {"type": "usage", "input_tokens": 10, "output_tokens": 1e308, "cost_usd": 1e400},
                {"type": "usage", "output_tokens": 5})
    report = parse_agent_output("agent-events", tmp_path / "stdout", p)
    assert report.usage.input_tokens == 10 and report.usage.output_tokens == 5 and report.usage.cost_usd is None
    assert report.malformed_lines == 1
    assert any("output_tokens 1e+308" in n for n in report.notes), report.notes


def test_a_sum_past_64_bits_becomes_unknown_with_a_note(tmp_path):
    p = _events(tmp_path, *[{"type": "usage", "input_tokens": INT64_MAX, "output_tokens": 1}] * 2)
    report = parse_agent_output("agent-events", tmp_path / "stdout", p)
    assert report.usage.input_tokens is None and report.usage.output_tokens == 2
    assert any(n.startswith("input_tokens: reported value") for n in report.notes), report.notes


def test_reported_usage_keeps_what_fits_and_names_what_does_not():
    usage, notes = reported_usage("x", input_tokens=2**63, output_tokens=2**63 - 1, cost_usd=float("nan"),
                                  steps=-1, time_to_first_edit_s=1.5)
    assert usage == Usage(output_tokens=2**63 - 1, time_to_first_edit_s=1.5, source="x")
    assert len(notes) == 3 and all("out of range" in n for n in notes)


def test_merging_reports_keeps_their_notes():
    a = AgentReport(usage=Usage(input_tokens=1, source="a"), notes=("one",))
    b = AgentReport(usage=Usage(output_tokens=2, source="b"), notes=("two",))
    merged = merge_reports(a, b)
    assert merged.usage.input_tokens == 1 and merged.usage.output_tokens == 2 and merged.notes == ("one", "two")


AGENT = """import json, os
with open(os.environ["TRIALHOUSE_AGENT_EVENTS"], "a") as f:
    f.write(json.dumps({"type": "usage", "input_tokens": 9223372036854775807, "output_tokens": 1e308}) + "\\n")
    f.write(json.dumps({"type": "usage", "input_tokens": 9223372036854775807}) + "\\n")
"""


def test_a_run_whose_agent_reports_absurd_numbers_ingests_whole(corpus_root, kit, tmp_path):
    """Was: the runner stored a 309-digit integer and the whole run could no longer be ingested."""
    from ingest.api import ingest_paths
    from runner.run import run_trials
    from warehouse import open as wopen

    agent = tmp_path / "absurd.py"
    agent.write_text(AGENT)
    m = kit.make_corpus(corpus_root, variants=[{"id": "absurd", "agent": {"kind": "command",
                                                                        "argv": [sys.executable, str(agent)]}}])
    res = run_trials(m, tmp_path / "out", progress=False)
    wh = tmp_path / "wh" / "w.duckdb"
    result = ingest_paths([res.events_path.parent], wh)
    assert result.quarantined == 0 and result.rows["trials"] == 1
    con = wopen(wh, read_only=True)
    try:
        assert con.execute("SELECT input_tokens, output_tokens FROM stages").fetchall() == [(None, None)]
    finally:
        con.close()


def test_agent_text_is_made_valid_unicode_for_the_events():
    from contract.values import as_text

    assert as_text("a\ud800b") == "a\ufffdb"  # a lone surrogate cannot be written as UTF-8
    assert as_text("\ud83d\ude00") == "😀"  # a pair is one character
    assert as_text("ok", 1) == "o" and as_text(5) == "5"
