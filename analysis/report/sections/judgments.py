"""Supplementary judgments (advisory, with calibration status) and human review as data."""

from __future__ import annotations

import polars as pl

from analysis import formatting as fmt
from analysis.document import Cell, Link, Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name


def _num(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _kappa(k: float | None, lo: float | None, hi: float | None) -> str:
    return "— (a rater used one label)" if k is None else f"{_num(k)} [{_num(lo)}, {_num(hi)}]"


def _names(d: ReportData) -> dict[str, str]:
    return {c["config_id"]: name(d, c) for c in d.configs}


def _trials(d: ReportData, config_id: str, ids: str | None) -> Cell:
    """Trial ids as links to their trials (the run is known when the id is unique among the
    configuration's selected trials); "—" when there is none."""
    if not ids:
        return fmt.DASH
    mine = d.trials.filter(pl.col("config_id") == config_id).select("trial_id", "run_id")
    runs: dict[str, list[str]] = {}
    for trial, run in mine.iter_rows():
        runs.setdefault(trial, []).append(run)
    return tuple(Link(t, None, (runs[t][0], t) if len(runs.get(t, [])) == 1 else None)
                 for t in ids.split(", "))


def section(d: ReportData) -> Section:
    s = Section("judgments", "Judgments and human review")
    r = d.review or {}
    names = _names(d)
    judged: pl.DataFrame = r.get("judgments", pl.DataFrame())
    s.paragraphs.append(
        "Model judgments are supplementary and advisory: they never change an outcome and are "
        "not part of any rate. A judge is calibrated for a rubric when calibrate-judge compared it "
        "with human labels for the same rubric hash, host, provider, model and effort; a calibration "
        "for another version of the rubric, model, provider or effort of the same judge host is stale. "
        "Kappa is not given when a rater used one label only (it is then 0 by construction and "
        "says nothing about agreement).")
    if judged.height:
        s.tables.append(Table(
            "Judgments (advisory) per configuration and criterion",
            columns(["configuration", "criterion", "judge", "judgments", "pass", "fail",
                     "abstained", "calibration", "kappa [95% CI]"],
                    [False, False, False, True, True, True, True, False, False], identifying=3),
            [[names.get(x["config_id"], x["config_id"] or "?"), x["criterion_id"] or "",
              f"{x['judge_host']} {x['judge_model'] or ''}".strip(), fmt.count(x["judgments"]),
              fmt.count(x["passed"]), fmt.count(x["failed"]), fmt.count(x["abstained"]),
              f"advisory, {x['calibration']}",
              _kappa(x["kappa"], x["kappa_low"], x["kappa_high"]) if x["calibration"] == "calibrated" else "—"]
             for x in judged.to_dicts()]))
    cal: pl.DataFrame = r.get("calibrations", pl.DataFrame())
    if cal.height:
        s.tables.append(Table(
            "Judge calibrations",
            columns(["rubric", "judge", "effort", "examples", "agreement", "kappa [95% CI]",
                     "abstention"], [False, False, False, True, True, False, True]),
            [[f"{x['rubric']} ({x['rubric_sha256'][:12]})", f"{x['judge_host']} {x['judge_model'] or ''}".strip(),
              x["judge_effort"] or "—", fmt.count(x["examples"]), _num(x["agreement"]),
              _kappa(x["kappa"], x["kappa_low"], x["kappa_high"]), _num(x["abstention_rate"])]
             for x in cal.to_dicts()]))
    agree: pl.DataFrame = r.get("agreement", pl.DataFrame())
    if agree.height:
        s.tables.append(Table(
            "Grader–reviewer agreement",
            columns(["configuration", "reviewed", "disagreements", "rate", "kappa [95% CI]",
                     "disagreeing trials"], [False, True, True, True, False, False]),
            [[names.get(x["config_id"], x["config_id"]), fmt.count(x["reviewed"]), fmt.count(x["disagreements"]),
              _num(x["disagreement_rate"]), _kappa(x["kappa"], x["kappa_low"], x["kappa_high"]),
              _trials(d, x["config_id"], x["disagreeing_trials"])] for x in agree.to_dicts()]))
    minutes: pl.DataFrame = r.get("minutes", pl.DataFrame())
    if minutes.height:
        s.tables.append(Table(
            "Review minutes per accepted result",
            columns(["configuration", "accepted by review", "median min", "p90 min",
                     "min per accepted", "median cost"], [False, True, True, True, True, True]),
            [[names.get(x["config_id"], x["config_id"]), fmt.count(x["accepted_by_review"]),
              _num(x["minutes_median"], 1), _num(x["minutes_p90"], 1), _num(x["minutes_per_accepted"], 1),
              fmt.usd(x["cost_median_usd"]) if x["cost_median_usd"] is not None else "unknown"]
             for x in minutes.to_dicts()]))
    if not s.tables:
        s.absent = "No judgment, calibration or review in the selected trials."
    return s
