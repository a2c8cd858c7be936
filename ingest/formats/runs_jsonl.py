"""runs-jsonl: one JSON line per (configuration, task, trial), plus a prices file.

Each line is ``{model, harness, harness_version, task_id, trial, status, input_tokens,
output_tokens, steps}`` with optional ``cost_usd``, ``repo``, ``benchmark``,
``system_id``, ``wall_seconds``, ``failure_mode``, ``started_at``. ``null`` means
unknown. Bad lines (invalid JSON, wrong types, negative tokens, NaN cost, unknown
status, duplicates) are quarantined with their line number; the rest loads.

Why columnar: these files run to millions of lines, and a Python object per line made
ingest 60× slower than DuckDB reading the same file. So the file is split into lines by
Arrow (``runs_jsonl_lines``), and DuckDB parses and types every line in one vectorised query. A line it can
prove valid under the rules of ``RunLine`` (types exact, no unknown or repeated keys, no
escapes that decode to control characters or lone surrogates, an ISO timestamp with an
offset) never becomes a Python object; every other line — the bad ones and the unusual
ones — takes the row path (``runs_jsonl_row``: ``json.loads`` + ``RunLine``), which either quarantines it
with the reason or hands it back as a valid row. The fast test is conservative: it only
decides which path a line takes, never whether it is valid, so both paths give the same
rows (docs/formats.md, "runs-jsonl at engine speed"). Duplicates, configurations (one
id per distinct configuration), cost and labels are then computed as columns over the
union, all in one DuckDB connection, and trials, attempts and cases go to the writer as
Arrow tables, with the sha256 of the very bytes that were read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ingest.batch import QuarantineRow
from ingest.errors import IngestError
from ingest.formats import foreign_files, runs_jsonl_lines
from ingest.formats._common import BatchBuilder, labels_json
from ingest.formats.runs_jsonl_lines import LongLine, line_blocks, long_lines, read_lines
from ingest.formats.runs_jsonl_row import FORMAT, RAW_MAX, RECORD, redact, row_record
from ingest.formats.runs_jsonl_sql import LOOKUP, MAP_CONFIGS, PRICED, TRIALS_SQL, fast_sql
from ingest.identity import path_key
from ingest.prices import PriceTable
from ingest.rows import checked_table
from warehouse.schema import TABLES

STATUS_TO_OUTCOME = {"solved": "accepted", "failed": "target_failed", "infra_error": "infra_error"}


def _price_table(prices: PriceTable | None) -> pa.Table:
    """Price entries as intervals: ``(model, n, eff_from, next_from, is_last, ip, op)``."""
    rows: list[dict[str, Any]] = []
    for model, entries in (prices.entries if prices else {}).items():
        for i, e in enumerate(entries):
            rows.append({"model": model, "n": len(entries), "eff_from": e.effective_from,
                         "next_from": entries[i + 1].effective_from if i + 1 < len(entries) else None,
                         "is_last": i + 1 == len(entries), "ip": e.input_per_mtok, "op": e.output_per_mtok})
    schema = pa.schema([("model", pa.string()), ("n", pa.int64()), ("eff_from", pa.date32()),
                        ("next_from", pa.date32()), ("is_last", pa.bool_()), ("ip", pa.float64()),
                        ("op", pa.float64())])
    return pa.Table.from_pylist(rows, schema=schema)


_CONFIG_KEY = ["model", "harness", "harness_version", "sys"]

def _conform(name: str, table: pa.Table) -> pa.Table:
    """``table`` with exactly the columns of warehouse table ``name`` (absent ones null)."""
    schema = TABLES[name]
    cols = [table.column(f.name).cast(f.type) if f.name in table.column_names
            else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


CONFIGS_MAX = 10_000
"""Most distinct configurations one file may name: a configuration is a system compared with
the others, so more is a field that changes on every line (a run id in the model name), and
each costs a Python row."""


def load(path: Path, prices: PriceTable | None = None, *, row_path_only: bool = False) -> list:
    """Import one runs-jsonl file as one batch, a block of lines at a time (``line_blocks``).
    ``row_path_only`` sends every line through the row path (the reference the columnar path
    is tested against)."""
    path = Path(path)
    if not path.is_file():
        raise IngestError(f"{path}: runs-jsonl input must be a file")
    b = BatchBuilder(f"runs-jsonl-{path_key(path)}", FORMAT, [path])
    hasher, n_lines, size = hashlib.sha256(), 0, 0
    parts: list[pa.Table] = []
    # hashed on another core while the lines are typed (hashlib lets go of the GIL), in order
    hashing = ThreadPoolExecutor(1)

    def feed(chunk: bytes) -> None:
        nonlocal size
        size += len(chunk)
        hashing.submit(hasher.update, chunk)

    try:
        with foreign_files.open_regular(path) as f:
            for first, data, long in line_blocks(f, feed):
                n_lines += len(long) + (_block(data, first, b, path, prices, row_path_only, parts) if data else 0)
                _quarantine_long(b, path, long)
    finally:
        hashing.shutdown(wait=True)
    if n_lines == 0:
        raise IngestError(f"{path}: runs-jsonl file is empty")
    trials = pa.concat_tables(parts)
    del parts
    source = {"path": str(path), "sha256": hasher.hexdigest(), "bytes": size}
    b.batch.quarantine.sort(key=lambda q: q.line if q.line is not None else 0)
    _cases_and_configs(b, trials, path)
    _finish(b, trials, path, prices, n_lines, source)
    return [b.finish()]


def _block(data: bytes, first: int, b: BatchBuilder, path: Path, prices: PriceTable | None,
           row_path_only: bool, parts: list[pa.Table]) -> int:
    """One block of whole lines typed into trials, appended to ``parts`` (the blocks before it,
    whose trial ids a line here may repeat); returns its number of non-blank lines."""
    import duckdb

    lines, long = long_lines(read_lines(data, first))
    _quarantine_long(b, path, long)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        n_lines = _valid_lines(con, lines, b, path, row_path_only) + len(long)
        # the value rules first, then duplicates among the lines that pass them (the row
        # path's order: a bad line repeated is two bad lines, not a bad line and a duplicate)
        trials, rejected = _checked_trials(_trials(con, b, prices, path), lines, path)
        b.batch.quarantine.extend(rejected)
        parts.append(_drop_duplicates(con, trials, lines, b, path, parts))
    finally:
        con.close()
    return n_lines


def _quarantine_long(b: BatchBuilder, path: Path, long: list[LongLine]) -> None:
    for n, size, text in long:
        b.quarantine(path, n, f"line {n}: {size:,} bytes, longer than the {foreign_files.size_text(runs_jsonl_lines.LINE_MAX)} "
                              "a runs-jsonl line may have; not parsed", text.strip()[:RAW_MAX])


def _finish(b: BatchBuilder, trials: pa.Table, path: Path, prices: PriceTable | None, n_lines: int,
            source: dict[str, Any]) -> None:
    """The batch's trials, attempts and run (the bytes read were hashed: the writer need not
    read them again), and a note on the trials without a cost."""
    b.batch.tables["trials"] = _conform("trials", trials)
    b.batch.tables["attempts"] = _conform("attempts", pa.table({
        "trial_id": trials.column("trial_id"), "attempt": pa.repeat(pa.scalar(1, pa.int32()), trials.num_rows),
        "outcome": trials.column("outcome"), "started_at": trials.column("started_at")}))
    starts = pc.drop_null(trials.column("started_at"))
    b.run(
        path,
        started_at=pc.min(starts).as_py() if len(starts) else None,
        finished_at=pc.max(starts).as_py() if len(starts) else None,
        prices_as_of=prices.as_of if prices else None,
        details={"lines": n_lines, "prices_file": prices.source if prices else None,
                 "source_files": [{"path": source["path"], "sha256": source["sha256"]}]},
    )
    b.batch.source_meta = [source]
    unpriced = trials.column("cost_usd").null_count
    if unpriced:
        b.note(
            f"{path.name}: {unpriced} trial(s) without a cost (no reported cost_usd and no price/tokens)"
            + ("" if prices else "; pass a prices file to price tokens")
        )


def _checked_trials(trials: pa.Table, lines: pa.Table, path: Path) -> tuple[pa.Table, list]:
    """``checked_table`` on the trials, each rejected row quarantined as its line, with the
    line's number and text (as the row path quarantines it)."""
    import numpy as np

    kept, rejected = checked_table("trials", trials, str(path))
    if not rejected:
        return kept, []
    gone = np.setdiff1d(trials.column("lineno").to_numpy(), kept.column("lineno").to_numpy())
    return kept, [QuarantineRow(str(path), int(n), f"line {n}: {q.reason}", text)
                  for n, q, text in zip(gone.tolist(), rejected, _raw_lines(lines, gone), strict=True)]


def _raw_lines(lines: pa.Table, linenos) -> list[str]:
    """The quarantined text of these lines (``lines`` is in line order)."""
    import numpy as np

    rows = np.searchsorted(lines.column("lineno").to_numpy(), linenos)
    return [t.strip()[:RAW_MAX] for t in lines.take(pa.array(rows)).column("text").to_pylist()]


def _typed(con, sql_for: Callable[[bool], str]) -> pa.Table:
    """Run a typing query to Arrow, first without the per-line JSON check (every line of most
    files is JSON), then with it when DuckDB refuses a line. (To Arrow, not to a DuckDB
    table: DuckDB fills a table in insertion order on about one core, and its Arrow result
    on all of them: 8 s against 3 s of wall at 2M lines.)"""
    import duckdb

    try:
        return con.sql(sql_for(False)).to_arrow_table()
    # DuckDB's refusal quotes the line's first bytes cut at a byte count; cut inside a
    # character, its message is not UTF-8 and the binding raises UnicodeDecodeError
    # instead (duckdb-python#93): a refusal all the same
    except (duckdb.InvalidInputException, UnicodeDecodeError):
        return con.sql(sql_for(True)).to_arrow_table()


def _valid_lines(con, lines: pa.Table, b: BatchBuilder, path: Path, row_path_only: bool) -> int:
    """Create the view ``valid`` (one ``RECORD`` per valid line): the lines ``fast_sql``
    proves valid, then the row path's records of every other line. Returns the number of
    non-blank lines."""
    import numpy as np

    con.register("lines", lines)
    typed = _typed(con, fast_sql)
    proven = typed.column("fast")  # never null
    if row_path_only:
        fast = typed.slice(0, 0)
    elif typed.num_rows == lines.num_rows and pc.all(proven).as_py() is not False:
        fast = typed  # every line (the usual case): a filter would copy them all, on one core
    else:
        fast = typed.filter(proven)
    con.register("fast", fast)
    # every line not proven valid takes the row path, in line order (blank lines are skipped;
    # lines not even tried are not in ``typed``)
    unproven = np.ones(lines.num_rows, dtype=bool)
    unproven[np.searchsorted(lines.column("lineno").to_numpy(), fast.column("lineno").to_numpy())] = False
    others = lines.take(pa.array(np.flatnonzero(unproven)))
    slow = zip(others.column("lineno").to_pylist(), others.column("text").to_pylist(), strict=True)
    records, blank = [], 0
    for lineno, raw in slow:
        if not (text := raw.strip()):
            blank += 1
        elif (rec := row_record(lineno, text, b, path)) is not None:
            records.append(rec)
    n_lines = lines.num_rows - blank
    con.register("slow", pa.Table.from_pylist(records, schema=RECORD))
    cols = ", ".join(RECORD.names)
    union = f"SELECT {cols} FROM fast UNION ALL SELECT {cols} FROM slow"  # noqa: S608 - constant names
    con.execute(f"CREATE TEMP VIEW typed AS {union}")
    _redacted(con)
    return n_lines


_DUP_KEY = ["lineno", "trial_id", "model", "harness", "harness_version", "case_id", "repetition"]


def _drop_duplicates(con, trials: pa.Table, lines: pa.Table, b: BatchBuilder, path: Path,
                     before: list[pa.Table]) -> pa.Table:
    """``trials`` without the lines repeating an earlier line's (configuration, task, trial) —
    in this block or ``before`` it — each quarantined. Ids are grouped by their hash first (one
    integer per line), and only lines whose hash repeats are compared by value."""
    import numpy as np

    con.register("checked", trials.select(_DUP_KEY))
    earlier = "SELECT * FROM checked WHERE false"
    if before:
        con.register("before", pa.concat_tables(t.select(_DUP_KEY) for t in before))
        earlier = "SELECT * FROM before WHERE hash(trial_id) IN (SELECT hash(trial_id) FROM checked)"
    dups = con.execute(f"""
        WITH lines AS (SELECT * FROM checked UNION ALL {earlier})
        SELECT list(lineno ORDER BY lineno), any_value(model), any_value(harness),
               any_value(harness_version), any_value(case_id), any_value(repetition)
        FROM lines WHERE hash(trial_id) IN (SELECT hash(trial_id) FROM lines GROUP BY ALL HAVING count(*) > 1)
        GROUP BY trial_id HAVING count(*) > 1""").fetchall()  # noqa: S608 - constant text
    if not dups:
        return trials
    dup_lines = np.array(sorted(n for d in dups for n in d[0][1:]), dtype=np.int64)
    raw = dict(zip(dup_lines.tolist(), _raw_lines(lines, dup_lines), strict=True))
    for nos, model, harness, hv, task, trial in dups:
        for n in nos[1:]:
            b.quarantine(path, n, f"line {n}: duplicate (configuration, task, trial) of line {nos[0]}: "
                                  f"{model} / {harness}@{hv} / {task} / trial {trial}", raw[n])
    return trials.filter(pa.array(~np.isin(trials.column("lineno").to_numpy(), dup_lines)))


_FREE_TEXT = ("repo", "benchmark", "system_id", "failure_mode")


def _redacted(con) -> None:
    """The view ``valid``: ``typed`` with the free text the row path would redact in its
    labels and reasons redacted, once per distinct value (the labels are built from these
    values, so none is redacted twice)."""
    changed = []
    for col in _FREE_TEXT:
        distinct = con.execute(f"SELECT DISTINCT {col} FROM typed WHERE {col} IS NOT NULL").fetchall()  # noqa: S608
        changed += [(col, v, c) for (v,) in distinct if (c := redact(v)) != v]
    if not changed:
        con.execute("CREATE TEMP VIEW valid AS SELECT * FROM typed")
        return
    con.register("redactions", pa.table({k: pa.array(v, pa.string()) for k, v in
                                         zip(("col", "old", "new"), zip(*changed, strict=True), strict=True)}))
    joins = " ".join(f"LEFT JOIN redactions r_{c} ON r_{c}.col = '{c}' AND r_{c}.old = t.{c}" for c in _FREE_TEXT)
    cols = ", ".join(f"coalesce(r_{c}.new, t.{c}) AS {c}" if c in _FREE_TEXT else f"t.{c}" for c in RECORD.names)
    con.execute(f"CREATE TEMP VIEW valid AS SELECT {cols} FROM typed t {joins}")  # noqa: S608 - constant names


def _trials(con, b: BatchBuilder, prices: PriceTable | None, path: Path) -> pa.Table:
    """The trials of the valid lines: one config id per distinct configuration, cost, labels."""
    _check_configs(con, path)
    configs = con.execute("""
        SELECT model, harness, harness_version, NULLIF(system_id, '') AS sys, min(lineno) AS first,
               hash(model, harness, harness_version, NULLIF(system_id, '')) AS h
        FROM valid GROUP BY ALL ORDER BY first""").fetchall()
    rows = []
    for model, harness, hv, sys, first, h in configs:
        cid, variant = b.config(model, harness, hv, {"system_id": sys} if sys else None)
        if len(b.rows["configs"]) > CONFIGS_MAX:
            raise _too_many_configs(path, first)
        rows.append({"model": model, "harness": harness, "harness_version": hv, "sys": sys,
                     "config_id": cid, "variant": variant, "h": h})
    con.register("config_rows", pa.Table.from_pylist(rows, schema=pa.schema(
        [*((c, pa.string()) for c in (*_CONFIG_KEY, "config_id", "variant")), ("h", pa.uint64())])))
    con.register("price_rows", _price_table(prices))
    # tables, not Arrow views: DuckDB knows how small they are and builds its hash tables on them
    con.execute("CREATE TEMP TABLE configs AS SELECT * FROM config_rows")
    con.execute("CREATE TEMP TABLE prices AS SELECT * FROM price_rows")
    by_map = (len(rows) <= MAP_CONFIGS and len({r["h"] for r in rows}) == len(rows)  # no two keys share a hash
              and all(len(e) == 1 for e in (prices.entries.values() if prices else ())))
    if by_map:
        for name, key, value in (("cid_map", "h", "config_id"), ("variant_map", "h", "variant"),
                                 ("ip_map", "model", "ip"), ("op_map", "model", "op")):
            table = "configs" if key == "h" else "prices"
            con.execute(f"SET VARIABLE {name} = (SELECT MAP(list({key}), list({value})) FROM {table})")  # noqa: S608
    sql = TRIALS_SQL.replace("{lookup}", LOOKUP["map" if by_map else "join"]).replace("{priced}", PRICED)
    return _in_line_order(con.sql(sql, params={"format": FORMAT}).to_arrow_table())


def _check_configs(con, path: Path) -> None:
    """Refuse a block of lines naming more than ``CONFIGS_MAX`` configurations, counted before
    any is made a row (``_trials`` counts them across blocks)."""
    over = con.execute("""
        SELECT first FROM (SELECT min(lineno) AS first FROM valid
                           GROUP BY model, harness, harness_version, NULLIF(system_id, ''))
        ORDER BY first LIMIT 1 OFFSET ?""", [CONFIGS_MAX]).fetchone()
    if over is not None:
        raise _too_many_configs(path, over[0])


def _too_many_configs(path: Path, line: int) -> IngestError:
    return IngestError(
        f"{path}: more than {CONFIGS_MAX:,} distinct configurations (model, harness, harness_version, "
        f"system_id) by line {line:,}; a configuration is a system compared with the others, so this "
        "many is most likely a field that changes on every line (a run id or a date in the model "
        "name): fix that field in the export")


def _in_line_order(trials: pa.Table) -> pa.Table:
    """``trials`` sorted by line, which they almost always are already (the row path's lines
    come after the others, and joins do not keep the order): a sort of every trial costs
    as much as the rest of the query, so it is done only when needed."""
    import numpy as np

    lineno = trials.column("lineno").to_numpy()
    if bool(np.all(lineno[1:] > lineno[:-1])):
        return trials
    return trials.take(pc.sort_indices(trials.column("lineno")))


def _cases_and_configs(b: BatchBuilder, trials: pa.Table, path: Path) -> None:
    """The cases table (in order of first appearance, with the first repository and
    benchmark given, labelled as ``BatchBuilder.case`` labels them) built as columns;
    configurations whose every trial was rejected are dropped again."""
    import duckdb

    con = duckdb.connect()
    try:
        con.register("t", trials)
        cases = con.sql("""
            SELECT case_id, arg_min(repo, lineno) FILTER (WHERE repo IS NOT NULL) AS repository,
                   arg_min(benchmark, lineno) FILTER (WHERE benchmark IS NOT NULL) AS benchmark
            FROM t GROUP BY case_id ORDER BY min(lineno)""").to_arrow_table()
        used = {c for (c,) in con.execute("SELECT DISTINCT config_id FROM t").fetchall()}
    finally:
        con.close()
    pairs = zip(cases.column("repository").to_pylist(), cases.column("benchmark").to_pylist(), strict=True)
    labels: dict[tuple, str | None] = {}
    column = [labels.get(p) or labels.setdefault(p, labels_json({"repository": p[0], "benchmark": p[1]}))
              for p in pairs]
    cases = cases.append_column("labels_json", pa.array(column, pa.string()))
    cases = cases.append_column("holdout", pa.repeat(pa.scalar(False), cases.num_rows))
    cases, rejected = checked_table("cases", cases, str(path))
    b.batch.quarantine.extend(rejected)
    b.batch.tables["cases"] = _conform("cases", cases)
    b.rows["configs"] = [c for c in b.rows["configs"] if c["config_id"] in used]
    for i, c in enumerate(b.rows["configs"]):
        c["variant_order"] = i
