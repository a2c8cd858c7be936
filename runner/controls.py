"""Controls before scoring: every case's negative and positive control, graded as a
trial is, repeated to catch criteria that disagree with themselves (docs/runner.md).

A case is scored when every target criterion fails on the initial commit and passes with
the reference patch, no regression or repository criterion is broken by the reference,
and nothing is flaky. A regression or repository criterion that already fails on the
initial commit is *pre-existing* (recorded in ``case_validated`` with its output): the
case is still scored, and layered grading counts that failure as noise. Controls run
on the driver: alone (``run_controls``, a validation-only run), before a run's trials
(``establish_controls``), or reused from a validation-only run of the same inputs
(``load_controls``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.run_events import CaseValidated, ControlResult, PreExisting, RunStarted
from runner import sandbox
from runner.capture import TrialGit
from runner.errors import RunnerError
from runner.eventlog import read_events, read_verified
from runner.evidence import read_capped
from runner.git import GitError, git
from runner.grading import GradingContext, argv_paths, case_inputs, grade_tree
from runner.manifest import Case
from runner.paths import input_refs, read_inputs, sha256_file
from runner.pool import RunInterrupted, progress_bar, run_pool
from runner.pristine import remove_tree
from runner.procs import ordinary_env
from runner.setup import RunSetup, case_source, close_run, open_run
from runner.trial import TrialInterrupted
from runner.trial_files import create_workspace
from runner.validate import load_valid_manifest

CONTROLS = ("negative", "positive")
PRE_EXISTING_OUTPUT = 2000
"""Characters of a pre-existing criterion's output kept in ``case_validated``."""


@dataclass
class ControlsResult:
    run_id: str
    run_dir: Path
    events_path: Path
    report_path: Path
    ok: bool
    cases: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ReusedControls:
    """The controls of a validation-only run, checked to be for exactly these inputs."""

    run_id: str
    validated: list[Any]


def expected_verdict(control: str, layer: str) -> str:
    """Only the target layer fails on the initial commit; everything passes the reference
    (a pre-existing failure is the exception that still counts as ok: ``pre_existing_verdict``)."""
    return "failed" if control == "negative" and layer == "target" else "passed"


def control_case(s: RunSetup, case: Case, repeats: int, stop: threading.Event) -> dict[str, Any]:
    """Negative (and positive) control of one case; emits control_result + case_validated.

    Each control is graded exactly as a trial is: a runner-captured tree of a fresh
    workspace (after ``prepare_commands``; plus the reference patch for the positive
    control), a fresh copy per criterion, inside the isolation backend.
    """
    _repo, commit = case_source(s.manifest, s.manifest_dir, case)
    problems: list[str] = []
    verdicts: dict[tuple[str, str], list[str]] = {}
    box = s.containment
    for control in CONTROLS:
        if stop.is_set():
            raise TrialInterrupted(case.id)
        where = s.run_dir / "controls" / case.id / control
        remove_tree(where)
        ws, tgit = where / "workspace", TrialGit(where / ".runner" / "git", box.store)
        try:
            tree, ignored, why = control_state(s, case, control, ws, tgit, commit)
        except (GitError, OSError) as exc:
            tree, ignored, why = None, None, f"could not create a workspace: {exc}"
        if tree is None:
            problems.append(f"{control} control: {why}")
            continue
        ctx = GradingContext(box.backend, case_inputs(s.snapshot, case), tgit, where / ".runner" / "grade",
                             read_only=box.read_only, redactor=s.redactor)
        log_dir = s.run_dir / "controls" / case.id / f"{control}-logs"
        for repeat in range(1, repeats + 1):
            run = grade_tree(ctx, list(case.criteria), tree, overlay=ignored, log_dir=log_dir,
                             tag=f".{repeat}")
            if stop.is_set():  # graders killed by Ctrl-C: no verdict, resume runs them again
                ctx.close()
                raise TrialInterrupted(case.id)
            for r in run.results:
                expected = expected_verdict(control, r.layer)
                pre = pre_existing_verdict(control, r.layer, r.verdict,
                                           verdicts.get(("negative", r.criterion_id), []))
                s.log.emit(ControlResult, case_id=case.id, control=control,
                           criterion_id=r.criterion_id, layer=r.layer, repeat=repeat,
                           exit_code=r.exit_code, signal=r.signal, timed_out=r.timed_out,
                           verdict=r.verdict, expected=expected, ok=r.verdict == expected or pre,
                           duration_s=r.duration_s, pre_existing=pre)
                verdicts.setdefault((control, r.criterion_id), []).append(r.verdict)
            if run.violations:
                problems.append(f"{control} control: a grader changed its inputs: "
                                f"{', '.join(run.violations[:3])}")
                break
        ctx.close()
        remove_tree(ws)
    flaky, baseline, disagreements = _judge_verdicts(case, verdicts, repeats)
    problems += disagreements
    listed = [pre_existing_entry(s.run_dir, case, cid) for cid in pre_existing_ids(case, baseline)]
    s.log.emit(CaseValidated, case_id=case.id, ok=not problems, problems=problems,
               flaky_criteria=flaky, baseline=baseline, repeats=repeats,
               fingerprint=s.fingerprints[case.id], pre_existing=listed)
    return {"case_id": case.id, "ok": not problems, "problems": problems, "flaky": flaky,
            "baseline": baseline, "pre_existing": [p.criterion_id for p in listed]}


def pre_existing_verdict(control: str, layer: str, verdict: str, negative: list[str]) -> bool:
    """Whether a control's ``verdict`` is a pre-existing failure: a regression or
    repository criterion failing on the initial commit (``negative``: its verdicts there so
    far), or still failing with the reference patch when it failed there too. Such a
    failure is not a reason to leave the case unscored: layered grading counts it as noise
    (docs/runner.md, "Pre-existing failures")."""
    if layer == "target" or verdict != "failed":
        return False
    return control == "negative" or (bool(negative) and set(negative) == {"failed"})


def pre_existing_ids(case: Case, baseline: dict[str, str]) -> list[str]:
    """The case's regression and repository criteria that fail on the initial commit."""
    return [c.id for c in case.criteria if c.layer != "target" and baseline.get(c.id) == "failed"]


def pre_existing_entry(run_dir: Path, case: Case, cid: str) -> PreExisting:
    """A pre-existing criterion with the tail of its (redacted) output on the initial commit."""
    layer = next(c.layer for c in case.criteria if c.id == cid)
    logs = run_dir / "controls" / case.id / "negative-logs"
    text = ""
    for suffix in ("out", "err"):
        data, _cut = read_capped(logs / f"{cid}.1.{suffix}", 64 * 1024)
        text += (data or b"").decode("utf-8", "replace")
    return PreExisting(criterion_id=cid, layer=layer, output=text[-PRE_EXISTING_OUTPUT:],
                       output_path=f"controls/{case.id}/negative-logs/{cid}.1.out")


def _judge_verdicts(case: Case, verdicts: dict[tuple[str, str], list[str]],
                    repeats: int) -> tuple[list[str], dict[str, str], list[str]]:
    """(flaky criteria, baseline verdicts, problems) of a case's controls: the problems
    name every control that did not come out as expected and every flaky criterion. A
    regression or repository criterion failing on the initial commit is pre-existing, not
    a problem (``pre_existing_verdict``); one the reference patch breaks is."""
    baseline: dict[str, str] = {}
    problems: list[str] = []
    flaky = sorted({cid for (_, cid), vs in verdicts.items() if len(set(vs)) > 1})
    for (control, cid), vs in sorted(verdicts.items()):
        layer = next(c.layer for c in case.criteria if c.id == cid)
        exp = expected_verdict(control, layer)
        if control == "negative":
            baseline[cid] = vs[0] if len(set(vs)) == 1 else "inconclusive"
        if cid in flaky or pre_existing_verdict(control, layer, vs[0], verdicts.get(("negative", cid), [])):
            continue
        if control == "positive" and layer != "target" and vs[0] == "failed":
            problems.append(f"positive control: {cid} ({layer}) passes on the initial commit but "
                            "fails with the reference patch: the reference would be graded a regression")
        elif vs[0] != exp:
            problems.append(f"{control} control: {cid} ({layer}) {vs[0]}, expected {exp}")
    fixed = {c.id: c.flaky_fixed for c in case.criteria}
    for cid in flaky:
        if fixed.get(cid):
            problems.append(f"{cid} is marked fixed in the manifest ({fixed[cid]}) but disagreed with "
                            f"itself again over {repeats} repeats: it is still flaky")
        else:
            problems.append(f"{cid} is flaky (different verdicts on repeated runs of the same state); "
                            "its case is not scored until it is fixed and marked flaky_fixed")
    return flaky, baseline, problems


def control_state(s: RunSetup, case: Case, control: str, ws: Path, tgit: TrialGit,
                  commit: str) -> tuple[str | None, str | None, str]:
    """(tree, ignored tree, problem) of a control's state, captured by the runner: the
    pinned commit after ``prepare_commands`` (``negative``; what a trial's prepared tree
    is, which a regrade rebuilds too), with the reference patch applied (``positive``)."""
    box = s.containment
    create_workspace(box.store, commit, ws)
    initial = box.store.tree_of(commit)
    home = ws.parent / ".sandbox" / "home"
    home.mkdir(parents=True, exist_ok=True)
    for argv in s.manifest.prepare_commands:
        req = sandbox.Request(argv=list(argv), cwd=ws, env=ordinary_env({"HOME": str(home)}),
                              read_only=[*box.read_only, *argv_paths(list(argv))],
                              read_write=[ws, home], network=box.network)
        res = sandbox.run(box.backend, req, timeout=s.manifest.timeout_seconds)
        if not res.ok:
            return None, None, f"prepare command {argv[0]} failed (exit {res.exit_code})"
    ignored = None
    if s.manifest.prepare_commands:
        cap = tgit.capture(ws, initial, excludes=box.excludes, ignored_only=True)
        ignored = cap.tree if cap.files else None
    if control == "positive":
        patch = ws.parent / "reference.patch"
        patch.write_bytes(s.snapshot.contents[case.reference_patch])
        done = git(ws, "apply", "--whitespace=nowarn", str(patch), check=False)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip()
            return None, None, f"reference patch does not apply: {why}"
    tree = tgit.capture(ws, initial, excludes=box.excludes).tree
    return tree, ignored, ""


def _controls_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="controls per case")
    for col in ("case", "ok", "flaky", "pre-existing", "problems"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["case_id"], "yes" if r["ok"] else "[red]NO[/red]",
                      ", ".join(r["flaky"]) or "-", ", ".join(r["pre_existing"]) or "-",
                      "; ".join(r["problems"]) or "-")
    Console(stderr=False).print(table)


def run_controls(manifest_path: Path, output_dir: Path, *, jobs: int = 1, repeats: int | None = None,
                 progress: bool = True) -> ControlsResult:
    """Validation-only run: negative + positive control per case, repeated; no agents."""
    start = time.monotonic()
    s = open_run(manifest_path, output_dir, resume=False, validation_only=True, jobs=jobs,
                 control_repeats=repeats)
    times = repeats or s.manifest.control_repeats
    stop = threading.Event()
    rows: dict[str, dict[str, Any]] = {}
    bar, task = progress_bar(progress, len(s.manifest.cases), "controls")

    def done(case: Case, fut: Future[Any]) -> None:
        try:
            rows[case.id] = fut.result()
        except TrialInterrupted:
            return
        bar.update(task, advance=1)

    status = "completed"
    try:
        with bar:
            run_pool(list(s.manifest.cases), lambda c: control_case(s, c, times, stop), jobs, done, stop)
    except KeyboardInterrupt:
        status = "interrupted"
    ordered = [rows[c.id] for c in s.manifest.cases if c.id in rows]
    ok = status == "completed" and all(r["ok"] for r in ordered)
    if status == "completed" and not ok:
        status = "failed_controls"
    report = close_run(s, status, start, trials_total=0, trials_finished=0, outcomes={})
    if progress:
        _controls_table(ordered)
    if status == "interrupted":
        raise RunInterrupted(f"interrupted; partial report at {report}")
    return ControlsResult(s.run_id, s.run_dir, s.log.path, report, ok, ordered)


def load_controls(controls_dir: Path, manifest_path: Path) -> ReusedControls:
    """Read ``--controls DIR``; refuse it (naming the mismatch) unless it fits this manifest."""
    events_path = Path(controls_dir) / "events.jsonl"
    if not events_path.is_file():
        raise RunnerError(f"{controls_dir}: no events.jsonl; pass the output directory of a "
                          "'trialhouse run --validation-only' run to --controls")
    verified = read_verified(events_path)
    starts = [e for e in verified.events if isinstance(e, RunStarted)]
    if not starts or not starts[0].validation_only:
        raise RunnerError(f"{controls_dir}: not a validation-only run (--controls takes the output of "
                          "'trialhouse run --validation-only')")
    if not verified.intact:
        raise RunnerError(f"{events_path}: its hash chain does not verify ({verified.problems()}); "
                          "re-run the controls")
    head = starts[0]
    sha = sha256_file(manifest_path)
    if head.manifest_sha256 != sha:
        raise RunnerError(f"{controls_dir}: its controls were run for a manifest with sha256 "
                          f"{head.manifest_sha256[:12]}…, but {manifest_path} has {sha[:12]}…; "
                          "re-run the controls for this manifest")
    manifest = load_valid_manifest(manifest_path)
    base = Path(manifest_path).resolve().parent
    current = read_inputs(base, input_refs(manifest.model_dump(mode="json")), base).hashes
    if dict(head.input_hashes) != current:
        changed = sorted(k for k in set(head.input_hashes) | set(current)
                         if head.input_hashes.get(k) != current.get(k))
        raise RunnerError(f"{controls_dir}: input files changed since its controls ran "
                          f"({', '.join(changed[:3])}: sha256 differs); re-run the controls")
    validated = [e for e in verified.events if isinstance(e, CaseValidated)]
    missing = sorted({c.id for c in manifest.cases} - {e.case_id for e in validated})
    if missing:
        raise RunnerError(f"{controls_dir}: has no controls for {', '.join(missing[:5])} "
                          "(the validation-only run did not finish); re-run the controls")
    return ReusedControls(head.run_id, validated)


def establish_controls(s: RunSetup, jobs: int, stop: threading.Event, repeats: int,
                       reused: ReusedControls | None) -> dict[str, CaseValidated]:
    """Case id → its ``case_validated`` event: from this run (resume), reused, or run now."""
    known: dict[str, Any] = {e.case_id: e for e in s.prior if isinstance(e, CaseValidated)}
    if reused is not None:
        for e in reused.validated:
            # another evaluator (e.g. another draw of a hidden pool): this run's controls run now
            if e.case_id not in known and e.fingerprint in (None, s.fingerprints[e.case_id]):
                known[e.case_id] = s.log.emit(
                    CaseValidated, case_id=e.case_id, ok=e.ok, problems=e.problems,
                    flaky_criteria=e.flaky_criteria, baseline=e.baseline, repeats=e.repeats,
                    fingerprint=s.fingerprints[e.case_id], from_run=reused.run_id,
                    pre_existing=e.pre_existing)
    todo = [c for c in s.manifest.cases if c.id not in known]
    results: dict[str, dict[str, Any]] = {}

    def done(case: Case, fut: Future[Any]) -> None:
        results[case.id] = fut.result()

    if todo:
        run_pool(todo, lambda c: control_case(s, c, repeats, stop), jobs, done, stop)
    fresh = {e.case_id: e for e in read_events(s.log.path) if isinstance(e, CaseValidated)}
    return {c.id: known.get(c.id) or fresh[c.id] for c in s.manifest.cases}
