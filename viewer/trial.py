"""Everything the trial page shows, gathered once: the warehouse's rows for the trial and its
evidence files, each within a bound (``Limits``), as one ``TrialView``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from viewer import diff as diffs
from viewer import evidence, queries, timeline
from viewer.evidence import Text, stage_tag

if TYPE_CHECKING:
    import duckdb

LAYERS = ("target", "regression", "repository")


@dataclass(frozen=True)
class Limits:
    """Bounds on what one page shows (the server's and the bundle's differ)."""

    patch_bytes: int = 2 * 1024 * 1024
    diff_lines: int = diffs.MAX_LINES
    checkpoint_bytes: int = 256 * 1024
    grader_bytes: int = 16 * 1024
    log_bytes: int = 16 * 1024
    steps: int = 2000
    calls: int = 1000


@dataclass
class TrialView:
    row: dict[str, Any]
    evidence_dir: Path | None
    attempts: list[dict[str, Any]]
    layers: list[tuple[str, list[dict[str, Any]]]]
    patch: Text
    diff: diffs.Diff | None
    flags: list[dict[str, Any]]
    checkpoints: list[dict[str, Any]]
    timeline: list[timeline.Group]
    judgments: list[dict[str, Any]]
    annotations: list[dict[str, Any]]
    reviews: list[dict[str, Any]]
    siblings: list[dict[str, Any]]
    steps_capped: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def load(con: duckdb.DuckDBPyConnection, run: str, trial_id: str, runs_roots: tuple[Path, ...],
         limits: Limits, scope: queries.RunScope | None = None) -> TrialView | None:
    """The trial's view, or None when the warehouse has no such trial (``scope``: the run's
    rows already copied, for the bundle)."""
    found = queries.rows(con, "trial", scope, run=run, trial=trial_id)
    if not found:
        return None
    row = found[0]
    ids = {"run": run, "trial": trial_id}
    base = evidence.locate(row.get("source_path"), trial_id, runs_roots)
    stages = queries.rows(con, "trial_stages", scope, **ids)
    criteria = queries.rows(con, "trial_criteria", scope, **ids, case=row["case_id"])
    steps = queries.rows(con, "trial_steps", scope, **ids, limit=limits.steps + 1)
    calls = queries.rows(con, "trial_calls", scope, **ids, limit=limits.calls)
    patch, diff, flags = _final_diff(con, base, ids, limits, scope)
    return TrialView(
        row=row, evidence_dir=base,
        attempts=_attempts(queries.rows(con, "trial_attempts", scope, **ids), stages, base, limits),
        layers=_layers(criteria, base, limits), patch=patch, diff=diff, flags=flags,
        checkpoints=_checkpoints(stages, base, limits),
        timeline=timeline.build(row, stages, steps[: limits.steps], calls, criteria),
        judgments=_judgments(con, run, trial_id, scope),
        annotations=queries.rows(con, "trial_annotations", scope, **ids),
        reviews=queries.rows(con, "trial_reviews", scope, **ids),
        siblings=queries.rows(con, "trial_siblings", scope, **ids, case=row["case_id"]),
        steps_capped=len(steps) > limits.steps)


def _final_diff(con: duckdb.DuckDBPyConnection, base: Path | None, ids: dict[str, str], limits: Limits,
                scope: queries.RunScope | None) -> tuple[Text, diffs.Diff | None, list[dict[str, Any]]]:
    flags = queries.rows(con, "trial_flags", scope, **ids)
    patch = evidence.read_prefix(base, "changes.patch", limits.patch_bytes)
    if patch.text is None:
        return patch, None, [{**f, "target": None} for f in flags]
    text = diffs.cut_at_file(patch.text) if patch.truncated else patch.text
    diff = diffs.parse(text, limits.diff_lines, prefix="d")
    return patch, diff, diffs.attach_flags(diff, flags)


def _attempts(attempts: list[dict], stages: list[dict], base: Path | None, limits: Limits) -> list[dict]:
    """Each attempt with its stages, and each stage's logs (bounded) and evidence names."""
    out = []
    numbers = sorted({a["attempt"] for a in attempts} | {s["attempt"] for s in stages})
    by_number = {a["attempt"]: a for a in attempts}
    for n in numbers:
        rows = []
        for st in (s for s in stages if s["attempt"] == n):
            tag = stage_tag(n, st["stage"])
            rows.append({**st, "tag": tag,
                         "stdout": evidence.read(base, f"logs/{tag}.stdout", limits.log_bytes),
                         "stderr": evidence.read(base, f"logs/{tag}.stderr", limits.log_bytes),
                         "prompt": evidence.read(base, f"prompts/{tag}.md", limits.log_bytes),
                         "verdict": evidence.read(base, f"verdicts/{tag}.json", limits.log_bytes)})
        out.append({"attempt": n, **by_number.get(n, {}), "stages": rows})
    return out


def _layers(criteria: list[dict], base: Path | None, limits: Limits) -> list[tuple[str, list[dict]]]:
    """Criteria grouped by layer, each with its gradings and each grading's output."""
    by_id: dict[str, dict[str, Any]] = {}
    for c in criteria:
        entry = by_id.setdefault(c["criterion_id"], {k: c[k] for k in ("criterion_id", "layer", "kind",
                                                                       "severity", "description")} | {"gradings": []})
        if c["attempt"] is not None:
            cid, a = c["criterion_id"], c["attempt"]
            entry["gradings"].append({**c, "out": evidence.read(base, f"grading/a{a}/{cid}.out", limits.grader_bytes),
                                      "err": evidence.read(base, f"grading/a{a}/{cid}.err", limits.grader_bytes)})
    order = {layer: i for i, layer in enumerate(LAYERS)}
    layers: dict[str, list[dict]] = {}
    for entry in by_id.values():
        layers.setdefault(entry["layer"] or "unknown", []).append(entry)
    return sorted(layers.items(), key=lambda kv: order.get(kv[0], len(order)))


def _checkpoints(stages: list[dict], base: Path | None, limits: Limits) -> list[dict]:
    out = []
    for i, st in enumerate(stages):
        tag = stage_tag(st["attempt"], st["stage"])
        text = evidence.read_prefix(base, f"checkpoints/{tag}.patch", limits.checkpoint_bytes)
        parsed = None
        if text.text is not None:
            body = diffs.cut_at_file(text.text) if text.truncated else text.text
            parsed = diffs.parse(body, limits.diff_lines // 4, prefix=f"c{i}")
        out.append({"tag": tag, "attempt": st["attempt"], "stage": st["stage"], "sha": st["checkpoint_sha"],
                    "text": text, "diff": parsed})
    return out


def _judgments(con: duckdb.DuckDBPyConnection, run: str, trial_id: str,
               scope: queries.RunScope | None) -> list[dict[str, Any]]:
    """The trial's judge judgments with their reasons, and each one's calibration status from
    ``analysis.judges.judgment_status`` (calibrated with kappa, stale or uncalibrated)."""
    import duckdb as _duckdb
    import polars as pl

    from analysis.judges import judgment_status

    found = queries.rows(con, "trial_judges", scope, run=run, trial=trial_id)
    if not found:
        return []
    cache = scope.cache if scope is not None else {}
    if "judgment_status" not in cache:
        try:
            cache["judgment_status"] = judgment_status(con, run)
        except _duckdb.CatalogException:
            cache["judgment_status"] = pl.DataFrame({"trial_id": []}, schema={"trial_id": pl.String})
    status = cache["judgment_status"].filter(pl.col("trial_id") == trial_id).to_dicts()
    by = {(s["criterion_id"], s["rubric_sha256"], s["verdict"]): s for s in status}
    keys = ("calibration", "kappa", "kappa_low", "kappa_high", "calibration_id")
    return [{**j, **{k: by.get((j["criterion_id"], j["rubric_sha256"], j["verdict"]), {}).get(k) for k in keys}}
            for j in found]
