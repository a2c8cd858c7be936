"""Selective abstention (``analysis.abstention``) on a synthetic warehouse, its figures
checked against an independent count (polars over the trial rows)."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.abstention import abstentions
from analysis.eligibility import assess
from analysis.filters import Filters
from analysis.scope import resolve
from tests.support.synthetic_warehouse import Spec, generate
from warehouse import db


def _open(tmp_path_factory, **spec):
    path = tmp_path_factory.mktemp("abstention") / "t.duckdb"
    generate(path, Spec(models=2, harnesses=2, tasks=40, reps=3, repositories=8, invalid_rate=0.0, **spec))
    return db.open(path, read_only=True)


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    con = _open(tmp_path_factory)
    yield con
    con.close()


@pytest.fixture(scope="module")
def abstaining(tmp_path_factory):
    con = _open(tmp_path_factory, abstain=0.5)
    yield con
    con.close()


def independent(con) -> dict[str, tuple[int, int, int, int, int, int, int, int]]:
    """The same figures from the raw rows: per configuration over tasks shared with another
    (trials, infra, others' trials, others' infra, infra on tasks the others fail, its
    trials there, solved, valid)."""
    df = con.sql("SELECT case_id, config_id, outcome FROM trials WHERE complete").pl()
    df = df.with_columns(infra=pl.col("outcome") == "infra_error", solved=pl.col("outcome") == "accepted",
                         valid=~pl.col("outcome").is_in(["infra_error", "invalid"]))
    out = {}
    for cid in df["config_id"].unique().sort():
        mine, rest = df.filter(pl.col("config_id") == cid), df.filter(pl.col("config_id") != cid)
        per = rest.group_by("case_id").agg(pl.col("solved").sum(), pl.col("valid").sum())
        failed = set(per.filter((pl.col("valid") > 0) & (2 * pl.col("solved") < pl.col("valid")))["case_id"])
        there = mine.filter(pl.col("case_id").is_in(list(failed)))
        out[cid] = (mine.height, int(mine["infra"].sum()), rest.height, int(rest["infra"].sum()),
                    int(there["infra"].sum()), there.height, int(mine["solved"].sum()), int(mine["valid"].sum()))
    return out


def figures(con) -> dict[str, tuple[int, ...]]:
    return {cid: (a.trials, a.infra, a.others_trials, a.others_infra, a.infra_on_failed, a.trials_on_failed,
                  a.solved, a.valid)
            for cid, a in abstentions(con, resolve(con, Filters())).items()}


def test_the_figures_equal_an_independent_count(abstaining):
    assert figures(abstaining) == independent(abstaining)


def test_only_the_abstainer_is_flagged_and_ineligible(abstaining, honest):
    found = abstentions(abstaining, resolve(abstaining, Filters()))
    flagged = [cid for cid, a in found.items() if a.selective]
    assert len(flagged) == 1
    a = found[flagged[0]]
    assert a.share > 2 * a.others_share and a.rate_counted < a.rate - 0.05
    roles = assess(abstaining)
    assert [cid for cid, e in roles.items() if any("selective abstention" in r for r in e.reasons)] == flagged
    assert not any(a.selective for a in abstentions(honest, resolve(honest, Filters())).values())
