"""The demo's PNG plots: per-constraint pass rates and mean reward terms."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["draw_plots"]


def draw_plots(travel: list[Any], qa: Any, out: Path) -> list[Path]:
    """Write the plots; returns their paths (none when matplotlib is not installed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    paths = [_bars(plt, out / "constraint_pass_rates.png", "TravelPlanner: pass rate per constraint",
                   {a.name: a.constraint_pass_rates for a in travel}),
             _bars(plt, out / "reward_terms.png", "Mean raw value per reward term",
                   {**{f"{a.name} (TravelPlanner)": a.reward_terms for a in travel},
                    f"{qa.name} (SearchQA)": qa.reward_terms})]
    return paths


def _bars(plt: Any, path: Path, title: str, series: dict[str, dict[str, float]]) -> Path:
    names = list(dict.fromkeys(k for values in series.values() for k in values))
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(names) + 3), 4.8))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        heights = [0.0 if math.isnan(values.get(n, math.nan)) else values.get(n, 0.0) for n in names]
        ax.bar([x + i * width for x in range(len(names))], heights, width, label=label)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(names))], names, rotation=45, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
