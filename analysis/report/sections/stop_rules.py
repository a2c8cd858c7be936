"""Stop rules: the report's first section when a rules file was given; a fired rule is a
warning naming the owner who may resume it (docs/rollout.md, "Stop rules")."""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.rollout_layouts import configuration, rule_figures, rule_window, rules_table


def section(d: ReportData) -> Section | None:
    check = d.stop_rules
    if check is None:
        return None
    s = Section("stop-rules", "Stop rules")
    fired = check.fired
    if fired:
        s.lead = (f"{len(fired)} stop rule(s) fired: the rollout stops until an owner resumes "
                  "(trialhouse rules resume RULE --by NAME --reason TEXT).")
    else:
        s.lead = f"No stop rule fired ({len(check.results)} checked)."
    for r in fired:
        s.warnings.append(f"STOP: {r.rule.id} fired for {configuration(r)}: {rule_figures(r)}; "
                          f"{rule_window(r)}. Owner who may resume: {', '.join(r.rule.owner)}.")
    s.oks += [f"{r.rule.id}: resumed by {r.resumed['by']}: {r.resumed['reason']}"
              for r in check.results if r.resumed]
    s.paragraphs.append("Each rule reads its configuration's trials in its window through the valid-trial "
                        "rule; a resume covers exactly the trials it was decided on, and a new run "
                        "in the window fires the rule again.")
    s.tables.append(rules_table(check))
    return s
