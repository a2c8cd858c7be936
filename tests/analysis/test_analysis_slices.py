"""Slicing (--by) on compare, pareto and familiarity, and every command on Inspect logs.

A sliced result must equal the unsliced function run on that slice's trials (a label
filter), and the analyses must run unchanged on a warehouse built from foreign results.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from analysis import compare, familiarity, pareto
from analysis.errors import AnalysisError
from analysis.filters import Filters
from warehouse import db

ROOT = Path(__file__).resolve().parents[2]
INSPECT = ROOT / "examples" / "foreign" / "inspect-arith.eval"


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from tests.support.synthetic_warehouse import Spec, generate

    path = tmp_path_factory.mktemp("slices") / "t.duckdb"
    # No invalid trials: eligibility is a property of a configuration over the whole
    # selection (an invalid trial in one slice disqualifies it in every slice), so a slice
    # equals the question asked on that slice alone only when no gate differs between them.
    generate(path, Spec(models=2, harnesses=2, tasks=48, reps=3, repositories=8,
                        invalid_rate=0.0))
    con = db.open(path, read_only=True)
    yield con
    con.close()


def _values(con, col: str) -> list[str]:
    rows = con.execute(f"SELECT DISTINCT {col} FROM cases WHERE {col} IS NOT NULL "  # noqa: S608
                       f"ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def test_compare_by_slice_equals_compare_on_the_slice(synth, close):
    names = ["model-a+harness-0", "model-b+harness-0", "model-a+harness-1"]
    sliced = compare.compare(synth, Filters(), names[0], names[1:], by="task_class")
    classes = _values(synth, "task_class")
    assert len(classes) >= 3
    assert [c.slice["task_class"] for c in sliced] == [v for v in classes for _ in names[1:]]
    for value in classes:
        alone = compare.compare(synth, Filters(labels=(("task_class", value),)), names[0],
                                names[1:])
        here = [c for c in sliced if c.slice == {"task_class": value}]
        assert len(here) == len(alone) == 2
        for s, a in zip(here, alone, strict=True):
            got = s.as_dict()
            assert got.pop("slice") == {"task_class": value}
            close(got, a.as_dict())
            assert got["sign_test"]["n"] > 0 and got["directions"]


def test_compare_by_skips_slices_without_both_sides(wh, grid):
    trials = grid({"b": {"t1": ["accepted", "failed"], "t2": ["failed", "failed"]},
                   "c": {"t1": ["accepted", "accepted"]}})
    cases = [{"case_id": "t1", "task_class": "bugfix"}, {"case_id": "t2", "task_class": "docs"}]
    con = wh(trials, cases=cases)
    (only,) = compare.compare(con, baseline="b", candidates=["c"], by=["task_class"])
    assert only.slice == {"task_class": "bugfix"}
    assert only.sign_test.improvements == 1 and only.sign_test.n == 1
    apart = wh(grid({"b": {"t2": ["failed"]}, "c": {"t1": ["accepted"]}}), cases=cases)
    # sharing no task at all is refused before any slice is looked at (never 0 pairs)
    with pytest.raises(AnalysisError, match="share.s. no task with the baseline b"):
        compare.compare(apart, baseline="b", candidates=["c"], by=["task_class"])


def test_pareto_by_slice_equals_pareto_on_the_slice(synth, close):
    sliced = pareto.pareto(synth, x="cost_per_trial", convex=True, by="difficulty").table
    assert sliced.columns[5:7] == ["universe", "difficulty"]
    for value in _values(synth, "difficulty"):
        part = sliced.filter(sliced["difficulty"] == value).drop("difficulty")
        alone = pareto.pareto(synth, Filters(labels=(("difficulty", value),)),
                              x="cost_per_trial", convex=True).table
        close(part.to_dicts(), alone.to_dicts())
        assert part["on_front"].any()


def test_familiarity_by_slice_equals_familiarity_on_the_slice(synth, close):
    sliced = familiarity.familiarity(synth, by=["language"]).table
    langs = _values(synth, "language")
    assert sorted(set(sliced["language"])) == langs
    for value in langs:
        part = sliced.filter(sliced["language"] == value).drop("language")
        alone = familiarity.familiarity(synth, Filters(labels=(("language", value),))).table
        close(part.to_dicts(), alone.to_dicts())
    with pytest.raises(AnalysisError, match="--by familiarity"):
        familiarity.familiarity(synth, by="familiarity")


# --- foreign data: Inspect logs ------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FLIPPED = FIXTURES / "inspect-flipped.eval"  # written by inspect_ai (gen_inspect_pair.py)


def _expected(json_twin: Path) -> dict:
    """Per task: (valid, solved) from the log's .json twin, read with the standard library.

    The twins were written by inspect_ai alongside the .eval files, so the expectation
    does not go through our .eval reader.
    """
    out: dict[str, Counter] = {}
    for s in json.loads(json_twin.read_text(encoding="utf-8"))["samples"]:
        c = out.setdefault(str(s["id"]), Counter())
        if s.get("scores"):
            c["valid"] += 1
            c["solved"] += all(v["value"] == "C" for v in s["scores"].values())
    return out


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    from trialhouse.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


def test_every_command_runs_on_an_inspect_warehouse(tmp_path, capsys):
    from ingest.api import ingest_paths

    w = tmp_path / "w" / "t.duckdb"
    ingest_paths([INSPECT, FLIPPED], w)
    exp = {"mockllm/model": _expected(FIXTURES / "inspect-arith.json"),
           "mockllm/other": _expected(FIXTURES / "inspect-flipped.json")}
    wa = ["-w", str(w), "--json"]

    rc, out, _ = _cli(["summarize", *wa], capsys)
    rows = {r["model"]: r for r in json.loads(out)["rows"]}
    assert rc == 0 and set(rows) == set(exp)
    for model, per_task in exp.items():
        assert rows[model]["valid"] == sum(c["valid"] for c in per_task.values())
        assert rows[model]["solved"] == sum(c["solved"] for c in per_task.values())
        assert rows[model]["cost_usd"] is None and rows[model]["cost_coverage"] == 0.0

    rc, out, _ = _cli(["compare", *wa, "--baseline", rows["mockllm/model"]["config_id"]],
                      capsys)
    (cmp,) = json.loads(out)["comparisons"]
    both = [t for t in exp["mockllm/model"] if exp["mockllm/model"][t]["valid"]
            and exp["mockllm/other"][t]["valid"]]
    wins = sum(exp["mockllm/other"][t]["solved"] > exp["mockllm/model"][t]["solved"]
               for t in both)
    losses = sum(exp["mockllm/other"][t]["solved"] < exp["mockllm/model"][t]["solved"]
                 for t in both)
    assert rc == 0 and cmp["candidate"]["model"] == "mockllm/other"
    assert cmp["tasks"]["common"] == len(both)
    assert (cmp["sign_test"]["improvements"], cmp["sign_test"]["regressions"]) == (wins, losses)
    assert cmp["cost"]["status"] == "cost coverage incomplete"

    rc, out, _ = _cli(["compare", *wa, "--baseline", rows["mockllm/model"]["config_id"],
                       "--by", "repository"], capsys)
    sliced = json.loads(out)["comparisons"]
    assert rc == 0 and {c["slice"]["repository"] for c in sliced} == {"acme/math", "acme/calc"}
    assert sum(c["sign_test"]["improvements"] for c in sliced) == wins

    rc, out, _ = _cli(["consistency", *wa], capsys)
    cons = {r["model"]: r for r in json.loads(out)["rows"]}
    assert rc == 0 and all(r["min_n"] == 2 for r in cons.values())

    rc, out, _ = _cli(["pareto", *wa], capsys)
    assert rc == 0 and all(r["on_front"] is None for r in json.loads(out)["rows"])  # no cost

    for cmd in (["failures"], ["latency"], ["summarize", "--by", "repository"],
                ["pareto", "--by", "repository"], ["consistency", "--by", "repository"]):
        rc, out, _ = _cli([*cmd, *wa], capsys)
        assert rc == 0 and json.loads(out)["rows"], cmd

    # Two models under one harness: the model effect, no interaction to test.
    rc, out, _ = _cli(["matrix", *wa], capsys)
    mat = json.loads(out)
    assert rc == 0 and mat["design"] == "models" and len(mat["model_effects"]) == 1
    # Questions this source cannot answer are refused in one line, not a traceback.
    for cmd, words in ((["familiarity"], "supply the labels"),):
        rc, out, err = _cli([*cmd, *wa], capsys)
        assert rc == 2 and words in err and len(err.strip().splitlines()) == 1, (cmd, err)
