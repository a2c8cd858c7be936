"""CLI commands for the warehouse area (thin: parse options, call one library function, print)."""

from __future__ import annotations

from pathlib import Path

import click

from trialhouse.app import (
    Choice,
    CommandError,
    app,
    echo_json,
    json_option,
    option,
    warehouse_option,
)
from trialhouse.csv_cells import raw_option

# Same values as ingest.api.FORMATS and ingest.annotations.KINDS (tests/test_cli_docs.py checks);
# spelled out here so that parsing the command line does not import the ingest package.
INGEST_FORMATS = ("auto", "trialhouse", "runs-jsonl", "inspect", "harbor", "terminal-bench", "swebench",
                  "mini-swe-agent")
ANNOTATION_KINDS = ("failure_category", "review_decision")
COHORTS = ("production", "shadow")  # ingest.cohorts.COHORTS


@app.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@warehouse_option
@option("--format", "-f", "format", type=Choice(INGEST_FORMATS), default="auto",
        help="Input format (auto: detect it per path).")
@option("--prices", type=click.Path(path_type=Path),
        help="Prices file (per model, per million tokens, dated).")
@option("--allow-quarantine", is_flag=True, help="Exit 0 even when lines were quarantined.")
@option("--aliases", type=click.Path(path_type=Path),
        help="Aliases file (YAML/JSON): model and harness spellings → canonical names.")
@option("--labels", type=click.Path(path_type=Path),
        help="Labels file (YAML/JSON/CSV): task or repository → labels such as familiarity.")
@option("--cohort", type=Choice(COHORTS),
        help="PATHS are observational cohort files (JSONL/CSV tickets; docs/rollout.md), never trials.")
@json_option("json")
def ingest(paths: tuple[Path, ...], warehouse: Path, format: str, prices: Path | None,  # noqa: A002
           allow_quarantine: bool, aliases: Path | None, labels: Path | None, cohort: str | None,
           json: bool) -> None:
    """Load runs (ours or other tools') into the warehouse; re-ingesting unchanged input changes nothing.

    PATHS are run directories, events.jsonl files or foreign results.

    Exits 2 after writing when any line was quarantined (unless --allow-quarantine),
    and 3 when another ingest holds the warehouse lock.

    With --cohort production|shadow, PATHS are tickets of agent work outside the benchmark
    (a production or shadow-mode cohort): kept apart from trials, shown beside them.

    Example: trialhouse ingest runs/2026-03-02-demo --warehouse demo/warehouse/trialhouse.duckdb
    """
    from ingest.api import IngestQuarantined, ingest_paths
    from trialhouse.paths import creatable
    from trialhouse.render import print_ingest

    if cohort and (format != "auto" or prices or aliases or labels):
        raise click.UsageError("--cohort takes cohort files only: drop --format, --prices, --aliases and --labels")
    creatable(warehouse, "--warehouse", "file")
    try:
        if cohort:
            from ingest.cohorts import import_cohorts

            result = import_cohorts(list(paths), warehouse, cohort, allow_quarantine=allow_quarantine)
        else:
            result = ingest_paths(list(paths), warehouse, format=format, prices=prices,
                                  allow_quarantine=allow_quarantine, aliases=aliases, labels=labels)
    except IngestQuarantined as exc:
        print_ingest(exc.result, json, warehouse)
        raise
    print_ingest(result, json, warehouse)


@app.command()
@click.argument("query")
@warehouse_option
@json_option("json")
@option("--csv", is_flag=True, help="CSV on stdout.")
@raw_option
@option("--limit", type=int, default=100, help="Rows shown in the table view (JSON/CSV are complete).")
def sql(query: str, warehouse: Path, json: bool, csv: bool, limit: int) -> None:
    """Run SQL against the warehouse and print a table, JSON or CSV.

    QUERY is the SQL to run (read-only connection; it sees the warehouse's tables and views,
    never a variable of this program). In a terminal: a table that fits the terminal (one
    block per row when the columns do not); piped: tab-separated values with a header row.

    Example: trialhouse sql --warehouse demo/warehouse/trialhouse.duckdb "SELECT outcome, count(*) FROM trials GROUP BY 1"
    """
    if json and csv:
        raise click.UsageError("choose one of --json and --csv")
    if not query.strip():
        raise click.UsageError('empty SQL query; give one, e.g. "SELECT * FROM trials LIMIT 5"')
    import duckdb

    import warehouse as wh
    from warehouse.errors import duckdb_message

    con = wh.open(warehouse, read_only=True)
    # A name the warehouse lacks must be an error, not a Python variable of this process that
    # DuckDB's replacement scan finds (`select * from annotations` read a local once).
    con.execute("SET python_enable_replacements = false")
    try:
        rel = con.sql(query)
        if rel is None:  # e.g. only a comment
            raise CommandError("the statement returned no rows to show; give a SELECT query")
        df = rel.pl()
    except (duckdb.Error, UnicodeDecodeError) as exc:  # the latter: duckdb_message says why
        first = duckdb_message(exc).splitlines()[0]
        hint = ("; the warehouse's tables and views: trialhouse tables -w "
                f"{warehouse}" if first.startswith("Catalog Error") else "")
        raise CommandError(f"SQL error: {first}{hint}") from None
    finally:
        con.close()
    if json:
        echo_json(df.to_dicts())
    elif csv:
        from trialhouse.csv_cells import neutral_frame, raw_requested

        click.echo((df if raw_requested() else neutral_frame(df)).write_csv(), nl=False)
    else:
        from trialhouse.render import print_frame

        print_frame(df, limit)


@app.command()
@warehouse_option
@option("--markdown", is_flag=True, help="Print the table reference (docs/tables.md).")
@json_option("json")
def tables(warehouse: Path, markdown: bool, json: bool) -> None:
    """List warehouse tables and views with row counts, or print the table reference.

    Example: trialhouse tables --warehouse demo/warehouse/trialhouse.duckdb
    """
    if markdown:
        from warehouse.tables_doc import render

        click.echo(render(), nl=False)
        return
    import warehouse as wh
    from warehouse.frames import table_counts

    con = wh.open(warehouse, read_only=True)
    try:
        df = table_counts(con)
    finally:
        con.close()
    if json:
        echo_json(df.to_dicts())
    else:
        from trialhouse.render import print_frame

        print_frame(df, 1000)


@app.command()
@option("--csv", type=click.Path(path_type=Path), required=True,
        help="CSV: trial_id, category|decision, note, annotator [, run_id].")
@warehouse_option
@option("--kind", type=Choice(ANNOTATION_KINDS), default="failure_category",
        help="What the CSV holds.")
@option("--annotator", help="Default annotator for rows without one.")
@option("--allow-quarantine", is_flag=True, help="Exit 0 even when rows were quarantined.")
@json_option("json")
def annotate(csv: Path, warehouse: Path, kind: str, annotator: str | None, allow_quarantine: bool,
             json: bool) -> None:
    """Import human or judge annotations (failure categories or review decisions) into judgments.

    Example: trialhouse annotate --warehouse demo/warehouse/trialhouse.duckdb --csv review.csv --annotator alice
    """
    from ingest.annotations import import_annotations
    from ingest.api import IngestQuarantined
    from trialhouse.paths import creatable
    from trialhouse.render import print_ingest

    if warehouse.is_file():  # a missing one is the importer's own message
        creatable(warehouse, "--warehouse", "file")
    try:
        result = import_annotations(csv, warehouse, kind=kind, annotator=annotator,
                                    allow_quarantine=allow_quarantine)
    except IngestQuarantined as exc:
        print_ingest(exc.result, json, warehouse)
        raise
    print_ingest(result, json, warehouse)


@app.group(invoke_without_command=True)
@warehouse_option
@json_option("json")
@click.pass_context
def runs(ctx: click.Context, warehouse: Path, json: bool) -> None:
    """List the runs in the warehouse; invalidate or delete one (see the subcommands).

    Lists every run with its source, status, trials, last ingest batch, isolation, hash-chain
    integrity, evaluator changes (cases whose fingerprint differs from the same manifest's
    first run here) and, for an invalidated run, the reason.

    Example: trialhouse runs --warehouse demo/warehouse/trialhouse.duckdb
    """
    if ctx.invoked_subcommand is not None:
        return
    from dataclasses import asdict

    from warehouse.runs import list_runs

    records = list_runs(warehouse)
    if json:
        echo_json([asdict(r) for r in records])
        return
    from analysis.document import Table, columns
    from trialhouse.render import View, print_view

    rows = [[r.run_id, r.source_format, r.manifest_id or "-", r.status or "-",
             f"{r.finished:,}/{r.trials:,}", r.batch or "-", r.isolation or "-", r.executor or "-",
             r.integrity or "-",
             str(r.evaluator_changes) if r.evaluator_changes else "-",
             f"INVALIDATED: {r.invalidated}" if r.invalidated else "-"] for r in records]
    invalid = sum(1 for r in records if r.invalidated)
    print_view(View(
        tables=[Table("runs", columns(["run_id", "source", "manifest", "status",
                                       "trials (finished/all)", "last batch", "isolation",
                                       "executor", "integrity", "evaluator changes",
                                       "invalidated"],
                                      [False, False, False, False, True, False, False, False,
                                       False, True, False]), rows)],
        after=[f"{len(records)} run(s); {invalid} invalidated (left out of every analysis)"]))


@runs.command("invalidate")
@click.argument("run_id")
@option("--reason", required=True, help="Why the run must not count (shown wherever it is listed).")
@warehouse_option
def runs_invalidate(run_id: str, reason: str, warehouse: Path) -> None:
    """Keep a run but leave it out of every analysis, report and query by default.

    Example: trialhouse runs invalidate 20261130T095745Z-0c0365 --reason "grader bug fixed in abc123" -w demo/warehouse/trialhouse.duckdb
    """
    from trialhouse.paths import creatable
    from warehouse.runs import invalidate_run

    if warehouse.is_file():
        creatable(warehouse, "--warehouse", "file")

    invalidate_run(warehouse, run_id, reason)
    click.echo(f"{run_id}: invalidated ({reason.strip()}); 'trialhouse runs restore {run_id}' undoes it")


@runs.command("restore")
@click.argument("run_id")
@warehouse_option
def runs_restore(run_id: str, warehouse: Path) -> None:
    """Undo 'runs invalidate': the run counts again.

    Example: trialhouse runs restore 20261130T095745Z-0c0365 -w demo/warehouse/trialhouse.duckdb
    """
    from trialhouse.paths import creatable
    from warehouse.runs import restore_run

    if warehouse.is_file():
        creatable(warehouse, "--warehouse", "file")

    restore_run(warehouse, run_id)
    click.echo(f"{run_id}: restored")


@runs.command("delete")
@click.argument("run_id")
@warehouse_option
@option("--yes", "-y", is_flag=True,
        help="Delete without asking (needed when stdin is not a terminal).")
def runs_delete(run_id: str, warehouse: Path, yes: bool) -> None:
    """Remove a run's rows from every table, all or none (asks first; 'runs invalidate'
    keeps a run but leaves it out of every analysis).

    Example: trialhouse runs delete 20261130T095745Z-0c0365 -w demo/warehouse/trialhouse.duckdb --yes
    """
    import sys

    from trialhouse.paths import creatable
    from warehouse.runs import delete_run, list_runs

    if warehouse.is_file():
        creatable(warehouse, "--warehouse", "file")
    found = {r.run_id: r for r in list_runs(warehouse)} if not yes else {}
    if run_id in found:  # an unknown run is delete_run's own message
        r = found[run_id]
        what = (f"run {run_id} ({r.trials:,} trials, {r.source_format}) and its rows in every "
                "table, with no undo")
        if not sys.stdin.isatty():
            raise CommandError(f"runs delete would remove {what}; pass --yes to confirm (stdin "
                               "is not a terminal, so nothing can ask)")
        if not click.confirm(f"Delete {what}?", default=False):
            raise CommandError(f"{run_id}: not deleted (not confirmed)", exit_code=1)
    delete_run(warehouse, run_id)
    click.echo(f"{run_id}: deleted")
