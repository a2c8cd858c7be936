"""What judges, reviewers and patch inspection say about trials: ``judgments``,
``judge_calibrations``, ``judge_calibration_items``, ``reviews``, ``flags`` (assembled in
``warehouse.schema``; docs/tables.md)."""

from __future__ import annotations

from warehouse.table_spec import Column, table_spec

SPECS = {
    "judgments": table_spec(
        "Supplementary model judgments and human/judge annotations (who said it is kept).",
        Column("trial_id", "string", False),
        Column("criterion_id", "string"),
        Column("kind", "string", False),  # judge | failure_category | review_decision
        Column("verdict", "string"),  # passed/failed/inconclusive, accept/reject, or a category
        Column("category", "string"),
        Column("note", "string"),
        Column("annotator", "string"),
        Column("ts", "timestamp"),
        Column("attempt", "int32"),  # judge: the attempt judged
        Column("judge_host", "string"),  # judge: claude-code | codex | command | builtin
        Column("judge_provider", "string"),
        Column("judge_effort", "string"),
        Column("rubric_sha256", "string"),  # judge: the rubric as snapshotted by the run
        Column("error", "string"),  # judge: why the answer was unusable (then inconclusive)
        Column("rubric", "string"),  # judge: the rubric path (relative to the manifest)
    ),
    "judge_calibrations": table_spec(
        "One row per `calibrate-judge` run: the judge (host, provider, model, effort) and rubric hash "
        "it holds for, and its agreement with human labels. A change of any of them makes it stale.",
        Column("calibration_id", "string", False),
        Column("rubric", "string", False),
        Column("rubric_sha256", "string", False),
        Column("dataset_sha256", "string", False),
        Column("variant", "string"),
        Column("judge_host", "string", False),
        Column("judge_provider", "string"),
        Column("judge_model", "string"),
        Column("judge_effort", "string"),
        Column("examples", "int64", False),
        Column("abstained", "int64", False),
        Column("agreement", "float64"),  # raw agreement over the examples the judge answered
        Column("kappa", "float64"),  # Cohen's kappa (statsmodels), answered examples
        Column("kappa_low", "float64"),  # 95% interval (asymptotic standard error)
        Column("kappa_high", "float64"),
        Column("abstention_rate", "float64"),
        Column("confusion_json", "string", False),  # {human: {judge: n}}, judge incl. inconclusive
        Column("per_label_json", "string", False),  # {label: {precision, recall, support}}
        Column("calibrated_at", "timestamp", False),
    ),
    "judge_calibration_items": table_spec(
        "The examples of a calibration: the human label and what the judge said (disagreements listed in reports).",
        Column("calibration_id", "string", False),
        Column("example_id", "string", False),
        Column("human_label", "string", False),
        Column("judge_verdict", "string", False),  # pass | fail | inconclusive
        Column("judge_reasons", "string"),
        Column("error", "string"),
        Column("rationale", "string"),  # the human's
    ),
    "reviews": table_spec(
        "Human review decisions (`trialhouse review import`): who, accept/reject, the reason code when the "
        "decision disagrees with the grader, minutes spent, the anchored grid and a failure category.",
        Column("trial_id", "string", False),
        Column("trial_run_id", "string", False),  # the run the reviewed trial belongs to
        Column("reviewer", "string", False),
        Column("decision", "string", False),  # accept | reject
        Column("grader_verdict", "string"),  # accept (outcome accepted) | reject, at import
        Column("reason_code", "string"),  # required when decision != grader_verdict
        Column("minutes", "float64"),
        Column("grid_json", "string"),  # {item: choice} from the review rubric
        Column("grid_rubric", "string"),  # review rubric id@version
        Column("failure_category", "string"),
        Column("note", "string"),
        Column("reviewed_at", "timestamp"),
        Column("source_line", "int64"),
    ),
    "flags": table_spec(
        "Patch inspection flags (for review, not failure).",
        Column("trial_id", "string", False),
        Column("kind", "string", False),
        Column("path", "string"),
        Column("detail", "string"),
    ),
}
