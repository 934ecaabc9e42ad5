"""The demo's figures, one per env: ``travelplanner.png`` (commonsense constraints, hard constraints,
reward terms) and ``searchqa.png`` (metrics, reward terms)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentgym._plotting import hbars, pyplot
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD

__all__ = ["draw_plots"]


def draw_plots(result: Any, out: Path) -> list[Path] | None:
    """Write one figure per env the demo played; their paths, or None when matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return None
    paths = []
    if result.travelplanner:
        paths.append(_travelplanner(plt, result, out / "travelplanner.png"))
    if result.searchqa is not None:
        paths.append(_searchqa(plt, result, out / "searchqa.png"))
    return paths


def _travelplanner(plt: Any, result: Any, path: Path) -> Path:
    agents = result.travelplanner
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.6), gridspec_kw={"width_ratios": [1.1, 1, 1]})
    rates = {a.name: a.constraint_pass_rates for a in agents}
    hbars(axes[0], rates, names=list(COMMONSENSE), percent=True, xlabel="pass rate (% of queries)",
          ylabel="commonsense constraint", title="commonsense constraints (every query)")
    hbars(axes[1], rates, names=list(HARD), percent=True, xlabel="pass rate (% of queries that set it)",
          ylabel="hard constraint", title="hard constraints (n/a: no query sets it)")
    hbars(axes[2], {a.name: a.reward_terms for a in agents}, xlabel="mean raw value per episode",
          ylabel="reward term", title=f"reward terms, {result.presets['TravelPlanner-v0']} (strict evaluator)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    names = " vs ".join(a.name for a in agents)
    fig.suptitle(f"TravelPlanner-v0, embedded world, N = {result.episodes} train queries per agent, "
                 f"official evaluator: {names}")
    return _save(plt, fig, path, bottom=0.07)


def _searchqa(plt: Any, result: Any, path: Path) -> Path:
    qa = result.searchqa
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    hbars(axes[0], {qa.name: qa.metrics}, percent=True, xlabel="% of questions", ylabel="metric",
          title="answer and retrieval metrics")
    hbars(axes[1], {qa.name: qa.reward_terms}, xlabel="mean raw value per episode", ylabel="reward term",
          title=f"reward terms under {result.presets['SearchQA-v0']}")
    fig.suptitle(f"SearchQA-v0, embedded knowledge base, N = {len(qa.episodes)} questions: {qa.name}")
    return _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path, bottom: float = 0.0) -> Path:
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
