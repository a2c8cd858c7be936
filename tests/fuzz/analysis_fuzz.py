"""Fuzzing of the analysis commands: small warehouses of random designs (one configuration
or many, one task or many, every trial solved or none, costs and steps known, unknown or
partly known, repositories labelled known/unknown or not, several benchmarks), and every
analysis command run on each with random selectors and options through the real CLI entry
point (``trialhouse.cli.main``, in process). An exit with a message is fine whatever its
code; an exception that escapes the CLI (a traceback for the user) is a finding, and so is
``--json`` output that does not parse.

Used by ``tests/analysis/test_analysis_fuzz.py`` (a few warehouses) and ``make fuzz``
(``tests/fuzz/fuzz.py --analysis N``).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import traceback
from pathlib import Path

COMMANDS = ["summarize", "compare", "consistency", "pareto", "matrix", "failures", "familiarity",
            "noise", "rank", "plan", "latency", "trajectory", "eligibility", "inspect-queue"]


def write_design(root: Path, rng: random.Random) -> tuple[Path, Path | None, dict]:
    """A runs-jsonl file of a random design, maybe a labels file; returns them and the names."""
    models = [f"m{i}" for i in range(rng.choice([1, 1, 2, 3]))]
    harnesses = [f"h{i}" for i in range(rng.choice([1, 2, 3]))]
    tasks = [f"t{i}" for i in range(rng.choice([1, 2, 5, 12]))]
    reps = rng.choice([1, 2, 3, 5])
    p_solve = rng.choice([0.0, 1.0, 0.5, 0.2, 0.9])
    cost_known = rng.choice([0.0, 1.0, 0.5])
    steps_known = rng.choice([0.0, 1.0, 0.6])
    benchmarks = rng.choice([["b"], ["b", "c"]])
    repos = [f"org/r{i}" for i in range(rng.choice([1, 2, 4]))]
    lines = []
    for m in models:
        for h in harnesses:
            if len(models) * len(harnesses) > 1 and rng.random() < 0.15:
                continue  # a missing cell
            drop = rng.random() < 0.3  # this configuration ran only some tasks
            for ti, t in enumerate(tasks):
                if drop and rng.random() < 0.4:
                    continue
                for k in range(reps):
                    status = "solved" if rng.random() < p_solve else rng.choice(["failed", "failed", "infra_error"])
                    line = {"model": m, "harness": h, "harness_version": "1", "task_id": t, "trial": k,
                            "status": status, "repo": repos[ti % len(repos)],
                            "benchmark": benchmarks[ti % len(benchmarks)],
                            "started_at": f"2026-03-{1 + (ti + k) % 9:02d}T10:00:00Z"}
                    if rng.random() < cost_known:
                        line["cost_usd"] = round(rng.uniform(0, 2), 3) if rng.random() < 0.9 else 0
                    if rng.random() < steps_known:
                        line["steps"] = rng.randrange(0, 40)
                    if rng.random() < 0.7:
                        line["wall_seconds"] = round(rng.uniform(1, 600), 1)
                        line["input_tokens"], line["output_tokens"] = rng.randrange(10**5), rng.randrange(10**4)
                    if status != "solved" and rng.random() < 0.5:
                        line["failure_mode"] = rng.choice(["tests_failed", "timeout", "crash"])
                    lines.append(json.dumps(line))
    if not lines:  # every cell dropped: keep one trial
        lines.append(json.dumps({"model": "m0", "harness": "h0", "task_id": "t0", "trial": 0, "status": "failed"}))
    runs = root / "runs.jsonl"
    runs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels = None
    if rng.random() < 0.6:
        labels = root / "labels.yaml"
        entries = "".join(f"  {r}: {{familiarity: {rng.choice(['known', 'unknown'])}, "
                          f"difficulty: {rng.choice(['easy', 'hard'])}}}\n" for r in repos)
        labels.write_text("repositories:\n" + entries, encoding="utf-8")
    names = {"models": models, "harnesses": harnesses, "benchmarks": benchmarks, "repos": repos,
             "variants": [f"{h}@1 / {m}" for m in models for h in harnesses]}
    return runs, labels, names


def _options(command: str, names: dict, rng: random.Random) -> list[str]:
    out: list[str] = []
    pick = rng.random
    if command not in {"plan", "inspect-queue", "eligibility"} and pick() < 0.3:
        out.append(rng.choice(["--json", "--csv"]))
    if pick() < 0.25:
        out += ["--model", rng.choice(names["models"] + ["nope"])]
    if pick() < 0.2:
        out += ["--harness", rng.choice(names["harnesses"])]
    if pick() < 0.2:
        out += ["--benchmark", rng.choice(names["benchmarks"])]
    if pick() < 0.15:
        out += ["--universe", rng.choice(names["benchmarks"] + ["zzz"])]
    if pick() < 0.1:
        out += ["--since", rng.choice(["2026-03-04", "2027-01-01"])]
    if pick() < 0.1:
        out += ["--label", f"repository={rng.choice(names['repos'])}"]
    if pick() < 0.15:
        out += ["--config", rng.choice(names["variants"])]
    if command in {"summarize", "compare", "pareto"} and pick() < 0.3:
        out += ["--cost-coverage", "complete"]
    if command in {"summarize", "compare", "consistency", "failures", "familiarity"} and pick() < 0.3:
        out += ["--by", rng.choice(["repository", "task_class", "difficulty"])]
    if command in {"compare", "plan"} and pick() < 0.5 and len(names["variants"]) > 1:
        a, b = rng.sample(names["variants"], 2)
        out += ["--baseline", a, "--candidate", b]
    if command == "pareto":
        if pick() < 0.4:
            out += ["--x", rng.choice(["cost_per_accepted", "cost_per_trial", "median_steps"])]
        if pick() < 0.3:
            out.append("--convex")
    if command == "rank":
        out += ["--resamples", str(rng.choice([10, 200])), "--seed", "3"]
    if command == "plan":
        if pick() < 0.4:
            out += ["--between", str(rng.choice([0.0, 0.01, 0.2])), "--within", str(rng.choice([0.0, 0.05, 0.25]))]
        if pick() < 0.5:
            out += ["--target", str(rng.choice([0.01, 0.1, 0.5]))]
        if pick() < 0.3:
            out += ["--tasks", str(rng.choice([1, 2, 50])), "--reps", str(rng.choice([1, 3]))]
    return out


def run_cli(argv: list[str]) -> tuple[int | None, str, str, str | None]:
    """(exit code, stdout, stderr, traceback of an exception that escaped the CLI)."""
    from trialhouse.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    tb = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # noqa: BLE001 - the finding itself
            tb = traceback.format_exc()
    return code, out.getvalue(), err.getvalue(), tb


def one_warehouse(seed: int, workdir: Path, commands_per: int = 2) -> list[str]:
    """One random design ingested, every command run ``commands_per`` times; the findings."""
    from ingest.api import ingest_paths

    rng = random.Random(seed)
    root = workdir / f"design-{seed}"
    root.mkdir(parents=True, exist_ok=True)
    runs, labels, names = write_design(root, rng)
    wh = root / "wh" / "w.duckdb"
    ingest_paths([runs], wh, format="runs-jsonl", labels=labels, allow_quarantine=True)
    found = []
    for command in COMMANDS:
        for _ in range(commands_per):
            argv = [command, "-w", str(wh), *_options(command, names, rng)]
            code, out, err, tb = run_cli(argv)
            if tb is not None:
                found.append(f"seed {seed}: trialhouse {' '.join(argv[:1] + argv[3:])}:\n{tb}")
            elif "Traceback" in err:
                found.append(f"seed {seed}: trialhouse {' '.join(argv[:1] + argv[3:])}: traceback on stderr:\n{err}")
            elif code == 0 and "--json" in argv:
                try:
                    json.loads(out)
                except ValueError as e:
                    found.append(f"seed {seed}: trialhouse {' '.join(argv[:1] + argv[3:])}: --json output "
                                 f"does not parse ({e}): {out[:300]!r}")
    return found


def fuzz(warehouses: int, seed: int, workdir: Path) -> list[str]:
    found: list[str] = []
    for k in range(warehouses):
        found += one_warehouse(seed * 1000 + k, workdir)
    return found
