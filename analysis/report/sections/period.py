"""What changed since the previous period (``analysis.period``)."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.canary import Canaries
from analysis.document import Table, columns
from analysis.period import PeriodRow
from analysis.report.document import Section
from analysis.report.gather import ReportData


def _sentence(r: PeriodRow) -> str:
    c = r.comparison
    if c is None or r.verdict not in ("improved", "regressed", "no clear change"):
        return f"{r.label}: {r.verdict}."
    st = c.sign_test
    verb = r.verdict if r.verdict != "no clear change" else "shows no clear change"
    reach = "" if st.p_reachable else ", p < 0.05 unreachable with N < 6"
    holm = "" if st.p_holm is None else f", Holm {fmt.pval(st.p_holm)}"
    return (f"{r.label} {verb}: {fmt.pct(r.previous_solved, r.previous_valid)} → "
            f"{fmt.pct(r.current_solved, r.current_valid)}; on {c.tasks.common} shared task(s) "
            f"{st.improvements} improved, {st.regressions} regressed "
            f"(p = {fmt.pval(st.p)}{holm}{reach}).")


def _row(r: PeriodRow) -> list[Any]:
    c = r.comparison
    st = c.sign_test if c is not None else None
    return [r.label, fmt.pct(r.previous_solved, r.previous_valid),
            fmt.pct(r.current_solved, r.current_valid),
            fmt.count(c.tasks.common if c is not None else 0),
            fmt.count(st.improvements if st else 0), fmt.count(st.regressions if st else 0),
            fmt.count(st.ties if st else 0), fmt.pval(st.p if st else None),
            fmt.pval(st.p_holm if st else None), r.verdict]


def section(d: ReportData) -> Section:
    s = Section("period", "What changed since the previous period")
    if d.period is None:
        s.absent = ("Not requested: give --since/--until and --previous-period to compare this "
                    "window with the one of the same length before it.")
        return s
    w = d.period.window
    s.paragraphs.append(
        f"This period: {fmt.when(w['since'])} to {fmt.when(w['until'])} (exclusive); previous: "
        f"{fmt.when(w['previous_since'])} to {fmt.when(w['previous_until'])}. Each configuration is "
        "compared with itself by the paired comparison of `compare` (one direction per task "
        "both periods ran, exact sign test, holdout tasks apart; Holm over the candidates).")
    if (overlap := d.period.overlap_sentence()) is not None:
        s.paragraphs.append(overlap)
    _canaries(d.period.canaries, s)
    rows = sorted(d.period.rows, key=lambda r: r.label)
    s.paragraphs += [_sentence(r) for r in rows]
    s.charts.append("period")
    s.tables.append(Table(
        "Per configuration",
        columns(["configuration", "previous", "current", "shared tasks", "improved", "regressed",
                 "ties", "p", "p (Holm)", "verdict"], [False] + [True] * 8 + [False]),
        [_row(r) for r in rows]))
    return s


def _canaries(c: Canaries | None, s: Section) -> None:
    """Canary outcomes per unchanged configuration: drift is the evaluator's or the
    environment's, never the agent's, and blocks the verdicts until acknowledged."""
    if c is None or not c.cells:
        return
    (s.warnings if c.blocked else s.paragraphs).append(c.headline())
    s.paragraphs += [f"Drift: {cell.sentence()}." for cell in c.drifted]

    def outcomes(o: dict[str, int]) -> str:
        return ", ".join(f"{k} {n}" for k, n in sorted(o.items())) or fmt.DASH

    s.tables.append(Table(
        "Canary cases of the configurations both periods ran (left out of the verdicts below)",
        columns(["configuration", "canary", "previous", "current", "status"], [False] * 5),
        [[cell.label, cell.case_id, outcomes(cell.previous), outcomes(cell.current),
          "did not run" if cell.kind == "missing" else f"{cell.kind} drift" if cell.kind
          else cell.status] for cell in c.cells]))
