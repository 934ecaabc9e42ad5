"""``agentgym demo``: print the demo's results as tables."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agentgym.cli._console import labeled, plain_console
from agentgym.demo import DemoResult, run_demo

__all__ = ["demo"]


def demo(
    out: Annotated[Path, typer.Option(help="Folder for summary.json, episodes.jsonl and the plots.")]
    = Path("results/demo"),
    episodes: Annotated[int, typer.Option(min=1, help="TravelPlanner episodes per agent.")] = 45,
) -> None:
    """Play TravelPlanner and SearchQA episodes offline and show metrics, constraints and rewards."""
    console = plain_console()
    with console.status("playing episodes on the embedded worlds ..."):
        result = run_demo(out, episodes=episodes)
    _show(console, result)
    if not result.travelplanner and result.searchqa is None:
        raise typer.Exit(1)


def _show(console: Console, result: DemoResult) -> None:
    travel, qa = result.travelplanner, result.searchqa
    if travel:
        names = [a.name for a in travel]
        console.print(f"TravelPlanner-v0 on the {result.world}")
        console.print(_table(f"TravelPlanner-v0: official metrics, official evaluator ({result.episodes} train "
                             "tasks)", names, {a.name: a.metrics for a in travel}))
        counts = travel[0].constraint_counts
        rates = {a.name: {f"{k} (N={counts[k]})": v for k, v in a.constraint_pass_rates.items()} for a in travel}
        console.print(_table("TravelPlanner-v0: pass rate per constraint, official evaluator (N: tasks it "
                             "was checked on; hard ones only where the task sets them)", names, rates))
        terms = {a.name: {**a.reward_terms, "episode return": a.mean_reward} for a in travel}
        console.print(_table(f"TravelPlanner-v0: mean reward terms under {result.presets['TravelPlanner-v0']} "
                             "(strict evaluator)", names,
                             terms, percent=False))
        console.print("The reward terms re-check each plan with the strict evaluator (no loopholes), so e.g. "
                      "hard_micro differs from the official Hard Constraint Micro Pass Rate above.", soft_wrap=True)
    if qa is not None:
        qa_rows = {qa.name: {**qa.metrics, **{f"term {k}": v for k, v in qa.reward_terms.items()},
                             "episode return": qa.mean_reward}}
        console.print(_table(f"SearchQA-v0: {len(qa.episodes)} tasks under {result.presets['SearchQA-v0']}",
                             [qa.name], qa_rows,
                             percent=False))
    for part, why in result.skipped.items():
        console.print(labeled(f"skipped {part}", "yellow", why))
    files = ", ".join(p.name for p in result.files)
    console.print(f"results in {result.out_dir}/ ({files}); {result.seconds:.1f} s", soft_wrap=True)


def _table(title: str, columns: list[str], values: dict[str, dict[str, float]], *, percent: bool = True) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("")
    for name in columns:
        table.add_column(name, justify="right")
    rows = list(dict.fromkeys(k for v in values.values() for k in v))
    for row in rows:
        table.add_row(row, *(_cell(values[c].get(row), percent) for c in columns))
    return table


def _cell(value: float | None, percent: bool) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{100 * value:.1f}%" if percent else f"{value:.3f}"
