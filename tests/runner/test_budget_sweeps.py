"""Per-case budgets and budget sweeps (docs/runner.md, "Budgets and budget sweeps"): real runs
of real agent processes on a real git repository; the manifest rules through ``validate``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contract.run_events import RunStarted
from contract.trial_events import Budget, TrialFinished, TrialStarted
from runner.eventlog import read_events
from runner.manifest import Manifest, config_id, expand_sweeps
from runner.run import run_trials
from runner.validate import validate_manifest

SLOW_FIX = """import subprocess, sys, time
time.sleep(float(sys.argv[1]))
subprocess.run(["git", "apply", sys.argv[2]], check=True)
print("slept, then fixed")
"""


def _slow_fixer(tmp_path: Path, root: Path, seconds: float) -> list[str]:
    """argv of an agent that sleeps ``seconds`` and then applies the reference patch (its
    script lives outside the manifest directory, named by an absolute path)."""
    script = tmp_path / "slow_fix.py"
    script.write_text(SLOW_FIX)
    return [sys.executable, str(script), str(seconds), str((root / "patches" / "mul.patch").resolve())]


def _two_cases(kit, root: Path, variants: list[dict], tight: float) -> Path:
    """The tiny corpus with a second case ``mul-tight`` (the same task) whose own time budget
    is ``tight`` seconds, beside ``mul`` on the manifest's 60."""
    m = kit.make_corpus(root, variants=variants)
    doc = json.loads(m.read_text())
    tight_case = {**json.loads(json.dumps(doc["cases"][0])), "id": "mul-tight", "timeout_seconds": tight}
    doc["cases"].append(tight_case)
    m.write_text(json.dumps(doc, indent=2))
    return m


def test_a_case_budget_overrides_the_manifests_and_a_sweep_point_overrides_both(kit, corpus_root, tmp_path):
    argv = _slow_fixer(tmp_path, corpus_root, 2.5)
    m = _two_cases(kit, corpus_root, [
        {"id": "slowfix", "agent": {"kind": "command", "argv": argv}},
        {"id": "swept", "agent": {"kind": "command", "argv": argv}, "timeout_seconds": [1, 60]},
    ], tight=1.0)
    res = run_trials(m, tmp_path / "out", progress=False, jobs=3)
    events = read_events(res.events_path)
    fin = {(e.case_id, e.variant): e for e in events if isinstance(e, TrialFinished)}
    outcome = {k: e.outcome for k, e in fin.items()}
    assert outcome == {
        # the case's own 1 s budget ends the trial; its sibling on the manifest's 60 s finishes
        ("mul-tight", "slowfix"): "budget_exhausted", ("mul", "slowfix"): "accepted",
        # a sweep point's budget is the variant's: it wins over the case's
        ("mul-tight", "swept-1s"): "budget_exhausted", ("mul-tight", "swept-60s"): "accepted",
        ("mul", "swept-1s"): "budget_exhausted", ("mul", "swept-60s"): "accepted",
    }
    started = {(e.case_id, e.variant): e for e in events if isinstance(e, TrialStarted)}
    assert {k: e.timeout_seconds for k, e in started.items()} == {
        ("mul-tight", "slowfix"): 1.0, ("mul", "slowfix"): 60.0, ("mul-tight", "swept-1s"): 1.0,
        ("mul-tight", "swept-60s"): 60.0, ("mul", "swept-1s"): 1.0, ("mul", "swept-60s"): 60.0}
    limits = {e.trial_id: e.limit for e in events if isinstance(e, Budget) and e.type == "time"}
    assert limits == {"mul-tight__slowfix__r1": 1.0, "mul-tight__swept-1s__r1": 1.0, "mul__swept-1s__r1": 1.0}
    head = next(e for e in events if isinstance(e, RunStarted))
    assert {c.case_id: c.timeout_seconds for c in head.cases} == {"mul": None, "mul-tight": 1.0}
    variants = {v.variant: v for v in head.variants}
    assert [v.variant for v in head.variants] == ["slowfix", "swept-1s", "swept-60s"]
    assert (variants["swept-1s"].sweep, variants["swept-1s"].sweep_budget, variants["swept-1s"].sweep_value) \
        == ("swept", "timeout_seconds", 1.0)
    assert variants["swept-60s"].sweep_value == 60.0 and variants["slowfix"].sweep is None
    assert len({v.config_id for v in head.variants}) == 3  # every budget point is its own configuration


def _manifest(kit, root: Path, variants: list[dict], **overrides) -> Path:
    return kit.make_corpus(root, variants=variants, **overrides)


def _problems(path: Path) -> list[str]:
    return [str(p) for p in validate_manifest(path).problems]


def test_validate_bounds_case_and_variant_budgets_like_the_manifests(kit, corpus_root):
    noop = kit.agent("noop")
    m = _manifest(kit, corpus_root, [
        {"id": "a", "agent": noop, "max_cost_usd": [0.2, -0.1]},
        {"id": "b", "agent": noop, "timeout_seconds": [10, 90_000], "max_cost_usd": "lots"},
        {"id": "c", "agent": noop, "max_cost_usd": [0.4, 0.2]},
        {"id": "d", "agent": noop, "max_cost_usd": [0.1, 0.2], "timeout_seconds": [5, 10]},
        {"id": "e", "agent": noop, "timeout_seconds": [5]},
    ])
    doc = json.loads(m.read_text())
    doc["cases"][0].update(timeout_seconds=0, max_cost_usd=-1)
    m.write_text(json.dumps(doc))
    assert sorted(_problems(m)) == sorted([
        "cases[0].timeout_seconds: input should be greater than 0",
        "cases[0].max_cost_usd: input should be greater than 0",
        "variants[0].max_cost_usd[1]: input should be greater than 0",
        "variants[1].timeout_seconds[1]: input should be less than or equal to 86400",
        "variants[1].max_cost_usd: must be a number",
        "variants[2]: max_cost_usd: a sweep's values must increase strictly, e.g. [0.5, 1, 2]",
        "variants[3]: timeout_seconds, max_cost_usd: a sweep varies one budget; list only one of them",
        "variants[4]: timeout_seconds: a sweep lists 2 to 8 values, not 1",
    ])
    doc["cases"][0].update(timeout_seconds=86_401, max_cost_usd=0.5)
    doc["variants"] = [{"id": "a", "agent": noop}]
    m.write_text(json.dumps(doc))
    assert _problems(m) == ["cases[0].timeout_seconds: input should be less than or equal to 86400"]
    doc["cases"][0].update(timeout_seconds=86_400)
    doc["variants"] = [{"id": f"v{i}", "agent": noop, "max_cost_usd": [1, 2, 3, 4, 5]} for i in range(7)]
    m.write_text(json.dumps(doc))
    assert _problems(m) == ["(manifest): variants: the sweeps expand to 35 configurations; at most 32"]


def test_a_sweep_expands_into_configurations_that_differ_only_in_the_budget(kit, corpus_root):
    planner = {"id": "p", "agent": kit.agent("noop"), "model": "m1", "settings": {"effort": "high"},
               "max_cost_usd": [0.5, 1, 2, 4], "timeout_seconds": 30}
    m = _manifest(kit, corpus_root, [{"id": "base", "agent": kit.agent("noop")}, planner])
    report = validate_manifest(m)
    assert report.ok, report.problems
    manifest = report.manifest
    assert manifest is not None
    assert [v.id for v in manifest.variants] == ["base", "p-usd0.5", "p-usd1", "p-usd2", "p-usd4"]
    points = manifest.variants[1:]
    assert [(v.sweep, v.max_cost_usd, v.timeout_seconds) for v in points] == [
        ("p", 0.5, 30), ("p", 1, 30), ("p", 2, 30), ("p", 4, 30)]
    dumps = {v.model_dump_json(exclude={"id", "max_cost_usd"}) for v in points}
    assert len(dumps) == 1  # everything else shared
    ids = [config_id(v, {}) for v in manifest.variants]
    assert len(set(ids)) == 5
    # the base variant's id is what it was before budgets existed (unset fields leave it alone)
    assert ids[0] == config_id(Manifest.model_validate(json.loads(m.read_text())).variants[0], {})
    # an expanded manifest is a manifest: validating it again (a remote worker does) changes nothing
    again = Manifest.model_validate(manifest.model_dump(mode="json", exclude_unset=True))
    assert again == manifest and expand_sweeps(again) is again


def test_hand_written_sweep_points_must_differ_in_one_budget_only(kit, corpus_root):
    noop = kit.agent("noop")
    m = _manifest(kit, corpus_root, [
        {"id": "a1", "agent": noop, "sweep": "a", "max_cost_usd": 1},
        {"id": "a2", "agent": noop, "sweep": "a", "max_cost_usd": 2, "model": "other"},
        {"id": "b1", "agent": noop, "sweep": "b", "max_cost_usd": 1},
    ])
    assert _problems(m) == [
        "(manifest): variants of sweep a (a1, a2): the points of a sweep may differ only in their id and max_cost_usd"]
    doc = json.loads(m.read_text())
    del doc["variants"][1]["model"]
    m.write_text(json.dumps(doc))
    assert _problems(m) == ["(manifest): variants of sweep b (b1): a sweep needs at least two budget points"]
    doc["variants"][2]["sweep"] = "a"
    doc["variants"][2]["max_cost_usd"] = 4
    m.write_text(json.dumps(doc))
    assert _problems(m) == []


@pytest.mark.parametrize("budget, ids", [("max_cost_usd", ["fixer-usd0.25", "fixer-usd1"]),
                                         ("timeout_seconds", ["fixer-30s", "fixer-600s"])])
def test_a_sweep_follows_its_gateway_script(kit, corpus_root, budget, ids):
    values = [0.25, 1] if budget == "max_cost_usd" else [30, 600]
    (corpus_root / "script.yaml").parent.mkdir(parents=True, exist_ok=True)
    m = _manifest(kit, corpus_root, [{"id": "fixer", "agent": {**kit.agent("noop"), "gateway": True},
                                      budget: values}])
    doc = json.loads(m.read_text())
    doc["gateway"] = {"mode": "scripted", "scripts": {"fixer": "script.yaml"}}
    manifest = expand_sweeps(Manifest.model_validate(doc))
    assert [v.id for v in manifest.variants] == ids
    assert manifest.gateway is not None and manifest.gateway.scripts == dict.fromkeys(ids, "script.yaml")


# -- the simulated agent spends its budget (runner/agents/builtin.py) -----------------------
def test_more_rounds_find_the_correct_change_more_often_and_never_less_on_the_same_draw():
    import random

    from runner.agents import builtin

    p, n = 0.3, 4000
    for rounds in (1, 2, 4):
        rng = random.Random(rounds)
        hits = sum(builtin._choose(rng, p, rounds)[0] == "correct" for _ in range(n))
        expected = 1 - (1 - p) ** rounds  # independent: k Bernoulli(p) tries, one success enough
        assert abs(hits - n * expected) < 4 * (n * expected * (1 - expected)) ** 0.5
    for seed in range(200):  # one draw: more rounds never turn correct into wrong
        found = [builtin._choose(random.Random(seed), p, k)[0] == "correct" for k in range(1, 9)]
        assert found == sorted(found)


def test_a_spend_limit_buys_build_rounds(tmp_path):
    from runner.agents import builtin

    prompt = tmp_path / "prompt.md"
    prompt.write_text("")
    ctx = {"stage": "build", "model": "sim-beta-SIMULATED", "labels": {"difficulty": "medium"},
           "prompt_file": str(prompt), "price_per_mtok": 2.0, "stages": ["build", "qa", "review"]}
    assert builtin.affordable_rounds(ctx) == 1  # no limit: one round, as before budgets
    # by hand: a round's most tokens (base × 1.15 input, × 1.2 output) × price / 1e6
    build = (14_000 * 1.15 + 1_800 * 1.2) * 2 / 1e6
    later = (7_000 * 1.15 + 900 * 1.2 + 9_000 * 1.15 + 500 * 1.2) * 2 / 1e6
    assert builtin.stage_cost_bound(ctx, "build") == pytest.approx(build)
    rounds = [builtin.affordable_rounds({**ctx, "max_cost_usd": cap}) for cap in (0.01, 0.1, 0.2, 0.4, 5)]
    by_hand = [max(1, min(8, int((cap - later) // build))) for cap in (0.01, 0.1, 0.2, 0.4, 5)]
    assert rounds == by_hand == [1, 1, 4, 8, 8]  # at most MAX_ROUNDS
    spent = builtin.affordable_rounds({**ctx, "max_cost_usd": 0.4, "spent_usd": 0.2})
    assert spent == rounds[2]  # what earlier stages spent is no longer there to spend
    alone = builtin.affordable_rounds({**ctx, "max_cost_usd": 0.2, "stages": ["build"]})
    assert alone == int(0.2 // build) == 5 > rounds[2]  # no later stage to keep money for
