"""SWE-bench Pro per-instance cost, tokens and steps, as published → runs-jsonl.

SWE-bench Pro's ``eval_results_*.json`` say only resolved or not. The per-instance cost
(Scale AI's LiteLLM pricing), tokens sent and API calls of the same October 2025 runs
(SWE-agent 1.1.0, 250 turns) are published by nilenso/swe-bench-pro-cost-token-time-analysis
inside two HTML reports, as a JavaScript array ``const DATA = [...]``: ``docs/index.html``
(616 instances both models submitted) and ``docs/unsubmitted.html`` (the other 114). This
reads that array — data embedded in a web page is no result format, so it stays an example
script rather than an importer — and writes one runs-jsonl line per (model, instance).

Resolved agrees with ``eval_results_*.json`` on every instance (checked when the files are
given with ``--check``). ``output_tokens`` stays null: SWE-agent's ``tokens_received``
counts only part of the output (the report marks it so), and unknown is not zero.
Wall time stays null too (the report has tool time only).

    python examples/public-data/pro_costs_to_runs_jsonl.py docs/index.html docs/unsubmitted.html \
        > pro-costs.jsonl [--check eval_results_gpt5.json eval_results_claude45.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MODELS = {"gpt5": "gpt5", "claude": "claude45"}  # report key → the eval_results file's name
MARKER = "const DATA = "


def published_rows(page: Path) -> list[dict]:
    text = page.read_text(encoding="utf-8")
    at = text.find(MARKER)
    if at < 0:
        raise SystemExit(f"{page}: no '{MARKER}[...]' array in this page")
    rows, _ = json.JSONDecoder().raw_decode(text, at + len(MARKER))
    return rows


def lines(rows: list[dict]) -> list[dict]:
    out = []
    for row in rows:
        for key, model in MODELS.items():
            side = row.get(key)
            if not side:
                continue  # this model has no trajectory for the instance
            stats = side.get("model_stats") or {}
            out.append({
                "model": model, "harness": "SWE-agent", "harness_version": "1.1.0",
                "task_id": row["instance_id"], "trial": 1,
                "status": "solved" if side["resolved"] else "failed",
                "cost_usd": stats.get("instance_cost"), "input_tokens": stats.get("tokens_sent"),
                "output_tokens": None, "steps": stats.get("api_calls"),
                "repo": row.get("repo"), "benchmark": "swe-bench-pro",
                "submitted": side.get("submitted"), "exit_status": side.get("exit_status"),
            })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="+", type=Path)
    ap.add_argument("--check", nargs=2, type=Path, metavar=("GPT5_JSON", "CLAUDE45_JSON"))
    args = ap.parse_args()
    out = lines([r for p in args.pages for r in published_rows(p)])
    if args.check:
        evals = {m: json.loads(p.read_text()) for m, p in zip(MODELS.values(), args.check, strict=True)}
        wrong = [o for o in out if o["task_id"] in evals[o["model"]]
                 and evals[o["model"]][o["task_id"]] != (o["status"] == "solved")]
        if wrong:
            raise SystemExit(f"{len(wrong)} line(s) disagree with eval_results, e.g. {wrong[0]['task_id']}")
    for o in out:
        sys.stdout.write(json.dumps(o) + "\n")


if __name__ == "__main__":
    main()
