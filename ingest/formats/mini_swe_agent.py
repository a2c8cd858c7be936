"""mini-swe-agent run directories (``mini-extra swebench`` output): one trial per graded
instance, with its trajectory as ``steps`` (docs/formats.md, "mini-swe-agent run directories").

Layout: ``<out>/preds.json`` (``{instance_id: {model_name_or_path, instance_id,
model_patch}}``) and ``<out>/<iid>/<iid>.traj.json`` (``trajectory_format``
``mini-swe-agent-1.1`` in 2.x: ``info{exit_status, submission, model_stats, mini_version,
config}``, ``messages``). mini-swe-agent does not grade: the grade is a SWE-bench
evaluation of the predictions put in the same directory — a run report
(``resolved_ids``/``unresolved_ids``/``error_ids``) or per-instance ``report.json`` files.

Outcome (agent side combined with the grade): ``Submitted`` → the grade; ``LimitsExceeded``
/ ``TimeExceeded`` → ``accepted`` when resolved, else ``budget_exhausted``;
``RepeatedFormatError`` → ``target_failed``; any other status (an exception class: API or
environment errors) with no patch → ``infra_error``; a submitted empty patch →
``target_failed``. An instance whose outcome needs a grade it does not have is not a trial
(a note says how many). The directory has no run id: it is the run, every repetition 1.
Cost is ``model_stats.instance_cost`` (0 next to API calls: unpriced, unknown); tokens are
the sum of the raw responses' usage when every model turn reported it, else unknown. The
trajectory has no stage start (its first time is the first answer), so time to first edit
from the stage start is unknown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contract.trajectory import epoch_time, mini_trajectory_steps
from ingest.batch import SourceBatch
from ingest.cost import resolve_cost
from ingest.errors import IngestError
from ingest.formats import foreign_files
from ingest.formats._common import BatchBuilder, instance_ids, nonneg_int, seconds_between
from ingest.formats.detect import (
    is_mini_trajectory,
    is_swebench_instance_report,
    is_swebench_run_report,
    read_json,
)
from ingest.formats.swebench import outcome_from_report, repository_of
from ingest.identity import path_key
from ingest.prices import PriceTable

FORMAT = "mini-swe-agent"
HARNESS = "mini-swe-agent"
LIMIT_STATUSES = frozenset({"LimitsExceeded", "TimeExceeded"})
_DIFF_PATH = re.compile(r"^diff --git a/(\S+) b/", re.M)


def patch_paths(patch: str | None) -> list[str]:
    """The files a unified git diff touches, in order."""
    return list(dict.fromkeys(_DIFF_PATH.findall(patch or "")))


def _grades(root: Path, b: BatchBuilder) -> dict[str, tuple[str, str | None, dict]]:
    """instance id → (outcome, reason, labels) from the SWE-bench evaluation in ``root``."""
    grades: dict[str, tuple[str, str | None, dict]] = {}
    for report in sorted(root.rglob("report.json")):
        obj = b.optional_json(report, not_json_ok=True)  # one leading outside is refused, unread
        if is_swebench_instance_report(obj):
            b.batch.source_files.append(report)
            grades.update({iid: outcome_from_report(rep) for iid, rep in obj.items()})
    for path in sorted(root.glob("*.json")):
        obj = read_json(path)
        if path.name == "preds.json" or not is_swebench_run_report(obj):
            continue
        b.batch.source_files.append(path)
        for key, outcome, reason in (("unresolved_ids", "target_failed", None),
                                     ("error_ids", "infra_error", "SWE-bench evaluation error"),
                                     ("resolved_ids", "accepted", None)):
            for iid in instance_ids(obj.get(key) or [], key, b, path):
                grades.setdefault(iid, (outcome, reason, {}))
    return grades


def outcome_for(status: str | None, patch: str, grade: tuple[str, str | None, dict] | None
                ) -> tuple[str, str | None, dict] | None:
    """(outcome, reason, labels), or None when it needs a grade that is missing."""
    resolved = grade is not None and grade[0] == "accepted"
    if status in LIMIT_STATUSES:
        if grade is None and patch.strip():
            return None  # a patch that might resolve the task: only the grade can say
        return ("accepted", None, {"limit_hit": status}) if resolved else \
            ("budget_exhausted", status, {"limit_hit": status})
    if status == "RepeatedFormatError":
        return "target_failed", status, {}
    if status not in (None, "Submitted") and not patch.strip():
        return "infra_error", status, {}
    if not patch.strip():
        return "target_failed", "empty patch", {"empty_patch": True}
    return grade


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _trajectories(root: Path, b: BatchBuilder) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(root.glob("*/*.traj.json")) + sorted(root.glob("*.traj.json")):
        obj = b.optional_json(path, not_json_ok=True)  # one leading outside is refused, unread
        if is_mini_trajectory(obj):
            out.setdefault(str(obj.get("instance_id") or path.name.removesuffix(".traj.json")), path)
    return out


def _load_dir(root: Path, prices: PriceTable | None) -> SourceBatch:
    b = BatchBuilder(f"mini-{root.name}-{path_key(root)}", FORMAT, [])
    preds_file = root / "preds.json"
    preds = foreign_files.load_json(preds_file) if preds_file.is_file() else None  # or says why not
    if preds_file.is_file():
        b.batch.source_files.append(preds_file)
        if not isinstance(preds, dict):
            raise IngestError(f"{preds_file}: expected {{instance_id: {{model_name_or_path, model_patch}}}}")
    preds = preds or {}
    trajectories = _trajectories(root, b)
    if not trajectories and not preds:
        raise IngestError(f"{root}: no mini-swe-agent trajectories (<iid>/<iid>.traj.json) or preds.json found")
    grades = _grades(root, b)
    ungraded, versions = [], set()
    for iid in sorted(set(trajectories) | set(preds)):
        pred = _obj(preds.get(iid))
        doc: dict[str, Any] = {}
        if iid in trajectories:
            b.batch.source_files.append(trajectories[iid])
            doc = _obj(read_json(trajectories[iid]))
        info = _obj(doc.get("info"))
        config = _obj(info.get("config"))
        model_cfg = _obj(config.get("model"))
        model = model_cfg.get("model_name") or pred.get("model_name_or_path")
        patch = pred.get("model_patch") if isinstance(pred.get("model_patch"), str) else info.get("submission")
        patch = patch if isinstance(patch, str) else ""
        status = info.get("exit_status") if isinstance(info.get("exit_status"), str) else None
        decided = outcome_for(status, patch, grades.get(iid))
        if decided is None:
            ungraded.append(iid)
            continue
        outcome, reason, labels = decided
        labels = {**labels, "exit_status": status}
        version = info.get("mini_version")
        versions.add(version)
        cid, _ = b.config(str(model) if model else None, HARNESS, str(version) if version else None)
        b.case(iid, repository=repository_of(iid), benchmark="swe-bench")
        env = _obj(config.get("environment"))
        steps = mini_trajectory_steps(doc, workspace=env.get("cwd") if isinstance(env.get("cwd"), str) else None)
        times = [t for s in steps for t in (s.get("started_at"), s.get("ended_at")) if t is not None]
        if not times:  # a trajectory without steps: the timestamps of its messages
            times = [t for m in doc.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("extra"), dict)
                     if (t := epoch_time(m["extra"].get("timestamp"))) is not None]
        started, finished = (min(times), max(times)) if times else (None, None)
        turns = [s for s in steps if s["kind"] == "model"]
        tokens = {k: sum(s[k] for s in turns) if turns and all(s.get(k) is not None for s in turns) else None
                  for k in ("input_tokens", "output_tokens")}
        cached = sum(s.get("cache_read_tokens") or 0 for s in turns) if tokens["input_tokens"] is not None else None
        stats = _obj(info.get("model_stats"))
        calls = nonneg_int(stats.get("api_calls"))
        cost, source = resolve_cost(prices, model, reported=stats.get("instance_cost"), input_tokens=tokens["input_tokens"],
                                    output_tokens=tokens["output_tokens"], cache_read_tokens=cached, activity=calls,
                                    on=started, zero_is_unpriced=True)
        if cost is None:
            labels["cost_unpriced"] = True
        paths = patch_paths(patch)
        b.trial(trial_id=iid, config_id=cid, case_id=iid, repetition=1, outcome=outcome, reason=reason,
                source_key=iid, started_at=started, finished_at=finished,
                duration_s=seconds_between(started, finished), agent_s=seconds_between(started, finished),
                input_tokens=tokens["input_tokens"], output_tokens=tokens["output_tokens"], cache_read_tokens=cached,
                cost_usd=cost, cost_source=source, steps=calls, patch_paths_json=json.dumps(paths),
                failure_mode=None if status in (None, "Submitted") else status, labels=labels)
        b.trajectory(iid, steps, "mini-trajectory", finished_at=finished)
    if ungraded:
        b.note(f"{root.name}: {len(ungraded)} instance(s) submitted a patch but have no SWE-bench grade in "
               f"the directory (e.g. {ungraded[0]}); they are not trials — evaluate preds.json with the "
               "SWE-bench harness and put its report beside it")
    if not b.rows["trials"] and not b.batch.quarantine:
        raise IngestError(f"{root}: no graded mini-swe-agent instance; evaluate preds.json with the SWE-bench "
                          "harness and put its run report (or report.json files) in the directory")
    b.run(root, engine_version=next(iter(versions)) if len(versions) == 1 else None,
          repetitions=1, prices_as_of=prices.as_of if prices else None,
          details={"instances": len(set(trajectories) | set(preds)), "ungraded": len(ungraded)})
    return b.finish()


def load(path: Path, prices: PriceTable | None = None) -> list[SourceBatch]:
    path = Path(path)
    if path.is_file():  # a trajectory or preds.json: its run directory (reads may reach it)
        path = path.parent.parent if path.name.endswith(".traj.json") and not (path.parent / "preds.json").is_file() \
            else path.parent
        foreign_files.widen(path)
    return [_load_dir(path, prices)]
