"""CLI commands for a guarded rollout (thin: parse options, call one library function, print):
``rules check`` / ``rules resume`` (stop rules) and ``gc`` (retention); docs/rollout.md."""

from __future__ import annotations

from pathlib import Path

import click

from trialhouse.app import app, echo_json, json_option, option, warehouse_option

rules_option = option("--rules", "rules_file", type=click.Path(path_type=Path), required=True,
                      help="Stop-rules file (YAML/JSON: rules with metric, threshold, window, scope, owner).")
at_option = option("--at", help="Evaluate as of this time (ISO, UTC; default now).")


@app.group()
def rules() -> None:
    """Stop rules: check them against the warehouse (exit 1 when one fired), resume one as its owner.

    Example: trialhouse rules check --rules rollout/rules.yaml -w demo/warehouse/trialhouse.duckdb
    """


@rules.command("check")
@rules_option
@warehouse_option
@at_option
@json_option("json")
def rules_check(rules_file: Path, warehouse: Path, at: str | None, json: bool) -> None:
    """Evaluate every stop rule; print which fired with the figures; exit 1 when one fired.

    A fired rule stays fired until one of its owners resumes it (rules resume); a resume
    covers the trials it was decided on, and a new run in the window fires the rule again.

    Example: trialhouse rules check --rules rollout/rules.yaml -w demo/warehouse/trialhouse.duckdb
    """
    from contextlib import closing

    from analysis.filters import parse_time
    from analysis.rules_check import check_rules
    from analysis.stop_rules import load_rules
    from trialhouse.rollout_views import rules_lines
    from warehouse import db

    declared = load_rules(rules_file)
    with closing(db.open(warehouse, read_only=True)) as con:
        result = check_rules(con, declared, parse_time(at, "at"))
    if json:
        echo_json(result.as_dict())
    else:
        for line in rules_lines(result):
            click.echo(line)
    if result.fired:
        raise click.exceptions.Exit(1)


@rules.command("resume")
@click.argument("rule")
@rules_option
@option("--by", "by", required=True, help="Who resumes: one of the rule's owners.")
@option("--reason", required=True, help="Why the rollout may go on (recorded).")
@warehouse_option
@at_option
def rules_resume(rule: str, rules_file: Path, by: str, reason: str, warehouse: Path, at: str | None) -> None:
    """Record that an owner resumed a fired stop rule (who, why, the evidence it fired on).

    Example: trialhouse rules resume planner-regression-free --rules rollout/rules.yaml --by "Maria Rossi" --reason "two flaky criteria; fixed in evaluator v3" -w demo/warehouse/trialhouse.duckdb
    """
    from contextlib import closing

    from analysis.filters import parse_time
    from analysis.rules_check import resume_decision
    from analysis.stop_rules import load_rules
    from ingest.decisions import record_rule_decision
    from warehouse import db

    declared = load_rules(rules_file)
    with closing(db.open(warehouse, read_only=True)) as con:
        decision = resume_decision(con, declared, rule, by, reason, parse_time(at, "at"))
    record_rule_decision(warehouse, decision, rules_file)
    click.echo(f"resumed {rule} by {decision['decided_by']}: {decision['reason']} "
               f"(evidence {decision['evidence_key'][:12]}, {decision['trials']} trials)")


@app.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@option("--policy", type=click.Path(path_type=Path), required=True,
        help="Retention policy (YAML/JSON): raw_output_days, workspace_days after a run finished.")
@option("--apply", is_flag=True, help="Remove (default: a dry run that lists what would go).")
@at_option
@json_option("json")
def gc(runs: tuple[Path, ...], policy: Path, apply: bool, at: str | None, json: bool) -> None:
    """Remove raw stage output and workspaces older than a retention policy (dry run by default).

    RUNS are run directories or directories holding runs. Events, seals, report.json, inputs
    (evaluator versions), patches, checkpoints, verdicts and prompts are kept, and the
    warehouse is not touched, so every analysis gives the same numbers after gc. What is
    removed is appended to each run's retention.jsonl.

    Example: trialhouse gc demo/runs --policy rollout/retention.yaml --apply
    """
    from analysis.filters import parse_time
    from runner.retention import collect
    from trialhouse.rollout_views import gc_lines

    result = collect(list(runs), policy, apply=apply, at=parse_time(at, "at"))
    if json:
        echo_json(result.as_dict())
        return
    for line in gc_lines(result):
        click.echo(line)


@app.command()
@warehouse_option
@option("--run", metavar="RUN_ID", multiple=True, help="Benchmark runs the cohorts stand beside (default: all).")
@json_option("json")
def cohorts(warehouse: Path, run: tuple[str, ...], json: bool) -> None:
    """Observational cohorts beside the benchmark, and randomised control groups with an interval.

    Cohorts (trialhouse ingest --cohort production|shadow FILE) never enter a comparison, a
    rate or a Pareto front: they are shown here, with the caveat, and in the report.

    Example: trialhouse cohorts -w demo/warehouse/trialhouse.duckdb
    """
    from contextlib import closing

    from analysis.cohorts import cohorts as cohort_figures
    from analysis.filters import Filters
    from trialhouse.render import print_view
    from trialhouse.rollout_views import cohort_view
    from warehouse import db

    with closing(db.open(warehouse, read_only=True)) as con:
        result = cohort_figures(con, Filters(runs=run))
    if json:
        echo_json(result.as_dict())
    else:
        print_view(cohort_view(result))
