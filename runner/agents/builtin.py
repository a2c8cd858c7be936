"""Built-in agents, run as ``python -m runner.agents.builtin --context CTX.json``.

* ``null`` changes nothing (the "no agent" baseline).
* ``reference`` applies the case's reference patch in the first Build stage (the oracle).
* ``replay`` applies ``<patches_dir>/<case_id>.patch`` in the first Build stage.
* ``simulated`` is a seeded stand-in for a model-backed agent: it picks one of the case's
  recorded candidate changes (correct / wrong / regression) with a probability that
  depends on its skill and the case, and reports synthetic tokens, cost and steps.
  Nothing it does involves a model; every line it prints says SIMULATED. With a spend
  limit it works in rounds (``affordable_rounds``): more budget, more rounds, a better
  chance of the correct change, more spend. With visible checks it runs them in QA.

They are real subprocesses so the runner treats them exactly like any other agent:
failures are exit codes, usage goes to the agent events file. Standard library only,
so start-up stays fast.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

LABELS = ("correct", "wrong", "regression")
DIFFICULTY_FACTOR = {"easy": 1.0, "medium": 0.8, "hard": 0.6}
"""Multiplies skill: harder cases are solved less often."""
FAMILIARITY_FACTOR = {"known": 1.0, "unknown": 0.8}
"""Unfamiliar repositories are harder."""
TOKEN_SCALE = {"easy": 0.7, "medium": 1.0, "hard": 1.5}
STAGE_TOKENS = {"build": (14_000, 1_800), "qa": (7_000, 900), "review": (9_000, 500)}
MAX_SLEEP_S = 0.15
MAX_ROUNDS = 8
"""Most build rounds a spend limit buys the simulated agent."""


class _Stage:
    """One stage invocation: context, a seeded RNG and the events file."""

    def __init__(self, ctx: dict) -> None:
        self.ctx = ctx
        self.started = time.monotonic()
        self.ws = Path(ctx["workspace"])
        self.events = Path(ctx["events_file"])
        # The points of a budget sweep share their draws (seeded by the sweep, not the point).
        parts = [ctx.get("seed"), ctx.get("case_id"), ctx.get("sweep") or ctx.get("variant_id"),
                 ctx.get("repetition"), ctx.get("attempt"), ctx.get("stage")]
        self.rng = random.Random("|".join(str(p) for p in parts))
        self.rounds = 1
        """Build rounds this stage worked (``affordable_rounds``); 1 for every other stage."""

    def emit(self, line: dict) -> None:
        with self.events.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, sort_keys=True) + "\n")
            fh.flush()

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 4)

    def apply(self, patch: Path, *, reverse: bool = False, check: bool = False) -> tuple[bool, str]:
        argv = ["git", "apply", "--whitespace=nowarn"]
        argv += ["-R"] if reverse else []
        argv += ["--check"] if check else []
        done = subprocess.run([*argv, str(patch)], cwd=self.ws, capture_output=True, text=True)
        return done.returncode == 0, done.stderr.strip()

    def zero_usage(self) -> None:
        """These agents make no model calls: usage is known to be zero (not unknown)."""
        self.emit({"type": "usage", "input_tokens": 0, "output_tokens": 0, "cost_usd": 0})


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 1


def _first_build(ctx: dict) -> bool:
    return ctx.get("stage") == "build" and int(ctx.get("attempt") or 1) == 1


def _apply_once(stage: _Stage, patch: Path, what: str) -> int:
    if not patch.is_file():
        return _fail(f"{what}: no patch at {patch}")
    ok, err = stage.apply(patch)
    if not ok:
        return _fail(f"{what}: git apply {patch.name} failed: {err}")
    print(f"{what}: applied {patch.name}")
    return 0


def run_null(stage: _Stage) -> int:
    stage.zero_usage()
    print("null agent: no changes made")
    return 0


def run_reference(stage: _Stage) -> int:
    stage.zero_usage()
    if not _first_build(stage.ctx):
        print(f"reference agent: nothing to do in {stage.ctx.get('stage')} (attempt {stage.ctx.get('attempt')})")
        return 0
    return _apply_once(stage, Path(stage.ctx["reference_patch"]), "reference agent")


def run_replay(stage: _Stage) -> int:
    stage.zero_usage()
    if not _first_build(stage.ctx):
        print(f"replay agent: nothing to do in {stage.ctx.get('stage')} (attempt {stage.ctx.get('attempt')})")
        return 0
    if not stage.ctx.get("patches_dir"):
        return _fail("replay agent: no patches_dir in the context")
    patch = Path(stage.ctx["patches_dir"]) / f"{stage.ctx['case_id']}.patch"
    if not patch.is_file():
        return _fail(f"replay agent: no recorded patch for case {stage.ctx['case_id']} ({patch})")
    return _apply_once(stage, patch, "replay agent")


# --- simulated ----------------------------------------------------------------
def _factor(table: dict[str, float], label: object, default: float) -> float:
    """``table``'s factor for a label, ``default`` for a label it does not name (or none)."""
    return table.get(label, default) if isinstance(label, str) else default


def correct_probability(skill: float, labels: dict, attempt: int, findings: list) -> float:
    """Chance of choosing the correct candidate for this case and attempt."""
    p = skill * _factor(DIFFICULTY_FACTOR, labels.get("difficulty"), 0.8)
    p *= _factor(FAMILIARITY_FACTOR, labels.get("familiarity"), 0.9)
    if attempt > 1 and findings:
        p += (1 - p) * 0.5 * skill  # concrete findings help a retry
    return min(max(p, 0.0), 1.0)


def _choose(rng: random.Random, p_correct: float, rounds: int = 1) -> tuple[str, int]:
    """(candidate, rounds used): each round finds the correct change with ``p_correct``, so
    ``rounds`` of them with 1 − (1 − p)^rounds. One uniform draw decides, so the same draw
    with more rounds never does worse; one round is the plain draw."""
    u = rng.random()
    for used in range(1, rounds + 1):
        if u < 1 - (1 - p_correct) ** used:
            return "correct", used
    return ("wrong" if rng.random() < 0.6 else "regression"), rounds


def _model_factor(model: str) -> float:
    return 1.3 if "alpha" in model else 1.0 if "beta" in model else random.Random(model).uniform(0.8, 1.3)


def _prompt_chars(ctx: dict) -> int:
    try:
        return len(Path(ctx["prompt_file"]).read_text(encoding="utf-8"))
    except (OSError, KeyError):
        return 0


def stage_cost_bound(ctx: dict, stage: str) -> float:
    """The most one round of ``stage`` can cost (``_synthetic_usage`` at its highest draws)."""
    base_in, base_out = STAGE_TOKENS.get(stage, STAGE_TOKENS["build"])
    labels = ctx.get("labels") or {}
    scale = _factor(TOKEN_SCALE, labels.get("difficulty"), 1.0)
    steps = 4 + (2 if labels.get("difficulty") == "hard" else 0)
    tokens = (base_in + steps * _prompt_chars(ctx) / 4) * scale * 1.15
    tokens += base_out * _model_factor(str(ctx.get("model") or "")) * scale * 1.2
    return tokens * float(ctx.get("price_per_mtok") or 0) / 1e6


def affordable_rounds(ctx: dict) -> int:
    """Build rounds the trial's spend limit allows: what is left after the spend so far and
    the later stages of this attempt, over the most a round costs (at least 1, at most
    ``MAX_ROUNDS``). No limit or no price: one round, as without a budget."""
    cap, price = ctx.get("max_cost_usd"), ctx.get("price_per_mtok")
    if cap is None or not price:
        return 1
    stages = list(ctx.get("stages") or STAGE_TOKENS)
    later = stages[stages.index("build") + 1:] if "build" in stages else []
    left = float(cap) - float(ctx.get("spent_usd") or 0) - sum(stage_cost_bound(ctx, s) for s in later)
    return max(1, min(MAX_ROUNDS, int(left // stage_cost_bound(ctx, "build"))))


def _candidates(stage: _Stage) -> Path | None:
    root = stage.ctx.get("candidates_dir")
    return Path(root) / stage.ctx["case_id"] if root else None


def _changed_lines(patch: Path) -> int:
    lines = patch.read_text(encoding="utf-8").splitlines()
    return sum(1 for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---")))


def _applied_label(stage: _Stage, folder: Path) -> str | None:
    """Which candidate the workspace currently holds.

    Several candidates may reverse cleanly when one contains another (a regression
    candidate is often the correct change plus one more edit): the largest wins.
    """
    fits = [label for label in LABELS if (folder / f"{label}.patch").is_file()
            and stage.apply(folder / f"{label}.patch", reverse=True, check=True)[0]]
    return max(fits, key=lambda label: _changed_lines(folder / f"{label}.patch"), default=None)


def _patched_files(patch: Path) -> list[str]:
    files = []
    for line in patch.read_text(encoding="utf-8").splitlines():
        if line.startswith("+++ b/"):
            files.append(line[len("+++ b/"):])
    return files


def _pause(stage: _Stage, share: float) -> None:
    time.sleep(MAX_SLEEP_S * share * stage.rng.uniform(0.3, 1.0))


def _simulated_build(stage: _Stage, folder: Path) -> tuple[int, str, list[str]]:
    ctx = stage.ctx
    attempt = int(ctx.get("attempt") or 1)
    findings = list(ctx.get("findings") or [])
    p = correct_probability(float(ctx.get("skill") or 0.0), ctx.get("labels") or {}, attempt, findings)
    current = _applied_label(stage, folder) if attempt > 1 else None
    if attempt > 1 and not findings:
        return 0, f"kept {current or 'previous work'} (no findings)", []
    allowed = affordable_rounds(ctx)
    choice, stage.rounds = _choose(stage.rng, p, allowed)
    for i in range(2, stage.rounds + 1):
        stage.emit({"type": "step", "name": f"build-round-{i}", "elapsed_s": stage.elapsed()})
    if choice == current:
        return 0, f"kept {current} after findings", []
    if current is not None:
        ok, err = stage.apply(folder / f"{current}.patch", reverse=True)
        if not ok:
            return _fail(f"SIMULATED agent: could not revert {current}: {err}"), "", []
    patch = folder / f"{choice}.patch"
    if not patch.is_file():
        return _fail(f"SIMULATED agent: no candidate {patch}"), "", []
    ok, err = stage.apply(patch)
    if not ok:
        return _fail(f"SIMULATED agent: git apply {choice}.patch failed: {err}"), "", []
    verb = f"replaced {current} with" if current else "applied"
    rounds = f", round {stage.rounds} of {allowed} the budget allowed" if allowed > 1 else ""
    return 0, f"{verb} {choice} (p_correct={p:.2f}{rounds})", _patched_files(patch)


def _simulated_qa(stage: _Stage, folder: Path) -> tuple[str, list[str]]:
    if stage.rng.random() >= 0.5:
        return "added no test", []
    case = stage.ctx["case_id"]
    modules = [f[:-3].replace("/", ".") for f in _patched_files(folder / "correct.patch") if f.endswith(".py")]
    rel = f"tests/test_{case.replace('-', '_')}_sim.py"
    lines = [f'"""Added by the SIMULATED agent (QA stage) for case {case}."""', "", "import importlib", "", ""]
    lines += [f"def test_{case.replace('-', '_')}_modules_import():"]
    lines += [f"    importlib.import_module({m!r})" for m in modules] or ["    pass"]
    target = stage.ws / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"added {rel}", [rel]


def _run_visible_checks(stage: _Stage) -> str:
    """Run the case's visible checks (``$TRIALHOUSE_CHECKS``), as a tool call; "" without any."""
    checks = stage.ctx.get("checks_dir")
    if not checks:
        return ""
    done = subprocess.run([sys.executable, str(Path(checks) / "run_check.py")], cwd=stage.ws,
                          capture_output=True, text=True)
    verdicts = [ln for ln in done.stdout.splitlines() if ln and not ln.startswith(" ")]
    stage.emit({"type": "tool_call", "name": "run_check", "exit_code": done.returncode,
                "args": {"command": 'python3 "$TRIALHOUSE_CHECKS/run_check.py"'}, "result": verdicts,
                "elapsed_s": stage.elapsed()})
    return f"; visible checks: {', '.join(verdicts) or done.stderr.strip()[-200:]}"


def _simulated_review(stage: _Stage, folder: Path) -> str:
    current = _applied_label(stage, folder)
    files = _patched_files(folder / "correct.patch")
    where = files[0] if files else "the change"
    if current == "correct":
        approve = stage.rng.random() < 0.9
        findings = [] if approve else [f"{where}: consider a test for the edge case named in the request"]
    else:
        approve = stage.rng.random() < 0.3  # a falsely approving review: never a grade
        findings = [] if approve else [
            f"{where}: the change does not fully implement the requested behaviour",
            "existing behaviour the request asked to keep may have changed",
        ]
    verdict = {"status": "approved" if approve else "changes_requested", "findings": findings}
    Path(stage.ctx["verdict_file"]).write_text(json.dumps(verdict, indent=2), encoding="utf-8")
    return f"review {verdict['status']} (workspace holds {current or 'no known candidate'})"


def _synthetic_usage(stage: _Stage, steps: int) -> dict:
    ctx = stage.ctx
    name = ctx.get("stage") or "build"
    base_in, base_out = STAGE_TOKENS.get(name, STAGE_TOKENS["build"])
    model_out = _model_factor(str(ctx.get("model") or ""))
    scale = _factor(TOKEN_SCALE, (ctx.get("labels") or {}).get("difficulty"), 1.0)
    # Every step re-reads the prompt: longer stage instructions cost input tokens. Each
    # build round costs a round's tokens.
    input_tokens = stage.rounds * int((base_in + steps * _prompt_chars(ctx) / 4) * scale
                                      * stage.rng.uniform(0.85, 1.15))
    output_tokens = stage.rounds * int(base_out * model_out * scale * stage.rng.uniform(0.8, 1.2))
    usage = {"type": "usage", "input_tokens": input_tokens, "output_tokens": output_tokens,
             "cache_read_tokens": int(input_tokens * 0.4)}
    price = ctx.get("price_per_mtok")
    if price is not None:  # no price → cost stays unknown (never 0)
        usage["cost_usd"] = round((input_tokens + output_tokens) * float(price) / 1e6, 6)
    return usage


def run_simulated(stage: _Stage) -> int:
    ctx = stage.ctx
    folder = _candidates(stage)
    if folder is None or not folder.is_dir():
        return _fail(f"SIMULATED agent: no candidate changes for case {ctx.get('case_id')} ({folder})")
    name = ctx.get("stage")
    hard = (ctx.get("labels") or {}).get("difficulty") == "hard"
    steps = stage.rng.randint(2, 4) + (2 if hard else 0)
    for i in range(steps - 1):
        stage.emit({"type": "step", "name": f"{name}-{i + 1}", "elapsed_s": stage.elapsed()})
        _pause(stage, 0.5 / steps)
    stage.emit({"type": "tool_call", "name": "read_file", "args": {"case": ctx.get("case_id")},
                "elapsed_s": stage.elapsed()})
    edited: list[str] = []
    if name == "build":
        code, what, edited = _simulated_build(stage, folder)
        if code:
            return code
    elif name == "qa":
        what, edited = _simulated_qa(stage, folder)
        what += _run_visible_checks(stage)
    else:
        what = _simulated_review(stage, folder)
    for path in edited:
        stage.emit({"type": "file_edit", "path": path, "elapsed_s": stage.elapsed()})
    _pause(stage, 0.5)
    stage.emit({"type": "step", "name": f"{name}-{steps}", "elapsed_s": stage.elapsed()})
    stage.emit(_synthetic_usage(stage, steps))
    print(f"SIMULATED agent (no model was called): case={ctx.get('case_id')} stage={name} "
          f"attempt={ctx.get('attempt')} variant={ctx.get('variant_id')}: {what}")
    return 0


AGENTS = {"null": run_null, "reference": run_reference, "replay": run_replay, "simulated": run_simulated}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "--context":
        print("usage: python -m runner.agents.builtin --context CTX.json", file=sys.stderr)
        return 2
    try:
        ctx = json.loads(Path(args[1]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"built-in agent: cannot read context {args[1]}: {exc}", file=sys.stderr)
        return 2
    kind = ctx.get("kind") if isinstance(ctx, dict) else None
    agent = AGENTS.get(kind) if isinstance(kind, str) else None
    if agent is None:
        print(f"built-in agent: unknown kind {ctx.get('kind') if isinstance(ctx, dict) else ctx!r}",
              file=sys.stderr)
        return 2
    missing = [k for k in ("workspace", "events_file", "case_id", "stage") if not ctx.get(k)]
    if missing:
        print(f"built-in agent: context {args[1]} lacks {', '.join(missing)}", file=sys.stderr)
        return 2
    return agent(_Stage(ctx))


if __name__ == "__main__":
    sys.exit(main())
