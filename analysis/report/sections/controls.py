"""Controls: what was run, on what (runs, configurations, what was simulated)."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.report.document import Section, Table
from analysis.report.gather import ReportData
from analysis.report.sections.common import name

_RUN_COLUMNS = ["run", "source", "manifest", "manifest sha256", "initial commit", "started",
                "engine", "OS", "python / git", "prices as of", "status"]


def _run_row(r: dict[str, Any]) -> list[Any]:
    started = r["started_at"].strftime("%Y-%m-%d %H:%M UTC") if r.get("started_at") else fmt.DASH
    return [r["run_id"] + (" SIMULATED" if r.get("simulated") else ""),
            r.get("source_format") or fmt.DASH, r.get("manifest_id") or fmt.DASH,
            (r.get("manifest_sha256") or fmt.DASH)[:16],
            (r.get("initial_commit") or fmt.DASH)[:12], started,
            r.get("engine_version") or fmt.DASH, r.get("os") or fmt.DASH,
            f"{r.get('python') or fmt.DASH} / {r.get('git_version') or fmt.DASH}",
            r.get("prices_as_of") or "none (cost from the agent, or unknown)",
            r.get("status") or fmt.DASH]


def _role(d: ReportData, cid: str) -> str:
    e = d.roles.get(cid)
    if e is not None and e.is_baseline:
        return f"baseline ({e.agent_kind})"
    return "candidate"


def section(d: ReportData) -> Section:
    s = Section("controls", "Controls: what was run, on what")
    s.paragraphs.append(
        f"{len(d.runs)} run(s), {len(d.configs)} configuration(s), {fmt.count(d.trials.height)} "
        "trial(s) selected. A configuration is model + harness + harness version + settings, "
        "never the model alone. Baselines (the no-agent and oracle variants) are reference "
        "points: never candidates, never ranked.")
    s.tables.append(Table(
        "Runs (manifest hashes, pinned commits, engine and OS versions, price table date)",
        _RUN_COLUMNS, [_run_row(r) for r in d.runs]))
    s.tables.append(Table(
        "Configurations",
        ["configuration", "config_id", "role", "model", "harness", "version", "effort",
         "source", "simulated"],
        [[name(d, c), c["config_id"][:12], _role(d, c["config_id"]), c.get("model") or fmt.DASH,
          c.get("harness") or fmt.DASH, c.get("harness_version") or fmt.DASH,
          c.get("reasoning_effort") or fmt.DASH, c.get("source_format") or fmt.DASH,
          "SIMULATED" if c.get("simulated") else "no"] for c in d.configs]))
    sim_runs = [r["run_id"] for r in d.runs if r.get("simulated")]
    if d.simulated or sim_runs:
        names = fmt.listing([fmt.label(c) for c in d.configs if c["config_id"] in d.simulated],
                            limit=8)
        s.warnings.append(
            f"SIMULATED: configurations {names}; runs flagged simulated: "
            f"{', '.join(sim_runs) or 'none'}. Simulated agents are seeded stand-ins; their "
            "numbers describe the pipeline, not a model.")
    return s
