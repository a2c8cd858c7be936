"""The glossary: the report's statistical and eligibility terms, each explained once.

The HTML links a term's first use in the page's prose to its entry here
(``analysis.report.render``), so the headline can say "Holm" or "sign test" in a few words
and a reader who does not know them is one click from the meaning (docs/reports.md).
"""

from __future__ import annotations

from analysis.report.document import Section, Term
from analysis.report.gather import ReportData
from analysis.summary import SMALL_TASKS

TERMS = (
    Term("baseline", "baseline", r"baselines?",
         "The configuration every candidate is compared with. By default the manifest's first "
         "variant that is not a null or reference agent; choose another with --baseline (the "
         "report and compare take the same one)."),
    Term("reference-points", "reference points (null, reference)",
         r"reference points?",
         "The null agent (changes nothing: the floor) and the reference agent (applies the "
         "known answer: the ceiling). They are measured and shown, but never a candidate, "
         "never ranked on a Pareto front, never ineligible, and never in a Holm family."),
    Term("candidate", "candidate", r"candidates?",
         "Every configuration that is not a baseline of its kind (null, reference). The "
         "candidates of one comparison form its Holm family."),
    Term("ineligible", "ineligible", r"ineligible",
         "A candidate with an invalid trial, a blocker regression (a criterion of severity "
         "blocker that passed on the initial commit and failed), a run whose events chain is "
         "tampered, or a trial that leaked a run secret. It is never named best and never on "
         "a Pareto front, whatever its rate; the Eligibility section lists why. A significant "
         "regression against the baseline does not make a candidate ineligible: it makes it "
         "distinguishably worse."),
    Term("distinguishable", "distinguishable", r"distinguishabl[ey]",
         "The difference from the baseline is larger than chance at this sample size: the "
         "per-task sign test, Holm-adjusted over the candidates, gives p < 0.05. \"Not "
         "distinguishable\" is not \"equal\": more tasks could still show a difference."),
    Term("sign-test", "sign test", r"sign test",
         "Each compared task is improved (the candidate accepted a larger share of its "
         "repetitions), regressed or tied. The exact two-sided binomial test on the untied "
         "tasks asks whether improvements and regressions could be a coin toss. With fewer "
         "than 6 untied tasks its p-value cannot fall below 0.05 (at 5 it is 0.0625 at best), "
         "so the headline says too few tasks differ."),
    Term("holm", "Holm", r"Holm(?:-adjusted)?",
         "Holm's step-down adjustment of the p-values of all candidates compared with one "
         "baseline, so that naming any of them distinguishable keeps a 5% chance of a false "
         "alarm for the whole set, not for each."),
    Term("compared-tasks", "compared tasks", r"compared tasks?",
         "The tasks the baseline and the candidate both ran with at least one valid trial; "
         "holdout tasks are compared in a block of their own. The headline's rates, effects "
         "and costs per accepted are over these tasks."),
    Term("interval", "95% CI", r"95% CI",
         "A 95% confidence interval. For a rate in the headline: the mean of per-task rates "
         "with a task-clustered t interval (tasks as a sample). For an effect in points: the "
         "paired t interval of the per-task differences. Displayed intervals are clipped to "
         "what is possible (0–100%)."),
    Term("points", "points", r"points (?:more|fewer)",
         "Percentage points: the difference of two acceptance rates (60% against 50% is 10 "
         "points more, or 20% more)."),
    Term("cost-per-accepted", "cost per accepted", r"cost per accepted|per accepted",
         "All spend of complete trials, failed ones included, divided by the accepted results. "
         "Unknown when any of those trials has an unknown cost; the coverage says for how "
         "many trials the cost is known. Never $0 for unknown."),
    Term("pareto", "Pareto front", r"Pareto fronts?",
         "The configurations no other eligible one beats on both cost and acceptance. A "
         "dominated configuration has another at least as cheap and at least as good, and "
         "strictly better on one."),
    Term("wilson", "Wilson interval", r"Wilson",
         "An interval for a proportion of trials. It treats repetitions of one task as "
         "independent, so it is too narrow when tasks repeat; the task-clustered interval is "
         "the honest one then."),
    Term("pass-k", "pass^k and pass@k", r"pass\^k|pass@k",
         "Estimated probabilities over k repetitions of a task: pass^k that all k succeed "
         "(reliability), pass@k that at least one does."),
    Term("descriptive", "descriptive sample", r"descriptive sample|descriptive only",
         f"A statistic resting on fewer than {SMALL_TASKS} tasks: read it as a description of "
         "these tasks, not as an estimate for others."),
    Term("holdout", "holdout", r"holdout",
         "Tasks the manifest marks as holdout, kept apart from the ones a configuration is "
         "tuned on. They are compared in a block of their own, so a change fitted to the "
         "other tasks shows there."),
)


def section(d: ReportData) -> Section:
    s = Section("glossary", "Glossary")
    s.terms = list(TERMS)
    return s
