"""SWE-bench results: harness reports and SWE-bench/experiments submissions.

Four shapes (docs/formats.md, "SWE-bench"): per-instance ``report.json`` (has test layers, so a
patch that fixes the target but breaks PASS_TO_PASS is a ``regression``), the run
report with ``resolved_ids``/``unresolved_ids``/``error_ids`` (no layers), and an
experiments folder with ``metadata.yaml`` + ``results/results.json`` whose unresolved
instances are the submitted predictions minus the listed ones; and SWE-bench Pro's
``eval_results.json`` (``{instance_id: resolved}``, nothing else: model from the file
name, harness unknown). SWE-bench carries no
tokens or durations; cost only in ``per_instance_details.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contract.values import id_problem
from ingest.batch import SourceBatch
from ingest.cost import resolve_cost
from ingest.errors import IngestError
from ingest.formats import foreign_files, swebench_names
from ingest.formats._common import BatchBuilder, instance_ids, nonneg_int
from ingest.formats.detect import (
    is_swebench_eval_results,
    is_swebench_instance_report,
    is_swebench_results,
    is_swebench_run_report,
    is_swebench_submission,
    read_json,
    swebench_submissions,
)
from ingest.identity import path_key
from ingest.prices import PriceTable

FORMAT = "swebench"
PATH_ID_MAX = 255
"""Longest instance id used as a folder name (``logs/<id>/``): a file name's longest."""
_IID = re.compile(r"^(?P<owner>[^_]+(?:_[^_]+)*?)__(?P<repo>.+)-(?P<num>\d+)$")
# SWE-bench Pro: instance_<owner>__<repo>-<base commit>[-v<image hash>|-vnan]
_PRO_IID = re.compile(r"^instance_(?P<owner>[^_]+(?:_[^_]+)*?)__(?P<repo>.+?)-[0-9a-f]{40}(?:-v[0-9a-z]+)?$")
_EVAL_RESULTS_NAME = re.compile(r"^eval_results[_-]?(?P<model>.*)$")


def repository_of(instance_id: str) -> str | None:
    """``owner__repo-NNNN`` (SWE-bench) or ``instance_owner__repo-<sha>-v…`` (SWE-bench Pro)
    → ``owner/repo`` (None when the id has another shape)."""
    m = _PRO_IID.match(instance_id) or _IID.match(instance_id)
    return f"{m['owner']}/{m['repo']}" if m else None


def outcome_from_report(rep: dict) -> tuple[str, str | None, dict]:
    labels: dict[str, Any] = {}
    if rep.get("resolved") is True:
        return "accepted", None, labels
    if rep.get("patch_is_None") or rep.get("patch_exists") is False:
        labels["empty_patch"] = True
        return "target_failed", "empty patch", labels
    if rep.get("patch_successfully_applied") is False:
        labels["patch_apply_failed"] = True
        return "target_failed", "patch does not apply", labels
    ts = rep.get("tests_status") or {}
    f2p = ts.get("FAIL_TO_PASS") or {}
    p2p = ts.get("PASS_TO_PASS") or {}
    if rep.get("infra_failure"):
        labels["infra_suspect"] = rep.get("infra_failure_reason") or True
    if f2p.get("failure"):
        labels["fail_to_pass_failed"] = len(f2p["failure"])
        return "target_failed", None, labels
    if p2p.get("failure") and (f2p.get("success") or not f2p):
        labels["pass_to_pass_failed"] = len(p2p["failure"])
        return "regression", "PASS_TO_PASS broke", labels
    return "target_failed", None, labels


def _system_config(b: BatchBuilder, model_dir: str) -> tuple[str, str]:
    """The harness side only knows ``model_name_or_path`` (free text, often a system name)."""
    return b.config(None, model_dir.replace("__", "/"), None, None)


def _case(b: BatchBuilder, iid: str, benchmark: str | None) -> None:
    b.case(iid, repository=repository_of(iid), benchmark=benchmark)


# ------------------------------------------------------------------ harness logs


def _report_groups(root: Path) -> dict[tuple[str, str], list[Path]]:
    """(run_id, model_name_or_path) → report files, from logs/run_evaluation/<run>/<model>/<iid>/."""
    groups: dict[tuple[str, str], list[Path]] = {}
    for f in sorted(root.rglob("report.json")):
        parts = f.relative_to(root).parts
        if len(parts) >= 4:
            run_id, model = parts[-4], parts[-3]
        else:
            run_id, model = root.name, "unknown"
        groups.setdefault((run_id, model), []).append(f)
    return groups


def _load_harness(root: Path, run_reports: list[Path]) -> list[SourceBatch]:
    batches = []
    used: set[Path] = set()
    for (run_id, model), files in _report_groups(root).items():
        b = BatchBuilder(f"swebench-{run_id}-{model}-{path_key(root)}", FORMAT, [])
        run_json = b.optional_json(files[0].parents[2] / "run.json") if len(files[0].relative_to(root).parts) >= 4 else None
        dataset = (run_json or {}).get("dataset") if isinstance(run_json, dict) else None
        cid, _ = _system_config(b, model)
        seen: set[str] = set()
        for f in files:
            try:  # a report.json leading outside the folder is refused here, unread
                obj = foreign_files.load_json(f)
            except foreign_files.ForeignFileError as e:
                b.quarantine(f, None, str(e), foreign_files.excerpt(f))
                continue
            if not is_swebench_instance_report(obj):
                b.quarantine(f, None, f"{f}: not a SWE-bench per-instance report", None)
                continue
            b.batch.source_files.append(f)
            for iid, rep in obj.items():
                if iid in seen:
                    b.quarantine(f, None, f"{f}: duplicate instance {iid}", None)
                    continue
                seen.add(iid)
                outcome, reason, labels = outcome_from_report(rep)
                _trial(b, cid, run_id, model, iid, outcome, reason, labels, dataset)
        report = next((p for p in run_reports if p.name == f"{model}.{run_id}.json"), None)
        if report is not None:
            used.add(report)
            _from_run_report(b, cid, run_id, model, read_json(report) or {}, dataset, skip=seen)
            b.batch.source_files.append(report)
        b.run(root, details={"swebench_run_id": run_id, "model_name_or_path": model, "dataset": dataset})
        batches.append(b.finish())
    for report in run_reports:
        if report not in used:
            batches.append(_load_run_report(report))
    return batches


def _trial(b, cid, run_id, model, iid, outcome, reason, labels, benchmark, **extra) -> None:
    _case(b, iid, benchmark)
    labels = {**labels, "cost_unpriced": True} if extra.get("cost_usd") is None else labels
    b.trial(trial_id=f"{run_id}:{model}:{iid}", config_id=cid, case_id=iid, repetition=1,
            outcome=outcome, reason=reason, source_key=f"{run_id}:{model}:{iid}", labels=labels, **extra)


def _from_run_report(b, cid, run_id, model, rep: dict, dataset, skip: set[str]) -> None:
    suspects = set(rep.get("infra_failure_ids") or []) | set(rep.get("ambiguous_failure_ids") or [])
    reasons = rep.get("failure_reasons") or {}
    lists = [
        ("resolved_ids", "accepted", None, {}),
        ("empty_patch_ids", "target_failed", "empty patch", {"empty_patch": True}),
        ("error_ids", "infra_error", "evaluation error (no report)", {}),
        ("unresolved_ids", "target_failed", None, {}),
    ]
    for key, outcome, reason, labels in lists:
        for iid in rep.get(key) or []:
            if iid in skip:
                continue
            skip.add(iid)
            lab = dict(labels)
            if iid in suspects:
                lab["infra_suspect"] = reasons.get(iid) or True
            _trial(b, cid, run_id, model, iid, outcome, reason, lab, dataset)
    if rep.get("incomplete_ids"):
        b.note(f"{len(rep['incomplete_ids'])} instance(s) never evaluated (incomplete_ids); not trials")


def _load_run_report(path: Path) -> SourceBatch:
    rep = read_json(path)
    if not is_swebench_run_report(rep):
        raise IngestError(f"{path}: not a SWE-bench run report (needs resolved_ids, unresolved_ids, error_ids)")
    stem = path.stem
    model, _, run_id = stem.partition(".")
    run_id = run_id or stem
    b = BatchBuilder(f"swebench-{stem}-{path_key(path)}", FORMAT, [path])
    cid, _ = _system_config(b, model)
    _from_run_report(b, cid, run_id, model, rep, None, skip=set())
    b.note(f"{path.name}: run report only — regression cannot be told from target failure without report.json files")
    b.run(path, details={"swebench_run_id": run_id, "model_name_or_path": model,
                         "schema_version": rep.get("schema_version"), "total_instances": rep.get("total_instances")})
    return b.finish()


# ------------------------------------------------------------------ SWE-bench Pro eval_results.json


def _load_eval_results(path: Path, obj: dict[str, bool]) -> SourceBatch:
    """``{instance_id: resolved}``: true → accepted, false → target_failed. The file names
    neither model nor harness; ``eval_results_<model>.json`` gives the model (label
    ``model_source``), the harness stays unknown, and a note says both (an aliases file
    maps the file's model name to the canonical one)."""
    m = _EVAL_RESULTS_NAME.match(path.stem)
    model = (m["model"] if m else "") or None
    b = BatchBuilder(f"swebench-{path.stem}-{path_key(path)}", FORMAT, [path])
    cid, _ = b.config(model, None, None, None)
    pro = any(_PRO_IID.match(k) for k in obj)
    benchmark = "swe-bench-pro" if pro else "swe-bench"
    b.note(f"{path.name}: {{instance_id: resolved}} names no model or harness: "
           + (f"model {model!r} from the file name" if model else "model unknown")
           + ", harness unknown (name the canonical model in an aliases file); an unresolved "
             "instance may also be one with no patch (the file cannot tell them apart)")
    labels = {"model_source": "file name"} if model else {}
    for iid, resolved in obj.items():
        _case(b, iid, benchmark)
        _trial(b, cid, path.stem, "eval_results", iid, "accepted" if resolved else "target_failed",
               None, dict(labels), benchmark)
    b.run(path, details={"shape": "eval_results {instance_id: resolved}", "benchmark": benchmark,
                         "instances": len(obj), "resolved": sum(obj.values())})
    return b.finish()


# ------------------------------------------------------------------ experiments submission


PREDICTION_LINE_MAX = 64 * 1024 * 1024
"""Longest line of a predictions file read (a line holds one patch)."""


def _predicted_ids(folder: Path, b: BatchBuilder) -> list[str] | None:
    """The instance ids of the submission's predictions (None: no predictions file), read a
    line at a time; a line that is not a prediction, or too long to read, is quarantined."""
    for name in ("all_preds.jsonl", "preds.jsonl"):
        f = folder / name
        if foreign_files.present(f):
            ids = []
            for n, line, cut in foreign_files.text_lines(f, PREDICTION_LINE_MAX):
                if line is None:
                    b.quarantine(f, n, f"line {n}: longer than the {foreign_files.size_text(PREDICTION_LINE_MAX)} "
                                       "a prediction line may have; not read", cut)
                    continue
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):
                    obj = None
                if isinstance(obj, dict) and isinstance(obj.get("instance_id"), str) and obj["instance_id"]:
                    ids.append(obj["instance_id"])
                elif line.strip():  # not silently: an instance missing here is missing
                    b.quarantine(f, n, f"line {n}: not a prediction (a JSON object with an instance_id)", cut)
            return ids
    obj = b.optional_json(folder / "preds.json")
    if isinstance(obj, dict):
        return [str(k) for k in obj]
    if isinstance(obj, list):
        return [str(o["instance_id"]) for o in obj if isinstance(o, dict) and o.get("instance_id")]
    return None


METADATA_MAX = 16 * 1024 * 1024
"""Largest ``metadata.yaml`` read (a few hundred bytes in the experiments repository)."""


def _load_submission(folder: Path) -> SourceBatch:
    meta_file = folder / "metadata.yaml" if (folder / "metadata.yaml").is_file() else folder / "metadata.yml"
    meta = foreign_files.load_yaml(meta_file, METADATA_MAX) or {}
    if not isinstance(meta, dict):
        raise IngestError(f"{meta_file}: expected a mapping (info, tags, …), not {type(meta).__name__}")
    results = foreign_files.load_json(folder / "results" / "results.json")
    if not is_swebench_results(results):
        raise IngestError(f"{folder / 'results' / 'results.json'}: expected resolved/no_generation/no_logs lists")
    info: dict[str, Any] = meta["info"] if isinstance(meta.get("info"), dict) else {}
    tags: dict[str, Any] = meta["tags"] if isinstance(meta.get("tags"), dict) else {}
    names = submission_name(folder.name, meta)
    models = swebench_names.metadata_models(meta)
    model, harness = names.model, names.harness or folder.name
    name = str(info.get("name") or meta.get("name") or folder.name)
    attempts = (tags.get("system") or {}).get("attempts") if isinstance(tags.get("system"), dict) else None
    b = BatchBuilder(f"swebench-{folder.name}-{path_key(folder)}", FORMAT, [meta_file, folder / "results" / "results.json"])
    cid, _ = b.config(model, harness, names.harness_version or folder.name, None)
    if names.note:
        b.note(names.note)
    benchmark = f"swe-bench-{folder.parent.name}" if folder.parent.name in {"lite", "verified", "test", "multimodal", "bash-only"} else "swe-bench"
    base_labels: dict[str, Any] = {} if names.harness_version else {"harness_version_surrogate": "folder name"}
    if len(models) > 1:
        base_labels["multi_model"] = True
    if attempts is not None and str(attempts).strip() not in {"1", ""}:
        base_labels["best_of_n"] = str(attempts)
    details = b.optional_json(folder / "per_instance_details.json")
    details = details if isinstance(details, dict) else {}
    results_file = folder / "results" / "results.json"
    resolved, no_gen, no_logs = (set(instance_ids(results.get(k), k, b, results_file))
                                 for k in ("resolved", "no_generation", "no_logs"))
    predicted = _predicted_ids(folder, b)
    logs = (folder / "logs").is_dir()
    universe = list(dict.fromkeys([*(predicted or []), *sorted(resolved | no_gen | no_logs), *details]))
    if predicted is None and not details:
        b.note(f"{folder.name}: no predictions file; unresolved instances cannot be listed, so only "
               "resolved/no_generation/no_logs instances are trials (rates will be too high)")
    for iid in universe:
        labels = dict(base_labels)
        if iid in resolved:
            outcome, reason = "accepted", None
        elif iid in no_logs:
            outcome, reason = "infra_error", "no logs"
        elif iid in no_gen:
            outcome, reason = "target_failed", "empty patch"
            labels["empty_patch"] = True
        else:
            outcome, reason = "target_failed", None
        if (why := id_problem(iid, PATH_ID_MAX)) is not None:  # it names a folder under logs/
            b.quarantine(folder, None, f"instance id {iid!r:.300}: {why} (it names the folder logs/<id>); "
                                       "not a trial", None)
            continue
        report = b.optional_json(folder / "logs" / iid / "report.json") if logs else None
        if is_swebench_instance_report(report) and iid in report:  # test layers: regression is visible
            outcome, reason, extra = outcome_from_report(report[iid])
            labels.update(extra)
        d = details.get(iid) or {}
        if not isinstance(d, dict):
            b.quarantine(folder / "per_instance_details.json", None,
                         f"per_instance_details.json: {iid}: expected an object, not {type(d).__name__} "
                         "(its cost and API calls are unknown)", repr(d)[:2000])
            d = {}
        calls = nonneg_int(d.get("api_calls"))
        # No tokens to price; a cost 0 next to API calls means the submission did not price it.
        cost, source = resolve_cost(None, None, reported=d.get("cost"), activity=calls, zero_is_unpriced=True)
        _trial(b, cid, folder.name, "submission", iid, outcome, reason, labels, benchmark,
               cost_usd=cost, cost_source=source, steps=calls)
    b.run(folder, details={"name": name, "models": models, "tags": tags, "site": info.get("site"),
                           "names": names.as_dict()})
    return b.finish()


def submission_name(folder: str, meta: dict) -> swebench_names.SubmissionName:
    """Harness, version and model of a submission (``swebench_names.parse``), with the
    metadata's own model ids taken out of its display name first (``"AgentX + Model-A"``
    with ``tags.model: [model-a]`` names the harness AgentX, whatever the model looks like)."""
    info: dict[str, Any] = meta["info"] if isinstance(meta.get("info"), dict) else {}
    name = str(info.get("name") or meta.get("name") or "")
    stripped = name
    for m in swebench_names.metadata_models(meta):
        stripped = re.sub(re.escape(m), "", stripped, flags=re.IGNORECASE)
    # Parentheses emptied by taking a model id out go; the others stay balanced (stripping
    # a lone ")" off "Vorflux (Opus 4.6 Code + GPT-5.5 High Review)" hid its harness).
    stripped = re.sub(r"\(\s*\)", "", stripped)
    stripped = re.sub(r"[\s+,/-]+$", "", re.sub(r"^[\s+,/-]+", "", stripped)).strip()
    meta = {**meta, "info": {**info, "name": stripped or name}} if stripped != name else meta
    return swebench_names.parse(folder, meta)


def _load_submissions(path: Path, folders: list[Path]) -> list[SourceBatch]:
    """Every submission of a split or ``evaluation/`` folder; a sibling folder in another
    SWE-bench layout (harness logs, half a submission) is refused: ingest it on its own."""
    parents = sorted({f.parent for f in folders})
    for parent in parents:
        for d in sorted(p for p in parent.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if is_swebench_submission(d):
                continue
            if any((d / n).is_file() for n in ("metadata.yaml", "metadata.yml")) or (d / "results").is_dir():
                raise IngestError(f"{d}: half a submission (needs metadata.yaml and results/results.json) in "
                                  f"a folder of submissions ({parent}); complete it or move it out")
            if next(d.rglob("report.json"), None) is not None or any(
                    is_swebench_run_report(read_json(p)) for p in d.glob("*.json")):
                raise IngestError(f"{path}: mixes SWE-bench layouts: {d} holds harness logs, the "
                                  f"others are experiments submissions; ingest {d} on its own")
    return [_load_submission(f) for f in folders]


def load(path: Path, prices: PriceTable | None = None) -> list[SourceBatch]:  # noqa: ARG001 - no tokens to price
    path = Path(path)
    if path.is_dir():
        if is_swebench_submission(path):
            return [_load_submission(path)]
        if folders := swebench_submissions(path):
            return _load_submissions(path, folders)
        run_reports = [p for p in sorted(path.glob("*.json")) if is_swebench_run_report(read_json(p))]
        batches = _load_harness(path, run_reports)
        if not batches:
            raise IngestError(f"{path}: no SWE-bench report.json, run report or submission found")
        return batches
    obj = foreign_files.load_json(path)  # a file that may not be read says why, in one line
    if is_swebench_run_report(obj):
        return [_load_run_report(path)]
    if is_swebench_instance_report(obj):
        return _load_harness(path.parent, [])
    if is_swebench_results(obj) and path.parent.name == "results":
        foreign_files.widen(path.parent.parent)  # the submission folder the file belongs to
        return [_load_submission(path.parent.parent)]
    if is_swebench_eval_results(obj):
        return [_load_eval_results(path, obj)]
    raise IngestError(f"{path}: not a SWE-bench report.json, run report, results/results.json "
                      "or {instance_id: resolved} eval_results.json")
