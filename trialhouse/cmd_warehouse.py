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
@json_option("json")
def ingest(paths: tuple[Path, ...], warehouse: Path, format: str, prices: Path | None,  # noqa: A002
           allow_quarantine: bool, aliases: Path | None, labels: Path | None, json: bool) -> None:
    """Load runs (ours or other tools') into the warehouse; re-ingesting unchanged input changes nothing.

    PATHS are run directories, events.jsonl files or foreign results.

    Exits 2 after writing when any line was quarantined (unless --allow-quarantine),
    and 3 when another ingest holds the warehouse lock.

    Example: trialhouse ingest runs/2026-03-02-demo --warehouse demo/warehouse/trialhouse.duckdb
    """
    from ingest.api import IngestQuarantined, ingest_paths
    from trialhouse.render import print_ingest

    try:
        result = ingest_paths(list(paths), warehouse, format=format, prices=prices,
                              allow_quarantine=allow_quarantine, aliases=aliases, labels=labels)
    except IngestQuarantined as exc:
        print_ingest(exc.result, json)
        raise
    print_ingest(result, json)


@app.command()
@click.argument("query")
@warehouse_option
@json_option("json")
@option("--csv", is_flag=True, help="CSV on stdout.")
@raw_option
@option("--limit", type=int, default=100, help="Rows shown in the table view (JSON/CSV are complete).")
def sql(query: str, warehouse: Path, json: bool, csv: bool, limit: int) -> None:
    """Run SQL against the warehouse and print a table, JSON or CSV.

    QUERY is the SQL to run (read-only connection). In a terminal: a table (one block per
    row when the columns do not fit); piped: tab-separated values with a header row.

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
    try:
        rel = con.sql(query)
        if rel is None:  # e.g. only a comment
            raise CommandError("the statement returned no rows to show; give a SELECT query")
        df = rel.pl()
    except (duckdb.Error, UnicodeDecodeError) as exc:  # the latter: duckdb_message says why
        raise CommandError(f"SQL error: {duckdb_message(exc).splitlines()[0]}") from None
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
    from trialhouse.render import print_ingest

    try:
        result = import_annotations(csv, warehouse, kind=kind, annotator=annotator,
                                    allow_quarantine=allow_quarantine)
    except IngestQuarantined as exc:
        print_ingest(exc.result, json)
        raise
    print_ingest(result, json)


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
    from warehouse.runs import invalidate_run

    invalidate_run(warehouse, run_id, reason)
    click.echo(f"{run_id}: invalidated ({reason.strip()}); 'trialhouse runs restore {run_id}' undoes it")


@runs.command("restore")
@click.argument("run_id")
@warehouse_option
def runs_restore(run_id: str, warehouse: Path) -> None:
    """Undo 'runs invalidate': the run counts again.

    Example: trialhouse runs restore 20261130T095745Z-0c0365 -w demo/warehouse/trialhouse.duckdb
    """
    from warehouse.runs import restore_run

    restore_run(warehouse, run_id)
    click.echo(f"{run_id}: restored")


@runs.command("delete")
@click.argument("run_id")
@warehouse_option
def runs_delete(run_id: str, warehouse: Path) -> None:
    """Remove a run's rows from every table, all or none.

    Example: trialhouse runs delete 20261130T095745Z-0c0365 -w demo/warehouse/trialhouse.duckdb
    """
    from warehouse.runs import delete_run

    delete_run(warehouse, run_id)
    click.echo(f"{run_id}: deleted")
