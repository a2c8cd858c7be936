"""Apply an aliases file and a labels file (``ingest.aliases``) to imported batches.

Why here, after the importers and before the writer: every foreign format names models
and harnesses its own way, so canonical names are one step for all of them rather than a
rule in each importer. A configuration whose model or harness an aliases file renames
gets the configuration id of its canonical names (``ingest.identity.config_id_for``), so
two spellings of one model — in one source or in several — are one configuration in the
warehouse; two trials that become the same (configuration, task, repetition) keep the
first and quarantine the other with the reason. The raw names and the file are recorded
in the run's ``details_json``. Labels go onto the cases (familiarity into its column,
repository and benchmark where the source gave none, the rest into ``labels_json``).

Both files are checked against all the batches of one ``ingest`` before anything is
written: a file that matches nothing is an error, an entry that matches nothing a note.
Our own runs are not relabelled (their manifest names their configurations and cases).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ingest.aliases import AliasMap, LabelSet
from ingest.batch import QuarantineRow, SourceBatch
from ingest.identity import config_id_for, variant_label


def apply(batches: list[SourceBatch], aliases: AliasMap | None, labels: LabelSet | None) -> None:
    """Rename and label ``batches`` in place (raises ``AliasesError`` before any change when
    a file matches nothing in them)."""
    for b in batches:  # cases built as columns (runs-jsonl) are labelled as rows: a few per task
        if "cases" in b.tables:
            b.rows["cases"] = b.tables.pop("cases").to_pylist()
    configs = [c for b in batches for c in b.rows.get("configs", [])]
    notes: list[str] = []
    if aliases is not None:
        notes += aliases.check_against([c.get("model") for c in configs],
                                       [c.get("harness") for c in configs])
    resolved: dict[str, dict[str, str]] = {}
    if labels is not None:
        pairs = [(c["case_id"], c.get("repository")) for b in batches for c in b.rows.get("cases", [])]
        resolved, unused = labels.resolve(pairs)
        notes += unused
    for i, b in enumerate(batches):
        record: dict[str, Any] = {}
        if aliases is not None:
            applied = _rename(b, aliases)
            record["aliases"] = {"file": str(aliases.path), "applied": applied}
        if labels is not None:
            record["labels"] = {"file": str(labels.path),
                                "cases_labelled": _label_cases(b, resolved)}
        # The files shape what is written, so they are sources of the batch: their sha256
        # joins the "unchanged since the last ingest" check (adding, editing or dropping
        # an aliases or labels file rewrites the run instead of silently keeping old names).
        for f in (aliases.path if aliases is not None else None, labels.path if labels is not None else None):
            if f is not None and f not in b.source_files:
                b.source_files.append(f)
        for run in b.rows.get("runs", []):
            details = json.loads(run.get("details_json") or "{}")
            run["details_json"] = json.dumps({**details, **record}, sort_keys=True, default=str)
        if i == 0:
            b.notes.extend(notes)


def _rename(b: SourceBatch, aliases: AliasMap) -> dict[str, dict[str, Any]]:
    applied: dict[str, dict[str, Any]] = {"models": {}, "harnesses": {}}
    remap: dict[str, dict[str, Any]] = {}
    kept: dict[str, dict] = {}
    for c in b.rows.get("configs", []):
        model = aliases.canonical("models", c.get("model"))
        harness = aliases.canonical("harnesses", c.get("harness"))
        if model != c.get("model"):
            applied["models"][c["model"]] = model
        if harness != c.get("harness"):
            applied["harnesses"][c["harness"]] = harness
        settings = json.loads(c.get("settings_json") or "{}") or None
        cid = config_id_for(model, harness, c.get("harness_version"), settings)
        variant = variant_label(model, harness, c.get("harness_version"))
        if settings and settings.get("system_id"):
            variant = f"{settings['system_id']} ({variant})"
        remap[c["config_id"]] = {"config_id": cid, "variant": variant, "model": model, "harness": harness}
        if cid not in kept:
            kept[cid] = {**c, **remap[c["config_id"]]}
    if all(old == new["config_id"] and not applied["models"] and not applied["harnesses"]
           for old, new in remap.items()):
        return applied
    b.rows["configs"] = list(kept.values())
    for i, c in enumerate(b.rows["configs"]):
        c["variant_order"] = i
    if "trials" in b.tables:
        b.tables["trials"] = _remap_table(b.tables["trials"], remap)
    else:
        for t in b.rows.get("trials", []):
            t.update({k: v for k, v in remap.get(t["config_id"], {}).items()})
    _drop_merged_duplicates(b)
    return applied


def _remap_table(table: pa.Table, remap: dict[str, dict[str, Any]]) -> pa.Table:
    old = pa.array(list(remap), pa.string())
    pos = pc.index_in(table.column("config_id"), value_set=old)
    for col in ("config_id", "variant", "model", "harness"):
        values = pa.array([m[col] for m in remap.values()], table.schema.field(col).type)
        i = table.schema.get_field_index(col)
        table = table.set_column(i, table.schema.field(col), values.take(pos))
    return table


def _drop_merged_duplicates(b: SourceBatch) -> None:
    """Two spellings merged into one configuration: a second trial of the same task and
    repetition is a duplicate (the first, in source order, is kept)."""
    if "trials" in b.tables:
        t = b.tables["trials"]
        keys = list(zip(*(t.column(c).to_pylist() for c in ("config_id", "case_id", "repetition")),
                        strict=True))
        ids = t.column("trial_id").to_pylist()
    else:
        trials = b.rows.get("trials", [])
        keys = [(r["config_id"], r["case_id"], r["repetition"]) for r in trials]
        ids = [r["trial_id"] for r in trials]
    first: dict[tuple, str] = {}
    dropped: set[str] = set()
    source = str(b.source_files[0]) if b.source_files else b.source_format
    for key, tid in zip(keys, ids, strict=True):
        if key in first:
            dropped.add(tid)
            b.quarantine.append(QuarantineRow(
                source, None, f"trial {tid}: after aliases it is the same configuration, task "
                f"and repetition as trial {first[key]} (two spellings of one configuration); "
                "the first is kept", None))
        else:
            first[key] = tid
    if not dropped:
        return
    for name in list(b.tables):
        if "trial_id" in b.tables[name].column_names:
            keep = pc.invert(pc.is_in(b.tables[name].column("trial_id"),
                                      value_set=pa.array(sorted(dropped), pa.string())))
            b.tables[name] = b.tables[name].filter(keep)
    for name, rows in b.rows.items():
        if name not in b.tables and rows and "trial_id" in rows[0] and name != "runs":
            b.rows[name] = [r for r in rows if r.get("trial_id") not in dropped]


_CASE_COLUMNS = ("familiarity", "repository", "benchmark")


def _label_cases(b: SourceBatch, resolved: dict[str, dict[str, str]]) -> int:
    n = 0
    for case in b.rows.get("cases", []):
        labels = resolved.get(case["case_id"])
        if not labels:
            continue
        n += 1
        if "familiarity" in labels:
            case["familiarity"] = labels["familiarity"]
        for col in ("repository", "benchmark"):
            if labels.get(col) and not case.get(col):
                case[col] = labels[col]
        merged = {**json.loads(case.get("labels_json") or "{}"),
                  **{k: v for k, v in labels.items()}}
        case["labels_json"] = json.dumps(merged, sort_keys=True)
    return n

