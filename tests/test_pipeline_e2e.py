"""The whole data flow through the real CLI, as a user would type it.

example corpus → validate → run (real subprocess agents, real git) → ingest (with
foreign results beside it) → summarize / compare → report. One small run, shared by
every test in this module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = ROOT / "examples" / "foreign"
CASES = ["order-quantity-validation", "transfer-atomic", "ledger-thread-safe-deposits"]


def th(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "trialhouse", *args],
        capture_output=True, text=True, timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"trialhouse {' '.join(args)} exited {proc.returncode}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("pipeline with spaces")
    corpus = base / "corpus"
    th("example", str(corpus))
    manifest = json.loads((corpus / "manifest.json").read_text())
    known = {c["id"] for c in manifest["cases"]}
    chosen = [c for c in CASES if c in known] or [c["id"] for c in manifest["cases"][:3]]
    manifest["cases"] = [c for c in manifest["cases"] if c["id"] in chosen]
    manifest.update(repetitions=1, control_repeats=1)  # flaky-control detection is tested elsewhere
    small = corpus / "small.json"
    small.write_text(json.dumps(manifest, indent=1))
    run_dir = base / "run"
    th("run", "--manifest", str(small), "--output", str(run_dir), "--jobs", "2", "--no-progress")
    wh = base / "wh" / "trialhouse.duckdb"
    th(
        "ingest", str(run_dir), str(FOREIGN / "runs.jsonl"), str(FOREIGN / "inspect-arith.eval"),
        str(FOREIGN / "harbor-job"), "--warehouse", str(wh), "--prices", str(FOREIGN / "prices.json"),
    )
    return {"manifest": small, "run": run_dir, "wh": wh, "base": base, "cases": chosen}


def test_validate_accepts_the_example(pipeline: dict[str, Path]) -> None:
    proc = th("validate", "--manifest", str(pipeline["manifest"]))
    assert proc.returncode == 0


def test_reference_accepted_and_null_never(pipeline: dict[str, Path]) -> None:
    report = json.loads((pipeline["run"] / "report.json").read_text())
    by_variant: dict[str, set[str]] = {}
    for trial in report["trials"]:
        by_variant.setdefault(trial["variant"], set()).add(trial["outcome"])
    assert by_variant["reference"] == {"accepted"}
    assert "accepted" not in by_variant["null"]


def test_summarize_shows_every_source_side_by_side(pipeline: dict[str, Path]) -> None:
    out = json.loads(th("summarize", "--warehouse", str(pipeline["wh"]), "--json").stdout)
    wh_sources = json.loads(th(
        "sql", "--warehouse", str(pipeline["wh"]), "--json",
        "SELECT DISTINCT source_format FROM trials ORDER BY 1",
    ).stdout)
    formats = {row["source_format"] for row in wh_sources}
    assert {"trialhouse", "runs-jsonl", "inspect", "harbor"} <= formats
    variants = {row["variant"] for row in out["rows"]}
    assert {"null", "reference"} <= variants
    models = {row["model"] for row in out["rows"]}
    assert len(models) >= 5  # our simulated models plus the foreign ones
    ours = [r for r in out["rows"] if r["variant"] == "reference"]
    assert ours and ours[0]["solved"] == ours[0]["valid"] == len(pipeline["cases"])
    for row in out["rows"]:
        assert row["config_id"] and "harness_version" in row


def test_reingest_changes_nothing(pipeline: dict[str, Path]) -> None:
    count = "SELECT (SELECT count(*) FROM trials) AS t, (SELECT count(*) FROM ingest_batches) AS b"
    before = json.loads(th("sql", "--warehouse", str(pipeline["wh"]), "--json", count).stdout)
    th("ingest", str(pipeline["run"]), "--warehouse", str(pipeline["wh"]))
    after = json.loads(th("sql", "--warehouse", str(pipeline["wh"]), "--json", count).stdout)
    assert before == after


def test_compare_against_the_null_baseline(pipeline: dict[str, Path]) -> None:
    """null may be named as the baseline; the reference oracle is never a candidate."""
    run_id = json.loads((pipeline["run"] / "report.json").read_text())["run_id"]
    wh = str(pipeline["wh"])
    refused = th("compare", "--warehouse", wh, "--run", run_id, "--baseline", "null",
                 "--candidate", "reference", "--json", check=False)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "reference is a baseline" in refused.stderr and "never a candidate" in refused.stderr
    out = json.loads(th("compare", "--warehouse", wh, "--run", run_id, "--baseline", "null",
                        "--json").stdout)
    variants = {c["candidate"]["variant"] for c in out["comparisons"]}
    assert variants and not variants & {"null", "reference"}
    assert [b["variant"] for b in out["excluded_baselines"]] == ["reference"]
    manifest = json.loads(pipeline["manifest"].read_text())
    holdout = {c["id"] for c in manifest["cases"] if c.get("holdout")}
    assert holdout, "the chosen cases include a holdout, reported in its own block"
    n_main = len(pipeline["cases"]) - len(holdout)
    for comparison in out["comparisons"]:  # null never accepts: every task is improved or tied
        sign = comparison["sign_test"]
        assert sign["regressions"] == 0 and sign["improvements"] + sign["ties"] == n_main
        assert sign["p"] == pytest.approx(min(1.0, 2 * 0.5**sign["improvements"]))


def test_default_baseline_is_the_first_variant_that_is_not_a_baseline(pipeline) -> None:
    run_id = json.loads((pipeline["run"] / "report.json").read_text())["run_id"]
    out = json.loads(th("compare", "--warehouse", str(pipeline["wh"]), "--run", run_id,
                        "--json").stdout)
    variants = [v["id"] for v in json.loads(pipeline["manifest"].read_text())["variants"]]
    kinds = {v["id"]: v["agent"]["kind"] for v in json.loads(pipeline["manifest"].read_text())["variants"]}
    first = next(v for v in variants if kinds[v] not in ("null", "reference"))
    assert variants[0] == "null" and out["baseline"]["variant"] == first
    assert out["baseline_chosen"] == "default"
    family = {c["candidate"]["config_id"] for c in out["comparisons"]}
    assert set(out["holm_family"]) == family and len(family) == len(variants) - 3
    assert {b["variant"] for b in out["excluded_baselines"]} == {"null", "reference"}


@pytest.mark.parametrize("baseline", [[], ["--baseline", "sim-beta-minimal"]])
def test_report_comparison_equals_compare_json(pipeline: dict[str, Path], baseline) -> None:
    """One engine: the report's comparison, Holm values and headline are compare's, exactly."""
    run_id = json.loads((pipeline["run"] / "report.json").read_text())["run_id"]
    wh = str(pipeline["wh"])
    out = pipeline["base"] / f"report-{len(baseline)}"
    th("report", "--warehouse", wh, "--run", run_id, "--output", str(out), *baseline)
    doc = json.loads((out / "report.json").read_text())
    cmp = json.loads(th("compare", "--warehouse", wh, "--run", run_id, *baseline, "--json").stdout)
    assert doc["comparisons"] and doc["comparisons"] == cmp["comparisons"]
    assert doc["headline"] == cmp["headline"]
    for key in ("baseline", "baseline_chosen", "holm_family", "excluded_baselines"):
        assert doc["comparison"][key] == cmp[key], key
    html = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    for line in cmp["headline"]["lines"]:  # the same sentence on the page and in the text
        assert line["sentence"] in md
        assert line["candidate"]["variant"] in html


def test_report_links_each_flagged_trial_to_its_evidence(pipeline: dict[str, Path]) -> None:
    import re

    out = pipeline["base"] / "report-0"
    if not out.exists():
        th("report", "--warehouse", str(pipeline["wh"]), "--output", str(out))
    doc = json.loads((out / "report.json").read_text())
    flagged = [t for r in doc["flags"] for t in r["trial_ids"]]
    assert flagged, "the example's reference and simulated patches carry patch-inspection flags"
    html = (out / "report.html").read_text()
    links = dict(re.findall(r'<a href="([^"]+)">([^<]+)</a>', html))
    by_trial = {text: href for href, text in links.items()}
    for trial in flagged:
        href = by_trial[trial]
        assert href.endswith(f"trials/{trial}/changes.patch") and (out / href).is_file(), href


def test_compare_from_the_run_report_keeps_the_simulated_labels(pipeline: dict[str, Path]) -> None:
    """compare --report RUN/report.json names simulated configurations SIMULATED, as compare
    over the warehouse does (it used to drop every label), and decides alike."""
    run = json.loads((pipeline["run"] / "report.json").read_text())
    simulated = {v["name"] for v in run["variants"] if v.get("simulated")}
    assert simulated, "the example's agents are simulated"
    from_report = th("compare", "--report", str(pipeline["run"] / "report.json")).stdout
    for name in simulated:  # once per name in the headline, at its first mention
        assert f"{name} SIMULATED" in from_report, name
    doc = json.loads(th("compare", "--report", str(pipeline["run"] / "report.json"), "--json").stdout)
    warehouse = json.loads(th("compare", "--warehouse", str(pipeline["wh"]), "--run", run["run_id"],
                              "--json").stdout)
    assert doc["headline"]["decision"]["verdict"] == warehouse["headline"]["decision"]["verdict"]
    assert [ln["sentence"].split(" (")[0] for ln in doc["headline"]["lines"]] == [
        ln["sentence"].split(" (")[0] for ln in warehouse["headline"]["lines"]]


def test_report_links_trial_ids_to_the_viewer_bundle_or_url(pipeline: dict[str, Path]) -> None:
    """--bundle DIR links each trial id to its page in the bundle (a relative file that
    exists and names the trial); --viewer-url links it under the running viewer's URL."""
    import re
    from urllib.parse import unquote

    bundle = pipeline["base"] / "viewer bundle"
    th("view", "--warehouse", str(pipeline["wh"]), "--bundle", str(bundle))
    out = pipeline["base"] / "report-bundle"
    th("report", "--warehouse", str(pipeline["wh"]), "--output", str(out), "--bundle", str(bundle))
    doc = json.loads((out / "report.json").read_text())
    flagged = [(run, t) for r in doc["flags"] for run, t in zip(r["run_ids"], r["trial_ids"], strict=True)]
    assert flagged
    html = (out / "report.html").read_text()
    by_trial = {text: href for href, text in re.findall(r'<a href="([^"]+)">([^<]+)</a>', html)}
    for run, trial in flagged:
        href = by_trial[trial]
        assert href.startswith("../viewer%20bundle/runs/"), href  # a URL: the space quoted
        page = out / unquote(href)
        assert href.endswith(f"runs/{run}/trials/{trial}/index.html") and page.is_file(), href
        assert trial in page.read_text()
    url = "http://127.0.0.1:8765"
    out = pipeline["base"] / "report-url"
    th("report", "--warehouse", str(pipeline["wh"]), "--output", str(out), "--viewer-url", url + "/")
    html = (out / "report.html").read_text()
    by_trial = {text: href for href, text in re.findall(r'<a href="([^"]+)">([^<]+)</a>', html)}
    for run, trial in flagged:
        assert by_trial[trial] == f"{url}/runs/{run}/trials/{trial}/index.html"
    both = th("report", "--warehouse", str(pipeline["wh"]), "--output", str(out), "--viewer-url", url,
              "--bundle", str(bundle), check=False)
    assert both.returncode == 2 and "choose one of --viewer-url and --bundle" in both.stderr


def test_report_is_written(pipeline: dict[str, Path]) -> None:
    out = pipeline["base"] / "report"
    th("report", "--warehouse", str(pipeline["wh"]), "--output", str(out))
    html = (out / "report.html").read_text()
    assert "SIMULATED" in html
    assert "<script src=\"http" not in html
    assert json.loads((out / "report.json").read_text())
    assert (out / "report.md").read_text().strip()


def test_matrix_leaves_model_less_baselines_out_of_the_grid(pipeline: dict[str, Path]) -> None:
    run_id = json.loads((pipeline["run"] / "report.json").read_text())["run_id"]
    out = json.loads(th("matrix", "--warehouse", str(pipeline["wh"]), "--run", run_id,
                        "--json").stdout)
    assert len(out["grid"]) == 4  # 2 simulated models × 2 simulated harnesses
    notes = " ".join(out["warnings"])
    assert "null" in notes and "reference" in notes


def test_pareto_ranks_agents_and_shows_baselines_as_reference_points(pipeline: dict[str, Path]) -> None:
    run_id = json.loads((pipeline["run"] / "report.json").read_text())["run_id"]
    out = json.loads(th("pareto", "--warehouse", str(pipeline["wh"]), "--run", run_id,
                        "--json").stdout)
    rows = out["rows"] if isinstance(out, dict) else out
    roles = {r["variant"]: r["role"] for r in rows}
    assert roles["null"] == roles["reference"] == "baseline"
    agents = [r for r in rows if r["role"] == "agent"]
    assert agents and any(r["on_front"] for r in agents)
    baseline_ids = {r["config_id"] for r in rows if r["role"] == "baseline"}
    assert all(not baseline_ids & set(r["dominated_by"] or []) for r in agents)
