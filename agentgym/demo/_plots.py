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
    counts = agents[0].constraint_counts  # every agent plays the same tasks
    labelled = {a.name: {_with_n(k, counts): v for k, v in a.constraint_pass_rates.items()} for a in agents}
    hbars(axes[0], labelled, names=[_with_n(k, counts) for k in COMMONSENSE], percent=True,
          xlabel="pass rate (% of tasks)", ylabel="commonsense constraint",
          title=f"commonsense constraints, official evaluator (N = {result.episodes} each)")
    hbars(axes[1], labelled, names=[_with_n(k, counts) for k in HARD], percent=True,
          xlabel="pass rate (% of the N tasks that set it; n/a: N = 0)", ylabel="hard constraint",
          title="hard constraints, official evaluator (N per bar)")
    hbars(axes[2], {a.name: a.reward_terms for a in agents}, xlabel="mean raw value per episode",
          ylabel="reward term", title=f"reward terms, {result.presets['TravelPlanner-v0']}, strict evaluator")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    names = " vs ".join(a.name for a in agents)
    fig.suptitle(f"TravelPlanner-v0 on the {result.world}: {result.episodes} train tasks per agent, {names}")
    return _save(plt, fig, path, bottom=0.07)


def _with_n(name: str, counts: dict[str, int]) -> str:
    return f"{name} (N={counts.get(name, 0)})"


def _searchqa(plt: Any, result: Any, path: Path) -> Path:
    qa = result.searchqa
    fig, axes = plt.subplots(1, 2, figsize=(13, 3.8), gridspec_kw={"width_ratios": [1, 1.2]})
    # Token F1 on the same 0-100 scale as exact match, as SQuAD reports them: no panel for one bar.
    hbars(axes[0], {qa.name: dict(qa.metrics)}, percent=True, xlabel="% of tasks (token F1: mean x 100)",
          ylabel="metric", title="exact match, token F1 and retrieval hits")
    hbars(axes[1], {qa.name: qa.reward_terms}, xlabel="mean raw value per episode", ylabel="reward term",
          title=f"reward terms under {result.presets['SearchQA-v0']}")
    fig.suptitle(f"SearchQA-v0, embedded knowledge base, N = {len(qa.episodes)} questions: {qa.name}")
    return _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path, bottom: float = 0.0) -> Path:
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
