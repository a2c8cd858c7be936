from __future__ import annotations

import json
import zipfile

import pytest

from ingest.errors import IngestError
from ingest.formats import detect_format, load
from ingest.formats.inspect_ai import outcome_for
from ingest.formats.inspect_log import read_eval_zip
from ingest.prices import PriceTable

from .conftest import FIXTURES, check_tables, labels

INSPECT = FIXTURES / "inspect"


def _by_key(batch):
    return {(r["case_id"], r["repetition"]): r for r in batch.rows["trials"]}


@pytest.mark.parametrize("name", ["mixed.eval", "mixed.json"])
def test_mixed_log_one_trial_per_sample_epoch(name):
    assert detect_format(INSPECT / name) == "inspect"
    [b] = load(INSPECT / name, "inspect")
    check_tables(b)
    t = _by_key(b)
    assert b.run_id.startswith("inspect-") and b.source_format == "inspect"
    assert len(t) == 8 and {k[1] for k in t} == {1, 2}
    assert {k[0] for k in t} == {"arith/add", "arith/mul", "arith/sub", "arith/4"}
    for rep in (1, 2):
        assert t[("arith/add", rep)]["outcome"] == "accepted"
        assert t[("arith/mul", rep)]["outcome"] == "accepted"
        assert t[("arith/sub", rep)]["outcome"] == "target_failed"
        crashed = t[("arith/4", rep)]
        assert crashed["outcome"] == "infra_error"
        assert "sandbox exploded" in labels(crashed)["error"]
        # the crashed sample made no model call: tokens unknown, not 0
        assert crashed["input_tokens"] is None and crashed["cost_usd"] is None
    add1 = t[("arith/add", 1)]
    # two mock generations: (1000 + 1010) uncached in, (200 + 201) out, 2 × 300 cache reads
    assert (add1["input_tokens"], add1["output_tokens"], add1["cache_read_tokens"]) == (2010, 401, 600)
    assert add1["cache_write_tokens"] is None
    assert add1["cost_usd"] is None and add1["cost_source"] is None  # mockllm reports no cost
    [cfg] = b.rows["configs"]
    assert (cfg["model"], cfg["harness"], cfg["harness_version"]) == ("mockllm/model", "arith-solver", "0.1.0")
    repos = {c["case_id"]: c["repository"] for c in b.rows["cases"]}
    assert repos["arith/add"] == "acme/math" and repos["arith/4"] == "acme/calc"
    assert all(r["duration_s"] is not None and r["started_at"].tzinfo is not None for r in t.values())
    run = b.rows["runs"][0]
    assert json.loads(run["details_json"])["run_model_usage"]["mockllm/model"]["input_tokens"] > 0
    assert run["run_cost_usd"] is None


def test_eval_and_json_agree():
    [a] = load(INSPECT / "mixed.eval", "inspect")
    [j] = load(INSPECT / "mixed.json", "inspect")
    cols = ("outcome", "input_tokens", "output_tokens", "cache_read_tokens")
    assert {k: tuple(r[c] for c in cols) for k, r in _by_key(a).items()} == {
        k: tuple(r[c] for c in cols) for k, r in _by_key(j).items()
    }


def test_token_limit_is_budget_exhausted():
    [b] = load(INSPECT / "limit.eval", "inspect")
    t = b.rows["trials"]
    assert len(t) == 4 and {r["outcome"] for r in t} == {"budget_exhausted"}
    assert {labels(r)["limit_hit"] for r in t} == {"token"}


def test_error_status_log_imports_existing_samples():
    header, samples, *_ = read_eval_zip(INSPECT / "error.eval")
    assert header["status"] == "error"
    [b] = load(INSPECT / "error.eval", "inspect")
    check_tables(b)
    t = _by_key(b)
    assert len(t) == len(samples) < 4  # samples that never ran are not trials
    assert t[("arith/add", 1)]["outcome"] == "accepted"
    assert t[("arith/mul", 1)]["outcome"] == "infra_error"
    assert any("status 'error'" in n for n in b.notes)
    assert json.loads(b.rows["runs"][0]["details_json"])["log_status"] == "error"


def test_priced_with_cache_rates(tmp_path):
    p = tmp_path / "prices.json"
    p.write_text(json.dumps({"mockllm/model": {"input_per_mtok": 1.0, "output_per_mtok": 10.0, "cached_input_per_mtok": 0.1}}))
    [b] = load(INSPECT / "mixed.eval", "inspect", PriceTable.load(p))
    add1 = _by_key(b)[("arith/add", 1)]
    assert add1["cost_source"] == "priced"
    assert add1["cost_usd"] == pytest.approx((2010 * 1.0 + 401 * 10.0 + 600 * 0.1) / 1e6)


def test_truncated_eval_is_a_clear_error(tmp_path):
    data = (INSPECT / "mixed.eval").read_bytes()
    bad = tmp_path / "cut.eval"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match="cut.eval"):
        load(bad, "inspect")
    garbage = tmp_path / "junk.eval"
    garbage.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    with pytest.raises(IngestError, match="junk.eval"):
        load(garbage, "inspect")


def _rebuild(out, drop=(), replace=None):
    """``mixed.eval`` rewritten deflated without the members in ``drop`` and with the raw
    bytes in ``replace`` (Python 3.11's zipfile cannot copy method-93 members)."""
    from ingest.formats.inspect_log import read_member

    replace = replace or {}
    src = zipfile.ZipFile(INSPECT / "mixed.eval")
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            if info.filename in drop:
                continue
            z.writestr(info.filename, replace.get(info.filename) or json.dumps(read_member(src, info.filename)))
    return out


def test_running_log_without_header_reads_journal(tmp_path):
    # A crashed log: no header/summaries, only the journal and samples.
    out = _rebuild(tmp_path / "running.eval", drop={"header.json", "summaries.json", "reductions.json"})
    assert detect_format(out) == "inspect"
    [b] = load(out, "inspect")
    assert len(b.rows["trials"]) == 8
    assert any("journal" in n for n in b.notes)


JOURNAL_SUMMARIES = {f"_journal/summaries/{k}.json" for k in range(1, 5)}


def test_crashed_log_with_a_damaged_sample_member_quarantines_that_member(tmp_path):
    # No summaries anywhere: the trials come from the sample members, read one by one.
    out = _rebuild(tmp_path / "crashed.eval", drop={"header.json", "summaries.json", "reductions.json",
                                                   *JOURNAL_SUMMARIES},
                   replace={"samples/mul_epoch_2.json": b'{"id": "mul", "epoch": 2, "scores": {'})
    [b] = load(out, "inspect")
    check_tables(b)
    t = _by_key(b)
    assert len(t) == 7 and ("arith/mul", 2) not in t and t[("arith/mul", 1)]["outcome"] == "accepted"
    [q] = b.quarantine
    assert q.reason.startswith("samples/mul_epoch_2.json: unreadable (") and q.source_file == str(out)


def test_unreadable_summaries_fall_back_to_the_journal_then_the_sample_members(tmp_path):
    [good] = load(INSPECT / "mixed.eval", "inspect")
    for name, bad, then in (
            ("summaries.json", {"summaries.json": b"[{not json"}, "read the journal instead"),
            ("journal", {"summaries.json": b'{"not": "a list"}', "_journal/summaries/2.json": b"\x00"},
             "read the sample members instead")):
        out = _rebuild(tmp_path / f"{name}.eval", replace=bad)
        [b] = load(out, "inspect")
        assert b.quarantine == [], name
        cols = ("outcome", "input_tokens", "output_tokens", "cache_read_tokens", "duration_s")
        assert {k: tuple(r[c] for c in cols) for k, r in _by_key(b).items()} == {
            k: tuple(r[c] for c in cols) for k, r in _by_key(good).items()}, name
        assert any(then in n for n in b.notes), name


def test_without_sample_members_what_the_journal_holds_imports_and_the_rest_is_quarantined(tmp_path):
    samples = {n for n in zipfile.ZipFile(INSPECT / "mixed.eval").namelist() if n.startswith("samples/")}
    out = _rebuild(tmp_path / "journal.eval", drop=samples,
                   replace={"summaries.json": b"[{cut", "_journal/summaries/2.json": b"{}"})
    [b] = load(out, "inspect")
    assert len(b.rows["trials"]) == 6  # 4 journal parts of 2 samples each, one of them unusable
    assert sorted(q.reason.split(":")[0] for q in b.quarantine) == ["_journal/summaries/2.json", "summaries.json"]


def test_a_bad_record_is_quarantined_under_its_member_name(tmp_path):
    from ingest.formats.inspect_log import read_member

    summaries = read_member(zipfile.ZipFile(INSPECT / "mixed.eval"), "summaries.json")
    summaries[3] = "not a sample"
    del summaries[5]["epoch"]
    out = _rebuild(tmp_path / "bad.eval", replace={"summaries.json": json.dumps(summaries).encode()})
    [b] = load(out, "inspect")
    assert len(b.rows["trials"]) == 6
    assert sorted(q.reason for q in b.quarantine) == [
        "summaries.json #3: a sample record must be an object", "summaries.json #5: missing id or epoch"]


def test_directory_of_logs():
    batches = load(INSPECT, "inspect")
    assert len(batches) == 4 and len({b.run_id for b in batches}) == 4


def _s(**kw):
    return {"id": "x", "epoch": 1, **kw}


@pytest.mark.parametrize(
    ("sample", "outcome", "label"),
    [
        (_s(scores={"s": {"value": "C"}}, invalidation={"reason": "leak"}), "invalid", "invalidation"),
        (_s(scores={"s": {"value": "P"}}), "target_failed", "partial"),
        (_s(scores={"s": {"value": 1.0}}), "accepted", None),
        (_s(scores={"s": {"value": True}}), "accepted", None),
        (_s(scores={"s": {"value": 0.5}}), "target_failed", "partial"),
        (_s(scores={"s": {"value": "C"}}, limit={"type": "time"}), "accepted", "limit_hit"),
        (_s(scores={"s": {"value": "I"}}, limit="message"), "budget_exhausted", "limit_hit"),
        (_s(scores={"s": {"value": "I"}}, limit="context"), "target_failed", "limit_hit"),
        (_s(scores={"s": {"value": "I"}}, limit="operator"), "infra_error", "limit_hit"),
        (_s(error={"message": "429 rate limit"}), "infra_error", "error"),
        (_s(error="boom", scores={"s": {"value": "C"}}), "accepted", "error"),
        (_s(), "infra_error", None),
    ],
)
def test_outcome_precedence(sample, outcome, label):
    got, _, lab = outcome_for({}, sample, "s")
    assert got == outcome
    if label:
        assert label in lab


def test_not_inspect_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"version": 2}')
    with pytest.raises(IngestError, match="not an Inspect log"):
        load(p, "inspect")


def test_json_log_with_nan_and_a_broken_sample(tmp_path):
    log = json.loads((INSPECT / "mixed.json").read_text())
    log["samples"][0].pop("epoch")
    log["samples"][1]["scores"]["includes"]["value"] = float("nan")
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(log))  # json.dumps writes bare NaN, as Inspect does
    assert "NaN" in p.read_text()
    [b] = load(p, "inspect")
    assert len(b.rows["trials"]) == 7
    [q] = b.quarantine
    assert "missing id or epoch" in q.reason and q.source_file == str(p)
    nan_trial = next(r for r in b.rows["trials"] if labels(r).get("unreadable_score"))
    assert nan_trial["outcome"] == "infra_error"
