"""One cost rule (``ingest.cost.resolve_cost``) for the normaliser and every importer.

The rule itself, then each source through its real importer: reported wins, else priced from
known tokens, else unknown; a reported 0 next to evidence of work is unknown exactly for the
sources that write 0 when they did not price (Harbor, Inspect, SWE-bench submissions) and a
real 0 for the others (our runner, runs-jsonl).
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from ingest.cost import resolve_cost
from ingest.formats import load
from ingest.prices import PriceTable

FIXTURES = Path(__file__).parent / "formats" / "fixtures"
PRICES = PriceTable.from_dict({"m": {"input_per_mtok": 1.0, "output_per_mtok": 10.0, "cached_input_per_mtok": 0.1,
                                     "cache_write_per_mtok": 2.0}})
NO_WRITE_PRICE = PriceTable.from_dict({"m": {"input_per_mtok": 1.0, "output_per_mtok": 10.0,
                                             "cached_input_per_mtok": 0.1}})


# ------------------------------------------------------------------ the rule


@pytest.mark.parametrize(("kw", "want"), [
    ({"reported": 0.5}, (0.5, "reported")),
    ({"reported": 0.5, "input_tokens": 10, "output_tokens": 1}, (0.5, "reported")),  # reported wins over prices
    ({"reported": 0, "input_tokens": 10, "output_tokens": 1}, (0.0, "reported")),  # a real 0
    ({"reported": float("nan"), "input_tokens": 1_000_000, "output_tokens": 0}, (1.0, "priced")),
    ({"reported": -1, "input_tokens": 1_000_000, "output_tokens": 0}, (1.0, "priced")),
    ({"reported": "0.5", "input_tokens": 1_000_000, "output_tokens": 0}, (1.0, "priced")),
    ({"input_tokens": 1_000_000, "output_tokens": 100_000}, (2.0, "priced")),
    ({"input_tokens": 1_000_000, "output_tokens": None}, (None, None)),  # a needed count unknown
    ({"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 1_000_000}, (pytest.approx(0.1), "priced")),
    ({"input_tokens": 0, "output_tokens": 0, "cache_write_tokens": 1_000_000}, (2.0, "priced")),
    ({}, (None, None)),
])
def test_the_rule(kw, want):
    assert tuple(resolve_cost(PRICES, "m", **kw)) == want


def test_unpriced_zero_only_where_the_source_writes_zero_for_unpriced():
    work = {"reported": 0, "input_tokens": 1_000_000, "output_tokens": 0}
    assert tuple(resolve_cost(None, "m", **work, zero_is_unpriced=True)) == (None, None)
    assert tuple(resolve_cost(PRICES, "m", **work, zero_is_unpriced=True)) == (1.0, "priced")
    assert tuple(resolve_cost(None, "m", reported=0, activity=3, zero_is_unpriced=True)) == (None, None)
    assert tuple(resolve_cost(None, "m", reported=0, zero_is_unpriced=True)) == (0.0, "reported")  # no work seen


def test_cache_writes_without_their_price_are_unknown_not_free():
    got = resolve_cost(NO_WRITE_PRICE, "m", input_tokens=10, output_tokens=10, cache_write_tokens=5)
    assert tuple(got) == (None, None)
    assert resolve_cost(NO_WRITE_PRICE, "m", input_tokens=10, output_tokens=10, cache_write_tokens=0).source == "priced"
    assert resolve_cost(PRICES, "other-model", input_tokens=10, output_tokens=10).usd is None
    assert resolve_cost(PRICES, "m", input_tokens=10, output_tokens=10, on=date(2020, 1, 1)).source == "priced"


# ------------------------------------------------------------------ each source


def _trials(batches) -> list[dict]:
    return [t for b in batches for t in b.table_rows("trials")]


def test_our_runner_reported_zero_is_real_and_cache_writes_need_their_price(tmp_path, gen, wh):
    from contract.stage_events import Usage
    from ingest.api import ingest_paths
    from warehouse import open as wopen

    s = gen.Seq("cost-run")
    rs = gen.run_started(s, variants=("m",), cases=("c1", "c2", "c3"), repetitions=1)
    rs = rs.model_copy(update={"variants": [v.model_copy(update={"model": "m"}) for v in rs.variants]})
    evs: list = [rs]
    usages = {
        "cost-run-zero": Usage(input_tokens=100, output_tokens=10, cost_usd=0.0, source="agent-events"),
        "cost-run-write": Usage(input_tokens=1_000_000, output_tokens=0, cache_write_tokens=1_000_000),
        "cost-run-plain": Usage(input_tokens=1_000_000, output_tokens=100_000),
    }
    for (tid, usage), case in zip(usages.items(), ("c1", "c2", "c3"), strict=True):
        evs += gen.trial_events(s, tid, case, "m", 1, usage=usage)
    path = gen.write_jsonl(tmp_path / "cost-run" / "events.jsonl", evs)
    for k, (table, want_write) in enumerate(((NO_WRITE_PRICE, (None, None)), (PRICES, (3.0, "priced")))):
        prices = tmp_path / f"p{k}.json"
        prices.write_text(json.dumps({"models": {m: [e.model_dump(mode="json") for e in v]
                                                 for m, v in table.entries.items()}}))
        target = wh.with_name(f"w{k}.duckdb")
        ingest_paths([path.parent], target, prices=prices)
        con = wopen(target, read_only=True)
        got = {r[0]: r[1:] for r in con.execute("SELECT trial_id, cost_usd, cost_source FROM trials").fetchall()}
        con.close()
        assert got["cost-run-zero"] == (0.0, "reported")
        assert got["cost-run-write"] == want_write
        assert got["cost-run-plain"] == (2.0, "priced")


def test_runs_jsonl_reported_zero_is_real(tmp_path):
    p = tmp_path / "runs.jsonl"
    base = {"model": "m", "harness": "h", "task_id": "t", "status": "solved", "input_tokens": 1_000_000,
            "output_tokens": 0, "steps": 3}
    p.write_text("\n".join(json.dumps({**base, "trial": i, **extra}) for i, extra in
                           enumerate([{"cost_usd": 0}, {}, {"input_tokens": None}])) + "\n")
    t = _trials(load(p, "runs-jsonl", prices=PRICES))
    assert [(x["cost_usd"], x["cost_source"]) for x in t] == [(0.0, "reported"), (1.0, "priced"), (None, None)]
    assert [json.loads(x["labels_json"]).get("cost_unpriced", False) for x in t] == [False, False, True]


def _harbor(tmp_path: Path, edit) -> Path:
    job = tmp_path / "job"
    shutil.copytree(FIXTURES / "harbor" / "2026-01-10__12-00-00", job)
    f = job / "parse-logs__06ab1cd" / "result.json"
    d = json.loads(f.read_text())
    edit(d["agent_result"])
    f.write_text(json.dumps(d))
    return job


@pytest.mark.parametrize(("edit", "prices", "want"), [
    (lambda a: None, None, (None, None)),  # cost_usd 0 next to 73k tokens: unpriced, not free
    (lambda a: None, "model-a", (pytest.approx((20000 * 1.0 + 3000 * 10.0 + 50000 * 0.1) / 1e6), "priced")),
    (lambda a: a.update(cost_usd=0.25), "model-a", (0.25, "reported")),
    (lambda a: a.update(n_cache_tokens=None), "model-a", (None, None)),  # uncached part unknown: not priced
    (lambda a: a.update(n_input_tokens=0, n_output_tokens=0, n_cache_tokens=0), None, (0.0, "reported")),
])
def test_harbor(tmp_path, edit, prices, want):
    table = PriceTable.from_dict({"model-a": PRICES.entries["m"][0].model_dump()}) if prices else None
    t = [x for x in _trials(load(_harbor(tmp_path, edit), "harbor", prices=table))
         if x["trial_id"] == "00000000-0000-4000-8000-000000000006"]  # parse-logs__06ab1cd
    assert len(t) == 1
    assert (t[0]["cost_usd"], t[0]["cost_source"]) == want
    assert json.loads(t[0]["labels_json"]).get("cost_unpriced", False) == (want[0] is None)


def _inspect(tmp_path: Path, usage: dict) -> Path:
    d = json.loads((FIXTURES / "inspect" / "mixed.json").read_text())
    model = d["eval"]["model"]
    for s in d["samples"]:
        s["model_usage"] = {model: usage}
    p = tmp_path / "log.json"
    p.write_text(json.dumps(d))
    return p


@pytest.mark.parametrize(("usage", "prices", "want"), [
    ({"input_tokens": 1_000_000, "output_tokens": 0, "total_cost": 0}, None, (None, None)),  # 0 next to tokens
    ({"input_tokens": 1_000_000, "output_tokens": 0, "total_cost": 0}, PRICES, (1.0, "priced")),
    ({"input_tokens": 1_000_000, "output_tokens": 0, "total_cost": 0.3}, PRICES, (0.3, "reported")),
    ({"input_tokens": 0, "output_tokens": 0, "total_cost": 0}, None, (0.0, "reported")),
    ({"input_tokens": 1_000_000, "output_tokens": 0, "input_tokens_cache_write": 10}, NO_WRITE_PRICE, (None, None)),
    ({"input_tokens": 1_000_000, "output_tokens": 0, "input_tokens_cache_write": 500_000}, PRICES, (2.0, "priced")),
])
def test_inspect(tmp_path, usage, prices, want):
    p = _inspect(tmp_path, usage)
    table = None
    if prices is not None:
        model = json.loads(p.read_text())["eval"]["model"]
        table = PriceTable.from_dict({model: prices.entries["m"][0].model_dump()})
    t = _trials(load(p, "inspect", prices=table))
    assert t and {(x["cost_usd"], x["cost_source"]) for x in t} == {want}


def test_terminal_bench_has_only_prices(tmp_path):
    run = tmp_path / "tb"
    shutil.copytree(FIXTURES / "terminal_bench" / "2025-06-01__10-00-00", run)
    model = json.loads((run / "run_metadata.json").read_text())["model_name"]
    table = PriceTable.from_dict({model: PRICES.entries["m"][0].model_dump()})
    t = _trials(load(run, "terminal-bench", prices=table))
    for x in t:
        if x["input_tokens"] is None:  # 0/0 means not reported: unknown, never priced as free
            assert (x["cost_usd"], x["cost_source"]) == (None, None)
        else:
            want = (x["input_tokens"] * 1.0 + x["output_tokens"] * 10.0) / 1e6
            assert x["cost_usd"] == pytest.approx(want) and x["cost_source"] == "priced"
    assert any(x["input_tokens"] is None for x in t) and any(x["cost_source"] == "priced" for x in t)


def test_swebench_submission_zero_with_api_calls_is_unknown(tmp_path):
    sub = tmp_path / "sub"
    shutil.copytree(FIXTURES / "swebench" / "20250901_agentx_model-a", sub)
    ids = json.loads((sub / "results" / "results.json").read_text())["resolved"][:3]
    (sub / "per_instance_details.json").write_text(json.dumps({
        ids[0]: {"cost": 0, "api_calls": 12}, ids[1]: {"cost": 0, "api_calls": 0}, ids[2]: {"cost": 1.5},
    }))
    t = {x["case_id"]: x for x in _trials(load(sub, "swebench"))}
    assert (t[ids[0]]["cost_usd"], t[ids[0]]["cost_source"]) == (None, None)
    assert (t[ids[1]]["cost_usd"], t[ids[1]]["cost_source"]) == (0.0, "reported")
    assert (t[ids[2]]["cost_usd"], t[ids[2]]["cost_source"]) == (1.5, "reported")
