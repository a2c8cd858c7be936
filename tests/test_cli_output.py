"""What the terminal shows, through the real CLI: every user string printed as written (no
Rich markup eaten), SIMULATED marked, numbers for people, long lists cut with a count, and
`sql` readable in a terminal and tab-separated with a header when piped."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Ids starting with a-f: "[aa72aaa0]" is valid Rich markup (a colour) and used to vanish.
CONFIGS = [  # id, variant, cost per trial, accepted of 6 tasks, simulated
    ("aa72aaa0652c7c9f", "[b]alpha[/b]", 0.010, 6, True),
    ("bbbbbbbb00000001", "beta", 0.011, 5, False),
    ("deadbeef00000002", "gamma", 0.012, 5, False),
    ("c0ffee0000000003", "delta", 0.013, 5, False),
    ("e1e1e1e100000004", "epsilon", 0.014, 5, False),
    ("f00dfeed00000005", "zeta", 0.050, 1, False),  # dominated by all five others
]


def _build(path: Path) -> Path:
    from warehouse import db
    from warehouse.schema import table_from_rows

    run, batch, t0 = "run-1", "b1", datetime(2026, 3, 1, tzinfo=UTC)
    configs, trials = [], []
    for order, (cid, variant, cost, accepted, sim) in enumerate(CONFIGS):
        configs.append({"run_id": run, "config_id": cid, "variant": variant, "model": f"m{order}",
                        "harness": "h", "harness_version": "1", "simulated": sim,
                        "source_format": "trialhouse", "variant_order": order,
                        "agent_kind": "simulated", "ingest_batch_id": batch})
        for i in range(6):
            trials.append({
                "run_id": run, "trial_id": f"{cid}-{i}", "source_format": "trialhouse",
                "config_id": cid, "variant": variant, "model": f"m{order}", "harness": "h",
                "harness_version": "1", "case_id": f"t{i}", "repetition": 1,
                "outcome": "accepted" if i < accepted else "target_failed", "complete": True,
                "duration_s": 30.0, "input_tokens": 2_500_000 + i, "output_tokens": 96_070,
                "steps": 12, "cost_usd": cost, "simulated": sim, "flags": 1 if i == 0 else 0,
                "started_at": t0, "ingest_batch_id": batch})
    tables = {
        "runs": table_from_rows("runs", [{"run_id": run, "source_format": "trialhouse",
                                          "started_at": t0, "ingest_batch_id": batch}]),
        "configs": table_from_rows("configs", configs),
        "cases": table_from_rows("cases", [{"run_id": run, "case_id": f"t{i}", "holdout": False,
                                            "ingest_batch_id": batch} for i in range(6)]),
        "trials": table_from_rows("trials", trials),
    }
    with db.write_lock(path):
        db.replace_run(path, run, tables)
        db.open(path).close()
    return path


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("cli out") / "w.duckdb")


def cli(*args: str, tty: bool = False, columns: int = 200) -> str:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRIALHOUSE_") and k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env.update(NO_COLOR="1", COLUMNS=str(columns))
    if tty:
        env["TTY_COMPATIBLE"] = "1"  # what rich reads to treat stdout as a terminal
    proc = subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)  # NO_COLOR keeps bold: drop styles


def _row(out: str, needle: str) -> str:
    (line,) = [ln for ln in out.splitlines() if needle in ln]
    return line


def test_ids_and_names_print_as_written_and_simulated_is_marked(wh) -> None:
    out = cli("summarize", "-w", str(wh), tty=True, columns=250)
    for cid, variant, *_ in CONFIGS:
        assert f"{variant} [{cid[:8]}]" in out, f"{variant} [{cid[:8]}] missing"
    assert "SIMULATED" in _row(out, "[aa72aaa0]")
    assert "SIMULATED" not in _row(out, "[bbbbbbbb]")


def test_counts_and_tokens_are_written_for_people(wh) -> None:
    out = cli("summarize", "-w", str(wh), tty=True, columns=250)
    # median of input + output tokens over 6 valid trials: 2,500,000 + 2.5 + 96,070
    assert "2,596,072.5" in _row(out, "[bbbbbbbb]")
    assert "e+0" not in out and "e+1" not in out
    assert "1 (1)" in _row(out, "[bbbbbbbb]"), "flags column: 1 flag on 1 trial"


def test_pareto_cuts_a_long_dominated_by_list_with_a_count(wh) -> None:
    out = cli("pareto", "-w", str(wh), tty=True, columns=250)
    zeta = _row(out, "[f00dfeed]")
    assert "[b]alpha[/b] [aa72aaa0], beta [bbbbbbbb], gamma [deadbeef] and 2 more" in zeta
    rows = json.loads(cli("pareto", "-w", str(wh), "--json"))["rows"]
    assert len(next(r for r in rows if r["config_id"].startswith("f00d"))["dominated_by"]) == 5


def test_compare_prints_the_headline_first(wh) -> None:
    out = cli("compare", "-w", str(wh), "--candidate", "zeta", tty=True)
    first = out.splitlines()[0]
    assert first.startswith("No configuration is distinguishably better than the baseline "
                            "[b]alpha[/b] SIMULATED, which accepts 100.0% of 6 compared tasks")
    # SIMULATED once per name in the headline: alpha is already named in the first sentence.
    assert "zeta accepts 83.3 points fewer tasks than [b]alpha[/b] (" in out
    assert "zeta [f00dfeed] vs baseline [b]alpha[/b] [aa72aaa0] SIMULATED" in out


def test_csv_is_the_result_rows(wh) -> None:
    rows = list(csv.DictReader(io.StringIO(cli("summarize", "-w", str(wh), "--csv"))))
    assert [r["config_id"] for r in rows] and {r["variant"] for r in rows} >= {"[b]alpha[/b]", "zeta"}
    assert {"solved", "valid", "flags", "med_tokens"} <= set(rows[0])
    comp = list(csv.DictReader(io.StringIO(cli("compare", "-w", str(wh), "--csv"))))
    assert len(comp) == 5 and all(r["baseline_id"] == "aa72aaa0652c7c9f" for r in comp)


def test_sql_piped_is_tab_separated_with_a_header(wh) -> None:
    out = cli("sql", "-w", str(wh), "SELECT config_id, variant, count(*) AS n FROM trials "
              "GROUP BY ALL ORDER BY 1")
    lines = out.splitlines()
    assert lines[0] == "config_id\tvariant\tn"
    assert lines[1] == "aa72aaa0652c7c9f\t[b]alpha[/b]\t6"
    assert len(lines) == 1 + len(CONFIGS)


def test_sql_in_a_terminal_is_a_table_or_one_block_per_row(wh) -> None:
    narrow = cli("sql", "-w", str(wh), "SELECT variant, sum(input_tokens) AS tokens FROM trials "
                 "GROUP BY 1 ORDER BY 1", tty=True, columns=80)
    assert "┃" in narrow and "15,000,015" in narrow and "[b]alpha[/b]" in narrow
    wide = cli("sql", "-w", str(wh), "SELECT * FROM trials LIMIT 2", tty=True, columns=80)
    assert "── 1 of 2 " in wide and "── 2 of 2 " in wide
    assert any(ln.startswith("trial_id") and " aa72aaa0652c7c9f-0" in ln for ln in wide.splitlines())
    assert "2 row(s)" in wide
