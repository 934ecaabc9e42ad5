"""The reward lab's figures (matplotlib, ``agentgym-rl[plot]``; None without it).

``plot_comparison``: one PNG, four panels, one row per spec @ step:
zero-variance groups split by outcome, rank correlation with the outcome, GRPO's mean |advantage|
beside the share of inverted pairs, and where the within-group variance comes from, term by term.
``plot_probes``: each probe's reward as a share of the passing answer's, per spec, with the pass
at 100%.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agentgym._plotting import COLORS, hbars, pyplot


__all__ = ["plot_comparison", "plot_probes"]

_FAIL, _PASS, _MIXED = "#ee6677", "#228833", "#ccbb44"


def plot_comparison(comparison: Any, path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    names = [r.at + (f" ({r.stage})" if r.stage else "") for r in comparison.results]
    height = max(3.2, 0.55 * len(names) + 1.6)
    fig, axes = plt.subplots(2, 2, figsize=(15, 2 * height))
    _zero_variance(axes[0][0], comparison, names)
    hbars(axes[0][1], {"Spearman": {n: r.stats.spearman for n, r in zip(names, comparison.results)},
                       "Kendall tau-b": {n: r.stats.kendall for n, r in zip(names, comparison.results)}},
          names=names, xlabel="rank correlation of total with outcome, within groups where both vary",
          title="")
    _header(axes[0][1], "honesty: does a higher reward mean a better outcome?")
    hbars(axes[1][0], {"mean |advantage|": {n: r.stats.mean_abs_adv for n, r in zip(names, comparison.results)},
                       "inverted pairs": {n: _share(r.stats.inversions, r.stats.pairs)
                                          for n, r in zip(names, comparison.results)}},
          names=names, xlabel="GRPO's mean |advantage| (std-normalised); share of pairs paying the better outcome less",
          title="")
    _header(axes[1][0], "signal per rollout, and its inversions")
    _term_variance(axes[1][1], comparison, names)
    shown = ", ".join(comparison.sources[:3]) + (", ..." if len(comparison.sources) > 3 else "")
    fig.suptitle(f"reward lab: {comparison.rollouts} rollouts in {comparison.groups} groups ({shown})", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _zero_variance(ax: Any, comparison: Any, names: list[str]) -> None:
    for y, r in enumerate(comparison.results):
        s, left = r.stats, 0.0
        parts = ((s.zero_var_all_fail, _FAIL, "all fail"), (s.zero_var_all_pass, _PASS, "all pass"),
                 (s.zero_var - s.zero_var_all_fail - s.zero_var_all_pass, _MIXED, "outcome varies"))
        for value, color, label in parts:
            value = 0.0 if math.isnan(value) else value
            ax.barh(y, 100 * value, left=100 * left, color=color, label=label if y == 0 else None, height=0.6)
            left += value
        ax.text(100 * left + 1, y, "n/a" if math.isnan(s.zero_var) else f"{s.zero_var:.1%}", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    top = max([0.0, *(r.stats.zero_var for r in comparison.results if not math.isnan(r.stats.zero_var))])
    ax.set_xlim(0, max(10.0, 100 * top * 1.25))
    ax.set_xlabel("groups whose rewards are all equal (zero advantage, no gradient), %")
    _header(ax, "zero-variance groups, by outcome")
    ax.grid(axis="x", alpha=0.3)


def _term_variance(ax: Any, comparison: Any, names: list[str]) -> None:
    terms = list(dict.fromkeys(t for r in comparison.results for t, s in r.stats.terms.items()
                               if not math.isnan(s.term_var) and s.term_var > 0))
    for y, r in enumerate(comparison.results):
        values = {t: r.stats.terms[t].term_var for t in terms if t in r.stats.terms}
        values = {t: v for t, v in values.items() if not math.isnan(v) and v > 0}
        total, left = sum(values.values()), 0.0
        for i, t in enumerate(terms):
            share = values.get(t, 0.0) / total if total else 0.0
            ax.barh(y, 100 * share, left=100 * left, height=0.6, color=COLORS[i % len(COLORS)],
                    label=t if y == 0 else None)
            left += share
        if not total:
            ax.text(1, y, "no within-group variance", va="center", fontsize=8, color="#555555")
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the terms' summed within-group variance of contribution, %")
    ax.set_title("where the signal comes from, term by term", fontsize=10, loc="left")
    if terms:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)


def _header(ax: Any, title: str) -> None:
    """A left title with the legend above the axes, where it covers no bar."""
    ax.set_title(title, fontsize=10, loc="left", pad=18)
    ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, frameon=False)


def plot_probes(report: Any, path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    probes = list(dict.fromkeys(r.probe for r in report.rows()))
    fig, ax = plt.subplots(figsize=(11, max(3.5, 0.5 * len(probes) * max(1, len(report.specs)) / 2 + 1.5)))
    series = {spec: {r.probe: r.max_ratio for r in report.rows(spec)} for spec in report.specs}
    hbars(ax, series, names=probes, percent=True, xlabel="probe reward as a share of the passing answer's "
          "(highest over tasks; 100% = as much as a pass)", title=f"{report.env_id}: probes over {report.n_tasks} tasks")
    ax.axvline(100, color=_FAIL, linewidth=1.5, linestyle="--")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _share(count: int, total: int) -> float:
    return count / total if total else math.nan
