"""Which foreign format is this path? Sniff content, not names (docs/formats.md, "Detection
(``--format auto``)").

Harbor and Terminal-Bench both write ``result(s).json`` and SWE-bench and others
write ``preds.json``, so every decision looks at the keys inside. Our own run
directories (``events.jsonl``) are the ingest command's business: this returns None.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, TypeGuard

from ingest.formats import foreign_files

_SNIFF_BYTES = 64 * 1024


def read_json(path: Path) -> Any | None:
    """Parse a JSON file, or None when it may not be read (outside the folder, not a regular
    file, over ``foreign_files.DOCUMENT_MAX``) or is not JSON."""
    return foreign_files.read_json(path)


def _head(path: Path, n: int = _SNIFF_BYTES) -> bytes:
    return foreign_files.head(path, n)


def is_inspect_eval_zip(path: Path) -> bool:
    if _head(path, 4) != b"PK\x03\x04":
        return False
    try:
        with foreign_files.open_regular(path) as f, zipfile.ZipFile(f) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError, foreign_files.ForeignFileError):
        # A truncated .eval still starts with PK: let the importer report it clearly.
        return path.suffix == ".eval"
    return "header.json" in names or "_journal/start.json" in names


def is_inspect_json(obj: Any) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(obj, dict)
        and "version" in obj
        and "status" in obj
        and isinstance(obj.get("eval"), dict)
        and "eval_id" in obj["eval"]
        and "task" in obj["eval"]
    )


def _inspect_json_prefix(head: bytes) -> bool:
    """Cheap check on a large log's first bytes (Inspect writes version/status/eval first)."""
    text = head.decode("utf-8", "replace")
    return text.lstrip().startswith("{") and all(
        k in text for k in ('"version"', '"status"', '"eval"', '"eval_id"', '"task"')
    )


def is_harbor_job_result(obj: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(obj, dict) and "n_total_trials" in obj and isinstance(obj.get("stats"), dict)


def is_harbor_trial_result(obj: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(obj, dict) and {"trial_name", "agent_info"} <= obj.keys() and (
        "verifier_result" in obj or "reward_valid" in obj
    )


def is_tb_run_results(obj: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(obj, dict) and isinstance(obj.get("results"), list) and (
        "n_resolved" in obj or "accuracy" in obj or not obj["results"] or is_tb_trial_results(obj["results"][0])
    )


def is_tb_trial_results(obj: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(obj, dict) and {"trial_name", "is_resolved"} <= obj.keys() and (
        "failure_mode" in obj or "parser_results" in obj
    )


def _is_tb_run_dir(path: Path) -> bool:
    """A legacy ``tb run`` directory: ``run_metadata.json``, a run ``results.json``, or only
    per-trial ``<task>/<trial>/results.json`` files."""
    if (path / "run_metadata.json").is_file():
        return True
    if (path / "results.json").is_file() and is_tb_run_results(read_json(path / "results.json")):
        return True
    return any(is_tb_trial_results(read_json(f)) for f in sorted(path.glob("*/*/results.json"))[:3])


def tb_run_sources(path: Path, depth: int = 4) -> list[Path]:
    """The Terminal-Bench runs at or below ``path``, in name order: run directories, and
    ``<run>_results.json`` files that stand for a run (a leaderboard submission that kept
    only those). A run directory is not searched further, except for run directories
    copied into it (they are returned too, so the importer can say it saw the copy)."""
    if path.is_file():
        obj = read_json(path)
        return [path] if is_tb_run_results(obj) or is_tb_trial_results(obj) else []
    if not path.is_dir():
        return []
    if _is_tb_run_dir(path):
        return [path, *(d for d in sorted(path.iterdir()) if d.is_dir() and (d / "run_metadata.json").is_file())]
    found = [f for f in sorted(path.glob("*results.json"))
             if f.name != "results.json" and is_tb_run_results(read_json(f))]
    if depth > 0:
        for d in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
            found += tb_run_sources(d, depth - 1)
    return found


def is_swebench_instance_report(obj: Any) -> TypeGuard[dict[str, Any]]:
    if not isinstance(obj, dict) or not obj:
        return False
    return all(
        isinstance(v, dict) and "resolved" in v and ("tests_status" in v or "patch_is_None" in v)
        for v in obj.values()
    )


def is_swebench_run_report(obj: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(obj, dict) and {"resolved_ids", "unresolved_ids", "error_ids"} <= obj.keys() and (
        "total_instances" in obj or "submitted_ids" in obj
    )


def is_swebench_results(obj: Any) -> TypeGuard[dict[str, Any]]:
    """``results/results.json`` of an experiments submission."""
    return isinstance(obj, dict) and isinstance(obj.get("resolved"), list) and (
        "no_generation" in obj or "no_logs" in obj
    )


def is_swebench_eval_results(obj: Any) -> TypeGuard[dict[str, bool]]:
    """``{instance_id: resolved}`` — the per-instance output of SWE-bench Pro's evaluation
    script (``eval_results.json``): every value a bool, every key an instance id
    (``owner__repo-…``)."""
    return isinstance(obj, dict) and bool(obj) and all(
        isinstance(v, bool) and isinstance(k, str) and "__" in k for k, v in obj.items())


def is_swebench_submission(path: Path) -> bool:
    """An experiments submission folder: ``metadata.yaml`` (or ``.yml``) and ``results/results.json``."""
    return any((path / n).is_file() for n in ("metadata.yaml", "metadata.yml")) and (
        path / "results" / "results.json").is_file()


def swebench_submissions(path: Path) -> list[Path]:
    """The submission folders of a split folder (``evaluation/<split>/``: its children) or of
    an ``evaluation/`` folder (its grandchildren), in name order; [] when there are none."""
    kids = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    found = [k for k in kids if is_swebench_submission(k)]
    if found:
        return found
    return [g for k in kids for g in sorted(k.iterdir())
            if g.is_dir() and not g.name.startswith(".") and is_swebench_submission(g)]


def is_mini_trajectory(obj: Any) -> TypeGuard[dict[str, Any]]:
    """A mini-swe-agent trajectory (``*.traj.json``)."""
    return isinstance(obj, dict) and str(obj.get("trajectory_format", "")).startswith("mini-swe-agent") \
        and isinstance(obj.get("messages"), list)


def _is_mini_run_dir(path: Path) -> bool:
    """A ``mini-extra swebench`` output directory: ``<iid>/<iid>.traj.json`` trajectories."""
    return any(is_mini_trajectory(read_json(p)) for p in sorted(path.glob("*/*.traj.json"))[:3])


def _is_runs_jsonl(path: Path) -> bool:
    for line in _head(path).splitlines():
        if line.strip():
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                return False
            return isinstance(obj, dict) and {"model", "harness", "task_id", "trial", "status"} <= obj.keys()
    return False


def _detect_file(path: Path) -> str | None:
    if is_inspect_eval_zip(path):
        return "inspect"
    head = _head(path)
    if not head.lstrip().startswith((b"{", b"[")):
        return None
    if _is_runs_jsonl(path):  # from its first line: a runs-jsonl file is never read whole here
        return "runs-jsonl"
    if _inspect_json_prefix(head):
        obj = read_json(path)
        if obj is None or is_inspect_json(obj):
            return "inspect"
    obj = read_json(path)
    if obj is None:
        return None
    if is_inspect_json(obj):
        return "inspect"
    if is_harbor_job_result(obj) or is_harbor_trial_result(obj):
        return "harbor"
    if is_tb_run_results(obj) and (path.parent / "run_metadata.json").is_file():
        return "terminal-bench"
    if is_tb_trial_results(obj) or is_tb_run_results(obj):
        return "terminal-bench"
    if is_swebench_instance_report(obj) or is_swebench_run_report(obj) or is_swebench_results(obj) \
            or is_swebench_eval_results(obj):
        return "swebench"
    if is_mini_trajectory(obj):
        return "mini-swe-agent"
    return None


def _detect_dir(path: Path) -> str | None:
    if (path / "events.jsonl").is_file():
        return None  # our own run: handled by the ingest command
    job = read_json(path / "result.json") if (path / "result.json").is_file() else None
    if (path / "config.json").is_file() and is_harbor_job_result(job):
        return "harbor"
    if is_harbor_trial_result(job):
        return "harbor"
    if (path / "run_metadata.json").is_file() and (path / "results.json").is_file():
        return "terminal-bench"
    if is_swebench_submission(path) or swebench_submissions(path):
        return "swebench"
    if _is_mini_run_dir(path):  # before SWE-bench: its evaluation report may sit beside preds.json
        return "mini-swe-agent"
    children = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    if any(p.suffix == ".eval" and is_inspect_eval_zip(p) for p in children if p.is_file()):
        return "inspect"
    if any(p.suffix == ".json" and p.is_file() and _inspect_json_prefix(_head(p)) for p in children):
        return "inspect"
    for sub in children:
        if sub.is_dir() and (sub / "result.json").is_file():
            obj = read_json(sub / "result.json")
            if is_harbor_trial_result(obj) or is_harbor_job_result(obj):
                return "harbor"  # a job still without its result.json, or a jobs/ directory
    if tb_run_sources(path):  # a folder of Terminal-Bench runs (a submission, the leaderboard)
        return "terminal-bench"
    for report in path.rglob("report.json"):
        if is_swebench_instance_report(read_json(report)):
            return "swebench"
    for p in children:
        if p.is_file() and p.suffix == ".json" and is_swebench_run_report(read_json(p)):
            return "swebench"
    return None


def detect_format(path: Path) -> str | None:
    """The format name for ``path`` (``FORMATS`` key), or None when nothing matches. Reads
    nothing outside the folder given (``foreign_files.confined``)."""
    path = Path(path)
    with foreign_files.confined(path):
        if path.is_dir():
            return _detect_dir(path)
        if path.is_file():
            return _detect_file(path)
    return None
