"""Real published results (``fixtures/public``, see its README): the Terminal-Bench
leaderboard, SWE-bench Pro's ``eval_results`` files and a SWE-bench Verified submission load
into one warehouse with the aliases and labels files of docs/public-data.md, and every
analysis of that walkthrough answers on it.

Expected counts come from the fixture files, read here with the standard library; what the
folder names mean (which model and harness a submission ran) is written out by hand.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from trialhouse.cli import main

from .conftest import FIXTURES

PUBLIC = FIXTURES / "public"
TB = PUBLIC / "tb" / "results"
PRO = PUBLIC / "pro"
VERIFIED = PUBLIC / "verified" / "evaluation" / "verified"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "public-data"
SOURCES = [TB, PRO / "eval_results_gpt5.json", PRO / "eval_results_claude45.json", VERIFIED]

SONNET4, OPUS41, OPUS4 = "claude-sonnet-4-20250514", "claude-opus-4-1-20250805", "claude-opus-4-20250514"
GPT5, SONNET45 = "gpt-5-2025-08-07", "claude-sonnet-4-5-20250929"
# submission folder → (canonical model, canonical harness): what each folder ran
SUBMISSIONS = {
    "20250711_openhands_claude-4-sonnet": (SONNET4, "openhands"),
    "20250923_droid_claude-4-sonnet": (SONNET4, "droid"),
    "20250924_droid_gpt-5": (GPT5, "droid"),
    "20250825_swe-agent-mini_claude-4-sonnet": (SONNET4, "mini-swe-agent"),
    "20250906_orchestrator_claude-4.1-opus": (OPUS41, "orchestrator"),
    "20250829_goose_claude-4-opus": (OPUS4, "goose"),
}
COPY = "2025-08-15__19-28-24/2025-08-15__16-23-45"  # a run copied into another run's folder


def _tb_trials() -> Counter:
    """(model, harness) → trials, from every run results file of the fixture."""
    out: Counter = Counter()
    for f in sorted(TB.rglob("*results.json")):
        if COPY in f.as_posix():
            continue
        submission = next(p.name for p in f.parents if p.name in SUBMISSIONS)
        out[SUBMISSIONS[submission]] += len(json.loads(f.read_text())["results"])
    return out


def _expected() -> Counter:
    out = _tb_trials()
    out[(GPT5, None)] = len(json.loads((PRO / "eval_results_gpt5.json").read_text()))
    out[(SONNET45, None)] = len(json.loads((PRO / "eval_results_claude45.json").read_text()))
    sub = next(VERIFIED.iterdir())
    out[("claude-opus-4-6+gpt-5.5-high", "Vorflux")] = len((sub / "all_preds.jsonl").read_text().splitlines())
    return out


def _cli(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    out = capsys.readouterr()
    assert exit_.value.code == 0, f"{argv}: exit {exit_.value.code}\n{out.err}"
    return out.out + out.err


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("public") / "wh.duckdb"
    with pytest.raises(SystemExit) as exit_:
        main(["ingest", *map(str, SOURCES), "--aliases", str(EXAMPLES / "aliases.yaml"),
              "--labels", str(EXAMPLES / "labels.yaml"), "--warehouse", str(wh)])
    assert exit_.value.code == 0
    return wh


def _sql(wh: Path, query: str) -> list[tuple]:
    with duckdb.connect(str(wh), read_only=True) as con:
        return con.execute(query).fetchall()


def test_every_published_trial_loads_under_its_canonical_model_and_harness(warehouse):
    got = Counter({(m, h): n for m, h, n in _sql(
        warehouse, "SELECT model, harness, count(*) FROM trials GROUP BY ALL")})
    assert got == _expected()
    # no source spelling survives the aliases file
    models = {m for (m,) in _sql(warehouse, "SELECT DISTINCT model FROM configs")}
    assert not models & {"claude-4-sonnet", "anthropic/claude-sonnet-4-0", "claude-4.1-opus", "gpt5",
                         "openai/neulab/claude-sonnet-4-20250514", "anthropic/claude-sonnet-4-20250514"}
    # one configuration per (model, harness): four spellings of Sonnet 4 under mini-swe-agent
    # and openhands do not split a harness into several configurations
    per_cell = _sql(warehouse, "SELECT model, harness, count(DISTINCT config_id) FROM trials GROUP BY ALL")
    assert {n for _, _, n in per_cell} == {1}


def test_runs_repetitions_and_copies(warehouse):
    runs = dict(_sql(warehouse, "SELECT t.harness, count(DISTINCT t.run_id) FROM trials t GROUP BY ALL"))
    assert runs["mini-swe-agent"] == 3  # three run folders; the copy inside one of them loads once
    assert runs["goose"] == 2  # two <run>_results.json files, no run directory: two runs
    # the orchestrator ran every task 5 times in one run (trial names task.k-of-5, no run id)
    reps = _sql(warehouse, "SELECT case_id, list(repetition ORDER BY repetition) FROM trials "
                           "WHERE harness = 'orchestrator' GROUP BY ALL")
    assert reps and all(r == sorted(set(r)) and set(r) <= {1, 2, 3, 4, 5} for _, r in reps)
    assert max(len(r) for _, r in reps) == 5
    ids = _sql(warehouse, "SELECT count(*), count(DISTINCT trial_id) FROM trials")
    assert ids[0][0] == ids[0][1]


def test_familiarity_labels_and_repositories_reach_the_cases(warehouse):
    by = dict(((b, f), n) for b, f, n in _sql(
        warehouse, "SELECT benchmark, familiarity, count(DISTINCT case_id) FROM cases GROUP BY ALL"))
    pro = set(json.loads((PRO / "eval_results_gpt5.json").read_text()))
    assert by[("swe-bench-pro", "unknown")] == len(pro)
    assert by[("swe-bench-verified", "known")] == _expected()[("claude-opus-4-6+gpt-5.5-high", "Vorflux")]
    assert ("terminal-bench-core", None) in by  # no repository, no label: unknown stays null
    repo_of = dict(_sql(warehouse, "SELECT case_id, repository FROM cases WHERE benchmark = 'swe-bench-pro'"))
    # instance_<owner>__<repo>-<commit>…: the repository is the id's own prefix
    assert all(i.startswith(f"instance_{repo_of[i].replace('/', '__')}-") for i in pro)
    assert "element-hq/element-web" in repo_of.values()  # a repository name with a hyphen


def test_reingest_changes_nothing(warehouse, capsys):
    before = _sql(warehouse, "SELECT run_id, trial_id, outcome FROM trials ORDER BY ALL")
    _cli(capsys, "ingest", *map(str, SOURCES), "--aliases", str(EXAMPLES / "aliases.yaml"),
         "--labels", str(EXAMPLES / "labels.yaml"), "--warehouse", str(warehouse))
    assert _sql(warehouse, "SELECT run_id, trial_id, outcome FROM trials ORDER BY ALL") == before


def test_the_walkthrough_analyses_answer(warehouse, capsys):
    w = ["--warehouse", str(warehouse)]
    summary = _cli(capsys, "summarize", *w)
    assert all(u in summary for u in ("terminal-bench-core", "swe-bench-pro", "swe-bench-verified"))
    assert "None" not in summary  # a configuration without a harness is named, not "None None"
    matrix = _cli(capsys, "matrix", "--universe", "terminal-bench-core", *w)
    assert "One model × harnesses" in matrix and f"Harnesses ranked within {SONNET4}" in matrix
    assert all(h in matrix for h in ("openhands", "droid", "mini-swe-agent"))
    pareto = _cli(capsys, "pareto", *w)
    assert "not placed (cost unknown)" in pareto  # none of these sources reports a cost
    consistency = _cli(capsys, "consistency", *w)
    assert "pass^k" in consistency
    familiarity = _cli(capsys, "familiarity", *w)
    assert "only known or only unknown tasks, so no gap" in familiarity
    plan = _cli(capsys, "plan", "--universe", "terminal-bench-core", "--baseline", f"openhands / {SONNET4}",
                "--candidate", f"droid / {SONNET4}", *w)
    assert plan.count("At ") >= 1 and "repetitions" in plan


def test_compare_on_pro_counts_the_discordant_instances_of_the_files(warehouse, capsys):
    gpt5 = json.loads((PRO / "eval_results_gpt5.json").read_text())
    claude = json.loads((PRO / "eval_results_claude45.json").read_text())
    only_gpt5 = sum(gpt5[i] and not claude[i] for i in gpt5)
    only_claude = sum(claude[i] and not gpt5[i] for i in gpt5)
    out = json.loads(_cli(capsys, "compare", "--universe", "swe-bench-pro", "--baseline",
                          f"unknown-harness / {SONNET45}", "--json", "--warehouse", str(warehouse)))
    text = json.dumps(out)
    assert f'"improvements": {only_gpt5}' in text and f'"regressions": {only_claude}' in text


def _converter():
    import importlib.util

    spec = importlib.util.spec_from_file_location("pro_costs", EXAMPLES / "pro_costs_to_runs_jsonl.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pro_costs_from_the_published_report_place_both_models_on_the_front(tmp_path, capsys):
    """examples/public-data/pro_costs_to_runs_jsonl.py: the report's per-instance rows become
    runs-jsonl lines whose outcome agrees with eval_results and whose cost is the report's."""
    conv = _converter()
    rows = conv.published_rows(PRO / "report-excerpt.html")
    lines = conv.lines(rows)
    evals = {m: json.loads((PRO / f"eval_results_{m}.json").read_text()) for m in ("gpt5", "claude45")}
    assert len(lines) == sum(len(e) for e in evals.values())
    assert all(evals[o["model"]][o["task_id"]] == (o["status"] == "solved") for o in lines)
    cost = {(o["model"], o["task_id"]): o["cost_usd"] for o in lines}
    row = rows[0]
    assert cost[("gpt5", row["instance_id"])] == row["gpt5"]["model_stats"]["instance_cost"]
    src = tmp_path / "pro-costs.jsonl"
    src.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    wh = ["--warehouse", str(tmp_path / "cost.duckdb")]
    _cli(capsys, "ingest", str(src), "--aliases", str(EXAMPLES / "aliases.yaml"),
         "--labels", str(EXAMPLES / "labels.yaml"), *wh)
    per_model = {m: sum(c for (mm, _), c in cost.items() if mm == m) for m in ("gpt5", "claude45")}
    got = dict(_sql(tmp_path / "cost.duckdb", "SELECT model, sum(cost_usd) FROM trials GROUP BY ALL"))
    assert got[GPT5] == pytest.approx(per_model["gpt5"]) and got[SONNET45] == pytest.approx(per_model["claude45"])
    pareto = _cli(capsys, "pareto", "--cost-coverage", "complete", *wh)
    assert "not placed" not in pareto and "48 of 48 complete trials have a known cost" in pareto
