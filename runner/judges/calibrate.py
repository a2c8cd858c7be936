"""Run a variant's judge over human-labelled examples (``trialhouse calibrate-judge``).

Dataset (docs/judges.md)::

    {"format": "trialhouse-judge-calibration/1",
     "examples": [{"id": "...", "label": "pass" | "fail", "rationale": "...",
                   "evidence": {"diff": "...", "criteria": [...], "files": {"path": "text"}}}]}

Unknown labels, duplicate ids and duplicate evidence are refused with the example's
position: a calibration computed on a silently cleaned dataset would not be the one
the operator labelled. The judge runs exactly as in a run (same evidence shape, sandbox,
gateway, answer rules); statistics are computed by ``analysis.judges``.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.redact import Redactor
from runner import sandbox
from runner.errors import RunnerError
from runner.judges.config import resolve
from runner.judges.invoke import JudgeRuntime, TrialEvidence, judge_one
from runner.manifest import Criterion, Judge, Manifest
from runner.paths import InputRef, input_refs, snapshot_inputs

LABELS = ("pass", "fail")
MAX_EXAMPLES = 5000
_TO_ANSWER = {"passed": "pass", "failed": "fail", "inconclusive": "inconclusive"}


@dataclass(frozen=True)
class Example:
    id: str
    label: str
    rationale: str
    diff: str
    criteria: list[dict[str, Any]]
    files: dict[str, str]


def load_dataset(path: Path) -> tuple[list[Example], str]:
    """The examples and the file's sha256; ``RunnerError`` naming the example and field."""
    try:
        data = path.read_bytes()
        doc = json.loads(data)
    except OSError as exc:
        raise RunnerError(f"{path}: cannot read the dataset ({exc.strerror})") from None
    except ValueError as exc:
        raise RunnerError(f"{path}: not JSON ({exc})") from None
    examples = doc.get("examples") if isinstance(doc, dict) else None
    if not isinstance(examples, list) or not examples:
        raise RunnerError(f"{path}: needs an object with a non-empty \"examples\" list")
    if len(examples) > MAX_EXAMPLES:
        raise RunnerError(f"{path}: {len(examples)} examples; at most {MAX_EXAMPLES}")
    out: list[Example] = []
    seen_ids: dict[str, int] = {}
    seen_evidence: dict[str, int] = {}
    for i, ex in enumerate(examples):
        where = f"{path}: examples[{i}]"
        if not isinstance(ex, dict):
            raise RunnerError(f"{where}: must be an object")
        eid, label = ex.get("id"), ex.get("label")
        if not isinstance(eid, str) or not eid:
            raise RunnerError(f"{where}.id: must be a non-empty string")
        if label not in LABELS:
            raise RunnerError(f"{where}.label: {label!r} is not a known label (expected {' or '.join(LABELS)})")
        if eid in seen_ids:
            raise RunnerError(f"{where}.id: duplicate example id {eid!r} (also examples[{seen_ids[eid]}])")
        ev = ex.get("evidence")
        if not isinstance(ev, dict) or not isinstance(ev.get("diff"), str):
            raise RunnerError(f"{where}.evidence.diff: must be a string (the change to judge)")
        files = ev.get("files", {})
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise RunnerError(f"{where}.evidence.files: must map paths to text")
        criteria = ev.get("criteria", [])
        if not isinstance(criteria, list):
            raise RunnerError(f"{where}.evidence.criteria: must be a list")
        key = hashlib.sha256(json.dumps(ev, sort_keys=True).encode()).hexdigest()
        if key in seen_evidence:
            raise RunnerError(f"{where}.evidence: duplicate of examples[{seen_evidence[key]}] (the same evidence "
                              "counted twice would inflate agreement)")
        seen_ids[eid], seen_evidence[key] = i, i
        out.append(Example(eid, label, str(ex.get("rationale") or ""), ev["diff"], criteria, files))
    return out, hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Judged:
    example: Example
    verdict: str
    """pass | fail | inconclusive"""
    reasons: list[str]
    error: str | None


def run_calibration(manifest: Manifest, manifest_dir: Path, variant_id: str | None, rubric: str,
                    examples: list[Example]) -> tuple[list[Judged], dict[str, Any], str]:
    """Judge every example with the variant's judge; (results, judge record, rubric sha256)."""
    variants = {v.id: v for v in manifest.variants}
    if variant_id is not None and variant_id not in variants:
        raise RunnerError(f"--variant {variant_id}: not a variant of the manifest ({', '.join(variants)})")
    variant = variants[variant_id] if variant_id else manifest.variants[0]
    if not (manifest_dir / rubric).is_file():
        raise RunnerError(f"--rubric {rubric}: no such file under {manifest_dir}")
    crit = Criterion(id="calibration", judge=Judge(rubric=rubric))
    with tempfile.TemporaryDirectory(prefix="trialhouse-calibrate-") as tmp:
        refs = [*input_refs(manifest.model_dump(mode="json")), InputRef("--rubric", rubric)]
        snapshot = snapshot_inputs(manifest_dir, refs, Path(tmp) / "inputs")
        backend = sandbox.backend(manifest.isolation.backend)
        rt = JudgeRuntime.build(manifest, manifest_dir, snapshot, backend, network=manifest.network_policy,
                                read_only=tuple(Path(p) for p in manifest.isolation.read_only_paths),
                                redactor=Redactor([]), secrets=[])
        out = []
        with rt:
            for ex in examples:
                te = TrialEvidence(f"calibration__{hashlib.sha256(ex.id.encode()).hexdigest()[:12]}", variant, 1,
                                   ex.diff, ex.criteria, {k: v.encode() for k, v in ex.files.items()},
                                   Path(tmp) / "judge" / ex.id.replace("/", "_"))
                fields = judge_one(rt, crit, te, lambda *a, **k: None)
                out.append(Judged(ex, _TO_ANSWER[fields["verdict"]], fields.get("reasons", []), fields.get("error")))
        sha = snapshot.hashes[rubric]
    judge = resolve(variant, crit)
    return out, {**judge.key(), "variant": variant.id}, sha
