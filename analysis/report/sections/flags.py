"""Patch-inspection flags per configuration and kind, with links to the flagged trials."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Link, Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, sentences


def section(d: ReportData) -> Section:
    s = Section("flags", "Patch-inspection flags")
    rows = d.flags.rows
    s.paragraphs.append(
        "Findings of the runner's inspection of each final patch (broad exception handlers, "
        "skipped or deleted tests, edits outside the task, …): for a reviewer to look at, "
        "never a failure and never part of a rate. Each trial links to its evidence "
        "(changes.patch, logs, verdicts), or to its page in the trial viewer when the report "
        "was written with --viewer-url or --bundle.")
    if not rows:
        s.absent = "No flag in the selected trials."
        s.warnings += sentences(d.flags.warnings)
        return s
    s.tables.append(Table(
        "Flags per configuration and kind",
        columns(["configuration", "kind", "flags", "trials flagged", "files", "trials"],
                [False, False, True, True, False, False], identifying=2),
        [[name(d, r), r["kind"], fmt.count(r["flags"]), fmt.pct(r["trials_flagged"], r["trials"]),
          fmt.listing(r["paths"], limit=3),
          tuple(Link(t, e, (run, t)) for t, run, e in zip(r["trial_ids"], r["run_ids"],
                                                          r["evidence"], strict=True))
          + ((Link(f"and {r['trials_flagged'] - len(r['trial_ids'])} more"),)
             if r["trials_flagged"] > len(r["trial_ids"]) else ())]
         for r in rows]))
    s.warnings += sentences(d.flags.warnings)
    return s
