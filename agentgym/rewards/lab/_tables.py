"""The comparison and probe tables, on a rich console (plain text, no markup in the values)."""

from __future__ import annotations

import math
from typing import Any


__all__ = ["render_comparison", "render_probes", "plain_text"]


def plain_text(render: Any, width: int) -> str:
    """What ``render(console)`` prints, as plain text."""
    from rich.console import Console

    console = Console(width=width, record=True, file=_Null(), color_system=None)
    render(console)
    return console.export_text()


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def render_comparison(comparison: Any, console: Any) -> None:
    from rich.table import Table

    _banner(comparison.warnings(), console)
    table = Table(title=f"reward signal: {comparison.rollouts} rollouts in {comparison.groups} groups",
                  header_style="bold")
    table.add_column("spec @ step", no_wrap=True)
    for column in ("pass rate", "zero var", "all fail", "all pass", "within std", "mean |adv|", "spearman",
                   "kendall", "inverted", "partial abst.", "failed"):
        table.add_column(column, justify="right", min_width=len(column) if len(column) < 11 else 7)
    for r in comparison.results:
        s = r.stats
        table.add_row(r.at + (f" ({r.stage})" if r.stage else ""), _pct(s.pass_rate), _pct(s.zero_var),
                      _pct(s.zero_var_all_fail), _pct(s.zero_var_all_pass), _num(s.within_std), _num(s.mean_abs_adv),
                      _num(s.spearman), _num(s.kendall), f"{s.inversions}/{s.pairs}" if s.pairs else "-",
                      _pct(s.partial_abstention), _pct(s.failed))
    console.print(table)
    terms = Table(title="terms in force (weight > 0, or abstaining)", header_style="bold")
    terms.add_column("spec @ step", no_wrap=True)
    for column in ("term", "mean contribution", "within-group var", "abstained", "failed"):
        terms.add_column(column, justify="left" if column == "term" else "right", no_wrap=column == "term")
    for r in comparison.results:
        shown = {n: t for n, t in r.stats.terms.items()
                 if t.abstained > 0 or t.failed > 0 or (not math.isnan(t.contribution) and t.contribution != 0)
                 or (not math.isnan(t.term_var) and t.term_var > 0)}
        for i, (name, t) in enumerate(shown.items()):
            terms.add_row(r.at if i == 0 else "", name, _num(t.contribution), _num(t.term_var), _pct(t.abstained),
                          _pct(t.failed), end_section=i == len(shown) - 1)
    console.print(terms)
    for r in comparison.results:
        if r.stats.worst:
            console.print(f"worst inversions of {r.at} (the better outcome paid less):")
            for w in r.stats.worst:
                console.print(f"  task {w.task_id}, group {w.group}: sample {w.better_sample} (outcome "
                              f"{w.better_outcome:g}) got {w.better_total:.4g} < sample {w.worse_sample} (outcome "
                              f"{w.worse_outcome:g}) got {w.worse_total:.4g}", soft_wrap=True)
    _banner(comparison.warnings(), console)


def render_probes(report: Any, console: Any) -> None:
    from rich.table import Table

    _banner(report.warnings(), console)
    for spec in report.specs:
        table = Table(title=f"{report.env_id}, {spec}: probe reward / passing reward, over {report.n_tasks} tasks",
                      header_style="bold")
        for column in ("probe", "tasks", "mean", "max", "as much as a pass", "passes the evaluator"):
            table.add_column(column, justify="left" if column == "probe" else "right")
        for row in report.rows(spec):
            flag = f"{row.hacks}/{row.n_tasks}" + ("  <- HACK" if row.hacks else "")
            table.add_row(row.probe, str(row.n_tasks), _pct(row.mean_ratio), _pct(row.max_ratio), flag,
                          str(row.passes_evaluator) if row.passes_evaluator else "-")
        console.print(table)
    _banner(report.warnings(), console)


def _banner(warnings: list[str], console: Any) -> None:
    for warning in warnings:
        style = "bold red" if "FAILED" in warning or "HACK" in warning else "bold yellow"
        console.print(warning, style=style, soft_wrap=True, markup=False)


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.1%}"


def _num(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"
