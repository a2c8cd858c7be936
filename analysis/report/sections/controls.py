"""Controls: what was run, on what (runs, configurations, what was simulated), how it was
sandboxed, whether its evidence is intact, and what was left out (invalidated runs,
unscored cases)."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name

_RUN_COLUMNS = ["run", "source", "manifest", "manifest sha256", "initial commit", "started",
                "engine", "OS", "python / git", "prices as of", "status", "isolation",
                "executor", "integrity"]


NETWORK_WORDS = {"none": ", no network", "gateway": ", model gateway only", "open": ", network open"}
"""A run's ``network_policy`` in the isolation column; runs before the policies say on/off."""


def isolation(r: dict[str, Any]) -> str:
    """The sandbox a run's agents and graders ran in, in words ("NOT ISOLATED" when none,
    "network open" when its agents had the host's network)."""
    if r.get("isolated") is False:
        return "NOT ISOLATED" + (f" ({r['isolation_backend']}, network open)" if r.get("isolation_backend")
                                 else "")
    if r.get("isolated"):
        policy = r.get("network_policy")
        if policy in NETWORK_WORDS:
            net = NETWORK_WORDS[policy]
        else:
            net = "" if r.get("network") is None else (", network on" if r["network"] else ", network off")
        return f"{r.get('isolation_backend') or 'isolated'}{net}"
    return "unknown (not recorded by the source)"


def executor(r: dict[str, Any]) -> str:
    """Where a run's trials ran: "local", "ray 2.60.0, local instance", "ray … at HOST:PORT"."""
    kind = r.get("executor")
    if kind != "ray":
        return kind or "not recorded"
    where = f"at {r['executor_address']}" if r.get("executor_address") else "local instance"
    return f"ray {r.get('ray_version') or ''}, {where}".replace("ray , ", "ray, ")


def tampered(r: dict[str, Any]) -> bool:
    return str(r.get("integrity") or "").startswith("tampered")


def _run_row(r: dict[str, Any]) -> list[Any]:
    started = fmt.when(r.get("started_at"))
    return [r["run_id"] + (" SIMULATED" if r.get("simulated") else ""),
            r.get("source_format") or fmt.DASH, r.get("manifest_id") or fmt.DASH,
            (r.get("manifest_sha256") or fmt.DASH)[:16],
            (r.get("initial_commit") or fmt.DASH)[:12], started,
            r.get("engine_version") or fmt.DASH, r.get("os") or fmt.DASH,
            f"{r.get('python') or fmt.DASH} / {r.get('git_version') or fmt.DASH}",
            r.get("prices_as_of") or "none (cost from the agent, or unknown)",
            r.get("status") or fmt.DASH, isolation(r), executor(r),
            ("TAMPERED: " if tampered(r) else "") + (r.get("integrity") or "not recorded")]


def _role(d: ReportData, cid: str) -> str:
    e = d.roles.get(cid)
    if e is not None and e.is_baseline:
        return f"baseline ({e.agent_kind})"
    if e is not None and e.reasons:
        return "INELIGIBLE candidate"
    return "candidate"


def run_warnings(d: ReportData) -> list[str]:
    """Runs not sandboxed and runs whose events chain is broken (headline and controls)."""
    out = [f"NOT ISOLATED: run {r['run_id']} ran its agents without a sandbox "
           f"(isolation {r.get('isolation_backend') or 'none'}): an agent could read the "
           "answer or tamper with grading; treat its results as unverified."
           for r in d.runs if r.get("isolated") is False]
    out += [f"NETWORK OPEN: run {r['run_id']} gave its agents the host's network (isolation.network "
            "open): an agent could fetch an upstream fix or reach other trials and the host's loopback."
            for r in d.runs if r.get("isolated") and r.get("network_policy") == "open"]
    out += [f"TAMPERED: run {r['run_id']}: {r['integrity']}. Its configurations are "
            "ineligible." for r in d.runs if tampered(r)]
    return out


def _left_out(d: ReportData, s: Section) -> None:
    if d.invalidated:
        s.warnings.append(f"{len(d.invalidated)} invalidated run(s) excluded from every "
                          "number of this report (trialhouse runs invalidate).")
        s.tables.append(Table(
            "Invalidated runs (excluded)",
            columns(["run", "source", "manifest", "reason", "invalidated"]),
            [[r["run_id"], r.get("source_format") or fmt.DASH, r.get("manifest_id") or fmt.DASH,
              r["reason"], fmt.when(r.get("set_at"))] for r in d.invalidated]))
    _pre_existing(d, s)
    _regrades(d, s)
    u = d.unscored
    if u is None:
        return
    if not u.cases:
        s.oks.append("Every selected case passed its controls: 0 unscored cases.")
        return
    s.warnings += u.notes()
    s.tables.append(Table(
        "Unscored cases (counted: --include-unvalidated)" if u.included else
        "Unscored cases (left out: their controls failed or disagreed)",
        columns(["case", "run", "reason", "trials recorded", "trials skipped"],
                [False, False, False, True, True]),
        [[c.case_id, c.run_id, c.reason, fmt.count(c.trials), fmt.count(c.skipped)]
         for c in u.cases]))


def _pre_existing(d: ReportData, s: Section) -> None:
    """Scored cases whose repository was already red: which criteria, per case."""
    pre = d.pre_existing
    if pre is None or not pre.cases:
        return
    s.paragraphs += pre.notes()
    s.tables.append(Table(
        "Cases scored with pre-existing failures (noise: failing before and after a trial)",
        columns(["case", "run", "pre-existing criteria", "count"], [False, False, False, True]),
        [[c.case_id, c.run_id, ", ".join(c.criteria), fmt.count(len(c.criteria))] for c in pre.cases]))


def _regrades(d: ReportData, s: Section) -> None:
    """Regrade runs in the selection: what the new evaluator changed, trial by trial."""
    if d.regrades is None or not d.regrades.runs:
        return
    for run in d.regrades.runs:
        s.paragraphs.append(f"{run.sentence()}. Its trials replace the ones it graded again "
                            "(each agent trial is read once, under the latest evaluator).")
        changed = [t for t in run.trials if t.changed]
        if changed:
            s.tables.append(Table(
                f"Outcomes changed by regrade {run.run_id} (old evaluator → new)",
                columns(["trial", "case", "configuration", "old", "new"]),
                [[t.trial_id, t.case_id, t.variant or t.config_id[:12], t.old or fmt.DASH, t.new or fmt.DASH]
                 for t in changed]))
        if run.not_regraded:
            s.warnings.append(f"regrade {run.run_id}: {len(run.not_regraded)} trial(s) not graded again: "
                              + "; ".join(f"{n['trial_id']} ({n['reason']})" for n in run.not_regraded[:6]))


def section(d: ReportData) -> Section:
    s = Section("controls", "Controls: what was run, on what")
    s.paragraphs.append(
        f"{len(d.runs)} run(s), {len(d.configs)} configuration(s), {fmt.count(d.trials.height)} "
        "trial(s) selected. A configuration is model + harness + harness version + settings, "
        "never the model alone. Baselines (the no-agent and oracle variants) are reference "
        "points: never candidates, never ranked.")
    s.tables.append(Table(
        "Runs (manifest hashes, pinned commits, engine and OS versions, price table date)",
        columns(_RUN_COLUMNS), [_run_row(r) for r in d.runs]))
    s.tables.append(Table(
        "Configurations",
        columns(["configuration", "config_id", "role", "model", "harness", "version", "effort",
                 "source", "simulated"]),
        [[name(d, c), c["config_id"][:12], _role(d, c["config_id"]), c.get("model") or fmt.DASH,
          c.get("harness") or fmt.DASH, c.get("harness_version") or fmt.DASH,
          c.get("reasoning_effort") or fmt.DASH, c.get("source_format") or fmt.DASH,
          "SIMULATED" if c.get("simulated") else "no"] for c in d.configs]))
    _conditions(d, s)
    sim_runs = [r["run_id"] for r in d.runs if r.get("simulated")]
    if d.simulated or sim_runs:
        names = fmt.listing([fmt.label(c) for c in d.configs if c["config_id"] in d.simulated],
                            limit=8)
        s.warnings.append(
            f"SIMULATED: configurations {names}; runs flagged simulated: "
            f"{', '.join(sim_runs) or 'none'}. Simulated agents are seeded stand-ins; their "
            "numbers describe the pipeline, not a model.")
    s.warnings[:0] = run_warnings(d)
    _left_out(d, s)
    return s


def _conditions(d: ReportData, s: Section) -> None:
    """The named conditions each configuration ran under, when any was declared."""
    import json

    declared = [(c, json.loads(c["conditions_json"])) for c in d.configs if c.get("conditions_json")]
    if not declared:
        return
    keys = sorted({k for _, cond in declared for k in cond})
    s.paragraphs.append(
        "Named conditions (docs/rollout.md): part of a configuration, so trials under "
        f"different values of {', '.join(keys)} are never pooled; a paired comparison leaves "
        "out a candidate under other conditions than its baseline unless --pool-conditions.")
    s.tables.append(Table(
        "Conditions per configuration", columns(["configuration", *keys]),
        [[name(d, c), *[cond.get(k, fmt.DASH) for k in keys]] for c, cond in declared]))
