"""Judge answers, calibration datasets and calibration statistics (hand-worked checks)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analysis.judges import calibration_stats
from runner.errors import RunnerError
from runner.judges.answer import parse_answer
from runner.judges.calibrate import load_dataset


def test_answer_shapes():
    ok = parse_answer('```json\n{"verdict": "fail", "reasons": ["dead code"]}\n```')
    assert (ok.verdict, ok.reasons, ok.error) == ("failed", ["dead code"], None)
    prose = parse_answer("Looks good to me, pass.")
    assert prose.verdict == "inconclusive" and "not JSON" in prose.error
    shape = parse_answer('{"verdict": "maybe", "reasons": ["x"]}')
    assert shape.verdict == "inconclusive" and "verdict" in shape.error
    edits = parse_answer('{"verdict": "pass", "reasons": ["fixed it"], "edited_files": ["shop/orders.py"]}')
    assert edits.verdict == "inconclusive" and "edited files" in edits.error
    assert parse_answer("").error == "the judge gave no answer"
    cat = parse_answer('{"verdict": "fail", "reasons": ["x"], "failure_category": "verification"}')
    assert (cat.verdict, cat.failure_category) == ("failed", "verification")
    assert "only with verdict fail" in parse_answer(
        '{"verdict": "pass", "reasons": ["x"], "failure_category": "verification"}').error
    assert parse_answer('{"verdict": "fail", "reasons": ["x"], "failure_category": "luck"}').verdict == "inconclusive"


def test_one_list_of_failure_categories():
    from contract.stage_events import FailureCategory
    from ingest.annotations import CATEGORIES

    assert CATEGORIES == FailureCategory.__args__ and len(CATEGORIES) == 7


def _dataset(tmp_path, examples):
    p = tmp_path / "d.json"
    p.write_text(json.dumps({"examples": examples}))
    return p


def test_dataset_bad_input_is_located(tmp_path):
    ev = {"diff": "+x\n"}
    with pytest.raises(RunnerError, match=r"examples\[1\]\.label: 'maybe' is not a known label"):
        load_dataset(_dataset(tmp_path, [{"id": "a", "label": "pass", "evidence": ev},
                                         {"id": "b", "label": "maybe", "evidence": {"diff": "+y\n"}}]))
    with pytest.raises(RunnerError, match=r"examples\[1\]\.id: duplicate example id 'a' \(also examples\[0\]\)"):
        load_dataset(_dataset(tmp_path, [{"id": "a", "label": "pass", "evidence": ev},
                                         {"id": "a", "label": "fail", "evidence": {"diff": "+y\n"}}]))
    with pytest.raises(RunnerError, match=r"examples\[1\]\.evidence: duplicate of examples\[0\]"):
        load_dataset(_dataset(tmp_path, [{"id": "a", "label": "pass", "evidence": ev},
                                         {"id": "b", "label": "fail", "evidence": ev}]))


def _fleiss_var(table: np.ndarray) -> tuple[float, float]:
    """Cohen's kappa and its large-sample variance (Fleiss, Cohen & Everitt 1969), by hand."""
    n = table.sum()
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    po, pe = np.trace(p), float(rows @ cols)
    k = (po - pe) / (1 - pe)
    a = sum(p[i, i] * (1 - (rows[i] + cols[i]) * (1 - k)) ** 2 for i in range(2))
    b = (1 - k) ** 2 * sum(p[i, j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j)
    c = (k - pe * (1 - k)) ** 2
    return k, (a + b - c) / (n * (1 - pe) ** 2)


def test_kappa_and_interval_hand_worked():
    # human pass: 5 pass, 1 fail, 1 abstain; human fail: 3 pass, 3 fail
    pairs = ([("p", "pass", "pass")] * 5 + [("p", "pass", "fail")] + [("p", "pass", "inconclusive")]
             + [("f", "fail", "pass")] * 3 + [("f", "fail", "fail")] * 3)
    pairs = [(f"{e}{i}", h, j) for i, (e, h, j) in enumerate(pairs)]
    st = calibration_stats(pairs)
    assert (st.examples, st.answered, st.abstained) == (13, 12, 1)
    assert st.agreement == pytest.approx(8 / 12)
    assert st.kappa == pytest.approx(1 / 3)  # po = 2/3, pe = 1/2
    k, var = _fleiss_var(np.array([[5, 1], [3, 3]], dtype=float))
    assert st.kappa == pytest.approx(k)
    half = 1.959963984540054 * math.sqrt(var)
    assert (st.kappa_low, st.kappa_high) == (pytest.approx(k - half, abs=1e-9), pytest.approx(k + half, abs=1e-9))
    assert st.per_label["pass"] == {"precision": pytest.approx(5 / 8), "recall": pytest.approx(5 / 6), "support": 6}
    assert st.confusion["pass"]["inconclusive"] == 1
    assert {d["example_id"] for d in st.disagreements} == {"p5", "p6", "f7", "f8", "f9"}


def test_the_interval_stays_within_the_possible_range():
    # human/judge: 5 agreeing passes, 1 pass judged fail: kappa 2/3, the asymptotic upper bound > 1
    st = calibration_stats([(f"p{i}", "pass", "pass") for i in range(4)] + [("x", "pass", "fail"),
                           ("f", "fail", "fail")])
    k, var = _fleiss_var(np.array([[4, 1], [0, 1]], dtype=float))
    assert st.kappa == pytest.approx(k) and k + 1.96 * math.sqrt(var) > 1
    assert st.kappa_high == 1.0 and st.kappa_low == pytest.approx(k - 1.959963984540054 * math.sqrt(var))


def test_a_rater_with_one_label_gets_no_kappa():
    st = calibration_stats([("a", "pass", "pass"), ("b", "fail", "pass")])  # a constant judge
    assert (st.kappa, st.kappa_low, st.kappa_high, st.agreement) == (None, None, None, 0.5)
    assert calibration_stats([("a", "pass", "pass"), ("b", "pass", "fail")]).kappa is None  # constant humans
