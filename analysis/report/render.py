"""Rendering: the document as one offline HTML page, as Markdown, and as report.json.

HTML: every text is escaped by Jinja's autoescape; the ``badge`` filter escapes first and
only then wraps the whole word SIMULATED in its badge, so a table cell can never show
``&lt;span`` (the browser test asserts it). The ``prose`` filter does the same for the
sections' sentences and also links the first use of each glossary term on the page to its
entry (``Glossary``). Vega, Vega-Lite and vega-embed are inlined (bundled by vl-convert), so
the page opens without a network.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import markupsafe

from analysis.document import Cell, Link, cell_text
from analysis.formatting import SIMULATED
from analysis.report.document import Section, Term

TEMPLATES = Path(__file__).with_name("templates")
_SIM_WORD = re.compile(rf"(?<![\w-]){SIMULATED}(?![\w-])")
_BADGE = f'<span class="sim">{SIMULATED}</span>'


def badge(text: Any) -> markupsafe.Markup:
    """Escape ``text``, then mark the word SIMULATED with its badge."""
    escaped = str(markupsafe.escape(str(text)))
    return markupsafe.Markup(_SIM_WORD.sub(_BADGE, escaped))


class Glossary:
    """Links the first use of each term in the page's prose to its glossary entry (one
    instance per rendered page: what was linked is remembered)."""

    def __init__(self, terms: list[Term]) -> None:
        self.terms = {f"t{i}": t for i, t in enumerate(terms)}
        self.linked: set[str] = set()
        alternatives = "|".join(f"(?P<{k}>{t.pattern})" for k, t in self.terms.items())
        self.pattern = re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)

    def _link(self, m: re.Match[str]) -> str:
        term = self.terms[str(m.lastgroup)]
        if term.id in self.linked:
            return m.group(0)
        self.linked.add(term.id)
        return f'<a class="term" href="#term-{term.id}">{m.group(0)}</a>'

    def __call__(self, text: Any) -> markupsafe.Markup:
        """Escape ``text``, link the terms used for the first time, badge SIMULATED."""
        escaped = str(markupsafe.escape(str(text)))
        if self.terms:
            escaped = self.pattern.sub(self._link, escaped)
        return markupsafe.Markup(_SIM_WORD.sub(_BADGE, escaped))


def _link(link: Link) -> markupsafe.Markup:
    if not link.href:
        return badge(link.text)
    return markupsafe.Markup('<a href="{}">{}</a>').format(link.href, badge(link.text))


def cell_html(cell: Cell) -> markupsafe.Markup:
    if isinstance(cell, Link):
        return _link(cell)
    if isinstance(cell, tuple):
        return markupsafe.Markup(", ").join(_link(link) for link in cell)
    return badge(cell)


def _env(terms: list[Term]) -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["j2"]),
        undefined=jinja2.StrictUndefined,
    )
    env.filters["badge"] = badge
    env.filters["prose"] = Glossary(terms)
    env.filters["cell"] = cell_html
    return env


def html(context: dict[str, Any], specs: dict[str, dict]) -> str:
    """The self-contained page: template + inlined Vega bundle + chart specs as JSON."""
    from altair.utils.html import vl_version_for_vl_convert

    from analysis.theme import vega_bundle

    bundle, version = vega_bundle(), vl_version_for_vl_convert()
    specs_json = json.dumps(specs, allow_nan=False).replace("</", "<\\/")
    terms = [t for s in context["sections"] for t in s.terms]
    return (_env(terms).get_template("report.html.j2")
            .render(**context, vega_bundle=bundle, vegalite_version=version,
                    specs_json=specs_json))


def _md_cell(cell: Cell) -> str:
    if isinstance(cell, Link):
        text = cell.text.replace("|", "\\|")
        return f"[{text}]({cell.href})" if cell.href else text
    if isinstance(cell, tuple):
        return ", ".join(_md_cell(link) for link in cell)
    return cell_text(cell).replace("|", "\\|").replace("\n", " ")


def _md_table(t: Any) -> list[str]:
    return ["| " + " | ".join(_md_cell(c.name) for c in t.columns) + " |",
            "|" + "|".join("---:" if c.numeric else "---" for c in t.columns) + "|",
            *["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows], ""]


def _md_section(s: Section, chart_files: dict[str, str]) -> list[str]:
    lines = [f"## {s.title}", ""]
    if s.lead:
        lines += [f"**{s.lead}**", ""]
    lines += [f"- **{b}**" for b in s.ineligible] + [f"- {o}" for o in s.oks]
    if s.ineligible or s.oks:
        lines.append("")
    for p in s.paragraphs:
        lines += [p, ""]
    lines += [f"- {b}" for b in s.bullets] + ([""] if s.bullets else [])
    for w in s.warnings:
        lines += [f"> ⚠ {w}", ""]
    if s.absent:
        lines += [f"_{s.absent}_", ""]
    lines += [line for c in s.charts if c in chart_files
              for line in (f"![{c}]({chart_files[c]})", "")]
    for t in s.tables:
        lines += [f"**{t.caption}**", "", *_md_table(t)]
    for t in s.folded:
        lines += ["<details>", f"<summary>{t.caption} ({len(t.rows)} rows)</summary>", "",
                  *_md_table(t), "</details>", ""]
    lines += [f"- **{t.term}**: {t.definition}" for t in s.terms] + ([""] if s.terms else [])
    return lines


def markdown(context: dict[str, Any]) -> str:
    """The same findings as text tables, for a pull request or a chat message."""
    lines = [f"# {context['title']}", "",
             f"_{context['scope']} · generated {context['generated_at']} · "
             f"trialhouse {context['version']}_", ""]
    if context["simulated"]:
        lines += ["> **SIMULATED** — some or all results come from simulated agents; they say "
                  "nothing about a real model.", ""]
    for s in context["sections"]:
        lines += _md_section(s, context["chart_files"])
    return "\n".join(lines).rstrip() + "\n"


def document(d: Any, *, title: str, version: str, warehouse: str, generated_at: str,
             charts: dict[str, dict[str, str]], skipped: dict[str, str]) -> dict[str, Any]:
    """report.json: every number, stable keys (docs/reports.md)."""
    from analysis.jsonout import clean

    comps = d.comparisons
    return clean({
        "schema": "trialhouse.report/1", "title": title, "generated_at": generated_at,
        "trialhouse_version": version, "warehouse": warehouse, "filters": d.filters.as_dict(),
        "window": d.window, "baseline_requested": d.baseline_requested,
        "simulated_configs": sorted(d.simulated),
        "headline": d.headline.as_dict() if d.headline is not None else None,
        "controls": {"runs": d.runs, "configs": d.configs, "invalidated_runs": d.invalidated,
                     "unscored": d.unscored.as_dict() if d.unscored is not None else None,
                     "pre_existing": d.pre_existing.as_dict() if d.pre_existing is not None else None,
                     "regrades": d.regrades.as_dict() if d.regrades is not None else None,
                     "eligibility": [d.roles[c].as_dict() for c in sorted(d.roles)],
                     "sanity": [w.as_dict() for w in d.sanity]},
        "blockers": d.blockers.as_list(), "regressions": d.blockers.regression_list(),
        "summary": d.summary.as_dict(),
        "comparison": ({k: v for k, v in comps.as_dict().items() if k != "comparisons"}
                       if comps is not None else None),
        "comparisons": [c.as_dict() for c in comps] if comps is not None else [],
        "comparison_absent": d.compare_absent,
        "consistency": d.consistency.as_dict()["rows"],
        "pareto": {"cost_per_accepted": d.pareto.as_dict()["rows"],
                   "cost_per_trial": d.pareto_trial.as_dict()["rows"]},
        "matrix": d.matrix.as_dict() if d.matrix is not None else None,
        "matrix_absent": d.matrix_absent, "failures": d.failures.as_dict()["rows"],
        "flags": d.flags.as_dict()["rows"],
        "familiarity": d.familiarity.as_dict()["rows"] if d.familiarity is not None else [],
        "latency": d.latency.as_dict()["rows"],
        "trajectory": d.trajectory.as_dict()["rows"] if d.trajectory is not None else None,
        "budget_curve": ({k: v for k, v in d.budget_curve.as_dict().items() if k != "universes"}
                         if d.budget_curve is not None else None),
        "budget_curve_absent": d.budget_curve_absent,
        "visibility": d.visibility.as_dict()["rows"] if d.visibility is not None else None,
        "previous_period": d.period.as_dict() if d.period is not None else None,
        "judgments_and_review": {k: v.to_dicts() for k, v in d.review.items()},
        "stop_rules": d.stop_rules.as_dict() if d.stop_rules is not None else None,
        "cohorts": d.cohorts.as_dict() if d.cohorts is not None else None,
        "dashboard": d.dashboard.as_dict() if d.dashboard is not None else None,
        "checks": {by: r.as_dict() for by, r in d.checks.items()} if d.checks is not None else None,
        "charts": charts, "charts_skipped": skipped,
    })
