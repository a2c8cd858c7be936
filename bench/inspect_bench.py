"""Inspect ``.eval`` import benchmark (not a test): trialhouse against Inspect's own reader, same logs, same run.

Generates genuine Inspect logs with Inspect itself: one real ``eval()`` on the ``mockllm``
provider (an agent loop of tool calls, so every sample has multi-turn messages and
model/tool/score events; three scorers; per-call token usage), written by Inspect's
``.eval`` writer; the log is then re-written ``--logs`` times with ``write_eval_log`` under
new eval ids, four model names and re-drawn scores, so the files differ as real runs do.
Then times, each as a fresh process (wall and CPU seconds of the child from
``getrusage``; the least CPU of ``--repeat`` runs is kept):

1. ``inspect_ai.analysis.samples_df(DIR, full=True)`` — Inspect's own data frame of every
   sample with its full record (the default columns; ``parallel=False``, its default);
2. ``trialhouse ingest DIR --format inspect`` into a new warehouse (every trial, case,
   configuration and run row, Parquet written, views rebuilt);
3. for context, ``samples_df(DIR, full=False)``: Inspect reading only the sample summaries,
   which is what trialhouse reads for trials (``summaries.json``).

The ``samples_df`` children also print their row count, the seconds of the call alone
(``call_s``, imports excluded) and how many samples the primary scorer passed, to be
compared with the warehouse's accepted trials. Target (issue 15): trialhouse ≥ 10×
faster than ``samples_df(full=True)``.

Needs the ``inspect`` extra (``.venv/bin/python -m pip install -e '.[inspect]'``).

    .venv/bin/python bench/inspect_bench.py                     # 20 logs × 500 samples
    .venv/bin/python bench/inspect_bench.py --logs 4 --repeat 1 # a smoke run
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("mockllm/model-a", "mockllm/model-b", "mockllm/model-c", "mockllm/model-d")
TOOL_TURNS = 4  # tool calls before the final answer, per sample


def _template(dest: Path, samples: int, epochs: int):
    """Run one real Inspect eval (mockllm) and return its EvalLog (samples included)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score, Target, accuracy, includes, match, mean, scorer
    from inspect_ai.solver import TaskState, generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def run_tests():
        async def execute(path: str) -> str:
            """Run the test suite under a path.

            Args:
                path: directory of tests to run.
            """
            return f"ran tests in {path}: " + "." * 40 + " 40 passed\n" + "log line\n" * 20

        return execute

    @scorer(metrics=[mean()])
    def turns():
        async def score(state: TaskState, target: Target) -> Score:
            n = sum(1 for m in state.messages if m.role == "assistant")
            return Score(value=min(1.0, n / (TOOL_TURNS + 1)), explanation=f"{n} assistant turns")

        return score

    @scorer(metrics=[accuracy()])
    def exact():
        return match(location="any")

    def outputs():
        rng = random.Random(15)
        i = 0
        while True:
            i += 1
            if i % (TOOL_TURNS + 1):
                out = ModelOutput.for_tool_call("mockllm/model", "run_tests", {"path": f"tests/unit/t{i % 97}"},
                                                content="Let me run the tests again. " * 8)
            else:
                out = ModelOutput.from_content("mockllm/model", f"The answer is {rng.choice((42, 41))}. " * 6)
            inp = rng.randrange(2_000, 60_000)
            out.usage = ModelUsage(input_tokens=inp, output_tokens=rng.randrange(50, 2_000),
                                   total_tokens=inp + 2_000, input_tokens_cache_read=inp // 2)
            yield out

    repos = [f"org-{k}/repo-{k}" for k in range(12)]
    data = [Sample(id=f"task-{k:04d}", input=f"Fix issue {k} in the repository; the answer is 42.",
                   target="42", metadata={"repo": repos[k % len(repos)], "difficulty": ("easy", "hard")[k % 2],
                                          "base_commit": f"{k:040x}"})
            for k in range(samples)]
    t = Task(dataset=data, solver=[use_tools(run_tests()), generate(tool_calls="loop")],
             scorer=[includes(), exact(), turns()])
    [log] = eval(t, model="mockllm/model", model_args={"custom_outputs": outputs()}, log_dir=str(dest),
                 log_format="eval", display="none", epochs=epochs, max_samples=8,
                 metadata={"harness": "bench-agent", "harness_version": "1.0.0"}, tags=["bench"])
    return read_eval_log(log.location)


def _renamed(usage: dict, model: str) -> dict:
    """The template's usage (one mockllm model, or none) under ``model``."""
    assert len(usage) <= 1, usage
    return {model: u for u in usage.values()}  # noqa: B035 -- at most one entry


def generate_logs(out: Path, logs: int, samples: int, epochs: int) -> list[Path]:
    """``logs`` genuine .eval files of ``samples × epochs`` sample records each under ``out``."""
    from inspect_ai.log import write_eval_log
    from inspect_ai.scorer import Score

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = _template(Path(tmp), samples // epochs, epochs)
    rng = random.Random(15)
    paths = []
    for i in range(logs):
        model = MODELS[i % len(MODELS)]
        log = base.model_copy(deep=True)
        log.eval.eval_id = uuid.uuid4().hex[:22]
        log.eval.run_id = uuid.uuid4().hex[:22]
        log.eval.model = model
        log.stats.model_usage = _renamed(log.stats.model_usage, model)
        for s in log.samples or []:
            s.uuid = uuid.uuid4().hex[:22]
            s.model_usage = _renamed(s.model_usage, model)
            ok = rng.random() < 0.3 + 0.1 * (i % len(MODELS))
            s.scores = {"includes": Score(value="C" if ok else "I", answer="42" if ok else "41"),
                        "exact": Score(value="C" if ok and rng.random() < 0.9 else "I"),
                        "turns": Score(value=rng.choice((0.6, 0.8, 1.0)))}
        path = out / f"2026-12-01T00-00-{i:02d}+00-00_bench_{log.eval.eval_id}.eval"
        write_eval_log(log, str(path), format="eval")
        paths.append(path)
    return paths


SAMPLES_DF = """\
import sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from inspect_ai.analysis import samples_df
df = samples_df(sys.argv[1], full=sys.argv[2] == "full", quiet=True)
print(f"rows={len(df)} cols={df.shape[1]} call_s={time.perf_counter() - t0:.3f} "
      f"call_cpu_s={time.process_time() - c0:.3f} includes_C={int((df['score_includes'] == 'C').sum())}")
"""



def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + sys of the child) and stdout of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def _trials(db_path: Path) -> tuple[int, int]:
    """(trials, accepted trials) in the warehouse."""
    sys.path.insert(0, str(ROOT))
    from warehouse import db

    con = db.open(db_path, read_only=True)
    try:
        return con.execute("SELECT count(*), count(*) FILTER (outcome = 'accepted') FROM trials").fetchone()
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=int, default=20)
    ap.add_argument("--samples", type=int, default=500, help="sample records per log (tasks × 5 epochs)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per command (least CPU kept)")
    ap.add_argument("--dir", type=Path, default=None, help="keep the logs here (reused when present)")
    args = ap.parse_args()
    try:
        import inspect_ai
    except ImportError:
        sys.exit("inspect_bench needs inspect-ai: .venv/bin/python -m pip install -e '.[inspect]'")
    work = args.dir or Path(tempfile.mkdtemp(prefix="trialhouse-inspect-bench-"))
    logs_dir = work / "logs"
    files = sorted(logs_dir.glob("*.eval")) if logs_dir.is_dir() else []
    if len(files) != args.logs:
        shutil.rmtree(logs_dir, ignore_errors=True)
        files = generate_logs(logs_dir, args.logs, args.samples, 5)
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} logs × {args.samples} samples (inspect-ai {inspect_ai.__version__}), "
          f"{size / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    py = sys.executable

    def best(fn):
        return min((fn() for _ in range(max(1, args.repeat))), key=lambda r: r[1])

    def ingest():
        shutil.rmtree(work / "wh", ignore_errors=True)
        return timed([py, "-m", "trialhouse", "ingest", str(logs_dir), "--format", "inspect", "--json",
                      "-w", str(work / "wh" / "w.duckdb")])

    sdf = best(lambda: timed([py, "-c", SAMPLES_DF, str(logs_dir), "full"]))
    thin = best(lambda: timed([py, "-c", SAMPLES_DF, str(logs_dir), "summaries"]))
    ing = best(ingest)
    trials, accepted = _trials(work / "wh" / "w.duckdb")
    print("samples_df(full=True):  " + sdf[2].strip())
    print("samples_df(full=False): " + thin[2].strip())
    print(f"trialhouse: {trials:,} trials, {accepted:,} accepted (primary scorer `includes` = C)")
    print(f"{'command':<40}{'wall s':>9}{'cpu s':>9}")
    for name, (w, c, _) in (("inspect samples_df(full=True)", sdf), ("trialhouse ingest --format inspect", ing),
                            ("inspect samples_df(full=False) [context]", thin)):
        print(f"{name:<40}{w:>9.2f}{c:>9.2f}")
    print(f"trialhouse vs samples_df(full=True): {sdf[0] / ing[0]:.1f}× faster wall, "
          f"{sdf[1] / ing[1]:.1f}× CPU (target ≥ 10×)")
    print(f"trialhouse vs samples_df(full=False): {thin[0] / ing[0]:.1f}× wall, {thin[1] / ing[1]:.1f}× CPU "
          "(context: Inspect reading the summaries only, as trialhouse does)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
