"""Figure helpers shared by ``agentgym run`` and ``agentgym demo``: bars whose zeros stay visible,
histograms that do not collapse on constant values, one colour per series.

matplotlib is optional (``agentgym-rl[plot]``): ``pyplot()`` returns None without it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["pyplot", "hbars", "hist", "COLORS", "PLOT_HINT"]

# Paul Tol's colour-blind safe "bright" scheme.
COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb")
PLOT_HINT = "matplotlib is not installed (pip install 'agentgym-rl[plot]')"


def pyplot() -> Any | None:
    """``matplotlib.pyplot`` on the file-only Agg backend, or None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def hbars(ax: Any, series: Mapping[str, Mapping[str, float]], *, names: Sequence[str] | None = None,
          percent: bool = False, xlabel: str, ylabel: str = "", title: str = "", fmt: str = "{:.2f}") -> None:
    """Grouped horizontal bars, one group per name and one bar per series, each labelled with its value.

    A zero gets a tick mark at 0 and its label, so it reads as "0", not as a missing bar; a NaN
    (not applicable) is labelled "n/a" and drawn as nothing.
    """
    names = list(names if names is not None else dict.fromkeys(k for v in series.values() for k in v))
    height = 0.8 / max(1, len(series))
    values = [v for s in series.values() for v in s.values() if not math.isnan(v)]
    # Values in [0, 1] (rates, most reward terms) share the full 0-1 axis, so panels compare.
    unit = percent or all(0.0 <= v <= 1.0 for v in values)
    low, high = min([0.0, *values]), max([1.0 if unit else 0.0, *values])
    span = (high - low) or 1.0
    scale = 100.0 if percent else 1.0
    for i, (label, row) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        for j, name in enumerate(names):
            y = j + (i - (len(series) - 1) / 2) * height
            value = row.get(name, math.nan)
            if math.isnan(value):
                ax.text(0, y, " n/a", va="center", ha="left", fontsize=7, color="#555555")
                continue
            ax.barh(y, value * scale, height * 0.95, color=color, label=label if j == 0 else None)
            if value == 0:
                ax.plot([0], [y], marker="D", markersize=4, color=color, clip_on=False, zorder=3)
            text = f"{100 * value:.0f}%" if percent else fmt.format(value)
            gap = (0.035 if value == 0 else 0.01) * span * scale
            ax.text(max(value, 0) * scale + gap, y, text, va="center", ha="left", fontsize=7,
                    color=color if value == 0 else "black", fontweight="bold" if value == 0 else "normal")
        if not any(not math.isnan(row.get(n, math.nan)) for n in names):
            ax.barh([], [], color=color, label=label)  # keep the series in the legend
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first name on top; rows without a bar keep their room
    ax.set_xlim(low * scale, (high + 0.16 * span) * scale)
    ax.axvline(0, color="#333333", linewidth=0.8)
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)


def hist(ax: Any, values: Sequence[float], *, integer: bool, xlabel: str, title: str, color: str) -> None:
    """The distribution of ``values``: one labelled bar per value when there are few distinct values
    (a constant stays one readable bar, not a sliver), else a histogram."""
    from collections import Counter

    values = list(values)
    distinct = sorted(set(values))
    gaps = [b - a for a, b in zip(distinct, distinct[1:])]
    spread = distinct[-1] - distinct[0]
    if len(distinct) == 1 or (integer and spread <= 30) or (len(distinct) <= 8 and min(gaps) >= spread / 12):
        width = 0.8 if integer else 0.8 * min(gaps) if gaps else max(abs(distinct[0]) * 0.2, 0.2)
        counts = Counter(values)
        bars = ax.bar(distinct, [counts[v] for v in distinct], width=width, color=color)
        ax.bar_label(bars, fontsize=8)
        ax.set_xticks(distinct, [f"{v:g}" for v in distinct], fontsize=8)
        pad = max(width, (distinct[-1] - distinct[0]) * 0.08)
        ax.set_xlim(distinct[0] - pad, distinct[-1] + pad)
        ax.set_ylim(0, max(counts.values()) * 1.18)
        if len(distinct) == 1:
            ax.text(0.5, 0.97, f"all {len(values)} episodes: {distinct[0]:g}", transform=ax.transAxes,
                    ha="center", va="top", fontsize=8)
    else:
        import numpy as np

        low, high = distinct[0], distinct[-1]
        step = max(1, math.ceil((high - low + 1) / 30))
        edges = np.arange(low - 0.5, high + step + 0.5, step) if integer else min(20, len(distinct))
        ax.hist(values, bins=edges, color=color, edgecolor="white")
    ax.set(xlabel=xlabel, ylabel="episodes", title=title)
    ax.yaxis.get_major_locator().set_params(integer=True)
