"""Write tests/ingest/formats/fixtures/public/: a small excerpt of real published results.

Sources (git mirrors of public repositories; the commits are in fixtures/public/README.md):

- laude-institute/terminal-bench-leaderboard — Terminal-Bench (terminal-bench-core 0.1.1)
  submissions: five of them, two runs each (three for the mini-swe-agent one, whose
  third run directory holds a copy of another run, kept to test that it loads once);
- nilenso/swe-bench-pro-cost-token-time-analysis — SWE-bench Pro ``eval_results_*.json``;
- piyushhhxyz/vorflux-swe-benchmarks — one SWE-bench Verified submission folder.

Trimming (the only changes): Terminal-Bench ``results[]`` keeps the trials of ``TASKS``
(a run ``results.json``'s ``n_resolved``/``n_unresolved``/``resolved_ids``/
``unresolved_ids``/``accuracy`` are recomputed over them and ``pass_at_k`` dropped; each
trial's long ``instruction`` is cut to 80 characters); ``run_metadata.json`` keeps its
fields with ``task_ids`` cut to ``TASKS``; ``tb.lock`` is copied as is. SWE-bench Pro keeps
``PRO_INSTANCES`` instances (present in both files), and ``report-excerpt.html`` holds
their rows of the ``const DATA`` arrays of nilenso's ``docs/index.html`` and
``docs/unsubmitted.html`` (per-instance cost, tokens, API calls); the Verified submission keeps the
instances of ``VERIFIED_REPOS`` (``all_preds.jsonl`` lines without ``model_patch``,
``results.json`` lists filtered to them). Run: ``python tests/ingest/formats/gen_public_fixtures.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

MIRRORS = Path("/work/.mirror")
TB = MIRRORS / "laude-institute+terminal-bench-leaderboard" / "repo"
PRO = MIRRORS / "nilenso+swe-bench-pro-cost-token-time-analysis" / "repo"
VERIFIED = MIRRORS / "piyushhhxyz+vorflux-swe-benchmarks" / "repo"
OUT = Path(__file__).resolve().parent / "fixtures" / "public"

TASKS = ["hello-world", "fix-permissions", "csv-to-parquet", "crack-7z-hash", "grid-pattern-transform",
         "heterogeneous-dates", "sqlite-db-truncate", "swe-bench-astropy-1", "processing-pipeline",
         "build-initramfs-qemu"]
CORE = "results/terminal-bench-core@0.1.1"
RUNS = [  # (folder holding results.json/run_metadata.json/tb.lock, or a <run>_results.json file)
    f"{CORE}/20250711_openhands_claude-4-sonnet/openhands-sonnet",
    f"{CORE}/20250711_openhands_claude-4-sonnet/openhands-sonnet2",
    f"{CORE}/20250923_droid_claude-4-sonnet/tb_rc2_sonnet_1",
    f"{CORE}/20250923_droid_claude-4-sonnet/tb_rc2_sonnet_2",
    f"{CORE}/20250924_droid_gpt-5/tb_rc2_g5_1",
    f"{CORE}/20250924_droid_gpt-5/tb_rc2_g5_2",
    f"{CORE}/20250825_swe-agent-mini_claude-4-sonnet/2025-08-07__20-46-16",
    f"{CORE}/20250825_swe-agent-mini_claude-4-sonnet/2025-08-15__16-23-45",
    f"{CORE}/20250825_swe-agent-mini_claude-4-sonnet/2025-08-15__19-28-24",
    f"{CORE}/20250825_swe-agent-mini_claude-4-sonnet/2025-08-15__19-28-24/2025-08-15__16-23-45",
    "results/terminal-bench-core:0.1.1/20250906_orchestrator_claude-4.1-opus",
    f"{CORE}/20250829_goose_claude-4-opus/2025-08-27__22-13-13_results.json",
    f"{CORE}/20250829_goose_claude-4-opus/2025-08-29__07-37-19_results.json",
]
PRO_INSTANCES = 24
VERIFIED_SUB = "evaluation/verified/20250519_vorflux_opus46-code_gpt55h-review"
VERIFIED_REPOS = ("psf__requests", "pallets__flask", "mwaskom__seaborn", "pylint-dev__pylint")


def show(repo: Path, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], check=True,
                          capture_output=True).stdout


def head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")


def trim_run_results(obj: dict) -> dict:
    kept = [dict(r, instruction=r.get("instruction", "")[:80]) for r in obj["results"]
            if r["task_id"] in TASKS]
    resolved = [r["task_id"] for r in kept if r.get("is_resolved")]
    unresolved = [r["task_id"] for r in kept if not r.get("is_resolved")]
    return {"results": kept, "n_resolved": len(resolved), "n_unresolved": len(unresolved),
            "resolved_ids": resolved, "unresolved_ids": unresolved,
            "accuracy": len(resolved) / len(kept) if kept else 0.0}


def terminal_bench() -> None:
    for run in RUNS:
        if run.endswith("_results.json"):
            write(OUT / "tb" / run, trim_run_results(json.loads(show(TB, run))))
            continue
        write(OUT / "tb" / run / "results.json", trim_run_results(json.loads(show(TB, f"{run}/results.json"))))
        meta = json.loads(show(TB, f"{run}/run_metadata.json"))
        meta["task_ids"] = [t for t in meta.get("task_ids") or [] if t in TASKS]
        write(OUT / "tb" / run / "run_metadata.json", meta)
        (OUT / "tb" / run / "tb.lock").write_bytes(show(TB, f"{run}/tb.lock"))


def swe_bench_pro() -> None:
    gpt5 = json.loads(show(PRO, "eval_results_gpt5.json"))
    claude = json.loads(show(PRO, "eval_results_claude45.json"))
    both = sorted(set(gpt5) & set(claude))
    step = len(both) // PRO_INSTANCES
    keep = both[::step][:PRO_INSTANCES]
    write(OUT / "pro" / "eval_results_gpt5.json", {k: gpt5[k] for k in keep})
    write(OUT / "pro" / "eval_results_claude45.json", {k: claude[k] for k in keep})
    # the per-instance stats of the same runs, as nilenso's reports embed them (const DATA = [...])
    rows = []
    for page in ("docs/index.html", "docs/unsubmitted.html"):
        text = show(PRO, page).decode()
        at = text.index("const DATA = ") + len("const DATA = ")
        rows += [r for r in json.JSONDecoder().raw_decode(text, at)[0] if r["instance_id"] in keep]
    (OUT / "pro" / "report-excerpt.html").write_text(
        "<!doctype html><title>excerpt of docs/index.html + docs/unsubmitted.html</title>\n"
        f"<script>\nconst DATA = {json.dumps(rows)};\n</script>\n", encoding="utf-8")


def swe_bench_verified() -> None:
    out = OUT / "verified" / VERIFIED_SUB
    out.mkdir(parents=True, exist_ok=True)
    (out / "metadata.yaml").write_bytes(show(VERIFIED, f"{VERIFIED_SUB}/metadata.yaml"))
    preds = [json.loads(line) for line in show(VERIFIED, f"{VERIFIED_SUB}/all_preds.jsonl").splitlines()]
    keep = [p for p in preds if p["instance_id"].startswith(VERIFIED_REPOS)]
    ids = {p["instance_id"] for p in keep}
    (out / "all_preds.jsonl").write_text(
        "".join(json.dumps({"instance_id": p["instance_id"], "model_name_or_path": p["model_name_or_path"]})
                + "\n" for p in keep), encoding="utf-8")
    results = json.loads(show(VERIFIED, f"{VERIFIED_SUB}/results/results.json"))
    write(out / "results" / "results.json", {k: [i for i in v if i in ids] for k, v in results.items()})


def main() -> None:
    for part in ("tb", "pro", "verified"):  # README.md stays
        shutil.rmtree(OUT / part, ignore_errors=True)
    terminal_bench()
    swe_bench_pro()
    swe_bench_verified()
    (OUT / "COMMITS").write_text("".join(f"{r.parent.name.replace('+', '/')} {head(r)}\n"
                                         for r in (TB, PRO, VERIFIED)), encoding="utf-8")


if __name__ == "__main__":
    main()
