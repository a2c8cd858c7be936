"""Plain-text lines for the rollout commands (``rules check``, ``gc``): one line per finding,
the figures beside it, so a CI log says why a pipeline stopped (docs/rollout.md)."""

from __future__ import annotations

from typing import Any


def rules_lines(check: Any) -> list[str]:
    """``FIRED``/``resumed``/``ok``/``not evaluated`` lines, fired first, then a total."""
    from analysis.rollout_layouts import (
        STATUS_WORDS,
        configuration,
        resumed_text,
        rule_figures,
        rule_window,
    )

    out = []
    for r in check.results:
        line = (f"{STATUS_WORDS[r.status]:<13} {r.rule.id}  {configuration(r)}: {rule_figures(r)}; "
                f"{rule_window(r)}; owner: {', '.join(r.rule.owner)}")
        if r.resumed:
            line += f"; {resumed_text(r)}"
        out.append(line)
    fired = len(check.fired)
    out.append(f"{fired} of {len(check.results)} rule(s) fired" + (
        "; the rollout stops until an owner resumes (trialhouse rules resume RULE --by NAME --reason TEXT)"
        if fired else ""))
    return out


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def gc_lines(result: Any) -> list[str]:
    """One line per run (what goes, by kind), the skipped runs with why, and the total."""
    out = []
    for run in result.runs:
        name = run.run_id or run.run_dir.name
        if run.skipped:
            out.append(f"skipped  {run.run_dir} ({name}): {run.skipped}")
            continue
        kinds: dict[str, list[int]] = {}
        for r in run.removals:
            k = kinds.setdefault(r.kind, [0, 0, 0])
            k[0], k[1], k[2] = k[0] + 1, k[1] + r.files, k[2] + r.bytes
        what = "; ".join(f"{kind} {d} dir(s), {f:,} file(s), {_size(b)}" for kind, (d, f, b) in kinds.items())
        out.append(f"{'removed' if result.applied else 'would remove'}  {run.run_dir} ({name}, finished "
                   f"{run.finished_at:%Y-%m-%d %H:%M} UTC): {what or 'nothing older than the policy'}")
    verb = "removed" if result.applied else "would remove (dry run; --apply removes)"
    out.append(f"{verb}: {result.files:,} file(s), {_size(result.bytes)} in {len(result.runs)} run(s); "
               "kept: events, seals, report.json, inputs, patches, checkpoints, verdicts, prompts; "
               "the warehouse is not touched" + ("; recorded in each run's retention.jsonl" if result.applied else ""))
    return out


def cohort_view(result: Any) -> Any:
    """``trialhouse cohorts``: the caveat, each cohort beside the benchmark, the control groups."""
    from analysis.rollout_cohort_tables import cohort_table, control_table
    from trialhouse.render import View

    view = View(lines=[result.caveat])
    if not result.rows and not result.controls:
        view.lines.append("No cohort ticket in the warehouse; load one with: trialhouse ingest --cohort "
                          "production FILE (docs/rollout.md)")
        return view
    if result.rows:
        view.tables.append(cohort_table(result))
    if result.controls:
        view.tables.append(control_table(result))
        view.notes += [f"{c.cohort}: {w}" for c in result.controls for w in c.warnings]
    return view
