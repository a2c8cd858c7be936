"""The built-in agents, run as real subprocesses on real clones of the example corpus."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from runner.agents import builtin
from runner.agents.usage_events import parse_agent_events
from runner.example import write_example

ROOT = Path(__file__).resolve().parents[2]
EVENT_TYPES = {"usage", "step", "tool_call", "file_edit"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    manifest = write_example(tmp_path_factory.mktemp("corpus") / "example")
    return manifest.parent, json.loads(manifest.read_text(encoding="utf-8"))


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True, check=True).stdout


def _case(data: dict, case_id: str) -> dict:
    return next(c for c in data["cases"] if c["id"] == case_id)


def _clone(corpus, case_id: str, dest: Path) -> Path:
    root, data = corpus
    case = _case(data, case_id)
    subprocess.run(["git", "clone", "-q", str(root / case.get("repository", data["repository"])), str(dest)],
                   check=True)
    _git(dest, "checkout", "-q", case.get("initial_commit", data["initial_commit"]))
    return dest


def _run(corpus, ws: Path, tmp: Path, *, kind: str, case_id: str, stage: str = "build", attempt: int = 1,
         seed: int = 7, skill: float | None = None, price: float | None = None, findings=(),
         patches_dir: Path | None = None, tag: str = "x") -> tuple[subprocess.CompletedProcess, Path, Path]:
    root, data = corpus
    case = _case(data, case_id)
    tmp.mkdir(parents=True, exist_ok=True)
    prompt = tmp / f"{tag}.prompt.md"
    prompt.write_text(case["prompt"], encoding="utf-8")
    events, verdict = tmp / f"{tag}.events.jsonl", tmp / f"{tag}.verdict.json"
    ctx = {
        "kind": kind, "stage": stage, "attempt": attempt, "case_id": case_id, "repetition": 1,
        "variant_id": "v", "model": "sim-alpha-SIMULATED", "seed": seed, "workspace": str(ws),
        "inputs_dir": str(root), "reference_patch": str(root / case["reference_patch"]),
        "patches_dir": str(patches_dir) if patches_dir else None,
        "candidates_dir": str(root / "candidates"), "skill": skill, "price_per_mtok": price,
        "findings": list(findings), "prompt_file": str(prompt), "events_file": str(events),
        "verdict_file": str(verdict), "labels": case["labels"],
    }
    ctx_path = tmp / f"{tag}.ctx.json"
    ctx_path.write_text(json.dumps(ctx), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "runner.agents.builtin", "--context", str(ctx_path)], cwd=ws,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    return done, events, verdict


def _lines(events: Path) -> list[dict]:
    return [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]


def _holds(ws: Path, patch: Path) -> bool:
    """The workspace's changes since HEAD are exactly this patch."""
    return _git(ws, "diff", "--full-index") == patch.read_text(encoding="utf-8")


def test_null_changes_nothing_and_reports_zero_usage(corpus, tmp_path):
    ws = _clone(corpus, "order-empty-items", tmp_path / "ws")
    done, events, _ = _run(corpus, ws, tmp_path / "t", kind="null", case_id="order-empty-items")
    assert done.returncode == 0, done.stderr
    assert _git(ws, "status", "--porcelain") == ""
    assert _lines(events) == [{"type": "usage", "input_tokens": 0, "output_tokens": 0, "cost_usd": 0}]
    usage = parse_agent_events(events).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (0, 0, 0)


def test_reference_applies_the_patch_in_the_first_build_only(corpus, tmp_path):
    root, data = corpus
    ws = _clone(corpus, "transfer-atomic", tmp_path / "ws with space")
    done, _, _ = _run(corpus, ws, tmp_path / "t", kind="reference", case_id="transfer-atomic", tag="b")
    assert done.returncode == 0, done.stderr
    assert _holds(ws, root / _case(data, "transfer-atomic")["reference_patch"])
    for stage, attempt in (("qa", 1), ("review", 1), ("build", 2)):
        done, _, _ = _run(corpus, ws, tmp_path / "t", kind="reference", case_id="transfer-atomic", stage=stage,
                          attempt=attempt, tag=f"{stage}{attempt}")
        assert done.returncode == 0, done.stderr
    assert _holds(ws, root / _case(data, "transfer-atomic")["reference_patch"])


def test_replay_applies_recorded_patch_or_fails_cleanly(corpus, tmp_path):
    root, _ = corpus
    patches = tmp_path / "recorded"
    patches.mkdir()
    (patches / "discount-bounds.patch").write_bytes((root / "candidates/discount-bounds/wrong.patch").read_bytes())
    ws = _clone(corpus, "discount-bounds", tmp_path / "ws")
    done, _, _ = _run(corpus, ws, tmp_path / "t", kind="replay", case_id="discount-bounds", patches_dir=patches)
    assert done.returncode == 0, done.stderr
    assert _holds(ws, patches / "discount-bounds.patch")

    ws2 = _clone(corpus, "format-cents-negative", tmp_path / "ws2")
    done, _, _ = _run(corpus, ws2, tmp_path / "t2", kind="replay", case_id="format-cents-negative",
                      patches_dir=patches)
    assert done.returncode == 1
    assert "format-cents-negative" in done.stderr and "Traceback" not in done.stderr
    assert _git(ws2, "status", "--porcelain") == ""


def test_bad_context_is_exit_2(tmp_path):
    ctx = tmp_path / "ctx.json"
    ctx.write_text(json.dumps({"kind": "teleport"}))
    done = subprocess.run([sys.executable, "-m", "runner.agents.builtin", "--context", str(ctx)],
                          env={"PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert done.returncode == 2 and "teleport" in done.stderr


def _simulate_trial(corpus, ws: Path, tmp: Path, case_id: str, seed: int, price: float | None = 3.0):
    """Build, QA, Review of one attempt; returns (diff, verdict, all event lines, stdout)."""
    out, lines = [], []
    verdict = None
    for stage in ("build", "qa", "review"):
        done, events, vfile = _run(corpus, ws, tmp, kind="simulated", case_id=case_id, stage=stage, seed=seed,
                                   skill=0.6, price=price, tag=stage)
        assert done.returncode == 0, done.stderr
        assert "SIMULATED" in done.stdout
        out.append(done.stdout)
        lines.extend(_lines(events))
        if stage == "review":
            verdict = json.loads(vfile.read_text(encoding="utf-8"))
    _git(ws, "add", "-A")
    return _git(ws, "diff", "--cached", "--full-index"), verdict, lines, out


def _tokens(lines: list[dict]) -> list[tuple]:
    return [(x["input_tokens"], x["output_tokens"], x.get("cost_usd")) for x in lines if x["type"] == "usage"]


def test_simulated_is_deterministic_and_reports_usage(corpus, tmp_path):
    case = "webhook-signature-verification"
    a = _simulate_trial(corpus, _clone(corpus, case, tmp_path / "a"), tmp_path / "ta", case, seed=11)
    b = _simulate_trial(corpus, _clone(corpus, case, tmp_path / "b"), tmp_path / "tb", case, seed=11)
    assert a[0] == b[0] and a[1] == b[1] and _tokens(a[2]) == _tokens(b[2])
    assert a[1]["status"] in {"approved", "changes_requested"} and isinstance(a[1]["findings"], list)
    assert {x["type"] for x in a[2]} <= EVENT_TYPES
    assert sum(x["type"] == "usage" for x in a[2]) == 3
    assert any(x["type"] == "file_edit" and x["elapsed_s"] >= 0 for x in a[2])
    for line in a[2]:
        if line["type"] == "usage":
            expected = (line["input_tokens"] + line["output_tokens"]) * 3.0 / 1e6
            assert line["cost_usd"] == pytest.approx(expected, abs=1e-6) and line["input_tokens"] > 0


def test_simulated_differs_across_seeds_and_leaves_cost_unknown_without_price(corpus, tmp_path):
    root, _ = corpus
    case = "account-name-validation"
    chosen = set()
    for seed in range(8):
        ws = _clone(corpus, case, tmp_path / f"ws{seed}")
        done, events, _ = _run(corpus, ws, tmp_path / f"t{seed}", kind="simulated", case_id=case, seed=seed,
                               skill=0.5, price=None)
        assert done.returncode == 0, done.stderr
        held = [label for label in builtin.LABELS if _holds(ws, root / "candidates" / case / f"{label}.patch")]
        assert len(held) == 1
        chosen.add(held[0])
        usage = [x for x in _lines(events) if x["type"] == "usage"]
        assert len(usage) == 1 and "cost_usd" not in usage[0]
        assert parse_agent_events(events).usage.cost_usd is None
    assert len(chosen) >= 2


def test_simulated_retry_swaps_candidates_cleanly(corpus, tmp_path):
    root, _ = corpus
    case = "inventory-reserve-all-or-nothing"
    for seed in range(6):
        ws = _clone(corpus, case, tmp_path / f"ws{seed}")
        done, _, _ = _run(corpus, ws, tmp_path / f"t{seed}", kind="simulated", case_id=case, seed=seed, skill=0.5,
                          tag="a1")
        assert done.returncode == 0, done.stderr
        _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "checkpoint")
        done, _, _ = _run(corpus, ws, tmp_path / f"t{seed}", kind="simulated", case_id=case, seed=seed, skill=0.5,
                          attempt=2, findings=["Target criterion failed: all-or-nothing"], tag="a2")
        assert done.returncode == 0, done.stderr
        # Whatever happened, the workspace holds exactly one candidate relative to the initial commit.
        diff = _git(ws, "diff", "--full-index", "HEAD~1")
        held = [label for label in builtin.LABELS
                if diff == (root / "candidates" / case / f"{label}.patch").read_text(encoding="utf-8")]
        assert len(held) == 1, (seed, done.stdout)


def test_correct_probability_follows_skill_and_case():
    easy_known = {"difficulty": "easy", "familiarity": "known"}
    hard_unknown = {"difficulty": "hard", "familiarity": "unknown"}
    assert builtin.correct_probability(1.0, easy_known, 1, []) == 1.0
    assert builtin.correct_probability(0.8, hard_unknown, 1, []) == pytest.approx(0.8 * 0.6 * 0.8)
    assert builtin.correct_probability(0.8, hard_unknown, 2, ["x"]) > builtin.correct_probability(
        0.8, hard_unknown, 1, [])
    assert builtin.correct_probability(0.8, easy_known, 1, []) > builtin.correct_probability(0.4, easy_known, 1, [])
    rng = random.Random(1)
    n, p = 4000, 0.3
    hits = sum(builtin._choose(rng, p)[0] == "correct" for _ in range(n))
    assert abs(hits - n * p) < 4 * (n * p * (1 - p)) ** 0.5
