"""Generate real Inspect AI logs (mockllm provider) for the inspect importer tests.

Run: .venv/bin/python tests/ingest/formats/gen_inspect_fixtures.py
Writes small logs to tests/ingest/formats/fixtures/inspect/ and one to examples/foreign/:
- ``mixed.eval`` / ``mixed.json``: 4 samples × 2 epochs, explicit token usage, some pass,
  some fail, one sample whose solver raises (errored sample, log still succeeds);
- ``limit.eval``: a token limit stops every sample (limit on the samples);
- ``error.eval``: the 2nd sample's solver raises with fail_on_error=True → log
  ``status: error``; the samples after it never ran.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, TaskState, generate, solver

HERE = Path(__file__).parent / "fixtures" / "inspect"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "foreign"


def _outputs(n: int):
    for i in range(n):
        out = ModelOutput.from_content("mockllm/model", "The answer is 42.")
        out.usage = ModelUsage(
            input_tokens=1000 + 10 * i,
            output_tokens=200 + i,
            total_tokens=1200 + 11 * i + 300,
            input_tokens_cache_read=300,
        )
        yield out


@solver
def maybe_crash():
    async def solve(state: TaskState, generate_: Generate) -> TaskState:
        if state.metadata.get("crash"):
            raise RuntimeError("sandbox exploded (simulated)")
        return await generate_(state)

    return solve


def _samples(crash: str) -> list[Sample]:
    samples = [
        Sample(id="add", input="What is 40+2?", target="42", metadata={"repo": "acme/math"}),
        Sample(id="mul", input="What is 6*7?", target="42", metadata={"repo": "acme/math"}),
        Sample(id="sub", input="What is 50-7?", target="43", metadata={"repo": "acme/calc"}),
        Sample(id=4, input="What is 2+2?", target="4", metadata={"repo": "acme/calc"}),
    ]
    for s in samples:
        assert s.metadata is not None
        s.metadata["crash"] = str(s.id) == crash
    return samples


@task
def arith(crash: str = "4") -> Task:
    """Sample ``crash`` raises in the solver ("" for none)."""
    return Task(dataset=_samples(crash), solver=[maybe_crash(), generate()], scorer=includes())


def _run(name: str, dest: Path, log_format: str, **kwargs) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        [log] = eval(
            arith(crash=kwargs.pop("crash", "4")),
            model="mockllm/model",
            model_args={"custom_outputs": _outputs(100)},
            log_dir=tmp,
            log_format=log_format,
            display="none",
            max_samples=1,
            metadata={"harness": "arith-solver", "harness_version": "0.1.0"},
            tags=["fixture"],
            **kwargs,
        )
        src = Path(log.location)
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest / name)
        print(f"{name}: status={log.status} samples={len(log.samples or [])}")


def main() -> None:
    _run("mixed.eval", HERE, "eval", epochs=2, fail_on_error=False)
    _run("mixed.json", HERE, "json", epochs=2, fail_on_error=False)
    _run("limit.eval", HERE, "eval", epochs=1, token_limit=100, crash="")
    _run("error.eval", HERE, "eval", epochs=1, fail_on_error=True, crash="mul")
    shutil.copy(HERE / "mixed.eval", EXAMPLES / "inspect-arith.eval")


if __name__ == "__main__":
    main()
