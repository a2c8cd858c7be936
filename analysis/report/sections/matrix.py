"""Model × harness (``analysis.matrix``)."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import small_sample


def _effects(caption: str, key: str, a: str, b: str, effects: list[dict]) -> Table:
    return Table(
        caption, columns([key, f"{a} A", f"{a} B", "mean difference B − A (95% CI)",
                          "sign test (improved/regressed, p)"], identifying=3),
        [[e[key], e[f"{b}_a"], e[f"{b}_b"], fmt.diff_ci(e["mean_diff"], e["ci_low"], e["ci_high"]),
          f"{e['sign_test']['improvements']}/{e['sign_test']['regressions']}, "
          f"p = {fmt.pval(e['sign_test']['p'])}"] for e in effects])


def _interaction(m: dict) -> str | None:
    it, logit = m["interaction"], m.get("logit")
    if m["design"] != "full":
        return None
    text = f"Interaction (does the harness change the model effect?): {it.get('method')}"
    if it.get("estimable"):
        text += f", p = {fmt.pval(it.get('p'))}"
    if it.get("note"):
        text += f" — {it['note']}"
    if logit is not None:
        text += (f". Log-odds scale ({logit['method']}): χ² = {fmt.number(logit['chi2'], 2)} on "
                 f"{logit['df']} df, p = {fmt.pval(logit['p'])}" if logit["estimable"]
                 else f". Log-odds scale: {logit['note']}")
    return text + f". Common tasks: {m['common_tasks']}."


def section(d: ReportData) -> Section:
    s = Section("matrix", "Model × harness")
    if d.matrix is None:
        s.absent = f"No model × harness grid: {d.matrix_absent}"
        return s
    m = d.matrix.as_dict()
    s.paragraphs.append(m["verdict"])
    s.charts.append("matrix")
    inter = _interaction(m)
    if inter:
        s.paragraphs.append(inter)
    if m["model_effects"]:
        s.tables.append(_effects("Model effect within each harness (paired by task)",
                                 "harness", "model", "model", m["model_effects"]))
    if m["harness_effects"]:
        s.tables.append(_effects("Harness effect within each model (paired by task)", "model",
                                 "harness", "harness", m["harness_effects"]))
    s.warnings += list(m.get("warnings", []))
    s.warnings += small_sample(m["common_tasks"], "the model × harness grid")
    return s
