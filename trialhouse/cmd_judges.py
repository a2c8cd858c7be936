"""CLI commands for judges and human review (thin: parse options, call one library function, print)."""

from __future__ import annotations

import hashlib
import json as jsonlib
import uuid
from datetime import UTC, datetime
from pathlib import Path

import click

from trialhouse.app import CommandError, app, echo_json, json_option, option, warehouse_option


def _frame(df, as_json: bool, caption: str = "", several: bool = False) -> None:
    if as_json:
        echo_json(df.to_dicts())
        return
    from trialhouse.render import print_frame

    print_frame(df, 1000, caption, caption_piped=several)


@app.command("calibrate-judge")
@option("--manifest", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True,
        help="The manifest whose variant's judge is calibrated.")
@option("--rubric", required=True, help="Rubric path, relative to the manifest.")
@option("--dataset", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True,
        help="Labelled examples (docs/judges.md).")
@option("--variant", help="Variant whose evaluations.judge is used (default: the first).")
@warehouse_option
@json_option("json")
def calibrate_judge(manifest: Path, rubric: str, dataset: Path, variant: str | None, warehouse: Path,
                    json: bool) -> None:
    """Run a judge over human-labelled examples; store agreement, kappa [95% CI], confusion.

    Example: trialhouse calibrate-judge --manifest demo/corpus/manifest.json --rubric rubrics/fits-the-codebase.md --dataset demo/corpus/rubrics/fits-the-codebase.calibration.json --variant sim-alpha-planner -w demo/warehouse/trialhouse.duckdb
    """
    from analysis.judges import calibration_stats
    from ingest.judges import store_calibration
    from runner.errors import RunnerError
    from runner.judges.calibrate import load_dataset, run_calibration
    from runner.validate import load_valid_manifest

    try:
        m = load_valid_manifest(manifest)
        examples, dsha = load_dataset(dataset)
        judged, judge, rsha = run_calibration(m, manifest.resolve().parent, variant, rubric, examples)
    except RunnerError as exc:
        raise CommandError(str(exc)) from None
    if not warehouse.is_file():
        raise CommandError(f"{warehouse}: no warehouse here; ingest a run first")
    from trialhouse.paths import creatable

    creatable(warehouse, "--warehouse", "file")
    st = calibration_stats([(j.example.id, j.example.label, j.verdict) for j in judged])
    cid = hashlib.sha256(f"{rsha}{dsha}{jsonlib.dumps(judge, sort_keys=True)}{uuid.uuid4()}".encode()).hexdigest()[:12]
    summary = {"calibration_id": cid, "rubric": rubric, "rubric_sha256": rsha, "dataset_sha256": dsha,
               "variant": judge["variant"], "judge_host": judge["host"], "judge_provider": judge["provider"],
               "judge_model": judge["model"], "judge_effort": judge["reasoning_effort"], "examples": st.examples,
               "abstained": st.abstained, "agreement": st.agreement, "kappa": st.kappa, "kappa_low": st.kappa_low,
               "kappa_high": st.kappa_high, "abstention_rate": st.abstention_rate,
               "confusion_json": jsonlib.dumps(st.confusion), "per_label_json": jsonlib.dumps(st.per_label),
               "calibrated_at": datetime.now(UTC)}
    items = [{"calibration_id": cid, "example_id": j.example.id, "human_label": j.example.label,
              "judge_verdict": j.verdict, "judge_reasons": "; ".join(j.reasons) or None, "error": j.error,
              "rationale": j.example.rationale or None} for j in judged]
    store_calibration(warehouse, summary, items, [{"path": str(dataset), "sha256": dsha,
                                                   "bytes": dataset.stat().st_size}])
    if json:
        echo_json({**{k: v for k, v in summary.items() if k != "calibrated_at"}, "disagreements": st.disagreements})
        return
    fmt = (lambda x: "n/a" if x is None else f"{x:.2f}")  # noqa: E731
    click.echo(f"calibration {cid}: judge {judge['host']} {judge['model'] or ''} effort={judge['reasoning_effort']} "
               f"rubric {rubric} ({rsha[:12]})")
    click.echo(f"examples {st.examples}, answered {st.answered}, abstained {st.abstained} "
               f"(rate {fmt(st.abstention_rate)})")
    click.echo(f"raw agreement {fmt(st.agreement)}; Cohen's kappa {fmt(st.kappa)} "
               f"[95% CI {fmt(st.kappa_low)}, {fmt(st.kappa_high)}]")
    click.echo("confusion (human → judge): " + jsonlib.dumps(st.confusion))
    for label, v in st.per_label.items():
        click.echo(f"  {label}: precision {fmt(v['precision'])} recall {fmt(v['recall'])} support {v['support']}")
    for d in st.disagreements:
        click.echo(f"  disagrees: {d['example_id']}: human {d['human']}, judge {d['judge']}")


@app.group()
def review() -> None:
    """Human review as data: import decisions, then read agreement and minutes (summaries).

    Example: trialhouse review import demo/corpus/reviews/reviews.csv --rubric demo/corpus/reviews/grid.yaml -w demo/warehouse/trialhouse.duckdb
    """


@review.command("import")
@click.argument("file", type=click.Path(path_type=Path))
@warehouse_option
@option("--rubric", "rubric", type=click.Path(path_type=Path, exists=True, dir_okay=False),
        help="Versioned review rubric (YAML: id, version, reason_codes, items).")
@option("--allow-quarantine", is_flag=True, help="Exit 0 even when rows were quarantined.")
@json_option("json")
def review_import(file: Path, warehouse: Path, rubric: Path | None, allow_quarantine: bool, json: bool) -> None:
    """Import review decisions (CSV or JSONL) into the reviews table; bad rows are quarantined.

    Example: trialhouse review import demo/corpus/reviews/reviews.csv --rubric demo/corpus/reviews/grid.yaml -w demo/warehouse/trialhouse.duckdb
    """
    from ingest.api import IngestQuarantined
    from ingest.judges import import_reviews
    from trialhouse.paths import creatable
    from trialhouse.render import print_ingest

    if warehouse.is_file():  # a missing one is the importer's own message
        creatable(warehouse, "--warehouse", "file")
    try:
        result = import_reviews(file, warehouse, rubric=rubric, allow_quarantine=allow_quarantine)
    except IngestQuarantined as exc:
        print_ingest(exc.result, json, warehouse)
        raise
    print_ingest(result, json, warehouse)


@review.command("summary")
@warehouse_option
@option("--over", "period", type=click.Choice(["week", "month"]), help="Agreement per period of the trials' start.")
@json_option("json")
def review_summary(warehouse: Path, period: str | None, json: bool) -> None:
    """Grader–reviewer agreement and review minutes per configuration; categories by assigner.

    Example: trialhouse review summary -w demo/warehouse/trialhouse.duckdb
    """
    from analysis.review import agreement, categories_by_assigner, review_minutes
    from warehouse import db

    con = db.open(warehouse, read_only=True)
    try:
        frames = {"agreement": agreement(con, period), "minutes": review_minutes(con), "categories": categories_by_assigner(con)}
    finally:
        con.close()
    if json:
        echo_json({k: v.to_dicts() for k, v in frames.items()})
        return
    captions = {"agreement": "Grader–reviewer agreement per configuration",
                "minutes": "Review minutes per accepted result",
                "categories": "Failure categories by who assigned them (lost spend: their "
                              "trials' cost)"}
    for name, df in frames.items():
        _frame(df, False, captions[name], several=True)


@app.command("inspect-queue")
@warehouse_option
@option("--run", "run_id", help="Only this run.")
@option("--runs-root", help="Where the run directories are (for evidence paths).")
@json_option("json")
def inspect_queue_cmd(warehouse: Path, run_id: str | None, runs_root: str | None, json: bool) -> None:
    """What to inspect by hand: infra errors, suspiciously fast successes, cases every configuration
    fails, grader–reviewer disagreements, judge abstentions; each with its evidence path.

    Example: trialhouse inspect-queue -w demo/warehouse/trialhouse.duckdb --runs-root demo/runs/main
    """
    from analysis.review import inspect_queue
    from warehouse import db

    con = db.open(warehouse, read_only=True)
    try:
        df = inspect_queue(con, run_id, runs_root)
    finally:
        con.close()
    _frame(df, json, "What to inspect by hand")
